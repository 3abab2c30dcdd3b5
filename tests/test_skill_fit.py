"""The skill trace's weighted line (patchsim.analysis.skill_fit) on synthetic tables: it
recovers a planted slope, its intervals cover in a small simulation (deals shared by the
levels included), a line that does not fit widens them, the verdict's words agree with the
interval it prints, and bad input is refused."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis import estimators as est
from patchsim.analysis import skill as sk
from patchsim.analysis import skill_fit as sf

X = (0.0, 1.0, 2.0, 3.0, 4.0)


def _rates(rng: np.random.Generator, rates: list[float], n: int,
           deal_effect: float = 0.0) -> pd.DataFrame:
    """Per-deal first-seat win shares (two games a deal) at each level, one column a level;
    ``deal_effect`` shifts every level's rate on a deal by the same amount (deals that favour
    the first seat at every level)."""
    shift = rng.normal(0, deal_effect, n) if deal_effect else np.zeros(n)
    cols = {i: rng.binomial(2, np.clip(r + shift, 0, 1)) / 2 for i, r in enumerate(rates)}
    return pd.DataFrame(cols)


def _long(wide: pd.DataFrame) -> pd.DataFrame:
    return wide.reset_index(names="deal").melt(id_vars="deal", var_name="level",
                                               value_name="first_player_win")


def test_the_line_recovers_a_planted_slope_and_the_top_value() -> None:
    rng = np.random.default_rng(1)
    rates = [0.50 + 0.03 * x for x in X]
    f = sf.fit_trend(_rates(rng, rates, 4000), X, est.WIN_BOUNDS)
    assert f.slope.lo < 0.03 < f.slope.hi
    assert f.slope.value == pytest.approx(0.03, abs=0.006)
    assert f.top.lo < rates[-1] < f.top.hi
    assert f.deals == 4000 and f.df == 3 and f.levels == (0, 1, 2, 3, 4)
    # the line's value at the top borrows from every level: narrower than the level alone
    alone = est.mean_estimate(_rates(rng, rates, 4000)[4], 0.95, est.WIN_BOUNDS)
    assert f.top.halfwidth < alone.halfwidth


def test_the_estimates_are_means_over_deals_of_one_number_per_deal() -> None:
    rng = np.random.default_rng(2)
    wide = _rates(rng, [0.5, 0.55, 0.52, 0.6], 300)
    f = sf.fit_trend(wide, X[:4])
    # the same numbers as numpy's weighted polyfit with the fit's own weights
    w = 1 / np.array(f.se) ** 2
    slope, _ = np.polyfit(np.array(X[:4]), wide.mean().to_numpy(), 1, w=np.sqrt(w))
    assert f.slope.value == pytest.approx(slope)


@pytest.mark.parametrize("deal_effect", [0.0, 0.15])
def test_the_intervals_cover_in_a_small_simulation(deal_effect: float) -> None:
    """95% intervals of the slope and of the top value cover the planted truth about 95% of
    the time, also when the deals favour one seat at every level alike (levels that share a
    deal are correlated: the per-deal composite counts it)."""
    rng = np.random.default_rng(3)
    rates = [0.52 + 0.02 * x for x in X]
    slope_hits = top_hits = 0
    reps = 400
    for _ in range(reps):
        f = sf.fit_trend(_rates(rng, rates, 150, deal_effect), X, est.WIN_BOUNDS)
        slope_hits += f.slope.lo <= 0.02 <= f.slope.hi
        top_hits += f.top.lo <= rates[-1] <= f.top.hi
    assert 0.91 <= slope_hits / reps <= 0.99
    assert 0.91 <= top_hits / reps <= 0.99


def test_the_anytime_valid_intervals_are_wider_and_cover() -> None:
    rng = np.random.default_rng(4)
    wide = _rates(rng, [0.5, 0.52, 0.54, 0.56, 0.58], 400)
    fixed, anytime = sf.fit_trend(wide, X), sf.fit_trend(wide, X, n0=100)
    assert anytime.anytime and not fixed.anytime
    assert anytime.slope.value == fixed.slope.value
    assert anytime.slope.halfwidth > fixed.slope.halfwidth
    # the standard error is the one the printed interval implies (verdicts read both)
    q = float(est.t_ppf(0.975, anytime.slope.deals - 1))
    assert anytime.slope.halfwidth == pytest.approx(q * anytime.slope.se)


def test_a_ladder_the_line_does_not_describe_widens_the_intervals() -> None:
    rng = np.random.default_rng(5)
    bent = [0.40, 0.55, 0.60, 0.61, 0.61]  # climbs, then flattens: not a line
    f = sf.fit_trend(_rates(rng, bent, 3000), X, est.WIN_BOUNDS)
    assert f.chi2 / f.df > 3 and f.widen == pytest.approx(math.sqrt(f.chi2 / f.df))
    straight = sf.fit_trend(_rates(rng, [0.5 + 0.01 * x for x in X], 3000), X,
                            est.WIN_BOUNDS)
    assert straight.widen < 1.6
    # two levels: a line through two points, nothing to test it by
    assert sf.fit_trend(_rates(rng, [0.4, 0.6], 100), (0, 1)).widen == 1.0


def test_bad_input_is_refused_with_what_is_wrong() -> None:
    rng = np.random.default_rng(6)
    with pytest.raises(ValueError, match="two levels or more"):
        sf.fit_trend(_rates(rng, [0.5], 50), (0,))
    with pytest.raises(ValueError, match="3 levels and 2 strengths"):
        sf.fit_trend(_rates(rng, [0.5, 0.5, 0.5], 50), (0, 1))
    with pytest.raises(ValueError, match="must be finite and differ"):
        sf.fit_trend(_rates(rng, [0.5, 0.5], 50), (1, 1))
    with pytest.raises(ValueError, match="must be finite and differ"):
        sf.fit_trend(_rates(rng, [0.5, 0.5], 50), (0, math.nan))
    with pytest.raises(ValueError, match="1 deal"):
        sf.fit_trend(_rates(rng, [0.5, 0.5], 1), (0, 1))


def test_deals_missing_at_a_level_are_left_out() -> None:
    rng = np.random.default_rng(7)
    wide = _rates(rng, [0.5, 0.6, 0.7], 100)
    wide.loc[:9, 1] = np.nan
    assert sf.fit_trend(wide, (0, 1, 2)).deals == 90


def test_the_strength_axis_is_elo_then_doublings_then_rank() -> None:
    duels = pd.DataFrame({"level": [1, 2], "cum_elo": [150.0, 250.0]})
    s = sf.strength_axis(duels, [None, 100, 200], 3)
    assert s.axis == "elo" and s.x == (0.0, 1.5, 2.5) and s.per == "per 100 Elo"
    missing = pd.DataFrame({"level": [1], "cum_elo": [150.0]})
    s = sf.strength_axis(missing, [50, 100, 400], 3)
    assert s.axis == "doubling" and s.x == (0.0, 1.0, 3.0)
    assert sf.strength_axis(missing, [None, 100, 200], 3).axis == "level"
    # levels that all measure equally strong give no Elo axis
    flat = pd.DataFrame({"level": [1, 2], "cum_elo": [0.0, 0.0]})
    assert sf.strength_axis(flat, None, 3).x == (0.0, 1.0, 2.0)


NUMBER = r"[+-]?\d+\.\d"


@pytest.mark.parametrize("seed", range(40))
def test_the_verdict_words_agree_with_the_interval_printed_beside_them(seed: int) -> None:
    """Random ladders: the words read off the slope's interval, and that interval is the one
    printed (converged: inside +-m; still moving: wholly beyond; undecided: neither)."""
    rng = np.random.default_rng(100 + seed)
    slope = rng.uniform(-0.05, 0.05)
    n = int(rng.integers(30, 3000))
    rates = [0.5 + slope * (x - 2) for x in X]
    wide = _rates(rng, rates, n, deal_effect=rng.choice([0.0, 0.1]))
    n0 = int(rng.choice([0, 50]))
    v = sk.convergence_verdict(_long(wide), margin=0.02, budgets=[25, 50, 100, 200, 400],
                               n0=n0 or None)
    e = v.slope
    lo, hi = 100 * e.lo, 100 * e.hi
    text = v.text()
    shown = re.search(rf"\[({NUMBER}), ({NUMBER})\]", text)
    assert shown is not None, text
    assert float(shown.group(1)) == pytest.approx(lo, abs=0.051)
    assert float(shown.group(2)) == pytest.approx(hi, abs=0.051)
    if v.kind == sk.CONVERGED:
        assert lo > -2 and hi < 2 and text.startswith("converged: ")
    elif v.kind == sk.MOVING:
        assert (lo > 2 or hi < -2) and text.startswith("still moving: differs by ")
    else:
        assert not (lo > -2 and hi < 2) and not (lo > 2 or hi < -2)
        assert text.startswith("undecided: ")
    assert "per doubling of the budget" in text


@pytest.mark.parametrize("seed", range(20))
def test_the_first_seats_anytime_verdict_reads_the_interval_it_prints(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(12, 800))
    wide = _rates(rng, [0.5, rng.uniform(0.4, 0.65)], n)
    e, v = sk.headline(_long(wide), 1, 0.02, n0=int(rng.integers(10, 200)))
    fixed, _ = sk.headline(_long(wide), 1, 0.02)
    assert e.value == fixed.value and e.halfwidth >= fixed.halfwidth - 1e-12
    assert v.interval.lo == e.lo and v.interval.hi == e.hi
    if v.kind == "equivalent":
        assert e.lo > 0.48 and e.hi < 0.52
    elif v.kind == "differs":
        assert e.lo > 0.52 or e.hi < 0.48
    else:
        assert not (e.lo > 0.48 and e.hi < 0.52) and not (e.lo > 0.52 or e.hi < 0.48)
