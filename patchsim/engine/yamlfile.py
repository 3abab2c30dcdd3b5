"""The one YAML reader of patchsim: safe (no arbitrary objects) and strict.

PyYAML silently keeps the last of two equal keys, so a run file with ``games: 10`` and later
``games: 4000`` would run one of them without a word. Every file patchsim reads (rulesets,
run files, experiments, bot parameters) goes through :func:`parse_yaml`, which reports
every duplicate key with both lines. Merge keys (``<<: *anchor``) are not duplicates:
overriding a merged key is what they are for.

Every input is bounded: a file is read only up to a size limit (:func:`read_text_bounded`, also
used for game records), a document may nest only so deep, and aliases may not expand it beyond
a number of values (a few lines of ``&a [*b, *b, ...]`` anchors otherwise stand for billions
of values, which any code walking the data would try to visit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from patchsim.errors import PatchsimError

# Generous limits: the shipped rulesets and experiments are a few kB and hold a few thousand
# values; a ruleset's patch list is at most 200 patches.
MAX_YAML_BYTES = 1_000_000
MAX_YAML_DEPTH = 40  # nested mappings and lists
MAX_YAML_VALUES = 200_000  # scalars, lists and mappings, counting each alias use in full
QUOTE_CHARS = 60  # how much of a value an error message quotes
PATH_CHARS = 300  # a path is shown whole up to this length


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for error messages: a message quotes
    a short prefix of what it rejects, never a whole (possibly megabytes long) value."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(str(value)):,} characters)"


class InputTooLargeError(PatchsimError, ValueError):
    """A file larger than the limit for its kind; the message names the file and the limit."""

    def __init__(self, label: str, limit: int, what: str) -> None:
        self.label, self.limit = label, limit
        super().__init__(f"{label}: larger than {_size(limit)}, the limit for {what}")


def _size(n: int) -> str:
    return f"{n / 1_000_000:g} MB" if n >= 1_000_000 else f"{n / 1000:g} kB"


def read_text_bounded(path: str | Path, limit: int, what: str, label: str | None = None) -> str:
    """The UTF-8 text of ``path``, read only up to ``limit`` bytes (a device such as /dev/zero
    or a huge file is refused after reading that much, not read to its end).

    Raises InputTooLargeError beyond the limit, OSError and UnicodeDecodeError as reading does;
    ``what`` names the kind of file in the message ("a YAML file")."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InputTooLargeError(label or str(path), limit, what)
    return data.decode("utf-8")


class YamlFileError(PatchsimError, ValueError):
    """A YAML text that cannot be used: unreadable, not YAML, or with duplicate keys.
    ``problems`` lists each as "label: line L[, column C]: what"."""

    def __init__(self, label: str, problems: list[str]) -> None:
        super().__init__(*problems)  # shown one a line
        self.label = label


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that records duplicate mapping keys (line, key, line of the first)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, Any, int]] = []
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        # The composer recurses once per level: refuse deep nesting before Python's
        # recursion limit turns it into a RecursionError.
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(_TooDeep(mark))
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

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
        return super().construct_mapping(node, deep=deep)  # type: ignore[arg-type]  # a MappingNode here


class _TooDeep:
    """Where a document nests too deeply (carried inside a YAMLError)."""

    def __init__(self, mark: yaml.Mark) -> None:
        self.mark = mark


class _Recursive(Exception):
    """A node that contains itself through an alias."""


def _expanded_size(root: yaml.Node) -> int:
    """The number of values the document stands for, each alias use counted in full; counting
    stops past MAX_YAML_VALUES. Shared nodes are sized once (memoised), so this is linear in
    the size of the text however large the expansion. _Recursive for a node that contains
    itself (``&a [*a]``): no code that walks the data could finish on it."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the walk's current path
    # iterative post-order walk: (node, children done?)
    todo: list[tuple[yaml.Node, bool]] = [(root, False)]
    while todo:
        node, done = todo.pop()
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            sizes[id(node)] = 1
            continue
        if done:
            open_nodes.discard(id(node))
            total = 1 + sum(sizes[id(c)] for c in children)
            sizes[id(node)] = min(total, MAX_YAML_VALUES + 1)
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise _Recursive(node)
        open_nodes.add(id(node))
        todo.append((node, True))
        todo.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def _syntax_problem(label: str, exc: yaml.YAMLError) -> str:
    if exc.args and isinstance(exc.args[0], _TooDeep):
        mark: Any = exc.args[0].mark
        return (f"{label}: line {mark.line + 1}, column {mark.column + 1}: nested more than "
                f"{MAX_YAML_DEPTH} levels deep")
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        return (f"{label}: character {exc.position + 1}: the control character "
                f"#x{ord(char):04x} is not allowed in YAML text")
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "YAML"
    what = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    if context:
        what = f"{what} ({context})"
    return f"{label}: {where}: YAML syntax error: {what}"


def parse_yaml(text: str, label: str) -> Any:
    """Parse one YAML document strictly; YamlFileError names the label, line and problem."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlFileError(label, [f"{label}: longer than {MAX_YAML_BYTES:,} characters, the "
                                    "limit for YAML text"])
    try:
        # the reader checks the characters as it is made: NUL and other control characters
        loader = _StrictLoader(text)
    except yaml.YAMLError as e:
        raise YamlFileError(label, [_syntax_problem(label, e)]) from None
    try:
        node = loader.get_single_node()
        try:
            size = _expanded_size(node) if node is not None else 0
        except _Recursive as r:
            mark = r.args[0].start_mark
            raise YamlFileError(label, [
                f"{label}: line {mark.line + 1}, column {mark.column + 1}: the value contains "
                "itself through an alias (*name): a recursive document"]) from None
        if size > MAX_YAML_VALUES:
            raise YamlFileError(label, [
                f"{label}: the document stands for more than {MAX_YAML_VALUES:,} values once "
                "its aliases (*name) are expanded; write the values out, or use fewer aliases"])
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        raise YamlFileError(label, [_syntax_problem(label, e)]) from None
    finally:
        loader.dispose()
    if loader.duplicates:
        raise YamlFileError(label, [f"{label}: line {line}: duplicate key {quote(key)} (first on "
                                    f"line {first})"
                                    for line, key, first in loader.duplicates])
    return data


def read_yaml(path: str | Path, label: str | None = None) -> Any:
    """Read and parse the YAML file at ``path`` (see :func:`parse_yaml`)."""
    label = label or short_path(path)
    p = Path(path)
    try:
        if p.is_dir():
            raise YamlFileError(label, [f"{label}: is a directory, not a YAML file"])
        text = read_text_bounded(p, MAX_YAML_BYTES, "a YAML file", label)
    except FileNotFoundError:
        raise YamlFileError(label, [f"{label}: no such file"]) from None
    except UnicodeDecodeError as e:
        raise YamlFileError(label, [f"{label}: cannot read: not UTF-8 text ({e})"]) from None
    except InputTooLargeError as e:
        raise YamlFileError(label, [str(e)]) from None
    except OSError as e:
        raise YamlFileError(label, [f"{label}: cannot read: {e.strerror or e}"]) from None
    except ValueError as e:  # "embedded null byte": not a name a file can have
        if isinstance(e, YamlFileError):
            raise
        raise YamlFileError(label, [f"{label}: not a usable file name ({e})"]) from None
    return parse_yaml(text, label)


def short_path(path: str | Path, limit: int = PATH_CHARS) -> str:
    """A path for messages: as given when short and printable, else quoted and cut."""
    text = str(path)
    if len(text) <= limit and text.isprintable():
        return text
    return quote(text, limit)
