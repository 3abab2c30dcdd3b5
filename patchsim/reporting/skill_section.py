"""The skill trace in documents (:mod:`patchsim.document`): the headline that opens a report
(one line per ruleset: the first seat's win rate under the strongest level, its interval, a
decided verdict, and the trace behind it), the trace's own section (levels, steps, diversity,
figure), and the document ``patchsim skill`` writes.

The builders take any trace with the tables of :mod:`patchsim.analysis.skill` (a played
:class:`patchsim.experiments.skill.SkillTrace`, or a :class:`patchsim.analysis.skill.RunTrace`
read from a run's games), so that a run's report and a trace folder say the same things in
the same words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis import skill as sk
from patchsim.analysis.degenerate import OPENING_PASSES
from patchsim.analysis.skill_rules import holds_at_every_level
from patchsim.document import format as fm
from patchsim.document.model import Col, Document, Section, Table, slug
from patchsim.reporting.plots import png_bytes
from patchsim.reporting.skill_plot import short_label, skill_figure

HEADLINE = "Headline"
FIGURE = "skill.png"


class TraceLike(Protocol):
    ruleset: str
    levels: list[str]
    budgets: list[float | None]
    level_deals: pd.DataFrame
    levels_table: pd.DataFrame
    duels_table: pd.DataFrame
    verdict: sk.ConvergenceVerdict | None
    metric: str
    margin: float
    anytime_n0: int | None  # a trace played until decided: anytime-valid intervals


class ComparisonLike(Protocol):
    """What the headline reads of a comparison of two rulesets
    (:class:`patchsim.analysis.compare.Comparison`)."""

    label_a: str
    label_b: str

    def metric(self, name: str, group: str | None = None) -> pd.Series | None: ...


def headline_line(trace: TraceLike) -> str:
    """'edition2: the first seat wins 57.0% [54.2%, 59.8%] under the strongest level
    (`mcts(...)`, 300 deals): differs by ...; skill trace: still moving: ...'."""
    margin = trace.margin if trace.metric == "first_player_win" else est.DEFAULT_MARGIN
    e, v = sk.headline(trace.level_deals, len(trace.levels) - 1, margin,
                       n0=trace.anytime_n0)
    what = ("no first-player advantage beyond the margin, " if v.kind == "equivalent"
            else "a first-player advantage, " if v.kind == "differs" and e.value > 0.5
            else "a second-player advantage, " if v.kind == "differs" else "")
    line = (f"**{trace.ruleset}**: the first seat wins {fm.pct(e.value)} "
            f"{fm.ci(e.lo, e.hi)} under the strongest level (`{trace.levels[-1]}`, "
            f"{fm.plural(e.deals, 'deal')}): {what}{v.text()}")
    if trace.verdict is not None:
        line += f". Skill trace ({len(trace.levels)} levels): {trace.verdict.text()}"
    else:
        line += ". Skill trace: one level only, so whether stronger play moves it is unknown"
    return line + "."


def lopsided_line(r: Any) -> str:
    """A pairing the skill gap decides, labelled as telling nothing about the seats."""
    return (f"{r['ruleset']}, `{r['pairing']}`: `{r['stronger']}` wins {fm.pct(r['win'])} "
            f"{fm.ci(r['lo'], r['hi'])}: the skill gap decides these games (the stronger bot wins "
            "from either seat, so a deal's two games split between the seats), and their "
            "seat figures tell nothing about the seats, whatever a verdict on them says.")


def rule_change_lines(traces: Sequence[TraceLike],
                      comparisons: Sequence[ComparisonLike]) -> list[str]:
    """For each comparison of a run's rulesets (:class:`patchsim.analysis.compare.Comparison`,
    B against the reference A), whether the change of the first seat's win rate holds at
    every level of A's trace, read off the comparison's own verdicts (the ones the report's
    verdict states, in their family), so the two never disagree."""
    out = []
    for c in comparisons:
        ref = next((t for t in traces if t.ruleset == c.label_a), None)
        if ref is None or len(ref.levels) < 2:
            continue
        rows = []
        for level, bot in enumerate(ref.levels):
            m = c.metric("first-seat win rate", f"{bot} vs {bot}")
            if m is None or not isinstance(m.get("verdict_kind"), str):
                continue
            rows.append({"ruleset": c.label_b, "level": level, "bot": bot,
                         "verdict_kind": m["verdict_kind"], "diff": m["diff"]})
        if len(rows) < 2:
            continue
        text = holds_at_every_level(pd.DataFrame(rows), short_label)[c.label_b]
        out.append(f"**{c.label_b}** against {c.label_a}, the first seat's win rate at each "
                   f"level of the ladder: {text} (the verdicts below).")
    return out


