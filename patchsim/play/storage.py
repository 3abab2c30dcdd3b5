"""A run folder on disk: the manifest, the batch files the workers write, and the merged
Parquet tables (schemas, atomic writes, the merge, loading)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import joblib
import numba
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from patchsim._version import __version__
from patchsim.engine.ruleset import RulesetError
from patchsim.play.config import RunConfig, RunError

MANIFEST = "manifest.json"

_I8, _I32, _I64, _STR, _BOOL = pa.int8(), pa.int32(), pa.int64(), pa.string(), pa.bool_()
GAMES_SCHEMA = pa.schema([
    ("run_id", _STR), ("ruleset", _STR), ("ruleset_hash", _STR), ("game_id", _I64),
    ("deal", _I64), ("deal_seed", _I64), ("pairing", _STR), ("order", _I8), ("bot0", _STR),
    ("bot1", _STR), ("winner", _I8), ("winner_bot", _STR), ("tie_break", _BOOL),
    ("score0", _I32), ("score1", _I32), ("buttons0", _I32), ("buttons1", _I32),
    ("empty0", _I32), ("empty1", _I32), ("position0", _I32), ("position1", _I32),
    ("bonus0", _BOOL), ("bonus1", _BOOL), ("first_to_end", _I8), ("passes0", _I32),
    ("passes1", _I32), ("buys0", _I32), ("buys1", _I32), ("leather0", _I32),
    ("leather1", _I32), ("plies", _I32), ("moves", pa.list_(_I32)),
])
EVENTS_SCHEMA = pa.schema([
    ("run_id", _STR), ("ruleset", _STR), ("game_id", _I64), ("seq", _I32), ("event", _STR),
    ("seat", _I8), ("bot", _STR), ("position", _I32), ("patch", _STR), ("cost", _I32),
    ("buttons_before", _I32), ("amount", _I32), ("squares", _STR), ("filled_hole", _BOOL),
    ("opp_position", _I32), ("score_lead", _I32),
])
ROW_GROUP = 65536  # fixed row-group size: the merged files do not depend on the batch size


BATCH_SUFFIX = "arrow"  # batch files: Arrow IPC with lz4, far cheaper to write than Parquet


def batch_path(run_dir: Path, key: str, kind: str) -> Path:
    return run_dir / "batches" / f"{key}.{kind}.{BATCH_SUFFIX}"


def write_batch(table: pa.Table, path: Path) -> None:
    """Write a batch file to a temporary name in the same folder, then rename it."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=f".{BATCH_SUFFIX}", dir=path.parent)
    os.close(fd)
    try:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(
                sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as w:
            w.write_table(table)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_batch(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def atomic_write_text(text: str, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def versions() -> dict[str, str]:
    return {"patchsim": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__, "pandas": pd.__version__,
            "pyarrow": pa.__version__, "joblib": joblib.__version__}


def new_run_dir(config: RunConfig, out: str | Path | None) -> Path:
    if out is not None:
        return Path(out)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("reports") / config.name.replace("/", "-") / f"{stamp}-s{config.seed}"


def check_writable(run_dir: Path) -> None:
    try:
        (run_dir / "batches").mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise RunError(f"cannot write to the output folder {run_dir}: {e.strerror}") from None


def read_manifest(run_dir: Path) -> tuple[dict[str, Any], RunConfig]:
    """A run folder's manifest and configuration; RunError if it is missing or damaged."""
    path = Path(run_dir) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        return manifest, RunConfig.from_manifest(manifest["config"])
    except FileNotFoundError:
        raise RunError(f"{run_dir} is not a run folder (no {MANIFEST})") from None
    except (OSError, ValueError, KeyError, TypeError, RulesetError) as e:
        raise RunError(f"{path} is damaged or not a patchsim manifest ({type(e).__name__}: "
                       f"{e}); start a new run with another --out") from None


def merge_batches(run_dir: Path, keys: Sequence[str]) -> None:
    """Concatenate the batch files ``keys`` (in the order given: by ruleset, pairing and deal)
    into games.parquet and events.parquet, in row groups of a fixed size, reading one batch
    at a time: the files are the same whatever the batch size, and memory stays flat."""
    for kind, schema in (("games", GAMES_SCHEMA), ("events", EVENTS_SCHEMA)):
        target = run_dir / f"{kind}.parquet"
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=run_dir)
        os.close(fd)
        # lz4 and no min/max statistics on text columns: the merge is the serial part of a
        # parallel run, and this halves its cost at the same file size
        numeric = [f.name for f in schema if not pa.types.is_string(f.type)
                   and not pa.types.is_list(f.type)]
        writer = pq.ParquetWriter(tmp, schema, compression="lz4", write_statistics=numeric)
        try:
            pending: list[pa.Table] = []
            rows = 0
            for key in keys:
                # batch rows are already in game-id (and event) order: see _tables
                table = read_batch(batch_path(run_dir, key, kind))
                pending.append(table)
                rows += table.num_rows
                while rows >= ROW_GROUP:
                    merged = pa.concat_tables(pending)
                    writer.write_table(merged.slice(0, ROW_GROUP), row_group_size=ROW_GROUP)
                    rest = merged.slice(ROW_GROUP)
                    pending, rows = [rest], rest.num_rows
            if rows:
                writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP)
            writer.close()
            os.replace(tmp, target)
        finally:
            writer.close()
            if os.path.exists(tmp):
                os.unlink(tmp)


def clear_batches(run_dir: Path) -> None:
    shutil.rmtree(Path(run_dir) / "batches", ignore_errors=True)


def load_games(run_dir: str | Path) -> pd.DataFrame:
    return pd.read_parquet(Path(run_dir) / "games.parquet")


def load_events(run_dir: str | Path) -> pd.DataFrame:
    return pd.read_parquet(Path(run_dir) / "events.parquet")
