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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from patchsim._version import __version__
from patchsim.atomic import atomic_path, atomic_write
from patchsim.bots import features as F
from patchsim.bots.learned import (
    MODEL_FILE,
    PACK_FILE,
    Model,
    ModelError,
    NetModel,
    bind_bot,
    fill_params,
    load_model,
    param_rows,
    user_model_root,
)
from patchsim.bots.policies import SCRIPTED
from patchsim.bots.registry import make_bot
from patchsim.document.render import to_markdown
from patchsim.engine.deal import deal_arrays
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.errors import PatchsimError
from patchsim.play.loops import R_WINNER, play_deals
from patchsim.play.match import max_events, max_plies
from patchsim.play.placement_effects import HELD_COLUMNS, placement_effects
from patchsim.play.selfplay import (
    NO_OPPONENT,
    RECORD_ALL_FEATURES,
    RECORD_FEATURES,
    margins_and_winners,
    play_quality,
    result_rows,
    selfplay,
)
from patchsim.play.train_document import training_document

# plays the self-play games; its placement ranking is pinned to contact alone (the learned
# search's default before 2026-12-03), so that `train --generations N --seed S` replays the
# shipped models bit for bit
TRAIN_SPEC = "mcts(eval=learned, iterations=24, top_k=2, holes=0, window=0)"
# the packing player (mcts(eval=pack)) trains with its own search: placements chosen by it
TRAIN_SPEC_PACK = "mcts(eval=pack, iterations=24)"
EPSILON = 0.08
# the shape terms' effects are measured under today's player's later play (greedy's where a
# ruleset has no model yet), from 2,000 games: standard errors about 0.1 point a unit
SHAPE_SPEC = "mcts(eval=learned, iterations=50)"
SHAPE_FALLBACK_SPEC = "greedy"
SHAPE_GAMES = 2000
WINDOW = 4  # generations of data a fit uses
RIDGE = 1e-4  # relative to the mean squared feature (the features are standardised)
CHUNK = 8  # games per work unit (fixed, so results do not depend on the worker count)
OPPONENTS = ("greedy", "mcts(iterations=100)")
# the packing player is also measured against today's learned player, the one it replaces
PACK_OPPONENTS = (*OPPONENTS, "mcts(eval=learned, iterations=100)")
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
    evaluation: str = "learned"  # "pack": feature version 2, pack.json, the league below
    # a league: of every four chunks of self-play games, one plays greedy and one an earlier
    # generation (the learner in either seat), so that the learner cannot settle into a
    # convention it shares only with itself (a passing stand-off)
    league: bool = False
    # randomised-placement games that measure the effects of the quilt's shape terms before
    # the first generation (patchsim.play.placement_effects); every fit then holds those
    # weights fixed. 0: the shape terms are fitted with the rest (confounded: see there)
    shape_games: int = 0
    shape_spec: str = SHAPE_SPEC


def pack_settings(seed: int = 1) -> TrainSettings:
    """The settings of the packing player's training (``patchsim train --pack``)."""
    return TrainSettings(seed=seed, train_spec=TRAIN_SPEC_PACK, evaluation="pack", league=True,
                         shape_games=SHAPE_GAMES)


def seed_streams(seed: int, generation: int, chunk: int, n: int) -> np.ndarray:
    ss = np.random.SeedSequence(entropy=seed, spawn_key=(generation, chunk))
    return ss.generate_state(3 * n, dtype=np.uint64)


def league_opponent(settings: TrainSettings, generation: int, chunk: int,
                    pool: Sequence[tuple[np.ndarray, float]]) -> int:
    """Whom the learner plays in a chunk of generation ``generation``: -1 itself, -2
    greedy, or the index into ``pool`` (earlier generations' models) of the one it plays.
    Without a league, or before there is a model, always itself."""
    if not settings.league or generation == 0:
        return -1
    turn = chunk % 4
    if turn == 2 or (turn == 3 and not pool):
        return -2
    if turn == 3:
        # spread over the earlier generations, the same for a seed whatever the workers
        return (generation * 7 + chunk) % len(pool)
    return -1


