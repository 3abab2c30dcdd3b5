"""Batch runs: many seeded, seat-swapped games between bots under one or more rulesets,
played in parallel (joblib, or a Dask cluster through joblib) and stored as Parquet.

The unit of work is a *batch*: one ruleset, one pairing of bots, a range of deals. Every deal
is played twice with the seats swapped, every ruleset gets the same deals, and every game's
seeds come from the master seed alone, so the stored tables are identical for any number of
workers, batch size or backend. Finished batches are written as they complete (atomically),
so a run can be stopped and resumed, or topped up with more deals.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from patchsim import core, playout
from patchsim.bots import Bot, BotSpecError, CompiledBot, make_bot
from patchsim.game import deal_circle
from patchsim.match import BotError, GameResult, max_events, max_plies, play_game
from patchsim.ruleset import Ruleset, RulesetError, load_ruleset, parse_override
from patchsim.tables import Tables, compile_ruleset, square_name

DEFAULT_BOTS = ["greedy", "mcts(iterations=200)"]
DEFAULT_GAMES = 200
MANIFEST = "manifest.json"
RUN_KEYS = {"name", "description", "ruleset", "rulesets", "bots", "pairings", "games", "seed",
            "set", "batch_deals"}


class RunError(ValueError):
    """A problem with a run's configuration or output, found before any work starts."""


# --- configuration ----------------------------------------------------------------------------
@dataclass
class RunConfig:
    """Everything that determines a run's games."""

    name: str
    rulesets: list[Ruleset]
    bots: list[str]
    pairings: list[tuple[int, int]]
    deals: int
    seed: int = 1
    batch_deals: int | None = None  # deals per batch; None: chosen by the bots' speed
    source: str = "<config>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rulesets": [{"name": r.name, "hash": r.content_hash(), "rules": r.to_dict()}
                         for r in self.rulesets],
            "bots": self.bots,
            "pairings": [list(p) for p in self.pairings],
            "deals": self.deals,
            "seed": self.seed,
        }

    @classmethod
    def from_manifest(cls, data: dict[str, Any]) -> RunConfig:
        from patchsim.ruleset import ruleset_from_dict

        rulesets = [ruleset_from_dict(r["rules"], source=f"manifest: {r['name']}")
                    for r in data["rulesets"]]
        return cls(data["name"], rulesets, list(data["bots"]),
                   [tuple(p) for p in data["pairings"]], int(data["deals"]), int(data["seed"]))

    def pairing_label(self, i: int) -> str:
        a, b = self.pairings[i]
        return f"{self.bots[a]} vs {self.bots[b]}"


def run_identity(config: RunConfig) -> str:
    """A run's id: a hash of what determines its games (not of the number of deals, so a
    top-up keeps it; not of the folder, so two identical runs store identical tables)."""
    import hashlib

    ident = {k: v for k, v in config.to_dict().items() if k not in ("deals", "rulesets")}
    ident["rulesets"] = [r.content_hash() for r in config.rulesets]
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]


def all_pairings(n: int, mode: str = "all") -> list[tuple[int, int]]:
    """Bot index pairs: ``all`` (self-play included), ``cross`` (no self-play), ``self``."""
    if mode == "self":
        return [(i, i) for i in range(n)]
    if mode == "cross":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    return [(i, j) for i in range(n) for j in range(i, n)]


def games_to_deals(games: int) -> int:
    """Games per pairing and ruleset to deals (each deal is a seat-swapped pair of games)."""
    return max(1, math.ceil(games / 2))


