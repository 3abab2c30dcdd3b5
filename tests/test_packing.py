"""Issue 29, packing quality in the reports: the isolated one-square holes each seat leaves
at the end (stored per game in the games table, by the bots' own rule
``heuristics.count_holes``), the passes a game opens with (from its moves), and older run
folders without the holes columns still read (the columns as missing)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from patchsim.analysis import degenerate as dg
from patchsim.analysis.tables import read_games
from patchsim.bots.heuristics import count_holes
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset, parse_square, split
from patchsim.play import loops, runfolder
from patchsim.play.config import load_run_config
from patchsim.play.execution import execute
from patchsim.play.runfolder import read_run, table_path

BOTS = ["greedy", "random"]


def words(tables, names: list[str]) -> tuple[np.int64, np.int64]:
    """The (lo, hi) bitboard words of a quilt with exactly the named squares covered."""
    m = 0
    for n in names:
        m |= 1 << parse_square(n, tables.rows, tables.cols)
    lo, hi = split(m)
    return np.int64(lo), np.int64(hi)


def cfg(games: int = 20):
    c = load_run_config("edition2", games=games, bots=BOTS, seed=3, pairings="cross")
    c.batch_deals = 5
    return c


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("packing") / "run"
    execute(cfg(), d, jobs=1, backend="sequential")
    return d


def make_old(run_dir: Path) -> None:
    """Rewrite a run folder as a run stored before the holes columns existed (its table
    without them, the manifest's digest that of the rewritten table)."""
    path = run_dir / "games.parquet"
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["holes0", "holes1"]), path)
    m = json.loads((run_dir / "manifest.json").read_text())
    m["digests"]["tables"]["games.parquet"] = runfolder.file_digest(path)
    (run_dir / "manifest.json").write_text(json.dumps(m, indent=2))


# --- the holes left at the end ----------------------------------------------------------------
def test_the_result_row_counts_the_holes_of_a_hand_built_quilt() -> None:
    tables = compile_ruleset(load_ruleset("edition2"))
    state = Game.new(tables.ruleset, seed=0).state.copy()
    # seat 0: e5 (interior) and a1 (corner) are holes, c5 is open to the left; seat 1: b1
    lo, hi = words(tables, ["e4", "d5", "f5", "e6", "b1", "a2", "c4", "c6"])
    state[core.S_QLO], state[core.S_QHI] = lo, hi
    lo, hi = words(tables, ["a1", "c1", "b2"])
    state[core.S_QLO + 1], state[core.S_QHI + 1] = lo, hi
    result = np.zeros(loops.R_WIDTH, dtype=np.int64)
    loops.finish_result(state, tables.tab, result)
    assert result[loops.R_HOLES] == 2
    assert result[loops.R_HOLES + 1] == 1


def test_the_games_table_holds_the_holes_each_seat_left(played: Path) -> None:
    rs = load_ruleset("edition2")
    tab = compile_ruleset(rs).tab
    games = pq.read_table(played / "games.parquet").to_pandas()
    assert games["holes0"].dtype == np.int32
    assert (games[["holes0", "holes1"]].to_numpy() >= 0).all()
    assert games[["holes0", "holes1"]].to_numpy().sum() > 0  # greedy and random leave some
    for row in games.head(6).itertuples():
        game = Game.new(rs, circle=deal_circle(rs, int(row.deal_seed)))
        for code in row.moves:
            game.apply(int(code))
        st = game.state
        assert (row.holes0, row.holes1) == tuple(
            count_holes(tab, st[core.S_QLO + p], st[core.S_QHI + p]) for p in (0, 1))


