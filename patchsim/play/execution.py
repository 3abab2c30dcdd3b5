"""Running a run: every batch not yet stored, in parallel (joblib processes or threads, or a
Dask cluster through joblib), resumable, topped up on request, or stopped on precision."""

from __future__ import annotations

import datetime as _dt
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis.stats import clustered_rate
from patchsim.bots.registry import CompiledBot, make_bot
from patchsim.engine.deal import deal_circle
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play.batches import Batch, plan_batches, play_batch
from patchsim.play.config import RunConfig, RunError, run_identity
from patchsim.play.match import BotError, max_events, max_plies, play_game
from patchsim.play.storage import (
    MANIFEST,
    atomic_write_text,
    batch_path,
    check_writable,
    load_games,
    merge_batches,
    read_manifest,
    versions,
    write_batch,
)


@dataclass
class RunResult:
    run_dir: Path
    games: int
    seconds: float
    games_per_s: float
    complete: bool
    summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)


def make_parallel(jobs: int, backend: str, scheduler: str | None):
    """The joblib executor (and the context that selects its backend)."""
    import contextlib

    from joblib import Parallel, parallel_config

    if backend == "dask":
        try:
            from dask.distributed import Client
        except ImportError:
            raise RunError("--backend dask needs dask.distributed: "
                           "pip install 'patchsim[dask]'") from None
        if not scheduler:
            raise RunError("--backend dask needs --scheduler ADDRESS (tcp://host:8786) or a "
                           "scheduler file")
        try:
            if Path(scheduler).is_file():
                client = Client(scheduler_file=scheduler, timeout="10s")
            else:
                client = Client(scheduler, timeout="10s")
        except Exception as e:  # noqa: BLE001 - distributed raises many kinds; all mean "no"
            raise RunError(f"cannot reach the Dask scheduler {scheduler}: "
                           f"{type(e).__name__}: {e}") from None
        ctx = parallel_config(backend="dask", wait_for_workers_timeout=30)
        return client, ctx, Parallel(return_as="generator_unordered")
    if backend not in ("loky", "threading", "sequential"):
        raise RunError(f"--backend {backend!r}: expected loky, dask, threading or sequential")
    if backend == "sequential" or jobs == 1:
        return None, contextlib.nullcontext(), None
    return None, parallel_config(backend=backend, n_jobs=jobs), Parallel(
        return_as="generator_unordered")


def warm_up(config: RunConfig) -> None:
    """Compile (or load from the cache) in this process before workers start, so that they
    do not all compile at once and race on the cache."""
    rs = config.rulesets[0]
    bots = [make_bot(s) for s in config.bots]
    warm = [b for b in bots if isinstance(b, CompiledBot)]
    if not warm:
        return
    for b in warm:
        quick = make_bot("mcts(iterations=2)") if getattr(b, "kind", -1) == 4 else b
        play_game(rs, (quick, quick), deal_circle(rs, 0), 0)
    tables = compile_ruleset(rs)
    idx = np.array([[tables.patch_index[c] for c in deal_circle(rs, 0)]], dtype=np.int64)
    playout.play_deals(tables.tab, idx, np.zeros((1, 2), dtype=np.uint64),
                       np.zeros(2, dtype=np.int64), np.zeros((2, 32)), max_plies(rs),
                       max_events(rs))


def run_batch(config: RunConfig, batch: Batch, run_id: str, write_to: str | None = None):
    """Play a batch in a worker. With ``write_to`` (a run folder this worker can write: local
    backends) the worker stores the batch files itself, so the parent does no per-batch
    work; otherwise (Dask workers on other machines) the tables travel back."""
    t = time.perf_counter()
    try:
        games, events = play_batch(config, batch, run_id)
    except BotError as e:
        return batch, None, None, e, time.perf_counter() - t, 0
    if write_to is not None:
        run_dir = Path(write_to)
        write_batch(events, batch_path(run_dir, batch.key, "events"))
        write_batch(games, batch_path(run_dir, batch.key, "games"))
        return batch, None, None, None, time.perf_counter() - t, games.num_rows
    return batch, games, events, None, time.perf_counter() - t, games.num_rows


def execute(config: RunConfig, run_dir: Path, *, jobs: int = 1, backend: str = "loky",
            scheduler: str | None = None, progress: bool = True, command: str = "",
            echo: Callable[[str], None] = print) -> RunResult:
    """Play every batch of ``config`` not yet stored in ``run_dir``; write the tables and the
    manifest. Safe to call again on the same folder (it resumes).

    The backend (and a Dask scheduler) is checked before anything is written or played."""
    run_dir = Path(run_dir)
    client, ctx, parallel = make_parallel(jobs, backend, scheduler)
    try:
        return _execute_in(config, run_dir, ctx, parallel, jobs=jobs, backend=backend,
                        progress=progress, command=command, echo=echo)
    finally:
        if client is not None:
            client.close()


