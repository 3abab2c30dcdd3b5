"""``patchsim serve`` without a browser: the JSON API against a real server on 127.0.0.1.

Requests go through http.client, byte for byte as written (no client-side clean-up of
``..`` or ``//``), to a uvicorn server in a thread. Covered: the runs and their problems,
the games filters (checked against pandas on the stored tables), game views checked against
the engine and ``patchsim replay --trace --json``, the evaluation, playing a whole game by
the API, and every kind of bad input: 4xx with a message, never a traceback, and no file
outside the run folders.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runs import shared_run
from typer.testing import CliRunner
from webserver import Server

from patchsim.analysis.selfplay import distinct_games
from patchsim.cli.main import app as cli_app
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, RecordError, final_position
from patchsim.engine.ruleset import RulesetError, load_ruleset, shipped_rulesets
from patchsim.play.evaluate import (
    evaluate_game,
    evaluate_record,
    mark_lead_changes,
    rollout_bot,
    wilson,
)

pytest.importorskip("starlette")

from patchsim.bots.registry import BotSpecError  # noqa: E402
from patchsim.engine.view import BOARD_SCRIPT, legal_view, patch_colours  # noqa: E402
from patchsim.web import STATIC_DIR  # noqa: E402
from patchsim.web.app import create_app  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "edition2-sample.json"
SECRET = "top-secret-content-4711"


def assert_refused(status: int, body: bytes | dict, code: int | tuple[int, ...],
                   *fragments: str) -> str:
    """A 4xx (the given one) whose message is one clean sentence, not a traceback."""
    codes = code if isinstance(code, tuple) else (code,)
    assert status in codes, (status, body)
    text = body.decode() if isinstance(body, bytes) else body["error"]
    assert "Traceback" not in text and 'File "' not in text, text
    for f in fragments:
        assert f in text, text
    return text


# --- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_run(tmp_path_factory, "web-small", "edition2", 8, ["greedy", "random"])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, run_dir: Path) -> Path:
    """A folder of run folders: a good one (with records, a ruleset file and a symlink out),
    one with a damaged manifest, one that is not finished; a secret file beside it."""
    base = tmp_path_factory.mktemp("web")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "secret.json").write_text(json.dumps({"secret": SECRET}))
    root = base / "served"
    good = root / "edition2" / "good"
    shutil.copytree(run_dir, good)
    (good / "report.html").write_text("<!doctype html><html><body>the report</body></html>")
    (good / "escape.txt").symlink_to(outside / "secret.txt")
    (good / "records").mkdir()
    (good / "records" / "escape.json").symlink_to(outside / "secret.json")
    sample = json.loads(SAMPLE.read_text())
    (good / "records" / "sample.json").write_text(json.dumps(sample))
    bad = dict(sample, moves=[*sample["moves"][:2], sample["moves"][0], *sample["moves"][3:]])
    (good / "records" / "bad-move.json").write_text(json.dumps(bad))
    (good / "records" / "not-json.json").write_text("{this is not json")
    (good / "rules").mkdir()
    (good / "rules" / "rich.yaml").write_text("name: rich\nextends: edition2\n"
                                              "starting_buttons: 9\n")
    (good / "rules" / "broken.yaml").write_text("name: broken\nextends: edition2\n"
                                                "starting_buttons: -3\n")
    damaged = root / "damaged"
    damaged.mkdir()
    (damaged / "manifest.json").write_text("{not json")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    unfinished = root / "unfinished"
    unfinished.mkdir()
    (unfinished / "manifest.json").write_text(json.dumps(dict(manifest, complete=False)))
    # a run whose YAML files name files outside the served folders (issue 22)
    (outside / "secret.yaml").write_text(f"{SECRET}\n")
    (outside / "passwd.yaml").write_text(f"root:x:0:0:root:/root:/bin/bash {SECRET}\n")
    (outside / "table.yaml").write_text(yaml.safe_dump(
        {"patches": load_ruleset("edition2").to_dict()["patches"]}))
    leaky = root / "leaky"
    shutil.copytree(run_dir, leaky)
    (leaky / "rules").mkdir()
    leaks = {"patches-abs.yaml": f"name: a\nextends: edition2\npatches: {outside}/passwd.yaml\n",
             "patches-rel.yaml": "name: b\nextends: edition2\n"
                                 "patches: ../../../outside/secret.yaml\n",
             "table-outside.yaml": f"name: c\nextends: edition2\npatches: {outside}/table.yaml\n",
             "extends-rel.yaml": "extends: ../../../outside/secret.yaml\n",
             "extends-abs.yaml": f"extends: {outside}/passwd.yaml\n",
             "extends-home.yaml": "extends: ~/../../etc/passwd.yaml\n",
             "chain.yaml": "name: chain\nextends: extends-rel.yaml\n",
             "child.yaml": "name: child\nextends: ../../edition2/good/rules/rich.yaml\n"
                           "second_player_buttons: 8\n"}
    for name, text in leaks.items():
        (leaky / "rules" / name).write_text(text)
    (outside / "linked").mkdir()
    (outside / "linked" / "secret.yaml").write_text(f"{SECRET}\n")
    (leaky / "rules" / "linked").symlink_to(outside / "linked")
    (leaky / "rules" / "via-link.yaml").write_text("extends: linked/secret.yaml\n")
    (leaky / "records").mkdir()
    for name in [*leaks, "via-link.yaml"]:
        (leaky / "records" / name.replace(".yaml", ".json")).write_text(
            json.dumps(dict(sample, rules=f"../rules/{name}")))
    committed = root / "committed"  # as in reports/: manifest and report, no raw tables
    committed.mkdir()
    (committed / "manifest.json").write_text(json.dumps(dict(manifest, complete=True)))
    (committed / "report.html").write_text("<!doctype html><html><body>kept</body></html>")
    return root


@pytest.fixture(scope="module")
def server(served: Path, tmp_path_factory: pytest.TempPathFactory):
    save_dir = tmp_path_factory.mktemp("saved")
    app = create_app([served], save_dir, eval_rollouts=12)
    with Server(app) as srv:
        srv.app = app
        srv.save_dir = save_dir
        yield srv


@pytest.fixture(scope="module")
def good(server: Server) -> dict:
    _, data = server.get("/api/runs")
    (run,) = [r for r in data["runs"] if r["label"].endswith("good")]
    return run


@pytest.fixture(scope="module")
def games(run_dir: Path) -> pd.DataFrame:
    g = pd.read_parquet(run_dir / "games.parquet")
    ev = pd.read_parquet(run_dir / "events.parquet", columns=["game_id", "seat", "event"])
    claims = ev[ev["event"] == "leather_claim"].groupby(["game_id", "seat"]).size()
    for seat in (0, 1):
        g[f"claims{seat}"] = [int(claims.get((gid, seat), 0)) for gid in g["game_id"]]
    g["abs_margin"] = (g["score0"] - g["score1"]).abs()
    # the table lists each deterministic self-play game once, as the report counts it
    return distinct_games(g)


# --- runs -------------------------------------------------------------------------------------
def test_runs_lists_the_good_run_and_says_what_is_wrong_with_the_others(
        server: Server, good: dict, games: pd.DataFrame, caplog: pytest.LogCaptureFixture,
        run_dir: Path) -> None:
    with caplog.at_level(logging.WARNING, logger="patchsim.web"):
        server.app.state.patchsim.index._logged.clear()  # log every problem again
        status, data = server.get("/api/runs")
    assert status == 200
    # the run's summary counts the stored games; its table lists the distinct ones
    stored = pd.read_parquet(run_dir / "games.parquet", columns=["game_id"])
    assert good["error"] is None and good["games"] == len(stored) > len(games) > 0
    assert good["rulesets"] == ["edition2"]
    assert "report.html" in good["reports"]
    by_label = {r["label"]: r for r in data["runs"]}
    damaged = next(r for label, r in by_label.items() if label.endswith("damaged"))
    assert "manifest.json is damaged" in damaged["error"]
    unfinished = next(r for label, r in by_label.items() if label.endswith("unfinished"))
    # the run folder reader's messages, as report and plan give them
    assert "not finished" in unfinished["error"] and "resume the run" in unfinished["error"]
    committed = next(r for label, r in by_label.items() if label.endswith("committed"))
    assert "report only" in committed["error"] and committed["reports"] == ["report.html"]
    # its games cannot be listed, but its report is served
    assert_refused(*server.get(f"/api/runs/{committed['id']}/games"), 409, "report only")
    status, _, body = server.request("GET", f"/files/{committed['id']}/report.html")
    assert status == 200 and b"kept" in body
    logged = caplog.text
    assert "manifest.json is damaged" in logged and "not finished" in logged
    assert "report only" in logged
    # the page of a run that does not load is a message, not an error page without words
    status, body = server.get(f"/api/runs/{damaged['id']}")
    assert_refused(status, body, 409, "manifest.json is damaged")


def test_run_summary_lists_filters_records_and_rules(server: Server, good: dict) -> None:
    status, data = server.get(f"/api/runs/{good['id']}")
    assert status == 200
    assert data["options"]["pairings"] == ["greedy vs greedy", "greedy vs random",
                                           "random vs random"]
    assert data["options"]["bots"] == ["greedy", "random"] and data["options"]["claims_known"]
    # the symlink out of the folder is not offered; hidden and batch files neither
    assert data["records"] == ["records/bad-move.json", "records/not-json.json",
                               "records/sample.json"]


@pytest.mark.parametrize("query, expect", [
    ("", lambda g: g),
    ("pairing=greedy%20vs%20random", lambda g: g[g["pairing"] == "greedy vs random"]),
    ("winner=1", lambda g: g[g["winner"] == 1]),
    ("winner=bot:random", lambda g: g[g["winner_bot"] == "random"]),
    ("abs_margin_min=10&abs_margin_max=30",
     lambda g: g[(g["abs_margin"] >= 10) & (g["abs_margin"] <= 30)]),
    ("bonus=none", lambda g: g[~g["bonus0"] & ~g["bonus1"]]),
    ("bonus=1", lambda g: g[g["bonus1"]]),
    ("leather=more0", lambda g: g[g["claims0"] > g["claims1"]]),
    ("leather=equal&ruleset=edition2", lambda g: g[g["claims0"] == g["claims1"]]),
    ("leather=some1&winner=0", lambda g: g[(g["claims1"] > 0) & (g["winner"] == 0)]),
])
def test_games_filters_match_the_stored_tables(server: Server, good: dict, games: pd.DataFrame,
                                               query: str, expect) -> None:
    status, data = server.get(f"/api/runs/{good['id']}/games?{query}&limit=500")
    assert status == 200
    want = expect(games).sort_values("game_id")
    assert data["total"] == len(games)
    assert data["matching"] == len(want)
    assert [g["game_id"] for g in data["games"]] == want["game_id"].tolist()
    for row in data["games"]:
        stored = games[games["game_id"] == row["game_id"]].iloc[0]
        assert (row["score0"], row["score1"]) == (stored["score0"], stored["score1"])
        assert (row["claims0"], row["claims1"]) == (stored["claims0"], stored["claims1"])


def test_games_pages_and_sorts(server: Server, good: dict, games: pd.DataFrame) -> None:
    _, first = server.get(f"/api/runs/{good['id']}/games?sort=-abs_margin&limit=5")
    _, second = server.get(f"/api/runs/{good['id']}/games?sort=-abs_margin&limit=5&offset=5")
    margins = [g["abs_margin"] for g in first["games"] + second["games"]]
    assert margins == sorted(games["abs_margin"], reverse=True)[:10]
    assert len({g["game_id"] for g in first["games"] + second["games"]}) == 10


@pytest.mark.parametrize("query, fragment", [
    ("abs_margin_min=abc", "abs_margin_min"),
    ("abs_margin_max=-1", "abs_margin_max"),
    ("winner=2", "winner"),
    ("bonus=maybe", "bonus"),
    ("leather=lots", "leather"),
    ("limit=0", "limit='0': expected a number between 1 and 500"),
    ("limit=100000", "between 1 and 500"),
    ("limit=10000000000000", "between 1 and 500"),
    ("offset=-1", "between 0 and 10^12"),
    ("abs_margin_min=" + "9" * 5000, "expected a whole number"),
    ("sort=moves;drop", "sort"),
    ("colour=red", "unknown parameter"),
])
def test_malformed_filters_are_400_with_the_parameter_named(server: Server, good: dict,
                                                            query: str, fragment: str) -> None:
    status, body = server.get(f"/api/runs/{good['id']}/games?{query}")
    assert_refused(status, body, 400, fragment)


# --- games --------------------------------------------------------------------------------------
def engine_positions(record: dict) -> list[Game]:
    """Every position of a record, replayed by the engine in this test (copies)."""
    rec = GameRecord.from_dict(record)
    game = rec.start()
    out = [game.copy()]
    for text in rec.moves:
        game.apply(text)
        out.append(game.copy())
    return out


def test_a_stored_game_is_the_engines_game_move_by_move(server: Server, good: dict,
                                                        games: pd.DataFrame,
                                                        tmp_path: Path) -> None:
    for gid in (int(games["game_id"].iloc[0]), int(games["game_id"].iloc[-1])):
        status, view = server.get(f"/api/runs/{good['id']}/games/{gid}")
        assert status == 200
        row = games[games["game_id"] == gid].iloc[0]
        rs = load_ruleset("edition2")
        assert view["record"]["circle"] == deal_circle(rs, int(row["deal_seed"]))
        assert len(view["positions"]) == len(view["moves"]) + 1 == row["plies"] + 1
        assert view["players"] == [row["bot0"], row["bot1"]] and view["warnings"] == []
        replayed = engine_positions(view["record"])
        owner: list[dict[str, str]] = [{}, {}]  # square name -> what covers it, from the moves
        for ply, (pos, game) in enumerate(zip(view["positions"], replayed, strict=True)):
            assert pos["ply"] == ply
            assert pos["text"] == game.to_text()
            assert pos["players"] == game.summary()["players"]
            assert pos["offer"] == game.offer
            assert pos["offer"] + pos["next"] == game.remaining
            assert pos["leather_on_track"] == game.leather_on_track
            if ply:
                seat, words = pos["last_move"]["seat"], pos["last_move"]["text"].split()
                if words[0] == "buy":
                    owner[seat].update({sq: words[1] for sq in words[2:]})
                elif words[0] == "leather":
                    owner[seat][words[1]] = "leather"
            for p in (0, 1):
                grid = game.quilt(p).ravel()
                cells = pos["quilts"][p]
                assert [c != -1 for c in cells] == grid.tolist()
                for s, c in enumerate(cells):
                    name = "abcdefghi"[s % 9] + str(s // 9 + 1)
                    if c == -2:
                        assert owner[p][name] == "leather"
                    elif c >= 0:
                        assert owner[p][name] == pos["pieces"][p][c]
        final = view["positions"][-1]["players"]
        assert (final[0]["score"], final[1]["score"]) == (row["score0"], row["score1"])
        # the record the viewer offers is one that patchsim replay reads, to the same positions
        path = tmp_path / f"game{gid}.json"
        path.write_text(json.dumps(view["record"]))
        done = CliRunner().invoke(cli_app, ["replay", str(path), "--trace", "--json"])
        assert done.exit_code == 0, done.output
        texts = [json.loads(line)["text"] for line in done.stdout.splitlines()]
        assert texts == [p["text"] for p in view["positions"]]


def test_missing_and_malformed_games(server: Server, good: dict) -> None:
    rid = good["id"]
    assert_refused(*server.get(f"/api/runs/{rid}/games/99999"), 404, "no game 99999")
    assert_refused(*server.get(f"/api/runs/{rid}/games/abc"), 400, "game id")
    assert_refused(*server.get(f"/api/runs/{rid}/games/-3"), 400, "game id")
    assert_refused(*server.get("/api/runs/nosuchrun/games/1"), 404, "no run 'nosuchrun'")
    assert_refused(*server.get("/api/runs/nosuchrun"), 404, "no run")
    assert_refused(*server.get("/api/nothing/here"), 404, "the API has no GET /api/nothing")
    status, _, body = server.request("DELETE", f"/api/runs/{rid}")
    assert_refused(status, json.loads(body), (404, 405))


def test_evaluation_over_a_stored_game(server: Server, good: dict, games: pd.DataFrame) -> None:
    gid = int(games["game_id"].iloc[1])
    status, ev = server.get(f"/api/runs/{good['id']}/games/{gid}/eval?rollouts=10")
    assert status == 200
    pts = ev["points"]
    row = games[games["game_id"] == gid].iloc[0]
    assert len(pts) == row["plies"] + 1
    assert [p["ply"] for p in pts] == list(range(len(pts)))
    assert all(0 <= p["win0"] <= 1 for p in pts)
    # the model's estimate has no sampling interval: no band rather than a zero-width one
    assert all(p["win0_lo"] is None and p["win0_hi"] is None for p in pts)
    assert pts[-1]["win0"] == (1.0 if row["winner"] == 0 else 0.0)
    assert pts[-1]["margin"] == row["score0"] - row["score1"]
    # edition 2 has a trained model: the strongest available evaluation is the learned one
    assert ev["rollouts"] == 0 and "learned evaluation" in ev["method"]
    assert all(p["rollouts"] == 0 for p in pts[:-1])
    for bad in ("0", "abc", "999999"):
        assert_refused(*server.get(f"/api/runs/{good['id']}/games/{gid}/eval?rollouts={bad}"),
                       400, "rollouts")


# --- files --------------------------------------------------------------------------------------
def test_run_files_are_served_and_nothing_else(server: Server, good: dict) -> None:
    rid = good["id"]
    status, headers, body = server.request("GET", f"/files/{rid}/report.html")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"<html" in body.lower()
    outside_paths = [
        f"/files/{rid}/../../outside/secret.txt",
        f"/files/{rid}/../../../outside/secret.txt",
        f"/files/{rid}/records/../../../outside/secret.txt",
        f"/files/{rid}/%2e%2e/%2e%2e/outside/secret.txt",
        f"/files/{rid}/..%2f..%2foutside%2fsecret.txt",
        f"/files/{rid}//etc/passwd",
        f"/files/{rid}/%2fetc%2fpasswd",
        f"/files/{rid}/escape.txt",  # a symlink out of the run folder
        f"/files/{rid}/records/escape.json",
        f"/files/{rid}/.patchsim.lock",
        "/static/../web/app.py",
        "/static/%2e%2e/app.py",
    ]
    for path in outside_paths:
        status, _, body = server.request("GET", path)
        assert status in (400, 403, 404), (path, status)
        assert SECRET.encode() not in body and b"root:" not in body, path
        assert b"Traceback" not in body
    assert_refused(*server.request("GET", f"/files/{rid}/nothing.html")[::2], 404)
    assert_refused(*server.request("GET", f"/files/{rid}/records")[::2], 404, "not a file")
    assert_refused(*server.request("GET", "/files/nosuchrun/report.html")[::2], 404)


def test_requests_must_name_this_machine(server: Server) -> None:
    status, _, body = server.request("GET", "/api/runs", headers={"Host": "evil.example"})
    assert status == 400 and b"Invalid host" in body
    status, _, _ = server.request("GET", "/api/runs", headers={"Host": f"localhost:{server.port}"})
    assert status == 200


def test_unknown_pages_are_a_page_with_a_message(server: Server) -> None:
    status, headers, body = server.request("GET", "/no/such/page")
    assert status == 404 and headers["content-type"].startswith("text/html")
    assert b"nothing here: /no/such/page" in body and b"Traceback" not in body


def test_a_failure_inside_is_a_500_with_a_message_and_a_logged_traceback(
        server: Server, good: dict, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(server.app.state.patchsim.index, "filter_games", broken)
    with caplog.at_level(logging.ERROR, logger="patchsim.web"):
        status, body = server.get(f"/api/runs/{good['id']}/games")
    assert status == 500
    assert "disk on fire" in body["error"] and "Traceback" not in body["error"]
    assert "disk on fire" in caplog.text and "Traceback" in caplog.text


# --- records ------------------------------------------------------------------------------------
def test_record_files_of_a_run(server: Server, good: dict, caplog: pytest.LogCaptureFixture
                               ) -> None:
    rid = good["id"]
    status, view = server.get(f"/api/runs/{rid}/record?path=records/sample.json")
    assert status == 200 and view["moves"] == json.loads(SAMPLE.read_text())["moves"]
    final = final_position(GameRecord.load(SAMPLE))
    assert view["positions"][-1]["text"] == final.to_text()
    status, ev = server.get(view["eval_url"] + "&rollouts=4")
    assert status == 200 and len(ev["points"]) == len(view["positions"])
    with caplog.at_level(logging.WARNING, logger="patchsim.web"):
        status, body = server.get(f"/api/runs/{rid}/record?path=records/bad-move.json")
    assert_refused(status, body, 422, "move 3", "illegal")
    assert "records/bad-move.json" in caplog.text
    assert_refused(*server.get(f"/api/runs/{rid}/record?path=records/not-json.json"), 422,
                   "not valid JSON")
    for path in ("../../outside/secret.json", "/etc/passwd", "records/escape.json",
                 quote("records/../../../outside/secret.json", safe="")):
        status, body = server.get(f"/api/runs/{rid}/record?path={path}")
        assert_refused(status, body, (403, 404))
        assert SECRET not in json.dumps(body)
    assert_refused(*server.get(f"/api/runs/{rid}/record"), 400)


def test_uploaded_records(server: Server) -> None:
    sample = json.loads(SAMPLE.read_text())
    status, view = server.post("/api/record", {"name": "mine.json", "record": sample})
    assert status == 200 and len(view["positions"]) == len(sample["moves"]) + 1
    assert "upload: mine.json" in view["title"]
    status, ev = server.post("/api/eval?rollouts=3", {"record": sample})
    assert status == 200 and len(ev["points"]) == len(view["positions"])
    bad = dict(sample, moves=["pass", "buy P99 a1 b1"])
    assert_refused(*server.post("/api/record", {"record": bad}), 422, "move 2", "malformed")
    assert_refused(*server.post("/api/record", {"record": dict(sample, colour="red")}), 422,
                   "unknown key")
    # a record must not make the server read files: no paths, no extends of files
    for rules in ("/etc/passwd", "../outside/secret.yaml", "secret.yml",
                  {"extends": "/tmp/x.yaml", "name": "x"},
                  {**load_ruleset("edition2").to_dict(), "patches": "/etc/passwd"}):
        status, body = server.post("/api/record", {"record": dict(sample, rules=rules)})
        assert_refused(status, body, 422, "rules")
    assert_refused(*server.post("/api/record", {"name": "x"}), 400, "record")
    assert_refused(*server.post("/api/record", b"{oops"), 400, "not valid JSON")
    assert_refused(*server.post("/api/record", b"[1, 2]"), 400, "JSON object")
    assert_refused(*server.post("/api/record", b"\xff\xfe"), 400, "UTF-8")
    assert_refused(*server.post("/api/record", sample, "text/plain"), 415, "Content-Type")
    # a body announced larger than any record is refused before it is read
    status, _, body = server.request("POST", "/api/record", None, {
        "Content-Type": "application/json", "Content-Length": "5000000"})
    assert_refused(status, json.loads(body), 413, "larger")


# --- play ---------------------------------------------------------------------------------------
def test_play_options(server: Server, good: dict) -> None:
    status, opts = server.get("/api/play/options")
    assert status == 200
    keys = [r["key"] for r in opts["rulesets"]]
    assert set(shipped_rulesets()) <= set(keys)
    assert f"run:{good['id']}:rules/rich.yaml" in keys
    assert {"random", "greedy", "mcts"} <= {b["name"] for b in opts["bots"]}


@pytest.mark.parametrize("body, status, fragment", [
    ({"ruleset": "edition2", "bot": "nosuchbot", "seat": 0}, 400, "unknown bot"),
    ({"ruleset": "edition2", "bot": "os:system(cmd=1)", "seat": 0}, 400, "import paths"),
    ({"ruleset": "edition2", "bot": "mcts(iterations=100000000)", "seat": 0}, 400,
     "iterations"),
    ({"ruleset": "edition2", "bot": "greedy(epsilon=7)", "seat": 0}, 400, "epsilon"),
    ({"ruleset": "edition2", "bot": "random", "seat": 2}, 400, "seat"),
    ({"ruleset": "edition2", "bot": "random", "seat": True}, 400, "seat"),
    ({"ruleset": "edition2", "bot": "random", "seat": 1.0}, 400, "seat"),
    ({"ruleset": "edition2", "bot": "mcts(eval=learned, iterations=100000000)", "seat": 0},
     400, "iterations"),
    ({"ruleset": "edition2", "bot": "mcts(eval=learned, models=/etc)", "seat": 0}, 400,
     "not read here"),
    ({"ruleset": "edition2", "bot": "mcts(eval=learned, model=/etc/passwd)", "seat": 0}, 400,
     "not read here"),
    ({"ruleset": "edition2", "bot": "random", "seat": 0, "seed": -1}, 400, "seed"),
    ({"ruleset": "edition2", "bot": "random", "seat": 0, "seed": "x"}, 400, "seed"),
    ({"ruleset": "edition9", "bot": "random", "seat": 0}, 400, "not a shipped ruleset"),
    ({"ruleset": "/etc/passwd", "bot": "random", "seat": 0}, 400, "not a shipped ruleset"),
    ({"ruleset": "configs/edition2.yaml", "bot": "random", "seat": 0}, 400, "shipped"),
    ({"ruleset": "run:nosuch:x.yaml", "bot": "random", "seat": 0}, 404, "no run"),
    ({"ruleset": "run:nosuch", "bot": "random", "seat": 0}, 400, "run:<run id>:"),
    ({"ruleset": "edition2", "bot": "random", "seat": 0, "cheat": True}, 400, "cheat"),
    ({"ruleset": 5, "bot": "random"}, 400, "ruleset"),
    ({"ruleset": "edition2", "bot": ["random"]}, 400, "bot"),
])
def test_bad_new_games_are_refused(server: Server, body: dict, status: int,
                                   fragment: str) -> None:
    assert_refused(*server.post("/api/play", body), status, fragment)


def test_ruleset_files_of_runs_stay_inside_and_are_checked(server: Server, good: dict) -> None:
    rid = good["id"]
    status, view = server.post("/api/play", {"ruleset": f"run:{rid}:rules/rich.yaml",
                                             "bot": "random", "seat": 0, "seed": 3})
    assert status == 200 and view["position"]["players"][0]["buttons"] == 9
    assert_refused(*server.post("/api/play", {"ruleset": f"run:{rid}:rules/broken.yaml",
                                              "bot": "random", "seat": 0}), 400,
                   "starting_buttons")
    for rel in ("../../outside/x.yaml", "/etc/x.yaml", "escape.txt"):
        status, body = server.post("/api/play", {"ruleset": f"run:{rid}:{rel}", "bot": "random",
                                                 "seat": 0})
        assert_refused(status, body, (403, 404))


def new_game(server: Server, seat: int = 0, seed: int = 11, bot: str = "random") -> dict:
    status, view = server.post("/api/play", {"ruleset": "edition2", "bot": bot, "seat": seat,
                                             "seed": seed})
    assert status == 200, view
    return view


def test_illegal_moves_are_refused_by_the_engine(server: Server) -> None:
    view = new_game(server)
    sid, offer = view["id"], view["position"]["offer"]
    game = Game.new("edition2", seed=11)
    assert view["position"]["text"] == game.to_text() and view["your_turn"]
    # a patch not on offer, on squares where it would fit
    other = next(p for p in game.remaining if p not in offer and game.ruleset.patch(p).cost <= 5)
    shape = game.ruleset.patch(other).cells
    squares = " ".join("abcdefghi"[c] + str(r + 1) for r, c in shape)
    status, body = server.post(f"/api/play/{sid}/move", {"move": f"buy {other} {squares}"})
    assert_refused(status, body, 409, "refused by the engine", "not on offer")
    assert body["reason"] == "NOT_ON_OFFER"
    # buy something, then try to put the next patch on top of it
    first = next(m for m in game.legal_moves() if m.kind == "buy")
    status, view = server.post(f"/api/play/{sid}/move", {"move": str(first)})
    assert status == 200
    assert view["your_turn"] and not view["position"]["pending_leather"]
    ply = view["position"]["ply"]
    legal = view["legal"]["buys"]
    pid = next(iter(legal))
    cells = Game.from_text(view["position"]["text"], "edition2").ruleset.patch(pid).cells
    # every placement of pid covering first's first square overlaps: find one by shifting
    covered = set(first.squares)
    overlap = None
    for dr in range(9):
        for dc in range(9):
            sq = ["abcdefghi"[c + dc] + str(r + dr + 1) for r, c in cells
                  if r + dr < 9 and c + dc < 9]
            if len(sq) == len(cells) and covered & set(sq):
                overlap = sq
                break
        if overlap:
            break
    assert overlap is not None
    status, body = server.post(f"/api/play/{sid}/move", {"move": f"buy {pid} {' '.join(overlap)}"})
    assert_refused(status, body, 409, "overlaps")
    assert body["reason"] == "OVERLAP"
    status, view = server.get(f"/api/play/{sid}")
    assert view["position"]["ply"] == ply  # nothing changed
    for text, fragment in (("jump", "unknown move"), ("buy P05 z9 a1", "square"),
                           ("leather a1 b1", "exactly one"), ("", "give a move")):
        assert_refused(*server.post(f"/api/play/{sid}/move", {"move": text}), 400, fragment)
    assert_refused(*server.post(f"/api/play/{sid}/move", {"move": 5}), 400, "give a move")
    assert_refused(*server.post("/api/play/nosuchgame/move", {"move": "pass"}), 404,
                   "no game")


def test_a_whole_game_through_the_api_is_saved_and_replays(server: Server) -> None:
    rng = np.random.default_rng(5)
    view = new_game(server, seat=1, seed=21)
    sid = view["id"]
    assert view["moves"] and view["moves"][0]["seat"] == 0  # the bot moved first
    for _ in range(200):
        if view["position"]["finished"]:
            break
        assert view["your_turn"]
        legal = view["legal"]
        if legal["leather"]:
            sq = int(rng.choice(legal["leather"]))
            move = f"leather {'abcdefghi'[sq % 9]}{sq // 9 + 1}"
        elif legal["buys"] and rng.random() < 0.8:
            pid = sorted(legal["buys"])[0]
            squares = legal["buys"][pid][int(rng.integers(len(legal["buys"][pid])))]
            move = f"buy {pid} " + " ".join(f"{'abcdefghi'[s % 9]}{s // 9 + 1}" for s in squares)
        else:
            move = "pass"
        status, view = server.post(f"/api/play/{sid}/move", {"move": move})
        assert status == 200, view
    assert view["position"]["finished"] and view["saved"]
    saved = Path(view["saved_path"])
    assert saved.parent == server.save_dir and saved.is_file()
    assert json.loads(saved.read_text()) == view["record"]
    # the record says who played (the bot moved first: seat 0)
    assert view["record"]["players"] == ["random", "human"]
    done = subprocess.run([sys.executable, "-m", "patchsim.cli", "replay", str(saved), "--json"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout)
    assert [p["score"] for p in final["players"]] == [
        p["score"] for p in view["position"]["players"]]
    assert final["text"] == view["position"]["text"]
    # the saved game opens in the viewer
    status, seen = server.get(f"/api/saved/{quote(saved.name)}")
    assert status == 200 and seen["positions"][-1]["text"] == final["text"]
    assert seen["players"] == ["random", "human"]
    assert_refused(*server.post(f"/api/play/{sid}/move", {"move": "pass"}), 409, "over")
    assert_refused(*server.get("/api/saved/nothing.json"), 404)
    assert_refused(*server.get("/api/saved/..%2f..%2fsecret.json"), (403, 404))


# --- pages and assets -----------------------------------------------------------------------------
def test_pages_and_assets_load_nothing_from_the_network(server: Server) -> None:
    for page in ("/", "/run", "/game", "/play"):
        status, headers, body = server.request("GET", page)
        assert status == 200 and headers["content-type"].startswith("text/html")
    remote = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?"""
                        r"""\s*(?:https?:)?//|@import|fetch\(\s*["'](?:https?:)?//""", re.I)
    for path in [*STATIC_DIR.iterdir(), BOARD_SCRIPT]:  # board.js lives with the view
        text = path.read_text(encoding="utf-8")
        assert not remote.search(text), path.name
        # the only address in any file is the SVG namespace name, which is never fetched
        for url in re.findall(r"https?://[^\s\"')]+", text):
            assert url == "http://www.w3.org/2000/svg", (path.name, url)
        status, _, _ = server.request("GET", f"/static/{path.name}")
        assert status == 200


