"""The run folder, in one package: what every file in it is called (:mod:`.names`), the
tables' columns (:mod:`.schemas`), the manifest's digests (:mod:`.digests`) and checks
(:mod:`.checks`), the errors (:mod:`.errors`), the writing of a run (:mod:`.storage`: lock,
batches, merge), the stopping record (:mod:`.stopping`) and the reading (:mod:`.reader`,
:class:`RunFolder`).

``RunFolder.open(path)`` is the way in for a caller that reads a finished run: its manifest,
configuration, games, event summary, stopping record and prices study, and one way to write
a document into it. A new study's files are named in :mod:`.names` and read here.

The runner's worker processes import this package to write their batches and must not load
pandas: :class:`RunFolder`, :func:`read_run` and the reader's types (which need pandas) are
imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from patchsim.play.runfolder.checks import (
    RUN_LEFTOVERS,
    WRITE_PROBE,
    FolderCheck,
    check_finished,
    check_folder,
    check_not_running,
    check_output_folder,
    clean_partials,
    load_manifest,
    read_manifest,
    running,
    same_experiment,
)
from patchsim.play.runfolder.digests import (
    NO_DIGEST_NOTE,
    check_settings,
    file_digest,
    settings_digests,
    stamp_digests,
)
from patchsim.play.runfolder.errors import RunFolderBusy, RunFolderError, RunNotFinished
from patchsim.play.runfolder.names import (
    BATCH_SUFFIX,
    BATCHES,
    DOCUMENTS,
    EVENTS,
    FAILED_GAME,
    FIGURES,
    GAMES,
    LADDER_MD,
    LATER_GAME_COLUMNS,
    LOCK,
    MANIFEST,
    PRICE_COLUMNS,
    PRICES_FOLDER,
    PRICES_STUDY,
    PRICES_SUMMARY,
    PRICES_TABLE,
    REPORT_HTML,
    REPORT_MD,
    SKILL_CHANGES,
    SKILL_DIVERSITY,
    SKILL_DOCUMENT,
    SKILL_DUEL_DEALS,
    SKILL_DUELS,
    SKILL_LEVEL_DEALS,
    SKILL_LEVELS,
    SKILL_STUDY,
    STOPPING_FILE,
    SWEEP_HTML,
    SWEEP_MD,
    SWEEP_SKILL,
    SWEEP_TABLE,
    TABLE_KINDS,
    TABLES,
    TUNE_FINALISTS,
    TUNE_MD,
    TUNE_ROUNDS,
    PriceRow,
    TableKind,
)
from patchsim.play.runfolder.schemas import (
    EVENTS_SCHEMA,
    GAMES_SCHEMA,
    LATER_COLUMNS,
    SCHEMAS,
    check_batch,
    check_table,
    conform,
    required,
    table_path,
)
from patchsim.play.runfolder.stopping import (
    Decided,
    Decision,
    StoppingRecord,
    read_stopping,
    write_stopping,
)
from patchsim.play.runfolder.storage import (
    DISK_BYTES_PER_GAME,
    ROW_GROUP,
    RunLock,
    TableMerger,
    atomic_write_text,
    batch_path,
    check_disk,
    check_writable,
    clear_batches,
    fresh_dir,
    load_events,
    load_games,
    merge_batches,
    new_run_dir,
    read_batch,
    size_text,
    split_merged,
    versions,
    write_batch,
)

if TYPE_CHECKING:
    from patchsim.play.runfolder.folder import RunFolder, read_run
    from patchsim.play.runfolder.reader import PricesStudy, Run, RunHeader, inspect_run, read_prices

# the reader's names, imported on first use (they need pandas): name -> module
_LAZY = {"RunFolder": "folder", "read_run": "folder", "PricesStudy": "reader", "Run": "reader",
         "RunHeader": "reader", "inspect_run": "reader", "read_prices": "reader"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EVENTS_SCHEMA", "GAMES_SCHEMA", "LATER_COLUMNS", "NO_DIGEST_NOTE", "RUN_LEFTOVERS",
    "SCHEMAS", "WRITE_PROBE", "FolderCheck", "PricesStudy", "Run", "RunFolder",
    "Decided", "Decision", "RunFolderBusy", "RunFolderError", "RunHeader", "RunNotFinished",
    "StoppingRecord",
    "check_batch", "check_table", "check_finished", "check_folder", "check_not_running",
    "check_output_folder", "check_settings", "clean_partials", "conform", "file_digest",
    "inspect_run", "load_manifest", "read_manifest", "read_prices", "read_run",
    "read_stopping", "required", "running", "same_experiment", "settings_digests",
    "stamp_digests", "table_path", "write_stopping",
    "DISK_BYTES_PER_GAME", "ROW_GROUP", "RunLock", "TableMerger", "atomic_write_text",
    "batch_path", "check_disk", "check_writable", "clear_batches", "fresh_dir", "load_events",
    "load_games", "merge_batches", "new_run_dir", "read_batch", "size_text", "split_merged",
    "versions", "write_batch",
    # the names of the folder's files
    "BATCHES", "BATCH_SUFFIX", "DOCUMENTS", "EVENTS", "FAILED_GAME", "FIGURES", "GAMES",
    "LADDER_MD", "LATER_GAME_COLUMNS", "LOCK", "MANIFEST", "PRICES_FOLDER", "PRICES_STUDY",
    "PRICES_SUMMARY", "PRICES_TABLE", "PRICE_COLUMNS", "PriceRow", "REPORT_HTML", "REPORT_MD",
    "SKILL_CHANGES", "SKILL_DIVERSITY", "SKILL_DOCUMENT", "SKILL_DUELS", "SKILL_DUEL_DEALS",
    "SKILL_LEVELS", "SKILL_LEVEL_DEALS", "SKILL_STUDY", "STOPPING_FILE", "SWEEP_HTML",
    "SWEEP_MD", "SWEEP_SKILL", "SWEEP_TABLE", "TABLE_KINDS", "TABLES", "TUNE_FINALISTS", "TUNE_MD",
    "TUNE_ROUNDS", "TableKind",
]
