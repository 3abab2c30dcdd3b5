"""The terminal summary of a run (``patchsim run`` prints it; ``Simulation.summary`` returns
it): per ruleset and pairing, the first seat's and the first bot's win rates with their
intervals over deals, from the one estimator layer.

Kept apart from :mod:`patchsim.analysis.stats` so that the run command imports only what its
summary needs (not scipy.stats, the bootstrap or statsmodels' models: about half a second of
every run's start-up).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.selfplay import DISTINCT_NOTE, copied_pairings, distinct


def run_summary(games: pd.DataFrame) -> pd.DataFrame:
    """One row per ruleset and pairing: games, first-seat win rate and the first bot's win
    rate (over both seats), each with a 95% interval that treats the deal (the seat-swapped
    pair) as the unit, mean scores by seat."""
    rows = []
    games = distinct(games)  # deterministic self-play: a deal's copy counts once
    dup = copied_pairings(games)
    for (ruleset, pairing), g in games.groupby(["ruleset", "pairing"], sort=False,
                                               observed=True):
        n = len(g)
        seat0 = est.rate((g["winner"] == 0).to_numpy(), g["deal"].to_numpy())
        bot_a = pairing.split(" vs ")[0]
        self_play = g["bot0"].iloc[0] == g["bot1"].iloc[0]
        first = est.rate((g["winner_bot"] == bot_a).to_numpy(), g["deal"].to_numpy())
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "games": n,
            "seat0_win": seat0.value, "seat0_lo": seat0.lo, "seat0_hi": seat0.hi,
            "first_bot_win": np.nan if self_play else first.value,
            "first_bot_lo": np.nan if self_play else first.lo,
            "first_bot_hi": np.nan if self_play else first.hi,
            "score0": g["score0"].mean(), "score1": g["score1"].mean(),
            "tie_breaks": int(g["tie_break"].sum()),
            # who wins the ties (docs/rules.md R11.5: the first to reach the last space)
            "tie_break_seat0_share": (float((g["tie_break"] & (g["winner"] == 0)).sum()
                                            / g["tie_break"].sum())
                                      if g["tie_break"].any() else np.nan),
            "distinct_games": str(pairing) not in dup,
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
        if not r.distinct_games:
            line += f"  ({DISTINCT_NOTE})"
        lines.append(line)
    return "\n".join(lines)
