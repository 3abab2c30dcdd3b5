"""The Dask backend: a run on an in-process local cluster stores the same tables as a local
run; a scheduler that cannot be reached is a RunError, found before any game is played."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("dask.distributed")

from patchsim.play.config import RunError, load_run_config  # noqa: E402
from patchsim.play.execution import execute  # noqa: E402


def run(bots, run_dir: Path, batch: int | None = None, **kw):
    cfg = load_run_config("edition2", games=20, bots=bots)
    cfg.batch_deals = batch
    return execute(cfg, run_dir, **kw)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as lc:
        yield lc


@pytest.mark.parametrize("bots", [["greedy", "random"],
                                  ["greedy", "mcts(iterations=10)"],
                                  ["random", "custom_bots:Hoarder(threshold=2)"]])
@pytest.mark.slow
def test_dask_run_stores_the_tables_of_a_local_run(cluster, tmp_path, bots):
    local = run(bots, tmp_path / "local", jobs=1)
    remote = run(bots, tmp_path / "dask", batch=2, backend="dask",
                 scheduler=cluster.scheduler_address)
    assert remote.complete and remote.games == local.games == 60
    for kind in ("games", "events"):
        assert (tmp_path / "local" / f"{kind}.parquet").read_bytes() == \
            (tmp_path / "dask" / f"{kind}.parquet").read_bytes(), kind
    # the cluster is still usable afterwards (the run closed only its own client)
    with distributed.Client(cluster.scheduler_address, timeout="10s") as client:
        assert client.submit(sum, [1, 2]).result() == 3


@pytest.mark.slow
def test_dask_resume_after_local_start(cluster, tmp_path):
    """Part of a run played locally, the rest on the cluster: the same tables."""
    bots = ["greedy", "random"]
    run(bots, tmp_path / "local", jobs=1)
    cfg = load_run_config("edition2", games=10, bots=bots)
    cfg.batch_deals = 2
    execute(cfg, tmp_path / "mixed", jobs=1)
    run(bots, tmp_path / "mixed", batch=2, backend="dask", scheduler=cluster.scheduler_address)
    for kind in ("games", "events"):
        assert (tmp_path / "local" / f"{kind}.parquet").read_bytes() == \
            (tmp_path / "mixed" / f"{kind}.parquet").read_bytes(), kind


@pytest.mark.slow
def test_unreachable_scheduler_is_run_error(tmp_path):
    t = time.perf_counter()
    with pytest.raises(RunError, match="cannot reach the Dask scheduler tcp://127.0.0.1:1"):
        run(["greedy", "random"], tmp_path / "run", backend="dask",
            scheduler="tcp://127.0.0.1:1")
    assert time.perf_counter() - t < 30  # the client's 10 s connect timeout, not a hang
    assert not list((tmp_path / "run").glob("batches/*.arrow"))
    assert not (tmp_path / "run" / "games.parquet").exists()


def test_dask_without_scheduler_is_run_error(tmp_path):
    with pytest.raises(RunError, match="needs a scheduler"):
        run(["greedy"], tmp_path / "run", backend="dask")
