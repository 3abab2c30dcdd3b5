"""Writing a run folder: the lock a run holds, the batch files the workers write, the merge
into the Parquet tables (in row groups of a fixed size) and the checks before a run starts
(disk space, a writable folder, a fresh folder's name)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from patchsim._version import __version__
from patchsim.atomic import atomic_path, atomic_write, current_umask
from patchsim.engine.textfile import short_path
from patchsim.play.config import RunConfig, RunError
from patchsim.play.run_name import folder_name
from patchsim.play.runfolder.checks import WRITE_PROBE
from patchsim.play.runfolder.errors import RunFolderBusy, RunFolderError
from patchsim.play.runfolder.names import BATCH_SUFFIX, BATCHES, LOCK, TABLE_KINDS, TableKind
from patchsim.play.runfolder.schemas import (
    SCHEMAS,
    conform,
    table_path,
)

if TYPE_CHECKING:
    import pandas as pd

ROW_GROUP = 65536  # fixed row-group size: the merged files do not depend on the batch size


# Disk needed per game while a run is in progress: the batch files (about 1.8 kB a game with
# the default event log) plus the merged Parquet tables (about 0.4 kB), with a margin.
DISK_BYTES_PER_GAME = 2600


def batch_path(run_dir: Path, run_id: str, key: str, kind: TableKind) -> Path:
    """A batch file: named with the run's id, so files of another run can never be merged."""
    return Path(run_dir) / BATCHES / f"{run_id}-{key}.{kind}.{BATCH_SUFFIX}"


def write_batch(table: pa.Table, path: Path) -> None:
    """Write a batch file atomically (temporary name in the same folder, then rename)."""
    with atomic_path(path, suffix=f".{BATCH_SUFFIX}") as tmp, pa.OSFile(str(tmp), "wb") as sink, \
            pa.ipc.new_file(sink, table.schema,
                            options=pa.ipc.IpcWriteOptions(compression="lz4")) as w:
        w.write_table(table)


def read_batch(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def atomic_write_text(text: str, path: Path) -> None:
    atomic_write(path, text)


LOCK_TRIES = 20  # 25 ms apart: a reader's probe of the lock lasts microseconds


class RunLock:
    """An exclusive claim on a run folder for the life of a run (``flock`` on a lock file).

    The kernel releases the lock when the holder dies, however it dies, so a crash never
    leaves the folder blocked; a lock file that still names a holder when the lock is free
    is the trace of such a crash, reported as ``stale``. The file is not removed on release
    (removing it would let two runs lock two different files)."""

    def __init__(self, run_dir: Path, info: dict[str, Any]) -> None:
        self.path = Path(run_dir) / LOCK
        self.info = info
        self.fd: int | None = None
        self.stale: dict[str, Any] | None = None

    def acquire(self) -> RunLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666 & ~current_umask())
        # a reader (report, serve: runfolder.running) takes the lock shared for an instant to
        # see whether a run holds it; a run holds it for as long as it plays. So a refusal
        # is only believed when it lasts: a few tries over half a second
        for attempt in range(LOCK_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt + 1 < LOCK_TRIES:
                    time.sleep(0.025)
                    continue
                holder = _read_holder(fd)
                os.close(fd)
                raise RunFolderBusy(self.path.parent, holder) from None
        self.stale = _read_holder(fd) or None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(self.info).encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)  # a clean end: no holder named
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 4096, 0)
        return json.loads(raw) if raw.strip() else {}
    except (OSError, ValueError):
        return {"note": "unreadable lock file"}


def check_disk(run_dir: Path, games: int) -> None:
    """Refuse a run the disk cannot hold (estimated), before any work starts."""
    need = games * DISK_BYTES_PER_GAME
    try:
        free = shutil.disk_usage(run_dir).free
    except OSError:
        return
    if need > free:
        raise RunError(f"{games:,} games need about {size_text(need)} in {run_dir} while "
                       f"it is running, but only {size_text(free)} are free; free some "
                       "space, play fewer games, or write to another disk")


