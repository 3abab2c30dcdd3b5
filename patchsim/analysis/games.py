"""Helpers over a run's games table that every table module shares: groups in order of
appearance, a pairing's two bots, self-play, and the ruleset of a name."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeAlias

import pandas as pd

from patchsim.analysis.tables import EventSummary

# an events table, or its summary (analysis.tables)
Events: TypeAlias = pd.DataFrame | EventSummary


NAN = float("nan")


def iter_groups(games: pd.DataFrame, keys: list[str]
                ) -> Iterator[tuple[tuple[Any, ...], pd.DataFrame]]:
    """groupby in order of appearance, yielding (key tuple, frame)."""
    for key, g in games.groupby(keys, sort=False, observed=True):
        yield (key if isinstance(key, tuple) else (key,)), g


def first_bot(g: pd.DataFrame) -> str:
    """The pairing's first bot (the one in seat 0 when order is 0)."""
    row = g.iloc[0]
    return str(row["bot0"] if row["order"] == 0 else row["bot1"])


def second_bot(g: pd.DataFrame) -> str:
    row = g.iloc[0]
    return str(row["bot1"] if row["order"] == 0 else row["bot0"])


def is_self_play(g: pd.DataFrame) -> bool:
    return bool((g["bot0"] == g["bot1"]).all())


def ruleset_of(rulesets: Mapping[str, Any] | None, name: str) -> Any | None:
    return None if rulesets is None else rulesets.get(name)


def split_rulesets(games: pd.DataFrame, events: Events | None = None
                   ) -> list[tuple[str, pd.DataFrame, Events | None]]:
    """A run's rulesets in run order as (label, games, events); rulesets are told apart by
    content hash, so two differently named copies of the same rules stay separate only if
    their names differ, and two rulesets with one name get the hash in the label."""
    keys = list(games[["ruleset", "ruleset_hash"]].drop_duplicates().itertuples(
        index=False, name=None))
    names = [n for n, _ in keys]
    out = []
    for name, h in keys:
        sel = (games["ruleset"] == name) & (games["ruleset_hash"] == h)
        g = games[sel]
        e = events
        if isinstance(events, pd.DataFrame):  # a summary is looked up by game id as it is
            e = events[events["game_id"].isin(g["game_id"])]
        label = name if names.count(name) == 1 else f"{name} ({h[:8]})"
        out.append((label, g, e))
    return out
