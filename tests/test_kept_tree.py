"""The learned search's tree kept from one move to the next (``reuse=1``,
:mod:`patchsim.bots.kept_tree`): what is kept is exactly the subtree under the move played,
a search finds the position it is asked about in it, nothing leaks from one game into the
next, and the compiled loops and the Python API play the same games with it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from positions import played_position

from patchsim.bots import features as F
from patchsim.bots import kept_tree as K
from patchsim.bots.heuristics import new_memo
from patchsim.bots.learned import bind_bot, param_rows
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.bots.tree import play_macro
from patchsim.engine import core
from patchsim.engine.deal import deal_arrays
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops
from patchsim.play.match import max_events, max_plies

E2 = load_ruleset("edition2")
TABLES = compile_ruleset(E2)
TAB = TABLES.tab


def bound(spec: str):
    return bind_bot(make_bot(spec), TABLES)


def grown(spec: str, game: Game, keep: np.ndarray | None = None):
    """The tree the learned search grows at ``game`` (9 arrays, node 0 the root)."""
    bot = bound(spec)
    if keep is None:
        keep = K.new_keep(0, game.state.shape[0])
    return bot.params, F.learned_tree(bot.params, game.state.copy(), TAB,
                                      np.zeros(1, dtype=np.int64), new_memo(64), keep)


def subtree(tree, root: int) -> list[tuple]:
    """The subtree under ``root`` breadth first, one tuple a node (its state, visits, value,
    mover, move, and the moves of its children): a form two trees compare in whatever
    rows they hold their nodes."""
    first_child, nchild, visits, value, move, states, mover, _, _ = tree
    out, queue = [], [root]
    while queue:
        nd = queue.pop(0)
        kids = list(range(first_child[nd], first_child[nd] + nchild[nd])) \
            if first_child[nd] >= 0 else []
        out.append((tuple(states[nd]), int(visits[nd]), float(value[nd]), int(mover[nd]),
                    int(move[nd]), tuple(int(move[k]) for k in kids)))
        queue.extend(kids)
    return out


def kept_as_tree(keep: np.ndarray, at: int, spare: int = 0):
    n = K.kept_nodes(keep) - at + spare
    states = np.zeros((n, keep.shape[1] - K.K_EXTRA), dtype=np.int64)
    first_child = np.full(n, -1, dtype=np.int64)
    nchild, visits, mover, move = (np.zeros(n, dtype=np.int64) for _ in range(4))
    value = np.zeros(n)
    stage = np.zeros(n, dtype=np.int64)
    charge = np.zeros(n)
    count = K.restore_subtree(keep, at, states, first_child, nchild, visits, value, mover,
                              move, stage, charge)
    return count, (first_child, nchild, visits, value, move, states, mover, stage, charge)


def test_the_kept_subtree_is_the_played_moves_subtree_exactly() -> None:
    game = played_position("edition2", 3, 6)
    assert game is not None
    _, tree = grown("mcts(eval=learned, iterations=300)", game)
    first_child, nchild = tree[0], tree[1]
    played = first_child[0] + int(np.argmax(tree[2][first_child[0]:first_child[0] + nchild[0]]))
    keep = K.new_keep(2000, game.state.shape[0])
    K.keep_subtree(keep, played, int(game.state[core.S_PLY]), *tree[5:6], *tree[:2],
                   tree[2], tree[3], tree[6], tree[4], tree[7], tree[8])
    want = subtree(tree, played)
    assert K.kept_nodes(keep) == len(want) > 1
    count, back = kept_as_tree(keep, 0)
    assert count == len(want)
    assert subtree(back, 0) == want


def test_a_keep_too_small_keeps_the_top_of_the_subtree_and_its_leaves_grow_again() -> None:
    game = played_position("edition2", 5, 10)
    assert game is not None
    _, tree = grown("mcts(eval=learned, iterations=400)", game)
    keep = K.new_keep(9, game.state.shape[0])
    K.keep_subtree(keep, 0, int(game.state[core.S_PLY]), tree[5], tree[0], tree[1], tree[2],
                   tree[3], tree[6], tree[4], tree[7], tree[8])
    n = K.kept_nodes(keep)
    assert 1 < n <= 9
    s = game.state.shape[0]
    for r in range(n):
        fc, k = keep[r, s + K.K_FIRST], keep[r, s + K.K_NCHILD]
        assert (fc == -1 and k == 0) or (fc > 0 and fc + k <= n)
    # the root's children are all kept (4 or fewer, they fit) with their visits
    full = subtree(tree, 0)
    count, back = kept_as_tree(keep, 0)
    assert count == n and subtree(back, 0)[0] == full[0]


def test_a_search_finds_the_position_it_is_asked_about_and_nothing_of_a_new_game() -> None:
    game = played_position("edition2", 7, 4)
    assert game is not None
    spec = "mcts(eval=learned, iterations=200, reuse=1)"
    bot = bound(spec)
    keep = F.learned_keep(bot.params, TAB)
    stream = np.zeros(1, dtype=np.uint64)
    buf = np.empty(core.max_moves(TAB), dtype=np.int64)
    code = F.learned_move_kept(bot.params, game.state.copy(), TAB, stream, buf, keep)
    assert K.kept_nodes(keep) > 1
    after = game.copy()
    after.apply(code)
    while after.pending_leather:  # the tree places leather as the bot does
        after.apply(core.LEATHER_BASE - int(F.leather_square(after.state, TAB,
                                                             after.to_move)))
    assert K.find_kept(keep, after.state) == 0  # the kept root is the position after it
    # the same position seen as a new game's (a ply not after the keep's): not reused
    assert K.find_kept(keep, game.state) == -1
    start = Game.new(E2, circle=game.circle)
    assert K.find_kept(keep, start.state) == -1
    K.forget(keep)
    assert K.kept_nodes(keep) == 0 and K.find_kept(keep, after.state) == -1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), plies=st.integers(0, 40),
       widen=st.sampled_from([0, 2]))
def test_every_kept_child_is_its_parents_position_after_its_move(seed, plies, widen) -> None:
    game = played_position("edition2", seed, plies)
    if game is None:
        return
    _, tree = grown(f"mcts(eval=learned, iterations=120, widen={widen})", game)
    keep = K.new_keep(400, game.state.shape[0])
    K.keep_subtree(keep, 0, int(game.state[core.S_PLY]), tree[5], tree[0], tree[1], tree[2],
                   tree[3], tree[6], tree[4], tree[7], tree[8])
    s = game.state.shape[0]
    work = np.empty(s, dtype=np.int64)
    for r in range(K.kept_nodes(keep)):
        fc, k = keep[r, s + K.K_FIRST], keep[r, s + K.K_NCHILD]
        for ch in range(fc, fc + k) if fc >= 0 else ():
            work[:] = keep[r, :s]
            play_macro(work, TAB, keep[ch, s + K.K_MOVE])
            assert np.array_equal(work, keep[ch, :s])
            assert keep[ch, s + K.K_MOVER] == core.to_move(keep[r, :s], TAB)
        # the visits kept are the tree's: an expansion gives each new child one visit and
        # its parent one, every later descent one to the parent and one to a child (the
        # root had none before its expansion; a widening adds children later)
        if fc >= 0 and widen == 0:
            assert keep[fc:fc + k, s + K.K_VISITS].sum() == (
                k + keep[r, s + K.K_VISITS] - (1 if r == 0 else 2))


def _loop_games(rows: list[np.ndarray], kinds: list[int], deals: np.ndarray) -> list[list[int]]:
    circles, streams = deal_arrays(E2, deals)
    res, moves, *_, bad = loops.play_deals(TAB, circles, streams, np.array(kinds), param_rows(rows),
                                           max_plies(E2), max_events(E2),
                                           np.zeros(1, dtype=np.int64))
    assert bad == -1
    ends = np.cumsum(res[:, loops.R_PLIES])
    return [moves[e - n:e].tolist() for e, n in zip(ends, res[:, loops.R_PLIES], strict=True)]


@pytest.mark.parametrize("spec", [
    "mcts(eval=learned, iterations=40, reuse=1)",
    "mcts(eval=learned, iterations=40, reuse=1, widen=4, widen_by=1, place_cost=5, "
    "sample_plies=6, temperature=1)",
])
def test_loops_and_python_api_play_the_same_games_and_a_batch_changes_none(spec) -> None:
    ours = bound(spec)
    other = bound("mcts(eval=learned, iterations=40, reuse=1, holes=0, window=0)")
    rows, kinds = [ours.params, other.params], [ours.kind, other.kind]
    batch = _loop_games(rows, kinds, np.arange(3, dtype=np.int64))
    # a deal played alone plays as in the batch: the keeps start empty every game
    assert _loop_games(rows, kinds, np.array([2], dtype=np.int64)) == batch[4:6]
    circles, streams = deal_arrays(E2, np.arange(3, dtype=np.int64))
    for i in range(3):
        for order in range(2):
            seats = (ours, other) if order == 0 else (other, ours)
            seat_streams = streams[i] if order == 0 else streams[i][::-1]
            game = Game.new(E2, circle=[TABLES.patch_ids[k] for k in circles[i]])
            rngs = [seat_streams[0:1].copy(), seat_streams[1:2].copy()]
            while not game.finished:
                p = game.to_move
                game.apply(seats[p].choose_code(game, rngs[p]))
            assert list(game.history) == batch[2 * i + order]
    # and the kept tree changes the games (without it the same bots play others)
    plain = [r.copy() for r in rows]
    for r in plain:
        r[F.L_REUSE] = 0
    assert _loop_games(plain, kinds, np.arange(3, dtype=np.int64)) != batch


def test_reuse_is_a_learned_search_knob_of_zero_or_one() -> None:
    assert "reuse=1" in make_bot("mcts(eval=learned, reuse=1)").spec
    with pytest.raises(BotSpecError, match="reuse"):
        make_bot("mcts(eval=learned, reuse=2)")
    with pytest.raises(BotSpecError, match="reuse"):
        make_bot("mcts(iterations=10, reuse=1)")  # the rollout search keeps no tree
