"""The one YAML reader of patchsim: safe (no arbitrary objects) and strict.

PyYAML silently keeps the last of two equal keys, so a run file with ``games: 10`` and later
``games: 4000`` would run one of them without a word. Every file patchsim reads (rulesets,
run files, experiments, bot parameters) goes through :func:`parse_yaml`, which reports
every duplicate key with both lines. Merge keys (``<<: *anchor``) are not duplicates:
overriding a merged key is what they are for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class YamlFileError(ValueError):
    """A YAML text that cannot be used: unreadable, not YAML, or with duplicate keys.
    ``problems`` lists each as "label: line L[, column C]: what"."""

    def __init__(self, label: str, problems: list[str]) -> None:
        self.label, self.problems = label, problems
        super().__init__("\n".join(problems))


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that records duplicate mapping keys (line, key, line of the first)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, Any, int]] = []

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in first:
                        self.duplicates.append((line, key, first[key]))
                    else:
                        first[key] = line
                except TypeError:  # an unhashable key: the constructor reports it
                    continue
        return super().construct_mapping(node, deep=deep)


def _syntax_problem(label: str, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "YAML"
    what = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    if context:
        what = f"{what} ({context})"
    return f"{label}: {where}: YAML syntax error: {what}"


def parse_yaml(text: str, label: str) -> Any:
    """Parse one YAML document strictly; YamlFileError names the label, line and problem."""
    loader = _StrictLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as e:
        raise YamlFileError(label, [_syntax_problem(label, e)]) from None
    finally:
        loader.dispose()
    if loader.duplicates:
        raise YamlFileError(label, [f"{label}: line {line}: duplicate key {key!r} (first on "
                                    f"line {first})"
                                    for line, key, first in loader.duplicates])
    return data


def read_yaml(path: str | Path, label: str | None = None) -> Any:
    """Read and parse the YAML file at ``path`` (see :func:`parse_yaml`)."""
    label = label or str(path)
    p = Path(path)
    if p.is_dir():
        raise YamlFileError(label, [f"{label}: is a directory, not a YAML file"])
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise YamlFileError(label, [f"{label}: no such file"]) from None
    except UnicodeDecodeError as e:
        raise YamlFileError(label, [f"{label}: cannot read: not UTF-8 text ({e})"]) from None
    except OSError as e:
        raise YamlFileError(label, [f"{label}: cannot read: {e.strerror or e}"]) from None
    return parse_yaml(text, label)
