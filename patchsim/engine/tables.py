"""Compile a :class:`~patchsim.engine.ruleset.Ruleset` into the flat table the rules core reads.

Every placement of every patch (each distinct set of covered squares over all rotations,
reflections and positions) is computed here once per ruleset and cached by content hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np

from patchsim.engine import core
from patchsim.engine.ruleset import PatchSpec, Ruleset

MASK64 = (1 << 64) - 1


def orientations(cells: tuple[tuple[int, int], ...]) -> list[tuple[tuple[int, int], ...]]:
    """The distinct rotations and reflections of a shape, each normalised to the origin."""
    seen: set[tuple[tuple[int, int], ...]] = set()
    out = []
    pts = list(cells)
    for _flip in range(2):
        for _rot in range(4):
            min_r = min(r for r, _ in pts)
            min_c = min(c for _, c in pts)
            norm = tuple(sorted((r - min_r, c - min_c) for r, c in pts))
            if norm not in seen:
                seen.add(norm)
                out.append(norm)
            pts = [(c, -r) for r, c in pts]  # rotate a quarter turn
        pts = [(r, -c) for r, c in pts]  # mirror
    return out


def placements(patch: PatchSpec, rows: int, cols: int) -> list[int]:
    """Bitmasks (square ``r * cols + c``) of every distinct placement of ``patch``, sorted."""
    masks: set[int] = set()
    for shape in orientations(patch.cells):
        h = max(r for r, _ in shape) + 1
        w = max(c for _, c in shape) + 1
        for r0 in range(rows - h + 1):
            for c0 in range(cols - w + 1):
                m = 0
                for r, c in shape:
                    m |= 1 << ((r0 + r) * cols + c0 + c)
                masks.add(m)
    return sorted(masks)


def split(mask: int) -> tuple[int, int]:
    """A 128-bit mask as two signed 64-bit words (lo, hi) for the int64 table."""

    def signed(w: int) -> int:
        return w - (1 << 64) if w >= 1 << 63 else w

    return signed(mask & MASK64), signed((mask >> 64) & MASK64)


def join(lo: int, hi: int) -> int:
    return (int(lo) & MASK64) | ((int(hi) & MASK64) << 64)


@dataclass(frozen=True)
class Tables:
    """A compiled ruleset: the ``tab`` array plus the lookups the Python side needs."""

    ruleset: Ruleset
    tab: np.ndarray
    patch_index: dict[str, int]
    placement_masks: list[int]  # by placement id
    placement_lookup: list[dict[int, int]] = field(repr=False)  # per patch: mask -> id

    @property
    def rows(self) -> int:
        return self.ruleset.rows

    @property
    def cols(self) -> int:
        return self.ruleset.cols

    @property
    def patch_ids(self) -> list[str]:
        return [p.id for p in self.ruleset.patches]

    def placement_patch(self, g: int) -> int:
        return int(self.tab[self.tab[core.O_PLACE_PATCH] + g])

    def placement_squares(self, g: int) -> tuple[int, ...]:
        m = self.placement_masks[g]
        return tuple(s for s in range(self.rows * self.cols) if m >> s & 1)

    def find_placement(self, patch: int, mask: int) -> int | None:
        return self.placement_lookup[patch].get(mask)

    @cached_property
    def placement_texts(self) -> np.ndarray:
        """Each placement's squares as text ("a1 b1 b2"), by placement id (object array).
        Kept with the tables, so it lives as long as they do (compile_ruleset's cache)."""
        return np.array([" ".join(square_name(s, self.cols) for s in self.placement_squares(g))
                         for g in range(len(self.placement_masks))], dtype=object)


def _build(ruleset: Ruleset) -> Tables:
    rows, cols = ruleset.rows, ruleset.cols
    nsq = rows * cols
    per_patch = [placements(p, rows, cols) for p in ruleset.patches]
    masks = [m for ms in per_patch for m in ms]
    npatch = len(ruleset.patches)
    nplace = len(masks)
    last = ruleset.last_space

    windows: list[int] = []
    if ruleset.bonus_square is not None:
        k = ruleset.bonus_square
        for r0 in range(rows - k + 1):
            for c0 in range(cols - k + 1):
                m = 0
                for r in range(r0, r0 + k):
                    for c in range(c0, c0 + k):
                        m |= 1 << (r * cols + c)
                windows.append(m)

    income_cum = [0] * (last + 1)
    for pos in range(last + 1):
        income_cum[pos] = sum(1 for m in ruleset.income_marks if m <= pos)

    neigh: list[int] = []
    for s in range(nsq):
        r, c = divmod(s, cols)
        m = 0
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < rows and 0 <= cc < cols:
                m |= 1 << (rr * cols + cc)
        lo, hi = split(m)
        neigh += [lo, hi]

    def place_nb(m: int) -> int:
        nb = 0
        for s in range(nsq):
            if m >> s & 1:
                r, c = divmod(s, cols)
                for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                    rr, cc = r + dr, c + dc
                    if 0 <= rr < rows and 0 <= cc < cols:
                        nb |= 1 << (rr * cols + cc)
        return nb & ~m

    def place_edge(m: int) -> int:
        n = 0
        for s in range(nsq):
            if m >> s & 1:
                r, c = divmod(s, cols)
                n += (r == 0) + (r == rows - 1) + (c == 0) + (c == cols - 1)
        return n

    nbs = [place_nb(m) for m in masks]
    first_col = sum(1 << (r * cols) for r in range(rows))
    last_col = sum(1 << (r * cols + cols - 1) for r in range(rows))
    first_row = sum(1 << c for c in range(cols))
    last_row = sum(1 << ((rows - 1) * cols + c) for c in range(cols))
    # in the order of core.BORDER_FIRST_COL .. core.BORDER_LAST_ROW
    border = [w for m in (first_col, last_col, first_row, last_row) for w in split(m)]

    sections: dict[int, list[int]] = {
        core.O_PLACE_LO: [split(m)[0] for m in masks],
        core.O_PLACE_HI: [split(m)[1] for m in masks],
        core.O_PLACE_PATCH: [i for i, ms in enumerate(per_patch) for _ in ms],
        core.O_PATCH_FIRST: list(np.cumsum([0] + [len(ms) for ms in per_patch])[:-1]),
        core.O_PATCH_COUNT: [len(ms) for ms in per_patch],
        core.O_COST: [p.cost for p in ruleset.patches],
        core.O_TIME: [p.time for p in ruleset.patches],
        core.O_INCOME: [p.income for p in ruleset.patches],
        core.O_SIZE: [p.size for p in ruleset.patches],
        core.O_INCOME_CUM: income_cum,
        core.O_INCOME_MARKS: list(ruleset.income_marks),
        core.O_LEATHER: list(ruleset.leather_marks),
        core.O_WIN_LO: [split(w)[0] for w in windows],
        core.O_WIN_HI: [split(w)[1] for w in windows],
        core.O_FULL_LO: [split((1 << nsq) - 1)[0]],
        core.O_FULL_HI: [split((1 << nsq) - 1)[1]],
        core.O_NEIGH: neigh,
        core.O_PLACE_NB_LO: [split(m)[0] for m in nbs],
        core.O_PLACE_NB_HI: [split(m)[1] for m in nbs],
        core.O_PLACE_EDGE: [place_edge(m) for m in masks],
        core.O_BORDER: border,
    }
    size = core.T_HEADER + sum(len(v) for v in sections.values())
    tab = np.zeros(size, dtype=np.int64)
    header = {
        core.T_ROWS: rows,
        core.T_COLS: cols,
        core.T_NSQ: nsq,
        core.T_LAST: last,
        core.T_OFFER: ruleset.offer_size,
        core.T_START_BUTTONS: ruleset.starting_buttons,
        core.T_HAS_BONUS: int(ruleset.bonus_square is not None),
        core.T_BONUS_POINTS: ruleset.bonus_points if ruleset.bonus_square is not None else 0,
        core.T_PENALTY: ruleset.empty_square_penalty,
        core.T_LEATHER_STAY: int(ruleset.leather_when_full == "stay"),
        core.T_NPATCH: npatch,
        core.T_NLEATHER: len(ruleset.leather_marks),
        core.T_NWINDOWS: len(windows),
        core.T_NPLACE: nplace,
        core.T_NINCOME: len(ruleset.income_marks),
        core.T_MAX_PATCH_PLACEMENTS: max(len(ms) for ms in per_patch),
        core.T_SECOND_BUTTONS: ruleset.second_player_buttons,
    }
    for k, v in header.items():
        tab[k] = v
    pos = core.T_HEADER
    for off, values in sections.items():
        tab[off] = pos
        tab[pos : pos + len(values)] = np.array(values, dtype=np.int64) if values else 0
        pos += len(values)
    tab.setflags(write=False)
    lookup = [{m: int(first) + j for j, m in enumerate(ms)} for first, ms in
              zip(sections[core.O_PATCH_FIRST], per_patch, strict=True)]
    return Tables(
        ruleset=ruleset,
        tab=tab,
        patch_index={p.id: i for i, p in enumerate(ruleset.patches)},
        placement_masks=masks,
        placement_lookup=lookup,
    )


@lru_cache(maxsize=64)
def _cached(key: str, ruleset: Ruleset) -> Tables:
    return _build(ruleset)


def compile_ruleset(ruleset: Ruleset) -> Tables:
    """The compiled tables of a ruleset (built once per content hash and process)."""
    tables = _cached(ruleset.content_hash(), ruleset)
    if tables.ruleset is not ruleset:
        # same rules under another name or description: share the arrays, keep the identity
        tables = replace(tables, ruleset=ruleset)
    return tables


# --- square names -----------------------------------------------------------------------------
COLUMN_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def square_name(s: int, cols: int) -> str:
    """Square index to its record name: column letter, then 1-based row from the top ("a1")."""
    r, c = divmod(s, cols)
    return f"{COLUMN_LETTERS[c]}{r + 1}"


def parse_square(name: str, rows: int, cols: int) -> int:
    """Record name to square index; ValueError with the reason if it is not on this quilt."""
    text = name.strip().lower()
    if len(text) < 2 or text[0] not in COLUMN_LETTERS or not text[1:].isdigit():
        raise ValueError(f"{name!r} is not a square (a column letter and a row number, e.g. a1)")
    c = COLUMN_LETTERS.index(text[0])
    r = int(text[1:]) - 1
    if c >= cols or not 0 <= r < rows:
        last = f"{COLUMN_LETTERS[cols - 1]}{rows}"
        raise ValueError(f"square {name!r} is off the {rows}x{cols} quilt (a1..{last})")
    return r * cols + c
