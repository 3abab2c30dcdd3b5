"""A run folder: the name of every file in it, the digests its manifest carries, and one
checked reader of the manifest and tables, for the runner, the report, the web app, sweeps and
the command line.

The manifest carries a digest (sha256) of each part of what defines the run (each key of its
``config``, the run id, the deals played and merged) and of each stored table, written by the
run itself whenever it writes the manifest. A hand-edited manifest, or a table changed or
damaged since, is refused with a message naming the file and what differs. Manifests made
before the digests were recorded still load (with a note).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from patchsim.engine.ruleset import RulesetError
from patchsim.layout import (  # noqa: F401 - offered here with the reader
    BATCH_SUFFIX,
    BATCHES,
    DOCUMENTS,
    EVENTS,
    FIGURES,
    GAMES,
    LATER_GAME_COLUMNS,
    LOCK,
    MANIFEST,
    PRICE_COLUMNS,
    PRICES_FOLDER,
    PRICES_STUDY,
    PRICES_SUMMARY,
    REPORT_HTML,
    REPORT_MD,
    STOPPING_FILE,
    TABLES,
    PriceRow,
    folder_name,
)
from patchsim.play.config import RunConfig, RunError, run_identity

# --- the files of a run folder: their names live on the lowest floor (patchsim.layout) -----------
# what a run may leave in a folder before its manifest exists (an interrupted start); any
# other file means the folder is not ours to write into
RUN_LEFTOVERS = {BATCHES, LOCK}
# the temporary names of atomic writes (patchsim.atomic: ".<target>.<random><suffix>"): a
# SIGKILL mid-write leaves them behind
_PARTIAL = re.compile(r"^\.(" + "|".join(map(re.escape, (*TABLES, MANIFEST, STOPPING_FILE)))
                      + r")\..+$")
_PARTIAL_BATCH = re.compile(r"^\..+\.(games|events)\." + re.escape(BATCH_SUFFIX) + r"\..+$")
WRITE_PROBE = ".write-test-"  # the probe of check_writable (storage)

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
SCHEMAS = {"games": GAMES_SCHEMA, "events": EVENTS_SCHEMA}
# columns a table may lack (written before they existed): per kind
LATER_COLUMNS = {"games": frozenset(LATER_GAME_COLUMNS), "events": frozenset()}


def required(kind: str) -> list[pa.Field]:
    """The columns every stored ``kind`` table has, whenever it was written."""
    return [f for f in SCHEMAS[kind] if f.name not in LATER_COLUMNS[kind]]


def _columns_fit(schema: pa.Schema, kind: str) -> bool:
    """``schema`` has every required column of ``kind`` and the later ones it has in their
    types."""
    return all(f.name in schema.names and schema.field(f.name).type.equals(f.type)
               for f in required(kind)) and all(
        schema.field(f.name).type.equals(f.type) for f in SCHEMAS[kind]
        if f.name in LATER_COLUMNS[kind] and f.name in schema.names)


def conform(table: pa.Table, kind: str) -> pa.Table:
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
# the run's own bookkeeping next to its config, covered by the digests too: an edited
# merged_deals would pass fewer games for a finished run
RUN_KEYS = ("run_id", "segments", "merged_deals")
NO_DIGEST_NOTE = ("{path} has no digests (made before patchsim recorded them): its tables "
                  "and settings cannot be checked")


class RunFolderError(RunError):
    """A run folder that cannot be used as it is: ``path`` is the file at fault;
    ``manifest`` the manifest as read, when it could be (a listing still shows its name)."""

    def __init__(self, path: Path, message: str, *,
                 manifest: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.manifest = manifest
        super().__init__(message)


class RunFolderBusy(RunFolderError):
    """A live patchsim run holds the folder: ``holder`` is what its lock file says,
    ``doing`` what the caller wanted to do (None: play into the folder)."""

    def __init__(self, run_dir: Path, holder: dict[str, Any], doing: str | None = None
                 ) -> None:
        self.run_dir, self.holder, self.doing = Path(run_dir), holder, doing
        who = ", ".join(f"{k} {holder[k]}" for k in ("pid", "host", "started", "seed")
                        if k in holder)
        then = (f"wait for it to finish before {doing}" if doing is not None
                else "wait for it to finish, or write to another folder")
        super().__init__(Path(run_dir), f"{run_dir} is still running "
                         f"({who or 'another patchsim run'}); {then}")


class RunNotFinished(RunFolderError):
    """A run folder without its games table: a run to resume, or (``report_only``) a
    finished run's folder kept without its tables (a committed report); ``command`` is how
    its manifest says it was played."""

    def __init__(self, run_dir: Path, report_only: bool, command: str | None) -> None:
        self.run_dir, self.report_only, self.command = Path(run_dir), report_only, command
        if report_only:
            again = command or "the command in its manifest"
            text = (f"{run_dir}: report only: it holds no {GAMES} (a finished run's folder "
                    f"without its tables, e.g. a committed report); play it again with: "
                    f"{again}")
        else:
            text = f"{run_dir}: the run is not finished (no {GAMES}); resume the run first"
        super().__init__(Path(run_dir), text)


# --- names --------------------------------------------------------------------------------------
def table_path(run_dir: Path, kind: str) -> Path:
    """games.parquet or events.parquet (``kind``: games or events) of a run folder."""
    return Path(run_dir) / {"games": GAMES, "events": EVENTS}[kind]


# --- digests -----------------------------------------------------------------------------------
def _json_digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def file_digest(path: Path) -> str:
    """The sha256 of a file, read in chunks (a table may be gigabytes)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def settings_digests(manifest: dict[str, Any]) -> dict[str, str]:
    """A digest per part of what defines the run: ``config.<key>`` and the run's own keys."""
    cfg = manifest.get("config", {})
    out = ({f"config.{k}": _json_digest(v) for k, v in cfg.items()} if isinstance(cfg, dict)
           else {"config": _json_digest(cfg)})
    out.update({k: _json_digest(manifest.get(k)) for k in RUN_KEYS})
    return out


