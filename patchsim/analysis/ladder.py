"""The bot ladder: a seat-swapped round robin on common deals, summarised as a ratings table
and a head-to-head matrix with 95% intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from patchsim.analysis.stats import ratings, wilson


def head_to_head(games: pd.DataFrame) -> pd.DataFrame:
    """One row per ordered pair of different bots: games, wins of ``bot`` against
    ``opponent`` over both seats, win rate and its 95% Wilson interval."""
    rows = []
    cross = games[games["bot0"] != games["bot1"]]
    for (b0, b1), g in cross.groupby(["bot0", "bot1"], sort=False):
        rows.append((b0, b1, len(g), int((g["winner"] == 0).sum())))
        rows.append((b1, b0, len(g), int((g["winner"] == 1).sum())))
    df = pd.DataFrame(rows, columns=["bot", "opponent", "games", "wins"])
    df = df.groupby(["bot", "opponent"], as_index=False, sort=False)[["games", "wins"]].sum()
    lo, hi = wilson(df["wins"].to_numpy(), df["games"].to_numpy())
    df["win_rate"] = df["wins"] / df["games"]
    df["lo"] = lo
    df["hi"] = hi
    return df


def ladder(games: pd.DataFrame) -> pd.DataFrame:
    """Per bot: games, wins, win rate against the field with a 95% interval, and a
    Bradley-Terry rating in Elo points (with a first-seat term) with its interval; best first.
    Self-play games carry no information on strength and are left out."""
    cross = games[games["bot0"] != games["bot1"]]
    r = ratings(cross).set_index("bot")
    out = []
    for bot in r.index:
        as0 = cross["bot0"] == bot
        as1 = cross["bot1"] == bot
        n = int(as0.sum() + as1.sum())
        w = int(((cross["winner"] == 0) & as0).sum() + ((cross["winner"] == 1) & as1).sum())
        lo, hi = wilson(w, n)
        mean_score = float(np.concatenate([cross.loc[as0, "score0"], cross.loc[as1, "score1"]])
                           .mean()) if n else float("nan")
        out.append({"bot": bot, "games": n, "wins": w, "win_rate": w / n if n else np.nan,
                    "lo": float(lo), "hi": float(hi), "mean_score": mean_score,
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
