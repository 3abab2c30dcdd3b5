"""Hostile input gets a message, never a traceback or a silent reading (issue 30): numbers in
notations YAML 1.1 reads by surprise (base 60, hex, leading zeros), integers of thousands of
digits in YAML, game records and request bodies, empty ``--bots`` values, files that are no
regular files, and names long enough to flood a message."""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.engine.record import GameRecord, RecordError
from patchsim.engine.ruleset import RulesetError, load_ruleset
from patchsim.engine.yamlfile import (
    MAX_INT_DIGITS,
    JsonNumberError,
    YamlFileError,
    dump_yaml,
    parse_json,
    parse_yaml,
    read_yaml,
)
from patchsim.errors import MAX_SPEC_CHARS, quote
from patchsim.experiments.experiment import ExperimentError, load_experiment
from patchsim.play.config import RunError, load_run_config

REPO = Path(__file__).resolve().parent.parent
SAMPLE = json.loads((REPO / "examples" / "edition2-sample.json").read_text(encoding="utf-8"))
HUGE = "9" * 5000


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def refused(result, *fragments: str, code: int = 2) -> str:
    """A clean refusal: the exit code, one 'error:' message, each fragment in it, no
    traceback and no flood (a value of thousands of characters is quoted by a prefix)."""
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr) < 2000, result.stderr[:500]
    for f in fragments:
        assert f in result.stderr, result.stderr
    return result.stderr


# --------------------------------------------------------------------------------------------
# one reading of numbers


@pytest.mark.parametrize(("text", "why"), [
    ("1:30", "'1:30' is a base-60 number (YAML 1.1 reads it as 90)"),
    ("-1:30", "'-1:30' is a base-60 number (YAML 1.1 reads it as -90)"),
    ("0x10", "'0x10' is a hexadecimal number (YAML 1.1 reads it as 16)"),
    ("0o17", "'0o17' is an octal number (YAML 1.1 reads it as text)"),
    ("017", "'017' is a number with a leading zero (YAML 1.1 reads it as 15)"),
    ("0b11", "'0b11' is a binary number (YAML 1.1 reads it as 3)"),
    ("1_000", "'1_000' is a number with '_' in it (YAML 1.1 reads it as 1000)"),
    ("1.2.3", "'1.2.3' looks like a number but is not one in decimal"),
    ("!!int 0x10", "'0x10' is not a plain decimal integer"),
    ("!!float 1:30", "'1:30' is not a plain decimal number"),
    (HUGE, f"'{'9' * 20}...' is an integer of 5,000 digits, longer than any patchsim reads "
           f"({MAX_INT_DIGITS} digits)"),
])
def test_numbers_outside_plain_decimal_are_refused_naming_file_line_key_and_value(
        text: str, why: str) -> None:
    with pytest.raises(YamlFileError) as err:
        parse_yaml(f"name: x\nstarting_buttons: {text}\n", "r.yaml")
    (problem,) = err.value.problems
    assert problem.startswith(f"r.yaml: line 2: starting_buttons: {why}"), problem
    assert "plain decimal only" in problem and "quote it" in problem
    assert len(problem) < 400  # the 5,000 digits are quoted by a prefix


def test_plain_decimal_numbers_and_quoted_text_read_as_written() -> None:
    data = parse_yaml("a: [0, -3, 90, +7, 0.25, .5, 1., 1e3, 2.5e-3, -1E+2, .inf, -.inf, .nan]\n"
                      "b: ['1:30', \"0x10\", '017']\nc: [7x7, 2024-01-01, true, null, P19]\n",
                      "f.yaml")
    *numbers, nan = data["a"]
    assert numbers == [0, -3, 90, 7, 0.25, 0.5, 1.0, 1000.0, 0.0025, -100.0, math.inf,
                       -math.inf]
    assert [type(n) for n in numbers[:4]] == [int] * 4 and math.isnan(nan)
    assert data["b"] == ["1:30", "0x10", "017"]
    assert data["c"] == ["7x7", "2024-01-01", True, None, "P19"]


