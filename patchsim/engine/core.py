"""The rules core: game state, legal moves and move application, compiled with numba.

Everything here works on two flat ``int64`` arrays so that a state copy is one ``memcpy`` and a
call from Python costs about a microsecond:

* ``tab``: a compiled ruleset (see :mod:`patchsim.engine.tables`): header fields at fixed
  indices, then the precomputed placements of every patch and the other per-ruleset
  tables, found through offsets stored in the header.
* ``state``: one position (layout ``S_*`` below).

A quilt is a 128-bit bitboard held in two words (``lo`` for squares 0..63, ``hi`` for 64..127);
square ``s = row * cols + col``. Every placement of every patch is precomputed once per ruleset,
so legality is two ANDs.

Moves are integers: ``PASS`` (-1), a placement id ``g >= 0`` (buy the patch of that placement and
cover exactly its squares), or ``-2 - s`` (place a claimed leather patch on square ``s``).

This module is the one implementation of the rules. The friendly API
(:mod:`patchsim.engine.game`), the compiled bots and the batch runner all call these
functions; with ``NUMBA_DISABLE_JIT=1`` they run as plain Python, which the differential
test uses.

Scalars are annotated ``int`` and ``float`` (for mypy and readers): numba compiles each
function for the types of the values it is given (int64, float64), never from annotations, and
Python callers pass ints. A function whose body builds a numpy scalar returns it through
``int(...)``, which numba compiles to nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# --- move codes -------------------------------------------------------------------------------
PASS = -1
LEATHER_BASE = -2  # leather on square s has code LEATHER_BASE - s

# --- legality verdicts (what ``legality`` returns) --------------------------------------------
# Plain ints so that compiled code can use them; the Python side names and words them once, in
# patchsim.engine.game.IllegalReason.
LEGAL = 0
ILLEGAL_GAME_OVER = 1
ILLEGAL_NO_LEATHER_PENDING = 2  # a leather placement when none is waiting
ILLEGAL_OFF_QUILT = 3  # a leather square beyond the quilt
ILLEGAL_SQUARE_COVERED = 4  # a leather square already covered
ILLEGAL_LEATHER_FIRST = 5  # pass or buy while a claimed leather patch waits
ILLEGAL_NO_SUCH_PLACEMENT = 6  # a code that is no placement of this ruleset
ILLEGAL_NOT_ON_OFFER = 7
ILLEGAL_UNAFFORDABLE = 8
ILLEGAL_OVERLAP = 9

# --- tab header ------------------------------------------------------------------------------
T_ROWS = 0
T_COLS = 1
T_NSQ = 2
T_LAST = 3
T_OFFER = 4
T_START_BUTTONS = 5
T_HAS_BONUS = 6
T_BONUS_POINTS = 7
T_PENALTY = 8
T_LEATHER_STAY = 9
T_NPATCH = 10
T_NLEATHER = 11
T_NWINDOWS = 12
T_NPLACE = 13
T_NINCOME = 14
T_MAX_PATCH_PLACEMENTS = 15
# offsets into tab
O_PLACE_LO = 16
O_PLACE_HI = 17
O_PLACE_PATCH = 18
O_PATCH_FIRST = 19
O_PATCH_COUNT = 20
O_COST = 21
O_TIME = 22
O_INCOME = 23
O_SIZE = 24
O_INCOME_CUM = 25  # [last+1]: number of income marks at or below each space
O_INCOME_MARKS = 26
O_LEATHER = 27
O_WIN_LO = 28
O_WIN_HI = 29
O_FULL_LO = 30  # mask of all squares of the quilt
O_FULL_HI = 31
O_NEIGH = 32  # [nsq, 2]: lo/hi masks of the orthogonal neighbours of each square
O_PLACE_NB_LO = 33  # per placement: squares orthogonally next to it (not in it)
O_PLACE_NB_HI = 34
O_PLACE_EDGE = 35  # per placement: sides of its squares that lie on the quilt's border
O_BORDER = 36  # [8]: lo/hi of first column, last column, first row, last row
T_SECOND_BUTTONS = 37  # extra starting buttons of the player who moves second
T_HEADER = 40

# --- state layout -----------------------------------------------------------------------------
S_POS = 0  # [2] time-track position
S_BTN = 2  # [2] buttons in hand
S_INC = 4  # [2] buttons shown on the quilt (income per income mark)
S_QLO = 6  # [2] quilt bitboard, squares 0..63
S_QHI = 8  # [2] quilt bitboard, squares 64..127
S_TOP = 10  # whose token is on top when both share a space
S_FIRST_END = 11  # who reached the last space first (-1: nobody yet); the tie-break
S_BONUS = 12  # owner of the bonus tile (-1: still on offer)
S_PENDING = 13  # claimed leather patches the pending player must still place
S_PENDING_PLAYER = 14
S_PENDING_MARKS = 15  # bitmask over leather marks claimed and not yet placed (track order)
S_LEATHER_TAKEN = 16  # bitmask over leather marks no longer on the track
S_PLY = 17  # moves applied so far (leather placements included)
S_NCIRCLE = 18  # patches left in the circle
S_OFS = 19  # circle index of the first patch after the neutral token
S_CIRCLE = 24  # [npatch] patch indices, clockwise; compacted as patches are bought


# --- event log (optional, for the batch runner's events table) ---------------------------------
EV_WIDTH = 6
EV_BUY = 1  # player, patch, position before, buttons before, placement id
EV_PASS = 2  # player, position before, position after, buttons gained
EV_INCOME = 3  # player, mark, amount
EV_LEATHER_CLAIM = 4  # player, mark, opponent's position, score lead (claimer - opponent)
EV_LEATHER_PLACE = 5  # player, mark, square, filled an isolated one-square hole (0/1)
EV_LEATHER_LOST = 6  # player, mark (quilt full: discarded, or left on the track under "stay")
EV_BONUS = 7  # player, position


# --- named reads of the compiled table ---------------------------------------------------------
# ``tab[tab[O_X] + i]`` spelled ``x(tab, i)``. numba inlines them (inline="always"), so the
# compiled code is the same two loads as the spelled-out form.


@njit(cache=True, inline="always")
def placement_lo(tab: np.ndarray, g: int) -> int:
    """Squares 0..63 covered by placement g."""
    return tab[tab[O_PLACE_LO] + g]


@njit(cache=True, inline="always")
def placement_hi(tab: np.ndarray, g: int) -> int:
    """Squares 64..127 covered by placement g."""
    return tab[tab[O_PLACE_HI] + g]


@njit(cache=True, inline="always")
def placement_patch(tab: np.ndarray, g: int) -> int:
    """The patch placement g places."""
    return tab[tab[O_PLACE_PATCH] + g]


@njit(cache=True, inline="always")
def patch_first(tab: np.ndarray, patch: int) -> int:
    """The patch's first placement id (its placements are consecutive)."""
    return tab[tab[O_PATCH_FIRST] + patch]


