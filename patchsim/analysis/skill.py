"""The skill trace's statistics: a balance metric along a ladder of levels (the scripted bots,
then a search at doubling budgets), the strength gained at each step, and whether the metric
has converged as play gets stronger.

Everything here is a pure function of tables (games, events, per-deal values), with the deal
as the unit and the intervals and verdicts of :mod:`patchsim.analysis.estimators`:

- :func:`level_deals` / :func:`level_table`: each level's self-play balance (first-seat win
  rate, the first seat's score margin, tie-break and bonus shares, leather figures, the share
  of degenerate games) and how well it packs (mean final score, isolated holes at the end,
  games opening with 6+ passes), one row per level with 95% intervals over deals.
- :func:`duel_deals` / :func:`duel_table`: each level against the level below (seat-swapped,
  common deals): the stronger level's win rate, its Elo gain, the gain per doubling of the
  budget and the cumulative Elo of the ladder.
- :func:`convergence_verdict`: the three-way verdict on the primary metric from every level
  (the slope of a weighted line through the ladder, per 100 Elo of strength, in
  :mod:`patchsim.analysis.skill_fit`), in the language of every other verdict: "converged:
  ...", "still moving: ..." or "undecided: ... about N more deals per level would likely
  decide it" (deals from the same power calculation as every verdict).
- :func:`diversity_table`: at one level, whether the primary metric depends on how self-play
  is made diverse (paired by deal against the reference method, a verdict within the margin).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis import skill_fit as sf
from patchsim.analysis.degenerate import OPENING_PASSES, opens_with_passes
from patchsim.analysis.metrics import deal_metrics
from patchsim.analysis.packing import seat_mean
from patchsim.analysis.seats import seat_information
from patchsim.analysis.selfplay import distinct, two_different_games
from patchsim.analysis.skill_fit import CONVERGED as CONVERGED
from patchsim.analysis.skill_fit import MOVING as MOVING
from patchsim.analysis.skill_fit import UNDECIDED as UNDECIDED
from patchsim.analysis.skill_fit import ConvergenceVerdict
from patchsim.analysis.tables import EventSummary

# A game no human would play: one of these and it is counted as degenerate (issue 20: the
# learned search's passing wars). Both thresholds are per game.
DEGENERATE_PASSES = 25  # passes by both seats together
DEGENERATE_SCORE = -20  # a seat's final score below this

ELO_PER_LOGIT = 400 / math.log(10)

# the per-level metrics of the trace: name -> (label, bounds or None, scale for text, unit)
LEVEL_METRICS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "first_player_win": ("first seat wins", est.WIN_BOUNDS),
    "score_diff": ("first seat's score margin", None),
    # how well the level packs (issue 29): both seats' final score, the holes they leave
    "mean_score": ("mean final score", None),
    "tie_break_rate": ("decided by the tie-break", est.WIN_BOUNDS),
    "bonus_rate": ("7x7 bonus taken", est.WIN_BOUNDS),
    "holes": ("isolated holes at the end", None),
    "leather_useful": ("placed leather filled a hole", est.WIN_BOUNDS),
    "first_leather_useful": ("first leather filled a hole", est.WIN_BOUNDS),
    "passes": ("passes per game", None),
    "degenerate": ("degenerate games", est.WIN_BOUNDS),
    "opens_with_passes": (f"open with {OPENING_PASSES}+ passes", est.WIN_BOUNDS),
    "many_passes": (f"{DEGENERATE_PASSES}+ passes", est.WIN_BOUNDS),
    "deep_negative": (f"a seat below {DEGENERATE_SCORE}", est.WIN_BOUNDS),
    # how diverse the self-play is: a deal whose two games (one per seat order) are the same
    # game tells the first-seat question once, not twice (a deterministic player: none)
    "two_games": ("deals with two different games", est.WIN_BOUNDS),
}
RATE_LIKE = tuple(m for m, (_, b) in LEVEL_METRICS.items() if b == est.WIN_BOUNDS)


def _level_of(pairing: pd.Series, levels: Sequence[str]) -> np.ndarray:
    """The level number of each self-play game (-1 when its bot is not a level)."""
    index = {f"{b} vs {b}": i for i, b in enumerate(levels)}
    return pairing.astype(str).map(index).fillna(-1).to_numpy(dtype=int)


def level_deals(games: pd.DataFrame, events: pd.DataFrame | EventSummary | None,
                levels: Sequence[str]
                ) -> pd.DataFrame:
    """One row per (level, deal) of the levels' self-play games: every trace metric averaged
    over the deal's games (a deterministic bot's copy of a game counts once). ``levels``:
    the bot specs in ladder order; other games are ignored."""
    g = games[(games["bot0"] == games["bot1"]).to_numpy()]
    g = g[_level_of(g["pairing"], levels) >= 0]
    cols = ["level", "bot", "deal", *LEVEL_METRICS]
    if g.empty:
        return pd.DataFrame(columns=cols)
    two = two_different_games(g)  # before the copies of a deterministic level are dropped
    g = distinct(g.copy())
    ev = None
    if isinstance(events, pd.DataFrame) and len(events):
        ev = events[events["game_id"].isin(g["game_id"])]
    elif events is not None:  # a run's event summary: read by game id, nothing to filter
        ev = events
    base = deal_metrics(g, ev)  # leather figures from the one metric layer
    own = pd.DataFrame({
        "ruleset": g["ruleset"].astype(str).to_numpy(),
        "pairing": g["pairing"].astype(str).to_numpy(),
        "deal": g["deal"].to_numpy(),
        "first_player_win": (g["winner"] == 0).to_numpy(dtype=float),
        "score_diff": (g["score0"] - g["score1"]).to_numpy(dtype=float),
        "tie_break_rate": g["tie_break"].to_numpy(dtype=float),
        "bonus_rate": (g["bonus0"] | g["bonus1"]).to_numpy(dtype=float),
        "passes": (g["passes0"] + g["passes1"]).to_numpy(dtype=float),
        # per seat, averaged (NaN in a run stored before the holes, or without moves)
        "mean_score": seat_mean(g, "score"),
        "holes": seat_mean(g, "holes"),
        "opens_with_passes": opens_with_passes(g).to_numpy(dtype=float),
    })
    many = own["passes"].to_numpy() >= DEGENERATE_PASSES
    low = (np.minimum(g["score0"], g["score1"]) < DEGENERATE_SCORE).to_numpy()
    own["many_passes"] = many.astype(float)
    own["deep_negative"] = low.astype(float)
    own["degenerate"] = (many | low).astype(float)
    per = own.groupby(["ruleset", "pairing", "deal"], sort=False).mean().reset_index()
    per = per.merge(base[["ruleset", "pairing", "deal", "leather_useful",
                          "first_leather_useful"]], on=["ruleset", "pairing", "deal"],
                    how="left")
    per = per.merge(two.astype(float).reset_index(), on=["ruleset", "pairing", "deal"],
                    how="left")
    per["level"] = _level_of(per["pairing"], levels)
    per["bot"] = [levels[i] for i in per["level"]]
    return per[cols].sort_values(["level", "deal"], ignore_index=True)


def _interval(values: np.ndarray, bounds: tuple[float, float] | None) -> est.Estimate:
    return est.mean_estimate(values, est.VERDICT_LEVEL, bounds)


def level_table(deals: pd.DataFrame, levels: Sequence[str],
                seconds: Sequence[float] | None = None,
                games: Sequence[int] | None = None) -> pd.DataFrame:
    """One row per level (ladder order): deals, and for every trace metric its mean over
    deals with a 95% interval (``<metric>``, ``<metric>_lo``, ``<metric>_hi``); with
    ``seconds`` and ``games`` (what each level's self-play cost) the cost in games/s."""
    rows = []
    for i, bot in enumerate(levels):
        d = deals[deals["level"] == i]
        row: dict[str, object] = {"level": i, "bot": bot, "deals": len(d)}
        for m, (_, bounds) in LEVEL_METRICS.items():
            e = _interval(d[m].to_numpy(dtype=float), bounds)
            row.update({m: e.value, f"{m}_lo": e.lo, f"{m}_hi": e.hi})
        if seconds is not None and games is not None:
            s, n = float(seconds[i]), int(games[i])
            row.update({"games": n, "seconds": s,
                        "games_per_s": n / s if s > 0 else math.nan})
        rows.append(row)
    return pd.DataFrame(rows)


def duel_deals(games: pd.DataFrame, levels: Sequence[str]) -> pd.DataFrame:
    """One row per (level, deal) for every level from the second: the share of the deal's
    games (both seats) that the level won against the level below it."""
    rows = []
    for i in range(1, len(levels)):
        upper, lower = levels[i], levels[i - 1]
        g = games[(((games["bot0"] == upper) & (games["bot1"] == lower))
                   | ((games["bot0"] == lower) & (games["bot1"] == upper))).to_numpy()]
        if g.empty:
            continue
        won = (g["winner_bot"].astype(str) == upper).to_numpy(dtype=float)
        per = pd.Series(won).groupby(g["deal"].to_numpy(), sort=True).mean()
        rows.append(pd.DataFrame({"level": i, "bot": upper, "below": lower,
                                  "deal": per.index.to_numpy(), "win": per.to_numpy()}))
    if not rows:
        return pd.DataFrame(columns=["level", "bot", "below", "deal", "win"])
    return pd.concat(rows, ignore_index=True)


def elo(rate: float) -> float:
    """Elo points of a win rate (logistic scale, 400 points per factor of 10 in odds)."""
    if not 0 < rate < 1:
        return math.inf if rate >= 1 else -math.inf
    return ELO_PER_LOGIT * math.log(rate / (1 - rate))


def _shrunk(e: est.Estimate, value: float) -> float:
    """A rate pulled toward 50% by the weak prior of one imaginary deal at each bound (as the
    rate's interval is), kept strictly inside (0, 1) so that 200 wins of 200 give a large
    finite Elo gain instead of an infinite one."""
    n = max(e.deals, 0)
    return float(np.clip((value * n + 1) / (n + 2), 1 / (n + 2), 1 - 1 / (n + 2)))


def _doublings(budgets: Sequence[float | None] | None, low: int, high: int) -> float:
    """Doublings of the budget from level ``low`` to level ``high``; NaN when either has
    none (a scripted level)."""
    if budgets is None:
        return math.nan
    a, b = budgets[low], budgets[high]
    if not a or not b:
        return math.nan
    return math.log2(float(b) / float(a))


def duel_table(duels: pd.DataFrame, levels: Sequence[str],
               budgets: Sequence[float | None] | None = None) -> pd.DataFrame:
    """One row per level from the second: its win rate against the level below with a 95%
    interval over deals, the Elo gain (of the rate with the interval's weak prior, so
    finite) with its interval, the doublings of budget between the two (NaN when either
    level has no budget, e.g. a scripted bot) and the gain per doubling, and the cumulative
    Elo of the ladder from its first level (standard errors added in quadrature: the
    matches are separate games)."""
    rows = []
    cum, cum_var = 0.0, 0.0
    for i in range(1, len(levels)):
        d = duels[duels["level"] == i]
        e = est.mean_estimate(d["win"].to_numpy(dtype=float), est.VERDICT_LEVEL,
                              est.WIN_BOUNDS)
        row: dict[str, object] = {"level": i, "bot": levels[i], "below": levels[i - 1],
                                  "deals": e.deals, "win": e.value, "win_lo": e.lo,
                                  "win_hi": e.hi}
        if e.deals:
            gain = elo(_shrunk(e, e.value))
            lo, hi = elo(_shrunk(e, e.lo)), elo(_shrunk(e, e.hi))
            # the standard error on the Elo scale from the interval's width
            se = (hi - lo) / (2 * 1.96)
        else:
            gain = lo = hi = se = math.nan
        doublings = _doublings(budgets, i - 1, i)
        per = doublings if doublings and np.isfinite(doublings) else math.nan
        if np.isfinite(gain):
            cum += gain
            cum_var += se**2
        row.update({"elo": gain, "elo_lo": lo, "elo_hi": hi, "doublings": doublings,
                    "elo_per_doubling": gain / per, "elo_per_doubling_lo": lo / per,
                    "elo_per_doubling_hi": hi / per, "cum_elo": cum,
                    "cum_elo_lo": cum - 1.96 * math.sqrt(cum_var),
                    "cum_elo_hi": cum + 1.96 * math.sqrt(cum_var)})
        rows.append(row)
    cols = ["level", "bot", "below", "deals", "win", "win_lo", "win_hi", "elo", "elo_lo",
            "elo_hi", "doublings", "elo_per_doubling", "elo_per_doubling_lo",
            "elo_per_doubling_hi", "cum_elo", "cum_elo_lo", "cum_elo_hi"]
    return pd.DataFrame(rows, columns=cols)


# --- the convergence verdict (the weighted line: skill_fit) ------------------------------------
# names the metric registry also accepts for the trace's metrics
ALIASES = {"first_seat_win": "first_player_win", "seat_margin": "score_diff"}


def trace_metric(name: str) -> str:
    """The trace metric a name (or an alias of the metric registry) means; ValueError naming
    the trace metrics when none."""
    name = ALIASES.get(name, name)
    if name not in LEVEL_METRICS:
        raise ValueError(f"{name!r} is not a trace metric ({', '.join(LEVEL_METRICS)})")
    return name


def metric_bounds(metric: str) -> tuple[float, float] | None:
    """The range of a trace metric's per-deal values: 0..1 for a rate, else None."""
    if metric in LEVEL_METRICS:
        return LEVEL_METRICS[metric][1]
    return est.WIN_BOUNDS if metric.endswith(("_win", "_rate")) else None


def convergence_verdict(levels: pd.DataFrame, metric: str = "first_player_win",
                        margin: float = est.DEFAULT_MARGIN, *,
                        duels: pd.DataFrame | None = None,
                        budgets: Sequence[float | None] | None = None,
                        alpha: float = 0.05, power: float = 0.8,
                        bounds: tuple[float, float] | None | str = "auto",
                        n0: int | None = None) -> ConvergenceVerdict:
    """Whether ``metric`` has converged along the ladder, from every level.

    ``levels``: per-deal values, one row per (level, deal) with a ``level`` number (ladder
    order, 0 the weakest) and a ``metric`` column (:func:`level_deals`). ``duels``: the
    per-deal win shares of each level against the one below (:func:`duel_deals`): the
    strength axis is then the ladder's cumulative Elo. ``budgets``: each level's budget
    (None for a scripted level), the axis when the duels do not cover every step.
    ``bounds``: the metric's range ("auto": 0..1 for a rate). ``n0``: anytime-valid
    intervals (a trace that adds deals until decided). The verdict is that of
    :func:`patchsim.analysis.skill_fit.trend_verdict` on the weighted line's slope."""
    metric = ALIASES.get(metric, metric)
    present = sorted(int(x) for x in pd.unique(levels["level"]))
    if len(present) < 2:
        raise ValueError(f"convergence_verdict: {metric} needs two levels, got "
                         f"{len(present)}")

    bots = (levels.groupby("level")["bot"].first().astype(str) if "bot" in levels.columns
            else pd.Series(dtype=str))
    names = [str(bots.get(i, i)) for i in range(present[-1] + 1)]
    steps, strength = None, None
    if duels is not None and len(duels):
        b = list(budgets) if budgets is not None and len(budgets) == len(names) else None
        steps = duel_table(duels, names, b)
        w = duels[duels["level"] == present[-1]]["win"].to_numpy(dtype=float)
        strength = est.mean_estimate(w, est.VERDICT_LEVEL, est.WIN_BOUNDS) if len(w) else None
    axis = sf.strength_axis(steps, budgets, len(names))
    return sf.trend_verdict(sf.by_level(levels, metric, present), [axis.x[i] for i in present],
                            axis, metric, margin, top=names[present[-1]], strength=strength,
                            bounds=metric_bounds(metric) if isinstance(bounds, str) else bounds,
                            alpha=alpha, power=power, n0=n0)


def diversity_table(deals: pd.DataFrame, metric: str = "first_player_win",
                    margin: float = est.DEFAULT_MARGIN, reference: str | None = None,
                    alpha: float = 0.05) -> pd.DataFrame:
    """Does ``metric`` depend on how self-play is made diverse? ``deals``: one row per
    (method, deal) with a ``method`` column and ``metric`` (e.g. :func:`level_deals` of the
    same level played with each method). One row per method: its mean with a 95% interval,
    and for every method but ``reference`` (default the first) the change from the
    reference on common deals with its verdict against ``margin`` (one Holm family)."""
    methods = list(dict.fromkeys(deals["method"]))
    reference = reference or methods[0]
    bounds = est.WIN_BOUNDS if metric in RATE_LIKE else None
    ref = deals[deals["method"] == reference].set_index("deal")[metric]
    rows: list[dict[str, object]] = []
    changes: list[tuple[int, est.Estimate]] = []
    for m in methods:
        d = deals[deals["method"] == m].set_index("deal")[metric]
        e = est.mean_estimate(d.to_numpy(dtype=float), est.VERDICT_LEVEL, bounds)
        row = {"method": m, "deals": e.deals, "mean": e.value, "lo": e.lo, "hi": e.hi}
        if m != reference:
            common = ref.index.intersection(d.index)
            c = est.paired_difference(ref.loc[common].to_numpy(dtype=float),
                                      d.loc[common].to_numpy(dtype=float), est.VERDICT_LEVEL,
                                      est.RATE_DIFF_BOUNDS if bounds else None)
            row.update({"diff": c.value, "diff_lo": c.lo, "diff_hi": c.hi})
            changes.append((len(rows), c))
        rows.append(row)
    out = pd.DataFrame(rows, columns=["method", "deals", "mean", "lo", "hi", "diff",
                                      "diff_lo", "diff_hi"])
    out["verdict_kind"], out["verdict"] = "", ""
    if changes:
        scale, unit = (100.0, " points") if bounds else (1.0, "")
        found = est.verdicts([c for _, c in changes], margin, 0.0, alpha, family="holm")
        for (i, _), v in zip(changes, found, strict=True):
            out.loc[i, "verdict_kind"] = v.kind
            out.loc[i, "verdict"] = v.text(scale, unit)
    return out


# --- the headline and a trace read from a run ----------------------------------------------------
def headline(deals: pd.DataFrame, level: int, margin: float = est.DEFAULT_MARGIN,
             alpha: float = 0.05, n0: int | None = None) -> tuple[est.Estimate, est.Verdict]:
    """The first seat's win rate at ``level`` (per-deal values of :func:`level_deals`) with
    its 95% interval (anytime-valid with ``n0``: a trace played until decided), and its
    verdict against 50% +- ``margin``: decided when it is ``equivalent`` or ``differs``."""
    d = deals[deals["level"] == level]["first_player_win"].to_numpy(dtype=float)
    e = (est.mean_estimate(d, est.VERDICT_LEVEL, est.WIN_BOUNDS) if n0 is None
         else sf.spread_estimate(d, est.WIN_BOUNDS, n0=n0, clip=est.WIN_BOUNDS))
    return e, est.verdicts([e], margin, 0.5, alpha, family="none")[0]


def budget_of(spec: str) -> float | None:
    """The search budget a bot spec names (iterations, or ms per move when it has a time
    budget); None for a bot without one (a scripted bot)."""
    if not spec.startswith("mcts"):
        return None
    inner = spec[spec.find("(") + 1: -1] if "(" in spec else ""
    values = dict(part.split("=", 1) for part in (p.strip() for p in inner.split(","))
                  if "=" in part)
    try:
        if float(values.get("time_ms", 0)) > 0:
            return float(values["time_ms"])
        return float(values.get("iterations", 1000 if "eval=learned" not in spec else 100))
    except ValueError:
        return None


@dataclass
class RunTrace:
    """The skill trace a run's own games hold: its self-play pairings as levels (weakest
    first, by the cross games between them, else in the run's order), each level against
    the one below where the run played that pairing."""

    ruleset: str
    levels: list[str]
    budgets: list[float | None]
    level_deals: pd.DataFrame
    duel_deals: pd.DataFrame
    levels_table: pd.DataFrame
    duels_table: pd.DataFrame
    verdict: ConvergenceVerdict | None
    metric: str = "first_player_win"
    margin: float = est.DEFAULT_MARGIN
    anytime_n0: int | None = None  # a run's games are a fixed sample


def _order_levels(games: pd.DataFrame, bots: list[str]) -> list[str]:
    """Self-play bots weakest first: by their win share in the run's cross games among them
    (the ladder's order), ties and bots without cross games kept in the run's order."""
    cross = games[(games["bot0"] != games["bot1"]).to_numpy()
                  & games["bot0"].isin(bots).to_numpy() & games["bot1"].isin(bots).to_numpy()]
    if cross.empty:
        return bots
    share = {b: float((cross["winner_bot"].astype(str) == b).sum()
                      / max(1, ((cross["bot0"] == b) | (cross["bot1"] == b)).sum()))
             for b in bots}
    return sorted(bots, key=lambda b: (share[b], bots.index(b)))


def run_traces(games: pd.DataFrame, events: pd.DataFrame | EventSummary | None = None,
               margin: float = est.DEFAULT_MARGIN) -> list[RunTrace]:
    """One trace per ruleset of a run whose games have at least one self-play pairing: its
    levels, per-level tables and (with two levels or more) the convergence verdict on the
    first seat's win rate."""
    out = []
    for ruleset, g in games.groupby("ruleset", sort=False, observed=True):
        sp = g[(g["bot0"] == g["bot1"]).to_numpy()]
        bots = [str(b) for b in dict.fromkeys(sp["bot0"].astype(str))]
        if not bots:
            continue
        levels = _order_levels(g, bots)
        budgets = [budget_of(b) for b in levels]
        ev = events  # a summary is read by game id; a table is filtered to the ruleset
        if isinstance(events, pd.DataFrame) and "ruleset" in events.columns:
            ev = events[(events["ruleset"] == ruleset).to_numpy()]
        ld = level_deals(sp, ev, levels)
        dd = duel_deals(g, levels)
        lt = level_table(ld, levels)
        # a run whose levels never met has no steps to show (not steps of zero deals)
        dt = duel_table(dd, levels, budgets) if len(dd) else duel_table(dd, [])
        v = (convergence_verdict(ld, "first_player_win", margin, duels=dd, budgets=budgets)
             if len(levels) >= 2 else None)
        out.append(RunTrace(str(ruleset), levels, budgets, ld, dd, lt, dt, v,
                            margin=margin))
    return out


def lopsided_pairings(games: pd.DataFrame) -> pd.DataFrame:
    """The cross pairings (per ruleset) whose outcome the skill gap decides, by the one rule
    of :func:`patchsim.analysis.seats.seat_information` (the stronger bot wins over 90% of
    games from either seat, lower bounds): ruleset, pairing, the stronger bot, its win rate
    and 95% interval over deals, and the rule's reason."""
    rows = []
    cross = games[(games["bot0"] != games["bot1"]).to_numpy()]
    for (ruleset, pairing), g in cross.groupby(["ruleset", "pairing"], sort=False,
                                               observed=True):
        if g.empty:
            continue
        informative, reason = seat_information(g)
        if informative:
            continue
        a, b = str(g["bot0"].iloc[0]), str(g["bot1"].iloc[0])
        won = (g["winner_bot"].astype(str) == a).to_numpy(dtype=float)
        e = est.rate(won, g["deal"].to_numpy())
        strong, lo, hi, value = (a, e.lo, e.hi, e.value) if e.value >= 0.5 else (
            b, 1 - e.hi, 1 - e.lo, 1 - e.value)
        rows.append({"ruleset": str(ruleset), "pairing": str(pairing), "stronger": strong,
                     "win": value, "lo": lo, "hi": hi, "deals": e.deals, "reason": reason})
    return pd.DataFrame(rows, columns=["ruleset", "pairing", "stronger", "win", "lo", "hi",
                                       "deals", "reason"])
