"""Reading a finished run folder for the report: ``load_run`` -> ``Run`` (the one reader,
:func:`patchsim.play.runfolder.read_run`), or ``ReportError`` naming the file at fault.
"""

from __future__ import annotations

from pathlib import Path

from patchsim.errors import PatchsimError
from patchsim.play.runfolder import Run, RunFolderError, read_run

__all__ = ["ReportError", "Run", "load_run"]


class ReportError(PatchsimError, ValueError):
    """A folder that cannot be reported on (not a run, unfinished, unreadable)."""


def load_run(run_dir: str | Path) -> Run:
    """Read a finished run folder with the one reader (:func:`patchsim.play.runfolder.read_run`:
    not running, manifest and tables whole and unchanged); ReportError with its message,
    naming the file at fault, if it is not one. ``Run.notes``: what to tell (no digests)."""
    try:
        return read_run(run_dir)
    except RunFolderError as e:
        raise ReportError(str(e)) from None
