"""The skill trace: a balance metric measured along a ladder of players, from the scripted
bots through a search at doubling budgets, with the strength gained at each step and a
verdict on whether the metric has converged (issue 20; Ludii's skill trace).

For each level the trace plays, through the library runner (:func:`patchsim.play.simulate.
simulate`, common deals from one seed for every part):

- the level's self-play (its balance metrics, :func:`patchsim.analysis.skill.level_table`),
  with its cost in games per second;
- the level against the level below, seat-swapped on the same deals
  (:func:`patchsim.analysis.skill.duel_table`: win rate, Elo gain and gain per doubling);
- at the strongest level, self-play once more with each other way of making games diverse,
  so the trace shows whether the primary metric depends on the method
  (:func:`patchsim.analysis.skill.diversity_table`).

Until decided (``until_decided``): every level's self-play and duel are run folders that grow
by a step of deals at a time (the runner tops them up), until the trend from every level
(:func:`patchsim.analysis.skill.convergence_verdict`) and the first seat under the strongest
level are both decided on anytime-valid intervals, or a budget of deals a level runs out;
a rerun on the same folders re-reads the looks already played and goes on from there.

Diversity: a deterministic search plays one game per deal in self-play, and the answer then
rests on a few hundred particular games. The principled method (``temperature``) samples each
of the first ``SAMPLE_PLIES`` plies in proportion to the root visit counts (temperature 1):
early moves the search judges about equal are played about equally often, a move it judges
poor almost never, and from then on it plays its best move. ``epsilon`` instead plays a
uniformly random searched root move with probability 0.05 on every move, all game long (the
committed studies' method; it changes the answer by several points). ``none`` keeps the
search deterministic.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis import skill as sk
from patchsim.analysis.skill_rules import change_by_level
from patchsim.atomic import current_umask
from patchsim.bots.registry import BotSpecError, canonical_spec, make_bot, parse_spec
from patchsim.document import render
from patchsim.document.model import slug
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset
from patchsim.experiments.skill_play import Player, SkillError, ladder_tables
from patchsim.play.config import RunError, default_bots
from patchsim.play.runfolder.names import (
    SKILL_CHANGES,
    SKILL_DIVERSITY,
    SKILL_DOCUMENT,
    SKILL_DUEL_DEALS,
    SKILL_DUELS,
    SKILL_LEVEL_DEALS,
    SKILL_LEVELS,
    SKILL_STUDY,
)
from patchsim.play.simulate import simulate
from patchsim.play.steps import step_targets
from patchsim.reporting.skill_section import trace_document, traces_document

DEFAULT_LEVELS = (25, 50, 100, 200, 400)  # search iterations per move (or ms under timed)
DEFAULT_FLOOR = ("greedy",)
# deals a level: enough that the strongest level alone decides the first seat. The per-deal
# spread of its first-seat win share (two seat-swapped games a deal) is about 0.45 (edition
# 2, mcts(eval=learned, iterations=400, temperature): 0.452 over 100 deals, seed 13, and
# 0.443 over 16, seed 12; README: The skill trace), so 350 deals give a 95% interval of
# about +-4.7 points and decide a first seat 7 points beyond the margin (issue 28's trace:
# about 59% against 50 +- 2) with about 80% power: ((1.96 + 0.84) 0.45 / 0.07)^2 = 324
DEFAULT_DEALS = 350
DEFAULT_BUDGET = 3000  # until decided: deals a level at most
DEFAULT_STEP = 100  # until decided: deals added to every level at a time
TEMPERATURE = 1.0  # root visit counts to the power 1 / T: in proportion to the visits
SAMPLE_PLIES = 8  # about the first four moves of each seat
EPSILON = 0.05
METHODS = ("temperature", "epsilon", "none")
TIMED_ITERATIONS = 10**6  # under a time budget the iterations only bound the tree
STUDY_FILE = SKILL_STUDY
# the level table's packing figures a trace's JSON gives per level (issue 29)
PACKING_FIGURES = ("mean_score", "bonus_rate", "holes", "opens_with_passes")


def diversity_params(method: str) -> dict[str, Any]:
    """The search parameters that make its self-play diverse by ``method``."""
    if method == "temperature":
        return {"temperature": TEMPERATURE, "sample_plies": SAMPLE_PLIES}
    if method == "epsilon":
        return {"epsilon": EPSILON}
    if method == "none":
        return {}
    raise SkillError(f"diversity: {method!r} is not one of {', '.join(METHODS)} (or auto)")


# the knobs a diversity method sets: the method decides them, whatever the search spec says
DIVERSITY_KNOBS = ("temperature", "sample_plies", "epsilon")


def level_spec(search: str, budget: float, method: str, timed: bool = False) -> str:
    """The canonical spec of the search ``search`` at ``budget`` iterations (or ms per move
    under ``timed``), made diverse by ``method`` (which replaces any diversity knobs of
    ``search``: "none" is the deterministic search, "epsilon" epsilon alone)."""
    try:
        name, params = parse_spec(search)
    except BotSpecError as e:
        raise SkillError(f"search: {e}") from None
    params = {k: v for k, v in params.items()
              if k not in ("iterations", "time_ms", *DIVERSITY_KNOBS)}
    if timed:
        params.update(time_ms=float(budget), iterations=TIMED_ITERATIONS)
    else:
        params["iterations"] = int(budget)
    params.update(diversity_params(method))
    text = canonical_spec(name, params)
    try:
        return make_bot(text).spec
    except BotSpecError as e:
        raise SkillError(f"search: {text}: {e}") from None


def resolve_method(search: str, method: str) -> str:
    """``auto``: the temperature method when the search takes it, else epsilon (a search
    without either, such as the rollout search, varies through its rollouts: none)."""
    if method != "auto":
        diversity_params(method)  # a known method
        return method
    for m in ("temperature", "epsilon"):
        try:
            level_spec(search, 1, m)
            return m
        except SkillError:
            continue
    return "none"


def default_search(ruleset: Ruleset | Sequence[Ruleset]) -> str:
    """The run's default search for these rulesets, without its budget and its diversity
    knobs (the learned search where a model is trained for every one of them, else the
    rollout search)."""
    rulesets = [ruleset] if isinstance(ruleset, Ruleset) else list(ruleset)
    name, params = parse_spec(default_bots(rulesets)[-1])
    # the budget is the ladder's, the diversity the trace's method (the main job's line-up
    # samples its openings; the trace's deterministic comparison must not)
    for key in ("iterations", *DIVERSITY_KNOBS):
        params.pop(key, None)
    return canonical_spec(name, params)


@dataclass
class SkillTrace:
    """A played skill trace: the levels (bot specs, ladder order, with their budgets; None
    for a scripted level), the per-deal tables, the per-level tables, the diversity check
    and the convergence verdict on ``metric``."""

    ruleset: str
    levels: list[str]
    budgets: list[float | None]
    method: str
    timed: bool
    deals: int
    seed: int
    metric: str
    margin: float
    level_deals: pd.DataFrame = field(repr=False)
    duel_deals: pd.DataFrame = field(repr=False)
    levels_table: pd.DataFrame = field(repr=False)
    duels_table: pd.DataFrame = field(repr=False)
    diversity: pd.DataFrame = field(repr=False)
    verdict: sk.ConvergenceVerdict | None = None
    seconds: float = 0.0
    games: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    # played until decided: the deals of the anytime-valid intervals' tightest point (the
    # step), and how it stopped (rule, step, budget, deals, decided, every look)
    anytime_n0: int | None = None
    stopping: dict[str, Any] = field(default_factory=dict)

    @property
    def top(self) -> str:
        return self.levels[-1]

    def headline(self) -> dict[str, Any]:
        """The first seat's win rate at the strongest level, its interval and its verdict
        against 50% +- the margin (a decided verdict is ``equivalent`` or ``differs``)."""
        margin = self.margin if self.metric == "first_player_win" else est.DEFAULT_MARGIN
        e, v = sk.headline(self.level_deals, len(self.levels) - 1, margin, n0=self.anytime_n0)
        return {"ruleset": self.ruleset, "level": self.top, "deals": e.deals,
                "rate": e.value, "lo": e.lo, "hi": e.hi, "verdict_kind": v.kind,
                "verdict": v.text(), "decided": v.kind in ("equivalent", "differs"),
                "trace": self.verdict.text() if self.verdict else "",
                "trace_kind": self.verdict.kind if self.verdict else ""}

    def figures(self) -> dict[str, Any]:
        """The trace's figures as plain data (what the benchmark prints as JSON and the
        trace folder stores): per level its budget, cost, metric, strength gain,
        degenerate share and share of deals with two different games, how well it packs
        (``PACKING_FIGURES``, each [value, lo, hi]), the verdict and the diversity check."""
        rows = []
        duels = self.duels_table.set_index("level")
        for r in self.levels_table.itertuples():
            i = int(r.level)
            row = {"level": i, "bot": r.bot, "budget": self.budgets[i], "deals": int(r.deals),
                   "games_per_s": _num(getattr(r, "games_per_s", math.nan)),
                   self.metric: [_num(getattr(r, self.metric)),
                                 _num(getattr(r, f"{self.metric}_lo")),
                                 _num(getattr(r, f"{self.metric}_hi"))],
                   "degenerate": _num(r.degenerate), "two_games": _num(r.two_games)}
            # how well the level packs (issue 29), each with its 95% interval over deals
            for m in PACKING_FIGURES:
                row[m] = [_num(getattr(r, m)), _num(getattr(r, f"{m}_lo")),
                          _num(getattr(r, f"{m}_hi"))]
            if i in duels.index:
                d = duels.loc[i]
                row.update({"win_vs_below": [_num(d["win"]), _num(d["win_lo"]),
                                             _num(d["win_hi"])],
                            "elo": _num(d["elo"]), "cum_elo": _num(d["cum_elo"]),
                            "elo_per_doubling": _num(d["elo_per_doubling"])})
            rows.append(row)
        div = [{k: (_num(v) if isinstance(v, float) else v) for k, v in r.items()}
               for r in self.diversity.to_dict("records")]
        return {"ruleset": self.ruleset, "metric": self.metric, "margin": self.margin,
                "method": self.method, "timed": self.timed, "deals": self.deals,
                "seed": self.seed, "seconds": round(self.seconds, 2), "levels": rows,
                "verdict": self.verdict.text() if self.verdict else "",
                "verdict_kind": self.verdict.kind if self.verdict else "",
                "headline": self.headline(), "diversity": div,
                "trend": self._trend(), "stopping": self.stopping}

    def _trend(self) -> dict[str, Any]:
        """The weighted line behind the verdict: its axis, slope and value at the strongest
        level, each [value, lo, hi], and its fit."""
        if self.verdict is None:
            return {}
        f = self.verdict.fit
        return {"axis": self.verdict.axis.axis, "per": self.verdict.axis.per,
                "x": [_num(x) for x in f.x], "deals": f.deals, "anytime": f.anytime,
                "slope": [_num(f.slope.value), _num(f.slope.lo), _num(f.slope.hi)],
                "top": [_num(f.top.value), _num(f.top.lo), _num(f.top.hi)],
                "chi2": _num(f.chi2), "df": f.df, "widen": _num(f.widen)}


def _num(x: Any) -> float | None:
    """A finite float for JSON, None for NaN or infinity."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return round(v, 6) if math.isfinite(v) else None


