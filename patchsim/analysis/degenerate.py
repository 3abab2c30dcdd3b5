"""Degenerate games: the passing wars and collapses no human plays (issue 20's blind spot of
the learned search), flagged per game from the games table's columns, so that any report,
trace or metric can count them.

A game is degenerate when the two seats pass ``PASSING_WAR_PASSES`` times or more in total,
or when a seat ends below ``COLLAPSE_SCORE`` points (most of its quilt left empty). Greedy
self-play on edition 2 has 0.0% of the first and under 1% of the second.

A stand-off shows from the first moves: :func:`opening_passes` counts the passes (both seats
together) a game opens with, read from its move codes, and :func:`opens_with_passes` flags
the games that open with ``OPENING_PASSES`` or more in a row (issue 29).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PASSING_WAR_PASSES = 25  # passes of both seats together
COLLAPSE_SCORE = -20  # a final score below this
OPENING_PASSES = 6  # passes in a row, both seats together, from the first move
# the engine's move code of a pass (patchsim.engine.core.PASS): the statistics do not import
# the engine, and a test checks the two agree
PASS_CODE = -1


def passing_war(games: pd.DataFrame) -> pd.Series:
    """Per game: both seats passed ``PASSING_WAR_PASSES`` times or more in total (columns
    ``passes0``, ``passes1``)."""
    return (games["passes0"] + games["passes1"]) >= PASSING_WAR_PASSES


def collapsed_seat(games: pd.DataFrame) -> pd.Series:
    """Per game: a seat's final score is below ``COLLAPSE_SCORE`` (columns ``score0``,
    ``score1``)."""
    return games[["score0", "score1"]].min(axis=1) < COLLAPSE_SCORE


def opening_pass_runs(offsets: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per game, the passes it opens with (both seats together, until the first move that
    is not a pass), from its move codes packed end to end: game i's are
    ``codes[offsets[i]:offsets[i + 1]]`` (the layout of a list column)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    starts, ends = offsets[:-1], offsets[1:]
    codes = np.asarray(codes)
    # positions of the moves that are not passes, and one past the end so every game finds one
    moved = np.append(np.flatnonzero(codes != PASS_CODE), len(codes))
    first = moved[np.searchsorted(moved, starts)]  # each game's first such move (or beyond)
    return np.minimum(first, ends) - starts


def opening_passes(games: pd.DataFrame) -> pd.Series:
    """Per game (the table's index): the passes it opens with, from the ``opening_passes``
    column a run's reader derives, else from the ``moves`` column (one sequence of move codes
    per game); missing (NaN) when the table has neither."""
    if "opening_passes" in games.columns:
        return games["opening_passes"].astype(float).rename("opening_passes")
    if "moves" not in games.columns:
        return pd.Series(np.nan, index=games.index, name="opening_passes")
    parts = [np.asarray(m, dtype=np.int64) for m in games["moves"]]
    lengths = np.array([len(m) for m in parts], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    codes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return pd.Series(opening_pass_runs(offsets, codes).astype(float), index=games.index,
                     name="opening_passes")


def opens_with_passes(games: pd.DataFrame, passes: int = OPENING_PASSES) -> pd.Series:
    """Per game: 1.0 when it opens with ``passes`` passes in a row or more (both seats
    together), 0.0 when not, NaN when the table cannot tell (no moves)."""
    runs = opening_passes(games)
    return (runs >= passes).astype(float).where(runs.notna()).rename("opens_with_passes")


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