# --- the engine-side helpers ----------------------------------------------------------------------
def test_legal_view_is_the_engines_legal_moves() -> None:
    game = Game.new("edition2", seed=4)
    view = legal_view(game)
    moves = game.legal_moves()
    assert view["pass"] and sum(map(len, view["buys"].values())) == len(moves) - 1
    assert set(view["buys"]) == {m.patch for m in moves if m.kind == "buy"}


def test_patch_colours_differ_within_every_shipped_ruleset() -> None:
    for name in shipped_rulesets():
        colours = patch_colours(load_ruleset(name))
        assert len(set(colours.values())) == len(colours), name


def test_evaluation_is_reproducible_and_exact_at_the_end() -> None:
    record = json.loads(SAMPLE.read_text())
    a = evaluate_record(record, n_rollouts=16, seed=3, method="rollouts")
    b = evaluate_record(record, n_rollouts=16, seed=3, method="rollouts")
    pd.testing.assert_frame_equal(a, b)
    final = final_position(GameRecord.from_dict(record))
    assert len(a) == len(record["moves"]) + 1
    assert a["win0"].iloc[-1] == (1.0 if final.winner == 0 else 0.0)
    assert a["margin"].iloc[-1] == final.score(0) - final.score(1)
    assert a["to_move"].iloc[-1] == -1 and (a["rollouts"].iloc[:-1] == 16).all()
    start = GameRecord.from_dict(record).start()
    c = evaluate_game(start, [], n_rollouts=8, method="rollouts")
    assert len(c) == 1 and start.ply == 0  # the start position is left as it was
    with pytest.raises(BotSpecError, match="non-search"):
        rollout_bot("mcts")
    with pytest.raises(RecordError, match="move 1"):
        evaluate_record(dict(record, moves=["buy P99 a1"]), n_rollouts=2)