def stamp_digests(manifest: dict[str, Any], run_dir: Path, *, tables: bool) -> None:
    """Record the digests in ``manifest`` (before the run writes it). ``tables``: the tables
    were just written by this run, so their digests are taken anew; otherwise those already
    recorded are kept (the tables are unchanged)."""
    old = manifest.get("digests")
    kept = old.get("tables", {}) if isinstance(old, dict) else {}
    stored = {}
    for name in TABLES:
        path = Path(run_dir) / name
        if tables and path.exists():
            stored[name] = file_digest(path)
        elif isinstance(kept, dict) and name in kept:
            stored[name] = kept[name]
    manifest["digests"] = {"algorithm": "sha256", "settings": settings_digests(manifest),
                           "tables": stored}


def _digests(manifest: dict[str, Any], path: Path) -> dict[str, Any] | None:
    if "digests" not in manifest:  # made before the digests (a null is an edit)
        return None
    d = manifest["digests"]
    if not (isinstance(d, dict) and isinstance(d.get("settings"), dict)
            and isinstance(d.get("tables", {}), dict)):
        raise RunFolderError(path, f"{path}: digests: expected the digests patchsim records, "
                             f"got {_short(d)}; the manifest was edited or damaged: restore "
                             "it or start a new run in another folder")
    return d


def check_settings(manifest: dict[str, Any], path: Path) -> list[str]:
    """Check the manifest's settings against its digests: RunFolderError naming the keys
    that differ; a note (no error) for a manifest without digests."""
    d = _digests(manifest, path)
    if d is None:
        return [NO_DIGEST_NOTE.format(path=path)]
    now = settings_digests(manifest)
    recorded = d["settings"]
    differ = sorted(k for k in set(now) | set(recorded) if now.get(k) != recorded.get(k))
    if differ:
        shown = ", ".join(f"{k} ({_short(_value_at(manifest, k))})" for k in differ[:6])
        more = f" and {len(differ) - 6} more" if len(differ) > 6 else ""
        verb = "differs" if len(differ) == 1 else "differ"
        raise RunFolderError(path, f"{path} was edited after the run wrote it: {shown}{more} "
                             f"{verb} from what the run recorded (its digests; the games "
                             "stored were played with the recorded values); restore the "
                             "manifest, or start a new run in another folder to play other "
                             "settings")
    return []


def _value_at(manifest: dict[str, Any], key: str) -> Any:
    if key.startswith("config."):
        cfg = manifest.get("config", {})
        return cfg.get(key[7:], "missing") if isinstance(cfg, dict) else "missing"
    return manifest.get(key, "missing")


