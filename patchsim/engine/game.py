"""The friendly Python API over the rules core: inspectable game states, moves as objects.

Every rule is applied by the compiled functions of :mod:`patchsim.engine.core`; this module only
translates between them and Python objects, so the API and the fast path cannot drift apart.

Position text
-------------
:meth:`Game.to_text` writes a position as one line of ``key=value`` fields separated by
spaces, in this order (:meth:`Game.from_text` reads them in any order, each exactly once)::

    q0=7/7/2x4/1xx1xx1/1xxxxx1/1xx1xx1/1xxxxxx q1=7/1x5/xx3x1/1x2xx1/xx2xx1/xx1xx2/1xxx3
    p0=19,4,3 p1=16,4,0 top=1 circle=P04,P19,P14,P31,P16,P32,P17,P25,P27,P21,P03,*P02,P20,P00
    leather=19x,25,30 bonus=- end=- ply=17

(a position of ``variants/quilt7``, 7x7 quilts; one line in practice, wrapped here). Player 1
is behind (space 16) and moves; P02, P20 and P00 are on offer. The fields:

``q0``, ``q1``
    Each player's quilt, rows from row 1 (the top, as in square names) down, separated by
    ``/``; in a row, ``x`` is a covered square and a number is that many empty squares.
``p0``, ``p1``
    ``position,buttons,income``: the time-track space, buttons in hand, and buttons shown on
    the quilt (what each income mark pays).
``top``
    Whose token lies on top when both share a space (docs/rules.md R3.2: its owner moves).
    The engine keeps it when the tokens part, so it is always written.
``circle``
    The patches still in the circle, clockwise, in the order the engine stores them, with
    ``*`` before the patch right after the neutral token, the first on offer (docs/rules.md
    R2.3, R2.4); ``-`` when none is left.
``leather``
    Every leather mark of the ruleset in track order: the space alone while its patch lies on
    the track, ``x`` after it when the patch is gone (placed or lost, R8.5), ``p0``/``p1`` when
    that player claimed it and must place it now (R8.3, R3.5); ``-`` for a ruleset without
    leather marks.
``bonus``
    The bonus tile's owner (R9), ``0`` or ``1``, or ``-`` while it is free (or there is none).
``end``
    Who reached the last space first (R10.3, the tie-break of R11.5), or ``-``.
``ply``
    Moves played so far, leather placements included.

The ruleset is not part of the text: give it to :meth:`Game.from_text`. A position read back
has the same state array as the one written, and so the same legal moves, except in the slots
of patches already bought, where the engine leaves stale patch ids that no rule reads and the
text cannot know (they read back as -1). It has no move history (its ``record()`` refuses:
the moves that led to it are unknown).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from typing import overload

import numpy as np

from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.ruleset import Ruleset, load_ruleset, shipped_rulesets
from patchsim.engine.tables import (
    Tables,
    compile_ruleset,
    join,
    parse_square,
    split,
    square_name,
)


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


class IllegalMoveError(ValueError):
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


@dataclass(frozen=True)
class PlayerView:
    """One player's side of a position."""

    position: int
    buttons: int
    income: int
    empty_squares: int
    bonus: bool
    score: int