def _levels(floor: Sequence[str], search: str, budgets: Sequence[float], method: str,
            timed: bool) -> tuple[list[str], list[float | None]]:
    specs: list[str] = []
    for i, f in enumerate(floor):
        try:
            specs.append(make_bot(f).spec)
        except BotSpecError as e:
            raise SkillError(f"bots[{i}]: {e}") from None
    if not budgets:
        raise SkillError("levels: give at least one budget (e.g. 25,50,100)")
    bad = [b for b in budgets if isinstance(b, bool) or not (
        isinstance(b, int | float) and b > 0 and math.isfinite(b))]
    if bad:
        raise SkillError(f"levels: budgets must be numbers above 0, got {bad[0]!r}")
    if not timed and any(float(b) != int(b) for b in budgets):
        raise SkillError(f"levels: iterations are whole numbers, got "
                         f"{', '.join(map(str, budgets))} (fractions of a ms need --timed)")
    if list(budgets) != sorted(set(budgets)):
        raise SkillError(f"levels: budgets must increase, got {', '.join(map(str, budgets))}")
    specs += [level_spec(search, b, method, timed) for b in budgets]
    if len(set(specs)) != len(specs):
        raise SkillError(f"bots: a level appears twice ({', '.join(specs)})")
    return specs, [None] * len(floor) + [float(b) for b in budgets]


