"""A served run's games table: read once per change of the file (without the move lists),
filtered and sorted for a page of the table, and one stored game replayed by the engine from
its deal seed and moves. :class:`GameTables` holds the caches; the run index
(:class:`patchsim.web.runs.RunIndex`) is one."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from patchsim.analysis.selfplay import DISTINCT_NOTE, duplicated_pairings
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game, IllegalMoveError, rules_reference
from patchsim.engine.view import replay_positions, ruleset_info
from patchsim.errors import quote
from patchsim.play.runfolder import RunFolderError, check_table, table_path
from patchsim.web.paths import WebError

if TYPE_CHECKING:
    from patchsim.web.runs import ServedRun

log = logging.getLogger("patchsim.web")

MAX_LIMIT = 500  # games per page of the table


class GameTables:
    """The games tables of served runs, each cached until its file changes, and the views of
    the games last opened."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[str, tuple[float, pd.DataFrame, pd.DataFrame]] = {}
        self._views: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()

    def games(self, run: ServedRun, listed_only: bool = True) -> pd.DataFrame:
        """The run's games without move lists, plus ``abs_margin`` (the winner's lead: the
        metric registry's name; the absolute score difference, 0 for a tie-break game),
        ``bonus`` (-1 nobody), ``claims0``/``claims1`` (leather claims from the events) and
        ``counted_once`` (deterministic self-play). ``listed_only``: without the identical
        copy of each deterministic self-play game, as the report counts them."""
        gpath = table_path(run.path, "games")
        try:
            mtime = gpath.stat().st_mtime
        except OSError as e:
            raise WebError(409, f"{gpath}: {e.strerror}") from None
        cached = self._tables.get(run.id)
        if cached and cached[0] == mtime:
            return cached[1] if listed_only else cached[2]
        try:
            # whole, with the run's columns, and the file the run wrote (its digest)
            check_table(run.path, "games", run.manifest)
        except RunFolderError as e:
            log.warning("%s", e)
            raise WebError(409, str(e)) from None
        try:
            cols = [f.name for f in pq.read_schema(gpath) if f.name != "moves"]
            games = pq.read_table(gpath, columns=cols).to_pandas()
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
            msg = f"{gpath}: cannot read the games table ({type(e).__name__}: {e})"
            log.warning("%s", msg)
            raise WebError(409, msg) from None
        games["abs_margin"] = (games["score0"] - games["score1"]).abs()
        # deterministic self-play plays each deal's game twice, identically; the report
        # counts it once, and so does the table: the copy (seat order 1) is left out
        dup = duplicated_pairings(games)
        games["counted_once"] = games["pairing"].astype(str).isin(dup)
        games.attrs["duplicated_pairings"] = dup
        games["bonus"] = np.where(games["bonus0"], 0, np.where(games["bonus1"], 1, -1))
        claims = self._claims(run)
        for seat in (0, 1):
            col = f"claims{seat}"
            if claims is None:
                games[col] = -1  # unknown: no readable events table
            else:
                games[col] = games["game_id"].map(claims.get(seat, {})).fillna(0).astype(int)
        listed = games[~(games["counted_once"] & (games["order"] == 1))]
        listed.attrs["duplicated_pairings"] = games.attrs["duplicated_pairings"]
        self._tables[run.id] = (mtime, listed, games)
        return listed if listed_only else games

    def _claims(self, run: ServedRun) -> dict[int, dict[int, int]] | None:
        path = table_path(run.path, "events")
        try:
            check_table(run.path, "events", run.manifest)  # the file the run wrote
            t = pq.read_table(path, columns=["game_id", "seat"],
                              filters=[("event", "==", "leather_claim")])
        except Exception as e:  # noqa: BLE001 - missing or unreadable: the filter says so
            log.warning("%s: cannot read the leather claims (%s: %s)", path, type(e).__name__,
                        e)
            return None
        df = t.to_pandas()
        counts = df.groupby(["seat", "game_id"]).size()
        return {int(s): {int(g): int(n) for (_, g), n in part.items()}
                for s, part in counts.groupby(level=0)}

    def filter_options(self, run: ServedRun) -> dict[str, Any]:
        g = self.games(run)
        bots = sorted(set(g["bot0"]) | set(g["bot1"]))
        return {"rulesets": sorted(g["ruleset"].unique().tolist()),
                "pairings": sorted(g["pairing"].unique().tolist()), "bots": bots,
                "claims_known": bool(len(g) == 0 or (g["claims0"] >= 0).all())}

    def filter_games(self, run: ServedRun, query: dict[str, str]) -> dict[str, Any]:
        """The page of games that pass the filters in ``query`` (see :data:`FILTERS`);
        WebError 400 naming the parameter when one is malformed."""
        g = self.games(run)
        unknown = sorted(set(query) - set(FILTERS))
        if unknown:
            raise WebError(400, f"unknown parameter(s) {', '.join(unknown)}; the games table "
                                f"takes {', '.join(FILTERS)}")
        mask = np.ones(len(g), dtype=bool)
        if query.get("ruleset"):
            mask &= (g["ruleset"] == query["ruleset"]).to_numpy()
        if query.get("pairing"):
            mask &= (g["pairing"] == query["pairing"]).to_numpy()
        winner = query.get("winner", "")
        if winner in ("0", "1"):
            mask &= (g["winner"] == int(winner)).to_numpy()
        elif winner.startswith("bot:"):
            mask &= (g["winner_bot"] == winner[4:]).to_numpy()
        elif winner:
            raise WebError(400, f"winner={quote(winner)}: give 0, 1 or bot:<bot spec>")
        lo, hi = _int(query, "abs_margin_min"), _int(query, "abs_margin_max")
        if lo is not None:
            mask &= (g["abs_margin"] >= lo).to_numpy()
        if hi is not None:
            mask &= (g["abs_margin"] <= hi).to_numpy()
        bonus = query.get("bonus", "")
        if bonus in ("0", "1"):
            mask &= (g["bonus"] == int(bonus)).to_numpy()
        elif bonus == "none":
            mask &= (g["bonus"] == -1).to_numpy()
        elif bonus:
            raise WebError(400, f"bonus={quote(bonus)}: give 0, 1 or none")
        leather = query.get("leather", "")
        c0, c1 = g["claims0"].to_numpy(), g["claims1"].to_numpy()
        conditions = {"none": (c0 + c1) == 0, "more0": c0 > c1, "more1": c1 > c0,
                      "equal": c0 == c1, "some0": c0 > 0, "some1": c1 > 0}
        if leather in conditions:
            if (c0 < 0).any():
                events = table_path(run.path, "events")
                raise WebError(409, f"{events} cannot be read, so games cannot be "
                                    "filtered by leather claims")
            mask &= conditions[leather]
        elif leather:
            raise WebError(400, f"leather={quote(leather)}: give one of {', '.join(conditions)}")
        sort = query.get("sort", "game_id")
        key = sort.lstrip("-")
        if key not in SORT_KEYS:
            raise WebError(400, f"sort={quote(sort)}: give one of {', '.join(SORT_KEYS)} (a '-' "
                                "in front sorts descending)")
        offset = _int(query, "offset") or 0
        limit = _int(query, "limit", 1, MAX_LIMIT)
        limit = 50 if limit is None else limit
        sub = g[mask].sort_values([key, "game_id"], ascending=[not sort.startswith("-"), True],
                                  kind="stable")
        page = sub.iloc[offset:offset + limit]
        dup = g.attrs.get("duplicated_pairings", [])
        return {"total": len(g), "matching": len(sub), "offset": offset, "limit": limit,
                "games": [_game_row(r) for r in page.to_dict("records")],
                "counted_once": list(dup),
                "counted_once_note": (f"{', '.join(dup)}: {DISTINCT_NOTE} (the seat-swapped "
                                      "copy is the same game: counted once, as in the "
                                      "report)"
                                      if dup else None)}

    # --- one game -----------------------------------------------------------------------------
    def game_view(self, run: ServedRun, game_id: int) -> dict[str, Any]:
        """A stored game, replayed by the engine from its deal seed and stored moves: every
        position, the moves in record notation and the record itself."""
        key = (run.id, game_id)
        with self._lock:
            if key in self._views:
                self._views.move_to_end(key)
                return self._views[key]
        g = self.games(run, listed_only=False)  # a copy's id still opens its game
        rows = g[g["game_id"] == game_id]
        if rows.empty:
            raise WebError(404, f"run {run.label} has no game {game_id}")
        row = rows.iloc[0]
        rs = run.rulesets.get(row["ruleset"])
        if rs is None:
            raise WebError(409, f"the manifest of {run.label} has no rules for ruleset "
                                f"{quote(row['ruleset'])}, so its games cannot be replayed")
        codes = self.moves(run, game_id)
        circle = deal_circle(rs, int(row["deal_seed"]))
        start = Game.new(rs, circle=circle)
        try:
            positions, texts = replay_positions(start, codes)
        except IllegalMoveError as e:
            path = table_path(run.path, "games")
            msg = f"{path}: game {game_id} does not replay: {e}"
            log.warning("%s", msg)
            raise WebError(422, msg) from None
        warnings = []
        final = positions[-1]["players"]
        stored = (int(row["score0"]), int(row["score1"]))
        if (final[0]["score"], final[1]["score"]) != stored:
            warnings.append(f"the replayed final score {final[0]['score']} : "
                            f"{final[1]['score']} differs from the stored {stored[0]} : "
                            f"{stored[1]}")
            log.warning("%s game %s: %s", run.label, game_id, warnings[-1])
        view = {
            "kind": "stored",
            "title": (f"{run.label} - game {game_id}: {row['bot0']} (seat 0) vs "
                      f"{row['bot1']} (seat 1), {row['ruleset']}, deal {int(row['deal'])}"),
            "run": run.id, "run_label": run.label, "game_id": game_id,
            "ruleset": str(row["ruleset"]),
            "players": [str(row["bot0"]), str(row["bot1"])],
            "rules": ruleset_info(rs),
            "moves": texts,
            "positions": positions,
            "record": {"rules": rules_reference(rs), "circle": list(circle), "moves": texts},
            "warnings": warnings,
        }
        with self._lock:
            self._views[key] = view
            while len(self._views) > 32:
                self._views.popitem(last=False)
        return view

    def moves(self, run: ServedRun, game_id: int) -> list[int]:
        try:
            t = pq.read_table(table_path(run.path, "games"), columns=["moves"],
                              filters=[("game_id", "==", int(game_id))])
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
            path = table_path(run.path, "games")
            raise WebError(409, f"{path}: cannot read the moves ({e})") from None
        if not t.num_rows:
            raise WebError(404, f"run {run.label} has no game {game_id}")
        return [int(x) for x in t.column("moves").to_pylist()[0]]

    def start(self, run: ServedRun, game_id: int) -> tuple[Game, list[int]]:
        """A stored game's start position and its move codes (for the evaluation)."""
        view = self.game_view(run, game_id)  # checks that the game exists and replays
        start = Game.new(run.rulesets[view["ruleset"]], circle=view["record"]["circle"])
        return start, self.moves(run, game_id)


