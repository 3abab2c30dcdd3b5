"""Test-session configuration.

The ``slow`` marker (registered in pyproject.toml) selects the fast subset:
``python -m pytest -m "not slow"``. Most slow tests carry ``@pytest.mark.slow`` themselves;
the modules below are slow as a whole and are marked here (they do not import pytest).
"""

from __future__ import annotations

from pathlib import Path

import pytest

SLOW_MODULES = {
    "test_jit_parity.py",  # the whole engine interpreted with NUMBA_DISABLE_JIT, in subprocesses
    "test_engine_vs_referee.py",  # hundreds of positions replayed through the Python referee
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