def skill_trace(ruleset: str | Ruleset, *, levels: Sequence[float] = DEFAULT_LEVELS,
                floor: Sequence[str] = DEFAULT_FLOOR, search: str | None = None,
                deals: int = DEFAULT_DEALS, seed: int = 1, jobs: int = 1,
                timed: bool = False, diversity: str = "auto", compare: bool = True,
                metric: str = "first_player_win", margin: float = est.DEFAULT_MARGIN,
                echo: Callable[[str], None] | None = None,
                bot_path: Sequence[str] = (), until_decided: bool = False,
                budget: int = DEFAULT_BUDGET,
                work_dir: str | os.PathLike[str] | None = None) -> SkillTrace:
    """Play a skill trace on ``ruleset`` (a name, a YAML path or a Ruleset).

    The ladder is the scripted bots ``floor`` then ``search`` (default: the run's default
    search for the ruleset) at each budget of ``levels`` (iterations per move; ms per move
    with ``timed``, whose games depend on the machine), made diverse by ``diversity``
    (``temperature``, ``epsilon``, ``none``, or ``auto``: see :func:`resolve_method`).
    Every level plays ``deals`` seat-swapped deals in self-play and against the level below,
    on the same deals (``seed``); with ``compare`` the strongest level's self-play is played
    again with every other method. ``jobs`` workers do not change the games. ``echo`` gets a
    line per part played (progress).

    ``until_decided``: ``deals`` more deals at every level at a time, up to ``budget`` deals
    a level, until both the trend (:func:`patchsim.analysis.skill.convergence_verdict`) and
    the first seat under the strongest level are decided, every interval anytime-valid; the
    parts are run folders under ``work_dir``, so that the same call again resumes (and
    re-reads the looks already played from their games). Raises SkillError for a bad
    request, RunError and BotError as the runner does."""
    try:
        rs = ruleset if isinstance(ruleset, Ruleset) else load_ruleset(ruleset)
    except RulesetError as e:
        raise SkillError(f"ruleset: {e}") from None
    if not (isinstance(deals, int) and deals >= 2):
        raise SkillError(f"deals: at least 2 deals per level, got {deals!r}")
    if until_decided:
        if not (isinstance(budget, int) and not isinstance(budget, bool) and budget >= deals):
            raise SkillError(f"budget: at least the step of {deals} deals a level, got "
                             f"{budget!r}")
        if work_dir is None:
            raise SkillError("out: a trace until decided needs a folder for its parts")
    try:
        metric = sk.trace_metric(metric)
    except ValueError as e:
        raise SkillError(f"metric: {e}") from None
    lo, hi = sk.LEVEL_METRICS[metric][1] or (-math.inf, math.inf)
    if not (isinstance(margin, int | float) and 0 < margin < (hi - lo) / 2):
        raise SkillError(f"margin: expected a number above 0 and below half the metric's "
                         f"range, got {margin!r}")
    search = search or default_search(rs)
    method = resolve_method(search, diversity)
    specs, budgets = _levels(floor, search, levels, method, timed)
    say = echo or (lambda _line: None)
    t0 = time.perf_counter()
    player = Player(rs, seed=seed, jobs=jobs, bot_path=bot_path, timed=timed,
                     work=Path(work_dir) if until_decided and work_dir else None, say=say)
    # a first tiny game loads what the runner needs, so that level 0's cost is its own
    if not timed and not until_decided:
        simulate(rs, specs[:1], games=2, seed=seed, pairings="self", bot_path=bot_path)
    head_margin = margin if metric == "first_player_win" else est.DEFAULT_MARGIN
    n0 = deals if until_decided else None
    stopping: dict[str, Any] = {}
    if not until_decided:
        ladder = ladder_tables(player, specs, budgets, deals, metric, margin, None)
    else:
        looks: list[dict[str, Any]] = []
        for target in step_targets(budget, deals):
            ladder = ladder_tables(player, specs, budgets, target, metric, margin, n0)
            first, v = sk.headline(ladder.level_deals, len(specs) - 1, head_margin, n0=n0)
            trend = ladder.verdict
            done = (v.kind in ("equivalent", "differs")
                    and (trend is None or trend.kind != sk.UNDECIDED))
            looks.append({"deals": target, "first_seat": v.kind,
                          "trend": trend.kind if trend else "", "decided": done})
            say(f"{target} deals a level: first seat {v.kind} ({100 * first.value:.1f}% "
                f"[{100 * first.lo:.1f}, {100 * first.hi:.1f}] anytime-valid)"
                + (f"; trend {trend.kind} ({_slope_words(trend)})" if trend else ""))
            if done:
                break
        stopping = {"rule": "until decided", "step": deals, "budget": budget,
                    "deals": looks[-1]["deals"], "decided": looks[-1]["decided"],
                    "looks": looks}
    n = stopping.get("deals", deals)
    diversity_tab = pd.DataFrame()
    if compare:
        rows = [ladder.level_deals[ladder.level_deals["level"] == len(specs) - 1]
                .assign(method=method)]
        for m in (m for m in METHODS if m != method):
            try:
                spec = level_spec(search, levels[-1], m, timed)
            except SkillError:
                continue  # a search that does not take this method
            g, ev = player.play([spec], "self", f"strongest level, diversity by {m}", n)
            rows.append(sk.level_deals(g, ev, [spec]).assign(method=m))
        if len(rows) > 1:
            diversity_tab = sk.diversity_table(pd.concat(rows, ignore_index=True), metric,
                                               margin, reference=method)
    return SkillTrace(rs.name, specs, budgets, method, timed, n, seed, metric,
                      float(margin), ladder.level_deals, ladder.duel_deals,
                      ladder.levels_table, ladder.duels_table, diversity_tab, ladder.verdict,
                      time.perf_counter() - t0, player.all_games(), n0, stopping)


