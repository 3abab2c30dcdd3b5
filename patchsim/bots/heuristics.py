"""Compiled evaluation terms shared by the scripted bots and the search bot.

Quilt features are computed on the 128-bit bitboards with shifts, so that judging one placement
costs a few dozen machine instructions.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from patchsim.engine import core

REFERENCE_BONUS_POINTS = 7.0  # the printed game's bonus, the scale of the window weights
U1 = np.uint64(1)
U64 = np.uint64(64)


@njit(cache=True, inline="always")
def _shl(lo: np.uint64, hi: np.uint64, k: np.uint64) -> tuple[np.uint64, np.uint64]:
    return lo << k, (hi << k) | (lo >> (U64 - k))


@njit(cache=True, inline="always")
def _shr(lo: np.uint64, hi: np.uint64, k: np.uint64) -> tuple[np.uint64, np.uint64]:
    return (lo >> k) | (hi << (U64 - k)), hi >> k


@njit(cache=True, inline="always")
def _pc(lo: np.uint64, hi: np.uint64) -> int:
    return core.popcount64(np.int64(lo)) + core.popcount64(np.int64(hi))


@njit(cache=True)
def side_masks(tab: np.ndarray, qlo: int, qhi: int):
    """For each of the four sides, the squares whose neighbour on that side is covered or
    off the quilt: (right lo, right hi, left lo, left hi, down lo, down hi, up lo, up hi).
    One-square holes and the empty region's perimeter are both read off these masks."""
    clo = np.uint64(qlo)
    chi = np.uint64(qhi)
    fc_lo, fc_hi = core.border_line(tab, core.BORDER_FIRST_COL)
    lc_lo, lc_hi = core.border_line(tab, core.BORDER_LAST_COL)
    fr_lo, fr_hi = core.border_line(tab, core.BORDER_FIRST_ROW)
    lr_lo, lr_hi = core.border_line(tab, core.BORDER_LAST_ROW)
    fclo = np.uint64(fc_lo)
    fchi = np.uint64(fc_hi)
    lclo = np.uint64(lc_lo)
    lchi = np.uint64(lc_hi)
    frlo = np.uint64(fr_lo)
    frhi = np.uint64(fr_hi)
    lrlo = np.uint64(lr_lo)
    lrhi = np.uint64(lr_hi)
    cols = np.uint64(tab[core.T_COLS])
    # right neighbour covered (or border)
    rlo, rhi = _shr(clo, chi, U1)
    rlo = (rlo & ~lclo) | lclo
    rhi = (rhi & ~lchi) | lchi
    llo, lhi = _shl(clo, chi, U1)
    llo = (llo & ~fclo) | fclo
    lhi = (lhi & ~fchi) | fchi
    dlo, dhi = _shr(clo, chi, cols)
    dlo |= lrlo
    dhi |= lrhi
    ulo, uhi = _shl(clo, chi, cols)
    ulo |= frlo
    uhi |= frhi
    return rlo, rhi, llo, lhi, dlo, dhi, ulo, uhi


@njit(cache=True, inline="always")
def _holes_of(elo: np.uint64, ehi: np.uint64, rlo: np.uint64, rhi: np.uint64, llo: np.uint64,
              lhi: np.uint64, dlo: np.uint64, dhi: np.uint64, ulo: np.uint64,
              uhi: np.uint64) -> tuple[np.uint64, np.uint64]:
    # an empty square all four of whose sides face a patch or the border
    return elo & rlo & llo & dlo & ulo, ehi & rhi & lhi & dhi & uhi


@njit(cache=True, inline="always")
def _empty_of(tab: np.ndarray, qlo: int, qhi: int) -> tuple[np.uint64, np.uint64]:
    full_lo, full_hi = core.full_quilt(tab)
    return ~np.uint64(qlo) & np.uint64(full_lo), ~np.uint64(qhi) & np.uint64(full_hi)


@njit(cache=True)
def hole_mask(tab: np.ndarray, qlo: int, qhi: int) -> tuple[np.uint64, np.uint64]:
    """Empty squares whose four neighbours are all covered or off the quilt (one-square holes:
    only a leather patch can ever fill them)."""
    elo, ehi = _empty_of(tab, qlo, qhi)
    rlo, rhi, llo, lhi, dlo, dhi, ulo, uhi = side_masks(tab, qlo, qhi)
    return _holes_of(elo, ehi, rlo, rhi, llo, lhi, dlo, dhi, ulo, uhi)


