"""Fuzzing the loaders with random and mutated input: rulesets and experiment files (YAML text
and parsed data) and game records (JSON). Whatever they are fed, the loaders either succeed or
raise the project's error type with a short message; never another exception, never long
(CPU time per input is bounded) and never large (the process's peak memory stays put)."""

from __future__ import annotations

import json
import math
import os
import re
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import typer
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from patchsim.bots.registry import BotSpecError
from patchsim.cli.common import bot_specs
from patchsim.cli.main import app
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, RecordError, final_position
from patchsim.engine.ruleset import RulesetError, load_ruleset, ruleset_from_dict
from patchsim.engine.yamlfile import YamlFileError, dump_yaml, parse_yaml
from patchsim.errors import MAX_SPEC_CHARS
from patchsim.experiments.experiment import ExperimentError, load_experiment

REPO = Path(__file__).resolve().parent.parent
RULESET_TEXT = yaml.safe_dump(load_ruleset("edition2").to_dict(), sort_keys=False)
RULESET_DATA = yaml.safe_load(RULESET_TEXT)
EXPERIMENT_TEXTS = [(REPO / "experiments" / n).read_text(encoding="utf-8")
                    for n in ("fair-start.yaml", "bonus-value.yaml", "leather-layouts.yaml")]
RECORD_TEXT = (REPO / "examples" / "edition2-sample.json").read_text(encoding="utf-8")

CPU_SECONDS = 5.0  # per input, however loaded the machine (CPU time, not wall time)
MEMORY_GROWTH_KB = 400_000  # peak resident memory may not grow by more than this
MESSAGE_CHARS = 20_000  # an error lists every problem, each quoting short prefixes

# pieces that tend to break parsers and validators
TOKENS = ["&a ", "*a", "&b [*a, *a, *a, *a]", "[", "]", "{", "}", ": ", "- ", "\n", "  ", "'",
          '"', "\x00", "\\0", "\x07", "99999999999999999999999", "-1", "0", "null", "~",
          "1e400", ".nan", ".inf", "<<: *a\n", "!!python/object:os.system", "!!binary ",
          "%YAML 1.1\n", "---\n", "...\n", "x" * 3000, "\t", "#", "é", "\ufeff", "? ", "|\n",
          "true", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "{a: {b: {c: {d: 1}}}}",
          "extends: edition1\n", "patches: nothing.yaml\n", "/dev/zero", "../", "P19", "a1",
          # numbers YAML 1.1 reads by surprise, and integers past Python's 4,300 digits
          "1:30", "-1:30:00", "0x10", "0o17", "017", "0b11", "1_000", "1e3", "+.5", "1.2.3",
          "!!int 0x10", "!!float 1:30", "9" * 5000, "-" + "7" * 4301, "1" * 101,
          # YAML 1.1's booleans, dates and types outside the core schema
          "yes", "No", "on", "OFF", "!!bool yes", "2026-12-03", "2026-12-03 10:00:00", "=",
          "!!timestamp 2026-12-03", "!!set {a}", "!!omap [a: 1]", "!!pairs [a: 1]", "!mine ",
          # markup and endless names
          "<script>alert(1)</script>", "javascript:alert(1)", "<img src=x onerror=alert(1)>",
          "[x](javascript:alert(1))", "<!--", "y" * 5000 + "(", "greedy;;", ";"]
HUGE_INTS = st.integers(101, 6000).flatmap(
    lambda n: st.sampled_from([10 ** n, -(10 ** n) + 1, 7 * 10 ** (n - 1)]))
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), HUGE_INTS,
              st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
              st.sampled_from(TOKENS)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)


