"""The faults that end a run early. Each carries what the caller needs to tell the user
(the run folder, how far it got, the cause); finished batches are always kept, so the run
can be resumed."""

from __future__ import annotations

import errno
from pathlib import Path

from patchsim.play.config import RunError
from patchsim.play.match import BotError


class RunInterrupted(RunError):
    """The run was stopped (Ctrl-C, SIGTERM, SIGHUP) or a worker died; finished batches are
    kept and the run can be resumed."""

    def __init__(self, run_dir: Path, done: int, total: int, cause: str) -> None:
        self.run_dir, self.done, self.total, self.cause = run_dir, done, total, cause
        super().__init__(f"{cause}: {done} of {total} batches are stored in {run_dir}")


class RunStorageError(RunError):
    """The run folder could not be written (full disk, permissions); finished batches are
    kept and the run can be resumed once the cause is fixed."""

    def __init__(self, run_dir: Path, error: OSError) -> None:
        self.run_dir, self.error = run_dir, error
        what = "the disk is full" if error.errno == errno.ENOSPC else (error.strerror or
                                                                        str(error))
        where = f" ({error.filename})" if error.filename else ""
        super().__init__(f"cannot write the run folder {run_dir}: {what}{where}; finished "
                         "batches are kept")


class BotFailure(RunError):
    """A bot failed during a run; the game up to the failing move is saved as a record."""

    def __init__(self, run_dir: Path, error: BotError, record_path: Path) -> None:
        self.run_dir, self.error, self.record_path = run_dir, error, record_path
        super().__init__(f"{error}\nthe game up to the failing move is in {record_path}; "
                         f"finished batches are kept in {run_dir}")
