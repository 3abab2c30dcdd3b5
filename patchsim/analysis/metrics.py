"""Balance metrics per deal, and their estimates with intervals.

The unit of analysis is the deal: a seat-swapped pair of games (and, across rulesets, the same
deal under each ruleset). A metric is first averaged within each deal, then estimated over
deals with a t-interval; differences between rulesets are paired by deal (both from
:mod:`patchsim.analysis.estimators`). This is what makes the intervals honest (games of one
deal are not independent) and comparisons precise.

Rates (``RATE_METRICS``) and the first-seat edge get a weak prior in their standard error: it is
computed as if two more deals, one at 0 and one at 1 (for the edge: -0.5 and +0.5), had been
observed, so that a run in which every deal went the same way does not claim a zero-width
interval; the mean stays the data's mean, and the interval is clipped to the metric's range.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.tables import EventSummary, as_summary, take

METRICS: dict[str, str] = {
    "first_player_win": "share of games won by the player who moves first",
    "first_player_edge": "first-seat win share minus 50% (signed imbalance)",
    "mean_score": "mean final score over both seats",
    "score_margin": "mean absolute score difference",
    "score_sd": "spread of final scores (standard deviation within the deal)",
    "plies": "moves per game (leather placements included)",
    "passes": "passes per game",
    "bonus_rate": "share of games in which the 7x7 bonus was taken",
    "tie_break_rate": "share of games decided by the tie-break",
    "leather_useful": "share of placed leather patches that filled a one-square hole",
    "first_leather_useful": "share of games whose first leather patch filled a hole",
}

# Metrics that are shares of games (or of patches): their values lie in [0, 1].
RATE_METRICS: tuple[str, ...] = ("first_player_win", "bonus_rate", "tie_break_rate",
                                 "leather_useful", "first_leather_useful")

# The range of each bounded metric: the prior's two imaginary deals sit at its ends, and the
# interval is clipped to it. The edge is the first-seat win rate minus 0.5.
BOUNDS: dict[str, tuple[float, float]] = {**{m: (0.0, 1.0) for m in RATE_METRICS},
                                          "first_player_edge": (-0.5, 0.5)}


def deal_metrics(games: pd.DataFrame, events: pd.DataFrame | EventSummary | None = None,
                 ) -> pd.DataFrame:
    """One row per (ruleset, pairing, deal): every metric averaged over the deal's games.
    ``events``: the events table or its summary (:mod:`patchsim.analysis.tables`)."""
    keys = ["ruleset", "pairing", "deal"]
    g = games.copy(deep=False)  # copy-on-write: the new columns never reach ``games``
    g["first_player_win"] = (g["winner"] == 0).astype(float)
    g["first_player_edge"] = g["first_player_win"] - 0.5
    g["mean_score"] = (g["score0"] + g["score1"]) / 2.0
    g["score_margin"] = (g["score0"] - g["score1"]).abs().astype(float)
    g["score_sq"] = (g["score0"] ** 2 + g["score1"] ** 2) / 2.0
    g["plies"] = g["plies"].astype(float)
    g["passes"] = (g["passes0"] + g["passes1"]).astype(float)
    g["bonus_rate"] = (g["bonus0"] | g["bonus1"]).astype(float)
    g["tie_break_rate"] = g["tie_break"].astype(float)
    ev = as_summary(events, games)
    if ev is not None and ev.events:
        at = ev.rows(g["game_id"].to_numpy())
        g["leather_hits"] = take(ev.place_hits, at).astype(float)
        g["leather_placed"] = take(ev.place_count, at).astype(float)
        first = take(ev.first_hole, at, fill=-1)
        g["first_leather_useful"] = np.where(first >= 0, first, np.nan)
    else:
        g["leather_hits"] = np.nan
        g["leather_placed"] = np.nan
        g["first_leather_useful"] = np.nan
    cols = ["first_player_win", "first_player_edge", "mean_score", "score_margin", "score_sq",
            "plies", "passes", "bonus_rate", "tie_break_rate", "leather_hits",
            "leather_placed", "first_leather_useful"]
    d = g.groupby(keys, sort=False, observed=True)[cols].mean().reset_index()
    for k in ("ruleset", "pairing"):  # plain text, as from the file, whatever the games were
        if isinstance(d[k].dtype, pd.CategoricalDtype):
            d[k] = d[k].astype(str)
    d["score_sd"] = np.sqrt(np.maximum(d["score_sq"] - d["mean_score"] ** 2, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        d["leather_useful"] = d["leather_hits"] / d["leather_placed"]
    return d.drop(columns=["score_sq", "leather_hits", "leather_placed"])


def estimate(deals: pd.DataFrame, metrics: Sequence[str] = ("first_player_win",),
             by: Sequence[str] = ("ruleset", "pairing"), level: float = 0.95) -> pd.DataFrame:
    """Mean of each metric over deals with its standard error and t-interval (for rates and
    the first-seat edge: with the weak prior of two imaginary deals at the bounds, clipped)."""
    rows = []
    for key, grp in deals.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            e = est.mean_estimate(grp[m].to_numpy(dtype=float), level, BOUNDS.get(m))
            rows.append({**dict(zip(by, key, strict=True)), "metric": m, "mean": e.value,
                         "se": e.se, "lo": e.lo, "hi": e.hi, "deals": e.deals})
    return pd.DataFrame(rows)


def paired_differences(deals: pd.DataFrame, base: str,
                       metrics: Sequence[str] = ("first_player_win",), level: float = 0.95,
                       ) -> pd.DataFrame:
    """Each ruleset minus ``base``, paired by (pairing, deal): mean difference, t-interval,
    p-value of a paired t-test (:func:`estimators.paired_difference`,
    :func:`estimators.difference_pvalue`), and Holm-adjusted p-values over all rows."""
    rows = []
    ref = deals[deals["ruleset"] == base].set_index(["pairing", "deal"])
    for ruleset, grp in deals[deals["ruleset"] != base].groupby("ruleset", sort=False):
        joined = grp.set_index(["pairing", "deal"]).join(ref.add_suffix("_base"),
                                                          how="inner")
        for pairing, pj in joined.groupby(level=0, sort=False):
            for m in metrics:
                d = est.paired_difference(pj[f"{m}_base"].to_numpy(dtype=float),
                                          pj[m].to_numpy(dtype=float), level,
                                          est.RATE_DIFF_BOUNDS if m in BOUNDS else None)
                rows.append({"ruleset": ruleset, "pairing": pairing, "metric": m,
                             "diff": d.value, "se": d.se, "lo": d.lo, "hi": d.hi,
                             "deals": d.deals, "p": est.difference_pvalue(d)})
    out = pd.DataFrame(rows)
    if len(out):
        out["p_holm"] = est.holm(out["p"])
    return out

