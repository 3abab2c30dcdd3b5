"""Rulesets shared by the tests: random valid rulesets (hypothesis strategies) and a small
fixed one that trains and plays in moments."""

from __future__ import annotations

from hypothesis import strategies as st

BASE_SHAPES = ["XX", "XXX", "XX/X.", "XXX/.X.", "XX./.XX", "XXXX/X...", ".X./XXX/.X.",
               "XXX/X.X", "X", "XX/XX", "XXXXX", "XXX/..X/..X"]

# a 5x5 ruleset of eight patches: a training or a self-play of it takes moments
SMALL = {
    "name": "small", "board": {"rows": 5, "cols": 5}, "starting_buttons": 5,
    "track": {"last_space": 20, "income": [5, 10, 15, 20], "leather": [8, 14]},
    "offer_size": 3, "bonus": {"square": 3, "points": 4}, "empty_square_penalty": 2,
    "patches": [{"id": f"Q{i}", "shape": s, "cost": c, "time": t, "income": n}
                for i, (s, c, t, n) in enumerate([
                    ("XX", 1, 1, 0), ("XXX", 2, 2, 1), ("XX/X.", 3, 1, 1), ("XXX/.X.", 4, 3, 2),
                    ("XX/XX", 5, 4, 2), ("X", 0, 1, 0), ("XXXX", 3, 3, 1), ("XX./.XX", 2, 2, 0)])],
    "start_after": "Q0", "leather_when_full": "discard",
}


@st.composite
def polyomino(draw: st.DrawFn, max_cells: int = 6) -> str:
    """A random connected shape in the ruleset text form ("XX./.XX")."""
    n = draw(st.integers(1, max_cells))
    cells = {(0, 0)}
    while len(cells) < n:
        r, c = draw(st.sampled_from(sorted(cells)))
        dr, dc = draw(st.sampled_from([(0, 1), (1, 0), (0, -1), (-1, 0)]))
        cells.add((r + dr, c + dc))
    r0 = min(r for r, _ in cells)
    c0 = min(c for _, c in cells)
    h = max(r for r, _ in cells) - r0 + 1
    w = max(c for _, c in cells) - c0 + 1
    return "/".join("".join("X" if (r + r0, c + c0) in cells else "." for c in range(w))
                    for r in range(h))


@st.composite
def ruleset_dicts(draw: st.DrawFn, max_side: int = 11) -> dict:
    """A random valid ruleset as a mapping in the YAML format (inline patches)."""
    rows = draw(st.integers(3, max_side))
    cols = draw(st.integers(3, max_side))
    last = draw(st.integers(8, 70))
    marks = st.lists(st.integers(1, last), unique=True, max_size=10).map(sorted)
    npatch = draw(st.integers(2, 20))
    patches = []
    for i in range(npatch):
        shape = draw(st.one_of(st.sampled_from(BASE_SHAPES), polyomino()))
        h = shape.count("/") + 1
        w = len(shape.split("/")[0])
        if max(h, w) > max(rows, cols) or min(h, w) > min(rows, cols):
            shape = "XX"
        patches.append({"id": f"Q{i:02d}", "shape": shape, "cost": draw(st.integers(0, 9)),
                        "time": draw(st.integers(0, 6)), "income": draw(st.integers(0, 3))})
    with_bonus = draw(st.booleans())
    return {
        "name": "random",
        "board": {"rows": rows, "cols": cols},
        "starting_buttons": draw(st.integers(0, 12)),
        "second_player_buttons": draw(st.integers(0, 3)),
        "track": {"last_space": last, "income": draw(marks), "leather": draw(marks)},
        "offer_size": draw(st.integers(1, 4)),
        "bonus": ({"square": draw(st.integers(1, min(rows, cols))),
                   "points": draw(st.integers(0, 9))} if with_bonus else None),
        "empty_square_penalty": draw(st.integers(0, 3)),
        "patches": patches,
        "start_after": f"Q{draw(st.integers(0, npatch - 1)):02d}",
        "leather_when_full": draw(st.sampled_from(["discard", "stay"])),
    }