def load_run_config(ref: str, *, games: int | None = None, bots: Sequence[str] | None = None,
                    seed: int | None = None, overrides: Sequence[str] = (),
                    pairings: str | None = None) -> RunConfig:
    """A run from a ruleset (name or file: the default line-up) or an experiment file (a YAML
    mapping with ``ruleset``/``rulesets`` and ``bots``). Command-line options win."""
    path = Path(ref)
    data: dict[str, Any] = {}
    if path.suffix in (".yaml", ".yml") and path.exists():
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            raise RunError(f"{ref}: not valid YAML: {e}") from None
        if isinstance(loaded, dict) and ("rulesets" in loaded or "ruleset" in loaded):
            data = loaded
    if data:
        unknown = sorted(set(data) - RUN_KEYS)
        if unknown:
            raise RunError(f"{ref}: unknown key(s) {', '.join(unknown)} (an experiment has "
                           f"{', '.join(sorted(RUN_KEYS))})")
        refs = data.get("rulesets") or [data["ruleset"]]
        if isinstance(refs, str):
            refs = [refs]
        name = str(data.get("name") or path.stem)
        base = path.parent
        rulesets = []
        for i, r in enumerate(refs):
            target = base / r if str(r).endswith((".yaml", ".yml")) and (base / r).exists() \
                else r
            try:
                rulesets.append(load_ruleset(target))
            except RulesetError as e:
                raise RunError(f"{ref}: rulesets[{i}]: {e}") from None
        bot_specs = list(bots) if bots else list(data.get("bots") or DEFAULT_BOTS)
        mode = pairings or str(data.get("pairings", "all"))
        if mode not in ("all", "cross", "self"):
            raise RunError(f"{ref}: pairings: {mode!r} is not one of all, cross, self")
        games_n = games if games is not None else int(data.get("games", DEFAULT_GAMES))
        seed_n = seed if seed is not None else int(data.get("seed", 1))
        overrides = [*(f"{k}={json.dumps(v)}" for k, v in (data.get("set") or {}).items()),
                     *overrides]
        batch_deals = data.get("batch_deals")
    else:
        try:
            rulesets = [load_ruleset(ref)]
        except RulesetError as e:
            raise RunError(str(e)) from None
        name = rulesets[0].name if not path.exists() else path.stem
        bot_specs = list(bots) if bots else list(DEFAULT_BOTS)
        mode = pairings or "all"
        if mode not in ("all", "cross", "self"):
            raise RunError(f"pairings: {mode!r} is not one of all, cross, self")
        games_n = games if games is not None else DEFAULT_GAMES
        seed_n = seed if seed is not None else 1
        batch_deals = None
    if overrides:
        try:
            pairs = dict(parse_override(o) for o in overrides)
            rulesets = [r.with_overrides(pairs) for r in rulesets]
        except RulesetError as e:
            raise RunError(str(e)) from None
    if games_n < 1:
        raise RunError(f"--games must be at least 1, got {games_n}")
    for spec in bot_specs:
        try:
            make_bot(spec)
        except BotSpecError as e:
            raise RunError(str(e)) from None
    return RunConfig(name, rulesets, bot_specs, all_pairings(len(bot_specs), mode),
                     games_to_deals(games_n), seed_n, batch_deals, ref)


# --- deals ------------------------------------------------------------------------------------
def deal_seed(master: int, deal: int) -> int:
    """The seed of deal ``deal``: a SeedSequence child of the master seed (independent of how
    many deals the run has, so topping up keeps the earlier deals)."""
    ss = np.random.SeedSequence(entropy=master, spawn_key=(deal,))
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def deal_streams(seed: int) -> np.ndarray:
    """The random streams of the pairing's two bots in a deal (first bot, second bot)."""
    return np.random.SeedSequence(seed).generate_state(2, dtype=np.uint64)


def deal_circle_for(ruleset: Ruleset, seed: int) -> list[str]:
    """The deal's patch circle; the same for every ruleset with the same patch set."""
    return deal_circle(ruleset, np.random.default_rng(seed))


# --- batches ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Batch:
    ruleset: int
    pairing: int
    first_deal: int
    deals: int

    @property
    def key(self) -> str:
        return f"r{self.ruleset:02d}-p{self.pairing:03d}-d{self.first_deal:07d}-{self.deals}"


def default_batch_deals(bots: Sequence[Bot]) -> int:
    """Deals per batch: large for the fast compiled bots (little per-batch overhead), small
    for search bots so that work spreads over the workers and progress shows."""
    its = [float(b.params[0]) for b in bots if getattr(b, "kind", -1) == 4]  # MCTS iterations
    if its:
        return max(1, int(4000 / max(its)))
    if all(isinstance(b, CompiledBot) for b in bots):
        return 500
    return 20


