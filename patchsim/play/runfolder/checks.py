"""A run folder's manifest read and checked (structure, digests, run id), and the folder as a
whole: whether a live run holds it, whether it finished, whether a new run may start in it,
the partial files a killed run left. Every refusal is a RunFolderError naming the file and
what to do."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchsim.engine.ruleset import RulesetError
from patchsim.engine.textfile import InputTooLargeError, file_kind, read_text_bounded, short_path
from patchsim.play.config import RunConfig, RunError, run_identity
from patchsim.play.runfolder.digests import check_settings
from patchsim.play.runfolder.errors import (
    RunFolderBusy,
    RunFolderError,
    RunNotFinished,
    first_line,
    short,
)
from patchsim.play.runfolder.names import (
    BATCH_SUFFIX,
    BATCHES,
    LOCK,
    MANIFEST,
    STOPPING_FILE,
    TABLES,
)
from patchsim.play.runfolder.schemas import SCHEMAS, check_table, table_path

# --- the files of a run folder: their names live on the lowest floor (names) -----------
# what a run may leave in a folder before its manifest exists (an interrupted start); any
# other file means the folder is not ours to write into
RUN_LEFTOVERS = {BATCHES, LOCK}
# the temporary names of atomic writes (patchsim.atomic: ".<target>.<random><suffix>"): a
# SIGKILL mid-write leaves them behind
_PARTIAL = re.compile(r"^\.(" + "|".join(map(re.escape, (*TABLES, MANIFEST, STOPPING_FILE)))
                      + r")\..+$")
_PARTIAL_BATCH = re.compile(r"^\..+\.(games|events)\." + re.escape(BATCH_SUFFIX) + r"\..+$")
WRITE_PROBE = ".write-test-"  # the probe of check_writable (storage)


# --- looking at a path a user gave -------------------------------------------------------------
# a manifest is a few kB; this much is no manifest (and /dev/zero behind the name never ends)
MAX_MANIFEST_BYTES = 50_000_000


def stat_path(path: Path, doing: str) -> os.stat_result | None:
    """``os.stat(path)`` (symbolic links followed), or None when nothing is there. A path that
    cannot even be looked at (too long, a loop of links, a file on the way, a folder on the
    way that may not be searched, a null byte) is a RunFolderError: ``doing`` ("cannot write
    to the output folder"), the path (shortened when long or unprintable) and why."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        why = "a part of its path is a file, not a folder"
    except OSError as e:
        why = {errno.ENAMETOOLONG: f"the path ({len(str(path)):,} characters) is too long "
                                   "for the file system (most allow 255 characters a name "
                                   "and 4,096 a path)",
               errno.ELOOP: "its symbolic links lead round in a loop",
               errno.EACCES: "permission denied (a folder on its path may not be searched)",
               }.get(e.errno or 0, e.strerror or str(e))
    except ValueError:  # "embedded null byte"
        why = "not a name a file can have (it holds a null byte)"
    raise RunFolderError(path, f"{doing} {short_path(path)}: {why}")


# --- reading the manifest -------------------------------------------------------------------------
def load_manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest as JSON (a mapping); RunFolderError if the folder is not a run folder or
    the file is not JSON. Nothing is checked beyond that (see :func:`read_manifest`)."""
    run_dir = Path(run_dir)
    path = run_dir / MANIFEST
    shown, shown_path = short_path(run_dir), short_path(path)
    found = stat_path(run_dir, "cannot read the run folder")
    if found is None:
        raise RunFolderError(run_dir, f"{shown} is not a run folder (there is no such "
                             "folder)")
    if not stat.S_ISDIR(found.st_mode):
        raise RunFolderError(run_dir, f"{shown} is {file_kind(found.st_mode)}, not a run "
                             f"folder (a run folder holds {MANIFEST} and the tables)")
    manifest_stat = stat_path(path, "cannot read")
    if manifest_stat is None:
        raise RunFolderError(path, f"{shown} is not a run folder (no {MANIFEST})")
    if not stat.S_ISREG(manifest_stat.st_mode):  # a pipe would block the read for ever
        raise RunFolderError(path, f"{shown_path} is {file_kind(manifest_stat.st_mode)}, "
                             "not a manifest; restore it from a copy, or start a new run in "
                             "another folder")
    try:
        text = read_text_bounded(path, MAX_MANIFEST_BYTES, "a manifest", shown_path)
    except InputTooLargeError as e:
        raise RunFolderError(path, f"{e}; restore it from a copy, or start a new run in "
                             "another folder") from None
    except UnicodeDecodeError as e:
        raise RunFolderError(path, f"{shown_path} is damaged: not UTF-8 text ({e.reason}); "
                             "restore it from a copy, or start a new run in another "
                             "folder") from None
    except OSError as e:
        raise RunFolderError(path, f"cannot read {shown_path}: {e.strerror or e}") from None
    try:
        manifest = json.loads(text)
    except RecursionError:
        raise RunFolderError(path, f"{shown_path} is damaged: nested too deeply to be a "
                             "manifest; restore it from a copy, or start a new run in "
                             "another folder") from None
    except ValueError as e:
        raise RunFolderError(path, f"{shown_path} is damaged: not JSON ({first_line(e)}); "
                             "restore it from a copy, or start a new run in another "
                             "folder") from None
    if not isinstance(manifest, dict):
        raise RunFolderError(path, f"{shown_path} is not a patchsim manifest (not a "
                             "mapping); restore it from a copy, or start a new run in "
                             "another folder")
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
                             f"({first_line(e)}); restore it, or start a new run in another "
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
                              f"{short(manifest.get(key))}; restore the manifest, or start "
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
    except (OSError, ValueError):  # no lock file, or no name a file can have (a null byte)
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
    its tables into a new or empty folder, or continues its own), in what is no folder (a
    file, a pipe, a link to nothing), inside a run's own batches folder, or at a path that
    cannot be looked at; every refusal names the path (shortened when long)."""
    run_dir = Path(run_dir)
    doing, shown = "cannot write to the output folder", short_path(run_dir)
    found = stat_path(run_dir, doing)
    if found is None:
        if os.path.islink(run_dir):  # mkdir would say "File exists"
            raise RunFolderError(run_dir, f"{doing} {shown}: it is a symbolic link to "
                                 "nothing (its target does not exist); give a new or empty "
                                 "folder")
    elif not stat.S_ISDIR(found.st_mode):
        raise RunFolderError(run_dir, f"{doing} {shown}: it is {file_kind(found.st_mode)}; "
                             "give a new or empty folder")
    parent = run_dir.parent
    if run_dir.name == BATCHES and any(stat_path(parent / name, doing) is not None
                                       for name in (MANIFEST, LOCK)):
        raise RunFolderError(run_dir, f"{doing} {shown}: it is the batches folder of the "
                             f"run in {short_path(parent)}; give a folder of its own")
    if found is None or stat_path(run_dir / MANIFEST, doing) is not None:
        return
    try:
        names = [p.name for p in run_dir.iterdir()]
    except OSError as e:
        raise RunFolderError(run_dir, f"{doing} {shown}: cannot list what it holds "
                             f"({e.strerror or e})") from None
    others = sorted(name for name in names
                    if name not in RUN_LEFTOVERS and not name.startswith(WRITE_PROBE)
                    and not _PARTIAL.match(name))
    if others:
        listed = [short_path(name, 60) for name in others[:5]]
        more = f" and {len(others) - 5} more" if len(others) > 5 else ""
        raise RunFolderError(run_dir, f"the output folder {shown} holds files that are not "
                             f"a patchsim run ({', '.join(listed)}{more}); give a new or "
                             "empty folder")


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
    :func:`patchsim.play.runfolder.reader.read_run`, which checks it the same way."""
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
