"""Running a run: every batch not yet stored, in parallel (joblib processes or threads, or a
Dask cluster through joblib), resumable, topped up on request, or stopped on precision."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from joblib import Parallel, delayed, parallel_config
from joblib.externals.loky.process_executor import TerminatedWorkerError

from patchsim.bots.learned import ModelError, bot_model_provenance
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.play.batches import Batch, plan_batches
from patchsim.play.cluster import WarmProgress, warm_cluster
from patchsim.play.config import MAX_GAMES, RunConfig, RunError, run_identity
from patchsim.play.errors import BotFailure, RunInterrupted, RunStorageError
from patchsim.play.match import BotError
from patchsim.play.runfolder import (
    FAILED_GAME,
    MANIFEST,
    TABLE_KINDS,
    RunLock,
    TableMerger,
    atomic_write_text,
    batch_path,
    check_batch,
    check_disk,
    check_output_folder,
    check_table,
    check_writable,
    clean_partials,
    clear_batches,
    read_manifest,
    split_merged,
    stamp_digests,
    table_path,
    versions,
    write_batch,
)
from patchsim.play.worker import (
    BACKENDS,
    CRASH_LOG,
    check_jobs,
    in_threads,
    join_started_workers,
    local_backend,
    run_batch,
    warm_gate,
    warm_up,
)

ProgressFn = Callable[[int, int], None]  # (games just finished, games to play this session)


@dataclass
class RunResult:
    run_dir: Path
    games: int
    seconds: float
    games_per_s: float
    complete: bool
    summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)  # things the caller may want to tell
    played: int = 0  # games played in this session (the rest were stored already)


def dask_client(scheduler: str | None) -> Any:
    """A Dask client connected to ``scheduler`` (an address or a scheduler file); RunError
    when dask.distributed is missing or the scheduler cannot be reached in 10 s."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise RunError("the dask backend needs dask.distributed: "
                       "pip install 'patchsim[dask]'") from None
    if not scheduler:
        raise RunError.about("scheduler", "the dask backend needs a scheduler: an address "
                             "(tcp://host:8786) or a scheduler file")
    try:
        if Path(scheduler).is_file():
            return Client(scheduler_file=scheduler, timeout="10s")
        return Client(scheduler, timeout="10s")
    except Exception as e:  # noqa: BLE001 - distributed raises many kinds; all mean "no"
        raise RunError(f"cannot reach the Dask scheduler {scheduler}: "
                       f"{type(e).__name__}: {e}") from None


def make_parallel(jobs: int, backend: str, scheduler: str | None):
    """The Dask client (or None), the context that selects joblib's backend and the joblib
    executor; no executor for one worker, sequential play and threads (which play through
    :func:`~patchsim.play.worker.in_threads`)."""
    if backend == "dask":
        client = dask_client(scheduler)
        ctx = parallel_config(backend="dask", wait_for_workers_timeout=30)
        return client, ctx, Parallel(return_as="generator_unordered")
    if backend not in BACKENDS:
        raise RunError.about("backend", f"expected one of {', '.join(BACKENDS)}, got {backend!r}",
                             value=backend)
    if backend == "sequential" or jobs == 1:
        return None, contextlib.nullcontext(), None
    if backend == "threading":  # not joblib's: worker.in_threads, which can stop promptly
        return None, contextlib.nullcontext(), None
    return None, parallel_config(backend=backend, n_jobs=jobs), Parallel(
        return_as="generator_unordered")


def batch_results(config: RunConfig, batches: list[Batch], run_id: str, *, jobs: int,
                  backend: str, parallel: Any, write_to: str | None = None,
                  client: Any = None, warm_progress: WarmProgress | None = None) -> Iterator:
    """What :func:`~patchsim.play.worker.run_batch` returns for each batch, as batches
    finish, on the backend chosen (``parallel`` and ``client`` from :func:`make_parallel`).
    A Dask cluster is warmed first (:func:`~patchsim.play.cluster.warm_cluster`, reporting
    to ``warm_progress``). The caller closes the stream when it stops early, so batches
    still playing stop too."""
    if not batches:
        nothing: tuple[Any, ...] = ()
        return (r for r in nothing)  # closable, like every other stream here
    if client is not None:
        # before any batch: otherwise every fresh worker compiles on its first batch at once
        warm_cluster(client, config, warm_progress, scheduler=str(client.scheduler.address))
    calls = [(config, bt, run_id, write_to) for bt in batches]
    if backend == "threading" and jobs > 1:
        warm_up(config)  # compile once here, not in every thread at once
        return in_threads(jobs, run_batch, calls)
    if parallel is None:
        # in this process, but never on the main thread: a signal's KeyboardInterrupt
        # raised while numba boxes a compiled call's result makes the boxing fail half way,
        # and the process dies of SIGSEGV. On a thread, the main thread only waits, takes
        # the signal, and stops the batch through its flag before the next move
        return in_threads(1, run_batch, calls)
    if backend == "loky":
        join_started_workers()  # those start_workers began, if any: reused now
        # local workers start (and import) while this process warms up behind the gate;
        # they play once the compiled code is in the cache
        with warm_gate(config) as gate:
            return parallel(delayed(run_batch)(config, bt, run_id, write_to, os.getpid(),
                                               gate) for bt in batches)
    return parallel(delayed(run_batch)(config, bt, run_id, write_to) for bt in batches)