def test_the_learned_evaluation_is_used_where_a_model_exists() -> None:
    """The strongest available evaluation: edition 2 ships a model, so the curve comes from
    it (no rollouts, exact at the end); a ruleset without a model falls to rollouts and the
    table says which method it used."""
    record = json.loads(SAMPLE.read_text())
    learned = evaluate_record(record)
    assert "learned" in learned.attrs["method"] and (learned["rollouts"] == 0).all()
    assert learned["win0"].between(0, 1).all() and learned["win0"].iloc[:-1].nunique() > 5
    final = final_position(GameRecord.from_dict(record))
    assert learned["win0"].iloc[-1] == (1.0 if final.winner == 0 else 0.0)
    other = Game.new(load_ruleset("edition2").with_overrides({"starting_buttons": 6}), seed=1)
    rolled = evaluate_game(other, [], n_rollouts=4)
    assert "rollouts" in rolled.attrs["method"] and rolled["rollouts"].iloc[0] == 4


def test_lead_changes_and_intervals() -> None:
    table = pd.DataFrame({"win0": [0.5, 0.7, 0.6, 0.5, 0.4, 0.3, 0.8]})
    out = mark_lead_changes(table)
    assert out["favourite"].tolist() == [-1, 0, 0, 0, 1, 1, 0]
    assert out["lead_change"].tolist() == [False, False, False, False, True, False, True]
    lo, hi = wilson(8, 10)
    assert 0 < lo < 0.8 < hi < 1
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0


