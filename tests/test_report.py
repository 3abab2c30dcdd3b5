"""patchsim.reporting.report: the report builds for every kind of run, is self-contained, and its
images decode; its intervals are the estimator layer's, deterministic self-play counts once,
and runs with several skill levels get a verdict on the balance by skill."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import matplotlib.image as mpimg
import pandas as pd
import pytest
from matplotlib.figure import Figure
from runs import shared_run

from patchsim.analysis import estimators as E
from patchsim.analysis.selfplay import distinct_games
from patchsim.document.format import ci, pct
from patchsim.play.runfolder import load_games
from patchsim.reporting import plots
from patchsim.reporting.report import ReportError, load_run, write_report

SECTIONS = ["Verdict", "The run", "Seats and pairings", "Scores and game length", "Patches",
            "Leather patches", "The 7x7 bonus", "Sample final quilts", "How many deals?",
            "Methods", "Reproducibility"]
DISTINCT = "(deterministic self-play: one distinct game per deal)"


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_run(tmp_path_factory, "small", "edition2", 40, ["greedy", "income"])


@pytest.fixture(scope="session")
def two_rulesets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.getbasetemp() / "two-editions.yaml"
    path.write_text("{name: two, rulesets: [edition1, edition2], games: 60, seed: 3}\n")
    return shared_run(tmp_path_factory, "two-editions", str(path), 60, ["greedy", "income"],
                      seed=3)


@pytest.fixture(scope="session")
def skill_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two skill levels of self-play (and their cross pairing) on the same 50 deals; the
    epsilon keeps the games of a deal apart."""
    return shared_run(tmp_path_factory, "skill-levels", "edition2", 100,
                      ["greedy(epsilon=0.1)", "income(epsilon=0.1)"], seed=5)


def section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _check_self_contained(text: str) -> None:
    """Loads nothing from anywhere: no address but the SVG namespace name (an identifier the
    replay's drawing code passes to createElementNS, never fetched), inline scripts only (the
    sample-game replay), no stylesheets or imports, images as data URIs."""
    addresses = set(re.findall(r"https?://[^\s\"'<>)]*", text))
    assert addresses <= {"http://www.w3.org/2000/svg"}, addresses
    assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.I)
    assert "<link" not in text.lower()
    assert "@import" not in text and "url(" not in text
    for src in re.findall(r'src="([^"]*)"', text):
        assert src.startswith("data:image/png;base64,"), src[:60]


def _check_images(text: str) -> int:
    srcs = re.findall(r'src="data:image/png;base64,([^"]*)"', text)
    for data in srcs:
        raw = base64.b64decode(data, validate=True)
        assert raw[:8] == b"\x89PNG\r\n\x1a\n"
        img = mpimg.imread(io.BytesIO(raw), format="png")
        assert img.ndim == 3 and img.shape[0] > 50 and img.shape[1] > 50
    return len(srcs)


def _no_garbage(text: str) -> None:
    # table cells and sentences never show NaN or None
    assert not re.search(r"\b(nan|NaN|None)\b", text)


@pytest.mark.slow
def test_report_of_a_single_ruleset_run(small_run: Path):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    path = write_report(small_run)
    assert plt.get_fignums() == before  # figures never go through pyplot
    assert path == small_run / "report.html"
    html_text = path.read_text(encoding="utf-8")
    md = (small_run / "report.md").read_text(encoding="utf-8")
    for title in SECTIONS + ["Ratings"]:
        assert f">{title}</h2>" in html_text
        assert f"## {title}" in md
    assert "Comparison:" not in md  # one ruleset: no comparison section
    _check_self_contained(html_text)
    n = _check_images(html_text)
    assert n >= 7
    links = re.findall(r"\]\((figures/[^)]+\.png)\)", md)
    assert len(links) == n
    for link in links:
        assert (small_run / link).is_file()
    _no_garbage(html_text)
    _no_garbage(md)
    # the verdict's first-seat numbers are the table's numbers
    verdict = md.split("## The run")[0]
    assert "the first seat wins" in verdict and "greedy vs income" in verdict
    # the reproducibility stamp carries the manifest's seed, hash and command
    manifest = load_run(small_run).manifest
    stamp = md.split("## Reproducibility")[1]
    assert manifest["config"]["rulesets"][0]["hash"] in stamp
    assert manifest["run_id"] in stamp


