"""The digests (sha256) a run's manifest carries: of each part of what defines the run (each
key of its ``config``, the run id, the deals played and merged) and of each stored table,
written by the run itself whenever it writes the manifest. A hand-edited manifest is refused
naming the keys that differ; a manifest made before the digests still loads (with a note)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from patchsim.play.runfolder.errors import RunFolderError, short
from patchsim.play.runfolder.names import TABLES

# the run's own bookkeeping next to its config, covered by the digests too: an edited
# merged_deals would pass fewer games for a finished run
RUN_KEYS = ("run_id", "segments", "merged_deals")
NO_DIGEST_NOTE = ("{path} has no digests (made before patchsim recorded them): its tables "
                  "and settings cannot be checked")


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


def recorded_digests(manifest: dict[str, Any], path: Path) -> dict[str, Any] | None:
    """The digests a manifest records; None when made before them; RunFolderError if they
    are not what patchsim writes (an edit)."""
    if "digests" not in manifest:  # made before the digests (a null is an edit)
        return None
    d = manifest["digests"]
    if not (isinstance(d, dict) and isinstance(d.get("settings"), dict)
            and isinstance(d.get("tables", {}), dict)):
        raise RunFolderError(path, f"{path}: digests: expected the digests patchsim records, "
                             f"got {short(d)}; the manifest was edited or damaged: restore "
                             "it or start a new run in another folder")
    return d


def check_settings(manifest: dict[str, Any], path: Path) -> list[str]:
    """Check the manifest's settings against its digests: RunFolderError naming the keys
    that differ; a note (no error) for a manifest without digests."""
    d = recorded_digests(manifest, path)
    if d is None:
        return [NO_DIGEST_NOTE.format(path=path)]
    now = settings_digests(manifest)
    recorded = d["settings"]
    differ = sorted(k for k in set(now) | set(recorded) if now.get(k) != recorded.get(k))
    if differ:
        shown = ", ".join(f"{k} ({short(_value_at(manifest, k))})" for k in differ[:6])
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

