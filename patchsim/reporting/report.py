"""The run report: one self-contained HTML file and a Markdown twin.

``write_report(run_dir)`` computes every table once (:mod:`patchsim.analysis.stats`,
:mod:`patchsim.analysis.compare`), draws the plots from those same tables
(:mod:`patchsim.reporting.plots`) and writes the verdict sentences from them too, so a
number in the text is the number in the table and in the picture. The HTML embeds its
images as base64 PNG and its style inline; it loads nothing from anywhere. The Markdown
version keeps its images in ``figures/``.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from patchsim.analysis import skill as sk
from patchsim.analysis import stats as st
from patchsim.analysis.bootstrap import LARGE_RUN_RESAMPLES, RESAMPLES
from patchsim.analysis.compare import (
    CompareError,
    Comparison,
    compare,
    compare_rulesets,
    correct_jointly,
    plan,
    split_rulesets,
)
from patchsim.analysis.defaults import DEFAULT_MARGIN
from patchsim.analysis.selfplay import distinct
from patchsim.atomic import atomic_write
from patchsim.document.model import Document, Section
from patchsim.document.render import to_markdown, write
from patchsim.reporting.run import ReportError, Run, load_run
from patchsim.reporting.sections_games import over_the_game_section, quilts_section
from patchsim.reporting.sections_methods import (
    comparison_section,
    methods_section,
    planning_section,
    stamp_section,
)
from patchsim.reporting.sections_patches import bonus_section, leather_section, patches_section
from patchsim.reporting.sections_seats import (
    overview_section,
    ratings_section,
    scores_section,
    seats_section,
)
from patchsim.reporting.sections_verdict import verdict_section
from patchsim.reporting.skill_section import report_sections

# A report's progress, told before each step: (steps done, steps in all, what comes next). A
# large run's report takes tens of seconds; a front end shows these as it likes.
ReportProgress = Callable[[int, int, str], None]
# the steps, in order: reading the run, then those of build_sections, then writing
_STEPS = ("reading the run", "seat and skill tables", "score intervals (bootstrap)",
          "game, patch, leather and bonus tables", "comparisons", "headline and skill trace",
          "seat and score sections", "patch, leather, bonus and quilt sections",
          "over-the-game section", "planning and methods", "writing report.html and report.md")


class _Steps:
    """Tells ``progress`` each named step of _STEPS as it starts (nothing without one)."""

    def __init__(self, progress: ReportProgress | None, start: str) -> None:
        self.progress, self.i = progress, _STEPS.index(start)

    def __call__(self, name: str) -> None:
        self.i = _STEPS.index(name)
        if self.progress is not None:
            self.progress(self.i, len(_STEPS), name)


def write_report(run_dir: str | Path, compare_with: str | Path | None = None,
                 margin: float = DEFAULT_MARGIN,
                 comparisons: list[Comparison] | None = None,
                 progress: ReportProgress | None = None) -> Path:
    """Write ``run_dir/report.html`` (self-contained) and ``run_dir/report.md`` (images in
    ``run_dir/figures/``); return the HTML path. With several rulesets in the run, each is
    compared with the first; with ``compare_with`` (another run folder on the same deals),
    this run is compared with that one, which is then the reference. ``comparisons``: those
    of :func:`comparisons_for`, when the caller prints them too (the CLI's lines), so that
    the report and the caller read the same verdicts. ``progress`` is told each step as it
    starts (:data:`ReportProgress`)."""
    step = _Steps(progress, _STEPS[0])
    step("reading the run")
    run = load_run(run_dir)
    other = load_run(compare_with) if compare_with is not None else None
    doc = build_document(run, other, margin, comparisons, progress)
    step("writing report.html and report.md")
    # atomic: a full disk part-way leaves the previous report (or none), never a truncated one
    try:
        out_html, _md = write(doc, run.run_dir, "report")
    except OSError as e:
        full = e.errno in (errno.ENOSPC, errno.EDQUOT)
        what = "the disk is full" if full else (e.strerror or str(e))
        todo = "free some space" if full else "make the folder writable"  # not for read-only
        raise ReportError(f"cannot write the report in {run.run_dir}: {what}; the run's "
                          "tables are intact and no half-written report was left: "
                          f"{todo} and write the report again") from None
    return out_html


def build_document(run: Run, other: Run | None = None, margin: float = DEFAULT_MARGIN,
                   comparisons: list[Comparison] | None = None,
                   progress: ReportProgress | None = None) -> Document:
    """The report as a Document (:mod:`patchsim.document`), every section built."""
    title = f"patchsim report: {run.manifest.get('config', {}).get('name', run.label)}"
    return Document(title, build_sections(run, other, margin, comparisons, progress))


def render_markdown(title: str, sections: list[Section], run_dir: Path) -> str:
    """The sections as the report's Markdown, with their figures written to
    ``run_dir/figures`` (what ``write_report`` writes as report.md)."""
    doc = Document(title, sections)
    for f in doc.figures():
        if f.png is not None:
            (run_dir / f.path).parent.mkdir(parents=True, exist_ok=True)
            atomic_write(run_dir / f.path, f.png)
    return to_markdown(doc)


def comparisons_for(run: Run, other: Run | None, margin: float) -> list[Comparison]:
    """The comparisons a report shows: against ``other`` if given, else each ruleset of the
    run against the first."""
    if other is not None:
        if len(split_rulesets(run.games)) != 1 or len(split_rulesets(other.games)) != 1:
            raise ReportError("comparing two runs needs one ruleset in each; for a run with "
                              "several rulesets the report compares them by itself")
        try:
            return [compare(other.games, run.games, other.events, run.events, margin=margin,
                            label_a=other.label, label_b=run.label)]
        except CompareError as e:
            raise ReportError(str(e)) from None
    parts = split_rulesets(run.games, run.events)
    out = []
    for label, _g, _e in parts[1:]:
        out.append(compare_rulesets(run.games, run.events, parts[0][0], label, margin=margin))
    correct_jointly(out)  # several variants against the first: one family of tests
    return out


def headline_questions(games: pd.DataFrame) -> list[tuple[str, str]]:
    """(ruleset, self-play pairing) of each ruleset's strongest level: the question the
    report's headline asks of the first seat (:func:`skill.run_traces` orders the levels)."""
    out = []
    for trace in sk.run_traces(games):
        bot = trace.levels[-1]
        g = games[(games["ruleset"].astype(str) == trace.ruleset).to_numpy()
                  & (games["bot0"].astype(str) == bot).to_numpy()
                  & (games["bot1"].astype(str) == bot).to_numpy()]
        if len(g):
            out.append((trace.ruleset, str(g["pairing"].iloc[0])))
    return out


def build_sections(run: Run, other: Run | None = None, margin: float = DEFAULT_MARGIN,
                   comparisons: list[Comparison] | None = None,
                   progress: ReportProgress | None = None) -> list[Section]:
    """Every section of the report, tables and figures computed once (``comparisons``: those
    of :func:`comparisons_for`, if the caller has them already; ``progress``: told each
    step)."""
    step = _Steps(progress, "seat and skill tables")
    step("seat and skill tables")
    # deterministic self-play: each deal's copy is detected once here and counted once by
    # every table below (they see the same ``distinct`` table)
    g, e = distinct(run.games), run.events
    # the one resample count; beyond 50,000 games fewer (cost grows with games x resamples)
    n_boot = RESAMPLES if len(g) <= 50_000 else LARGE_RUN_RESAMPLES
    pairings = st.pairing_table(g)
    # the headline's questions (the first seat under each ruleset's strongest level) are
    # asked alone, as the headline asks them: the Verdict section and the tables then give
    # the headline's verdict for them, not a second one from a larger family
    fpa = st.first_player_advantage(g, margin=margin, alone=headline_questions(g))
    skill = st.skill_balance(g, margin=margin)
    step("score intervals (bootstrap)")
    scores = st.score_table(g, n_boot=n_boot)
    step("game, patch, leather and bonus tables")
    summary = st.game_summary(g)
    patches = st.patch_table(g, e, run.rulesets)
    leather = st.leather_table(g, e)
    bonus = st.bonus_table(g, e, run.rulesets)
    bonus_ev = st.bonus_events(g, e)
    step("comparisons")
    if comparisons is None:
        comparisons = comparisons_for(run, other, margin)
    few = int(fpa["deals"].min()) if len(fpa) else 0

    step("headline and skill trace")
    # the headline first: the first seat under the strongest level, and its skill trace
    sections: list[Section | None] = [*report_sections(run.games, run.events, margin,
                                                       comparisons)]
    step("seat and score sections")
    sections += [verdict_section(run, fpa, skill, leather, bonus, comparisons, margin, few),
                 overview_section(run, summary),
                 seats_section(pairings, fpa, skill, margin),
                 ratings_section(run.games),
                 scores_section(g, scores, summary)]
    step("patch, leather, bonus and quilt sections")
    sections += [patches_section(patches, run, g),
                 leather_section(leather, g, e),
                 bonus_section(bonus, bonus_ev, run),
                 quilts_section(run)]
    step("over-the-game section")
    sections.append(over_the_game_section(run, g))
    for c in comparisons:
        sections.append(comparison_section(c))
    step("planning and methods")
    sections.append(planning_section(plan(g)))
    sections.append(methods_section(margin, n_boot))
    sections.append(stamp_section(run, other))
    return [s for s in sections if s is not None]


