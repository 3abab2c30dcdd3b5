"""The position view: positions as JSON, and board.js (beside this module) that draws them,
for the web viewer, the play page and the report's self-contained replay. Both the web app
and the reporting use it, so it lives below both, with the rules it reads.

Everything a page draws comes from the engine: which squares are covered is read from the
position's quilt bitboards (:meth:`Game.quilt_mask`), the numbers from
:meth:`Game.summary`, the offer and the circle from :attr:`Game.offer` and
:attr:`Game.remaining`, the track from the ruleset and :attr:`Game.leather_on_track`. The
only thing the engine does not keep is *which* patch covers a square; that is read off the
moves played (each buy names its squares), and only for squares the engine says are covered.
The pages never apply a rule themselves.

This module imports no web framework and nothing above the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from patchsim.document import palette
from patchsim.engine import core
from patchsim.engine.game import Game, decode_move
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.tables import parse_square, square_name

EMPTY = -1  # a quilt square nobody covered
LEATHER = -2  # a square covered by a leather patch
UNKNOWN = -3  # covered in the engine's position, but no move explains it (a position text)
# the script that draws a position view: served by the web app at /static/board.js and
# inlined into the report's replay
BOARD_SCRIPT = Path(__file__).resolve().with_name("board.js")


def patch_colours(ruleset: Ruleset) -> dict[str, str]:
    """A colour per patch of the ruleset, from the one palette (:mod:`patchsim.document.palette`),
    by the patch's position in the table (all different within it)."""
    return palette.patch_colours([p.id for p in ruleset.patches])


def ruleset_info(ruleset: Ruleset) -> dict[str, Any]:
    """What a page needs to know about the rules to draw them: quilt size, track, bonus and
    the patch table (shapes as cells, prices, income, colour)."""
    colours = patch_colours(ruleset)
    return {
        "name": ruleset.name,
        "hash": ruleset.content_hash(),
        "rows": ruleset.rows,
        "cols": ruleset.cols,
        "last_space": ruleset.last_space,
        "income_marks": list(ruleset.income_marks),
        "leather_marks": list(ruleset.leather_marks),
        "offer_size": ruleset.offer_size,
        "bonus": (None if ruleset.bonus_square is None
                  else {"square": ruleset.bonus_square, "points": ruleset.bonus_points}),
        "penalty": ruleset.empty_square_penalty,
        "patches": {
            p.id: {"shape": p.shape, "cells": [list(c) for c in p.cells], "cost": p.cost,
                   "time": p.time, "income": p.income, "size": p.size, "colour": colours[p.id]}
            for p in ruleset.patches
        },
    }


class QuiltTracker:
    """Which piece covers each square of each quilt, kept up to date move by move.

    ``pieces[p]`` lists the patch ids player p bought, in buying order; ``owner[p][s]`` is
    the index of the piece on square s, :data:`LEATHER` or :data:`EMPTY`."""

    def __init__(self, game: Game) -> None:
        nsq = game.tables.rows * game.tables.cols
        self.tables = game.tables
        self.pieces: list[list[str]] = [[], []]
        self.owner: list[list[int]] = [[EMPTY] * nsq, [EMPTY] * nsq]

    def note(self, player: int, code: int) -> None:
        """Record that ``player`` played move ``code`` (call before or after applying it)."""
        if code == core.PASS:
            return
        if code <= core.LEATHER_BASE:
            self.owner[player][core.LEATHER_BASE - code] = LEATHER
            return
        k = len(self.pieces[player])
        self.pieces[player].append(self.tables.patch_ids[self.tables.placement_patch(code)])
        for s in self.tables.placement_squares(code):
            self.owner[player][s] = k

    def cells(self, game: Game, player: int) -> list[int]:
        """Player's quilt as the engine has it: each covered square labelled with its piece
        (:data:`UNKNOWN` if no move explains it), every other square :data:`EMPTY`."""
        mask = game.quilt_mask(player)
        own = self.owner[player]
        return [(own[s] if own[s] != EMPTY else UNKNOWN) if mask >> s & 1 else EMPTY
                for s in range(len(own))]


def position_view(game: Game, tracker: QuiltTracker | None = None,
                  last_move: dict[str, Any] | None = None) -> dict[str, Any]:
    """One position as JSON-ready data: :meth:`Game.summary` (with the position text) plus
    the quilts square by square, the pieces bought, the track and the circle."""
    out = game.summary(text=True)
    rs = game.ruleset
    pending_marks = int(game.state[core.S_PENDING_MARKS])
    offer = game.offer
    remaining = game.remaining
    out.update({
        "ply": game.ply,
        "quilts": [tracker.cells(game, p) if tracker else _plain_cells(game, p) for p in (0, 1)],
        "pieces": [list(tracker.pieces[p]) if tracker else [] for p in (0, 1)],
        "top": int(game.state[core.S_TOP]),
        "bonus_owner": game.bonus_owner,
        "first_to_finish": game.first_to_finish,
        "leather_on_track": game.leather_on_track,
        "leather_pending": [m for i, m in enumerate(rs.leather_marks) if pending_marks >> i & 1],
        "offer": offer,
        # the rest of the circle, in the order it will come on offer
        "next": remaining[len(offer):],
        "last_move": last_move,
    })
    return out


def _plain_cells(game: Game, player: int) -> list[int]:
    mask = game.quilt_mask(player)
    n = game.tables.rows * game.tables.cols
    return [UNKNOWN if mask >> s & 1 else EMPTY for s in range(n)]


def replay_positions(start: Game, codes: Iterable[int]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every position of a game (the start, then after each move) and the move texts.

    ``start`` is played on in place; IllegalMoveError (from :meth:`Game.apply`) if a move is
    not legal."""
    tracker = QuiltTracker(start)
    positions = [position_view(start, tracker)]
    texts: list[str] = []
    for code in codes:
        code = int(code)
        player = start.to_move
        start.apply(code)
        assert player is not None  # apply refuses a move after the end
        tracker.note(player, code)
        text = str(decode_move(code, start.tables))
        texts.append(text)
        positions.append(position_view(start, tracker, {"seat": player, "text": text,
                                                        "number": len(texts)}))
    return positions, texts


def legal_view(game: Game) -> dict[str, Any]:
    """The legal moves of the player to move, grouped for a page: ``pass`` (whether it is
    legal), ``leather`` (squares a claimed leather patch may go on) and ``buys`` (per patch
    id, each legal placement as its sorted square indices). Empty when the game is over."""
    out: dict[str, Any] = {"pass": False, "leather": [], "buys": {}}
    rows, cols = game.tables.rows, game.tables.cols
    for move in game.legal_moves():
        if move.kind == "pass":
            out["pass"] = True
        elif move.kind == "leather":
            out["leather"].append(parse_square(move.squares[0], rows, cols))
        else:
            out["buys"].setdefault(move.patch, []).append(
                sorted(parse_square(s, rows, cols) for s in move.squares))
    return out


def square_names(squares: Sequence[int], cols: int) -> list[str]:
    """Square indices as record names (``a1``...)."""
    return [square_name(int(s), cols) for s in squares]
