"""The run report: one self-contained HTML file and a Markdown twin.

``write_report(run_dir)`` computes every table once (:mod:`patchsim.analysis.stats`,
:mod:`patchsim.analysis.compare`), draws the plots from those same tables
(:mod:`patchsim.reporting.plots`) and writes the verdict sentences from them too, so a
number in the text is the number in the table and in the picture. The HTML embeds its
images as base64 PNG and its style inline; it loads nothing from anywhere. The Markdown
version keeps its images in ``figures/``.
"""

from __future__ import annotations

import base64
import errno
import html
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from patchsim.analysis import estimators as est
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
from patchsim.analysis.selfplay import DISTINCT_NOTE, copied_pairings, distinct
from patchsim.analysis.stats import MIN_DEALS, num, pct
from patchsim.analysis.tables import (
    EventSummary,
    game_events,
    game_moves,
    read_games,
    read_rows,
    scan_events,
)
from patchsim.atomic import atomic_write
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.record import RecordError
from patchsim.engine.render import patch_legend, quilt_labels
from patchsim.engine.ruleset import ruleset_from_dict
from patchsim.play.runfolder import EVENTS, GAMES, STOPPING_FILE, RunFolderError, open_run
from patchsim.reporting import plots
from patchsim.reporting.curves import (
    curve_table,
    game_states,
    plot_curves,
    replay_snippet,
    sample_records,
)


class ReportError(ValueError):
    """A folder that cannot be reported on (not a run, unfinished, unreadable)."""


# --- loading ----------------------------------------------------------------------------------
@dataclass
class Run:
    """A finished run folder's games (without move lists: see ``tables.read_games``), a
    summary of its events (``tables.scan_events``: never every event in memory), manifest
    and rulesets (by name)."""

    run_dir: Path
    games: pd.DataFrame
    events: EventSummary
    manifest: dict[str, Any]
    rulesets: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. a manifest without digests

    @property
    def label(self) -> str:
        names = list(dict.fromkeys(self.games["ruleset"]))
        return " + ".join(names) if names else self.run_dir.name


def load_run(run_dir: str | Path) -> Run:
    """Read a finished run folder, checked (:func:`patchsim.play.runfolder.open_run`: not
    running, manifest and tables whole and unchanged); ReportError with a plain message
    naming the file at fault if it is not one. ``Run.notes``: what to tell (no digests)."""
    run_dir = Path(run_dir)
    notes: list[str] = []
    try:
        manifest = open_run(run_dir, notes)
    except RunFolderError as e:
        raise ReportError(str(e)) from None
    games_path = run_dir / GAMES
    try:
        games = read_games(run_dir)
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise ReportError(f"{games_path}: cannot read the table ({type(e).__name__}: {e}); "
                          "restore it from a copy of the run folder") from None
    try:
        events = scan_events(run_dir, games)
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise ReportError(f"{run_dir / EVENTS}: cannot read the table ({type(e).__name__}: "
                          f"{e}); restore it from a copy of the run folder") from None
    rulesets: dict[str, Any] = {}
    try:
        for r in manifest.get("config", {}).get("rulesets", []):
            rulesets[r["name"]] = ruleset_from_dict(r["rules"], source=f"manifest: {r['name']}")
    except Exception:  # noqa: BLE001 - old or hand-edited manifests: report without rules data
        rulesets = {}
    return Run(run_dir, games, events, manifest, rulesets, notes)


# --- the document model -------------------------------------------------------------------------
@dataclass
class Table:
    frame: pd.DataFrame  # already formatted as strings
    caption: str = ""


@dataclass
class Figure:
    name: str
    png: bytes
    caption: str


@dataclass
class Section:
    title: str
    anchor: str
    blocks: list[Any] = field(default_factory=list)  # str (paragraph), list[str], Table, Figure

    def p(self, text: str) -> None:
        self.blocks.append(text)

    def note(self, text: str) -> None:
        self.blocks.append(("note", text))

    def bullets(self, items: Sequence[str]) -> None:
        if items:
            self.blocks.append(list(items))

    def table(self, frame: pd.DataFrame, caption: str = "") -> None:
        self.blocks.append(Table(frame, caption))

    def figure(self, name: str, fig: Any, caption: str) -> None:
        self.blocks.append(Figure(name, plots.png_bytes(fig), caption))


Col = tuple[str, Callable[[Any], str]]


def fmt_table(df: pd.DataFrame, cols: Sequence[Col]) -> pd.DataFrame:
    """Format rows with (header, row -> text) column specs."""
    return pd.DataFrame([[f(r) for _, f in cols] for r in df.itertuples(index=False)],
                        columns=[h for h, _ in cols])


def ci(lo: Any, hi: Any) -> str:
    if not (st.finite(lo) and st.finite(hi)):
        return "—"
    return f"[{pct(lo)}, {pct(hi)}]"


def pval(p: Any) -> str:
    if not st.finite(p):
        return "—"
    return "< 0.001" if float(p) < 0.001 else f"{float(p):.3f}"


def pts(x: Any) -> str:
    """A difference of proportions in percentage points, signed."""
    return num(100 * float(x), 1, True) if st.finite(x) else "—"


