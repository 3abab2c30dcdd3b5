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
from typing import Literal, get_args

import numpy as np
from scipy import special

from patchsim.analysis.defaults import ALPHA, DEFAULT_MARGIN, VERDICT_LEVEL
from patchsim.analysis.intervals import (
    MAX_DEALS_ADVICE,
    MIN_DEALS,
    NAN,
    RATE_DIFF_BOUNDS,
    WIN_BOUNDS,
    Estimate,
    at_level,
    deal_values,
    deals_for_difference,
    deals_for_equivalence,
    deals_for_precision,
    difference_pvalue,
    finite,
    mean_estimate,
    paired_difference,
    rate,
    simultaneous_level,
    t_cdf,
    t_intervals,
    t_ppf,
    t_sf,
    tost_pvalue,
    wilson_interval,
    z_quantile,
)
from patchsim.analysis.sequential import (
    CONTINUE,
    FAIL,
    PASS,
    BandTest,
    anytime_estimate,
)

# --- verdicts ------------------------------------------------------------------------------------
# how a family of verdicts is adjusted for multiplicity: none (one question), Holm
# (family-wise error), Benjamini-Hochberg (false discovery rate)
Family = Literal["none", "holm", "bh"]
# what a verdict says of a change (see Verdict)
VerdictKind = Literal["equivalent", "differs", "undecided", "undefined"]
FAMILIES: tuple[Family, ...] = get_args(Family)
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

    kind: VerdictKind
    estimate: Estimate
    margin: float
    center: float
    p_difference: float
    p_equivalence: float
    more_deals: int = 0
    p_beyond: float = NAN
    nonzero: bool = False
    too_close: bool = False
    family: Family = "none"
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


def decision_levels(pvalues: np.ndarray | Sequence[float], family: Family,
                    alpha: float = ALPHA) -> np.ndarray:
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
             center: float | Sequence[float] | np.ndarray = 0.0, alpha: float = ALPHA, *,
             family: Family = "holm", power: float = 0.8) -> list[Verdict]:
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
        kind: VerdictKind
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
            alpha: float = ALPHA) -> Verdict:
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
                  center: float = 0.0, alpha: float = ALPHA) -> np.ndarray:
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


def decision_advice(est: Estimate, margin: float, center: float = 0.0, alpha: float = ALPHA,
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
                         alpha: float = ALPHA, power: float = 0.8) -> tuple[int, bool]:
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


# the estimator layer's names, wherever they are defined (intervals, sequential, here)
__all__ = [
    "ALPHA", "Advice", "BandTest", "CONTINUE", "DEFAULT_MARGIN", "Estimate", "FAIL",
    "FAMILIES", "FAMILY_WORDS", "Family", "MAX_DEALS_ADVICE", "MIN_DEALS", "NAN", "NEAR",
    "PASS", "RATE_DIFF_BOUNDS", "SEQUENTIAL_ADVICE", "TRY_FACTOR", "VERDICT_LEVEL", "Verdict",
    "VerdictKind", "WIN_BOUNDS", "anytime_estimate", "at_level", "benjamini_hochberg",
    "beyond_pvalue", "deal_values", "deals_for_difference", "deals_for_equivalence",
    "deals_for_precision", "decide_chance", "decision_advice", "decision_levels",
    "difference_pvalue", "equivalence_pvalue", "finite", "holm", "level_words",
    "mean_estimate", "more_deals_to_decide", "paired_difference", "rate", "simultaneous_level",
    "t_cdf", "t_intervals", "t_ppf", "t_sf", "tost_pvalue", "verdict", "verdicts",
    "wilson_interval", "z_quantile",
]