def execute(config: RunConfig, run_dir: Path, *, jobs: int = 1, backend: str = "auto",
            scheduler: str | None = None, progress: ProgressFn | None = None,
            command: str = "", keep_batches: bool = False,
            warm_progress: WarmProgress | None = None) -> RunResult:
    """Play every batch of ``config`` not yet stored in ``run_dir``; write the tables and the
    manifest. Safe to call again on the same folder (it resumes, or tops the run up when
    ``config.deals`` grew). The folder is locked for the run's life: a second run into it
    is refused (:class:`~patchsim.play.runfolder.RunFolderBusy`).

    Limits, the backend (and a Dask scheduler) are checked before anything is written or
    played. Batch files are removed once merged into the tables unless ``keep_batches``.
    ``progress(games, total)`` is called as batches finish; ``command`` is recorded.
    ``warm_progress`` hears how the warm-up of a Dask cluster's workers goes.
    ``backend="auto"`` plays in threads when every bot is compiled, in worker processes
    otherwise (:func:`~patchsim.play.worker.local_backend`)."""
    run_dir = Path(run_dir)
    backend = local_backend(config, backend)
    if config.deals * 2 > MAX_GAMES:
        raise RunError.about("games", f"{config.deals * 2:,} per ruleset and pairing is "
                             f"more than patchsim plays in one run ({MAX_GAMES:,})",
                             value=config.deals * 2)
    if backend != "dask":
        check_jobs(jobs, backend)
    check_output_folder(run_dir)  # before the folder is touched
    client, ctx, parallel = make_parallel(jobs, backend, scheduler)
    try:
        check_writable(run_dir)
        info = {"pid": os.getpid(), "host": platform.node(), "seed": config.seed,
                "started": _dt.datetime.now().isoformat(timespec="seconds")}
        with RunLock(run_dir, info) as lock:
            # what a killed run was writing (partial tables of a merge, half-written batch
            # files): never complete, so never read; removed while the lock is held
            clean_partials(run_dir)
            try:
                result = _execute_in(config, run_dir, ctx, parallel, jobs=jobs,
                                     backend=backend, progress=progress, command=command,
                                     keep_batches=keep_batches, client=client,
                                     warm_progress=warm_progress)
            except KeyboardInterrupt as e:
                raise _stopped_early(run_dir, e) from None
            if lock.stale:
                result.notes.insert(0, "an earlier run in this folder stopped without "
                                    f"finishing (pid {lock.stale.get('pid', '?')}, started "
                                    f"{lock.stale.get('started', '?')}); its finished "
                                    "batches were kept")
            return result
    finally:
        if client is not None:
            client.close()


def run_models(config: RunConfig) -> list[dict[str, Any]]:
    """Which learned model each learned bot plays with on each ruleset: where it was found
    (a user-trained model takes precedence over a shipped one), and its file's sha256, so a
    run's manifest says exactly which evaluation produced its games."""
    out = []
    try:
        for spec in config.bots:
            bot = make_bot(spec, bot_path=config.bot_path)
            for rs in config.rulesets:
                prov = bot_model_provenance(bot, rs)
                if prov is not None:
                    if isinstance(prov.get("path"), str):
                        prov = {**prov, "path": portable_path(prov["path"])}
                    out.append({"bot": spec, **prov})
    except (ModelError, BotSpecError) as e:
        raise RunError(str(e)) from None
    return out


def portable_path(path: str) -> str:
    """A path for a manifest, without this machine's folders: relative to the installed
    package's parent (shipped models: ``patchsim/models/...``) or to the working folder;
    else only the file's folder and name (the sha256 next to it identifies the file)."""
    p = Path(path)
    if not p.is_absolute():
        return path
    for base in (Path(__file__).resolve().parents[2], Path.cwd()):
        with contextlib.suppress(ValueError):
            return p.resolve().relative_to(base.resolve()).as_posix()
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name


