"""What a worker process runs: one batch at a time (:func:`run_batch`), after the compiled
code is ready (:func:`warm_up`, :func:`warm_gate`).

Kept apart from the runner's parent side (:mod:`patchsim.play.execution`) so that a worker
imports only what playing and storing a batch needs: a worker process starts in about half
the time it would take if it imported the runner, its statistics and pandas.
"""

from __future__ import annotations

import contextlib
import faulthandler
import fcntl
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from pathlib import Path
from typing import TypeVar

import numba
import numpy as np
from joblib import Parallel, delayed, parallel_config

from patchsim.bots import policies
from patchsim.bots.features import LEARNED
from patchsim.bots.learned import LearnedBot, ModelError, bind_bot, param_rows
from patchsim.bots.registry import Bot, CompiledBot, make_bot
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.tables import compile_ruleset
from patchsim.play import compile_ahead
from patchsim.play import loops as playout
from patchsim.play.batches import Batch, BatchStopped, play_batch
from patchsim.play.config import RunConfig, RunError
from patchsim.play.match import BotError, max_events, max_plies
from patchsim.play.runfolder import batch_path, write_batch


def warm_up(config: RunConfig) -> None:
    """Compile the run's code (or load it from the cache) in this process: what its batches
    call and nothing else (:func:`patchsim.play.batches.play_batch`). A pairing of two
    compiled bots plays inside the compiled loop, specialised for the code the run's bots
    use (:func:`patchsim.play.loops.code_needed`: a run without a rollout search, a value
    network or war rollouts compiles none of them); a compiled bot against a Python one
    moves through :func:`policies.choose_move`. One cheap game or move of random play
    compiles either: numba compiles for the arguments' types, not the bot's values."""
    rs = config.rulesets[0]
    tables = compile_ruleset(rs)
    bots: list[Bot] = []
    for spec in config.bots:
        bot = make_bot(spec, bot_path=config.bot_path)
        try:  # as play_batch binds them: a learned bot to its model, a restriction
            bot = bind_bot(bot, tables)
        except ModelError as e:
            raise RunError(str(e)) from None
        bots.append(bot.bind(tables) if isinstance(bot, CompiledBot) else bot)
    compiled = [isinstance(b, CompiledBot) for b in bots]
    in_loop = sorted({i for a, b in config.pairings if compiled[a] and compiled[b]
                      for i in (a, b)})
    mixed = any(compiled[a] != compiled[b] for a, b in config.pairings)
    if not in_loop and not mixed:
        return  # Python bots only: nothing of theirs is compiled
    with compile_ahead.temporary_folder() as folder:
        helper = None
        if in_loop:
            run_bots = [b for i, b in enumerate(bots)
                        if i in in_loop and isinstance(b, CompiledBot)]
            like = (np.array([b.kind for b in run_bots], dtype=np.int64),
                    param_rows([b.params for b in run_bots]))
            needed = playout.code_needed(*like)
            learned = [i for i, b in enumerate(run_bots) if b.kind == LEARNED]
            if learned and not cache_is_warm():  # a cold cache: compile on two cores
                row = like[1][learned[0]]
                circle = compile_ahead.plain_circle(len(rs.patches),
                                                    tables.patch_index[rs.start_after])
                helper = compile_ahead.start(tables.tab, row, circle, needed, Path(folder))
        idx = np.array([[tables.patch_index[c] for c in deal_circle(rs, 0)]], dtype=np.int64)
        if helper is not None:
            compile_ahead.compile_beside(tables.tab, row, core.new_state(tables.tab, idx[0]),
                                         needed)
            compile_ahead.finish(helper)
    if in_loop:
        playout.play_deals(tables.tab, idx, np.zeros((1, 2), dtype=np.uint64),
                           np.full(2, policies.RANDOM, dtype=np.int64),
                           np.zeros((2, policies.N_PARAMS)), max_plies(rs),
                           max_events(rs), np.zeros(1, dtype=np.int64), like=like)
    if mixed:
        state = core.new_state(tables.tab, idx[0])
        policies.choose_move(policies.RANDOM, np.zeros(policies.N_PARAMS), state, tables.tab,
                             np.ones(1, dtype=np.uint64),
                             np.empty(core.max_moves(tables.tab), dtype=np.int64))
    # filled: a later warm-up (a cached run on any backend, a worker's first task) only
    # loads, and starts no helper. Python-only line-ups returned above and leave no mark.
    (cache_folder() / WARM_MARK).touch()


WARM_MARK = "patchsim-warm.done"  # in numba's cache folder: a warm-up has filled it