class Game:
    """A game of Patchwork under a ruleset: a position plus the moves that led to it.

    >>> g = Game.new("edition2", seed=1)
    >>> g.apply(g.legal_moves()[0])  # pass
    """

    __slots__ = ("tables", "state", "circle", "history", "_buf")

    def __init__(self, tables: Tables, state: np.ndarray, circle: tuple[str, ...],
                 history: list[int] | None = None) -> None:
        self.tables = tables
        self.state = state
        self.circle = circle
        self.history: list[int] = history if history is not None else []
        self._buf = np.empty(core.max_moves(tables.tab), dtype=np.int64)

    # --- construction ------------------------------------------------------------------------
    @classmethod
    def new(cls, rules: Ruleset | str = "edition2", circle: Sequence[str] | None = None,
            seed: int | np.random.Generator | None = None) -> Game:
        """A new game. ``circle`` lists patch ids clockwise from the neutral token; if omitted
        it is dealt from ``seed`` by :func:`patchsim.engine.deal.deal_circle` (the other
        patches shuffled, the starting patch last: docs/rules.md R2.3), exactly as the runner
        deals the game whose ``deal_seed`` is ``seed``."""
        ruleset = rules if isinstance(rules, Ruleset) else load_ruleset(rules)
        tables = compile_ruleset(ruleset)
        if circle is None:
            circle = deal_circle(ruleset, seed)
        idx = circle_indices(circle, tables)
        return cls(tables, core.new_state(tables.tab, idx), tuple(circle))

    def copy(self) -> Game:
        """An independent copy (the state array and history are copied; tables are shared)."""
        return Game(self.tables, self.state.copy(), self.circle, list(self.history))

    # --- position text -----------------------------------------------------------------------
    def to_text(self) -> str:
        """The position as one line of text (see "Position text" in this module's docstring).

        Fields ``q0 q1 p0 p1 top circle leather bonus end ply``, for example (one line)::

            q0=7/7/2x4/1xx1xx1/1xxxxx1/1xx1xx1/1xxxxxx q1=7/1x5/xx3x1/1x2xx1/xx2xx1/
            xx1xx2/1xxx3 p0=19,4,3 p1=16,4,0 top=1 circle=P04,P19,P14,P31,P16,P32,P17,P25,
            P27,P21,P03,*P02,P20,P00 leather=19x,25,30 bonus=- end=- ply=17

        ``qN``: quilt rows from the top, ``x`` covered, a number = that many empty squares;
        ``pN``: position,buttons,income; ``top``: whose token is on top on a shared space;
        ``circle``: patches left, clockwise as stored, ``*`` before the first on offer;
        ``leather``: each mark in track order, plain (on the track), ``x`` (gone) or
        ``p0``/``p1`` (claimed, to be placed now); ``bonus`` and ``end`` (who reached the
        last space first): ``0``, ``1`` or ``-``; ``ply``: moves played.
        :meth:`from_text` reads it back to the same state."""
        st = self.state
        rows, cols = self.tables.rows, self.tables.cols
        ids = self.tables.patch_ids
        n, ofs = int(st[core.S_NCIRCLE]), int(st[core.S_OFS])
        circle = ",".join(("*" if i == ofs else "") + ids[int(st[core.S_CIRCLE + i])]
                          for i in range(n)) or "-"
        taken, pend = int(st[core.S_LEATHER_TAKEN]), int(st[core.S_PENDING_MARKS])
        who = int(st[core.S_PENDING_PLAYER])
        leather = ",".join(
            f"{m}p{who}" if pend >> i & 1 else f"{m}x" if taken >> i & 1 else str(m)
            for i, m in enumerate(self.ruleset.leather_marks)) or "-"
        fields = [
            *(f"q{p}={_quilt_text(self.quilt_mask(p), rows, cols)}" for p in (0, 1)),
            *(f"p{p}={st[core.S_POS + p]},{st[core.S_BTN + p]},{st[core.S_INC + p]}"
              for p in (0, 1)),
            f"top={st[core.S_TOP]}", f"circle={circle}", f"leather={leather}",
            f"bonus={_who(st[core.S_BONUS])}", f"end={_who(st[core.S_FIRST_END])}",
            f"ply={st[core.S_PLY]}",
        ]
        return " ".join(fields)

    @classmethod
    def from_text(cls, text: str, rules: Ruleset | str = "edition2") -> Game:
        """The position written by :meth:`to_text`, under ``rules``.

        Raises ValueError naming the field and its value when the text is malformed or does
        not fit the ruleset (quilt size, patch ids, leather marks). The game has no move
        history; its ``circle`` is the patches left, in stored order."""
        ruleset = rules if isinstance(rules, Ruleset) else load_ruleset(rules)
        tables = compile_ruleset(ruleset)
        f = _text_fields(text)
        rows, cols = tables.rows, tables.cols
        state = np.zeros(core.S_CIRCLE + len(ruleset.patches), dtype=np.int64)
        for p in (0, 1):
            lo, hi = split(_parse_quilt(f[f"q{p}"], rows, cols, f"q{p}"))
            state[core.S_QLO + p], state[core.S_QHI + p] = lo, hi
            pos, btn, inc = _parse_player(f[f"p{p}"], f"p{p}", ruleset.last_space)
            state[core.S_POS + p], state[core.S_BTN + p], state[core.S_INC + p] = pos, btn, inc
        state[core.S_TOP] = _parse_choice(f["top"], "top", {"0": 0, "1": 1})
        state[core.S_BONUS] = _parse_choice(f["bonus"], "bonus", _WHO)
        state[core.S_FIRST_END] = _parse_choice(f["end"], "end", _WHO)
        state[core.S_PLY] = _parse_int(f["ply"], "ply", "a move count >= 0")
        left, ofs = _parse_circle(f["circle"], tables)
        state[core.S_NCIRCLE], state[core.S_OFS] = len(left), ofs
        state[core.S_CIRCLE: core.S_CIRCLE + len(left)] = left
        # slots of bought patches hold no patch; the engine leaves stale ids there, which no
        # rule reads
        state[core.S_CIRCLE + len(left):] = -1
        taken, pending, who = _parse_leather(f["leather"], ruleset.leather_marks)
        state[core.S_LEATHER_TAKEN] = taken
        state[core.S_PENDING_MARKS] = pending
        state[core.S_PENDING] = pending.bit_count()
        state[core.S_PENDING_PLAYER] = who
        circle = tuple(tables.patch_ids[k] for k in left)
        return cls(tables, state, circle, [])

    # --- inspection --------------------------------------------------------------------------
    @property
    def ruleset(self) -> Ruleset:
        return self.tables.ruleset

    @property
    def tab(self) -> np.ndarray:
        return self.tables.tab

    @property
    def finished(self) -> bool:
        return bool(core.is_finished(self.state, self.tab))

    @property
    def to_move(self) -> int | None:
        """The player to move (0 or 1), or None when the game is over."""
        p = int(core.to_move(self.state, self.tab))
        return None if p < 0 else p

    @property
    def ply(self) -> int:
        return int(self.state[core.S_PLY])

    def position(self, p: int) -> int:
        return int(self.state[core.S_POS + p])

    def buttons(self, p: int) -> int:
        return int(self.state[core.S_BTN + p])

    def income(self, p: int) -> int:
        """Buttons shown on p's quilt: what each income mark pays."""
        return int(self.state[core.S_INC + p])

    def empty_squares(self, p: int) -> int:
        return int(core.empty_squares(self.state, self.tab, p))

    def score(self, p: int) -> int:
        """Buttons + bonus points - penalty x empty squares, as if the game ended now."""
        return int(core.score(self.state, self.tab, p))

    @property
    def scores(self) -> tuple[int, int]:
        return self.score(0), self.score(1)

    @property
    def bonus_owner(self) -> int | None:
        b = int(self.state[core.S_BONUS])
        return None if b < 0 else b

    @property
    def first_to_finish(self) -> int | None:
        """Who reached the last space first (the tie-break), if anybody has."""
        f = int(self.state[core.S_FIRST_END])
        return None if f < 0 else f

    @property
    def pending_leather(self) -> int:
        """Claimed leather patches the player to move must place now."""
        return int(self.state[core.S_PENDING])

    @property
    def winner(self) -> int | None:
        return int(core.winner(self.state, self.tab)) if self.finished else None

    @property
    def tie_break_decided(self) -> bool:
        return self.finished and self.score(0) == self.score(1)

    @property
    def offer(self) -> list[str]:
        """Ids of the patches on offer, in clockwise order."""
        ids = self.tables.patch_ids
        out = []
        for k in range(self.ruleset.offer_size):
            patch = int(core.offer_patch(self.state, self.tab, k))
            if patch < 0:
                break
            out.append(ids[patch])
        return out

    @property
    def remaining(self) -> list[str]:
        """Ids of the patches left in the circle, clockwise from the neutral token."""
        n = int(self.state[core.S_NCIRCLE])
        ofs = int(self.state[core.S_OFS])
        ids = self.tables.patch_ids
        return [ids[int(self.state[core.S_CIRCLE + (ofs + i) % n])] for i in range(n)]

    @property
    def leather_on_track(self) -> list[int]:
        """Marks whose leather patch still lies on the track."""
        taken = int(self.state[core.S_LEATHER_TAKEN])
        return [m for i, m in enumerate(self.ruleset.leather_marks) if not taken >> i & 1]

    def quilt_mask(self, p: int) -> int:
        return join(self.state[core.S_QLO + p], self.state[core.S_QHI + p])

    def quilt(self, p: int) -> np.ndarray:
        """p's quilt as a boolean grid (rows x cols), True where covered."""
        m = self.quilt_mask(p)
        r, c = self.tables.rows, self.tables.cols
        return np.array([[bool(m >> (i * c + j) & 1) for j in range(c)] for i in range(r)])

    def player(self, p: int) -> PlayerView:
        return PlayerView(self.position(p), self.buttons(p), self.income(p),
                          self.empty_squares(p), self.bonus_owner == p, self.score(p))

    # --- moves -------------------------------------------------------------------------------
    def legal_moves(self) -> MoveList:
        """The distinct legal moves of the player to move (pass first; empty when over)."""
        n = core.legal_moves(self.state, self.tab, self._buf)
        return MoveList(self._buf[:n].copy(), self.tables)

    def legal_move_count(self) -> int:
        return int(core.count_legal(self.state, self.tab))

    def parse_move(self, text: str) -> Move:
        return parse_move(text, self.tables)

    def legality(self, move: Move | int | str) -> IllegalReason | None:
        """Why ``move`` is illegal here (an :class:`IllegalReason`), or None if it is legal."""
        why = int(core.legality(self.state, self.tab, self._code(move)))
        return None if why == core.LEGAL else IllegalReason(why)

    def illegal_reason(self, move: Move | int | str) -> str | None:
        """Why ``move`` is illegal here, in words, or None if it is legal."""
        why = self.legality(move)
        return None if why is None else why.describe(self.ruleset.offer_size)

    def apply(self, move: Move | int | str) -> None:
        """Play a legal move (a Move, a core code or record text); IllegalMoveError if not."""
        code = self._code(move)
        why = int(core.legality(self.state, self.tab, code))
        if why != core.LEGAL:
            reason = IllegalReason(why)
            number = self.ply + 1
            raise IllegalMoveError(
                f"move {number} ({self._describe(move, code)}) is illegal: "
                f"{reason.describe(self.ruleset.offer_size)}",
                reason, self._as_move(move, code), number)
        core.apply_move(self.state, self.tab, code)
        self.history.append(code)

    def perft(self, depth: int) -> int:
        """The number of legal move sequences of length ``depth`` from here (compiled; see
        :func:`patchsim.engine.core.perft`)."""
        return int(core.perft(self.state, self.tab, depth))

    def _names_move(self, code: int) -> bool:
        nsq = self.tables.rows * self.tables.cols
        return (code == core.PASS or 0 <= code < len(self.tables.placement_masks)
                or core.LEATHER_BASE - nsq < code <= core.LEATHER_BASE)

    def _as_move(self, move: Move | int | str, code: int) -> Move | int:
        if isinstance(move, Move):
            return move
        return decode_move(code, self.tables) if self._names_move(code) else code

    def _describe(self, move: Move | int | str, code: int) -> str:
        """Text of a move for messages; codes that name no move are shown as codes."""
        if isinstance(move, Move | str):
            return str(move)
        if self._names_move(code):
            return str(decode_move(code, self.tables))
        return f"move code {code}"

    def _code(self, move: Move | int | str) -> int:
        if isinstance(move, Move):
            return move.code
        if isinstance(move, str):
            return self.parse_move(move).code
        return int(move)

    # --- records -----------------------------------------------------------------------------
    def move_texts(self) -> list[str]:
        return [str(decode_move(c, self.tables)) for c in self.history]

    def record(self, rules: str | dict | None = None) -> dict:
        """This game as a record (``{"rules", "circle", "moves"}``, see
        :mod:`patchsim.engine.record`).

        The rules are named when a shipped ruleset has exactly these rules, else written out
        in full, so the record always replays under the rules it was played with.

        ValueError for a game set up by :meth:`from_text` part-way through: the moves that
        led to it are unknown."""
        if len(self.history) != self.ply:
            raise ValueError(f"this game was set up from a position (after move {self.ply}) "
                             "and the moves before it are unknown, so it has no record; use "
                             "to_text() to save the position")
        return {"rules": rules or rules_reference(self.ruleset), "circle": list(self.circle),
                "moves": self.move_texts()}

    def summary(self, text: bool = False) -> dict:
        """The position as a JSON-ready object; with ``text``, plus its position text
        (:meth:`to_text`) under ``"text"``, as ``patchsim replay --json`` prints it."""
        finished = self.finished
        if finished:
            legal = 0
        elif self.pending_leather:
            legal = self.empty_squares(self.to_move or 0)
        else:
            legal = self.legal_move_count()
        out = {
            "finished": finished,
            "to_move": self.to_move,
            "pending_leather": self.pending_leather,
            "legal_moves": legal,
            "winner": self.winner,
            "players": [
                {"position": v.position, "buttons": v.buttons, "income": v.income,
                 "empty_squares": v.empty_squares, "bonus": v.bonus, "score": v.score}
                for v in (self.player(0), self.player(1))
            ],
        }
        if text:
            out["text"] = self.to_text()
        return out