@njit(cache=True)
def holes_and_perimeter(tab: np.ndarray, qlo: int, qhi: int) -> tuple[int, int]:
    """(one-square holes, empty perimeter): :func:`count_holes` and
    :func:`empty_perimeter` from one reading of the side masks (a placement is judged by
    both)."""
    elo, ehi = _empty_of(tab, qlo, qhi)
    rlo, rhi, llo, lhi, dlo, dhi, ulo, uhi = side_masks(tab, qlo, qhi)
    hlo, hhi = _holes_of(elo, ehi, rlo, rhi, llo, lhi, dlo, dhi, ulo, uhi)
    perim = (_pc(elo & rlo, ehi & rhi) + _pc(elo & llo, ehi & lhi)
             + _pc(elo & dlo, ehi & dhi) + _pc(elo & ulo, ehi & uhi))
    return _pc(hlo, hhi), perim


@njit(cache=True)
def empty_perimeter(tab: np.ndarray, qlo: int, qhi: int) -> int:
    """Sides of empty squares that face a covered square or the quilt's border: the
    perimeter of the empty region. A patch laid against what is there shortens it (the
    contact heuristic's idea, as a property of the quilt that a model can weigh)."""
    return holes_and_perimeter(tab, qlo, qhi)[1]


@njit(cache=True)
def empty_regions(tab: np.ndarray, qlo: int, qhi: int, small: int) -> tuple[int, int]:
    """The empty squares' connected regions (orthogonal steps): (number of regions, empty
    squares in regions of at most ``small`` squares). Small regions take only the smallest
    patches or a leather patch, so they are likely to stay empty (RULES: each empty square
    costs two points at the end)."""
    full_lo, full_hi = core.full_quilt(tab)
    elo = ~np.uint64(qlo) & np.uint64(full_lo)
    ehi = ~np.uint64(qhi) & np.uint64(full_hi)
    fc_lo, fc_hi = core.border_line(tab, core.BORDER_FIRST_COL)
    lc_lo, lc_hi = core.border_line(tab, core.BORDER_LAST_COL)
    # a square may step right unless it is in the last column, left unless in the first
    step_r_lo = ~np.uint64(lc_lo)
    step_r_hi = ~np.uint64(lc_hi)
    step_l_lo = ~np.uint64(fc_lo)
    step_l_hi = ~np.uint64(fc_hi)
    cols = np.uint64(tab[core.T_COLS])
    regions = 0
    in_small = 0
    rem_lo = elo
    rem_hi = ehi
    zero = np.uint64(0)
    while rem_lo != zero or rem_hi != zero:
        # seed: the lowest remaining empty square
        if rem_lo != zero:
            flo = rem_lo & (~rem_lo + U1)
            fhi = zero
        else:
            flo = zero
            fhi = rem_hi & (~rem_hi + U1)
        while True:
            a_lo, a_hi = _shl(flo & step_r_lo, fhi & step_r_hi, U1)
            b_lo, b_hi = _shr(flo & step_l_lo, fhi & step_l_hi, U1)
            c_lo, c_hi = _shl(flo, fhi, cols)
            d_lo, d_hi = _shr(flo, fhi, cols)
            nlo = (flo | a_lo | b_lo | c_lo | d_lo) & elo
            nhi = (fhi | a_hi | b_hi | c_hi | d_hi) & ehi
            if nlo == flo and nhi == fhi:
                break
            flo = nlo
            fhi = nhi
        regions += 1
        size = _pc(flo, fhi)
        if size <= small:
            in_small += size
        rem_lo &= ~flo
        rem_hi &= ~fhi
    return regions, in_small


@njit(cache=True)
def count_holes(tab: np.ndarray, qlo: int, qhi: int) -> int:
    hlo, hhi = hole_mask(tab, qlo, qhi)
    return _pc(hlo, hhi)


@njit(cache=True)
def best_window(tab: np.ndarray, qlo: int, qhi: int) -> int:
    """Covered squares in the fullest bonus window (0 if the ruleset has no bonus)."""
    best = 0
    for w in range(tab[core.T_NWINDOWS]):
        c = (core.popcount64(qlo & core.window_lo(tab, w))
             + core.popcount64(qhi & core.window_hi(tab, w)))
        if c > best:
            best = c
    return best


@njit(cache=True)
def contact(tab: np.ndarray, qlo: int, qhi: int, g: int) -> int:
    """Sides of placement g that touch a covered square or the quilt's border."""
    return (core.popcount64(core.placement_nb_lo(tab, g) & qlo)
            + core.popcount64(core.placement_nb_hi(tab, g) & qhi)
            + core.placement_edge(tab, g))


