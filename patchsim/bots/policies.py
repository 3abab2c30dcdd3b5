"""Compiled move-choice policies, dispatched by id from the compiled game loops.

A policy sees the state, the ruleset table, its parameter vector (``N_PARAMS`` floats) and its
own random stream, and returns a move code; the game loop checks legality before applying it.
The scripted policies live in :mod:`patchsim.bots.scripted`, the search in
:mod:`patchsim.bots.search`; this module only dispatches.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from patchsim.bots.features import LEARNED, learned_move
from patchsim.bots.scripted import ALWAYS_PASS, FIRST_FIT, N_PARAMS, RANDOM, SCRIPTED, rollout_move
from patchsim.bots.search import MCTS, mcts_move

__all__ = ["ALWAYS_PASS", "FIRST_FIT", "LEARNED", "MCTS", "N_PARAMS", "RANDOM", "SCRIPTED",
           "choose_move"]


@njit(cache=True)
def choose_move(kind: int, params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                rng: np.ndarray, buf: np.ndarray) -> int:
    """The move policy ``kind`` chooses in ``state``."""
    if kind == MCTS:
        return mcts_move(params, state, tab, rng, buf)
    if kind == LEARNED:
        return learned_move(params, state, tab, rng, buf)
    return rollout_move(kind, params, state, tab, rng, buf)
