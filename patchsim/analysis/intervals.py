"""Intervals over deals, the base of the estimator layer (:mod:`patchsim.analysis.estimators`
offers every name here): an :class:`Estimate`, a mean of per-deal values with its t-interval
(:func:`mean_estimate`, :func:`rate`), the paired difference of two sides on the same deals,
the raw tests of one change, the Wilson interval of independent trials, and the sample sizes
the runner's designs need."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from patchsim.analysis.defaults import ALPHA, VERDICT_LEVEL


# Student's t and the normal distribution through scipy.special, the functions scipy.stats
# evaluates for t.ppf, t.cdf, t.sf and norm.ppf (the same numbers), without importing
# scipy.stats (0.4 s on every `patchsim run`).
def t_ppf(q, df):
    """Quantile ``q`` of Student's t with ``df`` degrees of freedom (scipy.special, so a run
    does not import scipy.stats)."""
    return special.stdtrit(df, q)


def t_cdf(x, df):
    """P(T <= x) for Student's t with ``df`` degrees of freedom."""
    return special.stdtr(df, x)


def t_sf(x, df):
    """P(T > x) for Student's t with ``df`` degrees of freedom."""
    return special.stdtr(df, -x)


NAN = float("nan")
MIN_DEALS = 10  # no verdict on fewer deals (a table row is flagged "too few games")
MAX_DEALS_ADVICE = 1_000_000  # more deals in all than this: "too close to decide"
WIN_BOUNDS = (0.0, 1.0)


@dataclass(frozen=True)
class Estimate:
    """A mean over deals: value, standard error, interval at ``level``, number of deals and
    the per-deal standard deviation (what sample sizes are computed from)."""

    value: float
    se: float
    lo: float
    hi: float
    deals: int
    sd: float
    level: float = 0.95
    bounds: tuple[float, float] | None = None  # a bounded metric's interval is clipped to these

    @property
    def halfwidth(self) -> float:
        return (self.hi - self.lo) / 2


def at_level(e: Estimate, level: float) -> Estimate:
    """The same estimate with its t-interval at another ``level`` (a family's adjusted
    level): the interval the p-values of this module are dual to, clipped to the bounds."""
    if level == e.level or e.deals < 1 or not np.isfinite(e.se):
        return e
    q = float(t_ppf(0.5 + level / 2, max(e.deals - 1, 1)))
    lo, hi = e.value - q * e.se, e.value + q * e.se
    if e.bounds is not None:
        lo, hi = float(np.clip(lo, *e.bounds)), float(np.clip(hi, *e.bounds))
    return Estimate(e.value, e.se, lo, hi, e.deals, e.sd, level, e.bounds)


def deal_values(values: np.ndarray | pd.Series, deal: np.ndarray | pd.Series) -> np.ndarray:
    """One number per deal: the mean of ``values`` over each deal's games, in deal order."""
    v = pd.Series(np.asarray(values, dtype=float))
    return v.groupby(np.asarray(deal), sort=True).mean().to_numpy()


def finite(x: np.ndarray | Sequence[float]) -> np.ndarray:
    """The finite values of ``x`` (a missing value is no observation)."""
    a = np.asarray(x, dtype=float)
    return a[np.isfinite(a)]


def mean_estimate(x: np.ndarray | Sequence[float], level: float = 0.95,
                  bounds: tuple[float, float] | None = None) -> Estimate:
    """Mean of per-deal values with a t-interval over deals.

    With ``bounds`` (a bounded metric) the standard error is that of the values with one
    imaginary deal at each bound added, and the interval is clipped to the bounds; the mean
    is that of the values alone."""
    v = finite(x)
    n = len(v)
    if n == 0:
        return Estimate(NAN, NAN, NAN, NAN, 0, NAN, level)
    m = float(v.mean())
    sd = float(v.std(ddof=1)) if n >= 2 else NAN
    if bounds is not None:
        padded = np.concatenate([v, list(bounds)])
        se = float(padded.std(ddof=1) / math.sqrt(n + 2))
        q = float(t_ppf(0.5 + level / 2, max(n - 1, 1)))
        lo, hi = bounds
        return Estimate(m, se, float(np.clip(m - q * se, lo, hi)),
                        float(np.clip(m + q * se, lo, hi)), n, sd, level, bounds)
    if n < 2:
        return Estimate(m, NAN, NAN, NAN, n, NAN, level)
    los, his = t_intervals(np.array([m]), np.array([sd]), np.array([n]), level)
    return Estimate(m, sd / math.sqrt(n), float(los[0]), float(his[0]), n, sd, level)


