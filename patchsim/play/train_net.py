"""Training the value network of ``mcts(eval=net)`` for one ruleset, from self-play
(``patchsim train RULESET --net``): expert iteration with game outcomes as targets (below).
Deterministic for a seed whatever the number of workers, resumable from a checkpoint, as the
linear model's training (:mod:`patchsim.play.train`), whose streams and checkpoints it shares.
"""

from __future__ import annotations

import datetime
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from patchsim._version import __version__
from patchsim.atomic import atomic_write
from patchsim.bots import features as F
from patchsim.bots import network as NET
from patchsim.bots.learned import (
    NET_FILE,
    ModelError,
    NetModel,
    bind_bot,
    load_net,
    net_row,
    user_model_root,
)
from patchsim.bots.policies import SCRIPTED
from patchsim.bots.registry import make_bot
from patchsim.engine.deal import deal_arrays
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play.match import max_plies
from patchsim.play.selfplay import (
    NO_OPPONENT,
    RECORD_NET_INPUTS,
    margins_and_winners,
    play_quality,
    result_rows,
    selfplay,
)
from patchsim.play.train import (
    CHUNK,
    EPSILON,
    WINDOW,
    TrainError,
    TrainResult,
    check_arguments,
    checkpoint_load,
    checkpoint_save,
    fit_scale,
    seed_streams,
    strength_against,
    validation_figures,
)
from patchsim.play.train_document import PLAY_COLUMNS, play_cell

# Expert iteration with game outcomes as targets: generation 0 plays greedy self-play, every
# later one the network search itself (NET_TRAIN_SPEC, a share of random searched moves); each
# decision position is recorded from the mover's side with the game's final margin for that
# player, and the network is trained further (warm start, minibatch Adam, compiled, in a
# fixed order) on the last `window` generations. The search's root value would be a lower-
# variance target, but at 24 iterations it mostly echoes the network; the outcome is what
# the search should learn to predict.
# (placement ranking pinned as the linear training's, patchsim.play.train.TRAIN_SPEC)
NET_TRAIN_SPEC = "mcts(eval=net, iterations=24, top_k=2, holes=0, window=0)"


@dataclass(frozen=True)
class NetSettings:
    """What determines a trained network besides the ruleset (recorded and checked on
    resume)."""

    seed: int = 1
    games_per_generation: int = 300
    # second 0: one hidden layer. 16+16 rather than 32+32: on edition 2 after 10 minutes it
    # played as well per iteration (69.5% [63.8, 75.2] against the linear search at 100
    # iterations, against 68.0% [62.5, 73.5]) at about half the cost of an evaluation, so
    # it trains on three times the games and wins more at equal time (60.5% against 59.5%
    # at 10 ms; 200 games each)
    hidden: tuple[int, int] = (16, 16)
    epochs: int = 3  # passes over the window's data per generation
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-5
    eval_deals: int = 16
    eval_iterations: int = 100
    eval_every: int = 3
    train_spec: str = NET_TRAIN_SPEC
    epsilon: float = EPSILON
    window: int = WINDOW


