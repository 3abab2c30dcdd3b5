"""Rulesets: the component data and rule options of one Patchwork variant, loaded from YAML.

A ruleset file (see ``configs/edition1.yaml``) gives the quilt size, the time track with its
income and leather marks, the patches and a few rule switches. A file may ``extends`` another
ruleset and change only what differs; patches may live in a separate patch table file.

Loading is strict: every problem in a file (unknown or missing keys, wrong types, values out of
range, malformed patch shapes) is collected and reported at once in a :class:`RulesetError`, each
problem naming the file and the dotted key it concerns, so a variant author can fix a file in
one pass. A loaded :class:`Ruleset` is immutable; :meth:`Ruleset.content_hash` identifies the
rules it describes, independent of its name, description and file.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchsim.engine.yamlfile import (
    QUOTE_CHARS,
    YamlFileError,
    parse_yaml,
    quote,
    read_yaml,
    short_path,
)

__all__ = [
    "PatchSpec",
    "Ruleset",
    "RulesetError",
    "configs_dir",
    "load_ruleset",
    "parse_override",
    "ruleset_from_dict",
    "shipped_rulesets",
]

# Limits. The engine packs a quilt into one 128-bit integer, hence the square limit.
MAX_SIDE = 16
MAX_SQUARES = 128
MAX_LAST_SPACE = 1000
MAX_LEATHER = 60
MAX_PATCHES = 200
MAX_VALUE = 1_000_000  # any count, price or position in a ruleset
MAX_NAME = 100  # characters of a ruleset name (it names folders and table rows)
MAX_SHOWN_PROBLEMS = 30  # an error message lists this many problems, then counts the rest
LEATHER_POLICIES = ("discard", "stay")

# Bumped whenever the meaning of a ruleset field changes, so that old hashes stop matching.
_HASH_FORMAT = "patchsim-ruleset/1"

_ID_RE = re.compile(r"[A-Za-z0-9_]+")

_TOP_KEYS = (
    "name", "description", "extends", "board", "starting_buttons", "second_player_buttons",
    "track", "offer_size", "bonus", "empty_square_penalty", "patches", "patch_changes",
    "start_after", "leather_when_full",
)
_TOP_REQUIRED = (
    "board", "starting_buttons", "track", "offer_size", "bonus", "empty_square_penalty",
    "patches", "start_after", "leather_when_full",
)
_BOARD_KEYS = ("rows", "cols")
_TRACK_KEYS = ("last_space", "income", "leather")
_BONUS_KEYS = ("square", "points")
_PATCH_KEYS = ("id", "shape", "cost", "time", "income")
_CHANGEABLE = ("cost", "time", "income", "shape")
_TABLE_KEYS = ("patches",)

# Problems whose source label starts with this are from overrides: "override bonus.points: ..."
# (the command line shows them as its --set flag)
_OVERRIDE_LABEL = "override"


# --------------------------------------------------------------------------------------------
# Errors


class RulesetError(ValueError):
    """A ruleset could not be loaded; ``problems`` lists every problem found.

    Each problem reads ``"<file>: <dotted.key>: <message>"``.
    """

    def __init__(self, problems: list[str] | str, source: str | None = None,
                 title: str | None = None) -> None:
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        self.source = source
        self.title = title
        super().__init__(self.problems, source, title)

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions cross process boundaries (joblib, dask); rebuild from our own arguments.
        return (type(self), (self.problems, self.source, self.title))

    def __str__(self) -> str:
        n = len(self.problems)
        head = self.title or ("invalid ruleset" + (f" {self.source}" if self.source else ""))
        lines = [f"{head} ({n} problem{'' if n == 1 else 's'}):"]
        lines += [f"  {p}" for p in self.problems[:MAX_SHOWN_PROBLEMS]]
        if n > MAX_SHOWN_PROBLEMS:  # a message, not a listing of a broken file
            lines.append(f"  ... and {n - MAX_SHOWN_PROBLEMS:,} more")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Data classes


def _shape_cells(shape: str) -> tuple[tuple[int, int], ...]:
    """The (row, col) of every 'X' in a shape string, sorted."""
    return tuple(sorted((r, c) for r, line in enumerate(shape.split("/"))
                        for c, ch in enumerate(line) if ch == "X"))


@dataclass(frozen=True)
class PatchSpec:
    """One patch: its id, shape (rows of X/. joined by '/'), prices and income.

    ``cells`` and ``size`` are derived from ``shape``; they need not be passed.
    """

    id: str
    shape: str
    cost: int
    time: int
    income: int
    cells: tuple[tuple[int, int], ...] = ()
    size: int = 0

    def __post_init__(self) -> None:
        cells = _shape_cells(self.shape)
        if self.cells and tuple(map(tuple, self.cells)) != cells:
            raise ValueError(f"patch {self.id}: cells do not match shape {self.shape!r}")
        if self.size and self.size != len(cells):
            raise ValueError(f"patch {self.id}: size does not match shape {self.shape!r}")
        # Frozen dataclass: derived fields are filled in through object.__setattr__.
        object.__setattr__(self, "cells", cells)
        object.__setattr__(self, "size", len(cells))

    def to_dict(self) -> dict[str, Any]:
        """The patch as a plain dict in the YAML format."""
        return {"id": self.id, "shape": self.shape, "cost": self.cost, "time": self.time,
                "income": self.income}


@dataclass(frozen=True)
class Ruleset:
    """A fully resolved, validated ruleset. Build it with :func:`load_ruleset`."""

    name: str
    rows: int
    cols: int
    last_space: int
    income_marks: tuple[int, ...]
    leather_marks: tuple[int, ...]
    starting_buttons: int
    offer_size: int
    bonus_square: int | None
    bonus_points: int
    empty_square_penalty: int
    patches: tuple[PatchSpec, ...]
    start_after: str
    leather_when_full: str
    # Extra starting buttons for the player who moves second (a balancing variant; 0 in the
    # printed game). Optional in files, and left out of the hash when 0 so that the hashes of
    # rulesets written before it existed do not change.
    second_player_buttons: int = 0
    description: str = ""
    # Where it came from only matters for messages; two equal rulesets may come from two files.
    source: str | None = field(default=None, compare=False)

    def _play_data(self) -> dict[str, Any]:
        """Every field that affects play, as plain JSON-able data."""
        return {
            "format": _HASH_FORMAT,
            "board": [self.rows, self.cols],
            "last_space": self.last_space,
            "income_marks": list(self.income_marks),
            "leather_marks": list(self.leather_marks),
            "starting_buttons": self.starting_buttons,
            "offer_size": self.offer_size,
            "bonus_square": self.bonus_square,
            "bonus_points": self.bonus_points if self.bonus_square is not None else 0,
            "empty_square_penalty": self.empty_square_penalty,
            # Table order matters: the setup shuffle is applied to the patches in this order.
            "patches": [[p.id, p.shape, p.cost, p.time, p.income] for p in self.patches],
            "start_after": self.start_after,
            "leather_when_full": self.leather_when_full,
        } | ({"second_player_buttons": self.second_player_buttons}
             if self.second_player_buttons else {})

    def content_hash(self) -> str:
        """16 hex digits identifying the rules (not the name, description or source file)."""
        text = json.dumps(self._play_data(), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """The ruleset as a plain dict in the YAML file format, fully resolved.

        The result has an inline patch list and no ``extends`` or ``patch_changes``;
        :func:`ruleset_from_dict` turns it back into an equal ruleset.
        """
        return {
            "name": self.name,
            "description": self.description,
            "board": {"rows": self.rows, "cols": self.cols},
            "starting_buttons": self.starting_buttons,
            "track": {
                "last_space": self.last_space,
                "income": list(self.income_marks),
                "leather": list(self.leather_marks),
            },
            "offer_size": self.offer_size,
            "bonus": (None if self.bonus_square is None
                      else {"square": self.bonus_square, "points": self.bonus_points}),
            "empty_square_penalty": self.empty_square_penalty,
            "patches": [p.to_dict() for p in self.patches],
            "start_after": self.start_after,
            "leather_when_full": self.leather_when_full,
        } | ({"second_player_buttons": self.second_player_buttons}
             if self.second_player_buttons else {})

    def patch(self, patch_id: str) -> PatchSpec:
        """The patch with this id; KeyError if there is none."""
        for p in self.patches:
            if p.id == patch_id:
                return p
        close = difflib.get_close_matches(str(patch_id), [p.id for p in self.patches], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise KeyError(f"no patch {quote(patch_id)} in ruleset {self.name!r}{hint}")

    def with_overrides(self, overrides: Mapping[str, object]) -> Ruleset:
        """A copy with dotted-key overrides applied, validated exactly like a file.

        Keys: ``"starting_buttons"``, ``"bonus.points"``, ``"board.rows"``, ``"track.leather"``,
        ``"bonus"`` (None for no bonus tile), ``"patches.P19.cost"`` (a patch change), ...
        A mapping value is merged into the mapping it replaces, as ``extends`` does.
        Problems name the key as given: ``"override bonus.points: must be at least 0, got -1"``.
        """
        if not overrides:
            return self
        data = self.to_dict()
        root_label = _display_source(self.source) if self.source else self.name
        prov: _Provenance = {"": (root_label, "")}
        problems: list[str] = []
        for key, value in overrides.items():
            try:
                _apply_override(data, prov, problems, key, value)
            except RulesetError as e:  # an unreadable patch table file given as a value
                problems += e.problems
        title = f"invalid overrides for ruleset {self.name}"
        if problems:
            raise RulesetError(problems, self.name, title)
        return _build(data, prov, default_name=self.name, source=self.source, label=root_label,
                      title=title)


# --------------------------------------------------------------------------------------------
# Finding files


def configs_dir() -> Path:
    """The folder holding the shipped rulesets (inside the package when installed as a wheel)."""
    package = Path(__file__).resolve().parent.parent  # patchsim/
    packaged = package / "configs"
    if packaged.is_dir():
        return packaged
    return package.parent / "configs"


def shipped_rulesets() -> list[str]:
    """Names of the shipped rulesets, sorted: file stems, sub-folder ones as ``"variants/x"``."""
    root = configs_dir()
    if not root.is_dir():
        return []
    names = [p.stem for p in root.glob("*.yaml") if p.is_file()]
    for sub in root.iterdir():
        # patches/ holds patch tables, which are not rulesets.
        if sub.is_dir() and sub.name != "patches" and not sub.name.startswith((".", "_")):
            names += [f"{sub.name}/{p.stem}" for p in sub.glob("*.yaml") if p.is_file()]
    return sorted(names)


def _shipped_text() -> str:
    names = shipped_rulesets()
    return ", ".join(names) if names else "(none found)"


def _display(path: Path) -> str:
    """A path for messages: relative to the working directory when it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)


