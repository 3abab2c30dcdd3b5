"""The searches' placement memo (patchsim.bots.heuristics.top_placements_memo): it must
give exactly the moves top_placements computes, whatever the memo held before, collisions
included, so that it makes the search faster without changing one game."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from patchsim.bots.heuristics import (
    MEMO_COLS,
    new_memo,
    top_placements,
    top_placements_memo,
)
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import make_bot
from patchsim.engine import core
from patchsim.engine.deal import deal_arrays, deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops
from patchsim.play.match import max_events, max_plies


def positions(rules: str, seed: int, plies: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The decision positions of a greedy game with some random moves (no leather pending)."""
    rs = load_ruleset(rules)
    game = Game.new(rs, circle=deal_circle(rs, seed))
    bot = make_bot("greedy(epsilon=0.3)")
    stream = np.array([seed + 1], dtype=np.uint64)
    out = []
    for _ in range(plies):
        if game.finished:
            break
        if not game.pending_leather:
            out.append((game.state.copy(), game.tab))
        game.apply(int(bot.choose_code(game, stream)))
    return out


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), plies=st.integers(1, 60),
       rules=st.sampled_from(["edition2", "variants/quilt7", "variants/quilt11"]),
       top_k=st.integers(1, 6), slots=st.sampled_from([1, 2, 1024]),
       weights=st.sampled_from([(1.0, 0.0, 0.0), (1.0, 0.5, 0.3), (0.2, 2.0, 1.0)]))
def test_the_memo_changes_no_move(seed: int, plies: int, rules: str, top_k: int, slots: int,
                                  weights: tuple[float, float, float]) -> None:
    """One memo shared by every position of a game (as a search shares it over its nodes):
    each position's moves equal the unmemoised ones, with a memo of one or two slots too
    (every entry overwritten again and again) and for top_k above what an entry holds."""
    memo = new_memo(slots)
    for state, tab in positions(rules, seed, plies):
        a = np.empty(1 + tab[core.T_OFFER] * top_k, dtype=np.int64)
        b = np.empty_like(a)
        for _ in range(2):  # the second call reads what the first stored
            n = top_placements(state, tab, a, top_k, *weights, -1)
            m = top_placements_memo(state, tab, b, top_k, *weights, -1, memo)
            assert a[:n].tolist() == b[:m].tolist()


def test_an_empty_memo_is_no_memo() -> None:
    state, tab = positions("edition2", 3, 5)[-1]
    a = np.empty(64, dtype=np.int64)
    b = np.empty(64, dtype=np.int64)
    n = top_placements(state, tab, a, 1, 1.0, 0.0, 0.0, -1)
    m = top_placements_memo(state, tab, b, 1, 1.0, 0.0, 0.0, -1,
                            np.empty((0, MEMO_COLS), dtype=np.int64))
    assert a[:n].tolist() == b[:m].tolist()


def test_the_memo_remembers() -> None:
    """A stored entry is read back: a poisoned entry (the right key, other placements) is
    what the memoised call returns, so the memo is really consulted."""
    state, tab = positions("edition2", 5, 9)[-1]
    memo = new_memo(1024)
    out = np.empty(64, dtype=np.int64)
    n = top_placements_memo(state, tab, out, 1, 1.0, 0.0, 0.0, -1, memo)
    used = np.flatnonzero(memo[:, 2] >= 0)
    assert len(used) == n - 1  # one entry per affordable patch
    memo[used, 4] = 99999  # poison
    n2 = top_placements_memo(state, tab, out, 1, 1.0, 0.0, 0.0, -1, memo)
    assert n2 == n and set(out[1:n2].tolist()) == {99999}



def test_a_bots_memo_kept_over_a_batch_plays_the_games_of_a_memo_per_search() -> None:
    """The compiled batch keeps one memo per pairing bot over all its games, seats swapped
    between them (patchsim.play.loops.bot_memo); move by move, the Python API gives every
    search a fresh memo. The games must be the same, with two learned bots whose packing
    weights and top_k differ (a memo shared between them, or following the seat instead of
    the bot, would hand one bot the other's placements)."""
    rs = load_ruleset("edition2")
    tab = compile_ruleset(rs).tab
    bots = [bind_bot(make_bot(spec), rs) for spec in (
        "mcts(eval=learned, iterations=12)",
        "mcts(eval=learned, iterations=12, holes=1, window=0.5, top_k=2)")]
    seeds = [4, 11, 23]
    circles, streams = deal_arrays(rs, seeds)
    res, moves, _, _, err = loops.play_deals(
        tab, circles, streams, np.array([b.kind for b in bots]),
        np.stack([b.params for b in bots]), max_plies(rs), max_events(rs),
        np.zeros(1, dtype=np.int64))
    assert err == -1
    at = 0
    for i, seed in enumerate(seeds):
        for order in range(2):  # the pairing's first bot in seat 0, then in seat 1
            seats = (bots[order], bots[1 - order])
            rng = [streams[i, order:order + 1].copy(), streams[i, 1 - order:2 - order].copy()]
            game = Game.new(rs, circle=deal_circle(rs, seed))
            while not game.finished:
                p = game.to_move
                game.apply(int(seats[p].choose_code(game, rng[p])))
            n = int(res[2 * i + order, loops.R_PLIES])
            assert game.history == moves[at:at + n].tolist(), (seed, order)
            at += n
