"""The run folders a server shows: finding them, reading their games tables, filtering
games, replaying one game, and serving a run's files without ever leaving its folder.

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
import posixpath
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from patchsim.analysis.selfplay import DISTINCT_NOTE, duplicated_pairings
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game, IllegalMoveError, rules_reference
from patchsim.engine.record import GameRecord, RecordError
from patchsim.engine.ruleset import Ruleset, shipped_rulesets
from patchsim.engine.view import replay_positions, ruleset_info
from patchsim.errors import PatchsimError
from patchsim.play.runfolder import (
    BATCHES,
    DOCUMENTS,
    EVENTS,
    FIGURES,
    GAMES,
    MANIFEST,
    RunFolderError,
    check_table,
    inspect_run,
)
from patchsim.play.runfolder.names import TUNE_MD, TUNE_ROUNDS

log = logging.getLogger("patchsim.web")

SCAN_DEPTH = 4  # how deep below a given folder run folders are looked for
SKIP_DIRS = {BATCHES, FIGURES, "__pycache__", "node_modules"}
TUNER_DIRS = ("candidates", "finalists")  # the tuner's own runs, one per candidate ruleset
TUNER_FILES = (TUNE_MD, TUNE_ROUNDS)
REPORT_FILES = DOCUMENTS
MAX_LIMIT = 500  # games per page of the table
MAX_RECORD_BYTES = 4_000_000


class WebError(PatchsimError):
    """A request the server refuses, with the HTTP status and a message for the page."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def too_deep(data: object, limit: int) -> bool:
    """Whether JSON data nests lists and objects more than ``limit`` levels deep (checked
    without recursion: copying or hashing such data later would overflow the stack)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (node.values() if isinstance(node, dict)
                                                   else node))
    return False


class FolderError(PatchsimError, ValueError):
    """A folder given to the server that cannot be used: ``what`` it is for ("run folder",
    "save folder"), its ``path`` and the ``reason``."""

    def __init__(self, what: str, path: Path, reason: str) -> None:
        super().__init__(f"{what} {path}: {reason}")
        self.what, self.path, self.reason = what, path, reason


def check_folders(roots: list[Path], save_dir: Path) -> None:
    """FolderError for a served root that is a file (a missing one is fine: runs may appear
    there later) or a save folder that cannot be one (a file, or below a file)."""
    for root in roots:
        if root.exists() and not root.is_dir():
            raise FolderError("run folder", root, "is a file, not a folder (give run "
                                                  "folders, or folders that hold them)")
    probe = save_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise FolderError("save folder", save_dir,
                          "is a file, not a folder" if probe == save_dir else
                          f"cannot be made: {probe} is a file")


# --- paths ----------------------------------------------------------------------------------------
def inside(base: Path, rel: str, what: str = "file") -> Path:
    """The existing regular file ``rel`` (a relative path with ``/``) inside the folder
    ``base``. WebError 403 for an absolute path, ``..``, a hidden name or a symlink that
    leads out of ``base``; 404 when there is no such file."""
    if not isinstance(rel, str) or not rel or "\x00" in rel or "\\" in rel:
        raise WebError(400, f"{what}: give a relative path inside the folder")
    parts = PurePosixPath(rel).parts
    if rel.startswith("/") or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise WebError(403, f"{what} {rel!r}: only files inside the folder are served "
                            "(no absolute paths, no '..')")
    if any(p.startswith(".") for p in parts):
        raise WebError(403, f"{what} {rel!r}: hidden files are not served")
    root = base.resolve()
    try:
        full = (root / rel).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise WebError(404, f"{what} {rel!r}: no such file") from None
    except (OSError, RuntimeError) as e:  # a symlink loop, a permission problem
        raise WebError(403, f"{what} {rel!r}: cannot be opened ({e})") from None
    if not full.is_relative_to(root):
        raise WebError(403, f"{what} {rel!r}: it leads out of the folder (a symlink); only "
                            "files inside the folder are served")
    if not full.is_file():
        raise WebError(404, f"{what} {rel!r}: not a file")
    return full


def _files(base: Path, suffixes: tuple[str, ...], depth: int = 2) -> list[str]:
    """Relative paths of the files with these suffixes in ``base`` and its sub-folders (up
    to ``depth`` levels; hidden names, batches and symlinks out of it skipped), sorted."""
    out = []
    root = base.resolve()
    for folder, dirs, names in os.walk(root):
        rel = Path(folder).relative_to(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS
                         and len(rel.parts) < depth - 1)
        for name in sorted(names):
            if name.startswith(".") or not name.endswith(suffixes) or name == MANIFEST:
                continue
            path = Path(folder) / name
            if path.resolve().is_relative_to(root):
                out.append((rel / name).as_posix())
    return out


# --- run folders ----------------------------------------------------------------------------------
@dataclass
class RunFolder:
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
            "reports": [f for f in REPORT_FILES if (self.path / f).is_file()],
        }


def run_id(path: Path) -> str:
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]


def open_run(path: Path, label: str) -> RunFolder:
    """Read a run folder's manifest and rules and check that its games table opens, with the
    one run-folder reader (:func:`patchsim.play.runfolder.inspect_run`: the checks and the
    messages of report and resume); a problem becomes ``error``, never an exception."""
    run = RunFolder(run_id(path), path.resolve(), label)
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


class RunIndex:
    """The run folders below the folders a server was given, found again on every
    :meth:`scan` (cheap: a walk and a manifest read per run), with each run's games table
    cached until the file changes."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [Path(r) for r in roots]
        self.runs: dict[str, RunFolder] = {}
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._logged: set[str] = set()
        self._tables: dict[str, tuple[float, pd.DataFrame, pd.DataFrame]] = {}
        self._views: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()

    def scan(self) -> list[RunFolder]:
        found: dict[str, RunFolder] = {}
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

    def get(self, rid: str, loaded: bool = True) -> RunFolder:
        """The run with this id; WebError 404 if there is none, and 409 with its problem if
        ``loaded`` and its games cannot be shown (its files can still be served)."""
        run = self.runs.get(rid)
        if run is None:
            self.scan()  # a run that appeared since the last look
            run = self.runs.get(rid)
        if run is None:
            raise WebError(404, f"no run {rid!r} (the runs are listed at /)")
        if run.error and loaded:
            raise WebError(409, run.error)
        return run

    # --- the games table --------------------------------------------------------------------------
    def games(self, run: RunFolder, listed_only: bool = True) -> pd.DataFrame:
        """The run's games without move lists, plus ``abs_margin`` (the winner's lead: the
        metric registry's name; the absolute score difference, 0 for a tie-break game),
        ``bonus`` (-1 nobody), ``claims0``/``claims1`` (leather claims from the events) and
        ``counted_once`` (deterministic self-play). ``listed_only``: without the identical
        copy of each deterministic self-play game, as the report counts them."""
        gpath = run.path / GAMES
        try:
            mtime = gpath.stat().st_mtime
        except OSError as e:
            raise WebError(409, f"{gpath}: {e.strerror}") from None
        cached = self._tables.get(run.id)
        if cached and cached[0] == mtime:
            return cached[1] if listed_only else cached[2]
        try:
            # whole, with the run's columns, and the file the run wrote (its digest)
            check_table(run.path, "games", run.manifest)
        except RunFolderError as e:
            log.warning("%s", e)
            raise WebError(409, str(e)) from None
        try:
            cols = [f.name for f in pq.read_schema(gpath) if f.name != "moves"]
            games = pq.read_table(gpath, columns=cols).to_pandas()
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
            msg = f"{gpath}: cannot read the games table ({type(e).__name__}: {e})"
            log.warning("%s", msg)
            raise WebError(409, msg) from None
        games["abs_margin"] = (games["score0"] - games["score1"]).abs()
        # deterministic self-play plays each deal's game twice, identically; the report
        # counts it once, and so does the table: the copy (seat order 1) is left out
        dup = duplicated_pairings(games)
        games["counted_once"] = games["pairing"].astype(str).isin(dup)
        games.attrs["duplicated_pairings"] = dup
        games["bonus"] = np.where(games["bonus0"], 0, np.where(games["bonus1"], 1, -1))
        claims = self._claims(run)
        for seat in (0, 1):
            col = f"claims{seat}"
            if claims is None:
                games[col] = -1  # unknown: no readable events table
            else:
                games[col] = games["game_id"].map(claims.get(seat, {})).fillna(0).astype(int)
        listed = games[~(games["counted_once"] & (games["order"] == 1))]
        listed.attrs["duplicated_pairings"] = games.attrs["duplicated_pairings"]
        self._tables[run.id] = (mtime, listed, games)
        return listed if listed_only else games

    def _claims(self, run: RunFolder) -> dict[int, dict[int, int]] | None:
        path = run.path / EVENTS
        try:
            check_table(run.path, "events", run.manifest)  # the file the run wrote
            t = pq.read_table(path, columns=["game_id", "seat"],
                              filters=[("event", "==", "leather_claim")])
        except Exception as e:  # noqa: BLE001 - missing or unreadable: the filter says so
            log.warning("%s: cannot read the leather claims (%s: %s)", path, type(e).__name__,
                        e)
            return None
        df = t.to_pandas()
        counts = df.groupby(["seat", "game_id"]).size()
        return {int(s): {int(g): int(n) for (_, g), n in part.items()}
                for s, part in counts.groupby(level=0)}

    def filter_options(self, run: RunFolder) -> dict[str, Any]:
        g = self.games(run)
        bots = sorted(set(g["bot0"]) | set(g["bot1"]))
        return {"rulesets": sorted(g["ruleset"].unique().tolist()),
                "pairings": sorted(g["pairing"].unique().tolist()), "bots": bots,
                "claims_known": bool(len(g) == 0 or (g["claims0"] >= 0).all())}

    def filter_games(self, run: RunFolder, query: dict[str, str]) -> dict[str, Any]:
        """The page of games that pass the filters in ``query`` (see :data:`FILTERS`);
        WebError 400 naming the parameter when one is malformed."""
        g = self.games(run)
        unknown = sorted(set(query) - set(FILTERS))
        if unknown:
            raise WebError(400, f"unknown parameter(s) {', '.join(unknown)}; the games table "
                                f"takes {', '.join(FILTERS)}")
        mask = np.ones(len(g), dtype=bool)
        if query.get("ruleset"):
            mask &= (g["ruleset"] == query["ruleset"]).to_numpy()
        if query.get("pairing"):
            mask &= (g["pairing"] == query["pairing"]).to_numpy()
        winner = query.get("winner", "")
        if winner in ("0", "1"):
            mask &= (g["winner"] == int(winner)).to_numpy()
        elif winner.startswith("bot:"):
            mask &= (g["winner_bot"] == winner[4:]).to_numpy()
        elif winner:
            raise WebError(400, f"winner={winner!r}: give 0, 1 or bot:<bot spec>")
        lo, hi = _int(query, "abs_margin_min"), _int(query, "abs_margin_max")
        if lo is not None:
            mask &= (g["abs_margin"] >= lo).to_numpy()
        if hi is not None:
            mask &= (g["abs_margin"] <= hi).to_numpy()
        bonus = query.get("bonus", "")
        if bonus in ("0", "1"):
            mask &= (g["bonus"] == int(bonus)).to_numpy()
        elif bonus == "none":
            mask &= (g["bonus"] == -1).to_numpy()
        elif bonus:
            raise WebError(400, f"bonus={bonus!r}: give 0, 1 or none")
        leather = query.get("leather", "")
        c0, c1 = g["claims0"].to_numpy(), g["claims1"].to_numpy()
        conditions = {"none": (c0 + c1) == 0, "more0": c0 > c1, "more1": c1 > c0,
                      "equal": c0 == c1, "some0": c0 > 0, "some1": c1 > 0}
        if leather in conditions:
            if (c0 < 0).any():
                raise WebError(409, f"{run.path / EVENTS} cannot be read, so games cannot be "
                                    "filtered by leather claims")
            mask &= conditions[leather]
        elif leather:
            raise WebError(400, f"leather={leather!r}: give one of {', '.join(conditions)}")
        sort = query.get("sort", "game_id")
        key = sort.lstrip("-")
        if key not in SORT_KEYS:
            raise WebError(400, f"sort={sort!r}: give one of {', '.join(SORT_KEYS)} (a '-' "
                                "in front sorts descending)")
        offset = _int(query, "offset") or 0
        limit = _int(query, "limit", 1, MAX_LIMIT)
        limit = 50 if limit is None else limit
        sub = g[mask].sort_values([key, "game_id"], ascending=[not sort.startswith("-"), True],
                                  kind="stable")
        page = sub.iloc[offset:offset + limit]
        dup = g.attrs.get("duplicated_pairings", [])
        return {"total": len(g), "matching": len(sub), "offset": offset, "limit": limit,
                "games": [_game_row(r) for r in page.to_dict("records")],
                "counted_once": list(dup),
                "counted_once_note": (f"{', '.join(dup)}: {DISTINCT_NOTE} (the seat-swapped "
                                      "copy is the same game: counted once, as in the "
                                      "report)"
                                      if dup else None)}

    # --- one game -----------------------------------------------------------------------------
    def game_view(self, run: RunFolder, game_id: int) -> dict[str, Any]:
        """A stored game, replayed by the engine from its deal seed and stored moves: every
        position, the moves in record notation and the record itself."""
        key = (run.id, game_id)
        with self._lock:
            if key in self._views:
                self._views.move_to_end(key)
                return self._views[key]
        g = self.games(run, listed_only=False)  # a copy's id still opens its game
        rows = g[g["game_id"] == game_id]
        if rows.empty:
            raise WebError(404, f"run {run.label} has no game {game_id}")
        row = rows.iloc[0]
        rs = run.rulesets.get(row["ruleset"])
        if rs is None:
            raise WebError(409, f"the manifest of {run.label} has no rules for ruleset "
                                f"{row['ruleset']!r}, so its games cannot be replayed")
        codes = self.moves(run, game_id)
        circle = deal_circle(rs, int(row["deal_seed"]))
        start = Game.new(rs, circle=circle)
        try:
            positions, texts = replay_positions(start, codes)
        except IllegalMoveError as e:
            msg = f"{run.path / GAMES}: game {game_id} does not replay: {e}"
            log.warning("%s", msg)
            raise WebError(422, msg) from None
        warnings = []
        final = positions[-1]["players"]
        stored = (int(row["score0"]), int(row["score1"]))
        if (final[0]["score"], final[1]["score"]) != stored:
            warnings.append(f"the replayed final score {final[0]['score']} : "
                            f"{final[1]['score']} differs from the stored {stored[0]} : "
                            f"{stored[1]}")
            log.warning("%s game %s: %s", run.label, game_id, warnings[-1])
        view = {
            "kind": "stored",
            "title": (f"{run.label} - game {game_id}: {row['bot0']} (seat 0) vs "
                      f"{row['bot1']} (seat 1), {row['ruleset']}, deal {int(row['deal'])}"),
            "run": run.id, "run_label": run.label, "game_id": game_id,
            "ruleset": str(row["ruleset"]),
            "players": [str(row["bot0"]), str(row["bot1"])],
            "rules": ruleset_info(rs),
            "moves": texts,
            "positions": positions,
            "record": {"rules": rules_reference(rs), "circle": list(circle), "moves": texts},
            "warnings": warnings,
        }
        with self._lock:
            self._views[key] = view
            while len(self._views) > 32:
                self._views.popitem(last=False)
        return view

    def moves(self, run: RunFolder, game_id: int) -> list[int]:
        try:
            t = pq.read_table(run.path / GAMES, columns=["moves"],
                              filters=[("game_id", "==", int(game_id))])
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise WebError(409, f"{run.path / GAMES}: cannot read the moves ({e})") from None
        if not t.num_rows:
            raise WebError(404, f"run {run.label} has no game {game_id}")
        return [int(x) for x in t.column("moves").to_pylist()[0]]

    def start(self, run: RunFolder, game_id: int) -> tuple[Game, list[int]]:
        """A stored game's start position and its move codes (for the evaluation)."""
        view = self.game_view(run, game_id)  # checks that the game exists and replays
        start = Game.new(run.rulesets[view["ruleset"]], circle=view["record"]["circle"])
        return start, self.moves(run, game_id)

    def ruleset_files(self) -> list[tuple[RunFolder, str]]:
        """YAML files in the run folders (rulesets a player may choose)."""
        out = []
        for run in self.runs.values():
            if run.path.is_dir():
                out += [(run, rel) for rel in _files(run.path, (".yaml", ".yml"))]
        return out

    def record_files(self, run: RunFolder) -> list[str]:
        """JSON files in a run folder other than the manifest (game records, e.g. the record
        of a game a bot failed in)."""
        return _files(run.path, (".json",))


