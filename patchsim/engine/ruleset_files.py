"""Finding and reading ruleset files: shipped names, paths confined to allowed folders, ``extends``
chains and patch tables, merged with a record of which file (or override) gave each key."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from patchsim.engine.ruleset_schema import (
    TABLE_KEYS,
    RulesetError,
    describe_value,
    unknown_key_text,
    value_kind,
)
from patchsim.engine.yamlfile import (
    YamlFileError,
    long_integer,
    not_a_file,
    read_yaml,
    short_path,
)
from patchsim.errors import OVERRIDE, Problem, quote

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


def shipped_text() -> str:
    names = shipped_rulesets()
    return ", ".join(names) if names else "(none found)"


def display_path(path: Path) -> str:
    """A path for messages: relative to the working directory when it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)


def display_source(source: str) -> str:
    return display_path(Path(source)) if not source.startswith("<") else source


def at(where: str, message: str, value: object = None) -> Problem:
    """A problem about the key ``where`` names: ``"override patches"`` (an override's key)
    or ``"<file>: <key>"``."""
    if where.startswith(OVERRIDE + " "):
        return Problem(message, key=where[len(OVERRIDE) + 1:], value=value, given=OVERRIDE)
    return Problem(f"{where}: {message}", value=value)


Allowed = tuple[Path, ...] | None  # folders a file may be read from; None: anywhere


def allowed_folders(roots: Sequence[str | os.PathLike[str]] | None) -> Allowed:
    """``allowed_roots`` as resolved folders, the shipped configs always among them."""
    if roots is None:
        return None
    return (configs_dir().resolve(), *(Path(r).resolve() for r in roots))


def confine(path: Path, allowed: Allowed, where: str, ref: object) -> Path:
    """``path`` resolved (symlinks followed); RulesetError naming ``where`` (the key that
    gave it) and ``ref`` when it lies outside every allowed folder. Checked before the file
    is even looked at, so that a refusal says nothing about files elsewhere."""
    full = path.resolve()
    if allowed is None or any(full.is_relative_to(root) for root in allowed):
        return full
    raise RulesetError([at(where, f"{quote(str(ref))} is outside the folders rulesets may be "
                              "read from here (the served folders and the shipped configs)",
                           ref)], where)


def locate(ref: str | os.PathLike[str], allowed: Allowed = None) -> Path:
    """The file a ruleset reference names: a shipped name, else a path."""
    if (isinstance(ref, str) and not ref.endswith((".yaml", ".yml"))
            and ref in shipped_rulesets()):
        return (configs_dir() / f"{ref}.yaml").resolve()
    shown = short_path(os.fspath(ref))
    try:
        given = Path(ref).expanduser()
        path = confine(given, allowed, shown, ref)
        kind = not_a_file(given)  # as given: a broken symbolic link is named as one
        if kind is None:
            return path.resolve()
        what = _kind_text(kind, "a ruleset file")
    except RulesetError:  # outside the allowed folders: that refusal is the message
        raise
    except (OSError, ValueError) as e:  # a name too long for a file, a NUL character
        what = f"not a usable file name ({getattr(e, 'strerror', None) or e})"
    raise RulesetError(
        [f"{shown}: {what}, and not a shipped ruleset name "
         f"(shipped rulesets: {shipped_text()})"],
        shown)

def _file_kind(path: Path) -> str | None:
    """``not_a_file(path)``, with a name no file can have read as no such file."""
    try:
        return not_a_file(path)
    except (OSError, ValueError):
        return "no such file"


def _kind_text(kind: str, wanted: str) -> str:
    """``not_a_file``'s answer as a message: "no such file", "is a named pipe (FIFO), not a
    ruleset file"."""
    return kind if kind.startswith("no such") else f"is {kind}, not {wanted}"

# --------------------------------------------------------------------------------------------
# Reading YAML


def read_ruleset_yaml(path: Path, label: str) -> Any:
    """Parse one YAML file; any failure is fatal (nothing sensible can be checked after it)."""
    kind = _file_kind(path)
    if kind is not None and kind.startswith("no such"):
        raise RulesetError([f"{label}: no such file (shipped rulesets: {shipped_text()})"],
                           label)
    try:  # a directory, a pipe: read_yaml says what it is
        return read_yaml(path, label)
    except YamlFileError as e:
        raise RulesetError(e.problems, label) from None

# --------------------------------------------------------------------------------------------
# Resolving extends, patch tables and merges, keeping track of where each key came from

# Maps an internal key path ("track.leather", "patches") to the label of the file (or "override")
# that set it and the path to show for it there. Problems are blamed on the longest prefix.
Provenance = dict[str, tuple[str, str]]