@njit(cache=True, inline="always")
def patch_count(tab: np.ndarray, patch: int) -> int:
    """How many distinct placements the patch has."""
    return tab[tab[O_PATCH_COUNT] + patch]


@njit(cache=True, inline="always")
def patch_cost(tab: np.ndarray, patch: int) -> int:
    return tab[tab[O_COST] + patch]


@njit(cache=True, inline="always")
def patch_time(tab: np.ndarray, patch: int) -> int:
    return tab[tab[O_TIME] + patch]


@njit(cache=True, inline="always")
def patch_income(tab: np.ndarray, patch: int) -> int:
    return tab[tab[O_INCOME] + patch]


@njit(cache=True, inline="always")
def patch_size(tab: np.ndarray, patch: int) -> int:
    """Squares the patch covers."""
    return tab[tab[O_SIZE] + patch]


@njit(cache=True, inline="always")
def income_marks_upto(tab: np.ndarray, space: int) -> int:
    """Number of income marks at or below ``space``."""
    return tab[tab[O_INCOME_CUM] + space]


@njit(cache=True, inline="always")
def income_mark(tab: np.ndarray, i: int) -> int:
    """The space of the i-th income mark (track order)."""
    return tab[tab[O_INCOME_MARKS] + i]


@njit(cache=True, inline="always")
def leather_mark(tab: np.ndarray, i: int) -> int:
    """The space of the i-th leather mark (track order)."""
    return tab[tab[O_LEATHER] + i]


@njit(cache=True, inline="always")
def window_lo(tab: np.ndarray, w: int) -> int:
    """Squares 0..63 of bonus window w."""
    return tab[tab[O_WIN_LO] + w]


