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

Every plain value has one reading, as in YAML 1.2's core schema. Numbers are plain decimal
(:data:`NUMBER_RULE`): ``90``, ``-3``, ``0.25``, ``1e-3``, ``.inf``. PyYAML follows YAML 1.1,
which reads ``1:30`` as 90 (base 60), ``0x10`` as 16, ``017`` as 15 (octal) and ``1_000`` as
1000, but ``0o17`` and ``1e3`` as text; a plain (unquoted) value written in any such notation
is refused, naming the file, line, key and value, and a quoted one is text. Booleans are
``true`` and ``false`` (:data:`BOOLEAN_RULE`): YAML 1.1's ``yes``, ``no``, ``on`` and ``off``
are refused the same way (``name: no`` is text only when quoted). A date (``2026-12-03``) and
``=`` are text, as in YAML 1.2, not a date object and YAML 1.1's "value" key. A tag naming a
type outside the core schema (``!!binary``, ``!!timestamp``, ``!!set``, ``!!omap``, ``!!pairs``,
``!!bool yes``) is refused: no reader of patchsim expects bytes, sets, dates or pairs. An
integer longer than :data:`MAX_INT_DIGITS` digits is refused too (Python refuses to convert
one past 4,300 digits, with a bare ValueError). :func:`parse_json`
applies the same bound to JSON text (game records, web request bodies).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from patchsim.engine.textfile import (
    PATH_CHARS,
    InputTooLargeError,
    file_kind,
    not_a_file,
    read_text_bounded,
    short_path,
)
from patchsim.errors import QUOTE_CHARS, PatchsimError, quote

# re-exported: the shortening lives in patchsim.errors, the reading of a file in textfile
__all__ = ["PATH_CHARS", "QUOTE_CHARS", "InputTooLargeError", "file_kind", "not_a_file",
           "quote", "read_text_bounded", "short_path"]

# Generous limits: the shipped rulesets and experiments are a few kB and hold a few thousand
# values; a ruleset's patch list is at most 200 patches.
MAX_YAML_BYTES = 1_000_000
MAX_YAML_DEPTH = 40  # nested mappings and lists
MAX_YAML_VALUES = 200_000  # scalars, lists and mappings, counting each alias use in full
# No count, seed or price needs more; Python itself converts at most 4,300 digits.
MAX_INT_DIGITS = 100

NUMBER_RULE = ("patchsim reads numbers in plain decimal only (90, -3, 0.25, 1e-3): write it "
               "so, or quote it to mean text")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_DECIMAL = re.compile(r"[-+]?(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
                      r"|[0-9]+[eE][-+]?[0-9]+)")
_SPECIAL = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
# What reads as a number in YAML 1.1, 1.2 or common notations, but not in plain decimal: hex,
# octal and binary prefixes, base 60, digits with underscores, dots or a bare exponent mixed in.
_NUMBERISH = re.compile(r"[-+]?(?:0[xXoObB][0-9a-fA-F_]*"
                        r"|[0-9][0-9_]*(?::[0-9_]+)+(?:\.[0-9_]*)?"
                        r"|[0-9_.]*[0-9][0-9_.]*(?:[eE][-+]?[0-9_]*)?)")
_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_BOOL_TAG, _STR_TAG = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:str"
_BAD_TAG = "tag:patchsim,2026:not-decimal"  # a plain value refused by the number rule
_BAD_BOOL_TAG = "tag:patchsim,2026:yaml11-bool"  # yes/no/on/off, refused by the boolean rule
BOOLEAN_RULE = ("patchsim reads booleans as true and false only: write true or false, or "
                "quote it to mean text")
_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
_YAML11_BOOL = re.compile(r"yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF")
# the tags of YAML 1.2's core schema (and the merge key): any other is refused
_CORE_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map",
                                                "seq", "merge")}


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


_DROPPED = (_INT_TAG, _FLOAT_TAG, _BOOL_TAG, "tag:yaml.org,2002:timestamp",
            "tag:yaml.org,2002:value")


def _resolvers() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    """SafeLoader's implicit resolvers, brought to YAML 1.2's core schema: int and float
    readings replaced by the number rule (decimal ints, decimal floats, and a tag of their
    own for the refused notations), booleans by true/false (and a tag of its own for YAML
    1.1's yes/no/on/off), no dates and no "=" (text). Nulls read as before."""
    table = {first: [(tag, rx) for tag, rx in pairs if tag not in _DROPPED]
             for first, pairs in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    table = {first: pairs for first, pairs in table.items() if pairs}
    for first in "tTfF":
        table.setdefault(first, []).append((_BOOL_TAG, re.compile(f"(?:{_BOOL.pattern})$")))
    for first in "yYnNoO":
        table.setdefault(first, []).append((_BAD_BOOL_TAG,
                                            re.compile(f"(?:{_YAML11_BOOL.pattern})$")))
    whole = [(_INT_TAG, _INT), (_FLOAT_TAG, re.compile(f"{_DECIMAL.pattern}|{_SPECIAL.pattern}")),
             (_BAD_TAG, _NUMBERISH)]
    for first in "-+.0123456789":
        table.setdefault(first, [])
        # resolvers match with .match(): anchor them at the end as well
        table[first] += [(tag, re.compile(f"(?:{rx.pattern})$")) for tag, rx in whole]
    return table


def _construct_int(loader: _StrictLoader, node: yaml.Node) -> int:
    return int(str(loader.construct_scalar(node)))  # type: ignore[arg-type]  # a ScalarNode


def _construct_float(loader: _StrictLoader, node: yaml.Node) -> float:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]  # a ScalarNode
    return float(text.replace(".", "", 1)) if _SPECIAL.fullmatch(text) else float(text)


