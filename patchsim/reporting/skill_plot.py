"""The skill trace's figure: the balance metric against the ladder's cumulative Elo, with its
95% band, and beside it what each level costs (games per second), so that a designer can
choose the level a study needs.

It takes the trace's own tables (:func:`patchsim.analysis.skill.level_table` and
:func:`patchsim.analysis.skill.duel_table`), the numbers the trace's text prints.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from patchsim.analysis.defaults import DEFAULT_MARGIN
from patchsim.analysis.skill import LEVEL_METRICS, RATE_LIKE
from patchsim.reporting.plots import SEAT_COLOURS, new_figure

BAND = "#9ecae1"


def short_label(bot: str, limit: int = 28) -> str:
    """A level's label on the axes: the budget of a search level, the spec otherwise."""
    for key in ("iterations=", "time_ms="):
        if key in bot:
            value = bot.split(key, 1)[1].split(",")[0].split(")")[0]
            return f"{value} ms" if key == "time_ms=" else f"{value} it."
    return bot if len(bot) <= limit else bot[: limit - 1] + "..."


def skill_figure(levels: pd.DataFrame, duels: pd.DataFrame,
                 metric: str = "first_player_win", margin: float | None = DEFAULT_MARGIN,
                 title: str = "") -> Figure:
    """Left: ``metric`` per level (95% band over deals) against the cumulative Elo of the
    level over the first (its band: the Elo interval); for a rate, the 50% line and the
    margin around it. Right: each level's cost in games per second (log scale), when the
    levels carry it. Without games between the levels (a run's own self-play) the levels
    stand in ladder order: their strength was not measured."""
    cost = (levels["games_per_s"].to_numpy(dtype=float) if "games_per_s" in levels
            else np.full(len(levels), np.nan))
    has_cost = bool(np.isfinite(cost).any())
    fig = new_figure(10 if has_cost else 7, 4.2)
    if has_cost:
        left, right = fig.subplots(1, 2, width_ratios=[2.2, 1])
    else:  # a run's own trace: nothing measured its cost, so no empty panel
        left, right = fig.subplots(1, 1), None
    cum = np.zeros(len(levels))
    cum_lo, cum_hi = np.zeros(len(levels)), np.zeros(len(levels))
    played = duels[duels["deals"] > 0] if "deals" in duels.columns else duels
    by_level = played.set_index("level") if len(played) else None
    measured = by_level is not None and all(
        lv in by_level.index for lv in levels["level"].iloc[1:])
    for k, lv in enumerate(levels["level"]):
        if measured and lv in by_level.index:  # type: ignore[union-attr]
            r = by_level.loc[lv]  # type: ignore[union-attr]
            cum[k], cum_lo[k], cum_hi[k] = r["cum_elo"], r["cum_elo_lo"], r["cum_elo_hi"]
    if not measured:
        # no games between the levels: their strength is unknown, so the levels stand in
        # ladder order instead of at a made-up Elo of zero
        cum = np.arange(len(levels), dtype=float)
        cum_lo, cum_hi = cum.copy(), cum.copy()
    scale = 100.0 if metric in RATE_LIKE else 1.0
    y = levels[metric].to_numpy(dtype=float) * scale
    lo = levels[f"{metric}_lo"].to_numpy(dtype=float) * scale
    hi = levels[f"{metric}_hi"].to_numpy(dtype=float) * scale
    left.fill_between(cum, lo, hi, color=BAND, alpha=0.5, lw=0, label="95% interval")
    left.plot(cum, y, "o-", color=SEAT_COLOURS[0], label=LEVEL_METRICS[metric][0])
    # the strength's own uncertainty: horizontal bars from the cumulative Elo's interval
    left.errorbar(cum, y, xerr=np.vstack([cum - cum_lo, cum_hi - cum]).clip(min=0),
                  fmt="none", ecolor="#888", lw=1, capsize=2)
    for x, yy, bot in zip(cum, y, levels["bot"], strict=True):
        left.annotate(short_label(str(bot)), (x, yy), textcoords="offset points",
                      xytext=(4, 6), fontsize=8)
    if metric == "first_player_win":
        left.axhline(50, color="#444", lw=0.8)
        if margin:
            left.axhspan(50 - margin * 100, 50 + margin * 100, color="#ddd", alpha=0.6,
                         lw=0, label=f"50% +- {margin * 100:g}")
    if measured:
        left.set_xlabel("strength: cumulative Elo over the first level")
    else:
        left.set_xticks(cum, [short_label(str(b)) for b in levels["bot"]], fontsize=8)
        left.set_xlabel("ladder level (strength not measured: no games between the levels)")
    unit = " (%)" if scale == 100 else ""
    left.set_ylabel(LEVEL_METRICS[metric][0] + unit)
    left.legend(fontsize=8, loc="best")
    left.grid(alpha=0.3)
    if title:
        left.set_title(title, fontsize=10)
    if right is None:
        return fig
    names = [short_label(str(b)) for b in levels["bot"]]
    pos = np.arange(len(levels))
    right.barh(pos, np.nan_to_num(cost, nan=0.0), color=SEAT_COLOURS[1], alpha=0.8)
    right.set_yticks(pos, names, fontsize=8)
    right.invert_yaxis()
    if np.nanmax(np.append(cost, 0)) > 0:
        right.set_xscale("log")
    right.set_xlabel("cost: games per second, as played")
    right.grid(alpha=0.3, axis="x")
    return fig
