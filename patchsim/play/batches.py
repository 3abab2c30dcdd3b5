"""Batches: the unit of work of a run (one ruleset, one pairing, a range of deals), and
playing one into its games and events tables."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from patchsim.bots import policies, search
from patchsim.bots.learned import ModelError, bind_bot, param_rows
from patchsim.bots.registry import Bot, CompiledBot, make_bot
from patchsim.engine import core
from patchsim.engine.deal import deal_arrays, deal_seed
from patchsim.engine.tables import Tables, compile_ruleset, square_name
from patchsim.play import columns as cols
from patchsim.play import loops as playout
from patchsim.play.config import RunConfig, RunError
from patchsim.play.match import (
    GameResult,
    GameStopped,
    bot_error,
    max_events,
    max_plies,
    play_game,
)
from patchsim.play.runfolder import EVENTS_SCHEMA, GAMES_SCHEMA


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
    its = [float(b.params[search.M_ITERATIONS]) for b in bots
           if isinstance(b, CompiledBot) and b.kind == policies.MCTS]
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
    bots = [make_bot(s, bot_path=config.bot_path) for s in config.bots]
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


class BatchStopped(Exception):
    """A batch was asked to stop (its ``stop`` flag was set) before it finished; nothing of
    it is kept, and a resumed run plays it again."""


def play_batch(config: RunConfig, batch: Batch, run_id: str,
               stop: np.ndarray | None = None) -> tuple[pa.Table, pa.Table]:
    """Play one batch; return its games and events tables. Raises BotError on a bot failure.
    ``stop``: a one-element int64 array; once another thread sets it to non-zero, the batch
    stops before its next move (a search within a few iterations, a Python bot without
    waiting for its move) and raises BatchStopped.

    Built-in bots play inside the compiled loop, all deals of a seat order in one call; other
    bots play game by game through the Python driver. Either way the tables are built from
    arrays, column by column, so the runner adds little to the engine's own time."""
    rs = config.rulesets[batch.ruleset]
    tables = compile_ruleset(rs)
    stop = np.zeros(1, dtype=np.int64) if stop is None else stop
    a, b = config.pairings[batch.pairing]
    # a learned bot carries its ruleset's model in its parameter vector (compiled loop)
    try:
        bot_a = bind_bot(make_bot(config.bots[a], bot_path=config.bot_path), tables)
        bot_b = bind_bot(make_bot(config.bots[b], bot_path=config.bot_path), tables)
    except ModelError as e:
        raise RunError(str(e)) from None
    # a restricted bot (forbid=<patch id>) gets the patch's index in this ruleset
    if isinstance(bot_a, CompiledBot):
        bot_a = bot_a.bind(tables)
    if isinstance(bot_b, CompiledBot):
        bot_b = bot_b.bind(tables)
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
        params = param_rows([bot_a.params, bot_b.params])  # a network bot's row is longer
        res, moves, ev, nev, bad = playout.play_deals(tables.tab, idx, streams, kinds, params,
                                                      max_plies(rs), max_events(rs), stop)
        if bad == playout.STOPPED:
            raise BatchStopped(batch.key)
        if bad >= 0:
            i, order = divmod(int(bad), 2)
            p = int(res[bad, playout.R_ERROR]) - 1
            n = int(res[bad, playout.R_PLIES])
            start = int(res[:bad, playout.R_PLIES].sum())
            seat_bots = (bot_a, bot_b) if order == 0 else (bot_b, bot_a)
            raise bot_error(tables, circle(i), moves[start: start + n - 1], seat_bots[p],
                             p, int(seeds[i]), n,
                             f"chose an illegal move (code {moves[start + n - 1]})")
        raw = RawBatch(res, moves, ev, nev, pair_deal, pair_seed, pair_order)
    else:
        rows, move_parts, ev_parts = [], [], []
        for i in range(len(deals)):
            for order in (0, 1):
                if stop[0] != 0:
                    raise BatchStopped(batch.key)
                specs = (config.bots[a], config.bots[b])
                if order == 1:
                    specs = specs[::-1]
                st = streams[i] if order == 0 else streams[i, ::-1].copy()
                # fresh bots for every game: a bot that keeps state between moves must not
                # carry it into the next game, or results would depend on the batch size
                pair = (make_bot(specs[0], bot_path=config.bot_path),
                        make_bot(specs[1], bot_path=config.bot_path))
                try:
                    r = play_game(tables, pair, circle(i), int(seeds[i]), streams=st,
                                  move_seconds=config.move_seconds, stop=stop)
                except GameStopped:
                    raise BatchStopped(batch.key) from None
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
                    (playout.R_LEATHER, "leather"), (playout.R_HOLES, "holes")):
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
        return cols.numeric(res[:, col], pa.int32())

    offsets = np.concatenate([[0], np.cumsum(plies)])
    games = cols.table({
        "run_id": cols.constant(run_id, n),
        "ruleset": cols.constant(rs.name, n),
        "ruleset_hash": cols.constant(rs.content_hash(), n),
        "game_id": cols.numeric(gids, pa.int64()),
        "deal": cols.numeric(deal, pa.int64()),
        "deal_seed": cols.numeric(seed, pa.int64()),
        "pairing": cols.constant(config.pairing_label(batch.pairing), n),
        "order": cols.numeric(order, pa.int8()),
        "bot0": cols.dictionary(order, specs),
        "bot1": cols.dictionary(1 - order, specs),
        "winner": cols.numeric(winner, pa.int8()),
        "winner_bot": cols.dictionary(np.where(winner == 0, order, 1 - order), specs),
        "tie_break": cols.booleans(res[:, playout.R_SCORE] == res[:, playout.R_SCORE + 1]),
        "score0": i32(playout.R_SCORE), "score1": i32(playout.R_SCORE + 1),
        "buttons0": i32(playout.R_BUTTONS), "buttons1": i32(playout.R_BUTTONS + 1),
        "empty0": i32(playout.R_EMPTY), "empty1": i32(playout.R_EMPTY + 1),
        "position0": i32(playout.R_POS), "position1": i32(playout.R_POS + 1),
        "bonus0": cols.booleans(bonus == 0), "bonus1": cols.booleans(bonus == 1),
        "first_to_end": cols.numeric(res[:, playout.R_FIRST_END], pa.int8()),
        "passes0": i32(playout.R_PASSES), "passes1": i32(playout.R_PASSES + 1),
        "buys0": i32(playout.R_BUYS), "buys1": i32(playout.R_BUYS + 1),
        "leather0": i32(playout.R_LEATHER), "leather1": i32(playout.R_LEATHER + 1),
        "holes0": i32(playout.R_HOLES), "holes1": i32(playout.R_HOLES + 1),
        "plies": cols.numeric(plies, pa.int32()),
        "moves": cols.int_lists(offsets, moves),
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
    place_sq = tables.placement_texts
    sq_names = np.array([square_name(s, rs.cols) for s in range(rs.rows * rs.cols)] + [None],
                        dtype=object)
    buy_patch = np.where(is_buy, e[:, 2], 0)
    # which pairing bot made the event: seat 0 holds bot `order`, seat 1 the other one
    seat_bot = np.where(seat == 0, np.repeat(order, nev), 1 - np.repeat(order, nev))
    sq_dict = np.concatenate([place_sq, sq_names[:-1]])
    sq_index = np.where(is_buy, e[:, 5], np.where(is_place, len(place_sq) + e[:, 3], 0))
    m = len(e)
    events = cols.table({
        "run_id": cols.constant(run_id, m),
        "ruleset": cols.constant(rs.name, m),
        "game_id": cols.numeric(gid_rows, pa.int64()),
        "seq": cols.numeric(seq, pa.int32()),
        "event": cols.dictionary(kind, names),
        "seat": cols.numeric(seat, pa.int8()),
        "bot": cols.dictionary(seat_bot, specs),
        # buys: position before the move; pass: the space left; marks: the mark's space
        "position": cols.numeric(np.where(is_buy, e[:, 3], e[:, 2]), pa.int32()),
        "patch": cols.dictionary(buy_patch, patch_ids[:-1], mask=~is_buy),
        "cost": cols.numeric(np.where(is_buy, cost[buy_patch], 0), pa.int32()),
        "buttons_before": cols.numeric(np.where(is_buy, e[:, 4], -1), pa.int32()),
        "amount": cols.numeric(np.where(is_pass, e[:, 4], np.where(
            kind == core.EV_INCOME, e[:, 3], 0)), pa.int32()),
        "squares": cols.dictionary(sq_index, sq_dict, mask=~(is_buy | is_place)),
        "filled_hole": cols.booleans(is_place & (e[:, 4] == 1)),
        "opp_position": cols.numeric(np.where(is_claim, e[:, 3], -1), pa.int32()),
        "score_lead": cols.numeric(np.where(is_claim, e[:, 4], 0), pa.int32()),
    })
    return games, events