def _execute_in(config: RunConfig, run_dir: Path, ctx, parallel, *, jobs: int, backend: str,
             progress: bool, command: str, echo: Callable[[str], None]) -> RunResult:
    check_writable(run_dir)
    manifest_path = run_dir / MANIFEST
    manifest: dict[str, Any] = {}
    segments: list[int] = []
    if manifest_path.exists():
        manifest, old = read_manifest(run_dir)
        if [r.content_hash() for r in old.rulesets] != [r.content_hash()
                                                        for r in config.rulesets] \
                or old.bots != config.bots or old.seed != config.seed \
                or old.pairings != config.pairings:
            raise RunError(f"{run_dir} holds a different run (rulesets, bots, pairings or "
                           "seed differ); use another --out or --resume it as it is")
        segments = [int(x) for x in manifest.get("segments", [old.deals])]
        config.deals = max(config.deals, old.deals)
        if config.batch_deals is None:
            config.batch_deals = old.batch_deals  # same plan, so finished batches are found
    if not segments or segments[-1] < config.deals:
        segments.append(config.deals)
    run_id = manifest.get("run_id") or run_identity(config)
    batches = plan_batches(config, segments)
    # a batch is done when both its files exist: the files, not the manifest, are the truth
    # (the manifest may lag a killed run, or files may have been removed since)
    done = {bt.key for bt in batches
            if batch_path(run_dir, bt.key, "games").exists()
            and batch_path(run_dir, bt.key, "events").exists()}
    todo = [bt for bt in batches if bt.key not in done]
    # reject stale batches from a differently-batched earlier attempt only if they overlap:
    # keys encode deal ranges, and merging reads exactly the planned keys (see merge_batches)
    manifest.update({
        "run_id": run_id,
        "config": config.to_dict(),
        "command": command or " ".join(sys.argv),
        "versions": versions(),
        "started": manifest.get("started") or _dt.datetime.now().isoformat(timespec="seconds"),
        "batches_total": len(batches),
        "segments": segments,
        "batches_done": sorted(done),
    })
    atomic_write_text(json.dumps(manifest, indent=2), manifest_path)
    total_games = sum(2 * b.deals for b in batches)
    todo_games = sum(2 * b.deals for b in todo)
    if todo:
        warm_up(config)
    t0 = time.perf_counter()
    played = 0
    failure: BotError | None = None
    bar = _progress(todo_games, progress)
    try:
        with ctx:
            write_to = None if backend == "dask" else str(run_dir)
            if parallel is None:
                results: Iterator = (run_batch(config, bt, run_id, write_to) for bt in todo)
            else:
                from joblib import delayed

                results = parallel(delayed(run_batch)(config, bt, run_id, write_to)
                                   for bt in todo)
            for bt, games, events, err, _secs, n_games in results:
                if err is not None:
                    failure = err
                    break
                if games is not None:
                    write_batch(events, batch_path(run_dir, bt.key, "events"))
                    write_batch(games, batch_path(run_dir, bt.key, "games"))
                done.add(bt.key)
                played += n_games
                manifest["batches_done"] = sorted(done)
                atomic_write_text(json.dumps(manifest, indent=2), manifest_path)
                if bar is not None:
                    bar.update(n_games)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        echo(f"\ninterrupted: {len(done)} of {len(batches)} batches are stored in {run_dir}.\n"
             f"resume with: patchsim run --resume {run_dir}")
        raise
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    rate = played / seconds if seconds > 0 and played else 0.0
    complete = failure is None and len(done) >= len(batches)
    manifest.update({"finished": _dt.datetime.now().isoformat(timespec="seconds"),
                     "complete": complete, "games_total": total_games,
                     "last_session": {"games": played, "seconds": round(seconds, 3),
                                      "games_per_s": round(rate, 1), "jobs": jobs,
                                      "backend": backend}})
    atomic_write_text(json.dumps(manifest, indent=2), manifest_path)
    if failure is not None:
        rec_path = run_dir / f"failed-game-seed{failure.seed}.json"
        atomic_write_text(json.dumps(failure.record, indent=1), rec_path)
        raise RunError(f"{failure}\nthe game up to the failing move is in {rec_path} "
                       f"(patchsim replay {rec_path}); finished batches are kept in {run_dir}")
    if complete:
        ordered = sorted(batches, key=lambda b: (b.ruleset, b.pairing, b.first_deal))
        merge_batches(run_dir, [b.key for b in ordered])
    return RunResult(run_dir, total_games, seconds, rate, complete)


def _progress(total: int, enabled: bool):
    if not enabled or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="game", smoothing=0.1, dynamic_ncols=True, file=sys.stderr)


def execute_until(config: RunConfig, run_dir: Path, halfwidth: float, *, step_deals: int = 200,
                  echo: Callable[[str], None] = print, **kw: Any) -> RunResult:
    """Sequential stopping on precision: play ``step_deals`` more deals at a time (topping
    the run up) until the 95% interval of the first seat's win rate is at most ``halfwidth``
    on each side for every ruleset and pairing, or ``config.deals`` (the budget) is reached.

    The stopping rule looks only at the interval's width, which hardly depends on the
    estimate, so it does not bias the estimate the way stopping on significance would."""
    if not 0 < halfwidth < 0.5:
        raise RunError(f"--until {halfwidth}: give a half-width between 0 and 0.5 "
                       "(0.01: +-1 point)")
    budget = config.deals
    deals = min(budget, max(step_deals, 1))
    while True:
        config.deals = deals
        result = execute(config, run_dir, **kw)
        if not result.complete:
            return result
        games = load_games(run_dir)
        widest = 0.0
        for _, g in games.groupby(["ruleset", "pairing"], sort=False):
            r = clustered_rate((g["winner"] == 0).to_numpy(), g["deal"].to_numpy())
            widest = max(widest, (r["hi"] - r["lo"]) / 2)
        echo(f"{deals} deals: widest 95% half-width of the first-seat win rate "
             f"{100 * widest:.2f} points (target {100 * halfwidth:.2f})")
        if widest <= halfwidth or deals >= budget:
            if widest > halfwidth:
                echo(f"stopped at the budget of {budget} deals before reaching the target")
            return result
        deals = min(budget, deals + step_deals)