def est_ci(x: Any, lo: Any, hi: Any, digits: int = 1) -> str:
    """'12.3 [10.1, 14.0]', or the estimate alone when there is no interval."""
    if st.finite(lo) and st.finite(hi):
        return f"{num(x, digits)} [{num(lo, digits)}, {num(hi, digits)}]"
    return num(x, digits)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def p_is(p: Any) -> str:
    """'p = 0.035' or 'p < 0.001'."""
    text = pval(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def integer(x: Any) -> str:
    return str(int(x)) if st.finite(x) else "—"


def pairing_label(r: Any) -> str:
    """A row's pairing, saying so when its deterministic self-play copies count once (the
    words of the run summary)."""
    if getattr(r, "distinct_games", True):
        return str(r.pairing)
    return f"{r.pairing} ({DISTINCT_NOTE})"


def copies_note(games: pd.DataFrame) -> str:
    """For a table pooled over pairings: which pairings' copies count once ("" if none)."""
    copies = sorted(copied_pairings(games))
    return f" Games of {', '.join(copies)}: {DISTINCT_NOTE}." if copies else ""


# --- the report ---------------------------------------------------------------------------------
def write_report(run_dir: str | Path, compare_with: str | Path | None = None,
                 margin: float = 0.02) -> Path:
    """Write ``run_dir/report.html`` (self-contained) and ``run_dir/report.md`` (images in
    ``run_dir/figures/``); return the HTML path. With several rulesets in the run, each is
    compared with the first; with ``compare_with`` (another run folder on the same deals),
    this run is compared with that one, which is then the reference."""
    run = load_run(run_dir)
    other = load_run(compare_with) if compare_with is not None else None
    sections = build_sections(run, other, margin)
    title = f"patchsim report: {run.manifest.get('config', {}).get('name', run.label)}"
    out_html = run.run_dir / "report.html"
    out_md = run.run_dir / "report.md"
    # atomic: a full disk part-way leaves the previous report (or none), never a truncated one
    try:
        atomic_write(out_html, render_html(title, sections))
        atomic_write(out_md, render_markdown(title, sections, run.run_dir))
    except OSError as e:
        full = e.errno in (errno.ENOSPC, errno.EDQUOT)
        what = "the disk is full" if full else (e.strerror or str(e))
        todo = "free some space" if full else "make the folder writable"  # not for read-only
        raise ReportError(f"cannot write the report in {run.run_dir}: {what}; the run's "
                          "tables are intact and no half-written report was left: "
                          f"{todo} and write the report again") from None
    return out_html


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


def build_sections(run: Run, other: Run | None = None, margin: float = 0.02) -> list[Section]:
    """Every section of the report, tables and figures computed once."""
    # deterministic self-play: each deal's copy is detected once here and counted once by
    # every table below (they see the same ``distinct`` table)
    g, e = distinct(run.games), run.events
    # the one resample count; beyond 50,000 games fewer (cost grows with games x resamples)
    n_boot = RESAMPLES if len(g) <= 50_000 else LARGE_RUN_RESAMPLES
    pairings = st.pairing_table(g)
    fpa = st.first_player_advantage(g, margin=margin)
    skill = st.skill_balance(g, margin=margin)
    scores = st.score_table(g, n_boot=n_boot)
    summary = st.game_summary(g)
    patches = st.patch_table(g, e, run.rulesets)
    leather = st.leather_table(g, e)
    bonus = st.bonus_table(g, e, run.rulesets)
    bonus_ev = st.bonus_events(g, e)
    comparisons = comparisons_for(run, other, margin)
    planning = plan(g)
    few = int(fpa["deals"].min()) if len(fpa) else 0

    sections = [
        _verdict(run, fpa, skill, leather, bonus, comparisons, margin, few),
        _overview(run, summary),
        _seats(pairings, fpa, skill, margin),
        _ratings(run.games),
        _scores(g, scores, summary),
        _patches(patches, run, g),
        _leather(leather, g, e),
        _bonus(bonus, bonus_ev, run),
        _quilts(run),
        _over_the_game(run, g),
    ]
    for c in comparisons:
        sections.append(_comparison(c))
    sections.append(_planning(planning))
    sections.append(_methods(margin, n_boot))
    sections.append(_stamp(run, other))
    return [s for s in sections if s is not None]


# --- sections -----------------------------------------------------------------------------------
def _verdict(run: Run, fpa: pd.DataFrame, skill: pd.DataFrame, leather: pd.DataFrame,
             bonus: pd.DataFrame, comparisons: list[Comparison], margin: float,
             few: int) -> Section:
    s = Section("Verdict", "verdict")
    lines: list[str] = []
    if few < MIN_DEALS:
        s.note(f"Too few games: the smallest pairing has {plural(few, 'deal')}, each played "
               f"from both seats. The numbers below are shown, but intervals are wide or "
               f"missing and no conclusion should be drawn before at least {MIN_DEALS} deals "
               "per pairing.")
    for r in (fpa if len(fpa) <= 6 else _headline_rows(fpa)).itertuples():
        played = ("each played from both seats" if r.distinct_games
                  else f"each played from both seats; {DISTINCT_NOTE}")
        text = (f"Under {r.ruleset}, with {r.pairing}, the first seat wins {pct(r.rate)} "
                f"{ci(r.lo, r.hi)} of games ({plural(r.deals, 'deal')}, {played})")
        if r.deals >= MIN_DEALS and isinstance(r.verdict, str) and r.verdict:
            text += f"; against 50%: {r.verdict}"
            if r.verdict_kind == "differs":
                text += (f" ({num(abs(r.elo), 0)} Elo for the "
                         f"{'first' if r.adv_pp > 0 else 'second'} seat)")
        lines.append(text + ".")
    lines.extend(_skill_lines(skill))
    for c in comparisons:  # the rates themselves are in the lines above
        lines.extend(c.verdict(restate=False).splitlines())
    if not comparisons and len(leather):
        for rs, t in leather.groupby("ruleset", sort=False):
            first = t[t["rank"] == 1]
            if len(first):
                r = first.iloc[0]
                lines.append(
                    f"Under {rs} the first leather patch (mark {int(r['mark'])}) fills an "
                    f"isolated one-square hole in {pct(r['useful_rate'])} "
                    f"{ci(r['useful_lo'], r['useful_hi'])} of games; elsewhere it covers an "
                    f"ordinary square ({int(r['ordinary'])} of {int(r['games'])} games).")
    for r in _headline_rows(bonus).itertuples():
        if r.points == 0:
            continue
        lines.append(
            f"Under {r.ruleset}, with {r.pairing}, the 7x7 bonus is claimed in "
            f"{pct(r.claim_rate)} {ci(r.claim_lo, r.claim_hi)} of games; its holder won by "
            f"fewer points than it is worth in {pct(r.changed_rate)} "
            f"{ci(r.changed_lo, r.changed_hi)}. That is not what the game would be without "
            "it (players would play differently): a run of the same deals with "
            "bonus=null answers that, paired by deal.")
    s.bullets(lines)
    stop = _stopping(run)
    if stop:
        s.note(stop)
    if any("undecided" in str(line) for line in lines):
        s.p(est.SEQUENTIAL_ADVICE)
    s.p("These are results for these bots: stronger or different play can change every "
        "number. Intervals are 95%, and every verdict is read off the interval printed "
        "beside it; the unit of analysis is the deal.")
    return s


def _stopping(run: Run) -> str:
    """A note for a run whose length a sequential test chose (``run --until-decided`` writes
    the folder's stopping record), or ''."""
    path = run.run_dir / STOPPING_FILE
    if not path.exists():
        return ""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        margin = float(record.get("margin", 0))
        stopped_at = int(record["deals"])
        parts = [f"{d['ruleset']}, {d['pairing']}: {pct(float(d['rate']))} "
                 f"{ci(float(d['lo']), float(d['hi']))} at deal {int(d['deal'])}"
                 for d in record.get("decided", [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        # a file is data: a damaged record is said, not a crash of the whole report
        return (f"The run's stopping record ({STOPPING_FILE}) is damaged and was ignored; if "
                "a sequential test chose the run's length, its intervals cover somewhat less "
                "than 95%.")
    deals = int(run.games["deal"].nunique()) if "deal" in run.games else stopped_at
    if deals != stopped_at:
        return (f"A sequential test stopped this run at {stopped_at:,} deals; it was extended "
                f"to {deals:,} afterwards. Its intervals are fixed-sample ones over every deal; "
                "because the first stop depended on the data, they may cover slightly less "
                "than 95%.")
    return ("This run stopped when a sequential test had decided whether the first seat's "
            f"win rate lies within 50% +-{100 * margin:g} points. "
            "The report's intervals are fixed-sample ones: after a stop chosen by looking at "
            "the data they cover somewhat less than 95% (92-94% in simulation, "
            "benchmarks/bench_verdicts.py), and its verdicts are those of a fixed sample. "
            "The sequential test's own decisions keep their error rates; their anytime-valid "
            "95% intervals: " + ("; ".join(parts) if parts else "none decided") + ".")


TREND_WORDS = {
    "grows": "the imbalance grows with skill",
    "shrinks": "the imbalance shrinks with skill",
    "changes side": "the advantage changes side with skill",
    "unchanged": "the imbalance does not change with skill beyond the margin",
    "undecided": "whether the imbalance changes with skill is not decided yet",
}


def _skill_lines(skill: pd.DataFrame) -> list[str]:
    """Per ruleset and stronger level: the first-seat win rate at each skill level and the
    verdict on the change (``stats.skill_balance``)."""
    out = []
    for rs, t in skill.groupby("ruleset", sort=False):
        ref = t.iloc[0]
        for r in t.iloc[1:].itertuples():
            out.append(
                f"Under {rs}, balance by skill level (self-play): the first seat wins "
                f"{pct(ref.rate)} {ci(ref.lo, ref.hi)} of games with {ref.level} and "
                f"{pct(r.rate)} {ci(r.lo, r.hi)} with {r.level}; the change over "
                f"{plural(int(r.common_deals), 'common deal')} {_skill_change(r)}.")
    return out


def _skill_change(r: Any, sentence: bool = True) -> str:
    """A skill_balance row's verdict, and what it means for the imbalance when decided; in a
    ``sentence`` after "the change" ("differs by ..." / "is equivalent ...")."""
    # "differs by ..." (a difference, or a negligible one) takes no "is"
    words = f"{'is ' if sentence and not str(r.verdict).startswith('differs') else ''}" \
            f"{r.verdict}"
    if r.verdict_kind in ("differs", "equivalent"):
        words += f": {TREND_WORDS[r.trend]}"
    return words


def _headline_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows a verdict names: per ruleset, the self-play pairings (else the first pairing);
    the tables have the rest."""
    out = []
    for _rs, t in table.groupby("ruleset", sort=False):
        sp = t[t["self_play"].astype(bool)]
        out.append(sp if len(sp) else t.head(1))
    return pd.concat(out) if out else table


def _overview(run: Run, summary: pd.DataFrame) -> Section:
    s = Section("The run", "run")
    cfg = run.manifest.get("config", {})
    rs = pd.DataFrame([{"ruleset": r["name"], "hash": r.get("hash", "—"),
                        "leather marks": ", ".join(map(str, r["rules"]["track"]["leather"]))}
                       for r in cfg.get("rulesets", []) if "rules" in r])
    if len(rs):
        s.table(rs.astype(str), "Rulesets")
    s.table(fmt_table(summary, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("games", lambda r: str(r.games)), ("deals", lambda r: str(r.deals)),
        ("plies", lambda r: num(r.plies)), ("passes", lambda r: num(r.passes)),
        ("buys", lambda r: num(r.buys)),
        ("tie-breaks", lambda r: f"{r.tie_breaks} ({pct(r.tie_rate)} {ci(r.tie_lo, r.tie_hi)})"),
        ("mean |margin|", lambda r: num(r.abs_margin)),
        ("seat 0 ends first", lambda r: pct(r.seat0_first_to_end)),
    ]), "Games per ruleset and pairing: length (plies, passes and buys per game), how often "
        "equal scores left the tie-break to decide. Deterministic self-play plays the same "
        "game from both seats of a deal: it is counted once.")
    return s


def _seats(pairings: pd.DataFrame, fpa: pd.DataFrame, skill: pd.DataFrame,
           margin: float) -> Section:
    s = Section("Seats and pairings", "seats")
    s.table(fmt_table(pairings, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("line", lambda r: f"{r.bot} in the {r.line}" if r.line.endswith("seat")
         else f"{r.bot} vs {r.opponent}"),
        ("games", lambda r: str(r.games)), ("W - L", lambda r: f"{r.wins} - {r.losses}"),
        ("win rate", lambda r: pct(r.win_rate)), ("95% CI", lambda r: ci(r.lo, r.hi)),
        ("pairs 2-0 / 1-1 / 0-2", lambda r: (f"{integer(r.pairs_2_0)} / "
                                             f"{integer(r.pairs_1_1)} / {integer(r.pairs_0_2)}"
                                             if st.finite(getattr(r, "pairs_2_0", None))
                                             else "")),
        ("Elo", lambda r: num(getattr(r, "elo", None), 0, True)
         if st.finite(getattr(r, "pairs_2_0", None)) else ""),
    ]), "Per pairing, like an engine-testing tool: the first bot in the first seat, in the "
        "second seat, pooled over both (not for self-play, where it is 50% by construction), "
        "and seat 0 against seat 1; every interval is over deals. Pairs: deals won twice, "
        "once, never. Deterministic self-play counts each deal's one distinct game once (it "
        "cannot be split) and shows only seat 0 against seat 1.")
    s.table(fmt_table(fpa, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("deals", lambda r: str(r.deals)), ("first seat wins", lambda r: pct(r.rate)),
        ("95% CI", lambda r: ci(r.lo, r.hi)),
        ("advantage", lambda r: f"{num(r.adv_pp, 1, True)} pts"),
        ("Elo", lambda r: f"{num(r.elo, 0, True)} [{num(r.elo_lo, 0, True)}, "
                          f"{num(r.elo_hi, 0, True)}]"),
        ("against 50%", lambda r: str(r.verdict) if r.deals >= MIN_DEALS else ""),
        ("deals 2-0 / split / 0-2", lambda r: f"{r.seat0_both} / {r.split} / {r.seat1_both}"),
        ("exact McNemar p", lambda r: pval(r.p_mcnemar)),
        ("design effect", lambda r: num(r.deff, 2)),
        ("note", lambda r: "too few games" if r.few else ""),
    ]), f"First-player advantage: the first seat's win rate with its interval over deals and "
        f"the verdict against 50% (equivalence margin +-{100 * margin:g} points). The exact "
        "McNemar test counts the deals one seat won twice (for deterministic self-play: the "
        "distinct games by winning seat). The design effect is the per-deal variance over "
        "the per-game one: 2 means a deal's two games always agree on the winning seat (the "
        "deal decides it), 1 that they are as good as independent, below 1 that they cancel; "
        "a deal of deterministic self-play is one game and has none.")
    if len(skill):
        _skill_table(s, skill)
    s.figure("seat-win-rates", plots.seat_winrates(fpa, pairings, margin),
             "First-seat win rate per ruleset and pairing with its 95% interval over deals; "
             "right: each first bot by seat.")
    return s


def _skill_table(s: Section, skill: pd.DataFrame) -> None:
    """The first-seat win rate per skill level side by side, one row per ruleset, and the
    verdict on each change from the first level (``stats.skill_balance``)."""
    levels = list(dict.fromkeys(skill["level"]))
    rows = []
    for rs, t in skill.groupby("ruleset", sort=False):
        by = {str(r.level): r for r in t.itertuples()}
        row = {"ruleset": str(rs), "deals": str(int(t["deals"].max()))}
        for lv in levels:
            r = by.get(lv)
            row[f"first seat wins: {lv}"] = (f"{pct(r.rate)} {ci(r.lo, r.hi)}"
                                             if r is not None else "—")
        for lv in levels[1:]:
            r = by.get(lv)
            row[f"change: {lv} - {t.iloc[0].level}"] = (
                f"{_skill_change(r, sentence=False)} "
                f"({plural(int(r.common_deals), 'common deal')})"
                if r is not None and isinstance(r.verdict, str) else "—")
        rows.append(row)
    s.table(pd.DataFrame(rows),
            "Balance by skill level: each self-play pairing is a skill level, in the order "
            "the run lists the bots. The change from the first level is a paired difference "
            "over the deals every level played (the same deals), Holm-corrected over the "
            "changes in this table, with its verdict; the imbalance grows with skill when "
            "the first seat's distance from 50% grows.")


def _ratings(games: pd.DataFrame) -> Section | None:
    bots = set(games["bot0"]) | set(games["bot1"])
    if len(bots) < 2:
        return None
    s = Section("Ratings", "ratings")
    figs = []
    for label, g, _ in split_rulesets(games):
        t = st.ratings(g)
        s.table(fmt_table(t, [
            ("bot", lambda r: r.bot), ("Elo", lambda r: num(r.elo, 0, True)),
            ("95% CI", lambda r: f"[{num(r.elo_lo, 0, True)}, {num(r.elo_hi, 0, True)}]"),
            ("games", lambda r: str(r.games)), ("score", lambda r: pct(r.score)),
        ]), f"{label}: Bradley-Terry ratings relative to the average bot; seat term "
            f"{num(t.attrs['seat_elo'], 0, True)} Elo [{num(t.attrs['seat_elo_lo'], 0, True)}, "
            f"{num(t.attrs['seat_elo_hi'], 0, True)}] for seat 0")
        figs.append((label, t))
    for label, t in figs:
        s.figure(f"ratings-{_slug(label)}", plots.ratings_plot(t), f"Ratings under {label}.")
    return s


def _scores(games: pd.DataFrame, scores: pd.DataFrame, summary: pd.DataFrame) -> Section:
    s = Section("Scores and game length", "scores")
    s.table(fmt_table(scores, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("quantity", lambda r: r.quantity), ("group", lambda r: r.group),
        ("n", lambda r: integer(r.n)),
        ("mean [95% CI]", lambda r: est_ci(r.mean, r.mean_lo, r.mean_hi)),
        ("median [95% CI]", lambda r: est_ci(r.median, r.median_lo, r.median_hi)),
        ("IQR [95% CI]", lambda r: est_ci(r.iqr, r.iqr_lo, r.iqr_hi)),
        ("quartiles", lambda r: f"{num(r.q1)} - {num(r.q3)}"),
    ]), "Distributions with bootstrap intervals that resample whole deals (no interval: too "
        "few deals); n counts distinct games")
    s.figure("scores", plots.score_distributions(games, scores),
             "Final scores by seat and the margin, per ruleset (dashed: medians from the "
             "table when the ruleset has one pairing).")
    return s


def _causal_prices(s: Section, run: Run) -> None:
    """The causal prices of a prices study stored in the run folder (``prices/``, written by
    ``patchsim report --prices`` or ``patchsim prices --out RUN/prices``), if any:
    restricted-play value with its interval and verdict, and the fair price; with the
    study's ruleset, bot and games (its ``study.json``) and a warning when the study was made
    on a ruleset this run did not play."""
    folder = run.run_dir / "prices"
    path = folder / "patches.csv"
    if not path.exists():
        return
    try:
        study = pd.read_csv(path)
        header = (json.loads((folder / "study.json").read_text(encoding="utf-8"))
                  if (folder / "study.json").exists() else {})
    except (OSError, ValueError) as e:
        s.note(f"The prices study in {folder} could not be read: {e}")
        return
    what = (f"{header['ruleset']}, bot {header['bot']}, {header['games']:,} games per patch "
            f"and cost, seed {header['seed']}" if header else "ruleset and bot not recorded")
    s.table(fmt_table(study, [
        ("patch", lambda r: r.patch), ("cost", lambda r: integer(r.cost)),
        ("value [95%]", lambda r: f"{pts(r.value)} [{pts(r.value_lo)}, {pts(r.value_hi)}]"),
        ("verdict", lambda r: str(r.verdict)), ("fair price", lambda r: str(r.fair_text)),
        ("reading", lambda r: str(r.reading)),
    ]), f"Causal prices ({what}; restricted play: the win-rate points the bot loses when "
        "forbidden the patch, on common deals; price response: the cost at which that value "
        "crosses zero)")
    hashes = {str(h) for h in run.games["ruleset_hash"].unique()} \
        if "ruleset_hash" in run.games.columns else set()
    if header and hashes and header.get("ruleset_hash") not in hashes:
        s.note(f"This prices study was made on {header['ruleset']} "
               f"({header.get('ruleset_hash')}), a ruleset this run did not play.")


def _patches(patches: pd.DataFrame, run: Run, games: pd.DataFrame) -> Section:
    s = Section("Patches", "patches")
    _causal_prices(s, run)
    if patches.empty:
        s.note("No patches were bought.")
        return s
    s.p("Buyers against non-buyers (below) is an association in these bots' play, not a "
        "price verdict: cheap patches are bought by the player who is behind, and a patch "
        "one seat bought is one the other did not. Whether a patch is over- or underpriced is "
        "a causal question, answered by restricted play and price response: "
        "`patchsim report RUN --prices` measures it for this run and shows it above.")
    flagged = patches[patches["flag"] != ""]
    if len(flagged):
        s.bullets([f"{r.ruleset}: buyers of {r.patch} (cost {integer(r.cost)}, time "
                   f"{integer(r.time)}, income {integer(r.income)}) won {pct(r.buyer_win)}, "
                   f"non-buyers {pct(r.other_win)} (Holm-adjusted {p_is(r.p_holm)}; "
                   "association)" for r in flagged.itertuples()])
    else:
        s.p("No buyer/non-buyer difference stands out after correcting for testing every "
            "patch (Holm).")
    s.table(fmt_table(patches, [
        ("ruleset", lambda r: r.ruleset), ("patch", lambda r: r.patch),
        ("cost/time/income", lambda r: f"{integer(r.cost)}/{integer(r.time)}/"
                                       f"{integer(r.income)}"),
        ("bought", lambda r: f"{r.bought} ({pct(r.buy_rate, 0)})"),
        ("seat 0 / 1", lambda r: f"{r.by_seat0} / {r.by_seat1}"),
        ("position median (IQR)", lambda r: f"{num(r.pos_median, 0)} ({num(r.pos_q1, 0)}-"
                                            f"{num(r.pos_q3, 0)})"),
        ("buyer wins", lambda r: f"{pct(r.buyer_win)} {ci(r.buyer_lo, r.buyer_hi)}"),
        ("non-buyer wins", lambda r: f"{pct(r.other_win)} {ci(r.other_lo, r.other_hi)}"),
        ("difference", lambda r: f"{pts(r.diff)} [{pts(r.diff_lo)}, {pts(r.diff_hi)}]"),
        ("p (Holm)", lambda r: pval(r.p_holm)),
    ]), "Association: per patch, ranked by the buyers' edge (points) in these bots' play; "
        "not a causal price. Win rates are over deals; the difference is a deal-weighted "
        "linear probability model with deal-clustered errors." + copies_note(games))
    for rs in dict.fromkeys(patches["ruleset"]):
        s.figure(f"patches-{_slug(rs)}", plots.patch_chart(patches, rs),
                 f"Patches under {rs}: buyers' edge with 95% intervals; when and how often "
                 "they were bought.")
    bots = st.patch_bots(run.events, games)
    if bots["bot"].nunique() > 1:
        s.table(fmt_table(bots, [
            ("ruleset", lambda r: r.ruleset), ("patch", lambda r: r.patch),
            ("bot", lambda r: r.bot), ("buys", lambda r: str(r.buys)),
            ("share", lambda r: pct(r.share, 0)), ("mean position", lambda r: num(r.pos_mean)),
        ]), "Who bought each patch." + copies_note(games))
    return s


def _leather_by_skill(games: pd.DataFrame, events: Any) -> pd.DataFrame:
    """The leather table of each pairing (the bots' skill) separately."""
    parts = []
    for pairing, g in games.groupby("pairing", sort=False, observed=True):
        t = st.leather_table(g, events)
        t.insert(1, "pairing", str(pairing))
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _publisher_question(s: Section, useless: pd.DataFrame, by_skill: pd.DataFrame) -> None:
    """The publisher's reason for the new edition, as a question the data can answer: was
    the first leather patch useless (no hole to fill) in about half of the games? Per ruleset
    and skill level, with a verdict against 50% +- 10 points (``stats.first_leather_useless``);
    and, across rulesets, the patch that moved apart from the patch that became first."""
    if by_skill.empty:
        return
    lines = []
    for r in useless.itertuples():
        if not st.finite(r.rate):
            continue
        lines.append(f"{r.ruleset}, {pairing_label(r)}: the first leather patch (mark "
                     f"{r.mark}) was useless in {pct(r.rate)} {ci(r.lo, r.hi)} of games "
                     f"(no isolated hole to fill); against 'about half': {r.verdict}")
    marks = {r: sorted(t["mark"].unique()) for r, t in by_skill.groupby("ruleset", sort=False)}
    names = list(marks)
    if len(names) >= 2:
        a, b = names[0], names[1]
        moved_from = [m for m in marks[a] if m not in marks[b]]
        moved_to = [m for m in marks[b] if m not in marks[a]]
        pooled = by_skill.groupby(["ruleset", "mark"], sort=False)[["useful_rate"]].mean()

        def rate(r: str, m: int) -> str:
            return pct(pooled.loc[(r, m), "useful_rate"]) if (r, m) in pooled.index else "—"

        if moved_from and moved_to:
            lines.append(f"The patch that moved ({', '.join(map(str, moved_from))} under {a} "
                         f"-> {', '.join(map(str, moved_to))} under {b}): useful in "
                         f"{rate(a, moved_from[0])} of games at {moved_from[0]}, "
                         f"{rate(b, moved_to[0])} at {moved_to[0]}.")
        first_b = marks[b][0] if marks[b] else None
        if first_b is not None and first_b in marks[a] and marks[a][0] != first_b:
            lines.append(f"The patch that became first (mark {first_b}: rank "
                         f"{marks[a].index(first_b) + 1} under {a}, first under {b}): useful "
                         f"in {rate(a, first_b)} of games under {a}, {rate(b, first_b)} "
                         f"under {b}. Comparing 'the first leather patch' across the "
                         "editions mixes these two changes.")
    if lines:
        s.p("The publisher's reason for the new edition: the first leather patch was useless "
            "in about half of the games. Useful means it filled an isolated one-square hole, "
            "which nothing else can fill (a rule a designer can check on any quilt); rates are "
            "per game with 95% intervals over deals, per skill level (pairing).")
        s.bullets(lines)


def _leather(leather: pd.DataFrame, games: pd.DataFrame | None = None,
             events: Any = None) -> Section:
    s = Section("Leather patches", "leather")
    if leather.empty:
        s.note("No leather patch was claimed in these games.")
        return s
    if games is not None and events is not None:
        _publisher_question(s, st.first_leather_useless(games, events),
                            _leather_by_skill(games, events))
    s.p("The question behind the edition change (docs/rules.md E2): a leather patch is "
        "useful when it fills an isolated one-square hole, which nothing else can fill.")
    s.table(fmt_table(leather, [
        ("ruleset", lambda r: r.ruleset), ("mark", lambda r: str(r.mark)),
        ("games", lambda r: str(r.games)), ("claimed", lambda r: str(r.claimed)),
        ("by seat 0", lambda r: str(r.by_seat0)),
        ("by leader / trailer / level",
         lambda r: f"{r.by_leader} / {r.by_trailer} / {r.by_level}"),
        ("useful (hole)", lambda r: f"{r.useful} ({pct(r.useful_rate)} "
                                    f"{ci(r.useful_lo, r.useful_hi)})"),
        ("ordinary", lambda r: str(r.ordinary)), ("lost", lambda r: str(r.lost)),
        ("claimer wins", lambda r: f"{pct(r.claimer_win)} {ci(r.claimer_lo, r.claimer_hi)}"),
    ]), "Per leather mark: who claimed it (leader / trailer on score at the claim) and where "
        "it went; rates with 95% intervals over deals." + ("" if games is None
                                                          else copies_note(games)))
    s.figure("leather", plots.leather_chart(leather),
             "Leather patches by track position: useful (filled a hole, with 95% interval), "
             "ordinary square, lost.")
    return s


def _bonus(bonus: pd.DataFrame, bonus_ev: pd.DataFrame, run: Run) -> Section:
    s = Section("The 7x7 bonus", "bonus")
    s.table(fmt_table(bonus, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("games", lambda r: str(r.games)),
        ("claimed", lambda r: f"{r.claimed} ({pct(r.claim_rate)} {ci(r.claim_lo, r.claim_hi)})"),
        ("seat 0 / 1", lambda r: f"{r.by_seat0} / {r.by_seat1}"),
        ("position median", lambda r: num(r.pos_median, 0)),
        ("holder wins", lambda r: f"{pct(r.holder_win)} {ci(r.holder_lo, r.holder_hi)}"),
        ("holder won by less than the bonus",
         lambda r: f"{r.changed} ({pct(r.changed_rate)} {ci(r.changed_lo, r.changed_hi)})"),
    ]), "Claims of the 7x7 bonus, and games whose holder won by fewer points than it is worth "
        "(with play held fixed; the bonus's effect on who wins needs a paired run without it)")
    last = max((r.last_space for r in run.rulesets.values()), default=53)
    s.figure("bonus", plots.bonus_timing(bonus_ev, bonus, last),
             "When the bonus was claimed: the claimer's track position.")
    return s


def sample_games(run: Run, limit: int = 3) -> list[dict[str, Any]]:
    """Replay one game per ruleset (the first pairing's first deal, first bot in seat 0; the
    same deal under every ruleset) for the quilt pictures."""
    out = []
    g = run.games
    if g.empty:
        return out
    first_pairing = g["pairing"].iloc[0]
    for name in list(dict.fromkeys(g["ruleset"]))[:limit]:
        rs = run.rulesets.get(name)
        sub = g[(g["ruleset"] == name) & (g["pairing"] == first_pairing)]
        if rs is None or sub.empty:
            continue
        row = sub.sort_values(["deal", "order"]).iloc[0]
        try:
            game = Game.new(rs, circle=deal_circle(rs, int(row["deal_seed"])))
            for code in game_moves(run.run_dir, int(row["game_id"])):
                game.apply(int(code))
        except Exception:  # noqa: BLE001 - a picture must never stop the report
            continue
        # only this game's events, read from the file (the run's are never all in memory)
        ev = game_events(run.run_dir, int(row["game_id"]))
        buys = ev[ev["event"] == "buy"][["seat", "position", "patch"]].to_dict("records")
        leather = (ev[ev["event"] == "leather_claim"].rename(columns={"position": "mark"})
                   [["mark", "seat"]].to_dict("records"))
        out.append({
            "title": (f"{name}: {row['bot0']} (seat 0) vs {row['bot1']} (seat 1), deal "
                      f"{int(row['deal'])}; seat {int(row['winner'])} wins"
                      f"{' on the tie-break' if row['tie_break'] else ''}"),
            "labels": quilt_labels(game), "legend": patch_legend(game), "ruleset": rs,
            "buys": buys, "leather": leather,
            "scores": (int(row["score0"]), int(row["score1"])),
        })
    return out


CURVE_GAMES = 200  # games per ruleset and pairing replayed for the curves


def sample_with_moves(run_dir: Path, per_group: int = CURVE_GAMES,
                      game_ids: np.ndarray | None = None) -> pd.DataFrame:
    """The first ``per_group`` games (by game id) of each ruleset and pairing, with their
    moves, read group by group from games.parquet (never the whole moves column); only
    games in ``game_ids`` if given (the report passes the distinct games, so that a
    deterministic self-play copy is not drawn twice)."""
    path = run_dir / "games.parquet"
    cols = ["game_id", "ruleset", "pairing", "deal_seed", "bot0", "bot1", "moves"]
    # categorical: 2 bytes a game
    keys = read_games(run_dir, columns=["ruleset", "pairing", "game_id"])
    if game_ids is not None:
        keys = keys[keys["game_id"].isin(game_ids).to_numpy()]  # the index stays the row
    # the first games of each group in file order, groups in order of appearance; only the
    # row groups holding them are read (a filtered dataset scan reads ahead through the
    # moves of the whole file: 700 MB for a million games)
    rows = [g.index[:per_group] for _, g in keys.groupby(["ruleset", "pairing"], sort=False,
                                                         observed=True)]
    if not rows:
        return pd.DataFrame(columns=cols)
    return read_rows(path, np.concatenate(rows), cols).to_pandas()


def _over_the_game(run: Run, distinct: pd.DataFrame | None = None) -> Section | None:
    """Curves over the game per ruleset, bot and seat (mean score, buttons and income by
    time-track position, with bands), and a self-contained replay of a few sample games;
    over the ``distinct`` games if given."""
    if not run.rulesets:
        return None
    s = Section("Over the game", "curves")
    try:
        ids = None if distinct is None else distinct["game_id"].to_numpy()
        games = sample_with_moves(run.run_dir, game_ids=ids)
        states = game_states(games, run.rulesets, per_group=CURVE_GAMES)
        last = {name: rs.last_space for name, rs in run.rulesets.items()}
        curves = curve_table(states, by="position", last_space=last)
    except (OSError, ValueError) as e:
        s.note(f"The curves could not be drawn: {e}")
        return s
    s.p(f"Each seat's mean score, buttons and income by position on the time track, per "
        f"ruleset and bot, over the first {CURVE_GAMES} distinct games of each pairing "
        "(replayed by the engine), with the 95% interval of the mean (shaded) and the "
        "10-90% spread of the games (dotted). Where the curves of the two seats part is "
        "where the game is won.")
    s.figure("curves", plot_curves(curves), "Score, buttons and income over the game, by "
             "seat and bot")
    try:
        snippet = replay_snippet(sample_records(run.run_dir, run.rulesets))
    except (OSError, ValueError, RecordError) as e:
        s.note(f"No sample game could be replayed: {e}")
        return s
    s.p("Sample games, replayed move by move (buttons, the slider, or the arrow keys once a "
        "game has the focus); the replay is part of this file and needs no server.")
    s.blocks.append(("html", snippet))
    return s


def _quilts(run: Run) -> Section:
    s = Section("Sample final quilts", "quilts")
    samples = sample_games(run)
    if not samples:
        s.note("No game could be replayed for a picture (the manifest has no rules data).")
        return s
    s.figure("quilts", plots.quilt_pictures(samples),
             "Final quilts of one deal (under each ruleset): patches coloured by id, leather "
             "brown with an L, empty squares white; below, the time track.")
    return s


def _comparison(c: Comparison) -> Section:
    s = Section(f"Comparison: {c.label_b} against {c.label_a}", f"compare-{_slug(c.label_b)}")
    s.p(f"{c.label_b} (B) against {c.label_a} (A) on {c.shared_deals} shared deals: the same "
        "deal seeds and bots under both, so each deal is compared with itself.")
    s.bullets(c.verdict().splitlines() + c.notes)
    m = c.metrics
    if len(m):
        def val(kind: str, x: Any) -> str:
            return pct(x) if kind == "rate" else num(x, 2)

        def diff(kind: str, x: Any) -> str:
            return (f"{num(100 * x, 1, True)} pts" if kind == "rate" and st.finite(x)
                    else num(x, 2, True))

        s.table(fmt_table(m, [
            ("group", lambda r: r.group), ("metric", lambda r: r.metric),
            ("deals", lambda r: str(r.deals)), ("A", lambda r: val(r.kind, r.a)),
            ("B", lambda r: val(r.kind, r.b)), ("B - A", lambda r: diff(r.kind, r.diff)),
            ("95% CI (paired)", lambda r: f"[{diff(r.kind, r.lo)}, {diff(r.kind, r.hi)}]"),
            ("95% CI (unpaired)",
             lambda r: f"[{diff(r.kind, r.lo_unpaired)}, {diff(r.kind, r.hi_unpaired)}]"),
            ("p (adjusted)", lambda r: pval(r.p_holm)),
            (f"within +-{100 * c.margin:g} (adjusted p)", lambda r: pval(r.p_equivalent)),
            ("adjustment", lambda r: str(r.adjustment)),
            ("verdict", lambda r: str(r.verdict) if r.deals >= MIN_DEALS
             else "too few deals"),
        ]), "Paired differences per metric (B - A) over shared deals; p-values Holm-corrected "
            "for the first-seat win rate (the primary question), Benjamini-Hochberg for the "
            "exploratory others, for the tests of no change, of equivalence and of a change "
            f"beyond the margin alike; the verdict uses these and, for rates, the "
            f"+-{100 * c.margin:g}-point equivalence margin (other metrics have none)")
        s.figure(f"compare-{_slug(c.label_b)}", plots.comparison_chart(m, c.margin),
                 "Changes in rates with paired (thick) and unpaired (thin) 95% intervals; "
                 f"grey: +-{100 * c.margin:g} points.")
    s.table(fmt_table(c.flips, [
        ("group", lambda r: r.group), ("games", lambda r: str(r.games)),
        ("winner flips", lambda r: f"{r.flips} ({pct(r.flip_rate)})"),
        ("seat 0 wins only under A / B", lambda r: f"{r.seat0_only_a} / {r.seat0_only_b}"),
        ("deals net toward seat 0 under A / B",
         lambda r: f"{r.deals_toward_a} / {r.deals_toward_b}"),
        ("exact McNemar p", lambda r: pval(r.p_value)),
    ]), "Games whose winning seat flips between the rulesets; the exact test counts deals")
    return s


def _planning(table: pd.DataFrame) -> Section:
    s = Section("How many deals?", "plan")
    s.table(fmt_table(table, [
        ("ruleset", lambda r: r.ruleset), ("pairing", lambda r: r.pairing),
        ("question", lambda r: r.question), ("pilot deals", lambda r: str(r.pilot_deals)),
        ("+-1 point", lambda r: f"{r.deals_precision:,} "
                                f"({r.games_per_deal * r.deals_precision:,} games)"),
        ("detect 2 points", lambda r: f"{r.deals_difference:,}"),
        ("equivalent within +-2", lambda r: f"{r.deals_equivalence:,}"),
        ("note", lambda r: r.note),
    ]), "Deals needed, from the per-deal spread in this run, for the designs the runner plays "
        "(seat-swapped deals; the same deals under both rulesets for a change): a 95% interval "
        "of +-1 point, detecting a true 2-point difference (80% power) and showing "
        "equivalence within +-2 points (the 95% interval inside the margin, as the verdicts "
        "decide it; 80% power if the truth is fair or unchanged). An undecided verdict's "
        "'more deals' is computed at its observed change, so it equals this figure only when "
        "that change is within a standard error of 0")
    return s


def _methods(margin: float, n_boot: int) -> Section:
    s = Section("Methods", "methods")
    s.bullets([
        "Every deal (a shuffled patch circle with its random streams) is played twice with "
        "the seats swapped, and every ruleset of a run gets the same deals. The deal is the "
        "unit of analysis: a deal's games are dependent. With a deterministic bot in "
        f"self-play they are the same game: every table counts it once ({DISTINCT_NOTE}).",
        "Every interval, test and verdict comes from one estimator layer "
        "(patchsim.analysis.estimators), the one sweeps, comparisons and the run summary use. "
        "Rates: the mean over deals of each deal's rate (the share of games when every deal "
        "is complete) with a t-interval over deals; a weak prior of one imaginary deal at 0% "
        "and one at 100% in the standard error keeps the interval from collapsing when every "
        "deal went the same way.",
        "Verdicts (patchsim.analysis.estimators.verdicts, the one verdict function): each is "
        "read off the 95% interval printed beside it, equivalence first. 'Equivalent within "
        "+-m' when the interval lies inside the margin (the two one-sided tests at 2.5% "
        "each; 'differs by X [a, b], within +-m: negligible' when it also excludes 0); "
        "'differs by X [a, b], beyond +-m' only when it lies outside the margin (with no "
        "margin: when it excludes 0); otherwise 'undecided', with the further deals that "
        "would decide it with 80% power at the observed spread and change (its distance to "
        "the margin taken as at least one standard error), or 'too close to the margin to "
        "decide with any practical number of deals' above a million. When a table makes "
        "several claims (pairings, levels, variants, patches, comparisons) they are one "
        "family: the p-values of no change, of equivalence and of a change beyond the "
        "margin are each Holm-adjusted over it (Benjamini-Hochberg for exploratory "
        "metrics), and the verdict names the adjustment. To decide an undecided question "
        "run a sequential test (a check, or a run until decided) rather than adding deals "
        "and reading a fixed-sample verdict again, which raises its error rates.",
        f"First-player advantage: the verdict of the first seat's win rate against 50% "
        f"(margin +-{100 * margin:g} points), with at least {MIN_DEALS} deals. The exact "
        "McNemar test on the deals that the same seat won twice (split deals say nothing about "
        "the seat) is shown beside it; a deal of deterministic self-play is one game, counted "
        "by its winning seat.",
        "Balance by skill level: each self-play pairing is a skill level; the change of the "
        "first seat's win rate from the first level is a paired difference over the deals "
        "both played, Holm-corrected over the levels and rulesets, with its verdict.",
        f"Scores, margins, game length: mean, median and IQR with percentile bootstrap "
        f"intervals ({n_boot} resamples of whole deals).",
        "Patches: per seat and game, whether the seat bought the patch and whether it won; the "
        "difference in win rates is the slope of a linear probability model weighted so that "
        "each side's mean is its rate over deals, with deal-clustered errors (statsmodels), "
        "Holm-corrected over the patches. It measures an association in the bots' play, not "
        "the effect of the price.",
        "Leather: per mark, the claim (the claimer's score lead at that moment) and whether "
        "the placed patch filled an isolated one-square hole (every orthogonal neighbour "
        "covered or off the board).",
        "7x7 bonus: it changed the winner when the holder won by fewer points than the bonus "
        "is worth.",
        "Ratings: Bradley-Terry with a seat term, P(seat 0 wins) = logistic(h + r0 - r1), "
        "fitted by Newton's method with a weak Gaussian prior (sd 400 Elo) so that perfect "
        "results stay finite; intervals use the larger of the model-based and the "
        "deal-clustered standard error.",
        "Comparisons: each metric is averaged per deal under each ruleset; the paired "
        "difference has a t interval and test, rates also an equivalence test against "
        f"+-{100 * margin:g} points; p-values are Holm-corrected for the first-seat win rate "
        "(the primary question, over every comparison and pairing) and Benjamini-Hochberg "
        "adjusted for the other, exploratory metrics, and each change gets a verdict. Winner "
        "flips get an exact McNemar test over deals.",
        "Sequential stops: a check and a run until decided use a generalised SPRT on deal "
        "outcomes with Wald's bounds; the intervals they print are anytime-valid (a "
        "normal-mixture confidence sequence), which keep their coverage at a stop chosen by "
        "the data.",
        "Planning: deals needed = z^2 variance / half-width^2 with the per-game, per-deal or "
        "per-deal-difference variance of the run.",
    ])
    return s


def _stamp(run: Run, other: Run | None) -> Section:
    import matplotlib
    import scipy
    import statsmodels

    s = Section("Reproducibility", "stamp")
    rows = []
    for label, r in (("this run", run), ("compared with", other)):
        if r is None:
            continue
        m = r.manifest
        cfg = m.get("config", {})
        rows += [
            (f"{label}: folder", r.run_dir.name),  # no machine paths in a shipped report
            (f"{label}: run id", str(m.get("run_id", "—"))),
            (f"{label}: command", str(m.get("command", "—"))),
            (f"{label}: seed", str(cfg.get("seed", "—"))),
            (f"{label}: deals", str(cfg.get("deals", "—"))),
            (f"{label}: bots", "; ".join(cfg.get("bots", []))),
            (f"{label}: rulesets", ", ".join(f"{x['name']} {x.get('hash', '')}"
                                             for x in cfg.get("rulesets", []))),
            (f"{label}: versions", ", ".join(f"{k} {v}"
                                             for k, v in m.get("versions", {}).items())),
            (f"{label}: started / finished",
             f"{m.get('started', '—')} / {m.get('finished', '—')}"),
        ]
    rows.append(("analysis", f"scipy {scipy.__version__}, statsmodels {statsmodels.__version__}, "
                             f"matplotlib {matplotlib.__version__}, pandas {pd.__version__}, "
                             f"numpy {np.__version__}"))
    s.table(pd.DataFrame(rows, columns=["", "value"]))
    return s


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# --- rendering ----------------------------------------------------------------------------------
CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1200px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font-size:.82em}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}caption{caption-side:top;text-align:left;font-style:italic;padding:.3em 0}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}img{max-width:100%}
.note{background:#fff4d6;border-left:4px solid #e0a800;padding:.5em .8em}
nav a{margin-right:1em}
"""


def render_html(title: str, sections: Sequence[Section]) -> str:
    """One self-contained HTML page: inline style, images as data: URIs, no scripts."""
    esc = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{esc(title)}</h1>",
           "<nav>" + "".join(f'<a href="#{s.anchor}">{esc(s.title)}</a>' for s in sections)
           + "</nav>"]
    for s in sections:
        out.append(f'<h2 id="{s.anchor}">{esc(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, str):
                out.append(f"<p>{esc(b)}</p>")
            elif isinstance(b, tuple) and b[0] == "note":
                out.append(f'<p class="note">{esc(b[1])}</p>')
            elif isinstance(b, tuple) and b[0] == "html":
                out.append(b[1])  # a self-contained fragment built by patchsim itself
            elif isinstance(b, list):
                out.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in b) + "</ul>")
            elif isinstance(b, Table):
                out.append(_html_table(b))
            elif isinstance(b, Figure):
                data = base64.b64encode(b.png).decode("ascii")
                out.append(f'<figure><img alt="{esc(b.caption)}" '
                           f'src="data:image/png;base64,{data}">'
                           f"<figcaption>{esc(b.caption)}</figcaption></figure>")
    out.append("</body></html>")
    return "\n".join(out)


def _html_table(t: Table) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(str(c))}</th>" for c in t.frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(str(v))}</td>" for v in row) + "</tr>"
                   for row in t.frame.itertuples(index=False))
    cap = f"<caption>{esc(t.caption)}</caption>" if t.caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_markdown(title: str, sections: Sequence[Section], run_dir: Path) -> str:
    """Markdown with the figures written to ``run_dir/figures`` and linked relatively."""
    fig_dir = run_dir / "figures"
    fig_dir.mkdir(exist_ok=True)
    out = [f"# {title}", ""]
    for s in sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, str):
                out += [b, ""]
            elif isinstance(b, tuple) and b[0] == "note":
                out += [f"> **Note:** {b[1]}", ""]
            elif isinstance(b, tuple) and b[0] == "html":
                out += ["*(The interactive replay is in report.html.)*", ""]
            elif isinstance(b, list):
                out += [f"- {x}" for x in b] + [""]
            elif isinstance(b, Table):
                if b.caption:
                    out += [f"*{b.caption}*", ""]
                out += [_md_table(b.frame), ""]
            elif isinstance(b, Figure):
                atomic_write(fig_dir / f"{b.name}.png", b.png)
                out += [f"![{b.caption}](figures/{b.name}.png)", "", f"*{b.caption}*", ""]
    return "\n".join(out)


def _md_table(df: pd.DataFrame) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    cols = [cell(c) or " " for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in df.itertuples(index=False)]
    return "\n".join(lines)