def size_text(n: float) -> str:
    """A size in bytes for a message: kB, MB or GB, never "0.0 GB" for a few megabytes."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def versions() -> dict[str, str]:
    # the installed versions, read without importing pandas into every worker
    return {"patchsim": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "numba": version("numba"), "pandas": version("pandas"),
            "pyarrow": pa.__version__, "joblib": version("joblib")}


def new_run_dir(config: RunConfig, out: str | Path | None) -> Path:
    """``out``, or a fresh folder reports/<name>/<time>-s<seed>."""
    if out is not None:
        if not str(out).strip():  # Path("") is ".": the run would fill the current folder
            raise RunError.about("out", "empty; give the run folder's name",
                                 value=str(out))
        return Path(out)
    return fresh_dir(config.name, f"-s{config.seed}")


def fresh_dir(name: str, suffix: str = "") -> Path:
    """A folder that does not exist yet under reports/<name>/, named by the time: studies
    write there by default, so a committed report is never overwritten by accident."""
    base = Path("reports") / folder_name(name)  # never outside reports/ (a name "..")
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path, n = base / f"{stamp}{suffix}", 1
    while path.exists():
        n += 1
        path = base / f"{stamp}{suffix}-{n}"
    return path


def check_writable(run_dir: Path) -> None:
    try:
        (run_dir / BATCHES).mkdir(parents=True, exist_ok=True)
        # a name of its own: two runs started together into one folder must not remove
        # each other's probe (the second is refused by the run lock, with a clear message)
        fd, probe = tempfile.mkstemp(prefix=WRITE_PROBE, dir=run_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise RunError(f"cannot write to the output folder {short_path(run_dir)}: "
                       f"{e.strerror or e}") from None


class TableMerger:
    """Writes games.parquet and events.parquet from batch tables handed over in their final
    order (ruleset, pairing, deal), in row groups of a fixed size, so the files are the same
    whatever the batch size. Memory holds at most one row group per table. Both files appear
    (atomically) only on :meth:`commit`; :meth:`abort` leaves none."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self._stack = contextlib.ExitStack()
        self._writers: dict[TableKind, pq.ParquetWriter] = {}
        self._tmp: dict[TableKind, Path] = {}
        self._pending: dict[TableKind, list[pa.Table]] = {}
        self._rows: dict[TableKind, int] = {}
        for kind, schema in SCHEMAS.items():
            tmp = self._stack.enter_context(atomic_path(table_path(self.run_dir, kind),
                                                        suffix=".parquet"))
            # lz4 and no min/max statistics on text columns: half the merge's cost at the
            # same file size
            numeric = [f.name for f in schema if not pa.types.is_string(f.type)
                       and not pa.types.is_list(f.type)]
            self._tmp[kind] = tmp
            self._writers[kind] = pq.ParquetWriter(str(tmp), schema, compression="lz4",
                                                   write_statistics=numeric)
            self._pending[kind], self._rows[kind] = [], 0

    def add(self, kind: TableKind, table: pa.Table) -> None:
        """Append a table (rows already in game-id order) to ``kind`` (games or events)."""
        self._pending[kind].append(table)
        self._rows[kind] += table.num_rows
        while self._rows[kind] >= ROW_GROUP:
            merged = pa.concat_tables(self._pending[kind])
            self._writers[kind].write_table(merged.slice(0, ROW_GROUP),
                                            row_group_size=ROW_GROUP)
            rest = merged.slice(ROW_GROUP)
            # copy the remainder so the written row group's buffers can be freed
            rest = pa.concat_tables([rest]).combine_chunks() if rest.num_rows else rest
            self._pending[kind], self._rows[kind] = [rest], rest.num_rows

    def add_batch_files(self, run_dir: Path, run_id: str, key: str) -> None:
        for kind in TABLE_KINDS:
            path = batch_path(run_dir, run_id, key, kind)
            try:
                table = read_batch(path)
            except pa.ArrowException as e:  # damaged in the middle: the footer was whole
                raise RunFolderError(path, f"{path} is damaged ({type(e).__name__}: {e}); "
                                     "delete it and resume the run: its games are played "
                                     "again") from None
            # a batch written before a later column existed gets it as missing values
            table = conform(table, kind)
            if not table.schema.equals(SCHEMAS[kind]):
                raise RunFolderError(path, f"{path} is not a {kind} batch (its columns "
                                     "differ); delete it and resume the run: its games are "
                                     "played again")
            self.add(kind, table)

    def commit(self) -> None:
        for kind, writer in self._writers.items():
            if self._rows[kind]:
                writer.write_table(pa.concat_tables(self._pending[kind]),
                                   row_group_size=ROW_GROUP)
            writer.close()
        self._pending.clear()
        self._stack.close()  # renames both files into place

    def abort(self) -> None:
        for writer in self._writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        with contextlib.suppress(_Abort):
            self._stack.__exit__(_Abort, _Abort(), None)  # removes the temporary files


