"""Training the learned bot's evaluation for one ruleset, from self-play (``patchsim train``).

Method: fitted Monte Carlo value iteration with a linear model.

* Generation 0 plays the scripted ``greedy`` bot against itself; every later generation plays
  the learned search (``TRAIN_ITERATIONS`` iterations a move) with the newest model. A share
  ``EPSILON`` of moves is a random pick among the searched moves, so that the data also
  cover positions the current player would avoid.
* Every decision position is recorded with its features; its target is the game's final
  score margin (player 0 minus player 1). The model is refit after every generation on the
  last ``WINDOW`` generations by ridge regression (closed form: deterministic, milliseconds,
  no learning rate to tune). The features are antisymmetric, so no intercept is fitted.
* The win-probability scale of the search's squash ``0.5 + 0.5 tanh(margin / scale)`` is
  fitted by a one-parameter logistic regression of the winner on the predicted margin.
* Validation: every tenth game of each generation is held out of the fit (RMSE, R^2
  and the share of winners the sign predicts). Strength: after every generation the bot
  plays seat-swapped games against ``greedy`` and ``mcts(iterations=100)``.

Deterministic for a seed: generation g plays deals and streams derived from (seed, g) in
fixed chunks, whatever the number of workers; the fit is plain float64 linear algebra. The
wall-clock budget (``minutes``) only decides how many generations run; ``generations``
fixes it. After every generation the model file and a checkpoint are written atomically,
so Ctrl-C loses at most one generation and a rerun of the same command resumes.
"""

from __future__ import annotations

import datetime
import io
import json
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from patchsim._version import __version__
from patchsim.atomic import atomic_path, atomic_write
from patchsim.bots import features as F
from patchsim.bots import network as NET
from patchsim.bots.learned import (
    MODEL_FILE,
    NET_FILE,
    Model,
    ModelError,
    NetModel,
    bind_bot,
    fill_params,
    load_model,
    load_net,
    net_row,
    param_rows,
    user_model_root,
)
from patchsim.bots.policies import SCRIPTED, choose_move
from patchsim.bots.registry import make_bot
from patchsim.document.render import to_markdown
from patchsim.engine import core
from patchsim.engine.deal import deal_arrays
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.errors import PatchsimError
from patchsim.play.loops import R_WINNER, play_deals
from patchsim.play.match import max_events, max_plies
from patchsim.play.train_document import training_document

TRAIN_SPEC = "mcts(eval=learned, iterations=24, top_k=2)"  # plays the self-play games
EPSILON = 0.08
WINDOW = 4  # generations of data a fit uses
RIDGE = 1e-4  # relative to the mean squared feature (the features are standardised)
CHUNK = 8  # games per work unit (fixed, so results do not depend on the worker count)
OPPONENTS = ("greedy", "mcts(iterations=100)")
MAX_GENERATIONS = 100_000  # each one plays games_per_generation games: far beyond any budget
SEED_LIMIT = 2**63  # seeds are non-negative 64-bit integers


class TrainError(PatchsimError, ValueError):
    """An argument ``train`` cannot use, or a models folder it cannot write. The message
    starts with the parameter's name (``minutes: ...``)."""
CHECKPOINT = "checkpoint.npz"


@dataclass(frozen=True)
class TrainSettings:
    """What determines the trained model besides the ruleset (recorded and checked on
    resume)."""

    seed: int = 1
    games_per_generation: int = 300
    eval_deals: int = 16  # seat-swapped deals per opponent after each generation
    eval_iterations: int = 100
    eval_every: int = 3  # generations between strength checks (they cost as much as training)
    train_spec: str = TRAIN_SPEC
    epsilon: float = EPSILON
    window: int = WINDOW


