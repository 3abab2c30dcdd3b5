"""The one estimator layer: every interval, test and verdict patchsim shows, with the deal as
the unit.

A deal is played twice with the seats swapped, so its two games are not independent; each
function here takes one number per deal (a per-deal mean: :func:`deal_values`) and treats the
deals as the independent observations. Everything a report, sweep, comparison, ladder, gate or
the tuner prints comes from these functions, so one question gets one answer everywhere.

- :func:`mean_estimate` / :func:`rate`: a mean of per-deal values with its t-interval (bounded
  metrics such as win rates get a weak prior of one imaginary deal at each bound, so a small
  sample with no spread does not look certain).
- :func:`paired_difference`: the change of a metric between two rulesets (or bots) on the same
  deals.
- :func:`tost_pvalue` and :func:`verdict`: one of three verdicts, each with the change and its
  interval: "differs by X [a, b]", "equivalent within +-m", or "undecided: about N more deals
  would decide it" (from a power calculation). A non-significant test never reads as "no
  effect".
- :func:`deals_for_precision`, :func:`deals_for_difference`, :func:`deals_for_equivalence`:
  sample sizes for the designs the runner offers (seat-swapped deals; paired across rulesets).
- :class:`BandTest`: a sequential test in the style of the engine-testing frameworks (a
  generalised SPRT on deal outcomes with Wald's bounds from alpha and beta) of whether a
  metric lies inside a tolerance band or outside it.
- :func:`holm`, :func:`benjamini_hochberg`: multiplicity corrections (primary metric over the
  variants; secondary metrics labelled exploratory).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special


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
DEFAULT_MARGIN = 0.02  # equivalence margin of the first-seat win rate: +-2 points
MAX_DEALS_ADVICE = 10_000_000  # "about N more deals" above this says "over" instead
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

    @property
    def halfwidth(self) -> float:
        return (self.hi - self.lo) / 2


def deal_values(values: np.ndarray | pd.Series, deal: np.ndarray | pd.Series) -> np.ndarray:
    """One number per deal: the mean of ``values`` over each deal's games, in deal order."""
    v = pd.Series(np.asarray(values, dtype=float))
    return v.groupby(np.asarray(deal), sort=True).mean().to_numpy()


def _clean(x: np.ndarray | Sequence[float]) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[np.isfinite(a)]


def mean_estimate(x: np.ndarray | Sequence[float], level: float = 0.95,
                  bounds: tuple[float, float] | None = None) -> Estimate:
    """Mean of per-deal values with a t-interval over deals.

    With ``bounds`` (a bounded metric) the standard error is that of the values with one
    imaginary deal at each bound added, and the interval is clipped to the bounds; the mean
    is that of the values alone."""
    v = _clean(x)
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
                        float(np.clip(m + q * se, lo, hi)), n, sd, level)
    if n < 2:
        return Estimate(m, NAN, NAN, NAN, n, NAN, level)
    lo, hi = t_intervals(np.array([m]), np.array([sd]), np.array([n]), level)
    return Estimate(m, sd / math.sqrt(n), float(lo[0]), float(hi[0]), n, sd, level)


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


def deals_for_precision(sd: float, halfwidth: float, level: float = 0.95) -> int:
    """Deals for an interval of +-``halfwidth`` when per-deal values have spread ``sd``."""
    if not (np.isfinite(sd) and halfwidth > 0):
        return 0
    return max(2, math.ceil((z_quantile(0.5 + level / 2) * sd / halfwidth) ** 2))


def deals_for_difference(sd: float, delta: float, alpha: float = 0.05,
                         power: float = 0.8) -> int:
    """Deals for a two-sided test at ``alpha`` to detect a true change ``delta`` with
    ``power`` (``sd``: spread of the per-deal values, or of the per-deal differences when
    paired)."""
    if not (np.isfinite(sd) and delta != 0):
        return 0
    z = z_quantile(1 - alpha / 2) + z_quantile(power)
    return max(2, math.ceil((z * sd / abs(delta)) ** 2))


def deals_for_equivalence(sd: float, margin: float, true_diff: float = 0.0,
                          alpha: float = 0.05, power: float = 0.8) -> int:
    """Deals for the two one-sided tests at ``alpha`` to show equivalence within +-``margin``
    with ``power`` when the true change is ``true_diff`` (inside the margin)."""
    gap = margin - abs(true_diff)
    if not (np.isfinite(sd) and gap > 0):
        return 0
    # at true_diff = 0 both one-sided tests must pass: beta is split between them
    beta = (1 - power) / 2 if true_diff == 0 else 1 - power
    return max(2, math.ceil(((z_quantile(1 - alpha) + z_quantile(1 - beta)) * sd / gap) ** 2))


