"""Deterministic self-play: when one deterministic bot plays itself, the seat-swapped game of a
deal is the same game again (the same bot sits in both seats either way), so half of such a
pairing's rows are copies.

The runner plays both games of every deal (one design for every pairing, so tables and game
ids line up); the analysis counts each deal's copy once. Per-deal statistics do not change
(both copies give the deal the same value), but game counts, tie-break counts and the like
become the number of distinct games. A pairing is treated this way only when it is a
self-play pairing and every deal's two games end identically.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# what every table, the report and the run summary say about a pairing whose copies count once
DISTINCT_NOTE = "deterministic self-play: one distinct game per deal"

# what two copies of a game share; a deterministic bot reproduces all of it
_SAME = ("winner", "score0", "score1", "buttons0", "buttons1", "empty0", "empty1", "plies",
         "first_to_end")


def duplicated_pairings(games: pd.DataFrame) -> list[str]:
    """Self-play pairings whose two games of every deal are the same game."""
    out = []
    cols = [c for c in _SAME if c in games.columns]
    for pairing, g in games.groupby("pairing", sort=False, observed=True):
        if len(g) == 0 or (g["bot0"] != g["bot1"]).any() or g["ruleset"].nunique() < 1:
            continue
        keys = ["ruleset", "deal"]
        first = g[g["order"] == 0].set_index(keys)[cols].sort_index()
        second = g[g["order"] == 1].set_index(keys)[cols].sort_index()
        if len(first) and first.index.equals(second.index) and first.equals(second):
            out.append(str(pairing))
    return out


def two_different_games(games: pd.DataFrame) -> pd.Series:
    """Per (ruleset, pairing, deal) of self-play games: whether the deal's two games (one per
    seat order) are different games: by their move records where the table has them, else
    by how they ended (``_SAME``). A deal with one game left (its copy dropped) has none."""
    keys = ["ruleset", "pairing", "deal"]
    if "moves" in games.columns:  # an array of move codes per game: compared as bytes
        games = games[keys].assign(moves=[np.asarray(m).tobytes() for m in games["moves"]])
        cols = ["moves"]
    else:
        cols = [c for c in _SAME if c in games.columns]
    variety = games.groupby(keys, sort=False, observed=True)[cols].nunique()
    return (variety.max(axis=1) >= 2).rename("two_games")


def distinct_games(games: pd.DataFrame) -> pd.DataFrame:
    """The games table with the copy of each deterministic self-play game dropped (the game
    of seat order 1); ``attrs["duplicated_pairings"]`` names the pairings affected."""
    dup = duplicated_pairings(games)
    if not dup:
        out = games
    else:
        keep = ~(games["pairing"].astype(str).isin(dup) & (games["order"] == 1))
        out = games[keep]
    out = out.copy() if dup else out
    out.attrs = {**games.attrs, "duplicated_pairings": dup}
    return out


def distinct(games: pd.DataFrame) -> pd.DataFrame:
    """``games`` with the copies of deterministic self-play dropped
    (:func:`distinct_games`); a table that has been through it already (it carries
    ``attrs["duplicated_pairings"]``) is returned as it is, so that the report detects the
    copies once and every table it builds agrees."""
    if "duplicated_pairings" in games.attrs:
        return games
    return distinct_games(games)


def copied_pairings(games: pd.DataFrame) -> set[str]:
    """The pairings of a :func:`distinct` table whose copies were dropped."""
    return {str(p) for p in games.attrs.get("duplicated_pairings", ())}
