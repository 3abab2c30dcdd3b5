"""What a server may read: the folders it was given, checked, and a file inside a folder
resolved so that no request leads out of it (no absolute path, no ``..``, no hidden name, no
symlink out), with the errors a request is refused with."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from patchsim.engine.textfile import PATH_CHARS
from patchsim.errors import PatchsimError, quote
from patchsim.play.runfolder import BATCHES, FIGURES, MANIFEST

SKIP_DIRS = {BATCHES, FIGURES, "__pycache__", "node_modules"}


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


def inside(base: Path, rel: str, what: str = "file") -> Path:
    """The existing regular file ``rel`` (a relative path with ``/``) inside the folder
    ``base``. WebError 403 for an absolute path, ``..``, a hidden name or a symlink that
    leads out of ``base``; 404 when there is no such file."""
    if not isinstance(rel, str) or not rel or "\x00" in rel or "\\" in rel:
        raise WebError(400, f"{what}: give a relative path inside the folder")
    parts = PurePosixPath(rel).parts
    if rel.startswith("/") or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise WebError(403, f"{what} {quote(rel, PATH_CHARS)}: only files inside the folder "
                            "are served (no absolute paths, no '..')")
    if any(p.startswith(".") for p in parts):
        raise WebError(403, f"{what} {quote(rel, PATH_CHARS)}: hidden files are not served")
    root = base.resolve()
    try:
        full = (root / rel).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise WebError(404, f"{what} {quote(rel, PATH_CHARS)}: no such file") from None
    except (OSError, RuntimeError) as e:  # a symlink loop, a permission problem
        # not str(e): it holds rel whole
        why = ("a loop of symbolic links" if isinstance(e, RuntimeError)
               else e.strerror or type(e).__name__)
        raise WebError(403, f"{what} {quote(rel, PATH_CHARS)}: cannot be opened ({why})"
                       ) from None
    if not full.is_relative_to(root):
        raise WebError(403, f"{what} {quote(rel, PATH_CHARS)}: it leads out of the folder (a "
                            "symlink); only files inside the folder are served")
    if not full.is_file():
        raise WebError(404, f"{what} {quote(rel, PATH_CHARS)}: not a file")
    return full


def files_in(base: Path, suffixes: tuple[str, ...], depth: int = 2) -> list[str]:
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
