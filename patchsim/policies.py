"""Compiled move-choice policies, dispatched by id from the compiled game loops.

A policy sees the state, the ruleset table, its parameter vector (``N_PARAMS`` floats) and its
own random stream, and returns a move code; the game loop checks legality before applying it.
The Python bot classes in :mod:`patchsim.bots` fill the parameter vectors.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit, objmode

from patchsim import core
from patchsim.heuristics import (
    best_placement,
    count_holes,
    income_marks_left,
    leather_square,
    placement_score,
)

RANDOM = 0
ALWAYS_PASS = 1
FIRST_FIT = 2
SCRIPTED = 3
MCTS = 4

N_PARAMS = 32

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

# --- search (MCTS) parameters; the rollout policy's parameters follow at ROLLOUT_OFFSET ---------
M_ITERATIONS = 0
M_C = 1  # exploration constant of UCT
M_TOP_K = 2  # placements searched per patch (the best by the placement heuristic)
M_ROLLOUT_KIND = 3
M_MARGIN_WEIGHT = 4  # reward = (1 - w) * win + w * squashed score margin
M_TIME_MS = 5  # if > 0, stop after this many milliseconds (not reproducible across machines)
M_MARGIN_SCALE = 6
ROLLOUT_OFFSET = 16


@njit(cache=True)
def first_fit_move(state: np.ndarray, tab: np.ndarray) -> np.int64:
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
        if tab[tab[core.O_COST] + patch] > btn:
            continue
        first = tab[tab[core.O_PATCH_FIRST] + patch]
        for g in range(first, first + tab[tab[core.O_PATCH_COUNT] + patch]):
            if core.fits(state, tab, p, g):
                return g
    return core.PASS


@njit(cache=True)
def patch_value(params: np.ndarray, state: np.ndarray, tab: np.ndarray, p: np.int64,
                patch: np.int64, place_score: float) -> float:
    """How much buying ``patch`` is worth to p now, in the scripted policy's terms.

    Income is valued by the income marks still ahead (endgame knowledge: a patch bought after
    the last mark earns nothing); squares by the empty-square penalty they avoid; time spent
    beyond the last space is not charged because the token stops there.
    """
    pos = state[core.S_POS + p]
    last = tab[core.T_LAST]
    t = tab[tab[core.O_TIME] + patch]
    if t > last - pos:
        t = last - pos
    progress = pos / last if last > 0 else 1.0
    w_cost = params[P_W_COST]
    if params[P_BUTTON_CAP] > 0 and state[core.S_BTN + p] > params[P_BUTTON_CAP]:
        w_cost *= 0.5
    v = (params[P_W_INCOME] * tab[tab[core.O_INCOME] + patch] * income_marks_left(tab, pos)
         + params[P_W_AREA] * tab[tab[core.O_SIZE] + patch] * tab[core.T_PENALTY]
         * (1.0 + params[P_AREA_RAMP] * progress)
         - w_cost * tab[tab[core.O_COST] + patch])
    if params[P_RATIO] > 0:
        v = v / (t + params[P_TIME_OFFSET])
    else:
        v -= params[P_W_TIME] * t
    return v + params[P_W_PLACE] * place_score


@njit(cache=True)
def scripted_move(params: np.ndarray, state: np.ndarray, tab: np.ndarray, rng: np.ndarray,
                  buf: np.ndarray) -> np.int64:
    """The scripted strategy: value each affordable offered patch (see ``patch_value``) with
    its best placement, buy the best if it beats passing, else pass."""
    p = core.to_move(state, tab)
    if state[core.S_PENDING] > 0:
        return core.LEATHER_BASE - leather_square(state, tab, p)
    if params[P_EPSILON] > 0 and core.rng_unit(rng) < params[P_EPSILON]:
        return core.random_move(state, tab, rng, buf)
    btn = state[core.S_BTN + p]
    best_v = params[P_PASS_MARGIN]
    best_g = core.PASS
    first_fit = params[P_FIRST_FIT] > 0
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        if tab[tab[core.O_COST] + patch] > btn:
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
def rollout_move(kind: np.int64, params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                 rng: np.ndarray, buf: np.ndarray) -> np.int64:
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


@njit(cache=True)
def _play_macro(state: np.ndarray, tab: np.ndarray, code: np.int64) -> None:
    """Apply a move, then place any leather it claimed by the leather heuristic (the search
    does not branch on leather squares)."""
    core.apply_move(state, tab, code)
    while state[core.S_PENDING] > 0:
        p = state[core.S_PENDING_PLAYER]
        core.apply_move(state, tab, core.LEATHER_BASE - leather_square(state, tab, p))


@njit(cache=True)
def search_actions(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                   out: np.ndarray) -> np.int64:
    """The moves the search considers: pass, and for each affordable offered patch its
    ``top_k`` best placements by the rollout policy's placement heuristic."""
    p = core.to_move(state, tab)
    out[0] = core.PASS
    n = 1
    top_k = max(1, np.int64(params[M_TOP_K]))
    r = ROLLOUT_OFFSET
    wc = params[r + P_CONTACT]
    wh = params[r + P_HOLES]
    ww = params[r + P_WINDOW]
    qlo = state[core.S_QLO + p]
    qhi = state[core.S_QHI + p]
    holes0 = count_holes(tab, qlo, qhi)
    bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
    btn = state[core.S_BTN + p]
    best_g = np.empty(top_k, dtype=np.int64)
    best_s = np.empty(top_k, dtype=np.float64)
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        if tab[tab[core.O_COST] + patch] > btn:
            continue
        m = 0
        first = tab[tab[core.O_PATCH_FIRST] + patch]
        for g in range(first, first + tab[tab[core.O_PATCH_COUNT] + patch]):
            if not core.fits(state, tab, p, g):
                continue
            s = placement_score(tab, qlo, qhi, holes0, g, wc, wh, ww, bonus_open)
            # keep the top_k by score (insertion into a short sorted list)
            if m < top_k:
                j = m
                m += 1
            elif s > best_s[m - 1]:
                j = m - 1
            else:
                continue
            while j > 0 and best_s[j - 1] < s:
                best_s[j] = best_s[j - 1]
                best_g[j] = best_g[j - 1]
                j -= 1
            best_s[j] = s
            best_g[j] = g
        for j in range(m):
            out[n] = best_g[j]
            n += 1
    return n


