"""Where numba keeps compiled code for patchsim: one cache per version of the sources, shared
by every checkout, worker and CI run on the machine that has those sources.

Numba invalidates a cached function only when its own source file changes, not when a
function it calls (in another module) does. To make a stale cache impossible, the cache lives
in a folder named after a hash of all of patchsim's sources (:func:`source_digest`): any edit
starts a fresh cache, and an unchanged install reuses it.

Inside that folder numba would file each module's code under a hash of the module's absolute
folder, so a second clone elsewhere compiled everything again beside the first one's code.
:func:`cache_subpath` files it under the module's folder inside the package instead (the same
in every checkout), and the locator stamps a file by its content rather than its time, so a
checkout with the same sources, wherever it lies and whenever it was written, loads the code.

Set NUMBA_CACHE_DIR to choose the folder yourself (numba's own layout then, keyed by path);
PATCHSIM_CACHE_DIR to move the root.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent


def source_digest(package: Path = PACKAGE, numba_version: str = "") -> str:
    """A hash of every source file of the package (its path inside the package and its
    bytes) and of numba's version: the name of the cache folder those sources compile to."""
    digest = hashlib.sha256()
    for src in sorted(package.rglob("*.py")):
        digest.update(src.relative_to(package).as_posix().encode())
        digest.update(src.read_bytes())
    digest.update(numba_version.encode())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """The folder the per-version caches live in (PATCHSIM_CACHE_DIR, else the user's cache
    folder)."""
    root = os.environ.get("PATCHSIM_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "patchsim" / "numba"


def cache_subpath(py_file: str | os.PathLike[str], package: Path = PACKAGE) -> str | None:
    """The folder inside the cache for the compiled code of ``py_file``: its folder inside
    the package (``patchsim-engine`` for engine/core.py), the same in every checkout; None
    for a file outside the package (numba's own locators handle it)."""
    try:
        rel = Path(py_file).resolve().parent.relative_to(package)
    except ValueError:
        return None
    return "-".join(("patchsim", *rel.parts))


@functools.cache
def _content_stamp(path: str, mtime: float, size: int) -> str:
    # keyed on the file's time and size too, so that a file edited while the process runs is
    # read again; the stamp itself is the content only
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@functools.lru_cache(maxsize=1)
def locator_class() -> type:
    """Numba's locator for a user-chosen cache folder, with the package's own layout inside
    it (:func:`cache_subpath`) and content stamps, for patchsim's files only."""
    from numba.core.caching import UserProvidedCacheLocator

    class SourceKeyedLocator(UserProvidedCacheLocator):  # type: ignore[misc]  # untyped
        def __init__(self, py_func: Any, py_file: str) -> None:
            super().__init__(py_func, py_file)
            import numba

            sub = cache_subpath(py_file)
            assert sub is not None  # from_function let only the package's files through
            self._cache_path = os.path.join(numba.config.CACHE_DIR, sub)  # type: ignore[attr-defined]

        def get_source_stamp(self) -> str:
            st = os.stat(self._py_file)
            return _content_stamp(self._py_file, st.st_mtime, st.st_size)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if cache_subpath(py_file) is None:
                return None
            return super().from_function(py_func, py_file)

    return SourceKeyedLocator


def skip_loop_vectorizer() -> None:
    """Compile without LLVM's loop vectorizer, unless NUMBA_LOOP_VECTORIZE says otherwise.

    Patchsim's compiled code is branchy integer work (bit masks, searches, short loops over
    offers and placements) that the vectorizer seldom transforms but always analyses: without
    it a first run compiles about a fifth less (13-14 s against 17 s) and plays as fast
    (docs/benchmarks.md, "The first run and the compile cache", 2026-12-07). No patchsim
    function uses fastmath, so the vectorizer could not reorder a floating-point sum: the same
    games either way (the pinned games of the tests check it). Numba reads the setting at
    every compile, so it also holds for other numba code compiled in the same process."""
    import numba

    if "NUMBA_LOOP_VECTORIZE" not in os.environ:
        numba.config.LOOP_VECTORIZE = 0  # type: ignore[attr-defined]  # set at run time


def configure() -> None:
    """Point numba at the cache of these sources, and file patchsim's code in it by where it
    lies inside the package (not on disk); compile without the loop vectorizer
    (:func:`skip_loop_vectorizer`). The cache is left alone when NUMBA_CACHE_DIR is set."""
    import numba
    from numba.core import caching

    skip_loop_vectorizer()
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    folder = cache_root() / source_digest(PACKAGE, numba.__version__)
    numba.config.CACHE_DIR = str(folder)  # type: ignore[attr-defined]  # set at run time
    # the list every cache implementation searches (CacheImpl; _CacheImpl before numba 0.61)
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")  # noqa: B009
    locators = impl._locator_classes
    cls = locator_class()
    if cls not in locators:
        # first: it takes only patchsim's files, every other file goes on to numba's own
        locators.insert(0, cls)