# --- position text helpers ----------------------------------------------------------------------
_TEXT_KEYS = ("q0", "q1", "p0", "p1", "top", "circle", "leather", "bonus", "end", "ply")
_WHO = {"-": -1, "0": 0, "1": 1}


def _who(v: int) -> str:
    return "-" if v < 0 else str(int(v))


def _bad(field: str, value: str, problem: str) -> ValueError:
    return ValueError(f"position text: {field}={value!r}: {problem}")


def _text_fields(text: str) -> dict[str, str]:
    if not isinstance(text, str):
        raise TypeError(f"position text: expected a string, got {type(text).__name__}")
    out: dict[str, str] = {}
    for word in text.split():
        key, eq, value = word.partition("=")
        if not eq:
            raise ValueError(f"position text: {word!r} is not a key=value field (fields: "
                             f"{' '.join(_TEXT_KEYS)})")
        if key not in _TEXT_KEYS:
            raise ValueError(f"position text: unknown field {key!r} in {word!r} (fields: "
                             f"{' '.join(_TEXT_KEYS)})")
        if key in out:
            raise ValueError(f"position text: field {key!r} given twice")
        out[key] = value
    missing = [k for k in _TEXT_KEYS if k not in out]
    if missing:
        raise ValueError(f"position text: missing field(s) {', '.join(missing)}")
    return out