class _Dumper(yaml.SafeDumper):
    """A SafeDumper that quotes every text the loader would read as a number or refuse
    (``'1e3'``, ``'0o17'``), so that what patchsim writes reads back the same."""


_StrictLoader.yaml_implicit_resolvers = _resolvers()
_Dumper.yaml_implicit_resolvers = _resolvers()
_StrictLoader.add_constructor(_INT_TAG, _construct_int)
_StrictLoader.add_constructor(_FLOAT_TAG, _construct_float)


def _yaml11_reading(text: str) -> str:
    """What YAML 1.1 (PyYAML) makes of ``text`` as an integer, for the message ("" if none)."""
    if len(text) > 30:
        return ""
    try:
        value = SafeConstructor.construct_yaml_int(
            SafeConstructor(), yaml.ScalarNode(_INT_TAG, text))
    except ValueError:
        return ""
    return f" (YAML 1.1 reads it as {value})"


def _too_long(digits: str | int) -> str:
    """The message for an integer of too many digits: its first digits and its length."""
    if isinstance(digits, int):  # from Python data: it may be too long to have a text
        if digits.bit_length() > 14_000:
            return (f"an integer of about {int(digits.bit_length() * 0.30103):,} digits, "
                    f"longer than any patchsim reads ({MAX_INT_DIGITS} digits)")
        digits = str(digits)
    count = len(digits.lstrip("+-"))
    return (f"'{digits[:20]}...' is an integer of {count:,} digits, longer than any patchsim "
            f"reads ({MAX_INT_DIGITS} digits)")


_LIMIT = 10 ** MAX_INT_DIGITS


def long_integer(data: Any) -> str | None:
    """Where ``data`` (parsed YAML or JSON, or Python data given to the library) holds an
    integer of more than MAX_INT_DIGITS digits, as "key.path: message"; None if nowhere.
    A walk, not recursion: the data may nest as deep as its parser allowed."""
    todo: list[tuple[Any, str]] = [(data, "")]
    seen: set[int] = set()
    while todo:
        value, path = todo.pop()
        too_long = isinstance(value, _LongInt) or (
            isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _LIMIT)
        if too_long:
            return f"{path}: {_too_long(value)}" if path else _too_long(value)
        if isinstance(value, dict | list) and id(value) not in seen:
            seen.add(id(value))  # YAML aliases share values
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                name = f"[{k}]" if isinstance(value, list) else _json_key(str(k))
                todo.append((v, f"{path}{name}" if isinstance(value, list) or not path
                             else f"{path}.{name}"))
    return None


def number_problem(text: str, tag: str) -> str | None:
    """Why the scalar ``text`` (of tag ``tag``) breaks the number rule, or None if it keeps
    it (or is no number at all)."""
    if tag in (_INT_TAG, _FLOAT_TAG):
        plain = _INT.fullmatch(text) or (tag == _FLOAT_TAG and (
            _DECIMAL.fullmatch(text) or _SPECIAL.fullmatch(text)))
        if not plain:
            kind = "integer" if tag == _INT_TAG else "number"
            return f"{quote(text)} is not a plain decimal {kind}"
        digits = len(text.lstrip("+-"))
        if _INT.fullmatch(text) and digits > MAX_INT_DIGITS:
            return _too_long(text)
        return None
    if tag != _BAD_TAG:
        return None
    body = text.lstrip("+-")
    if body[:2].lower() == "0o":  # YAML 1.2's octal, text in YAML 1.1
        return f"{quote(text)} is an octal number (YAML 1.1 reads it as text)"
    if body[:2].lower() in ("0x", "0b"):
        kind = "a hexadecimal" if body[1] in "xX" else "a binary"
        return f"{quote(text)} is {kind} number{_yaml11_reading(text)}"
    if ":" in body:
        return f"{quote(text)} is a base-60 number{_yaml11_reading(text)}"
    if "_" in body:
        return f"{quote(text)} is a number with '_' in it{_yaml11_reading(text)}"
    if re.fullmatch(r"0[0-9]+", body):
        return f"{quote(text)} is a number with a leading zero{_yaml11_reading(text)}"
    return f"{quote(text)} looks like a number but is not one in decimal"


