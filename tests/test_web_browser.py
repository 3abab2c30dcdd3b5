"""``patchsim serve`` in a real browser: Debian's Chromium, headless, driven by Playwright.

Open a run and filter its games; step through a stored game with the keyboard, the buttons,
the slider and the move list, checking the drawn squares, tokens and numbers against the
engine's own replay; play a whole game against ``random`` by clicking (pick a patch, turn it,
place it, pass, place leather; an illegal placement is refused by the engine), then replay
the saved record with ``patchsim replay``; and replay games in the report's snippet from a
file with no server. Every page is checked to ask nothing of any host but this one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from runs import shared_run
from webserver import Server

from patchsim.analysis.selfplay import distinct_games
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord
from patchsim.engine.ruleset import load_ruleset

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
REPO = Path(__file__).resolve().parent.parent
COLS = "abcdefghijklmnop"

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sync_playwright is None, reason="Playwright for Python is not installed "
                       "(pip install playwright; .ci/run installs it with the test extra)"),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed at "
                       "/usr/bin/chromium (apt-get install chromium; .ci/run installs it)"),
]

from patchsim.reporting.curves import replay_snippet  # noqa: E402
from patchsim.web.app import create_app  # noqa: E402


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_run(tmp_path_factory, "web-small", "edition2", 8, ["greedy", "random"])


@pytest.fixture(scope="module")
def games(run_dir: Path) -> pd.DataFrame:
    g = pd.read_parquet(run_dir / "games.parquet")
    ev = pd.read_parquet(run_dir / "events.parquet", columns=["game_id", "seat", "event"])
    claims = ev[ev["event"] == "leather_claim"].groupby(["game_id", "seat"]).size()
    for seat in (0, 1):
        g[f"claims{seat}"] = [int(claims.get((gid, seat), 0)) for gid in g["game_id"]]
    return distinct_games(g)  # the table lists a deterministic self-play game once


@pytest.fixture(scope="module")
def server(run_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("browser-runs")
    shutil.copytree(run_dir, root / "small")
    app = create_app([root], tmp_path_factory.mktemp("played"), eval_rollouts=10)
    with Server(app) as srv:
        srv.run_id = srv.api("/api/runs")["runs"][0]["id"]
        yield srv


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A page that may talk to 127.0.0.1 (and read files) only: any other request is
    aborted and makes the test fail, as does a script error."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    foreign: list[str] = []
    errors: list[str] = []

    def gate(route) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "file://", "data:", "blob:")):
            route.continue_()
        else:
            foreign.append(url)
            route.abort()

    context.route("**/*", gate)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert foreign == [], f"requests to other hosts: {foreign}"
    assert errors == [], f"script errors: {errors}"


# --- helpers --------------------------------------------------------------------------------------
def engine_game(games: pd.DataFrame, gid: int) -> tuple[list[Game], list[str]]:
    """A stored game replayed here, from its deal seed and stored moves: every position and
    the move texts."""
    row = games[games["game_id"] == gid].iloc[0]
    rs = load_ruleset("edition2")
    game = Game.new(rs, circle=deal_circle(rs, int(row["deal_seed"])))
    out = [game.copy()]
    for code in row["moves"]:
        game.apply(int(code))
        out.append(game.copy())
    return out, game.move_texts()


def owners(texts: list[str], positions: list[Game], ply: int) -> list[dict[str, str]]:
    """Per seat, square name -> patch id (or "leather"), from the first ``ply`` moves."""
    out: list[dict[str, str]] = [{}, {}]
    for i, text in enumerate(texts[:ply]):
        seat = positions[i].to_move
        words = text.split()
        if words[0] == "buy":
            out[seat].update({sq: words[1] for sq in words[2:]})
        elif words[0] == "leather":
            out[seat][words[1]] = "leather"
    return out


def drawn(page, scope: str = "#board") -> dict:
    """What the page drew: squares, tokens, the position text and the panels' scores."""
    return page.evaluate("""(scope) => {
        const root = document.querySelector(scope);
        const svg = root.querySelector('svg.pb-board');
        return {
            ply: +svg.dataset.ply, text: svg.dataset.text,
            squares: Array.from(root.querySelectorAll('rect.pb-sq')).map(r => [
                +r.dataset.seat, r.dataset.name, r.dataset.state, r.dataset.patch || null]),
            tokens: Array.from(root.querySelectorAll('circle.pb-token')).map(
                c => [+c.dataset.seat, +c.dataset.space]),
            panels: Array.from(root.querySelectorAll('.pb-panel')).map(
                g => g.textContent),
        };
    }""", scope)


