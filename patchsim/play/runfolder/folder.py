"""A run folder as one object: :class:`RunFolder` names every file in it, reads what a
finished run stored (manifest, configuration, games, event summary, stopping record, prices
study) and writes a document into it. Callers in the report, the web app, the studies and
the command line take a RunFolder instead of joining paths and file names themselves, so a
new study's files are named in one module (:mod:`patchsim.play.runfolder.names`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import pyarrow as pa

from patchsim.analysis.tables import EventSummary, game_events, game_moves, read_games, scan_events
from patchsim.atomic import atomic_write
from patchsim.engine.ruleset import Ruleset
from patchsim.play.config import RunConfig
from patchsim.play.runfolder.errors import RunFolderError
from patchsim.play.runfolder.names import DOCUMENTS, LADDER_MD, MANIFEST, TableKind
from patchsim.play.runfolder.reader import PricesStudy, Run, RunHeader, inspect_run, read_prices
from patchsim.play.runfolder.schemas import table_path
from patchsim.play.runfolder.stopping import StoppingRecord, read_stopping, stopping_path

T = TypeVar("T")


class RunFolder:
    """A run folder on disk. ``RunFolder(path)`` is a handle (paths only: the folder may not
    exist yet); :meth:`open` checks a finished run's folder for reading (RunFolderError
    naming the file at fault), after which its manifest, configuration and tables are read
    on first use and kept."""

    def __init__(self, path: str | Path, header: RunHeader | None = None) -> None:
        self.path = Path(path)
        self._header = header

    @classmethod
    def open(cls, path: str | Path, *, verify_tables: bool = True) -> RunFolder:
        """A finished run's folder, checked (:func:`~patchsim.play.runfolder.reader.inspect_run`:
        not running, manifest unedited, tables present and, with ``verify_tables``, the files
        the run wrote)."""
        return cls(path, inspect_run(path, verify_tables=verify_tables))

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    # --- paths ------------------------------------------------------------------------------
    def file(self, name: str) -> Path:
        """The path of a file in the folder (``name``: one of :mod:`names`)."""
        return self.path / name

    def table_path(self, kind: TableKind) -> Path:
        return table_path(self.path, kind)

    @property
    def games_path(self) -> Path:
        return table_path(self.path, "games")

    @property
    def events_path(self) -> Path:
        return table_path(self.path, "events")

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def stopping_path(self) -> Path:
        return stopping_path(self.path)

    def documents(self) -> list[str]:
        """The documents the folder holds (report, sweep, tune, ladder), in listing order."""
        return [name for name in DOCUMENTS if (self.path / name).is_file()]

    # --- what a finished run stored -----------------------------------------------------------
    @property
    def header(self) -> RunHeader:
        """The checked manifest, configuration, rulesets and game count (checked on first use
        when the folder was not opened)."""
        if self._header is None:
            self._header = inspect_run(self.path)
        return self._header

    @property
    def manifest(self) -> dict[str, Any]:
        return self.header.manifest

    @property
    def config(self) -> RunConfig:
        return self.header.config

    @property
    def rulesets(self) -> dict[str, Ruleset]:
        return self.header.rulesets

    @property
    def notes(self) -> list[str]:
        return self.header.notes

    @cached_property
    def games(self) -> pd.DataFrame:
        """The games the analyses use (no move lists: :func:`game_moves`)."""
        return self._read(self.games_path, lambda: read_games(self.games_path))

    @cached_property
    def events(self) -> EventSummary:
        """A summary of the event log (never every event in memory)."""
        return self._read(self.events_path, lambda: scan_events(self.events_path, self.games))

    def game_moves(self, game_id: int) -> list[int]:
        """One game's move codes, without loading the others."""
        return game_moves(self.games_path, game_id)

    def game_events(self, game_id: int) -> pd.DataFrame:
        """One game's events, without loading the others."""
        return game_events(self.events_path, game_id)

    @property
    def stopping(self) -> StoppingRecord | None:
        """The stopping record of a run whose length a sequential test chose, or None;
        RunFolderError when it is damaged."""
        return read_stopping(self.path)

    @cached_property
    def prices(self) -> PricesStudy | None:
        """The prices study stored in the folder (``prices/``), or None."""
        return read_prices(self.path)

    def run(self) -> Run:
        """Everything a report reads, as one :class:`Run`."""
        h = self.header
        return Run(self.path, self.games, self.events, h.manifest, h.rulesets, h.notes,
                   h.config, self.prices)

    def _read(self, path: Path, read: Callable[[], T]) -> T:
        try:
            return read()
        except (OSError, ValueError, KeyError, pa.ArrowException) as e:
            manifest = self._header.manifest if self._header is not None else None
            raise RunFolderError(path, f"{path}: cannot read the table ({type(e).__name__}: "
                                 f"{e}); restore it from a copy of the run folder",
                                 manifest=manifest) from None

    # --- writing ------------------------------------------------------------------------------
    def write_document(self, name: str, text: str | bytes) -> Path:
        """Write a document (``name``: one of :data:`~names.DOCUMENTS` or a study's table
        named in :mod:`names`) into the folder atomically; returns its path."""
        if Path(name).name != name or name.startswith("."):
            raise ValueError(f"{name!r} is not a plain file name")
        path = self.path / name
        atomic_write(path, text)
        return path

    def write_ladder(self, text: str) -> Path:
        """The ladder's document (``patchsim ladder``)."""
        return self.write_document(LADDER_MD, text)


def read_run(run_dir: str | Path) -> Run:
    """Read a finished run folder, checked (:meth:`RunFolder.open`): its games, an event
    summary and the prices study stored in it, if any. RunFolderError with a plain message
    naming the file at fault if it cannot be read."""
    return RunFolder.open(run_dir).run()