# --- the command ---------------------------------------------------------------------------------
def test_serve_refuses_a_missing_folder_and_a_bad_evaluation_bot(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli_app, ["serve", str(tmp_path / "nothing")])
    assert done.exit_code == 2 and "no such folder" in done.stderr
    done = CliRunner().invoke(cli_app, ["serve", str(tmp_path), "--eval-bot", "mcts"])
    assert done.exit_code == 2 and "--eval-bot" in done.stderr
    done = CliRunner().invoke(cli_app, ["serve", str(tmp_path), "--eval-rollouts", "0"])
    assert done.exit_code == 2 and "--eval-rollouts" in done.stderr


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp writes them) listening on ``port``."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            addr, state = fields[1], fields[3]
            if state == "0A" and int(addr.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                out.append(addr.rsplit(":", 1)[0])
    return out


@pytest.mark.slow
def test_serve_listens_on_loopback_only_by_default(run_dir: Path, tmp_path: Path) -> None:
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net/tcp to read the listening sockets from")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "patchsim.cli", "serve", str(run_dir),
                             "--port", str(port), "--save-dir", str(tmp_path / "saved")],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/api/runs")
                resp = conn.getresponse()
                data = json.loads(resp.read())
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                assert time.monotonic() < deadline, "patchsim serve did not start"
                time.sleep(0.2)
        assert resp.status == 200 and data["runs"][0]["error"] is None
        assert _listening(port) == ["0100007F"]  # 127.0.0.1, nothing else
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert f"http://127.0.0.1:{port}/" in out


