"""Ruleset overrides: ``key=value`` texts read into values, and a dotted key set in ruleset data
(a problem names the override, which a front end shows as its own flag)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from patchsim.engine.ruleset_files import (
    Provenance,
    load_patch_table,
    merge_batches,
    set_provenance,
)
from patchsim.engine.ruleset_schema import RulesetError, describe_value
from patchsim.engine.yamlfile import YamlFileError, parse_yaml, quote
from patchsim.errors import OVERRIDE, Problem


def apply_override(data: dict[Any, Any], prov: Provenance, problems: list[str], key: object,
                   value: object) -> None:
    """Set one dotted-key override in ``data``, recording "override <key>" as its source."""
    def bad(msg: str) -> None:
        problems.append(Problem(msg, key=str(key), value=value, given=OVERRIDE))

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
            set_provenance(prov, ".".join(internal[:depth + 1]), OVERRIDE,
                           ".".join(parts[:depth + 1]))
        elif not isinstance(child, dict):
            bad(f"{'.'.join(parts[:depth + 1])} is {describe_value(child)}, not a mapping")
            return
        node = child
    ipath, last = ".".join(internal), internal[-1]
    if ipath == "patches" and isinstance(value, str):
        # Like a file's, a patch table path given here is relative to where it was given.
        value, tlabel = load_patch_table(value, f"{OVERRIDE} patches", Path.cwd())
        node[last] = value
        set_provenance(prov, ipath, tlabel, "patches")
    elif isinstance(value, dict) and isinstance(node.get(last), dict):
        node[last] = merge_batches(node[last], value, prov, OVERRIDE, ipath, key)
    else:
        node[last] = copy.deepcopy(value)
        set_provenance(prov, ipath, OVERRIDE, key)


def parse_override(text: str) -> tuple[str, object]:
    """Split ``"bonus.points=9"`` into ``("bonus.points", 9)``; the value is read as YAML."""
    key, eq, raw = text.partition("=")
    key = key.strip()
    title = "invalid override"
    if not eq:
        raise RulesetError([Problem("expected KEY=VALUE, e.g. bonus.points=9", key=text,
                                    given=OVERRIDE)], title=title)
    if not key:
        raise RulesetError([Problem("missing the key before '='", key=text, given=OVERRIDE)],
                           title=title)
    try:
        value = parse_yaml(raw, f"{OVERRIDE} {key}")
    except YamlFileError as e:
        raise RulesetError([Problem(f"cannot read the value {quote(raw)} as YAML: "
                                    f"{e.problems[0]}", key=key, value=raw, given=OVERRIDE)],
                           title=title) from None
    return key, value
