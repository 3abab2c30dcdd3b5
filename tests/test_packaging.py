"""The shipped rulesets travel with a plain (non-editable) install: a wheel built from this
tree carries configs/ inside the package, and `load_ruleset("edition2")` works from any
working directory with only the installed package."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a wheel and pip-installs it

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(ROOT)], check=True, capture_output=True)
    (found,) = out.glob("patchsim-*.whl")
    return found


def test_wheel_carries_the_shipped_rulesets(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("patchsim/configs/edition1.yaml", "patchsim/configs/edition2.yaml",
              "patchsim/configs/patches/base.yaml", "patchsim/configs/variants/quilt7.yaml"):
        assert f in names, f


def test_installed_package_finds_rulesets_by_name_from_anywhere(wheel: Path,
                                                                tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    code = ("import patchsim, patchsim.engine.ruleset as r; "
            "assert 'site' in patchsim.__file__, patchsim.__file__; "
            "print(r.load_ruleset('edition2').leather_marks, r.load_ruleset('edition1').name)")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True,
                          text=True, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin",
                                          "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "(26, 32, 38, 44, 50) edition1" in done.stdout
