"""The learned bot: a search whose leaves are judged by a linear model trained per ruleset
(``patchsim train``), and the model files it reads.

A model is one small JSON file, ``<models>/<ruleset hash>/model.json``: the weights of the
features of :mod:`patchsim.bots.features`, the squash scale of its win probability and a
manifest (ruleset hash, feature version, seed, games, time, validation figures), with a
checksum. The bot looks for it, in order, in the folder given by its ``models`` parameter or
``$PATCHSIM_MODEL_DIR`` (else ``~/.cache/patchsim/models``), then among the models shipped
in the package (``patchsim/models``). A ruleset with no model is an error that says how to
train one; the bot never falls back to another evaluation.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from patchsim.atomic import atomic_write
from patchsim.bots import features as F
from patchsim.bots.policies import N_PARAMS
from patchsim.bots.registry import (
    BotSpecError,
    CompiledBot,
    Param,
    canonical_spec,
    register_evaluation,
)
from patchsim.engine.game import Game, Move, MoveList, decode_move
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.tables import Tables

MODEL_FORMAT = "patchsim-learned-model"
MODEL_FILE = "model.json"
SHIPPED_DIR = Path(__file__).resolve().parent.parent / "models"


class ModelError(BotSpecError):
    """A model that is missing, unreadable or made for other rules or features."""


def user_model_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where ``patchsim train`` writes and the bot looks first: ``explicit``, else
    ``$PATCHSIM_MODEL_DIR``, else ``~/.cache/patchsim/models`` (XDG_CACHE_HOME respected)."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("PATCHSIM_MODEL_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "patchsim" / "models"


def model_path(ruleset_hash: str, root: str | os.PathLike[str] | None = None) -> Path:
    """The model file of a ruleset under a models root (the user root by default)."""
    return user_model_root(root) / ruleset_hash / MODEL_FILE


def _checksum(weights: list[float], scale: float) -> str:
    text = json.dumps({"weights": weights, "scale": scale}, sort_keys=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


@dataclass
class Model:
    """A trained evaluation: weights (``N_FEATURES``), win-probability scale, manifest."""

    weights: np.ndarray
    scale: float
    manifest: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        w = [float(x) for x in self.weights]
        data = {"format": MODEL_FORMAT, "manifest": self.manifest, "weights": w,
                "scale": float(self.scale), "checksum": _checksum(w, float(self.scale))}
        return json.dumps(data, indent=1) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the model file and a ``manifest.json`` copy of its manifest, atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, self.to_json())
        atomic_write(path.parent / "manifest.json", json.dumps(self.manifest, indent=1) + "\n")
        return path


def load_model(path: str | os.PathLike[str], ruleset_hash: str | None = None) -> Model:
    """Read and check a model file; ModelError naming the file and the problem."""
    path = Path(path)

    def bad(what: str) -> ModelError:
        return ModelError(f"model file {path}: {what}; retrain it with `patchsim train "
                          f"RULESET` (or delete it)")

    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ModelError(f"model file {path}: cannot read it ({e.strerror})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"not valid JSON, corrupt or truncated ({e})") from None
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        raise bad(f"not a patchsim model (format is not {MODEL_FORMAT!r})")
    man = data.get("manifest")
    w = data.get("weights")
    scale = data.get("scale")
    if not isinstance(man, dict):
        raise bad("no manifest")
    fv = man.get("feature_version")
    if fv != F.FEATURE_VERSION:
        raise bad(f"made for feature version {fv}, this patchsim computes version "
                  f"{F.FEATURE_VERSION}")
    if (not isinstance(w, list) or len(w) != F.N_FEATURES
            or not all(isinstance(x, int | float) and math.isfinite(x) for x in w)):
        raise bad(f"weights must be {F.N_FEATURES} finite numbers")
    if not isinstance(scale, int | float) or not math.isfinite(scale) or scale <= 0:
        raise bad(f"scale must be a positive number, got {scale!r}")
    if data.get("checksum") != _checksum([float(x) for x in w], float(scale)):
        raise bad("checksum mismatch (the weights were changed or damaged)")
    if ruleset_hash is not None and man.get("ruleset_hash") != ruleset_hash:
        raise bad(f"trained for ruleset hash {man.get('ruleset_hash')}, not {ruleset_hash}")
    return Model(np.array(w, dtype=np.float64), float(scale), man)


def find_model(ruleset: Ruleset, root: str | os.PathLike[str] | None = None) -> Path:
    """The model file the bot uses for ``ruleset``; ModelError saying how to train one."""
    h = ruleset.content_hash()
    places = [model_path(h, root), SHIPPED_DIR / h / MODEL_FILE]
    for p in places:
        if p.exists():
            return p
    where = " or ".join(str(p) for p in places)
    raise ModelError(
        f"mcts(eval=learned) has no model for ruleset {ruleset.name!r} (hash {h}); looked in "
        f"{where}. Train one with: patchsim train {_train_ref(ruleset)} --minutes 20 "
        "(or give the bot models=FOLDER)")


def _train_ref(ruleset: Ruleset) -> str:
    """The ruleset argument of the train command that rebuilds ``ruleset``."""
    from patchsim.engine.ruleset import RulesetError, load_ruleset

    base = ruleset.name.split("+")[0]  # an overridden ruleset is named "<base>+<hash>"
    refs = [base, ruleset.name, ruleset.source or ""]
    for ref in refs:
        if not ref:
            continue
        try:
            if load_ruleset(ref).content_hash() == ruleset.content_hash():
                return ref
        except (RulesetError, OSError, ValueError):
            continue
    return f"{base} --set KEY=VALUE ... (the overrides of these rules)"


_LOADED: dict[tuple[str, str], Model] = {}


def model_for(ruleset: Ruleset, root: str | os.PathLike[str] | None = None) -> Model:
    """The checked model of ``ruleset`` (read once per file and process)."""
    path = find_model(ruleset, root)
    key = (str(path), str(path.stat().st_mtime_ns))
    if key not in _LOADED:
        _LOADED[key] = load_model(path, ruleset.content_hash())
    return _LOADED[key]


LEARNED_PARAMS: dict[str, tuple[int, Param]] = {
    "iterations": (F.L_ITERATIONS, Param(100, "search iterations per move", int, low=1)),
    "c": (F.L_C, Param(0.15, "UCT exploration constant", low=0)),
    # one placement per patch: at equal time the deeper tree wins (200 games: 66.5% for
    # top_k=1 with 300 iterations against top_k=2 with 200)
    "top_k": (F.L_TOP_K, Param(1, "placements searched per patch", int, low=1, high=64)),
    "margin_weight": (F.L_MARGIN_WEIGHT, Param(0.2, "finished games: margin share", low=0,
                                               high=1)),
    "time_ms": (F.L_TIME_MS, Param(0.0, "ms per move (0: off)", low=0)),
    "contact": (F.L_CONTACT, Param(1.0, "placement ranking: per side touching")),
    # holes and window off: they double the cost of a node, and at equal time the deeper
    # search wins (200 games: 57.5% for contact-only at twice the iterations)
    "holes": (F.L_HOLES, Param(0.0, "placement ranking: per one-square hole made")),
    "window": (F.L_WINDOW, Param(0.0, "placement ranking: per bonus-window square")),
}
# what a spec may set (mcts's own names; the placement ranking stays at its defaults)
LEARNED_KNOBS = ("iterations", "c", "top_k", "margin_weight", "time_ms")


class LearnedBot:
    """The learned bot before it meets a ruleset: the model is found when the bot is bound
    to one (:meth:`bind`, or at its first move). Bound, it is a :class:`CompiledBot`."""

    kind = F.LEARNED

    def __init__(self, models: str = "", **given: Any) -> None:
        values = {k: p.default for k, (_, p) in LEARNED_PARAMS.items()}
        values.update(given)
        self.params = np.zeros(N_PARAMS, dtype=np.float64)
        for key, value in values.items():
            self.params[LEARNED_PARAMS[key][0]] = float(value)
        self.models = models
        self.values = {**values, "models": models, "eval": "learned"}
        shown: dict[str, Any] = {**given, "eval": "learned"}
        if models:
            shown["models"] = models
        self.spec = canonical_spec("mcts", shown)
        self._bound: dict[str, BoundLearnedBot] = {}

    def bind(self, ruleset: Ruleset | Tables) -> BoundLearnedBot:
        """This bot with the model of ``ruleset`` in its parameter vector."""
        rs = ruleset.ruleset if isinstance(ruleset, Tables) else ruleset
        h = rs.content_hash()
        if h not in self._bound:
            model = model_for(rs, self.models or None)
            self._bound[h] = BoundLearnedBot(self, model)
        return self._bound[h]

    def choose_code(self, game: Game, rng_state: np.ndarray) -> int:
        return self.bind(game.tables).choose_code(game, rng_state)

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        state = np.array([rng.integers(0, 2**63)], dtype=np.uint64)
        return decode_move(self.choose_code(game, state), game.tables)

    def __repr__(self) -> str:
        return f"<bot {self.spec}>"


class BoundLearnedBot(CompiledBot):
    """A learned bot with its model's weights filled in: plays in the compiled loops."""

    kind = F.LEARNED

    def __init__(self, bot: LearnedBot, model: Model) -> None:
        super().__init__()
        self.params = fill_params(bot.params, model)
        self.spec = bot.spec
        self.values = copy.deepcopy(bot.values)
        self.model = model


def fill_params(params: np.ndarray, model: Model) -> np.ndarray:
    """A copy of a learned bot's parameter vector with the model's weights and scale."""
    out = np.array(params, dtype=np.float64, copy=True)
    out[F.L_WEIGHTS:F.L_WEIGHTS + F.N_FEATURES] = model.weights
    out[F.L_SCALE] = model.scale
    out[F.L_BOUND] = 1.0
    return out


def bind_bot(bot: Any, ruleset: Ruleset | Tables) -> Any:
    """``bot`` ready for the compiled loops of ``ruleset``: a learned bot gets its model
    (ModelError if there is none); any other bot is returned as it is."""
    return bot.bind(ruleset) if isinstance(bot, LearnedBot) else bot


register_evaluation("learned", LearnedBot, LEARNED_KNOBS)