def _quilt_text(mask: int, rows: int, cols: int) -> str:
    out = []
    for r in range(rows):
        row, run = [], 0
        for c in range(cols):
            if mask >> (r * cols + c) & 1:
                if run:
                    row.append(str(run))
                    run = 0
                row.append("x")
            else:
                run += 1
        if run:
            row.append(str(run))
        out.append("".join(row))
    return "/".join(out)


_ROW_ITEM = re.compile(r"x|[1-9][0-9]*")


def _parse_quilt(value: str, rows: int, cols: int, field: str) -> int:
    parts = value.split("/")
    if len(parts) != rows:
        raise _bad(field, value, f"expected {rows} rows separated by '/' (the quilt is "
                                 f"{rows}x{cols}), got {len(parts)}")
    mask = 0
    for r, row in enumerate(parts):
        c = pos = 0
        while pos < len(row):
            m = _ROW_ITEM.match(row, pos)
            if m is None:
                raise _bad(field, value, f"row {r + 1} ({row!r}): unexpected {row[pos]!r} "
                                         "(x for a covered square, a number for empty ones)")
            if m.group() == "x":
                if c < cols:
                    mask |= 1 << (r * cols + c)
                c += 1
            else:
                c += int(m.group())
            pos = m.end()
        if c != cols:
            raise _bad(field, value, f"row {r + 1} ({row!r}) has {c} squares, the quilt has "
                                     f"{cols} columns")
    return mask