FILTERS = ("ruleset", "pairing", "winner", "abs_margin_min", "abs_margin_max", "bonus",
           "leather", "sort", "offset", "limit")
SORT_KEYS = ("game_id", "abs_margin", "score0", "score1", "plies", "deal")


def _int(query: dict[str, str], key: str, lo: int = 0, hi: int = 10**12) -> int | None:
    raw = query.get(key, "")
    if raw == "":
        return None
    try:
        value = int(raw[:40]) if len(raw) <= 40 else None  # int() of a huge text is slow
    except ValueError:
        value = None
    if value is None:
        raise WebError(400, f"{key}={raw[:40]!r}: expected a whole number")
    if value < lo or value > hi:
        raise WebError(400, f"{key}={raw!r}: expected a number between {lo} and "
                            f"{'10^12' if hi == 10**12 else hi}")
    return value


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


def _game_row(r: dict[str, Any]) -> dict[str, Any]:
    keys = ("game_id", "ruleset", "pairing", "deal", "order", "bot0", "bot1", "winner",
            "winner_bot", "score0", "score1", "abs_margin", "tie_break", "bonus", "claims0",
            "claims1", "leather0", "leather1", "plies", "counted_once")
    out = {}
    for k in keys:
        v = r[k]
        out[k] = v.item() if isinstance(v, np.generic) else v
    return out