def test_an_older_run_folder_without_the_holes_columns_reads_them_as_missing(
        played: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "old"
    shutil.copytree(played, run_dir)
    make_old(run_dir)
    assert runfolder.check_folder(run_dir).problem is None
    run = read_run(run_dir)
    assert run.games["holes0"].isna().all() and run.games["holes1"].isna().all()
    assert len(run.games) == 20


def test_an_older_run_folder_tops_up_with_the_old_games_missing_their_holes(
        played: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "old"
    shutil.copytree(played, run_dir)
    make_old(run_dir)
    execute(cfg(games=30), run_dir, jobs=1, backend="sequential")
    assert runfolder.check_folder(run_dir).problem is None
    games = read_games(table_path(run_dir, "games")).sort_values("deal")
    old = games["deal"] < 10
    assert len(games) == 30
    assert games.loc[old, "holes0"].isna().all()
    assert games.loc[~old, "holes0"].notna().all()


def test_an_older_batch_file_joins_the_merge_with_its_holes_missing(tmp_path: Path) -> None:
    import pyarrow as pa

    from patchsim.play.runfolder import storage

    run_dir = tmp_path / "run"
    execute(cfg(), run_dir, jobs=1, backend="sequential", keep_batches=True)
    files = sorted((run_dir / "batches").glob("*.games.arrow"))
    assert len(files) == 2  # 10 deals in batches of 5, one pairing
    old = storage.read_batch(files[0]).drop_columns(["holes0", "holes1"])
    files[0].unlink()
    storage.write_batch(old, files[0])
    runfolder.check_batch(files[0], "games")  # an older batch is not refused
    with pytest.raises(runfolder.RunFolderError, match="not a games batch"):
        bad = tmp_path / "bad.games.arrow"
        storage.write_batch(old.drop_columns(["score0"]), bad)
        runfolder.check_batch(bad, "games")
    run_id = json.loads((run_dir / "manifest.json").read_text())["run_id"]
    keys = [f.name[len(run_id) + 1:-len(".games.arrow")] for f in files]
    storage.merge_batches(run_dir, run_id, keys)
    table = pq.read_table(run_dir / "games.parquet")
    assert table.schema.field("holes0").type == pa.int32()
    assert table.column("holes0").null_count == old.num_rows
    assert table.num_rows == 20


# --- the passes a game opens with -------------------------------------------------------------
def test_pass_code_is_the_engines() -> None:
    assert dg.PASS_CODE == core.PASS


def test_opening_pass_runs_count_to_the_first_other_move() -> None:
    p = core.PASS
    offsets = [0, 3, 3, 8, 10, 17]
    codes = [p, p, p,  # only passes
             p, p, 5, p, p,  # two, then a buy
             4, p,  # a buy first
             p, p, p, p, p, p, p]  # seven passes in a row
    assert dg.opening_pass_runs(np.array(offsets), np.array(codes)).tolist() == [3, 0, 2, 0, 7]
    assert dg.opening_pass_runs(np.array([0]), np.array([])).tolist() == []


def test_a_game_opening_with_seven_passes_is_flagged() -> None:
    p = core.PASS
    games = pd.DataFrame({"moves": [np.array([p] * 7 + [12, p]), np.array([p] * 5 + [3]),
                                    np.array([p] * 6 + [3])]})
    assert dg.opening_passes(games).tolist() == [7, 5, 6]
    assert dg.opens_with_passes(games).tolist() == [1.0, 0.0, 1.0]
    # a table without moves cannot tell: missing, not "no"
    assert dg.opens_with_passes(pd.DataFrame({"score0": [1]})).isna().all()


def test_the_reader_derives_the_opening_passes_from_the_stored_moves(played: Path) -> None:
    derived = read_games(table_path(played, "games"))["opening_passes"]
    whole = pq.read_table(played / "games.parquet").to_pandas()
    assert derived.tolist() == dg.opening_passes(whole).astype(int).tolist()
    assert "moves" not in read_games(table_path(played, "games")).columns  # the moves stay on disk


# --- per bot: the report's table --------------------------------------------------------------
def _games() -> pd.DataFrame:
    """Two deals of a cross pairing a vs b (both seat orders) and one self-play game."""
    p = core.PASS
    rows = []
    for deal, order, s0, s1, h0, h1, b0, moves in [
            (0, 0, 20, 10, 1, 3, True, [p] * 7 + [4]),
            (0, 1, 5, 15, 0, 2, False, [4, p]),
            (1, 0, -30, 0, 4, 0, False, [p] * 3 + [4]),
            (1, 1, 8, 8, 2, 2, False, [4])]:
        a_seat = order  # bot a sits in seat `order`
        rows.append({"ruleset": "r", "pairing": "a vs b", "game_id": 10 * deal + order,
                     "deal": deal, "order": order, "bot0": "a" if a_seat == 0 else "b",
                     "bot1": "b" if a_seat == 0 else "a", "score0": s0, "score1": s1,
                     "holes0": h0, "holes1": h1, "bonus0": b0, "bonus1": False,
                     "passes0": 3, "passes1": 3, "moves": np.array(moves)})
    return pd.DataFrame(rows)


def test_the_packing_table_gives_each_bot_its_own_seats() -> None:
    from patchsim.analysis.packing import packing_table

    t = packing_table(_games()).set_index("bot")
    # a: seat 0 in order 0 (20, 1 hole, the bonus; -30, 4 holes), seat 1 in order 1 (15, 2;
    # 8, 2): per deal 17.5 and -11, mean 3.25
    assert t.loc["a", "score"] == pytest.approx(3.25)
    assert t.loc["a", "holes"] == pytest.approx(2.25)
    assert t.loc["a", "bonus"] == pytest.approx(0.25) and t.loc["b", "bonus"] == 0.0
    assert t.loc["b", "score"] == pytest.approx((7.5 + 4) / 2)
    # per game, shared by the two bots: deal 0 has one of two games opening with 7 passes
    assert t.loc["a", "opens_with_passes"] == t.loc["b", "opens_with_passes"] == 0.25
    assert t.loc["a", "degenerate"] == 0.25  # the seat on -30
    assert t.loc["a", "games"] == 4 and t.loc["a", "deals"] == 2
    assert t.loc["a", "score_lo"] < 3.25 < t.loc["a", "score_hi"]


def test_the_packing_table_of_an_older_run_leaves_the_holes_missing() -> None:
    from patchsim.analysis.packing import packing_table

    g = _games().drop(columns=["holes0", "holes1", "moves"])
    t = packing_table(g)
    assert t["holes"].isna().all() and t["opens_with_passes"].isna().all()
    assert t["score"].notna().all()


def test_the_report_shows_how_well_each_bot_packs(played: Path) -> None:
    from patchsim.document.model import Document
    from patchsim.document.render import to_markdown
    from patchsim.reporting.sections_games import quilts_section

    run = read_run(played)
    s = quilts_section(run)
    text = to_markdown(Document("t", [s]))
    assert "How well the bots pack" in text
    assert "holes at the end" in text and "opens with 6+ passes" in text
    assert "greedy vs random" in text


def test_the_degenerate_games_benchmark_prints_the_packing_figures_beside_greedy() -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "degenerate_games.py"),
                          "--bots", "random", "--games", "6", "--json"],
                         capture_output=True, text=True, check=True, cwd=root)
    figures = json.loads(out.stdout)
    assert set(figures["packing"]) == {"random", "greedy"}
    for bot in ("random", "greedy"):
        for m in ("score", "bonus", "holes", "opens_with_passes", "degenerate"):
            value, lo, hi = figures["packing"][bot][m]
            assert lo <= value <= hi, (bot, m)
    assert figures["packing"]["random"]["holes"][0] > figures["packing"]["greedy"]["holes"][0]
    assert figures["degenerate_share"][0] == figures["packing"]["random"]["degenerate"][0]