@njit(cache=True)
def placement_score(tab: np.ndarray, qlo: int, qhi: int, holes0: int,
                    g: int, w_contact: float, w_holes: float, w_window: float,
                    bonus_open: bool) -> float:
    """How well placement g packs: contact with what is there, minus one-square holes it
    creates (holes0 = holes before), plus coverage of the fullest bonus window."""
    nlo = qlo | core.placement_lo(tab, g)
    nhi = qhi | core.placement_hi(tab, g)
    s = w_contact * contact(tab, qlo, qhi, g)
    if w_holes != 0.0:
        s -= w_holes * (count_holes(tab, nlo, nhi) - holes0)
    if w_window != 0.0 and bonus_open:
        # the pull towards the bonus window scales with what the tile is worth, relative to
        # the printed game's 7 points (a 0-point tile is not worth chasing)
        worth = tab[core.T_BONUS_POINTS] / REFERENCE_BONUS_POINTS
        s += w_window * worth * best_window(tab, nlo, nhi)
    return s


@njit(cache=True)
def best_placement(state: np.ndarray, tab: np.ndarray, p: int, patch: int,
                   w_contact: float, w_holes: float, w_window: float,
                   first_fit: bool) -> tuple[int, float]:
    """The best-scoring placement of ``patch`` on p's quilt: (placement id, score), or
    (-1, 0.0) if it does not fit anywhere. ``first_fit`` takes the first one that fits."""
    qlo = state[core.S_QLO + p]
    qhi = state[core.S_QHI + p]
    first = core.patch_first(tab, patch)
    n = core.patch_count(tab, patch)
    bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
    holes0 = count_holes(tab, qlo, qhi) if w_holes != 0.0 else 0
    best_g = -1
    best_s = -1e300
    for g in range(first, first + n):
        if not core.fits(state, tab, p, g):
            continue
        if first_fit:
            return g, placement_score(tab, qlo, qhi, holes0, g, w_contact, w_holes, w_window,
                                      bonus_open)
        s = placement_score(tab, qlo, qhi, holes0, g, w_contact, w_holes, w_window, bonus_open)
        if s > best_s:
            best_s = s
            best_g = g
    if best_g < 0:
        return -1, 0.0
    return best_g, best_s


@njit(cache=True)
def leather_square(state: np.ndarray, tab: np.ndarray, p: int) -> int:
    """Where a claimed leather patch goes: into a one-square hole if there is one (nothing else
    can fill it), else the empty square with the most covered or border sides."""
    qlo = state[core.S_QLO + p]
    qhi = state[core.S_QHI + p]
    hlo, hhi = hole_mask(tab, qlo, qhi)
    nsq = tab[core.T_NSQ]
    best = -1
    best_s = -1
    bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
    for s in range(nsq):
        blo, bhi = core.square_bit(s)
        if (qlo & blo) != 0 or (qhi & bhi) != 0:
            continue
        if (np.int64(hlo) & blo) != 0 or (np.int64(hhi) & bhi) != 0:
            score = 1000
        else:
            nlo, nhi = core.neighbours(tab, s)
            covered = core.popcount64(nlo & qlo) + core.popcount64(nhi & qhi)
            border = 4 - core.popcount64(nlo) - core.popcount64(nhi)
            score = 10 * (covered + border)
        if bonus_open:
            score += best_window(tab, qlo | blo, qhi | bhi)
        if score > best:
            best = score
            best_s = s
    return best_s


@njit(cache=True)
def income_marks_left(tab: np.ndarray, pos: int) -> int:
    """Income marks still ahead of a token on ``pos`` (each pays the quilt's income once)."""
    return core.income_marks_upto(tab, tab[core.T_LAST]) - core.income_marks_upto(tab, pos)


@njit(cache=True)
def keep_best(best_g: np.ndarray, best_s: np.ndarray, kept: int, m: int, g: int,
              s: float) -> int:
    """Offer placement ``g`` of score ``s`` to the ``m`` best so far (``best_g``/``best_s``,
    ``kept`` of them, best first; ties keep the one found first); returns how many are
    kept now. An insertion into a short sorted list: the searches rank every placement.
    Callers test ``kept < m or s > best_s[kept - 1]`` first: a call per placement made the
    learned search three times slower (8.4 against 26 games/s, bench_learned.py)."""
    if kept < m:
        j = kept
        kept += 1
    elif s > best_s[kept - 1]:
        j = kept - 1
    else:
        return kept
    while j > 0 and best_s[j - 1] < s:
        best_s[j] = best_s[j - 1]
        best_g[j] = best_g[j - 1]
        j -= 1
    best_s[j] = s
    best_g[j] = g
    return kept


