"""patchsim: rules-variant simulation and balance testing for the board game Patchwork."""

from patchsim import _jitcache

_jitcache.configure()  # before any compiled function is defined

# ruff: noqa: E402

from patchsim._version import __version__
from patchsim.engine.game import Game, IllegalMoveError, Move, MoveList
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset

__all__ = [
    "Game",
    "IllegalMoveError",
    "Move",
    "MoveList",
    "Ruleset",
    "RulesetError",
    "load_ruleset",
    "__version__",
]
