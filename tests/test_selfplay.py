"""The training's self-play loop (patchsim.play.selfplay): its result rows are the compiled
loop's, its count of opening passes is the games table's, and how a generation's games
went reaches the training's history and document (issue 29: a training that settles into a
passing convention shows it generation by generation)."""

from __future__ import annotations

import numpy as np
import pytest
from strategies import SMALL

from patchsim.analysis.degenerate import opening_pass_runs
from patchsim.bots import features as F
from patchsim.bots.learned import param_rows
from patchsim.bots.policies import SCRIPTED
from patchsim.bots.registry import make_bot
from patchsim.engine.deal import deal_arrays
from patchsim.engine.ruleset import load_ruleset, ruleset_from_dict
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops
from patchsim.play.match import max_events, max_plies
from patchsim.play.selfplay import (
    NO_OPPONENT,
    RECORD_FEATURES,
    margins_and_winners,
    play_quality,
    result_rows,
    selfplay,
)
from patchsim.play.train import TrainSettings, train
from patchsim.play.train_document import generations_table, play_paragraph


def _selfplay(rs, circles, streams, kind, params):
    tab = compile_ruleset(rs).tab
    m = len(circles)
    cap = max_plies(rs)
    results, opening = result_rows(m), np.full(m, -7, dtype=np.int64)
    rows = selfplay(tab, circles, streams, kind, params, 0.0, RECORD_FEATURES,
                    np.zeros((m * cap, F.N_FEATURES)), np.zeros(m * cap, dtype=np.int64),
                    np.zeros(m * cap, dtype=np.int64), results, opening, kind, params,
                    np.full(m, NO_OPPONENT, dtype=np.int64))
    assert rows > 0
    return results, opening


@pytest.mark.parametrize("buttons", [5, 0])
def test_selfplay_rows_are_the_compiled_loops_and_count_opening_passes_alike(buttons):
    # greedy without epsilon is deterministic, so the training's loop and the runner's
    # play the same games; with no buttons at the start every game opens with passes
    rs = load_ruleset("edition2")
    rs = ruleset_from_dict({**rs.to_dict(), "starting_buttons": buttons}) if buttons != 5 else rs
    greedy = make_bot("greedy").params
    circles, streams = deal_arrays(rs, np.arange(6))
    results, opening = _selfplay(rs, circles, streams, SCRIPTED, greedy)
    tab = compile_ruleset(rs).tab
    res, moves, *_ = loops.play_deals(
        tab, circles, streams, np.array([SCRIPTED, SCRIPTED]), param_rows([greedy, greedy]),
        max_plies(rs), max_events(rs), np.zeros(1, dtype=np.int64))
    first = res[0::2]  # each deal's first game (the second swaps two equal bots)
    assert np.array_equal(results, first)
    offsets = np.concatenate([[0], np.cumsum(res[:, loops.R_PLIES])])
    runs = opening_pass_runs(offsets, moves)[0::2]
    assert np.array_equal(opening, runs)
    counted = (results[:, loops.R_PASSES:loops.R_PASSES + 2].sum(axis=1)
               + results[:, loops.R_BUYS:loops.R_BUYS + 2].sum(axis=1)
               + results[:, loops.R_LEATHER:loops.R_LEATHER + 2].sum(axis=1))
    assert np.array_equal(counted, results[:, loops.R_PLIES])  # every move counted once
    if buttons == 0:
        assert (opening >= 1).all()
    margins, winners = margins_and_winners(results)
    assert np.array_equal(margins, first[:, loops.R_SCORE] - first[:, loops.R_SCORE + 1])
    assert np.array_equal(winners, first[:, loops.R_WINNER])


def test_play_quality_reads_result_rows_as_the_packing_table_does():
    results = result_rows(4)
    results[:, loops.R_SCORE] = [10, -30, 4, 0]
    results[:, loops.R_SCORE + 1] = [6, 2, 8, 0]
    results[:, loops.R_PASSES] = [3, 20, 1, 0]
    results[:, loops.R_PASSES + 1] = [2, 9, 0, 0]  # game 1: 29 passes and a seat at -30
    results[:, loops.R_BONUS] = [0, -1, 1, -1]
    results[:, loops.R_HOLES] = [1, 3, 0, 0]
    results[:, loops.R_HOLES + 1] = [1, 1, 2, 0]
    q = play_quality(results, np.array([0, 12, 6, 5]))
    assert q["games"] == 4
    assert q["degenerate"] == pytest.approx(0.25)
    assert q["opens_with_passes"] == pytest.approx(0.5)  # 12 and 6 (the threshold) count
    assert q["bonus"] == pytest.approx(0.5)
    assert q["holes"] == pytest.approx(np.mean([1, 2, 1, 0]))
    assert q["score"] == pytest.approx(np.mean([8, -14, 6, 0]))
    assert q["degenerate_lo"] <= q["degenerate"] <= q["degenerate_hi"]
    assert play_quality(result_rows(0), np.zeros(0, dtype=np.int64)) == {"games": 0}



def test_the_training_history_and_document_show_how_each_generation_played(tmp_path):
    rs = ruleset_from_dict(SMALL)
    quick = TrainSettings(seed=3, games_per_generation=16, eval_deals=2, eval_iterations=4)
    res = train(rs, generations=2, jobs=1, models=tmp_path, settings=quick)
    plays = [r["play"] for r in res.history]
    assert [p["games"] for p in plays] == [16, 16]  # no league: every game is self-play
    for p in plays:
        for m in ("degenerate", "opens_with_passes", "bonus"):
            assert 0.0 <= p[f"{m}_lo"] <= p[m] <= p[f"{m}_hi"] <= 1.0
    folder = res.model_path.parent
    report = (folder / "report.md").read_text()
    assert "opens 6+ passes" in report and "degenerate" in report
    assert (folder / "play.png").stat().st_size > 0
    words = play_paragraph(res.history)
    assert words is not None and "generation 1 (greedy's games)" in words
    # a history written before the games were recorded still renders, with empty cells
    old = [{k: v for k, v in r.items() if k != "play"} for r in res.history]
    assert play_paragraph(old) is None
    table = generations_table(old, [])
    assert all(row["play degenerate"] == "" for row in table.rows)
