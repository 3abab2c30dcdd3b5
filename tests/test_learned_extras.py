"""Tests for the learned bot's extras: ``epsilon`` (random searched moves from the seat's
stream: seat-swapped self-play games differ, same seed same games, identical in the compiled
loop and the Python driver, unchanged at 0), model provenance and precedence (``model=``),
and time budgets in runs only by opt-in (``allow_time_budgets``, recorded as ``timed``)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import patchsim
from patchsim.bots import features as F
from patchsim.bots.learned import (
    SHIPPED_DIR,
    Model,
    ModelError,
    bind_bot,
    bot_model_provenance,
    find_model,
    load_model,
    model_path,
    model_provenance,
)
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play.config import RunConfig, RunError, load_run_config, run_identity
from patchsim.play.match import max_plies, play_game, seat_streams

LEARNED = "mcts(eval=learned, iterations=4)"
NOISY = "mcts(eval=learned, epsilon=0.1, iterations=4)"


@pytest.fixture
def shipped_only(monkeypatch, tmp_path):
    """No user-trained models: the bot finds the shipped ones."""
    monkeypatch.setenv("PATCHSIM_MODEL_DIR", str(tmp_path / "empty"))


@pytest.fixture(scope="module")
def e2():
    return load_ruleset("edition2")


def digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj).encode()).hexdigest()


def moves_by_game(sim) -> list:
    g = sim.games
    return [[int(d), int(o), [int(m) for m in mv]]
            for d, o, mv in zip(g["deal"], g["order"], g["moves"], strict=True)]


# --- epsilon ----------------------------------------------------------------------------------
def test_epsilon_zero_plays_exactly_as_before(shipped_only, e2):
    """Pinned against the games of the bot before it had epsilon (default and explicit 0),
    with the placement ranking of then (contact alone: holes=0, window=0)."""
    for spec in ("mcts(eval=learned, iterations=8, holes=0, window=0)",
                 "mcts(eval=learned, epsilon=0, iterations=8, holes=0, window=0)"):
        sim = patchsim.simulate("edition2", [spec, "greedy"], games=6, seed=7,
                                pairings="cross", backend="sequential")
        assert digest([[d, o, [str(m) for m in mv]] for d, o, mv in moves_by_game(sim)]) == (
            "0e23cfd8d2acc286996a0dfeb970fe7d15c65f98c565e7213acb6cd341981380")
        games = [play_game(e2, (make_bot(spec), make_bot(spec)), deal_circle(e2, s), s)
                 .moves.tolist() for s in (3, 4)]
        assert digest(games) == (
            "dcfe67a8492fba0f504e036021682158ad9e37cc5f98815a92c5b36e8cee9154")
    assert (make_bot("mcts(eval=learned, epsilon=0)").params.tolist()
            == make_bot("mcts(eval=learned)").params.tolist())


def test_epsilon_makes_seat_swapped_self_play_games_differ(shipped_only):
    deals = 8

    def selfplay(spec: str, seed: int) -> list:
        sim = patchsim.simulate("edition2", [spec], games=2 * deals, seed=seed,
                                pairings="self", backend="sequential")
        return moves_by_game(sim)

    noisy = selfplay(NOISY, 5)
    pairs = [(noisy[2 * i], noisy[2 * i + 1]) for i in range(deals)]
    assert all(a[0] == b[0] and (a[1], b[1]) == (0, 1) for a, b in pairs)
    differ = sum(a[2] != b[2] for a, b in pairs)
    assert differ >= deals - 1, f"only {differ} of {deals} deals' games differ"
    assert selfplay(NOISY, 5) == noisy  # same seed, same games
    assert selfplay(NOISY, 6) != noisy
    # without epsilon the bot is deterministic: both games of a deal are the same game
    plain = selfplay(LEARNED, 5)
    assert all(plain[2 * i][2] == plain[2 * i + 1][2] for i in range(deals))


def test_epsilon_picks_among_the_searched_root_moves(shipped_only, e2):
    """epsilon=1: every decision is a uniform pick among pass and the searched placements
    (never a random legal placement), from the seat's stream."""
    bot = make_bot("mcts(eval=learned, epsilon=1, iterations=4)").bind(e2)
    tab = compile_ruleset(e2).tab
    acts = np.empty(1 + tab[core.T_OFFER] * 64, dtype=np.int64)
    games = []
    for seed in (1, 2):
        game = Game.new(e2, circle=deal_circle(e2, 11))
        rng = [seat_streams(seed)[s:s + 1].copy() for s in (0, 1)]
        picks = []
        while not game.finished:
            p = game.to_move
            code = bot.choose_code(game, rng[p])
            if game.state[core.S_PENDING] == 0:
                n = F.search_actions(bot.params, game.state, tab, acts)
                assert code in acts[:n].tolist()
            picks.append(code)
            game.apply(code)
        games.append(picks)
    assert games[0] != games[1]  # the picks come from the seat streams


