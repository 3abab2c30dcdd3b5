"""Batch runs: many seeded, seat-swapped games between bots under one or more rulesets,
played in parallel (joblib, or a Dask cluster through joblib) and stored as Parquet.

The unit of work is a *batch*: one ruleset, one pairing of bots, a range of deals. Every deal
is played twice with the seats swapped, every ruleset gets the same deals, and every game's
seeds come from the master seed alone, so the stored tables are identical for any number of
workers, batch size or backend. Finished batches are written as they complete (atomically),
so a run can be stopped and resumed, or topped up with more deals.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
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

from patchsim.bots.registry import Bot, BotSpecError, CompiledBot, make_bot
from patchsim.engine import core
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset, parse_override
from patchsim.engine.tables import Tables, compile_ruleset, square_name
from patchsim.play import loops as playout
from patchsim.play.match import BotError, GameResult, max_events, max_plies, play_game

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
            "batch_deals": self.batch_deals,
        }

    @classmethod
    def from_manifest(cls, data: dict[str, Any]) -> RunConfig:
        from patchsim.engine.ruleset import ruleset_from_dict

        rulesets = [ruleset_from_dict(r["rules"], source=f"manifest: {r['name']}")
                    for r in data["rulesets"]]
        return cls(data["name"], rulesets, list(data["bots"]),
                   [tuple(p) for p in data["pairings"]], int(data["deals"]), int(data["seed"]),
                   data.get("batch_deals"))

    def pairing_label(self, i: int) -> str:
        a, b = self.pairings[i]
        return f"{self.bots[a]} vs {self.bots[b]}"


def run_identity(config: RunConfig) -> str:
    """A run's id: a hash of what determines its games (not of the number of deals, so a
    top-up keeps it; not of the folder, so two identical runs store identical tables)."""
    import hashlib

    ident = {k: v for k, v in config.to_dict().items()
             if k not in ("deals", "rulesets", "batch_deals")}
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


def _whole(value: Any, where: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RunError(f"{where}: expected a whole number >= {lo}, got {value!r}")
    if value < lo:
        raise RunError(f"{where} must be at least {lo}, got {value}")
    return value


def _read_yaml(path: Path, ref: str) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise RunError(f"{ref}: not valid YAML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunError(f"{ref}: cannot read the file: {e}") from None


def load_run_config(ref: str, *, games: int | None = None, bots: Sequence[str] | None = None,
                    seed: int | None = None, overrides: Sequence[str] = (),
                    pairings: str | None = None, batch_deals: int | None = None) -> RunConfig:
    """A run from a ruleset (name or file: the default line-up) or an experiment file (a YAML
    mapping with ``ruleset``/``rulesets`` and ``bots``). Command-line options win. Every
    problem is a RunError naming the file, key and value, raised before anything runs."""
    path = Path(ref)
    data: dict[str, Any] = {}
    if path.is_dir():
        raise RunError(f"{ref} is a folder; give a ruleset or experiment YAML file (or "
                       f"--resume {ref} to continue a run)")
    if path.suffix in (".yaml", ".yml") and path.exists():
        loaded = _read_yaml(path, ref)
        if isinstance(loaded, dict) and "base" in loaded and not (
                "rulesets" in loaded or "ruleset" in loaded):
            raise RunError(f"{ref} is a sweep experiment (it has `base`): use "
                           f"`patchsim sweep {ref}` (or tune/check)")
        if isinstance(loaded, dict) and ("rulesets" in loaded or "ruleset" in loaded):
            data = loaded
    if data:
        unknown = sorted(set(data) - RUN_KEYS)
        if unknown:
            raise RunError(f"{ref}: unknown key(s) {', '.join(unknown)} (an experiment has "
                           f"{', '.join(sorted(RUN_KEYS))})")
        refs = data.get("rulesets") if "rulesets" in data else [data.get("ruleset")]
        if isinstance(refs, str):
            refs = [refs]
        key = "rulesets" if "rulesets" in data else "ruleset"
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            raise RunError(f"{ref}: {key}: expected a ruleset name or file, or a list of "
                           f"them, got {data.get(key)!r}")
        name = str(data.get("name") or path.stem)
        base = path.parent
        rulesets = []
        for i, r in enumerate(refs):
            target = base / r if r.endswith((".yaml", ".yml")) and (base / r).exists() else r
            try:
                rulesets.append(load_ruleset(target))
            except RulesetError as e:
                raise RunError(f"{ref}: rulesets[{i}]: {e}") from None
        file_bots = data.get("bots")
        if isinstance(file_bots, str | dict):
            file_bots = [file_bots]  # one bot
        if file_bots is not None and (not isinstance(file_bots, list) or not file_bots):
            raise RunError(f"{ref}: bots: expected a list of bot specs, got {file_bots!r}")
        bot_specs = list(bots) if bots else list(file_bots or DEFAULT_BOTS)
        mode = pairings or str(data.get("pairings", "all"))
        if mode not in ("all", "cross", "self"):
            raise RunError(f"{ref}: pairings: {mode!r} is not one of all, cross, self")
        games_n = games if games is not None else _whole(data.get("games", DEFAULT_GAMES),
                                                         f"{ref}: games", 1)
        seed_n = seed if seed is not None else _whole(data.get("seed", 1), f"{ref}: seed", 0)
        extra = data.get("set") or {}
        if not isinstance(extra, dict):
            raise RunError(f"{ref}: set: expected a mapping of ruleset fields to values, got "
                           f"{extra!r}")
        overrides = [*(f"{k}={json.dumps(v)}" for k, v in extra.items()), *overrides]
        if batch_deals is None and data.get("batch_deals") is not None:
            batch_deals = _whole(data["batch_deals"], f"{ref}: batch_deals", 1)
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
    _whole(games_n, "--games", 1)
    _whole(seed_n, "--seed", 0)
    if batch_deals is not None:
        _whole(batch_deals, "batch_deals", 1)
    if overrides:
        try:
            pairs = dict(parse_override(o) for o in overrides)
            rulesets = [r.with_overrides(pairs) for r in rulesets]
        except RulesetError as e:
            raise RunError(str(e)) from None
        # changed rules get a name of their own: results must not pass for the edition's
        rulesets = [dataclasses.replace(r, name=f"{r.name}+{r.content_hash()[:6]}")
                    for r in rulesets]
    canonical = []
    for spec in bot_specs:
        try:
            bot = make_bot(spec)
        except BotSpecError as e:
            raise RunError(str(e)) from None
        if getattr(bot, "values", {}).get("time_ms", 0):
            raise RunError(f"bot {bot.spec}: a time budget (time_ms) makes results depend on "
                           "the machine and its load; runs need reproducible bots (use "
                           "iterations)")
        canonical.append(bot.spec)  # one bot, one name, however it was typed
    if len(set(canonical)) != len(canonical):
        raise RunError(f"the same bot is listed twice: {', '.join(canonical)}")
    pair_list = all_pairings(len(canonical), mode)
    if not pair_list:
        raise RunError(f"pairings {mode!r} with {len(canonical)} bot(s) gives no games "
                       "(cross pairings need at least two bots)")
    return RunConfig(name, rulesets, canonical, pair_list, games_to_deals(games_n), seed_n,
                     batch_deals, ref)


# --- deals ------------------------------------------------------------------------------------
def deal_seed(master: int, deal: int) -> int:
    """The seed of deal ``deal``: a SeedSequence child of the master seed (independent of how
    many deals the run has, so topping up keeps the earlier deals)."""
    ss = np.random.SeedSequence(entropy=master, spawn_key=(deal,))
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def deal_arrays(ruleset: Ruleset, seeds: Sequence[int] | np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Circles (patch indices) and bot streams of many deals at once (compiled)."""
    tables = compile_ruleset(ruleset)
    start = tables.patch_index[ruleset.start_after]
    return playout.deal_setup(np.asarray(seeds, dtype=np.int64).astype(np.uint64),
                              len(ruleset.patches), start)