def _slope_words(v: sk.ConvergenceVerdict) -> str:
    s = v.slope
    k, u = v.scale, v.unit
    return (f"{k * s.value:+.1f}{u} {v.axis.per} [{k * s.lo:+.1f}, {k * s.hi:+.1f}]")


def skill_traces(rulesets: Sequence[str | Ruleset], **kw: Any) -> list[SkillTrace]:
    """A skill trace per ruleset (the first is the base of :func:`rule_change`), each with
    the same ladder, deals and seed (:func:`skill_trace`'s keywords)."""
    names: list[str] = []
    out = []
    resolved = []
    for i, ref in enumerate(rulesets):
        try:
            resolved.append(ref if isinstance(ref, Ruleset) else load_ruleset(ref))
        except RulesetError as e:
            raise SkillError(f"ruleset: rulesets[{i}]: {e}") from None
    if not kw.get("search"):
        kw["search"] = default_search(resolved)  # one ladder for every ruleset
    work = kw.pop("work_dir", None)
    for i, ref in enumerate(resolved):
        # until decided: each ruleset's parts in a folder of their own
        folder = (Path(work) / slug(ref.name) if work is not None and len(resolved) > 1
                  else work)
        t = skill_trace(ref, work_dir=folder, **kw)
        if t.ruleset in names:
            raise SkillError(f"ruleset: {t.ruleset!r} appears twice (rulesets[{i}])")
        names.append(t.ruleset)
        out.append(t)
    return out


