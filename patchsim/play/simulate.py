"""Runs in memory: :func:`simulate` plays exactly what ``patchsim run`` plays and keeps the
games and events tables as pandas DataFrames instead of writing a run folder.

It is the runner without its disk: the same configuration (:func:`make_run_config`), the same
batches (:func:`plan_batches`), the same workers (``run_batch`` through joblib) and the same
canonical order as the merge, so for the same rulesets, bots, games and seed its tables equal
``games.parquet`` and ``events.parquet`` of a run, for any number of workers.
:meth:`Simulation.write` turns one into such a run folder afterwards.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa

from patchsim.analysis.summary import run_summary
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset
from patchsim.play.batches import plan_batches
from patchsim.play.config import (
    BotRef,
    PairingMode,
    RunConfig,
    RunError,
    load_run_config,
    make_run_config,
    run_identity,
)
from patchsim.play.execution import batch_results, execute, make_parallel
from patchsim.play.runfolder import (
    MANIFEST,
    batch_path,
    check_output_folder,
    check_writable,
    write_batch,
)
from patchsim.play.worker import (
    check_jobs,
    local_backend,
)

RulesetRef = str | os.PathLike[str] | Ruleset


@dataclass
class Simulation:
    """The result of :func:`simulate`: ``games`` (one row per game) and ``events`` (one row
    per purchase, pass, income payment, leather claim and placement, bonus claim), with the
    columns of a run's games.parquet and events.parquet."""

    config: RunConfig
    run_id: str
    games: pd.DataFrame = field(repr=False)
    events: pd.DataFrame = field(repr=False)
    seconds: float
    _batches: list[tuple[str, pa.Table, pa.Table]] = field(repr=False, default_factory=list)

    @property
    def rulesets(self) -> dict[str, Ruleset]:
        """The rulesets by the name the tables use (for ``patch_table(..., rulesets)`` etc.)."""
        return {r.name: r for r in self.config.rulesets}

    def summary(self) -> pd.DataFrame:
        """One row per ruleset and pairing: :func:`patchsim.analysis.summary.run_summary`."""
        return run_summary(self.games)

    def write(self, run_dir: str | os.PathLike[str]) -> Path:
        """Store the games as a run folder, as ``patchsim run`` would have written it (same
        games.parquet and events.parquet, byte for byte; manifest; ``patchsim report`` and
        ``--resume`` work on it). The folder must not hold a run yet. Returns it."""
        run_dir = Path(run_dir)
        if (run_dir / MANIFEST).exists():
            raise RunError(f"{run_dir} already holds a run; write to a new folder")
        check_output_folder(run_dir)  # no batch files among unrelated files
        check_writable(run_dir)
        for key, games, events in self._batches:
            write_batch(events, batch_path(run_dir, self.run_id, key, "events"))
            write_batch(games, batch_path(run_dir, self.run_id, key, "games"))
        # every batch is stored, so the runner plays nothing: it writes the manifest and
        # merges the batch files, exactly as at the end of a run
        execute(copy.deepcopy(self.config), run_dir, jobs=1, backend="sequential",
                command="patchsim.simulate (Python API)")
        return run_dir


