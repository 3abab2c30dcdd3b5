"""Bots: one small protocol, and the registry of built-in strategies a spec names (the spec
grammar is :mod:`patchsim.bots.spec`; bots from a user's module, :mod:`patchsim.bots.imported`).

A bot is anything with a ``choose(game, moves, rng)`` method that returns one of ``moves``.
It gets a private copy of the game (so it cannot change the real one), the legal moves and a
random generator seeded for this game and seat; the engine applies the move.

Built-in bots are *compiled*: they also carry a policy id and a parameter vector so that whole
games between them run inside numba (:mod:`patchsim.bots.policies`). Their ``choose`` calls the
very same compiled function, so a compiled bot plays identically in both loops.

Bots are named by specs: ``greedy``, ``mcts(iterations=1000, rollout=greedy)``, a mapping
``{name: mcts, iterations: 1000}``, or an import path ``mypackage.mybots:Hoarder(x=1)``.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from patchsim.bots import policies as P
from patchsim.bots import scripted, search
from patchsim.bots.imported import import_bot as _import_bot
from patchsim.bots.spec import (
    BotSpecError,
    Param,
    canonical_spec,
    coerce_param,
    parse_spec,
)
from patchsim.engine import core
from patchsim.engine.game import Game, Move, MoveList, decode_move
from patchsim.engine.tables import Tables
from patchsim.errors import quote


@runtime_checkable
class Bot(Protocol):
    """The bot protocol."""

    spec: str  # canonical spec, recorded with every result

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move: ...


class CompiledBot:
    """A built-in bot backed by a compiled policy (policy id + parameter vector)."""

    kind: int = P.RANDOM
    spec: str = "random"

    def __init__(self) -> None:
        self.params = np.zeros(P.N_PARAMS, dtype=np.float64)

    def choose_code(self, game: Game, rng_state: np.ndarray) -> int:
        """The move code this bot picks, drawing from a splitmix64 stream (shape (1,))."""
        buf = np.empty(core.max_moves(game.tab), dtype=np.int64)
        return int(P.choose_move(self.kind, self.params, game.state, game.tab, rng_state, buf))

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        state = np.array([rng.integers(0, 2**63)], dtype=np.uint64)
        code = self.choose_code(game, state)
        return decode_move(code, game.tables)

    def bind(self, tables: Tables) -> CompiledBot:
        """This bot ready for the ruleset of ``tables`` (a bot whose parameters depend on
        the ruleset returns a bound copy; the others return themselves)."""
        return self

    def __repr__(self) -> str:
        return f"<bot {self.spec}>"


def resolve_patch_id(given: str, ids: Sequence[str]) -> str | None:
    """The patch id of ``ids`` that ``given`` names: exactly, or ignoring case and leading
    zeros of the number (``p1`` is ``P01``); None if none does."""
    if given in ids:
        return given

    def key(pid: str) -> tuple[str, int | str]:
        head = pid.rstrip("0123456789")
        tail = pid[len(head):]
        return head.upper(), int(tail) if tail else ""

    matches = [pid for pid in ids if key(pid) == key(given)]
    return matches[0] if len(matches) == 1 else None


class _Forbidding(CompiledBot):
    """Restricted play: a bot with ``forbid=<patch id>`` never buys that patch. Patch ids
    map to indices per ruleset, so the index goes into the parameter vector (slot
    ``_forbid_slot``, 1 + index) only when the bot is bound to one."""

    forbid: str = ""
    _forbid_slot: int = -1

    def bind(self, tables: Tables) -> CompiledBot:
        if not self.forbid:
            return self
        ids = tables.patch_ids
        pid = resolve_patch_id(self.forbid, ids)
        if pid is None:
            bot = self.spec.partition("(")[0]  # the spec holds the (possibly long) value
            raise BotSpecError(f"{bot}: forbid={quote(self.forbid)} is not a patch of ruleset "
                               f"{quote(tables.ruleset.name)} (patches: {', '.join(ids)})")
        bound = copy.copy(self)
        bound.params = self.params.copy()
        bound.params[self._forbid_slot] = 1 + ids.index(pid)
        return bound

    def choose_code(self, game: Game, rng_state: np.ndarray) -> int:
        # a bot used move by move (Python API) binds to the game's ruleset itself
        bot = self.bind(game.tables) if self.forbid else self
        return CompiledBot.choose_code(bot, game, rng_state)
# --- registry ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class BotInfo:
    name: str
    description: str
    factory: Callable[..., Bot]
    params: dict[str, Param]


REGISTRY: dict[str, BotInfo] = {}


def register(name: str, description: str, params: dict[str, Param] | None = None):
    """Class decorator: make a bot available by name in specs and ``patchsim bots``."""

    def deco(factory: Callable[..., Bot]) -> Callable[..., Bot]:
        REGISTRY[name] = BotInfo(name, description, factory, params or {})
        return factory

    return deco


@register("random", "Every legal move equally likely; leather squares uniform (the benchmark).")
class RandomBot(CompiledBot):
    kind = P.RANDOM

    def __init__(self) -> None:
        super().__init__()
        self.spec = "random"


@register("pass", "Always pass (a floor: collects buttons, never covers a square).")
class PassBot(CompiledBot):
    kind = P.ALWAYS_PASS

    def __init__(self) -> None:
        super().__init__()
        self.spec = "pass"


@register("first-fit", "Buy the first affordable patch on offer that fits, at the first "
                       "placement found (a baseline with no judgement).")
class FirstFitBot(CompiledBot):
    kind = P.FIRST_FIT

    def __init__(self) -> None:
        super().__init__()
        self.spec = "first-fit"


# The scripted strategies share one compiled policy; a strategy is a set of weights.
SCRIPTED_PARAMS: dict[str, tuple[int, Param]] = {
    "w_income": (scripted.P_W_INCOME, Param(1.0, "value of 1 income button per income mark ahead")),
    "w_area": (scripted.P_W_AREA, Param(1.0, "value of 1 square, in units of the empty-square "
                                      "penalty")),
    "w_cost": (scripted.P_W_COST, Param(1.0, "weight of the button cost")),
    "w_time": (scripted.P_W_TIME, Param(1.0, "cost of 1 time space (when ratio=0)")),
    "ratio": (scripted.P_RATIO, Param(1, "1: rank by value per time; 0: value minus time cost",
                                      int)),
    "time_offset": (scripted.P_TIME_OFFSET, Param(1.0, "added to the time cost before dividing",
                                           low=0.01)),
    "w_place": (scripted.P_W_PLACE, Param(0.1, "weight of the packing score in the patch choice")),
    "contact": (scripted.P_CONTACT, Param(1.0, "placement: per side touching a patch or the "
                                                "border")),
    "holes": (scripted.P_HOLES, Param(0.5, "placement: penalty per one-square hole created")),
    "window": (scripted.P_WINDOW, Param(0.3, "placement: per square of the fullest 7x7 window")),
    "pass_margin": (scripted.P_PASS_MARGIN, Param(0.0, "buy only when the best value beats this")),
    "epsilon": (scripted.P_EPSILON, Param(0.0, "probability of a uniformly random move", low=0,
                                   high=1)),
    "area_ramp": (scripted.P_AREA_RAMP, Param(0.0, "square value grows by this factor over "
                                                    "the game")),
    "placement": (scripted.P_FIRST_FIT, Param("tight", "tight: best packing; first: first fit", str,
                                       ("tight", "first"))),
    "button_cap": (scripted.P_BUTTON_CAP, Param(0.0, "above this many buttons, cost counts half "
                                              "(0: off)")),
    "forbid": (scripted.P_FORBID, Param("", "restricted play: a patch id this bot never buys "
                                        "('': none)", str)),
}

STRATEGIES: dict[str, tuple[str, dict[str, float]]] = {
    "greedy": ("Button efficiency: (income still to come + squares x penalty - cost) per "
               "time space, tight packing.", {}),
    "income": ("Income first: buys button income early, coverage late (area weight ramps up "
               "over the game).", {"w_income": 1.6, "w_area": 0.4, "area_ramp": 2.5}),
    "area": ("Area first: squares covered per time space, money second.",
             {"w_income": 0.5, "w_area": 1.6, "w_cost": 0.6}),
    "bonus": ("7x7 chaser: efficiency plus a strong pull to fill one 7x7 window first.",
              {"window": 2.0, "w_place": 0.3, "w_area": 1.2}),
}


class ScriptedBot(_Forbidding):
    """A scripted strategy: patch choice by weighted value per time, tight placement."""

    kind = P.SCRIPTED
    _forbid_slot = scripted.P_FORBID

    def __init__(self, strategy: str = "greedy", **given: Any) -> None:
        super().__init__()
        preset = dict(STRATEGIES[strategy][1])
        values = {k: p.default for k, (_, p) in SCRIPTED_PARAMS.items()}
        values.update(preset)
        values.update(given)
        if not given.get("forbid", "x"):
            del given["forbid"]  # forbid='' is the default: keep it out of the spec
        for key, value in values.items():
            idx, param = SCRIPTED_PARAMS[key]
            if key == "forbid":
                self.forbid = str(value)  # its index is set by bind()
            elif key == "placement":
                self.params[idx] = 1.0 if value == "first" else 0.0
            else:
                self.params[idx] = float(value)
        self.values = values
        self.strategy = strategy
        self.spec = canonical_spec(strategy, given)


def _scripted_factory(strategy: str) -> Callable[..., Bot]:
    def make(**given: Any) -> Bot:
        return ScriptedBot(strategy, **given)

    return make


for _name, (_desc, _preset) in STRATEGIES.items():
    register(_name, _desc, {k: p for k, (_, p) in SCRIPTED_PARAMS.items()})(
        _scripted_factory(_name))


# Rollouts skip the hole and window terms: half the cost per rollout for little strength.
DEFAULT_ROLLOUT = "greedy(epsilon=0.1, holes=0, window=0)"

# opening diversity of both searches (rollouts and eval=learned): the same two knobs
SAMPLING_HELP = {
    "temperature": "opening diversity: in the first sample_plies plies, draw the move with "
                   "probability ~ root visits^(1/temperature) (0: most visited; seeded)",
    "sample_plies": "plies of the game (both seats) during which temperature applies",
}


WAR_ROLLOUTS_HELP = ("passing wars: k > 0 values a tree node reached by k passes in a row "
                     "by the model's one-ply player's playout to the end (0: off)")
OWN_SCORE_HELP = ("a seat's reward adds own_score x the points it would end on if it only "
                  "passed from there (its score, income to come, a button a space ahead): "
                  "a tie-breaker towards moves that leave the seat points (0: win only)")
PLACE_COST_HELP = ("with widen and widen_by=1: points a placement costs its seat per unit "
                   "it falls below its patch's best by the packing ranking (a side in "
                   "contact; about 0.6 measured), so that the model chooses a lower-ranked "
                   "placement only where it sees more than that (0: no charge)")


def check_sampling(bot: str, values: dict[str, Any]) -> None:
    """BotSpecError if only one of ``temperature`` and ``sample_plies`` is set: alone,
    either one would silently change nothing."""
    t, k = values.get("temperature", 0), values.get("sample_plies", 0)
    if (t > 0) != (k > 0):
        given, missing = (("temperature", "sample_plies") if t > 0
                          else ("sample_plies", "temperature"))
        raise BotSpecError(f"{bot}: {given}={values[given]} needs {missing} > 0 too "
                           "(temperature=T, sample_plies=K draws the move by root visits^(1/T) "
                           "in the game's first K plies), or leave both out")


MCTS_PARAMS: dict[str, tuple[int, Param]] = {
    "iterations": (search.M_ITERATIONS, Param(1000, "playouts per move", int, low=1,
                                                  high=10**9)),
    "c": (search.M_C, Param(0.7, "UCT exploration constant", low=0)),
    "top_k": (search.M_TOP_K, Param(2, "placements searched per patch (best by the heuristic)",
                               int, low=1, high=64)),
    "margin_weight": (search.M_MARGIN_WEIGHT, Param(0.2, "share of the reward from the score "
                                                    "margin (rest: win/loss)", low=0, high=1)),
    "margin_scale": (search.M_MARGIN_SCALE, Param(15.0, "points of margin for ~76% of the margin "
                                                   "reward", low=0.001)),
    "time_ms": (search.M_TIME_MS, Param(0.0, "stop after this many ms per move (0: off; not "
                                        "reproducible, refused by batch runs)", low=0)),
    "temperature": (search.M_TEMPERATURE, Param(0.0, SAMPLING_HELP["temperature"], low=0,
                                                high=100)),
    "sample_plies": (search.M_SAMPLE_PLIES, Param(0, SAMPLING_HELP["sample_plies"], int, low=0,
                                                  high=10**6)),
}


class MCTSBot(_Forbidding):
    kind = P.MCTS
    _forbid_slot = search.M_FORBID

    def __init__(self, rollout: str | dict[str, Any] = DEFAULT_ROLLOUT, forbid: str = "",
                 **given: Any) -> None:
        super().__init__()
        values = {k: p.default for k, (_, p) in MCTS_PARAMS.items()}
        values.update(given)
        check_sampling("mcts", values)
        for key, value in values.items():
            self.params[MCTS_PARAMS[key][0]] = float(value)
        self.forbid = str(forbid)  # its index is set by bind()
        if self.forbid:
            given["forbid"] = self.forbid
            values["forbid"] = self.forbid
        roll = make_bot(rollout)
        if not isinstance(roll, CompiledBot) or isinstance(roll, MCTSBot):
            raise BotSpecError(f"mcts: rollout={quote(rollout)} must be a built-in non-search "
                               f"bot ({', '.join(n for n in REGISTRY if n != 'mcts')})")
        if getattr(roll, "forbid", ""):
            # rollouts play both seats: a restriction there would handicap the opponent too
            raise BotSpecError(f"mcts: rollout={quote(rollout)}: forbid applies to the search "
                               "(mcts(forbid=...)), not to its rollouts")
        self.params[search.M_ROLLOUT_KIND] = roll.kind
        self.params[search.ROLLOUT_OFFSET:] = roll.params[: P.N_PARAMS - search.ROLLOUT_OFFSET]
        # rollouts simulate both players unrestricted (the restricted player's may buy it)
        self.params[search.ROLLOUT_OFFSET + scripted.P_FORBID] = 0.0
        self.values = {**values, "rollout": roll.spec}
        shown = dict(given)
        if roll.spec != make_bot(DEFAULT_ROLLOUT).spec:
            shown["rollout"] = roll.spec
        self.spec = canonical_spec("mcts", shown)


# Leaf evaluations other than rollouts, registered by the modules that implement them
# (patchsim.bots.learned registers "learned" when the bots package is imported): name ->
# (factory taking the search's knobs and models=, the knobs it accepts).
EVALUATIONS: dict[str, tuple[Callable[..., Bot], tuple[str, ...]]] = {}


def register_evaluation(name: str, factory: Callable[..., Bot],
                        knobs: tuple[str, ...]) -> None:
    """Make ``mcts(eval=name, ...)`` build its bot with ``factory``."""
    EVALUATIONS[name] = (factory, knobs)


# mcts parameters that only a registered evaluation (eval=learned) takes
_EVALUATION_ONLY = ("models", "model", "epsilon", "war_rollouts", "widen", "widen_max",
                    "widen_by", "holes", "window", "own_score", "place_cost", "reuse")


def _mcts_factory(eval: str = "rollout", models: str | None = None, model: str | None = None,
                  **given: Any) -> Bot:
    """``mcts(...)``: scripted rollouts, or with ``eval=learned`` the search judged by the
    ruleset's trained model (:mod:`patchsim.bots.learned`), which takes no rollout knobs."""
    if eval in EVALUATIONS:
        factory, knobs = EVALUATIONS[eval]
        extra = sorted(set(given) - set(knobs))
        if extra:
            raise BotSpecError(f"mcts: {', '.join(extra)} do(es) not apply with eval={eval} "
                               f"(parameters: {', '.join(knobs)}, models, model)")
        return factory(models=models or "", model=model or "auto", **given)
    only = [k for k, v in {"models": models, "model": model, **given}.items()
            if k in _EVALUATION_ONLY and v is not None]
    if only:
        # the rollout search varies already: its rollouts draw from the seat's stream
        evals = " or ".join(f"eval={name}" for name in sorted(EVALUATIONS) or ["learned"])
        raise BotSpecError(f"mcts: {', '.join(k + '=' for k in only)} "
                           f"appl{'ies' if len(only) == 1 else 'y'} only with {evals}")
    return MCTSBot(**given)


