"""``patchsim replay``: the documented JSON, traces, the picture, and clear errors for illegal
moves and malformed records. Also the shipped example record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, final_position, replay
from patchsim.engine.ruleset import load_ruleset

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "edition2-sample.json"

SUMMARY_KEYS = {"finished", "to_move", "pending_leather", "legal_moves", "winner", "players",
                "text"}
PLAYER_KEYS = {"position", "buttons", "income", "empty_squares", "bonus", "score"}


def random_record(rules: str = "edition2", seed: int = 5) -> dict:
    rng = np.random.default_rng(seed)
    game = Game.new(rules, seed=seed)
    while not game.finished:
        moves = game.legal_moves()
        game.apply(moves[int(rng.integers(len(moves)))])
    return game.record()


def write_record(path: Path, record: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, ["replay", *args], input=stdin)


def assert_clean_failure(result, *fragments: str) -> str:
    """A non-zero exit with an 'error:' message on stderr, nothing on stdout, no traceback."""
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def record() -> dict:
    return random_record()


@pytest.fixture
def record_file(tmp_path: Path, record: dict) -> Path:
    return write_record(tmp_path / "game.json", record)


# --------------------------------------------------------------------------------------------
# output


def test_json_prints_exactly_the_documented_object(record: dict, record_file: Path) -> None:
    result = invoke(str(record_file), "--json")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    summary = json.loads(lines[0])
    assert set(summary) == SUMMARY_KEYS
    assert len(summary["players"]) == 2
    for player in summary["players"]:
        assert set(player) == PLAYER_KEYS
        assert isinstance(player["bonus"], bool)
        assert all(type(player[k]) is int for k in PLAYER_KEYS - {"bonus"})
    assert summary["finished"] is True
    assert summary["to_move"] is None
    assert summary["winner"] in (0, 1)
    assert summary["legal_moves"] == 0 and summary["pending_leather"] == 0
    assert summary == final_position(GameRecord.from_dict(record)).summary(text=True)
    for player in summary["players"]:
        assert player["position"] == 53
        penalty = 2 * player["empty_squares"]
        assert player["score"] == player["buttons"] + 7 * player["bonus"] - penalty


def test_json_of_an_unfinished_game(record: dict, tmp_path: Path) -> None:
    path = write_record(tmp_path / "part.json", {**record, "moves": record["moves"][:7]})
    summary = json.loads(invoke(str(path), "--json").stdout)
    assert summary["finished"] is False and summary["winner"] is None
    assert summary["to_move"] in (0, 1)
    assert summary["legal_moves"] >= 1


def test_json_while_a_leather_patch_is_pending(tmp_path: Path) -> None:
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    n = next(i for i, m in enumerate(sample["moves"]) if m.startswith("leather"))
    path = write_record(tmp_path / "pending.json", {**sample, "moves": sample["moves"][:n]})
    summary = json.loads(invoke(str(path), "--json").stdout)
    assert summary["pending_leather"] >= 1
    claimer = summary["players"][summary["to_move"]]
    assert summary["legal_moves"] == claimer["empty_squares"]


def test_trace_json_prints_one_line_per_position(record: dict, record_file: Path) -> None:
    result = invoke(str(record_file), "--trace", "--json")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == len(record["moves"]) + 1
    trace = [json.loads(line) for line in lines]
    assert all(set(s) == SUMMARY_KEYS for s in trace)
    assert trace[0] == Game.new("edition2", circle=record["circle"]).summary(text=True)
    assert trace == [g.summary(text=True) for g in replay(GameRecord.from_dict(record))]
    assert trace[-1]["finished"] and not any(s["finished"] for s in trace[:-1])


def test_trace_pictures_every_position(record: dict, record_file: Path) -> None:
    result = invoke(str(record_file), "--trace")
    assert result.exit_code == 0
    assert result.stdout.count("ruleset edition2") == len(record["moves"]) + 1
    assert "move 0" in result.stdout and f"move {len(record['moves'])}" in result.stdout


def test_picture_shows_both_quilts_the_track_and_the_offer(record_file: Path) -> None:
    result = invoke(str(record_file))
    assert result.exit_code == 0
    text = result.stdout
    lines = text.splitlines()
    header = "a b c d e f g h i"
    assert any(line.count(header) == 2 for line in lines)  # the two quilts side by side
    assert any("Player 0" in line and "Player 1" in line for line in lines)
    for row in range(1, 10):
        assert sum(1 for line in lines if line.startswith(f"{row:>2} ")) == 1
    assert "Track: " in text and "Offer: " in text
    assert "Player 0: space 53/53" in text and "Player 1: space 53/53" in text
    assert "Game over: player" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_picture_of_the_start_position(tmp_path: Path, record: dict) -> None:
    path = write_record(tmp_path / "start.json", {**record, "moves": []})
    text = invoke(str(path)).stdout
    offer_line = next(line for line in text.splitlines() if line.startswith("Offer: "))
    assert all(pid in offer_line for pid in record["circle"][:3])
    assert record["circle"][3] not in offer_line
    assert "Player 0 to move" in text
    assert "Track: *" in text  # both tokens on space 0


def test_stdin_is_read_for_dash(record: dict, record_file: Path) -> None:
    from_stdin = invoke("-", "--json", stdin=json.dumps(record))
    from_file = invoke(str(record_file), "--json")
    assert from_stdin.exit_code == 0
    assert from_stdin.stdout == from_file.stdout


def test_rules_path_relative_to_the_record_file(tmp_path: Path, monkeypatch, record) -> None:
    folder = tmp_path / "games" / "six"
    folder.mkdir(parents=True)
    (folder / "six.yaml").write_text("extends: edition2\nstarting_buttons: 6\n",
                                     encoding="utf-8")
    path = write_record(folder / "game.json",
                        {"rules": "six.yaml", "circle": record["circle"], "moves": ["pass"]})
    monkeypatch.chdir(tmp_path)  # not the record's folder
    result = invoke(str(path.relative_to(tmp_path)), "--json")
    assert result.exit_code == 0, result.output
    players = json.loads(result.stdout)["players"]
    assert [p["buttons"] for p in players] == [7, 6]
    # a sub-folder path relative to the record works too
    (folder / "rules").mkdir()
    (folder / "six.yaml").rename(folder / "rules" / "six.yaml")
    write_record(path, {"rules": "rules/six.yaml", "circle": record["circle"], "moves": []})
    result = invoke(str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["players"][1]["buttons"] == 6


def test_inline_rules_mapping(tmp_path: Path, record: dict) -> None:
    rules = load_ruleset("edition2").to_dict()
    rules["starting_buttons"] = 9
    path = write_record(tmp_path / "inline.json", {**record, "rules": rules, "moves": []})
    result = invoke(str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["players"][0]["buttons"] == 9


# --------------------------------------------------------------------------------------------
# errors


def test_illegal_move_names_its_number_text_and_reason(tmp_path: Path, record: dict) -> None:
    moves = ["pass", "pass", "leather a1", "pass"]
    path = write_record(tmp_path / "bad.json", {**record, "moves": moves})
    message = assert_clean_failure(invoke(str(path), "--json"), "move 3", "'leather a1'",
                                   "no leather patch is waiting to be placed")
    assert "illegal" in message


def test_buy_of_a_patch_not_on_offer(tmp_path: Path) -> None:
    ids = [p.id for p in load_ruleset("edition2").patches]
    first = ["P01", "P02", "P03", "P16"]  # P16 (cost 0) is fourth: not on offer
    circle = [*first, *(pid for pid in ids if pid not in first and pid != "P00"), "P00"]
    text = "buy P16 b1 a2 b2 c2 d2 b3"
    path = write_record(tmp_path / "bad.json", {"rules": "edition2", "circle": circle,
                                                "moves": [text]})
    assert_clean_failure(invoke(str(path)), "move 1", repr(text), "not on offer")
    ok = write_record(tmp_path / "ok.json", {"rules": "edition2", "circle": circle,
                                             "moves": ["buy P01 a1 b1 c1", text]})
    assert invoke(str(ok)).exit_code == 0  # after P01 the offer is P02, P03, P16


def test_malformed_move_is_reported_with_its_number(tmp_path: Path, record: dict) -> None:
    path = write_record(tmp_path / "bad.json", {**record, "moves": ["pass", "buy P01 z1 z2 z3"]})
    assert_clean_failure(invoke(str(path)), "move 2", "'buy P01 z1 z2 z3'", "malformed")


def test_trace_prints_positions_up_to_an_illegal_move(tmp_path: Path, record: dict) -> None:
    path = write_record(tmp_path / "bad.json", {**record, "moves": ["pass", "leather a1"]})
    result = invoke(str(path), "--trace", "--json")
    assert result.exit_code != 0
    assert len(result.stdout.splitlines()) == 2
    assert "move 2" in result.stderr and "Traceback" not in result.output


CIRCLE = Game.new("edition2", seed=0).circle

MALFORMED = {
    "bad_json": ('{"rules": "edition2", "circle": [', "not valid JSON"),
    "not_an_object": ("[1, 2, 3]", "JSON object"),
    "unknown_ruleset": ({"rules": "edition9", "circle": list(CIRCLE), "moves": []},
                        "edition9"),
    "missing_ruleset_file": ({"rules": "nowhere.yaml", "circle": list(CIRCLE), "moves": []},
                             "nowhere.yaml"),
    "invalid_inline_rules": ({"rules": {"name": "x"}, "circle": list(CIRCLE), "moves": []},
                             "missing required key"),
    "unknown_patch_in_circle": ({"rules": "edition2", "circle": [*CIRCLE[:-1], "P99"],
                                 "moves": []}, "P99"),
    "unknown_patch_in_move": ({"rules": "edition2", "circle": list(CIRCLE),
                               "moves": ["buy P77 a1 b1"]}, "P77"),
    "circle_with_a_duplicate": ({"rules": "edition2", "circle": [*CIRCLE, CIRCLE[0]],
                                 "moves": []}, "more than once"),
    "circle_missing_a_patch": ({"rules": "edition2", "circle": list(CIRCLE[1:]),
                                "moves": []}, "missing"),
    "unknown_key": ({"rules": "edition2", "circle": list(CIRCLE), "moves": [],
                     "winner": 0}, "winner"),
    "missing_key": ({"rules": "edition2", "circle": list(CIRCLE)}, "moves"),
    "moves_not_strings": ({"rules": "edition2", "circle": list(CIRCLE), "moves": [1]},
                          "moves"),
    "circle_not_a_list": ({"rules": "edition2", "circle": "P01 P02", "moves": []}, "circle"),
    "rules_a_number": ({"rules": 2, "circle": list(CIRCLE), "moves": []}, "rules"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_record_gives_a_clear_message(tmp_path: Path, case: str) -> None:
    content, fragment = MALFORMED[case]
    path = tmp_path / "rec.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content),
                    encoding="utf-8")
    message = assert_clean_failure(invoke(str(path), "--json"), fragment)
    assert str(path) in message or "rec.json" in message
    stdin = assert_clean_failure(invoke("-", stdin=path.read_text(encoding="utf-8")), fragment)
    assert stdin.startswith("error: -:")


def test_missing_record_file(tmp_path: Path) -> None:
    assert_clean_failure(invoke(str(tmp_path / "none.json")), "none.json", "cannot read")


def test_directory_as_record_file(tmp_path: Path) -> None:
    assert_clean_failure(invoke(str(tmp_path)), "cannot read")


def test_record_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"rules": "edition2", "circle": [], "moves": ["p\xe4ss"]}')
    assert_clean_failure(invoke(str(path)))


# --------------------------------------------------------------------------------------------
# records written by the engine


def test_record_of_a_variant_game_replays() -> None:
    game = Game.new("variants/leather_stays", seed=1)
    game.apply("pass")
    assert final_position(GameRecord.from_dict(game.record())).summary() == game.summary()


def test_record_of_an_edition_game_replays(record: dict) -> None:
    assert record["rules"] == "edition2"
    assert final_position(GameRecord.from_dict(record)).finished


# --------------------------------------------------------------------------------------------
# the example record and the console script


def test_example_record_replays_to_a_finished_game() -> None:
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert set(data) == {"rules", "circle", "moves"} and data["rules"] == "edition2"
    game = final_position(GameRecord.load(SAMPLE))
    assert game.finished and game.winner in (0, 1)
    kinds = {m.split()[0] for m in data["moves"]}
    assert kinds == {"pass", "buy", "leather"}
    assert len(game.leather_on_track) == 0
    assert game.move_texts() == data["moves"]  # written in the engine's own notation


def console_command() -> list[str]:
    script = Path(sys.executable).parent / "patchsim"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "patchsim.cli"]


@pytest.mark.slow
def test_console_script_replays_the_example() -> None:
    proc = subprocess.run([*console_command(), "replay", str(SAMPLE), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary == final_position(GameRecord.load(SAMPLE)).summary(text=True)
    assert summary["finished"] is True


@pytest.mark.slow
def test_console_script_error_has_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "patchsim.cli", "replay", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: ") and "not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
