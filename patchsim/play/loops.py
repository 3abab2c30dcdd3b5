"""Compiled whole-game loops: play games from start to end without returning to Python.

The loops call :func:`choose_or_stop`, which dispatches on a policy id to the compiled bots
(as :func:`patchsim.bots.policies.choose_move` does, but with a stop flag the search reads),
and the same :mod:`patchsim.engine.core` functions the Python API uses.

Compiled only for what a run plays: the entry points (:func:`play_deals`, :func:`play_game`,
:func:`play_games`) are Python functions that tell the compiled loop which optional code the
call's bots use (:func:`code_needed`): the rollout search, the value network, the war
rollouts, the progressive widening. What no bot uses is compiled pruned away (numba
removes a branch on an argument that is None before it types the code), so that code is
neither compiled nor loaded: one implementation of every bot, a few specialisations of the
loop, each cached on disk like any other signature.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from patchsim.bots.features import (
    L_REUSE,
    L_WAR_ROLLOUTS,
    L_WIDEN,
    carries_net,
    learned_keep,
    learned_search,
)
from patchsim.bots.heuristics import BOT_MEMO_SLOTS, count_holes, new_memo
from patchsim.bots.kept_tree import forget, new_keep
from patchsim.bots.policies import LEARNED, MCTS  # the policy ids, named in one place
from patchsim.bots.scripted import rollout_move
from patchsim.bots.search import mcts_search
from patchsim.engine import core

# columns of a game result row (see play_game)
R_WINNER = 0
R_SCORE = 1  # [2]
R_BUTTONS = 3  # [2]
R_EMPTY = 5  # [2]
R_POS = 7  # [2]
R_BONUS = 9  # owner or -1
R_FIRST_END = 10
R_PLIES = 11
R_PASSES = 12  # [2]
R_BUYS = 14  # [2]
R_LEATHER = 16  # [2] leather patches placed
R_ERROR = 18  # 0, or 1 + the player whose policy returned an illegal move
R_HOLES = 19  # [2] isolated one-square holes left on the quilt at the end
R_WIDTH = 21
STOPPED = -2  # play_deals' error row when it was asked to stop


Needed = tuple[bool | None, bool | None, bool | None, bool | None, bool | None]
"""The loops' ``mcts, net, wars, widen, reuse`` arguments: True where a bot uses that code,
None where none does (the loop is then compiled without it)."""


def code_needed(kinds: np.ndarray | Sequence[int], params: np.ndarray) -> Needed:
    """What optional code the bots of policy ids ``kinds`` with parameter rows ``params``
    use: the rollout search (an ``mcts`` bot without ``eval=``), the value network (a row
    that carries one, ``eval=net``) and the learned search's war rollouts
    (``war_rollouts`` > 0), its progressive widening (``widen`` > 0) and its kept tree
    (``reuse=1``)."""
    kinds = np.asarray(kinds)
    learned = [i for i in range(len(kinds)) if kinds[i] == LEARNED]
    mcts = bool(np.any(kinds == MCTS))
    net = any(carries_net(params[i]) for i in learned)
    wars = any(params[i, L_WAR_ROLLOUTS] > 0 for i in learned)
    widen = any(params[i, L_WIDEN] > 0 for i in learned)
    reuse = any(params[i, L_REUSE] > 0 for i in learned)
    return (True if mcts else None, True if net else None, True if wars else None,
            True if widen else None, True if reuse else None)


# inlined into the loop (as play_game_or_stop below, and the learned search into this):
# each compiled level links and optimises its whole call tree once more, about a second
# of a first run's one-core stretch per level (benchmarks/bench_first_run.py)
@njit(cache=True, inline="always")
def choose_or_stop(kind: int, params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                   rng: np.ndarray, buf: np.ndarray, stop: np.ndarray, memo: np.ndarray,
                   keep: np.ndarray, mcts: bool | None = True, net: bool | None = True,
                   wars: bool | None = True, widen: bool | None = True,
                   reuse: bool | None = True) -> int:
    """The move policy ``kind`` chooses in ``state`` (as
    :func:`patchsim.bots.policies.choose_move`); the searches give up early, with the best
    move found so far, once ``stop[0]`` is not 0. ``memo``: the bot's placement memo
    (:func:`bot_memo`; the learned search reads and fills it), ``keep`` its kept tree
    (:func:`bot_keep`). ``mcts``, ``net``, ``wars``, ``widen``, ``reuse`` None: compiled
    without the rollout search, the value network, the war rollouts, the progressive
    widening, the kept tree (:func:`code_needed`)."""
    # a branch on an argument's None-ness is pruned when numba compiles the function for
    # that argument's type: with mcts=None, mcts_search is never compiled nor loaded
    if mcts is not None and kind == MCTS:
        return mcts_search(params, state, tab, rng, buf, stop)
    if kind == LEARNED:
        return learned_search(params, state, tab, rng, buf, stop, memo, keep, net, wars, widen,
                              reuse)
    return rollout_move(kind, params, state, tab, rng, buf)


def play_game(tab: np.ndarray, state: np.ndarray, kinds: np.ndarray, params: np.ndarray,
              rng: np.ndarray, moves: np.ndarray, ev: np.ndarray, result: np.ndarray) -> int:
    """Play ``state`` to the end in place with compiled policies ``kinds[p]``/``params[p]``.

    ``rng`` holds one splitmix64 word per seat: each seat draws from its own stream, so a
    Python driver that feeds the same streams to the same policies plays the same game.
    Writes the move codes to ``moves`` (if it has room), events to ``ev`` (if it has rows) and
    a result row to ``result``; returns the number of event rows written. A policy that
    returns an illegal move stops the game with ``result[R_ERROR] = 1 + player``.
    """
    return int(play_game_or_stop(tab, state, kinds, params, rng, moves, ev, result,
                                 np.zeros(1, dtype=np.int64), bot_memo(kinds[0]),
                                 bot_memo(kinds[1]), bot_keep(kinds[0], params[0], tab),
                                 bot_keep(kinds[1], params[1], tab),
                                 *code_needed(kinds, params)))


@njit(cache=True)
def bot_memo(kind: int) -> np.ndarray:
    """An empty placement memo for one bot of policy id ``kind`` over a batch of games
    (:data:`patchsim.bots.heuristics.BOT_MEMO_SLOTS` rows for the learned search, none for
    the others). Kept across searches and games, it makes the same moves as a memo per
    search (its keys are exact) at about 1.6 times the speed."""
    return new_memo(BOT_MEMO_SLOTS if kind == LEARNED else 0)


@njit(cache=True)
def bot_keep(kind: int, params: np.ndarray, tab: np.ndarray) -> np.ndarray:
    """An empty kept tree (:mod:`patchsim.bots.kept_tree`) for one bot of policy id ``kind``
    and parameter row ``params``: a learned bot's (:func:`learned_keep`; room only with
    ``reuse=1``), none for the others."""
    if kind == LEARNED:
        return learned_keep(params, tab)
    # typed, not the literal 0: one signature of new_keep (a literal would compile another)
    return new_keep(int(np.int64(0)), core.S_CIRCLE + tab[core.T_NPATCH])


# inlined into the loops that call it (numba's own inliner, before typing): each compiled
# entry point links and emits the machine code of its whole call tree once more, and this
# level would add one more pass over the bots' code (about 1.5 s of the first run)
@njit(cache=True, inline="always")
def play_game_or_stop(tab: np.ndarray, state: np.ndarray, kinds: np.ndarray,
                      params: np.ndarray, rng: np.ndarray, moves: np.ndarray, ev: np.ndarray,
                      result: np.ndarray, stop: np.ndarray, memo0: np.ndarray,
                      memo1: np.ndarray, keep0: np.ndarray, keep1: np.ndarray,
                      mcts: bool | None = True, net: bool | None = True,
                      wars: bool | None = True, widen: bool | None = True,
                      reuse: bool | None = True) -> int:
    """:func:`play_game`, given up before the next move once ``stop[0]`` is not 0 (a search
    gives up within a few iterations): ``state`` and ``result`` are then unfinished, and the
    caller, which set the flag, discards them. ``memo0``, ``memo1``: the placement memos
    (:func:`bot_memo`) of the bots in seats 0 and 1; ``keep0``, ``keep1`` their kept trees
    (:func:`bot_keep`), emptied first: a game's moves never depend on the games before
    it. ``mcts``, ``net``, ``wars``, ``widen``, ``reuse``: as :func:`choose_or_stop`."""
    if reuse is not None:
        forget(keep0)
        forget(keep1)
    buf = np.empty(core.max_moves(tab), dtype=np.int64)
    ne = int(np.int64(0))  # typed: a constant 0 compiles apply_logged once more
    result[:] = 0
    while True:
        p = core.to_move(state, tab)
        if p < 0:
            break
        if stop[0] != 0:
            return ne
        code = choose_or_stop(kinds[p], params[p], state, tab, rng[p : p + 1], buf, stop,
                              memo0 if p == 0 else memo1, keep0 if p == 0 else keep1, mcts,
                              net, wars, widen, reuse)
        ply = state[core.S_PLY]
        if ply < moves.shape[0]:
            moves[ply] = code
        if core.legality(state, tab, code) != 0:
            result[R_ERROR] = 1 + p
            result[R_PLIES] = ply + 1
            return ne
        if code == core.PASS:
            result[R_PASSES + p] += 1
        elif code <= core.LEATHER_BASE:
            result[R_LEATHER + p] += 1
        else:
            result[R_BUYS + p] += 1
        ne = core.apply_logged(state, tab, code, ev, ne)
    finish_result(state, tab, result)
    return ne


@njit(cache=True)
def finish_result(state: np.ndarray, tab: np.ndarray, result: np.ndarray) -> None:
    """Write a finished game's outcome into its result row (the move counts are counted
    as the game is played): one place for the compiled loop and the Python driver."""
    result[R_WINNER] = core.winner(state, tab)
    for p in range(2):
        result[R_SCORE + p] = core.score(state, tab, p)
        result[R_BUTTONS + p] = state[core.S_BTN + p]
        result[R_EMPTY + p] = core.empty_squares(state, tab, p)
        result[R_POS + p] = state[core.S_POS + p]
        # the bots' own hole rule (heuristics.count_holes), so the table and the bots agree
        result[R_HOLES + p] = count_holes(tab, state[core.S_QLO + p], state[core.S_QHI + p])
    result[R_BONUS] = state[core.S_BONUS]
    result[R_FIRST_END] = state[core.S_FIRST_END]
    result[R_PLIES] = state[core.S_PLY]


def play_games(tab: np.ndarray, circles: np.ndarray, seeds: np.ndarray, kinds: np.ndarray,
               params: np.ndarray) -> np.ndarray:
    """Play one game per row of ``circles``; ``seeds[i]`` (shape (n, 2)) are the two seats'
    random streams. Returns result rows."""
    out: np.ndarray = _play_games(tab, circles, seeds, kinds, params,
                                  *code_needed(kinds, params))
    return out


@njit(cache=True, nogil=True)
def _play_games(tab: np.ndarray, circles: np.ndarray, seeds: np.ndarray, kinds: np.ndarray,
                params: np.ndarray, mcts: bool | None, net: bool | None,
                wars: bool | None, widen: bool | None, reuse: bool | None) -> np.ndarray:
    n = circles.shape[0]
    out = np.zeros((n, R_WIDTH), dtype=np.int64)
    moves = np.empty(0, dtype=np.int64)
    ev = np.zeros((0, core.EV_WIDTH), dtype=np.int64)
    rng = np.zeros(2, dtype=np.uint64)
    never = np.zeros(1, dtype=np.int64)
    memo0 = bot_memo(kinds[0])  # each seat's bot keeps its memo for all the games
    memo1 = bot_memo(kinds[1])
    keep0 = bot_keep(kinds[0], params[0], tab)
    keep1 = bot_keep(kinds[1], params[1], tab)
    for i in range(n):
        state = core.new_state(tab, circles[i])
        rng[0] = seeds[i, 0]
        rng[1] = seeds[i, 1]
        play_game_or_stop(tab, state, kinds, params, rng, moves, ev, out[i], never, memo0,
                          memo1, keep0, keep1, mcts, net, wars, widen, reuse)
    return out


def play_deals(tab: np.ndarray, circles: np.ndarray, streams: np.ndarray, kinds: np.ndarray,
               params: np.ndarray, max_plies: int, max_events: int, stop: np.ndarray,
               like: tuple[np.ndarray, np.ndarray] | None = None) -> tuple:
    """Play every deal twice, seats swapped (the pairing's first bot in seat 0, then in seat
    1; each bot keeps its stream), writing rows in canonical order (deal, then seat order)
    and moves and events packed end to end, ready to become table columns.

    Returns (results (2n, R_WIDTH), moves (total plies,), events (total events, EV_WIDTH),
    event counts (2n,), error row or -1). Stops after a game whose policy made an illegal
    move; its row number is returned. ``stop`` is a one-element array another thread may
    set: once it is not 0, the call returns before the next move (a search within a few
    iterations) with STOPPED as the error row (the batch is abandoned: a thread in compiled
    code cannot be interrupted, so this is how a run stops promptly).

    The loop is compiled for the code the bots use (:func:`code_needed`), or with ``like``
    (policy ids and parameter rows) for those bots' (a warm-up that plays cheap bots in
    place of the run's)."""
    needed = code_needed(*(like if like is not None else (kinds, params)))
    return _play_deals(tab, circles, streams, kinds, params, max_plies, max_events, stop,
                       *needed)