def _net_play_generation(ruleset: Ruleset, settings: NetSettings, generation: int,
                         net: np.ndarray | None, jobs: int,
                         progress: Callable[[int], None] | None = None,
                         ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Self-play data of one generation: inputs, targets (the mover's final margin), the
    mover's win, game ids."""
    tables = compile_ruleset(ruleset)
    tab = tables.tab
    if net is None:
        kind = SCRIPTED
        params = make_bot("greedy").params.copy()  # type: ignore[attr-defined]
    else:
        bot = make_bot(settings.train_spec)
        kind = F.LEARNED
        params = net_row(bot.params, NetModel(net))  # type: ignore[attr-defined]
    n = settings.games_per_generation
    nchunks = (n + CHUNK - 1) // CHUNK
    cap = max_plies(ruleset)

    def work(c: int) -> tuple[np.ndarray, ...]:
        m = min(CHUNK, n - c * CHUNK)
        words = seed_streams(settings.seed, generation, c, m)
        seeds = (words[:m] >> np.uint64(1)).astype(np.int64)
        circles, _ = deal_arrays(ruleset, seeds)
        streams = words[m:3 * m].reshape(m, 2).copy()
        xs = np.zeros((m * cap, NET.N_INPUTS))
        game_of = np.zeros(m * cap, dtype=np.int64)
        mover = np.zeros(m * cap, dtype=np.int64)
        results = result_rows(m)
        opening = np.zeros(m, dtype=np.int64)
        rows = selfplay(tab, circles, streams, kind, params, settings.epsilon,
                        RECORD_NET_INPUTS, xs, game_of, mover, results, opening, kind, params,
                        np.full(m, NO_OPPONENT, dtype=np.int64))
        if progress is not None:
            progress(m)
        margins, winners = margins_and_winners(results)
        return (xs[:rows], game_of[:rows] + c * CHUNK, mover[:rows], margins, winners,
                results, opening)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        parts = list(ex.map(work, range(nchunks)))  # in chunk order: worker count is moot
    x = np.concatenate([p[0] for p in parts])
    game = np.concatenate([p[1] for p in parts])
    mover = np.concatenate([p[2] for p in parts])
    margins = np.concatenate([p[3] for p in parts])[game].astype(np.float64)
    winners = np.concatenate([p[4] for p in parts])[game]
    sign = np.where(mover == 0, 1.0, -1.0)
    quality = play_quality(np.concatenate([p[5] for p in parts]),
                           np.concatenate([p[6] for p in parts]))
    return {"x": x, "y": sign * margins, "win": (winners == mover).astype(np.float64),
            "game": game, "gen": np.full(len(game), generation, dtype=np.int64)}, quality


def init_net(settings: NetSettings, x: np.ndarray) -> np.ndarray:
    """A fresh network for inputs like ``x``: standardisation from ``x`` (kept for the whole
    training, so a warm start stays the same function), He-initialised weights from the
    seed, a zero output layer (it starts by predicting a draw)."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy=settings.seed,
                                                       spawn_key=(7_000_000,)))
    mean = x.mean(axis=0)
    sd = x.std(axis=0)
    sd[sd < 1e-6] = 1.0
    h1, h2 = settings.hidden
    sizes = [x.shape[1], h1] + ([h2] if h2 > 0 else []) + [1]
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        w = rng.normal(0.0, math.sqrt(2.0 / a), size=(b, a))
        if b == 1:
            w[:] = 0.0
        layers.append((w, np.zeros(b)))
    return NET.pack(layers, mean, sd, 10.0)


def fit_net(net: np.ndarray, adam: dict[str, Any], x: np.ndarray, y: np.ndarray,
            settings: NetSettings, generation: int) -> float:
    """Train ``net`` (in place) ``epochs`` passes over (x, y) in an order drawn from (seed,
    generation); returns the last pass's mean squared error (points^2)."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy=settings.seed,
                                                       spawn_key=(8_000_000, generation)))
    mse = float("nan")
    for _ in range(settings.epochs):
        order = rng.permutation(len(y)).astype(np.int64)
        mse, adam["step"] = NET.train_epoch(net, np.ascontiguousarray(x), y, order,
                                            settings.batch, settings.lr, adam["step"],
                                            adam["m"], adam["v"], settings.weight_decay)
    return mse


def _net_strength(ruleset: Ruleset, net: np.ndarray, settings: NetSettings,
                  jobs: int) -> dict[str, float]:
    """Win rate of ``mcts(eval=net, iterations=eval_iterations)`` against greedy and, where
    the ruleset has a linear model, ``mcts(eval=learned)`` at the same iterations (else
    ``mcts(iterations=100)``): :func:`patchsim.play.train.strength_against`."""
    bot = make_bot(f"mcts(eval=net, iterations={settings.eval_iterations})")
    row = net_row(bot.params, NetModel(net))  # type: ignore[attr-defined]
    opponents = ["greedy"]
    try:
        linear = f"mcts(eval=learned, iterations={settings.eval_iterations})"
        bind_bot(make_bot(linear), ruleset)
        opponents.append(linear)
    except ModelError:
        opponents.append("mcts(iterations=100)")
    return strength_against(ruleset, row, opponents, settings.seed, settings.eval_deals, jobs)


