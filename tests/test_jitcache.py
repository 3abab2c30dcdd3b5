"""The compile cache is keyed by the sources, not the folder (issue 30): a second checkout of
the same sources elsewhere loads the code the first compiled, and any edit of a source starts
a fresh cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchsim import _jitcache

PACKAGE = Path(_jitcache.__file__).resolve().parent

# a compiled function in a module of the package copy: small, so the test compiles in seconds
PROBE = '''
from patchsim import _jitcache

_jitcache.configure()

import numba


@numba.njit(cache=True)
def twice(x):
    return 2 * x
'''

RUN = '''
import json, numba, patchsim._probe as p
p.twice(21)
print(json.dumps({"hits": sum(p.twice.stats.cache_hits.values()),
                  "misses": sum(p.twice.stats.cache_misses.values()),
                  "dir": numba.config.CACHE_DIR}))
'''


def checkout(where: Path) -> Path:
    """A copy of the package's sources (no caches, no data) with the probe module in it."""
    target = where / "patchsim"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns(
        "__pycache__", "*.json", "*.png", "*.js", "*.html", "*.css", "*.yaml", "*.csv"))
    (target / "_probe.py").write_text(PROBE)
    return where


def run(root: Path, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(root), PATCHSIM_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", RUN], cwd=root, env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_second_checkout_of_the_same_sources_loads_the_compiled_code(tmp_path) -> None:
    cache = tmp_path / "cache"
    a, b = checkout(tmp_path / "a"), checkout(tmp_path / "clone" / "elsewhere")
    first = run(a, cache)
    assert first["misses"] == 1 and first["hits"] == 0  # compiled, and written
    os.utime(b / "patchsim" / "_probe.py", (1, 1))  # another time, as a fresh clone has
    second = run(b, cache)
    assert second["dir"] == first["dir"]  # one folder for one version of the sources
    assert second["hits"] == 1 and second["misses"] == 0  # loaded, not compiled again
    # an edit anywhere in the sources is another version: a fresh folder
    with open(b / "patchsim" / "errors.py", "a") as f:
        f.write("\n# edited\n")
    third = run(b, cache)
    assert third["dir"] != first["dir"] and third["misses"] == 1


def test_the_cache_folder_inside_is_the_module_folder_in_the_package(tmp_path) -> None:
    assert _jitcache.cache_subpath(PACKAGE / "engine" / "core.py") == "patchsim-engine"
    assert _jitcache.cache_subpath(PACKAGE / "_jitcache.py") == "patchsim"
    assert _jitcache.cache_subpath(tmp_path / "other.py") is None  # numba's own locators
    copy = tmp_path / "patchsim"
    (copy / "engine").mkdir(parents=True)
    assert _jitcache.cache_subpath(copy / "engine" / "core.py", copy) == "patchsim-engine"


def test_the_folder_name_is_a_hash_of_the_sources_and_numba(tmp_path) -> None:
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    one = _jitcache.source_digest(pkg, "0.60")
    moved = tmp_path / "elsewhere" / "p"
    shutil.copytree(pkg, moved)
    assert _jitcache.source_digest(moved, "0.60") == one  # where it lies does not count
    assert _jitcache.source_digest(pkg, "0.61") != one
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    assert _jitcache.source_digest(pkg, "0.60") != one


VECTORIZER = "import numba, patchsim.engine; print(numba.config.LOOP_VECTORIZE)"


@pytest.mark.parametrize(("env", "expected"), [(None, "0"), ("1", "1"), ("0", "0")])
def test_patchsim_compiles_without_the_loop_vectorizer_unless_the_user_asks(env, expected) -> None:
    # the vectorizer costs compile time and buys patchsim's branchy code nothing; a user's
    # NUMBA_LOOP_VECTORIZE is theirs to keep
    child = {k: v for k, v in os.environ.items() if k != "NUMBA_LOOP_VECTORIZE"}
    if env is not None:
        child["NUMBA_LOOP_VECTORIZE"] = env
    out = subprocess.run([sys.executable, "-c", VECTORIZER], env=child, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == expected