def cache_folder() -> Path:
    """numba's cache folder for this process (created if missing)."""
    # numba.config sets its options at import, from the environment (no stubs name them)
    folder = Path(getattr(numba.config, "CACHE_DIR", "") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def cache_is_warm() -> bool:
    """Whether a warm-up has already filled numba's cache for this version of patchsim (the
    cache folder is named after a hash of the sources, so the mark goes with them)."""
    return (cache_folder() / WARM_MARK).exists()


@contextlib.contextmanager
def warm_gate(config: RunConfig) -> Iterator[str]:
    """The gate local workers pass before their first batch (its path goes to
    :func:`run_batch`). The body starts the workers; on leaving it, this process warms up
    (:func:`warm_up`) and then opens the gate, so the workers load the compiled code from
    the cache instead of compiling it at the same time, racing to write the same files.
    Starting the workers and the warm-up overlap (a worker takes about half a second to
    import).

    Once a warm-up has filled the cache the gate stays open and there is no warm-up here:
    each worker loads what it needs (a signature the warm-up did not cover is compiled by
    the worker; numba writes its cache files atomically, so that is only slower).

    The gate is an ``flock`` on a file in numba's cache folder: held exclusively here,
    taken shared by the workers, so they pass together; the kernel frees it when this
    process dies, so no worker waits for a parent that is gone."""
    folder = cache_folder()
    path = str(folder / "patchsim-warm.lock")
    if cache_is_warm():
        yield path
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
        warm_up(config)  # writes the mark once it has compiled something
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


_PASSED_GATE: set[str] = set()  # gates this worker process has passed


def _wait_at_gate(path: str) -> None:
    if path in _PASSED_GATE:
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:  # no access to the parent's cache folder: just go on
        _PASSED_GATE.add(path)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    _PASSED_GATE.add(path)


_WATCHDOG: list[int] = []  # the owner pid this worker process watches (set once)


def _watch_owner(owner_pid: int) -> None:
    """In a worker process: exit within a second once the run's main process is gone, so no
    orphan keeps writing into the folder (the main process may die by SIGKILL, which gives
    it no chance to stop its workers). A worker whose parent dies is re-parented."""
    if _WATCHDOG or owner_pid == os.getpid():
        return
    _WATCHDOG.append(owner_pid)
    # Ctrl-C in a terminal reaches the whole process group, workers too: the run's main
    # process stops the workers itself, and a KeyboardInterrupt here could land while
    # numba boxes a compiled call's result, which crashes (see execution.batch_results)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != owner_pid:
                os._exit(1)

    threading.Thread(target=watch, name="patchsim-owner-watch", daemon=True).start()


CRASH_LOG = "worker-crashes.log"  # in a run's batches folder: the stacks of a crashed worker
_CRASH_LOG: list = []  # the run folder and open file this worker's fault handler writes to


def _log_crashes(run_dir: str) -> None:
    """In a local worker process: a fatal error (a bot's segfault) dumps the stacks into the
    run's batches folder (removed with it once the run completes), not onto the terminal,
    where fifty lines would come before the message that a worker died."""
    if _CRASH_LOG and _CRASH_LOG[0] == run_dir:
        return
    path = Path(run_dir) / "batches" / CRASH_LOG
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path, "a")  # noqa: SIM115 - open for the process's life: the handler's
    except OSError:
        return  # then the stacks go where they went before
    faulthandler.enable(file=log, all_threads=True)
    if _CRASH_LOG:
        _CRASH_LOG[1].close()  # the previous run's (the handler now writes to the new one)
    _CRASH_LOG[:] = [run_dir, log]


def run_batch(config: RunConfig, batch: Batch, run_id: str, write_to: str | None = None,
              owner_pid: int | None = None, gate: str | None = None,
              stop: np.ndarray | None = None):
    """Play a batch in a worker. With ``write_to`` (a run folder this worker can write: local
    backends) the worker stores the batch files itself, so the parent does no per-batch
    work; otherwise (Dask workers on other machines) the tables travel back. With
    ``owner_pid`` (local worker processes) the worker stops when that process is gone; with
    ``gate`` (the path :func:`warm_gate` yields) it waits for the parent's warm-up first;
    ``stop`` is the flag of :func:`in_threads` (BatchStopped once it is set)."""
    if owner_pid is not None:
        _watch_owner(owner_pid)
        if write_to is not None:
            _log_crashes(write_to)
    if gate is not None:
        _wait_at_gate(gate)
    if stop is not None and stop[0] != 0:
        raise BatchStopped(batch.key)
    t = time.perf_counter()
    try:
        games, events = play_batch(config, batch, run_id, stop)
    except BotError as e:
        return batch, None, None, e, time.perf_counter() - t, 0
    if write_to is not None:
        run_dir = Path(write_to)
        write_batch(events, batch_path(run_dir, run_id, batch.key, "events"))
        write_batch(games, batch_path(run_dir, run_id, batch.key, "games"))
        return batch, None, None, None, time.perf_counter() - t, games.num_rows
    return batch, games, events, None, time.perf_counter() - t, games.num_rows


BACKENDS = ("auto", "loky", "threading", "sequential", "dask")