def _net_validation(net: np.ndarray, x: np.ndarray, y: np.ndarray, win: np.ndarray) -> dict:
    return validation_figures(NET.predict(net, x), y, win)


NET_CHECKPOINT = "net-checkpoint.npz"


def train_net(ruleset: Ruleset, *, minutes: float = 20.0, jobs: int = 1, seed: int = 1,
              generations: int | None = None, models: str | os.PathLike[str] | None = None,
              settings: NetSettings | None = None, fresh: bool = False,
              progress: Callable[[int, int, str], None] | None = None) -> TrainResult:
    """Train (or resume training) the value network of ``ruleset`` for ``mcts(eval=net)``;
    write ``net.json`` (and its manifest and ``net-report.md``) under
    ``<models>/<ruleset hash>/``, next to the linear model. Stops as :func:`train` does.
    Deterministic for a seed whatever ``jobs`` is (the games are played in fixed chunks,
    the network trained by compiled loops in a fixed order)."""
    check_arguments(minutes, jobs, seed, generations)
    settings = settings or NetSettings(seed=seed)
    h = ruleset.content_hash()
    root = user_model_root(models)
    folder = root / h
    try:
        (folder / "training").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TrainError(f"models: cannot create a model folder in {root}: "
                         f"{e.strerror or e}") from None
    ck_path = folder / "training" / NET_CHECKPOINT
    config = {"ruleset_hash": h, "net_version": NET.NET_VERSION,
              **{k: list(v) if isinstance(v, tuple) else v
                 for k, v in asdict(settings).items()}}
    ck = None if fresh else checkpoint_load(ck_path, config)
    history: list[dict[str, Any]] = []
    buffer: dict[str, np.ndarray] = {}
    net: np.ndarray | None = None
    adam: dict[str, Any] = {}
    gen = 0
    elapsed = 0.0
    if ck is not None:
        meta = ck.pop("meta")
        history = meta["history"]
        gen = int(meta["generation"])
        elapsed = float(meta["elapsed"])
        adam = {"step": int(meta["step"]), "m": ck.pop("adam_m"), "v": ck.pop("adam_v")}
        net = ck.pop("net")
        buffer = ck
    resumed_from = gen
    limit = generations if generations is not None else 10**9
    total_games = gen * settings.games_per_generation
    result: NetModel | None = None
    while gen < limit and (generations is not None or elapsed < minutes * 60.0):
        t0 = time.perf_counter()
        label = f"network generation {gen}"

        def tick(k: int, _label: str = label) -> None:
            if progress is not None:
                progress(k, settings.games_per_generation, _label)

        if progress is not None:
            progress(0, settings.games_per_generation, label)
        data, quality = _net_play_generation(ruleset, settings, gen, net, jobs, tick)
        if buffer:
            keep = buffer["gen"] > gen - settings.window
            buffer = {k: np.concatenate([v[keep], data[k]]) for k, v in buffer.items()}
        else:
            buffer = dict(data)
        held = buffer["game"] % 10 == 0  # every tenth game of each generation: never fitted
        fit = ~held
        if net is None:
            net = init_net(settings, buffer["x"][fit])
            adam = {"step": 0, "m": np.zeros_like(net), "v": np.zeros_like(net)}
        mse = fit_net(net, adam, buffer["x"][fit], buffer["y"][fit], settings, gen)
        net[NET.H_SCALE] = fit_scale(NET.predict(net, buffer["x"][fit]), buffer["win"][fit])
        val = _net_validation(net, buffer["x"][held], buffer["y"][held], buffer["win"][held])
        strength = (_net_strength(ruleset, net, settings, jobs)
                    if gen % settings.eval_every == 0 else None)
        gen += 1
        total_games += settings.games_per_generation
        elapsed += time.perf_counter() - t0
        history.append({"generation": gen, "minutes": round(elapsed / 60.0, 3),
                        "games": total_games, "train_rmse": math.sqrt(mse),
                        "val_rmse": val["rmse"], "val_r2": val["r2"],
                        "val_winner_accuracy": val["winner_sign_accuracy"],
                        "scale": float(net[NET.H_SCALE]), "win_rates": strength,
                        "play": quality})
        manifest = {
            "ruleset_hash": h, "ruleset_name": ruleset.name, "net_version": NET.NET_VERSION,
            "seed": settings.seed,
            "settings": {k: list(v) if isinstance(v, tuple) else v
                         for k, v in asdict(settings).items()},
            "generations": gen, "training_games": total_games,
            "training_positions_last_fit": int(fit.sum()),
            "train_minutes": round(elapsed / 60.0, 3), "jobs": jobs, "validation": val,
            "strength": next((r["win_rates"] for r in reversed(history) if r["win_rates"]),
                             None),
            "strength_spec": f"mcts(eval=net, iterations={settings.eval_iterations})",
            "strength_games_per_opponent": 2 * settings.eval_deals,
            "patchsim_version": __version__,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }
        result = NetModel(net.copy(), manifest)
        result.save(folder / NET_FILE)
        meta = {"config": config, "generation": gen, "elapsed": elapsed, "history": history,
                "step": int(adam["step"])}
        checkpoint_save(ck_path, meta, {**buffer, "net": net, "adam_m": adam["m"],
                                         "adam_v": adam["v"]})
        write_net_report(folder, result, history)
    if result is None:
        if net is None:
            raise ValueError("no generation was trained (give minutes > 0 or generations)")
        result = load_net(folder / NET_FILE, h)
    return TrainResult(folder / NET_FILE, result, gen, history, resumed_from)


