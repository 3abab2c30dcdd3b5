"""The friendly Python API over the rules core: inspectable game states, moves as objects.

Every rule is applied by the compiled functions of :mod:`patchsim.engine.core`; this module only
translates between them and Python objects, so the API and the fast path cannot drift apart.

The move types are in :mod:`patchsim.engine.moves` and the position text in
:mod:`patchsim.engine.notation` (both importable from here, as before).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.moves import (
    IllegalMoveError,
    IllegalReason,
    Move,
    MoveList,
    decode_move,
    parse_move,
)
from patchsim.engine.notation import position_text, read_position
from patchsim.engine.ruleset import Ruleset, load_ruleset, shipped_rulesets
from patchsim.engine.tables import Tables, compile_ruleset, join

# the move types live in patchsim.engine.moves; many callers import them from here
__all__ = ["Game", "IllegalMoveError", "IllegalReason", "Move", "MoveList", "PlayerView",
           "circle_indices", "decode_move", "parse_move", "rules_reference"]


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
        return position_text(self.tables, self.state)

    @classmethod
    def from_text(cls, text: str, rules: Ruleset | str = "edition2") -> Game:
        """The position written by :meth:`to_text`, under ``rules``.

        Raises ValueError naming the field and its value when the text is malformed or does
        not fit the ruleset (quilt size, patch ids, leather marks). The game has no move
        history; its ``circle`` is the patches left, in stored order."""
        ruleset = rules if isinstance(rules, Ruleset) else load_ruleset(rules)
        tables = compile_ruleset(ruleset)
        state, circle = read_position(text, tables)
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
        return None if why == core.LEGAL else _reason(why)

    def illegal_reason(self, move: Move | int | str) -> str | None:
        """Why ``move`` is illegal here, in words, or None if it is legal."""
        why = self.legality(move)
        return None if why is None else why.describe(self.ruleset.offer_size)

    def apply(self, move: Move | int | str) -> None:
        """Play a legal move (a Move, a core code or record text); IllegalMoveError if not."""
        code = self._code(move)
        why = int(core.legality(self.state, self.tab, code))
        if why != core.LEGAL:
            reason = _reason(why)
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
        out: dict[str, Any] = {
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


def _reason(code: int) -> IllegalReason:
    """The IllegalReason of a core verdict (an enum looked up by value, which type checkers
    take for a call of its two-argument constructor)."""
    return IllegalReason(code)  # type: ignore[call-arg]


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
