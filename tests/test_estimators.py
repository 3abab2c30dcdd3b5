"""The estimator layer (patchsim.analysis.estimators): each estimator against statsmodels /
scipy or a hand-worked value, the verdicts, sample sizes, interval coverage by simulation, and
the sequential gate's error rates and expected sample sizes by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as sps
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import DescrStatsW

from patchsim.analysis import estimators as E


def deal_outcomes(rng: np.random.Generator, p: float, deals: int) -> np.ndarray:
    """Per-deal first-seat scores of seat-swapped deals whose games the first seat wins with
    probability p: 0, 0.5 or 1."""
    return (rng.random((deals, 2)) < p).mean(axis=1)


# --- estimators against the libraries ------------------------------------------------------------
def test_mean_estimate_is_the_t_interval_of_statsmodels():
    x = np.array([0.0, 0.5, 1.0, 0.5, 0.5, 1.0, 0.0, 0.5, 1.0, 1.0])
    est = E.mean_estimate(x, 0.9)
    lo, hi = DescrStatsW(x).tconfint_mean(alpha=0.1)
    assert est.value == pytest.approx(x.mean())
    assert (est.lo, est.hi) == pytest.approx((lo, hi))
    assert est.deals == 10 and est.sd == pytest.approx(x.std(ddof=1))


def test_rate_uses_deals_as_the_unit_and_a_weak_prior_at_the_bounds():
    won = np.array([1, 1, 1, 1, 1, 1])
    deal = np.array([0, 0, 1, 1, 2, 2])
    est = E.rate(won, deal)
    assert est.value == 1.0 and est.deals == 3  # three deals, not six games
    assert est.lo < 1.0 and est.hi == 1.0  # no zero-width interval from constant data
    # hand-worked: values [1, 1, 1] plus bounds [0, 1] -> sd of [1,1,1,0,1] / sqrt(5)
    se = np.std([1, 1, 1, 0, 1], ddof=1) / math.sqrt(5)
    assert est.se == pytest.approx(se)
    assert est.lo == pytest.approx(1 - sps.t.ppf(0.975, 2) * se)


def test_paired_difference_is_a_paired_t_interval():
    rng = np.random.default_rng(3)
    a = rng.random(40)
    b = a + 0.1 + rng.normal(0, 0.05, 40)
    est = E.paired_difference(a, b)
    res = sps.ttest_rel(b, a)
    assert E.difference_pvalue(est) == pytest.approx(res.pvalue)
    ci = res.confidence_interval(0.95)
    assert (est.lo, est.hi) == pytest.approx((ci.low, ci.high))
    with pytest.raises(ValueError, match="do not pair up"):
        E.paired_difference(a, b[:-1])


def test_tost_matches_statsmodels():
    rng = np.random.default_rng(4)
    x = rng.normal(0.003, 0.2, 500)
    est = E.mean_estimate(x)
    p_sm = DescrStatsW(x).ttost_mean(-0.02, 0.02)[0]
    assert E.tost_pvalue(est, 0.02) == pytest.approx(p_sm)


def test_sample_sizes_match_the_power_formulas():
    # difference: the normal approximation of statsmodels' one-sample t-test power
    n = E.deals_for_difference(0.35, 0.03, alpha=0.05, power=0.8)
    n_sm = TTestPower().solve_power(effect_size=0.03 / 0.35, alpha=0.05, power=0.8)
    assert abs(n - n_sm) / n_sm < 0.01
    # precision: z^2 sd^2 / h^2
    assert E.deals_for_precision(0.35, 0.01) == math.ceil((1.959964 * 0.35 / 0.01) ** 2)
    # equivalence at a true difference of zero splits beta over the two one-sided tests
    n_eq = E.deals_for_equivalence(0.35, 0.02, 0.0, alpha=0.05, power=0.8)
    assert n_eq == math.ceil(((sps.norm.ppf(0.95) + sps.norm.ppf(0.9)) * 0.35 / 0.02) ** 2)
    assert E.deals_for_equivalence(0.35, 0.02, 0.03) == 0  # outside the margin: never


def test_multiplicity_corrections():
    p = [0.01, 0.04, 0.03, float("nan")]
    holm = E.holm(p)
    assert holm[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(holm[3])
    bh = E.benjamini_hochberg(p)
    assert bh[:3] == pytest.approx([0.03, 0.04, 0.04])


# --- verdicts -----------------------------------------------------------------------------------
def test_the_three_verdicts():
    rng = np.random.default_rng(5)
    differs = E.verdict(E.mean_estimate(rng.normal(0.05, 0.3, 2000)), margin=0.02)
    assert differs.kind == "differs" and differs.text().startswith("differs by +")
    same = E.verdict(E.mean_estimate(rng.normal(0.0, 0.3, 4000)), margin=0.02)
    assert same.kind == "equivalent" and "equivalent within +-2.0 points" in same.text()
    small = E.verdict(E.mean_estimate(rng.normal(0.0, 0.3, 60)), margin=0.02)
    assert small.kind == "undecided" and small.more_deals > 100
    assert "more deals would decide it" in small.text()
    # a multiplicity-corrected p-value can turn a raw difference into undecided
    est = E.mean_estimate(rng.normal(0.06, 0.3, 250))
    assert E.verdict(est, 0.02).kind == "differs"
    assert E.verdict(est, 0.02, p_difference=0.2).kind == "undecided"


def test_undecided_says_how_many_deals_would_decide():
    """The predicted number of deals is about right: at that size, the verdict is decided in
    most simulated replications (80% power by construction)."""
    rng = np.random.default_rng(6)
    first = E.verdict(E.mean_estimate(rng.normal(0.0, 0.35, 100)), margin=0.02)
    assert first.kind == "undecided"
    total = first.estimate.deals + first.more_deals
    decided = sum(E.verdict(E.mean_estimate(rng.normal(0.0, 0.35, total)), 0.02).kind
                  == "equivalent" for _ in range(200))
    assert decided / 200 > 0.6


# --- coverage ---------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.5, 0.55, 0.9])
def test_rate_interval_covers_at_its_level(p):
    """A quick coverage check of the main interval (the deal-level rate); the longer one is
    benchmarks/coverage.py."""
    rng = np.random.default_rng(7)
    hits = 0
    runs = 400
    for _ in range(runs):
        x = deal_outcomes(rng, p, 60)
        est = E.mean_estimate(x, 0.95, E.WIN_BOUNDS)
        hits += est.lo <= p <= est.hi
    assert 0.92 <= hits / runs <= 0.99


# --- the sequential gate ----------------------------------------------------------------------
TOL = 0.03


def old_gate(x: np.ndarray, alpha: float = 0.05, step: int = 1000,
             max_deals: int = 10000):
    """The gate before the sequential test (for comparison): Bonferroni over 10 planned looks
    every 1,000 deals, holds when the (1 - 2a) interval is inside +-3 points, fails when the
    (1 - a) interval is outside."""
    looks = math.ceil(max_deals / step)
    a = alpha / looks
    for k in range(1, looks + 1):
        n = min(max_deals, k * step)
        wide = E.mean_estimate(x[:n], 1 - 2 * a, E.WIN_BOUNDS)
        narrow = E.mean_estimate(x[:n], 1 - a, E.WIN_BOUNDS)
        if wide.lo > 0.5 - TOL and wide.hi < 0.5 + TOL:
            return E.PASS, n
        if narrow.lo > 0.5 + TOL or narrow.hi < 0.5 - TOL:
            return E.FAIL, n
    return "undecided", max_deals


def new_gate(x: np.ndarray, step: int = 50, max_deals: int = 10000):
    return E.BandTest.around(0.5, TOL).first_decision(x, range(step, max_deals + 1, step))


def simulate(p: float, runs: int, seed: int,
             gate=new_gate) -> tuple[dict[str, float], float]:
    rng = np.random.default_rng(seed)
    kinds, deals = [], []
    for _ in range(runs):
        kind, n = gate(deal_outcomes(rng, p, 10000))
        kinds.append(kind)
        deals.append(n)
    share = {k: kinds.count(k) / runs for k in (E.PASS, E.FAIL, E.CONTINUE, "undecided")}
    return share, 2 * float(np.mean(deals))


def test_gate_false_pass_at_the_tolerance_edge_is_at_most_alpha():
    share, _ = simulate(0.5 + TOL, 600, seed=11)
    assert share[E.PASS] <= 0.05
    share, _ = simulate(0.5 - TOL, 600, seed=12)
    assert share[E.PASS] <= 0.05


def test_gate_false_fail_at_the_centre_is_at_most_beta():
    share, _ = simulate(0.5, 600, seed=13)
    assert share[E.FAIL] <= 0.05


@pytest.mark.parametrize("p", [0.5085, 0.535])
def test_gate_needs_at_least_30_percent_fewer_games_than_before(p):
    _, new = simulate(p, 150, seed=14)
    _, old = simulate(p, 150, seed=14, gate=old_gate)
    assert new <= 0.7 * old, (new, old)


def test_band_test_decides_clear_cases_quickly_and_not_before_min_deals():
    bt = E.BandTest.around(0.5, TOL)
    assert bt.decide(np.full(5, 0.5)) == E.CONTINUE  # fewer than min_deals
    assert bt.first_decision(np.ones(200), range(10, 201, 10)) == (E.FAIL, 10)
    rng = np.random.default_rng(15)
    kind, n = bt.first_decision(deal_outcomes(rng, 0.5, 10000), range(50, 10001, 50))
    assert kind == E.PASS and n < 6000
    assert bt.decide([]) == E.CONTINUE


def test_one_sided_band_needs_a_resolution_and_decides():
    with pytest.raises(ValueError, match="resolution"):
        E.BandTest(0.5, math.inf)
    bt = E.BandTest(10.0, math.inf, resolution=1.0)
    rng = np.random.default_rng(16)
    assert bt.first_decision(rng.normal(12.0, 3.0, 2000), range(10, 2001, 10))[0] == E.PASS
    assert bt.first_decision(rng.normal(8.0, 3.0, 2000), range(10, 2001, 10))[0] == E.FAIL


def test_a_change_on_the_margin_asks_for_a_finite_number_of_deals() -> None:
    """0.5 - 0.4 is 0.0999... in floating point, just inside a margin of 0.1: the sample size
    for equivalence would divide by about 1e-17. On the margin counts as outside."""
    x = np.array([1.0] * 8 + [0.0] * 12)
    v = E.verdict(E.mean_estimate(x, bounds=(0.0, 1.0)), margin=0.10, center=0.5)
    assert v.kind == "undecided" and 0 < v.more_deals < 10_000
    assert "about" in v.text()


def test_more_deals_than_anyone_would_play_is_said_as_such() -> None:
    # a change a hair inside the margin: showing equivalence needs ~1e13 deals
    near = E.Estimate(0.02 - 1e-6, 0.05, -0.08, 0.12, 100, 0.5)
    v = E.verdict(near, margin=0.02)
    assert v.kind == "undecided" and v.more_deals == E.MAX_DEALS_ADVICE
    assert "over 10,000,000 more deals" in v.text()


def test_thirty_deals_that_agree_do_not_show_a_rate_equivalent() -> None:
    """Without the prior a paired difference of identical outcomes has no spread: a
    zero-width interval and "equivalent within +-2 points" from 30 deals."""
    a = np.zeros(30)
    bare = E.paired_difference(a, a)
    assert bare.lo == bare.hi == 0.0
    d = E.paired_difference(a, a, bounds=E.RATE_DIFF_BOUNDS)
    assert d.value == 0.0 and d.hi - d.lo > 0.1
    assert E.verdict(d, margin=0.02).kind == "undecided"
    big = E.paired_difference(np.zeros(40_000), np.zeros(40_000), bounds=E.RATE_DIFF_BOUNDS)
    assert E.verdict(big, margin=0.02).kind == "equivalent"  # the prior fades with data
