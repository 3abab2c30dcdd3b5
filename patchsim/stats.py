"""Statistics over the games table: DataFrame in, DataFrame out.

Intervals use statsmodels where it has the estimator (Wilson intervals for proportions);
the paired (per-deal) analysis is written out here because the unit of analysis is the
seat-swapped deal, not the game.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

Z95 = 1.959963984540054


def wilson(successes: float | np.ndarray, n: float | np.ndarray,
           alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (vectorised)."""
    lo, hi = proportion_confint(np.asarray(successes), np.asarray(n), alpha=alpha,
                                method="wilson")
    return np.asarray(lo), np.asarray(hi)


def run_summary(games: pd.DataFrame) -> pd.DataFrame:
    """One row per ruleset and pairing: games, first-seat win rate with a 95% Wilson interval,
    the first bot's win rate (over both seats), mean scores by seat."""
    rows = []
    for (ruleset, pairing), g in games.groupby(["ruleset", "pairing"], sort=False):
        n = len(g)
        first = int((g["winner"] == 0).sum())
        lo, hi = wilson(first, n)
        bot_a = pairing.split(" vs ")[0]
        a_wins = int((g["winner_bot"] == bot_a).sum())
        self_play = g["bot0"].iloc[0] == g["bot1"].iloc[0]
        alo, ahi = wilson(a_wins, n)
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "games": n,
            "seat0_win": first / n, "seat0_lo": float(lo), "seat0_hi": float(hi),
            "first_bot_win": np.nan if self_play else a_wins / n,
            "first_bot_lo": np.nan if self_play else float(alo),
            "first_bot_hi": np.nan if self_play else float(ahi),
            "score0": g["score0"].mean(), "score1": g["score1"].mean(),
            "tie_breaks": int(g["tie_break"].sum()),
        })
    return pd.DataFrame(rows)


def format_summary(summary: pd.DataFrame) -> str:
    """The terminal summary of a run."""
    lines = []
    for r in summary.itertuples():
        line = (f"{r.ruleset:<12} {r.pairing:<44} games {r.games:>6}  "
                f"seat0 wins {100 * r.seat0_win:5.1f}% [{100 * r.seat0_lo:4.1f}, "
                f"{100 * r.seat0_hi:4.1f}]")
        if not np.isnan(r.first_bot_win):
            line += (f"  {r.pairing.split(' vs ')[0]} wins {100 * r.first_bot_win:5.1f}% "
                     f"[{100 * r.first_bot_lo:4.1f}, {100 * r.first_bot_hi:4.1f}]")
        line += f"  mean score {r.score0:6.1f} : {r.score1:6.1f}"
        lines.append(line)
    return "\n".join(lines)