class PyGreedy:
    """greedy behind the Python bot protocol (no epsilon: it ignores its generator), so a
    game with it goes through the Python driver."""

    def __init__(self) -> None:
        self.inner = make_bot("greedy")
        self.spec = "tests:PyGreedy"

    def choose(self, game, moves, rng):
        return int(self.inner.choose_code(game, np.zeros(1, dtype=np.uint64)))


def test_epsilon_compiled_loop_and_python_driver_play_the_same_games(shipped_only, e2):
    tables = compile_ruleset(e2)
    for seed in (2, 9):
        circle = deal_circle(e2, seed)
        noisy = make_bot("mcts(eval=learned, epsilon=0.3, iterations=4)")
        bound = bind_bot(noisy, e2)
        greedy = make_bot("greedy")
        # compiled loop, as the batch runner plays it
        game = Game.new(e2, circle=circle)
        moves = np.full(max_plies(e2), -9999, dtype=np.int64)
        out = np.zeros(playout.R_WIDTH, dtype=np.int64)
        playout.play_game(tables.tab, game.state, np.array([bound.kind, greedy.kind]),
                          np.stack([bound.params, greedy.params]), seat_streams(seed),
                          moves, np.zeros((0, core.EV_WIDTH), dtype=np.int64), out)
        compiled = moves[: out[playout.R_PLIES]].tolist()
        # the Python driver (a non-compiled opponent): the learned bot draws its seat's stream
        driven = play_game(e2, (bound, PyGreedy()), circle, seed).moves.tolist()
        assert driven == compiled
        # move by move through the unbound bot's choose_code with the seat streams
        game = Game.new(e2, circle=circle)
        rng = [seat_streams(seed)[s:s + 1].copy() for s in (0, 1)]
        seats = (noisy, greedy)
        while not game.finished:
            p = game.to_move
            game.apply(seats[p].choose_code(game, rng[p]))
        assert game.history == compiled


def test_epsilon_spec_and_errors():
    bot = make_bot("mcts(eval=learned, iterations=200, epsilon=0.05)")
    assert bot.spec == "mcts(epsilon=0.05, eval=learned, iterations=200)"
    assert make_bot(bot.spec).spec == bot.spec
    assert bot.params[F.L_EPSILON] == 0.05
    with pytest.raises(BotSpecError, match="epsilon=1.5 must be between 0 and 1"):
        make_bot("mcts(eval=learned, epsilon=1.5)")
    with pytest.raises(BotSpecError, match="epsilon= applies only with eval=learned or eval=net"):
        make_bot("mcts(epsilon=0.1)")
    with pytest.raises(BotSpecError, match="model= has no value"):
        make_bot("mcts(eval=learned, model=)")


