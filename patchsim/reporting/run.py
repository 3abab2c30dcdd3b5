"""Reading a finished run folder for the report: ``load_run`` -> ``Run``, or
``ReportError`` naming the file at fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from patchsim.analysis.tables import (
    EventSummary,
    read_games,
    scan_events,
)
from patchsim.engine.ruleset import ruleset_from_dict
from patchsim.play.runfolder import EVENTS, GAMES, RunFolderError, open_run


class ReportError(ValueError):
    """A folder that cannot be reported on (not a run, unfinished, unreadable)."""


# --- loading ----------------------------------------------------------------------------------
@dataclass
class Run:
    """A finished run folder's games (without move lists: see ``tables.read_games``), a
    summary of its events (``tables.scan_events``: never every event in memory), manifest
    and rulesets (by name)."""

    run_dir: Path
    games: pd.DataFrame
    events: EventSummary
    manifest: dict[str, Any]
    rulesets: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. a manifest without digests

    @property
    def label(self) -> str:
        names = list(dict.fromkeys(self.games["ruleset"]))
        return " + ".join(names) if names else self.run_dir.name


def load_run(run_dir: str | Path) -> Run:
    """Read a finished run folder, checked (:func:`patchsim.play.runfolder.open_run`: not
    running, manifest and tables whole and unchanged); ReportError with a plain message
    naming the file at fault if it is not one. ``Run.notes``: what to tell (no digests)."""
    run_dir = Path(run_dir)
    notes: list[str] = []
    try:
        manifest = open_run(run_dir, notes)
    except RunFolderError as e:
        raise ReportError(str(e)) from None
    games_path = run_dir / GAMES
    try:
        games = read_games(run_dir)
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise ReportError(f"{games_path}: cannot read the table ({type(e).__name__}: {e}); "
                          "restore it from a copy of the run folder") from None
    try:
        events = scan_events(run_dir, games)
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise ReportError(f"{run_dir / EVENTS}: cannot read the table ({type(e).__name__}: "
                          f"{e}); restore it from a copy of the run folder") from None
    rulesets: dict[str, Any] = {}
    try:
        for r in manifest.get("config", {}).get("rulesets", []):
            rulesets[r["name"]] = ruleset_from_dict(r["rules"], source=f"manifest: {r['name']}")
    except Exception:  # noqa: BLE001 - old or hand-edited manifests: report without rules data
        rulesets = {}
    return Run(run_dir, games, events, manifest, rulesets, notes)