@pytest.mark.parametrize(("text", "why"), [
    ("yes", "'yes' is a YAML 1.1 boolean (YAML 1.1 reads it as true)"),
    ("No", "'No' is a YAML 1.1 boolean (YAML 1.1 reads it as false)"),
    ("ON", "'ON' is a YAML 1.1 boolean (YAML 1.1 reads it as true)"),
    ("off", "'off' is a YAML 1.1 boolean (YAML 1.1 reads it as false)"),
    ("!!bool yes", "'yes' is a YAML 1.1 boolean (YAML 1.1 reads it as true)"),
    ("!!bool maybe", "'maybe' is not a boolean"),  # PyYAML: a KeyError
])
def test_yaml11_booleans_are_refused_naming_file_line_key_and_value(text: str,
                                                                    why: str) -> None:
    with pytest.raises(YamlFileError) as err:
        parse_yaml(f"name: x\nflag: {text}\n", "r.yaml")
    (problem,) = err.value.problems
    assert problem.startswith(f"r.yaml: line 2: flag: {why}; "), problem
    assert "true and false only" in problem and "quote it to mean text" in problem


def test_booleans_are_true_and_false_and_the_rest_of_yaml11_is_text() -> None:
    data = parse_yaml("a: [true, True, TRUE, false, False, FALSE, !!bool true]\n"
                      "b: [2026-12-03, 2026-12-03 10:00:00, 2001-12-14t21:59:43.10-05:00, =]\n"
                      "c: ['yes', \"no\", !!str on, y, n, Off-road]\n2026-12-03: date key\n",
                      "f.yaml")
    assert data["a"] == [True] * 3 + [False] * 3 + [True]
    assert all(type(v) is bool for v in data["a"])
    assert data["b"] == ["2026-12-03", "2026-12-03 10:00:00", "2001-12-14t21:59:43.10-05:00",
                         "="]
    assert data["c"] == ["yes", "no", "on", "y", "n", "Off-road"]
    assert data["2026-12-03"] == "date key"
    with pytest.raises(YamlFileError, match="line 1: the key 'on' is a YAML 1.1 boolean"):
        parse_yaml("on: push\n", "f.yaml")  # YAML 1.1 makes the key True


@pytest.mark.parametrize("tag", ["!!binary aGVsbG8=", "!!timestamp 2026-12-03", "!!set {a}",
                                 "!!omap [a: 1]", "!!pairs [a: 1]", "!mine x",
                                 "!!python/object:os.system x"])
def test_tags_outside_the_core_schema_are_refused(tag: str) -> None:
    with pytest.raises(YamlFileError) as err:
        parse_yaml(f"a:\n  b: {tag}\n", "f.yaml")
    (problem,) = err.value.problems
    shown = tag.split()[0]
    assert problem.startswith(f"f.yaml: line 2: a.b: the tag '{shown}' names a type patchsim "
                              "does not read"), problem


@pytest.mark.parametrize("kind", ["ruleset", "experiment", "override"])
def test_the_boolean_rule_holds_for_every_kind_of_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "f.yaml"
    if kind == "ruleset":
        path.write_text("extends: edition2\nname: no\n")
        with pytest.raises(RulesetError, match="line 2: name: 'no' is a YAML 1.1 boolean"):
            load_ruleset(path)
    elif kind == "experiment":
        path.write_text("base: edition2\nbots: [greedy]\nvariants:\n  - {name: on}\n")
        with pytest.raises(ExperimentError, match=r"variants\[0\].name: 'on' is a YAML 1.1"):
            load_experiment(path)
    else:
        refused(cli("show-ruleset", "edition2", "--set", "starting_buttons=yes"),
                "--set starting_buttons", "'yes' is a YAML 1.1 boolean")


