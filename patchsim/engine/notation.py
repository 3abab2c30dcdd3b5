"""The position text: one line of ``key=value`` fields that writes a game's position and
reads it back to the same state (:meth:`patchsim.engine.game.Game.to_text` and
:meth:`~patchsim.engine.game.Game.from_text` use it).

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

The ruleset is not part of the text: give it to ``Game.from_text``. A position read back
has the same state array as the one written, and so the same legal moves, except in the slots
of patches already bought, where the engine leaves stale patch ids that no rule reads and the
text cannot know (they read back as -1). It has no move history (its ``record()`` refuses:
the moves that led to it are unknown).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from patchsim.engine import core
from patchsim.engine.tables import Tables, join, split
from patchsim.errors import PatchsimError


def position_text(tables: Tables, state: np.ndarray) -> str:
    """The position of ``state`` (a game under ``tables``) as one line of text."""
    st = state
    rows, cols = tables.rows, tables.cols
    ids = tables.patch_ids
    n, ofs = int(st[core.S_NCIRCLE]), int(st[core.S_OFS])
    circle = ",".join(("*" if i == ofs else "") + ids[int(st[core.S_CIRCLE + i])]
                      for i in range(n)) or "-"
    taken, pend = int(st[core.S_LEATHER_TAKEN]), int(st[core.S_PENDING_MARKS])
    who = int(st[core.S_PENDING_PLAYER])
    leather = ",".join(
        f"{m}p{who}" if pend >> i & 1 else f"{m}x" if taken >> i & 1 else str(m)
        for i, m in enumerate(tables.ruleset.leather_marks)) or "-"
    fields = [
        *(f"q{p}={_quilt_text(join(st[core.S_QLO + p], st[core.S_QHI + p]), rows, cols)}"
          for p in (0, 1)),
        *(f"p{p}={st[core.S_POS + p]},{st[core.S_BTN + p]},{st[core.S_INC + p]}"
          for p in (0, 1)),
        f"top={st[core.S_TOP]}", f"circle={circle}", f"leather={leather}",
        f"bonus={_who(st[core.S_BONUS])}", f"end={_who(st[core.S_FIRST_END])}",
        f"ply={st[core.S_PLY]}",
    ]
    return " ".join(fields)


def read_position(text: str, tables: Tables) -> tuple[np.ndarray, tuple[str, ...]]:
    """The state array and the circle (patches left, in stored order) of a position text
    under ``tables``; PositionTextError (a ValueError) naming the field and its value when
    the text is malformed or does not fit the ruleset (quilt size, patch ids, leather
    marks)."""
    ruleset = tables.ruleset
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
    return state, circle


TEXT_KEYS = ("q0", "q1", "p0", "p1", "top", "circle", "leather", "bonus", "end", "ply")
_WHO = {"-": -1, "0": 0, "1": 1}


def _who(v: int) -> str:
    return "-" if v < 0 else str(int(v))


class PositionTextError(PatchsimError, ValueError):
    """A position text that cannot be read; ``key`` is the field (None: the text as a whole)
    and ``value`` its value."""

    def __init__(self, message: str, field: str | None = None,
                 value: str | None = None) -> None:
        super().__init__(f"position text: {message}")
        self.key, self.value = field, value


def _bad(field: str, value: str, problem: str) -> PositionTextError:
    return PositionTextError(f"{field}={value!r}: {problem}", field, value)


def _text_fields(text: str) -> dict[str, str]:
    if not isinstance(text, str):
        raise TypeError(f"position text: expected a string, got {type(text).__name__}")
    out: dict[str, str] = {}
    for word in text.split():
        key, eq, value = word.partition("=")
        if not eq:
            raise PositionTextError(f"{word!r} is not a key=value field (fields: "
                                    f"{' '.join(TEXT_KEYS)})", None, word)
        if key not in TEXT_KEYS:
            raise PositionTextError(f"unknown field {key!r} in {word!r} (fields: "
                                    f"{' '.join(TEXT_KEYS)})", key, value)
        if key in out:
            raise PositionTextError(f"field {key!r} given twice", key, value)
        out[key] = value
    missing = [k for k in TEXT_KEYS if k not in out]
    if missing:
        raise PositionTextError(f"missing field(s) {', '.join(missing)}")
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
