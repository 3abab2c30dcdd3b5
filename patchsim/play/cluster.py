"""Warming a Dask cluster: every worker loads the run's compiled code once, before any batch
is handed out (:func:`warm_cluster`).

Without it each fresh worker compiles everything on its first batch, all at once: two
workers on one machine then spend twice the CPU of one compilation racing to write the same
cache files, while their batches wait. Here the first worker of each cache folder (workers on
one machine, run by one user, share numba's cache folder) compiles, and the other workers of
that folder start only once it is done, so they load the code from the cache in about a
second. A worker that is already warm answers at once, so every Dask run warms first.

The functions the workers run are plain module functions (shipped by reference, so the
workers need this version of patchsim installed); ``dask.distributed`` is not imported here:
the client comes from the caller.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from patchsim.play.config import RunConfig, RunError
from patchsim.play.worker import WARM_MARK, cache_folder, warm_up

WarmProgress = Callable[["WarmedWorker | None", int, int], None]
"""(the worker just warmed, or None at the start; workers warm; workers in all)"""

WAIT_FOR_WORKERS_S = 30.0  # a scheduler with no worker yet: how long to wait for one
# what a worker's first warm-up costs with an empty cache, as measured (play.worker.warm_up
# of the default line-up on edition2, one process, 2026-12-03 on a 2-core machine): 38-40 s at
# a load of 1.2-2.0 since a run compiles only the code its bots use (51-55 s before, at a load
# of 1.5-2.8, in the same interleaved measurement; 61.0 s at 1.3-1.7 earlier that day, 596 s
# at a load of 9-11); with the cache filled it loads in 0.6 s
COMPILE_COST = ("about 40 s on an idle core, several times that on a busy machine; "
                "under a second once cached")


@dataclass(frozen=True)
class WarmedWorker:
    """One worker's warm-up: its address, machine, numba cache folder, how long it took and
    whether it found the cache already filled (then it only loaded the code)."""

    address: str
    host: str
    cache: str
    seconds: float
    was_warm: bool


def _where() -> tuple[str, str, bool]:
    """On a worker: its machine, its numba cache folder and whether that is warm already."""
    folder = cache_folder()
    return socket.gethostname(), str(folder), (folder / WARM_MARK).exists()


def _warm(config: RunConfig) -> tuple[float, bool]:
    """On a worker: load (or compile) the run's code; how long it took, and whether the
    cache was filled already."""
    t = time.perf_counter()
    mark = cache_folder() / WARM_MARK
    was_warm = mark.exists()
    warm_up(config)
    # the cache now holds the run's code: a local run on this machine need not compile
    mark.touch()
    return time.perf_counter() - t, was_warm


def _workers(client: Any, scheduler: str) -> list[str]:
    try:
        client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_S)
    except Exception:  # noqa: BLE001 - distributed raises TimeoutError or its own kinds
        raise RunError(f"the Dask scheduler {scheduler} has no workers (none joined within "
                       f"{WAIT_FOR_WORKERS_S:.0f} s): start them with `dask worker "
                       f"{scheduler}`") from None
    return sorted(client.scheduler_info(n_workers=-1)["workers"])


def warm_cluster(client: Any, config: RunConfig, progress: WarmProgress | None = None,
                 *, scheduler: str = "") -> list[WarmedWorker]:
    """Warm every worker of the cluster ``client`` is connected to for ``config``: the first
    worker of each cache folder compiles (or loads) the code, the others of that folder load
    it once that one is done. ``progress(worker, done, total)`` is called at the start (with
    None) and as each worker is ready. Raises RunError when there is no worker or a worker
    cannot warm up (e.g. patchsim is not installed there)."""
    from distributed import as_completed  # the caller has a client: distributed is there

    addresses = _workers(client, scheduler or "")
    try:
        where = client.run(_where, workers=addresses)
    except Exception as e:  # noqa: BLE001 - anything a worker raises comes back here
        raise RunError(f"a Dask worker cannot run patchsim ({type(e).__name__}: {e}); "
                       "install the same patchsim on every worker") from None
    groups: dict[tuple[str, str], list[str]] = {}
    for addr in addresses:
        host, cache, _warm_already = where[addr]
        groups.setdefault((host, cache), []).append(addr)
    total = len(addresses)
    if progress:
        progress(None, 0, total)

    def submit(addr: str) -> Any:
        # pinned to that worker: each worker has to load the code into its own process
        return client.submit(_warm, config, workers=[addr], allow_other_workers=False,
                             pure=False, key=f"patchsim-warm-{addr}")

    waiting: dict[str, list[str]] = {}  # leader -> the workers that follow it
    futures = {}
    for members in groups.values():
        lead, *rest = members
        if where[lead][2]:  # a filled cache: everyone loads at once
            futures.update({submit(a): a for a in members})
        else:
            futures[submit(lead)] = lead
            waiting[lead] = rest
    done: list[WarmedWorker] = []
    pending = as_completed(list(futures))
    for future in pending:
        addr = futures[future]
        try:
            seconds, was_warm = future.result()
        except Exception as e:  # noqa: BLE001 - the worker's own error, shown with its name
            for f in futures:
                f.cancel()
            raise RunError(f"Dask worker {addr} could not warm up ({type(e).__name__}: {e}); "
                           "it needs the same patchsim as this machine") from None
        host, cache, _ = where[addr]
        warmed = WarmedWorker(addr, host, cache, seconds, was_warm)
        done.append(warmed)
        for follower in waiting.pop(addr, []):
            f = submit(follower)
            futures[f] = follower
            pending.add(f)
        if progress:
            progress(warmed, len(done), total)
    for f in futures:
        f.release()
    return done