@njit(cache=True)
def _now_ms() -> float:
    with objmode(t="float64"):
        t = time.perf_counter() * 1000.0
    return t


@njit(cache=True)
def mcts_move(params: np.ndarray, state: np.ndarray, tab: np.ndarray, rng: np.ndarray,
              buf: np.ndarray) -> np.int64:
    """Monte Carlo tree search (UCT) over pass and the best few placements of each patch,
    with rollouts by a scripted policy; returns the most visited root move."""
    p0 = core.to_move(state, tab)
    if state[core.S_PENDING] > 0:
        return core.LEATHER_BASE - leather_square(state, tab, p0)
    iters = max(1, np.int64(params[M_ITERATIONS]))
    c = params[M_C]
    top_k = max(1, np.int64(params[M_TOP_K]))
    rkind = np.int64(params[M_ROLLOUT_KIND])
    rparams = params[ROLLOUT_OFFSET:]
    mw = params[M_MARGIN_WEIGHT]
    mscale = params[M_MARGIN_SCALE] if params[M_MARGIN_SCALE] > 0 else 20.0
    time_ms = params[M_TIME_MS]
    t_start = _now_ms() if time_ms > 0 else 0.0

    max_children = 1 + tab[core.T_OFFER] * top_k
    acts = np.empty(max_children, dtype=np.int64)
    n_root = search_actions(params, state, tab, acts)
    if n_root == 1:
        return core.PASS

    cap = 1 + iters * max_children
    slen = state.shape[0]
    states = np.empty((cap, slen), dtype=np.int64)
    first_child = np.full(cap, -1, dtype=np.int64)
    nchild = np.zeros(cap, dtype=np.int64)
    visits = np.zeros(cap, dtype=np.int64)
    value = np.zeros(cap, dtype=np.float64)
    mover = np.zeros(cap, dtype=np.int64)  # who chose the move leading into the node
    move = np.zeros(cap, dtype=np.int64)
    path = np.empty(cap, dtype=np.int64)
    states[0, :] = state
    nodes = 1
    work = np.empty(slen, dtype=np.int64)

    for it in range(iters):
        if time_ms > 0 and it % 32 == 31 and _now_ms() - t_start > time_ms:
            break
        node = 0
        depth = 0
        path[depth] = node
        while True:
            st = states[node]
            if core.is_finished(st, tab):
                break
            if first_child[node] < 0:
                # expand: create every child with its state
                pm = core.to_move(st, tab)
                na = search_actions(params, st, tab, acts)
                if nodes + na > cap:
                    break
                first_child[node] = nodes
                nchild[node] = na
                for a in range(na):
                    ch = nodes + a
                    states[ch, :] = st
                    _play_macro(states[ch], tab, acts[a])
                    move[ch] = acts[a]
                    mover[ch] = pm
                nodes += na
            # select: an unvisited child first, else the best UCT score
            fc = first_child[node]
            best = -1
            best_u = -1e300
            lnv = np.log(visits[node] + 1.0)
            for ch in range(fc, fc + nchild[node]):
                if visits[ch] == 0:
                    best = ch
                    break
                u = value[ch] / visits[ch] + c * np.sqrt(lnv / visits[ch])
                if u > best_u:
                    best_u = u
                    best = ch
            node = best
            depth += 1
            path[depth] = node
            if visits[node] == 0:
                break
        # rollout
        work[:] = states[node]
        while True:
            pm = core.to_move(work, tab)
            if pm < 0:
                break
            code = rollout_move(rkind, rparams, work, tab, rng, buf)
            core.apply_move(work, tab, code)
        w = core.winner(work, tab)
        margin = core.score(work, tab, w) - core.score(work, tab, 1 - w)
        shaped = 0.5 + 0.5 * np.tanh(margin / mscale)
        r_w = (1.0 - mw) + mw * shaped  # reward of the winner
        r_l = mw * (1.0 - shaped)  # reward of the loser
        for d in range(depth + 1):
            nd = path[d]
            visits[nd] += 1
            if d > 0:
                value[nd] += r_w if mover[nd] == w else r_l
    fc = first_child[0]
    best = fc
    for ch in range(fc, fc + nchild[0]):
        if visits[ch] > visits[best] or (visits[ch] == visits[best]
                                          and value[ch] > value[best]):
            best = ch
    return move[best]


@njit(cache=True)
def choose_move(kind: np.int64, params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                rng: np.ndarray, buf: np.ndarray) -> np.int64:
    """The move policy ``kind`` chooses in ``state``."""
    if kind == MCTS:
        return mcts_move(params, state, tab, rng, buf)
    return rollout_move(kind, params, state, tab, rng, buf)