FILTERS = ("ruleset", "pairing", "winner", "abs_margin_min", "abs_margin_max", "bonus",
           "leather", "sort", "offset", "limit")
SORT_KEYS = ("game_id", "abs_margin", "score0", "score1", "plies", "deal")


def _int(query: dict[str, str], key: str, lo: int = 0, hi: int = 10**12) -> int | None:
    raw = query.get(key, "")
    if raw == "":
        return None
    try:
        value = int(raw[:40]) if len(raw) <= 40 else None  # int() of a huge text is slow
    except ValueError:
        value = None
    if value is None:
        raise WebError(400, f"{key}={quote(raw)}: expected a whole number")
    if value < lo or value > hi:
        raise WebError(400, f"{key}={quote(raw)}: expected a number between {lo} and "
                            f"{'10^12' if hi == 10**12 else hi}")
    return value


def _game_row(r: dict[str, Any]) -> dict[str, Any]:
    keys = ("game_id", "ruleset", "pairing", "deal", "order", "bot0", "bot1", "winner",
            "winner_bot", "score0", "score1", "abs_margin", "tie_break", "bonus", "claims0",
            "claims1", "leather0", "leather1", "plies", "counted_once")
    out = {}
    for k in keys:
        v = r[k]
        out[k] = v.item() if isinstance(v, np.generic) else v
    return out