# --- verdicts ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """One of ``differs``, ``equivalent``, ``undecided``, with the change and its interval;
    ``more_deals`` says how many more deals would likely decide an undecided one. A change
    with no deals to measure it on (a metric that does not apply, such as the first leather
    patch of a track without leather) is ``undefined``: more deals would not help."""

    kind: str
    estimate: Estimate
    margin: float
    center: float
    p_difference: float
    p_equivalence: float
    more_deals: int = 0

    def text(self, scale: float = 100.0, unit: str = " points", digits: int = 1) -> str:
        e = self.estimate
        if self.kind == "undefined":
            return "not defined: no deal where the metric applies"
        x = f"{(e.value - self.center) * scale:+.{digits}f}"
        lo, hi = (e.lo - self.center) * scale, (e.hi - self.center) * scale
        ci = f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"
        if self.kind == "differs":
            return f"differs by {x}{unit} {ci}"
        if self.kind == "equivalent":
            return f"equivalent within +-{self.margin * scale:.{digits}f}{unit} ({x} {ci})"
        if self.more_deals >= MAX_DEALS_ADVICE:
            return (f"undecided: {x}{unit} {ci}; the change lies so close to the margin that "
                    f"over {MAX_DEALS_ADVICE:,} more deals would be needed to decide it")
        return (f"undecided: {x}{unit} {ci}; about {self.more_deals:,} more deals would "
                "decide it")


def verdict(est: Estimate, margin: float = DEFAULT_MARGIN, center: float = 0.0,
            alpha: float = 0.05, p_difference: float | None = None) -> Verdict:
    """The verdict on a change (or on a rate against ``center``).

    ``differs`` when the change is significant at ``alpha`` (``p_difference``, e.g. after a
    multiplicity correction, or the t-test of ``est``); ``equivalent`` when the two one-sided
    tests at ``alpha`` put it within ``center +- margin``; otherwise ``undecided``, with the
    number of further deals a power calculation (80%) gives at the observed change and spread:
    for showing the difference when the change lies outside the margin, for showing
    equivalence when it lies inside."""
    if est.deals == 0 or not np.isfinite(est.value):
        return Verdict("undefined", est, margin, center, NAN, NAN)
    p_diff = difference_pvalue(est, center) if p_difference is None else p_difference
    p_eq = tost_pvalue(est, margin, center)
    if np.isfinite(p_diff) and p_diff < alpha:
        return Verdict("differs", est, margin, center, p_diff, p_eq)
    if np.isfinite(p_eq) and p_eq < alpha:
        return Verdict("equivalent", est, margin, center, p_diff, p_eq)
    sd = est.sd if np.isfinite(est.sd) and est.sd > 0 else 0.5
    gap = abs(est.value - center) if np.isfinite(est.value) else 0.0
    # on the margin (0.5 - 0.4 is 0.0999... against a margin of 0.1) the sample size for
    # equivalence diverges; count it as outside, where showing the difference is finite
    if gap >= margin - 1e-9:
        need = deals_for_difference(sd, gap, alpha)
    else:
        need = deals_for_equivalence(sd, margin, gap, alpha)
    return Verdict("undecided", est, margin, center, p_diff, p_eq,
                   min(MAX_DEALS_ADVICE, max(1, need - est.deals)))


# --- multiplicity --------------------------------------------------------------------------------
def _adjust(pvalues: np.ndarray | Sequence[float], method: str) -> np.ndarray:
    # imported here: statsmodels.stats.multitest imports scipy.stats (0.4 s), which the
    # run summary, the one statistic every `patchsim run` computes, does not need
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method=method)[1]
    return out


def holm(pvalues: np.ndarray | Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values (family-wise error), NaN kept: for the primary metric."""
    return _adjust(pvalues, "holm")