# --- model provenance and precedence ----------------------------------------------------------
def user_model(rs, root: Path) -> Path:
    """A user-trained model of ``rs`` under ``root``: the shipped weights, changed."""
    shipped = load_model(SHIPPED_DIR / rs.content_hash() / "model.json")
    man = {"ruleset_hash": rs.content_hash(), "feature_version": F.FEATURE_VERSION,
           "created": "2030-01-01T00:00:00+00:00"}
    return Model(shipped.weights * 1.1, shipped.scale, man).save(
        model_path(rs.content_hash(), root))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_provenance_names_the_model_file_and_its_sha256(e2, monkeypatch, tmp_path):
    monkeypatch.setenv("PATCHSIM_MODEL_DIR", str(tmp_path))
    shipped = SHIPPED_DIR / e2.content_hash() / "model.json"
    prov = model_provenance(e2)  # nothing trained here: the shipped model
    assert prov == {"ruleset": "edition2", "ruleset_hash": e2.content_hash(),
                    "source": "shipped", "path": str(shipped.resolve()),
                    "sha256": sha256_of(shipped),
                    "created": load_model(shipped).manifest.get("created"),
                    "trained_for": "edition2", "trained_for_hash": e2.content_hash()}
    # a user-trained model takes precedence (model=auto), and provenance says so
    mine = user_model(e2, tmp_path)
    prov = model_provenance(e2)
    assert prov["source"] == "user" and prov["path"] == str(mine.resolve())
    assert prov["sha256"] == sha256_of(mine) and prov["created"].startswith("2030")
    bot = make_bot("mcts(eval=learned)")
    assert bot.provenance(e2) == prov and bot_model_provenance(bot, e2) == prov
    assert bot_model_provenance(bot.bind(e2), e2) == prov
    assert bot_model_provenance(make_bot("greedy"), e2) is None
    assert bot_model_provenance(make_bot("mcts(iterations=5)"), e2) is None
    user_weights = bot.bind(e2).params[F.L_WEIGHTS:F.L_WEIGHTS + F.N_FEATURES].tolist()
    assert user_weights == load_model(mine).weights.tolist()
    # model=shipped forces the shipped one although a user model exists
    forced = make_bot("mcts(eval=learned, model=shipped)")
    assert forced.spec == "mcts(eval=learned, model=shipped)"
    assert make_bot(forced.spec).spec == forced.spec
    assert forced.provenance(e2)["source"] == "shipped"
    assert forced.provenance(e2)["sha256"] == sha256_of(shipped)
    assert forced.bind(e2).params[F.L_WEIGHTS:F.L_WEIGHTS + F.N_FEATURES].tolist() == \
        load_model(shipped).weights.tolist() != user_weights
    assert model_provenance(e2, model="shipped") == forced.provenance(e2)
    # model=user and models=FOLDER look in the user folder only / first
    assert model_provenance(e2, model="user")["path"] == str(mine.resolve())
    other = tmp_path / "other"
    assert make_bot(f"mcts(eval=learned, models={other})").provenance(e2)["source"] == \
        "shipped"
    with pytest.raises(ModelError, match="no user model"):
        make_bot(f"mcts(eval=learned, models={other}, model=user)").bind(e2)
    # model=<file>: that file, whatever the folders hold
    copy = tmp_path / "keep" / "e2.json"
    copy.parent.mkdir()
    copy.write_bytes(shipped.read_bytes())
    prov = make_bot(f"mcts(eval=learned, model={copy})").provenance(e2)
    assert prov["source"] == "file" and prov["path"] == str(copy.resolve())
    assert prov["sha256"] == sha256_of(shipped)


def test_provenance_follows_a_retrained_model(e2, monkeypatch, tmp_path):
    """The checksum is of the bytes the bot read: a rewritten model file gives a new one."""
    monkeypatch.setenv("PATCHSIM_MODEL_DIR", str(tmp_path))
    mine = user_model(e2, tmp_path)
    first = model_provenance(e2)
    man = {"ruleset_hash": e2.content_hash(), "feature_version": F.FEATURE_VERSION}
    Model(load_model(mine).weights * 0.5, 9.0, man).save(mine)
    second = model_provenance(e2)
    assert second["path"] == first["path"] and second["sha256"] != first["sha256"]
    assert second["sha256"] == sha256_of(mine)


def test_model_choice_errors(e2, tmp_path):
    odd = e2.with_overrides({"starting_buttons": 1})  # no shipped model
    with pytest.raises(ModelError, match="no shipped model") as e:
        find_model(odd, model="shipped")
    assert "edition2" in str(e.value) and "patchsim train" in str(e.value)
    with pytest.raises(ModelError, match="is a folder"):
        make_bot(f"mcts(eval=learned, model={tmp_path})").bind(e2)
    with pytest.raises(ModelError, match="does not exist"):
        make_bot(f"mcts(eval=learned, model={tmp_path / 'nope.json'})").bind(e2)
    with pytest.raises(BotSpecError, match="model=shipped does not look in"):
        make_bot(f"mcts(eval=learned, models={tmp_path}, model=shipped)")
    with pytest.raises(BotSpecError, match="model= applies only with eval=learned"):
        make_bot("mcts(model=shipped)")
    # a model found by hash must be the ruleset's own (see test_learned); a file named
    # explicitly may come from another ruleset, and its provenance says which
    other = tmp_path / "other.json"
    other.write_bytes((SHIPPED_DIR / e2.content_hash() / "model.json").read_bytes())
    bot = make_bot(f"mcts(eval=learned, iterations=4, model={other})")
    prov = bot_model_provenance(bot, odd)
    assert prov["source"] == "file" and prov["ruleset_hash"] == odd.content_hash()
    assert (prov["trained_for"], prov["trained_for_hash"]) == ("edition2", e2.content_hash())
    r = play_game(odd, (bot, make_bot("greedy")), deal_circle(odd, 0), 0)
    assert r.plies > 0