def _short(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def check_table(run_dir: Path, kind: str, manifest: dict[str, Any] | None = None) -> None:
    """Check that a stored table opens, has the run's columns and, when the manifest records
    its digest, is the file the run wrote; RunFolderError naming the file otherwise."""
    path = table_path(run_dir, kind)
    try:
        schema = pq.ParquetFile(path).schema_arrow
    except FileNotFoundError:
        raise RunFolderError(path, f"{path} is missing: the run's tables are incomplete; "
                             f"{_what_to_do(run_dir)}") from None
    except (OSError, pa.ArrowException) as e:
        raise RunFolderError(path, f"{path} is damaged ({_first_line(e)}); "
                             f"{_what_to_do(run_dir)}") from None
    _check_schema(path, schema, SCHEMAS[kind], run_dir)
    d = _digests(manifest, run_dir / MANIFEST) if manifest is not None else None
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


def check_batch(path: Path, kind: str) -> None:
    """Check a batch file (Arrow IPC) opens with the run's columns; RunFolderError naming
    the file and what to do otherwise."""
    try:
        with pa.memory_map(str(path)) as source:
            schema = pa.ipc.open_file(source).schema  # the footer: a cut file has none
    except (OSError, pa.ArrowException) as e:
        raise RunFolderError(path, f"{path} is damaged ({_first_line(e)}); delete it and "
                             "resume the run: its games are played again") from None
    if not _columns_fit(schema, kind):
        raise RunFolderError(path, f"{path} is not a {kind} batch (its columns differ); "
                             "delete it and resume the run: its games are played again")


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


# --- reading the manifest -------------------------------------------------------------------------
def load_manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest as JSON (a mapping); RunFolderError if the folder is not a run folder or
    the file is not JSON. Nothing is checked beyond that (see :func:`read_manifest`)."""
    run_dir = Path(run_dir)
    path = run_dir / MANIFEST
    if run_dir.exists() and not run_dir.is_dir():
        raise RunFolderError(run_dir, f"{run_dir} is a file, not a run folder (a run folder "
                             f"holds {MANIFEST} and the tables)")
    if not run_dir.exists():
        raise RunFolderError(run_dir, f"{run_dir} is not a run folder (there is no such "
                             "folder)")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RunFolderError(path, f"{run_dir} is not a run folder (no {MANIFEST})") from None
    except OSError as e:
        raise RunFolderError(path, f"cannot read {path}: {e.strerror or e}") from None
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise RunFolderError(path, f"{path} is damaged: nested too deeply to be a manifest; "
                             "restore it from a copy, or start a new run in another "
                             "folder") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise RunFolderError(path, f"{path} is damaged: not JSON ({_first_line(e)}); "
                             "restore it from a copy, or start a new run in another "
                             "folder") from None
    if not isinstance(manifest, dict):
        raise RunFolderError(path, f"{path} is not a patchsim manifest (not a mapping); "
                             "restore it from a copy, or start a new run in another folder")
    return manifest


def read_manifest(run_dir: Path, notes: list[str] | None = None
                  ) -> tuple[dict[str, Any], RunConfig]:
    """A run folder's manifest and configuration, checked: its structure (dotted keys named)
    and, where recorded, its digests. RunFolderError if it is missing, damaged or edited;
    ``notes`` receives what the caller may want to tell (e.g. no digests)."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    try:
        found = _check_manifest(manifest, run_dir / MANIFEST)
    except RunFolderError as e:
        e.manifest = manifest  # what could be read (a listing shows its name)
        raise
    if notes is not None:
        notes.extend(found[0])
    return manifest, found[1]


def _check_manifest(manifest: dict[str, Any], path: Path) -> tuple[list[str], RunConfig]:
    found = check_settings(manifest, path)
    try:
        config = RunConfig.from_manifest(manifest["config"])
    except RunError as e:
        raise RunFolderError(path, f"{path}: {e}; restore the manifest, or start a new run "
                             "in another folder") from None
    except (KeyError, TypeError, ValueError, RulesetError, RecursionError) as e:
        raise RunFolderError(path, f"{path} is damaged or not a patchsim manifest "
                             f"({_first_line(e)}); restore it, or start a new run in another "
                             "folder") from None
    _check_bookkeeping(manifest, config, path)
    run_id = manifest.get("run_id")
    if run_id is not None and run_id != run_identity(config):
        # the run id is a hash of the rules, bots, pairings and seed: this catches an edit
        # of a manifest made before the digests too
        raise RunFolderError(path, f"{path}: config (its rules, bots, pairings, name or seed "
                             f"{config.seed}) no longer matches run_id {run_id}: the "
                             "manifest was edited after the run wrote it; restore it, or "
                             "start a new run in another folder to play other settings")
    return found, config


def _check_bookkeeping(manifest: dict[str, Any], config: RunConfig, path: Path) -> None:
    def bad(key: str, want: str) -> RunFolderError:
        return RunFolderError(path, f"{path}: {key}: expected {want}, got "
                              f"{_short(manifest.get(key))}; restore the manifest, or start "
                              "a new run in another folder")

    run_id = manifest.get("run_id")
    if run_id is not None and not (isinstance(run_id, str) and re.fullmatch(r"[0-9a-f]{6,64}",
                                                                            run_id)):
        raise bad("run_id", "the run's id (hexadecimal)")
    segments = manifest.get("segments", [config.deals])
    if not (isinstance(segments, list) and segments
            and all(type(s) is int and s >= 1 for s in segments)
            and segments == sorted(segments) and segments[-1] <= config.deals):
        raise bad("segments", f"increasing deal counts up to config.deals ({config.deals})")
    merged = manifest.get("merged_deals", 0)
    if type(merged) is not int or not 0 <= merged <= config.deals:
        raise bad("merged_deals", f"a whole number from 0 to config.deals ({config.deals})")


# --- the folder as a whole ------------------------------------------------------------------------
def running(run_dir: Path) -> dict[str, Any] | None:
    """What the lock file says of the live run holding ``run_dir`` (pid, host, started), or
    None when no run holds it. Taking the lock for a moment is the only reliable test."""
    path = Path(run_dir) / LOCK
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                raw = os.pread(fd, 4096, 0)
                holder = json.loads(raw) if raw.strip() else {}
            except (OSError, ValueError):
                holder = {}
            return holder if isinstance(holder, dict) else {}
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def check_not_running(run_dir: Path, doing: str) -> None:
    """RunFolderBusy if a live run holds ``run_dir`` (``doing``: what the caller wants)."""
    holder = running(run_dir)
    if holder is not None:
        raise RunFolderBusy(run_dir, holder, doing)


def check_finished(run_dir: Path, manifest: dict[str, Any]) -> None:
    """RunNotFinished if the run folder holds no games table (a run to resume, or a
    committed report's folder, by what its manifest says)."""
    if not table_path(run_dir, "games").exists():
        command = manifest.get("command")
        raise RunNotFinished(run_dir, manifest.get("complete") is True,
                             command if isinstance(command, str) else None)


def check_output_folder(run_dir: Path) -> None:
    """Refuse to start a run in a folder that holds files of something else (a run writes
    its tables into a new or empty folder, or continues its own)."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunFolderError(run_dir, f"cannot write to the output folder {run_dir}: it is "
                             "a file; give a new or empty folder")
    if not run_dir.is_dir() or (run_dir / MANIFEST).exists():
        return
    others = sorted(p.name for p in run_dir.iterdir()
                    if p.name not in RUN_LEFTOVERS and not p.name.startswith(WRITE_PROBE)
                    and not _PARTIAL.match(p.name))
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5
                                         else "")
        raise RunFolderError(run_dir, f"the output folder {run_dir} holds files that are not "
                             f"a patchsim run ({shown}); give a new or empty folder")


def clean_partials(run_dir: Path) -> list[Path]:
    """Remove the temporary files a killed run left (partial tables, manifests and batch
    files: never complete, never read). Only while holding the run's lock. Returns them."""
    run_dir = Path(run_dir)
    found = [p for p in run_dir.glob(".*") if _PARTIAL.match(p.name)]
    batches = run_dir / BATCHES
    if batches.is_dir():
        found += [p for p in batches.glob(".*") if _PARTIAL_BATCH.match(p.name)]
    removed = []
    for p in found:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
            removed.append(p)
    return removed


@dataclass
class FolderCheck:
    """What :func:`check_folder` found: ``problem`` (one paragraph, or None when the folder
    can be read), ``notes`` to show, and the manifest as read (if it could be)."""

    run_dir: Path
    manifest: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    running: dict[str, Any] | None = None


def check_folder(run_dir: str | Path, *, tables: bool = True) -> FolderCheck:
    """Check a run folder for reading: not running, manifest readable and unedited, tables
    present, whole and unchanged (``tables``). Never raises for the folder's state: the
    result says what is wrong (e.g. for the notes a command shows). To read the folder, see
    :func:`patchsim.play.reader.read_run`, which checks it the same way."""
    run_dir = Path(run_dir)
    out = FolderCheck(run_dir)
    try:
        out.manifest = load_manifest(run_dir)
        out.running = running(run_dir)
        if out.running is not None:
            raise RunFolderBusy(run_dir, out.running, "reading it")
        out.notes += check_settings(out.manifest, run_dir / MANIFEST)
        if tables:
            check_finished(run_dir, out.manifest)
            for kind in SCHEMAS:
                check_table(run_dir, kind, out.manifest)
    except RunFolderError as e:
        out.problem = str(e)
    return out


def same_experiment(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two manifests of one experiment: the same rules, bots, pairings and seed (so the same
    games, however many deals each played)."""
    def key(m: dict[str, Any]) -> Any:
        cfg = m.get("config", {})
        rules = [r.get("hash") if isinstance(r, dict) else r for r in cfg.get("rulesets", [])]
        return rules, cfg.get("bots"), cfg.get("pairings"), cfg.get("seed")

    try:
        return key(a) == key(b)
    except (AttributeError, TypeError):
        return False