def benjamini_hochberg(pvalues: np.ndarray | Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), NaN kept: for the
    exploratory secondary metrics."""
    return _adjust(pvalues, "fdr_bh")


# --- sequential test -----------------------------------------------------------------------------
PASS, FAIL, CONTINUE = "pass", "fail", "continue"


@dataclass(frozen=True)
class BandTest:
    """A sequential test of whether the mean of per-deal outcomes lies inside ``[low, high]``
    (pass) or outside it (fail), looked at after every deal if need be.

    For each finite edge a generalised SPRT (the log-likelihood ratio of a normal model with
    the variance estimated from the data, as engine-testing frameworks use on game outcomes)
    tests "the mean is on the edge" against "the mean is ``resolution`` inside it" (for a
    two-sided band the default resolution reaches the centre). Pass needs every edge's test
    to accept the inside; fail needs one to accept its edge. Wald's bounds give: a false pass
    at most about ``alpha`` when the true mean is on an edge, a false fail at most about
    ``beta`` when it is ``resolution`` inside every edge (``beta`` is split between the
    edges). One-sided bands (an infinite edge) need a ``resolution``."""

    low: float
    high: float
    alpha: float = 0.05
    beta: float = 0.05
    min_deals: int = 10
    resolution: float | None = None

    @classmethod
    def around(cls, center: float, tolerance: float, **kw: float) -> BandTest:
        """The band ``center +- tolerance``."""
        return cls(center - tolerance, center + tolerance, **kw)

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"band [{self.low}, {self.high}]: low must be below high")
        finite = math.isfinite(self.low) + math.isfinite(self.high)
        if finite == 0:
            raise ValueError("band: at least one edge must be finite")
        if finite == 1 and not (self.resolution and self.resolution > 0):
            raise ValueError("a one-sided band needs a resolution > 0")

    @property
    def step(self) -> float:
        """How far inside an edge the alternative lies."""
        if self.resolution:
            return self.resolution
        return (self.high - self.low) / 2

    @property
    def edges(self) -> list[tuple[float, float]]:
        """(edge, the alternative inside it) for each finite edge."""
        out = []
        if math.isfinite(self.low):
            out.append((self.low, self.low + self.step))
        if math.isfinite(self.high):
            out.append((self.high, self.high - self.step))
        return out

    @property
    def bounds(self) -> tuple[float, float]:
        b_edge = self.beta / len(self.edges)
        return math.log(b_edge / (1 - self.alpha)), math.log((1 - b_edge) / self.alpha)

    def _llrs(self, n: np.ndarray, total: np.ndarray, squares: np.ndarray
              ) -> list[np.ndarray]:
        """Log-likelihood ratios (inside vs edge) per finite edge, from the count, sum and
        sum of squares of the outcomes (vectorised over looks)."""
        n = np.maximum(n, 1)
        xbar = total / n
        var = squares / n - xbar**2  # the MLE of the variance, as in the GSPRT
        # a floor keeps a run of identical outcomes from giving an infinite ratio
        var = np.maximum(var, max(0.25 * self.step**2, 1e-12))
        # H1: mean mu1 (inside) against H0: mean mu0 (the edge)
        return [n * (mu1 - mu0) * (xbar - (mu0 + mu1) / 2) / var for mu0, mu1 in self.edges]

    def llrs(self, x: np.ndarray | Sequence[float]) -> list[float]:
        """Log-likelihood ratios of the outcomes ``x``, one per finite edge."""
        v = _clean(x)
        return [float(r[0]) for r in self._llrs(np.array([len(v)]), np.array([v.sum()]),
                                                np.array([(v**2).sum()]))]

    def decide(self, x: np.ndarray | Sequence[float]) -> str:
        """The decision after the deals ``x`` (per-deal outcomes, in play order)."""
        v = _clean(x)
        return self.first_decision(v, [len(v)])[0]

    def first_decision(self, x: np.ndarray | Sequence[float],
                       looks: Sequence[int] | range) -> tuple[str, int]:
        """The first decision when looking after ``looks`` deals (increasing), and the number
        of deals it took; (``continue``, last look) if none is reached."""
        v = _clean(x)
        at = np.asarray([k for k in looks if k <= len(v)], dtype=np.int64)
        if len(at) == 0:
            return CONTINUE, 0
        total = np.concatenate([[0.0], np.cumsum(v)])[at]
        squares = np.concatenate([[0.0], np.cumsum(v**2)])[at]
        ratios = self._llrs(at.astype(float), total, squares)
        low, high = self.bounds
        ready = at >= self.min_deals
        fail = ready & np.logical_or.reduce([r <= low for r in ratios])
        passed = ready & np.logical_and.reduce([r >= high for r in ratios])
        done = np.flatnonzero(fail | passed)
        if len(done) == 0:
            return CONTINUE, int(at[-1])
        i = int(done[0])
        return (FAIL if fail[i] else PASS), int(at[i])