# --- time budgets in runs ---------------------------------------------------------------------
TIMED = "mcts(iterations=10, time_ms=5)"


def test_time_budgets_only_by_opt_in_and_recorded():
    with pytest.raises(RunError, match="allow_time_budgets=True") as e:
        load_run_config("edition2", bots=["greedy", TIMED])
    assert "time_ms" in str(e.value)
    with pytest.raises(RunError, match="allow_time_budgets=True"):
        load_run_config("edition2", bots=["greedy", "mcts(eval=learned, time_ms=20)"])
    cfg = load_run_config("edition2", bots=["greedy", TIMED], allow_time_budgets=True)
    assert cfg.timed and cfg.to_dict()["timed"] is True
    back = RunConfig.from_manifest(json.loads(json.dumps(cfg.to_dict())))
    assert back.timed and back.bots == cfg.bots
    # the opt-in alone does not mark a run whose bots have no budget
    plain = load_run_config("edition2", bots=["greedy", "random"], allow_time_budgets=True)
    assert not plain.timed and plain.to_dict()["timed"] is False
    assert not RunConfig.from_manifest(plain.to_dict()).timed
    # a manifest written before the field: untimed
    old = plain.to_dict()
    del old["timed"]
    assert RunConfig.from_manifest(old).timed is False
    # the run id follows what determines the games, as before the field
    assert run_identity(plain) == run_identity(RunConfig.from_manifest(old))
    marked = RunConfig.from_manifest({**old, "timed": True})
    assert run_identity(marked) == run_identity(plain)


def test_a_run_manifest_names_the_model_each_learned_bot_played_with(shipped_only, tmp_path):
    from patchsim.play.execution import execute

    cfg = load_run_config("edition2", games=4, bots=[LEARNED, "greedy"], seed=3,
                          pairings="cross")
    execute(cfg, tmp_path / "run", jobs=1)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    (entry,) = manifest["models"]  # greedy has no model
    path = Path(entry["path"])
    assert entry["bot"] == make_bot(LEARNED).spec and entry["source"] == "shipped"
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert entry["ruleset_hash"] == load_ruleset("edition2").content_hash()


def test_the_ladder_plays_equal_time_matches_only_when_asked(tmp_path):
    from typer.testing import CliRunner

    from patchsim.cli.main import app

    args = ["ladder", "--bots", "mcts(time_ms=2);greedy", "--games", "2", "--jobs", "1",
            "--no-progress"]
    refused = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert refused.exit_code == 2 and "--timed" in refused.output
    assert not (tmp_path / "a").exists()
    played = CliRunner().invoke(app, [*args, "--timed", "--out", str(tmp_path / "b")])
    assert played.exit_code == 0, played.output
    assert "depend on this machine" in played.output
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["config"]["timed"] is True


def test_the_train_hint_for_rules_changed_with_set_is_a_command_that_works() -> None:
    """A ruleset changed on the command line is named "edition2 (bonus.points=9)"; the
    missing-model message must give `patchsim train edition2 --set bonus.points=9`."""
    from patchsim.bots.learned import ModelError, find_model
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.play.config import changed_label

    rs = load_ruleset("edition2").with_overrides({"bonus.points": 9, "starting_buttons": 6})
    rs = dataclasses.replace(rs, name=changed_label("edition2", ["bonus.points=9",
                                                                "starting_buttons=6"]))
    with pytest.raises(ModelError) as e:
        find_model(rs, root=Path("/nonexistent-models"))
    assert ("patchsim train edition2 --set bonus.points=9 --set starting_buttons=6 "
            "--minutes 20") in str(e.value)