def simulate(rulesets: RulesetRef | Sequence[RulesetRef] = "edition2",
             bots: BotRef | Sequence[BotRef] | None = None, *, games: int | None = None,
             seed: int | None = None, jobs: int = 1, pairings: PairingMode | None = None,
             batch_deals: int | None = None, name: str | None = None,
             backend: str = "auto", scheduler: str | None = None,
             bot_path: Sequence[str] | None = None) -> Simulation:
    """Play seeded, seat-swapped games between ``bots`` under ``rulesets`` in memory.

    ``rulesets``: a shipped name, a YAML path or a :class:`Ruleset`, or a list of them (every
    ruleset plays the same deals); a single name or path may also be an experiment file, read
    as ``patchsim run`` reads it. ``bots``: specs (``"greedy"``, ``"mcts(iterations=200)"``,
    ``"greedy;random"``), or bot objects whose ``spec`` rebuilds them (every game gets a fresh
    bot made from its spec, in whichever worker plays it); default the ``patchsim run``
    line-up. ``games`` per pairing and ruleset (rounded up to seat-swapped pairs; default 200),
    ``seed`` (default 1), ``pairings`` (``all`` with self-play, ``cross``, ``self``) and
    ``batch_deals`` mean what they mean for ``patchsim run``; ``jobs`` worker processes (-1:
    every core; ``backend`` and ``scheduler`` as for the runner) do not change the results.
    Import-path bots are also looked for in ``bot_path`` (default: the working folder, as on
    the command line). Nothing is written to disk.

    Raises RunError for a bad configuration (before anything is played) and BotError, with a
    record of the game, when a bot fails."""
    t0 = time.perf_counter()
    folders = tuple(bot_path) if bot_path is not None else (os.getcwd(),)
    config = _config(rulesets, bots, games=games, seed=seed, pairings=pairings,
                     batch_deals=batch_deals, name=name, bot_path=folders)
    n_jobs = (os.cpu_count() or 1) if jobs == -1 else jobs
    backend = local_backend(config, backend)
    if backend != "dask":
        check_jobs(n_jobs, backend)
    run_id = run_identity(config)
    batches = plan_batches(config)
    client, ctx, parallel = make_parallel(n_jobs, backend, scheduler)
    tables: dict[str, tuple[pa.Table, pa.Table]] = {}
    try:
        with ctx:
            results = batch_results(config, batches, run_id, jobs=n_jobs, backend=backend,
                                    parallel=parallel, client=client)
            # closed on the way out (a bot failure, Ctrl-C): batches still playing stop now
            with contextlib.closing(results):  # type: ignore[type-var]  # a generator
                for bt, games_t, events_t, err, _secs, _n in results:
                    if err is not None:
                        raise err
                    tables[bt.key] = (games_t, events_t)
    finally:
        if client is not None:
            client.close()
    # the merge's canonical order: ruleset, pairing, deal (so game ids ascend per ruleset)
    ordered = sorted(batches, key=lambda b: (b.ruleset, b.pairing, b.first_deal))
    stored = [(b.key, *tables[b.key]) for b in ordered]
    games_df = pa.concat_tables([g for _, g, _ in stored]).to_pandas()
    events_df = pa.concat_tables([e for _, _, e in stored]).to_pandas()
    return Simulation(config, run_id, games_df, events_df, time.perf_counter() - t0, stored)


def _config(rulesets: RulesetRef | Sequence[RulesetRef], bots: BotRef | Sequence[BotRef] | None,
            *, games: int | None, seed: int | None, pairings: PairingMode | None,
            batch_deals: int | None, name: str | None, bot_path: tuple[str, ...]) -> RunConfig:
    """The RunConfig ``patchsim run`` would build for these arguments."""
    specs = None if bots is None else _bot_list(bots)
    refs: list[RulesetRef] = (list(rulesets) if isinstance(rulesets, Sequence)
                              and not isinstance(rulesets, str) else [rulesets])
    if not refs:
        raise RunError.about("rulesets", "give at least one ruleset")
    if len(refs) == 1 and not isinstance(refs[0], Ruleset):
        # a name or a file, which may be an experiment file: the command line's own path
        config = load_run_config(os.fspath(refs[0]), games=games, bots=specs, seed=seed,
                                 pairings=pairings, batch_deals=batch_deals,
                                 bot_path=bot_path)
        return dataclasses.replace(config, name=name) if name else config
    resolved = []
    for i, ref in enumerate(refs):
        if isinstance(ref, Ruleset):
            resolved.append(ref)
            continue
        try:
            resolved.append(load_ruleset(ref))
        except RulesetError as e:
            raise RunError.wrapping(e, f"rulesets[{i}]: ") from None
    # the rulesets themselves, so that the default line-up is theirs (a variant without a
    # trained model plays the rollout search, as `patchsim run` would)
    return make_run_config(resolved, specs, games=games,
                           seed=1 if seed is None else seed, pairings=pairings or "all",
                           batch_deals=batch_deals, name=name, source="patchsim.simulate",
                           bot_path=bot_path)


def _bot_list(bots: BotRef | Sequence[BotRef]) -> list[BotRef]:
    """The bots as a list: ``"greedy;random"`` is two specs, a dict or a bot object one."""
    if isinstance(bots, str):
        items: list[BotRef] = [b.strip() for b in bots.split(";") if b.strip()]
    elif isinstance(bots, dict) or not isinstance(bots, Sequence):
        items = [bots]
    else:
        items = list(bots)
    if not items:
        raise RunError.about("bots", "give at least one bot")
    return items