def play_generation(ruleset: Ruleset, settings: TrainSettings, generation: int,
                    weights: np.ndarray | None, scale: float, jobs: int,
                    progress: Callable[[int], None] | None = None,
                    pool: Sequence[tuple[np.ndarray, float]] = (),
                    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Self-play data of one generation (features, margins (per row), winners, game ids)
    and how its games were played (:func:`patchsim.play.selfplay.play_quality`, over the
    games the learner played against itself). With a league (``settings.league``), some
    chunks play greedy or a model of ``pool`` (:func:`league_opponent`)."""
    tables = compile_ruleset(ruleset)
    tab = tables.tab
    greedy = make_bot("greedy").params.copy()  # type: ignore[attr-defined]
    if weights is None:
        kind = SCRIPTED
        params = greedy
    else:
        bot = make_bot(settings.train_spec)
        kind = F.LEARNED
        params = fill_params(bot.params, Model(weights, scale))  # type: ignore[attr-defined]  # a compiled bot
    pack = settings.evaluation == "pack"
    record = RECORD_ALL_FEATURES if pack else RECORD_FEATURES
    width = F.N_ALL_FEATURES if pack else F.N_FEATURES
    n = settings.games_per_generation
    nchunks = (n + CHUNK - 1) // CHUNK
    cap = max_plies(ruleset)

    def work(c: int) -> tuple[np.ndarray, ...]:
        m = min(CHUNK, n - c * CHUNK)
        words = seed_streams(settings.seed, generation, c, m)
        # the deals: seeds below 2**63 from the same stream family
        seeds = (words[:m] >> np.uint64(1)).astype(np.int64)
        circles, _ = deal_arrays(ruleset, seeds)
        streams = words[m:3 * m].reshape(m, 2).copy()
        feats = np.zeros((m * cap, width))
        game_of = np.zeros(m * cap, dtype=np.int64)
        mover = np.zeros(m * cap, dtype=np.int64)
        results = result_rows(m)
        opening = np.zeros(m, dtype=np.int64)
        who = league_opponent(settings, generation, c, pool)
        opp_kind, opp_params = kind, params
        opp_seat = np.full(m, NO_OPPONENT, dtype=np.int64)
        if who != -1:
            if who == -2:
                opp_kind, opp_params = SCRIPTED, greedy
            else:
                opp_kind = F.LEARNED
                opp_params = fill_params(params, Model(*pool[who]))
            opp_seat = np.arange(m, dtype=np.int64) % 2  # the learner in either seat
        rows = selfplay(tab, circles, streams, kind, params, settings.epsilon, record,
                        feats, game_of, mover, results, opening, opp_kind, opp_params,
                        opp_seat)
        if progress is not None:
            progress(m)
        margins, winners = margins_and_winners(results)
        own = np.full(m, who == -1)  # the learner against itself: where a convention shows
        return (feats[:rows], game_of[:rows] + c * CHUNK, margins, winners, results[own],
                opening[own])

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        parts = list(ex.map(work, range(nchunks)))  # in chunk order: worker count is moot
    feats = np.concatenate([p[0] for p in parts])
    game = np.concatenate([p[1] for p in parts])
    margins = np.concatenate([p[2] for p in parts])
    winners = np.concatenate([p[3] for p in parts])
    quality = play_quality(np.concatenate([p[4] for p in parts]),
                           np.concatenate([p[5] for p in parts]))
    return {"x": feats, "y": margins[game].astype(np.float64),
            "win": (winners[game] == 0).astype(np.float64), "game": game,
            "gen": np.full(len(game), generation, dtype=np.int64)}, quality


def fit_linear(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Ridge regression without intercept on standardised columns (weights in raw units)."""
    sd = np.sqrt((x * x).mean(axis=0))
    sd[sd == 0] = 1.0
    z = x / sd
    a = z.T @ z / len(z) + ridge * np.eye(x.shape[1])
    b = z.T @ y / len(z)
    return np.linalg.solve(a, b) / sd


def fit_linear_fixed(x: np.ndarray, y: np.ndarray, fixed: dict[int, float],
                     ridge: float = RIDGE) -> np.ndarray:
    """:func:`fit_linear` with the weights of the columns in ``fixed`` held at their given
    values (the shape terms' effects measured by randomised placements,
    :mod:`patchsim.play.placement_effects`): the other columns are fitted to what those
    leave of ``y``."""
    if not fixed:
        return fit_linear(x, y, ridge)
    cols = np.array(sorted(fixed), dtype=np.int64)
    held = np.array([fixed[int(c)] for c in cols], dtype=np.float64)
    rest = np.setdiff1d(np.arange(x.shape[1]), cols)
    w = np.zeros(x.shape[1], dtype=np.float64)
    w[cols] = held
    w[rest] = fit_linear(x[:, rest], y - x[:, cols] @ held, ridge)
    return w


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


def strength_against(ruleset: Ruleset, row: np.ndarray, opponents: Sequence[str], seed: int,
                     deals: int, jobs: int) -> dict[str, float]:
    """Win rate of the learned search whose bot row is ``row`` (its parameter vector, with a
    value network after it or not) against each of ``opponents`` on ``deals`` seat-swapped
    deals drawn from ``seed`` (the same deals at every generation, so curves compare): the
    one strength check of both trainings."""
    tables = compile_ruleset(ruleset)
    words = seed_streams(seed, 1_000_000, 0, deals)
    seeds = (words[:deals] >> np.uint64(1)).astype(np.int64)
    circles, streams = deal_arrays(ruleset, seeds)

    def one(spec: str) -> float:
        opp = bind_bot(make_bot(spec), ruleset)
        kinds = np.array([F.LEARNED, opp.kind], dtype=np.int64)
        pp = param_rows([row, opp.params])
        res, *_ = play_deals(tables.tab, circles, streams, kinds, pp, max_plies(ruleset),
                             max_events(ruleset), np.zeros(1, dtype=np.int64))
        seat = np.tile([0, 1], deals)
        return float(np.mean(res[:, R_WINNER] == seat))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        rates = list(ex.map(one, opponents))
    return dict(zip(opponents, rates, strict=True))


def evaluate_strength(ruleset: Ruleset, weights: np.ndarray, scale: float,
                      settings: TrainSettings, generation: int, jobs: int) -> dict[str, float]:
    """Win rate of ``mcts(eval=learned, iterations=eval_iterations)`` with these weights
    against each fixed opponent (:func:`strength_against`)."""
    bot = make_bot(strength_spec(settings))
    params = fill_params(bot.params, Model(weights, scale))  # type: ignore[attr-defined]  # a compiled bot
    return strength_against(ruleset, params, opponents_of(settings), settings.seed,
                            settings.eval_deals, jobs)


def strength_spec(settings: TrainSettings) -> str:
    """The bot whose strength a training measures after its generations."""
    return f"mcts(eval={settings.evaluation}, iterations={settings.eval_iterations})"


def opponents_of(settings: TrainSettings) -> tuple[str, ...]:
    """The fixed opponents of a training's strength checks."""
    return PACK_OPPONENTS if settings.evaluation == "pack" else OPPONENTS


def files_of(settings: TrainSettings) -> tuple[str, str, str]:
    """(model file, checkpoint, prefix of the report's files) of a training: the packing
    player's sit beside today's model in the same folder without touching it."""
    if settings.evaluation == "pack":
        return PACK_FILE, "pack-" + CHECKPOINT, "pack-"
    return MODEL_FILE, CHECKPOINT, ""


def validation_figures(pred: np.ndarray, y: np.ndarray, win: np.ndarray) -> dict:
    """How well predicted margins ``pred`` match the final margins ``y`` (and the winners
    ``win``, 1 for the mover): rows, RMSE, R^2, the share of winners the sign predicts."""
    resid = y - pred
    var = float(np.var(y)) or 1.0
    return {"rows": int(len(y)), "rmse": float(np.sqrt(np.mean(resid ** 2))),
            "r2": float(1.0 - np.mean(resid ** 2) / var),
            "winner_sign_accuracy": float(np.mean((pred > 0) == (win > 0.5)))}


def _validation(x: np.ndarray, y: np.ndarray, win: np.ndarray, w: np.ndarray) -> dict:
    return validation_figures(x @ w, y, win)


def checkpoint_load(path: Path, meta_expected: dict) -> dict | None:
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


def checkpoint_save(path: Path, meta: dict, buffer: dict[str, np.ndarray]) -> None:
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
    model_file, ck_file, prefix = files_of(settings)
    ck_path = folder / "training" / ck_file
    pack = settings.evaluation == "pack"
    fversion = F.PACK_FEATURE_VERSION if pack else F.FEATURE_VERSION
    config = {"ruleset_hash": h, "feature_version": fversion, **_settings_record(settings)}
    ck = None if fresh else checkpoint_load(ck_path, config)
    history: list[dict[str, Any]] = []
    buffer: dict[str, np.ndarray] = {}
    weights: np.ndarray | None = None
    scale = 10.0
    gen = 0
    elapsed = 0.0
    pool: list[tuple[np.ndarray, float]] = []  # earlier generations' models (the league)
    if ck is not None:
        meta = ck.pop("meta")
        history = meta["history"]
        gen = int(meta["generation"])
        elapsed = float(meta["elapsed"])
        weights = np.array(meta["weights"], dtype=np.float64)
        scale = float(meta["scale"])
        pool = [(np.array(w, dtype=np.float64), float(sc)) for w, sc in meta.get("pool", [])]
        shape = meta.get("shape_effects")
        buffer = ck
    else:
        shape = None
    if shape is None and settings.shape_games > 0:
        if progress is not None:
            progress(0, settings.shape_games, "shape effects")
        shape = shape_effects_record(ruleset, settings, jobs)
    # the effects are measured on every shape term; a feature-version-1 model has only the
    # base features' (holes and the bonus window), so it holds those
    n_weights = F.N_ALL_FEATURES if pack else F.N_FEATURES
    fixed = {int(c): float(v["effect"]) for c, v in (shape or {}).get("columns", {}).items()
             if int(c) in HELD_COLUMNS and int(c) < n_weights}
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
        data, quality = play_generation(ruleset, settings, gen, weights, scale, jobs, tick,
                                        pool)
        if settings.league and weights is not None:
            pool.append((weights, scale))
        # keep the last `window` generations
        if buffer:
            keep = buffer["gen"] > gen - settings.window
            buffer = {k: np.concatenate([v[keep], data[k]]) for k, v in buffer.items()}
        else:
            buffer = dict(data)
        held = buffer["game"] % 10 == 0  # every tenth game of each generation: never fitted
        fit_rows = ~held
        w = fit_linear_fixed(buffer["x"][fit_rows], buffer["y"][fit_rows], fixed)
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
                        "win_rates": strength, "play": quality})
        manifest = {
            "ruleset_hash": h, "ruleset_name": ruleset.name,
            "feature_version": fversion,
            "features": list(F.ALL_FEATURE_NAMES if pack else F.FEATURE_NAMES),
            "seed": settings.seed, "settings": _settings_record(settings), "generations": gen,
            "training_games": total_games, "training_positions_last_fit": int(fit_rows.sum()),
            "train_minutes": round(elapsed / 60.0, 3), "jobs": jobs,
            "validation": val,
            "strength": next((r["win_rates"] for r in reversed(history) if r["win_rates"]),
                             None),
            "strength_spec": strength_spec(settings),
            "strength_games_per_opponent": 2 * settings.eval_deals,
            **({"shape_effects": shape} if shape else {}),
            "patchsim_version": __version__,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }
        model = Model(w, scale, manifest)
        model.save(folder / model_file)
        meta = {"config": config, "generation": gen, "elapsed": elapsed, "history": history,
                "weights": [float(v) for v in w], "scale": scale,
                "pool": [[[float(v) for v in pw], ps] for pw, ps in pool],
                **({"shape_effects": shape} if shape else {})}
        checkpoint_save(ck_path, meta, buffer)
        if report:
            write_report(folder, model, history, opponents_of(settings), prefix)
    if model is None:
        if weights is None:
            raise ValueError("no generation was trained (give minutes > 0 or generations)")
        model = load_model(folder / model_file, h)
    return TrainResult(folder / model_file, model, gen, history, resumed_from)