@njit(cache=True, nogil=True)
def selfplay(tab: np.ndarray, circles: np.ndarray, streams: np.ndarray, kind: int,
             params: np.ndarray, epsilon: float, feats: np.ndarray, game_of: np.ndarray,
             margins: np.ndarray, winners: np.ndarray) -> int:
    """Play one self-play game per circle with policy ``kind``/``params`` in both seats;
    record the features of every decision position (game index in ``game_of``) and each
    game's final margin and winner. Returns the number of rows written."""
    buf = np.empty(core.max_moves(tab), dtype=np.int64)
    acts = np.empty(1 + tab[core.T_OFFER] * 64, dtype=np.int64)
    explore = params.copy()
    explore[F.L_TOP_K] = 2.0
    explore[F.L_CONTACT] = 1.0
    explore[F.L_HOLES] = 0.5
    explore[F.L_WINDOW] = 0.3
    rng = np.zeros(2, dtype=np.uint64)
    rows = 0
    for i in range(circles.shape[0]):
        state = core.new_state(tab, circles[i])
        rng[0] = streams[i, 0]
        rng[1] = streams[i, 1]
        while True:
            p = core.to_move(state, tab)
            if p < 0:
                break
            r = rng[p:p + 1]
            if state[core.S_PENDING] > 0:
                code = choose_move(kind, params, state, tab, r, buf)
            else:
                if rows < feats.shape[0]:
                    F.features(state, tab, feats[rows])
                    game_of[rows] = i
                    rows += 1
                if core.rng_unit(r) < epsilon:
                    n = F.search_actions(explore, state, tab, acts)
                    code = acts[core.rng_below(r, n)]
                else:
                    code = choose_move(kind, params, state, tab, r, buf)
            core.apply_move(state, tab, code)
        margins[i] = core.score(state, tab, 0) - core.score(state, tab, 1)
        winners[i] = core.winner(state, tab)
    return rows


def _streams(seed: int, generation: int, chunk: int, n: int) -> np.ndarray:
    ss = np.random.SeedSequence(entropy=seed, spawn_key=(generation, chunk))
    return ss.generate_state(3 * n, dtype=np.uint64)