def _display_source(source: str) -> str:
    return _display(Path(source)) if not source.startswith("<") else source


_Allowed = tuple[Path, ...] | None  # folders a file may be read from; None: anywhere


def _allowed(roots: Sequence[str | os.PathLike[str]] | None) -> _Allowed:
    """``allowed_roots`` as resolved folders, the shipped configs always among them."""
    if roots is None:
        return None
    return (configs_dir().resolve(), *(Path(r).resolve() for r in roots))


def _confine(path: Path, allowed: _Allowed, where: str, ref: object) -> Path:
    """``path`` resolved (symlinks followed); RulesetError naming ``where`` (the key that
    gave it) and ``ref`` when it lies outside every allowed folder. Checked before the file
    is even looked at, so that a refusal says nothing about files elsewhere."""
    full = path.resolve()
    if allowed is None or any(full.is_relative_to(root) for root in allowed):
        return full
    raise RulesetError([f"{where}: {quote(str(ref))} is outside the folders rulesets may be "
                        "read from here (the served folders and the shipped configs)"], where)


def _locate(ref: str | os.PathLike[str], allowed: _Allowed = None) -> Path:
    """The file a ruleset reference names: a shipped name, else a path."""
    if (isinstance(ref, str) and not ref.endswith((".yaml", ".yml"))
            and ref in shipped_rulesets()):
        return (configs_dir() / f"{ref}.yaml").resolve()
    shown = short_path(os.fspath(ref))
    try:
        path = _confine(Path(ref).expanduser(), allowed, shown, ref)
        if path.is_file():
            return path.resolve()
        what = "is a directory, not a ruleset file" if path.is_dir() else "no such file"
    except RulesetError:  # outside the allowed folders: that refusal is the message
        raise
    except (OSError, ValueError) as e:  # a name too long for a file, a NUL character
        what = f"not a usable file name ({getattr(e, 'strerror', None) or e})"
    raise RulesetError(
        [f"{shown}: {what}, and not a shipped ruleset name "
         f"(shipped rulesets: {_shipped_text()})"],
        shown)


