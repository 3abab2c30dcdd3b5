"""The search bot, compiled: Monte Carlo tree search (UCT) over pass and the best few
placements of each patch, with rollouts by a scripted policy (:mod:`patchsim.bots.scripted`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from patchsim.bots.heuristics import leather_square, top_placements
from patchsim.bots.scripted import P_CONTACT, P_HOLES, P_WINDOW, rollout_move
from patchsim.bots.tree import (
    Int,
    backup,
    expand,
    new_tree,
    now_ms,
    sample_by_visits,
    uct_child,
)
from patchsim.engine import core

MCTS = 4  # policy id

# --- search (MCTS) parameters; the rollout policy's parameters follow at ROLLOUT_OFFSET ---------
M_ITERATIONS = 0
M_C = 1  # exploration constant of UCT
M_TOP_K = 2  # placements searched per patch (the best by the placement heuristic)
M_ROLLOUT_KIND = 3
M_MARGIN_WEIGHT = 4  # reward = (1 - w) * win + w * squashed score margin
M_TIME_MS = 5  # if > 0, stop after this many milliseconds (not reproducible across machines)
M_MARGIN_SCALE = 6
# restricted play: 1 + the index of a patch the searching player never buys (0: none). Only
# the root player's moves in the tree are restricted; its opponent is not, and the rollouts
# (scripted P_FORBID = 0) may buy the patch for either player.
M_FORBID = 7
# opening diversity (AlphaZero's temperature): while the game's ply count (both seats,
# leather placements included) is below M_SAMPLE_PLIES, the root move is drawn with
# probability proportional to visits^(1 / M_TEMPERATURE) from the seat's random stream;
# at M_TEMPERATURE = 0 (the default) the stream is not touched and the most visited move plays
M_TEMPERATURE = 8
M_SAMPLE_PLIES = 9
ROLLOUT_OFFSET = 16


@njit(cache=True)
def search_actions(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                   out: np.ndarray, root: Int = -1) -> Int:
    """The moves the search considers: pass, and for each affordable offered patch its
    ``top_k`` best placements by the rollout policy's placement heuristic. When ``root``
    (the player the search runs for) is to move, its forbidden patch (``M_FORBID``) is left
    out."""
    p = core.to_move(state, tab)
    forbid = int(params[M_FORBID]) - 1 if p == root else -1
    r = ROLLOUT_OFFSET
    return top_placements(state, tab, out, int(max(1, int(params[M_TOP_K]))),
                          params[r + P_CONTACT], params[r + P_HOLES], params[r + P_WINDOW],
                          forbid)


# The tree is sized for at most this many iterations' expansions: a larger budget keeps
# searching (rollouts from the leaves of the full tree), in bounded memory (about 140,000
# nodes, about 70 MB, at top_k=2), instead of asking for terabytes.
TREE_ITERATIONS = 20000
STOP_EVERY = 16  # iterations between two reads of the stop flag
CLOCK_EVERY = 32  # iterations between two reads of the clock (time budgets)


@njit(cache=True)
def mcts_move(params: np.ndarray, state: np.ndarray, tab: np.ndarray, rng: np.ndarray,
              buf: np.ndarray) -> Int:
    """Monte Carlo tree search (UCT) over pass and the best few placements of each patch,
    with rollouts by a scripted policy; returns the most visited root move (in the first
    ``M_SAMPLE_PLIES`` plies with ``M_TEMPERATURE`` > 0: a root move drawn by visits)."""
    return mcts_search(params, state, tab, rng, buf, np.zeros(1, dtype=np.int64))


@njit(cache=True)
def mcts_search(params: np.ndarray, state: np.ndarray, tab: np.ndarray, rng: np.ndarray,
                buf: np.ndarray, stop: np.ndarray) -> Int:
    """:func:`mcts_move`, cut short (the most visited root move so far) once another thread
    sets ``stop[0]``: it is read every ``STOP_EVERY`` iterations, so a run stops within a
    move's fraction, not after the move (a million-iteration move takes minutes)."""
    p0 = core.to_move(state, tab)
    if state[core.S_PENDING] > 0:
        return core.LEATHER_BASE - leather_square(state, tab, p0)
    iters = max(1, int(params[M_ITERATIONS]))
    c = params[M_C]
    top_k = max(1, int(params[M_TOP_K]))
    rkind = int(params[M_ROLLOUT_KIND])
    rparams = params[ROLLOUT_OFFSET:]
    mw = params[M_MARGIN_WEIGHT]
    mscale = params[M_MARGIN_SCALE] if params[M_MARGIN_SCALE] > 0 else 20.0
    time_ms = params[M_TIME_MS]
    t_start = now_ms() if time_ms > 0 else 0.0

    max_children = 1 + tab[core.T_OFFER] * top_k
    acts = np.empty(max_children, dtype=np.int64)
    n_root = search_actions(params, state, tab, acts, p0)
    if n_root == 1:
        return core.PASS

    cap = 1 + min(iters, TREE_ITERATIONS) * max_children
    states, first_child, nchild, visits, value, mover, move, path = new_tree(cap, state)
    nodes: Int = int(np.int64(1))  # typed: constants compile expand and uct_child once more
    work = np.empty(state.shape[0], dtype=np.int64)

    for it in range(iters):
        if time_ms > 0 and it % CLOCK_EVERY == CLOCK_EVERY - 1 and now_ms() - t_start > time_ms:
            break
        # never before the root is expanded (the first iteration): a move must come back
        if it % STOP_EVERY == STOP_EVERY - 1 and stop[0] != 0:
            break
        node: Int = int(np.int64(0))
        depth = 0
        path[depth] = node
        while True:
            st = states[node]
            if core.is_finished(st, tab):
                break
            if first_child[node] < 0:
                # expand: create every child with its state
                na = search_actions(params, st, tab, acts, p0)
                if nodes + na > cap:
                    break
                nodes = expand(states, first_child, nchild, mover, move, tab, node, nodes,
                               acts, na, core.to_move(st, tab))
            # select: an unvisited child first, else the best UCT score
            node = uct_child(first_child, nchild, visits, value, node, c)
            depth += 1
            path[depth] = node
            if visits[node] == 0:
                break
        # rollout
        core.copy_into(work, states[node])
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
        if w == 0:
            backup(path, depth, visits, value, mover, r_w, r_l)
        else:
            backup(path, depth, visits, value, mover, r_l, r_w)
    temperature = params[M_TEMPERATURE]
    if temperature > 0 and state[core.S_PLY] < params[M_SAMPLE_PLIES]:
        return move[sample_by_visits(first_child, nchild, visits, 0, temperature, rng)]
    fc = first_child[0]
    best = fc
    for ch in range(fc, fc + nchild[0]):
        if visits[ch] > visits[best] or (visits[ch] == visits[best]
                                          and value[ch] > value[best]):
            best = ch
    return move[best]
