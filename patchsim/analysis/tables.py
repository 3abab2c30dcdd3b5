"""A run's tables read for analysis without holding its event log.

A run stores about 65 events per game: a million games make 65 million event rows, several
gigabytes as a DataFrame. No statistic needs them as rows. :func:`scan_events` reads
events.parquet one row group at a time, only the columns it needs, and keeps per game the
few facts the analyses use (an :class:`EventSummary`): per leather mark who claimed it and
where it went, per patch who bought it and at which track position, the leather placements,
the bonus claims, and buy counts per ruleset, patch and bot. :func:`summarize` builds the same
summary from an events DataFrame through the same code, so that the two cannot disagree.

Together about 230 bytes a game (a 9x9 run with 33 patches and 5 leather marks: 150 for
the summary, 80 for the games). :func:`read_games` reads the columns of the games table the
analyses use (not the move lists: only the sample games of a report need those, see
:func:`game_moves`), text columns as categoricals; the passes a game opens with are derived
from the move lists a row group at a time (about 0.7 s more per million games).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from patchsim.analysis.degenerate import opening_pass_runs
from patchsim.analysis.event_summary import (
    BATCH_ROWS,
    EventSummary,
    as_summary,
    release_buffers,
    scan_events,
    summarize,
    take,
)

# The statistics read tables, not folders: every reader here takes the table's file (a run
# folder's names and layout are the run folder's, patchsim.play.runfolder.RunFolder).

# the games columns the analyses use (not the move lists, buttons, empty squares, final
# positions, leather counts and run id: most of the table's memory)
GAME_COLUMNS = ("ruleset", "ruleset_hash", "game_id", "deal", "deal_seed", "pairing", "order",
                "bot0", "bot1", "winner", "winner_bot", "tie_break", "score0", "score1",
                "bonus0", "bonus1", "first_to_end", "passes0", "passes1", "buys0", "buys1",
                "holes0", "holes1", "plies", "opening_passes")
# opening_passes is not stored: read_games derives it from the move lists, which stay on
# disk (patchsim.analysis.degenerate.opening_passes)
# text columns become categoricals; the bot columns share one set of categories, so that
# they can be compared with each other
GAME_TEXT = ("run_id", "ruleset", "ruleset_hash", "pairing", "bot0", "bot1", "winner_bot")
BOT_COLUMNS = ("bot0", "bot1", "winner_bot")



# --- the games table --------------------------------------------------------------------------
def table_file(path: str | Path, kind: str) -> Path:
    """``path`` as a table's file; ValueError for a folder (these readers took a run folder
    before: the run folder's reader, patchsim.play.runfolder.RunFolder, knows its files)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder: give the {kind} table's file, or read a run "
                         f"folder with patchsim.play.runfolder.RunFolder(path).{kind}")
    return path


def read_games(path: str | Path, columns: Iterable[str] = GAME_COLUMNS) -> pd.DataFrame:
    """A games table (``path``: its games.parquet), only ``columns`` (by default those the
    analyses use: no move lists), text columns as categoricals with sorted categories (the
    bot columns sharing theirs), numbers in their stored types. ``opening_passes`` is
    derived from the move lists, read a row group at a time; a column the table lacks (added
    since it was written: the run folder's check allows only those, ``LATER_COLUMNS``)
    comes back as missing values (NaN), never a made-up zero."""
    path = table_file(path, "games")
    wanted = list(dict.fromkeys(columns))
    names = pq.read_schema(path).names
    cols = [c for c in names if c in wanted]
    text = [c for c in cols if c in GAME_TEXT]
    table = pq.read_table(path, columns=cols, read_dictionary=text)
    games = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
    release_buffers()
    games = compact_games(games)
    for c in wanted:
        if c not in names and c != "opening_passes":
            games[c] = np.nan  # an older run: not recorded, never a made-up zero
    if "opening_passes" in wanted and "moves" in names:
        games["opening_passes"] = _opening_passes(path)
    return games