# --------------------------------------------------------------------------------------------
# Reading YAML


def _read_yaml(path: Path, label: str) -> Any:
    """Parse one YAML file; any failure is fatal (nothing sensible can be checked after it)."""
    if not path.exists():
        raise RulesetError([f"{label}: no such file (shipped rulesets: {_shipped_text()})"],
                           label)
    try:
        return read_yaml(path, label)
    except YamlFileError as e:
        raise RulesetError(e.problems, label) from None


# --------------------------------------------------------------------------------------------
# Resolving extends, patch tables and merges, keeping track of where each key came from

# Maps an internal key path ("track.leather", "patches") to the label of the file (or "override")
# that set it and the path to show for it there. Problems are blamed on the longest prefix.
_Provenance = dict[str, tuple[str, str]]


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _set_prov(prov: _Provenance, path: str, label: str, display: str) -> None:
    for p in [p for p in prov if p == path or p.startswith((path + ".", path + "["))]:
        del prov[p]
    prov[path] = (label, display)


def merge_batches(base: dict[Any, Any], over: Mapping[Any, Any], prov: _Provenance, label: str,
           path: str = "", display: str = "") -> dict[Any, Any]:
    """Deep-merge ``over`` into a copy of ``base``: mappings merge, lists and scalars replace."""
    out = dict(base)
    for key, value in over.items():
        p, d = _join(path, key), _join(display, key)
        if key not in out:
            # a new key has no provenance below it yet: skip _set_prov's scan of every entry
            # (with it, a file of 40,000 unknown keys took minutes to reject)
            out[key] = copy.deepcopy(value)
            prov[p] = (label, d)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            # The mapping as a whole (e.g. "board is too big") is blamed on the last file to
            # touch it; its leaves keep their own sources.
            prov[p] = (label, d)
            out[key] = merge_batches(out[key], value, prov, label, p, d)
        else:
            out[key] = copy.deepcopy(value)
            _set_prov(prov, p, label, d)
    return out


