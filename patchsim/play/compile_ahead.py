"""A first run's compile on two cores: the learned search's tree in a helper process while
this process compiles the rest of the game loop.

Why: numba compiles one function at a time, so the warm-up of the main job (about 25 s from
an empty cache) keeps one core busy while the workers wait for it. About 40% of that is
:func:`patchsim.bots.features.learned_tree` and what it calls (the evaluation, the
expansion), reached from the loop in one place only. :func:`start` hands the helper the
arrays that tree is called with; the helper (this module run as a program) calls it once
with those types, which compiles it into the shared cache (:mod:`patchsim._jitcache`).
Meanwhile :func:`compile_beside` compiles, in this process, the parts of the loop outside
the tree; :func:`finish` waits for the helper, and the loop compiled after it loads the
tree from the cache instead of compiling it.

Nothing here changes a game: the same functions are compiled for the same types, only in
another process. A helper that fails or is too slow costs nothing but the time: the loop
then compiles the tree itself, as it always did.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from patchsim.bots import features, heuristics, kept_tree, scripted, tree
from patchsim.engine import core
from patchsim.play import loops

HELPER_SECONDS = 600.0  # the longest wait for a helper before the loop compiles the tree itself


def _flag_codes(needed: loops.Needed) -> np.ndarray:
    # the loops' optional-code arguments, None or True, as numbers for the helper's file
    _, net, wars, widen, reuse = needed
    return np.array([-1 if f is None else 1 for f in (net, wars, widen, reuse)],
                    dtype=np.int64)


def _flags(codes: np.ndarray) -> tuple[bool | None, ...]:
    return tuple(None if c < 0 else True for c in codes.tolist())


def plain_circle(patches: int, start: int) -> np.ndarray:
    """A circle of ``patches`` table positions, unshuffled, the starting patch ``start``
    last (as a deal lays it out): a legal position for the helper to search from, without
    compiling the shuffle first."""
    return np.array([i for i in range(patches) if i != start] + [start], dtype=np.int64)


def start(tab: np.ndarray, row: np.ndarray, circle: np.ndarray, needed: loops.Needed,
          folder: Path) -> subprocess.Popen[bytes] | None:
    """Start the helper that compiles the learned search's tree for a bot of parameter row
    ``row`` (as the loop passes it: one row of the padded parameter array), searching the
    new game of ``circle`` with the loop's optional code ``needed``; None if it cannot
    start."""
    path = folder / "tree-args.npz"
    # numba types a read-only array apart from a writable one (the ruleset's table is
    # read-only): the helper makes its copies alike
    np.savez(path, tab=tab, row=np.ascontiguousarray(row, dtype=np.float64), circle=circle,
             flags=_flag_codes(needed),
             readonly=np.array([not a.flags.writeable for a in (tab, row)]))
    try:
        return subprocess.Popen([sys.executable, "-m", __name__, str(path)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except OSError:
        return None


def finish(helper: subprocess.Popen[bytes] | None, timeout: float = HELPER_SECONDS) -> bool:
    """Wait for the helper (at most ``timeout`` seconds, then stop it); whether it compiled
    the tree."""
    if helper is None:
        return False
    try:
        return helper.wait(timeout=timeout) == 0
    except subprocess.TimeoutExpired:
        return False
    finally:
        if helper.poll() is None:
            helper.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                helper.wait(timeout=10)


def compile_beside(tab: np.ndarray, row: np.ndarray, state: np.ndarray,
                   needed: loops.Needed) -> None:
    """Compile (or load) in this process, each for the types the loop calls it with: the
    learned evaluation (:func:`patchsim.bots.features.value0`) first, so that the helper
    finds it in the cache when its tree reaches it, then what the loop calls outside the
    tree: the scripted bots (:func:`patchsim.bots.scripted.rollout_move`), the search
    root's choice of move and the loop's own steps, and the search's move list
    (:func:`patchsim.bots.features.tree_actions`)."""
    _, net, _, widen, _ = needed
    work = state.copy()
    features.value0(row, work, tab,
                    np.empty(features.leaf_scratch(row, net), dtype=np.float64))
    rng = np.zeros(2, dtype=np.uint64)
    buf = np.empty(core.max_moves(tab), dtype=np.int64)
    scripted.rollout_move(scripted.RANDOM, row, work, tab, rng[0:1], buf)
    # what the loop calls around the tree (the search's root, which is inlined into the
    # loop, and the loop's own steps): compiled here while the helper works on the tree,
    # not after it, one at a time. Empty trees (no children) make them return at once.
    nodes = np.zeros(2, dtype=np.int64)
    tree.most_visited_decision(nodes, nodes, nodes, np.zeros(2), nodes, tab, 0)
    tree.sample_by_visits(nodes, nodes, nodes, 0, 1.0, rng[0:1])
    heuristics.leather_square(work, tab, 0)
    loops.bot_memo(0)
    loops.bot_keep(0, row, tab)
    kept_tree.forget(kept_tree.new_keep(0, state.shape[0]))
    core.copy_into(np.empty(row.shape[0]), np.zeros(row.shape[0]))
    core.legality(work, tab, core.PASS)
    loops.finish_result(work, tab, np.zeros((1, loops.R_WIDTH), dtype=np.int64)[0])
    # the arrays learned_search hands tree_actions at the root
    width = features.widen_width(row)
    acts = np.empty(1 + tab[core.T_OFFER] * width, dtype=np.int64)
    features.tree_actions(row, work, tab, acts, np.int64(1),
                          np.empty(features.N_ALL_FEATURES, dtype=np.float64),
                          np.empty(width, dtype=np.int64), np.empty(width, dtype=np.float64),
                          np.empty((0, heuristics.MEMO_COLS), dtype=np.int64), widen)


def compile_tree(path: str) -> None:
    """The helper's work, with the arrays and optional code of ``path`` (written by
    :func:`start`): the tree's expansion first (while this process's parent compiles the
    evaluation, which the tree then loads), then one search of one iteration by the tree,
    then the count of legal moves a run's report asks for."""
    with np.load(path) as f:
        tab, row, circle, flags = f["tab"], f["row"].copy(), f["circle"], f["flags"]
        readonly = f["readonly"].tolist()
    row[features.L_ITERATIONS] = 1  # the types are what compiles; one iteration is enough
    for a, ro in zip((tab, row), readonly, strict=True):
        a.flags.writeable = not ro
    state = core.new_state(tab, circle)  # writable, as the loop's
    states, first_child, nchild, _, _, mover, move, _ = tree.new_tree(2, state)
    tree.expand(states, first_child, nchild, mover, move, tab, 0, 1,
                np.array([core.PASS], dtype=np.int64), 1, core.to_move(state, tab))
    features.learned_tree(row, state, tab, np.zeros(1, dtype=np.int64),
                          heuristics.new_memo(0), kept_tree.new_keep(0, state.shape[0]),
                          *_flags(flags))
    core.count_legal(state, tab)  # the report's move counts (patchsim.engine.game)


def temporary_folder() -> tempfile.TemporaryDirectory[str]:
    """A folder for the helper's arguments, removed when the warm-up is over."""
    return tempfile.TemporaryDirectory(prefix="patchsim-ahead-")


if __name__ == "__main__":
    compile_tree(sys.argv[1])
