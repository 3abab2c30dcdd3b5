"""The learned bot: a search whose leaves are judged by a linear model trained per ruleset
(``patchsim train``), and the model files it reads.

A model is one small JSON file, ``<models>/<ruleset hash>/model.json``: the weights of the
features of :mod:`patchsim.bots.features`, the squash scale of its win probability and a
manifest (ruleset hash, feature version, seed, games, time, validation figures), with a
checksum.

Which model a bot uses (its ``model`` parameter; :func:`find_model`):

* ``model=auto`` (the default): the *user* model wins. The bot looks first in the user
  models root, the folder given by its ``models`` parameter or ``$PATCHSIM_MODEL_DIR``
  (else ``~/.cache/patchsim/models``), where ``patchsim train`` writes; only when there is
  no model for the ruleset there does it take the one shipped in the package
  (``patchsim/models``). So training a shipped ruleset again replaces the shipped model
  for every later run on this machine.
* ``model=shipped``: the shipped model only (the user root is not looked at), so that a
  run does not depend on what was trained on the machine.
* ``model=user``: the user root only (no fallback to the shipped model).
* ``model=<file>``: that model file (checked against the ruleset like any other).

``mcts(eval=net)`` (:class:`NetBot`) is the same search with a value network
(:mod:`patchsim.bots.network`) at its leaves, read from ``net.json`` in the same folders with
the same choice of ``model``; ``eval=learned`` never reads it.

A ruleset with no model is an error that says how to train one; the bot never falls back
to another evaluation. :func:`model_provenance` (or :func:`bot_model_provenance`, or a
bound bot's ``provenance``) says which file a bot uses, with the sha256 of its bytes, for
run manifests.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from patchsim.atomic import atomic_write
from patchsim.bots import features as F
from patchsim.bots import network as N
from patchsim.bots.policies import N_PARAMS
from patchsim.bots.registry import (
    OWN_SCORE_HELP,
    PLACE_COST_HELP,
    SAMPLING_HELP,
    WAR_ROLLOUTS_HELP,
    BotSpecError,
    CompiledBot,
    Param,
    canonical_spec,
    check_sampling,
    coerce_param,
    register_evaluation,
)
from patchsim.engine import core
from patchsim.engine.game import Game, Move, MoveList, decode_move
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset, parse_override
from patchsim.engine.tables import Tables

MODEL_FORMAT = "patchsim-learned-model"
MODEL_FILE = "model.json"
SHIPPED_DIR = Path(__file__).resolve().parent.parent / "models"
MODEL_CHOICES = ("auto", "user", "shipped")  # or a path to a model file
# the feature versions a model file may have, and their number of weights: version 1 is the
# base features (mcts(eval=learned)), version 2 adds the packing features (mcts(eval=pack))
FEATURE_COUNTS = {F.FEATURE_VERSION: F.N_FEATURES, F.PACK_FEATURE_VERSION: F.N_ALL_FEATURES}


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
    # set by load_model: the file read and the sha256 of the very bytes parsed (provenance)
    path: Path | None = None
    sha256: str = ""

    def to_json(self) -> str:
        w = [float(x) for x in self.weights]
        data = {"format": MODEL_FORMAT, "manifest": self.manifest, "weights": w,
                "scale": float(self.scale), "checksum": _checksum(w, float(self.scale))}
        return json.dumps(data, indent=1) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the model file and a copy of its manifest beside it, atomically:
        ``manifest.json`` for ``model.json``, ``pack-manifest.json`` for ``pack.json``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, self.to_json())
        name = "manifest.json" if path.name == MODEL_FILE else f"{path.stem}-manifest.json"
        atomic_write(path.parent / name, json.dumps(self.manifest, indent=1) + "\n")
        return path


def _read_file(path: Path, kind: str, fmt: str, what: str, retrain: str
               ) -> tuple[dict, str, Callable[[str], ModelError]]:
    """The checked JSON of a model or network file (``kind`` names it in messages, ``fmt``
    its format, ``what`` what the format is), its sha256 digest, and the ModelError maker
    for what is wrong inside it (naming the file and the command that retrains it): the one
    reader under :func:`load_model` and :func:`load_net`."""

    def bad(problem: str) -> ModelError:
        return ModelError(f"{kind} file {path}: {problem}; retrain it with `{retrain}` "
                          f"(or delete it)")

    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ModelError(f"{kind} file {path}: cannot read it ({e.strerror})") from None
    digest = hashlib.sha256(raw).hexdigest()
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"not valid JSON, corrupt or truncated ({e})") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise bad(f"not a patchsim {what} (format is not {fmt!r})")
    return data, digest, bad


def _check_trained_for(man: dict, ruleset_hash: str | None,
                       bad: Callable[[str], ModelError]) -> None:
    if ruleset_hash is not None and man.get("ruleset_hash") != ruleset_hash:
        raise bad(f"trained for ruleset hash {man.get('ruleset_hash')}, not {ruleset_hash}")


def load_model(path: str | os.PathLike[str], ruleset_hash: str | None = None) -> Model:
    """Read and check a model file; ModelError naming the file and the problem."""
    path = Path(path)
    data, digest, bad = _read_file(path, "model", MODEL_FORMAT, "model",
                                   "patchsim train RULESET")
    man = data.get("manifest")
    w = data.get("weights")
    scale = data.get("scale")
    if not isinstance(man, dict):
        raise bad("no manifest")
    fv = man.get("feature_version")
    if fv not in FEATURE_COUNTS:
        raise bad(f"made for feature version {fv}, this patchsim computes versions "
                  f"{', '.join(str(v) for v in FEATURE_COUNTS)}")
    n_weights = FEATURE_COUNTS[fv]
    if (not isinstance(w, list) or len(w) != n_weights
            or not all(isinstance(x, int | float) and math.isfinite(x) for x in w)):
        raise bad(f"weights must be {n_weights} finite numbers (feature version {fv})")
    if not isinstance(scale, int | float) or not math.isfinite(scale) or scale <= 0:
        raise bad(f"scale must be a positive number, got {scale!r}")
    if data.get("checksum") != _checksum([float(x) for x in w], float(scale)):
        raise bad("checksum mismatch (the weights were changed or damaged)")
    _check_trained_for(man, ruleset_hash, bad)
    return Model(np.array(w, dtype=np.float64), float(scale), man, path.resolve(), digest)


def check_model_choice(model: str, root: str | os.PathLike[str] | None = None) -> str:
    """``model`` if it is a valid ``model`` parameter (auto, user, shipped or a file path)
    that goes with ``root`` (the ``models`` folder, which only auto and user look in);
    BotSpecError saying what is wrong otherwise."""
    if not isinstance(model, str) or not model.strip():
        raise BotSpecError(f"mcts: model={model!r}: give auto, user, shipped or the path of a "
                           "model file")
    if root and model not in ("auto", "user"):
        raise BotSpecError(f"mcts: models={root} is the user models folder, which "
                           f"model={model} does not look in; give one of them")
    return model


def find_model(ruleset: Ruleset, root: str | os.PathLike[str] | None = None,
               model: str = "auto", file: str = MODEL_FILE, evaluation: str = "learned",
               train_hint: str = "") -> Path:
    """The model file a bot with ``models=root, model=model`` uses for ``ruleset``;
    ModelError saying where it looked and how to train one.

    Precedence with ``model="auto"``: the user root (``root``, else ``$PATCHSIM_MODEL_DIR``,
    else ``~/.cache/patchsim/models``) wins over the shipped models; ``"shipped"`` and
    ``"user"`` look in one place only; any other value is the path of a model file.
    ``file`` is the file name in a ruleset's folder (``model.json`` for ``eval=learned``,
    ``net.json`` for ``eval=net``)."""
    h = ruleset.content_hash()
    check_model_choice(model, root)
    if model not in MODEL_CHOICES:
        p = Path(model).expanduser()
        if p.is_dir():
            raise ModelError(f"mcts(eval={evaluation}): model={model} is a folder; give a "
                             f"model file (such as {p / h / file}), or models={model} for a "
                             "models folder")
        if not p.exists():
            raise ModelError(f"mcts(eval={evaluation}): model file {p} does not exist")
        return p
    user = user_model_root(root) / h / file
    places = {"auto": [user, SHIPPED_DIR / h / file],
              "user": [user], "shipped": [SHIPPED_DIR / h / file]}[model]
    for p in places:
        if p.exists():
            return p
    where = " or ".join(str(p) for p in places)
    hint = ("" if model != "shipped" else
            "; patchsim ships models for: "
            + (", ".join(sorted(_shipped_names(file))) or "no ruleset")
            + " (model=auto also takes a trained one)")
    raise ModelError(
        f"mcts(eval={evaluation}) has no {'' if model == 'auto' else model + ' '}model for "
        f"ruleset {ruleset.name!r} (hash {h}); looked in {where}{hint}. Train one with: "
        f"patchsim train {_train_ref(ruleset)}{train_hint} --minutes 20 (or give the bot "
        "models=FOLDER)")


def _shipped_names(file: str = MODEL_FILE) -> list[str]:
    """The ruleset names of the shipped models (from their manifests)."""
    names = []
    for man in SHIPPED_DIR.glob(f"*/{file}"):
        try:
            names.append(str(json.loads(man.read_text("utf-8"))["manifest"]["ruleset_name"]))
        except (OSError, ValueError, KeyError, TypeError):
            names.append(man.parent.name)
    return names


def model_source(path: Path, model: str = "auto") -> str:
    """Where a model file found by :func:`find_model` comes from: ``shipped`` (the
    package's), ``file`` (given as ``model=<file>``) or ``user`` (the user models root)."""
    if model not in MODEL_CHOICES:
        return "file"
    return "shipped" if path.resolve().parent.parent == SHIPPED_DIR else "user"


def _train_ref(ruleset: Ruleset) -> str:
    """The ruleset argument (and ``--set`` options) of the train command that rebuilds
    ``ruleset``. A ruleset changed on the command line is named by what changed,
    ``edition2 (bonus.points=9, starting_buttons=6)`` (play.config.changed_label)."""
    changed = re.fullmatch(r"(\S+) \((.+)\)", ruleset.name)
    base = changed.group(1) if changed else ruleset.name
    for ref in (base, ruleset.name, ruleset.source or ""):
        if not ref:
            continue
        try:
            if load_ruleset(ref).content_hash() == ruleset.content_hash():
                return ref
        except (RulesetError, OSError, ValueError):
            continue
    if changed:
        sets = [s.strip() for s in changed.group(2).split(", ")]
        try:
            rebuilt = load_ruleset(base).with_overrides(dict(parse_override(s) for s in sets))
            if rebuilt.content_hash() == ruleset.content_hash():
                return " ".join([base, *(f"--set {shlex.quote(s)}" for s in sets)])
        except (RulesetError, OSError, ValueError):
            pass
    return f"{base} --set KEY=VALUE ... (the overrides of these rules)"


def model_provenance(ruleset: Ruleset, root: str | os.PathLike[str] | None = None,
                     model: str = "auto") -> dict[str, Any]:
    """Which model a learned bot with ``models=root, model=model`` uses for ``ruleset``:
    ``ruleset``, ``ruleset_hash``, ``source`` (``user``, ``shipped`` or ``file``; see the
    module docstring for which wins), ``path`` (absolute), ``sha256`` (of the model file's
    bytes as the bot read them) and ``created`` (the model manifest's training date, or
    None). ModelError if there is none. For run manifests: a user-trained model takes
    precedence silently, and this records which one played."""
    return provenance_of(model_for(ruleset, root, model), ruleset, model)


def provenance_of(m: Model | NetModel, ruleset: Ruleset, model: str = "auto"
                  ) -> dict[str, Any]:
    """The provenance record (see :func:`model_provenance`) of a loaded model."""
    if m.path is None:
        raise ModelError("this model was not read from a file: it has no provenance")
    return {"ruleset": ruleset.name, "ruleset_hash": ruleset.content_hash(),
            "source": model_source(m.path, model), "path": str(m.path), "sha256": m.sha256,
            "created": m.manifest.get("created"),
            "trained_for": m.manifest.get("ruleset_name"),
            "trained_for_hash": m.manifest.get("ruleset_hash")}


def model_for(ruleset: Ruleset, root: str | os.PathLike[str] | None = None,
              model: str = "auto") -> Model:
    """The checked model of ``ruleset`` that :func:`find_model` picks (read once per file,
    version of it and process)."""
    path = find_model(ruleset, root, model)
    # a model found by hash must be the ruleset's own; a file named explicitly may have
    # been trained on another ruleset (a variant evaluated with its base game's model:
    # the features are defined for any ruleset), which its provenance then records
    expected = None if model not in MODEL_CHOICES else ruleset.content_hash()
    return _load_once(str(path), path.stat().st_mtime_ns, expected)


@lru_cache(maxsize=32)
def _load_once(path: str, mtime_ns: int, expected_hash: str | None) -> Model:
    # keyed by the file's modification time, so a retrained model is read again; bounded,
    # so a long session over many rulesets does not keep every model it ever read
    return load_model(Path(path), expected_hash)


LEARNED_PARAMS: dict[str, tuple[int, Param]] = {
    "iterations": (F.L_ITERATIONS, Param(100, "search iterations per move", int, low=1,
                                                 high=10**9)),
    "c": (F.L_C, Param(0.15, "UCT exploration constant", low=0)),
    # one placement per patch: at equal time the deeper tree wins (200 games: 66.5% for
    # top_k=1 with 300 iterations against top_k=2 with 200)
    "top_k": (F.L_TOP_K, Param(1, "placements searched per patch", int, low=1, high=64)),
    "margin_weight": (F.L_MARGIN_WEIGHT, Param(0.2, "finished games: margin share", low=0,
                                               high=1)),
    "time_ms": (F.L_TIME_MS, Param(0.0, "ms per move (0: off)", low=0)),
    "epsilon": (F.L_EPSILON, Param(0.0, "probability of a random move among the searched "
                                        "root moves (0: deterministic)", low=0, high=1)),
    "temperature": (F.L_TEMPERATURE, Param(0.0, SAMPLING_HELP["temperature"], low=0,
                                           high=100)),
    "sample_plies": (F.L_SAMPLE_PLIES, Param(0, SAMPLING_HELP["sample_plies"], int, low=0,
                                             high=10**6)),
    "war_rollouts": (F.L_WAR_ROLLOUTS, Param(0, WAR_ROLLOUTS_HELP, int, low=0, high=64)),
    "widen": (F.L_WIDEN, Param(0, "placements chosen by search: a node holding 2^s placements "
                                  "a patch takes the next best (by the model, or the packing "
                                  "ranking with widen_by=1) at widen x 4^s visits (0: top_k "
                                  "by the packing ranking, never widened)", int, low=0,
                               high=10**6)),
    "widen_max": (F.L_WIDEN_MAX, Param(8, "most placements a patch a widened node searches",
                                       int, low=1, high=64)),
    "widen_by": (F.L_WIDEN_BY, Param(0, "the order a widening node takes a patch's "
                                        "placements in: 0 the model's value of the quilt "
                                        "after it, 1 the packing ranking (contact, holes, "
                                        "window)", int, low=0, high=1)),
    "contact": (F.L_CONTACT, Param(1.0, "placement ranking: per side touching")),
    # The placement of each searched patch counts the one-square holes it makes and how far
    # it fills the fullest bonus window, besides its contact. They once doubled the cost of a
    # node; the search's placement memo (heuristics.top_placements_memo) ranks a quilt and
    # patch once a search, and at 10 ms a move holes=1, window=0.5 wins 60.0% [55.7, 64.3]
    # against contact alone (400 games, 2026-12-03). holes=0, window=0 is the player before.
    "holes": (F.L_HOLES, Param(1.0, "placement ranking: per one-square hole made",
                                     low=0, high=100)),
    "window": (F.L_WINDOW, Param(0.5, "placement ranking: per bonus-window square",
                                       low=0, high=100)),
    "own_score": (F.L_OWN_SCORE, Param(0.0, OWN_SCORE_HELP, low=0, high=1)),
    "place_cost": (F.L_PLACE_COST, Param(0.0, PLACE_COST_HELP, low=0, high=100)),
    "reuse": (F.L_REUSE, Param(0, "1: start each search from the subtree kept under the "
                                  "bot's last move (0: an empty tree)", int, low=0, high=1)),
}
# what a spec may set (mcts's own names; the contact weight stays at 1, the unit of the others)
LEARNED_KNOBS = ("iterations", "c", "top_k", "margin_weight", "time_ms", "epsilon",
                 "temperature", "sample_plies", "war_rollouts", "widen", "widen_max", "widen_by",
                 "holes", "window", "own_score", "place_cost", "reuse")


class LearnedBot:
    """The learned bot before it meets a ruleset: the model is found when the bot is bound
    to one (:meth:`bind`, or at its first move). Bound, it is a :class:`CompiledBot`."""

    kind = F.LEARNED
    evaluation = "learned"  # the spec's eval= (NetBot: "net", PackBot: "pack")
    defaults: dict[str, Any] = {}  # an evaluation's own defaults over LEARNED_PARAMS'

    def __init__(self, models: str = "", model: str = "auto", **given: Any) -> None:
        given = {key: coerce_param(f"mcts(eval={self.evaluation})", key, value,
                                   _learned_param(key, self.evaluation))
                 for key, value in given.items()}
        # auto, user, shipped or a file (a bound bot's ``model`` is the Model it plays)
        self.model_choice = check_model_choice(model, models)
        values = {k: p.default for k, (_, p) in LEARNED_PARAMS.items()}
        values.update(self.defaults)
        values.update(given)
        check_sampling("mcts(eval=learned)", values)
        if values["place_cost"] > 0 and not (values["widen"] > 0 and values["widen_by"] == 1):
            # a charge with nothing to charge would be ignored without a word
            raise BotSpecError(
                f"mcts(eval={self.evaluation}): place_cost={values['place_cost']:g} charges "
                "the placements a widened search takes in the packing ranking's order, so it "
                f"needs widen > 0 and widen_by=1 (here widen={values['widen']}, "
                f"widen_by={values['widen_by']})")
        self.params = np.zeros(N_PARAMS, dtype=np.float64)
        for key, value in values.items():
            self.params[LEARNED_PARAMS[key][0]] = float(value)
        self.models = models
        self.values = {**values, "models": models, "model": model, "eval": self.evaluation}
        shown: dict[str, Any] = {**given, "eval": self.evaluation}
        if models:
            shown["models"] = models
        if model != "auto":
            shown["model"] = model
        self.spec = canonical_spec("mcts", shown)
        self._bound: dict[str, BoundLearnedBot] = {}

    def _load(self, rs: Ruleset) -> Any:
        return model_for(rs, self.models or None, self.model_choice)

    def bind(self, ruleset: Ruleset | Tables) -> BoundLearnedBot:
        """This bot with the model of ``ruleset`` in its parameter vector."""
        rs = ruleset.ruleset if isinstance(ruleset, Tables) else ruleset
        h = rs.content_hash()
        if h not in self._bound:
            self._bound[h] = BoundLearnedBot(self, self._load(rs), rs)
        return self._bound[h]

    def provenance(self, ruleset: Ruleset | Tables) -> dict[str, Any]:
        """The model this bot uses for ``ruleset``: see :func:`model_provenance`."""
        return self.bind(ruleset).provenance

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

    def __init__(self, bot: LearnedBot, model: Model | NetModel,
                 ruleset: Ruleset | None = None) -> None:
        super().__init__()
        self.params = (net_row(bot.params, model) if isinstance(model, NetModel)
                       else fill_params(bot.params, model))
        self.spec = bot.spec
        self.values = copy.deepcopy(bot.values)
        self.model = model
        self._provenance = (provenance_of(model, ruleset, bot.model_choice)
                            if ruleset is not None and model.path is not None else None)
        # a seat's kept tree (reuse=1): a bound bot plays one ruleset, whose states all have
        # one length, and find_kept matches whole states, so the seat is the whole key
        self._keeps: dict[int | None, np.ndarray] = {}

    def choose_code(self, game: Game, rng_state: np.ndarray) -> int:
        """The move code this bot picks; with ``reuse=1`` from the tree it kept at its last
        move in this seat (as the compiled loops keep one a bot; a new game's first position
        is never a node of an earlier game's tree, :func:`patchsim.bots.kept_tree.find_kept`)."""
        if self.params[F.L_REUSE] <= 0:
            return super().choose_code(game, rng_state)
        keep = self._keeps.get(game.to_move)
        if keep is None:
            keep = self._keeps[game.to_move] = F.learned_keep(self.params, game.tab)
        buf = np.empty(core.max_moves(game.tab), dtype=np.int64)
        return int(F.learned_move_kept(self.params, game.state, game.tab, rng_state, buf,
                                       keep))

    @property
    def provenance(self) -> dict[str, Any]:
        """Which model file this bot plays with, and its sha256: see
        :func:`model_provenance`."""
        if self._provenance is None:
            raise ModelError(f"{self.spec}: its model was not read from a model file")
        return dict(self._provenance)


def fill_params(params: np.ndarray, model: Model) -> np.ndarray:
    """A copy of a learned bot's parameter vector with the model's weights and scale (a
    vector carries a model once its ``L_SCALE`` is positive, as every model's is). A
    feature-version-2 model's packing weights go to ``L_PACK_WEIGHTS`` with ``L_PACK`` set."""
    out = np.array(params, dtype=np.float64, copy=True)
    w = np.asarray(model.weights, dtype=np.float64)
    out[F.L_WEIGHTS:F.L_WEIGHTS + F.N_FEATURES] = w[:F.N_FEATURES]
    pack = len(w) == F.N_ALL_FEATURES
    out[F.L_PACK] = 1.0 if pack else 0.0
    out[F.L_PACK_WEIGHTS:F.L_PACK_WEIGHTS + F.N_PACK_FEATURES] = (
        w[F.N_FEATURES:] if pack else 0.0)
    out[F.L_SCALE] = model.scale
    return out


def bind_bot(bot: Any, ruleset: Ruleset | Tables) -> Any:
    """``bot`` ready for the compiled loops of ``ruleset``: a learned bot gets its model
    (ModelError if there is none); any other bot is returned as it is."""
    return bot.bind(ruleset) if isinstance(bot, LearnedBot) else bot


def bot_model_provenance(bot: Any, ruleset: Ruleset | Tables) -> dict[str, Any] | None:
    """The model provenance (:func:`model_provenance`) of a learned bot, bound or not, for
    ``ruleset``; None for any other bot. ModelError if a learned bot has no model."""
    if isinstance(bot, LearnedBot):
        return bot.provenance(ruleset)
    if isinstance(bot, BoundLearnedBot):
        return bot.provenance
    return None


def _learned_param(key: str, evaluation: str = "learned") -> Param:
    if key not in LEARNED_PARAMS:
        raise BotSpecError(f"mcts(eval={evaluation}): unknown parameter {key!r} (parameters: "
                           f"{', '.join(LEARNED_PARAMS)}, models, model)")
    return LEARNED_PARAMS[key][1]


register_evaluation("learned", LearnedBot, LEARNED_KNOBS)


# --- the packing player (mcts(eval=pack)) -----------------------------------------------------
# The same search with a feature-version-2 model (the base features and the packing ones:
# empty perimeter, empty regions, squares in small regions) in its own file, pack.json, and
# placements chosen by search (widen > 0 by default): every legal placement of an offered
# patch is a candidate, ranked by the model. eval=learned keeps model.json and its search as
# they were, so today's player stays reachable by its spec.
PACK_FILE = "pack.json"
PACK_WIDEN = 8  # visits at which a node first widens (then 32, 128, ...)


class PackBot(LearnedBot):
    """``mcts(eval=pack)``: the learned search with the packing features and placements
    chosen by search (``widen``), its model read from ``pack.json``."""

    evaluation = "pack"
    defaults = {"widen": PACK_WIDEN}

    def _load(self, rs: Ruleset) -> Any:
        path = find_model(rs, self.models or None, self.model_choice, PACK_FILE, "pack",
                          " --pack")
        expected = None if self.model_choice not in MODEL_CHOICES else rs.content_hash()
        m = _load_once(str(path), path.stat().st_mtime_ns, expected)
        if len(m.weights) != F.N_ALL_FEATURES:
            raise ModelError(f"mcts(eval=pack): model file {path} has feature version "
                             f"{m.manifest.get('feature_version')}; eval=pack reads version "
                             f"{F.PACK_FEATURE_VERSION} (train one with `patchsim train "
                             f"{_train_ref(rs)} --pack`)")
        return m


register_evaluation("pack", PackBot, LEARNED_KNOBS)


# --- the value network (mcts(eval=net); patchsim.bots.network) --------------------------------
# Its own model file, next to the linear one: <models>/<ruleset hash>/net.json. A ruleset
# may have both; eval=learned keeps reading model.json exactly as before, so the committed
# studies that name mcts(eval=learned) replay unchanged, and eval=net is chosen by name.
NET_FORMAT = "patchsim-net-model"
NET_FILE = "net.json"


def _net_checksum(net: list[float]) -> str:
    return hashlib.sha256(json.dumps(net).encode("ascii")).hexdigest()[:16]


@dataclass
class NetModel:
    """A trained value network: its flat array (:mod:`patchsim.bots.network`) and manifest
    (ruleset, network version, shape, training record)."""

    net: np.ndarray
    manifest: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    sha256: str = ""

    @property
    def scale(self) -> float:
        return float(self.net[N.H_SCALE])

    @property
    def shape(self) -> list[int]:
        """[inputs, hidden1, hidden2 (0: none)]."""
        return [int(self.net[N.H_INPUTS]), int(self.net[N.H_HIDDEN1]),
                int(self.net[N.H_HIDDEN2])]

    def predict_margin(self, game: Game) -> float:
        """The network's predicted final margin (points) of the player to move in ``game``
        (the compiled forward pass the search uses)."""
        me = max(0, int(core.to_move(game.state, game.tab)))
        return float(N.net_margin(self.net, game.state, game.tab, int(me)))

    def to_json(self) -> str:
        w = [float(x) for x in self.net]
        man = {**self.manifest, "net_version": N.NET_VERSION, "shape": self.shape,
               "inputs": list(N.INPUT_NAMES)}
        return json.dumps({"format": NET_FORMAT, "net_version": N.NET_VERSION,
                           "manifest": man, "net": w, "checksum": _net_checksum(w)},
                          indent=1) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the network file and a ``net-manifest.json`` copy of its manifest."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = self.to_json()
        atomic_write(path, text)
        atomic_write(path.parent / "net-manifest.json",
                     json.dumps(json.loads(text)["manifest"], indent=1) + "\n")
        return path


def load_net(path: str | os.PathLike[str], ruleset_hash: str | None = None) -> NetModel:
    """Read and check a network file; ModelError naming the file and the problem (an
    unknown network version names the version)."""
    path = Path(path)
    data, digest, bad = _read_file(path, "network", NET_FORMAT, "value network",
                                   "patchsim train RULESET --net")
    version = data.get("net_version")
    if version != N.NET_VERSION:
        raise bad(f"made for network version {version!r}, this patchsim reads version "
                  f"{N.NET_VERSION}")
    man = data.get("manifest")
    w = data.get("net")
    if not isinstance(man, dict):
        raise bad("no manifest")
    if (not isinstance(w, list) or len(w) < N.HEADER
            or not all(isinstance(x, int | float) and math.isfinite(x) for x in w)):
        raise bad("the network must be a list of finite numbers")
    if data.get("checksum") != _net_checksum([float(x) for x in w]):
        raise bad("checksum mismatch (the weights were changed or damaged)")
    net = np.array(w, dtype=np.float64)
    n_in, h1, h2 = (int(net[N.H_INPUTS]), int(net[N.H_HIDDEN1]), int(net[N.H_HIDDEN2]))
    if (n_in != N.N_INPUTS or not 1 <= h1 <= 4096 or not 0 <= h2 <= 4096
            or len(w) != N.n_weights(n_in, h1, h2) or net[N.H_SCALE] <= 0
            or np.any(net[N.HEADER + n_in:N.HEADER + 2 * n_in] <= 0)):
        raise bad(f"its shape {[n_in, h1, h2]} does not fit its {len(w)} numbers or the "
                  f"{N.N_INPUTS} inputs of network version {N.NET_VERSION}")
    if man.get("shape") != [n_in, h1, h2]:
        raise bad(f"the manifest's shape {man.get('shape')} is not the network's "
                  f"{[n_in, h1, h2]}")
    _check_trained_for(man, ruleset_hash, bad)
    return NetModel(net, man, path.resolve(), digest)


def net_for(ruleset: Ruleset, root: str | os.PathLike[str] | None = None,
            model: str = "auto") -> NetModel:
    """The checked network of ``ruleset`` (``net.json``; same precedence as
    :func:`find_model`), read once per file version and process."""
    path = find_model(ruleset, root, model, NET_FILE, "net", " --net")
    expected = None if model not in MODEL_CHOICES else ruleset.content_hash()
    return _load_net_once(str(path), path.stat().st_mtime_ns, expected)


@lru_cache(maxsize=32)
def _load_net_once(path: str, mtime_ns: int, expected_hash: str | None) -> NetModel:
    return load_net(Path(path), expected_hash)


def net_row(params: np.ndarray, model: NetModel) -> np.ndarray:
    """The row a network bot hands the compiled loops: its parameter vector (with the
    network's scale in ``L_SCALE``, which squashes finished games' margins alike) followed
    by the network's flat array (read by :func:`patchsim.bots.features.leaf_value0`)."""
    head = np.array(params[:N_PARAMS], dtype=np.float64, copy=True)
    head[F.L_SCALE] = model.scale
    return np.concatenate([head, model.net])


def param_rows(vectors: list[np.ndarray]) -> np.ndarray:
    """The compiled bots' rows stacked for the game loops: a network bot's row is longer
    than the parameter vector, so shorter rows are padded with zeros (never read)."""
    width = max(len(v) for v in vectors)
    out = np.zeros((len(vectors), width), dtype=np.float64)
    for i, v in enumerate(vectors):
        out[i, :len(v)] = v
    return out


class NetBot(LearnedBot):
    """``mcts(eval=net)``: the learned search with the ruleset's value network at its
    leaves (same knobs as ``eval=learned``; the network file is ``net.json``)."""

    evaluation = "net"

    def _load(self, rs: Ruleset) -> Any:
        return net_for(rs, self.models or None, self.model_choice)


register_evaluation("net", NetBot, LEARNED_KNOBS)
