"""The search tree both tree searches grow, compiled: its storage, expansion, UCT selection
and back-up. :func:`patchsim.bots.search.mcts_move` (rollouts at the leaves) and
:func:`patchsim.bots.features.learned_move` (a learned evaluation at the leaves) differ in
what a leaf is worth and when a node is expanded, not in how the tree is kept.

The tree is flat arrays indexed by node (node 0 is the root); a node's children are
consecutive, from ``first_child[node]`` (-1: not expanded) for ``nchild[node]`` nodes.
``value[n]`` sums the rewards of ``mover[n]``, the player who chose the move into ``n``.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit, objmode

from patchsim.bots.heuristics import leather_square
from patchsim.engine import core

# An integer argument or result of the compiled searches. numba types scalars from the
# values, not from annotations (every integer is an int64 there), so the annotations follow
# the engine's: ``int``, for readers and for mypy.
Int = int


@njit(cache=True)
def now_ms() -> float:
    """Milliseconds of a monotonic clock, readable from compiled code (time budgets)."""
    with objmode(t="float64"):
        t = time.perf_counter() * 1000.0
    return t


@njit(cache=True)
def play_macro(state: np.ndarray, tab: np.ndarray, code: Int) -> None:
    """Apply a move, then place any leather it claimed by the leather heuristic (the searches
    do not branch on leather squares)."""
    core.apply_move(state, tab, int(code))
    while state[core.S_PENDING] > 0:
        p = state[core.S_PENDING_PLAYER]
        core.apply_move(state, tab, core.LEATHER_BASE - leather_square(state, tab, p))


@njit(cache=True)
def new_tree(cap: Int, root: np.ndarray):
    """Room for ``cap`` nodes, with the root's state in node 0: (states, first_child,
    nchild, visits, value, mover, move, path)."""
    states = np.empty((cap, root.shape[0]), dtype=np.int64)
    core.copy_into(states[0], root)
    first_child = np.full(cap, -1, dtype=np.int64)
    nchild = np.zeros(cap, dtype=np.int64)
    visits = np.zeros(cap, dtype=np.int64)
    value = np.zeros(cap, dtype=np.float64)
    mover = np.zeros(cap, dtype=np.int64)  # who chose the move leading into the node
    move = np.zeros(cap, dtype=np.int64)
    path = np.empty(cap, dtype=np.int64)  # the nodes of the current descent, root first
    return states, first_child, nchild, visits, value, mover, move, path


@njit(cache=True)
def expand(states: np.ndarray, first_child: np.ndarray, nchild: np.ndarray,
           mover: np.ndarray, move: np.ndarray, tab: np.ndarray, node: Int,
           nodes: Int, acts: np.ndarray, na: Int, pm: Int) -> Int:
    """Give ``node`` (``pm`` to move) one child per move in ``acts[:na]``, from node index
    ``nodes`` on, each with its state after the move (:func:`play_macro`); returns the new
    node count."""
    st = states[node]
    first_child[node] = nodes
    nchild[node] = na
    for a in range(na):
        ch = nodes + a
        core.copy_into(states[ch], st)
        play_macro(states[ch], tab, acts[a])
        move[ch] = acts[a]
        mover[ch] = pm
    return nodes + na


@njit(cache=True)
def uct_child(first_child: np.ndarray, nchild: np.ndarray, visits: np.ndarray,
              value: np.ndarray, node: Int, c: float) -> Int:
    """The child of ``node`` to descend to: the first one never visited, else the one with
    the best UCT score (mean reward + c sqrt(ln(visits of node + 1) / visits of child));
    ties go to the first."""
    fc = first_child[node]
    best = fc
    best_u = -1e300
    lnv = np.log(visits[node] + 1.0)
    for ch in range(fc, fc + nchild[node]):
        if visits[ch] == 0:
            return ch
        u = value[ch] / visits[ch] + c * np.sqrt(lnv / visits[ch])
        if u > best_u:
            best_u = u
            best = ch
    return best


@njit(cache=True)
def first_of_decision(move: np.ndarray, tab: np.ndarray, fc: Int, ch: Int) -> bool:
    """Whether child ``ch`` is the first among ``fc .. ch`` of its decision
    (:func:`move_group`): a loop over a node's decisions visits each once."""
    grp = move_group(tab, move[ch])
    for o in range(fc, ch):  # noqa: SIM110 - numba compiles the loop, not a generator
        if move_group(tab, move[o]) == grp:
            return False
    return True


@njit(cache=True)
def decision_visits(visits: np.ndarray, move: np.ndarray, tab: np.ndarray, fc: Int, end: Int,
                    group: Int) -> Int:
    """The visits of decision ``group`` summed over its children among ``fc .. end - 1``."""
    n = 0
    for o in range(fc, end):
        if move_group(tab, move[o]) == group:
            n += visits[o]
    return n


