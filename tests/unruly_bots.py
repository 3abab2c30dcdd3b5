"""User-style bots that misbehave in ways a run must survive (loaded by import path,
``unruly_bots:Sleeper(...)``): they hang, return absurd numbers, raise what is not an
Exception, or crash the interpreter."""

from __future__ import annotations

import ctypes
import sys
import time

import numpy as np

from patchsim.engine.game import Game, Move, MoveList


class _Unruly:
    """Plays the first legal move until its ``at``-th call, then misbehaves."""

    def __init__(self, at: int = 3) -> None:
        self.at = at
        self.calls = 0
        self.spec = f"unruly_bots:{type(self).__name__}(at={at})"

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move | int:
        self.calls += 1
        if self.calls >= self.at:
            return self.misbehave(moves)
        return moves[0]

    def misbehave(self, moves: MoveList) -> Move | int:
        raise NotImplementedError


class Sleeper(_Unruly):
    """Thinks forever (an hour) over its ``at``-th move."""

    def misbehave(self, moves: MoveList) -> Move:
        time.sleep(3600)
        return moves[0]


class Huge(_Unruly):
    """Returns a number no move code can be."""

    def misbehave(self, moves: MoveList) -> int:
        return 2**70


class Interrupter(_Unruly):
    """Raises KeyboardInterrupt itself (no one pressed Ctrl-C)."""

    def misbehave(self, moves: MoveList) -> Move:
        raise KeyboardInterrupt


class Exiter(_Unruly):
    """Calls sys.exit(3)."""

    def misbehave(self, moves: MoveList) -> Move:
        sys.exit(3)


class Crasher(_Unruly):
    """Crashes the interpreter (reads address 0)."""

    def misbehave(self, moves: MoveList) -> Move:
        ctypes.string_at(0)
        return moves[0]