@pytest.mark.slow
def test_report_shows_curves_and_a_self_contained_replay(small_run: Path):
    """Issue 12: curves over the game per seat and bot, and sample games replayed inside the
    file (inline data and drawing code, no server, nothing fetched)."""
    html_text = write_report(small_run).read_text(encoding="utf-8")
    section = html_text.split('id="curves"', 1)[1]
    assert "Over the game" in html_text and "data:image/png;base64," in section
    assert "<script" in section and "replayed move by move" in section
    assert (small_run / "figures" / "curves.png").exists()
    md = (small_run / "report.md").read_text(encoding="utf-8")
    assert "## Over the game" in md and "interactive replay is in report.html" in md


def test_patch_section_is_built_on_a_stored_prices_study(small_run: Path, tmp_path: Path):
    """The association table is labelled as such; a prices study in the run's prices/ folder
    (what `patchsim prices --out RUN/prices` writes) is shown as the causal answer."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    (run / "prices").mkdir()
    pd.DataFrame([{"patch": "P19", "cost": 10, "value": -0.001, "value_lo": -0.006,
                   "value_hi": 0.005, "verdict": "equivalent within +-2.0 points",
                   "fair_text": "not identified", "reading": "priced about right"}]).to_csv(
        run / "prices" / "patches.csv", index=False)
    md = (write_report(run).parent / "report.md").read_text(encoding="utf-8")
    section = md.split("## Patches", 1)[1].split("\n## ", 1)[0]
    assert "Causal prices" in section and "priced about right" in section
    assert "Association:" in section and "looks over" not in section


def test_leather_section_answers_the_publishers_question(two_rulesets: Path):
    """Per ruleset and skill level, the first leather patch's uselessness against 'about
    half' as a three-way verdict; the patch that moved (20 -> 38) apart from the patch that
    became first (26)."""
    write_report(two_rulesets)
    md = (two_rulesets / "report.md").read_text(encoding="utf-8")
    section = md.split("## Leather patches", 1)[1].split("\n## ", 1)[0]
    assert "useless in about half of the games" in section
    for ruleset, mark in (("edition1", 20), ("edition2", 26)):
        line = next(ln for ln in section.splitlines() if ln.startswith(f"- {ruleset}, greedy"))
        assert f"(mark {mark})" in line
        assert any(k in line for k in ("differs by", "equivalent within", "undecided:"))
    assert "The patch that moved (20 under edition1 -> 38 under edition2)" in section
    assert "The patch that became first (mark 26: rank 2 under edition1" in section


def test_report_of_a_multi_ruleset_run_compares_them(two_rulesets: Path):
    html_text = write_report(two_rulesets).read_text(encoding="utf-8")
    md = (two_rulesets / "report.md").read_text(encoding="utf-8")
    assert "## Comparison: edition2 against edition1" in md
    verdict = md.split("## The run")[0]
    assert re.search(r"Under edition2 the first leather patch \(mark 26\) fills an isolated "
                     r"one-square hole in \d+\.\d% \[.*\] of games, against \d+\.\d% .* under "
                     r"edition1 \(mark 20\)", verdict)
    _check_self_contained(html_text)
    _check_images(html_text)
    _no_garbage(md)


@pytest.mark.slow
def test_report_of_a_tiny_run(tmp_path_factory: pytest.TempPathFactory):
    run = shared_run(tmp_path_factory, "tiny", "edition2", 2, ["greedy"])
    html_text = write_report(run).read_text(encoding="utf-8")
    md = (run / "report.md").read_text(encoding="utf-8")
    assert "Too few games" in md and "too few games" in md
    for title in SECTIONS:
        assert f"## {title}" in md
    _check_self_contained(html_text)
    _check_images(html_text)
    _no_garbage(md)


@pytest.mark.slow
def test_report_compare_with_another_run(tmp_path_factory: pytest.TempPathFactory):
    a = shared_run(tmp_path_factory, "ed1", "edition1", 60, ["greedy", "income"], seed=3)
    b = shared_run(tmp_path_factory, "ed2", "edition2", 60, ["greedy", "income"], seed=3)
    write_report(b, compare_with=a)
    md = (b / "report.md").read_text(encoding="utf-8")
    assert "## Comparison: edition2 against edition1" in md
    assert "compared with: folder" in md


def test_report_counts_deterministic_self_play_once_and_its_intervals_are_per_deal(
        small_run: Path):
    """greedy and income are deterministic: their self-play tables count each deal's game
    once and say so; every first-seat interval is estimators.rate on the same games."""
    md = (write_report(small_run).parent / "report.md").read_text(encoding="utf-8")
    games = load_games(small_run)
    once = distinct_games(games)
    assert sorted(once.attrs["duplicated_pairings"]) == ["greedy vs greedy", "income vs income"]
    run_table = section(md, "The run")
    seats = section(md, "Seats and pairings")
    for pairing, g in once.groupby("pairing"):
        label = pairing if pairing == "greedy vs income" else f"{pairing} {DISTINCT}"
        n = 40 if pairing == "greedy vs income" else 20
        row = next(ln for ln in run_table.splitlines()
                   if ln.startswith(f"| edition2 | {label} |"))
        assert row.split(" | ")[2] == str(n)  # games
        for title in ("Seats and pairings", "Scores and game length", "The 7x7 bonus"):
            assert f"| {label} |" in section(md, title), (title, label)
        won = (g["winner"] == 0).to_numpy(float)
        e = E.rate(won, g["deal"])
        assert f"| {label} | 20 | {pct(e.value)} | {ci(e.lo, e.hi)} |" in seats
        if pairing != "greedy vs income":  # a distinct game is never a split deal
            wins = int(won.sum())
            assert f"| {wins} / 0 / {20 - wins} |" in seats
        full = games[games["pairing"] == pairing]  # copies change counts, not rates
        e_full = E.rate((full["winner"] == 0).to_numpy(float), full["deal"])
        assert (e_full.lo, e_full.hi) == pytest.approx((e.lo, e.hi))
    verdict = md.split("## The run")[0]
    assert "with greedy vs greedy, the first seat wins" in verdict
    assert "each played from both seats; deterministic self-play: one distinct game" in verdict
    assert "Games of greedy vs greedy, income vs income: deterministic self-play" in section(
        md, "Leather patches")


def test_report_states_the_balance_by_skill_level(skill_run: Path):
    """Two self-play pairings: the first seat's win rate per skill level side by side, and
    the verdict on the change, paired over the common deals (estimators.paired_difference
    and estimators.verdict)."""
    md = (write_report(skill_run).parent / "report.md").read_text(encoding="utf-8")
    games = load_games(skill_run)
    weak, strong = "greedy(epsilon=0.1)", "income(epsilon=0.1)"

    def level(bot: str) -> tuple[E.Estimate, pd.Series]:
        g = games[games["pairing"] == f"{bot} vs {bot}"]
        won = (g["winner"] == 0).to_numpy(float)
        return E.rate(won, g["deal"]), E.deal_values(won, g["deal"])

    (rw, xw), (rs, xs) = level(weak), level(strong)
    change = E.paired_difference(xw, xs, bounds=E.RATE_DIFF_BOUNDS)
    assert change.deals == 50  # every pairing of the run plays the same deals
    v = E.verdict(change, 0.02, 0.0, 0.05)  # one change: Holm leaves its p-value alone
    text = v.text(100.0, " points")
    line = next(ln for ln in md.split("## The run")[0].splitlines()
                if "balance by skill level" in ln)
    assert (f"the first seat wins {pct(rw.value)} {ci(rw.lo, rw.hi)} of games with {weak} and "
            f"{pct(rs.value)} {ci(rs.lo, rs.hi)} with {strong}") in line
    words = "" if text.startswith("differs") else "is "  # "differs by ..." takes no "is"
    assert f"the change over 50 common deals {words}{text}" in line
    table = section(md, "Seats and pairings")
    header = next(ln for ln in table.splitlines() if ln.startswith("| ruleset | deals |"))
    assert (f"| first seat wins: {weak} | first seat wins: {strong} | "
            f"change: {strong} - {weak} |") in header
    row = next(ln for ln in table.splitlines() if ln.startswith("| edition2 | 50 |"))
    assert (f"| {pct(rw.value)} {ci(rw.lo, rw.hi)} | {pct(rs.value)} {ci(rs.lo, rs.hi)} | "
            f"{text}") in row
    _no_garbage(md)


def test_one_question_gets_one_verdict_in_the_headline_the_verdict_and_the_table(
        skill_run: Path):
    """Issue 28, item 5: the headline said "differs ... beyond +-2.0" and the Verdict section
    "undecided ... (Holm over 2)" for the same first seat under the same level. The
    headline's question is asked alone everywhere; the other pairings stay one family."""
    from patchsim.analysis import skill as sk
    from patchsim.reporting.report import headline_questions

    md = (write_report(skill_run).parent / "report.md").read_text(encoding="utf-8")
    games = load_games(skill_run)
    (trace,) = sk.run_traces(games)
    _e, v = sk.headline(trace.level_deals, len(trace.levels) - 1, trace.margin)
    text = v.text()
    strong = trace.levels[-1]
    assert headline_questions(games) == [("edition2", f"{strong} vs {strong}")]
    head = section(md, "Headline")
    assert text in head
    verdict = section(md, "Verdict")
    line = next(ln for ln in verdict.splitlines() if f"with {strong} vs {strong}," in ln)
    assert f"against 50%: {text}" in line
    # the other pairings are one Holm family of their own, and say so
    others = [ln for ln in verdict.splitlines() if "against 50%:" in ln and ln != line]
    assert len(others) == 2 and all("(Holm over 2: " in ln for ln in others)
    assert "(Holm over" not in line


