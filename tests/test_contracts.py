"""The bot and ruleset contracts as library functions (check_bot, check_ruleset): every
registered bot and every shipped ruleset keeps its contract, and broken ones are reported
clearly (which check, which ruleset, seed, seat and move, with a record that replays to the
problem). Also: the names behind the compiled dispatch and the table layout, and import-path
bots loaded without touching sys.path."""

from __future__ import annotations

import dataclasses
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from strategies import ruleset_dicts

from patchsim.bots import policies
from patchsim.bots.contract import check_bot
from patchsim.bots.registry import REGISTRY, make_bot
from patchsim.engine import core
from patchsim.engine.contract import ContractError, ContractReport, check_ruleset
from patchsim.engine.game import Game, Move, MoveList
from patchsim.engine.record import GameRecord, final_position
from patchsim.engine.ruleset import RulesetError, load_ruleset, ruleset_from_dict, shipped_rulesets

PACKAGE = Path(__file__).resolve().parent.parent / "patchsim"


def quick_spec(name: str) -> str:
    """A registered bot, quick enough for the fast subset (the search with few iterations)."""
    return "mcts(iterations=20)" if name == "mcts" else name


# --- every registered bot, every shipped ruleset ------------------------------------------
@pytest.mark.parametrize("spec", [quick_spec(n) for n in REGISTRY]
                         + ["mcts(eval=learned, iterations=20)", "custom_bots:Hoarder"])
def test_every_registered_bot_keeps_the_contract(spec: str) -> None:
    report = check_bot(spec, games=1)
    assert report.ok, str(report)
    assert report.games == 4  # one deal, both seats, each played twice
    assert "keeps its contract" in str(report)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_registered_bot_keeps_the_contract_on_every_shipped_ruleset(name: str) -> None:
    report = check_bot(quick_spec(name), rulesets=shipped_rulesets(), games=2)
    assert report.ok, str(report)


@pytest.mark.parametrize("name", shipped_rulesets())
def test_every_shipped_ruleset_keeps_the_contract(name: str) -> None:
    report = check_ruleset(name, games=2)
    assert report.ok, str(report)
    assert report.games == 2
    report.raise_for_problems()  # nothing to raise


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=ruleset_dicts())
def test_random_valid_rulesets_keep_the_contract_with_the_scripted_bot(data: dict) -> None:
    rs = ruleset_from_dict(data)
    report = check_ruleset(rs, games=1)
    assert report.ok, str(report)
    report = check_bot("greedy(epsilon=0.2)", rulesets=[rs], games=1)
    assert report.ok, str(report)


# --- broken bots ----------------------------------------------------------------------------
class GlobalRandom:
    """Draws from NumPy's global generator instead of the rng it is given."""

    spec = "GlobalRandom"

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        return moves[int(np.random.randint(len(moves)))]


def assert_replays_to_the_problem(report: ContractReport, seat: int) -> None:
    """The problem's record replays to the position where the bot failed, its turn."""
    record = report.problems[0].record
    assert record is not None
    game = final_position(GameRecord.from_dict(record))
    assert not game.finished and game.to_move == seat


@pytest.mark.parametrize(("spec", "check", "fragments"), [
    ("custom_bots:Raiser(at=5)", "legal moves", ["raised RuntimeError: the bot broke down"]),
    ("custom_bots:Illegal(at=3)", "legal moves",
     ["chose an illegal move (not one of the legal moves)"]),
    ("custom_bots:IllegalCode(at=3)", "legal moves",
     ["chose an illegal move (no leather patch is waiting to be placed)"]),
    ("unruly_bots:Huge(at=2)", "legal moves", ["returned 1180591620717411303424, which is "
                                               "not a move code"]),
    ("unruly_bots:Interrupter(at=2)", "legal moves", ["raised KeyboardInterrupt"]),
    ("unruly_bots:Exiter(at=2)", "legal moves", ["raised SystemExit: 3"]),
])
def test_a_broken_bot_is_reported_with_where_and_a_record(spec: str, check: str,
                                                          fragments: list[str]) -> None:
    report = check_bot(spec)
    assert not report.ok and len(report.problems) == 1
    problem = report.problems[0]
    assert problem.check == check
    assert re.search(r"ruleset 'edition2', seed 0, seat 0, move \d+: it ", problem.message)
    for fragment in fragments:
        assert fragment in problem.message
    assert f"bot {spec!r} breaks its contract" in str(report)
    assert_replays_to_the_problem(report, 0)
    with pytest.raises(ContractError) as info:
        report.raise_for_problems()
    assert isinstance(info.value, ValueError) and info.value.report is report
    assert fragments[0] in str(info.value)
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == str(info.value)