def plan_batches(config: RunConfig, first_deal: int = 0) -> list[Batch]:
    """Every batch of deals [first_deal, config.deals), slow pairings first (better packing
    of the work onto workers)."""
    out = []
    bots = [make_bot(s) for s in config.bots]
    for pi, (a, b) in enumerate(config.pairings):
        size = config.batch_deals or default_batch_deals([bots[a], bots[b]])
        for r in range(len(config.rulesets)):
            d = first_deal
            while d < config.deals:
                n = min(size, config.deals - d)
                out.append(Batch(r, pi, d, n))
                d += n
    return out


def game_id(config: RunConfig, ruleset: int, pairing: int, deal: int, order: int) -> int:
    """A game's id, stable when deals are added."""
    return ((deal * len(config.rulesets) + ruleset) * len(config.pairings) + pairing) * 2 + order


EVENT_NAMES = {core.EV_BUY: "buy", core.EV_PASS: "pass", core.EV_INCOME: "income",
               core.EV_LEATHER_CLAIM: "leather_claim", core.EV_LEATHER_PLACE: "leather_place",
               core.EV_LEATHER_LOST: "leather_lost", core.EV_BONUS: "bonus"}


def play_batch(config: RunConfig, batch: Batch, run_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play one batch; return its games and events tables. Raises BotError on a bot failure."""
    rs = config.rulesets[batch.ruleset]
    tables = compile_ruleset(rs)
    a, b = config.pairings[batch.pairing]
    bot_a, bot_b = make_bot(config.bots[a]), make_bot(config.bots[b])
    deals = range(batch.first_deal, batch.first_deal + batch.deals)
    seeds = [deal_seed(config.seed, d) for d in deals]
    circles = [deal_circle_for(rs, s) for s in seeds]
    results: list[GameResult] = []
    meta: list[tuple[int, int, int]] = []  # deal, seed, order
    if isinstance(bot_a, CompiledBot) and isinstance(bot_b, CompiledBot):
        idx = np.array([[tables.patch_index[c] for c in circ] for circ in circles],
                       dtype=np.int64)
        for order, (x, y) in enumerate(((bot_a, bot_b), (bot_b, bot_a))):
            streams = np.array([deal_streams(s) for s in seeds], dtype=np.uint64)
            if order == 1:
                streams = streams[:, ::-1].copy()
            kinds = np.array([x.kind, y.kind], dtype=np.int64)
            params = np.stack([x.params, y.params])
            res, moves, ev, nev = playout.play_batch(tables.tab, idx, streams, kinds, params,
                                                     max_plies(rs), max_events(rs))
            for i in range(len(seeds)):
                row = res[i]
                if row[playout.R_ERROR]:
                    p = int(row[playout.R_ERROR]) - 1
                    n = int(row[playout.R_PLIES])
                    from patchsim.match import _bot_error

                    raise _bot_error(tables, circles[i], moves[i, : n - 1], (x, y)[p], p,
                                     seeds[i], n, f"chose an illegal move (code {moves[i, n-1]})")
                results.append(GameResult.from_row(row, moves[i, : row[playout.R_PLIES]],
                                                   ev[i, : nev[i]]))
                meta.append((deals[i], seeds[i], order))
    else:
        for i, s in enumerate(seeds):
            st = deal_streams(s)
            for order, pair in enumerate(((bot_a, bot_b), (bot_b, bot_a))):
                streams = st if order == 0 else st[::-1].copy()
                results.append(play_game(tables, pair, circles[i], s, streams=streams))
                meta.append((deals[i], s, order))
    return _tables(config, batch, run_id, tables, results, meta)


def _tables(config: RunConfig, batch: Batch, run_id: str, tables: Tables,
            results: list[GameResult], meta: list[tuple[int, int, int]]
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rs = tables.ruleset
    a, b = config.pairings[batch.pairing]
    specs = (config.bots[a], config.bots[b])
    n = len(results)
    gids = np.array([game_id(config, batch.ruleset, batch.pairing, d, o) for d, _, o in meta],
                    dtype=np.int64)
    order = np.array([o for _, _, o in meta], dtype=np.int8)
    bot0 = np.where(order == 0, specs[0], specs[1])
    bot1 = np.where(order == 0, specs[1], specs[0])

    def col(attr: str, seat: int) -> np.ndarray:
        return np.array([getattr(r, attr)[seat] for r in results], dtype=np.int32)

    winner = np.array([r.winner for r in results], dtype=np.int8)
    bonus = np.array([r.bonus_owner for r in results], dtype=np.int8)
    games = pd.DataFrame({
        "run_id": run_id,
        "ruleset": rs.name,
        "ruleset_hash": rs.content_hash(),
        "game_id": gids,
        "deal": np.array([d for d, _, _ in meta], dtype=np.int64),
        "deal_seed": np.array([s for _, s, _ in meta], dtype=np.int64),
        "pairing": config.pairing_label(batch.pairing),
        "order": order,
        "bot0": bot0,
        "bot1": bot1,
        "winner": winner,
        "winner_bot": np.where(winner == 0, bot0, bot1),
        "tie_break": np.array([r.tie_break for r in results], dtype=bool),
        "score0": col("scores", 0), "score1": col("scores", 1),
        "buttons0": col("buttons", 0), "buttons1": col("buttons", 1),
        "empty0": col("empty", 0), "empty1": col("empty", 1),
        "position0": col("positions", 0), "position1": col("positions", 1),
        "bonus0": bonus == 0, "bonus1": bonus == 1,
        "first_to_end": np.array([r.first_to_end for r in results], dtype=np.int8),
        "passes0": col("passes", 0), "passes1": col("passes", 1),
        "buys0": col("buys", 0), "buys1": col("buys", 1),
        "leather0": col("leather", 0), "leather1": col("leather", 1),
        "plies": np.array([r.plies for r in results], dtype=np.int32),
        "moves": [r.moves.astype(np.int32) for r in results],
    })
    counts = [len(r.events) for r in results]
    ev = (np.concatenate([r.events for r in results]) if sum(counts)
          else np.zeros((0, core.EV_WIDTH), dtype=np.int64))
    kind = ev[:, 0]
    seat = ev[:, 1]
    names = np.array([EVENT_NAMES.get(int(k), "?") for k in range(8)], dtype=object)
    is_buy = kind == core.EV_BUY
    is_place = kind == core.EV_LEATHER_PLACE
    is_claim = kind == core.EV_LEATHER_CLAIM
    patch_ids = np.array(tables.patch_ids + [""], dtype=object)
    place_sq = _placement_names(tables)
    sq_names = np.array([square_name(s, rs.cols) for s in range(rs.rows * rs.cols)] + [""],
                        dtype=object)
    cost = np.array([p.cost for p in rs.patches] + [0])
    gid_rows = np.repeat(gids, counts)
    seq = np.concatenate([np.arange(c, dtype=np.int32) for c in counts]) if n else np.zeros(0)
    position = np.where(is_buy, ev[:, 3], np.where(kind == core.EV_PASS, ev[:, 2], ev[:, 2]))
    events = pd.DataFrame({
        "run_id": run_id,
        "ruleset": rs.name,
        "game_id": gid_rows,
        "seq": seq.astype(np.int32),
        "event": pd.Categorical(names[kind], categories=list(EVENT_NAMES.values())),
        "seat": seat.astype(np.int8),
        "bot": np.where(seat == 0, np.repeat(bot0, counts), np.repeat(bot1, counts)),
        "position": position.astype(np.int32),
        "patch": np.where(is_buy, patch_ids[np.where(is_buy, ev[:, 2], -1)], None),
        "cost": np.where(is_buy, cost[np.where(is_buy, ev[:, 2], -1)], 0).astype(np.int32),
        "buttons_before": np.where(is_buy, ev[:, 4], -1).astype(np.int32),
        "amount": np.where(kind == core.EV_PASS, ev[:, 4],
                           np.where(kind == core.EV_INCOME, ev[:, 3], 0)).astype(np.int32),
        "squares": np.where(is_buy, place_sq[np.where(is_buy, ev[:, 5], 0)],
                            np.where(is_place, sq_names[np.where(is_place, ev[:, 3], -1)],
                                     None)),
        "filled_hole": np.where(is_place, ev[:, 4] == 1, False),
        "opp_position": np.where(is_claim, ev[:, 3], -1).astype(np.int32),
        "score_lead": np.where(is_claim, ev[:, 4], 0).astype(np.int32),
    })
    return games, events


_PLACEMENT_NAMES: dict[str, np.ndarray] = {}


def _placement_names(tables: Tables) -> np.ndarray:
    key = tables.ruleset.content_hash()
    if key not in _PLACEMENT_NAMES:
        cols = tables.cols
        _PLACEMENT_NAMES[key] = np.array(
            [" ".join(square_name(s, cols) for s in tables.placement_squares(g))
             for g in range(len(tables.placement_masks))], dtype=object)
    return _PLACEMENT_NAMES[key]


# --- storage ----------------------------------------------------------------------------------
_I8, _I32, _I64, _STR, _BOOL = pa.int8(), pa.int32(), pa.int64(), pa.string(), pa.bool_()
GAMES_SCHEMA = pa.schema([
    ("run_id", _STR), ("ruleset", _STR), ("ruleset_hash", _STR), ("game_id", _I64),
    ("deal", _I64), ("deal_seed", _I64), ("pairing", _STR), ("order", _I8), ("bot0", _STR),
    ("bot1", _STR), ("winner", _I8), ("winner_bot", _STR), ("tie_break", _BOOL),
    ("score0", _I32), ("score1", _I32), ("buttons0", _I32), ("buttons1", _I32),
    ("empty0", _I32), ("empty1", _I32), ("position0", _I32), ("position1", _I32),
    ("bonus0", _BOOL), ("bonus1", _BOOL), ("first_to_end", _I8), ("passes0", _I32),
    ("passes1", _I32), ("buys0", _I32), ("buys1", _I32), ("leather0", _I32),
    ("leather1", _I32), ("plies", _I32), ("moves", pa.list_(_I32)),
])
EVENTS_SCHEMA = pa.schema([
    ("run_id", _STR), ("ruleset", _STR), ("game_id", _I64), ("seq", _I32), ("event", _STR),
    ("seat", _I8), ("bot", _STR), ("position", _I32), ("patch", _STR), ("cost", _I32),
    ("buttons_before", _I32), ("amount", _I32), ("squares", _STR), ("filled_hole", _BOOL),
    ("opp_position", _I32), ("score_lead", _I32),
])
ROW_GROUP = 65536  # fixed row-group size: the merged files do not depend on the batch size


def _to_table(df: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pandas(df, schema=schema, preserve_index=False).replace_schema_metadata()


def _atomic_write_parquet(table: pa.Table, path: Path) -> None:
    """Write to a temporary file in the same folder, then rename: readers never see a
    half-written file, and a killed run leaves at worst a stray temporary file."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _atomic_write_text(text: str, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _versions() -> dict[str, str]:
    import joblib
    import numba

    import patchsim

    return {"patchsim": patchsim.__version__, "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__, "pandas": pd.__version__,
            "pyarrow": pa.__version__, "joblib": joblib.__version__}


@dataclass
class RunResult:
    run_dir: Path
    games: int
    seconds: float
    games_per_s: float
    complete: bool
    summary: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)


