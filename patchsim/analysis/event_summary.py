"""A run's event log summarised without holding it: :func:`scan_events` reads events.parquet
one row group at a time, only the columns it needs, and keeps per game the few facts the
analyses use (an :class:`EventSummary`); :func:`summarize` builds the same summary from an
events DataFrame through the same code, so that the two cannot disagree (the module doc of
:mod:`patchsim.analysis.tables` gives the sizes)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

BATCH_ROWS = 65_536  # events per scanned batch: a few MB whatever the size of the run

# the event columns the summary reads (of 16: not the squares, amounts and run id)
EVENT_COLUMNS = ("game_id", "seq", "event", "seat", "bot", "ruleset", "position", "patch",
                 "cost", "filled_hole", "score_lead", "opp_position")
EVENT_TEXT = ("event", "bot", "ruleset", "patch")
BUY, CLAIM, PLACE, LOST, BONUS = 1, 2, 3, 4, 5
KINDS = {"buy": BUY, "leather_claim": CLAIM, "leather_place": PLACE, "leather_lost": LOST,
         "bonus": BONUS}
NO_SEQ = np.iinfo(np.int32).max


# --- the events summary -----------------------------------------------------------------------
@dataclass
class EventSummary:
    """Per-game facts from a run's events, indexed by ``game_ids`` (sorted).

    Leather, per game and mark (``marks``, sorted): ``claim_seat`` (-1: not claimed; the
    first claim counts), the claimer's ``claim_lead`` and the opponent's position
    ``claim_opp``; ``placed`` (a patch was placed from it), ``hole`` (a placement filled an
    isolated hole), ``lost`` (it was lost). Per game: leather placements ``place_count``, how
    many filled a hole ``place_hits``, and whether the first one (by seq) did, ``first_hole``
    (-1: none). Buys, per game and patch (``patches``): the buyer's seat ``buy_seat`` (-1:
    not bought; a patch is bought at most once a game) and track position ``buy_pos``.
    ``patch_cost``: the cost of the first buy per (ruleset, patch). ``bot_buys``: buys and
    the sum of their positions per (ruleset, patch, bot). ``bonus_*``: the bonus events in
    stored order (row of the game, seat, position, seq). ``events``: rows read."""

    game_ids: np.ndarray
    events: int
    marks: np.ndarray
    claim_seat: np.ndarray
    claim_lead: np.ndarray
    claim_opp: np.ndarray
    placed: np.ndarray
    hole: np.ndarray
    lost: np.ndarray
    place_count: np.ndarray
    place_hits: np.ndarray
    first_hole: np.ndarray
    patches: list[str]
    buy_seat: np.ndarray
    buy_pos: np.ndarray
    patch_cost: dict[tuple[str | None, str], int]
    bot_buys: pd.DataFrame
    bonus_row: np.ndarray
    bonus_seat: np.ndarray
    bonus_pos: np.ndarray
    bonus_seq: np.ndarray
    _patch_slot: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._patch_slot = {p: i for i, p in enumerate(self.patches)}

    def rows(self, game_ids: Any) -> np.ndarray:
        """Each game id's row in the per-game arrays, -1 for a game without events here."""
        q = np.asarray(game_ids, dtype=np.int64)
        n = len(self.game_ids)
        if n == 0:
            return np.full(len(q), -1, dtype=np.int64)
        r = np.searchsorted(self.game_ids, q)
        rc = np.minimum(r, n - 1)
        return np.where(self.game_ids[rc] == q, rc, -1)

    def patch_slot(self, patch: str) -> int:
        """The column of ``patch`` in the buy arrays, -1 if it was never bought."""
        return self._patch_slot.get(patch, -1)


def take(values: np.ndarray, rows: np.ndarray, col: int | None = None,
         fill: Any = 0) -> np.ndarray:
    """``values[rows]`` (or ``values[rows, col]``) with ``fill`` where a row is -1."""
    ok = rows >= 0
    out = np.full(len(rows), fill, dtype=values.dtype)
    if col is None or col >= 0:
        out[ok] = values[rows[ok]] if col is None else values[rows[ok], col]
    return out


