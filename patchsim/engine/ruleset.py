"""Rulesets: the component data and rule options of one Patchwork variant, loaded from YAML.

A ruleset file (see ``configs/edition1.yaml``) gives the quilt size, the time track with its
income and leather marks, the patches and a few rule switches. A file may ``extends`` another
ruleset and change only what differs; patches may live in a separate patch table file.

Loading is strict: every problem in a file (unknown or missing keys, wrong types, values out of
range, malformed patch shapes) is collected and reported at once in a :class:`RulesetError`, each
problem naming the file and the dotted key it concerns, so a variant author can fix a file in
one pass. A loaded :class:`Ruleset` is immutable; :meth:`Ruleset.content_hash` identifies the
rules it describes, independent of its name, description and file.

The jobs are split by module: :mod:`~patchsim.engine.ruleset_schema` (limits, keys, the error,
patches), :mod:`~patchsim.engine.ruleset_files` (finding, reading and merging files),
:mod:`~patchsim.engine.ruleset_overrides` (``key=value`` overrides) and
:mod:`~patchsim.engine.ruleset_checks` (validation); this module holds the model and the
entry points, and the names callers import from here.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchsim.engine.ruleset_checks import checked_fields
from patchsim.engine.ruleset_files import (
    Provenance,
    allowed_folders,
    configs_dir,
    display_path,
    display_source,
    locate,
    resolve_data,
    resolve_file,
    shipped_rulesets,
)
from patchsim.engine.ruleset_overrides import apply_override, parse_override
from patchsim.engine.ruleset_schema import (
    HASH_FORMAT,
    LEATHER_POLICIES,
    MAX_LAST_SPACE,
    MAX_LEATHER,
    MAX_NAME,
    MAX_PATCHES,
    MAX_SIDE,
    MAX_SQUARES,
    MAX_VALUE,
    PatchSpec,
    RulesetError,
    describe_value,
)
from patchsim.engine.yamlfile import quote
from patchsim.errors import MAX_SHOWN_PROBLEMS

__all__ = [
    "LEATHER_POLICIES",
    "MAX_LAST_SPACE",
    "MAX_LEATHER",
    "MAX_NAME",
    "MAX_PATCHES",
    "MAX_SHOWN_PROBLEMS",
    "MAX_SIDE",
    "MAX_SQUARES",
    "MAX_VALUE",
    "PatchSpec",
    "Ruleset",
    "RulesetError",
    "configs_dir",
    "load_ruleset",
    "parse_override",
    "ruleset_from_dict",
    "shipped_rulesets",
]


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
            "format": HASH_FORMAT,
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
        root_label = display_source(self.source) if self.source else self.name
        prov: Provenance = {"": (root_label, "")}
        problems: list[str] = []
        for key, value in overrides.items():
            try:
                apply_override(data, prov, problems, key, value)
            except RulesetError as e:  # an unreadable patch table file given as a value
                problems += e.problems
        title = f"invalid overrides for ruleset {self.name}"
        if problems:
            raise RulesetError(problems, self.name, title)
        return _build(data, prov, default_name=self.name, source=self.source, label=root_label,
                      title=title)


def _build(data: Mapping[Any, Any], prov: Provenance, default_name: str | None,
           source: str | None, label: str, title: str | None = None) -> Ruleset:
    """Validate merged ruleset data and build the Ruleset, or raise with every problem found."""
    return Ruleset(**checked_fields(data, prov, default_name, source, label, title))


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
    allowed = allowed_folders(allowed_roots)
    path = locate(ref, allowed)
    data, prov = resolve_file(path, [], allowed)
    return _build(data, prov, default_name=path.stem, source=str(path), label=display_path(path))


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
                            f"got {describe_value(data)}"], source)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    merged, prov = resolve_data(copy.deepcopy(dict(data)), source, base, [],
                                 allowed_folders(allowed_roots))
    from_file = not source.startswith("<")
    return _build(merged, prov, default_name=Path(source).stem if from_file else None,
                  source=source if from_file else None, label=source)
