"""A run's configuration from values (make_run_config), and errors that carry their fields
(patchsim.errors), which the command line maps to its flags from a table."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest
from typer.testing import CliRunner

import patchsim.play.simulate as simulate_module
from patchsim.cli.common import FLAGS, HINTS, message
from patchsim.cli.main import app
from patchsim.engine.ruleset import RulesetError, load_ruleset
from patchsim.errors import ARGUMENT, OVERRIDE, PatchsimError, Problem
from patchsim.play.config import (
    DEFAULT_BOTS,
    DEFAULT_BOTS_LEARNED,
    Override,
    RunError,
    default_bots,
    load_run_config,
    make_run_config,
    run_identity,
)

CLI = Path(__file__).resolve().parent.parent / "patchsim" / "cli"


@pytest.fixture
def no_user_models(monkeypatch, tmp_path):
    """Only the shipped models count (a user-trained one would change the default line-up)."""
    monkeypatch.setenv("PATCHSIM_MODEL_DIR", str(tmp_path / "no-models"))


@pytest.fixture(scope="module")
def e2():
    return load_ruleset("edition2")


# --- configuration from values ---------------------------------------------------------------
def test_a_config_from_values_writes_no_file(tmp_path, monkeypatch, e2) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a temporary file would land here
    cfg = make_run_config([e2, load_ruleset("edition1")], ["greedy", {"name": "random"}],
                          games=5, seed=3, overrides={"bonus.points": 9}, name="values")
    assert list(tmp_path.iterdir()) == []
    assert cfg.name == "values" and cfg.deals == 3 and cfg.seed == 3
    assert cfg.bots == ["greedy", "random"] and cfg.pairings == [(0, 0), (0, 1), (1, 1)]
    assert [r.name for r in cfg.rulesets] == ["edition2 (bonus.points=9)",
                                              "edition1 (bonus.points=9)"]
    assert all(r.bonus_points == 9 for r in cfg.rulesets)


def test_a_file_reads_into_the_same_config_as_its_values(tmp_path, e2) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("rulesets: [edition2]\nbots: [greedy, random]\ngames: 4\nseed: 7\n"
                    "set: {starting_buttons: 6}\n", encoding="utf-8")
    from_file = load_run_config(str(path), overrides=["bonus.points=9"])
    from_values = make_run_config(
        [e2], ["greedy", "random"], games=4, seed=7, name="exp", source=str(path),
        overrides=[Override.of("starting_buttons", 6), Override.parse("bonus.points=9")])
    assert from_values.to_dict() == from_file.to_dict()
    assert run_identity(from_values) == run_identity(from_file)
    # a value typed on the command line names the ruleset as typed
    assert from_file.rulesets[0].name == "edition2 (starting_buttons=6, bonus.points=9)"


def test_a_bot_object_is_kept_by_its_spec(e2) -> None:
    from patchsim.bots.registry import make_bot

    cfg = make_run_config([e2], [make_bot("greedy"), "random"], games=2)
    assert cfg.bots == ["greedy", "random"]


def test_the_default_line_up_follows_the_rulesets_models(no_user_models, e2) -> None:
    variant = e2.with_overrides({"starting_buttons": 6})  # no model is trained for it
    assert make_run_config([e2], games=2).bots == DEFAULT_BOTS_LEARNED
    assert make_run_config([variant], games=2).bots == DEFAULT_BOTS
    assert make_run_config([e2, variant], games=2).bots == default_bots([e2, variant])


def test_the_default_learned_line_up_plays_enough_deals_to_decide_its_headline(
        no_user_models, e2) -> None:
    """The main job's size: 600 deals with the default learned line-up (its headline verdict
    is decided at a first-seat rate near 57%), 100 deals otherwise, and always what is asked."""
    from patchsim.play.config import DEFAULT_GAMES, DEFAULT_GAMES_LEARNED

    variant = e2.with_overrides({"starting_buttons": 6})  # no model: the rollout line-up
    assert make_run_config([e2]).deals == DEFAULT_GAMES_LEARNED // 2 == 600
    assert make_run_config([variant]).deals == DEFAULT_GAMES // 2
    assert make_run_config([e2], ["greedy", "random"]).deals == DEFAULT_GAMES // 2
    assert make_run_config([e2], games=10).deals == 5
    assert load_run_config("edition2").deals == 600
    assert load_run_config("edition2", games=4).deals == 2


class _Planned(Exception):
    """Raised in place of playing: the test needs the configuration only."""


def test_simulate_plays_the_line_up_of_the_ruleset_it_is_given(no_user_models, monkeypatch,
                                                               e2) -> None:
    # simulate() once validated its arguments with an edition2 stand-in and so played the
    # learned line-up on a variant that has no model
    def planned(config):
        raise _Planned(config)

    monkeypatch.setattr(simulate_module, "plan_batches", planned)
    variant = e2.with_overrides({"starting_buttons": 6})
    with pytest.raises(_Planned) as got:
        simulate_module.simulate(variant, games=2)
    config = got.value.args[0]
    assert config.bots == DEFAULT_BOTS
    assert config.rulesets == [variant] and config.name == variant.name
    with pytest.raises(_Planned) as got:
        simulate_module.simulate(e2, games=2)
    assert got.value.args[0].bots == DEFAULT_BOTS_LEARNED


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"games": 0}, "games"), ({"seed": -1}, "seed"), ({"pairings": "some"}, "pairings"),
    ({"batch_deals": 0}, "batch_deals"), ({"bots": ["greedy", "greedy"]}, "bots"),
])
def test_a_bad_value_is_a_run_error_about_its_argument(e2, kwargs, key) -> None:
    with pytest.raises(RunError) as info:
        make_run_config([e2], **{"bots": ["greedy"], **kwargs})
    assert info.value.key == key
    assert info.value.problems[0].given == ARGUMENT
    assert str(info.value).startswith(f"{key}: ")


def test_the_same_rules_twice_are_refused(e2) -> None:
    with pytest.raises(RunError, match=r"rulesets\[1\]: \(edition2\) has the same rules"):
        make_run_config([e2, load_ruleset("edition2")], ["greedy"])


# --- errors with fields -------------------------------------------------------------------------
def test_an_override_problem_carries_its_key_and_value(e2) -> None:
    with pytest.raises(RulesetError) as info:
        e2.with_overrides({"bonus.points": -1})
    (problem,) = info.value.problems
    assert isinstance(problem, Problem) and isinstance(info.value, PatchsimError)
    assert (problem.given, problem.key) == (OVERRIDE, "bonus.points")
    assert problem == "override bonus.points: must be at least 0, got -1"
    assert "--" not in str(info.value)  # the library names no flag
    assert "--set bonus.points: must be at least 0" in info.value.render(FLAGS)


def test_errors_keep_their_fields_across_processes(e2) -> None:
    error = RunError.wrapping(RulesetError([Problem("must be at least 0", key="bonus.points",
                                                    value=-1, given=OVERRIDE)], "edition2"),
                              "run.yaml: ")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is RunError and str(back) == str(error)
    assert (back.key, back.value, back.problems[0].given) == ("bonus.points", -1, OVERRIDE)
    assert back.render(FLAGS) == error.render(FLAGS)


@pytest.mark.parametrize("key", sorted(FLAGS))
def test_the_cli_names_each_mapped_key_by_its_flag(key: str) -> None:
    if key == OVERRIDE:
        error = RunError(Problem("must be at least 0, got -1", key="bonus.points",
                                 given=OVERRIDE))
        assert str(error) == "override bonus.points: must be at least 0, got -1"
        assert message(error) == f"{FLAGS[key]} bonus.points: must be at least 0, got -1"
    else:
        error = RunError.about(key, "is wrong here", value=1)
        assert str(error) == f"{key}: is wrong here"
        assert message(error) == f"{FLAGS[key]}: is wrong here"


def test_the_cli_gives_its_own_hint_for_a_time_budget(e2) -> None:
    with pytest.raises(RunError) as info:
        make_run_config([e2], ["greedy", "mcts(iterations=10, time_ms=5)"])
    assert info.value.key == "time_ms" and "allow_time_budgets=True" in str(info.value)
    assert "--" not in str(info.value)
    assert HINTS["time_ms"] in message(info.value)


@pytest.mark.parametrize(("args", "fragment"), [
    (["run", "edition2", "--set", "bonus.points=-1"], "--set bonus.points: must be at least 0"),
    (["run", "edition2", "--games", "0"], "--games: must be at least 1, got 0"),
    (["run", "edition2", "--bots", "greedy;greedy"], "--bots: the same bot is listed twice"),
    (["run", "edition2", "--bots", "greedy", "--backend", "dask"], "--scheduler: the dask"),
])
def test_the_command_line_shows_its_flags(tmp_path, args, fragment) -> None:
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run"), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert fragment in result.output


def test_the_cli_maps_flags_from_fields_not_by_rewriting_text() -> None:
    # the command line once turned "override KEY" into "--set KEY" with a regular expression
    for path in sorted(CLI.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "sub" \
                    and isinstance(node.value, ast.Name) and node.value.id == "re":
                pytest.fail(f"{path.name}:{node.lineno} rewrites a message with re.sub")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.startswith("override "):
                pytest.fail(f"{path.name}:{node.lineno} parses the library's words")


def test_a_value_of_a_file_is_named_by_file_and_key_not_by_a_flag(tmp_path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("rulesets: [edition2]\nbots: [greedy]\ngames: 0\npairings: some\n",
                    encoding="utf-8")
    with pytest.raises(RunError) as info:
        load_run_config(str(path), games=2)  # the argument wins over the file's games
    assert (info.value.source, info.value.key) == (str(path), "pairings")
    with pytest.raises(RunError) as info:
        load_run_config(str(path), pairings="all")
    assert (info.value.source, info.value.key) == (str(path), "games")
    assert message(info.value) == f"{path}: games: must be at least 1, got 0"  # no --games


def test_a_bad_set_of_a_file_is_blamed_on_the_file_and_an_option_on_its_flag(tmp_path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("rulesets: [edition2]\nbots: [greedy]\nset: {bonus.points: -1}\n",
                    encoding="utf-8")
    with pytest.raises(RunError) as info:
        load_run_config(str(path))
    assert (info.value.source, info.value.key) == (str(path), "set.bonus.points")
    shown = message(info.value)
    assert f"{path}: set.bonus.points: must be at least 0, got -1" in shown
    assert "--set" not in shown
    # given on the command line too, the later value is the one that counts: the option's
    with pytest.raises(RunError) as info:
        load_run_config(str(path), overrides=["bonus.points=-2"])
    assert "--set bonus.points: must be at least 0, got -2" in message(info.value)


def test_a_ruleset_must_be_a_value(e2) -> None:
    with pytest.raises(RunError) as info:
        make_run_config([e2, "edition1"], ["greedy"])  # type: ignore[list-item]
    assert info.value.key == "rulesets[1]" and "expected a Ruleset, got str" in str(info.value)


def test_a_bad_position_text_names_its_field() -> None:
    from patchsim.engine.game import Game
    from patchsim.engine.notation import PositionTextError

    text = Game.new("edition2", seed=1).to_text().replace("top=0", "top=7")
    with pytest.raises(PositionTextError) as info:
        Game.from_text(text, "edition2")
    assert isinstance(info.value, ValueError) and isinstance(info.value, PatchsimError)
    assert (info.value.key, info.value.value) == ("top", "7")
    assert str(info.value) == "position text: top='7': expected one of 0, 1"
