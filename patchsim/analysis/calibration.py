"""Calibration of a search's root value: does the value a search gives the first seat at
move 1 agree with how often the first seat wins? Per deal, the search's root value (its
expected reward for the seat to move, in [0, 1]) stands beside the first seat's win share in
that deal's games; the deal is the unit of every interval.

:func:`calibration_summary` gives the level's figures (mean root value, first-seat win rate,
their paired difference with its interval and the words for it); :func:`reliability_table`
groups the deals by root value (quantile bins) and gives each bin's mean root value beside
its first-seat win rate."""

from __future__ import annotations

import numpy as np
import pandas as pd

from patchsim.analysis.intervals import (
    RATE_DIFF_BOUNDS,
    WIN_BOUNDS,
    Estimate,
    mean_estimate,
    paired_difference,
)


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def agreement_words(diff: Estimate) -> str:
    """What the paired difference (win rate minus root value) says: "agrees" when its
    interval holds 0, else by how many points the root value is above or below the win rate,
    with the interval ("under by 12.0 [8.1, 15.9] points": the value is too low)."""
    if not np.isfinite(diff.lo):
        return "undecided (too few deals)"
    if diff.lo <= 0 <= diff.hi:
        return f"agrees: differs by {_points(diff.value)} [{_points(diff.lo)}, " \
               f"{_points(diff.hi)}] points"
    side = "under" if diff.value > 0 else "over"
    return (f"{side} by {100 * abs(diff.value):.1f} [{100 * min(abs(diff.lo), abs(diff.hi)):.1f},"
            f" {100 * max(abs(diff.lo), abs(diff.hi)):.1f}] points")


def per_deal(root_value: pd.Series, first_won: pd.Series, deal: pd.Series) -> pd.DataFrame:
    """One row per deal: its root value (the first of the deal's rows, the search being
    deterministic at move 1) and the first seat's win share over its games."""
    frame = pd.DataFrame({"deal": np.asarray(deal), "root_value": np.asarray(root_value, float),
                          "first_won": np.asarray(first_won, float)})
    return frame.groupby("deal", sort=True).agg(root_value=("root_value", "first"),
                                                first_won=("first_won", "mean"),
                                                games=("first_won", "size")).reset_index()


def calibration_summary(deals: pd.DataFrame) -> dict[str, object]:
    """The figures of one level from :func:`per_deal`'s table: the mean root value, the
    first seat's win rate and their paired difference (win rate minus value), each with its
    95% interval over deals, and the words for the difference."""
    value = mean_estimate(deals["root_value"].to_numpy(), bounds=WIN_BOUNDS)
    won = mean_estimate(deals["first_won"].to_numpy(), bounds=WIN_BOUNDS)
    diff = paired_difference(deals["root_value"].to_numpy(), deals["first_won"].to_numpy(),
                             bounds=RATE_DIFF_BOUNDS)
    return {"deals": int(len(deals)), "games": int(deals["games"].sum()),
            "root_value": value, "first_seat_wins": won, "difference": diff,
            "verdict": agreement_words(diff)}


def reliability_table(deals: pd.DataFrame, bins: int = 5) -> pd.DataFrame:
    """Deals in ``bins`` groups of about equal size by root value: per group the range and
    mean of the root value and the first seat's win rate with its 95% interval."""
    if bins < 1:
        raise ValueError(f"bins: expected at least 1, got {bins}")
    order = deals.sort_values("root_value", kind="stable").reset_index(drop=True)
    groups = np.array_split(np.arange(len(order)), min(bins, max(len(order), 1)))
    rows = []
    for idx in groups:
        if len(idx) == 0:
            continue
        part = order.iloc[idx]
        won = mean_estimate(part["first_won"].to_numpy(), bounds=WIN_BOUNDS)
        rows.append({"value_from": float(part["root_value"].min()),
                     "value_to": float(part["root_value"].max()),
                     "mean_value": float(part["root_value"].mean()),
                     "deals": len(part), "first_seat_wins": won.value,
                     "lo": won.lo, "hi": won.hi,
                     "agrees": bool(won.lo <= part["root_value"].mean() <= won.hi)})
    return pd.DataFrame(rows)