@njit(cache=True, inline="always")
def window_hi(tab: np.ndarray, w: int) -> int:
    return tab[tab[O_WIN_HI] + w]


@njit(cache=True, inline="always")
def neighbours(tab: np.ndarray, s: int) -> tuple[int, int]:
    """(lo, hi) masks of the squares orthogonally next to square s."""
    nb = tab[O_NEIGH]
    return tab[nb + 2 * s], tab[nb + 2 * s + 1]


@njit(cache=True, inline="always")
def placement_nb_lo(tab: np.ndarray, g: int) -> int:
    """Squares 0..63 orthogonally next to placement g (not in it)."""
    return tab[tab[O_PLACE_NB_LO] + g]


@njit(cache=True, inline="always")
def placement_nb_hi(tab: np.ndarray, g: int) -> int:
    return tab[tab[O_PLACE_NB_HI] + g]


@njit(cache=True, inline="always")
def placement_edge(tab: np.ndarray, g: int) -> int:
    """Sides of placement g's squares that lie on the quilt's border."""
    return tab[tab[O_PLACE_EDGE] + g]


@njit(cache=True, inline="always")
def full_quilt(tab: np.ndarray) -> tuple[int, int]:
    """(lo, hi) masks of every square of the quilt."""
    return tab[tab[O_FULL_LO]], tab[tab[O_FULL_HI]]


# the quilt's four border lines, in the order of the O_BORDER section
BORDER_FIRST_COL = 0
BORDER_LAST_COL = 1
BORDER_FIRST_ROW = 2
BORDER_LAST_ROW = 3


@njit(cache=True, inline="always")
def border_line(tab: np.ndarray, line: int) -> tuple[int, int]:
    """(lo, hi) masks of one border line of the quilt (``BORDER_*``)."""
    b = tab[O_BORDER] + 2 * line
    return tab[b], tab[b + 1]


@njit(cache=True, inline="always")
def popcount64(x: int | np.int64) -> int:
    """Number of set bits of a 64-bit word (SWAR; numba has no portable intrinsic)."""
    v = np.uint64(x)
    v = v - ((v >> np.uint64(1)) & np.uint64(0x5555555555555555))
    v = (v & np.uint64(0x3333333333333333)) + ((v >> np.uint64(2)) & np.uint64(0x3333333333333333))
    v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int(np.int64((v * np.uint64(0x0101010101010101)) >> np.uint64(56)))


@njit(cache=True, inline="always")
def square_bit(s: int) -> tuple[int, int]:
    """(lo, hi) masks of square s."""
    if s < 64:
        return int(np.int64(1) << np.int64(s)), 0
    return 0, int(np.int64(1) << np.int64(s - 64))


@njit(cache=True)
def new_state(tab: np.ndarray, circle: np.ndarray) -> np.ndarray:
    """The start position: ``circle`` lists patch indices clockwise from the neutral token."""
    npatch = tab[T_NPATCH]
    state = np.zeros(S_CIRCLE + npatch, dtype=np.int64)
    state[S_BTN] = tab[T_START_BUTTONS]
    state[S_BTN + 1] = tab[T_START_BUTTONS] + tab[T_SECOND_BUTTONS]
    state[S_TOP] = 0  # the start player's token is on top
    state[S_FIRST_END] = -1
    state[S_BONUS] = -1
    state[S_PENDING_PLAYER] = -1
    state[S_NCIRCLE] = circle.shape[0]
    state[S_OFS] = 0
    for i in range(circle.shape[0]):
        state[S_CIRCLE + i] = circle[i]
    return state


@njit(cache=True)
def empty_squares(state: np.ndarray, tab: np.ndarray, p: int) -> int:
    return tab[T_NSQ] - popcount64(state[S_QLO + p]) - popcount64(state[S_QHI + p])


@njit(cache=True)
def is_finished(state: np.ndarray, tab: np.ndarray) -> bool:
    last = tab[T_LAST]
    return state[S_PENDING] == 0 and state[S_POS] >= last and state[S_POS + 1] >= last


