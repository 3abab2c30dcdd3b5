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
- :func:`verdicts` (and :func:`verdict` for a question asked alone): the one verdict
  function every study calls, with an explicit multiplicity family (Holm, BH or none). Each
  verdict is read off the 95% interval of the change, equivalence first: "equivalent within
  +-m" (or "differs by X [a, b], within +-m: negligible" when the change is also non-zero),
  "differs by X [a, b], beyond +-m", or "undecided: about N more deals would likely decide
  it" (from a stable power calculation, capped by "too close to the margin to decide with any
  practical number of deals"). A non-significant test never reads as "no effect".
- :func:`deals_for_precision`, :func:`deals_for_difference`, :func:`deals_for_equivalence`:
  sample sizes for the designs the runner offers (seat-swapped deals; paired across rulesets).
- :class:`BandTest`: a sequential test in the style of the engine-testing frameworks (a
  generalised SPRT on deal outcomes with Wald's bounds from alpha and beta) of whether a
  metric lies inside a tolerance band or outside it.
- :func:`holm`, :func:`benjamini_hochberg`: multiplicity corrections (primary metric over the
  variants; secondary metrics labelled exploratory).
- :func:`anytime_estimate`: an anytime-valid interval (a confidence sequence) for a mean
  read after a sequential stop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
VERDICT_LEVEL = 0.95  # a verdict is decided by, and prints, the 95% interval of the change
FAMILIES = ("none", "holm", "bh")  # how a family of verdicts is adjusted for multiplicity
FAMILY_WORDS = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
SEQUENTIAL_ADVICE = (
    "Adding deals to a fixed-sample study and reading its verdict again raises its error "
    "rates (each look is another chance of a false verdict); to go on until the question is "
    "decided, run it as a sequential test with its own error spending (a check, or a run "
    "until decided), whose decisions and anytime-valid intervals keep their error rates "
    "however often they are looked at.")


def equivalence_pvalue(est: Estimate, margin: float, center: float = 0.0) -> float:
    """p-value that the mean lies within ``center +- margin``, on the scale of the verdict's
    95% interval: below 0.05 exactly when that interval lies inside the margin (the two
    one-sided tests at 2.5% each; twice :func:`tost_pvalue`, capped at 1)."""
    p = tost_pvalue(est, margin, center)
    return min(1.0, 2 * p) if np.isfinite(p) else NAN


def beyond_pvalue(est: Estimate, margin: float, center: float = 0.0) -> float:
    """p-value that the mean lies outside ``center +- margin`` (a minimum-effect test): below
    0.05 exactly when the 95% interval lies wholly above ``center + margin`` or wholly below
    ``center - margin``. With a margin of 0 it is the two-sided t-test against ``center``."""
    if est.deals < 2 or not np.isfinite(est.se):
        return NAN
    if est.se == 0:
        return 0.0 if abs(est.value - center) > margin else 1.0
    df = est.deals - 1
    above = t_sf((est.value - (center + margin)) / est.se, df)  # mean > center + margin
    below = t_cdf((est.value - (center - margin)) / est.se, df)  # mean < center - margin
    return float(min(1.0, 2 * min(above, below)))


@dataclass(frozen=True)
class Verdict:
    """The verdict on a change (or on a value against ``center``), read off the interval
    ``shown`` (the 95% interval ``estimate`` for a question asked alone; in a family, the
    interval at the family's adjusted level, see :func:`verdicts`).

    ``kind`` is one of

    - ``equivalent``: the shown interval lies within ``center +- margin`` (``nonzero`` when
      it also excludes ``center``: a real but negligible change);
    - ``differs``: the shown interval lies beyond the margin (with a margin of 0: excludes 0);
    - ``undecided``: neither (``nonzero`` when the shown interval excludes ``center`` but
      crosses an edge of the margin); ``more_deals`` says how many more deals would decide it
      with a chance of ``chance`` (about the power asked for), ``too_close`` that the change
      lies too near the margin (or no change) for any practical number, and then ``tried``
      more deals would decide it with a chance of ``chance``;
    - ``undefined``: no deal to measure the change on (a metric that does not apply, such as
      the first leather patch of a track without leather): more deals would not help.

    The p-values are the family-adjusted ones: ``p_difference`` (no change),
    ``p_equivalence`` (inside the margin), ``p_beyond`` (outside the margin); each is below
    alpha exactly when, with a family of one, the 95% interval shows it. ``family`` and
    ``family_size`` say how they were adjusted."""

    kind: str
    estimate: Estimate
    margin: float
    center: float
    p_difference: float
    p_equivalence: float
    more_deals: int = 0
    p_beyond: float = NAN
    nonzero: bool = False
    too_close: bool = False
    family: str = "none"
    family_size: int = 1
    shown: Estimate | None = None
    chance: float = NAN
    tried: int = 0

    @property
    def interval(self) -> Estimate:
        """The interval the verdict is read off and printed with."""
        return self.shown if self.shown is not None else self.estimate

    @property
    def negligible(self) -> bool:
        """A change shown to be non-zero and shown to lie within the margin."""
        return self.kind == "equivalent" and self.nonzero

    def adjustment(self) -> str:
        """'Holm over 5' / 'Benjamini-Hochberg over 12', or '' for a family of one."""
        if self.family == "none" or self.family_size <= 1:
            return ""
        return f"{FAMILY_WORDS[self.family]} over {self.family_size}"

    def tag(self) -> str:
        """'Holm over 8: 99.4% interval', naming the level of the printed interval; '' for a
        question asked alone (its interval is the 95% one)."""
        adj = self.adjustment()
        if not adj:
            return ""
        return f"{adj}: {level_words(self.interval.level)} interval"

    def text(self, scale: float = 100.0, unit: str = " points", digits: int = 1) -> str:
        e = self.interval
        if self.kind == "undefined":
            return "not defined: no deal where the metric applies"
        x = f"{(e.value - self.center) * scale:+.{digits}f}"
        lo, hi = (e.lo - self.center) * scale, (e.hi - self.center) * scale
        ci = f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"
        m = f"+-{self.margin * scale:.{digits}f}"
        tag = f" ({self.tag()})" if self.tag() else ""
        if self.kind == "differs":
            beyond = f", beyond {m}{unit}" if self.margin > 0 else ""
            return f"differs by {x}{unit} {ci}{beyond}{tag}"
        if self.kind == "equivalent":
            if self.nonzero:
                return f"differs by {x}{unit} {ci}, within {m}{unit}: negligible{tag}"
            return f"equivalent within {m}{unit} ({x} {ci}){tag}"
        if self.nonzero and self.margin > 0:
            head = (f"undecided: differs from 0 by {x}{unit} {ci} but may lie within "
                    f"{m}{unit}{tag}")
        else:
            head = f"undecided: {x}{unit} {ci}{tag}"
        return head + "; " + self.advice()

    def advice(self) -> str:
        """What more deals would do for an undecided verdict, in words."""
        if self.too_close:
            near = "the margin" if self.margin > 0 else "no change"
            buys = (f": {self.tried:,} more deals would decide it with a chance of about "
                    f"{_percent(self.chance)}" if self.tried > 0 and np.isfinite(self.chance)
                    else "")
            return (f"the change is too close to {near} to decide with a practical number of "
                    f"deals{buys}; a sequential test (a check, or a run until decided) goes "
                    "on until it is decided")
        return (f"about {self.more_deals:,} more deals would likely decide it (a chance of "
                f"about {_percent(self.chance)} on the data so far)")


def _percent(p: float) -> str:
    return f"{100 * p:.0f}%" if np.isfinite(p) else "—"


def level_words(level: float) -> str:
    """'95%', '99.4%', '99.95%': enough digits that a level below 100% never reads 100%."""
    for digits in (0, 1, 2, 3):
        text = f"{100 * level:.{digits}f}"
        if float(text) < 100 and abs(float(text) - 100 * level) < 0.05:
            return f"{text}%"
    return f"{100 * level:.4f}%"


def _as_list(x: float | Sequence[float] | np.ndarray | None, n: int) -> list[float | None]:
    if x is None or np.ndim(x) == 0:
        return [x] * n  # type: ignore[list-item]
    out = list(x)  # type: ignore[arg-type]
    if len(out) != n:
        raise ValueError(f"verdicts: {len(out)} values for {n} estimates")
    return out


def decision_levels(pvalues: np.ndarray | Sequence[float], family: str,
                    alpha: float = 0.05) -> np.ndarray:
    """The level each question of a family is tested at by ``family``'s procedure: a
    rejected question's raw p-value lies below it, so the interval at one minus it shows the
    claim. Holm (step-down): alpha / (k - r + 1) for the question of rank r that is
    rejected; Benjamini-Hochberg (step-up): R alpha / k for every rejected question (the
    false-coverage-rate level of Benjamini and Yekutieli); a question not rejected gets
    alpha / k (Bonferroni), at which its interval shows nothing, since both procedures
    reject whatever Bonferroni does. NaN for a NaN p-value; ``none``: alpha."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    k = len(ok)
    if k == 0:
        return out
    if family == "none":
        out[ok] = alpha
        return out
    out[ok] = alpha / k
    order = ok[np.argsort(p[ok], kind="stable")]
    if family == "holm":
        for r, i in enumerate(order, start=1):
            step = alpha / (k - r + 1)
            if p[i] > step:
                break  # Holm stops at its first acceptance
            out[i] = step
    else:
        below = np.flatnonzero(p[order] <= np.arange(1, k + 1) * alpha / k)
        if len(below):
            rejected = int(below[-1]) + 1
            out[order[:rejected]] = rejected * alpha / k
    return out


def verdicts(estimates: Sequence[Estimate],
             margin: float | Sequence[float] | np.ndarray = DEFAULT_MARGIN,
             center: float | Sequence[float] | np.ndarray = 0.0, alpha: float = 0.05, *,
             family: str = "holm", power: float = 0.8) -> list[Verdict]:
    """The verdicts of a family of questions asked together (the variants of a sweep, the
    levels of a skill table, the patches of a price study, the pairings and comparisons of a
    report): the one function every study calls.

    Each estimate is a change (or a value against its ``center``) with its 95% interval; its
    three p-values (no change, within the margin, beyond the margin; see :class:`Verdict`)
    are adjusted over the family, each kind separately, by ``family``: ``holm`` (family-wise
    error: a primary question asked of several variants, levels or patches), ``bh`` (false
    discovery rate: exploratory metrics) or ``none`` (one question). Equivalence comes
    first: a change inside the margin is ``equivalent`` (and negligible when also non-zero)
    however significant, and ``differs`` needs the change beyond the margin (or, with a
    margin of 0, away from 0). ``margin`` and ``center`` may be one value for all or one per
    estimate.

    Every verdict is read off the interval it prints (``Verdict.shown``): in a family, the
    interval at the level its claim was tested at (:func:`decision_levels`: a claim of
    equivalence at its equivalence test's level, of a change beyond the margin at that
    test's), and for an undecided question the Bonferroni level 1 - alpha / k, at which it
    shows neither claim. "Non-zero" is said exactly when that interval excludes ``center``.
    So no row's words contradict its own printed interval. An undecided verdict gets the
    number of further deals that would decide it with ``power`` (see
    :func:`decision_advice`), at alpha / k in a family of k."""
    if family not in FAMILIES:
        raise ValueError(f"family: {family!r} is not one of {', '.join(FAMILIES)}")
    n = len(estimates)
    margins = [float(m) for m in _as_list(margin, n)]  # type: ignore[arg-type]
    centers = [float(c) for c in _as_list(center, n)]  # type: ignore[arg-type]
    raw_diff = np.array([difference_pvalue(e, c)
                         for e, c in zip(estimates, centers, strict=True)])
    raw_eq = np.array([equivalence_pvalue(e, m, c) if m > 0 else NAN
                       for e, m, c in zip(estimates, margins, centers, strict=True)])
    raw_out = np.array([beyond_pvalue(e, m, c) if m > 0 else NAN
                        for e, m, c in zip(estimates, margins, centers, strict=True)])
    p_diff, p_eq, p_out = raw_diff, raw_eq, raw_out
    if family != "none":
        adjust = holm if family == "holm" else benjamini_hochberg
        p_diff, p_eq, p_out = adjust(raw_diff), adjust(raw_eq), adjust(raw_out)
    size = int(np.isfinite(p_diff).sum()) if family != "none" else 1
    a_diff, a_eq, a_out = (decision_levels(raw, family, alpha)
                           for raw in (raw_diff, raw_eq, raw_out))
    out = []
    for k, e in enumerate(estimates):
        m, c = margins[k], centers[k]
        if e.deals == 0 or not np.isfinite(e.value):
            out.append(Verdict("undefined", e, m, c, NAN, NAN, family=family,
                               family_size=size))
            continue
        if m > 0 and np.isfinite(p_eq[k]) and p_eq[k] < alpha:
            kind, a = "equivalent", a_eq[k]
        elif m > 0 and np.isfinite(p_out[k]) and p_out[k] < alpha:
            kind, a = "differs", a_out[k]
        elif m <= 0 and np.isfinite(p_diff[k]) and p_diff[k] < alpha:
            kind, a = "differs", a_diff[k]
        else:
            kind, a = "undecided", alpha / max(1, size)
        shown = at_level(e, 1 - a) if np.isfinite(a) else e
        # "non-zero" is what the printed interval shows, not a test the reader cannot see
        nonzero = bool(shown.lo > c or shown.hi < c)
        advice = Advice()
        if kind == "undecided":
            # in a family the claim must pass its adjusted test: plan at alpha / k, the
            # level Holm holds its hardest claim to (conservative for the others)
            advice = decision_advice(e, m, c, alpha / max(1, size), power)
        out.append(Verdict(kind, e, m, c, float(p_diff[k]), float(p_eq[k]), advice.deals,
                           float(p_out[k]), nonzero, advice.too_close, family, size, shown,
                           advice.chance, advice.tried))
    return out


def verdict(est: Estimate, margin: float = DEFAULT_MARGIN, center: float = 0.0,
            alpha: float = 0.05) -> Verdict:
    """The verdict on one question asked alone: :func:`verdicts` with a family of one."""
    return verdicts([est], margin, center, alpha, family="none")[0]


# --- how many more deals -------------------------------------------------------------------------
TRY_FACTOR = 4  # too close to decide: the chance quoted is that of 4 times the deals played
NEAR = 1.0  # standard errors from an edge within which a change is too close to decide


@dataclass(frozen=True)
class Advice:
    """What more deals would do for an undecided verdict: ``deals`` more would decide it
    with a chance of ``chance``; or ``too_close``, and then ``tried`` more would decide it
    with a chance of ``chance``."""

    deals: int = 0
    chance: float = NAN
    too_close: bool = False
    tried: int = 0


def decide_chance(est: Estimate, margin: float, more: np.ndarray | Sequence[int] | int,
                  center: float = 0.0, alpha: float = 0.05) -> np.ndarray:
    """The chance, on the data so far, that ``more`` further deals decide the verdict (either
    way: equivalent or beyond the margin; with a margin of 0, away from 0).

    A predictive probability: the true change taken as the observed one give or take its
    standard error (a flat prior), the final estimate over all the deals then lies about the
    observed change with variance se^2 * more / (deals + more), and its interval at 1 -
    alpha has half-width z se sqrt(deals / (deals + more)). It is continuous in the observed
    change (0 and the margin included), and it is the share of studies that such a plan
    decides when the truths are spread over the changes the data allow (bench_verdicts.py)."""
    extra = np.asarray(more, dtype=float)
    n = max(est.deals, 1)
    se = est.se if np.isfinite(est.se) and est.se > 0 else 0.5 / math.sqrt(n)
    d = est.value - center
    f = extra / (n + extra)
    final = se * np.sqrt(1 - f)  # the final standard error
    spread = np.maximum(se * np.sqrt(f), 1e-300)  # of the final estimate about d
    z = z_quantile(1 - alpha / 2)
    edge = z * final
    if margin > 0:
        inside = np.where(margin > edge, special.ndtr((margin - edge - d) / spread)
                          - special.ndtr((-margin + edge - d) / spread), 0.0)
        beyond = (special.ndtr((d - margin - edge) / spread)
                  + special.ndtr((-d - margin - edge) / spread))
        return np.clip(inside + beyond, 0.0, 1.0)
    return np.clip(special.ndtr((d - edge) / spread) + special.ndtr((-d - edge) / spread),
                   0.0, 1.0)


def decision_advice(est: Estimate, margin: float, center: float = 0.0, alpha: float = 0.05,
                    power: float = 0.8) -> Advice:
    """How many more deals would decide an undecided verdict with a chance of ``power``
    (:func:`decide_chance`), or that the change is too close to decide.

    Too close: the observed change lies within one standard error of an edge of the margin
    (of 0 without a margin) while the margin is wider than a standard error, so the data
    cannot tell on which side of the edge the change lies and no fixed number of deals can
    promise a decision (a true change on the edge is never decided); or more than
    MAX_DEALS_ADVICE deals in all would be needed. Then ``tried`` = TRY_FACTOR times the
    deals played, with its chance. The figure is continuous in the observed change."""
    n = max(est.deals, 1)
    se = est.se if np.isfinite(est.se) and est.se > 0 else 0.5 / math.sqrt(n)
    gap = abs(abs(est.value - center) - margin)
    tried = TRY_FACTOR * n
    if gap < NEAR * se and margin >= 0 and (margin > NEAR * se or margin == 0):
        return Advice(0, float(decide_chance(est, margin, tried, center, alpha)), True, tried)
    # the smallest number on a fine geometric grid, then exact by bisection
    grid = np.unique(np.geomspace(1, MAX_DEALS_ADVICE, 600).astype(np.int64))
    p = decide_chance(est, margin, grid, center, alpha)
    hit = np.flatnonzero(p >= power)
    if len(hit) == 0 or grid[hit[0]] + n > MAX_DEALS_ADVICE:
        return Advice(0, float(decide_chance(est, margin, tried, center, alpha)), True, tried)
    hi = int(grid[hit[0]])
    lo = int(grid[hit[0] - 1]) if hit[0] > 0 else 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decide_chance(est, margin, mid, center, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return Advice(hi, float(decide_chance(est, margin, hi, center, alpha)))


def more_deals_to_decide(est: Estimate, margin: float, center: float = 0.0,
                         alpha: float = 0.05, power: float = 0.8) -> tuple[int, bool]:
    """(more deals that would decide it with ``power``, too close to decide): the figures of
    :func:`decision_advice`."""
    a = decision_advice(est, margin, center, alpha, power)
    return a.deals, a.too_close


# --- multiplicity --------------------------------------------------------------------------------
def _adjust(pvalues: np.ndarray | Sequence[float], method: str) -> np.ndarray:
    """Holm (step-down) or Benjamini-Hochberg (step-up) adjusted p-values over the finite
    ones, NaN kept; the numbers of statsmodels' multipletests, computed here because it
    runs a garbage collection on every call (a quarter of a second in a large process, and
    a report adjusts many families)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    ranked = p[order]
    rank = np.arange(1, m + 1)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - rank + 1) * ranked))
    else:  # "fdr_bh"
        adj = np.minimum.accumulate(np.minimum(1.0, m / rank * ranked)[::-1])[::-1]
    out[order] = adj
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
    def around(cls, center: float, tolerance: float, **kw: Any) -> BandTest:
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


