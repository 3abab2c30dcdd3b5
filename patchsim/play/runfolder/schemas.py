"""A run folder's two tables: their columns (Arrow schemas), the later columns an older table
may lack, and the checks that a stored table or a batch file is one the run wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from patchsim.play.runfolder.digests import file_digest, recorded_digests
from patchsim.play.runfolder.errors import RunFolderError, first_line
from patchsim.play.runfolder.names import (
    BATCHES,
    EVENTS,
    GAMES,
    LATER_GAME_COLUMNS,
    MANIFEST,
    TableKind,
)

_I8, _I32, _I64, _STR, _BOOL = pa.int8(), pa.int32(), pa.int64(), pa.string(), pa.bool_()
GAMES_SCHEMA = pa.schema([
    ("run_id", _STR), ("ruleset", _STR), ("ruleset_hash", _STR), ("game_id", _I64),
    ("deal", _I64), ("deal_seed", _I64), ("pairing", _STR), ("order", _I8), ("bot0", _STR),
    ("bot1", _STR), ("winner", _I8), ("winner_bot", _STR), ("tie_break", _BOOL),
    ("score0", _I32), ("score1", _I32), ("buttons0", _I32), ("buttons1", _I32),
    ("empty0", _I32), ("empty1", _I32), ("position0", _I32), ("position1", _I32),
    ("bonus0", _BOOL), ("bonus1", _BOOL), ("first_to_end", _I8), ("passes0", _I32),
    ("passes1", _I32), ("buys0", _I32), ("buys1", _I32), ("leather0", _I32),
    ("leather1", _I32), ("holes0", _I32), ("holes1", _I32), ("plies", _I32),
    ("moves", pa.list_(_I32)),
])
EVENTS_SCHEMA = pa.schema([
    ("run_id", _STR), ("ruleset", _STR), ("game_id", _I64), ("seq", _I32), ("event", _STR),
    ("seat", _I8), ("bot", _STR), ("position", _I32), ("patch", _STR), ("cost", _I32),
    ("buttons_before", _I32), ("amount", _I32), ("squares", _STR), ("filled_hole", _BOOL),
    ("opp_position", _I32), ("score_lead", _I32),
])
SCHEMAS: dict[TableKind, pa.Schema] = {"games": GAMES_SCHEMA, "events": EVENTS_SCHEMA}
# columns a table may lack (written before they existed): per kind
LATER_COLUMNS: dict[TableKind, frozenset[str]] = {"games": frozenset(LATER_GAME_COLUMNS),
                                                  "events": frozenset()}


def required(kind: TableKind) -> list[pa.Field]:
    """The columns every stored ``kind`` table has, whenever it was written."""
    return [f for f in SCHEMAS[kind] if f.name not in LATER_COLUMNS[kind]]


def _columns_fit(schema: pa.Schema, kind: TableKind) -> bool:
    """``schema`` has every required column of ``kind`` and the later ones it has in their
    types."""
    return all(f.name in schema.names and schema.field(f.name).type.equals(f.type)
               for f in required(kind)) and all(
        schema.field(f.name).type.equals(f.type) for f in SCHEMAS[kind]
        if f.name in LATER_COLUMNS[kind] and f.name in schema.names)


def conform(table: pa.Table, kind: TableKind) -> pa.Table:
    """``table`` with the later columns it lacks added as missing values (null), in the
    schema's order: an older batch or merged table joins a newer one this way. Columns it
    has are kept as they are (a table that differs otherwise still fails the caller's
    check)."""
    schema = SCHEMAS[kind]
    absent = [f for f in schema if f.name in LATER_COLUMNS[kind]
              and f.name not in table.column_names]
    if not absent or not all(f.name in table.column_names for f in required(kind)):
        return table
    arrays = [table.column(f.name) if f.name in table.column_names
              else pa.nulls(table.num_rows, f.type) for f in schema]
    extra = [n for n in table.column_names if n not in schema.names]
    return pa.Table.from_arrays(arrays + [table.column(n) for n in extra],
                                names=schema.names + extra)


def table_path(run_dir: Path, kind: TableKind) -> Path:
    """games.parquet or events.parquet (``kind``: games or events) of a run folder."""
    return Path(run_dir) / {"games": GAMES, "events": EVENTS}[kind]


def check_table(run_dir: Path, kind: TableKind, manifest: dict[str, Any] | None = None) -> None:
    """Check that a stored table opens, has the run's columns and, when the manifest records
    its digest, is the file the run wrote; RunFolderError naming the file otherwise."""
    path = table_path(run_dir, kind)
    try:
        schema = pq.ParquetFile(path).schema_arrow
    except FileNotFoundError:
        raise RunFolderError(path, f"{path} is missing: the run's tables are incomplete; "
                             f"{_what_to_do(run_dir)}") from None
    except (OSError, pa.ArrowException) as e:
        raise RunFolderError(path, f"{path} is damaged ({first_line(e)}); "
                             f"{_what_to_do(run_dir)}") from None
    _check_schema(path, schema, SCHEMAS[kind], run_dir)
    d = recorded_digests(manifest, run_dir / MANIFEST) if manifest is not None else None
    recorded = (d or {}).get("tables", {}).get(path.name)
    if recorded is not None and file_digest(path) != recorded:
        raise RunFolderError(path, f"{path} is not the table the run wrote (its sha256 "
                             f"differs from the one in {MANIFEST}); "
                             f"{_what_to_do(run_dir)}")


def _check_schema(path: Path, schema: pa.Schema, expected: pa.Schema, run_dir: Path) -> None:
    kind = next(k for k, s in SCHEMAS.items() if s is expected)
    # a table written before a later column existed lacks it: readers fill it as missing
    missing = [f.name for f in expected if f.name not in schema.names
               and f.name not in LATER_COLUMNS[kind]]
    if missing:
        other = next((k for k, s in SCHEMAS.items() if s is not expected
                      and set(s.names) <= set(schema.names)), None)
        what = f"it holds the {other} table" if other else \
            f"it lacks the column(s) {', '.join(missing[:5])}"
        raise RunFolderError(path, f"{path} is not a {path.name.split('.')[0]} table "
                             f"({what}); {_what_to_do(run_dir)}")
    for f in expected:
        if f.name in schema.names and not schema.field(f.name).type.equals(f.type):
            raise RunFolderError(path, f"{path}: column {f.name} has type "
                                 f"{schema.field(f.name).type}, not {f.type}; "
                                 f"{_what_to_do(run_dir)}")


def _what_to_do(run_dir: Path) -> str:
    batches = Path(run_dir) / BATCHES
    if batches.is_dir() and any(batches.iterdir()):
        return ("restore it from a copy, or delete it and resume the run (its batch files "
                "are still there)")
    return "restore it from a copy of the run folder, or play the run again in a new folder"


def check_batch(path: Path, kind: TableKind) -> None:
    """Check a batch file (Arrow IPC) opens with the run's columns; RunFolderError naming
    the file and what to do otherwise."""
    try:
        with pa.memory_map(str(path)) as source:
            schema = pa.ipc.open_file(source).schema  # the footer: a cut file has none
    except (OSError, pa.ArrowException) as e:
        raise RunFolderError(path, f"{path} is damaged ({first_line(e)}); delete it and "
                             "resume the run: its games are played again") from None
    if not _columns_fit(schema, kind):
        raise RunFolderError(path, f"{path} is not a {kind} batch (its columns differ); "
                             "delete it and resume the run: its games are played again")

