"""The command line's help: what `patchsim --help` and `patchsim CMD --help` show."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer.main
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.play.config import DEFAULT_BOTS, DEFAULT_BOTS_LEARNED


def commands():
    return typer.main.get_command(app).commands


def test_command_help_has_no_line_breaks_inside_a_paragraph() -> None:
    # typer's rich help keeps single line breaks: a docstring wrapped in the source would
    # show its breaks mid-sentence in `patchsim --help`
    for name, cmd in commands().items():
        assert cmd.help, f"{name} has no help"
        for paragraph in cmd.help.split("\n\n"):
            assert "\n" not in paragraph, f"{name}: {paragraph!r}"


def test_every_command_is_listed_with_its_summary() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert result.exit_code == 0
    for name in commands():
        assert f" {name} " in result.output
    assert "exit 0 when every tolerance is shown to hold, 1 when one is shown to fail" in \
        " ".join(result.output.split())  # wrapped at click's 80 columns at most


def test_run_help_names_the_default_line_ups() -> None:
    bots = next(p for p in commands()["run"].params if p.name == "bots")
    assert ";".join(DEFAULT_BOTS_LEARNED) in bots.help
    assert ";".join(DEFAULT_BOTS) in bots.help


TYPE_TAGS = ("<int>", "<str>", "<bool>", "<float>", "<list")


@pytest.mark.parametrize("name", sorted(commands()))
def test_help_is_readable_at_80_columns(name: str) -> None:
    """Nothing cut off, no line past the 80th column, and the values named by what to give
    (--out DIR) instead of a type tag on every option (--out <str>, --report <bool>)."""
    result = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "\u2026" not in result.output
    options = result.output.split("Options:")[1]
    assert not [t for t in TYPE_TAGS if t in options], options


def test_run_help_at_80_columns_shows_defaults_whole() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "80"})
    text = " ".join(result.output.split())
    assert "Run folder (default reports/<config>/<time>-s<seed>)." in text
    assert "--jobs N Parallel workers (-1: all cores). [default: -1]" in text
    assert "--set KEY=VALUE" in text and "--keep-batches / --no-keep-batches" in text


def test_command_list_at_80_columns_shows_whole_summaries() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"})
    assert "..." not in result.output.split("Commands:")[1]
    text = " ".join(result.output.split())
    assert "replay Replay a game record and show the final position (or every position " \
        "with --trace)." in text


@pytest.mark.slow
def test_help_loads_no_numpy_numba_pandas_nor_the_engine() -> None:
    """`patchsim --help` and `patchsim run --help` import only the command line: the heavy
    modules are imported inside the commands (this is what makes --help start fast)."""
    code = ("import sys; from typer.testing import CliRunner; "
            "from patchsim.cli.main import app; "
            "[CliRunner().invoke(app, a) for a in (['--help'], ['run', '--help'])]; "
            "print(sorted(m for m in ('numpy', 'numba', 'pandas', 'pyarrow', 'joblib', "
            "'patchsim.engine', 'patchsim.play') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == "[]"