@st.composite
def mutated(draw: st.DrawFn, texts: list[str]) -> str:
    """One of ``texts`` after a few random edits: inserts, deletions, replacements, repeats."""
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "repeat"]))
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 60)))
        piece = draw(st.one_of(st.sampled_from(TOKENS), st.text(max_size=10)))
        if op == "insert":
            text = text[:i] + piece + text[i:]
        elif op == "delete":
            text = text[:i] + text[j:]
        elif op == "replace":
            text = text[:i] + piece + text[j:]
        else:
            text = text[:i] + text[i:j] * draw(st.integers(2, 5)) + text[j:]
    return text


def _paths(data: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, (*prefix, i))


@st.composite
def changed(draw: st.DrawFn, data: Any) -> Any:
    """``data`` (parsed) with a few values anywhere in it replaced by random ones."""
    data = json.loads(json.dumps(data))
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        node = data
        for key in path[:-1]:
            node = node[key]
        if draw(st.booleans()) or not isinstance(node, dict):
            node[path[-1]] = draw(VALUES)
        else:
            del node[path[-1]]
    return data


def unbounded_digits(dump: Callable[[Any], str]) -> Callable[[Any], str]:
    """``dump`` that can write integers past Python's 4,300 digits (the test writes what a
    hostile file holds; patchsim reads it with the default limit)."""
    def write(data: Any) -> str:
        before = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
        try:
            return dump(data)
        finally:
            sys.set_int_max_str_digits(before)
    return write


@pytest.fixture(scope="module", autouse=True)
def compiled_engine() -> None:
    """The compiled engine loaded (or compiled, when its sources changed since the cache was
    written: some 4 s of CPU, more on a loaded machine) before any input is timed, so that
    the per-input bound below measures the input, not the first call of the engine."""
    final_position(GameRecord.from_json(RECORD_TEXT))
    CliRunner().invoke(app, ["replay", "-"], input=RECORD_TEXT)