@njit(cache=True, nogil=True)
def _play_deals(tab: np.ndarray, circles: np.ndarray, streams: np.ndarray, kinds: np.ndarray,
                params: np.ndarray, max_plies: int, max_events: int, stop: np.ndarray,
                mcts: bool | None, net: bool | None, wars: bool | None,
                widen: bool | None, reuse: bool | None):
    """:func:`play_deals`, compiled for the code ``mcts``, ``net``, ``wars``, ``widen``,
    ``reuse`` say."""
    n = circles.shape[0]
    res = np.zeros((2 * n, R_WIDTH), dtype=np.int64)
    moves = np.empty(2 * n * max_plies, dtype=np.int64)
    ev = np.zeros((2 * n * max_events, core.EV_WIDTH), dtype=np.int64)
    nev = np.zeros(2 * n, dtype=np.int64)
    rng = np.zeros(2, dtype=np.uint64)
    k2 = np.empty(2, dtype=np.int64)
    # each pairing bot keeps its placement memo for the batch, whichever seat it is in
    memo_a = bot_memo(kinds[0])
    memo_b = bot_memo(kinds[1])
    keep_a = bot_keep(kinds[0], params[0], tab)
    keep_b = bot_keep(kinds[1], params[1], tab)
    p2 = np.empty((2, params.shape[1]), dtype=np.float64)
    nm = 0
    ne = int(np.int64(0))  # typed: a constant 0 compiles apply_logged once more
    for i in range(n):
        for order in range(2):
            if stop[0] != 0:
                return res, moves[:nm], ev[:ne], nev, STOPPED
            row = 2 * i + order
            a = order  # the pairing bot in seat 0
            k2[0] = kinds[a]
            k2[1] = kinds[1 - a]
            core.copy_into(p2[0], params[a])
            core.copy_into(p2[1], params[1 - a])
            rng[0] = streams[i, a]
            rng[1] = streams[i, 1 - a]
            state = core.new_state(tab, circles[i])
            nev[row] = play_game_or_stop(tab, state, k2, p2, rng, moves[nm:nm + max_plies],
                                         ev[ne:ne + max_events], res[row], stop,
                                         memo_a if a == 0 else memo_b,
                                         memo_b if a == 0 else memo_a,
                                         keep_a if a == 0 else keep_b,
                                         keep_b if a == 0 else keep_a, mcts, net, wars, widen,
                                         reuse)
            if stop[0] != 0:  # the game may be unfinished: the batch is abandoned
                return res, moves[:nm], ev[:ne], nev, STOPPED
            if res[row, R_ERROR] != 0:
                return res, moves[:nm + max_plies], ev[:ne], nev, row
            nm += res[row, R_PLIES]
            ne += nev[row]
    return res, moves[:nm], ev[:ne], nev, -1