@njit(cache=True)
def to_move(state: np.ndarray, tab: np.ndarray) -> int:
    """The player to move, or -1 when the game is over.

    A pending leather patch is placed at once by its claimer. Otherwise the token further behind
    moves; on a shared space the one on top (docs/rules.md R3.1, R3.2).
    """
    if state[S_PENDING] > 0:
        return state[S_PENDING_PLAYER]
    a = state[S_POS]
    b = state[S_POS + 1]
    last = tab[T_LAST]
    if a >= last and b >= last:
        return -1
    if a < b:
        return 0
    if b < a:
        return 1
    return state[S_TOP]


@njit(cache=True)
def score(state: np.ndarray, tab: np.ndarray, p: int) -> int:
    """Buttons + bonus points - penalty x empty squares, as if the game ended now."""
    s = state[S_BTN + p] - tab[T_PENALTY] * empty_squares(state, tab, p)
    if state[S_BONUS] == p:
        s += tab[T_BONUS_POINTS]
    return s


@njit(cache=True)
def winner(state: np.ndarray, tab: np.ndarray) -> int:
    """Winner of a finished game: higher score, else who reached the last space first."""
    # typed seats, not constants: numba compiles a callee once per constant it is called
    # with (here score, and empty_squares under it, twice more)
    s0 = score(state, tab, int(np.int64(0)))
    s1 = score(state, tab, int(np.int64(1)))
    if s0 > s1:
        return 0
    if s1 > s0:
        return 1
    return state[S_FIRST_END]


@njit(cache=True)
def offer_patch(state: np.ndarray, tab: np.ndarray, k: int) -> int:
    """Patch index of the k-th patch on offer (0-based), or -1 if fewer are on offer."""
    n = state[S_NCIRCLE]
    if k >= n or k >= tab[T_OFFER]:
        return -1
    return state[S_CIRCLE + (state[S_OFS] + k) % n]


@njit(cache=True, inline="always")
def fits(state: np.ndarray, tab: np.ndarray, p: int, g: int) -> bool:
    return (placement_lo(tab, g) & state[S_QLO + p]) == 0 and (
        placement_hi(tab, g) & state[S_QHI + p]) == 0


@njit(cache=True)
def legal_moves(state: np.ndarray, tab: np.ndarray, out: np.ndarray) -> int:
    """Write the legal move codes of the player to move into ``out``; return how many.

    ``out`` must hold ``max_moves(tab)`` entries. Distinct placements are precomputed, so each
    (patch, covered squares) pair appears once; pass comes first.
    """
    p = to_move(state, tab)
    if p < 0:
        return 0
    n = 0
    if state[S_PENDING] > 0:
        qlo = state[S_QLO + p]
        qhi = state[S_QHI + p]
        for s in range(tab[T_NSQ]):
            blo, bhi = square_bit(s)
            if (qlo & blo) == 0 and (qhi & bhi) == 0:
                out[n] = LEATHER_BASE - s
                n += 1
        return n
    out[0] = PASS
    n = 1
    btn = state[S_BTN + p]
    for k in range(tab[T_OFFER]):
        patch = offer_patch(state, tab, k)
        if patch < 0:
            break
        if patch_cost(tab, patch) > btn:
            continue
        first = patch_first(tab, patch)
        for g in range(first, first + patch_count(tab, patch)):
            if fits(state, tab, p, g):
                out[n] = g
                n += 1
    return n


@njit(cache=True)
def count_legal(state: np.ndarray, tab: np.ndarray) -> int:
    """Number of distinct legal moves of the player to move (0 when finished)."""
    return legal_moves(state, tab, np.empty(max_moves(tab), dtype=np.int64))


@njit(cache=True)
def max_moves(tab: np.ndarray) -> int:
    """An upper bound on the number of legal moves in any position of this ruleset."""
    return max(1 + tab[T_OFFER] * tab[T_MAX_PATCH_PLACEMENTS], tab[T_NSQ])


@njit(cache=True)
def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[:] = src`` for two 1-D arrays of one length, as a loop. Why not the slice
    assignment: numba compiles, for an array assigned into a slice, a formatter of the
    shape-mismatch message (about 2.7 s of a first run's compile, the first time any
    function needs it); the callers' lengths agree by construction, so the check buys
    nothing there."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True)