# --- records --------------------------------------------------------------------------------------
def record_view(record: GameRecord, as_written: dict[str, Any] | None = None,
                allowed_roots: list[Path] | None = None) -> dict[str, Any]:
    """A game record replayed by the engine, in the shape of :meth:`RunIndex.game_view`.
    RecordError (with the move number) when it does not load or a move is illegal; the
    files its rules name must lie in ``allowed_roots`` (default: none but the shipped
    configs)."""
    start = record.start(allowed_roots if allowed_roots is not None else [])
    codes = []
    probe = start.copy()
    for i, text in enumerate(record.moves, start=1):
        try:
            move = probe.parse_move(text)
            probe.apply(move)
        except IllegalMoveError as e:
            raise RecordError(f"{record.source}: move {i} ({text!r}) is illegal: "
                              f"{e.reason.describe(probe.ruleset.offer_size)}", i) from None
        except ValueError as e:
            raise RecordError(f"{record.source}: move {i} ({text!r}) is malformed: {e}",
                              i) from None
        codes.append(move.code)
    positions, texts = replay_positions(start, codes)
    return {
        "kind": "record",
        "title": f"{record.source} ({start.ruleset.name})",
        # who played is recorded since records have "players"; older ones do not say
        "players": (list(record.players) if record.players else ["seat 0", "seat 1"]),
        "rules": ruleset_info(start.ruleset),
        "moves": texts,
        "positions": positions,
        "record": as_written or record.to_dict(),
        "warnings": [],
    }