def _plan(config: RunConfig, segments: list[int], merged: int) -> list[Batch]:
    """The run's batches: one per (ruleset, pairing) for the ``merged`` deals already in the
    tables (split back into batch files for a top-up), then the planned batches after."""
    planned = plan_batches(config, segments)
    if not merged:
        return planned
    head = [Batch(r, p, 0, merged) for p in range(len(config.pairings))
            for r in range(len(config.rulesets))]
    return head + [b for b in planned if b.first_deal >= merged]


def _execute_in(config: RunConfig, run_dir: Path, ctx, parallel, *, jobs: int, backend: str,
                progress: ProgressFn | None, command: str, keep_batches: bool,
                client: Any = None, warm_progress: WarmProgress | None = None) -> RunResult:
    manifest_path = run_dir / MANIFEST
    manifest: dict[str, Any] = {}
    segments: list[int] = []
    merged = 0
    notes: list[str] = []
    if manifest_path.exists():
        manifest, old = read_manifest(run_dir, notes)  # checked, digests included
        if [r.content_hash() for r in old.rulesets] != [r.content_hash()
                                                        for r in config.rulesets] \
                or old.bots != config.bots or old.seed != config.seed \
                or old.pairings != config.pairings:
            raise RunError(f"{run_dir} holds a different run (rulesets, bots, pairings or "
                           f"seed differ: it has seed {old.seed}, bots "
                           f"{', '.join(old.bots)}); write to another folder or resume it "
                           "as it is")
        if config.deals < old.deals:
            raise RunError(f"{run_dir} already holds {2 * old.deals:,} games per ruleset and "
                           f"pairing, more than the {2 * config.deals:,} asked for; a run "
                           "can grow but not shrink: write to another folder")
        segments = [int(x) for x in manifest.get("segments", [old.deals])]
        merged = int(manifest.get("merged_deals", 0))
        if config.batch_deals is None:
            config.batch_deals = old.batch_deals  # same plan, so finished batches are found
    if not segments or segments[-1] < config.deals:
        segments.append(config.deals)
    run_id = manifest.get("run_id") or run_identity(config)
    total_games = 2 * config.deals * len(config.rulesets) * len(config.pairings)
    if merged >= config.deals and table_path(run_dir, "games").exists():
        # complete and merged already: nothing to play, if the tables are the run's
        for kind in TABLE_KINDS:
            check_table(run_dir, kind, manifest)
        return RunResult(run_dir, total_games, 0.0, 0.0, True, notes=notes)
    batches = _plan(config, segments, merged)
    check_disk(run_dir, sum(2 * b.deals for b in batches if b.first_deal >= merged))
    if merged:
        head = Batch(0, 0, 0, merged).key
        if not batch_path(run_dir, run_id, head, "games").exists():
            for kind in TABLE_KINDS:  # read back: they must be the run's own
                check_table(run_dir, kind, manifest)
            split_merged(run_dir, run_id, len(config.rulesets), len(config.pairings),
                         lambda r, p: Batch(r, p, 0, merged).key)
    # a batch is done when both its files exist: the files, not the manifest, are the truth
    # (the manifest may lag a killed run, or files may have been removed since)
    done = {bt.key for bt in batches
            if batch_path(run_dir, run_id, bt.key, "games").exists()
            and batch_path(run_dir, run_id, bt.key, "events").exists()}
    for key in sorted(done):  # a stored batch that does not open is named, not merged
        for kind in TABLE_KINDS:
            check_batch(batch_path(run_dir, run_id, key, kind), kind)
    todo = [bt for bt in batches if bt.key not in done]
    manifest.update({
        "run_id": run_id,
        "config": config.to_dict(),
        "models": run_models(config),
        "command": command,
        "versions": versions(),
        "started": manifest.get("started") or _dt.datetime.now().isoformat(timespec="seconds"),
        "batches_total": len(batches),
        "segments": segments,
        "merged_deals": merged,
        "complete": False,
    })
    _write_manifest(manifest, run_dir, tables=False)
    todo_games = sum(2 * b.deals for b in todo)
    if progress:
        progress(0, todo_games)
    # the merge runs while batches finish: the batches in final order, merged up to the
    # first one not yet stored, so a parallel run ends soon after its last batch
    ordered = sorted(batches, key=lambda b: (b.ruleset, b.pairing, b.first_deal))
    merger = TableMerger(run_dir)
    frontier = 0

    def advance() -> None:
        nonlocal frontier
        while frontier < len(ordered) and ordered[frontier].key in done:
            merger.add_batch_files(run_dir, run_id, ordered[frontier].key)
            frontier += 1

    t0 = time.perf_counter()
    played = 0
    failure: BotError | None = None
    try:
        advance()
        with ctx:
            write_to = None if backend == "dask" else str(run_dir)
            results = batch_results(config, todo, run_id, jobs=jobs, backend=backend,
                                    parallel=parallel, write_to=write_to, client=client,
                                    warm_progress=warm_progress)
            # closed on the way out (a failure, Ctrl-C): batches still playing stop now,
            # not when the generator is collected
            with _closing_quietly(results):
                for bt, games, events, err, _secs, n_games in results:
                    if err is not None:
                        failure = err
                        break
                    if games is not None:
                        write_batch(events, batch_path(run_dir, run_id, bt.key, "events"))
                        write_batch(games, batch_path(run_dir, run_id, bt.key, "games"))
                    done.add(bt.key)
                    played += n_games
                    if progress:
                        progress(n_games, todo_games)
                    advance()
        if failure is None:
            merger.commit()
    except (KeyboardInterrupt, SystemError) as e:
        # a signal that lands inside a compiled call surfaces as a SystemError wrapping the
        # KeyboardInterrupt the handler raised
        interrupt: BaseException | None = e
        while interrupt is not None and not isinstance(interrupt, KeyboardInterrupt):
            interrupt = interrupt.__cause__ or interrupt.__context__
        if interrupt is None:
            merger.abort()
            raise
        merger.abort()
        cause = str(interrupt) if str(interrupt) else "interrupted"
        # threads and worker processes store their own batches: count the files, which may
        # hold batches that finished after the interrupt
        stored = sum(1 for bt in batches
                     if batch_path(run_dir, run_id, bt.key, "games").exists()
                     and batch_path(run_dir, run_id, bt.key, "events").exists())
        raise RunInterrupted(run_dir, max(stored, len(done)), len(batches), cause) from None
    except OSError as e:
        merger.abort()
        raise RunStorageError(run_dir, e) from None
    except TerminatedWorkerError:
        merger.abort()
        log = run_dir / "batches" / CRASH_LOG
        where = (f"; its stacks are in {log}" if log.exists() and log.stat().st_size
                 else "")
        raise RunInterrupted(run_dir, len(done), len(batches),
                             "a worker process died (it crashed, e.g. a segmentation fault "
                             f"in a bot, or the system killed it for its memory{where})"
                             ) from None
    except BaseException:
        merger.abort()
        raise
    seconds = time.perf_counter() - t0
    rate = played / seconds if seconds > 0 and played else 0.0
    complete = failure is None
    if failure is not None:
        merger.abort()
        rec_path = run_dir / FAILED_GAME.format(seed=failure.seed)
        atomic_write_text(json.dumps(failure.record, indent=1), rec_path)
        raise BotFailure(run_dir, failure, rec_path)
    manifest.update({"finished": _dt.datetime.now().isoformat(timespec="seconds"),
                     "complete": complete, "games_total": total_games,
                     "last_session": {"games": played, "seconds": round(seconds, 3),
                                      "games_per_s": round(rate, 1), "jobs": jobs,
                                      "backend": backend}})
    if not keep_batches:
        manifest["merged_deals"] = config.deals
    _write_manifest(manifest, run_dir, tables=True)  # the tables this run just wrote
    if not keep_batches:
        clear_batches(run_dir)
    return RunResult(run_dir, total_games, seconds, rate, complete, notes=notes, played=played)