def _resolve_extends(ref: object, label: str, base_dir: Path, allowed: _Allowed = None) -> Path:
    """The file an ``extends`` value names: a path if it ends in .yaml/.yml, else a shipped name."""
    if not isinstance(ref, str) or not ref.strip():
        raise RulesetError([f"{label}: extends: expected a shipped ruleset name or a path to a "
                            f".yaml file, got {_describe(ref)}"], label)
    if ref.endswith((".yaml", ".yml")):
        path = _confine(base_dir / Path(ref).expanduser(), allowed, f"{label}: extends", ref)
        if not path.is_file():
            raise RulesetError([f"{label}: extends: no such file {quote(ref)} (looked for {path})"],
                               label)
        return path
    if ref in shipped_rulesets():
        return (configs_dir() / f"{ref}.yaml").resolve()
    raise RulesetError([f"{label}: extends: unknown ruleset {quote(ref)}; shipped rulesets: "
                        f"{_shipped_text()} (or give a path ending in .yaml)"], label)


def _load_patch_table(ref: str, where: str, base_dir: Path,
                      allowed: _Allowed = None) -> tuple[Any, str]:
    """The patch list of a patch table file, and the file's label for messages.

    ``where`` names the key that gave the path, e.g. ``"edition1.yaml: patches"``.
    """
    path = _confine(base_dir / Path(ref).expanduser(), allowed, where, ref)
    if not path.is_file():
        raise RulesetError([f"{where}: no such patch table file {quote(ref)} (looked for {path})"])
    tlabel = _display(path)
    raw = _read_yaml(path, tlabel)
    if not isinstance(raw, dict) or "patches" not in raw:
        raise RulesetError([f"{tlabel}: expected a mapping with the key 'patches' "
                            f"(a list of patches), got {_kind(raw)}"], tlabel)
    unknown = [_unknown_key_text(k, _TABLE_KEYS) for k in raw if k not in _TABLE_KEYS]
    if unknown:
        raise RulesetError([f"{tlabel}: {k}" for k in unknown], tlabel)
    return raw["patches"], tlabel


