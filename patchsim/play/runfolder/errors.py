"""What is wrong with a run folder: one error type carrying the file at fault (and the
manifest, when it could be read), and its kinds a caller tells apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from patchsim.engine.textfile import short_path
from patchsim.play.config import RunError
from patchsim.play.runfolder.names import GAMES


class RunFolderError(RunError):
    """A run folder that cannot be used as it is: ``path`` is the file at fault;
    ``manifest`` the manifest as read, when it could be (a listing still shows its name)."""

    def __init__(self, path: Path, message: str, *,
                 manifest: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.manifest = manifest
        super().__init__(message)


class RunFolderBusy(RunFolderError):
    """A live patchsim run holds the folder: ``holder`` is what its lock file says,
    ``doing`` what the caller wanted to do (None: play into the folder)."""

    def __init__(self, run_dir: Path, holder: dict[str, Any], doing: str | None = None
                 ) -> None:
        self.run_dir, self.holder, self.doing = Path(run_dir), holder, doing
        who = ", ".join(f"{k} {holder[k]}" for k in ("pid", "host", "started", "seed")
                        if k in holder)
        then = (f"wait for it to finish before {doing}" if doing is not None
                else "wait for it to finish, or write to another folder")
        super().__init__(Path(run_dir), f"{short_path(run_dir)} is still running "
                         f"({who or 'another patchsim run'}); {then}")


class RunNotFinished(RunFolderError):
    """A run folder without its games table: a run to resume, or (``report_only``) a
    finished run's folder kept without its tables (a committed report); ``command`` is how
    its manifest says it was played."""

    def __init__(self, run_dir: Path, report_only: bool, command: str | None) -> None:
        self.run_dir, self.report_only, self.command = Path(run_dir), report_only, command
        if report_only:
            again = command or "the command in its manifest"
            text = (f"{short_path(run_dir)}: report only: it holds no {GAMES} (a finished "
                    "run's folder without its tables, e.g. a committed report); play it "
                    f"again with: {again}")
        else:
            text = (f"{short_path(run_dir)}: the run is not finished (no {GAMES}); resume "
                    "the run first")
        super().__init__(Path(run_dir), text)


def first_line(e: BaseException) -> str:
    """An exception as one line for a message: its type and the first line of its text."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def short(value: Any, limit: int = 40) -> str:
    """A value shown in a message, cut to ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