@dataclass
class _Batch:
    """A batch of events as numpy arrays; text columns as (codes, names), code -1: null."""

    n: int
    cols: dict[str, np.ndarray]
    text: dict[str, tuple[np.ndarray, list[Any]]]


class _Builder:
    """Accumulates an EventSummary batch by batch (in stored order: the first claim of a
    mark and the order of the bonus events depend on it)."""

    def __init__(self, game_ids: np.ndarray) -> None:
        self.ids = np.unique(np.asarray(game_ids, dtype=np.int64))
        n = len(self.ids)
        self.events = 0
        self.mark_slot: dict[int, int] = {}
        self.claim_seat = np.full((n, 0), -1, dtype=np.int8)
        # scores are unbounded (a ruleset may pay a million buttons), positions are at most
        # 1000 (ruleset.MAX_LAST_SPACE)
        self.claim_lead = np.zeros((n, 0), dtype=np.int32)
        self.claim_opp = np.zeros((n, 0), dtype=np.int16)
        self.placed = np.zeros((n, 0), dtype=bool)
        self.hole = np.zeros((n, 0), dtype=bool)
        self.lost = np.zeros((n, 0), dtype=bool)
        self.place_count = np.zeros(n, dtype=np.int16)
        self.place_hits = np.zeros(n, dtype=np.int16)
        self.first_seq = np.full(n, NO_SEQ, dtype=np.int32)
        self.first_hole = np.full(n, -1, dtype=np.int8)
        self.patch_slot: dict[str, int] = {}
        self.buy_seat = np.full((n, 0), -1, dtype=np.int8)
        self.buy_pos = np.zeros((n, 0), dtype=np.int16)  # track positions: at most 1000
        self.patch_cost: dict[tuple[str | None, str], int] = {}
        self.bot_buys: dict[tuple[str, str, str], list[int]] = {}
        self.bonus: list[tuple[np.ndarray, ...]] = []

    # slots: a column per mark or patch, added when first seen (a handful in a run)
    def _mark_slots(self, marks: np.ndarray) -> np.ndarray:
        new = [int(m) for m in np.unique(marks) if int(m) not in self.mark_slot]
        if new:
            k = len(new)
            for m in new:
                self.mark_slot[m] = len(self.mark_slot)
            self.claim_seat = _widen(self.claim_seat, k, -1)
            self.claim_lead = _widen(self.claim_lead, k, 0)
            self.claim_opp = _widen(self.claim_opp, k, 0)
            self.placed = _widen(self.placed, k, False)
            self.hole = _widen(self.hole, k, False)
            self.lost = _widen(self.lost, k, False)
        uniq, inv = np.unique(marks, return_inverse=True)
        return np.array([self.mark_slot[int(m)] for m in uniq], dtype=np.int64)[inv]

    def _patch_slots(self, codes: np.ndarray, names: list[Any]) -> np.ndarray:
        used = np.unique(codes[codes >= 0])
        new = [names[c] for c in used if names[c] not in self.patch_slot]
        if new:
            for p in new:
                self.patch_slot[p] = len(self.patch_slot)
            self.buy_seat = _widen(self.buy_seat, len(new), -1)
            self.buy_pos = _widen(self.buy_pos, len(new), 0)
        lut = np.full(len(names) + 1, -1, dtype=np.int64)  # the extra entry: code -1
        for c in used:
            lut[c] = self.patch_slot[names[c]]
        return lut[codes]

    def add(self, b: _Batch) -> None:
        self.events += b.n
        if b.n == 0 or len(self.ids) == 0:
            return
        codes, names = b.text["event"]
        lut = np.array([KINDS.get(x, 0) for x in names] + [0], dtype=np.int8)
        kind = lut[codes]
        idx = np.flatnonzero(kind)
        gid = b.cols["game_id"][idx]
        row = np.searchsorted(self.ids, gid)
        ok = self.ids[np.minimum(row, len(self.ids) - 1)] == gid
        idx, row, kind = idx[ok], row[ok], kind[idx[ok]]
        for k, fn in ((BUY, self._buys), (CLAIM, self._claims), (PLACE, self._places),
                      (LOST, self._lost), (BONUS, self._bonus)):
            sel = kind == k
            if sel.any():
                fn(b, idx[sel], row[sel])

    def _buys(self, b: _Batch, idx: np.ndarray, row: np.ndarray) -> None:
        pcodes, pnames = b.text["patch"]
        slot = self._patch_slots(pcodes[idx], pnames)
        ok = slot >= 0  # a buy always names its patch; a null one is skipped
        idx, row, slot = idx[ok], row[ok], slot[ok]
        pos = b.cols["position"][idx]
        self.buy_seat[row, slot] = b.cols["seat"][idx]
        self.buy_pos[row, slot] = _fit(pos, self.buy_pos.dtype)
        rcodes, rnames = b.text["ruleset"]
        bcodes, bnames = b.text["bot"]
        rc, pcode, bc = rcodes[idx], pcodes[idx], bcodes[idx]
        # one key per (ruleset, patch, bot) of this batch: codes shifted by one for nulls
        key = ((rc + 1) * (len(pnames) + 1) + pcode + 1) * (len(bnames) + 1) + bc + 1
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        counts = np.bincount(inv)
        sums = np.bincount(inv, weights=pos.astype(np.float64))  # exact: integer positions
        cost = b.cols["cost"][idx]
        for j, i in enumerate(first):
            r = rnames[rc[i]] if rc[i] >= 0 else None
            bot = bnames[bc[i]] if bc[i] >= 0 else None
            p = pnames[pcode[i]]
            self.patch_cost.setdefault((r, p), int(cost[i]))
            if r is None or bot is None:  # grouping drops null keys
                continue
            acc = self.bot_buys.setdefault((r, p, bot), [0, 0])
            acc[0] += int(counts[j])
            acc[1] += int(sums[j])

    def _claims(self, b: _Batch, idx: np.ndarray, row: np.ndarray) -> None:
        slot = self._mark_slots(b.cols["position"][idx])
        # the first claim of a mark in a game counts: first in this batch, and only where an
        # earlier batch set none
        _, first = np.unique(row * (len(self.mark_slot) + 1) + slot, return_index=True)
        r, s, i = row[first], slot[first], idx[first]
        new = self.claim_seat[r, s] < 0
        r, s, i = r[new], s[new], i[new]
        self.claim_seat[r, s] = b.cols["seat"][i]
        self.claim_lead[r, s] = _fit(b.cols["score_lead"][i], self.claim_lead.dtype)
        self.claim_opp[r, s] = _fit(b.cols["opp_position"][i], self.claim_opp.dtype)

    def _places(self, b: _Batch, idx: np.ndarray, row: np.ndarray) -> None:
        slot = self._mark_slots(b.cols["position"][idx])
        hole = b.cols["filled_hole"][idx]
        self.placed[row, slot] = True
        self.hole[row[hole], slot[hole]] = True
        np.add.at(self.place_count, row, 1)
        np.add.at(self.place_hits, row, hole.astype(np.int16))
        # the game's first placement by seq
        seq = b.cols["seq"][idx]
        order = np.lexsort((seq, row))
        rs = row[order]
        head = order[np.concatenate([[True], rs[1:] != rs[:-1]])]
        r, sq = row[head], seq[head]
        earlier = sq < self.first_seq[r]
        self.first_seq[r[earlier]] = sq[earlier]
        self.first_hole[r[earlier]] = hole[head][earlier]

    def _lost(self, b: _Batch, idx: np.ndarray, row: np.ndarray) -> None:
        slot = self._mark_slots(b.cols["position"][idx])
        self.lost[row, slot] = True

    def _bonus(self, b: _Batch, idx: np.ndarray, row: np.ndarray) -> None:
        self.bonus.append((row, b.cols["seat"][idx], b.cols["position"][idx],
                           b.cols["seq"][idx]))

    def finish(self) -> EventSummary:
        marks = np.array(sorted(self.mark_slot), dtype=np.int64)
        perm = np.array([self.mark_slot[int(m)] for m in marks], dtype=np.int64)
        if self.bonus:
            bonus = [np.concatenate(part) for part in zip(*self.bonus, strict=True)]
        else:
            bonus = [np.zeros(0, dtype=t) for t in (np.int64, np.int8, np.int32, np.int32)]
        bots = pd.DataFrame([(r, p, bot, n, s) for (r, p, bot), (n, s)
                             in sorted(self.bot_buys.items())],
                            columns=["ruleset", "patch", "bot", "buys", "pos_sum"])
        return EventSummary(
            game_ids=self.ids, events=self.events, marks=marks,
            claim_seat=self.claim_seat[:, perm], claim_lead=self.claim_lead[:, perm],
            claim_opp=self.claim_opp[:, perm], placed=self.placed[:, perm],
            hole=self.hole[:, perm], lost=self.lost[:, perm],
            place_count=self.place_count, place_hits=self.place_hits,
            first_hole=self.first_hole, patches=list(self.patch_slot),
            buy_seat=self.buy_seat, buy_pos=self.buy_pos, patch_cost=self.patch_cost,
            bot_buys=bots, bonus_row=bonus[0], bonus_seat=bonus[1], bonus_pos=bonus[2],
            bonus_seq=bonus[3])