@contextmanager
def bounded() -> Iterator[None]:
    """The body may take CPU_SECONDS of CPU time and grow peak memory by MEMORY_GROWTH_KB."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time()
    yield
    assert time.process_time() - t0 < CPU_SECONDS
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < MEMORY_GROWTH_KB


def expect(errors: tuple[type[Exception], ...], fn: Callable[[], object]) -> None:
    """``fn()`` succeeds or raises one of ``errors`` with a message of bounded length."""
    with bounded():
        try:
            fn()
        except errors as e:
            assert str(e).strip() and len(str(e)) < MESSAGE_CHARS, str(e)[:500]


def no_imports(path: str, params: dict, bot_path: Any = ()) -> Any:
    # a mutated bot spec may look like an import path ("os:abort"); never import it here
    raise BotSpecError(f"{path}: import-path bots are not loaded while fuzzing")


# A fixed set of examples in CI; PATCHSIM_FUZZ_EXAMPLES=5000 explores afresh (random seeds).
EXAMPLES = int(os.environ.get("PATCHSIM_FUZZ_EXAMPLES", "0")) or None
FUZZ = settings(max_examples=EXAMPLES or 60, deadline=None, derandomize=EXAMPLES is None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(st.one_of(st.text(max_size=300), mutated([RULESET_TEXT, *EXPERIMENT_TEXTS])))
def test_parse_yaml_raises_only_yaml_file_errors(text: str) -> None:
    expect((YamlFileError,), lambda: parse_yaml(text, "fuzz.yaml"))


@FUZZ
@given(mutated([RULESET_TEXT]))
def test_ruleset_files(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.yaml"
        path.write_text(text, encoding="utf-8")
        expect((RulesetError,), lambda: load_ruleset(path))


@FUZZ
@given(changed(RULESET_DATA))
def test_ruleset_data(data: Any) -> None:
    expect((RulesetError,), lambda: ruleset_from_dict(data, source="<fuzz>"))


@FUZZ
@given(st.one_of(mutated(EXPERIMENT_TEXTS),
                 st.sampled_from(EXPERIMENT_TEXTS).flatmap(
                     lambda t: changed(yaml.safe_load(t)).map(unbounded_digits(yaml.safe_dump)))))
def test_experiment_files(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp, \
            mock.patch("patchsim.bots.registry._import_bot", no_imports):
        path = Path(tmp) / "fuzz.yaml"
        path.write_text(text, encoding="utf-8")
        expect((ExperimentError,), lambda: load_experiment(path))


def _replay(text: str) -> None:
    final_position(GameRecord.from_json(text, "fuzz.json"))


@FUZZ
@given(st.one_of(mutated([RECORD_TEXT]),
                 changed(json.loads(RECORD_TEXT)).map(unbounded_digits(json.dumps))))
def test_game_records(text: str) -> None:
    expect((RecordError,), lambda: _replay(text))


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated([RECORD_TEXT]))
def test_replay_command(text: str) -> None:
    with bounded():
        result = CliRunner().invoke(app, ["replay", "-"], input=text)
    assert result.exit_code in (0, 1), result.output
    assert isinstance(result.exception, SystemExit | None), repr(result.exception)
    if result.exit_code:
        assert result.stderr.startswith("error: ")


def test_the_mutations_reach_valid_and_invalid_input() -> None:
    # the fuzzing is only worth something if the seeds themselves load
    assert load_ruleset("edition2").content_hash() == ruleset_from_dict(
        RULESET_DATA, source="<fuzz>").content_hash()
    assert isinstance(Game, type) and final_position(GameRecord.from_json(RECORD_TEXT))


# numbers in any notation: a number is read only as its plain decimal value, or refused
NUMBERISH = st.one_of(
    st.integers(-10 ** 120, 10 ** 120).map(str),
    st.floats(allow_nan=False).map(repr),
    st.from_regex(r"\A[-+]?(0[xXoObB][0-9a-fA-F_]{0,6}|[0-9_]{1,5}(:[0-9_]{1,3}){1,2}"
                  r"|[0-9_.]{1,8}([eE][-+]?[0-9]{0,3})?)\Z"),
    st.sampled_from(["!!int 0x10", "!!float 1.2.3", "!!int 12", ".inf", "-.inf", ".nan"]))
PLAIN_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)")


@FUZZ
@given(NUMBERISH)
def test_a_number_is_read_as_its_decimal_value_or_refused(text: str) -> None:
    try:
        value = parse_yaml(f"key: {text}\n", "n.yaml")["key"]
    except YamlFileError as e:
        assert str(e).startswith("n.yaml: line 1: key: ") and "plain decimal" in str(e), e
        assert len(str(e)) < 500
        return
    plain = text.removeprefix("!!int ").removeprefix("!!float ")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        assert value is None or isinstance(value, bool) or value == plain
    elif isinstance(value, int):
        assert PLAIN_INT.fullmatch(plain) and value == int(plain), (text, value)
    else:
        expected = float(plain.replace(".inf", "inf").replace(".nan", "nan"))
        assert value == expected or (math.isnan(value) and math.isnan(expected)), (text, value)


WRITTEN = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10 ** 99, 10 ** 99),
              st.floats(allow_nan=False), st.text(max_size=20), NUMBERISH),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)


@FUZZ
@given(WRITTEN)
def test_what_patchsim_writes_as_yaml_reads_back_the_same(data: Any) -> None:
    assert parse_yaml(dump_yaml(data), "w.yaml") == data


@FUZZ
@given(st.one_of(st.none(), st.lists(st.sampled_from(
    [";", " ", "\t", "greedy", "random", "mcts(iterations=10)", "x" * (MAX_SPEC_CHARS + 1)]),
    max_size=6).map("".join)))
def test_a_bots_value_is_its_specs_or_refused(text: str | None) -> None:
    try:
        specs = bot_specs(text)
    except typer.Exit:
        assert text is not None
        pieces = [p.strip() for p in text.split(";")]
        assert not all(pieces) or any(len(p) > MAX_SPEC_CHARS for p in pieces), text
        return
    if text is None:
        assert specs is None
    else:
        assert specs == [p.strip() for p in text.split(";")] and all(specs)