def test_report_errors_are_plain(tmp_path: Path, small_run: Path):
    with pytest.raises(ReportError, match="not a run folder"):
        write_report(tmp_path / "missing")
    with pytest.raises(ReportError, match="no manifest"):
        write_report(tmp_path)
    other = tmp_path / "unfinished"
    other.mkdir()
    # a run's manifest without its tables (a run stopped before its merge)
    manifest = json.loads((small_run / "manifest.json").read_text())
    (other / "manifest.json").write_text(json.dumps(dict(manifest, complete=False)))
    with pytest.raises(ReportError, match="not finished"):
        write_report(other)
    with pytest.raises(ReportError):
        write_report(small_run, compare_with=tmp_path / "missing")


def test_plots_survive_empty_tables():
    empty = pd.DataFrame()
    figs = [plots.seat_winrates(empty), plots.ratings_plot(empty),
            plots.leather_chart(empty), plots.comparison_chart(empty),
            plots.quilt_pictures([]),
            plots.bonus_timing(pd.DataFrame(columns=["ruleset", "seat", "position"])),
            plots.patch_chart(pd.DataFrame(columns=["ruleset", "bought", "diff", "flag"])),
            plots.score_distributions(pd.DataFrame(columns=["ruleset", "score0", "score1"]))]
    for fig in figs:
        assert isinstance(fig, Figure)
        assert plots.png_bytes(fig)[:4] == b"\x89PNG"