def _write_manifest(manifest: dict[str, Any], run_dir: Path, *, tables: bool) -> None:
    """Write the manifest with its digests (``tables``: of the tables just written). A full
    disk here keeps every batch file, so the run can be resumed."""
    try:
        stamp_digests(manifest, run_dir, tables=tables)
        atomic_write_text(json.dumps(manifest, indent=2), run_dir / MANIFEST)
    except OSError as e:
        raise RunStorageError(run_dir, e) from None


def _stopped_early(run_dir: Path, e: KeyboardInterrupt) -> BaseException:
    """A stop that came before the batches started (or after they ended): once the manifest
    is written, the run is resumable, and the caller is told so like after any other stop."""
    try:
        manifest, _ = read_manifest(run_dir)
    except (OSError, RunError, ValueError, KeyError):
        return e  # nothing of the run was written yet: there is nothing to resume
    stored = len(list((run_dir / "batches").glob("*.games.arrow")))
    total = int(manifest.get("batches_total", stored))
    return RunInterrupted(run_dir, min(stored, total), total, str(e) or "interrupted")


@contextlib.contextmanager
def _closing_quietly(results: Iterator) -> Iterator[Iterator]:
    """Close a stream of batch results on the way out, without joblib's warning that the
    batches still playing were cancelled: the run stops them on purpose (a bot failed, or
    the user stopped it), and the warning would come before the message that says why."""
    try:
        yield results
    finally:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*tasks .*(cancelled|not used)")
            results.close()  # type: ignore[attr-defined]