def _resolve_file(path: Path, chain: list[Path],
                  allowed: _Allowed = None) -> tuple[dict[Any, Any], _Provenance]:
    label = _display(path)
    raw = _read_yaml(path, label)
    if raw is None:
        raise RulesetError([f"{label}: the file is empty"], label)
    if not isinstance(raw, dict):
        raise RulesetError([f"{label}: expected a mapping of ruleset keys at the top level, "
                            f"got {_kind(raw)}"], label)
    return _resolve_data(raw, label, path.parent, [*chain, path], allowed)


def _resolve_data(raw: Mapping[Any, Any], label: str, base_dir: Path,
                  chain: list[Path], allowed: _Allowed = None
                  ) -> tuple[dict[Any, Any], _Provenance]:
    """Apply ``extends`` and load a patch table path; return the merged data and provenance."""
    base: dict[Any, Any] = {}
    prov: _Provenance = {}
    if "extends" in raw:
        parent = _resolve_extends(raw["extends"], label, base_dir, allowed)
        if parent in chain:
            # Paths relative to the first file of the cycle keep the message short.
            loop = [*chain[chain.index(parent):], parent]
            cycle = " -> ".join(os.path.relpath(p, loop[0].parent) for p in loop)
            raise RulesetError([f"{label}: extends: cycle: {cycle}"], label)
        base, prov = _resolve_file(parent, chain, allowed)
        # Neither name nor description is inherited: a child is other rules, and a parent's
        # description ("original printings") would misdescribe it. A child without a name
        # is named after its file.
        for key in ("name", "description"):
            base.pop(key, None)
            prov.pop(key, None)
    own = {k: v for k, v in raw.items() if k != "extends"}
    table_label = None
    if isinstance(own.get("patches"), str):
        own["patches"], table_label = _load_patch_table(own["patches"], f"{label}: patches",
                                                        base_dir, allowed)
    merged = merge_batches(base, own, prov, label)
    if table_label is not None:
        _set_prov(prov, "patches", table_label, "patches")
    prov[""] = (label, "")
    return merged, prov


def _apply_override(data: dict[Any, Any], prov: _Provenance, problems: list[str], key: object,
                    value: object) -> None:
    """Set one dotted-key override in ``data``, recording "override <key>" as its source."""
    def bad(msg: str) -> None:
        problems.append(f"{_OVERRIDE_LABEL} {key}: {msg}")

    if not isinstance(key, str) or not key.strip():
        bad("expected a dotted key such as bonus.points")
        return
    parts = key.strip().split(".")
    if any(not p for p in parts):
        bad("empty part in the dotted key")
        return
    if parts[0] == "extends":
        bad("extends cannot be overridden; load the other ruleset instead")
        return
    # "patches.P19.cost" is a patch change; patch_changes already validates ids and fields.
    internal = ["patch_changes", *parts[1:]] if parts[0] == "patches" and len(parts) > 1 else parts
    node = data
    for depth, part in enumerate(internal[:-1]):
        child = node.get(part)
        if child is None:
            # A mapping made up here (e.g. for bonus.points when bonus is null) is blamed
            # on this override, so that "missing key" problems inside it name the override.
            child = node[part] = {}
            _set_prov(prov, ".".join(internal[:depth + 1]), _OVERRIDE_LABEL,
                      ".".join(parts[:depth + 1]))
        elif not isinstance(child, dict):
            bad(f"{'.'.join(parts[:depth + 1])} is {_describe(child)}, not a mapping")
            return
        node = child
    ipath, last = ".".join(internal), internal[-1]
    if ipath == "patches" and isinstance(value, str):
        # Like a file's, a patch table path given here is relative to where it was given.
        value, tlabel = _load_patch_table(value, f"{_OVERRIDE_LABEL} patches", Path.cwd())
        node[last] = value
        _set_prov(prov, ipath, tlabel, "patches")
    elif isinstance(value, dict) and isinstance(node.get(last), dict):
        node[last] = merge_batches(node[last], value, prov, _OVERRIDE_LABEL, ipath, key)
    else:
        node[last] = copy.deepcopy(value)
        _set_prov(prov, ipath, _OVERRIDE_LABEL, key)


