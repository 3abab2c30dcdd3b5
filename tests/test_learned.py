"""Tests for the learned bot (``mcts(eval=learned)``) and ``patchsim train``: a short training
run gives a model that loads and matches, the bot plays legal games on random rulesets,
damaged or mismatched model files are refused by name, training is reproducible."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import SMALL, ruleset_dicts
from typer.testing import CliRunner

from patchsim.bots import features as F
from patchsim.bots.learned import (
    SHIPPED_DIR,
    LearnedBot,
    Model,
    ModelError,
    bind_bot,
    find_model,
    load_model,
    model_path,
)
from patchsim.bots.registry import BotSpecError, CompiledBot, make_bot
from patchsim.cli.main import app
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset, ruleset_from_dict
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play.match import max_plies, play_game, seat_streams
from patchsim.play.train import TrainSettings, train

QUICK = TrainSettings(seed=3, games_per_generation=16, eval_deals=2, eval_iterations=4)
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def small():
    return ruleset_from_dict(SMALL)


@pytest.fixture(scope="module")
def trained(small, tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    res = train(small, generations=2, jobs=1, models=root, settings=QUICK)
    return root, res


def test_the_one_strength_check_plays_common_deals_seat_swapped(small, trained):
    from patchsim.play.train import strength_against, validation_figures

    root, res = trained
    row = bind_bot(make_bot(f"mcts(eval=learned, iterations=4, models={root})"), small).params
    rates = strength_against(small, row, ["greedy", "random"], seed=3, deals=4, jobs=2)
    assert list(rates) == ["greedy", "random"]
    assert all(r in {k / 8 for k in range(9)} for r in rates.values())  # 8 games each
    assert strength_against(small, row, ["greedy", "random"], seed=3, deals=4, jobs=1) == rates
    fig = validation_figures(np.array([2.0, -1.0, 3.0]), np.array([1.0, -1.0, -3.0]),
                             np.array([1.0, 0.0, 0.0]))
    assert fig["rows"] == 3 and fig["winner_sign_accuracy"] == pytest.approx(2 / 3)
    assert fig["rmse"] == pytest.approx(np.sqrt((1 + 0 + 36) / 3))


def write_model(rs, root: Path, seed: int = 0) -> Path:
    """A model with random weights for ``rs`` (legality does not depend on the weights)."""
    w = np.random.default_rng(seed).normal(size=F.N_FEATURES)
    man = {"ruleset_hash": rs.content_hash(), "feature_version": F.FEATURE_VERSION}
    return Model(w, 8.0, man).save(model_path(rs.content_hash(), root))


# --- training -----------------------------------------------------------------------------------
def test_training_writes_a_model_that_loads_and_matches(small, trained):
    root, res = trained
    path = model_path(small.content_hash(), root)
    assert res.model_path == path and path.exists()
    model = load_model(path, small.content_hash())
    man = model.manifest
    assert man["ruleset_hash"] == small.content_hash()
    assert man["feature_version"] == F.FEATURE_VERSION
    assert man["seed"] == 3 and man["generations"] == 2 and man["training_games"] == 32
    assert set(man["validation"]) >= {"rmse", "r2", "winner_sign_accuracy"}
    assert np.all(np.isfinite(model.weights)) and model.scale > 0
    assert json.loads((path.parent / "manifest.json").read_text()) == man
    report = (path.parent / "report.md").read_text()
    assert "| gen |" in report and (path.parent / "strength.png").stat().st_size > 0
    assert (path.parent / "loss.png").stat().st_size > 0
    # the bot finds it and plays (compiled loop: the weights ride in the parameter vector)
    bot = make_bot(f"mcts(eval=learned, iterations=8, models={root})")
    bound = bind_bot(bot, small)
    assert isinstance(bound, CompiledBot) and bound.params[F.L_SCALE] == model.scale > 0
    assert bound.params[F.L_WEIGHTS:F.L_WEIGHTS + F.N_FEATURES].tolist() == model.weights.tolist()
    r = play_game(small, (bot, make_bot("greedy")), deal_circle(small, 1), 1)
    assert r.plies > 0


def test_the_training_report_leaves_the_matplotlib_backend_alone(small, trained, tmp_path):
    # a notebook user who trains a model keeps the backend they chose
    import matplotlib

    from patchsim.play.train import write_report

    root, res = trained
    before = matplotlib.get_backend()
    matplotlib.use("svg")
    try:
        write_report(tmp_path, res.model, res.history)
        assert matplotlib.get_backend() == "svg"
        assert (tmp_path / "strength.png").stat().st_size > 0
    finally:
        matplotlib.use(before)


def test_same_seed_same_model_bit_for_bit(small, trained, tmp_path):
    root, res = trained
    again = train(small, generations=2, jobs=2, models=tmp_path, settings=QUICK)
    assert again.model.weights.tolist() == res.model.weights.tolist()
    assert again.model.scale == res.model.scale
    other = train(small, generations=1, jobs=1, models=tmp_path / "o",
                  settings=TrainSettings(**{**QUICK.__dict__, "seed": 4}))
    assert other.model.weights.tolist() != res.model.weights.tolist()


def test_training_resumes_from_its_checkpoint(small, trained, tmp_path):
    _, res = trained
    first = train(small, generations=1, jobs=1, models=tmp_path, settings=QUICK)
    assert first.resumed_from == 0
    second = train(small, generations=2, jobs=1, models=tmp_path, settings=QUICK)
    assert second.resumed_from == 1 and second.generations == 2
    assert second.model.weights.tolist() == res.model.weights.tolist()


def test_train_command(small, tmp_path):
    path = tmp_path / "small.yaml"
    import yaml

    path.write_text(yaml.safe_dump(SMALL))
    r = CliRunner().invoke(app, ["train", str(path), "--generations", "1", "--jobs", "1",
                                 "--models", str(tmp_path / "m"), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "model:" in r.output
    assert model_path(small.content_hash(), tmp_path / "m").exists()
    r = CliRunner().invoke(app, ["train", "no-such-rules", "--generations", "1"])
    assert r.exit_code != 0 and "no-such-rules" in r.output


# --- the bot ---------------------------------------------------------------------------------
@FEW
@given(data=ruleset_dicts(), seed=st.integers(0, 2**63 - 1))
def test_learned_bot_plays_legal_games_on_random_rulesets(data, seed, tmp_path):
    rs = ruleset_from_dict(data)
    write_model(rs, tmp_path, seed % 1000)
    spec = f"mcts(eval=learned, iterations=6, models={tmp_path})"
    circle = deal_circle(rs, seed)
    for seats in ((make_bot(spec), make_bot("greedy")), (make_bot("random"), make_bot(spec))):
        # the Python loop applies every move through Game.apply, which checks legality
        result = play_game(rs, seats, circle, seed)
        again = play_game(rs, tuple(make_bot(b.spec) for b in seats), circle, seed)
        assert result.moves.tolist() == again.moves.tolist()
        # the compiled loop (as the batch runner plays it) gives the same game
        tables = compile_ruleset(rs)
        bound = [bind_bot(b, rs) for b in seats]
        game = Game.new(rs, circle=circle)
        moves = np.full(max_plies(rs), -9999, dtype=np.int64)
        out = np.zeros(playout.R_WIDTH, dtype=np.int64)
        playout.play_game(tables.tab, game.state, np.array([b.kind for b in bound]),
                          np.stack([b.params for b in bound]), seat_streams(seed),
                          moves, np.zeros((0, 6), dtype=np.int64), out)
        assert out[playout.R_ERROR] == 0
        assert moves[: out[playout.R_PLIES]].tolist() == result.moves.tolist()


def test_learned_bot_in_a_batch_run(small, trained):
    import patchsim

    root, _ = trained
    sim = patchsim.simulate(small, [f"mcts(eval=learned, iterations=4, models={root})",
                                    "greedy"], games=4, seed=2, pairings="cross")
    assert len(sim.games) == 4


def test_spec_and_parameters():
    bot = make_bot("mcts(eval=learned, iterations=50)")
    assert isinstance(bot, LearnedBot)
    assert bot.spec == "mcts(eval=learned, iterations=50)"
    assert make_bot(bot.spec).spec == bot.spec
    assert make_bot("mcts(eval=rollout, iterations=50)").spec == "mcts(iterations=50)"
    with pytest.raises(BotSpecError, match="rollout do"):
        make_bot("mcts(eval=learned, rollout=greedy)")
    with pytest.raises(BotSpecError, match="models= applies only"):
        make_bot("mcts(models=/tmp)")
    with pytest.raises(BotSpecError, match="not one of"):
        make_bot("mcts(eval=network)")


def test_no_model_is_a_clear_error(tmp_path):
    rs = load_ruleset("edition2").with_overrides({"starting_buttons": 1})
    with pytest.raises(ModelError, match="patchsim train") as e:
        make_bot(f"mcts(eval=learned, models={tmp_path})").bind(rs)
    assert rs.content_hash() in str(e.value) and str(tmp_path) in str(e.value)


# --- damaged and mismatched model files -------------------------------------------------------
@pytest.mark.parametrize("damage, message", [
    (lambda t: t[: len(t) // 2], "not valid JSON, corrupt or truncated"),
    (lambda t: "", "not valid JSON"),
    (lambda t: "\x00\xff garbage", "not valid JSON"),
    (lambda t: t.replace('"feature_version": 1', '"feature_version": 99'),
     "feature version 99"),
    (lambda t: json.dumps({**json.loads(t), "format": "x"}), "not a patchsim model"),
    (lambda t: json.dumps({**json.loads(t), "weights": [1.0, 2.0]}), "weights must be"),
    (lambda t: json.dumps({**json.loads(t),
                           "weights": [0.5] * F.N_FEATURES}), "checksum mismatch"),
    (lambda t: json.dumps({**json.loads(t), "scale": -1}), "scale must be"),
])
def test_damaged_model_files_are_refused_by_name(small, tmp_path, damage, message):
    path = write_model(small, tmp_path)
    text = path.read_text()
    assert '"feature_version": 1' in text
    path.write_text(damage(text))
    with pytest.raises(ModelError, match=message) as e:
        load_model(path, small.content_hash())
    assert str(path) in str(e.value)
    with pytest.raises(ModelError, match=message):
        make_bot(f"mcts(eval=learned, models={tmp_path})").bind(small)


def test_model_of_another_ruleset_is_refused(small, tmp_path):
    other = small.with_overrides({"starting_buttons": 6})
    path = write_model(other, tmp_path)
    target = model_path(small.content_hash(), tmp_path)
    target.parent.mkdir(parents=True)
    path.replace(target)
    with pytest.raises(ModelError, match=f"trained for ruleset hash {other.content_hash()}"):
        make_bot(f"mcts(eval=learned, models={tmp_path})").bind(small)


@pytest.mark.parametrize("name", ["edition1", "edition2"])
def test_shipped_models_load(name, monkeypatch, tmp_path):
    monkeypatch.setenv("PATCHSIM_MODEL_DIR", str(tmp_path))  # nothing there: shipped only
    rs = load_ruleset(name)
    path = find_model(rs)
    assert path.parent.parent == SHIPPED_DIR and path.stat().st_size < 5_000_000
    bound = make_bot("mcts(eval=learned)").bind(rs)
    assert bound.model.manifest["ruleset_hash"] == rs.content_hash()
