"""Moves as objects: a move's kind, patch and squares over the rules core's move codes, the
legal moves of a position as a lazy sequence, the record notation of a move (``buy P05 a1 b1
c1``) and why a move is illegal."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import overload

import numpy as np

from patchsim.engine import core
from patchsim.engine.tables import Tables, parse_square, square_name
from patchsim.errors import PatchsimError


class IllegalReason(IntEnum):
    """Why a move is illegal: the verdicts of :func:`patchsim.engine.core.legality`, named and
    worded once, here. ``reason.text`` is the sentence (``{offer}``: the ruleset's offer size;
    use :meth:`describe`)."""

    text: str

    def __new__(cls, value: int, text: str) -> IllegalReason:
        member = int.__new__(cls, value)
        member._value_ = value
        member.text = text
        return member

    # each with the rule it enforces (docs/rules.md)
    GAME_OVER = core.ILLEGAL_GAME_OVER, "the game is over"  # R10.1
    NO_LEATHER_PENDING = core.ILLEGAL_NO_LEATHER_PENDING, \
        "no leather patch is waiting to be placed"  # R8.3
    OFF_QUILT = core.ILLEGAL_OFF_QUILT, "the square is off the quilt"  # R8.3
    SQUARE_COVERED = core.ILLEGAL_SQUARE_COVERED, "the square is already covered"  # R8.3
    LEATHER_FIRST = core.ILLEGAL_LEATHER_FIRST, \
        "a claimed leather patch must be placed first"  # R3.5
    NO_SUCH_PLACEMENT = core.ILLEGAL_NO_SUCH_PLACEMENT, "no such placement"  # R5.5, R5.10
    NOT_ON_OFFER = core.ILLEGAL_NOT_ON_OFFER, \
        "the patch is not on offer (only the next {offer} after the neutral token are)"  # R5.1
    UNAFFORDABLE = core.ILLEGAL_UNAFFORDABLE, "the player cannot afford it"  # R5.2
    OVERLAP = core.ILLEGAL_OVERLAP, "it overlaps a patch already on the quilt"  # R5.5

    def describe(self, offer_size: int = 3) -> str:
        """The reason as a sentence fragment, for a ruleset with ``offer_size`` patches on
        offer."""
        return self.text.format(offer=offer_size)


class IllegalMoveError(PatchsimError, ValueError):
    """A move that is not legal in the position it was played in.

    ``reason`` (an :class:`IllegalReason`) says why, ``move`` is the move (a :class:`Move`, or
    the raw code when it names no move of the ruleset) and ``move_number`` its 1-based number
    in the game (the number it would have had)."""

    def __init__(self, message: str, reason: IllegalReason, move: Move | int,
                 move_number: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.move = move
        self.move_number = move_number

    def __reduce__(self):
        # picklable with its fields, so that it crosses from a worker process intact
        return (type(self), (str(self), self.reason, self.move, self.move_number))


@dataclass(frozen=True, slots=True)
class Move:
    """One move: ``pass``, ``buy`` a patch on given squares, or place a ``leather`` patch."""

    kind: str  # "pass" | "buy" | "leather"
    code: int  # the rules core's move code (only meaningful for the ruleset it came from)
    patch: str | None = None
    squares: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind == "pass":
            return "pass"
        if self.kind == "leather":
            return f"leather {self.squares[0]}"
        return f"buy {self.patch} {' '.join(self.squares)}"


class MoveList(Sequence[Move]):
    """The legal moves of a position: move codes, decoded to :class:`Move` objects on access."""

    __slots__ = ("codes", "_tables")

    def __init__(self, codes: np.ndarray, tables: Tables) -> None:
        self.codes = codes
        self._tables = tables

    def __len__(self) -> int:
        return len(self.codes)

    @overload
    def __getitem__(self, i: int) -> Move: ...
    @overload
    def __getitem__(self, i: slice) -> list[Move]: ...
    def __getitem__(self, i: int | slice) -> Move | list[Move]:
        if isinstance(i, slice):
            return [decode_move(int(c), self._tables) for c in self.codes[i]]
        return decode_move(int(self.codes[i]), self._tables)

    def __iter__(self) -> Iterator[Move]:
        for c in self.codes:
            yield decode_move(int(c), self._tables)

    def __contains__(self, move: object) -> bool:
        code = move.code if isinstance(move, Move) else move
        return bool(np.any(self.codes == code))

    def __repr__(self) -> str:
        return f"MoveList({len(self)} moves)"


def decode_move(code: int, tables: Tables) -> Move:
    """The :class:`Move` of a core move code."""
    cols = tables.cols
    if code == core.PASS:
        return Move("pass", code)
    if code <= core.LEATHER_BASE:
        return Move("leather", code, None, (square_name(core.LEATHER_BASE - code, cols),))
    patch = tables.patch_ids[tables.placement_patch(code)]
    squares = tuple(square_name(s, cols) for s in tables.placement_squares(code))
    return Move("buy", code, patch, squares)


def parse_move(text: str, tables: Tables) -> Move:
    """Parse a record move (``pass``, ``buy P05 a1 b1 c1``, ``leather e5``).

    Raises ValueError saying what is malformed. Whether the move is legal in a position is a
    separate question (:meth:`Game.apply`).
    """
    words = text.split()
    if not words:
        raise ValueError("empty move")
    kind = words[0].lower()
    rows, cols = tables.rows, tables.cols
    if kind == "pass":
        if len(words) != 1:
            raise ValueError("'pass' takes no arguments")
        return Move("pass", core.PASS)
    if kind == "leather":
        if len(words) != 2:
            raise ValueError("'leather' takes exactly one square")
        s = parse_square(words[1], rows, cols)
        return Move("leather", core.LEATHER_BASE - s, None, (square_name(s, cols),))
    if kind == "buy":
        if len(words) < 3:
            raise ValueError("'buy' needs a patch id and the squares it covers")
        pid = words[1]
        if pid not in tables.patch_index:
            raise ValueError(f"unknown patch {pid!r} in ruleset {tables.ruleset.name!r}")
        k = tables.patch_index[pid]
        squares = [parse_square(w, rows, cols) for w in words[2:]]
        if len(set(squares)) != len(squares):
            raise ValueError("a square is listed twice")
        mask = 0
        for s in squares:
            mask |= 1 << s
        g = tables.find_placement(k, mask)
        if g is None:
            size = tables.ruleset.patches[k].size
            if len(squares) != size:
                raise ValueError(f"{pid} covers {size} squares, the move lists {len(squares)}")
            raise ValueError(f"the squares are not a placement of {pid} "
                             f"({tables.ruleset.patches[k].shape})")
        return decode_move(g, tables)
    raise ValueError(f"unknown move {words[0]!r} (expected pass, buy or leather)")