def test_every_refused_number_of_a_file_is_listed_with_its_path() -> None:
    with pytest.raises(YamlFileError) as err:
        parse_yaml("a:\n  - 1\n  - 0x1f\n  - {0x2: b, c: 1:30}\nd: &x 017\ne: *x\n", "f.yaml")
    problems = err.value.problems
    assert [p.split(": ")[1:3] for p in problems] == [
        ["line 3", "a[1]"], ["line 4", "a[2]"], ["line 4", "a[2].c"], ["line 5", "d"]]
    assert "the key '0x2' is a hexadecimal number" in problems[1]


@pytest.mark.parametrize("kind", ["ruleset", "experiment", "run file", "override"])
def test_the_rule_holds_for_every_kind_of_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "f.yaml"
    if kind == "ruleset":
        path.write_text("extends: edition2\nstarting_buttons: 1:30\n")
        with pytest.raises(RulesetError, match="starting_buttons: '1:30' is a base-60"):
            load_ruleset(path)
    elif kind == "experiment":
        path.write_text("base: edition2\nbots: [greedy]\ngames: 0x10\n")
        with pytest.raises(ExperimentError, match="line 3: games: '0x10' is a hexadecimal"):
            load_experiment(path)
    elif kind == "run file":
        path.write_text("ruleset: edition2\nbots: [greedy]\ngames: 1_000\n")
        with pytest.raises(RunError, match="games: '1_000' is a number with '_'"):
            load_run_config(str(path))
    else:
        refused(cli("show-ruleset", "edition2", "--set", "starting_buttons=1:30"),
                "--set starting_buttons", "'1:30' is a base-60 number")


def test_what_patchsim_writes_as_yaml_reads_back_the_same() -> None:
    data = {"name": "1e3", "ids": ["0o17", "1.2.3", "+.5", "1:30", "017", "x"],
            "values": [1e-5, 1e20, math.inf, 3, -0.5, True, False, None],
            "texts": ["yes", "No", "on", "OFF", "true", "2026-12-03", "=", "null", ""]}
    assert parse_yaml(dump_yaml(data, sort_keys=False), "f.yaml") == data


# --------------------------------------------------------------------------------------------
# integers of thousands of digits: YAML above, JSON here


def test_a_huge_integer_in_json_names_where_it_is() -> None:
    with pytest.raises(JsonNumberError) as err:
        parse_json('{"a": [1, {"b": -' + HUGE + "}]}", "body")
    assert str(err.value).startswith("body: a[1].b: '-9999999999999999999...' is an integer")
    assert "an integer of 5,000 digits" in str(err.value) and len(str(err.value)) < 300
    assert parse_json('{"a": [1, 2.5, ' + "9" * MAX_INT_DIGITS + "]}", "body") == {
        "a": [1, 2.5, int("9" * MAX_INT_DIGITS)]}


@pytest.mark.parametrize("where", ["moves", "circle", "rules.starting_buttons", "players"])
def test_a_huge_integer_in_a_game_record_is_a_record_error(tmp_path: Path, where: str) -> None:
    data = dict(SAMPLE, players=["human", "greedy"])
    if where == "rules.starting_buttons":
        data["rules"] = {"extends": "edition2", "starting_buttons": 0}
    text = json.dumps(data).replace('"starting_buttons": 0', '"starting_buttons": ' + HUGE)
    if where != "rules.starting_buttons":
        text = text.replace(f'"{where}": [', f'"{where}": [{HUGE}, ', 1)
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(RecordError) as err:
        GameRecord.load(path)
    assert f"{where}" in str(err.value) and "5,000 digits" in str(err.value)
    assert len(str(err.value)) < 500
    refused(cli("replay", str(path)), "5,000 digits", code=1)


# --------------------------------------------------------------------------------------------
# --bots


@pytest.mark.parametrize("command", [["run", "edition2", "--games", "2"], ["ladder"],
                                     ["compare", "edition1", "edition2"]])