def t_intervals(mean: np.ndarray, sd: np.ndarray, deals: np.ndarray,
                level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Many t-intervals at once (e.g. one per point of a curve): means of per-deal values
    with their per-deal standard deviations and numbers of deals; NaN below two deals."""
    mean, sd = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
    n = np.asarray(deals, dtype=float)
    ok = n >= 2
    q = np.where(ok, t_ppf(0.5 + level / 2, np.where(ok, n - 1, 1)), np.nan)
    half = q * sd / np.sqrt(np.where(ok, n, 1))
    return mean - half, mean + half


def rate(won: np.ndarray | pd.Series, deal: np.ndarray | pd.Series,
         level: float = 0.95) -> Estimate:
    """A win rate (or any 0/1 outcome) over games grouped in deals: the mean of the per-deal
    rates with the bounded t-interval of :func:`mean_estimate`."""
    return mean_estimate(deal_values(won, deal), level, WIN_BOUNDS)


RATE_DIFF_BOUNDS = (-1.0, 1.0)  # a change of a per-deal rate lies between these


def paired_difference(a: np.ndarray | Sequence[float], b: np.ndarray | Sequence[float],
                      level: float = 0.95,
                      bounds: tuple[float, float] | None = None) -> Estimate:
    """``b - a`` on the same deals (arrays aligned by deal; pairs with a NaN are dropped).

    For rates pass ``bounds=RATE_DIFF_BOUNDS``: the weak prior of :func:`mean_estimate` (one
    imaginary deal at each bound) keeps thirty deals that happen to agree from giving a
    zero-width interval, and so a verdict of "equivalent" that the data cannot carry."""
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if av.shape != bv.shape:
        raise ValueError(f"paired_difference: {len(av)} and {len(bv)} deals do not pair up")
    ok = np.isfinite(av) & np.isfinite(bv)
    return mean_estimate(bv[ok] - av[ok], level, bounds)


def difference_pvalue(est: Estimate, center: float = 0.0) -> float:
    """Two-sided t-test p-value that the mean equals ``center``."""
    if est.deals < 2 or not np.isfinite(est.se):
        return NAN
    if est.se == 0:
        return 1.0 if est.value == center else 0.0
    return float(2 * t_sf(abs(est.value - center) / est.se, est.deals - 1))


def tost_pvalue(est: Estimate, margin: float, center: float = 0.0) -> float:
    """p-value of the two one-sided tests that the mean lies within ``center +- margin``."""
    if est.deals < 2 or not np.isfinite(est.se):
        return NAN
    if est.se == 0:
        return 0.0 if abs(est.value - center) < margin else 1.0
    df = est.deals - 1
    p_low = t_sf((est.value - (center - margin)) / est.se, df)
    p_high = t_cdf((est.value - (center + margin)) / est.se, df)
    return float(max(p_low, p_high))


# --- sample sizes -------------------------------------------------------------------------------
def z_quantile(p: float) -> float:
    """Quantile ``p`` of the standard normal distribution."""
    return float(special.ndtri(p))


def wilson_interval(successes: float, trials: int, level: float = VERDICT_LEVEL
                    ) -> tuple[float, float]:
    """The Wilson score interval of a proportion over independent trials (e.g. the rollouts
    of one position, each its own unit; not games of a run, whose unit is the deal: use
    :func:`mean_estimate` of per-deal values there). ``(0, 1)`` for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    z = z_quantile(0.5 + level / 2)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
            / (1 + z * z / trials))
    # at the ends the interval reaches the bound exactly (rounding would leave 0.9999...)
    lo = 0.0 if successes <= 0 else max(0.0, centre - half)
    hi = 1.0 if successes >= trials else min(1.0, centre + half)
    return lo, hi


def simultaneous_level(k: int, alpha: float = ALPHA) -> float:
    """The level of each of ``k`` intervals read together, so that all ``k`` cover at once
    with probability at least 1 - alpha (Bonferroni: alpha / k each); 1 - alpha for one."""
    return 1 - alpha / max(1, k)


def deals_for_precision(sd: float, halfwidth: float, level: float = 0.95) -> int:
    """Deals for an interval of +-``halfwidth`` when per-deal values have spread ``sd``."""
    if not (np.isfinite(sd) and halfwidth > 0):
        return 0
    return max(2, math.ceil((z_quantile(0.5 + level / 2) * sd / halfwidth) ** 2))


def deals_for_difference(sd: float, delta: float, alpha: float = ALPHA,
                         power: float = 0.8) -> int:
    """Deals for a two-sided test at ``alpha`` to detect a true change ``delta`` with
    ``power`` (``sd``: spread of the per-deal values, or of the per-deal differences when
    paired)."""
    if not (np.isfinite(sd) and delta != 0):
        return 0
    z = z_quantile(1 - alpha / 2) + z_quantile(power)
    return max(2, math.ceil((z * sd / abs(delta)) ** 2))


def deals_for_equivalence(sd: float, margin: float, true_diff: float = 0.0,
                          alpha: float = ALPHA, power: float = 0.8) -> int:
    """Deals for the two one-sided tests at ``alpha`` to show equivalence within +-``margin``
    with ``power`` when the true change is ``true_diff`` (inside the margin)."""
    gap = margin - abs(true_diff)
    if not (np.isfinite(sd) and gap > 0):
        return 0
    # at true_diff = 0 both one-sided tests must pass: beta is split between them
    beta = (1 - power) / 2 if true_diff == 0 else 1 - power
    return max(2, math.ceil(((z_quantile(1 - alpha) + z_quantile(1 - beta)) * sd / gap) ** 2))