def _parse_int(value: str, field: str, what: str, lo: int = 0, hi: int | None = None,
               whole: str | None = None) -> int:
    """``value`` as a whole number in [lo, hi]; ``whole`` is the field's full value (for the
    message) when ``value`` is a part of it."""
    v = int(value) if re.fullmatch(r"-?[0-9]+", value) else None
    if v is None or v < lo or (hi is not None and v > hi):
        raise _bad(field, whole if whole is not None else value, f"expected {what}")
    return v


def _parse_player(value: str, field: str, last: int) -> tuple[int, int, int]:
    parts = value.split(",")
    if len(parts) != 3:
        raise _bad(field, value, "expected position,buttons,income (three numbers)")
    return (_parse_int(parts[0], field, f"a position between 0 and {last} first", 0, last,
                       value),
            _parse_int(parts[1], field, "a number of buttons >= 0 second", whole=value),
            _parse_int(parts[2], field, "an income >= 0 third", whole=value))


def _parse_choice(value: str, field: str, choices: dict[str, int]) -> int:
    if value not in choices:
        raise _bad(field, value, f"expected one of {', '.join(choices)}")
    return choices[value]


def _parse_circle(value: str, tables: Tables) -> tuple[list[int], int]:
    if value == "-":
        return [], 0
    left, ofs = [], None
    for i, item in enumerate(value.split(",")):
        pid = item
        if item.startswith("*"):
            if ofs is not None:
                raise _bad("circle", value, "more than one '*' (the neutral token)")
            ofs, pid = i, item[1:]
        if pid not in tables.patch_index:
            raise _bad("circle", value, f"unknown patch {pid!r} in ruleset "
                                        f"{tables.ruleset.name!r}")
        k = tables.patch_index[pid]
        if k in left:
            raise _bad("circle", value, f"patch {pid!r} listed twice")
        left.append(k)
    if ofs is None:
        raise _bad("circle", value, "no '*' before the patch after the neutral token")
    return left, ofs