def shape_effects_record(ruleset: Ruleset, settings: TrainSettings,
                         jobs: int) -> dict[str, Any]:
    """The shape terms' effects for ``ruleset`` (see :mod:`patchsim.play.placement_effects`)
    as the manifest records them: the continuation player (``settings.shape_spec``, or
    greedy where the ruleset has no model for it yet), the games, and per feature column its
    name, effect and standard error."""
    spec = settings.shape_spec
    try:
        bind_bot(make_bot(spec), compile_ruleset(ruleset))
    except ModelError:
        spec = SHAPE_FALLBACK_SPEC
    eff = placement_effects(ruleset, spec, settings.shape_games, seed=settings.seed,
                            jobs=jobs)
    return {"spec": spec, "games": eff.games, "placements_a_game": round(eff.treatments, 2),
            "residual_sd": round(eff.residual_sd, 3),
            "columns": {str(c): {"feature": F.ALL_FEATURE_NAMES[c], "effect": float(b),
                                 "se": float(e)}
                        for c, b, e in zip(eff.columns, eff.beta, eff.se, strict=True)}}


def _settings_record(settings: TrainSettings) -> dict[str, Any]:
    """The settings as a manifest records them: today's player's training leaves out the
    packing player's fields at their defaults, so its manifests and checkpoints read as
    they always did."""
    record = asdict(settings)
    if settings.evaluation == "learned" and not settings.league:
        record.pop("evaluation")
        record.pop("league")
    if settings.shape_games == 0 and settings.shape_spec == SHAPE_SPEC:
        record.pop("shape_games")
        record.pop("shape_spec")
    return record


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


