"""The first run's helper (patchsim.play.compile_ahead): a helper that fails, cannot start
or hangs costs only time; the loop then compiles the tree itself. (That a working helper
compiles the tree for the loop's very types is the slow test of test_compile_specialised.)"""

from __future__ import annotations

import subprocess
import sys

import numba
import numpy as np

from patchsim.play import compile_ahead, worker
from patchsim.play.config import load_run_config


def test_no_helper_and_a_failed_helper_are_not_a_compiled_tree():
    assert compile_ahead.finish(None) is False
    failed = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert compile_ahead.finish(failed) is False


def test_a_helper_that_hangs_is_stopped_at_the_timeout():
    hung = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert compile_ahead.finish(hung, timeout=0.5) is False
    assert hung.poll() is not None  # stopped, not left running


def test_the_plain_circle_is_a_deal_layout():
    circle = compile_ahead.plain_circle(5, 2)
    assert circle.tolist() == [0, 1, 3, 4, 2]  # every position once, the starting one last
    assert circle.dtype == np.int64


def test_a_warm_up_that_compiles_leaves_the_mark_and_a_python_line_up_leaves_none(
        tmp_path, monkeypatch):
    """The mark stops later warm-ups (a cached run on the threading backend too) from
    starting the helper again; a line-up with nothing compiled has filled nothing."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path), raising=False)
    mark = tmp_path / worker.WARM_MARK
    worker.warm_up(load_run_config("edition2", games=2, bots=["unruly_bots:Sleeper(at=99)",
                                                            "unruly_bots:Crasher(at=99)"]))
    assert not mark.exists()
    worker.warm_up(load_run_config("edition2", games=2, bots=["greedy", "random"]))
    assert mark.exists() and worker.cache_is_warm()
