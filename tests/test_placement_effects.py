"""The randomised-placement design that measures what a quilt's shape is worth
(patchsim.play.placement_effects), and the fit that holds those effects fixed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from positions import played_position

from patchsim.bots import features as F
from patchsim.engine import core
from patchsim.engine.ruleset import load_ruleset
from patchsim.play.placement_effects import (
    HELD_COLUMNS,
    SHAPE_COLUMNS,
    _least_squares,
    placement_effects,
    randomised_game,
)
from patchsim.play.train import fit_linear, fit_linear_fixed


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31), plies=st.integers(0, 50),
       rules=st.sampled_from(["edition2", "variants/quilt7", "variants/no_bonus"]))
def test_placements_of_one_patch_differ_in_the_shape_terms_only(seed: int, plies: int,
                                                                rules: str) -> None:
    """The design's premise: after two placements of the same patch every feature but the
    shape terms is the same, so a drawn placement's deviation lies in SHAPE_COLUMNS."""
    game = played_position(rules, seed, plies)
    if game is None:
        return
    tab, state = game.tab, game.state
    p = int(game.to_move)
    other = [c for c in range(F.N_ALL_FEATURES) if c not in SHAPE_COLUMNS]
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        if core.patch_cost(tab, patch) > state[core.S_BTN + p]:
            continue
        first = core.patch_first(tab, patch)
        fitting = [g for g in range(first, first + core.patch_count(tab, patch))
                   if core.fits(state, tab, p, g)][:6]
        rows = []
        for g in fitting:
            after = state.copy()
            core.apply_move(after, tab, g)
            out = np.empty(F.N_ALL_FEATURES)
            F.all_features(after, tab, out)
            rows.append(out)
        for row in rows[1:]:
            np.testing.assert_array_equal(row[other], rows[0][other])


def test_a_randomised_game_is_a_function_of_its_seed() -> None:
    rs = load_ruleset("variants/quilt7")
    a = randomised_game(rs, "greedy", 11)
    b = randomised_game(rs, "greedy", 11)
    c = randomised_game(rs, "greedy", 12)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1:] == b[1:]
    assert a[2] > 0  # placements were drawn
    assert not (np.array_equal(a[0], c[0]) and a[1] == c[1])
    outside = [i for i in range(F.N_ALL_FEATURES) if i not in SHAPE_COLUMNS]
    assert np.all(a[0][outside] == 0.0)


def test_one_choice_leaves_nothing_to_draw() -> None:
    """With k = 1 the drawn placement is the best by contact: no deviations, no draws."""
    total, _, draws = randomised_game(load_ruleset("variants/quilt7"), "greedy", 3, k=1)
    assert draws == 0 and not total.any()


def test_the_effects_are_the_same_whatever_the_number_of_workers() -> None:
    rs = load_ruleset("variants/quilt7")
    one = placement_effects(rs, "greedy", 14, seed=5, jobs=1)
    two = placement_effects(rs, "greedy", 14, seed=5, jobs=2)
    np.testing.assert_array_equal(one.beta, two.beta)
    assert one.columns == SHAPE_COLUMNS
    assert set(one.held()) == set(HELD_COLUMNS)
    with pytest.raises(ValueError, match="at least"):
        placement_effects(rs, "greedy", 3)


def test_least_squares_recovers_planted_effects_with_honest_errors() -> None:
    rng = np.random.default_rng(0)
    truth = np.array([0.3, -0.5, 0.0, 1.2])
    covered = 0
    for _ in range(200):
        d = rng.normal(size=(400, 4))
        d[:, 2] = 0.0  # a column that never varies: no information
        y = 1.5 + d @ truth + rng.normal(scale=3.0, size=400)
        beta, se, sd = _least_squares(d, y)
        assert beta[2] == 0.0 and se[2] == np.inf
        live = [0, 1, 3]
        covered += int(np.all(np.abs(beta[live] - truth[live]) < 1.96 * se[live]))
        assert 2.5 < sd < 3.5
    # three intervals at 95% each: about 86% of replications cover all three
    assert 0.78 < covered / 200 < 0.93


def test_a_fit_with_held_weights_keeps_them_and_fits_the_rest() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3000, 5))
    w_true = np.array([1.0, -2.0, 0.5, 3.0, 0.0])
    y = x @ w_true + rng.normal(scale=0.1, size=3000)
    # holding two columns at their true values, the others come out right
    w = fit_linear_fixed(x, y, {1: -2.0, 3: 3.0})
    assert w[1] == -2.0 and w[3] == 3.0
    np.testing.assert_allclose(w[[0, 2, 4]], w_true[[0, 2, 4]], atol=0.01)
    # holding a wrong value moves the held column only (the columns are independent here)
    w_wrong = fit_linear_fixed(x, y, {1: 0.0})
    assert w_wrong[1] == 0.0
    np.testing.assert_allclose(w_wrong[[0, 2, 3]], w_true[[0, 2, 3]], atol=0.1)
    # nothing held: the plain fit
    np.testing.assert_array_equal(fit_linear_fixed(x, y, {}), fit_linear(x, y))