def write_report(folder: Path, model: Model, history: list[dict[str, Any]],
                 opponents: Sequence[str] = OPPONENTS, prefix: str = "") -> Path:
    """``report.md`` with the training curves (``strength.png``, ``loss.png``), atomically;
    each name after ``prefix`` (``pack-`` for the packing player's)."""
    # Figure directly, not pyplot: a notebook user's backend is left as it was
    from matplotlib.figure import Figure

    man = model.manifest
    mins = [r["minutes"] for r in history]
    checked = [r for r in history if r["win_rates"]]
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    for opp in opponents:
        ax.plot([r["minutes"] for r in checked], [100 * r["win_rates"][opp] for r in checked],
                marker="o", label=opp)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel(f"{man['strength_spec']} wins (%)")
    ax.set_ylim(0, 100)
    ax.legend()
    ax.set_title(f"strength, {man['strength_games_per_opponent']} games per point")
    _save_fig(fig, folder / f"{prefix}strength.png")
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    ax.plot(mins, [r["train_rmse"] for r in history], marker="o", label="fit RMSE")
    ax.plot(mins, [r["val_rmse"] for r in history], marker="o", label="held-out RMSE")
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel("final-margin error (points)")
    ax.legend()
    ax.set_title("loss")
    _save_fig(fig, folder / f"{prefix}loss.png")
    played = [r for r in history if (r.get("play") or {}).get("games")]
    if played:  # histories written before 2026-12-06 have no record of how games went
        fig = Figure(figsize=(6, 3.5))
        ax = fig.subplots()
        gens = [r["generation"] for r in played]
        for key, label in (("degenerate", "degenerate games"),
                           ("opens_with_passes", "open with 6+ passes"),
                           ("bonus", "7x7 bonus claimed")):
            ax.plot(gens, [100 * r["play"][key] for r in played], marker="o", label=label)
        ax.set_xlabel("generation")
        ax.set_ylabel("share of self-play games (%)")
        ax.set_ylim(0, 100)
        ax.legend()
        ax.set_title("how the self-play games were played")
        _save_fig(fig, folder / f"{prefix}play.png")
    names = F.ALL_FEATURE_NAMES if len(model.weights) == F.N_ALL_FEATURES else F.FEATURE_NAMES
    doc = training_document(man, history, opponents, names, model.weights, prefix)
    path = folder / f"{prefix}report.md"
    # Markdown only: a model folder's files are the model's (it ships in the package)
    atomic_write(path, to_markdown(doc))
    return path


def _save_fig(fig: Any, path: Path) -> None:
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=90, bbox_inches="tight", format="png")


# === the value network (mcts(eval=net); patchsim.bots.network) ===================================