_MARK = re.compile(r"([0-9]+)(x|p[01])?")


def _parse_leather(value: str, marks: Sequence[int]) -> tuple[int, int, int]:
    """(taken bits, pending bits, pending player or -1) of a ``leather`` field."""
    expected = ",".join(map(str, marks)) or "-"
    if value == "-":
        if marks:
            raise _bad("leather", value, f"the ruleset has leather marks {expected}")
        return 0, 0, -1
    items = value.split(",")
    taken = pending = 0
    who = -1
    found = []
    for i, item in enumerate(items):
        m = _MARK.fullmatch(item)
        if m is None:
            raise _bad("leather", value, f"{item!r} is not a mark (a space, then nothing, "
                                         "x, p0 or p1)")
        found.append(int(m.group(1)))
        tag = m.group(2) or ""
        if tag:
            taken |= 1 << i
        if tag.startswith("p"):
            pending |= 1 << i
            if who not in (-1, int(tag[1])):
                raise _bad("leather", value, "claimed patches waiting for both players")
            who = int(tag[1])
    if found != list(marks):
        raise _bad("leather", value, f"the marks must be the ruleset's, in track order: "
                                     f"{expected}")
    return taken, pending, who


@lru_cache(maxsize=1)
def _shipped_by_hash() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in shipped_rulesets():
        try:
            out.setdefault(load_ruleset(name).content_hash(), name)
        except ValueError:  # a broken file in configs/ must not break records
            continue
    return out


def rules_reference(ruleset: Ruleset) -> str | dict:
    """How a record names a ruleset: the shipped name with the same content hash, else the
    full resolved mapping (which replays anywhere)."""
    h = ruleset.content_hash()
    shipped = _shipped_by_hash()
    if h in shipped:
        return shipped[h]
    return ruleset.to_dict()


def circle_indices(circle: Sequence[str], tables: Tables) -> np.ndarray:
    """Validate a circle (every patch id exactly once) and map it to patch indices."""
    ids = tables.patch_index
    unknown = [c for c in circle if c not in ids]
    if unknown:
        raise ValueError(f"circle: unknown patch id(s) {', '.join(map(str, unknown))} "
                         f"in ruleset {tables.ruleset.name!r}")
    dup = sorted({c for c in circle if list(circle).count(c) > 1})
    if dup:
        raise ValueError(f"circle: patch id(s) listed more than once: {', '.join(dup)}")
    missing = [p for p in ids if p not in set(circle)]
    if missing:
        raise ValueError(f"circle: missing patch id(s) {', '.join(missing)} "
                         "(the circle must list every patch of the ruleset once)")
    return np.array([ids[c] for c in circle], dtype=np.int64)