def headline_section(traces: Sequence[TraceLike],
                     lopsided: pd.DataFrame | None = None,
                     comparisons: Sequence[ComparisonLike] = ()) -> Section:
    """The section that opens a report: one line per ruleset; with ``lopsided``
    (:func:`patchsim.analysis.skill.lopsided_pairings`) the pairings the skill gap decides;
    with ``comparisons`` (a run's rulesets against its first) whether each change of rules
    holds at every level."""
    s = Section(HEADLINE)
    s.bullets([headline_line(t) for t in traces] + rule_change_lines(traces, comparisons))
    if lopsided is not None and len(lopsided):
        s.p("Pairings that say nothing about the seats:")
        s.bullets(lopsided_line(r) for r in lopsided.to_dict("records"))
    s.p("The first seat's win rate is measured in the strongest level's self-play, with a "
        "95% interval over deals and a verdict against 50% within the study's margin; the "
        "skill trace fits a weighted line through every level (the metric against strength: "
        "the ladder's cumulative Elo) and says from its slope's interval whether the metric "
        "has stopped moving with strength (converged: flat within the margin per 100 Elo), "
        "still moves (beyond it) or cannot be told yet (undecided).")
    return s


def _rate(row: Any, m: str) -> str:
    return f"{fm.pct(row[m])} {fm.ci(row[f'{m}_lo'], row[f'{m}_hi'])}"


def _plain(row: Any, m: str) -> str:
    return fm.est_ci(row[m], row[f"{m}_lo"], row[f"{m}_hi"])


def levels_table(trace: TraceLike) -> Table:
    """One row per level: self-play balance with 95% intervals over deals, cost."""
    rows = []
    for r in trace.levels_table.to_dict("records"):
        rows.append({
            "level": short_label(str(r["bot"])), "deals": fm.integer(r["deals"]),
            "first": _rate(r, "first_player_win"), "margin": _plain(r, "score_diff"),
            "tie": _rate(r, "tie_break_rate"), "bonus_rate": _rate(r, "bonus_rate"),
            "score": _plain(r, "mean_score"), "holes": _plain(r, "holes"),
            "leather": _rate(r, "leather_useful"),
            "first_leather": _rate(r, "first_leather_useful"),
            "degenerate": _rate(r, "degenerate"),
            "opens": _rate(r, "opens_with_passes"),
            "two": _rate(r, "two_games"),
            "cost": fm.num(r.get("games_per_s"), 1)})
    cols = [Col("level", "level", align="left"), Col("deals", "deals"),
            Col("first", "first seat wins"), Col("margin", "first seat's margin"),
            Col("tie", "tie-break"), Col("bonus_rate", "7x7 bonus"),
            Col("score", "mean final score"), Col("holes", "holes at the end"),
            Col("leather", "leather filled a hole"),
            Col("first_leather", "first leather filled a hole"),
            Col("degenerate", "degenerate games"),
            Col("opens", f"opens with {OPENING_PASSES}+ passes"),
            Col("two", "deals with two different games")]
    note = ("Mean final score and holes at the end: per seat (holes: empty squares whose "
            "four neighbours are covered or off the quilt; not recorded in runs stored "
            f"before them). Degenerate: {sk.DEGENERATE_PASSES} or more passes in the game, or "
            f"a seat below {sk.DEGENERATE_SCORE} points. Opens with {OPENING_PASSES}+ passes: "
            "the game's first moves are that many passes in a row, both seats together. Two "
            "different games: the deal's games from the two seat orders are not the same game "
            "(how diverse the self-play is).")
    if "games_per_s" in trace.levels_table.columns:  # a played trace knows its cost
        cols.append(Col("cost", "games/s"))
        note += " Cost: games per second of the level's self-play, as played."
    return Table(cols, rows, "Self-play at each level (95% intervals over deals)", note)


