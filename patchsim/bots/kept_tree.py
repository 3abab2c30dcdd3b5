"""The learned search's tree kept from one move to the next (``reuse=1``).

Patchwork has no chance after the deal, so the subtree under the move a search plays still
describes every position in it exactly when the bot moves again: the opponent's answer (or
the bot's own next turn, when it is still behind on the time track, docs/rules.md R3) is
a node of it, with its visits and values. A search that starts from that node instead of
an empty tree spends its budget on top of what the last one learned.

A *keep* is one int64 array per bot: a row per kept node (its state, then ``K_EXTRA``
columns: its first child's row, its number of children, its visits, who moved into it,
the move, its widening stage and, as the bits of float64s, its summed reward and its
placement charge), breadth first from the kept root, and a last row holding the number of
kept nodes and the ply of the search that kept them. What does not fit is cut breadth
first: a node whose children do not fit is kept as a leaf, and is expanded again when a
search reaches it. The compiled loops give each bot a keep and empty it at the start of
every game (:func:`forget`), so a game's moves never depend on the games before it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from patchsim.engine import core

Int = int

K_FIRST = 0  # the row of the node's first child (-1: a leaf)
K_NCHILD = 1
K_VISITS = 2
K_MOVER = 3  # who chose the move leading into the node
K_MOVE = 4
K_STAGE = 5  # the widening stage (see patchsim.bots.features.learned_tree)
K_VALUE = 6  # summed reward, float64 bits
K_CHARGE = 7  # placement charge, float64 bits
K_EXTRA = 8
H_NODES = 0  # columns of the last row
H_PLY = 1


@njit(cache=True)
def new_keep(nodes: Int, state_len: Int) -> np.ndarray:
    """An empty keep with room for ``nodes`` nodes of states ``state_len`` long (0 nodes:
    a bot that does not reuse its tree)."""
    keep = np.empty((nodes + 1, state_len + K_EXTRA), dtype=np.int64)
    forget(keep)
    return keep


@njit(cache=True)
def forget(keep: np.ndarray) -> None:
    """Empty ``keep`` (a new game begins)."""
    head = keep[keep.shape[0] - 1]
    head[H_NODES] = 0
    head[H_PLY] = -1


@njit(cache=True)
def kept_nodes(keep: np.ndarray) -> Int:
    """How many nodes ``keep`` holds."""
    return keep[keep.shape[0] - 1, H_NODES]


@njit(cache=True)
def _bits(x: float, scratch: np.ndarray) -> Int:
    scratch[0] = x
    return scratch.view(np.int64)[0]


@njit(cache=True)
def _float(b: Int, scratch: np.ndarray) -> float:
    scratch[0] = b  # an int64 scratch: the bits, not the number
    return scratch.view(np.float64)[0]


@njit(cache=True)
def find_kept(keep: np.ndarray, state: np.ndarray) -> Int:
    """The row of ``keep`` whose state is ``state`` (the shallowest, rows being breadth
    first), or -1: also when the keep was made at this ply or later, which is a new game's
    position, not a later one of the game it was kept in."""
    head = keep[keep.shape[0] - 1]
    n = head[H_NODES]
    ply = state[core.S_PLY]
    if n == 0 or ply <= head[H_PLY] or keep.shape[1] != state.shape[0] + K_EXTRA:
        return -1
    for r in range(n):
        row = keep[r]
        if row[core.S_PLY] != ply:
            continue
        same = True
        for j in range(state.shape[0]):
            if row[j] != state[j]:
                same = False
                break
        if same:
            return r
    return -1


@njit(cache=True)
def keep_subtree(keep: np.ndarray, root: Int, ply: Int, states: np.ndarray,
                 first_child: np.ndarray, nchild: np.ndarray, visits: np.ndarray,
                 value: np.ndarray, mover: np.ndarray, move: np.ndarray, stage: np.ndarray,
                 charge: np.ndarray) -> None:
    """Store in ``keep`` the subtree under tree node ``root`` (the move the search at ply
    ``ply`` plays), breadth first, as much of it as fits. ``stage`` and ``charge`` may be
    shorter than the tree (a search that does not widen, or charges nothing): their
    missing entries are 0."""
    cap = keep.shape[0] - 1
    if cap == 0:
        return
    s = states.shape[1]
    src = np.empty(cap, dtype=np.int64)  # the tree node of each row
    src[0] = root
    n = 1
    scratch = np.empty(1, dtype=np.float64)
    for r in range(cap):
        if r >= n:
            break
        o = src[r]
        row = keep[r]
        core.copy_into(row[:s], states[o])
        fc = first_child[o]
        k = nchild[o]
        grown = fc >= 0 and n + k <= cap
        if grown:
            row[s + K_FIRST] = n
            row[s + K_NCHILD] = k
            for j in range(k):
                src[n + j] = fc + j
            n += k
        else:
            row[s + K_FIRST] = -1
            row[s + K_NCHILD] = 0
        row[s + K_VISITS] = visits[o]
        row[s + K_MOVER] = mover[o]
        row[s + K_MOVE] = move[o]
        # a node cut to a leaf widens again from its first stage when it is expanded again
        row[s + K_STAGE] = stage[o] if grown and o < stage.shape[0] else 0
        row[s + K_VALUE] = _bits(value[o], scratch)
        row[s + K_CHARGE] = _bits(charge[o] if o < charge.shape[0] else 0.0, scratch)
    head = keep[cap]
    head[H_NODES] = n
    head[H_PLY] = ply


@njit(cache=True)
def restore_subtree(keep: np.ndarray, at: Int, states: np.ndarray, first_child: np.ndarray,
                    nchild: np.ndarray, visits: np.ndarray, value: np.ndarray,
                    mover: np.ndarray, move: np.ndarray, stage: np.ndarray,
                    charge: np.ndarray) -> Int:
    """Rebuild the kept subtree under row ``at`` as a tree from node 0 on (node 0 its root;
    the arrays as :func:`patchsim.bots.tree.new_tree` makes them, with room for at least
    ``kept_nodes(keep) - at`` nodes); returns the number of nodes."""
    cap = states.shape[0]
    s = states.shape[1]
    total = kept_nodes(keep)
    src = np.empty(min(cap, total - at), dtype=np.int64)
    src[0] = at
    n = 1
    scratch = np.empty(1, dtype=np.int64)
    for r in range(src.shape[0]):
        if r >= n:
            break
        row = keep[src[r]]
        core.copy_into(states[r], row[:s])
        fc = row[s + K_FIRST]
        k = row[s + K_NCHILD]
        grown = fc >= 0 and n + k <= src.shape[0]
        if grown:
            first_child[r] = n
            nchild[r] = k
            for j in range(k):
                src[n + j] = fc + j
            n += k
        else:
            first_child[r] = -1
            nchild[r] = 0
        visits[r] = row[s + K_VISITS]
        mover[r] = row[s + K_MOVER]
        move[r] = row[s + K_MOVE]
        if r < stage.shape[0]:
            stage[r] = row[s + K_STAGE] if grown else 0
        value[r] = _float(row[s + K_VALUE], scratch)
        if r < charge.shape[0]:
            charge[r] = _float(row[s + K_CHARGE], scratch)
    return n
