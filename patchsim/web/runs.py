"""The run folders a server shows: finding them below the folders it was given, each one's
summary for the listing, and the files in it a page may open. Their games tables are
:mod:`patchsim.web.games`; the paths a request may name, :mod:`patchsim.web.paths`; game
records, :mod:`patchsim.web.records`.

Paths from requests are never joined blindly: a run is named by an id the index made (a hash
of its resolved path), and a file in it by a relative path that :func:`inside` resolves
(symlinks included) and refuses unless it stays inside the run folder. What a served ruleset
file names in turn (``extends``, a patch table) is loaded with the served folders as the
loader's ``allowed_roots``, so that no file elsewhere is read, and no message quotes a file.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchsim.engine.ruleset import Ruleset
from patchsim.errors import quote
from patchsim.play.runfolder import (
    MANIFEST,
    TUNE_MD,
    TUNE_ROUNDS,
    RunFolder,
    RunFolderError,
    inspect_run,
)
from patchsim.web.games import GameTables
from patchsim.web.paths import (
    SKIP_DIRS,
    FolderError,
    WebError,
    check_folders,
    files_in,
    inside,
    too_deep,
)
from patchsim.web.records import MAX_RECORD_BYTES, load_record_file, parse_record, record_view

log = logging.getLogger("patchsim.web")

# what the server's pages import from here (the names lived here before the split)
__all__ = ["MAX_RECORD_BYTES", "FolderError", "RunIndex", "ServedRun", "WebError",
           "check_folders", "inside", "load_record_file", "open_run", "parse_record",
           "record_view", "run_id", "too_deep"]

SCAN_DEPTH = 4  # how deep below a given folder run folders are looked for
TUNER_DIRS = ("candidates", "finalists")  # the tuner's own runs, one per candidate ruleset
TUNER_FILES = (TUNE_MD, TUNE_ROUNDS)


# --- run folders ----------------------------------------------------------------------------------
@dataclass
class ServedRun:
    """One run folder: its id, where it is, and either what it holds or why it cannot be
    shown (``error``)."""

    id: str
    path: Path
    label: str
    error: str | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    rulesets: dict[str, Ruleset] = field(default_factory=dict)
    games_total: int = 0

    def summary(self) -> dict[str, Any]:
        # a manifest is data from a file: every field is checked, a damaged one shows as empty
        cfg = self.manifest.get("config") if self.manifest else None
        cfg = cfg if isinstance(cfg, dict) else {}
        listed = cfg.get("rulesets")
        bots = cfg.get("bots")
        finished = self.manifest.get("finished") if self.manifest else None
        return {
            "id": self.id,
            "label": self.label,
            "path": str(self.path),
            "error": self.error,
            "name": cfg.get("name") if isinstance(cfg.get("name"), str) else None,
            "rulesets": list(self.rulesets) or [
                r["name"] for r in (listed if isinstance(listed, list) else [])
                if isinstance(r, dict) and isinstance(r.get("name"), str)],
            "bots": [b for b in bots if isinstance(b, str)] if isinstance(bots, list) else [],
            "games": self.games_total,
            "complete": bool(self.manifest.get("complete")) if self.manifest else False,
            "finished": finished if isinstance(finished, str) else None,
            "reports": RunFolder(self.path).documents(),
        }


def run_id(path: Path) -> str:
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]


def open_run(path: Path, label: str) -> ServedRun:
    """Read a run folder's manifest and rules and check that its games table opens, with the
    one run-folder reader (:func:`patchsim.play.runfolder.inspect_run`: the checks and the
    messages of report and resume); a problem becomes ``error``, never an exception."""
    run = ServedRun(run_id(path), path.resolve(), label)
    try:
        # the tables' digests are checked when their games are asked for (see games()),
        # not on every scan of the folders
        head = inspect_run(path, verify_tables=False)
    except RunFolderError as e:
        run.error = str(e)
        run.manifest = e.manifest or {}
        total = run.manifest.get("games_total")
        # a manifest is data from a file: a damaged count shows as none
        run.games_total = total if type(total) is int and total >= 0 else 0
        return run
    run.manifest, run.rulesets, run.games_total = head.manifest, head.rulesets, head.games_total
    return run


class RunIndex(GameTables):
    """The run folders below the folders a server was given, found again on every
    :meth:`scan` (cheap: a walk and a manifest read per run), with each run's games table
    cached until the file changes (:class:`~patchsim.web.games.GameTables`)."""

    def __init__(self, roots: list[Path]) -> None:
        super().__init__()
        self.roots = [Path(r) for r in roots]
        self.runs: dict[str, ServedRun] = {}
        self.problems: list[str] = []
        self._logged: set[str] = set()

    def scan(self) -> list[ServedRun]:
        found: dict[str, ServedRun] = {}
        problems: list[str] = []
        for root in self.roots:
            if not root.exists():
                problems.append(f"{root}: no such folder")
                continue
            if not root.is_dir():
                problems.append(f"{root}: not a folder (give run folders, or folders that "
                                "hold them)")
                continue
            top = root.resolve()
            for folder, dirs, names in os.walk(top):
                rel = Path(folder).relative_to(top)
                label = (Path(top.name) / rel).as_posix() if rel.parts else top.name
                if MANIFEST in names:
                    run = open_run(Path(folder), label)
                    found.setdefault(run.id, run)
                # a folder with a report may hold newer runs of the same study below it
                # (reports/<name>/<time>-s<seed>), so the walk goes on; a tuner's candidate
                # runs are its working material, shown by its own report
                tuner = any(n in names for n in TUNER_FILES)
                dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                                 and d not in SKIP_DIRS and len(rel.parts) < SCAN_DEPTH
                                 and not (tuner and d in TUNER_DIRS)
                                 and not _tuner_folder(Path(folder) / d))
        with self._lock:
            self.runs = dict(sorted(found.items(), key=lambda kv: kv[1].label))
            self.problems = problems
            for msg in problems + [r.error for r in found.values() if r.error]:
                if msg not in self._logged:  # each problem once in the log, not per request
                    self._logged.add(msg)
                    log.warning("%s", msg)
        return list(self.runs.values())

    @property
    def allowed_roots(self) -> list[Path]:
        """The folders files may be read from (the served ones, resolved)."""
        return [r.resolve() for r in self.roots if r.is_dir()]

    def get(self, rid: str, loaded: bool = True) -> ServedRun:
        """The run with this id; WebError 404 if there is none, and 409 with its problem if
        ``loaded`` and its games cannot be shown (its files can still be served)."""
        run = self.runs.get(rid)
        if run is None:
            self.scan()  # a run that appeared since the last look
            run = self.runs.get(rid)
        if run is None:
            raise WebError(404, f"no run {quote(rid)} (the runs are listed at /)")
        if run.error and loaded:
            raise WebError(409, run.error)
        return run

    # --- the games table --------------------------------------------------------------------------

    def ruleset_files(self) -> list[tuple[ServedRun, str]]:
        """YAML files in the run folders (rulesets a player may choose)."""
        out = []
        for run in self.runs.values():
            if run.path.is_dir():
                out += [(run, rel) for rel in files_in(run.path, (".yaml", ".yml"))]
        return out

    def record_files(self, run: ServedRun) -> list[str]:
        """JSON files in a run folder other than the manifest (game records, e.g. the record
        of a game a bot failed in)."""
        return files_in(run.path, (".json",))


def _tuner_folder(path: Path) -> bool:
    """Whether ``path`` is a tuner's folder of candidate runs (``candidates``/``finalists``
    holding folders named by a ruleset's 16-hex-digit content hash), even before the tuner
    wrote its report beside it."""
    if path.name not in TUNER_DIRS:
        return False
    try:
        subs = [p.name for p in path.iterdir() if p.is_dir()]
    except OSError:
        return False
    return bool(subs) and all(len(n) == 16 and all(c in "0123456789abcdef" for c in n)
                              for n in subs)