def check_drawn(page, game: Game, owner: list[dict[str, str]], scope: str = "#board") -> None:
    """The page shows exactly the engine's position ``game``."""
    d = drawn(page, scope)
    assert d["ply"] == game.ply and d["text"] == game.to_text()
    cols = game.tables.cols
    seen = 0
    for seat, name, state, patch in d["squares"]:
        r, c = int(name[1:]) - 1, COLS.index(name[0])
        covered = bool(game.quilt_mask(seat) >> (r * cols + c) & 1)
        assert (state != "empty") == covered, (seat, name, state)
        if state == "leather":
            assert owner[seat][name] == "leather"
        elif state == "patch":
            assert owner[seat][name] == patch, (seat, name, patch)
        else:
            assert state == "empty" and name not in owner[seat]
        seen += 1
    assert seen == 2 * game.tables.rows * cols
    assert sorted(map(tuple, d["tokens"])) == [(0, game.position(0)), (1, game.position(1))]
    for seat, panel in enumerate(d["panels"]):
        numbers = {k: int(v) for k, v in re.findall(r"(score|buttons|income) (-?\d+)", panel)}
        assert numbers == {"score": game.score(seat), "buttons": game.buttons(seat),
                           "income": game.income(seat)}, panel


def wait_ply(page, ply: int, scope: str = "#board") -> None:
    page.wait_for_function("([scope, ply]) => { const s = document.querySelector(scope + "
                           "' svg.pb-board'); return s && +s.dataset.ply === ply; }",
                           arg=[scope, ply])


# --- runs -----------------------------------------------------------------------------------------
def table_ids(page) -> list[int]:
    return page.eval_on_selector_all("#games-table tbody tr",
                                     "rows => rows.map(r => +r.dataset.game)")


def wait_table(page, count: int) -> None:
    page.wait_for_function("(n) => { const t = document.querySelector('#count'); return t && "
                           "document.querySelectorAll('#games-table tbody tr').length === "
                           "Math.min(n, 50) && t.textContent.includes(n ? ' of ' + n + ' "
                           "matching' : 'no game matches'); }", arg=count)


def test_open_a_run_filter_its_games_and_open_one(page, server: Server,
                                                  games: pd.DataFrame) -> None:
    page.goto(server.url + "/")
    page.click("a.run-link")
    wait_table(page, len(games))
    assert table_ids(page) == sorted(games["game_id"])
    # deterministic self-play: one row per deal, labelled, as the report counts it
    once = sorted(games[games["pairing"] == "greedy vs greedy"]["game_id"])
    assert once and page.eval_on_selector_all(
        "#games-table tr[data-counted-once] .counted-once",
        "s => s.map(x => +x.closest('tr').dataset.game)") == once
    assert "counted once" in page.text_content("#count")
    page.select_option("#f-winner", "1")
    want = games[games["winner"] == 1]
    wait_table(page, len(want))
    assert table_ids(page) == sorted(want["game_id"])
    page.select_option("#f-leather", "more0")
    want = want[want["claims0"] > want["claims1"]]
    wait_table(page, len(want))
    assert table_ids(page) == sorted(want["game_id"])
    assert "winner=1" in page.url and "leather=more0" in page.url
    page.click("#f-reset")
    page.fill("#f-abs-margin-min", "10")
    page.press("#f-abs-margin-min", "Tab")  # a change event, as a person leaving the field
    want = games[(games["score0"] - games["score1"]).abs() >= 10]
    wait_table(page, len(want))
    assert table_ids(page) == sorted(want["game_id"])
    page.select_option("#f-pairing", "greedy vs random")
    want = want[want["pairing"] == "greedy vs random"]
    wait_table(page, len(want))
    first = int(want["game_id"].min())
    page.click(f'#games-table tr[data-game="{first}"] a.game-link')
    page.wait_for_selector("#board svg.pb-board")
    assert f"game={first}" in page.url
    positions, texts = engine_game(games, first)
    check_drawn(page, positions[0], owners(texts, positions, 0))


