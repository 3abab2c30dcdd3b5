"""The one reader of a finished run folder, behind :class:`~patchsim.play.runfolder.RunFolder`
(the report, the web app, sweeps and the command line): :func:`inspect_run` checks a folder
without loading the tables (the web app's listing gets a :class:`RunHeader`); a
:class:`Run` is what a report reads (manifest, configuration, rulesets, games, event
summary and the studies stored in the folder); :func:`read_prices` the prices study.

It and :meth:`RunFolder.open` check the folder the same way and refuse with the same
one-paragraph messages (:class:`~patchsim.play.runfolder.errors.RunFolderError` and its
kinds, which carry the path and, where it could be read, the manifest): not a run folder,
still running, manifest damaged or edited, not finished or a report without its tables,
tables missing, damaged or changed.

This module needs pandas and the statistics' table readers, which the runner's worker
processes (importing the package to write their batches) must not load: the package's
front door imports it only when asked for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from patchsim.analysis.tables import EventSummary
from patchsim.engine.ruleset import Ruleset
from patchsim.play.config import RunConfig
from patchsim.play.runfolder.checks import check_finished, check_not_running, read_manifest
from patchsim.play.runfolder.errors import RunFolderError
from patchsim.play.runfolder.names import (
    PRICE_COLUMNS,
    PRICES_FOLDER,
    PRICES_STUDY,
    PRICES_SUMMARY,
    TABLE_KINDS,
)
from patchsim.play.runfolder.schemas import check_table, table_path


@dataclass
class PricesStudy:
    """A prices study stored in a run folder (``prices/``): one row per patch (at least the
    columns of :class:`patchsim.play.runfolder.names.PriceRow`) and what it measured
    (``header``: ruleset, ruleset_hash, bot, games, seed; empty when not recorded).
    ``problem``: why it could not be read (then ``rows`` is empty)."""

    folder: Path
    rows: pd.DataFrame
    header: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None


@dataclass
class RunHeader:
    """A finished run folder as checked, without its tables loaded: manifest, configuration,
    rulesets by name, the games stored (from the table's footer) and notes to tell."""

    run_dir: Path
    manifest: dict[str, Any]
    config: RunConfig
    rulesets: dict[str, Ruleset]
    games_total: int
    notes: list[str] = field(default_factory=list)


@dataclass
class Run:
    """A finished run folder's games (without move lists: see ``tables.read_games``), a
    summary of its events (``tables.scan_events``: never every event in memory), manifest
    and rulesets (by name), with the configuration and the studies stored beside them."""

    run_dir: Path
    games: pd.DataFrame
    events: EventSummary
    manifest: dict[str, Any]
    rulesets: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. a manifest without digests
    config: RunConfig | None = None
    prices: PricesStudy | None = None

    @property
    def label(self) -> str:
        names = list(dict.fromkeys(self.games["ruleset"]))
        return " + ".join(names) if names else self.run_dir.name


def inspect_run(run_dir: str | Path, *, verify_tables: bool = True) -> RunHeader:
    """Check a run folder for reading: no run holds it, its manifest is whole and unedited
    (structure and digests), the run finished and its games table is there; with
    ``verify_tables`` both tables are also checked whole, with the run's columns and the
    files the run wrote (their sha256: a read of every byte); without, the games table's
    footer and columns only. RunFolderError naming the
    file at fault otherwise, with ``manifest`` set when the manifest could be read."""
    run_dir = Path(run_dir)
    check_not_running(run_dir, "reading it")
    notes: list[str] = []
    manifest, config = read_manifest(run_dir, notes)
    try:
        check_finished(run_dir, manifest)
        if verify_tables:
            for kind in TABLE_KINDS:
                check_table(run_dir, kind, manifest)
        else:  # the games table opens with the run's columns (its footer: cheap)
            check_table(run_dir, "games")
        games_total = pq.ParquetFile(table_path(run_dir, "games")).metadata.num_rows
    except RunFolderError as e:
        e.manifest = manifest
        raise
    # the manifest's names (which the tables' ruleset column holds), its rules as checked
    names = [r["name"] for r in manifest["config"]["rulesets"]]
    rulesets = dict(zip(names, config.rulesets, strict=True))
    return RunHeader(run_dir, manifest, config, rulesets, games_total, notes)


def read_prices(run_dir: str | Path) -> PricesStudy | None:
    """The prices study stored in a run folder (``prices/patches.csv`` and
    ``prices/study.json``), None when there is none; one that cannot be read, or lacks a
    column a report shows, comes back with its ``problem`` (the run itself is still good)."""
    folder = Path(run_dir) / PRICES_FOLDER
    path = folder / PRICES_SUMMARY
    if not path.exists():
        return None
    try:
        rows = pd.read_csv(path)
        header_path = folder / PRICES_STUDY
        header = (json.loads(header_path.read_text(encoding="utf-8"))
                  if header_path.exists() else {})
    except (OSError, ValueError) as e:
        return PricesStudy(folder, pd.DataFrame(), problem=f"The prices study in {folder} "
                           f"could not be read: {e}")
    missing = [c for c in PRICE_COLUMNS if c not in rows.columns]
    if missing:
        return PricesStudy(folder, pd.DataFrame(), problem=f"The prices study in {folder} "
                           f"could not be read: {path.name} lacks the column(s) "
                           f"{', '.join(missing)}")
    if not isinstance(header, dict):
        return PricesStudy(folder, pd.DataFrame(), problem=f"The prices study in {folder} "
                           f"could not be read: {PRICES_STUDY} is not a mapping")
    return PricesStudy(folder, rows, header)