@pytest.mark.parametrize(("value", "fragment"), [
    ("", "--bots '': no bot spec given"), (" ", "--bots ' ': no bot spec given"),
    (";;;", "--bots ';;;': no bot spec given"), ("greedy;", "spec 2 of 2 is empty"),
    ("greedy;;random", "spec 2 of 3 is empty"),
    ("x" * 5000, f"longer than any bot spec ({MAX_SPEC_CHARS:,} characters)")])
def test_an_empty_or_endless_bots_value_is_refused_before_anything_plays(
        tmp_path: Path, command: list[str], value: str, fragment: str) -> None:
    out = tmp_path / "run"
    refused(cli(*command, "--bots", value, "--out", str(out)), fragment)
    assert not out.exists()


def test_an_endless_bot_spec_in_an_experiment_is_quoted_by_a_prefix(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(f"base: edition2\nbots: [greedy, {'x' * 5000}]\n")
    with pytest.raises(ExperimentError) as err:
        load_experiment(path)
    assert "bots[1]: 'xxx" in str(err.value) and "(5,000 characters)" in str(err.value)
    assert len(str(err.value)) < 500


LONG = "x" * 5000


@pytest.mark.parametrize("spec", [
    LONG, {"name": LONG}, {"nam": LONG}, "greedy(w_income=" + LONG + ")",
    "greedy(placement=" + LONG + ")", "greedy(" + LONG[:900] + "=1)",
    "greedy(" + LONG[:900] + ")", "mcts(rollout=" + LONG[:900] + ")",
    "mcts(eval=" + LONG[:900] + ")", LONG[:900] + ":Bot", "greedy(w_income=((" + LONG[:900],
    "mcts(iterations=" + "9" * 900 + ")"])
def test_the_bot_registry_quotes_a_long_spec_or_name_by_a_prefix(spec: object) -> None:
    """Whatever the way in (the library, a file, a page), a bot spec or a value in it of
    thousands of characters is named by its start and its length, never echoed whole."""
    from patchsim.bots.registry import BotSpecError, make_bot

    with pytest.raises(BotSpecError) as err:
        make_bot(spec)  # type: ignore[arg-type]
    text = str(err.value)
    assert len(text) < 600, text[:700]
    assert "characters)" in text or "longer than any bot spec" in text, text


def test_a_forbidden_patch_of_thousands_of_characters_is_named_by_a_prefix() -> None:
    from patchsim.bots.registry import BotSpecError, make_bot
    from patchsim.engine.tables import compile_ruleset

    bot = make_bot("greedy(forbid=" + LONG[:900] + ")")
    with pytest.raises(BotSpecError) as err:
        bot.bind(compile_ruleset(load_ruleset("edition2")))  # type: ignore[attr-defined]
    assert str(err.value).startswith("greedy: forbid='xxx") and len(str(err.value)) < 1000


def test_the_web_app_quotes_long_parameters_and_rulesets_by_a_prefix(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from patchsim.web.app import _int_param, _play_ruleset
    from patchsim.web.paths import inside
    from patchsim.web.runs import WebError

    for value in ("9" * 5000, "z" * 5000):
        with pytest.raises(WebError) as err:
            _int_param(value, "rollouts", 1, 100)
        assert "(5,000 characters)" in str(err.value) and len(str(err.value)) < 500
    for key in ("y" * 5000, "run:" + "y" * 5000):
        with pytest.raises(WebError) as err:
            _play_ruleset(None, key)  # type: ignore[arg-type]  # no run is looked up
        assert "(5,00" in str(err.value) and len(str(err.value)) < 800, key[:20]
    for rel in ("../" * 2000, "a/" * 3000 + ".hidden", "n" * 5000):
        with pytest.raises(WebError) as err:
            inside(tmp_path, rel, "ruleset file")  # a run's file asked for by a page
        assert "characters)" in str(err.value) and len(str(err.value)) < 800, rel[:20]


@pytest.mark.parametrize("command", [["prices", "edition2", "--bots", "greedy", "--patches",
                                      "P19"], ["skill", "edition2"]])
def test_a_study_out_that_cannot_be_a_new_folder_is_one_message(tmp_path: Path,
                                                                command: list[str]) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    for out, fragment in [(str(tmp_path / ("n" * 5000)), "too long for the file system"),
                          (str(tmp_path / "f\0"), "null byte"),
                          (str(tmp_path), "already exists; give a new folder"),
                          (str(tmp_path / "link"), "already exists; give a new folder")]:
        refused(cli(*command, "--jobs", "1", "--out", out), fragment)


# --------------------------------------------------------------------------------------------
# files that are no regular files


def _within(seconds: float, fn: Callable[[], object]) -> BaseException:
    """The exception ``fn`` raises, which must come within ``seconds`` (a read of a named
    pipe without a writer would block for ever)."""
    caught: list[BaseException] = []

    def call() -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            caught.append(e)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked on the file"
    assert caught, "accepted"
    return caught[0]


@pytest.mark.parametrize("kind", ["fifo", "dir", "broken link"])
def test_a_file_that_is_no_regular_file_is_named_for_what_it_is(tmp_path: Path,
                                                                 kind: str) -> None:
    path = tmp_path / "x.yaml"
    if kind == "fifo":
        os.mkfifo(path)
        what = "is a named pipe (FIFO)"
    elif kind == "dir":
        path.mkdir()
        what = "is a directory"
    else:
        path.symlink_to(tmp_path / "gone.yaml")
        what = "no such file (a symbolic link to a missing file)"
    for fn, error in [(lambda: load_ruleset(path), RulesetError),
                      (lambda: load_experiment(path), ExperimentError),
                      (lambda: read_yaml(path), YamlFileError),
                      (lambda: GameRecord.load(path), RecordError)]:
        e = _within(10, fn)
        assert isinstance(e, error) and what in str(e), repr(e)
    table = tmp_path / "t.yaml"
    table.write_text("extends: edition2\npatches: x.yaml\n")
    child = tmp_path / "c.yaml"
    child.write_text("extends: x.yaml\n")
    for ref in (table, child):
        e = _within(10, lambda ref=ref: load_ruleset(ref))  # type: ignore[misc]
        assert isinstance(e, RulesetError) and (what in str(e) or "no such" in str(e)), e


def test_a_device_is_read_only_up_to_the_limit_and_named_as_a_ruleset() -> None:
    with pytest.raises(YamlFileError, match="larger than 1 MB"):
        read_yaml("/dev/zero")
    with pytest.raises(RulesetError, match="/dev/zero: is a character device, not a ruleset"):
        load_ruleset("/dev/zero")


def test_the_one_shortening_of_values() -> None:
    assert quote("abc") == "'abc'"
    long = quote("y" * 5000)
    assert long.endswith("... (5,000 characters)") and len(long) < 100


# --------------------------------------------------------------------------------------------
# request bodies


def test_a_huge_integer_in_a_request_body_is_a_400_naming_where(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from webserver import Server

    from patchsim.web.app import create_app

    served, saved = tmp_path / "served", tmp_path / "saved"
    served.mkdir()
    saved.mkdir()
    bodies = {"/api/record": '{"record": {"rules": "edition2", "circle": [], "moves": [], '
                             '"x": ' + HUGE + "}}",
              "/api/play": '{"ruleset": "edition2", "bot": "random", "seed": ' + HUGE + "}"}
    with Server(create_app([served], saved)) as server:
        for url, body in bodies.items():
            status, _, answer = server.request("POST", url, body.encode(),
                                               {"Content-Type": "application/json"})
            assert status == 400, (status, answer[:300])
            message = json.loads(answer)["error"]
            assert message.startswith("the request body: ") and "5,000 digits" in message
            assert len(message) < 300