# --- issue 22: what a served file may make the server read ----------------------------------------
LEAKS = ("patches-abs", "patches-rel", "table-outside", "extends-rel", "extends-abs",
         "extends-home", "chain", "via-link")


@pytest.fixture(scope="module")
def leaky(server: Server) -> dict:
    _, data = server.get("/api/runs")
    (run,) = [r for r in data["runs"] if r["label"].endswith("leaky")]
    return run


def assert_no_secret(body: object) -> None:
    text = body if isinstance(body, str | bytes) else json.dumps(body)
    text = text.decode(errors="replace") if isinstance(text, bytes) else text
    assert SECRET not in text and "root:x:0:0" not in text, text


@pytest.mark.parametrize("name", LEAKS)
def test_a_served_ruleset_cannot_name_a_file_outside_the_served_folders(
        server: Server, leaky: dict, name: str) -> None:
    """extends, a patch table and a chain of them must stay inside the served folders or the
    shipped configs; the refusal names the key and the path, never the file's text."""
    status, body = server.post("/api/play", {"ruleset": f"run:{leaky['id']}:rules/{name}.yaml",
                                             "bot": "random", "seat": 0})
    text = assert_refused(status, body, 400, "outside the folders")
    assert "extends" in text or "patches" in text
    assert_no_secret(body)
    for url in (f"/api/runs/{leaky['id']}/record?path=records/{name}.json",
                f"/api/runs/{leaky['id']}/record/eval?path=records/{name}.json&rollouts=2"):
        status, body = server.get(url)
        assert_refused(status, body, 422, "outside the folders")
        assert_no_secret(body)


