"""What a ruleset may hold: the limits, the keys of the file format, the error that lists a
file's problems, the patch data class and the words used for values in messages."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from patchsim.engine.yamlfile import quote
from patchsim.errors import PatchsimError

# Limits. The engine packs a quilt into one 128-bit integer, hence the square limit.
MAX_SIDE = 16
MAX_SQUARES = 128
MAX_LAST_SPACE = 1000
MAX_LEATHER = 60
MAX_PATCHES = 200
MAX_VALUE = 1_000_000  # any count, price or position in a ruleset
MAX_NAME = 100  # characters of a ruleset name (it names folders and table rows)
LEATHER_POLICIES = ("discard", "stay")

# Bumped whenever the meaning of a ruleset field changes, so that old hashes stop matching.
HASH_FORMAT = "patchsim-ruleset/1"

ID_RE = re.compile(r"[A-Za-z0-9_]+")

TOP_KEYS = (
    "name", "description", "extends", "board", "starting_buttons", "second_player_buttons",
    "track", "offer_size", "bonus", "empty_square_penalty", "patches", "patch_changes",
    "start_after", "leather_when_full",
)
TOP_REQUIRED = (
    "board", "starting_buttons", "track", "offer_size", "bonus", "empty_square_penalty",
    "patches", "start_after", "leather_when_full",
)
BOARD_KEYS = ("rows", "cols")
TRACK_KEYS = ("last_space", "income", "leather")
BONUS_KEYS = ("square", "points")
PATCH_KEYS = ("id", "shape", "cost", "time", "income")
CHANGEABLE = ("cost", "time", "income", "shape")
TABLE_KEYS = ("patches",)

# --------------------------------------------------------------------------------------------
# Errors


class RulesetError(PatchsimError, ValueError):
    """A ruleset could not be loaded; ``problems`` lists every problem found.

    Each problem reads ``"<file>: <dotted.key>: <message>"``, or ``"override <dotted.key>:
    <message>"`` for an override (its ``given`` is ``OVERRIDE``, so that a front end can show
    its own flag); ``source`` is the ruleset's file or name.
    """

    def __init__(self, problems: list[str] | str, source: str | None = None,
                 title: str | None = None) -> None:
        super().__init__(*([problems] if isinstance(problems, str) else problems),
                         title=title)
        self.source = source

    def heading(self) -> str:
        return self.title or ("invalid ruleset" + (f" {self.source}" if self.source else ""))


# --------------------------------------------------------------------------------------------
# Data classes


def shape_cells(shape: str) -> tuple[tuple[int, int], ...]:
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
        cells = shape_cells(self.shape)
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



# --------------------------------------------------------------------------------------------
# Validation


def describe_value(value: object) -> str:
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


def value_kind(value: object) -> str:
    """A value's YAML type only, for messages about a whole file: its text is not quoted (a
    file that is no YAML mapping reads as one long string, its first line would show)."""
    return describe_value(value).split(" ")[0]


def unknown_key_text(key: object, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(known)})"
    return f"unknown key {quote(str(key))}{hint}"