@pytest.mark.parametrize("which", ["small_run", "two_rulesets"])
@pytest.mark.slow
def test_report_from_streamed_tables_is_the_in_memory_one(which: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest):
    """The report reads compact games and a streamed events summary (never every event):
    its text and pictures are byte for byte those of a report built on the full in-memory
    tables, as every report was before."""
    from patchsim.analysis.tables import EventSummary
    from patchsim.play.runfolder import load_events, load_games
    from patchsim.reporting.report import Run, build_sections, render_markdown

    run_dir = request.getfixturevalue(which)
    run = load_run(run_dir)
    assert isinstance(run.events, EventSummary) and "moves" not in run.games.columns
    full = Run(run.run_dir, load_games(run_dir), load_events(run_dir), run.manifest,
               run.rulesets)
    texts = []
    for name, r in (("streamed", run), ("in-memory", full)):
        (tmp_path / name).mkdir()
        texts.append(render_markdown("t", build_sections(r), tmp_path / name))
    assert texts[0] == texts[1]
    figures = sorted(p.name for p in (tmp_path / "streamed" / "figures").iterdir())
    assert figures == sorted(p.name for p in (tmp_path / "in-memory" / "figures").iterdir())
    for f in figures:
        assert ((tmp_path / "streamed" / "figures" / f).read_bytes()
                == (tmp_path / "in-memory" / "figures" / f).read_bytes()), f