def test_a_served_ruleset_may_extend_files_inside_the_served_folders(server: Server,
                                                                     leaky: dict) -> None:
    status, view = server.post("/api/play", {"ruleset": f"run:{leaky['id']}:rules/child.yaml",
                                             "bot": "random", "seat": 0, "seed": 2})
    assert status == 200, view
    players = view["position"]["players"]
    assert players[0]["buttons"] == 9 and players[1]["buttons"] == 9 + 8


def test_the_loader_confines_every_path_and_quotes_no_file(tmp_path: Path) -> None:
    served, outside = tmp_path / "served", tmp_path / "outside"
    served.mkdir()
    outside.mkdir()
    (outside / "secret.yaml").write_text(f"{SECRET}\n")
    (served / "a.yaml").write_text(f"extends: {outside}/secret.yaml\n")
    (served / "b.yaml").write_text("name: b\nextends: edition2\npatches: ../outside/secret.yaml\n")
    for name in ("a.yaml", "b.yaml"):
        with pytest.raises(RulesetError) as e:
            load_ruleset(served / name, allowed_roots=[served])
        assert "outside the folders" in str(e.value) and SECRET not in str(e.value)
        # without a confinement (the command line) the file is read, but its text is not
        # quoted in the message either
        with pytest.raises(RulesetError) as e:
            load_ruleset(served / name)
        assert "got string" in str(e.value) and SECRET not in str(e.value)
    with pytest.raises(RulesetError, match="outside the folders") as e:
        load_ruleset(outside / "secret.yaml", allowed_roots=[served])
    # the refusal is the message, not wrapped as an unusable file name
    assert "not a usable file name" not in str(e.value)
    assert load_ruleset("edition2", allowed_roots=[served]).name == "edition2"


@pytest.mark.parametrize("manifest", [
    {"config": 5}, {"config": {"rulesets": 5}}, {"config": {"rulesets": [5]}},
    {"config": {"rulesets": [{"name": 5, "rules": {}}]}}, {"config": {"bots": 7}},
    {"games_total": [1]}, {"games_total": "many"}, {"finished": {"x": 1}}, [1, 2],
    {"config": {"rulesets": [{"name": "x", "rules": {"extends": "/etc/passwd.yaml"}}]}},
])
def test_a_malformed_manifest_is_listed_with_its_reason(tmp_path: Path, manifest: object
                                                        ) -> None:
    (tmp_path / "runs" / "bad").mkdir(parents=True)
    (tmp_path / "runs" / "bad" / "manifest.json").write_text(json.dumps(manifest))
    with Server(create_app([tmp_path / "runs"], tmp_path / "saved")) as srv:
        status, data = srv.get("/api/runs")
        assert status == 200, data
        (run,) = data["runs"]
        assert run["error"] and "manifest" in run["error"]
        assert_refused(*srv.get(f"/api/runs/{run['id']}/games"), 409, "manifest")


def test_an_edited_or_swapped_run_folder_is_listed_with_its_reason(tmp_path: Path,
                                                                    run_dir: Path) -> None:
    """serve checks a run folder as report and resume do: an edited manifest (its digest of
    the settings) lists the run with the reason; a table that is not the one the run wrote
    (its sha256) is refused when its games are asked for."""
    edited = tmp_path / "runs" / "edited"
    swapped = tmp_path / "runs" / "swapped"
    shutil.copytree(run_dir, edited)
    shutil.copytree(run_dir, swapped)
    m = json.loads((edited / "manifest.json").read_text())
    m["config"]["seed"] = int(m["config"]["seed"]) + 94
    (edited / "manifest.json").write_text(json.dumps(m))
    (swapped / "games.parquet").write_bytes((swapped / "events.parquet").read_bytes())
    with Server(create_app([tmp_path / "runs"], tmp_path / "saved")) as srv:
        status, data = srv.get("/api/runs")
        assert status == 200, data
        runs = {Path(r["path"]).name: r for r in data["runs"]}
        assert "config.seed" in runs["edited"]["error"], runs["edited"]
        assert runs["swapped"]["error"] is None or "games.parquet" in runs["swapped"]["error"]
        assert_refused(*srv.get(f"/api/runs/{runs['swapped']['id']}/games"), 409,
                       "games.parquet")


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_deeply_nested_json_is_a_4xx(server: Server, good: dict, tmp_path: Path) -> None:
    sample = json.loads(SAMPLE.read_text())
    deep = nested(100_000).encode()
    for url, body in (("/api/record", b'{"record": ' + deep + b"}"),
                      ("/api/eval", b'{"record": {"rules": ' + deep + b"}}"),
                      ("/api/play", b'{"ruleset": ' + deep + b"}")):
        assert_refused(*server.post(url, body), 400, "nested")
    sid = new_game(server)["id"]
    assert_refused(*server.post(f"/api/play/{sid}/move", b'{"move": ' + deep + b"}"), 400,
                   "nested")
    # parsable, but too deep to copy or hash later
    rules: object = {"name": "x"}
    for _ in range(900):
        rules = {"x": rules}
    status, body = server.post("/api/record",
                               b'{"record": ' + json.dumps(dict(sample, rules=rules)).encode()
                               + b"}")
    assert_refused(status, body, (400, 422), "nested")