def new_run_dir(config: RunConfig, out: str | Path | None) -> Path:
    if out is not None:
        return Path(out)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("reports") / config.name.replace("/", "-") / f"{stamp}-s{config.seed}"


def _check_writable(run_dir: Path) -> None:
    try:
        (run_dir / "batches").mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise RunError(f"cannot write to the output folder {run_dir}: {e.strerror}") from None


def _make_parallel(jobs: int, backend: str, scheduler: str | None):
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
        except (OSError, TimeoutError, ValueError) as e:
            raise RunError(f"cannot reach the Dask scheduler {scheduler}: {e}") from None
        ctx = parallel_config(backend="dask", wait_for_workers_timeout=30)
        return client, ctx, Parallel(return_as="generator_unordered")
    if backend not in ("loky", "threading", "sequential"):
        raise RunError(f"--backend {backend!r}: expected loky, dask, threading or sequential")
    if backend == "sequential" or jobs == 1:
        return None, contextlib.nullcontext(), None
    return None, parallel_config(backend=backend, n_jobs=jobs), Parallel(
        return_as="generator_unordered")


def _warm_up(config: RunConfig) -> None:
    """Compile (or load from the cache) in this process before workers start, so that they
    do not all compile at once and race on the cache."""
    rs = config.rulesets[0]
    bots = [make_bot(s) for s in config.bots]
    warm = [b for b in bots if isinstance(b, CompiledBot)]
    if not warm:
        return
    for b in warm:
        quick = make_bot("mcts(iterations=2)") if getattr(b, "kind", -1) == 4 else b
        play_game(rs, (quick, quick), deal_circle_for(rs, 0), 0)
    tables = compile_ruleset(rs)
    idx = np.array([[tables.patch_index[c] for c in deal_circle_for(rs, 0)]], dtype=np.int64)
    playout.play_batch(tables.tab, idx, np.zeros((1, 2), dtype=np.uint64),
                       np.zeros(2, dtype=np.int64), np.zeros((2, 32)), max_plies(rs),
                       max_events(rs))