def deal_streams(ruleset: Ruleset, seed: int) -> np.ndarray:
    """The random streams of the pairing's two bots in a deal (first bot, second bot). They
    follow the circle's shuffle in the deal's stream, so they depend on the patch count."""
    return deal_arrays(ruleset, [seed])[1][0]


def deal_circle_for(ruleset: Ruleset, seed: int) -> list[str]:
    """The deal's patch circle: the same for every ruleset with the same patch table (the
    shuffle permutes table positions), which is what makes deals common across rulesets."""
    ids = [p.id for p in ruleset.patches]
    return [ids[i] for i in deal_arrays(ruleset, [seed])[0][0]]


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


def plan_batches(config: RunConfig, segments: Sequence[int] | None = None) -> list[Batch]:
    """Every batch of the run. ``segments`` are the deal counts the run has had (a top-up
    from 20 to 40 deals gives [20, 40]); each segment is cut into batches on its own, so
    the batches of earlier segments, already stored, keep their keys."""
    bounds = [0, *(segments or [config.deals])]
    if bounds[-1] != config.deals:
        bounds.append(config.deals)
    out = []
    bots = [make_bot(s) for s in config.bots]
    for pi, (a, b) in enumerate(config.pairings):
        size = config.batch_deals or default_batch_deals([bots[a], bots[b]])
        for r in range(len(config.rulesets)):
            for lo, hi in itertools.pairwise(bounds):
                d = lo
                while d < hi:
                    n = min(size, hi - d)
                    out.append(Batch(r, pi, d, n))
                    d += n
    return out


