"""The metric registry, and balance metrics per deal with their estimates and intervals.

Every metric a run summary, report, comparison, sweep, tuner, gate, skill trace or web table
shows is defined once here (:data:`METRICS`, looked up with :func:`metric`): its name, a label
for tables, its kind, the range its values lie in, the equivalence margin a study uses when it
names none, and how its value is computed per game and per deal. Old names stay accepted
(:data:`ALIASES`), so committed experiment files still load; a name is never reused for
another meaning.

Names that were easy to confuse, and which one is which:

- three "margins": ``score_diff`` (seat 0's score minus seat 1's, signed), ``abs_margin``
  (its absolute value; this is also the winner's lead, since equal scores go to the tie-break
  with a lead of 0, so ``winner_lead`` is an alias of it, not a third metric).
- two "leather useful": ``leather_useful`` counts the leather patches that were *placed* (hits
  over placements, summed over the deal's games; a patch lost for want of an empty square is
  left out) and asks "when a leather patch is placed, does it fill a one-square hole?";
  ``leather_useful_all`` counts every leather mark that was claimed or lost (a lost patch
  counting as not useful), per game, and asks "of the leather patches, how many helped?",
  the publisher's claim. They differ whenever leather is lost, so both are kept, under two
  names and labels; sweeps, the tuner and the gate have always used the first, comparisons
  and the report the second (their numbers do not change).
- likewise ``first_leather_useful`` (the game's first leather *placement* filled a hole) and
  ``first_leather_mark_useful`` (the ruleset's first leather mark with a claim or loss: its
  patch filled a hole, a lost one counting as not useful).

The unit of analysis is the deal: a seat-swapped pair of games (and, across rulesets, the same
deal under each ruleset). A metric is first averaged within each deal, then estimated over
deals with a t-interval; differences between rulesets are paired by deal (both from
:mod:`patchsim.analysis.estimators`; the one paired comparison is
:func:`patchsim.analysis.comparison.paired_comparison`). This is what makes the intervals
honest (games of one deal are not independent) and comparisons precise.

Bounded metrics (``BOUNDS``: the rates and the first-seat edge) get a weak prior in their
standard error: it is computed as if two more deals, one at each end of the range, had been
observed, so that a run in which every deal went the same way does not claim a zero-width
interval; the mean stays the data's mean, and the interval is clipped to the metric's range.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.estimators import MIN_DEALS
from patchsim.analysis.leather import leather_game_values
from patchsim.analysis.tables import EventSummary, as_summary, take

GameFn = Callable[[pd.DataFrame, EventSummary | None], np.ndarray]
DealFn = Callable[[pd.DataFrame, EventSummary | None], pd.Series]
KINDS = ("rate", "points", "count", "share")
INF = math.inf


@dataclass(frozen=True)
class Metric:
    """One balance metric. ``per_deal(games, events)``: one value per deal of ``games`` (one
    ruleset and pairing; index: deal); ``per_game``: one value per game, in the order of
    ``games`` (NaN where it does not apply), for metrics that are a mean of per-game values."""

    name: str
    label: str
    kind: str
    bounds: tuple[float, float]
    per_deal: DealFn
    description: str
    per_game: GameFn | None = None
    default_margin: float = 1.0
    unit: str = ""  # the unit of a value that is not a rate: "points", "moves", "passes"

    @property
    def percent(self) -> bool:
        """Shown as a percentage (rates and shares, and the first-seat edge)."""
        return self.kind in ("rate", "share")

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.bounds[0]) and math.isfinite(self.bounds[1])


class UnknownMetric(ValueError):
    """A metric name that is neither a metric nor an alias of one."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = list(known)
        super().__init__(f"unknown metric {name!r} (metrics: {', '.join(self.known)})")