def safe_record(record: GameRecord, folder: Path | None = None,
                rel_dir: str = "") -> GameRecord:
    """The record with rules the server may load: a shipped ruleset name, a fully written
    mapping (``extends`` only of a shipped ruleset, patches inline), or a YAML file inside
    ``folder`` (the allowed folder the record lies in; ``rel_dir`` is the record's own folder
    relative to it). A record must not make the server read files elsewhere."""
    rules = record.rules
    shipped = shipped_rulesets()
    if isinstance(rules, dict) and too_deep(rules, 32):
        raise RecordError(f"{record.source}: rules: nested too deeply to be a ruleset")
    if isinstance(rules, dict):
        ext = rules.get("extends")
        if ext is not None and ext not in shipped:
            raise RecordError(f"{record.source}: rules: 'extends: {ext}' names no shipped "
                              "ruleset; a record opened here must write its rules out in full")
        if not isinstance(rules.get("patches", []), list):
            raise RecordError(f"{record.source}: rules: 'patches' must be an inline list in a "
                              "record opened here (not a path to a patch table)")
        return record
    if rules in shipped:
        return record
    if rules.endswith((".yaml", ".yml")) and folder is not None:
        rel = posixpath.normpath(posixpath.join(rel_dir, rules))
        try:
            path = inside(folder, rel, "ruleset file")
        except WebError as e:
            raise RecordError(f"{record.source}: rules: {e.message}") from None
        return GameRecord(str(path), record.circle, record.moves, record.source,
                          record.players)
    where = "a YAML file beside the record, " if folder is not None else ""
    raise RecordError(f"{record.source}: rules: {rules!r} is not a shipped ruleset (give "
                      f"one of {', '.join(shipped)}, {where}or the rules written out in full)")


def parse_record(data: object, source: str) -> GameRecord:
    """A record sent by a page (an uploaded file); RecordError when it is not one."""
    return safe_record(GameRecord.from_dict(data, source))


def load_record_file(folder: Path, rel: str, source: str) -> tuple[GameRecord, dict[str, Any]]:
    """The record file ``rel`` inside ``folder`` (WebError if the path is refused) and its
    data as written; RecordError when it is not a record."""
    path = inside(folder, rel, "record file")
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            raise RecordError(f"{source}: larger than {MAX_RECORD_BYTES // 1_000_000} MB; "
                              "not a game record")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RecordError(f"{source}: cannot read the record: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise RecordError(f"{source}: not a UTF-8 text file (byte {e.start}); a record is "
                          "JSON text") from None
    rec = GameRecord.from_json(text, source)
    return safe_record(rec, folder, posixpath.dirname(rel)), rec.to_dict()