def test_a_base_feature_model_holds_the_shape_effects_it_has(tmp_path) -> None:
    """`train` of a feature-version-1 model (eval=learned) with shape games: the effects are
    measured on every shape term, and the model holds those of its own 22 features (holes
    and the bonus window) at them; the packing terms beyond its features are left out."""
    from patchsim.bots.learned import load_model
    from patchsim.play.train import TrainSettings, train

    rs = load_ruleset("variants/quilt7")
    settings = TrainSettings(seed=3, games_per_generation=16, eval_deals=1, eval_every=99,
                             shape_games=24, shape_spec="greedy")
    train(rs, generations=1, jobs=1, seed=3, models=tmp_path, settings=settings, report=False)
    model = load_model(tmp_path / rs.content_hash() / "model.json")
    effects = model.manifest["shape_effects"]["columns"]
    held = [c for c in HELD_COLUMNS if c < F.N_FEATURES]
    assert held and all(str(c) in effects for c in held)
    for c in held:
        assert model.weights[c] == pytest.approx(effects[str(c)]["effect"])
    assert len(model.weights) == F.N_FEATURES


# --- the packing ranking's terms, drawn among the ranking's best (ranking_effects) ---------


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31), plies=st.integers(0, 40),
       weights=st.tuples(st.floats(0.1, 3), st.floats(0, 3), st.floats(0, 3)),
       rules=st.sampled_from(["edition2", "variants/quilt7", "variants/no_bonus"]))
def test_the_ranking_terms_weighed_are_the_searchs_placement_score(
        seed: int, plies: int, weights: tuple[float, float, float], rules: str) -> None:
    """What is measured is what the search ranks by: the weighted terms of every placement
    of every offered patch are heuristics.placement_score, and the drawn-among order is
    that score's, best first."""
    from patchsim.bots.heuristics import count_holes, placement_score
    from patchsim.play.placement_effects import _ranking

    game = played_position(rules, seed, plies)
    if game is None:
        return
    tab, state = game.tab, game.state
    p = int(game.to_move)
    rank, terms = _ranking(weights)
    qlo, qhi = state[core.S_QLO + p], state[core.S_QHI + p]
    bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
    holes0 = count_holes(tab, qlo, qhi)
    sign = 1 - 2 * p
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        order = rank(state, tab, p, patch)
        scores = [placement_score(tab, qlo, qhi, holes0, g, *weights, bonus_open)
                  for g in order]
        assert scores == sorted(scores, reverse=True)
        for g, sc in zip(order[:8], scores, strict=False):
            row = terms(state, tab, p, g) * sign
            assert np.dot((weights[0], -weights[1], weights[2]), row) == pytest.approx(sc)
            assert row[0] >= 0 and (bonus_open or row[2] == 0.0)


def test_a_ranking_game_draws_and_is_a_function_of_its_seed() -> None:
    from patchsim.play.placement_effects import RANKING_TERMS, ranking_game

    rs = load_ruleset("variants/quilt7")
    a = ranking_game(rs, "greedy", 11)
    b = ranking_game(rs, "greedy", 11)
    assert a[0].shape == (len(RANKING_TERMS),) and a[2] > 0
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1:] == b[1:]
    # k = 1 is the ranking's own choice: nothing drawn, nothing deviates
    total, _, draws = ranking_game(rs, "greedy", 11, k=1)
    assert draws == 0 and not total.any()


def test_ranking_effects_whatever_the_workers_and_the_implied_weights() -> None:
    from patchsim.play.placement_effects import RankingEffects, ranking_effects

    rs = load_ruleset("variants/quilt7")
    one = ranking_effects(rs, "greedy", 12, seed=4, jobs=1)
    two = ranking_effects(rs, "greedy", 12, seed=4, jobs=2)
    np.testing.assert_array_equal(one.beta, two.beta)
    assert one.games == 12 and one.treatments > 0
    with pytest.raises(ValueError, match="at least"):
        ranking_effects(rs, "greedy", 4)
    eff = RankingEffects((1.0, 1.0, 0.5), np.array([0.4, -0.6, 0.2]), np.ones(3), 10, 1.0, 1.0)
    assert eff.weights() == pytest.approx((1.0, 1.5, 0.5))
    flat = RankingEffects((1.0, 1.0, 0.5), np.array([-0.1, -0.6, 0.2]), np.ones(3), 10, 1, 1)
    with pytest.raises(ValueError, match="not positive"):
        flat.weights()
