"""Small runs shared by the analysis tests: played once per test session, on disk, so that
every module asking for the same run (same name) reuses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchsim.play.config import load_run_config
from patchsim.play.execution import execute


def shared_run(factory: pytest.TempPathFactory, name: str, ref: str, games: int,
               bots: list[str], seed: int = 1) -> Path:
    d = factory.getbasetemp() / "patchsim-runs" / name
    if not (d / "games.parquet").exists():
        cfg = load_run_config(ref, games=games, bots=bots, seed=seed)
        execute(cfg, d, jobs=1, backend="sequential")
    return d