# --- per-game values --------------------------------------------------------------------------
def _f(x: pd.Series | np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _first_seat_win(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f(g["winner"] == 0)


def _first_seat_edge(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f(g["winner"] == 0) - 0.5


def _first_bot_win(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    # NaN in self-play, where the pooled rate is 50% by construction
    self_play = (g["bot0"] == g["bot1"]).to_numpy()
    return np.where(self_play, np.nan, _f(g["winner"] == g["order"]))


def _mean_score(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f((g["score0"] + g["score1"]) / 2.0)


def _score_diff(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f(g["score0"] - g["score1"])


def _abs_margin(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f((g["score0"] - g["score1"]).abs())


def _plies(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f(g["plies"])


def _passes(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f(g["passes0"] + g["passes1"])


def _bonus(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f(g["bonus0"] | g["bonus1"])


def _tie_break(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    return _f(g["tie_break"])


def _events(ev: EventSummary | None) -> bool:
    return ev is not None and bool(ev.events)


def _first_placement_useful(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    if ev is None or not _events(ev):
        return np.full(len(g), np.nan)
    first = take(ev.first_hole, ev.rows(g["game_id"].to_numpy()), fill=-1)
    return np.where(first >= 0, first, np.nan)


def _leather_hits(g: pd.DataFrame, ev: EventSummary | None) -> tuple[np.ndarray, np.ndarray]:
    if ev is None or not _events(ev):
        nan = np.full(len(g), np.nan)
        return nan, nan
    at = ev.rows(g["game_id"].to_numpy())
    return take(ev.place_hits, at).astype(float), take(ev.place_count, at).astype(float)


def _leather_placed_share(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    hits, placed = _leather_hits(g, ev)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(placed > 0, hits / placed, np.nan)


def _first_mark_useful(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    if ev is None:
        return np.full(len(g), np.nan)
    return leather_game_values(g, ev)[0]


def _marks_useful(g: pd.DataFrame, ev: EventSummary | None) -> np.ndarray:
    if ev is None:
        return np.full(len(g), np.nan)
    return leather_game_values(g, ev)[1]


# --- per-deal values --------------------------------------------------------------------------
def _deal_mean(fn: GameFn) -> DealFn:
    """The per-deal mean of a per-game value (NaN games left out)."""

    def per_deal(g: pd.DataFrame, ev: EventSummary | None) -> pd.Series:
        return pd.Series(fn(g, as_summary(ev, g)), index=g.index).groupby(
            g["deal"].to_numpy(), sort=True).mean()

    return per_deal


def _score_sd(g: pd.DataFrame, ev: EventSummary | None) -> pd.Series:
    """The spread of the deal's final scores, both seats of every game (population sd)."""
    d = g["deal"].to_numpy()
    mean = pd.Series(_mean_score(g, ev)).groupby(d, sort=True).mean()
    sq = pd.Series(_f((g["score0"] ** 2 + g["score1"] ** 2) / 2.0)).groupby(d, sort=True).mean()
    return pd.Series(np.sqrt(np.maximum(sq - mean**2, 0.0)), index=mean.index)


def _leather_placed_deal(g: pd.DataFrame, ev: EventSummary | None) -> pd.Series:
    """Hits over placements, summed over the deal's games (a ratio of sums: a game with more
    placements weighs more)."""
    hits, placed = _leather_hits(g, as_summary(ev, g))
    d = g["deal"].to_numpy()
    h = pd.Series(hits).groupby(d, sort=True).mean()
    p = pd.Series(placed).groupby(d, sort=True).mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        return h / p


RATE = (0.0, 1.0)
EDGE = (-0.5, 0.5)
RATE_MARGIN = est.DEFAULT_MARGIN  # +-2 points
POINTS_MARGIN = 1.0


def _m(name: str, label: str, kind: str, bounds: tuple[float, float], description: str,
       per_game: GameFn | None, per_deal: DealFn | None = None,
       default_margin: float | None = None, unit: str | None = None) -> Metric:
    if per_deal is None:
        assert per_game is not None
        per_deal = _deal_mean(per_game)
    if default_margin is None:
        default_margin = RATE_MARGIN if kind in ("rate", "share") else POINTS_MARGIN
    if unit is None:
        unit = "points" if kind in ("rate", "share", "points") else ""
    return Metric(name, label, kind, bounds, per_deal, description, per_game, default_margin,
                  unit)


METRICS: dict[str, Metric] = {m.name: m for m in (
    _m("first_player_win", "first-seat win rate", "rate", RATE,
       "share of games won by the player who moves first", _first_seat_win),
    _m("first_player_edge", "first-seat edge", "rate", EDGE,
       "first-seat win share minus 50% (signed imbalance)", _first_seat_edge),
    _m("first_bot_win", "first bot win rate", "rate", RATE,
       "share of games won by the pairing's first bot, whichever seat it had (not defined in "
       "self-play)", _first_bot_win),
    _m("mean_score", "mean score", "points", (-INF, INF),
       "mean final score over both seats", _mean_score),
    _m("score_diff", "margin seat 0 - seat 1", "points", (-INF, INF),
       "seat 0's final score minus seat 1's (signed)", _score_diff),
    _m("abs_margin", "absolute margin", "points", (0.0, INF),
       "mean absolute score difference (the winner's lead)", _abs_margin),
    _m("score_sd", "score spread", "points", (0.0, INF),
       "spread of final scores (standard deviation within the deal, both seats)", None,
       _score_sd),
    _m("plies", "plies", "count", (0.0, INF),
       "moves per game (leather placements included)", _plies, unit="moves"),
    _m("passes", "passes", "count", (0.0, INF), "passes per game", _passes, unit="passes"),
    _m("bonus_rate", "bonus claimed", "rate", RATE,
       "share of games in which the 7x7 bonus was taken", _bonus),
    _m("tie_break_rate", "tie-break decided", "rate", RATE,
       "share of games decided by the tie-break", _tie_break),
    _m("leather_useful", "placed leather useful", "share", RATE,
       "share of placed leather patches that filled a one-square hole (hits over placements "
       "in the deal's games; lost patches left out)", _leather_placed_share,
       _leather_placed_deal),
    _m("leather_useful_all", "leather useful (all)", "share", RATE,
       "per game, share of the leather marks claimed or lost whose patch filled a one-square "
       "hole (a lost patch counts as not useful)", _marks_useful),
    _m("first_leather_useful", "first leather placement useful", "rate", RATE,
       "share of games whose first leather placement filled a one-square hole",
       _first_placement_useful),
    _m("first_leather_mark_useful", "first leather useful", "rate", RATE,
       "share of games in which the patch of the ruleset's first leather mark filled an "
       "isolated one-square hole (a lost patch counts as not useful)", _first_mark_useful),
)}

# Old and alternative names, still accepted (experiment files, the comparison's labels).
ALIASES: dict[str, str] = {
    "first_seat_win": "first_player_win", "first_seat_edge": "first_player_edge",
    "score_margin": "abs_margin", "winner_lead": "abs_margin",
    **{m.label: m.name for m in METRICS.values() if m.label != m.name},
}


def metric(name: str) -> Metric:
    """The metric of a name or alias; :class:`UnknownMetric` (with the known names) if none."""
    m = METRICS.get(name) or METRICS.get(ALIASES.get(name, ""))
    if m is None:
        raise UnknownMetric(name, list(METRICS))
    return m


def canonical(name: str) -> str:
    """The registry name of a metric name or alias (raises :class:`UnknownMetric`)."""
    return metric(name).name


# the metrics computed from the events (without them: NaN, or left out of a table)
EVENT_METRICS: tuple[str, ...] = ("leather_useful", "leather_useful_all",
                                  "first_leather_useful", "first_leather_mark_useful")

# Derived views, for the code that needs only a set or a map.
RATE_METRICS: tuple[str, ...] = tuple(n for n, m in METRICS.items() if m.bounds == RATE)
PERCENT_METRICS: tuple[str, ...] = tuple(n for n, m in METRICS.items() if m.percent)
# the range of each bounded metric: the prior's two imaginary deals sit at its ends, and the
# interval is clipped to it
BOUNDS: dict[str, tuple[float, float]] = {n: m.bounds for n, m in METRICS.items() if m.bounded}
RANGES: dict[str, tuple[float, float]] = {n: m.bounds for n, m in METRICS.items()}

# the metrics of :func:`deal_metrics` that are plain deal means of a per-game value
_MEAN_METRICS = [n for n, m in METRICS.items() if m.per_game is not None
                 and n not in ("leather_useful",)]
# per-deal values that are not means of per-game values (computed per ruleset and pairing)
_OTHER_METRICS = [n for n in METRICS if n not in _MEAN_METRICS]
DEAL_METRICS: tuple[str, ...] = ("first_player_win", "first_player_edge", "mean_score",
                                 "abs_margin", "plies", "passes", "bonus_rate",
                                 "tie_break_rate", "first_leather_useful", "score_sd",
                                 "leather_useful")


def deal_metrics(games: pd.DataFrame, events: pd.DataFrame | EventSummary | None = None,
                 metrics: Sequence[str] = DEAL_METRICS) -> pd.DataFrame:
    """One row per (ruleset, pairing, deal): each metric averaged over the deal's games (by
    default those of sweeps, the tuner and the gate; any registry name or alias can be asked
    for, and is returned under its registry name). ``events``: the events table or its
    summary (:mod:`patchsim.analysis.tables`)."""
    keys = ["ruleset", "pairing", "deal"]
    names = list(dict.fromkeys(canonical(m) for m in metrics))
    ev = as_summary(events, games)
    means = [n for n in names if n in _MEAN_METRICS]
    g = games[keys].copy()
    for n in means:
        fn = METRICS[n].per_game
        assert fn is not None
        g[n] = fn(games, ev)
    d = g.groupby(keys, sort=False, observed=True)[means].mean().reset_index()
    for k in ("ruleset", "pairing"):  # plain text, as from the file, whatever the games were
        if isinstance(d[k].dtype, pd.CategoricalDtype):
            d[k] = d[k].astype(str)
    others = [n for n in names if n in _OTHER_METRICS]
    if others and len(d):
        parts = []
        for (ruleset, pairing), grp in games.groupby(["ruleset", "pairing"], sort=False,
                                                     observed=True):
            vals = pd.DataFrame({n: METRICS[n].per_deal(grp, ev) for n in others})
            parts.append(vals.rename_axis("deal").reset_index().assign(
                ruleset=str(ruleset), pairing=str(pairing)))
        extra = pd.concat(parts, ignore_index=True)
        d = d.merge(extra, on=keys, how="left", sort=False)
    return d[[*keys, *names]]


def estimate(deals: pd.DataFrame, metrics: Sequence[str] = ("first_player_win",),
             by: Sequence[str] = ("ruleset", "pairing"), level: float = 0.95) -> pd.DataFrame:
    """Mean of each metric over deals with its standard error and t-interval (for bounded
    metrics: with the weak prior of two imaginary deals at the bounds, clipped)."""
    rows = []
    for key, grp in deals.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            e = est.mean_estimate(grp[m].to_numpy(dtype=float), level, BOUNDS.get(m))
            rows.append({**dict(zip(by, key, strict=True)), "metric": m, "mean": e.value,
                         "se": e.se, "lo": e.lo, "hi": e.hi, "deals": e.deals})
    return pd.DataFrame(rows)


def diff_bounds(name: str) -> tuple[float, float] | None:
    """The range a paired change of a metric lies in, for the weak prior (rates: -1..1)."""
    return est.RATE_DIFF_BOUNDS if name in BOUNDS else None


__all__ = ["ALIASES", "BOUNDS", "METRICS", "MIN_DEALS", "PERCENT_METRICS", "RATE_METRICS",
           "Metric", "UnknownMetric", "canonical", "deal_metrics", "diff_bounds", "estimate",
           "metric"]