def perft(state: np.ndarray, tab: np.ndarray, depth: int) -> int:
    """The number of distinct legal move sequences of length ``depth`` from ``state`` (a
    sequence that ends the game early does not count). A regression check on move generation
    and application, as in chess engines; ``state`` is not changed.

    Depth-first with one state copy per level; the last level only counts moves (no apply)."""
    if depth <= 0:
        return 1
    m = max_moves(tab)
    scratch = np.empty(m, dtype=np.int64)
    if depth == 1:
        return legal_moves(state, tab, scratch)
    states = np.empty((depth, state.shape[0]), dtype=np.int64)
    moves = np.empty((depth - 1, m), dtype=np.int64)
    nmoves = np.zeros(depth - 1, dtype=np.int64)
    nexts = np.zeros(depth - 1, dtype=np.int64)
    copy_into(states[0], state)
    nmoves[0] = legal_moves(states[0], tab, moves[0])
    total = 0
    level = 0
    while level >= 0:
        if nexts[level] == nmoves[level]:
            level -= 1
            continue
        code = moves[level, nexts[level]]
        nexts[level] += 1
        child = states[level + 1]
        copy_into(child, states[level])
        apply_move(child, tab, code)
        if level + 1 == depth - 1:
            total += legal_moves(child, tab, scratch)
        else:
            level += 1
            nmoves[level] = legal_moves(child, tab, moves[level])
            nexts[level] = 0
    return total


@njit(cache=True)
def legality(state: np.ndarray, tab: np.ndarray, code: int) -> int:
    """``LEGAL`` if ``code`` is legal now, else the first ``ILLEGAL_*`` verdict that applies."""
    p = to_move(state, tab)
    if p < 0:
        return ILLEGAL_GAME_OVER
    if code <= LEATHER_BASE:
        if state[S_PENDING] == 0:
            return ILLEGAL_NO_LEATHER_PENDING
        s = LEATHER_BASE - code
        if s >= tab[T_NSQ]:
            return ILLEGAL_OFF_QUILT
        blo, bhi = square_bit(s)
        if (state[S_QLO + p] & blo) != 0 or (state[S_QHI + p] & bhi) != 0:
            return ILLEGAL_SQUARE_COVERED
        return LEGAL
    if state[S_PENDING] > 0:
        return ILLEGAL_LEATHER_FIRST
    if code == PASS:
        return LEGAL
    if code < 0 or code >= tab[T_NPLACE]:
        return ILLEGAL_NO_SUCH_PLACEMENT
    patch = placement_patch(tab, code)
    on_offer = False
    for k in range(tab[T_OFFER]):
        if offer_patch(state, tab, k) == patch:
            on_offer = True
    if not on_offer:
        return ILLEGAL_NOT_ON_OFFER
    if patch_cost(tab, patch) > state[S_BTN + p]:
        return ILLEGAL_UNAFFORDABLE
    if not fits(state, tab, p, code):
        return ILLEGAL_OVERLAP
    return LEGAL


# inlined before typing: called with constants (the event kinds), a compiled function would
# be compiled once per combination of them (ten copies in one game loop)
@njit(cache=True, inline="always")
def _log(ev: np.ndarray, ne: int, kind, a, b, c, d, e) -> int:
    """Append one event row if there is room (an empty log records nothing)."""
    if ne < ev.shape[0]:
        ev[ne, 0] = kind
        ev[ne, 1] = a
        ev[ne, 2] = b
        ev[ne, 3] = c
        ev[ne, 4] = d
        ev[ne, 5] = e
        return ne + 1
    return ne


@njit(cache=True)
def _check_bonus(state: np.ndarray, tab: np.ndarray, p: int, ev: np.ndarray, ne: int):
    """Give the bonus tile to p if it is still free and p's quilt covers a full window.

    Checked after every placement, leather included; only the first player gets it
    (docs/rules.md R9.2, R9.3).
    """
    if tab[T_HAS_BONUS] == 0 or state[S_BONUS] >= 0:
        return ne
    qlo = state[S_QLO + p]
    qhi = state[S_QHI + p]
    for w in range(tab[T_NWINDOWS]):
        wlo = window_lo(tab, w)
        whi = window_hi(tab, w)
        if (qlo & wlo) == wlo and (qhi & whi) == whi:
            state[S_BONUS] = p
            return _log(ev, ne, EV_BONUS, p, state[S_POS + p], 0, 0, 0)
    return ne


