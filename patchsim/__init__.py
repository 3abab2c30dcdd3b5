"""patchsim: rules-variant simulation and balance testing for the board game Patchwork.

The names a notebook needs are here: ``simulate`` (many games, as DataFrames), ``Game``,
``Move``, ``MoveList`` (one game, move by move), ``load_ruleset``, ``make_bot``,
``make_run_config`` (a run's configuration from values), ``PatchsimError`` (the base of every
error patchsim raises for bad input, with its fields),
``play_game``, ``deal_circle`` and the analysis functions (``run_summary``,
``pairing_table``, ...). Importing patchsim compiles nothing and loads neither numpy, numba,
pandas nor matplotlib: every name is imported on first use.
"""

import importlib
from typing import TYPE_CHECKING, Any

from patchsim._version import __version__

# name -> module for the names imported on first access: the engine's load numpy and numba
# (which `patchsim --help` does not need), the others pandas, scipy, statsmodels or joblib
# (which a game of Patchwork in a terminal does not need). numba's cache folder is set when
# the engine is first imported (patchsim.engine).
_LAZY = {
    "deal_circle": "patchsim.engine.deal",
    "Game": "patchsim.engine.game",
    "IllegalMoveError": "patchsim.engine.game",
    "IllegalReason": "patchsim.engine.game",
    "Move": "patchsim.engine.game",
    "MoveList": "patchsim.engine.game",
    "Ruleset": "patchsim.engine.ruleset",
    "RulesetError": "patchsim.engine.ruleset",
    "load_ruleset": "patchsim.engine.ruleset",
    "simulate": "patchsim.play.simulate",
    "Simulation": "patchsim.play.simulate",
    "RunError": "patchsim.play.config",
    "make_run_config": "patchsim.play.config",
    "PatchsimError": "patchsim.errors",
    "make_bot": "patchsim.bots.registry",
    "check_bot": "patchsim.bots.contract",
    "check_ruleset": "patchsim.engine.contract",
    "ContractError": "patchsim.engine.contract",
    "play_game": "patchsim.play.match",
    "BotError": "patchsim.play.match",
    "run_summary": "patchsim.analysis.summary",
    "format_summary": "patchsim.analysis.summary",
    "pairing_table": "patchsim.analysis.stats",
    "first_player_advantage": "patchsim.analysis.stats",
    "score_table": "patchsim.analysis.stats",
    "game_summary": "patchsim.analysis.stats",
    "patch_table": "patchsim.analysis.stats",
    "leather_table": "patchsim.analysis.stats",
    "bonus_table": "patchsim.analysis.stats",
    "ratings": "patchsim.analysis.stats",
    "compare_rulesets": "patchsim.analysis.compare",
    "skill_trace": "patchsim.experiments.skill",
    "SkillTrace": "patchsim.experiments.skill",
}

if TYPE_CHECKING:  # for type checkers and IDEs: the lazy names, eagerly
    from patchsim.analysis.compare import compare_rulesets
    from patchsim.analysis.stats import (
        bonus_table,
        first_player_advantage,
        game_summary,
        leather_table,
        pairing_table,
        patch_table,
        ratings,
        score_table,
    )
    from patchsim.analysis.summary import format_summary, run_summary
    from patchsim.bots.contract import check_bot
    from patchsim.bots.registry import make_bot
    from patchsim.engine.contract import ContractError, check_ruleset
    from patchsim.engine.deal import deal_circle
    from patchsim.engine.game import Game, IllegalMoveError, IllegalReason, Move, MoveList
    from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset
    from patchsim.errors import PatchsimError
    from patchsim.experiments.skill import SkillTrace, skill_trace
    from patchsim.play.config import RunError, make_run_config
    from patchsim.play.match import BotError, play_game
    from patchsim.play.simulate import Simulation, simulate


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'patchsim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BotError",
    "ContractError",
    "Game",
    "IllegalMoveError",
    "IllegalReason",
    "Move",
    "MoveList",
    "PatchsimError",
    "RunError",
    "Ruleset",
    "RulesetError",
    "Simulation",
    "SkillTrace",
    "bonus_table",
    "check_bot",
    "check_ruleset",
    "compare_rulesets",
    "deal_circle",
    "first_player_advantage",
    "format_summary",
    "game_summary",
    "leather_table",
    "load_ruleset",
    "make_bot",
    "make_run_config",
    "pairing_table",
    "patch_table",
    "play_game",
    "ratings",
    "run_summary",
    "score_table",
    "simulate",
    "skill_trace",
    "__version__",
]