# --- the viewer -----------------------------------------------------------------------------------
def test_step_through_a_game_and_see_the_engines_positions(page, server: Server,
                                                           games: pd.DataFrame) -> None:
    # a game with leather placed by both seats, so that every kind of square is drawn
    gid = int(games[(games["leather0"] > 0) & (games["leather1"] > 0)]["game_id"].iloc[0])
    positions, texts = engine_game(games, gid)
    last = len(texts)
    page.goto(f"{server.url}/game?run={server.run_id}&game={gid}")
    page.wait_for_selector("#board svg.pb-board")
    check_drawn(page, positions[0], owners(texts, positions, 0))

    def at(ply: int) -> None:
        wait_ply(page, ply)
        check_drawn(page, positions[ply], owners(texts, positions, ply))
        assert page.get_attribute("#moves li.current", "data-ply") == str(ply)

    page.click("#board")  # the page has the focus, not an input: the arrows step
    for ply in (1, 2, 3):
        page.keyboard.press("ArrowRight")
        at(ply)
    page.click("#next")
    at(4)
    page.keyboard.press("ArrowLeft")
    at(3)
    page.focus("#slider")  # the slider's own keys
    page.keyboard.press("End")
    at(last)
    assert "game over" in page.text_content("#plylabel")
    page.keyboard.press("ArrowLeft")
    at(last - 1)
    page.click("#first")
    at(0)
    leather_ply = next(i + 1 for i, t in enumerate(texts) if t.startswith("leather"))
    page.click(f'#moves li[data-ply="{leather_ply}"]')
    at(leather_ply)
    page.click("#last")
    at(last)
    # the evaluation curve: one point per position, the lead changes marked where they are
    page.wait_for_selector("#eval-curve")
    ev = server.api(f"/api/runs/{server.run_id}/games/{gid}/eval")
    assert page.get_attribute("#eval-curve", "data-points") == str(last + 1)
    marked = page.eval_on_selector_all(".lead-change", "m => m.map(x => +x.dataset.ply)")
    assert marked == [p["ply"] for p in ev["points"] if p["lead_change"]]
    page.click('#moves li[data-ply="5"]')
    wait_ply(page, 5)
    assert page.text_content("#eval-here").startswith("move 5: seat 0 wins")
    # the learned evaluation has no sampling interval: no band and no [lo, hi] is shown
    assert "learned" in ev["method"] and page.query_selector(".eval-band") is None
    assert "[" not in page.text_content("#eval-here")


def test_a_record_that_does_not_load_says_why(page, server: Server, tmp_path: Path) -> None:
    page.goto(server.url + "/game")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rules": "edition2", "circle": [], "moves": []}))
    page.set_input_files("#file", str(bad))
    page.wait_for_selector("#notice .notice")
    assert "circle" in page.text_content("#notice")
    sample = REPO / "examples" / "edition2-sample.json"
    page.set_input_files("#file", str(sample))
    page.wait_for_selector("#board svg.pb-board")
    rec = GameRecord.load(sample)
    assert page.get_attribute("#slider", "max") == str(len(rec.moves))


# --- play -----------------------------------------------------------------------------------------
def click_square(page, seat: int, name: str) -> None:
    page.click(f'#board rect.pb-sq[data-seat="{seat}"][data-name="{name}"]')


def place(page, game: Game, seat: int, patch: str, squares: list[str]) -> None:
    """Pick ``patch`` from the offer, turn it until the preview has the shape of
    ``squares``, and click the square under its centre."""
    page.click(f'#board g.pb-offer[data-patch="{patch}"]')
    rc = [(int(s[1:]) - 1, COLS.index(s[0])) for s in squares]
    r0, c0 = min(r for r, _ in rc), min(c for _, c in rc)
    target = ";".join(f"{r - r0},{c - c0}" for r, c in sorted(rc))
    for i in range(8):
        if page.get_attribute("#preview", "data-cells") == target:
            break
        if i == 3:
            page.click("#flip")
        else:
            page.keyboard.press("r")
    assert page.get_attribute("#preview", "data-cells") == target
    h = max(r for r, _ in rc) - r0 + 1
    w = max(c for _, c in rc) - c0 + 1
    click_square(page, seat, f"{COLS[c0 + w // 2]}{r0 + h // 2 + 1}")


