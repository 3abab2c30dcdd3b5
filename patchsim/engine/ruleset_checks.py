"""Validation of merged ruleset data: every problem is collected, each naming the file (or the
override) its key came from, and the checked values become a ruleset's fields."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from patchsim.engine.ruleset_files import Provenance, join_key
from patchsim.engine.ruleset_schema import (
    BOARD_KEYS,
    BONUS_KEYS,
    CHANGEABLE,
    ID_RE,
    LEATHER_POLICIES,
    MAX_LAST_SPACE,
    MAX_LEATHER,
    MAX_NAME,
    MAX_PATCHES,
    MAX_SIDE,
    MAX_SQUARES,
    MAX_VALUE,
    PATCH_KEYS,
    TOP_KEYS,
    TOP_REQUIRED,
    TRACK_KEYS,
    PatchSpec,
    RulesetError,
    describe_value,
    shape_cells,
    unknown_key_text,
)
from patchsim.engine.yamlfile import QUOTE_CHARS, quote
from patchsim.errors import OVERRIDE, Problem


class Reporter:
    """Collects problems, naming the file each offending key came from."""

    def __init__(self, prov: Provenance) -> None:
        self.prov = prov
        self.problems: list[str] = []
        # the (key path, shown path) of every override: a few, however large the data
        self.overridden = sorted((p, d) for p, (lab, d) in prov.items()
                                 if lab == OVERRIDE)
        self.cause: str | None = None  # set while checking values against an overridden board

    def board_override(self) -> str | None:
        """The override that set the quilt size, if one did (its key as given)."""
        return next((d for p, d in self.overridden if p in ("board", "board.rows",
                                                            "board.cols")), None)

    def where(self, path: str) -> tuple[str, str]:
        """The source label for a key path and the path to show there (longest known prefix)."""
        p = path
        while p not in self.prov:
            if not p:
                return "<ruleset>", path
            cut = max(p.rfind("."), p.rfind("["))
            p = p[:cut] if cut > 0 else ""
        label, display = self.prov[p]
        # The prefix is cut at "." or "[", so the rest starts with one of them (or is empty).
        return label, display + path[len(p):]

    def add(self, path: str, message: str) -> None:
        label, shown = self.where(path)
        if label != OVERRIDE:
            # A mapping a file gave but an override changed below (board, with --set
            # board.rows=12 making the quilt too big) is blamed on the override.
            below = [d for p, d in self.overridden
                     if path and p.startswith((path + ".", path + "["))]
            if below:
                label, shown = OVERRIDE, below[0]
        if len(shown) > 2 * QUOTE_CHARS:  # a huge key in a path
            shown = shown[:2 * QUOTE_CHARS] + "..."
        if self.cause is not None and label != OVERRIDE:
            # a file's value that only an override's quilt size makes wrong: the override
            # is what changed, so it leads ("--set board.rows: edition2.yaml: bonus.square")
            self.problems.append(Problem(f"{label}: {shown}: {message}", key=self.cause,
                                         given=OVERRIDE))
        elif label == OVERRIDE:
            self.problems.append(Problem(message, key=shown or None, given=OVERRIDE))
        else:
            self.problems.append(Problem(message, key=shown or None, source=label))


def _check_keys(rep: Reporter, mapping: Mapping[Any, Any], path: str, known: tuple[str, ...],
                required: tuple[str, ...]) -> None:
    for key in mapping:
        if key not in known:
            rep.add(join_key(path, key), unknown_key_text(key, known))
    for key in required:
        if key not in mapping:
            rep.add(join_key(path, key), "missing required key")


def _check_int(rep: Reporter, value: object, path: str, lo: int | None = None,
               hi: int | None = None, why: str = "") -> int | None:
    """``value`` if it is an integer in lo..hi, else None after reporting the problem."""
    # bool is a subclass of int in Python, but `true` is never a sensible count in a file.
    if isinstance(value, bool) or not isinstance(value, int):
        rep.add(path, f"expected an integer, got {describe_value(value)}")
        return None
    # the engine holds every count in a 64-bit integer: keep far away from its limit
    if hi is None and value > MAX_VALUE:
        rep.add(path, f"must be at most {MAX_VALUE}, got {value}")
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        if hi is None:
            rule = f"at least {lo}"
        elif lo is None:
            rule = f"at most {hi}"
        else:
            rule = f"between {lo} and {hi}"
        rep.add(path, f"must be {rule}{why}, got {value}")
        return None
    return value


def _int_key(rep: Reporter, mapping: Mapping[Any, Any], key: str, path: str,
             lo: int | None = None, hi: int | None = None, why: str = "") -> int | None:
    if key not in mapping:
        return None  # reported by _check_keys
    return _check_int(rep, mapping[key], join_key(path, key), lo, hi, why)


def _section(rep: Reporter, data: Mapping[Any, Any], key: str, known: tuple[str, ...],
             example: str) -> Mapping[Any, Any] | None:
    """A required sub-mapping, checked for unknown and missing keys."""
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, dict):
        rep.add(key, f"expected a mapping {example}, got {describe_value(value)}")
        return None
    _check_keys(rep, value, key, known, known)
    return value


def _check_marks(rep: Reporter, track: Mapping[Any, Any], key: str, last_space: int | None,
                 max_count: int | None) -> tuple[int, ...] | None:
    if key not in track:
        return None
    path = f"track.{key}"
    marks = track[key]
    if not isinstance(marks, list):
        rep.add(path, f"expected a list of track spaces, got {describe_value(marks)}")
        return None
    ok = True
    if max_count is not None and len(marks) > max_count:
        rep.add(path, f"at most {max_count} marks are allowed, got {len(marks)}")
        ok = False
    hi = last_space if last_space is not None else MAX_LAST_SPACE
    why = " (the last space)" if last_space is not None else ""
    seen: dict[int, int] = {}
    for i, mark in enumerate(marks):
        value = _check_int(rep, mark, f"{path}[{i}]", 1, hi, why)
        if value is None:
            ok = False
        elif value in seen:
            rep.add(f"{path}[{i}]", f"duplicate mark {value} (also at {path}[{seen[value]}])")
            ok = False
        else:
            seen[value] = i
    return tuple(sorted(seen)) if ok else None


def _check_shape(rep: Reporter, shape: object, path: str, rows: int | None,
                 cols: int | None) -> bool:
    if not isinstance(shape, str):
        rep.add(path, f"expected a string such as 'XX/X.', got {describe_value(shape)}")
        return False
    if not shape:
        rep.add(path, "empty shape: give rows of 'X' (covered) and '.' (empty) joined by '/'")
        return False
    bad = sorted({ch for ch in shape if ch not in "X./"})
    if bad:
        hint = " (use a capital 'X')" if "x" in bad else ""
        rep.add(path, "only 'X' (covered), '.' (empty) and '/' (between rows) are allowed, "
                      f"found {', '.join(repr(c) for c in bad)}{hint}")
        return False
    lines = shape.split("/")
    ok = True
    for i, line in enumerate(lines[1:], start=2):
        if len(line) != len(lines[0]):
            longer = "longer" if len(line) > len(lines[0]) else "shorter"
            rep.add(path, f"row {i} is {longer} than row 1 ({len(line)} vs {len(lines[0])} "
                          "squares); all rows must be the same length")
            ok = False
    if not ok:
        return False
    if "X" not in shape:
        rep.add(path, "no covered square: a patch needs at least one 'X'")
        return False
    empty_sides = [
        ("first row", "X" not in lines[0]),
        ("last row", "X" not in lines[-1]),
        ("first column", all(line[0] != "X" for line in lines)),
        ("last column", all(line[-1] != "X" for line in lines)),
    ]
    for side, empty in empty_sides:
        if empty:
            rep.add(path, f"the {side} is empty; remove it")
            ok = False
    if not ok:
        return False
    cells = set(shape_cells(shape))
    start = next(iter(cells))
    reached, todo = {start}, [start]
    while todo:
        r, c = todo.pop()
        for nb in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if nb in cells and nb not in reached:
                reached.add(nb)
                todo.append(nb)
    if reached != cells:
        rep.add(path, "not one connected piece (covered squares must join edge to edge)")
        return False
    h, w = len(lines), len(lines[0])
    if rows is not None and cols is not None and not (
            (h <= rows and w <= cols) or (w <= rows and h <= cols)):
        rep.cause = rep.board_override()
        rep.add(path, f"the patch is {h}x{w} and does not fit on the {rows}x{cols} quilt "
                      "in any rotation")
        rep.cause = None
        return False
    return True


STORED_LIMIT = 2**31 - 1  # scores, buttons and score leads are stored as 32-bit integers


def _check_stored_range(rep: Reporter, data: Mapping[Any, Any],
                        patches: tuple[PatchSpec, ...], income: tuple[int, ...] | None,
                        rows: int | None, cols: int | None) -> None:
    """Every value a game can reach must fit the stored columns: the largest possible score
    (all buttons anyone can ever hold, plus the bonus) and the largest lead (twice that)."""
    def num(key: str, sub: str | None = None) -> int:
        v = data.get(key)
        if sub is not None:
            v = v.get(sub) if isinstance(v, Mapping) else None
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    marks = len(income or ())
    most_income = sum(max(0, p.income) for p in patches)
    buttons = (num("starting_buttons") + num("second_player_buttons")
               + num("track", "last_space") + marks * most_income)
    top = buttons + num("bonus", "points")
    bottom = num("empty_square_penalty") * (rows or 0) * (cols or 0)
    lead = top + bottom
    if lead > STORED_LIMIT:
        rep.add("starting_buttons", f"with these settings a score could reach {top:,} and a "
                f"lead {lead:,}, beyond what the result tables store ({STORED_LIMIT:,}); "
                "lower the starting buttons, the track length, the income or the penalty")


def _check_patches(rep: Reporter, data: Mapping[Any, Any], rows: int | None,
                   cols: int | None) -> tuple[tuple[PatchSpec, ...] | None, dict[str, int] | None]:
    """The validated patches (None on any problem) and the index of each id (None if unknown)."""
    if "patches" not in data:
        return None, None
    plist = data["patches"]
    if not isinstance(plist, list):
        rep.add("patches", "expected a list of patches {id, shape, cost, time, income} or a "
                           f"path to a patch table file, got {describe_value(plist)}")
        return None, None
    ok = True
    if not plist:
        rep.add("patches", "at least one patch is required")
        ok = False
    if len(plist) > MAX_PATCHES:
        rep.add("patches", f"at most {MAX_PATCHES} patches are allowed, got {len(plist)}")
        ok = False

    # Each entry's fields, and the key path each field value came from (patch_changes move it).
    entries: list[tuple[dict[Any, Any], dict[str, str]] | None] = []
    for i, entry in enumerate(plist):
        path = f"patches[{i}]"
        if not isinstance(entry, dict):
            rep.add(path, f"expected a mapping {{id, shape, cost, time, income}}, "
                          f"got {describe_value(entry)}")
            entries.append(None)
            ok = False
            continue
        _check_keys(rep, entry, path, PATCH_KEYS, PATCH_KEYS)
        ok = ok and all(k in entry for k in PATCH_KEYS)
        entries.append((dict(entry), {k: f"{path}.{k}" for k in PATCH_KEYS}))

    index: dict[str, int] = {}
    for i, item in enumerate(entries):
        if item is None or "id" not in item[0]:
            continue
        pid, path = item[0]["id"], f"patches[{i}].id"
        if not isinstance(pid, str):
            hint = " (quote it)" if isinstance(pid, int | float) else ""
            rep.add(path, f"expected a string, got {describe_value(pid)}{hint}")
            ok = False
        elif not ID_RE.fullmatch(pid):
            rep.add(path, f"invalid id {quote(pid)}: use only letters, digits and '_' "
                          "(ids appear in text records)")
            ok = False
        elif pid in index:
            rep.add(path, f"duplicate id {quote(pid)} (also patches[{index[pid]}])")
            ok = False
        else:
            index[pid] = i

    changes = data.get("patch_changes")
    if changes is not None and not isinstance(changes, dict):
        rep.add("patch_changes", "expected a mapping {patch id: {field: value}}, "
                                 f"got {describe_value(changes)}")
        ok = False
    for pid, fields in (changes or {}).items() if isinstance(changes, dict) else ():
        path = f"patch_changes.{pid}"
        if not isinstance(pid, str) or pid not in index:
            close = difflib.get_close_matches(str(pid), list(index), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            rep.add(path, f"unknown patch id {quote(str(pid))}{hint}")
            ok = False
            continue
        if not isinstance(fields, dict):
            rep.add(path, "expected a mapping of the fields to change "
                          f"({', '.join(CHANGEABLE)}), got {describe_value(fields)}")
            ok = False
            continue
        target = entries[index[pid]]
        assert target is not None  # it has an id, so it is a mapping
        for fname, value in fields.items():
            if fname not in CHANGEABLE:
                close = difflib.get_close_matches(str(fname), CHANGEABLE, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                rep.add(join_key(path, fname), f"cannot change {quote(str(fname))} ({hint}allowed: "
                                            f"{', '.join(CHANGEABLE)})")
                ok = False
                continue
            target[0][fname] = value
            target[1][fname] = join_key(path, fname)

    specs: list[PatchSpec] = []
    for item in entries:
        if item is None:
            continue
        fields, paths = item
        good = True
        if "shape" in fields:
            good = _check_shape(rep, fields["shape"], paths["shape"], rows, cols)
        numbers = {k: _check_int(rep, fields[k], paths[k], 0) for k in ("cost", "time", "income")
                   if k in fields}
        cost, time, income = (numbers.get(k) for k in ("cost", "time", "income"))
        if not good or cost is None or time is None or income is None or not ok:
            ok = False
            continue
        specs.append(PatchSpec(id=fields["id"], shape=fields["shape"], cost=cost, time=time,
                               income=income))
    return (tuple(specs) if ok else None), index


def checked_fields(data: Mapping[Any, Any], prov: Provenance, default_name: str | None,
                   source: str | None, label: str, title: str | None = None) -> dict[str, Any]:
    """Validate merged ruleset data: the fields of its Ruleset, or RulesetError with every
    problem found."""
    rep = Reporter(prov)
    _check_keys(rep, data, "", TOP_KEYS, TOP_REQUIRED)

    name = data.get("name", default_name)
    if "name" in data and (not isinstance(name, str) or not name.strip()):
        rep.add("name", f"expected a non-empty string, got {describe_value(name)}")
    elif isinstance(name, str) and (len(name) > MAX_NAME or not name.isprintable()):
        # the name becomes a folder name and a table value
        rep.add("name", f"expected at most {MAX_NAME} printable characters, got {quote(name)}")
    elif name is None:
        rep.add("name", "missing required key (there is no file name to default to)")
    description = data.get("description")
    if description is None:
        description = ""
    if not isinstance(description, str):
        rep.add("description", f"expected a string, got {describe_value(description)}")
    elif "\0" in description:
        rep.add("description", "contains a NUL character")

    rows = cols = None
    board = _section(rep, data, "board", BOARD_KEYS, "{rows: R, cols: C}")
    if board is not None:
        rows = _int_key(rep, board, "rows", "board", 1, MAX_SIDE)
        cols = _int_key(rep, board, "cols", "board", 1, MAX_SIDE)
        if rows is not None and cols is not None and rows * cols > MAX_SQUARES:
            rep.add("board", f"a {rows}x{cols} quilt has {rows * cols} squares, more than "
                             f"{MAX_SQUARES}: the engine stores a quilt in 128 bits")

    last_space = income = leather = None
    track = _section(rep, data, "track", TRACK_KEYS, "{last_space: N, income: [...], "
                                                      "leather: [...]}")
    if track is not None:
        last_space = _int_key(rep, track, "last_space", "track", 1, MAX_LAST_SPACE)
        income = _check_marks(rep, track, "income", last_space, None)
        leather = _check_marks(rep, track, "leather", last_space, MAX_LEATHER)

    starting_buttons = _int_key(rep, data, "starting_buttons", "", 0)
    second_buttons = (_int_key(rep, data, "second_player_buttons", "", 0)
                      if "second_player_buttons" in data else 0)
    # No patch set offers more than MAX_PATCHES; a larger offer only costs the search bots
    # memory and time in proportion (offer_size: 1000000 took mcts(iterations=5) to 732 MB).
    # An offer larger than this ruleset's patch set is allowed: it offers every patch.
    offer_size = _int_key(rep, data, "offer_size", "", 1)
    if offer_size is not None and offer_size > MAX_PATCHES:
        rep.add("offer_size", f"must be at most {MAX_PATCHES} (the most patches a ruleset can "
                              f"have), got {offer_size}")
        offer_size = None
    penalty = _int_key(rep, data, "empty_square_penalty", "", 0)

    bonus_square: int | None = None
    bonus_points: int | None = 0
    bonus = data.get("bonus")
    has_bonus = "bonus" in data and not (
        bonus is None or (isinstance(bonus, str) and bonus.strip().lower() == "none"))
    if has_bonus:
        section = _section(rep, data, "bonus", BONUS_KEYS,
                           "{square: N, points: P} (or null / none for no bonus tile)")
        bonus_points = None
        if section is not None:
            if rows is not None and cols is not None:
                hi, why = min(rows, cols), f" (the shorter side of the {rows}x{cols} quilt)"
            else:
                hi, why = MAX_SIDE, ""
            if hi != MAX_SIDE:
                rep.cause = rep.board_override()
            bonus_square = _int_key(rep, section, "square", "bonus", 1, hi, why)
            rep.cause = None
            bonus_points = _int_key(rep, section, "points", "bonus", 0)

    patches, index = _check_patches(rep, data, rows, cols)

    start_after = data.get("start_after")
    if "start_after" in data:
        if not isinstance(start_after, str):
            rep.add("start_after", f"expected a patch id, got {describe_value(start_after)}")
        elif index is not None and start_after not in index:
            close = difflib.get_close_matches(start_after, list(index), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            rep.add("start_after", f"unknown patch id {quote(start_after)}{hint}")

    policy = data.get("leather_when_full")
    if "leather_when_full" in data and policy not in LEATHER_POLICIES:
        rep.add("leather_when_full", f"must be one of {', '.join(LEATHER_POLICIES)}, "
                                     f"got {describe_value(policy)}")

    if not rep.problems and patches is not None:
        _check_stored_range(rep, data, patches, income, rows, cols)
    if rep.problems:
        raise RulesetError(rep.problems, label, title)
    # Every value below was checked above; a problem would have raised.
    assert isinstance(name, str) and rows is not None and cols is not None
    assert last_space is not None and income is not None and leather is not None
    assert starting_buttons is not None and offer_size is not None and penalty is not None
    assert bonus_points is not None and patches is not None and isinstance(start_after, str)
    return dict(
        name=name, rows=rows, cols=cols, last_space=last_space, income_marks=income,
        leather_marks=leather, starting_buttons=starting_buttons, offer_size=offer_size,
        bonus_square=bonus_square, bonus_points=bonus_points, empty_square_penalty=penalty,
        patches=patches, start_after=start_after, leather_when_full=str(policy),
        second_player_buttons=second_buttons or 0, description=description, source=source,
    )
