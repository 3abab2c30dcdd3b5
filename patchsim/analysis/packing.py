"""Packing quality: how well the players pack, per game and per bot (issue 29).

A strong player fills its quilt, builds for the 7x7 bonus and does not pass its way into a
stand-off. From the games table's columns, per bot of a pairing: its mean final score, the
share of games in which it claims the 7x7 bonus, the isolated one-square holes it leaves at
the end (columns ``holes0``/``holes1``, written by the runner with the bots' own hole rule;
missing in runs stored before them), and per game, whether it opens with
``degenerate.OPENING_PASSES`` passes in a row or more and whether it is degenerate. Every
figure is a mean over deals with a 95% interval (the deal is the unit), as the degenerate
share's is in the skill trace.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.degenerate import OPENING_PASSES, degenerate_games, opens_with_passes

# name -> (label, bounds of a rate or None)
PACKING_METRICS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "score": ("mean final score", None),
    "bonus": ("7x7 bonus claimed", est.WIN_BOUNDS),
    "holes": ("isolated holes at the end", None),
    "opens_with_passes": (f"opens with {OPENING_PASSES}+ passes", est.WIN_BOUNDS),
    "degenerate": ("degenerate games", est.WIN_BOUNDS),
}
KEYS = ["ruleset", "pairing", "bot"]


def seat_values(games: pd.DataFrame, stem: str) -> np.ndarray:
    """Per game, the two seats' ``<stem>0`` and ``<stem>1`` as floats, shape (games, 2);
    NaN where the table lacks the columns (an older run without the holes)."""
    out = np.full((len(games), 2), np.nan)
    for s in (0, 1):
        if f"{stem}{s}" in games.columns:
            out[:, s] = games[f"{stem}{s}"].to_numpy(dtype=float, na_value=np.nan)
    return out


def seat_mean(games: pd.DataFrame, stem: str) -> np.ndarray:
    """Per game, the mean of the two seats' ``<stem>`` (NaN when not recorded): in
    self-play both seats are the same player."""
    return seat_values(games, stem).mean(axis=1)


def bot_games(games: pd.DataFrame) -> pd.DataFrame:
    """One row per game and bot of its pairing (one row for a self-play game): ruleset,
    pairing, bot, game_id, deal, and the bot's ``score`` and ``holes`` (the mean over the
    seats it holds), ``bonus`` (1.0 when one of its seats claimed it), and the game's
    ``opens_with_passes`` and ``degenerate`` flags."""
    if games.empty:
        return pd.DataFrame(columns=[*KEYS, "game_id", "deal", *PACKING_METRICS])
    score, holes = seat_values(games, "score"), seat_values(games, "holes")
    bonus = seat_values(games, "bonus")
    common = {"ruleset": games["ruleset"].astype(str).to_numpy(),
              "pairing": games["pairing"].astype(str).to_numpy(),
              "game_id": games["game_id"].to_numpy(), "deal": games["deal"].to_numpy(),
              "opens_with_passes": opens_with_passes(games).to_numpy(dtype=float),
              "degenerate": degenerate_games(games).to_numpy(dtype=float)}
    seats = pd.concat([pd.DataFrame({**common, "bot": games[f"bot{s}"].astype(str).to_numpy(),
                                     "score": score[:, s], "holes": holes[:, s],
                                     "bonus": bonus[:, s]}) for s in (0, 1)],
                      ignore_index=True)
    # a self-play game's two seats are one bot: their mean (the bonus: either seat's)
    out = seats.groupby([*KEYS, "game_id"], sort=False).agg(
        deal=("deal", "first"), score=("score", "mean"), holes=("holes", "mean"),
        bonus=("bonus", "max"), opens_with_passes=("opens_with_passes", "first"),
        degenerate=("degenerate", "first")).reset_index()
    return out[[*KEYS, "game_id", "deal", *PACKING_METRICS]]


def packing_table(games: pd.DataFrame) -> pd.DataFrame:
    """One row per ruleset, pairing and bot (in the table's order): games, deals, and for
    every packing metric its mean over deals with a 95% interval (``<metric>``,
    ``<metric>_lo``, ``<metric>_hi``; NaN when not recorded). Pass the distinct games
    (:func:`patchsim.analysis.selfplay.distinct`) so that a deterministic copy counts
    once."""
    per_game = bot_games(games)
    rows = []
    for key, g in per_game.groupby(KEYS, sort=False):
        row: dict[str, object] = dict(zip(KEYS, key, strict=True))
        per_deal = g.groupby("deal", sort=True)[list(PACKING_METRICS)].mean()
        row.update(games=len(g), deals=len(per_deal))
        for m, (_, bounds) in PACKING_METRICS.items():
            e = est.mean_estimate(per_deal[m].to_numpy(dtype=float), est.VERDICT_LEVEL,
                                  bounds)
            row.update({m: e.value, f"{m}_lo": e.lo, f"{m}_hi": e.hi})
        rows.append(row)
    cols = [*KEYS, "games", "deals",
            *(c for m in PACKING_METRICS for c in (m, f"{m}_lo", f"{m}_hi"))]
    return pd.DataFrame(rows, columns=cols)
