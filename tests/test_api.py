"""The in-memory Python API: ``patchsim.simulate`` gives exactly the tables of a run (any
number of workers), ``Simulation.write`` the same run folder; the package exports; named
illegal-move reasons."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import patchsim
from patchsim.engine import core
from patchsim.engine.game import Game, IllegalMoveError, IllegalReason, Move, decode_move
from patchsim.engine.ruleset import load_ruleset
from patchsim.play.config import RunError, load_run_config
from patchsim.play.execution import execute
from patchsim.play.runfolder import read_manifest

BOTS = ["greedy", "random"]
GAMES, SEED = 40, 3


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference: the same games played and stored by the runner."""
    d = tmp_path_factory.mktemp("api") / "run"
    execute(load_run_config("edition2", games=GAMES, bots=BOTS, seed=SEED), d, jobs=1,
            backend="sequential")
    return d


@pytest.fixture(scope="module")
def sim() -> patchsim.Simulation:
    return patchsim.simulate("edition2", BOTS, games=GAMES, seed=SEED)


def test_simulate_equals_the_stored_tables_of_a_run(sim, run_dir: Path) -> None:
    pd.testing.assert_frame_equal(sim.games, pd.read_parquet(run_dir / "games.parquet"))
    pd.testing.assert_frame_equal(sim.events, pd.read_parquet(run_dir / "events.parquet"))
    assert len(sim.games) == 3 * GAMES  # greedy-greedy, greedy-random, random-random


@pytest.mark.slow
def test_simulate_with_two_workers_equals_one(sim) -> None:
    two = patchsim.simulate("edition2", "greedy;random", games=GAMES, seed=SEED, jobs=2)
    pd.testing.assert_frame_equal(two.games, sim.games)
    pd.testing.assert_frame_equal(two.events, sim.events)


def test_write_stores_the_run_folder_of_the_runner(sim, run_dir: Path, tmp_path: Path) -> None:
    out = sim.write(tmp_path / "sim")
    for name in ("games.parquet", "events.parquet"):
        assert (out / name).read_bytes() == (run_dir / name).read_bytes()
    _, config = read_manifest(out)
    assert config.bots == BOTS and config.seed == SEED
    with pytest.raises(RunError, match="already holds a run"):
        sim.write(out)


def test_rulesets_and_bots_as_objects_give_the_same_games(sim) -> None:
    objs = patchsim.simulate(load_ruleset("edition2"),
                             [patchsim.make_bot("greedy"), patchsim.make_bot("random")],
                             games=GAMES, seed=SEED)
    pd.testing.assert_frame_equal(objs.games, sim.games)


def test_several_rulesets_play_common_deals() -> None:
    both = patchsim.simulate(["edition1", load_ruleset("edition2")], "greedy", games=6, seed=2)
    assert list(both.games["ruleset"].unique()) == ["edition1", "edition2"]
    assert set(both.rulesets) == {"edition1", "edition2"}
    by = {name: g["deal_seed"].tolist() for name, g in both.games.groupby("ruleset")}
    assert by["edition1"] == by["edition2"]
    assert both.config.name == "edition1+edition2"


def test_summary_is_the_run_summary(sim) -> None:
    table = sim.summary()
    pd.testing.assert_frame_equal(table, patchsim.run_summary(sim.games))
    # deterministic greedy self-play: each deal's swapped game is a copy, counted once
    expected = [GAMES // 2 if not distinct else GAMES for distinct in table["distinct_games"]]
    assert table["games"].tolist() == expected
    assert table["distinct_games"].tolist() == [False, True, True]


def test_a_stored_game_replays_from_its_deal_seed(sim) -> None:
    for row in sim.games.head(12).itertuples():
        game = Game.new(row.ruleset, seed=int(row.deal_seed))
        for code in row.moves:
            game.apply(int(code))
        assert game.finished and game.scores == (row.score0, row.score1)
        assert game.winner == row.winner


class Unbuildable:
    """A bot whose spec builds nothing: the runner could not make it again per game."""

    spec = "not-a-bot"

    def choose(self, game, moves, rng):
        return moves[0]


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"bots": "grredy"}, "did you mean 'greedy'"),
    ({"bots": [Unbuildable()]}, "its spec 'not-a-bot' does not build a bot"),
    ({"bots": "greedy", "jobs": 0}, "jobs: give a number of workers of at least 1, got 0"),
    ({"bots": "greedy", "games": 0}, "games"),
    ({"bots": "greedy", "pairings": "some"}, "pairings"),
    ({"bots": "greedy", "rulesets": ["edition2", "edition9"]}, "rulesets[1]"),
])
def test_bad_arguments_are_run_errors(kwargs: dict, fragment: str) -> None:
    kwargs = {"rulesets": "edition2", "games": 2, **kwargs}
    with pytest.raises(RunError) as info:
        patchsim.simulate(**kwargs)
    assert fragment in str(info.value)


# --------------------------------------------------------------------------------------------
# the package


def test_every_exported_name_resolves() -> None:
    for name in patchsim.__all__:
        assert getattr(patchsim, name) is not None, name
    assert patchsim.play_game.__module__ == "patchsim.play.match"
    assert patchsim.deal_circle(load_ruleset("edition2"), 1) == list(
        Game.new("edition2", seed=1).circle)
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        _ = patchsim.nonesuch


@pytest.mark.slow
def test_import_is_light() -> None:
    code = ("import sys, patchsim; from patchsim.engine import core; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'scipy.stats', 'joblib', "
            "'patchsim.play.simulate') if m in sys.modules)); "
            "print(len(core.legal_moves.signatures))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split("\n")
    assert out[0] == "[]"  # nothing beyond the engine
    assert out[1] == "0"  # and nothing compiled or loaded from the cache


# --------------------------------------------------------------------------------------------
# illegal moves


def test_every_core_verdict_has_a_named_reason() -> None:
    codes = {v for k, v in vars(core).items() if k.startswith("ILLEGAL_")}
    assert codes == {int(r) for r in IllegalReason}
    assert core.LEGAL not in codes


def test_illegal_move_error_carries_reason_move_and_number() -> None:
    game = Game.new("edition2", seed=1)
    game.apply("pass")
    far = next(p for p in game.remaining[3:] if game.ruleset.patch(p).cost <= 5)
    first = game.tab[game.tab[core.O_PATCH_FIRST] + game.tables.patch_index[far]]
    move = decode_move(int(first), game.tables)
    assert game.legality(move) is IllegalReason.NOT_ON_OFFER
    with pytest.raises(IllegalMoveError) as info:
        game.apply(str(move))
    err = info.value
    assert err.reason is IllegalReason.NOT_ON_OFFER
    assert isinstance(err.move, Move) and str(err.move) == str(move)
    assert err.move_number == 2
    assert str(err) == (f"move 2 ({move}) is illegal: the patch is not on offer (only the "
                        "next 3 after the neutral token are)")
    again = pickle.loads(pickle.dumps(err))
    assert (again.reason, again.move, again.move_number, str(again)) == (
        err.reason, err.move, err.move_number, str(err))


def test_a_code_that_names_no_move_is_kept_as_a_code() -> None:
    game = Game.new("edition2", seed=1)
    with pytest.raises(IllegalMoveError) as info:
        game.apply(10**6)
    assert info.value.reason is IllegalReason.NO_SUCH_PLACEMENT
    assert info.value.move == 10**6 and "move code 1000000" in str(info.value)
    assert game.legality("pass") is None and game.illegal_reason("pass") is None