def game_id(config: RunConfig, ruleset: int, pairing: int, deal: int, order: int) -> int:
    """A game's id, stable when deals are added."""
    return ((deal * len(config.rulesets) + ruleset) * len(config.pairings) + pairing) * 2 + order


EVENT_NAMES = {core.EV_BUY: "buy", core.EV_PASS: "pass", core.EV_INCOME: "income",
               core.EV_LEATHER_CLAIM: "leather_claim", core.EV_LEATHER_PLACE: "leather_place",
               core.EV_LEATHER_LOST: "leather_lost", core.EV_BONUS: "bonus"}


@dataclass
class RawBatch:
    """A batch's games as arrays, one row per game in canonical order (deal, then seat
    order): result rows, and moves and events packed end to end with their counts."""

    res: np.ndarray  # (games, R_WIDTH)
    moves: np.ndarray  # (total plies,)
    ev: np.ndarray  # (total events, EV_WIDTH)
    nev: np.ndarray  # (games,)
    deal: np.ndarray  # (games,)
    seed: np.ndarray  # (games,)
    order: np.ndarray  # (games,)


def play_batch(config: RunConfig, batch: Batch, run_id: str) -> tuple[pa.Table, pa.Table]:
    """Play one batch; return its games and events tables. Raises BotError on a bot failure.

    Built-in bots play inside the compiled loop, all deals of a seat order in one call; other
    bots play game by game through the Python driver. Either way the tables are built from
    arrays, column by column, so the runner adds little to the engine's own time."""
    rs = config.rulesets[batch.ruleset]
    tables = compile_ruleset(rs)
    a, b = config.pairings[batch.pairing]
    bot_a, bot_b = make_bot(config.bots[a]), make_bot(config.bots[b])
    deals = np.arange(batch.first_deal, batch.first_deal + batch.deals, dtype=np.int64)
    seeds = np.array([deal_seed(config.seed, int(d)) for d in deals], dtype=np.int64)
    idx, streams = deal_arrays(rs, seeds)
    ids = tables.patch_ids

    def circle(i: int) -> list[str]:  # patch ids, only where a game is replayed or reported
        return [ids[k] for k in idx[i]]

    pair_deal = np.repeat(deals, 2)
    pair_seed = np.repeat(seeds, 2)
    pair_order = np.tile(np.array([0, 1], dtype=np.int8), len(deals))
    if isinstance(bot_a, CompiledBot) and isinstance(bot_b, CompiledBot):
        kinds = np.array([bot_a.kind, bot_b.kind], dtype=np.int64)
        params = np.stack([bot_a.params, bot_b.params])
        res, moves, ev, nev, bad = playout.play_deals(tables.tab, idx, streams, kinds, params,
                                                      max_plies(rs), max_events(rs))
        if bad >= 0:
            from patchsim.play.match import _bot_error

            i, order = divmod(int(bad), 2)
            p = int(res[bad, playout.R_ERROR]) - 1
            n = int(res[bad, playout.R_PLIES])
            start = int(res[:bad, playout.R_PLIES].sum())
            seat_bots = (bot_a, bot_b) if order == 0 else (bot_b, bot_a)
            raise _bot_error(tables, circle(i), moves[start: start + n - 1], seat_bots[p],
                             p, int(seeds[i]), n,
                             f"chose an illegal move (code {moves[start + n - 1]})")
        raw = RawBatch(res, moves, ev, nev, pair_deal, pair_seed, pair_order)
    else:
        rows, move_parts, ev_parts = [], [], []
        for i in range(len(deals)):
            for order in (0, 1):
                specs = (config.bots[a], config.bots[b])
                if order == 1:
                    specs = specs[::-1]
                st = streams[i] if order == 0 else streams[i, ::-1].copy()
                # fresh bots for every game: a bot that keeps state between moves must not
                # carry it into the next game, or results would depend on the batch size
                pair = (make_bot(specs[0]), make_bot(specs[1]))
                r = play_game(tables, pair, circle(i), int(seeds[i]), streams=st)
                rows.append(_result_row(r))
                move_parts.append(r.moves)
                ev_parts.append(r.events)
        raw = RawBatch(np.array(rows), np.concatenate(move_parts),
                       np.concatenate(ev_parts) if ev_parts else
                       np.zeros((0, core.EV_WIDTH), dtype=np.int64),
                       np.array([len(e) for e in ev_parts], dtype=np.int64),
                       pair_deal, pair_seed, pair_order)
    games, events = _tables(config, batch, run_id, tables, raw)
    # plain strings from here on: the cast runs in the worker, not in the serial merge
    return games.cast(GAMES_SCHEMA), events.cast(EVENTS_SCHEMA)


