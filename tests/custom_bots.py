"""Small user-style bots for the tests, loaded by import path (``custom_bots:Hoarder(...)``):
one that plays sensibly through the Python API, and broken ones that make a game fail."""

from __future__ import annotations

import numpy as np

from patchsim.engine.game import Game, Move, MoveList


class Hoarder:
    """Passes unless it can buy the cheapest patch on offer and keep ``threshold`` buttons;
    then buys it at a random one of its placements. Leather goes on a random empty square."""

    def __init__(self, threshold: int = 3) -> None:
        self.threshold = threshold
        self.spec = f"custom_bots:Hoarder(threshold={threshold})"

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        all_moves = list(moves)
        if all_moves[0].kind == "leather":
            return all_moves[int(rng.integers(len(all_moves)))]
        buys = [m for m in all_moves if m.kind == "buy"]
        p = game.to_move
        assert p is not None
        offered = [game.ruleset.patch(pid).cost for pid in game.offer]
        if buys and offered:
            cheapest = min(offered)
            targets = [m for m in buys if game.ruleset.patch(m.patch).cost == cheapest]
            if targets and game.buttons(p) - cheapest >= self.threshold:
                return targets[int(rng.integers(len(targets)))]
        return next(m for m in all_moves if m.kind == "pass")


class NoSpec:
    """A bot without a ``spec`` attribute: make_bot gives it one from its import path."""

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        return moves[0]


class Raiser:
    """Plays the first legal move, then raises on its ``at``-th call."""

    def __init__(self, at: int = 5) -> None:
        self.at = at
        self.calls = 0
        self.spec = f"custom_bots:Raiser(at={at})"

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        self.calls += 1
        if self.calls >= self.at:
            raise RuntimeError("the bot broke down")
        return moves[0]


class Illegal:
    """Plays the first legal move, then on its ``at``-th call places a leather patch that
    nobody claimed (a well-formed move of this ruleset that is not legal)."""

    def __init__(self, at: int = 3) -> None:
        self.at = at
        self.calls = 0
        self.spec = f"custom_bots:Illegal(at={at})"

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        self.calls += 1
        if self.calls >= self.at and game.pending_leather == 0:
            return game.parse_move("leather a1")
        return moves[0]


class IllegalCode:
    """Like Illegal, but returns a bare move code (ints are accepted by the protocol)."""

    def __init__(self, at: int = 3) -> None:
        self.at = at
        self.calls = 0
        self.spec = f"custom_bots:IllegalCode(at={at})"

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> int:
        self.calls += 1
        if self.calls >= self.at and game.pending_leather == 0:
            return game.parse_move("leather a1").code
        return int(moves.codes[0])


class Stale:
    """Remembers the moves of the first position it saw and, from its ``at``-th call on,
    returns one of them that is no longer legal (a Move from a different position)."""

    def __init__(self, at: int = 4) -> None:
        self.at = at
        self.calls = 0
        self.first: list[Move] = []
        self.spec = f"custom_bots:Stale(at={at})"

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        self.calls += 1
        if not self.first:
            self.first = [m for m in moves if m.kind == "buy"]
        if self.calls >= self.at:
            for old in self.first:
                if old not in moves:
                    return old
        for m in moves:
            if m.kind != "buy":
                return m
        return moves[0]


class NotABot:
    """Has no choose method."""

    def __init__(self, x: int = 1) -> None:
        self.x = x


def not_a_class(**kwargs: object) -> int:
    """A factory that returns something that is not a bot."""
    return 42


class Rotator:
    """Stateful: plays legal move number (calls made so far) modulo the number of moves, so
    its games depend on how many games the same instance played before."""

    def __init__(self) -> None:
        self.calls = 0
        self.spec = "custom_bots:Rotator"

    def choose(self, game: Game, moves: MoveList, rng: np.random.Generator) -> Move:
        self.calls += 1
        return moves[self.calls % len(moves)]