def write_net_report(folder: Path, model: NetModel, history: list[dict[str, Any]]) -> Path:
    """``net-report.md``: how the network was trained and its curves, as a table."""
    man = model.manifest
    opps = next((list(r["win_rates"]) for r in history if r["win_rates"]), [])
    lines = [
        f"# Value network: {man['ruleset_name']} ({man['ruleset_hash']})", "",
        f"Network version {man['net_version']}, shape {model.shape} (inputs, hidden layers), "
        f"seed {man['seed']}, {man['generations']} generations, {man['training_games']} "
        f"self-play games, {man['train_minutes']:.1f} minutes on {man['jobs']} worker(s); "
        f"patchsim {man['patchsim_version']}, {man['created']}.", "",
        "Method: expert iteration with game outcomes. Generation 0 plays `greedy`; each "
        f"later one `{man['settings']['train_spec']}` with the newest network "
        f"({100 * man['settings']['epsilon']:.0f}% random searched moves). Every decision "
        "position is a row (from the mover's side) whose target is the mover's final margin; "
        f"the network trains {man['settings']['epochs']} passes of minibatch Adam on the last "
        f"{man['settings']['window']} generations after each one.", "",
        f"Held out (every tenth game): RMSE {man['validation']['rmse']:.2f} points, R^2 "
        f"{man['validation']['r2']:.3f}, winner predicted by the sign in "
        f"{100 * man['validation']['winner_sign_accuracy']:.1f}% of positions.", "",
        "| gen | minutes | games | fit RMSE | held-out RMSE | R^2 | scale | "
        + "".join(f"vs {o} | " for o in opps) + " | ".join(h for _, h, _ in PLAY_COLUMNS)
        + " |",
        "|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * (len(opps) + len(PLAY_COLUMNS))]
    for r in history:
        rates = r["win_rates"] or {}
        lines.append(f"| {r['generation']} | {r['minutes']:.2f} | {r['games']} | "
                     f"{r['train_rmse']:.2f} | {r['val_rmse']:.2f} | {r['val_r2']:.3f} | "
                     f"{r['scale']:.1f} | "
                     + "".join((f"{100 * rates[o]:.0f}%" if o in rates else "") + " | "
                               for o in opps)
                     + " | ".join(play_cell(r, k, d) for k, _, d in PLAY_COLUMNS) + " |")
    path = folder / "net-report.md"
    atomic_write(path, "\n".join(lines) + "\n")
    return path
