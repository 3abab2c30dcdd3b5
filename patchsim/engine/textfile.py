"""Reading a user's text file within bounds, and naming a file in a message: a size limit
read no further (a device such as /dev/zero never ends), what a path is when it is no regular
file (a directory, a named pipe, ...), and a path shortened when it is long or unprintable.
The YAML reader (:mod:`patchsim.engine.yamlfile`), game records and run folders share them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from patchsim.errors import PatchsimError, quote

PATH_CHARS = 300  # a path is shown whole up to this length


class InputTooLargeError(PatchsimError, ValueError):
    """A file larger than the limit for its kind; the message names the file and the limit."""

    def __init__(self, label: str, limit: int, what: str) -> None:
        self.label, self.limit = label, limit
        super().__init__(f"{label}: larger than {_size(limit)}, the limit for {what}")


def _size(n: int) -> str:
    return f"{n / 1_000_000:g} MB" if n >= 1_000_000 else f"{n / 1000:g} kB"


def read_text_bounded(path: str | Path, limit: int, what: str, label: str | None = None) -> str:
    """The UTF-8 text of ``path``, read only up to ``limit`` bytes (a device such as /dev/zero
    or a huge file is refused after reading that much, not read to its end).

    Raises InputTooLargeError beyond the limit, OSError and UnicodeDecodeError as reading does;
    ``what`` names the kind of file in the message ("a YAML file")."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InputTooLargeError(label or str(path), limit, what)
    return data.decode("utf-8")


def not_a_file(path: str | Path) -> str | None:
    """What ``path`` is when it is no regular file, for a message ("no such file", "a
    directory", "a named pipe (FIFO)", ...); None for a regular file (symlinks followed).
    Raises OSError and ValueError as ``os.stat`` does for a name no file can have."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return ("no such file (a symbolic link to a missing file)" if os.path.islink(path)
                else "no such file")
    return None if stat.S_ISREG(mode) else file_kind(mode)


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``os.stat(...).st_mode``) is, for a message: "a file" (a
    regular one), "a directory", "a named pipe (FIFO)", "a socket", ..."""
    kinds = [(stat.S_ISREG, "a file"), (stat.S_ISDIR, "a directory"),
             (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def short_path(path: str | Path, limit: int = PATH_CHARS) -> str:
    """A path for messages: as given when short and printable, else quoted and cut."""
    text = str(path)
    if len(text) <= limit and text.isprintable():
        return text
    return quote(text, limit)