def test_the_opening_passes_benchmark_judges_both_groups_of_deals() -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "opening_passes.py"),
                          "--bot", "mcts(eval=learned, iterations=8)", "--deals", "40",
                          "--passes", "2", "--after", "1", "--judge", "greedy;random",
                          "--games", "2", "--jobs", "1", "--json"],
                         capture_output=True, text=True, check=True, cwd=root)
    figures = json.loads(out.stdout)
    runs = figures["opening_runs"]
    assert 0 < runs <= 40 and figures["after"] == 1 and figures["share"] == runs / 40
    assert set(figures["judges"]) == {"greedy", "random"}
    for judge in figures["judges"].values():
        passing, control = judge["groups"].values()
        assert passing["deals"] == runs
        assert control["deals"] <= runs  # as many as it finds, at most as many
        for group in (passing, control):
            if group["deals"] > 1:
                assert group["lo"] <= group["buy_minus_pass"] <= group["hi"]
                assert group["buy_minus_pass"] == pytest.approx(
                    group["after_buy"] - group["after_pass"])
    refused = subprocess.run([sys.executable, str(root / "benchmarks" / "opening_passes.py"),
                              "--after", "6", "--passes", "6"],
                             capture_output=True, text=True, cwd=root)
    assert refused.returncode == 2 and "--after 6" in refused.stderr