def _result_row(r: GameResult) -> np.ndarray:
    row = np.zeros(playout.R_WIDTH, dtype=np.int64)
    row[playout.R_WINNER] = r.winner
    for k, attr in ((playout.R_SCORE, "scores"), (playout.R_BUTTONS, "buttons"),
                    (playout.R_EMPTY, "empty"), (playout.R_POS, "positions"),
                    (playout.R_PASSES, "passes"), (playout.R_BUYS, "buys"),
                    (playout.R_LEATHER, "leather")):
        row[k : k + 2] = getattr(r, attr)
    row[playout.R_BONUS] = r.bonus_owner
    row[playout.R_FIRST_END] = r.first_to_end
    row[playout.R_PLIES] = r.plies
    return row


def _tables(config: RunConfig, batch: Batch, run_id: str, tables: Tables,
            raw: RawBatch) -> tuple[pa.Table, pa.Table]:
    """Games and events tables of a batch. Rows come in canonical order (by deal, then seat
    order, so by game id): the merge can concatenate batches without sorting."""
    rs = tables.ruleset
    a, b = config.pairings[batch.pairing]
    specs = np.array([config.bots[a], config.bots[b]], dtype=object)
    res, deal, seed, order = raw.res, raw.deal, raw.seed, raw.order
    moves, ev, nev = raw.moves, raw.ev, raw.nev
    n = len(deal)
    gids = ((deal * len(config.rulesets) + batch.ruleset) * len(config.pairings)
            + batch.pairing) * 2 + order
    winner = res[:, playout.R_WINNER].astype(np.int8)
    bonus = res[:, playout.R_BONUS]
    plies = res[:, playout.R_PLIES]

    def i32(col: int) -> pa.Array:
        return pa.array(res[:, col].astype(np.int32))

    offsets = np.concatenate([[0], np.cumsum(plies)]).astype(np.int32)
    move_list = pa.ListArray.from_arrays(pa.array(offsets), pa.array(moves.astype(np.int32)))
    games = pa.table({
        "run_id": _const(run_id, n),
        "ruleset": _const(rs.name, n),
        "ruleset_hash": _const(rs.content_hash(), n),
        "game_id": pa.array(gids.astype(np.int64)),
        "deal": pa.array(deal.astype(np.int64)),
        "deal_seed": pa.array(seed.astype(np.int64)),
        "pairing": _const(config.pairing_label(batch.pairing), n),
        "order": pa.array(order.astype(np.int8)),
        "bot0": _dict(order, specs),
        "bot1": _dict(1 - order, specs),
        "winner": pa.array(winner),
        "winner_bot": _dict(np.where(winner == 0, order, 1 - order), specs),
        "tie_break": pa.array(res[:, playout.R_SCORE] == res[:, playout.R_SCORE + 1]),
        "score0": i32(playout.R_SCORE), "score1": i32(playout.R_SCORE + 1),
        "buttons0": i32(playout.R_BUTTONS), "buttons1": i32(playout.R_BUTTONS + 1),
        "empty0": i32(playout.R_EMPTY), "empty1": i32(playout.R_EMPTY + 1),
        "position0": i32(playout.R_POS), "position1": i32(playout.R_POS + 1),
        "bonus0": pa.array(bonus == 0), "bonus1": pa.array(bonus == 1),
        "first_to_end": pa.array(res[:, playout.R_FIRST_END].astype(np.int8)),
        "passes0": i32(playout.R_PASSES), "passes1": i32(playout.R_PASSES + 1),
        "buys0": i32(playout.R_BUYS), "buys1": i32(playout.R_BUYS + 1),
        "leather0": i32(playout.R_LEATHER), "leather1": i32(playout.R_LEATHER + 1),
        "plies": pa.array(plies.astype(np.int32)),
        "moves": move_list,
    })

    e = ev
    kind = e[:, 0]
    seat = e[:, 1]
    gid_rows = np.repeat(gids, nev)
    # position of each event within its game: a running count restarted at every game
    starts = np.repeat(np.cumsum(nev) - nev, nev)
    seq = np.arange(len(e)) - starts
    is_buy = kind == core.EV_BUY
    is_place = kind == core.EV_LEATHER_PLACE
    is_claim = kind == core.EV_LEATHER_CLAIM
    is_pass = kind == core.EV_PASS
    names = np.array([EVENT_NAMES.get(k, "?") for k in range(8)], dtype=object)
    patch_ids = np.array(tables.patch_ids + [None], dtype=object)
    cost = np.array([p.cost for p in rs.patches] + [0], dtype=np.int32)
    place_sq = _placement_names(tables)
    sq_names = np.array([square_name(s, rs.cols) for s in range(rs.rows * rs.cols)] + [None],
                        dtype=object)
    buy_patch = np.where(is_buy, e[:, 2], 0)
    # which pairing bot made the event: seat 0 holds bot `order`, seat 1 the other one
    seat_bot = np.where(seat == 0, np.repeat(order, nev), 1 - np.repeat(order, nev))
    sq_dict = np.concatenate([place_sq, sq_names[:-1]])
    sq_index = np.where(is_buy, e[:, 5], np.where(is_place, len(place_sq) + e[:, 3], 0))
    m = len(e)
    events = pa.table({
        "run_id": _const(run_id, m),
        "ruleset": _const(rs.name, m),
        "game_id": pa.array(gid_rows.astype(np.int64)),
        "seq": pa.array(seq.astype(np.int32)),
        "event": _dict(kind, names),
        "seat": pa.array(seat.astype(np.int8)),
        "bot": _dict(seat_bot, specs),
        # buys: position before the move; pass: the space left; marks: the mark's space
        "position": pa.array(np.where(is_buy, e[:, 3], e[:, 2]).astype(np.int32)),
        "patch": _dict(buy_patch, patch_ids[:-1], mask=~is_buy),
        "cost": pa.array(np.where(is_buy, cost[buy_patch], 0).astype(np.int32)),
        "buttons_before": pa.array(np.where(is_buy, e[:, 4], -1).astype(np.int32)),
        "amount": pa.array(np.where(is_pass, e[:, 4], np.where(
            kind == core.EV_INCOME, e[:, 3], 0)).astype(np.int32)),
        "squares": _dict(sq_index, sq_dict, mask=~(is_buy | is_place)),
        "filled_hole": pa.array(np.where(is_place, e[:, 4] == 1, False)),
        "opp_position": pa.array(np.where(is_claim, e[:, 3], -1).astype(np.int32)),
        "score_lead": pa.array(np.where(is_claim, e[:, 4], 0).astype(np.int32)),
    })
    return games, events