def test_a_bot_that_hangs_is_given_up_on_after_the_time_limit() -> None:
    report = check_bot("unruly_bots:Sleeper(at=1)", move_seconds=0.2)
    assert [p.check for p in report.problems] == ["time per move"]
    assert "move 1: it took longer than 0.2 s to choose a move" in report.problems[0].message


def test_a_slow_compiled_bot_is_reported_after_its_move() -> None:
    report = check_bot("mcts(iterations=20)", move_seconds=0.0)
    assert [p.check for p in report.problems] == ["time per move"]
    assert "move 1: it took" in report.problems[0].message
    assert "(the limit is 0 s)" in report.problems[0].message


def test_a_bot_that_ignores_its_rng_is_not_reproducible() -> None:
    report = check_bot(GlobalRandom())
    assert [p.check for p in report.problems] == ["reproducible"]
    message = report.problems[0].message
    assert "the same deal and seed gave another game from move" in message
    assert "rng it is given" in message
    record = report.problems[0].record
    assert record is not None
    final_position(GameRecord.from_dict(record))  # the moves both games shared


@pytest.mark.parametrize(("spec", "fragment"), [
    ("gredy", "unknown bot 'gredy' (did you mean 'greedy'?)"),
    ("no_such_module_xyz:Bot", "cannot import bot module 'no_such_module_xyz'"),
    ("greedy(epsilon=2)", "epsilon=2.0 must be between 0 and 1"),
])
def test_a_spec_that_makes_no_bot_is_reported(spec: str, fragment: str) -> None:
    report = check_bot(spec)
    assert [p.check for p in report.problems] == ["spec"]
    assert fragment in report.problems[0].message and report.games == 0


def test_a_broken_opponent_stops_the_check_and_is_named() -> None:
    report = check_bot("greedy", opponent="custom_bots:Raiser(at=2)")
    assert [p.check for p in report.problems] == ["opponent 'custom_bots:Raiser(at=2)'"]
    assert "seat 1, move " in report.problems[0].message


def test_a_learned_bot_without_a_model_is_reported(tmp_path: Path) -> None:
    report = check_bot(f"mcts(eval=learned, iterations=5, models={tmp_path}, model=user)")
    assert not report.ok
    assert "ruleset 'edition2'" in report.problems[0].message


# --- broken rulesets ------------------------------------------------------------------------
def test_a_ruleset_built_with_impossible_values_is_reported() -> None:
    rs = dataclasses.replace(load_ruleset("edition2"), starting_buttons=-5, name="broke")
    report = check_ruleset(rs)
    assert [p.check for p in report.problems] == ["validation"]
    assert "starting_buttons: must be at least 0, got -5" in report.problems[0].message
    assert "ruleset 'broke' breaks its contract" in str(report)
    with pytest.raises(ContractError, match="starting_buttons"):
        report.raise_for_problems()


def test_a_ruleset_whose_patch_fits_nowhere_is_reported() -> None:
    rs = load_ruleset("edition2")
    huge = dataclasses.replace(rs.patches[1], shape="X" * 10, cells=(), size=0)
    broken = dataclasses.replace(rs, patches=(rs.patches[0], huge, *rs.patches[2:]))
    report = check_ruleset(broken)
    assert not report.ok
    assert "does not fit on the 9x9 quilt" in report.problems[0].message


