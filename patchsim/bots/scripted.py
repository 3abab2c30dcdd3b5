"""The scripted strategies, compiled: patch choice by weighted value per time and placement
by packing heuristics (``P_*`` parameters), plus the fixed baselines (random, pass, first fit).

They are also the rollout policies of the search (:mod:`patchsim.bots.search`). The Python
bot classes in :mod:`patchsim.bots.registry` fill the parameter vectors.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from patchsim.bots.heuristics import best_placement, income_marks_left, leather_square
from patchsim.engine import core

# policy ids, dispatched on by patchsim.bots.policies.choose_move
RANDOM = 0
ALWAYS_PASS = 1
FIRST_FIT = 2
SCRIPTED = 3

N_PARAMS = 48  # the learned search uses 46 (patchsim.bots.features)

# --- scripted policy parameters (also the rollout policy of the search bot) --------------------
P_W_INCOME = 0  # value of one income button per income mark still ahead
P_W_AREA = 1  # value of one covered square, in units of the empty-square penalty
P_W_COST = 2  # weight of the button cost
P_W_TIME = 3  # cost of one time space (subtractive form)
P_RATIO = 4  # 1: rank patches by value / (time + offset); 0: value - w_time * time
P_TIME_OFFSET = 5
P_W_PLACE = 6  # weight of the best placement's packing score in the patch choice
P_CONTACT = 7  # placement: per side touching a patch or the border
P_HOLES = 8  # placement: per one-square hole created
P_WINDOW = 9  # placement: per covered square of the fullest bonus window
P_PASS_MARGIN = 10  # buy only when the best value beats this
P_EPSILON = 11  # probability of a uniformly random move (variety; rollouts)
P_AREA_RAMP = 12  # area weight grows by this factor over the game (income first, area late)
P_FIRST_FIT = 13  # 1: place at the first placement that fits (fast, poor packing)
P_BUTTON_CAP = 14  # above this many buttons, money is worth less: cost weight halves
# restricted play: 1 + the index of a patch this bot may never buy (0: none). Set by
# ScriptedBot.bind, which knows the ruleset; a search copies 0 here for its rollouts.
P_FORBID = 15


@njit(cache=True)
def first_fit_move(state: np.ndarray, tab: np.ndarray) -> int:
    """Buy the first affordable offered patch that fits, at its first placement; else pass.

    Leather goes on the first empty square.
    """
    p = core.to_move(state, tab)
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
        if core.patch_cost(tab, patch) > btn:
            continue
        first = core.patch_first(tab, patch)
        for g in range(first, first + core.patch_count(tab, patch)):
            if core.fits(state, tab, p, g):
                return g
    return core.PASS


@njit(cache=True)
def patch_value(params: np.ndarray, state: np.ndarray, tab: np.ndarray, p: int,
                patch: int, place_score: float) -> float:
    """How much buying ``patch`` is worth to p now, in the scripted policy's terms.

    Income is valued by the income marks still ahead (endgame knowledge: a patch bought after
    the last mark earns nothing); squares by the empty-square penalty they avoid; time spent
    beyond the last space is not charged because the token stops there.
    """
    pos = state[core.S_POS + p]
    last = tab[core.T_LAST]
    t = core.patch_time(tab, patch)
    if t > last - pos:
        t = last - pos
    progress = pos / last if last > 0 else 1.0
    w_cost = params[P_W_COST]
    if params[P_BUTTON_CAP] > 0 and state[core.S_BTN + p] > params[P_BUTTON_CAP]:
        w_cost *= 0.5
    v = (params[P_W_INCOME] * core.patch_income(tab, patch) * income_marks_left(tab, pos)
         + params[P_W_AREA] * core.patch_size(tab, patch) * tab[core.T_PENALTY]
         * (1.0 + params[P_AREA_RAMP] * progress)
         - w_cost * core.patch_cost(tab, patch))
    if params[P_RATIO] > 0:
        v = v / (t + params[P_TIME_OFFSET])
    else:
        v -= params[P_W_TIME] * t
    return v + params[P_W_PLACE] * place_score


@njit(cache=True)
def scripted_move(params: np.ndarray, state: np.ndarray, tab: np.ndarray, rng: np.ndarray,
                  buf: np.ndarray) -> int:
    """The scripted strategy: value each affordable offered patch (see ``patch_value``) with
    its best placement, buy the best if it beats passing, else pass. A forbidden patch
    (``P_FORBID``) is never bought."""
    p = core.to_move(state, tab)
    if state[core.S_PENDING] > 0:
        return core.LEATHER_BASE - leather_square(state, tab, p)
    forbid = np.int64(params[P_FORBID]) - 1
    if params[P_EPSILON] > 0 and core.rng_unit(rng) < params[P_EPSILON]:
        code = core.random_move(state, tab, rng, buf)
        # a random buy of the forbidden patch falls through to the policy's own choice
        if forbid < 0 or code < 0 or core.placement_patch(tab, code) != forbid:
            return code
    btn = state[core.S_BTN + p]
    best_v = params[P_PASS_MARGIN]
    best_g = core.PASS
    first_fit = params[P_FIRST_FIT] > 0
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        if core.patch_cost(tab, patch) > btn or patch == forbid:
            continue
        g, ps = best_placement(state, tab, p, patch, params[P_CONTACT], params[P_HOLES],
                               params[P_WINDOW], first_fit)
        if g < 0:
            continue
        v = patch_value(params, state, tab, p, patch, ps)
        if v > best_v:
            best_v = v
            best_g = g
    return best_g


@njit(cache=True)
def rollout_move(kind: int, params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                 rng: np.ndarray, buf: np.ndarray) -> int:
    """The non-search policies (the ones a search may use for its rollouts)."""
    if kind == SCRIPTED:
        return scripted_move(params, state, tab, rng, buf)
    if kind == ALWAYS_PASS:
        if state[core.S_PENDING] > 0:
            return first_fit_move(state, tab)
        return core.PASS
    if kind == FIRST_FIT:
        return first_fit_move(state, tab)
    return core.random_move(state, tab, rng, buf)