def play_generation(ruleset: Ruleset, settings: TrainSettings, generation: int,
                    weights: np.ndarray | None, scale: float, jobs: int,
                    progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """Self-play data of one generation: features, margins (per row), winners, game ids."""
    tables = compile_ruleset(ruleset)
    tab = tables.tab
    if weights is None:
        kind = SCRIPTED
        params = make_bot("greedy").params.copy()  # type: ignore[attr-defined]
    else:
        bot = make_bot(settings.train_spec)
        kind = F.LEARNED
        params = fill_params(bot.params, Model(weights, scale))  # type: ignore[attr-defined]  # a compiled bot
    n = settings.games_per_generation
    nchunks = (n + CHUNK - 1) // CHUNK
    cap = max_plies(ruleset)

    def work(c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        m = min(CHUNK, n - c * CHUNK)
        words = _streams(settings.seed, generation, c, m)
        # the deals: seeds below 2**63 from the same stream family
        seeds = (words[:m] >> np.uint64(1)).astype(np.int64)
        circles, _ = deal_arrays(ruleset, seeds)
        streams = words[m:3 * m].reshape(m, 2).copy()
        feats = np.zeros((m * cap, F.N_FEATURES))
        game_of = np.zeros(m * cap, dtype=np.int64)
        margins = np.zeros(m, dtype=np.int64)
        winners = np.zeros(m, dtype=np.int64)
        rows = selfplay(tab, circles, streams, kind, params, settings.epsilon, feats, game_of,
                        margins, winners)
        if progress is not None:
            progress(m)
        return feats[:rows], game_of[:rows] + c * CHUNK, margins, winners

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        parts = list(ex.map(work, range(nchunks)))  # in chunk order: worker count is moot
    feats = np.concatenate([p[0] for p in parts])
    game = np.concatenate([p[1] for p in parts])
    margins = np.concatenate([p[2] for p in parts])
    winners = np.concatenate([p[3] for p in parts])
    return {"x": feats, "y": margins[game].astype(np.float64),
            "win": (winners[game] == 0).astype(np.float64), "game": game,
            "gen": np.full(len(game), generation, dtype=np.int64)}


def fit_linear(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Ridge regression without intercept on standardised columns (weights in raw units)."""
    sd = np.sqrt((x * x).mean(axis=0))
    sd[sd == 0] = 1.0
    z = x / sd
    a = z.T @ z / len(z) + ridge * np.eye(x.shape[1])
    b = z.T @ y / len(z)
    return np.linalg.solve(a, b) / sd


def fit_scale(pred: np.ndarray, win: np.ndarray) -> float:
    """Scale s with P(player 0 wins) = 0.5 + 0.5 tanh(pred / s), by Newton's method on the
    logistic log-likelihood of a = 2 / s (sigmoid(a pred))."""
    a = 0.1
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(a * pred, -30, 30)))
        g = np.sum((win - p) * pred)
        h = np.sum(p * (1 - p) * pred * pred) + 1e-9
        step = g / h
        a = float(np.clip(a + step, 1e-3, 10.0))
        if abs(step) < 1e-10:
            break
    return 2.0 / a


def evaluate_strength(ruleset: Ruleset, weights: np.ndarray, scale: float,
                      settings: TrainSettings, generation: int, jobs: int) -> dict[str, float]:
    """Win rate of ``mcts(eval=learned, iterations=eval_iterations)`` against each fixed opponent on
    seat-swapped deals (the same deals at every generation, so curves compare)."""
    tables = compile_ruleset(ruleset)
    bot = make_bot(f"mcts(eval=learned, iterations={settings.eval_iterations})")
    params = fill_params(bot.params, Model(weights, scale))  # type: ignore[attr-defined]  # a compiled bot
    words = _streams(settings.seed, 1_000_000, 0, settings.eval_deals)
    seeds = (words[:settings.eval_deals] >> np.uint64(1)).astype(np.int64)
    circles, streams = deal_arrays(ruleset, seeds)

    def one(spec: str) -> float:
        opp = make_bot(spec)
        kinds = np.array([F.LEARNED, opp.kind], dtype=np.int64)  # type: ignore[attr-defined]
        pp = np.stack([params, opp.params])  # type: ignore[attr-defined]
        res, *_ = play_deals(tables.tab, circles, streams, kinds, pp, max_plies(ruleset),
                             max_events(ruleset), np.zeros(1, dtype=np.int64))
        learned_seat = np.tile([0, 1], settings.eval_deals)
        return float(np.mean(res[:, R_WINNER] == learned_seat))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        rates = list(ex.map(one, OPPONENTS))
    return dict(zip(OPPONENTS, rates, strict=True))


def _validation(x: np.ndarray, y: np.ndarray, win: np.ndarray, w: np.ndarray) -> dict:
    pred = x @ w
    resid = y - pred
    var = float(np.var(y)) or 1.0
    return {"rows": int(len(y)), "rmse": float(np.sqrt(np.mean(resid ** 2))),
            "r2": float(1.0 - np.mean(resid ** 2) / var),
            "winner_sign_accuracy": float(np.mean((pred > 0) == (win > 0.5)))}


def _checkpoint_load(path: Path, meta_expected: dict) -> dict | None:
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        meta = json.loads(str(data["meta"]))
    except Exception:  # noqa: BLE001 - a damaged checkpoint only means starting over
        return None
    if meta.get("config") != meta_expected:
        return None
    data["meta"] = meta
    return data


def _checkpoint_save(path: Path, meta: dict, buffer: dict[str, np.ndarray]) -> None:
    raw = io.BytesIO()
    np.savez(raw, meta=np.array(json.dumps(meta)), **buffer)  # type: ignore[arg-type]  # stubs
    atomic_write(path, raw.getvalue())


@dataclass
class TrainResult:
    model_path: Path
    model: Model | NetModel
    generations: int
    history: list[dict[str, Any]]
    resumed_from: int


def train(ruleset: Ruleset, *, minutes: float = 20.0, jobs: int = 1, seed: int = 1,
          generations: int | None = None, models: str | os.PathLike[str] | None = None,
          settings: TrainSettings | None = None, fresh: bool = False,
          progress: Callable[[int, int, str], None] | None = None,
          report: bool = True) -> TrainResult:
    """Train (or resume training) the learned evaluation of ``ruleset``; write the model,
    its manifest and the training report under ``<models>/<ruleset hash>/``.

    Stops after ``generations`` generations if given, else at the first generation end past
    ``minutes`` of training time (time spent before an interruption counts).
    TrainError for an argument out of range or a models folder that cannot be written."""
    check_arguments(minutes, jobs, seed, generations)
    settings = settings or TrainSettings(seed=seed)
    h = ruleset.content_hash()
    root = user_model_root(models)
    folder = root / h
    try:
        (folder / "training").mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a file in the way, no permission, a read-only disk
        raise TrainError.about("models", f"cannot create a model folder in {root}: "
                               f"{e.strerror or e}", value=str(root)) from None
    ck_path = folder / "training" / CHECKPOINT
    config = {"ruleset_hash": h, "feature_version": F.FEATURE_VERSION, **asdict(settings)}
    ck = None if fresh else _checkpoint_load(ck_path, config)
    history: list[dict[str, Any]] = []
    buffer: dict[str, np.ndarray] = {}
    weights: np.ndarray | None = None
    scale = 10.0
    gen = 0
    elapsed = 0.0
    if ck is not None:
        meta = ck.pop("meta")
        history = meta["history"]
        gen = int(meta["generation"])
        elapsed = float(meta["elapsed"])
        weights = np.array(meta["weights"], dtype=np.float64)
        scale = float(meta["scale"])
        buffer = ck
    resumed_from = gen
    limit = generations if generations is not None else 10**9
    total_games = gen * settings.games_per_generation
    model = None
    while gen < limit and (generations is not None or elapsed < minutes * 60.0):
        t0 = time.perf_counter()
        label = f"generation {gen}"

        def tick(k: int, _label: str = label) -> None:
            if progress is not None:
                progress(k, settings.games_per_generation, _label)

        if progress is not None:
            progress(0, settings.games_per_generation, label)
        data = play_generation(ruleset, settings, gen, weights, scale, jobs, tick)
        # keep the last `window` generations
        if buffer:
            keep = buffer["gen"] > gen - settings.window
            buffer = {k: np.concatenate([v[keep], data[k]]) for k, v in buffer.items()}
        else:
            buffer = dict(data)
        held = buffer["game"] % 10 == 0  # every tenth game of each generation: never fitted
        fit_rows = ~held
        w = fit_linear(buffer["x"][fit_rows], buffer["y"][fit_rows])
        scale = fit_scale(buffer["x"][fit_rows] @ w, buffer["win"][fit_rows])
        weights = w
        val = _validation(buffer["x"][held], buffer["y"][held], buffer["win"][held], w)
        train_fit = _validation(buffer["x"][fit_rows], buffer["y"][fit_rows],
                                buffer["win"][fit_rows], w)
        strength = None
        if gen % settings.eval_every == 0:
            strength = evaluate_strength(ruleset, w, scale, settings, gen, jobs)
        gen += 1
        total_games += settings.games_per_generation
        elapsed += time.perf_counter() - t0
        history.append({"generation": gen, "minutes": round(elapsed / 60.0, 3),
                        "games": total_games, "train_rmse": train_fit["rmse"],
                        "val_rmse": val["rmse"], "val_r2": val["r2"],
                        "val_winner_accuracy": val["winner_sign_accuracy"], "scale": scale,
                        "win_rates": strength})
        manifest = {
            "ruleset_hash": h, "ruleset_name": ruleset.name,
            "feature_version": F.FEATURE_VERSION, "features": list(F.FEATURE_NAMES),
            "seed": settings.seed, "settings": asdict(settings), "generations": gen,
            "training_games": total_games, "training_positions_last_fit": int(fit_rows.sum()),
            "train_minutes": round(elapsed / 60.0, 3), "jobs": jobs,
            "validation": val,
            "strength": next((r["win_rates"] for r in reversed(history) if r["win_rates"]),
                             None),
            "strength_spec": f"mcts(eval=learned, iterations={settings.eval_iterations})",
            "strength_games_per_opponent": 2 * settings.eval_deals,
            "patchsim_version": __version__,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }
        model = Model(w, scale, manifest)
        model.save(folder / MODEL_FILE)
        meta = {"config": config, "generation": gen, "elapsed": elapsed, "history": history,
                "weights": [float(v) for v in w], "scale": scale}
        _checkpoint_save(ck_path, meta, buffer)
        if report:
            write_report(folder, model, history)
    if model is None:
        if weights is None:
            raise ValueError("no generation was trained (give minutes > 0 or generations)")
        model = load_model(folder / MODEL_FILE, h)
    return TrainResult(folder / MODEL_FILE, model, gen, history, resumed_from)


def check_arguments(minutes: float, jobs: int, seed: int, generations: int | None) -> None:
    """TrainError if :func:`train` cannot use these arguments (checked before any work)."""
    def whole(v: object) -> bool:
        return isinstance(v, int | np.integer) and not isinstance(v, bool)

    if generations is not None and not (whole(generations)
                                        and 1 <= generations <= MAX_GENERATIONS):
        raise TrainError.about("generations", f"give a whole number from 1 to "
                               f"{MAX_GENERATIONS:,}, got {generations}", value=generations)
    if generations is None and not (isinstance(minutes, int | float)
                                    and math.isfinite(minutes) and minutes > 0):
        raise TrainError.about("minutes", "give a time budget above 0 (or a number of "
                               f"generations), got {minutes}", value=minutes)
    if not (whole(seed) and 0 <= seed < SEED_LIMIT):
        raise TrainError.about("seed", f"give a whole number from 0 to 2**63 - 1, got {seed}",
                               value=seed)
    if not (whole(jobs) and jobs >= 1):
        raise TrainError.about("jobs", f"give a number of worker threads >= 1, got {jobs}",
                               value=jobs)


def write_report(folder: Path, model: Model, history: list[dict[str, Any]]) -> Path:
    """``report.md`` with the training curves (``strength.png``, ``loss.png``), atomically."""
    # Figure directly, not pyplot: a notebook user's backend is left as it was
    from matplotlib.figure import Figure

    man = model.manifest
    mins = [r["minutes"] for r in history]
    checked = [r for r in history if r["win_rates"]]
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    for opp in OPPONENTS:
        ax.plot([r["minutes"] for r in checked], [100 * r["win_rates"][opp] for r in checked],
                marker="o", label=opp)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel(f"{man['strength_spec']} wins (%)")
    ax.set_ylim(0, 100)
    ax.legend()
    ax.set_title(f"strength, {man['strength_games_per_opponent']} games per point")
    _save_fig(fig, folder / "strength.png")
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    ax.plot(mins, [r["train_rmse"] for r in history], marker="o", label="fit RMSE")
    ax.plot(mins, [r["val_rmse"] for r in history], marker="o", label="held-out RMSE")
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel("final-margin error (points)")
    ax.legend()
    ax.set_title("loss")
    _save_fig(fig, folder / "loss.png")
    doc = training_document(man, history, OPPONENTS, F.FEATURE_NAMES, model.weights)
    path = folder / "report.md"
    # Markdown only: a model folder's files are the model's (it ships in the package)
    atomic_write(path, to_markdown(doc))
    return path


def _save_fig(fig: Any, path: Path) -> None:
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=90, bbox_inches="tight", format="png")


# === the value network (mcts(eval=net); patchsim.bots.network) ===================================
# Expert iteration with game outcomes as targets: generation 0 plays greedy self-play, every
# later one the network search itself (NET_TRAIN_SPEC, a share of random searched moves); each
# decision position is recorded from the mover's side with the game's final margin for that
# player, and the network is trained further (warm start, minibatch Adam, compiled, in a
# fixed order) on the last `window` generations. The search's root value would be a lower-
# variance target, but at 24 iterations it mostly echoes the network; the outcome is what
# the search should learn to predict.
NET_TRAIN_SPEC = "mcts(eval=net, iterations=24, top_k=2)"


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


@njit(cache=True, nogil=True)
def selfplay_net(tab: np.ndarray, circles: np.ndarray, streams: np.ndarray, kind: int,
                 params: np.ndarray, epsilon: float, xs: np.ndarray, game_of: np.ndarray,
                 mover: np.ndarray, margins: np.ndarray, winners: np.ndarray) -> int:
    """:func:`selfplay`, recording the network's inputs of every decision position from the
    mover's side (and the mover) instead of the linear features."""
    buf = np.empty(core.max_moves(tab), dtype=np.int64)
    acts = np.empty(1 + tab[core.T_OFFER] * 64, dtype=np.int64)
    explore = params[:F.N_PARAMS].copy()
    explore[F.L_TOP_K] = 2.0
    explore[F.L_CONTACT] = 1.0
    explore[F.L_HOLES] = 0.5
    explore[F.L_WINDOW] = 0.3
    rng = np.zeros(2, dtype=np.uint64)
    rows = 0
    for i in range(circles.shape[0]):
        state = core.new_state(tab, circles[i])
        rng[0] = streams[i, 0]
        rng[1] = streams[i, 1]
        while True:
            p = core.to_move(state, tab)
            if p < 0:
                break
            r = rng[p:p + 1]
            if state[core.S_PENDING] > 0:
                code = choose_move(kind, params, state, tab, r, buf)
            else:
                if rows < xs.shape[0]:
                    NET.net_inputs(state, tab, p, xs[rows])
                    game_of[rows] = i
                    mover[rows] = p
                    rows += 1
                if core.rng_unit(r) < epsilon:
                    n = F.search_actions(explore, state, tab, acts)
                    code = acts[core.rng_below(r, n)]
                else:
                    code = choose_move(kind, params, state, tab, r, buf)
            core.apply_move(state, tab, code)
        margins[i] = core.score(state, tab, 0) - core.score(state, tab, 1)
        winners[i] = core.winner(state, tab)
    return rows


def _net_play_generation(ruleset: Ruleset, settings: NetSettings, generation: int,
                         net: np.ndarray | None, jobs: int,
                         progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
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
        words = _streams(settings.seed, generation, c, m)
        seeds = (words[:m] >> np.uint64(1)).astype(np.int64)
        circles, _ = deal_arrays(ruleset, seeds)
        streams = words[m:3 * m].reshape(m, 2).copy()
        xs = np.zeros((m * cap, NET.N_INPUTS))
        game_of = np.zeros(m * cap, dtype=np.int64)
        mover = np.zeros(m * cap, dtype=np.int64)
        margins = np.zeros(m, dtype=np.int64)
        winners = np.zeros(m, dtype=np.int64)
        rows = selfplay_net(tab, circles, streams, kind, params, settings.epsilon, xs,
                            game_of, mover, margins, winners)
        if progress is not None:
            progress(m)
        return xs[:rows], game_of[:rows] + c * CHUNK, mover[:rows], margins, winners

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        parts = list(ex.map(work, range(nchunks)))  # in chunk order: worker count is moot
    x = np.concatenate([p[0] for p in parts])
    game = np.concatenate([p[1] for p in parts])
    mover = np.concatenate([p[2] for p in parts])
    margins = np.concatenate([p[3] for p in parts])[game].astype(np.float64)
    winners = np.concatenate([p[4] for p in parts])[game]
    sign = np.where(mover == 0, 1.0, -1.0)
    return {"x": x, "y": sign * margins, "win": (winners == mover).astype(np.float64),
            "game": game, "gen": np.full(len(game), generation, dtype=np.int64)}


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
    ``mcts(iterations=100)``), seat-swapped, the same deals at every generation."""
    tables = compile_ruleset(ruleset)
    bot = make_bot(f"mcts(eval=net, iterations={settings.eval_iterations})")
    row = net_row(bot.params, NetModel(net))  # type: ignore[attr-defined]
    words = _streams(settings.seed, 1_000_000, 0, settings.eval_deals)
    seeds = (words[:settings.eval_deals] >> np.uint64(1)).astype(np.int64)
    circles, streams = deal_arrays(ruleset, seeds)
    opponents = ["greedy"]
    try:
        linear = f"mcts(eval=learned, iterations={settings.eval_iterations})"
        bind_bot(make_bot(linear), ruleset)
        opponents.append(linear)
    except ModelError:
        opponents.append("mcts(iterations=100)")

    def one(spec: str) -> float:
        opp = bind_bot(make_bot(spec), ruleset)
        kinds = np.array([F.LEARNED, opp.kind], dtype=np.int64)
        pp = param_rows([row, opp.params])
        res, *_ = play_deals(tables.tab, circles, streams, kinds, pp, max_plies(ruleset),
                             max_events(ruleset), np.zeros(1, dtype=np.int64))
        seat = np.tile([0, 1], settings.eval_deals)
        return float(np.mean(res[:, R_WINNER] == seat))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        rates = list(ex.map(one, opponents))
    return dict(zip(opponents, rates, strict=True))


def _net_validation(net: np.ndarray, x: np.ndarray, y: np.ndarray, win: np.ndarray) -> dict:
    pred = NET.predict(net, x)
    resid = y - pred
    var = float(np.var(y)) or 1.0
    return {"rows": int(len(y)), "rmse": float(np.sqrt(np.mean(resid ** 2))),
            "r2": float(1.0 - np.mean(resid ** 2) / var),
            "winner_sign_accuracy": float(np.mean((pred > 0) == (win > 0.5)))}


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
    ck = None if fresh else _checkpoint_load(ck_path, config)
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
        data = _net_play_generation(ruleset, settings, gen, net, jobs, tick)
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
                        "scale": float(net[NET.H_SCALE]), "win_rates": strength})
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
        _checkpoint_save(ck_path, meta, {**buffer, "net": net, "adam_m": adam["m"],
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
        + " | ".join(f"vs {o}" for o in opps) + " |",
        "|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(opps)]
    for r in history:
        rates = r["win_rates"] or {}
        lines.append(f"| {r['generation']} | {r['minutes']:.2f} | {r['games']} | "
                     f"{r['train_rmse']:.2f} | {r['val_rmse']:.2f} | {r['val_r2']:.3f} | "
                     f"{r['scale']:.1f} | "
                     + " | ".join(f"{100 * rates[o]:.0f}%" if o in rates else "" for o in opps)
                     + " |")
    path = folder / "net-report.md"
    atomic_write(path, "\n".join(lines) + "\n")
    return path