def _batch_job(config: RunConfig, batch: Batch, run_id: str):
    t = time.perf_counter()
    try:
        games, events = play_batch(config, batch, run_id)
    except BotError as e:
        return batch, None, None, e, time.perf_counter() - t
    return batch, games, events, None, time.perf_counter() - t


def execute(config: RunConfig, run_dir: Path, *, jobs: int = 1, backend: str = "loky",
            scheduler: str | None = None, progress: bool = True, command: str = "",
            echo: Callable[[str], None] = print) -> RunResult:
    """Play every batch of ``config`` not yet stored in ``run_dir``; write the tables and the
    manifest. Safe to call again on the same folder (it resumes)."""
    run_dir = Path(run_dir)
    _check_writable(run_dir)
    manifest_path = run_dir / MANIFEST
    manifest: dict[str, Any] = {}
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        old = RunConfig.from_manifest(manifest["config"])
        if [r.content_hash() for r in old.rulesets] != [r.content_hash()
                                                        for r in config.rulesets] \
                or old.bots != config.bots or old.seed != config.seed \
                or old.pairings != config.pairings:
            raise RunError(f"{run_dir} holds a different run (rulesets, bots, pairings or "
                           "seed differ); use another --out or --resume it as it is")
        config.deals = max(config.deals, old.deals)
    run_id = manifest.get("run_id") or run_identity(config)
    batches = plan_batches(config)
    done = set(manifest.get("batches_done", []))
    # a batch is done when its file exists: the manifest may lag a killed run
    for bt in batches:
        if (run_dir / "batches" / f"{bt.key}.games.parquet").exists() and \
                (run_dir / "batches" / f"{bt.key}.events.parquet").exists():
            done.add(bt.key)
    todo = [bt for bt in batches if bt.key not in done]
    # reject stale batches from a differently-batched earlier attempt only if they overlap:
    # keys encode deal ranges, and merging reads exactly the planned keys (see _merge)
    manifest.update({
        "run_id": run_id,
        "config": config.to_dict(),
        "command": command or " ".join(sys.argv),
        "versions": _versions(),
        "started": manifest.get("started") or _dt.datetime.now().isoformat(timespec="seconds"),
        "batches_total": len(batches),
        "batches_done": sorted(done),
    })
    _atomic_write_text(json.dumps(manifest, indent=2), manifest_path)
    total_games = sum(2 * b.deals for b in batches)
    todo_games = sum(2 * b.deals for b in todo)
    if todo:
        _warm_up(config)
    t0 = time.perf_counter()
    played = 0
    failure: BotError | None = None
    client, ctx, parallel = _make_parallel(jobs, backend, scheduler)
    bar = _progress(todo_games, progress)
    try:
        with ctx:
            if parallel is None:
                results: Iterator = (_batch_job(config, bt, run_id) for bt in todo)
            else:
                from joblib import delayed

                results = parallel(delayed(_batch_job)(config, bt, run_id) for bt in todo)
            for bt, games, events, err, _secs in results:
                if err is not None:
                    failure = err
                    break
                bdir = run_dir / "batches"
                _atomic_write_parquet(_to_table(events, EVENTS_SCHEMA),
                                      bdir / f"{bt.key}.events.parquet")
                _atomic_write_parquet(_to_table(games, GAMES_SCHEMA),
                                      bdir / f"{bt.key}.games.parquet")
                done.add(bt.key)
                played += len(games)
                manifest["batches_done"] = sorted(done)
                _atomic_write_text(json.dumps(manifest, indent=2), manifest_path)
                if bar is not None:
                    bar.update(len(games))
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        echo(f"\ninterrupted: {len(done)} of {len(batches)} batches are stored in {run_dir}.\n"
             f"resume with: patchsim run --resume {run_dir}")
        raise
    finally:
        if bar is not None:
            bar.close()
        if client is not None:
            client.close()
    seconds = time.perf_counter() - t0
    rate = played / seconds if seconds > 0 and played else 0.0
    complete = failure is None and len(done) >= len(batches)
    manifest.update({"finished": _dt.datetime.now().isoformat(timespec="seconds"),
                     "complete": complete, "games_total": total_games,
                     "last_session": {"games": played, "seconds": round(seconds, 3),
                                      "games_per_s": round(rate, 1), "jobs": jobs,
                                      "backend": backend}})
    _atomic_write_text(json.dumps(manifest, indent=2), manifest_path)
    if failure is not None:
        rec_path = run_dir / f"failed-game-seed{failure.seed}.json"
        _atomic_write_text(json.dumps(failure.record, indent=1), rec_path)
        raise RunError(f"{failure}\nthe game up to the failing move is in {rec_path} "
                       f"(patchsim replay {rec_path}); finished batches are kept in {run_dir}")
    if complete:
        _merge(run_dir, batches)
    return RunResult(run_dir, total_games, seconds, rate, complete)