def rule_change(traces: Sequence[SkillTrace]) -> pd.DataFrame:
    """Each ruleset's change of the primary metric from the first ruleset's, at every level
    of the ladder, on common deals (:func:`patchsim.analysis.skill_rules.change_by_level`)."""
    deals = pd.concat([t.level_deals.assign(ruleset=t.ruleset) for t in traces],
                      ignore_index=True)
    return change_by_level(deals, traces[0].ruleset, traces[0].metric, traces[0].margin)


def _write_tables(trace: SkillTrace, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    trace.levels_table.to_csv(folder / f"{SKILL_LEVELS}.csv", index=False)
    trace.levels_table.to_parquet(folder / f"{SKILL_LEVELS}.parquet", index=False)
    trace.duels_table.to_csv(folder / f"{SKILL_DUELS}.csv", index=False)
    trace.duels_table.to_parquet(folder / f"{SKILL_DUELS}.parquet", index=False)
    trace.level_deals.to_parquet(folder / SKILL_LEVEL_DEALS, index=False)
    trace.duel_deals.to_parquet(folder / SKILL_DUEL_DEALS, index=False)
    trace.diversity.to_csv(folder / SKILL_DIVERSITY, index=False)
    (folder / STUDY_FILE).write_text(json.dumps(trace.figures(), indent=1) + "\n",
                                     encoding="utf-8")


def write_trace(trace: SkillTrace | Sequence[SkillTrace], out_dir: str | os.PathLike[str],
                command: str = "", parts: str | os.PathLike[str] | None = None) -> Path:
    """Write the trace into ``out_dir``, a folder that must not exist yet (written beside it
    and renamed into place, so it appears whole or not at all): levels.csv/.parquet and
    duels.csv/.parquet (one row per level), level_deals.parquet and duel_deals.parquet (one
    row per level and deal), diversity.csv, trace.json (the figures), skill.png (the
    metric against strength, the cost beside it) and skill.html / skill.md. Several traces
    (one per ruleset, :func:`skill_traces`): each ruleset's tables in a folder of its own,
    one document for all with the change of rules at every level (changes.csv). ``parts``: the
    run folders of a trace played until decided, moved into the trace as ``runs/`` (its
    games are kept)."""
    traces = [trace] if isinstance(trace, SkillTrace) else list(trace)
    target = Path(out_dir)
    if target.exists():
        raise SkillError(f"out: {target} already exists; write the trace to a new folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        if len(traces) == 1:
            _write_tables(traces[0], tmp)
            doc = trace_document(traces[0], traces[0].diversity, _method_text(traces[0]),
                                 command)
        else:
            for t in traces:
                _write_tables(t, tmp / slug(t.ruleset))
            changes = rule_change(traces)
            changes.to_csv(tmp / SKILL_CHANGES, index=False)
            doc = traces_document(traces, changes, _method_text(traces[0]), command)
        render.write(doc, tmp, SKILL_DOCUMENT)  # skill.html, skill.md and the figures
        if parts is not None and Path(parts).is_dir():
            shutil.move(os.fspath(parts), tmp / "runs")  # last: a failure above keeps them
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp leaves 0700
        os.rename(tmp, target)
    except BaseException:
        if parts is not None and (tmp / "runs").is_dir() and not Path(parts).exists():
            shutil.move(os.fspath(tmp / "runs"), os.fspath(parts))  # the games stay
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _method_text(trace: SkillTrace) -> str:
    if trace.method == "temperature":
        return (f"the first {SAMPLE_PLIES} plies sampled in proportion to the root visit "
                f"counts (temperature {TEMPERATURE:g}), then the most-visited move")
    if trace.method == "epsilon":
        return f"a random searched root move with probability {EPSILON:g} on every move"
    return "none (deterministic search: one distinct game per deal in self-play)"


__all__ = ["DEFAULT_LEVELS", "METHODS", "RunError", "SkillError", "SkillTrace",
           "default_search", "diversity_params", "level_spec", "resolve_method", "rule_change",
           "skill_trace", "skill_traces", "write_trace"]
