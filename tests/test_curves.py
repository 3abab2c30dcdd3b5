"""Curves over the game (patchsim.reporting.curves): the states replayed from stored games,
the curve tables built from them, the plots, and the report's self-contained replay."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from runs import shared_run

from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, RecordError, final_position
from patchsim.play.runfolder import read_manifest
from patchsim.reporting.curves import (
    CURVE_COLUMNS,
    STATE_COLUMNS,
    board_name,
    curve_table,
    game_states,
    plot_curves,
    replay_snippet,
    sample_records,
)

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "edition2-sample.json"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_run(tmp_path_factory, "web-small", "edition2", 8, ["greedy", "random"])


@pytest.fixture(scope="module")
def rulesets(run_dir: Path) -> dict:
    _, cfg = read_manifest(run_dir)
    return {r.name: r for r in cfg.rulesets}


@pytest.fixture(scope="module")
def games(run_dir: Path) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "games.parquet")


@pytest.fixture(scope="module")
def states(games: pd.DataFrame, rulesets: dict) -> pd.DataFrame:
    return game_states(games, rulesets)


def test_states_are_the_engines_positions_move_by_move(states: pd.DataFrame,
                                                       games: pd.DataFrame,
                                                       rulesets: dict) -> None:
    assert list(states.columns) == list(STATE_COLUMNS)
    assert states["game_id"].nunique() == len(games)
    for row in games.head(3).itertuples():
        rs = rulesets[row.ruleset]
        game = Game.new(rs, circle=deal_circle(rs, int(row.deal_seed)))
        mine = states[states["game_id"] == row.game_id].sort_values(["ply", "seat"])
        assert len(mine) == 2 * (row.plies + 1)
        snapshots = [game.copy()]
        for code in row.moves:
            game.apply(int(code))
            snapshots.append(game.copy())
        for (ply, seat), r in mine.set_index(["ply", "seat"]).iterrows():
            g = snapshots[ply]
            assert (r["position"], r["buttons"], r["income"], r["score"]) == (
                g.position(seat), g.buttons(seat), g.income(seat), g.score(seat))
            assert r["bot"] == (row.bot0 if seat == 0 else row.bot1)
        last = mine[mine["ply"] == row.plies].set_index("seat")
        assert (last.loc[0, "score"], last.loc[1, "score"]) == (row.score0, row.score1)


def test_states_keep_a_few_games_per_group_and_need_the_moves(games: pd.DataFrame,
                                                              rulesets: dict) -> None:
    few = game_states(games, rulesets, per_group=2)
    per = few.groupby(["ruleset", "pairing"])["game_id"].nunique()
    assert (per == 2).all() and len(per) == games.groupby(["ruleset", "pairing"]).ngroups
    assert game_states(games, {}).empty  # no rules known: nothing to replay
    with pytest.raises(ValueError, match="moves"):
        game_states(games.drop(columns="moves"), rulesets)


def test_position_curves_start_at_the_start_and_end_at_the_final_scores(
        states: pd.DataFrame, games: pd.DataFrame, rulesets: dict) -> None:
    rs = rulesets["edition2"]
    curves = curve_table(states, by="position", last_space={"edition2": rs.last_space})
    assert list(curves.columns) == list(CURVE_COLUMNS)
    assert set(curves["x"]) == set(range(rs.last_space + 1))
    assert (curves["lo"] <= curves["mean"] + 1e-9).all()
    assert (curves["mean"] <= curves["hi"] + 1e-9).all()
    assert (curves["q10"] <= curves["q90"]).all()
    for (bot, seat), part in curves.groupby(["bot", "seat"]):
        col = f"bot{seat}"
        played = games[games[col] == bot]
        start = part[(part["x"] == 0) & (part["metric"] == "score")].iloc[0]
        first = Game.new(rs, seed=1)
        assert start["mean"] == first.score(seat) and start["n"] == len(played)
        # every game ends with both tokens on the last space: the curve there is the
        # mean final score of the stored games
        end = part[(part["x"] == rs.last_space) & (part["metric"] == "score")].iloc[0]
        assert end["mean"] == pytest.approx(played[f"score{seat}"].mean())
        end_buttons = part[(part["x"] == rs.last_space) & (part["metric"] == "buttons")]
        assert end_buttons["mean"].iloc[0] == pytest.approx(played[f"buttons{seat}"].mean())
        income = part[part["metric"] == "income"].sort_values("x")
        # income only grows: so does its mean over the same games at every space
        assert (np.diff(income["mean"].to_numpy()) >= -1e-9).all()


def test_move_curves_count_the_games_still_going(states: pd.DataFrame) -> None:
    curves = curve_table(states, by="ply", metrics=("buttons",))
    assert set(curves["metric"]) == {"buttons"} and set(curves["by"]) == {"ply"}
    for _, part in curves.groupby(["bot", "seat"]):
        n = part.sort_values("x")["n"].to_numpy()
        assert (np.diff(n) <= 0).all() and n[0] > 0
    with pytest.raises(ValueError, match="by="):
        curve_table(states, by="turn")
    with pytest.raises(ValueError, match="metrics"):
        curve_table(states, metrics=("luck",))
    assert curve_table(states.iloc[0:0]).empty


def test_plots_are_figures_that_leave_matplotlib_alone(states: pd.DataFrame) -> None:
    backend = matplotlib.get_backend()
    fig = plot_curves(curve_table(states), title="edition2")
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert matplotlib.get_backend() == backend
    only = plot_curves(curve_table(states, by="ply"), metrics=["score"])
    assert len(only.axes) == 1
    empty = plot_curves(curve_table(states.iloc[0:0]))
    assert isinstance(empty, Figure)
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"


def _embedded(snippet: str) -> dict:
    m = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', snippet, re.S)
    assert m is not None
    return json.loads(m.group(1))


def test_replay_snippet_is_self_contained_and_the_engines_game() -> None:
    record = json.loads(SAMPLE.read_text())
    snippet = replay_snippet([record], titles=["the sample"], players=[["greedy", "mcts"]])
    assert snippet == replay_snippet([record], titles=["the sample"],
                                     players=[["greedy", "mcts"]])  # byte for byte
    # nothing to fetch: no src= or href= attributes, no CSS url(), no imports
    assert not re.search(r"""\b(?:src|href)\s*=|url\(|@import""", snippet)
    data = _embedded(snippet)
    (game,) = data["games"]
    assert game["title"] == "the sample" and game["players"] == ["greedy", "mcts"]
    rec = GameRecord.from_dict(record)
    g = rec.start()
    texts = [g.to_text()]
    for move in rec.moves:
        g.apply(move)
        texts.append(g.to_text())
    assert [p["text"] for p in game["positions"]] == texts
    assert game["moves"] == record["moves"]
    assert snippet.count("<script") == 3 and "PatchsimBoard" in snippet
    # the data cannot close its script element early, whatever the titles say
    tricky = replay_snippet([record], titles=["</script><script>alert(1)</script>"])
    assert tricky.count("</script>") == 3
    assert "&lt;/script&gt;" in tricky


def test_replay_snippet_refuses_a_bad_record() -> None:
    record = json.loads(SAMPLE.read_text())
    with pytest.raises(RecordError, match="move 2"):
        replay_snippet([dict(record, moves=[record["moves"][0], "buy P99 a1"])])


def test_sample_records_replay_to_the_stored_games(run_dir: Path, rulesets: dict,
                                                   games: pd.DataFrame) -> None:
    samples = sample_records(run_dir, rulesets, limit=2)
    assert len(samples) == 2
    for s in samples:
        final = final_position(GameRecord.from_dict(s["record"]))
        assert f"{final.score(0)} : {final.score(1)}" in s["title"]
        assert s["players"][0] in s["title"]
    snippet = replay_snippet(samples)
    data = _embedded(snippet)
    assert [g["title"] for g in data["games"]] == [s["title"] for s in samples]
    assert data["games"][0]["players"] == samples[0]["players"]


def test_curve_intervals_are_over_deals() -> None:
    """A bot that plays a deal from the same seat in two pairings contributes one value per
    deal to the interval: the estimator layer's t-interval of the per-deal means."""
    from patchsim.analysis import estimators as E
    from patchsim.reporting.curves import curve_table

    rows = []
    values = {0: (3, 5), 1: (10, 10), 2: (7, 1), 3: (4, 4)}  # deal -> the two games' scores
    for deal, pair in values.items():
        for k, score in enumerate(pair):
            rows.append({"game_id": 10 * deal + k, "deal_seed": 100 + deal, "ruleset": "r",
                         "pairing": f"p{k}", "seat": 0, "bot": "b", "ply": 1, "position": 1,
                         "buttons": 0, "income": 0, "score": score})
    curves = curve_table(pd.DataFrame(rows), by="ply", metrics=["score"])
    point = curves[(curves["x"] == 1)].iloc[0]
    e = E.mean_estimate([np.mean(p) for p in values.values()])
    assert point["n"] == 8
    assert (point["mean"], point["lo"], point["hi"]) == pytest.approx((e.value, e.lo, e.hi))


def test_board_names_fit_the_heading_or_are_shortened_and_shown_whole():
    """A long bot spec was cut mid-word on the replay's board ("Seat 1: mcts(eval=le…"):
    the board gets the name whole, or the bot's name alone, and the snippet shows the full
    specs under the title when the title does not."""
    rules9 = {"rows": 9, "cols": 9}
    learned = "mcts(eval=learned, iterations=100)"
    assert board_name("greedy", rules9) == "greedy"
    assert board_name(learned, rules9) == "mcts"
    assert board_name("x" * 40, rules9) is None  # the board shows "Seat 1" alone
    record = Game.new("edition2", seed=1).record("edition2")
    snippet = replay_snippet([record], titles=["the sample"], players=[["greedy", learned]])
    data = json.loads(re.search(r'-data">(.*?)</script>', snippet, re.S).group(1))
    assert data["games"][0]["names"] == ["greedy", "mcts"]
    assert data["games"][0]["players"] == ["greedy", learned]
    assert f"seat 1</span>: {learned}" in snippet.replace("&#x27;", "'")
    # a title that names the bots already needs no second line
    titled = replay_snippet([record], titles=[f"greedy (seat 0) vs {learned} (seat 1)"],
                            players=[["greedy", learned]])
    assert "psr-players\">" not in titled
