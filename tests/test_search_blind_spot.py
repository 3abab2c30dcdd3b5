"""The learned search's blind spot (issue 20): passing wars. The degenerate-game predicate
the analysis can count, the rollout mixing that fixes the search, and an end-game position
where passing loses and the fixed search buys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis.degenerate import (
    COLLAPSE_SCORE,
    PASSING_WAR_PASSES,
    collapsed_seat,
    degenerate_games,
    passing_war,
    war_summary,
)
from patchsim.bots import features as F
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset


@pytest.fixture(autouse=True)
def shipped_only(monkeypatch, tmp_path):
    monkeypatch.setenv("PATCHSIM_MODEL_DIR", str(tmp_path / "empty"))


@pytest.fixture(scope="module")
def e2():
    return load_ruleset("edition2")


# --- the predicate ----------------------------------------------------------------------------
def test_degenerate_games_flags_passing_wars_and_collapsed_seats():
    games = pd.DataFrame({
        "passes0": [10, 13, 12, 3, 0], "passes1": [10, 12, 12, 4, 30],
        "score0": [5, 5, COLLAPSE_SCORE, COLLAPSE_SCORE - 1, 40],
        "score1": [3, -4, 2, 10, 12]}, index=[7, 8, 9, 10, 11])
    assert passing_war(games).tolist() == [False, True, False, False, True]
    assert collapsed_seat(games).tolist() == [False, False, False, True, False]
    flags = degenerate_games(games)
    assert flags.tolist() == [False, True, False, True, True]
    assert flags.index.tolist() == [7, 8, 9, 10, 11] and flags.name == "degenerate"
    assert PASSING_WAR_PASSES == 25 and COLLAPSE_SCORE == -20  # the definition
    with pytest.raises(KeyError, match="passes1"):
        degenerate_games(games.drop(columns="passes1"))


def test_war_summary_sets_what_a_war_costs_beside_the_other_games():
    # pairing a: one war (both seats low, lead 4) and two others; pairing b: no war
    games = pd.DataFrame({
        "ruleset": ["r"] * 5, "pairing": ["a", "a", "a", "b", "b"],
        "passes0": [14, 3, 2, 1, 1], "passes1": [13, 3, 2, 1, 1],
        "score0": [-30, 20, 10, 5, 6], "score1": [-34, 12, 14, 1, 2],
        "winner": [0, 0, 1, 0, 1]})
    t = war_summary(games).set_index("pairing")
    a, b = t.loc["a"], t.loc["b"]
    assert a["games"] == 3 and a["war_games"] == 1 and a["other_games"] == 2
    assert a["degenerate_share"] == pytest.approx(1 / 3)
    assert a["war_total"] == -64 and a["war_lead"] == 4 and a["war_first_wins"] == 1.0
    assert a["other_total"] == 28 and a["other_lead"] == 6 and a["other_first_wins"] == 0.5
    assert b["war_games"] == 0 and np.isnan(b["war_lead"]) and b["other_lead"] == 4


# --- war rollouts -----------------------------------------------------------------------------
def test_war_rollouts_spec_and_errors():
    bot = make_bot("mcts(eval=learned, war_rollouts=4)")
    assert bot.params[F.L_WAR_ROLLOUTS] == 4
    assert make_bot(bot.spec).params.tolist() == bot.params.tolist()
    assert make_bot("mcts(eval=learned)").params[F.L_WAR_ROLLOUTS] == 0  # off by default
    with pytest.raises(BotSpecError, match="war_rollouts=1.5 must be a whole number"):
        make_bot("mcts(eval=learned, war_rollouts=1.5)")
    with pytest.raises(BotSpecError,
                       match="war_rollouts= applies only with eval=learned or eval=net"):
        make_bot("mcts(war_rollouts=4)")


def test_war_rollouts_play_legal_deterministic_games(e2):
    tab = compile_ruleset(e2).tab
    bot = bind_bot(make_bot("mcts(eval=learned, iterations=30, war_rollouts=2)"), e2)

    def play(seed: int) -> list[int]:
        game = Game.new(e2, circle=deal_circle(e2, seed))
        rng = np.array([seed + 1], dtype=np.uint64)
        while not game.finished:
            code = bot.choose_code(game, rng)
            assert core.legality(game.state, tab, code) == 0
            game.apply(code)
        return game.history

    first = play(3)
    assert play(3) == first
    # the war rollouts draw nothing: another stream, the same game
    game = Game.new(e2, circle=deal_circle(e2, 3))
    rng = np.array([999], dtype=np.uint64)
    while not game.finished:
        game.apply(bot.choose_code(game, rng))
    assert game.history == first


# A passing war from learned self-play (100 iterations, epsilon 0.05; game 248 of
# `benchmarks/degenerate_games.py --games 400 --seed 1`): after four passes in a row, the
# offer frozen, the second seat is to move at 23 against 22 with 16 buttons to 12.
WAR_DEAL = 1020621765590774884
WAR_PREFIX = [-1, 2556, 144, 3343, 5230, -1, -1, -1, -1, 987, 475, -1, -1, -1, -1]


def margin_after(e2, first: int, bot) -> int:
    """The mover's final margin when it plays ``first`` here and then ``bot`` plays both
    seats to the end."""
    tab = compile_ruleset(e2).tab
    game = Game.new(e2, circle=deal_circle(e2, WAR_DEAL))
    for code in WAR_PREFIX:
        game.apply(code)
    p = game.to_move
    game.apply(first)
    rng = np.ones(1, dtype=np.uint64)
    while not game.finished:
        game.apply(bot.choose_code(game, rng))
    return int(core.score(game.state, tab, p) - core.score(game.state, tab, 1 - p))


def test_in_a_passing_war_the_fixed_search_buys_where_passing_loses(e2):
    # the war was found with the placement ranking of then (contact alone), which both keep
    old = bind_bot(make_bot("mcts(eval=learned, iterations=100, holes=0, window=0)"), e2)
    fixed = bind_bot(make_bot("mcts(eval=learned, iterations=100, war_rollouts=4, holes=0, "
                              "window=0)"), e2)
    game = Game.new(e2, circle=deal_circle(e2, WAR_DEAL))
    for code in WAR_PREFIX:
        game.apply(code)
    assert game.to_move == 1 and game.state[core.S_PENDING] == 0
    rng = np.ones(1, dtype=np.uint64)
    assert old.choose_code(game, rng) == core.PASS  # the war goes on
    buy = fixed.choose_code(game, rng)
    assert buy != core.PASS
    # played out by the fixed search in both seats: the pass loses, the buy wins
    assert margin_after(e2, core.PASS, fixed) < 0 < margin_after(e2, buy, fixed)
