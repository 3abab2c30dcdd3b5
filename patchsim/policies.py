"""Compiled move-choice policies, dispatched by id from the compiled game loops.

A policy sees the state, the ruleset table, its parameter vector and its own random stream,
and returns a move code; the game loop checks legality before applying it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from patchsim import core

RANDOM = 0
ALWAYS_PASS = 1
FIRST_FIT = 2

N_PARAMS = 16


@njit(cache=True)
def first_fit_move(state: np.ndarray, tab: np.ndarray) -> np.int64:
    """Buy the first affordable offered patch that fits, at its first placement; else pass.

    Leather goes on the first empty square.
    """
    buf_s = core.to_move(state, tab)
    p = buf_s
    if state[core.S_PENDING] > 0:
        for s in range(tab[core.T_NSQ]):
            blo, bhi = core.square_bit(s)
            if (state[core.S_QLO + p] & blo) == 0 and (state[core.S_QHI + p] & bhi) == 0:
                return core.LEATHER_BASE - s
    btn = state[core.S_BTN + p]
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        if tab[tab[core.O_COST] + patch] > btn:
            continue
        first = tab[tab[core.O_PATCH_FIRST] + patch]
        for g in range(first, first + tab[tab[core.O_PATCH_COUNT] + patch]):
            if core.fits(state, tab, p, g):
                return g
    return core.PASS


@njit(cache=True)
def choose_move(kind: np.int64, params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                rng: np.ndarray, buf: np.ndarray) -> np.int64:
    """The move policy ``kind`` chooses in ``state``."""
    if kind == ALWAYS_PASS:
        if state[core.S_PENDING] > 0:
            return first_fit_move(state, tab)
        return core.PASS
    if kind == FIRST_FIT:
        return first_fit_move(state, tab)
    return core.random_move(state, tab, rng, buf)