# --- intervals after a sequential stop -----------------------------------------------------------
def anytime_estimate(x: np.ndarray | Sequence[float], level: float = 0.95,
                     n0: int = 100) -> Estimate:
    """The mean of per-deal values with an anytime-valid interval (a confidence sequence):
    it covers the true mean at ``level`` simultaneously over every number of deals, so it
    keeps its coverage when the number of deals was chosen by looking at the data (a
    sequential test that stopped, a run stopped when decided), where the fixed-sample
    t-interval of :func:`mean_estimate` covers less.

    The normal-mixture boundary of Robbins (see Howard et al. 2021, "Time-uniform,
    nonparametric, nonasymptotic confidence sequences"), two-sided by a union of two
    one-sided sequences at (1 - level) / 2 each, with the per-deal spread estimated from the
    deals: ``|mean - mu| <= sqrt((n + n0) * sd^2 * log((n + n0) / (n0 * a^2))) / n`` with
    ``a = (1 - level) / 2``. ``n0`` sets where the sequence is tightest (about the deals at
    which it is expected to be read)."""
    v = _clean(x)
    n = len(v)
    if n < 2:
        return Estimate(float(v.mean()) if n else NAN, NAN, NAN, NAN, n, NAN, level)
    m, sd = float(v.mean()), float(v.std(ddof=1))
    a = (1 - level) / 2
    half = math.sqrt((n + n0) * sd**2 * math.log((n + n0) / (n0 * a**2))) / n
    return Estimate(m, sd / math.sqrt(n), m - half, m + half, n, sd, level)