def test_an_engine_that_breaks_an_invariant_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The game checks catch what the engine gets wrong: here a listed pass refused."""
    real = Game.illegal_reason

    def refuse_passing(self: Game, move: Move | int | str) -> str | None:
        if move == core.PASS and self.ply >= 3:
            return "no passing today"
        return real(self, move)

    monkeypatch.setattr(Game, "illegal_reason", refuse_passing)
    report = check_ruleset("edition2", seed=5)
    assert [p.check for p in report.problems] == ["invariants"]
    message = report.problems[0].message
    assert message.startswith("random game with seed 5, move ")
    assert "the listed move pass is refused as illegal (no passing today)" in message
    monkeypatch.setattr(Game, "illegal_reason", real)
    record = report.problems[0].record
    assert record is not None and len(record["moves"]) >= 3
    final_position(GameRecord.from_dict(record))


def test_a_ruleset_file_that_does_not_load_raises_as_loading_does(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("extends: edition2\nstarting_buttons: -1\n")
    with pytest.raises(RulesetError, match="starting_buttons"):
        check_ruleset(str(path))


# --- names, not numbers ---------------------------------------------------------------------
def test_policy_ids_are_distinct() -> None:
    ids = [policies.RANDOM, policies.ALWAYS_PASS, policies.FIRST_FIT, policies.SCRIPTED,
           policies.MCTS, policies.LEARNED]
    assert len(set(ids)) == len(ids)
    assert {make_bot(quick_spec(n)).kind for n in REGISTRY} <= set(ids)


# modules that still read the table by its raw layout (another helper converts them)
RAW_LAYOUT_PENDING: set[str] = set()
RAW_READ = re.compile(r"tab\[[^\]]*\bO_[A-Z_]+\]")


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py")
                                        if p.parent.name != "engine"),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_engine_reads_the_raw_table_layout(path: Path) -> None:
    """Above the engine, the compiled table is read through core's named reads
    (``core.patch_cost(tab, i)``), not by its offsets (``tab[tab[core.O_COST] + i]``)."""
    where = str(path.relative_to(PACKAGE))
    found = [n for n, line in enumerate(path.read_text().splitlines(), 1)
             if RAW_READ.search(line)]
    if where in RAW_LAYOUT_PENDING:
        return
    assert not found, f"{where}: lines {found} read the table layout; use core's named reads"


def test_no_magic_policy_numbers_in_the_runner() -> None:
    for name in ("worker.py", "batches.py", "loops.py", "match.py", "evaluate.py"):
        text = (PACKAGE / "play" / name).read_text()
        assert not re.search(r"kind\b[^=\n]*== \d", text), name
        assert "(2, 32)" not in text, name


# --- import-path bots without sys.path ------------------------------------------------------
def test_bot_module_is_imported_from_bot_path_without_touching_sys_path(tmp_path: Path) -> None:
    (tmp_path / "contract_bots_here.py").write_text(
        "import sys\nSEEN = list(sys.path)\n"
        "class Passer:\n    spec = 'contract_bots_here:Passer'\n"
        "    def choose(self, game, moves, rng):\n        return moves[0]\n")
    package = tmp_path / "contract_pkg_here"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "bots.py").write_text(
        "from contract_pkg_here import helper\n"
        "class First:\n    def choose(self, game, moves, rng):\n"
        "        return moves[helper.INDEX]\n")
    (package / "helper.py").write_text("INDEX = 0\n")
    before = list(sys.path)
    try:
        bot = make_bot("contract_bots_here:Passer", bot_path=[str(tmp_path)])
        assert bot.spec == "contract_bots_here:Passer"
        module = sys.modules["contract_bots_here"]
        assert str(tmp_path) not in module.SEEN  # not even while it was imported
        first = make_bot("contract_pkg_here.bots:First", bot_path=[str(tmp_path)])
        assert first.spec == "contract_pkg_here.bots:First"
        assert check_bot(first, games=1).ok
        assert sys.path == before
    finally:
        for name in ("contract_bots_here", "contract_pkg_here", "contract_pkg_here.bots",
                     "contract_pkg_here.helper"):
            sys.modules.pop(name, None)
