"""The command line's help: what `patchsim --help` and `patchsim CMD --help` show."""

from __future__ import annotations

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
        result.output


def test_run_help_names_the_default_line_ups() -> None:
    bots = next(p for p in commands()["run"].params if p.name == "bots")
    assert ";".join(DEFAULT_BOTS_LEARNED) in bots.help
    assert ";".join(DEFAULT_BOTS) in bots.help