@njit(cache=True)
def grouped_uct_child(first_child: np.ndarray, nchild: np.ndarray, visits: np.ndarray,
                      value: np.ndarray, move: np.ndarray, tab: np.ndarray, node: Int,
                      c: float) -> Int:
    """:func:`uct_child` in two steps, for a node holding several placements of a patch:
    first the decision (pass, or which patch; :func:`move_group`) by UCT over its visits
    summed and the mean of its most visited placement, then that decision's placement by UCT
    among its own. Why: with one UCT score a child, a patch searched in eight placements
    gets eight exploration bonuses against the pass's one, and its visits grow because its
    placements are many, not because buying is better; and a patch's worth is that of its
    best placement, not the mean over the poor ones tried once."""
    fc = first_child[node]
    end = fc + nchild[node]
    for ch in range(fc, end):
        if visits[ch] == 0:
            return ch
    lnv = np.log(visits[node] + 1.0)
    best_grp = move_group(tab, move[fc])
    best_u = -1e300
    best_n = 1
    for ch in range(fc, end):
        if not first_of_decision(move, tab, fc, ch):
            continue
        grp = move_group(tab, move[ch])
        n = decision_visits(visits, move, tab, fc, end, grp)
        lead = most_visited_of(visits, value, move, tab, fc, end, grp)
        u = value[lead] / visits[lead] + c * np.sqrt(lnv / n)
        if u > best_u:
            best_u = u
            best_grp = grp
            best_n = n
    lng = np.log(best_n + 1.0)
    best = -1
    best_u = -1e300
    for ch in range(fc, end):
        if move_group(tab, move[ch]) != best_grp:
            continue
        u = value[ch] / visits[ch] + c * np.sqrt(lng / visits[ch])
        if u > best_u:
            best_u = u
            best = ch
    return best


@njit(cache=True)
def backup(path: np.ndarray, depth: Int, visits: np.ndarray, value: np.ndarray,
           mover: np.ndarray, reward0: float, reward1: float) -> None:
    """Count a visit on every node of ``path[:depth + 1]`` and add to each (but the root)
    the reward of the player who moved into it (``reward0`` for player 0, ``reward1`` for
    player 1)."""
    for d in range(depth + 1):
        nd = path[d]
        visits[nd] += 1
        if d > 0:
            value[nd] += reward0 if mover[nd] == 0 else reward1


@njit(cache=True)
def move_group(tab: np.ndarray, code: Int) -> Int:
    """The decision a root move belongs to: the patch a placement buys, else the move code
    itself (pass, a leather square). Placements of one patch are one decision."""
    if code >= 0:
        return core.placement_patch(tab, code)
    return code - 1_000_000  # below every patch id, one group per non-placement move


@njit(cache=True)
def most_visited_decision(first_child: np.ndarray, nchild: np.ndarray, visits: np.ndarray,
                          value: np.ndarray, move: np.ndarray, tab: np.ndarray,
                          node: Int) -> Int:
    """The child of ``node`` to play: first the decision (pass, or which patch) with the most
    visits summed over its placements, then that patch's most visited placement (ties: the
    better mean value). With several placements of a patch searched, the plain most visited
    child would favour a move searched once (pass) over a patch whose visits its placements
    share, although the search spent more on the patch."""
    fc = first_child[node]
    end = fc + nchild[node]
    best_group = move_group(tab, move[fc])
    best_total = -1
    lead = fc  # the child that set best_group (ties between decisions: its mean value)
    for ch in range(fc, end):
        grp = move_group(tab, move[ch])
        total = decision_visits(visits, move, tab, fc, end, grp)
        if total > best_total or (total == best_total and visits[ch] > 0
                                  and visits[lead] > 0
                                  and value[ch] / visits[ch] > value[lead] / visits[lead]):
            best_total = total
            best_group = grp
            lead = ch
    return most_visited_of(visits, value, move, tab, fc, end, best_group)


@njit(cache=True)
def most_visited_of(visits: np.ndarray, value: np.ndarray, move: np.ndarray, tab: np.ndarray,
                    fc: Int, end: Int, group: Int) -> Int:
    """The most visited child among ``fc .. end - 1`` of decision ``group`` (ties: the
    better mean value)."""
    best = -1
    for ch in range(fc, end):
        if move_group(tab, move[ch]) != group:
            continue
        if best < 0 or visits[ch] > visits[best] or (
                visits[ch] == visits[best] and visits[ch] > 0
                and value[ch] / visits[ch] > value[best] / visits[best]):
            best = ch
    return best