def duels_table(trace: TraceLike) -> Table:
    """One row per step: the level against the level below."""
    rows = []
    for r in trace.duels_table.to_dict("records"):
        rows.append({
            "level": short_label(str(r["bot"])), "below": short_label(str(r["below"])),
            "deals": fm.integer(r["deals"]), "win": _rate(r, "win"),
            "elo": fm.est_ci(r["elo"], r["elo_lo"], r["elo_hi"], 0),
            "per": fm.est_ci(r["elo_per_doubling"], r["elo_per_doubling_lo"],
                             r["elo_per_doubling_hi"], 0),
            "cum": fm.est_ci(r["cum_elo"], r["cum_elo_lo"], r["cum_elo_hi"], 0)})
    cols = [Col("level", "level", align="left"), Col("below", "against", align="left"),
            Col("deals", "deals"), Col("win", "wins"), Col("elo", "Elo gain"),
            Col("per", "Elo per doubling"), Col("cum", "cumulative Elo")]
    return Table(cols, rows, "Each level against the level below (seat-swapped, common "
                 "deals; 95% intervals over deals)")


def diversity_table(diversity: pd.DataFrame, metric: str) -> Table:
    """The strongest level's primary metric under each way of making self-play diverse."""
    rate = metric in sk.RATE_LIKE
    rows = []
    for r in diversity.to_dict("records"):
        value = (f"{fm.pct(r['mean'])} {fm.ci(r['lo'], r['hi'])}" if rate
                 else fm.est_ci(r["mean"], r["lo"], r["hi"]))
        rows.append({"method": r["method"], "deals": fm.integer(r["deals"]), "value": value,
                     "verdict": r.get("verdict") or "reference"})
    cols = [Col("method", "diversity", align="left"), Col("deals", "deals"),
            Col("value", sk.LEVEL_METRICS[metric][0]),
            Col("verdict", "change from the reference", align="left")]
    return Table(cols, rows, "Does the strongest level's answer depend on how self-play is "
                 "made diverse?")


def trace_section(trace: TraceLike, figure: str | None = FIGURE, png: bytes | None = None,
                  diversity: pd.DataFrame | None = None, title: str | None = None) -> Section:
    """A ruleset's skill trace: the verdict, the levels, the steps, the diversity check and
    the figure (``figure``: its path beside the document; ``png`` its bytes, drawn here
    when None)."""
    s = Section(title or f"Skill trace: {trace.ruleset}")
    if trace.verdict is not None:
        s.p(f"**{sk.LEVEL_METRICS[trace.metric][0]}**: {trace.verdict.text()}.")
    s.table(levels_table(trace))
    if len(trace.duels_table):
        s.table(duels_table(trace))
    elif len(trace.levels) >= 2:
        s.p("These levels played no games against each other, so how much stronger each one "
            "is was not measured here; `patchsim skill` on the same file plays each level "
            "against the one below (Elo per doubling of the budget).")
    if diversity is not None and len(diversity):
        s.table(diversity_table(diversity, trace.metric))
    if figure:
        if png is None:
            png = png_bytes(skill_figure(trace.levels_table, trace.duels_table, trace.metric,
                                         trace.margin, trace.ruleset))
        against = ("against strength (cumulative Elo), with 95% bands; each level's cost "
                   "beside it" if len(trace.duels_table) else
                   "at each level of the ladder, with 95% bands")
        s.figure(figure, png, f"{sk.LEVEL_METRICS[trace.metric][0]} {against}")
    return s


def report_sections(games: pd.DataFrame, events: pd.DataFrame | None = None,
                    margin: float = est.DEFAULT_MARGIN,
                    comparisons: Sequence[ComparisonLike] = ()) -> list[Section]:
    """The sections a run's report opens with: the headline (one line per ruleset with
    self-play, the pairings the skill gap decides, and with ``comparisons`` whether each
    change of rules holds at every level), then the skill trace of every ruleset whose run
    has two levels or more. Empty for a run without self-play."""
    traces = sk.run_traces(games, events, margin)
    if not traces:
        return []
    out = [headline_section(traces, sk.lopsided_pairings(games), comparisons)]
    for t in traces:
        if len(t.levels) >= 2:
            out.append(trace_section(t, f"figures/skill-{slug(t.ruleset)}.png"))
    return out


