"""Tests for the learned search's own-score term (``own_score``, issue 29 item 4): the passive
score it adds (what a seat ends on if it only passes: docs/rules.md R4.2, R7, R11), the
rewards it backs up, and that at 0 the search plays exactly as before."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchsim.bots import features as F
from patchsim.bots.heuristics import income_marks_left
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset


@pytest.fixture(scope="module")
def e2():
    return load_ruleset("edition2")


def passive(state: np.ndarray, tab: np.ndarray, p: int) -> float:
    return F.passive_score(state, tab, np.int64(p))


def random_game_steps(ruleset, seed: int):
    """(state before, move, state after) of every move of a uniformly random game."""
    tab = compile_ruleset(ruleset).tab
    game = Game.new(ruleset, circle=deal_circle(ruleset, seed))
    rng = np.random.default_rng(seed)
    buf = np.empty(core.max_moves(tab), dtype=np.int64)
    while not game.finished:
        n = core.legal_moves(game.state, tab, buf)
        code = int(buf[rng.integers(n)])
        before = game.state.copy()
        game.apply(code)
        yield before, code, game.state.copy()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_a_pass_leaves_both_passive_scores_where_they_were(e2, seed):
    """R4.2: a pass pays a button a space moved, R4.5/R7: and the income of the marks it
    crosses, which the passive score had counted already; nothing else moves."""
    tab = compile_ruleset(e2).tab
    passes = 0
    for before, code, after in random_game_steps(e2, seed):
        if code != core.PASS:
            continue
        passes += 1
        for p in (0, 1):
            assert passive(after, tab, p) == passive(before, tab, p)
    assert passes > 0


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_a_buy_moves_the_passive_score_by_what_the_patch_is_worth(e2, seed):
    """Twice the squares covered (R11), the patch's income at every mark still ahead of the
    buyer (R7.2: this turn's patch counts), the 7x7 bonus if it is claimed now (R9), less
    the price (R5) and the spaces moved (a pass would have paid them, R4.2)."""
    tab = compile_ruleset(e2).tab
    buys = 0
    for before, code, after in random_game_steps(e2, seed):
        if code < 0 or before[core.S_PENDING] > 0:
            continue
        buys += 1
        p = core.to_move(before, tab)
        patch = core.placement_patch(tab, code)
        pos = before[core.S_POS + p]
        moved = after[core.S_POS + p] - pos
        bonus = (tab[core.T_BONUS_POINTS]
                 if after[core.S_BONUS] == p and before[core.S_BONUS] != p else 0)
        worth = (tab[core.T_PENALTY] * core.patch_size(tab, patch) - core.patch_cost(tab, patch)
                 - moved + core.patch_income(tab, patch) * income_marks_left(tab, pos) + bonus)
        assert passive(after, tab, p) - passive(before, tab, p) == worth
        assert passive(after, tab, 1 - p) == passive(before, tab, 1 - p)
    assert buys > 0


def test_the_passive_score_of_a_finished_game_is_its_score(e2):
    tab = compile_ruleset(e2).tab
    for seed in (1, 2, 3):
        *_, (_, _, end) = random_game_steps(e2, seed)
        assert core.is_finished(end, tab)
        for p in (0, 1):
            assert passive(end, tab, p) == core.score(end, tab, p)


def test_own_score_zero_is_the_search_before():
    """The default is 0, and 0 leaves the parameter row as it was (the pinned games of
    test_learned_extras and test_search_diversity play the default)."""
    assert make_bot("mcts(eval=learned, own_score=0)").params.tolist() == (
        make_bot("mcts(eval=learned)").params.tolist())
    assert make_bot("mcts(eval=learned)").params[F.L_OWN_SCORE] == 0.0


def test_each_root_child_is_valued_by_its_movers_win_expectation_and_own_points(e2):
    """One iteration expands the root and judges every child once: its value is the
    mover's win expectation plus own_score times the mover's passive score there."""
    tab = compile_ruleset(e2).tab
    own = 0.01
    bound = bind_bot(make_bot(f"mcts(eval=learned, iterations=1, own_score={own})"), e2)
    plain = bind_bot(make_bot("mcts(eval=learned, iterations=1)"), e2)
    game = Game.new(e2, circle=deal_circle(e2, 5))
    greedy = make_bot("greedy")
    checked = 0
    scratch = np.empty(F.N_ALL_FEATURES, dtype=np.float64)
    while not game.finished and checked < 6:
        if game.state[core.S_PENDING] == 0:
            p = core.to_move(game.state, tab)
            moves, visits, values = F.learned_root(bound.params, game.state, tab)
            base_moves, _, base_values = F.learned_root(plain.params, game.state, tab)
            assert moves.tolist() == base_moves.tolist()  # the same children
            assert (visits == 1).all()
            for code, value, base in zip(moves, values, base_values, strict=True):
                child = game.state.copy()
                F.play_macro(child, tab, int(code))
                win = F.value0(bound.params, child, tab, scratch)
                win = win if p == 0 else 1.0 - win
                assert base == pytest.approx(win, abs=1e-12)
                assert value == pytest.approx(win + own * passive(child, tab, p), abs=1e-9)
            checked += 1
        game.apply(greedy.choose_code(game, np.zeros(1, dtype=np.uint64)))
    assert checked == 6


def test_a_large_own_score_makes_the_one_ply_player_maximise_its_points(e2):
    """own_score=1: a point outweighs any change of win expectation (at most 1), so the
    one-ply player takes the searched move with the highest passive score (ties aside)."""
    tab = compile_ruleset(e2).tab
    bound = bind_bot(make_bot("mcts(eval=learned, iterations=1, own_score=1)"), e2)
    game = Game.new(e2, circle=deal_circle(e2, 8))
    acts = np.empty(1 + tab[core.T_OFFER] * 64, dtype=np.int64)
    decisions = 0
    while not game.finished and decisions < 12:
        if game.state[core.S_PENDING] == 0:
            p = core.to_move(game.state, tab)
            n = F.search_actions(bound.params, game.state, tab, acts)
            points = []
            for code in acts[:n]:
                child = game.state.copy()
                F.play_macro(child, tab, int(code))
                points.append(passive(child, tab, p))
            code = bound.choose_code(game, np.zeros(1, dtype=np.uint64))
            child = game.state.copy()
            F.play_macro(child, tab, int(code))
            assert passive(child, tab, p) >= max(points) - 1.0
            decisions += 1
        game.apply(bound.choose_code(game, np.zeros(1, dtype=np.uint64)))
    assert decisions == 12


def test_own_score_spec_bounds_and_where_it_applies():
    assert "own_score=0.002" in make_bot("mcts(eval=learned, own_score=0.002)").spec
    assert make_bot("mcts(eval=net, own_score=0.002)").params[F.L_OWN_SCORE] == 0.002
    with pytest.raises(BotSpecError, match="own_score"):
        make_bot("mcts(eval=learned, own_score=-0.1)")
    with pytest.raises(BotSpecError, match="own_score"):
        make_bot("mcts(eval=learned, own_score=2)")
    with pytest.raises(BotSpecError, match="own_score.*only with eval"):
        make_bot("mcts(own_score=0.01)")
