"""Tests for the value network of ``mcts(eval=net)`` (patchsim.bots.network) and its training
(``patchsim train --net``): the compiled forward pass equals a numpy reference, the compiled
gradient is the true one, a trained network file round-trips and is the same for the same
seed, linear models are untouched, bad files are refused by name and version."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_learned import SMALL
from typer.testing import CliRunner

from patchsim.bots import network as N
from patchsim.bots.learned import (
    NET_FILE,
    ModelError,
    NetModel,
    bind_bot,
    load_model,
    load_net,
    model_path,
    param_rows,
)
from patchsim.bots.policies import N_PARAMS
from patchsim.bots.registry import make_bot
from patchsim.cli.main import app
from patchsim.engine.deal import deal_arrays, deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import ruleset_from_dict
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play.match import max_events, max_plies, play_game
from patchsim.play.train_net import NetSettings, train_net

TINY = NetSettings(seed=5, games_per_generation=16, hidden=(8, 4), epochs=2, eval_deals=2,
                   eval_iterations=4)


def random_net(seed: int, hidden: tuple[int, int] = (16, 8)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sizes = [N.N_INPUTS, hidden[0]] + ([hidden[1]] if hidden[1] else []) + [1]
    layers = [(rng.normal(size=(b, a)) / np.sqrt(a), rng.normal(size=b) * 0.3)
              for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
    return N.pack(layers, rng.normal(size=N.N_INPUTS), rng.uniform(0.5, 2.0, N.N_INPUTS), 9.0)


@pytest.fixture(scope="module")
def small():
    return ruleset_from_dict(SMALL)


@pytest.fixture(scope="module")
def trained(small, tmp_path_factory):
    root = tmp_path_factory.mktemp("nets")
    return root, train_net(small, generations=2, jobs=1, models=root, settings=TINY)


# --- the forward pass and its gradient -------------------------------------------------------
@pytest.mark.parametrize("hidden", [(16, 8), (12, 0)])
def test_compiled_forward_pass_equals_the_numpy_reference(hidden):
    for seed in range(5):
        net = random_net(seed, hidden)
        x = np.random.default_rng(100 + seed).normal(size=(50, N.N_INPUTS)) * 3
        np.testing.assert_allclose(N.predict(net, x), N.forward_numpy(net, x),
                                   rtol=1e-12, atol=1e-12)


def test_pack_and_unpack_are_inverse():
    net = random_net(3)
    layers, mean, sd, scale = N.unpack(net)
    assert np.array_equal(N.pack(layers, mean, sd, scale), net)
    assert len(net) == N.n_weights(N.N_INPUTS, 16, 8)


@pytest.mark.parametrize("hidden", [(6, 5), (7, 0)])
def test_training_steps_follow_the_true_gradient(hidden):
    # after one full-batch Adam step from zero moments, m = (1 - beta1) * gradient: the
    # compiled backward pass must agree with finite differences of the numpy reference
    rng = np.random.default_rng(4)
    net = random_net(11, hidden)
    x = rng.normal(size=(40, N.N_INPUTS))
    y = rng.normal(size=40) * 20

    def loss(w: np.ndarray) -> float:  # what train_epoch descends
        return float(np.mean((N.forward_numpy(w, x) - y) ** 2)) / (2 * N.LOSS_POINTS ** 2)

    after = net.copy()
    m = np.zeros_like(net)
    N.train_epoch(after, x, y, np.arange(40, dtype=np.int64), 40, 1e-3, 0, m,
                  np.zeros_like(net), 0.0)
    grad = m / 0.1
    first = N.HEADER + 2 * N.N_INPUTS
    assert np.array_equal(after[:first], net[:first])  # header, standardisation: untrained
    assert not np.array_equal(after[first:], net[first:])
    numeric = np.zeros_like(net)
    for k in range(first, len(net)):
        e = np.zeros_like(net)
        e[k] = 1e-6
        numeric[k] = (loss(net + e) - loss(net - e)) / 2e-6
    np.testing.assert_allclose(grad[first:], numeric[first:], rtol=1e-4, atol=1e-9)
    assert np.abs(numeric[first:]).max() > 1e-3


def test_the_search_reads_the_network_of_its_row(small):
    """A network bot's row (parameter vector + network) plays in the compiled loops next to
    a plain bot (rows padded), and the network changes its games."""
    tables = compile_ruleset(small)
    circles, streams = deal_arrays(small, np.arange(6))
    base = make_bot("mcts(eval=net, iterations=30)").params  # type: ignore[attr-defined]
    greedy = make_bot("greedy")
    results = []
    for seed in (1, 2):
        row = np.concatenate([base, random_net(seed)])
        rows = param_rows([row, greedy.params])  # type: ignore[attr-defined]
        assert rows.shape == (2, len(row)) and np.all(rows[1, N_PARAMS:] == 0)
        kinds = np.array([5, greedy.kind], dtype=np.int64)  # type: ignore[attr-defined]
        res, moves, *_ , bad = playout.play_deals(
            tables.tab, circles, streams, kinds, rows, max_plies(small), max_events(small),
            np.zeros(1, dtype=np.int64))
        assert bad == -1
        results.append(moves)
    assert not np.array_equal(results[0], results[1])


def test_inputs_are_the_movers_view(small):
    # the first player's view of the start equals the second's (the same position, both
    # quilts empty, the same buttons but the second player's extra ones)
    g = Game.new(small, seed=3)
    a = np.empty(N.N_INPUTS)
    b = np.empty(N.N_INPUTS)
    N.net_inputs(g.state, g.tab, np.int64(0), a)
    N.net_inputs(g.state, g.tab, np.int64(1), b)
    assert np.array_equal(a[:N.N_PLAYER], b[N.N_PLAYER:2 * N.N_PLAYER])
    assert np.array_equal(a[N.N_PLAYER:2 * N.N_PLAYER], b[:N.N_PLAYER])
    assert len(N.INPUT_NAMES) == N.N_INPUTS


# --- training and model files ----------------------------------------------------------------
@pytest.mark.slow
def test_a_trained_network_file_round_trips(small, trained):
    root, res = trained
    path = root / small.content_hash() / NET_FILE
    assert res.model_path == path and res.generations == 2
    m = load_net(path, small.content_hash())
    assert np.array_equal(m.net, res.model.net)  # type: ignore[union-attr]
    man = m.manifest
    assert man["net_version"] == N.NET_VERSION and man["shape"] == [N.N_INPUTS, 8, 4]
    assert man["ruleset_hash"] == small.content_hash() and man["generations"] == 2
    again = NetModel(m.net, m.manifest)
    assert again.to_json() == path.read_text("utf-8")
    assert (root / small.content_hash() / "net-report.md").exists()
    # the bot plays it, legally, in the Python driver and in a batch of the compiled loop
    bot = make_bot(f"mcts(eval=net, iterations=12, models={root})")
    bound = bind_bot(bot, small)
    assert bound.provenance["path"] == str(path)
    r = play_game(small, (bot, make_bot("greedy")), deal_circle(small, 1), 1)
    assert r.plies > 0
    assert m.predict_margin(Game.new(small, seed=1)) == pytest.approx(
        float(N.forward_numpy(m.net, _inputs(small, 1))[0]), rel=1e-12, abs=1e-12)


def _inputs(rs, seed: int) -> np.ndarray:
    g = Game.new(rs, seed=seed)
    x = np.empty(N.N_INPUTS)
    N.net_inputs(g.state, g.tab, np.int64(max(0, g.to_move)), x)
    return x


@pytest.mark.slow
def test_same_seed_same_network_bit_for_bit_whatever_the_workers(small, trained, tmp_path):
    root, res = trained
    other = train_net(small, generations=2, jobs=2, models=tmp_path, settings=TINY)
    assert np.array_equal(other.model.net, res.model.net)  # type: ignore[union-attr]
    assert [r["val_rmse"] for r in other.history] == [r["val_rmse"] for r in res.history]


@pytest.mark.slow
def test_network_training_resumes_from_its_checkpoint(small, trained, tmp_path):
    root, res = trained
    train_net(small, generations=1, jobs=1, models=tmp_path, settings=TINY)
    resumed = train_net(small, generations=2, jobs=1, models=tmp_path, settings=TINY)
    assert resumed.resumed_from == 1
    assert np.array_equal(resumed.model.net, res.model.net)  # type: ignore[union-attr]


@pytest.mark.slow
def test_train_command_with_net(small, tmp_path):
    spec = tmp_path / "small.yaml"
    spec.write_text(json.dumps(SMALL))
    r = CliRunner().invoke(app, ["train", str(spec), "--net", "--generations", "1",
                                 "--models", str(tmp_path / "m"), "--jobs", "1",
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "net.json" in r.output and "net-report.md" in r.output


def test_a_linear_model_still_loads_beside_a_network(small, tmp_path):
    from test_learned import write_model

    path = write_model(small, tmp_path)
    NetModel(random_net(0), {"ruleset_hash": small.content_hash()}).save(
        path.parent / NET_FILE)
    lin = bind_bot(make_bot(f"mcts(eval=learned, models={tmp_path})"), small)
    assert lin.params.shape == (N_PARAMS,)  # the linear bot is exactly as before
    assert np.array_equal(lin.params[10:32], load_model(path).weights)
    net = bind_bot(make_bot(f"mcts(eval=net, models={tmp_path})"), small)
    assert net.params.shape == (N_PARAMS + len(random_net(0)),)
    assert np.array_equal(net.params[N_PARAMS:], random_net(0))


def test_shipped_linear_models_still_load():
    from patchsim.bots.learned import MODEL_FILE, SHIPPED_DIR

    files = sorted(SHIPPED_DIR.glob(f"*/{MODEL_FILE}"))
    assert len(files) >= 5
    for f in files:
        assert load_model(f).weights.shape == (22,)


def _saved(small, root: Path) -> Path:
    return NetModel(random_net(1), {"ruleset_hash": small.content_hash()}).save(
        root / small.content_hash() / NET_FILE)


def test_an_unknown_network_version_is_refused_naming_the_file_and_version(small, tmp_path):
    path = _saved(small, tmp_path)
    data = json.loads(path.read_text())
    data["net_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match=r"network file .*net\.json: made for network "
                                         r"version 99, this patchsim reads version 1"):
        load_net(path)
    with pytest.raises(ModelError, match="version 99"):
        bind_bot(make_bot(f"mcts(eval=net, models={tmp_path})"), small)


@pytest.mark.parametrize("damage,message", [
    (lambda d: d.update(net=d["net"][:-1]), "checksum mismatch"),
    (lambda d: d.update(format="other"), "not a patchsim value network"),
    (lambda d: d["manifest"].update(shape=[1, 2, 3]), "the manifest's shape"),
    (lambda d: d["manifest"].update(ruleset_hash="0" * 16), "trained for ruleset hash"),
])
def test_damaged_network_files_are_refused_by_name(small, tmp_path, damage, message):
    path = _saved(small, tmp_path)
    data = json.loads(path.read_text())
    damage(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match=message) as e:
        load_net(path, small.content_hash())
    assert str(path) in str(e.value)


def test_no_network_is_a_clear_error_with_the_command(small, tmp_path):
    with pytest.raises(ModelError, match=r"mcts\(eval=net\) has no model .* --net"):
        bind_bot(make_bot(f"mcts(eval=net, models={tmp_path})"), small)
    assert make_bot("mcts(eval=net, iterations=7)").spec == "mcts(eval=net, iterations=7)"
    assert model_path(small.content_hash(), tmp_path).name == "model.json"


def test_the_shipped_network_loads_and_plays_by_default_model_choice(monkeypatch, tmp_path):
    from patchsim.bots.learned import SHIPPED_DIR
    from patchsim.engine.ruleset import load_ruleset

    monkeypatch.setenv("PATCHSIM_MODEL_DIR", str(tmp_path))  # no user network in the way
    e2 = load_ruleset("edition2")
    path = SHIPPED_DIR / e2.content_hash() / NET_FILE
    assert path.stat().st_size < 5_000_000
    m = load_net(path, e2.content_hash())
    assert m.manifest["ruleset_name"] == "edition2" and m.shape == [N.N_INPUTS, 16, 16]
    bound = bind_bot(make_bot("mcts(eval=net, iterations=5)"), e2)
    assert bound.provenance["source"] == "shipped"


def test_network_bot_in_a_batch_run_against_a_linear_one(small, tmp_path):
    """The runner stacks a network bot's long row with a linear bot's short one (padded)."""
    from test_learned import write_model

    import patchsim

    write_model(small, tmp_path)
    _saved(small, tmp_path)
    sim = patchsim.simulate(small, [f"mcts(eval=net, iterations=6, models={tmp_path})",
                                    f"mcts(eval=learned, iterations=6, models={tmp_path})"],
                            games=4, seed=2, pairings="cross")
    assert len(sim.games) == 4