register("mcts", "Monte Carlo tree search over pass and the best few placements of each "
                 "patch: scripted rollouts, or eval=learned for a model trained per ruleset "
                 "(`patchsim train RULESET`, no rollouts), or eval=net for a value network "
                 "(`patchsim train RULESET --net`).",
         {**{k: p for k, (_, p) in MCTS_PARAMS.items()},
          "rollout": Param(DEFAULT_ROLLOUT, "rollout policy: a non-search bot spec", str),
          "forbid": Param("", "restricted play: a patch id the searching player never buys "
                          "('': none; its rollouts may buy it)", str),
          "eval": Param("rollout", "leaf evaluation: rollout (scripted playouts), learned "
                        "(the ruleset's trained linear model), pack (a linear model with "
                        "packing features whose search chooses placements) or net (its "
                        "trained value network)", str, ("rollout", "learned", "pack", "net")),
          "models": Param("", "eval=learned: folder of trained models (default "
                          "$PATCHSIM_MODEL_DIR or ~/.cache/patchsim/models, then the shipped "
                          "ones)", str),
          "model": Param("auto", "eval=learned: which model plays: auto (a trained one in "
                         "the models folder wins over the shipped one), user, shipped, or "
                         "a model file's path", str),
          "epsilon": Param(0.0, "eval=learned: probability of a random move among the "
                           "searched ones (0: deterministic; from the seat's random stream)",
                           low=0, high=1),
          "war_rollouts": Param(0, "eval=learned: " + WAR_ROLLOUTS_HELP, int, low=0,
                                high=64),
          "widen": Param(0, "eval=learned/pack/net: placements chosen by search, every "
                         "legal one ranked by the model (widen_by=1: by the packing "
                         "ranking); a node widens at widen x 4^s visits (0: top_k by the "
                         "packing ranking; eval=pack: 8)", int, low=0, high=10**6),
          "widen_max": Param(8, "eval=learned/pack/net: most placements a patch a widened "
                             "node searches", int, low=1, high=64),
          "widen_by": Param(0, "eval=learned/pack/net: the order a widening node takes a "
                            "patch's placements in: 0 the model's value of the quilt after "
                            "it, 1 the packing ranking (contact, holes, window)", int, low=0,
                            high=1),
          "holes": Param(1.0, "eval=learned/pack/net: placement ranking, per one-square "
                         "hole made (besides 1 per side in contact; with window=0, 0 is the "
                         "ranking before 2026-12-03)", low=0, high=100),
          "window": Param(0.5, "eval=learned/pack/net: placement ranking, per square of the "
                          "fullest bonus window (in the printed game's 7 points)", low=0,
                          high=100),
          "own_score": Param(0.0, "eval=learned/pack/net: " + OWN_SCORE_HELP, low=0,
                             high=1),
          "place_cost": Param(0.0, "eval=learned/pack/net: " + PLACE_COST_HELP, low=0,
                              high=100),
          "reuse": Param(0, "eval=learned/pack/net: 1 starts each search from the subtree "
                         "kept under the bot's last move (0: an empty tree)", int, low=0,
                         high=1)})(_mcts_factory)