def _const(value: str, n: int) -> pa.DictionaryArray:
    """A column holding one string n times (dictionary-encoded: no n Python strings)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)),
                                          pa.array([value], pa.string()))


def _dict(indices: np.ndarray, values, mask: np.ndarray | None = None) -> pa.DictionaryArray:
    """A string column as indices into ``values`` (null where ``mask``); cast to plain
    strings when the batches are merged."""
    idx = np.asarray(indices, dtype=np.int32)
    arr = pa.array(np.where(mask, 0, idx) if mask is not None else idx,
                   mask=mask if mask is not None else None)
    return pa.DictionaryArray.from_arrays(arr, pa.array(list(values), pa.string()))


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


BATCH_SUFFIX = "arrow"  # batch files: Arrow IPC with lz4, far cheaper to write than Parquet


def batch_path(run_dir: Path, key: str, kind: str) -> Path:
    return run_dir / "batches" / f"{key}.{kind}.{BATCH_SUFFIX}"


def _atomic_write_batch(table: pa.Table, path: Path) -> None:
    """Write a batch file to a temporary name in the same folder, then rename it."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=f".{BATCH_SUFFIX}", dir=path.parent)
    os.close(fd)
    try:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(
                sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as w:
            w.write_table(table)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _read_batch(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


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


def read_manifest(run_dir: Path) -> tuple[dict[str, Any], RunConfig]:
    """A run folder's manifest and configuration; RunError if it is missing or damaged."""
    path = Path(run_dir) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        return manifest, RunConfig.from_manifest(manifest["config"])
    except FileNotFoundError:
        raise RunError(f"{run_dir} is not a run folder (no {MANIFEST})") from None
    except (OSError, ValueError, KeyError, TypeError, RulesetError) as e:
        raise RunError(f"{path} is damaged or not a patchsim manifest ({type(e).__name__}: "
                       f"{e}); start a new run with another --out") from None


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
    playout.play_deals(tables.tab, idx, np.zeros((1, 2), dtype=np.uint64),
                       np.zeros(2, dtype=np.int64), np.zeros((2, 32)), max_plies(rs),
                       max_events(rs))


def _batch_job(config: RunConfig, batch: Batch, run_id: str, write_to: str | None = None):
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
        _atomic_write_batch(events, batch_path(run_dir, batch.key, "events"))
        _atomic_write_batch(games, batch_path(run_dir, batch.key, "games"))
        return batch, None, None, None, time.perf_counter() - t, games.num_rows
    return batch, games, events, None, time.perf_counter() - t, games.num_rows


def execute(config: RunConfig, run_dir: Path, *, jobs: int = 1, backend: str = "loky",
            scheduler: str | None = None, progress: bool = True, command: str = "",
            echo: Callable[[str], None] = print) -> RunResult:
    """Play every batch of ``config`` not yet stored in ``run_dir``; write the tables and the
    manifest. Safe to call again on the same folder (it resumes).

    The backend (and a Dask scheduler) is checked before anything is written or played."""
    run_dir = Path(run_dir)
    client, ctx, parallel = _make_parallel(jobs, backend, scheduler)
    try:
        return _execute(config, run_dir, ctx, parallel, jobs=jobs, backend=backend,
                        progress=progress, command=command, echo=echo)
    finally:
        if client is not None:
            client.close()


def _execute(config: RunConfig, run_dir: Path, ctx, parallel, *, jobs: int, backend: str,
             progress: bool, command: str, echo: Callable[[str], None]) -> RunResult:
    _check_writable(run_dir)
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
    # keys encode deal ranges, and merging reads exactly the planned keys (see _merge)
    manifest.update({
        "run_id": run_id,
        "config": config.to_dict(),
        "command": command or " ".join(sys.argv),
        "versions": _versions(),
        "started": manifest.get("started") or _dt.datetime.now().isoformat(timespec="seconds"),
        "batches_total": len(batches),
        "segments": segments,
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
    bar = _progress(todo_games, progress)
    try:
        with ctx:
            write_to = None if backend == "dask" else str(run_dir)
            if parallel is None:
                results: Iterator = (_batch_job(config, bt, run_id, write_to) for bt in todo)
            else:
                from joblib import delayed

                results = parallel(delayed(_batch_job)(config, bt, run_id, write_to)
                                   for bt in todo)
            for bt, games, events, err, _secs, n_games in results:
                if err is not None:
                    failure = err
                    break
                if games is not None:
                    _atomic_write_batch(events, batch_path(run_dir, bt.key, "events"))
                    _atomic_write_batch(games, batch_path(run_dir, bt.key, "games"))
                done.add(bt.key)
                played += n_games
                manifest["batches_done"] = sorted(done)
                _atomic_write_text(json.dumps(manifest, indent=2), manifest_path)
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
        # lz4 and no min/max statistics on text columns: the merge is the serial part of a
        # parallel run, and this halves its cost at the same file size
        numeric = [f.name for f in schema if not pa.types.is_string(f.type)
                   and not pa.types.is_list(f.type)]
        writer = pq.ParquetWriter(tmp, schema, compression="lz4", write_statistics=numeric)
        try:
            pending: list[pa.Table] = []
            rows = 0
            for bt in ordered:
                # batch rows are already in game-id (and event) order: see _tables
                table = _read_batch(batch_path(run_dir, bt.key, kind))
                pending.append(table)
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


def execute_until(config: RunConfig, run_dir: Path, halfwidth: float, *, step_deals: int = 200,
                  echo: Callable[[str], None] = print, **kw: Any) -> RunResult:
    """Sequential stopping on precision: play ``step_deals`` more deals at a time (topping
    the run up) until the 95% interval of the first seat's win rate is at most ``halfwidth``
    on each side for every ruleset and pairing, or ``config.deals`` (the budget) is reached.

    The stopping rule looks only at the interval's width, which hardly depends on the
    estimate, so it does not bias the estimate the way stopping on significance would."""
    from patchsim.analysis.stats import clustered_rate

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
