"""Fuzzing the loaders with random and mutated input: rulesets and experiment files (YAML text
and parsed data) and game records (JSON). Whatever they are fed, the loaders either succeed or
raise the project's error type with a short message; never another exception, never long
(CPU time per input is bounded) and never large (the process's peak memory stays put)."""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from patchsim.bots.registry import BotSpecError
from patchsim.cli.main import app
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, RecordError, final_position
from patchsim.engine.ruleset import RulesetError, load_ruleset, ruleset_from_dict
from patchsim.engine.yamlfile import YamlFileError, parse_yaml
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
          "extends: edition1\n", "patches: nothing.yaml\n", "/dev/zero", "../", "P19", "a1"]
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
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
                     lambda t: changed(yaml.safe_load(t)).map(yaml.safe_dump))))
def test_experiment_files(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp, \
            mock.patch("patchsim.bots.registry._import_bot", no_imports):
        path = Path(tmp) / "fuzz.yaml"
        path.write_text(text, encoding="utf-8")
        expect((ExperimentError,), lambda: load_experiment(path))


def _replay(text: str) -> None:
    final_position(GameRecord.from_json(text, "fuzz.json"))


@FUZZ
@given(st.one_of(mutated([RECORD_TEXT]), changed(json.loads(RECORD_TEXT)).map(json.dumps)))
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
