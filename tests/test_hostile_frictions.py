"""Frictions of issue 30: a long report says what it is doing, and ``plan`` answers
``--halfwidth`` as documented (a precision line that follows it, the unpaired figures)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from runs import shared_run
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.reporting.report import write_report


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_run(tmp_path_factory, "frictions", "edition2", 16, ["greedy", "random"])


def test_a_report_tells_each_step_as_it_starts(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(run_dir, folder)
    told: list[tuple[int, int, str]] = []
    write_report(folder, progress=lambda done, total, what: told.append((done, total, what)))
    assert [done for done, _, _ in told] == list(range(len(told)))  # in order, none skipped
    assert {total for _, total, _ in told} == {len(told)}
    assert told[0][2] == "reading the run" and told[-1][2].startswith("writing report.html")
    result = CliRunner().invoke(app, ["report", str(folder)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("report ")]
    assert len(lines) == len(told)
    assert re.fullmatch(r"report 1/\d+: reading the run \(\d+ s\)", lines[0]), lines[0]
    assert "report: " in result.stdout
    quiet = CliRunner().invoke(app, ["report", str(folder), "--no-progress"])
    assert quiet.exit_code == 0 and not quiet.stderr.strip()


def test_plan_follows_the_halfwidth_and_shows_the_unpaired_figures(run_dir: Path) -> None:
    def plan(*extra: str) -> list[str]:
        result = CliRunner().invoke(app, ["plan", str(run_dir), *extra])
        assert result.exit_code == 0, result.output
        return result.stdout.splitlines()

    default, tight, loose = plan(), plan("--halfwidth", "0.01"), plan("--halfwidth", "0.03")
    assert default == tight  # 0.01 is the default
    changed = [(a, b) for a, b in zip(default, loose, strict=True) if a != b]
    assert changed and all("precision" in a or "without pairing" in a for a, _ in changed)
    assert any(a.startswith("  +-1 point precision") and b.startswith("  +-3 points precision")
               for a, b in changed), changed
    assert any("without pairing" in line for line in default)