def _widen(a: np.ndarray, k: int, fill: Any) -> np.ndarray:
    """``a`` with ``k`` more columns of ``fill``."""
    return np.concatenate([a, np.full((a.shape[0], k), fill, dtype=a.dtype)], axis=1)


def _fit(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` as ``dtype``; ValueError (a damaged table) rather than a silent overflow."""
    info = np.iinfo(dtype)
    if len(values) and (values.min() < info.min or values.max() > info.max):
        raise ValueError(f"event values {values.min()}..{values.max()} do not fit {dtype}")
    return values.astype(dtype)


# --- building a summary -----------------------------------------------------------------------
def scan_events(source: str | Path, games: pd.DataFrame | Iterable[int] | None = None,
                batch_rows: int = BATCH_ROWS) -> EventSummary:
    """Summarise an events table (``source``: its events.parquet) for the games of ``games``
    (a games table or game ids; None: every game in the file), reading ``batch_rows`` events
    at a time and only the columns the summary needs."""
    path = Path(source)
    if path.is_dir():  # it took a run folder before: the run folder's reader knows its files
        raise ValueError(f"{path} is a folder: give the events table's file, or read a run "
                         "folder with patchsim.play.runfolder.RunFolder(path).events")
    pf = pq.ParquetFile(path, read_dictionary=list(EVENT_TEXT))
    names = set(pf.schema_arrow.names)
    cols = [c for c in EVENT_COLUMNS if c in names]
    builder = _Builder(_all_game_ids(pf) if games is None else _game_ids(games))
    for batch in _batches(pf, cols, batch_rows):
        builder.add(_from_arrow(batch))
    release_buffers()
    return builder.finish()


def release_buffers() -> None:
    """Hand Arrow's freed buffers back to the system: its allocator keeps them for reuse,
    which after reading a large file is as much again as the tables themselves."""
    pa.default_memory_pool().release_unused()


def _batches(pf: pq.ParquetFile, columns: list[str], batch_rows: int,
             ) -> Iterator[pa.RecordBatch]:
    """The file's rows in stored order, a row group at a time, cut into batches. (Not
    ``iter_batches``: it keeps buffers of every row group read, about 170 MB for a million
    games.)"""
    for i in range(pf.num_row_groups):
        yield from pf.read_row_group(i, columns=columns).to_batches(max_chunksize=batch_rows)


def summarize(events: pd.DataFrame, games: pd.DataFrame | Iterable[int] | None = None,
              batch_rows: int = 1_000_000) -> EventSummary:
    """The summary of an events DataFrame (for the games of ``games``; None: every game
    with an event), built by the code that scans the files."""
    ids = (_game_ids(games) if games is not None
           else np.unique(np.asarray(events["game_id"], dtype=np.int64)) if len(events)
           else np.zeros(0, dtype=np.int64))
    builder = _Builder(ids)
    for start in range(0, max(len(events), 1), batch_rows):
        builder.add(_from_frame(events.iloc[start:start + batch_rows]))
    return builder.finish()


@overload
def as_summary(events: None, games: pd.DataFrame | None = None) -> None: ...


@overload
def as_summary(events: pd.DataFrame | EventSummary,
               games: pd.DataFrame | None = None) -> EventSummary: ...


def as_summary(events: pd.DataFrame | EventSummary | None,
               games: pd.DataFrame | None = None) -> EventSummary | None:
    """``events`` as a summary: a summary as it is, a DataFrame summarised (for ``games``)."""
    if events is None or isinstance(events, EventSummary):
        return events
    return summarize(events, games)


def _game_ids(games: pd.DataFrame | Iterable[int]) -> np.ndarray:
    if isinstance(games, pd.DataFrame):
        return games["game_id"].to_numpy(dtype=np.int64)
    return np.asarray(games if hasattr(games, "__len__") else list(games), dtype=np.int64)


def _all_game_ids(pf: pq.ParquetFile) -> np.ndarray:
    parts = [np.unique(b.column("game_id").to_numpy())
             for b in _batches(pf, ["game_id"], BATCH_ROWS)]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


_DEFAULTS: dict[str, tuple[Any, Any]] = {  # column: (dtype, value) when a frame lacks it
    "seq": (np.int32, 0), "seat": (np.int8, 0), "position": (np.int32, 0),
    "cost": (np.int32, 0), "filled_hole": (bool, False), "score_lead": (np.int32, 0),
    "opp_position": (np.int32, -1)}


def _from_arrow(batch: pa.RecordBatch) -> _Batch:
    n = batch.num_rows
    cols: dict[str, np.ndarray] = {}
    text: dict[str, tuple[np.ndarray, list[Any]]] = {}
    names = batch.schema.names
    for c in EVENT_TEXT:
        if c not in names:
            text[c] = (np.full(n, -1, dtype=np.int64), [])
            continue
        arr = batch.column(c)
        if not pa.types.is_dictionary(arr.type):
            arr = pc.dictionary_encode(arr)
        codes = pc.fill_null(arr.indices, -1).to_numpy(zero_copy_only=False)
        text[c] = (codes.astype(np.int64), arr.dictionary.to_pylist())
    cols["game_id"] = batch.column("game_id").to_numpy(zero_copy_only=False).astype(np.int64)
    for c, (dtype, value) in _DEFAULTS.items():
        if c in names:
            cols[c] = (pc.fill_null(batch.column(c), value).to_numpy(zero_copy_only=False)
                       .astype(dtype))
        else:
            cols[c] = np.full(n, value, dtype=dtype)
    return _Batch(n, cols, text)


def _from_frame(df: pd.DataFrame) -> _Batch:
    n = len(df)
    cols: dict[str, np.ndarray] = {}
    text: dict[str, tuple[np.ndarray, list[Any]]] = {}
    for c in EVENT_TEXT:
        if c in df.columns and n:
            codes, uniq = pd.factorize(df[c], use_na_sentinel=True)
            text[c] = (np.asarray(codes, dtype=np.int64), list(uniq))
        else:
            text[c] = (np.full(n, -1, dtype=np.int64), [])
    cols["game_id"] = (df["game_id"].to_numpy(dtype=np.int64) if "game_id" in df.columns
                       else np.zeros(n, dtype=np.int64))
    for c, (dtype, value) in _DEFAULTS.items():
        if c in df.columns:
            s = df[c]
            cols[c] = (s.fillna(value).to_numpy().astype(dtype) if n
                       else np.zeros(0, dtype=dtype))
        else:
            cols[c] = np.full(n, value, dtype=dtype)
    return _Batch(n, cols, text)