def schema_problem(text: str, tag: str) -> tuple[str, str] | None:
    """Why the scalar ``text`` of tag ``tag`` (a plain one resolved, or a tag written out) is
    outside the core schema: (why, the rule to follow); None when it is inside."""
    why = number_problem(text, tag)
    if why is not None:
        return why, NUMBER_RULE
    if tag == _BAD_BOOL_TAG or (tag == _BOOL_TAG and not _BOOL.fullmatch(text)):
        if not _YAML11_BOOL.fullmatch(text):  # !!bool maybe
            return f"{quote(text)} is not a boolean", BOOLEAN_RULE
        reading = "true" if text.lower() in ("yes", "on") else "false"
        return (f"{quote(text)} is a YAML 1.1 boolean (YAML 1.1 reads it as {reading})",
                BOOLEAN_RULE)
    return None


def _tag_problem(tag: str) -> str | None:
    """Why a tag written out in the document (``!!binary``) is refused, or None."""
    if tag in _CORE_TAGS or tag in (_BAD_TAG, _BAD_BOOL_TAG):
        return None
    short = tag.replace("tag:yaml.org,2002:", "!!")
    return (f"the tag {quote(short)} names a type patchsim does not read (it reads text, "
            "numbers, true and false, null, lists and mappings); remove the tag, or quote the "
            "value to mean text")


def _schema_problems(root: yaml.Node, label: str) -> list[str]:
    """Every value of the document (keys included) outside the core schema (a number not in
    plain decimal, a YAML 1.1 boolean, a tag of another type), with its line and key path.
    Each node is looked at once (an alias is not a second value)."""
    problems: list[str] = []
    seen: set[int] = set()
    todo: list[tuple[yaml.Node, str, bool]] = [(root, "", False)]  # (node, key path, a key?)
    while todo:
        node, path, is_key = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        where = f"{path}: " if path else ""
        what = "the key " if is_key else ""
        line = node.start_mark.line + 1
        tagged = _tag_problem(node.tag)
        if tagged is not None:
            problems.append(f"{label}: line {line}: {where}{what}{tagged}")
        elif isinstance(node, yaml.ScalarNode):
            found = schema_problem(str(node.value), node.tag)
            if found is not None:
                problems.append(f"{label}: line {line}: {where}{what}{found[0]}; {found[1]}")
        if isinstance(node, yaml.SequenceNode):
            todo.extend((child, f"{path}[{i}]", False) for i, child in reversed(list(
                enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                name = _key_text(key)
                todo.append((value, f"{path}.{name}" if path else name, False))
                todo.append((key, path, True))
    return problems


def _key_text(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        text = str(node.value)
        return text if len(text) <= QUOTE_CHARS and text.isprintable() else quote(text)
    return "?"


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
        numbers = _schema_problems(node, label) if node is not None else []
        if numbers:
            raise YamlFileError(label, numbers)
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


def dump_yaml(data: Any, **options: Any) -> str:
    """``data`` as YAML text that :func:`parse_yaml` reads back as ``data`` (``options`` as
    for ``yaml.safe_dump``: sort_keys, default_flow_style, ...)."""
    return yaml.dump(data, Dumper=_Dumper, **options)


class JsonNumberError(PatchsimError, ValueError):
    """JSON text with an integer longer than MAX_INT_DIGITS; the message names the label, the
    key path and a prefix of the number."""


class _LongInt(str):
    """An integer's digits, too many to convert (found again by :func:`parse_json`)."""


def parse_json(text: str, label: str) -> Any:
    """``json.loads(text)``, with an integer of more than MAX_INT_DIGITS digits refused by a
    JsonNumberError naming where it is (json itself raises a bare ValueError past 4,300
    digits). JSONDecodeError and RecursionError pass as from ``json.loads``."""
    long: list[_LongInt] = []

    def parse_int(digits: str) -> int | _LongInt:
        if len(digits.lstrip("-")) <= MAX_INT_DIGITS:
            return int(digits)
        long.append(_LongInt(digits))
        return long[-1]

    data = json.loads(text, parse_int=parse_int)
    where = long_integer(data) if long else None
    if where is not None:
        raise JsonNumberError(f"{label}: {where}")
    return data


def _json_key(key: str) -> str:
    return key if len(key) <= QUOTE_CHARS and key.isprintable() else quote(key)


def read_yaml(path: str | Path, label: str | None = None) -> Any:
    """Read and parse the YAML file at ``path`` (see :func:`parse_yaml`).

    A regular file or a character device (read up to the size limit: /dev/zero ends); a
    directory, a named pipe or a socket is refused, saying which (a pipe without a writer
    would block the read for ever, and a file is read more than once)."""
    label = label or short_path(path)
    p = Path(path)
    try:
        kind = not_a_file(p)
        if kind is not None and kind != "a character device":
            what = kind if kind.startswith("no such") else f"is {kind}, not a YAML file"
            raise YamlFileError(label, [f"{label}: {what}"])
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
