"""The Dask backend: a run on an in-process local cluster, and on real `dask scheduler` and
`dask worker` processes, stores the same tables as a local run; the workers are warmed first
(the first of each cache folder compiles, the others then load); a scheduler that cannot be
reached is a RunError, found before any game is played."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("dask.distributed")

from patchsim.play.cluster import warm_cluster  # noqa: E402
from patchsim.play.config import RunError, load_run_config  # noqa: E402
from patchsim.play.execution import dask_client, execute  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


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


@contextlib.contextmanager
def real_cluster(folder: Path, workers: int = 2,
                 env: dict[str, str] | None = None) -> Iterator[Path]:
    """A `dask scheduler` and `dask worker` processes on 127.0.0.1 with random ports (the
    scheduler file is yielded), torn down on the way out."""
    folder.mkdir(parents=True, exist_ok=True)
    sched_file = folder / "scheduler.json"
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    dask = [sys.executable, "-m", "dask"]
    procs = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--dashboard-address", "127.0.0.1:0", "--scheduler-file",
                               str(sched_file)], env=environ, cwd=folder,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        # the file appears once the scheduler listens (written whole: wait until it parses)
        while True:
            assert procs[0].poll() is None, "the scheduler exited"
            with contextlib.suppress(OSError, ValueError):
                json.loads(sched_file.read_text())
                break
            time.sleep(0.1)
        procs += [subprocess.Popen([*dask, "worker", "--scheduler-file", str(sched_file),
                                    "--nthreads", "1", "--no-nanny", "--no-dashboard"],
                                   env=environ, cwd=folder, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) for _ in range(workers)]
        with distributed.Client(scheduler_file=str(sched_file), timeout="30s") as client:
            client.wait_for_workers(workers, timeout=120)
        yield sched_file
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.mark.slow
def test_real_cluster_warms_its_workers_and_stores_the_tables_of_a_local_run(tmp_path):
    """Real scheduler and worker processes (sharing this session's numba cache): every
    worker is warmed before the first batch, and the tables equal a local run's."""
    bots = ["greedy", "mcts(iterations=10)"]
    local = run(bots, tmp_path / "local", jobs=1)  # fills the cache the workers share
    calls = []
    with real_cluster(tmp_path / "cluster") as sched_file:
        remote = run(bots, tmp_path / "dask", batch=2, backend="dask",
                     scheduler=str(sched_file),
                     warm_progress=lambda w, done, total: calls.append((w, done, total)))
    assert remote.complete and remote.games == local.games == 60
    for kind in ("games", "events"):
        assert (tmp_path / "local" / f"{kind}.parquet").read_bytes() == \
            (tmp_path / "dask" / f"{kind}.parquet").read_bytes(), kind
    assert calls[0] == (None, 0, 2)
    assert [(done, total) for _, done, total in calls[1:]] == [(1, 2), (2, 2)]
    assert len({w.address for w, _, _ in calls[1:]}) == 2


@pytest.mark.slow
def test_the_first_worker_of_a_cache_folder_warms_before_the_others(tmp_path):
    """Two workers on one fresh cache folder: one warms it, the other starts only then and
    finds it filled (it loads instead of compiling at the same time). A Python bot keeps
    the warm-up itself instant (nothing of it is compiled): what is tested is the order."""
    cfg = load_run_config("edition2", games=2, bots=["custom_bots:Hoarder(threshold=2)"],
                          bot_path=[str(REPO / "tests")])
    cache = tmp_path / "numba-cache"
    with real_cluster(tmp_path / "cluster", env={"NUMBA_CACHE_DIR": str(cache)}) as sched:
        client = dask_client(str(sched))
        try:
            first = warm_cluster(client, cfg)
            again = warm_cluster(client, cfg)
        finally:
            client.close()
    assert [w.was_warm for w in first] == [False, True]
    assert {w.cache for w in first} == {str(cache)}
    assert all(w.was_warm for w in again)  # warm workers answer at once


def test_a_scheduler_without_workers_is_run_error(tmp_path, monkeypatch):
    """No worker joins: a RunError that says so, not a hang."""
    from patchsim.play import cluster

    monkeypatch.setattr(cluster, "WAIT_FOR_WORKERS_S", 0.5)
    cfg = load_run_config("edition2", games=2, bots=["random"])
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address="127.0.0.1:0") as lc, \
            distributed.Client(lc.scheduler_address, timeout="10s") as client, \
            pytest.raises(RunError, match="has no workers"):
        warm_cluster(client, cfg, scheduler=lc.scheduler_address)


@pytest.mark.slow
def test_warm_command_reports_every_worker(cluster):
    """`patchsim warm --scheduler ADDR`: a line as each worker is ready, then a summary."""
    from typer.testing import CliRunner

    from patchsim.cli.main import app

    result = CliRunner().invoke(app, ["warm", "--scheduler", cluster.scheduler_address,
                                      "edition2", "--bots", "greedy;random"])
    assert result.exit_code == 0, result.output
    assert "warming 2 Dask worker(s)" in result.output
    assert "1/2 ready" in result.output and "2/2 ready" in result.output
    assert "2 worker(s) warm for edition2: greedy; random" in result.output
