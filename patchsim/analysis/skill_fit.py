"""The skill trace's trend: a weighted line through every level of the ladder, so that "does
the metric still move with strength?" is decided from all the levels, not from the top two.

Strength is put on one axis (:func:`strength_axis`): the cumulative Elo of the ladder from its
duels (the slope is then per 100 Elo of strength), else the doublings of the search budget,
else the level's rank. The line is a weighted least-squares fit of the levels' means on that
axis, each level weighted by the inverse of its mean's variance over deals (:func:`fit_trend`).

The deal stays the unit of every interval. A weighted least-squares estimate is a fixed linear
combination of the levels' means, and every level plays the same deals, so each estimate is
the mean over deals of one number per deal (that deal's values at every level, combined with
the fit's coefficients). Its interval is the interval of that mean: it counts every level, and
the correlation between levels that share a deal, without a model for either.
:func:`trend_verdict` reads the verdict on "still moving?" off the slope's interval. When the levels
scatter about the line more than their intervals allow (a chi-square above its degrees of
freedom) the intervals are widened by the square root of the ratio (the usual scale factor of
a weighted fit), so a line that does not describe the ladder is not read as a precise trend.

With ``n0`` the intervals are anytime-valid (a confidence sequence,
:func:`patchsim.analysis.estimators.anytime_estimate`): for a trace that adds deals until it is
decided. The weights and the strength axis are taken as measured at each look (the steps'
Elo intervals are in the trace's table).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.defaults import ALPHA

ELO_UNIT = 100.0  # the slope is stated per 100 Elo of strength


@dataclass(frozen=True)
class Strength:
    """Each level's strength on one axis: ``x`` per level (ladder order), in the unit that
    ``per`` names ("per 100 Elo", "per doubling of the budget", "per level")."""

    axis: str
    x: tuple[float, ...]
    per: str


def strength_axis(duels: pd.DataFrame | None, budgets: Sequence[float | None] | None,
                  n_levels: int) -> Strength:
    """The strength of each of ``n_levels`` levels: the cumulative Elo of the duel table
    (``level`` and ``cum_elo`` columns, one row per step; the first level at 0) when every step
    has a finite one; else log2 of the budgets when every level has one; else the rank."""
    if duels is not None and len(duels) and n_levels >= 2:
        by = duels.set_index("level")["cum_elo"]
        steps = [float(by.get(i, math.nan)) for i in range(1, n_levels)]
        # a ladder whose levels all measure equally strong has no Elo axis to fit along
        if all(math.isfinite(s) for s in steps) and any(s != 0 for s in steps):
            return Strength("elo", (0.0, *(s / ELO_UNIT for s in steps)), "per 100 Elo")
    if budgets is not None and len(budgets) == n_levels and all(b and b > 0 for b in budgets):
        first = float(budgets[0])  # type: ignore[arg-type]
        return Strength("doubling", tuple(math.log2(float(b) / first)  # type: ignore[arg-type]
                                          for b in budgets), "per doubling of the budget")
    return Strength("level", tuple(float(i) for i in range(n_levels)), "per level")


@dataclass(frozen=True)
class TrendFit:
    """A weighted line through the levels: ``slope`` (the metric's change per unit of
    strength) and ``top`` (the line's value at the strongest level), each an Estimate over the
    ``deals`` common to every level, with its 95% interval (anytime-valid when ``anytime``);
    per level its strength ``x``, ``mean`` and standard error ``se``; the lack of fit
    (``chi2`` on ``df`` degrees of freedom) and the factor ``widen`` the intervals carry for
    it (1 when the line fits)."""

    levels: tuple[int, ...]
    x: tuple[float, ...]
    mean: tuple[float, ...]
    se: tuple[float, ...]
    slope: est.Estimate
    top: est.Estimate
    deals: int
    chi2: float
    df: int
    widen: float
    anytime: bool = False


def _composite_bounds(c: np.ndarray, bounds: tuple[float, float]) -> tuple[float, float]:
    """The range of sum_i c_i y_i when every y_i lies within ``bounds``."""
    lo, hi = bounds
    return (float(np.minimum(c * lo, c * hi).sum()), float(np.maximum(c * lo, c * hi).sum()))


def spread_estimate(z: np.ndarray, bounds: tuple[float, float] | None, *, widen: float = 1.0,
                    n0: int | None = None, clip: tuple[float, float] | None = None
                    ) -> est.Estimate:
    """The mean of per-deal values ``z`` as an Estimate whose 95% t-interval is the one to
    print: the interval of :func:`estimators.mean_estimate` (with its weak prior at
    ``bounds``), or with ``n0`` the anytime-valid one of :func:`estimators.anytime_estimate`
    at the same spread; its standard error times ``widen``; clipped to ``clip``. The standard
    error is the one the interval implies, so that :func:`estimators.verdicts` reads its
    p-values off the same interval as it prints."""
    base = est.mean_estimate(z, est.VERDICT_LEVEL, bounds)
    n = base.deals
    if n < 2 or not np.isfinite(base.se):
        return base
    q = float(est.t_ppf(0.5 + est.VERDICT_LEVEL / 2, n - 1))
    se = base.se * widen
    if n0 is not None:
        # the confidence sequence's half-width per unit of per-deal spread at n deals
        # (the one formula, read off a unit-spread sample), at this spread
        ruler = np.arange(n, dtype=float)
        unit = est.anytime_estimate(ruler, est.VERDICT_LEVEL, n0).halfwidth / ruler.std(ddof=1)
        se = unit * base.se * math.sqrt(n) * widen / q
    lo, hi = base.value - q * se, base.value + q * se
    if clip is not None:
        lo, hi = float(np.clip(lo, *clip)), float(np.clip(hi, *clip))
    return est.Estimate(base.value, se, lo, hi, n, se * math.sqrt(n), est.VERDICT_LEVEL, clip)


def fit_trend(values: pd.DataFrame, x: Sequence[float],
              bounds: tuple[float, float] | None = None, *, n0: int | None = None
              ) -> TrendFit:
    """The weighted line through the levels (see the module doc). ``values``: one row per deal,
    one column per level in ladder order (a level's per-deal values of the metric; deals with
    a missing value at any level are left out), ``x`` each column's strength; ``bounds`` the
    metric's range for a bounded metric (a rate), which gives each level's spread and the
    composites their weak prior; ``n0`` for anytime-valid intervals. ValueError with fewer
    than two levels or two common deals."""
    y = values.dropna().to_numpy(dtype=float)
    xs = np.asarray(x, dtype=float)
    if y.ndim != 2 or y.shape[1] < 2 or y.shape[1] != len(xs):
        raise ValueError(f"fit_trend: {values.shape[1]} levels and {len(xs)} strengths; a "
                         "trend needs two levels or more, one strength each")
    if not np.isfinite(xs).all() or np.ptp(xs) == 0:
        raise ValueError(f"fit_trend: the levels' strengths must be finite and differ, got "
                         f"{list(xs)}")
    n, k = y.shape
    if n < 2:
        raise ValueError(f"fit_trend: {n} deal(s) common to every level; a trend needs two")
    per = [est.mean_estimate(y[:, i], est.VERDICT_LEVEL, bounds) for i in range(k)]
    var = np.array([e.se**2 for e in per])
    # a level without spread (its weak prior absent) would take all the weight
    floor = np.nanmax(var) if np.isfinite(var).any() and np.nanmax(var) > 0 else 1.0
    var = np.where(np.isfinite(var) & (var > 0), var, floor)
    w = 1.0 / var
    design = np.column_stack([np.ones(k), xs - xs[-1]])  # intercept: the strongest level
    normal = design.T @ (w[:, None] * design)
    coef = np.linalg.solve(normal, design.T * w)  # 2 x k: the estimates' weights on levels
    means = y.mean(axis=0)
    fitted = design @ (coef @ means)
    chi2 = float((w * (means - fitted) ** 2).sum())
    df = k - 2
    widen = math.sqrt(max(1.0, chi2 / df)) if df > 0 else 1.0
    out = []
    for row, clip in ((coef[0], bounds), (coef[1], None)):
        zb = _composite_bounds(row, bounds) if bounds is not None else None
        out.append(spread_estimate(y @ row, zb, widen=widen, n0=n0, clip=clip))
    top, slope = out
    return TrendFit(tuple(int(c) for c in values.columns), tuple(float(v) for v in xs),
                    tuple(float(m) for m in means), tuple(float(e.se) for e in per), slope,
                    top, n, chi2, df, widen, n0 is not None)


def by_level(deals: pd.DataFrame, metric: str, levels: Sequence[int]) -> pd.DataFrame:
    """Per-deal values of ``metric`` (rows of :func:`patchsim.analysis.skill.level_deals`) as
    one row per deal and one column per level of ``levels``."""
    d = deals[deals["level"].isin(list(levels))]
    wide = d.pivot_table(index="deal", columns="level", values=metric, aggfunc="mean")
    return wide.reindex(columns=list(levels))


# --- the convergence verdict ---------------------------------------------------------------------
CONVERGED, MOVING, UNDECIDED = "converged", "still moving", "undecided"


@dataclass(frozen=True)
class ConvergenceVerdict:
    """Whether ``metric`` has converged along the ladder, read off the slope of the weighted
    line through every level (``fit``, :func:`patchsim.analysis.skill_fit.fit_trend`): the
    verdict of :func:`estimators.verdicts` on the slope (``verdict``) against ``margin`` per
    unit of strength (``axis``: per 100 Elo, per doubling of the budget or per level).
    ``kind``: converged (the slope is equivalent to flat within the margin), still moving
    (beyond it) or undecided. ``strength``: the strongest level's win rate against the one
    below (whether the top of the ladder still gains)."""

    kind: str
    metric: str
    margin: float
    top: str
    fit: TrendFit
    verdict: est.Verdict
    axis: Strength
    strength: est.Estimate | None = None
    scale: float = 100.0
    unit: str = " points"

    @property
    def slope(self) -> est.Estimate:
        return self.fit.slope

    @property
    def more_deals(self) -> int:
        """More deals per level that would likely decide an undecided verdict."""
        return self.verdict.more_deals

    @property
    def too_close(self) -> bool:
        return self.verdict.too_close

    def _value(self, e: est.Estimate, digits: int) -> str:
        if self.scale == 100.0 and self.unit == " points":
            return (f"{100 * e.value:.{digits}f}% [{100 * e.lo:.{digits}f}, "
                    f"{100 * e.hi:.{digits}f}]")
        return f"{e.value:.{digits + 1}f} [{e.lo:.{digits + 1}f}, {e.hi:.{digits + 1}f}]"

    def text(self, digits: int = 1) -> str:
        """The verdict in the project's verdict language, with the slope's interval it is
        read off and the line it comes from."""
        words = self.verdict.text(self.scale, f"{self.unit} {self.axis.per}", digits)
        if self.kind == UNDECIDED:
            head, _, _advice = words.partition("; ")
            if self.fit.anytime:  # a sequential trace goes on while its budget lasts
                words = head + "; more deals a level (a larger budget) would go on until it " \
                               "is decided"
            else:  # a deal more is a deal more at every level
                words = words.replace(" more deals ", " more deals per level ")
            out = words
        else:
            out = f"{self.kind}: {words}"
        f = self.fit
        how = "anytime-valid 95% intervals" if f.anytime else "95% intervals over deals"
        out += (f"; from a weighted line through {len(f.levels)} levels on {f.deals:,} "
                f"common deals ({how}), which puts the strongest level at "
                f"{self._value(f.top, digits)}")
        if f.widen > 1:
            out += (f"; the levels scatter about the line by more than their intervals "
                    f"(chi-square {f.chi2:.1f} on {f.df} degrees of freedom), which widens "
                    f"its intervals {f.widen:.2f} times")
        w = self.strength
        if self.kind == CONVERGED and w is not None and w.deals and not w.lo > 0.5:
            # a flat line from equal players says nothing about stronger play
            out += (f"; the strongest level wins {100 * w.value:.{digits}f}% "
                    f"[{100 * w.lo:.{digits}f}, {100 * w.hi:.{digits}f}] against the level "
                    "below, not shown to be stronger: the ladder may have stalled rather "
                    "than converged")
        return out


def trend_verdict(values: pd.DataFrame, x: Sequence[float], axis: Strength, metric: str,
                  margin: float, *, top: str, strength: est.Estimate | None = None,
                  bounds: tuple[float, float] | None = None, alpha: float = ALPHA,
                  power: float = 0.8, n0: int | None = None) -> ConvergenceVerdict:
    """The convergence verdict on ``metric``: the weighted line through the levels
    (:func:`fit_trend` of ``values`` at strengths ``x`` on ``axis``) and the verdict of
    :func:`estimators.verdicts` on its slope against ``margin`` per unit of strength
    (equivalent: converged; beyond: still moving; else undecided, with the deals per level
    that would likely decide it). ``top`` names the strongest level, ``strength`` is its win
    rate against the level below."""
    fit = fit_trend(values, x, bounds, n0=n0)
    v = est.verdicts([fit.slope], margin, 0.0, alpha, family="none", power=power)[0]
    kind = {"equivalent": CONVERGED, "differs": MOVING}.get(v.kind, UNDECIDED)
    scaled = bounds == est.WIN_BOUNDS
    return ConvergenceVerdict(kind, metric, margin, top, fit, v, axis, strength,
                              100.0 if scaled else 1.0, " points" if scaled else "")