def texts_outside(fig: Figure) -> list[str]:
    """The panels of ``fig`` (with their titles, tick labels and axis labels, as drawn) and
    the figure's own texts that do not fit inside the image: cut off when it is saved."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width, height = fig.bbox.width, fig.bbox.height
    boxes = [(ax.get_title(), ax.get_tightbbox(renderer)) for ax in fig.axes]
    boxes += [(t.get_text(), t.get_window_extent(renderer)) for t in fig.texts]
    return [what for what, box in boxes if box is not None and (
        box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1)]


def test_seat_win_rate_figure_keeps_every_text_inside():
    """The right panel's title (with its colour key) ran past the image's right edge."""
    learned = "mcts(eval=learned, iterations=100)"
    pairs = [("greedy vs greedy", True), (f"greedy vs {learned}", False),
             (f"{learned} vs {learned}", True)]
    rs = "edition2 (bonus.points=9)"
    fpa = pd.DataFrame({"pairing": [p for p, _ in pairs], "ruleset": rs, "rate": 0.55,
                        "lo": 0.45, "hi": 0.65})
    lines = pd.DataFrame([{"pairing": p, "ruleset": rs, "self_play": self_play, "bot": "greedy",
                           "line": line, "win_rate": 0.5, "lo": 0.4, "hi": 0.6}
                          for p, self_play in pairs
                          for line in ("first seat", "second seat", "pooled")])
    assert texts_outside(plots.seat_winrates(fpa, lines)) == []


def test_a_run_stopped_when_decided_says_its_intervals_cover_less(tmp_path) -> None:
    """After run --until-decided the report's fixed-sample intervals cover 92-94%, not 95%:
    the verdict section says so and gives the sequential test's anytime-valid intervals."""
    import json
    from types import SimpleNamespace

    from patchsim.reporting.sections_verdict import stopping_note as _stopping

    run = SimpleNamespace(run_dir=tmp_path, games=pd.DataFrame({"deal": range(1400)}))
    assert _stopping(run) == ""  # a run of fixed length: nothing to say
    (tmp_path / "stopping.json").write_text(json.dumps({
        "rule": "decided", "margin": 0.02, "step_deals": 200, "deals": 1400,
        "decided": [{"ruleset": "edition2", "pairing": "greedy vs greedy",
                     "decision": "within", "deal": 1400, "rate": 0.505, "lo": 0.48,
                     "hi": 0.53}]}))
    note = _stopping(run)
    assert "cover somewhat less than 95%" in note
    assert "edition2, greedy vs greedy: 50.5% [48.0%, 53.0%] at deal 1400" in note
    # the record is data from a file: damaged, it is said, not a traceback
    for bad in ("[1, 2]", '{"deals": "x"}', '{"deals": 5, "decided": [{"rate": 1}]}',
                '{"deals": 5, "margin": []}'):
        (tmp_path / "stopping.json").write_text(bad)
        assert "damaged and was ignored" in _stopping(run)
    # a run extended after its sequential stop says so
    run = SimpleNamespace(run_dir=tmp_path, games=pd.DataFrame({"deal": range(1500)}))
    (tmp_path / "stopping.json").write_text(json.dumps({"margin": 0.02, "deals": 1400,
                                                       "decided": []}))
    assert "stopped this run at 1,400 deals; it was extended to 1,500" in _stopping(run)


def test_the_report_is_one_document_rendered_by_the_one_renderer(small_run: Path) -> None:
    """The report is a patchsim.document Document: its sections by title, the Markdown the
    renderer gives, and Markdown-light text (`code`) shown as code in the HTML."""
    from patchsim.document.render import to_html, to_markdown
    from patchsim.reporting.report import build_document

    doc = build_document(load_run(small_run))
    assert [t for t in doc.titles() if t in SECTIONS] == SECTIONS
    assert doc.section("Verdict").blocks
    # the headline (the first seat under the strongest level, and its skill trace) opens it
    assert to_markdown(doc).startswith(f"# {doc.title}\n\n## Headline\n")
    assert doc.titles().index("Headline") < doc.titles().index("Verdict")
    assert "<code>patchsim report RUN --prices</code>" in to_html(doc)