@njit(cache=True)
def _advance(state: np.ndarray, tab: np.ndarray, p: int, target: int, ev, ne):
    """Move p's token to ``target`` (clamped at the last space) and fire every mark passed.

    A mark "at N" fires when the token moves from below N to N or beyond (docs/rules.md
    R6.1, R6.2): each income mark pays the quilt's income (R7.1, R7.3); each unclaimed leather
    mark is claimed in track order (R8.2, R8.4), or lost at once if the quilt has no square
    left for it (R8.5).
    """
    last = tab[T_LAST]
    old = state[S_POS + p]
    new = target if target < last else last
    if new <= old:
        return ne
    state[S_POS + p] = new
    q = 1 - p
    if new == state[S_POS + q]:
        state[S_TOP] = p  # arriving on an occupied space: on top
    if new == last and state[S_FIRST_END] < 0:
        state[S_FIRST_END] = p
    marks = income_marks_upto(tab, new) - income_marks_upto(tab, old)
    if marks > 0:
        inc = state[S_INC + p]
        state[S_BTN + p] += marks * inc
        if ev.shape[0] > 0:
            for i in range(tab[T_NINCOME]):
                m = income_mark(tab, i)
                if old < m <= new:
                    ne = _log(ev, ne, EV_INCOME, p, m, inc, 0, 0)
    nl = tab[T_NLEATHER]
    if nl > 0:
        free = empty_squares(state, tab, p) - state[S_PENDING]
        for i in range(nl):
            m = leather_mark(tab, i)
            if m > new:
                break
            if m <= old:
                continue
            bit = np.int64(1) << np.int64(i)
            if state[S_LEATHER_TAKEN] & bit:
                continue
            if free > 0:
                state[S_LEATHER_TAKEN] |= bit
                state[S_PENDING_MARKS] |= bit
                state[S_PENDING] += 1
                state[S_PENDING_PLAYER] = p
                free -= 1
                ne = _log(ev, ne, EV_LEATHER_CLAIM, p, m, state[S_POS + q],
                          score(state, tab, p) - score(state, tab, q), 0)
            else:
                # No empty square: discarded, or left on the track under the "stay" variant.
                if tab[T_LEATHER_STAY] == 0:
                    state[S_LEATHER_TAKEN] |= bit
                ne = _log(ev, ne, EV_LEATHER_LOST, p, m, 0, 0, 0)
    return ne


@njit(cache=True)
def _isolated_hole(state: np.ndarray, tab: np.ndarray, p: int, s: int) -> bool:
    """Is empty square s a one-square hole (every orthogonal neighbour covered or off-board)?"""
    nlo, nhi = neighbours(tab, s)
    return (state[S_QLO + p] & nlo) == nlo and (state[S_QHI + p] & nhi) == nhi


@njit(cache=True)
def apply_logged(state: np.ndarray, tab: np.ndarray, code: int, ev, ne) -> int:
    """Apply a legal move in place, appending events to ``ev`` from row ``ne``; return rows used.

    The caller guarantees legality (``legality(...) == 0``); the compiled game loops only apply
    moves they generated, and the Python API checks first.
    """
    p = to_move(state, tab)
    state[S_PLY] += 1
    if code <= LEATHER_BASE:
        s = LEATHER_BASE - code
        # the lowest pending mark is placed first (track order)
        pm = state[S_PENDING_MARKS]
        i = 0
        while (pm >> np.int64(i)) & 1 == 0:
            i += 1
        state[S_PENDING_MARKS] = pm & ~(np.int64(1) << np.int64(i))
        hole = _isolated_hole(state, tab, p, s)
        blo, bhi = square_bit(s)
        state[S_QLO + p] |= blo
        state[S_QHI + p] |= bhi
        state[S_PENDING] -= 1
        if state[S_PENDING] == 0:
            state[S_PENDING_PLAYER] = -1
        ne = _log(ev, ne, EV_LEATHER_PLACE, p, leather_mark(tab, i), s, 1 if hole else 0, 0)
        return _check_bonus(state, tab, p, ev, ne)
    if code == PASS:
        old = state[S_POS + p]
        target = state[S_POS + 1 - p] + 1
        last = tab[T_LAST]
        if target > last:
            target = last
        gained = target - old
        state[S_BTN + p] += gained  # one button per space actually moved
        ne = _log(ev, ne, EV_PASS, p, old, target, gained, 0)
        return _advance(state, tab, p, target, ev, ne)
    patch = placement_patch(tab, code)
    ne = _log(ev, ne, EV_BUY, p, patch, state[S_POS + p], state[S_BTN + p], code)
    # take the patch out of the circle; the neutral token moves to its place
    n = state[S_NCIRCLE]
    ofs = state[S_OFS]
    idx = -1
    for k in range(tab[T_OFFER]):
        j = (ofs + k) % n
        if state[S_CIRCLE + j] == patch:
            idx = j
            break
    for j in range(idx, n - 1):
        state[S_CIRCLE + j] = state[S_CIRCLE + j + 1]
    n -= 1
    state[S_CIRCLE + n] = -1  # the freed slot: a position is its state, with nothing stale
    state[S_NCIRCLE] = n
    state[S_OFS] = idx % n if n > 0 else 0
    state[S_BTN + p] -= patch_cost(tab, patch)
    state[S_QLO + p] |= placement_lo(tab, code)
    state[S_QHI + p] |= placement_hi(tab, code)
    state[S_INC + p] += patch_income(tab, patch)
    # placed before the token moves, so the bonus and this turn's income already count it
    ne = _check_bonus(state, tab, p, ev, ne)
    return _advance(state, tab, p, state[S_POS + p] + patch_time(tab, patch), ev, ne)


