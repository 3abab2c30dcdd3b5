"""Atomic file writes: every file patchsim writes appears whole or not at all.

A file is written to a temporary name in its own folder, flushed to disk, given the
permissions the user's umask gives a new file (``mkstemp`` would leave 0600), then renamed
over the target. A full disk or a kill part-way leaves the old file (or none), never a
truncated one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without a window in which another thread sees it changed."""
    # Linux reports the umask without changing it. Elsewhere it can only be read by setting
    # it and setting it back, which threads writing batch files at the same time must not
    # interleave (one would "restore" the other's temporary value for good).
    with (contextlib.suppress(OSError, ValueError, IndexError),
          open("/proc/self/status", encoding="ascii") as f):
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path, *, suffix: str = "") -> Iterator[Path]:
    """A temporary path next to ``path`` to write to; on success it is renamed to ``path``,
    on any error it is removed and the error propagates."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix or ".tmp",
                               dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def atomic_write(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())
