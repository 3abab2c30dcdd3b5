"""Positions and search trees the tests build: a position some plies into a seeded game,
and a root whose children carry given visits and values."""

from __future__ import annotations

import numpy as np

from patchsim.bots.registry import make_bot
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset


def played_position(rules: str, seed: int, plies: int,
                    bot: str = "greedy(epsilon=0.3)") -> Game | None:
    """The position after ``plies`` moves of ``bot`` against itself on deal ``seed`` (its
    stream seeded by it), or None where the game ended or a leather patch is pending."""
    rs = load_ruleset(rules)
    game = Game.new(rs, circle=deal_circle(rs, seed))
    player = make_bot(bot)
    stream = np.array([seed + 1], dtype=np.uint64)
    for _ in range(plies):
        if game.finished:
            return None
        game.apply(int(player.choose_code(game, stream)))  # type: ignore[attr-defined]
    if game.finished or game.pending_leather:
        return None
    return game


def root_node(moves: list[int], visits: list[int], means: list[float]):
    """A root (node 0) whose children are ``moves`` with those visits and mean values:
    (first_child, nchild, visits, value, move) as the search trees hold them."""
    n = len(moves)
    first_child = np.array([1] + [-1] * n, dtype=np.int64)
    nchild = np.array([n] + [0] * n, dtype=np.int64)
    v = np.array([sum(visits)] + visits, dtype=np.int64)
    value = np.array([0.0] + [m * k for m, k in zip(means, visits, strict=True)])
    return first_child, nchild, v, value, np.array([-99] + moves, dtype=np.int64)
