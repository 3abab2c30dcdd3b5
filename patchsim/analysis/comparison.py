"""One paired comparison: a variant against a base on the same deals, with an explicit
multiplicity family.

Every study that asks "variant vs base" (a sweep's variants, a comparison of two runs, the
levels of a skill table, the patches of a price study) ends in the same two steps, which live
here: the paired difference of per-deal values (:func:`estimators.paired_difference`; rates
get the weak prior of one imaginary deal at each end of -1..1) and the verdicts of the family
of questions asked together (:func:`estimators.verdicts`: equivalence within the margin
first, then a change beyond it, else undecided with the deals that would likely decide it).

The family is always named by the caller: ``"holm"`` (family-wise error, for a primary
question asked of several variants, pairings or levels), ``"bh"`` (false discovery rate, for
exploratory metrics) or ``"none"`` (one question). It covers every row of one call;
:func:`decide` adjusts a list of changes from several calls together.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.metrics import Metric, diff_bounds, metric

Margin = float | Mapping[str, float] | None
VERDICT_LEVEL = est.VERDICT_LEVEL  # a change's interval, as its verdict reads it

# the columns :func:`decide` adds, in order
VERDICT_COLUMNS = ("p_adjusted", "p_equivalent", "p_beyond", "verdict_kind", "verdict",
                   "more_deals", "negligible", "family", "verdict_lo", "verdict_hi",
                   "verdict_level")


def verdict_text(v: est.Verdict, m: Metric | str) -> str:
    """A verdict in percentage points for rates and shares, in the metric's unit otherwise
    (two decimals)."""
    kind = m if isinstance(m, str) else m.kind
    if kind in ("rate", "share"):
        return v.text(100.0, " points", 1)
    return v.text(1.0, f" {kind}", 2)


def decide(changes: Sequence[est.Estimate], margins: float | Sequence[float] | np.ndarray,
           *, family: est.Family, alpha: float = est.ALPHA, center: float = 0.0
           ) -> list[est.Verdict]:
    """The verdicts of one family of changes (see the module doc); a thin, named entry to
    :func:`estimators.verdicts`, so that every study states its family."""
    return est.verdicts(list(changes), margins, center, alpha, family=family)


def _margin_of(m: Metric, margin: Margin) -> float:
    if margin is None:
        return m.default_margin
    if isinstance(margin, Mapping):
        return float(margin.get(m.name, margin.get(m.label, m.default_margin)))
    return float(margin)


def paired_comparison(base_deals: pd.DataFrame, variant_deals: pd.DataFrame,
                      metrics: Sequence[str], *, margin: Margin = None,
                      family: est.Family | Mapping[str, est.Family] = "holm",
                      alpha: float = est.ALPHA, level: float = VERDICT_LEVEL,
                      text: Callable[[est.Verdict, Metric], str] | None = None,
                      unpaired: bool = False, skip_empty: bool = False,
                      ) -> pd.DataFrame:
    """The variant minus the base, paired by deal, for each metric.

    ``base_deals`` and ``variant_deals``: one row per deal (``deal`` column, and ``pairing``
    when there are several pairings; the variant may hold several variants in a ``ruleset``
    column), with a column per metric (:func:`metrics.deal_metrics` gives them). ``margin``:
    one equivalence margin for every metric, a map metric -> margin, or None (each metric's
    ``default_margin``); a margin of 0 asks only "does it differ?". ``family``: the
    multiplicity adjustment over all rows of this call ("holm", "bh" or "none"), or a map
    metric -> family, each family then adjusted over its own rows (a primary question and
    exploratory ones asked in one call). ``unpaired``: also the interval the same per-deal
    values would give had the two not shared deals (``lo_unpaired``, ``hi_unpaired``: for
    contrast only) and the correlation of the two sides over deals (``corr``).
    ``skip_empty``: leave out a (group, metric) with no deal both sides measured (else it
    is a row of zero deals, counted in its family).

    One row per (variant, pairing, metric) present: ``base`` and ``variant`` (means over the
    shared deals), the change ``diff`` with ``se``, ``sd``, ``lo``, ``hi`` (interval at
    ``level``), ``deals``, ``p`` (the raw t-test of no change), then the adjusted
    ``p_adjusted`` (no change), ``p_equivalent``, ``p_beyond``, ``verdict_kind``, ``verdict``
    (``text(verdict, metric)``, by default :func:`verdict_text`), ``more_deals``,
    ``negligible``, ``family``, ``margin``, and the interval the verdict is read off and
    prints (``verdict_lo``, ``verdict_hi`` at ``verdict_level``: the family's adjusted
    level; the 95% ``lo``, ``hi`` for a family of one)."""
    ms = [metric(m) for m in metrics]
    family_of = _family_map(family, ms)
    keys = [k for k in ("pairing", "deal") if k in base_deals.columns
            and k in variant_deals.columns]
    if "deal" not in keys:
        raise ValueError("paired_comparison: both tables need a deal column")
    outer = [k for k in ("ruleset",) if k in variant_deals.columns]
    groups = ([k for k in keys if k != "deal"])
    ref = base_deals.set_index(keys)
    rows: list[dict] = []
    changes: list[est.Estimate] = []
    by = [*outer, *groups]
    parts = variant_deals.groupby(by, sort=False) if by else [((), variant_deals)]
    for key, grp in parts:
        key = key if isinstance(key, tuple) else (key,)
        joined = grp.set_index(keys).join(ref.add_suffix("_base"), how="inner")
        for m in ms:
            col = m.name
            if col not in grp.columns or f"{col}_base" not in joined.columns:
                continue
            b = joined[f"{col}_base"].to_numpy(dtype=float)
            v = joined[col].to_numpy(dtype=float)
            ok = np.isfinite(b) & np.isfinite(v)
            if skip_empty and not ok.any():
                continue
            d = est.paired_difference(b, v, level, diff_bounds(m.name))
            row = {**dict(zip(by, key, strict=True)), "metric": m.name, "kind": m.kind,
                   "deals": d.deals,
                   "base": float(b[ok].mean()) if ok.any() else np.nan,
                   "variant": float(v[ok].mean()) if ok.any() else np.nan,
                   "diff": d.value, "se": d.se, "sd": d.sd, "lo": d.lo, "hi": d.hi,
                   "p": est.difference_pvalue(d), "margin": _margin_of(m, margin)}
            if unpaired:
                row.update(_unpaired(b[ok], v[ok], d, level))
            rows.append(row)
            changes.append(d)
    out = pd.DataFrame(rows)
    if not rows:
        return out
    by_name = {m.name: m for m in ms}
    say = text or verdict_text
    write_verdicts(out, changes, [family_of[n] for n in out["metric"]], alpha,
                   lambda v, i: say(v, by_name[out["metric"].iat[i]]))
    return out


def _family_map(family: est.Family | Mapping[str, est.Family], ms: Sequence[Metric]
                ) -> dict[str, est.Family]:
    if isinstance(family, str):
        return {m.name: family for m in ms}
    missing = [m.name for m in ms if m.name not in family]
    if missing:
        raise ValueError(f"paired_comparison: no family for {', '.join(missing)}")
    return {m.name: family[m.name] for m in ms}


def _unpaired(b: np.ndarray, v: np.ndarray, d: est.Estimate, level: float
              ) -> dict[str, float]:
    """The interval the same per-deal values would give had the two sides not shared deals
    (their standard errors combined as independent), and their correlation over deals."""
    lo = hi = corr = np.nan
    if d.deals >= 2:
        sb, sv = est.mean_estimate(b, level).se, est.mean_estimate(v, level).se
        if np.isfinite(sb) and np.isfinite(sv):
            half = float(est.t_ppf(0.5 + level / 2, d.deals - 1)) * math.hypot(sb, sv)
            lo, hi = d.value - half, d.value + half
        if b.std() > 0 and v.std() > 0:
            corr = float(np.corrcoef(b, v)[0, 1])
    return {"lo_unpaired": lo, "hi_unpaired": hi, "corr": corr}


def write_verdicts(out: pd.DataFrame, changes: Sequence[est.Estimate],
                   families: Sequence[est.Family], alpha: float,
                   say: Callable[[est.Verdict, int], str]) -> None:
    """Decide the rows of ``out`` (one change each, its margin in ``margin``) family by
    family (``families``: each row's) and write :data:`VERDICT_COLUMNS` into it, in place;
    ``say(verdict, row)`` words a verdict. The one place a table of changes gets verdicts:
    :func:`paired_comparison` and :func:`redecide` (a comparison of runs) both end here."""
    margins = out["margin"].to_numpy(dtype=float)
    found: list[est.Verdict | None] = [None] * len(out)
    for fam in dict.fromkeys(families):
        idx = [i for i, f in enumerate(families) if f == fam]
        for i, v in zip(idx, decide([changes[i] for i in idx], margins[idx], family=fam,
                                    alpha=alpha), strict=True):
            found[i] = v
    verdicts = [v for v in found if v is not None]
    out["p_adjusted"] = [v.p_difference for v in verdicts]
    out["p_equivalent"] = [v.p_equivalence for v in verdicts]
    out["p_beyond"] = [v.p_beyond for v in verdicts]
    out["verdict_kind"] = [v.kind for v in verdicts]
    out["verdict"] = [say(v, i) for i, v in enumerate(verdicts)]
    out["more_deals"] = [v.more_deals for v in verdicts]
    out["negligible"] = [v.negligible for v in verdicts]
    out["family"] = list(families)
    # the interval each verdict is read off and prints: its family's adjusted level
    out["verdict_lo"] = [v.interval.lo for v in verdicts]
    out["verdict_hi"] = [v.interval.hi for v in verdicts]
    out["verdict_level"] = [v.interval.level for v in verdicts]


def change_of(row: Any, level: float,
              bounds: tuple[float, float] | None | str = "metric") -> est.Estimate:
    """The change a row of a comparison table holds (``diff``, ``se``, ``lo``, ``hi``,
    ``deals``, ``sd``), bounded as its metric (``bounds="metric"``: by ``metric_name``, else
    ``metric``) or by the ``bounds`` given."""
    if isinstance(bounds, str):
        bounds = diff_bounds(getattr(row, "metric_name", None) or row.metric)
    return est.Estimate(row.diff, row.se, row.lo, row.hi, int(row.deals), row.sd, level,
                        bounds)


def redecide(frames: Sequence[pd.DataFrame], alpha: float, level: float,
             say: Callable[[est.Verdict, pd.Series], str],
             bounds: Callable[[Any], tuple[float, float] | None] | None = None) -> None:
    """Decide the rows of several comparison tables together (in place), each row in the
    family its ``family`` column names, against its ``margin``: with several variants
    against one reference, a family per variant is not enough. ``bounds``: a row's bounds
    (default: its metric's)."""
    cat = pd.concat(list(frames), ignore_index=True)
    changes = [change_of(r, level) if bounds is None else change_of(r, level, bounds(r))
               for r in cat.itertuples(index=False)]
    write_verdicts(cat, changes, list(cat["family"]), alpha,
                   lambda v, i: say(v, cat.iloc[i]))
    start = 0
    for f in frames:
        part = cat.iloc[start:start + len(f)]
        for col in VERDICT_COLUMNS:
            f[col] = part[col].to_numpy()
        start += len(f)


# --- does the imbalance grow with skill? -------------------------------------------------------
def trend(kind: str, before: float, after: float, center: float = 0.5) -> str:
    """What a verdict on the change of the first-seat win rate (or edge, ``center`` 0) says
    about the imbalance: ``grows`` or ``shrinks`` (the distance from ``center``), ``changes
    side``, ``unchanged`` (equivalent within the margin) or ``undecided``."""
    if kind == "equivalent":
        return "unchanged"
    if kind != "differs":
        return "undecided"
    b, a = before - center, after - center
    if b * a < 0:
        return "changes side"
    return "grows" if abs(a) > abs(b) else "shrinks"


@dataclass(frozen=True)
class ImbalanceChange:
    """One answer to "does the imbalance grow with skill?": the paired change of the
    first-seat win rate from a weaker level to a stronger one, its verdict (adjusted over
    the family) and what that says about the imbalance (:func:`trend`)."""

    change: est.Estimate
    verdict: est.Verdict
    p: float  # the raw t-test of no change
    trend: str

    @property
    def grows(self) -> bool:
        return self.trend == "grows"


def imbalance_changes(pairs: Sequence[tuple[np.ndarray, np.ndarray]],
                      levels: Sequence[tuple[float, float]], *, margin: float,
                      center: float = 0.5, alpha: float = est.ALPHA,
                      family: est.Family = "holm",
                      ) -> list[ImbalanceChange]:
    """Does the first seat's imbalance change from one skill level to another? The one
    function the report's skill table and a sweep's skill flags both ask.

    ``pairs``: per question, the per-deal first-seat values (win rates, or edges with
    ``center`` 0) of the weaker and of the stronger level on the deals both played, aligned
    by deal; ``levels``: per question, the two levels' rates (or edges) the trend is read
    from. Each change is a paired difference over deals (rates: the weak prior of
    :func:`estimators.paired_difference`); the verdicts are decided together as one
    ``family`` (Holm: a growing imbalance is a claim about every level or variant at once)
    against ``margin``. A change inside the margin is "unchanged", one beyond it in the
    direction away from ``center`` "grows"."""
    changes = [est.paired_difference(a, b, VERDICT_LEVEL, est.RATE_DIFF_BOUNDS)
               for a, b in pairs]
    found = decide(changes, margin, family=family, alpha=alpha)
    return [ImbalanceChange(c, v, est.difference_pvalue(c), trend(v.kind, lo, hi, center))
            for c, v, (lo, hi) in zip(changes, found, levels, strict=True)]


__all__ = ["VERDICT_COLUMNS", "ImbalanceChange", "change_of", "decide", "imbalance_changes",
           "paired_comparison", "redecide", "trend", "verdict_text", "write_verdicts"]
