"""The analysis in ``patchsim serve``: the API (a stored game, a record file, an upload, a
hint on the play page) agrees with the library, bad requests get a 4xx with a message, the
work is bounded (one at a time, time-limited, stopped when the client leaves); and in
Chromium the viewer's column of candidates, the loss bars on the curve, the marks in the move
list and the play page's hint button."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pytest
from runs import shared_run
from webserver import Server

from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.play import analyse as A
from patchsim.play.evaluate import EvaluationStopped

pytest.importorskip("starlette")

from patchsim.web.analysis import Analyser  # noqa: E402
from patchsim.web.app import create_app  # noqa: E402
from patchsim.web.runs import WebError  # noqa: E402

QUICK = "mcts(eval=learned, iterations=8)"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_run(tmp_path_factory, "web-small", "edition2", 8, ["greedy", "random"])


@pytest.fixture(scope="module")
def server(run_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("analyse-runs")
    shutil.copytree(run_dir, root / "small")
    game = Game.new("edition2", seed=2)
    for _ in range(6):
        game.apply(game.legal_moves()[-1])
    (root / "small" / "short.json").write_text(json.dumps(game.record()), encoding="utf-8")
    app = create_app([root], tmp_path_factory.mktemp("played"), eval_rollouts=10)
    with Server(app) as srv:
        srv.run_id = srv.api("/api/runs")["runs"][0]["id"]
        srv.short = game
        yield srv


@pytest.fixture(scope="module")
def stored(run_dir: Path) -> pd.Series:
    games = pd.read_parquet(run_dir / "games.parquet")
    return games.iloc[0]


def stored_game(row: pd.Series) -> tuple[Game, list[int]]:
    rs = load_ruleset("edition2")
    return Game.new(rs, circle=deal_circle(rs, int(row["deal_seed"]))), \
        [int(c) for c in row["moves"]]


def test_stored_game_analysis_is_the_library_s(server, stored: pd.Series) -> None:
    gid = int(stored["game_id"])
    data = server.api(f"/api/runs/{server.run_id}/games/{gid}/analysis?bot={quote(QUICK)}")
    start, codes = stored_game(stored)
    assert data == json.loads(json.dumps(A.analyse_game(start, codes, QUICK).to_dict()))
    assert len(data["moves"]) == len(codes)
    for m in data["moves"]:
        assert all(0 <= c["value"] <= 1 for c in m["candidates"])
    again = server.api(f"/api/runs/{server.run_id}/games/{gid}/analysis?bot={quote(QUICK)}")
    assert again == data  # cached or recomputed, the same


def test_record_file_upload_and_default_judge(server) -> None:
    data = server.api(f"/api/runs/{server.run_id}/record/analysis?path=short.json")
    assert data["judge"] == A.DEFAULT_JUDGE and len(data["moves"]) == 6
    status, up = server.post("/api/analysis", {"name": "short.json",
                                               "record": server.short.record()})
    assert status == 200 and up == data


def test_hint_on_the_play_page(server) -> None:
    status, view = server.post("/api/play", {"ruleset": "edition2", "bot": "greedy",
                                             "seat": 0, "seed": 4})
    assert status == 200
    hint = server.api(f"/api/play/{view['id']}/hint?bot={quote(QUICK)}")
    game = Game.new("edition2", seed=4)
    expected = A.analyse_position(game, A.make_judge(QUICK, game)).to_dict()
    assert {k: hint[k] for k in expected} == json.loads(json.dumps(expected))
    assert hint["judge"] == QUICK and hint["played"] is None
    assert server.api(f"/api/play/{view['id']}")["moves"] == []  # a hint plays nothing


@pytest.mark.parametrize("path,status,fragment", [
    ("/api/runs/{run}/games/0/analysis?bot=nosuchbot", 400, "unknown bot"),
    ("/api/runs/{run}/games/0/analysis?bot=os.path:join", 400, "import paths"),
    ("/api/runs/{run}/games/0/analysis?bot=" + quote("mcts(iterations=999999)"), 400,
     "at most iterations"),
    ("/api/runs/{run}/games/x/analysis", 400, "whole number"),
    ("/api/runs/{run}/games/123456789/analysis", 404, ""),
    ("/api/runs/nope/games/0/analysis", 404, ""),
    ("/api/runs/{run}/record/analysis?path=../../etc/passwd", 403, ""),
    ("/api/runs/{run}/record/analysis?path=games.parquet", 422, ""),
    ("/api/saved/nothing.json/analysis", 404, ""),
    ("/api/play/nosuchgame/hint", 404, "no game"),
])
def test_bad_requests(server, path: str, status: int, fragment: str) -> None:
    got, data = server.get(path.format(run=server.run_id))
    assert got == status, data
    assert fragment in data["error"] and "Traceback" not in data["error"]


def test_bad_uploads(server) -> None:
    status, data = server.post("/api/analysis", {"name": "x"})
    assert status == 400 and "record" in data["error"]
    bad = {**server.short.record(), "moves": ["pass", "buy P99 a1"]}
    status, data = server.post("/api/analysis", {"record": bad})
    assert status == 422 and "move 2" in data["error"]


def test_report_link_opens_the_viewer(server, stored: pd.Series) -> None:
    gid = int(stored["game_id"])
    link = A.ANALYSIS_LINK.format(game_id=gid)
    status, headers, _ = server.request("GET", f"/files/{server.run_id}/{link}")
    assert status == 303 and headers["location"] == f"/game?run={server.run_id}&game={gid}"
    status, _, body = server.request("GET", f"/files/{server.run_id}/game-analysis/x")
    assert status == 400 and b"whole number" in body
    status, _, _ = server.request("GET", "/files/nosuchrun/game-analysis/1")
    assert status == 404


def test_the_analyser_is_bounded() -> None:
    analyser = Analyser(seconds=60, wait=0.3)

    def until_stopped(stop) -> dict:
        while not stop():
            pass
        raise EvaluationStopped("stopped")

    # the client left: stopped, and said so
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(WebError, match="client left"):
        analyser.run("", until_stopped, cancel)
    # out of time
    analyser.seconds = 0.05
    with pytest.raises(WebError, match="took more than"):
        analyser.run("", until_stopped, None)
    # one at a time: a second request waits, then is told the server is busy
    analyser.slot.acquire()
    try:
        with pytest.raises(WebError, match="busy") as e:
            analyser.run("k", lambda stop: {"x": 1}, None)
        assert e.value.status == 503
    finally:
        analyser.slot.release()
    assert analyser.run("k", lambda stop: {"x": 1}, None) == {"x": 1}
    assert analyser.run("k", lambda stop: {"x": 2}, None) == {"x": 1}  # cached


def test_the_one_slot_is_released_however_the_work_ends() -> None:
    """web.slots.take_slot, the bounded slot the evaluation curve and the analysis share:
    the client leaving, the time running out, a failure and a success all free the slot,
    and only the client leaving is counted as such."""
    from patchsim.web.slots import take_slot

    slot, left = threading.Semaphore(1), []

    def attempt(cancel: threading.Event | None, seconds: float, fail: bool = False) -> str:
        try:
            with take_slot(slot, 0.3, cancel, seconds, "job", "try less",
                           lambda: left.append(1)) as stop:
                if fail:
                    raise RuntimeError("broke")
                if seconds < 1:
                    while not stop():
                        pass
                    raise EvaluationStopped("stopped")
                return "done"
        except (WebError, RuntimeError) as e:
            return str(e)
        finally:
            assert slot.acquire(blocking=False), "the slot was kept"
            slot.release()

    gone = threading.Event()
    gone.set()
    assert attempt(gone, 0.05) == "the job was stopped: the client left" and left == [1]
    assert attempt(None, 0.05) == "the job took more than 0 s and was stopped; try less"
    assert attempt(None, 5, fail=True) == "broke" and attempt(None, 5) == "done"
    assert left == [1]
    slot.acquire()  # busy: a second request is told so, and never holds the slot
    try:
        with pytest.raises(WebError, match="busy with another job"), \
                take_slot(slot, 0.2, None, 5, "job", ""):
            pytest.fail("ran without the slot")
    finally:
        slot.release()


# --- in the browser ---------------------------------------------------------------------------
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None

@pytest.fixture(scope="module")
def browser():
    assert sync_playwright is not None
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A page that may talk to 127.0.0.1 only; a script error fails the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    foreign: list[str] = []

    def gate(route) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "data:", "blob:")):
            route.continue_()
        else:
            foreign.append(url)
            route.abort()

    context.route("**/*", gate)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert foreign == [] and errors == [], (foreign, errors)


def candidates(page) -> dict:
    return page.evaluate("""() => {
        const list = document.querySelector('#candidates');
        const items = Array.from(list.querySelectorAll('li'));
        return {ply: +list.dataset.ply, moves: items.map(li => li.dataset.move),
                played: items.filter(li => li.classList.contains('played'))
                             .map(li => li.dataset.move),
                best: items.filter(li => li.classList.contains('best'))
                           .map(li => li.dataset.move)};
    }""")


@pytest.mark.slow
@pytest.mark.skipif(sync_playwright is None or not CHROMIUM.exists(),
                    reason="Playwright or Debian's chromium is not installed")
def test_viewer_shows_the_analysis(server, stored: pd.Series, page) -> None:
    gid = int(stored["game_id"])
    page.goto(f"{server.url}/game?run={server.run_id}&game={gid}&ply=3")
    page.wait_for_selector("#analysis[data-ready='1']")
    data = server.api(f"/api/runs/{server.run_id}/games/{gid}/analysis")
    assert data["judge"] == A.DEFAULT_JUDGE
    shown = candidates(page)
    m = data["moves"][3]
    assert shown["ply"] == 3
    assert shown["moves"] == [c["move"] for c in m["candidates"]]
    assert shown["played"] == [m["played"]] and shown["best"] == [m["best"]]
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => +document.querySelector('#candidates').dataset.ply === 4")
    assert candidates(page)["played"] == [data["moves"][4]["played"]]
    # the lost win probability on the curve, one bar per move that lost any
    page.wait_for_selector("#eval-curve")
    bars = page.eval_on_selector_all("#eval-curve rect.loss-bar",
                                     "bs => bs.map(b => [+b.dataset.ply, +b.dataset.loss])")
    lost = [(m["ply"] + 1, m["loss"]) for m in data["moves"] if m["loss"] > 0]
    assert [b[0] for b in sorted(bars)] == [p for p, _ in lost]
    assert [b[1] for b in sorted(bars)] == pytest.approx([v for _, v in lost])
    marks = page.eval_on_selector_all("#moves li .mark", "ms => ms.length")
    assert marks == sum(1 for m in data["moves"] if m["mark"])
    summary = page.eval_on_selector_all("#analysis-summary [data-seat]",
                                        "ds => ds.map(d => d.textContent)")
    assert len(summary) == 2 and summary[0].startswith("seat 0: mean loss")
    page.keyboard.press("End")
    page.wait_for_function("() => !document.querySelector('#candidates')")
    assert "game is over" in page.inner_text("#analysis-here")


@pytest.mark.slow
@pytest.mark.skipif(sync_playwright is None or not CHROMIUM.exists(),
                    reason="Playwright or Debian's chromium is not installed")
def test_hint_button_on_the_play_page(server, page) -> None:
    page.goto(f"{server.url}/play")
    page.wait_for_selector("#ruleset option[value='edition2']", state="attached")
    page.fill("#bot", "greedy")
    page.fill("#seed", "4")
    page.click("#start")
    page.wait_for_selector("#status[data-state='turn']")
    page.click("#hint-button")
    page.wait_for_selector("#hint-best")
    game = Game.new("edition2", seed=4)
    expected = A.analyse_position(game, A.make_judge(None, game))
    assert page.get_attribute("#hint-best", "data-move") == expected.best.move
    shown = candidates(page)
    assert shown["moves"] == [c.move for c in expected.candidates]
    assert shown["best"] == [expected.best.move] and shown["played"] == []
    page.click("#pass")  # a move clears the hint: it was for the position before
    page.wait_for_function("() => document.querySelector('#hint').childElementCount === 0")
