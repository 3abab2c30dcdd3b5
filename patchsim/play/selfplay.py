"""The self-play loop of every training (``patchsim train``, ``--pack``, ``--net``), and how
a generation's games were played.

:func:`selfplay` plays a chunk of games, records the positions a fit learns from and writes
each game's result row in the compiled loop's layout (:mod:`patchsim.play.loops`: scores,
passes, the 7x7 bonus, the holes left at the end) with the passes it opened with.
:func:`play_quality` turns those rows into the packing and stand-off figures of the games
table's reports (:func:`patchsim.analysis.packing.packing_table`), so that a training's
document shows, generation by generation, whether its self-play settles into a passing
convention (issue 29): the share of degenerate games, of games that open with
``OPENING_PASSES`` passes in a row, the 7x7 share, the holes and the mean final score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from patchsim.analysis.packing import PACKING_METRICS, packing_table
from patchsim.bots import features as F
from patchsim.bots import network as NET
from patchsim.bots.policies import choose_move
from patchsim.engine import core
from patchsim.play.loops import (
    R_BONUS,
    R_BUYS,
    R_HOLES,
    R_LEATHER,
    R_PASSES,
    R_SCORE,
    R_WIDTH,
    R_WINNER,
    finish_result,
)

# what a self-play position records: the linear model's features (from seat 0's side), the
# value network's inputs (from the mover's side), or feature version 2 (eval=pack)
RECORD_FEATURES = 0
RECORD_NET_INPUTS = 1
RECORD_ALL_FEATURES = 2
NO_OPPONENT = -1  # opp_seat of a game the learner plays against itself


def result_rows(games: int) -> np.ndarray:
    """Room for the result rows of ``games`` games (:func:`selfplay` fills them)."""
    return np.zeros((games, R_WIDTH), dtype=np.int64)


@njit(cache=True, nogil=True)
def selfplay(tab: np.ndarray, circles: np.ndarray, streams: np.ndarray, kind: int,
             params: np.ndarray, epsilon: float, record: int, rows_out: np.ndarray,
             game_of: np.ndarray, mover: np.ndarray, results: np.ndarray,
             opening: np.ndarray, opp_kind: int, opp_params: np.ndarray,
             opp_seat: np.ndarray) -> int:
    """Play one self-play game per circle with policy ``kind``/``params`` in both seats, or
    in game i against ``opp_kind``/``opp_params`` in seat ``opp_seat[i]`` (``NO_OPPONENT``:
    itself); record every decision position (``record``: ``RECORD_FEATURES``,
    ``RECORD_ALL_FEATURES`` or ``RECORD_NET_INPUTS`` into ``rows_out``; its game index in
    ``game_of``, its mover in ``mover``), each game's result row (``results``, the compiled
    loop's layout) and the passes it opened with (``opening``: both seats together, until
    the first move that is not a pass, leather placements included, as
    :func:`patchsim.analysis.degenerate.opening_pass_runs` counts them). Only the learner
    explores (epsilon). Returns the number of rows written. The one self-play loop of every
    training: they differ only in what a position records and whom they play."""
    buf = np.empty(core.max_moves(tab), dtype=np.int64)
    acts = np.empty(1 + tab[core.T_OFFER] * 64, dtype=np.int64)
    explore = params[:F.N_PARAMS].copy()  # a network bot's row carries its network after
    explore[F.L_TOP_K] = 2.0
    explore[F.L_CONTACT] = 1.0
    explore[F.L_HOLES] = 0.5
    explore[F.L_WINDOW] = 0.3
    rng = np.zeros(2, dtype=np.uint64)
    rows = 0
    for i in range(circles.shape[0]):
        state = core.new_state(tab, circles[i])
        rng[0] = streams[i, 0]
        rng[1] = streams[i, 1]
        result = results[i]
        result[:] = 0
        opening[i] = 0
        opened = False  # a move that is not a pass has been played
        while True:
            p = core.to_move(state, tab)
            if p < 0:
                break
            r = rng[p:p + 1]
            learner = p != opp_seat[i]
            if state[core.S_PENDING] > 0:
                if learner:
                    code = choose_move(kind, params, state, tab, r, buf)
                else:
                    code = choose_move(opp_kind, opp_params, state, tab, r, buf)
            else:
                if rows < rows_out.shape[0]:
                    if record == RECORD_NET_INPUTS:
                        NET.net_inputs(state, tab, p, rows_out[rows])
                    elif record == RECORD_ALL_FEATURES:
                        F.all_features(state, tab, rows_out[rows])
                    else:
                        F.features(state, tab, rows_out[rows])
                    game_of[rows] = i
                    mover[rows] = p
                    rows += 1
                if not learner:
                    code = choose_move(opp_kind, opp_params, state, tab, r, buf)
                elif core.rng_unit(r) < epsilon:
                    n = F.search_actions(explore, state, tab, acts)
                    code = acts[core.rng_below(r, n)]
                else:
                    code = choose_move(kind, params, state, tab, r, buf)
            # the move counts as the compiled loop keeps them (patchsim.play.loops)
            if code == core.PASS:
                result[R_PASSES + p] += 1
                if not opened:
                    opening[i] += 1
            else:
                opened = True
                if code <= core.LEATHER_BASE:
                    result[R_LEATHER + p] += 1
                else:
                    result[R_BUYS + p] += 1
            core.apply_move(state, tab, code)
        finish_result(state, tab, result)
    return rows


def margins_and_winners(results: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per game of ``results`` (result rows): seat 0's final margin and the winner."""
    return results[:, R_SCORE] - results[:, R_SCORE + 1], results[:, R_WINNER].copy()


def play_quality(results: np.ndarray, opening: np.ndarray) -> dict[str, Any]:
    """How the games of ``results`` (one self-play game per deal; ``opening``: the passes
    each opened with) were played: ``games`` and, for every packing metric of
    :data:`patchsim.analysis.packing.PACKING_METRICS` (mean final score, 7x7 share,
    isolated holes at the end, the share opening with 6+ passes, the degenerate share), its
    mean with a 95% interval over the games (``<metric>``, ``<metric>_lo``,
    ``<metric>_hi``), as plain floats for a JSON history."""
    n = len(results)
    if n == 0:
        return {"games": 0}
    bonus = results[:, R_BONUS]
    games = pd.DataFrame({
        "ruleset": "training", "pairing": "self-play", "bot0": "learner", "bot1": "learner",
        "game_id": np.arange(n), "deal": np.arange(n),
        "score0": results[:, R_SCORE], "score1": results[:, R_SCORE + 1],
        "passes0": results[:, R_PASSES], "passes1": results[:, R_PASSES + 1],
        "holes0": results[:, R_HOLES], "holes1": results[:, R_HOLES + 1],
        "bonus0": bonus == 0, "bonus1": bonus == 1,
        "opening_passes": np.asarray(opening, dtype=np.int64)})
    row = packing_table(games).iloc[0]
    out: dict[str, Any] = {"games": n}
    for m in PACKING_METRICS:
        for c in (m, f"{m}_lo", f"{m}_hi"):
            out[c] = float(row[c])
    return out
