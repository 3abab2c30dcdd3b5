"""Every input is bounded and every mistake gets a clear message (issue 22): YAML alias bombs,
deep nesting, huge or endless files, NUL characters, huge values quoted in full, arguments
that make a check meaningless, and messages that name the wrong source or flag."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.engine.game import Game
from patchsim.engine.record import MAX_RECORD_BYTES, GameRecord, RecordError, final_position
from patchsim.engine.ruleset import RulesetError, load_ruleset, ruleset_from_dict
from patchsim.engine.yamlfile import (
    MAX_YAML_BYTES,
    MAX_YAML_VALUES,
    YamlFileError,
    parse_yaml,
    read_yaml,
)
from patchsim.experiments.experiment import ExperimentError, load_experiment
from patchsim.play.config import RunError, load_run_config

# nine levels of nine aliases each: 9**9 (387 million) values in 10 lines
BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
BASE = {"name": "t", "base": "edition2", "bots": ["greedy"], "games": 20, "seed": 5}


def write(path: Path, data: dict | str) -> Path:
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def experiment_problems(tmp_path: Path, data: dict | str) -> str:
    with pytest.raises(ExperimentError) as err:
        load_experiment(write(tmp_path / "exp.yaml", data))
    return str(err.value)


def cli(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, list(args), input=stdin)


def assert_clean_failure(result, *fragments: str, code: int = 2) -> str:
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    return result.stderr


# --------------------------------------------------------------------------------------------
# YAML: one bounded loader


@pytest.mark.parametrize("where", ["grid: {bonus.points: *a8}\n", "bots: *a8\n",
                                   "variants: *a8\n"])
def test_an_alias_bomb_in_a_sweep_file_is_refused_at_once(tmp_path: Path, where: str) -> None:
    t0 = time.process_time()
    text = experiment_problems(tmp_path, "base: edition2\n" + BOMB + where)
    assert f"more than {MAX_YAML_VALUES:,} values once its aliases" in text
    assert time.process_time() - t0 < 10  # it used to grow to 2 GB without end


def test_aliases_that_stay_small_still_work() -> None:
    data = parse_yaml("a: &a [1, 2]\nb: [*a, *a]\nc: {<<: {d: 1}, e: 2}\n", "f.yaml")
    assert data == {"a": [1, 2], "b": [[1, 2], [1, 2]], "c": {"d": 1, "e": 2}}


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(YamlFileError, match="line 1, column 4: the value contains itself"):
        parse_yaml("x: &x [1, *x]\n", "f.yaml")


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "a:\n" + "".join(
    " " * i + f"k{i}:\n" for i in range(1, 200)) + " " * 200 + "v: 1\n"])
def test_deep_nesting_is_a_yaml_error_not_a_recursion_error(text: str) -> None:
    with pytest.raises(YamlFileError, match="nested more than 40 levels deep"):
        parse_yaml(text, "f.yaml")


def test_a_nul_character_in_yaml_text_names_the_position() -> None:
    with pytest.raises(YamlFileError) as err:
        parse_yaml("name: a\x00b\n", "r.yaml")
    assert str(err.value) == ("r.yaml: character 8: the control character #x0000 is not "
                              "allowed in YAML text")


def test_files_are_read_only_up_to_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_YAML_BYTES + "\n", encoding="utf-8")
    for path in (big, Path("/dev/zero")):
        t0 = time.process_time()
        with pytest.raises(YamlFileError, match="larger than 1 MB, the limit for a YAML file"):
            read_yaml(path)
        assert time.process_time() - t0 < 5
    with pytest.raises(RulesetError, match="larger than 1 MB"):
        load_ruleset(big)


def test_ruleset_names_that_are_no_file_names_get_a_message() -> None:
    for ref, fragment in [("edition2\x00", "'edition2\\x00': not a usable file name"),
                          ("x" * 5000, "(5,000 characters): not a usable file name")]:
        with pytest.raises(RulesetError) as err:
            load_ruleset(ref)
        assert fragment in str(err.value)
        assert len(str(err.value)) < 1000
    with pytest.raises(YamlFileError, match="not a usable file name"):
        read_yaml("a\x00b.yaml")


# --------------------------------------------------------------------------------------------
# rulesets


def test_a_ruleset_name_must_be_printable_and_short() -> None:
    rs = load_ruleset("edition2")
    for name in ("a\x00b", "x" * 1000):
        with pytest.raises(RulesetError, match="name: expected at most 100 printable"):
            rs.with_overrides({"name": name})


def test_an_override_that_makes_a_file_section_invalid_is_blamed_on_the_override() -> None:
    rs = load_ruleset("variants/quilt11")  # 11 columns: 12 rows make 132 squares
    with pytest.raises(RulesetError) as err:
        rs.with_overrides({"board.rows": 12})
    assert err.value.problems == ["override board.rows: a 12x11 quilt has 132 squares, more "
                                  "than 128: the engine stores a quilt in 128 bits"]
    result = cli("show-ruleset", "variants/quilt11", "--set", "board.rows=12")
    assert_clean_failure(result, "--set board.rows: a 12x11 quilt")
    assert "quilt11.yaml" not in result.stderr


def test_a_huge_value_is_quoted_by_a_short_prefix() -> None:
    rs = load_ruleset("edition2")
    with pytest.raises(RulesetError) as err:
        rs.with_overrides({"start_after": "P" * 3_000_000})
    assert "(3,000,000 characters)" in str(err.value) and len(str(err.value)) < 500


# --------------------------------------------------------------------------------------------
# game records and replay


def test_replay_of_an_endless_file_stops_at_the_limit() -> None:
    t0 = time.process_time()
    result = cli("replay", "/dev/zero")
    assert_clean_failure(result, "/dev/zero: larger than 4 MB, the limit for a game record",
                         code=1)
    assert time.process_time() - t0 < 10


def test_replay_of_standard_input_is_bounded() -> None:
    result = cli("replay", "-", stdin=" " * (MAX_RECORD_BYTES + 10))
    assert_clean_failure(result, f"longer than {MAX_RECORD_BYTES:,} characters", code=1)


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, json.dumps(
    {"rules": {"a": _nested(45)}, "circle": [], "moves": []})])
def test_a_deeply_nested_record_is_a_record_error(text: str) -> None:
    with pytest.raises(RecordError, match="nested more than 40 levels deep"):
        GameRecord.from_json(text)


def test_a_huge_move_is_quoted_by_a_short_prefix() -> None:
    circle = list(Game.new(load_ruleset("edition2"), seed=1).circle)
    with pytest.raises(RecordError) as err:
        GameRecord.from_dict({"rules": "edition2", "circle": circle,
                              "moves": ["pass", "x" * 3_000_000]})
    assert err.value.move_number == 2
    assert "(3,000,000 characters)" in str(err.value) and len(str(err.value)) < 500
    record = GameRecord.from_dict({"rules": "edition2", "circle": circle,
                                   "moves": ["buy P01 " + "a1 " * 300]})
    with pytest.raises(RecordError) as err:
        final_position(record)  # the move parser's own message quotes the move
    assert err.value.move_number == 1 and len(str(err.value)) < 500


def test_a_huge_rules_string_is_a_record_error() -> None:
    record = GameRecord.from_dict({"rules": "x" * 100_000 + ".yaml", "circle": [],
                                   "moves": []}, "/tmp/r.json")
    with pytest.raises(RecordError) as err:
        record.start()
    assert "not a usable file name" in str(err.value) and len(str(err.value)) < 500


# --------------------------------------------------------------------------------------------
# experiments: checks that cannot fail, duplicates, sizes


@pytest.mark.parametrize(("tolerance", "fragment"), [
    ({"metric": "first_player_win", "target": 0.5, "margin": 0.7},
     "target +- margin gives [-0.2, 1.2] leaves the range of the metric"),
    ({"metric": "first_player_win", "min": -0.1, "max": 0.6}, "leaves the range"),
    ({"metric": "first_player_win", "min": 0}, "covers every value"),
    ({"metric": "first_player_win", "min": 0.0, "max": 1.0}, "covers every value"),
    ({"metric": "first_player_edge", "max": 0.7}, "leaves the range"),
    ({"metric": "bonus_rate", "min": 1.0}, "cannot hold"),
    ({"metric": "score_margin", "min": -3}, "leaves the range"),
])
def test_a_tolerance_must_lie_in_the_metric_s_range(tmp_path: Path, tolerance: dict,
                                                     fragment: str) -> None:
    text = experiment_problems(tmp_path, {**BASE, "check": {"tolerances": [tolerance]}})
    assert "check.tolerances[0]: " in text and fragment in text


def test_tolerances_inside_the_range_are_accepted(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "exp.yaml", {**BASE, "check": {"tolerances": [
        {"metric": "first_player_win", "target": 0.5, "margin": 0.03},
        {"metric": "mean_score", "min": -10}]}}))
    assert len(exp.tolerances) == 2


def test_the_check_command_refuses_a_gate_that_cannot_fail(tmp_path: Path) -> None:
    path = write(tmp_path / "exp.yaml", {**BASE, "check": {"tolerances": [
        {"metric": "first_player_win", "target": 0.5, "margin": 0.7}]}})
    assert_clean_failure(cli("check", str(path)), "leaves the range", code=3)


def test_the_primary_margin_must_be_below_half_the_range(tmp_path: Path) -> None:
    text = experiment_problems(tmp_path, {**BASE, "margin": 0.7})
    assert "margin: must be below 0.5, half the range of first_player_win [0, 1]" in text


def test_a_tune_target_outside_the_metric_s_range_is_refused(tmp_path: Path) -> None:
    text = experiment_problems(tmp_path, {**BASE, "tune": {
        "fields": {"starting_buttons": [5, 6]},
        "targets": {"first_player_win": {"target": 1.5, "tolerance": 0.1}}}})
    assert "tune.targets.first_player_win.target: 1.5 is outside the range" in text


def test_two_identical_variants_are_refused_naming_both(tmp_path: Path) -> None:
    text = experiment_problems(tmp_path, {**BASE, "variants": [
        {"name": "a", "set": {"starting_buttons": 6}},
        {"name": "b", "set": {"starting_buttons": 6}}]})
    assert "variants[1]: the same rules as variants[0]" in text
    text = experiment_problems(tmp_path, {**BASE, "variants": [
        {"name": "same", "set": {"starting_buttons": 5}}]})  # edition2 starts with 5
    assert "variants[0]: the same rules as the base ruleset" in text


def test_a_value_listed_twice_in_a_grid_is_refused(tmp_path: Path) -> None:
    text = experiment_problems(tmp_path, {**BASE, "grid": {"bonus.points": [5, 9, 5]}})
    assert "grid.bonus.points[2]: 5 is listed twice (also grid.bonus.points[0])" in text


def test_the_same_ruleset_twice_in_a_run_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "run.yaml", {"rulesets": ["edition2", "edition1", "edition2"],
                                         "bots": ["greedy"], "games": 2})
    with pytest.raises(RunError) as err:
        load_run_config(str(path))
    assert "rulesets[2] (edition2) has the same rules as rulesets[0] (edition2" in str(err.value)


@pytest.mark.parametrize(("data", "fragment"), [
    ({"grid": {"starting_buttons": list(range(40)), "bonus.points": list(range(40))}},
     "grid: 1,600 grid points, more than 1000 variants"),
    ({"sample": {"n": 10**9, "fields": {"starting_buttons": [5, 6]}}},
     "sample.n: expected a whole number from 1 to 1000"),
    ({"bots": [f"mcts(iterations={i})" for i in range(1, 60)]}, "bots: at most 50 bots"),
    ({"name": "a\x00b"}, "name: expected at most 100 printable characters"),
    ({"variants": [{"name": "x" * 200, "set": {"starting_buttons": 6}}]},
     "variants[0].name: expected at most 100 printable characters"),
    ({"tune": {"fields": {"starting_buttons": [5, 6]}, "rounds": 64,
               "targets": {"first_player_win": {"target": 0.5, "tolerance": 0.02}}}},
     "tune.rounds: expected a whole number from 1 to 30"),
])
def test_experiment_sizes_are_bounded(tmp_path: Path, data: dict, fragment: str) -> None:
    assert fragment in experiment_problems(tmp_path, {**BASE, **data})


def test_sweep_with_zero_games_is_refused(tmp_path: Path) -> None:
    from patchsim.experiments.sweep import run_sweep

    path = write(tmp_path / "exp.yaml", {**BASE, "variants": [
        {"name": "a", "set": {"starting_buttons": 6}}]})
    with pytest.raises(RunError, match="games: give from 1"):
        run_sweep(load_experiment(path), tmp_path / "out", games=0)
    assert not (tmp_path / "out").exists()
    assert_clean_failure(cli("sweep", str(path), "--games", "0", "--out",
                             str(tmp_path / "out")), "--games: give from 1")


# --------------------------------------------------------------------------------------------
# command-line arguments


@pytest.mark.parametrize(("args", "fragment"), [
    (["--generations", "0"], "--generations: give a whole number from 1"),
    (["--generations", "-3"], "--generations: give a whole number from 1"),
    (["--minutes", "nan"], "--minutes: give a time budget above 0"),
    (["--minutes", "0"], "--minutes: give a time budget above 0"),
    (["--seed", "-1"], "--seed: give a whole number from 0"),
])
def test_train_checks_its_arguments(args: list[str], fragment: str) -> None:
    result = cli("train", "edition2", "--no-progress", *args)
    assert_clean_failure(result, fragment)
    assert "train: edition2" not in result.stdout  # refused before anything starts


def test_train_into_a_models_folder_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "models"
    blocker.write_text("not a folder", encoding="utf-8")
    result = cli("train", "edition2", "--generations", "1", "--no-progress", "--models",
                 str(blocker))
    assert_clean_failure(result, f"--models: cannot create a model folder in {blocker}")


@pytest.mark.parametrize("command", [["train", "edition2", "--generations", "1"],
                                     ["compare", "edition1", "edition2"],
                                     ["ladder", "--bots", "greedy;income"]])
def test_too_many_jobs_does_not_suggest_a_backend_the_command_lacks(tmp_path: Path,
                                                                     monkeypatch,
                                                                     command: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli(*command, "--jobs", "999")
    assert_clean_failure(result, "--jobs 999: this machine has")
    assert "--backend" not in result.stderr
    assert not (tmp_path / "reports").exists()  # refused before a run folder is made


def test_prices_refuses_an_empty_patch_list() -> None:
    assert_clean_failure(cli("prices", "edition2", "--bots", "greedy", "--patches", ","),
                         "--patches ',': no patch id given")


def test_prices_names_the_deltas_flag() -> None:
    result = cli("prices", "edition2", "--bots", "greedy", "--deltas=1000000000000")
    assert_clean_failure(result, "--deltas: 1000000000000 moves a cost beyond")
    assert "--set" not in result.stderr


def test_prices_and_ladder_find_bots_in_the_working_folder(tmp_path: Path,
                                                           monkeypatch) -> None:
    (tmp_path / "my_cwd_bots_x1.py").write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    # the module is imported (from the working folder), and then has no such bot
    for args in (["prices", "edition2", "--bots", "my_cwd_bots_x1:Nope"],
                 ["ladder", "--bots", "my_cwd_bots_x1:Nope;greedy"]):
        assert_clean_failure(cli(*args), "module 'my_cwd_bots_x1' has no attribute 'Nope'")


def test_prices_has_no_progress(tmp_path: Path) -> None:
    out = tmp_path / "p"
    result = cli("prices", "edition2", "--bots", "greedy", "--patches", "P19", "--games", "2",
                 "--deltas=0", "--jobs", "1", "--no-progress", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "[1/1]" not in result.stdout and (out / "prices.csv").exists()


def test_until_decided_is_named_as_its_flag(tmp_path: Path) -> None:
    result = cli("run", "edition2", "--bots", "greedy", "--until-decided", "-0.02", "--out",
                 str(tmp_path / "r"), "--no-progress")
    assert_clean_failure(result, "--until-decided: give a margin between 0 and 0.5 (0.01: 1 "
                                 "point), got -0.02")
    assert "decide_margin" not in result.stderr


def test_a_small_ruleset_dict_error_is_one_clear_list() -> None:
    # sanity for the fuzz test's expectation: errors are the project's types with short text
    with pytest.raises(RulesetError) as err:
        ruleset_from_dict({"name": "x", "offer_size": "x" * 10_000})
    assert len(str(err.value)) < 3000


def test_a_large_broken_ruleset_is_rejected_quickly_with_a_short_message(tmp_path: Path) -> None:
    # every one of 20,000 unknown keys used to rescan every key's provenance (quadratic: a
    # 50 MB file took 7 minutes); the message lists the first problems and counts the rest
    data = {"extends": "edition2", **{f"unknown_key_{i}": i for i in range(20_000)}}
    path = write(tmp_path / "big.yaml", data)
    t0 = time.process_time()
    with pytest.raises(RulesetError) as err:
        load_ruleset(path)
    assert time.process_time() - t0 < 20
    assert len(err.value.problems) == 20_000
    text = str(err.value)
    assert text.endswith("  ... and 19,970 more") and len(text) < 10_000


def test_a_run_file_s_bots_and_rulesets_are_bounded(tmp_path: Path) -> None:
    for data, fragment in [
            ({"rulesets": ["edition2"], "bots": [f"mcts(iterations={i})" for i in range(1, 60)]},
             "bots: at most 50 bots in one run, got 59"),
            ({"rulesets": ["edition2"] * 1001, "bots": ["greedy"]},
             "rulesets: at most 1000 rulesets, got 1,001")]:
        path = write(tmp_path / "run.yaml", {**data, "games": 2})
        with pytest.raises(RunError, match=fragment):
            load_run_config(str(path))


def test_file_values_that_only_an_overridden_quilt_breaks_are_led_by_the_override() -> None:
    rs = load_ruleset("edition2")
    with pytest.raises(RulesetError) as err:
        rs.with_overrides({"board.rows": 2})
    problems = err.value.problems
    assert problems[0].startswith("override board.rows: ")
    assert problems[0].endswith("bonus.square: must be between 1 and 2 (the shorter side of "
                                "the 2x9 quilt), got 7")
    assert all(p.startswith("override board.rows: ") for p in problems)
    result = cli("show-ruleset", "edition2", "--set", "board.rows=2")
    assert_clean_failure(result, "\n  --set board.rows: ")


def test_a_nul_in_a_ruleset_description_is_named() -> None:
    with pytest.raises(RulesetError, match="description: contains a NUL character"):
        load_ruleset("edition2").with_overrides({"description": "a\x00b"})