def test_deeply_nested_record_and_ruleset_files_are_a_4xx(tmp_path: Path, run_dir: Path
                                                          ) -> None:
    run = tmp_path / "runs" / "one"
    shutil.copytree(run_dir, run)
    (run / "deep.json").write_text('{"rules": ' + nested(100_000) + "}")
    sample = json.loads(SAMPLE.read_text())
    rules: object = {"name": "x"}
    for _ in range(900):
        rules = {"x": rules}
    (run / "deep-rules.json").write_text(json.dumps(dict(sample, rules=rules)))
    (run / "deep.yaml").write_text("x: " + nested(5_000) + "\n")
    (run / "deep-yaml.json").write_text(json.dumps(dict(sample, rules="deep.yaml")))
    with Server(create_app([tmp_path / "runs"], tmp_path / "saved")) as srv:
        (info,) = srv.get("/api/runs")[1]["runs"]
        for name in ("deep.json", "deep-rules.json", "deep-yaml.json"):
            assert_refused(*srv.get(f"/api/runs/{info['id']}/record?path={name}"), 422,
                           "nested")
        status, body = srv.post("/api/play", {"ruleset": f"run:{info['id']}:deep.yaml",
                                              "bot": "random", "seat": 0})
        assert_refused(status, body, 400, "deep.yaml")


def long_record(last_space: int = 999, passes: int = 20) -> dict:
    """A legal record on a long track: ``passes`` passes from the start."""
    rules = {**load_ruleset("edition2").to_dict(), "name": f"long-{last_space}-{passes}"}
    rules["track"] = {**rules["track"], "last_space": last_space}
    rules["track"]["income"] = [m for m in rules["track"]["income"] if m <= last_space]
    return {"rules": rules, "circle": list(deal_circle(load_ruleset("edition2"), 1)),
            "moves": ["pass"] * passes}


def test_an_evaluation_is_bounded_per_request(server: Server) -> None:
    state = server.app.state.patchsim
    record = long_record()
    old, state.eval_work = state.eval_work, 4_000
    try:
        status, ev = server.post("/api/eval?rollouts=2000", {"record": record})
    finally:
        state.eval_work = old
    assert status == 200, ev
    n = ev["rollouts"]
    assert 1 <= n < 2000 and n * 20 * 999 / 53 <= 4_000
    assert "2000 rollouts per position were asked" in ev["note"] and f"{n} are played" in ev["note"]
    assert all(p["rollouts"] in (0, n) for p in ev["points"])


def test_evaluations_run_one_at_a_time(server: Server) -> None:
    state = server.app.state.patchsim
    old, state.eval_wait = state.eval_wait, 0.3
    state.eval_slot.acquire()  # as if another evaluation ran
    try:
        status, body = server.post("/api/eval?rollouts=3", {"record": long_record(passes=3)})
    finally:
        state.eval_slot.release()
        state.eval_wait = old
    assert_refused(status, body, 503, "busy")


def test_an_evaluation_stops_when_its_client_leaves(server: Server) -> None:
    state = server.app.state.patchsim
    before, old = state.evals_stopped, state.eval_work
    state.eval_work = 10**9  # minutes of work, unless it stops
    body = json.dumps({"record": long_record(passes=20)}).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"POST /api/eval?rollouts=2000 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        deadline = time.monotonic() + 60
        while state.eval_slot.acquire(blocking=False):  # free: not started yet
            state.eval_slot.release()
            assert time.monotonic() < deadline, "the evaluation did not start"
            time.sleep(0.02)
    # the client has gone: the evaluation (minutes of work otherwise) stops soon
    deadline = time.monotonic() + 60
    while state.evals_stopped == before:
        assert time.monotonic() < deadline, "the evaluation went on after its client left"
        time.sleep(0.05)
    state.eval_work = old
    assert state.eval_slot.acquire(timeout=30)
    state.eval_slot.release()


# --- issue 21: the web app's gaps ----------------------------------------------------------------
def test_a_bot_without_a_model_is_refused_when_the_game_is_set_up(server: Server,
                                                                  good: dict) -> None:
    status, body = server.post("/api/play", {"ruleset": f"run:{good['id']}:rules/rich.yaml",
                                             "bot": "mcts(eval=learned, iterations=20)",
                                             "seat": 1})
    assert_refused(status, body, 400, "no model", "patchsim train")
    # with a model the game starts, the bot moving first
    status, view = server.post("/api/play", {"ruleset": "edition2", "seat": 1, "seed": 4,
                                             "bot": "mcts(eval=learned, iterations=20)"})
    assert status == 200 and view["moves"] and not view["error"], view


