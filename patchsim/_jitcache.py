"""Where numba keeps compiled code for patchsim.

Numba invalidates a cached function only when its own source file changes, not when a
function it calls (in another module) does. To make a stale cache impossible, the cache lives
in a folder named after a hash of all of patchsim's sources: any edit starts a fresh cache,
and an unchanged install reuses it (a second process starts in well under two seconds).
Set NUMBA_CACHE_DIR to choose the folder yourself; PATCHSIM_CACHE_DIR to move the root.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def configure() -> None:
    import numba

    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    digest = hashlib.sha256()
    for src in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(src.relative_to(Path(__file__).parent).as_posix().encode())
        digest.update(src.read_bytes())
    digest.update(numba.__version__.encode())
    root = os.environ.get("PATCHSIM_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(xdg) / "patchsim" / "numba")
    numba.config.CACHE_DIR = str(Path(root) / digest.hexdigest()[:16])  # type: ignore[attr-defined]  # set at run time
