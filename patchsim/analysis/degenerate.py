"""Degenerate games: the passing wars and collapses no human plays (issue 20's blind spot of
the learned search), flagged per game from the games table's columns, so that any report,
trace or metric can count them.

A game is degenerate when the two seats pass ``PASSING_WAR_PASSES`` times or more in total,
or when a seat ends below ``COLLAPSE_SCORE`` points (most of its quilt left empty). Greedy
self-play on edition 2 has 0.0% of the first and under 1% of the second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PASSING_WAR_PASSES = 25  # passes of both seats together
COLLAPSE_SCORE = -20  # a final score below this


def passing_war(games: pd.DataFrame) -> pd.Series:
    """Per game: both seats passed ``PASSING_WAR_PASSES`` times or more in total (columns
    ``passes0``, ``passes1``)."""
    return (games["passes0"] + games["passes1"]) >= PASSING_WAR_PASSES


def collapsed_seat(games: pd.DataFrame) -> pd.Series:
    """Per game: a seat's final score is below ``COLLAPSE_SCORE`` (columns ``score0``,
    ``score1``)."""
    return games[["score0", "score1"]].min(axis=1) < COLLAPSE_SCORE


def degenerate_games(games: pd.DataFrame) -> pd.Series:
    """Per game (the games table's index): a passing war or a collapsed seat. KeyError
    naming the missing column if the table lacks one."""
    missing = [c for c in ("passes0", "passes1", "score0", "score1") if c not in games]
    if missing:
        raise KeyError(f"degenerate_games needs the games table's columns {', '.join(missing)}")
    return (passing_war(games) | collapsed_seat(games)).rename("degenerate")


def war_summary(games: pd.DataFrame) -> pd.DataFrame:
    """What a degenerate game costs, per ruleset and pairing: for the degenerate games and
    for the others, how many, the two seats' scores summed, the winner's lead (|score
    margin|) and the first seat's win rate (ties: the tie-break's winner, as the games
    table's ``winner`` says). A war that lowers both seats' points alike leaves the lead
    where it was: a player who maximises its chance of winning sees nothing to avoid."""
    flags = degenerate_games(games)
    keys = [k for k in ("ruleset", "pairing") if k in games.columns]
    g = games.assign(degenerate=flags.to_numpy(),
                     total=(games["score0"] + games["score1"]).to_numpy(),
                     lead=np.abs(games["score0"] - games["score1"]).to_numpy(),
                     first_wins=(games["winner"] == 0).to_numpy(dtype=float))
    rows = []
    for key, part in (g.groupby(keys, sort=False, observed=True) if keys else [((), g)]):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(keys, key, strict=True))
        row.update({"games": len(part), "degenerate_share": float(part["degenerate"].mean())})
        for flag, name in ((True, "war"), (False, "other")):
            sub = part[part["degenerate"] == flag]
            row[f"{name}_games"] = len(sub)
            for col in ("total", "lead", "first_wins"):
                row[f"{name}_{col}"] = float(sub[col].mean()) if len(sub) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)