def test_records_say_who_played_and_old_records_still_load(tmp_path: Path) -> None:
    sample = json.loads(SAMPLE.read_text())
    rec = GameRecord.from_dict(dict(sample, players=["human", "greedy(epsilon=0.1)"]))
    again = GameRecord.from_json(rec.to_json())
    assert again.players == ["human", "greedy(epsilon=0.1)"] and again.to_dict() == rec.to_dict()
    old = GameRecord.from_dict(sample)
    assert old.players is None and "players" not in old.to_dict()
    assert final_position(again).to_text() == final_position(old).to_text()
    for bad in ("human", ["human"], ["human", 5], ["human", ""]):
        with pytest.raises(RecordError, match="players"):
            GameRecord.from_dict(dict(sample, players=bad))
    path = tmp_path / "game.json"
    path.write_text(rec.to_json())
    done = CliRunner().invoke(cli_app, ["replay", str(path), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["text"] == final_position(old).to_text()


def test_a_viewed_record_shows_its_players(server: Server) -> None:
    sample = json.loads(SAMPLE.read_text())
    status, view = server.post("/api/record", {"record": dict(sample, players=["human", "x"])})
    assert status == 200 and view["players"] == ["human", "x"]
    status, view = server.post("/api/record", {"record": sample})
    assert status == 200 and view["players"] == ["seat 0", "seat 1"]


def test_deterministic_self_play_is_listed_once(server: Server, good: dict,
                                                run_dir: Path) -> None:
    stored = pd.read_parquet(run_dir / "games.parquet")
    selfplay = stored[stored["pairing"] == "greedy vs greedy"]
    status, data = server.get(f"/api/runs/{good['id']}/games?pairing=greedy%20vs%20greedy"
                              "&limit=500")
    assert status == 200
    # one game per deal, each marked, and the page says why (as the report does)
    assert len(data["games"]) == selfplay["deal"].nunique() == len(selfplay) // 2
    assert all(g["counted_once"] and g["order"] == 0 for g in data["games"])
    assert data["counted_once"] == ["greedy vs greedy"]
    assert "counted once" in data["counted_once_note"]
    status, data = server.get(f"/api/runs/{good['id']}/games?pairing=greedy%20vs%20random")
    assert not any(g["counted_once"] for g in data["games"])
    copy = int(selfplay[selfplay["order"] == 1]["game_id"].iloc[0])
    status, view = server.get(f"/api/runs/{good['id']}/games/{copy}")  # a copy still opens
    assert status == 200


def _manifest(run_dir: Path, **changes: object) -> str:
    return json.dumps({**json.loads((run_dir / "manifest.json").read_text()), **changes})


def test_runs_below_a_report_are_found_and_the_tuners_candidates_are_not(
        tmp_path: Path, run_dir: Path) -> None:
    reports = tmp_path / "reports"
    study = reports / "edition1-vs-edition2"  # a committed report and newer runs below it
    shutil.copytree(run_dir, study / "20261201-120000-s1")
    (study / "manifest.json").write_text(_manifest(run_dir, complete=True))
    (study / "report.md").write_text("# the report\n")
    sweep = reports / "bonus-value"
    shutil.copytree(run_dir, sweep)
    (sweep / "sweep.html").write_text("<html></html>")
    shutil.copytree(run_dir, sweep / "20261201-130000")
    tune = reports / "fair-start-tune"  # finished: its report beside the candidates
    (tune / "tune.md").parent.mkdir(parents=True)
    (tune / "tune.md").write_text("# tune\n")
    running = reports / "other-tune"  # still running: no report yet
    for folder in (tune / "candidates" / "0123456789abcdef",
                   tune / "finalists" / "fedcba9876543210",
                   running / "candidates" / "00112233aabbccdd"):
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(_manifest(run_dir, complete=False))
    with Server(create_app([reports], tmp_path / "saved")) as srv:
        labels = {r["label"]: r for r in srv.api("/api/runs")["runs"]}
    assert set(labels) == {"reports/edition1-vs-edition2",
                           "reports/edition1-vs-edition2/20261201-120000-s1",
                           "reports/bonus-value", "reports/bonus-value/20261201-130000"}
    assert labels["reports/edition1-vs-edition2/20261201-120000-s1"]["error"] is None
    assert "report only" in labels["reports/edition1-vs-edition2"]["error"]


def test_a_game_whose_save_folder_fails_is_not_lost(tmp_path: Path) -> None:
    save_dir = tmp_path / "saved"
    app = create_app([], save_dir)
    save_dir.write_text("a file where the folder was")  # made unusable after the start
    with Server(app) as srv:
        status, view = srv.post("/api/play", {"ruleset": "edition2", "bot": "pass", "seat": 1,
                                              "seed": 3})
        for _ in range(300):
            if view["position"]["finished"]:
                break
            leather = view["legal"]["leather"]
            move = f"leather {'abcdefghi'[leather[0] % 9]}{leather[0] // 9 + 1}" if leather \
                else "pass"
            status, view = srv.post(f"/api/play/{view['id']}/move", {"move": move})
            assert status == 200, view
    assert view["position"]["finished"] and view["saved"] is None
    assert "could not be saved" in view["save_error"] and str(save_dir) in view["save_error"]
    assert view["record"]["players"] == ["pass", "human"]
    assert len(GameRecord.from_dict(view["record"]).moves) == len(view["moves"])


def test_serve_refuses_files_as_folders_and_a_port_in_use(tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    done = CliRunner().invoke(cli_app, ["serve", str(a_file)])
    assert done.exit_code == 2 and "is a file, not a folder" in done.stderr, done.output
    done = CliRunner().invoke(cli_app, ["serve", str(tmp_path), "--save-dir", str(a_file)])
    assert done.exit_code == 2 and "--save-dir" in done.stderr, done.output
    done = CliRunner().invoke(cli_app, ["serve", str(tmp_path), "--save-dir",
                                        str(a_file / "below")])
    assert done.exit_code == 2 and "is a file" in done.stderr, done.output
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = CliRunner().invoke(cli_app, ["serve", str(tmp_path), "--port", str(port),
                                            "--save-dir", str(tmp_path / "s")])
    assert done.exit_code == 2 and f"port {port} is in use" in done.stderr, done.output
    assert "Traceback" not in done.output and "ERROR" not in done.output
    done = CliRunner().invoke(cli_app, ["serve", str(tmp_path), "--host", "192.0.2.77",
                                        "--save-dir", str(tmp_path / "s")])
    assert done.exit_code == 2 and "not an address of this machine" in done.stderr, done.output
    done = CliRunner().invoke(cli_app, ["serve", str(tmp_path), "--host", "no host!",
                                        "--save-dir", str(tmp_path / "s")])
    assert done.exit_code == 2 and "--host" in done.stderr, done.output


# --- fuzzing: any request is a 2xx or a 4xx, and nothing outside is read -------------------------
_json = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
                     | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
_paths = st.sampled_from(["../../outside/secret.yaml", "/etc/passwd", "~/x.yaml", "records",
                          "rules/patches-abs.yaml", "rules/linked/secret.yaml", "..", "",
                          "rules/../../leaky/rules/chain.yaml", "\x00", "a\\b.yaml",
                          "../rules/extends-abs.yaml", "../rules/via-link.yaml", "%2e%2e"])


def _mutated_record() -> st.SearchStrategy[object]:
    sample = json.loads(SAMPLE.read_text())
    fields = st.fixed_dictionaries({}, optional={
        "rules": _paths | _json | st.just("edition2"),
        "circle": st.just(sample["circle"]) | st.lists(st.text(max_size=4), max_size=5) | _json,
        "moves": st.just(sample["moves"][:6]) | st.lists(
            st.sampled_from(["pass", "buy P29 b1 a2", "leather a1", "buy", "x" * 50]),
            max_size=6) | _json,
        "players": st.just(["human", "random"]) | _json,
        "extra": _json})
    return fields | _json


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_requests_are_answered_without_a_crash_or_a_leak(server: Server, leaky: dict,
                                                                 data: st.DataObject) -> None:
    rid = leaky["id"]
    kind = data.draw(st.sampled_from(["record", "move", "games", "file", "play", "eval"]))
    if kind == "record":
        status, _, body = server.request("POST", "/api/record", json.dumps(
            {"record": data.draw(_mutated_record())}).encode(),
            {"Content-Type": "application/json"})
    elif kind == "eval":  # few rollouts: the fuzzing is about input, not load
        status, _, body = server.request("POST", "/api/eval?rollouts=1", json.dumps(
            {"record": data.draw(_mutated_record())}).encode(),
            {"Content-Type": "application/json"})
    elif kind == "move":
        sid = new_game(server)["id"]
        status, _, body = server.request("POST", f"/api/play/{sid}/move", json.dumps(
            data.draw(st.dictionaries(st.sampled_from(["move", "x"]), _json, max_size=2))
        ).encode(), {"Content-Type": "application/json"})
    elif kind == "games":
        query = data.draw(st.dictionaries(st.sampled_from(
            ["limit", "offset", "sort", "winner", "abs_margin_min", "bonus", "leather", "x"]),
            st.text(max_size=12) | st.integers(-10**14, 10**14).map(str), max_size=4))
        status, _, body = server.request("GET", f"/api/runs/{rid}/games?{urlencode(query)}")
    elif kind == "file":
        path = quote(data.draw(_paths | st.text(max_size=30)), safe="")
        status, _, body = server.request("GET", f"/api/runs/{rid}/record?path={path}")
    else:
        ruleset = data.draw(st.one_of(
            _paths.map(lambda p: f"run:{rid}:{p}"),
            st.sampled_from(LEAKS).map(lambda n: f"run:{rid}:rules/{n}.yaml"), _json))
        status, _, body = server.request("POST", "/api/play", json.dumps(
            {"ruleset": ruleset, "bot": data.draw(st.sampled_from(["random", "pass", _FUZZ_BOT])),
             "seat": data.draw(_json | st.sampled_from([0, 1]))}).encode(),
            {"Content-Type": "application/json"})
    assert status < 500, body
    assert_no_secret(body)


_FUZZ_BOT = "mcts(eval=learned, model=/etc/passwd)"