@njit(cache=True)
def apply_move(state: np.ndarray, tab: np.ndarray, code: int) -> None:
    """Apply a legal move in place without logging events."""
    # a typed 0: a constant would compile apply_logged, the whole move rule, a second time
    apply_logged(state, tab, code, np.zeros((0, EV_WIDTH), dtype=np.int64), np.int64(0))


# --- random numbers ---------------------------------------------------------------------------
# splitmix64: one 64-bit word of state, statistically sound for simulation, and identical in
# compiled and interpreted runs, so a seed reproduces a game on any machine and any worker.


@njit(cache=True, inline="always")
def rng_next(rng: np.ndarray) -> np.uint64:
    x = rng[0] + np.uint64(0x9E3779B97F4A7C15)
    rng[0] = x
    z = x
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def rng_below(rng: np.ndarray, n: int) -> int:
    """A uniform integer in [0, n) (n < 2**32), by the multiply-shift method."""
    hi32 = rng_next(rng) >> np.uint64(32)
    return int(np.int64((hi32 * np.uint64(n)) >> np.uint64(32)))


@njit(cache=True, inline="always")
def rng_unit(rng: np.ndarray) -> float:
    """A uniform float in [0, 1)."""
    return np.float64(rng_next(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def random_move(state: np.ndarray, tab: np.ndarray, rng: np.ndarray, buf: np.ndarray) -> int:
    """A uniformly random legal move (leather squares uniform among empty squares).

    Draws from all placements of the affordable offered patches plus pass and rejects those
    that overlap; after a few misses it enumerates. Both routes are uniform over the legal
    moves, so their mixture is too, and early in a game this avoids most of the enumeration.
    """
    p = to_move(state, tab)
    if state[S_PENDING] > 0:
        k = rng_below(rng, empty_squares(state, tab, p))
        qlo = state[S_QLO + p]
        qhi = state[S_QHI + p]
        for s in range(tab[T_NSQ]):
            blo, bhi = square_bit(s)
            if (qlo & blo) == 0 and (qhi & bhi) == 0:
                if k == 0:
                    return LEATHER_BASE - s
                k -= 1
    btn = state[S_BTN + p]
    total = 1
    firsts = np.empty(3, dtype=np.int64)
    counts = np.zeros(3, dtype=np.int64)
    noffer = tab[T_OFFER]
    if noffer <= 3:
        for k in range(noffer):
            patch = offer_patch(state, tab, k)
            if patch < 0:
                break
            if patch_cost(tab, patch) <= btn:
                firsts[k] = patch_first(tab, patch)
                counts[k] = patch_count(tab, patch)
                total += counts[k]
        if total == 1:
            return PASS
        for _ in range(8):
            r = rng_below(rng, total)
            if r == 0:
                return PASS
            r -= 1
            for k in range(3):
                if r < counts[k]:
                    g = firsts[k] + r
                    if fits(state, tab, p, g):
                        return g
                    break
                r -= counts[k]
    n = legal_moves(state, tab, buf)
    return buf[rng_below(rng, n)]