def local_backend(config: RunConfig, backend: str = "auto") -> str:
    """The backend ``auto`` stands for, for this run; any other name is returned as given.

    Threads when every bot plays inside the compiled loop: it releases the GIL, so threads
    play in parallel, share one copy of the compiled code and start with no process to spawn
    or warm up (at two workers this is what lets a 100,000-game run scale 1.8x, not 1.75x).
    Worker processes (loky) when any bot is Python code: threads would take turns on the
    GIL."""
    if backend != "auto":
        return backend
    bots = [make_bot(s, bot_path=config.bot_path) for s in config.bots]
    # a learned bot becomes a compiled one once bound to a ruleset's model (play_batch)
    compiled = all(isinstance(b, CompiledBot | LearnedBot) for b in bots)
    return "threading" if compiled else "loky"


T = TypeVar("T")


def in_threads(jobs: int, fn: Callable[..., T], calls: Sequence[tuple]) -> Iterator[T]:
    """``fn(*args, stop=flag)`` for each ``args`` in ``calls`` on ``jobs`` threads, yielding
    the results as they finish (the threading backend: the compiled loop releases the GIL).

    When the caller stops early (a break, an error, Ctrl-C or SIGTERM in the main thread),
    the shared ``stop`` flag is set, so a batch still playing gives up before its next game
    (BatchStopped, discarded: it is played again on resume); batches not started are
    dropped; this returns once every thread is idle. A pool of threads cannot be killed the
    way worker processes can, so this is what keeps a threaded run's stop prompt."""
    stop = np.zeros(1, dtype=np.int64)
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="patchsim-batch")
    futures: list[Future[T]] = []
    try:
        futures.extend(pool.submit(fn, *args, stop=stop) for args in calls)
        for future in as_completed(futures):
            yield future.result()
    finally:
        stop[0] = 1
        pool.shutdown(wait=False, cancel_futures=True)  # drop the batches not started
        # wait until no call runs (each is at most one game from its end), even through a
        # second Ctrl-C: the run's lock and merge must not end while a thread still writes.
        # Waiting on the calls, not joining the threads: a join interrupted by Ctrl-C may
        # mark a running thread finished (CPython 3.11), so joining again would not wait.
        running = [f for f in futures if not f.cancelled()]
        again: KeyboardInterrupt | None = None
        while True:
            try:
                wait(running)
                break
            except KeyboardInterrupt as e:
                again = e
        if again is not None:
            raise again


def check_jobs(jobs: int, backend: str) -> int:
    """Local workers: at least one, at most one per core (more only slow a run down and
    multiply its memory)."""
    cores = os.cpu_count() or 1
    if jobs < 1:
        raise RunError.about("jobs", f"give a number of workers of at least 1, got {jobs}",
                             value=jobs)
    if backend in ("loky", "threading") and jobs > cores:
        raise RunError.about("jobs", f"{jobs} workers, but this machine has {cores} core(s); "
                             "more workers than cores only slow the run down and multiply "
                             f"its memory (use at most {cores}, or a Dask cluster for more)",
                             value=jobs)
    return jobs


_STARTING: list[threading.Thread] = []  # workers being started ahead of a run


def start_workers(jobs: int, config: RunConfig | None = None) -> None:
    """Start ``jobs`` local worker processes (joblib's loky backend) in the background and
    return at once, so that they import while this process is still loading; the next run
    with that backend and number of workers reuses them (joblib keeps its worker processes
    between calls). With the run's ``config`` and a warm cache they also load its compiled
    code meanwhile. Fewer than two workers: nothing to start."""
    check_jobs(jobs, "loky")
    if jobs < 2 or _STARTING:
        return

    def start() -> None:
        # only a head start: when the run ends first (nothing left to play) and its workers
        # are stopped under it, or a worker dies, the run has nothing to be told
        with contextlib.suppress(Exception), parallel_config(backend="loky", n_jobs=jobs):
            Parallel()(delayed(_ready)(config) for _ in range(jobs))

    thread = threading.Thread(target=start, name="patchsim-start-workers", daemon=True)
    thread.start()
    _STARTING.append(thread)


def join_started_workers() -> None:
    """Wait until the workers :func:`start_workers` began are up (before a run uses them:
    two calls must not set up the same worker pool at once)."""
    while _STARTING:
        _STARTING.pop().join()


def _ready(config: RunConfig | None) -> int:
    """A worker's first task: importing this module, and loading the run's compiled code
    when the cache already holds it (never compiling: that waits for the gate)."""
    if config is not None and cache_is_warm():
        warm_up(config)
    return os.getpid()


def stop_workers() -> None:
    """Stop the local worker processes joblib keeps for the next run, now rather than at
    exit. For a command that exits after its run: at exit, each idle worker would be asked
    to stop and waited for while it tears its interpreter down (about a third of a second);
    killing idle workers loses nothing (every batch has been stored). A notebook keeps them:
    its next run starts faster."""
    from joblib.externals.loky import reusable_executor

    join_started_workers()  # not under a pool that is still being set up
    # loky keeps its one reusable executor in a module variable; there is no public handle
    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)