def make_bot(spec: str | dict[str, Any] | Bot, *, bot_path: Sequence[str] = ()) -> Bot:
    """The bot a spec names; BotSpecError listing what exists when it names none.

    An import-path spec (``mypackage.mybots:MyBot(x=1)``) is imported from the installed
    packages, and from the folders in ``bot_path`` (the command line passes the working
    folder, as ``python -m`` would); sys.path is left as it was."""
    if not isinstance(spec, str | dict):
        if isinstance(spec, Bot):
            return spec
        raise BotSpecError(f"not a bot spec: {quote(spec)}")
    name, params = parse_spec(spec)
    if ":" in name:
        return _import_bot(name, params, bot_path)
    info = REGISTRY.get(name)
    if info is None:
        close = difflib.get_close_matches(name, REGISTRY, n=1)
        hint = f" (did you mean {quote(close[0])}?)" if close else ""
        raise BotSpecError(f"unknown bot {quote(name)}{hint}; built-in bots: "
                           f"{', '.join(REGISTRY)}; or give an import path "
                           "like mypackage.mybots:MyBot")
    clean = {}
    for key, value in params.items():
        if key not in info.params:
            known = ", ".join(info.params) or "none"
            raise BotSpecError(f"{name}: unknown parameter {quote(key)} (parameters: {known})")
        clean[key] = coerce_param(name, key, value, info.params[key])
    return info.factory(**clean)
def bot_spec(bot: Bot) -> str:
    return getattr(bot, "spec", type(bot).__name__)


def describe_bots() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered bot."""
    return [(i.name, i.description) for i in REGISTRY.values()]
