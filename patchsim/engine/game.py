"""The friendly Python API over the rules core: inspectable game states, moves as objects.

Every rule is applied by the compiled functions of :mod:`patchsim.engine.core`; this module only
translates between them and Python objects, so the API and the fast path cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import overload

import numpy as np

from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.ruleset import Ruleset, load_ruleset, shipped_rulesets
from patchsim.engine.tables import Tables, compile_ruleset, join, parse_square, square_name

ILLEGAL_REASONS = {
    1: "the game is over",
    2: "no leather patch is waiting to be placed",
    3: "the square is off the quilt",
    4: "the square is already covered",
    5: "a claimed leather patch must be placed first",
    6: "no such placement",
    7: "the patch is not on offer (only the next {offer} after the neutral token are)",
    8: "the player cannot afford it",
    9: "it overlaps a patch already on the quilt",
}


class IllegalMoveError(ValueError):
    """A move that is not legal in the position it was played in."""


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

    def illegal_reason(self, move: Move | int | str) -> str | None:
        """Why ``move`` is illegal here, or None if it is legal."""
        code = self._code(move)
        why = int(core.legality(self.state, self.tab, code))
        if why == 0:
            return None
        return ILLEGAL_REASONS[why].format(offer=self.ruleset.offer_size)

    def apply(self, move: Move | int | str) -> None:
        """Play a legal move (a Move, a core code or record text); IllegalMoveError if not."""
        code = self._code(move)
        why = int(core.legality(self.state, self.tab, code))
        if why:
            raise IllegalMoveError(
                f"{self._describe(move, code)}: "
                + ILLEGAL_REASONS[why].format(offer=self.ruleset.offer_size))
        core.apply_move(self.state, self.tab, code)
        self.history.append(code)

    def _describe(self, move: Move | int | str, code: int) -> str:
        """Text of a move for messages; codes that name no move are shown as codes."""
        if isinstance(move, Move | str):
            return str(move)
        nsq = self.tables.rows * self.tables.cols
        if code == core.PASS or 0 <= code < len(self.tables.placement_masks) or \
                core.LEATHER_BASE - nsq < code <= core.LEATHER_BASE:
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
        in full, so the record always replays under the rules it was played with."""
        return {"rules": rules or rules_reference(self.ruleset), "circle": list(self.circle),
                "moves": self.move_texts()}

    def summary(self) -> dict:
        """The position as the JSON object of ``patchsim replay --json``."""
        finished = self.finished
        if finished:
            legal = 0
        elif self.pending_leather:
            legal = self.empty_squares(self.to_move or 0)
        else:
            legal = self.legal_move_count()
        return {
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