# --------------------------------------------------------------------------------------------
# Validation


def _describe(value: object) -> str:
    """A value's YAML type and a short repr, for 'expected X, got Y' messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    kinds = {int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
    kind = next((k for t, k in kinds.items() if isinstance(value, t)), type(value).__name__)
    if isinstance(value, list | dict):
        return kind
    text = repr(value)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"


def _kind(value: object) -> str:
    """A value's YAML type only, for messages about a whole file: its text is not quoted (a
    file that is no YAML mapping reads as one long string, its first line would show)."""
    return _describe(value).split(" ")[0]


def _unknown_key_text(key: object, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(known)})"
    return f"unknown key {quote(str(key))}{hint}"


class _Reporter:
    """Collects problems, naming the file each offending key came from."""

    def __init__(self, prov: _Provenance) -> None:
        self.prov = prov
        self.problems: list[str] = []
        # the (key path, shown path) of every override: a few, however large the data
        self.overridden = sorted((p, d) for p, (lab, d) in prov.items()
                                 if lab == _OVERRIDE_LABEL)
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
        if label != _OVERRIDE_LABEL:
            # A mapping a file gave but an override changed below (board, with --set
            # board.rows=12 making the quilt too big) is blamed on the override.
            below = [d for p, d in self.overridden
                     if path and p.startswith((path + ".", path + "["))]
            if below:
                label, shown = _OVERRIDE_LABEL, below[0]
        if len(shown) > 2 * QUOTE_CHARS:  # a huge key in a path
            shown = shown[:2 * QUOTE_CHARS] + "..."
        if self.cause is not None and label != _OVERRIDE_LABEL:
            # a file's value that only an override's quilt size makes wrong: the override
            # is what changed, so it leads ("--set board.rows: edition2.yaml: bonus.square")
            self.problems.append(f"{_OVERRIDE_LABEL} {self.cause}: {label}: {shown}: {message}")
            return
        if not shown:
            self.problems.append(f"{label}: {message}")
        elif label == _OVERRIDE_LABEL:
            self.problems.append(f"{label} {shown}: {message}")
        else:
            self.problems.append(f"{label}: {shown}: {message}")


def _check_keys(rep: _Reporter, mapping: Mapping[Any, Any], path: str, known: tuple[str, ...],
                required: tuple[str, ...]) -> None:
    for key in mapping:
        if key not in known:
            rep.add(_join(path, key), _unknown_key_text(key, known))
    for key in required:
        if key not in mapping:
            rep.add(_join(path, key), "missing required key")


def _check_int(rep: _Reporter, value: object, path: str, lo: int | None = None,
               hi: int | None = None, why: str = "") -> int | None:
    """``value`` if it is an integer in lo..hi, else None after reporting the problem."""
    # bool is a subclass of int in Python, but `true` is never a sensible count in a file.
    if isinstance(value, bool) or not isinstance(value, int):
        rep.add(path, f"expected an integer, got {_describe(value)}")
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


def _int_key(rep: _Reporter, mapping: Mapping[Any, Any], key: str, path: str,
             lo: int | None = None, hi: int | None = None, why: str = "") -> int | None:
    if key not in mapping:
        return None  # reported by _check_keys
    return _check_int(rep, mapping[key], _join(path, key), lo, hi, why)


def _section(rep: _Reporter, data: Mapping[Any, Any], key: str, known: tuple[str, ...],
             example: str) -> Mapping[Any, Any] | None:
    """A required sub-mapping, checked for unknown and missing keys."""
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, dict):
        rep.add(key, f"expected a mapping {example}, got {_describe(value)}")
        return None
    _check_keys(rep, value, key, known, known)
    return value


def _check_marks(rep: _Reporter, track: Mapping[Any, Any], key: str, last_space: int | None,
                 max_count: int | None) -> tuple[int, ...] | None:
    if key not in track:
        return None
    path = f"track.{key}"
    marks = track[key]
    if not isinstance(marks, list):
        rep.add(path, f"expected a list of track spaces, got {_describe(marks)}")
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


def _check_shape(rep: _Reporter, shape: object, path: str, rows: int | None,
                 cols: int | None) -> bool:
    if not isinstance(shape, str):
        rep.add(path, f"expected a string such as 'XX/X.', got {_describe(shape)}")
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
    cells = set(_shape_cells(shape))
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


def _check_stored_range(rep: _Reporter, data: Mapping[Any, Any],
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


def _check_patches(rep: _Reporter, data: Mapping[Any, Any], rows: int | None,
                   cols: int | None) -> tuple[tuple[PatchSpec, ...] | None, dict[str, int] | None]:
    """The validated patches (None on any problem) and the index of each id (None if unknown)."""
    if "patches" not in data:
        return None, None
    plist = data["patches"]
    if not isinstance(plist, list):
        rep.add("patches", "expected a list of patches {id, shape, cost, time, income} or a "
                           f"path to a patch table file, got {_describe(plist)}")
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
                          f"got {_describe(entry)}")
            entries.append(None)
            ok = False
            continue
        _check_keys(rep, entry, path, _PATCH_KEYS, _PATCH_KEYS)
        ok = ok and all(k in entry for k in _PATCH_KEYS)
        entries.append((dict(entry), {k: f"{path}.{k}" for k in _PATCH_KEYS}))

    index: dict[str, int] = {}
    for i, item in enumerate(entries):
        if item is None or "id" not in item[0]:
            continue
        pid, path = item[0]["id"], f"patches[{i}].id"
        if not isinstance(pid, str):
            hint = " (quote it)" if isinstance(pid, int | float) else ""
            rep.add(path, f"expected a string, got {_describe(pid)}{hint}")
            ok = False
        elif not _ID_RE.fullmatch(pid):
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
                                 f"got {_describe(changes)}")
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
                          f"({', '.join(_CHANGEABLE)}), got {_describe(fields)}")
            ok = False
            continue
        target = entries[index[pid]]
        assert target is not None  # it has an id, so it is a mapping
        for fname, value in fields.items():
            if fname not in _CHANGEABLE:
                close = difflib.get_close_matches(str(fname), _CHANGEABLE, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                rep.add(_join(path, fname), f"cannot change {quote(str(fname))} ({hint}allowed: "
                                            f"{', '.join(_CHANGEABLE)})")
                ok = False
                continue
            target[0][fname] = value
            target[1][fname] = _join(path, fname)

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
        if not good or None in numbers.values() or not ok:
            ok = False
            continue
        specs.append(PatchSpec(id=fields["id"], shape=fields["shape"], cost=numbers["cost"],
                               time=numbers["time"], income=numbers["income"]))
    return (tuple(specs) if ok else None), index


def _build(data: Mapping[Any, Any], prov: _Provenance, default_name: str | None,
           source: str | None, label: str, title: str | None = None) -> Ruleset:
    """Validate merged ruleset data and build the Ruleset, or raise with every problem found."""
    rep = _Reporter(prov)
    _check_keys(rep, data, "", _TOP_KEYS, _TOP_REQUIRED)

    name = data.get("name", default_name)
    if "name" in data and (not isinstance(name, str) or not name.strip()):
        rep.add("name", f"expected a non-empty string, got {_describe(name)}")
    elif isinstance(name, str) and (len(name) > MAX_NAME or not name.isprintable()):
        # the name becomes a folder name and a table value
        rep.add("name", f"expected at most {MAX_NAME} printable characters, got {quote(name)}")
    elif name is None:
        rep.add("name", "missing required key (there is no file name to default to)")
    description = data.get("description")
    if description is None:
        description = ""
    if not isinstance(description, str):
        rep.add("description", f"expected a string, got {_describe(description)}")
    elif "\0" in description:
        rep.add("description", "contains a NUL character")

    rows = cols = None
    board = _section(rep, data, "board", _BOARD_KEYS, "{rows: R, cols: C}")
    if board is not None:
        rows = _int_key(rep, board, "rows", "board", 1, MAX_SIDE)
        cols = _int_key(rep, board, "cols", "board", 1, MAX_SIDE)
        if rows is not None and cols is not None and rows * cols > MAX_SQUARES:
            rep.add("board", f"a {rows}x{cols} quilt has {rows * cols} squares, more than "
                             f"{MAX_SQUARES}: the engine stores a quilt in 128 bits")

    last_space = income = leather = None
    track = _section(rep, data, "track", _TRACK_KEYS, "{last_space: N, income: [...], "
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
        section = _section(rep, data, "bonus", _BONUS_KEYS,
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
            rep.add("start_after", f"expected a patch id, got {_describe(start_after)}")
        elif index is not None and start_after not in index:
            close = difflib.get_close_matches(start_after, list(index), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            rep.add("start_after", f"unknown patch id {quote(start_after)}{hint}")

    policy = data.get("leather_when_full")
    if "leather_when_full" in data and policy not in LEATHER_POLICIES:
        rep.add("leather_when_full", f"must be one of {', '.join(LEATHER_POLICIES)}, "
                                     f"got {_describe(policy)}")

    if not rep.problems and patches is not None:
        _check_stored_range(rep, data, patches, income, rows, cols)
    if rep.problems:
        raise RulesetError(rep.problems, label, title)
    # Every value below was checked above; a problem would have raised.
    assert isinstance(name, str) and rows is not None and cols is not None
    assert last_space is not None and income is not None and leather is not None
    assert starting_buttons is not None and offer_size is not None and penalty is not None
    assert bonus_points is not None and patches is not None and isinstance(start_after, str)
    return Ruleset(
        name=name, rows=rows, cols=cols, last_space=last_space, income_marks=income,
        leather_marks=leather, starting_buttons=starting_buttons, offer_size=offer_size,
        bonus_square=bonus_square, bonus_points=bonus_points, empty_square_penalty=penalty,
        patches=patches, start_after=start_after, leather_when_full=str(policy),
        second_player_buttons=second_buttons or 0, description=description, source=source,
    )


# --------------------------------------------------------------------------------------------
# Public entry points


def load_ruleset(ref: str | os.PathLike[str], *,
                 allowed_roots: Sequence[str | os.PathLike[str]] | None = None) -> Ruleset:
    """Load a ruleset by shipped name (``"edition2"``, ``"variants/x"``) or from a YAML file.

    A string ending in .yaml/.yml is always a path; any other string is a shipped name first.
    With ``allowed_roots`` (a server's folders), the file and every file it names
    (``extends``, a patch table) must lie inside one of them or the shipped configs, after
    symlinks; RulesetError names the key and the path otherwise, before anything is read.
    """
    allowed = _allowed(allowed_roots)
    path = _locate(ref, allowed)
    data, prov = _resolve_file(path, [], allowed)
    return _build(data, prov, default_name=path.stem, source=str(path), label=_display(path))


def ruleset_from_dict(data: Mapping[str, Any], source: str = "<dict>",
                      base_dir: Path | None = None, *,
                      allowed_roots: Sequence[str | os.PathLike[str]] | None = None) -> Ruleset:
    """Build a ruleset from data in the file format.

    ``extends`` and a ``patches`` path resolve against ``base_dir`` (default: the working
    directory), inside ``allowed_roots`` if given (see :func:`load_ruleset`). ``source`` names
    the data in messages; a ``name`` is required unless ``source``
    is a file path, whose stem is then the name.
    """
    if not isinstance(data, Mapping):
        raise RulesetError([f"{source}: expected a mapping of ruleset keys, "
                            f"got {_describe(data)}"], source)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    merged, prov = _resolve_data(copy.deepcopy(dict(data)), source, base, [],
                                 _allowed(allowed_roots))
    from_file = not source.startswith("<")
    return _build(merged, prov, default_name=Path(source).stem if from_file else None,
                  source=source if from_file else None, label=source)


def parse_override(text: str) -> tuple[str, object]:
    """Split ``"bonus.points=9"`` into ``("bonus.points", 9)``; the value is read as YAML."""
    key, eq, raw = text.partition("=")
    key = key.strip()
    title = "invalid override"
    if not eq:
        raise RulesetError([f"{_OVERRIDE_LABEL} {text}: expected KEY=VALUE, "
                            "e.g. bonus.points=9"], title=title)
    if not key:
        raise RulesetError([f"{_OVERRIDE_LABEL} {text}: missing the key before '='"],
                           title=title)
    try:
        value = parse_yaml(raw, f"{_OVERRIDE_LABEL} {key}")
    except YamlFileError as e:
        raise RulesetError([f"{_OVERRIDE_LABEL} {key}: cannot read the value {quote(raw)} as "
                            f"YAML: {e.problems[0]}"], title=title) from None
    return key, value
