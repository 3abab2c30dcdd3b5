"""The bot ladder: a seat-swapped round robin on common deals, summarised as a ratings table
and a head-to-head matrix with 95% intervals over deals (the unit of every interval)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from patchsim.analysis.estimators import WIN_BOUNDS, deal_values, mean_estimate, rate
from patchsim.analysis.ratings import ratings


def _won_by(g: pd.DataFrame, bot: str) -> np.ndarray:
    """1 where ``bot`` won the game (either seat), else 0."""
    return (((g["bot0"] == bot) & (g["winner"] == 0))
            | ((g["bot1"] == bot) & (g["winner"] == 1))).to_numpy(dtype=float)


def head_to_head(games: pd.DataFrame) -> pd.DataFrame:
    """One row per ordered pair of different bots: games, wins of ``bot`` against
    ``opponent`` over both seats, win rate and its 95% interval over deals (a deal's
    seat-swapped games are the unit, :func:`patchsim.analysis.estimators.rate`)."""
    rows = []
    cross = games[games["bot0"] != games["bot1"]]
    for _pairing, g in cross.groupby("pairing", sort=False, observed=True):
        a, b = str(g["bot0"].iloc[0]), str(g["bot1"].iloc[0])
        for bot, opp in ((a, b), (b, a)):
            won = _won_by(g, bot)
            est = rate(won, g["deal"].to_numpy())
            rows.append({"bot": bot, "opponent": opp, "games": len(g), "wins": int(won.sum()),
                         "deals": est.deals, "win_rate": est.value, "lo": est.lo,
                         "hi": est.hi})
    return pd.DataFrame(rows, columns=["bot", "opponent", "games", "wins", "deals",
                                       "win_rate", "lo", "hi"])


def ladder(games: pd.DataFrame) -> pd.DataFrame:
    """Per bot: games, wins, win rate against the field with a 95% interval over deals (the
    bot's win share in each deal, averaged over its pairings: deals are common to the
    pairings), and a Bradley-Terry rating in Elo points (with a first-seat term) with its
    interval; best first. Self-play games carry no information on strength and are left out."""
    cross = games[games["bot0"] != games["bot1"]]
    r = ratings(cross).set_index("bot")
    out = []
    for bot in r.index:
        mine = cross[(cross["bot0"] == bot) | (cross["bot1"] == bot)]
        won = _won_by(mine, bot)
        est = mean_estimate(deal_values(won, mine["deal"].to_numpy()), bounds=WIN_BOUNDS)
        as0 = mine["bot0"] == bot
        scores = np.where(as0, mine["score0"], mine["score1"])
        out.append({"bot": bot, "games": len(mine), "wins": int(won.sum()),
                    "win_rate": float(won.mean()) if len(mine) else np.nan,
                    "lo": est.lo, "hi": est.hi, "deals": est.deals,
                    "mean_score": float(scores.mean()) if len(mine) else np.nan,
                    "elo": r.loc[bot, "elo"], "elo_lo": r.loc[bot, "elo_lo"],
                    "elo_hi": r.loc[bot, "elo_hi"]})
    return pd.DataFrame(out).sort_values("elo", ascending=False, ignore_index=True)


def format_ladder(table: pd.DataFrame, h2h: pd.DataFrame) -> str:
    """The ladder as text (Markdown tables, readable in a terminal and in the README)."""
    lines = ["| bot | games | win rate vs field [95%] | mean score | Elo [95%] |",
             "|---|---:|---|---:|---|"]
    for r in table.itertuples():
        lines.append(f"| {r.bot} | {r.games} | {100 * r.win_rate:.1f}% [{100 * r.lo:.1f}, "
                     f"{100 * r.hi:.1f}] | {r.mean_score:.1f} | {r.elo:+.0f} "
                     f"[{r.elo_lo:+.0f}, {r.elo_hi:+.0f}] |")
    bots = list(table["bot"])
    lines += ["", "Head to head (row bot's win rate against column bot, both seats):", "",
              "| | " + " | ".join(bots) + " |", "|---|" + "---|" * len(bots)]
    idx = h2h.set_index(["bot", "opponent"])
    for b in bots:
        cells = []
        for o in bots:
            if b == o or (b, o) not in idx.index:
                cells.append("")
            else:
                row = idx.loc[(b, o)]
                cells.append(f"{100 * row['win_rate']:.0f}% [{100 * row['lo']:.0f}, "
                             f"{100 * row['hi']:.0f}]")
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