@njit(cache=True)
def sample_by_visits(first_child: np.ndarray, nchild: np.ndarray, visits: np.ndarray,
                     node: Int, temperature: float, rng: np.ndarray) -> Int:
    """A child of ``node`` drawn with probability proportional to its visit count to the
    power ``1 / temperature`` (AlphaZero's opening temperature: 1 follows the visit
    distribution, towards 0 the most visited child), from ``rng``; a child never visited is
    never drawn. The weights are taken relative to the most visited child, so a small
    temperature cannot overflow."""
    fc = first_child[node]
    vmax = 0
    for ch in range(fc, fc + nchild[node]):
        if visits[ch] > vmax:
            vmax = visits[ch]
    if vmax == 0:
        return fc  # not reached: a search visits one root child at least
    inv_t = 1.0 / temperature
    total = 0.0
    for ch in range(fc, fc + nchild[node]):
        if visits[ch] > 0:
            total += (visits[ch] / vmax) ** inv_t
    u = core.rng_unit(rng) * total
    last = fc
    for ch in range(fc, fc + nchild[node]):
        if visits[ch] > 0:
            last = ch
            u -= (visits[ch] / vmax) ** inv_t
            if u < 0.0:
                return ch
    return last  # rounding: u reached the total


@njit(cache=True)
def sample_decision_by_visits(first_child: np.ndarray, nchild: np.ndarray,
                              visits: np.ndarray, value: np.ndarray, move: np.ndarray,
                              tab: np.ndarray, node: Int, temperature: float,
                              rng: np.ndarray) -> Int:
    """:func:`sample_by_visits` for a node holding several placements of a patch: the
    decision (pass, or which patch) drawn by its visits summed over its placements, then
    its most visited placement. The opening varies in what is bought, as in a search of one
    placement a patch; where it goes stays the search's choice (a placement tried once is
    never drawn for its one visit)."""
    fc = first_child[node]
    end = fc + nchild[node]
    inv_t = 1.0 / temperature
    vmax = 0
    for ch in range(fc, end):  # the largest decision total: weights relative to it
        vmax = max(vmax, decision_visits(visits, move, tab, fc, end, move_group(tab, move[ch])))
    if vmax == 0:
        return fc  # not reached: a search visits one root child at least
    total = 0.0
    for sweep in range(2):  # the sum of the weights, then the draw
        u = core.rng_unit(rng) * total if sweep == 1 else 0.0
        for ch in range(fc, end):
            if not first_of_decision(move, tab, fc, ch):
                continue
            grp = move_group(tab, move[ch])
            tot = decision_visits(visits, move, tab, fc, end, grp)
            if tot == 0:
                continue
            w = (tot / vmax) ** inv_t
            if sweep == 0:
                total += w
            else:
                u -= w
                if u < 0.0:
                    return most_visited_of(visits, value, move, tab, fc, end, grp)
    return most_visited_decision(first_child, nchild, visits, value, move, tab, node)


@njit(cache=True)
def regrow(states: np.ndarray, first_child: np.ndarray, nchild: np.ndarray,
           visits: np.ndarray, value: np.ndarray, mover: np.ndarray, move: np.ndarray,
           stage: np.ndarray, tab: np.ndarray, node: Int, nodes: Int, acts: np.ndarray,
           na: Int, pm: Int) -> tuple[Int, Int]:
    """Widen an expanded ``node`` (``pm`` to move) to the moves ``acts[:na]``: its children
    move, with their statistics and subtrees, to a new consecutive block from node index
    ``nodes`` (children must stay consecutive; the old block is left unused), followed by
    one new child per move of ``acts`` it did not have yet. Returns (the new node count,
    the index of the first new child); the caller evaluates the new children. The caller
    checks that ``nodes + nchild[node] + na`` fits the tree."""
    fc = first_child[node]
    n_old = nchild[node]
    for i in range(n_old):
        src = fc + i
        dst = nodes + i
        core.copy_into(states[dst], states[src])
        first_child[dst] = first_child[src]
        nchild[dst] = nchild[src]
        visits[dst] = visits[src]
        value[dst] = value[src]
        mover[dst] = mover[src]
        move[dst] = move[src]
        stage[dst] = stage[src]
    first_new = nodes + n_old
    count = n_old
    st = states[node]
    for a in range(na):
        code = acts[a]
        known = False
        for i in range(n_old):
            if move[nodes + i] == code:
                known = True
                break
        if known:
            continue
        ch = nodes + count
        core.copy_into(states[ch], st)
        play_macro(states[ch], tab, code)
        first_child[ch] = -1
        nchild[ch] = 0
        visits[ch] = 0
        value[ch] = 0.0
        mover[ch] = pm
        move[ch] = code
        stage[ch] = 0
        count += 1
    first_child[node] = nodes
    nchild[node] = count
    return nodes + count, first_new
