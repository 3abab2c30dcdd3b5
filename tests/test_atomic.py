"""Atomic writes (patchsim/atomic.py): whole files or none, with the umask's permissions,
and safe from the threads of a threaded run."""

from __future__ import annotations

import os
import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from patchsim.atomic import atomic_path, atomic_write, current_umask


@pytest.fixture
def umask():
    """Set the process umask for a test, and put the old one back."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_written_file_has_the_umask_permissions_and_no_temporary_is_left(umask,
                                                                           tmp_path) -> None:
    umask(0o027)
    atomic_write(tmp_path / "a.txt", "hello")
    assert (tmp_path / "a.txt").read_text() == "hello"
    assert mode(tmp_path / "a.txt") == 0o640  # mkstemp alone would leave 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_a_failed_write_keeps_the_old_file(tmp_path) -> None:
    atomic_write(tmp_path / "a.txt", "old")
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "a.txt") as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed part-way")
    assert (tmp_path / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_threads_writing_at_once_leave_the_umask_alone(umask, tmp_path) -> None:
    # a threaded run writes batch files from several threads at the same time; reading the
    # umask by setting it would let one thread "restore" another's temporary value
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    umask(0o077)
    try:
        def read(_: int) -> set[int]:
            return {current_umask() for _ in range(20000)}

        with ThreadPoolExecutor(4) as ex:
            seen = set().union(*ex.map(read, range(4)))

        def write(i: int) -> None:
            for k in range(20):
                atomic_write(tmp_path / f"t{i}-{k}.bin", b"x")

        with ThreadPoolExecutor(4) as ex:
            list(ex.map(write, range(4)))
    finally:
        sys.setswitchinterval(old_interval)
    assert seen == {0o077}
    assert umask(0o077) == 0o077
    assert {mode(p) for p in tmp_path.iterdir()} == {0o600}