class _Abort(Exception):
    pass


def merge_batches(run_dir: Path, run_id: str, keys: Sequence[str]) -> None:
    """Concatenate the batch files ``keys`` (in the order given: by ruleset, pairing and deal)
    into games.parquet and events.parquet, reading one batch at a time."""
    merger = TableMerger(run_dir)
    try:
        for key in keys:
            merger.add_batch_files(run_dir, run_id, key)
        merger.commit()
    except BaseException:
        merger.abort()
        raise


def split_merged(run_dir: Path, run_id: str, groups: int, pairings: int,
                 key_for: Callable[[int, int], str]) -> None:
    """Turn the merged tables back into one batch file per (ruleset, pairing) before a
    top-up (the batch files of merged runs are deleted), reading one row group at a time.
    A row's ruleset and pairing follow from its game id (see ``batches.game_id``)."""
    for kind, schema in SCHEMAS.items():
        source = pq.ParquetFile(table_path(run_dir, kind))
        with contextlib.ExitStack() as stack:
            writers: dict[tuple[int, int], Any] = {}
            for i in range(source.num_row_groups):
                # a table merged before a later column existed: the column as missing
                table = conform(source.read_row_group(i), kind)
                unit = table.column("game_id").to_numpy() // 2
                pair = unit % pairings
                rule = (unit // pairings) % groups
                for r in range(groups):
                    for p in range(pairings):
                        mask = (rule == r) & (pair == p)
                        if not mask.any():
                            continue
                        if (r, p) not in writers:
                            path = batch_path(run_dir, run_id, key_for(r, p), kind)
                            tmp = stack.enter_context(atomic_path(path,
                                                                  suffix=f".{BATCH_SUFFIX}"))
                            sink = stack.enter_context(pa.OSFile(str(tmp), "wb"))
                            writers[(r, p)] = stack.enter_context(pa.ipc.new_file(
                                sink, schema,
                                options=pa.ipc.IpcWriteOptions(compression="lz4")))
                        writers[(r, p)].write_table(table.filter(pa.array(mask)))


def clear_batches(run_dir: Path) -> None:
    """Remove the batch files (once merged, they hold nothing the tables do not)."""
    shutil.rmtree(Path(run_dir) / BATCHES, ignore_errors=True)


def load_games(run_dir: str | Path) -> pd.DataFrame:
    """A run's games table, whole, as a DataFrame (pyarrow imports pandas on first use)."""
    return pq.read_table(table_path(Path(run_dir), "games")).to_pandas()


def load_events(run_dir: str | Path) -> pd.DataFrame:
    """A run's events table, whole, as a DataFrame."""
    return pq.read_table(table_path(Path(run_dir), "events")).to_pandas()