def _opening_passes(path: Path) -> np.ndarray:
    """Per row of games.parquet, the passes its game opens with, reading the move lists one
    row group at a time (the whole column is most of the file)."""
    pf = pq.ParquetFile(path)
    out = [np.zeros(0, dtype=np.int32)]
    for i in range(pf.num_row_groups):
        for chunk in pf.read_row_group(i, columns=["moves"]).column(0).chunks:
            # a chunk's offsets index its values buffer, also when the chunk is a slice
            out.append(opening_pass_runs(chunk.offsets.to_numpy(),
                                         chunk.values.to_numpy()).astype(np.int32))
    release_buffers()
    return np.concatenate(out)


def compact_games(games: pd.DataFrame) -> pd.DataFrame:
    """``games`` with its text columns as categoricals with sorted categories: sorting and
    grouping give the same order as plain strings, and bot0, bot1 and winner_bot share their
    categories so that they compare with each other."""
    out = games.copy(deep=False)
    bots = [c for c in BOT_COLUMNS if c in out.columns]
    shared = sorted(set().union(*(_values(out[c]) for c in bots))) if bots else []
    for c in GAME_TEXT:
        if c in out.columns:
            cats = shared if c in bots else sorted(_values(out[c]))
            out[c] = pd.Categorical(out[c], categories=cats)
    return out


def _values(s: pd.Series) -> set[str]:
    """The distinct non-missing values of a text column (categorical or not)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return set(s.cat.remove_unused_categories().cat.categories)
    return set(s.dropna().unique())


def game_moves(path: str | Path, game_id: int) -> list[int]:
    """One game's move codes, read from a games table (``path``) without loading the
    others."""
    t = _rows_of_game(table_file(path, "games"), game_id, ["moves"])
    return [int(x) for x in t.column("moves").to_pylist()[0]] if t.num_rows else []


def game_events(path: str | Path, game_id: int,
                columns: Iterable[str] = ("seq", "event", "seat", "position", "patch"),
                ) -> pd.DataFrame:
    """One game's events (in their stored order), read from an events table (``path``)
    without loading the others."""
    return _rows_of_game(table_file(path, "events"), game_id, list(columns)).to_pandas()


def _rows_of_game(path: Path, game_id: int, columns: list[str]) -> pa.Table:
    """The rows of one game, reading one row group at a time and skipping those whose
    game-id statistics exclude it (a filtered ``read_table`` reads several row groups ahead
    and keeps their buffers: about 100 MB more on a large run)."""
    pf = pq.ParquetFile(path)
    col = pf.schema_arrow.get_field_index("game_id")
    parts = []
    for i in range(pf.num_row_groups):
        stats = pf.metadata.row_group(i).column(col).statistics
        if stats is not None and stats.has_min_max and not stats.min <= game_id <= stats.max:
            continue
        ids = pf.read_row_group(i, columns=["game_id"]).column(0).to_numpy()
        hit = np.flatnonzero(ids == game_id)
        if len(hit):
            parts.append(pf.read_row_group(i, columns=columns).take(pa.array(hit)))
    release_buffers()
    if not parts:
        return pa.schema([pf.schema_arrow.field(c) for c in columns]).empty_table()
    return pa.concat_tables(parts)


def read_rows(path: str | Path, positions: Iterable[int], columns: list[str]) -> pa.Table:
    """The rows at ``positions`` (row numbers in the file) of a Parquet file, in the order
    given, reading only the row groups that hold them, one at a time."""
    pf = pq.ParquetFile(path)
    pos = np.asarray(list(positions) if not hasattr(positions, "__len__") else positions,
                     dtype=np.int64)
    sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    order = np.argsort(pos, kind="stable")
    wanted = pos[order]
    group = np.searchsorted(starts, wanted, side="right") - 1
    parts = [pf.read_row_group(int(i), columns=columns).take(
        pa.array(wanted[group == i] - starts[i])) for i in np.unique(group)]
    release_buffers()
    if not parts:
        return pa.schema([pf.schema_arrow.field(c) for c in columns]).empty_table()
    back = np.empty_like(order)
    back[order] = np.arange(len(order))  # from file order back to the order asked for
    return pa.concat_tables(parts).take(pa.array(back))


# the event summary's names, offered here as before (patchsim.analysis.event_summary)
__all__ = ["BATCH_ROWS", "BOT_COLUMNS", "GAME_COLUMNS", "GAME_TEXT", "EventSummary",
           "as_summary", "compact_games", "game_events", "game_moves", "read_games",
           "read_rows", "scan_events", "summarize", "table_file", "take"]