def _progress(total: int, enabled: bool):
    if not enabled or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="game", smoothing=0.1, dynamic_ncols=True, file=sys.stderr)


def _merge(run_dir: Path, batches: list[Batch]) -> None:
    """Concatenate the batch files into games.parquet and events.parquet, ordered by ruleset,
    pairing, deal and seat order, in row groups of a fixed size, reading one batch at a time:
    the files are the same whatever the batch size, and memory stays flat."""
    ordered = sorted(batches, key=lambda b: (b.ruleset, b.pairing, b.first_deal))
    for kind, schema in (("games", GAMES_SCHEMA), ("events", EVENTS_SCHEMA)):
        target = run_dir / f"{kind}.parquet"
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=run_dir)
        os.close(fd)
        writer = pq.ParquetWriter(tmp, schema)
        try:
            pending: list[pa.Table] = []
            rows = 0
            for bt in ordered:
                table = pq.read_table(run_dir / "batches" / f"{bt.key}.{kind}.parquet",
                                      schema=schema)
                keys = [("game_id", "ascending")]
                if kind == "events":
                    keys.append(("seq", "ascending"))
                pending.append(table.sort_by(keys))
                rows += table.num_rows
                while rows >= ROW_GROUP:
                    merged = pa.concat_tables(pending)
                    writer.write_table(merged.slice(0, ROW_GROUP), row_group_size=ROW_GROUP)
                    rest = merged.slice(ROW_GROUP)
                    pending, rows = [rest], rest.num_rows
            if rows:
                writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP)
            writer.close()
            os.replace(tmp, target)
        finally:
            writer.close()
            if os.path.exists(tmp):
                os.unlink(tmp)


def clear_batches(run_dir: Path) -> None:
    shutil.rmtree(Path(run_dir) / "batches", ignore_errors=True)


def load_games(run_dir: str | Path) -> pd.DataFrame:
    return pd.read_parquet(Path(run_dir) / "games.parquet")


def load_events(run_dir: str | Path) -> pd.DataFrame:
    return pd.read_parquet(Path(run_dir) / "events.parquet")