# A memo of the placements top_placements chose, for one search or one bot's games: a
# search generates the moves of many nodes where the mover's quilt and the offered patch are
# the same (a quilt changes only when its owner buys), and ranking a patch's placements is
# most of what a node of the learned search costs (3.3 us against 0.6 us for a leaf's
# value, edition 2). One row per slot, direct-mapped by a hash of (quilt, patch): the quilt's
# two words, the key (patch and whether the bonus window counted), how many placements, then
# up to MEMO_K of them. An entry is used only when all of its key matches, so a memo changes
# no move. The weights and top_k are part of no key: a memo serves one bot (one parameter
# row) of one ruleset.
MEMO_K = 4
MEMO_COLS = 4 + MEMO_K
MEMO_SLOTS = 1024  # a power of two: one search's (the Python API's move by move)
# One bot's for a batch of games (patchsim.play.loops): the same quilts and patches come
# back from search to search and from game to game (edition 2, 30 self-play games of the
# learned search at 100 iterations: 37 games/s with a memo per search, 52 with 1,024 slots
# kept for the game, 59.5 with 16,384 kept for all 30; the same games in every case)
BOT_MEMO_SLOTS = 16384


@njit(cache=True)
def new_memo(slots: int) -> np.ndarray:
    """An empty placement memo of ``slots`` rows (a power of two; 0: no memo)."""
    memo = np.zeros((slots, MEMO_COLS), dtype=np.int64)
    for i in range(slots):
        memo[i, 2] = -1  # no key: patch keys are >= 0
    return memo


@njit(cache=True, inline="always")
def _memo_slot(memo: np.ndarray, qlo: int, qhi: int, key: int) -> int:
    # int64 arithmetic wraps in compiled code; constants below 2^63 keep it int64
    h = qlo * 0x1E3779B97F4A7C15 + qhi * 0x3F58476D1CE4E5B9 + key * 0x14D049BB133111EB
    return (h >> 17) & (memo.shape[0] - 1)


@njit(cache=True)
def top_placements(state: np.ndarray, tab: np.ndarray, out: np.ndarray, top_k: int,
                   w_contact: float, w_holes: float, w_window: float,
                   forbid: int) -> int:
    """The moves a search considers, written to ``out``: pass, then for each affordable
    offered patch (but ``forbid``, -1 for none) its ``top_k`` best placements by
    :func:`placement_score`. Returns how many. Both searches (rollouts and the learned
    evaluation) branch on these, so they share this one definition."""
    return top_placements_memo(state, tab, out, top_k, w_contact, w_holes, w_window, forbid,
                               np.empty((0, MEMO_COLS), dtype=np.int64))


@njit(cache=True)
def top_placements_memo(state: np.ndarray, tab: np.ndarray, out: np.ndarray, top_k: int,
                        w_contact: float, w_holes: float, w_window: float, forbid: int,
                        memo: np.ndarray) -> int:
    """:func:`top_placements`, remembering each patch's placements in ``memo``
    (:func:`new_memo`; one search's, since the weights are part of no key) and reading them
    back where the quilt and the patch are the same: the same moves, faster."""
    p = core.to_move(state, tab)
    out[0] = core.PASS
    n = 1
    qlo = state[core.S_QLO + p]
    qhi = state[core.S_QHI + p]
    bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
    use_memo = memo.shape[0] > 0 and top_k <= MEMO_K
    window_counts = 1 if bonus_open and w_window != 0.0 else 0  # the window is in the score
    holes0 = -1  # counted when first needed (the memo may answer every patch)
    btn = state[core.S_BTN + p]
    best_g = np.empty(top_k, dtype=np.int64)
    best_s = np.empty(top_k, dtype=np.float64)
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        if core.patch_cost(tab, patch) > btn or patch == forbid:
            continue
        slot = -1
        key = 2 * patch + window_counts  # the memo's key of this patch
        if use_memo:
            slot = _memo_slot(memo, qlo, qhi, key)
            if memo[slot, 2] == key and memo[slot, 0] == qlo and memo[slot, 1] == qhi:
                for j in range(memo[slot, 3]):
                    out[n] = memo[slot, 4 + j]
                    n += 1
                continue
        if holes0 < 0:
            holes0 = count_holes(tab, qlo, qhi) if w_holes != 0.0 else 0  # unused when 0
        m = int(np.int64(0))  # typed: a constant 0 compiles keep_best once more
        first = core.patch_first(tab, patch)
        for g in range(first, first + core.patch_count(tab, patch)):
            if not core.fits(state, tab, p, g):
                continue
            s = placement_score(tab, qlo, qhi, holes0, g, w_contact, w_holes, w_window,
                                bonus_open)
            if m < top_k or s > best_s[m - 1]:  # most placements fall out here, cheaply
                m = keep_best(best_g, best_s, m, top_k, g, s)
        for j in range(m):
            out[n] = best_g[j]
            n += 1
        if slot >= 0:
            memo[slot, 0] = qlo
            memo[slot, 1] = qhi
            memo[slot, 2] = key
            memo[slot, 3] = m
            for j in range(m):
                memo[slot, 4 + j] = best_g[j]
    return n