def join_key(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def set_provenance(prov: Provenance, path: str, label: str, display: str) -> None:
    for p in [p for p in prov if p == path or p.startswith((path + ".", path + "["))]:
        del prov[p]
    prov[path] = (label, display)


def merge_batches(base: dict[Any, Any], over: Mapping[Any, Any], prov: Provenance, label: str,
           path: str = "", display: str = "") -> dict[Any, Any]:
    """Deep-merge ``over`` into a copy of ``base``: mappings merge, lists and scalars replace."""
    out = dict(base)
    for key, value in over.items():
        p, d = join_key(path, key), join_key(display, key)
        if key not in out:
            # a new key has no provenance below it yet: skip set_provenance's scan of every entry
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
            set_provenance(prov, p, label, d)
    return out


def resolve_extends(ref: object, label: str, base_dir: Path, allowed: Allowed = None) -> Path:
    """The file an ``extends`` value names: a path if it ends in .yaml/.yml, else a shipped name."""
    if not isinstance(ref, str) or not ref.strip():
        raise RulesetError([f"{label}: extends: expected a shipped ruleset name or a path to a "
                            f".yaml file, got {describe_value(ref)}"], label)
    if ref.endswith((".yaml", ".yml")):
        path = confine(base_dir / Path(ref).expanduser(), allowed, f"{label}: extends", ref)
        kind = _file_kind(path)
        if kind is not None:
            what = (f"no such file {quote(ref)}" if kind.startswith("no such")
                    else f"{quote(ref)} is {kind}, not a ruleset file")
            raise RulesetError([f"{label}: extends: {what} (looked for {path})"], label)
        return path
    if ref in shipped_rulesets():
        return (configs_dir() / f"{ref}.yaml").resolve()
    raise RulesetError([f"{label}: extends: unknown ruleset {quote(ref)}; shipped rulesets: "
                        f"{shipped_text()} (or give a path ending in .yaml)"], label)


def load_patch_table(ref: str, where: str, base_dir: Path,
                      allowed: Allowed = None) -> tuple[Any, str]:
    """The patch list of a patch table file, and the file's label for messages.

    ``where`` names the key that gave the path, e.g. ``"edition1.yaml: patches"``.
    """
    path = confine(base_dir / Path(ref).expanduser(), allowed, where, ref)
    kind = _file_kind(path)
    if kind is not None:
        what = (f"no such patch table file {quote(ref)}" if kind.startswith("no such")
                else f"{quote(ref)} is {kind}, not a patch table file")
        raise RulesetError([at(where, f"{what} (looked for {path})", ref)])
    tlabel = display_path(path)
    raw = read_ruleset_yaml(path, tlabel)
    if not isinstance(raw, dict) or "patches" not in raw:
        raise RulesetError([f"{tlabel}: expected a mapping with the key 'patches' "
                            f"(a list of patches), got {value_kind(raw)}"], tlabel)
    unknown = [unknown_key_text(k, TABLE_KEYS) for k in raw if k not in TABLE_KEYS]
    if unknown:
        raise RulesetError([f"{tlabel}: {k}" for k in unknown], tlabel)
    return raw["patches"], tlabel


def resolve_file(path: Path, chain: list[Path],
                  allowed: Allowed = None) -> tuple[dict[Any, Any], Provenance]:
    label = display_path(path)
    raw = read_ruleset_yaml(path, label)
    if raw is None:
        raise RulesetError([f"{label}: the file is empty"], label)
    if not isinstance(raw, dict):
        raise RulesetError([f"{label}: expected a mapping of ruleset keys at the top level, "
                            f"got {value_kind(raw)}"], label)
    return resolve_data(raw, label, path.parent, [*chain, path], allowed)


def resolve_data(raw: Mapping[Any, Any], label: str, base_dir: Path,
                  chain: list[Path], allowed: Allowed = None
                  ) -> tuple[dict[Any, Any], Provenance]:
    """Apply ``extends`` and load a patch table path; return the merged data and provenance."""
    # data given to the library (YAML and JSON text refuse these as they are read): an
    # integer of thousands of digits has no text for a message, and no use in a ruleset
    huge = long_integer(raw)
    if huge is not None:
        raise RulesetError([f"{label}: {huge}"], label)
    base: dict[Any, Any] = {}
    prov: Provenance = {}
    if "extends" in raw:
        parent = resolve_extends(raw["extends"], label, base_dir, allowed)
        if parent in chain:
            # Paths relative to the first file of the cycle keep the message short.
            loop = [*chain[chain.index(parent):], parent]
            cycle = " -> ".join(os.path.relpath(p, loop[0].parent) for p in loop)
            raise RulesetError([f"{label}: extends: cycle: {cycle}"], label)
        base, prov = resolve_file(parent, chain, allowed)
        # Neither name nor description is inherited: a child is other rules, and a parent's
        # description ("original printings") would misdescribe it. A child without a name
        # is named after its file.
        for key in ("name", "description"):
            base.pop(key, None)
            prov.pop(key, None)
    own = {k: v for k, v in raw.items() if k != "extends"}
    table_label = None
    if isinstance(own.get("patches"), str):
        own["patches"], table_label = load_patch_table(own["patches"], f"{label}: patches",
                                                        base_dir, allowed)
    merged = merge_batches(base, own, prov, label)
    if table_label is not None:
        set_provenance(prov, "patches", table_label, "patches")
    prov[""] = (label, "")
    return merged, prov