def trace_document(trace: TraceLike, diversity: pd.DataFrame | None = None,
                   method: str = "", command: str = "") -> Document:
    """The document ``patchsim skill`` writes: the headline, the trace, how it was made."""
    doc = Document(f"Skill trace: {trace.ruleset}",
                   subtitle=f"{len(trace.levels)} levels, from `{trace.levels[0]}` to "
                            f"`{trace.levels[-1]}`")
    doc.sections.append(headline_section([trace]))
    doc.sections.append(trace_section(trace, diversity=diversity, title="Trace"))
    how = Section("How it was made")
    how.bullets([
        "Each level plays seat-swapped deals in self-play and against the level below, "
        "all on the same deals (one seed); every interval is over deals.",
        f"Self-play diversity: {method or 'as the bots are'} (see `patchsim skill --help`).",
        "The convergence verdict reads the slope of a weighted line through every level: "
        "each level's mean against its strength (the ladder's cumulative Elo from the "
        "duels; else the doublings of the budget), each level weighted by the inverse "
        "variance of its mean over deals. The slope and the line's value at the strongest "
        "level are means over the common deals of one number per deal, so their intervals "
        "count every level and the deals the levels share; levels that scatter about the "
        "line more than their intervals allow widen them. Converged: the slope lies within "
        f"+-{trace.margin * (100 if trace.metric in sk.RATE_LIKE else 1):g}"
        f"{' points' if trace.metric in sk.RATE_LIKE else ''} per 100 Elo; an undecided "
        "verdict gives the deals per level that would likely decide it (the power "
        "calculation of every verdict)."] + ([
        "Played until decided: deals were added to every level in steps until the trend "
        "and the first seat under the strongest level were both decided (or the budget ran "
        "out), and every interval is anytime-valid (a confidence sequence), so it keeps its "
        "coverage although the number of deals was chosen by looking at the data."]
        if trace.anytime_n0 else []) + ([f"Command: `{command}`"] if command else []))
    doc.sections.append(how)
    return doc


def change_table(changes: pd.DataFrame, metric: str) -> Table:
    """The change of rules at each level (:func:`patchsim.analysis.skill_rules.change_by_level`)."""
    rate = metric in sk.RATE_LIKE
    rows = [{"ruleset": r["ruleset"], "level": short_label(str(r["bot"])),
             "deals": fm.integer(r["deals"]),
             "change": (f"{fm.pts(r['diff'])} [{fm.pts(r['lo'])}, {fm.pts(r['hi'])}]" if rate
                        else fm.est_ci(r["diff"], r["lo"], r["hi"])),
             "verdict": r["verdict"]} for r in changes.to_dict("records")]
    cols = [Col("ruleset", "ruleset", align="left"), Col("level", "level", align="left"),
            Col("deals", "common deals"), Col("change", "change from the base"),
            Col("verdict", "verdict", align="left")]
    base = str(changes["base"].iloc[0]) if len(changes) else ""
    return Table(cols, rows, f"The change from {base} at every level (95% intervals over "
                 "common deals; one Holm family)")


def traces_document(traces: Sequence[TraceLike], changes: pd.DataFrame, method: str = "",
                    command: str = "") -> Document:
    """The document of several rulesets' traces: the headline per ruleset, whether the
    change of rules holds at every level, then each ruleset's trace."""
    doc = Document("Skill traces: " + ", ".join(t.ruleset for t in traces),
                   subtitle=f"{len(traces[0].levels)} levels, from `{traces[0].levels[0]}` "
                            f"to `{traces[0].levels[-1]}`, on the same deals")
    doc.sections.append(headline_section(traces))
    s = Section("The change of rules at every level")
    holds = holds_at_every_level(changes, short_label)
    s.bullets(f"**{r}** against {traces[0].ruleset}: {text}." for r, text in holds.items())
    s.table(change_table(changes, traces[0].metric))
    doc.sections.append(s)
    for t in traces:
        diversity = getattr(t, "diversity", None)
        doc.sections.append(trace_section(t, f"skill-{slug(t.ruleset)}.png",
                                          diversity=diversity))
    doc.sections.append(Section("How it was made").bullets([
        "Each ruleset's ladder plays the same seat-swapped deals in self-play and against the "
        "level below; a change of rules is paired by deal at each level.",
        f"Self-play diversity: {method or 'as the bots are'}."] + (
        [f"Command: `{command}`"] if command else [])))
    return doc