def test_play_a_whole_game_against_random_by_clicking(page, server: Server) -> None:
    rng = np.random.default_rng(8)
    page.goto(server.url + "/play")
    page.wait_for_selector("#ruleset option[value=edition2]", state="attached")
    page.select_option("#ruleset", "edition2")
    page.fill("#bot", "random")
    page.select_option("#seat", "0")
    page.fill("#seed", "5")
    page.click("#start")
    page.wait_for_selector("#board svg.pb-board")
    tried_illegal = False
    for _ in range(300):
        state = page.get_attribute("#status", "data-state")
        if state == "over":
            break
        assert state in ("turn", "leather"), page.text_content("#status")
        text = page.get_attribute("#board svg.pb-board", "data-text")
        game = Game.from_text(text, "edition2")
        legal = game.legal_moves()
        if state == "leather":
            move = legal[int(rng.integers(len(legal)))]
            click_square(page, 0, move.squares[0])
        else:
            buys = [m for m in legal if m.kind == "buy"]
            if buys and not tried_illegal and game.empty_squares(0) < 81:
                tried_illegal = True
                try_an_overlap(page, game, buys[0].patch)
                assert page.get_attribute("#board svg.pb-board", "data-text") == text
            if buys and rng.random() < 0.85:
                move = buys[int(rng.integers(len(buys)))]
                place(page, game, 0, move.patch, list(move.squares))
            else:
                page.click("#pass")
        page.wait_for_function("(t) => document.querySelector('#board svg.pb-board')"
                               ".dataset.text !== t", arg=text)
    assert page.get_attribute("#status", "data-state") == "over"
    assert tried_illegal
    saved = page.get_attribute("#saved", "data-path")
    panels = drawn(page)["panels"]
    scores = [int(re.search(r"score (-?\d+)", p).group(1)) for p in panels]
    done = subprocess.run([sys.executable, "-m", "patchsim.cli", "replay", saved, "--json"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout)
    assert [p["score"] for p in final["players"]] == scores
    assert final["text"] == page.get_attribute("#board svg.pb-board", "data-text")
    # the saved game opens in the viewer, at its end
    page.click("#saved a")
    page.wait_for_selector("#board svg.pb-board")
    page.click("#last")
    assert drawn(page)["text"] == final["text"]
    # the record says who played, and the viewer shows it
    assert json.loads(Path(saved).read_text())["players"] == ["human", "random"]
    assert "seat 0: human \u00b7 seat 1: random" in page.text_content("#about")


def try_an_overlap(page, game: Game, patch: str) -> None:
    """Point ``patch`` (as first shown) at a square where it overlaps a patch: the page marks
    it illegal; a click sends it anyway and the engine refuses it, saying why."""
    cells = game.ruleset.patch(patch).cells
    h = max(r for r, _ in cells) + 1
    w = max(c for _, c in cells) + 1
    mask = game.quilt_mask(0)
    for r in range(9):
        for c in range(9):
            r0, c0 = r - h // 2, c - w // 2
            squares = [(r0 + a, c0 + b) for a, b in cells]
            if all(0 <= x < 9 and 0 <= y < 9 for x, y in squares) and any(
                    mask >> (x * 9 + y) & 1 for x, y in squares):
                page.click(f'#board g.pb-offer[data-patch="{patch}"]')
                page.hover(f'#board rect.pb-sq[data-seat="0"][data-name="{COLS[c]}{r + 1}"]')
                assert page.get_attribute("#preview", "data-ok") == "0"
                assert "Not a legal placement" in page.text_content("#message")
                assert page.locator("#board .pb-mark[data-ok='0']").count() == len(cells)
                click_square(page, 0, f"{COLS[c]}{r + 1}")
                page.wait_for_function("() => document.querySelector('#message').dataset"
                                       ".reason === 'OVERLAP'")
                assert "refused by the engine" in page.text_content("#message")
                assert "overlaps" in page.text_content("#message")
                page.keyboard.press("Escape")
                return
    raise AssertionError("no overlapping placement found")


# --- the report's replay --------------------------------------------------------------------------
def test_the_report_replay_works_from_a_file_with_no_server(page, tmp_path: Path,
                                                            games: pd.DataFrame) -> None:
    gid = int(games["game_id"].iloc[2])
    positions, texts = engine_game(games, gid)
    record = {"rules": "edition2", "circle": list(positions[0].circle), "moves": texts}
    html = ("<!doctype html><html><head><meta charset=utf-8><title>report</title></head><body>"
            "<h1>A report</h1>" + replay_snippet([record, record], titles=["one", "two"])
            + "</body></html>")
    path = tmp_path / "report.html"
    path.write_text(html)
    page.goto(path.as_uri())
    first, second = ".psr-game[data-game='0'] .psr-board", ".psr-game[data-game='1'] .psr-board"
    page.wait_for_selector(first + " svg")
    check_drawn(page, positions[0], owners(texts, positions, 0), first)
    for _ in range(5):
        page.click(".psr-game[data-game='0'] button[data-step='1']")
    wait_ply(page, 5, first)
    check_drawn(page, positions[5], owners(texts, positions, 5), first)
    check_drawn(page, positions[0], owners(texts, positions, 0), second)  # its own stepper
    page.focus(".psr-game[data-game='1']")
    page.keyboard.press("End")
    wait_ply(page, len(texts), second)
    check_drawn(page, positions[-1], owners(texts, positions, len(texts)), second)
