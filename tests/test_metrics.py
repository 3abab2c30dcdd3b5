"""Estimates over deals: rate metrics get a weak prior (two imaginary deals at 0 and 1) so that
their intervals never collapse to a point and never leave the metric's range."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis.metrics import METRICS, RATE_METRICS, estimate
from patchsim.play.runfolder import table_path


def deals_of(metric: str, values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"ruleset": "base", "pairing": "greedy vs greedy",
                         "deal": range(len(values)), metric: values})


def test_rate_metrics_are_known_metrics() -> None:
    assert set(RATE_METRICS) == {"first_player_win", "bonus_rate", "tie_break_rate",
                                 "leather_useful", "first_leather_useful", "first_bot_win",
                                 "leather_useful_all", "first_leather_mark_useful"}
    assert set(RATE_METRICS) <= set(METRICS)


@pytest.mark.parametrize("metric", sorted(RATE_METRICS))
@pytest.mark.parametrize("value", [0.0, 1.0])
def test_zero_variance_rate_has_a_real_interval_inside_0_1(metric: str, value: float) -> None:
    row = estimate(deals_of(metric, [value] * 20), [metric]).iloc[0]
    assert row["mean"] == value  # the prior widens the interval, it does not move the mean
    assert row["se"] > 0
    assert row["hi"] - row["lo"] > 0.05
    assert 0.0 <= row["lo"] <= row["mean"] <= row["hi"] <= 1.0
    # the standard error is that of the data with one deal at 0 and one at 1 added
    x = np.array([value] * 20 + [0.0, 1.0])
    assert row["se"] == pytest.approx(x.std(ddof=1) / np.sqrt(22))
    assert row["deals"] == 20


def test_rate_interval_is_clipped_to_0_1() -> None:
    row = estimate(deals_of("first_player_win", [1.0] * 9 + [0.5]), ["first_player_win"]
                   ).iloc[0]
    assert row["hi"] == 1.0 and row["lo"] < row["mean"] < 1.0


def test_first_player_edge_prior_is_shifted_and_clipped() -> None:
    row = estimate(deals_of("first_player_edge", [0.5] * 15), ["first_player_edge"]).iloc[0]
    assert row["mean"] == 0.5 and row["hi"] == 0.5
    assert -0.5 <= row["lo"] < 0.45
    x = np.array([0.5] * 15 + [-0.5, 0.5])
    assert row["se"] == pytest.approx(x.std(ddof=1) / np.sqrt(17))
    # the edge is the win rate minus 0.5, and so is its interval
    win = estimate(deals_of("first_player_win", [1.0] * 15), ["first_player_win"]).iloc[0]
    assert row["lo"] == pytest.approx(win["lo"] - 0.5)
    assert row["se"] == pytest.approx(win["se"])


def test_other_metrics_keep_the_plain_t_interval() -> None:
    values = [3.0, 5.0, 4.0, 6.0, 2.0]
    row = estimate(deals_of("mean_score", values), ["mean_score"]).iloc[0]
    x = np.array(values)
    assert row["se"] == pytest.approx(x.std(ddof=1) / np.sqrt(5))
    assert row["lo"] < 2.5 and row["hi"] > 5.5  # not clipped to [0, 1]


def test_deal_metrics_from_the_events_summary_are_the_in_memory_ones(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """deal_metrics on the streamed summary (analysis.tables) against the pandas computation
    over every event that it replaced: equal to the last bit."""
    from runs import shared_run

    from patchsim.analysis.metrics import deal_metrics
    from patchsim.analysis.tables import read_games, scan_events
    from patchsim.play.runfolder import load_events, load_games

    run = shared_run(tmp_path_factory, "small", "edition2", 40, ["greedy", "income"])
    games, events = load_games(run), load_events(run)
    # the reference: leather placements per game straight from the events frame
    place = events[events["event"] == "leather_place"]
    useful = place.groupby("game_id")["filled_hole"].agg(["sum", "count"])
    first = place.sort_values(["game_id", "seq"]).groupby("game_id")["filled_hole"].first()
    g = games.join(useful, on="game_id")
    g["leather_hits"] = g["sum"].fillna(0.0)
    g["leather_placed"] = g["count"].fillna(0.0)
    g["first_leather_useful"] = g["game_id"].map(first).astype(float)
    ref = g.groupby(["ruleset", "pairing", "deal"], sort=False)[
        ["leather_hits", "leather_placed", "first_leather_useful"]].mean().reset_index()
    with np.errstate(invalid="ignore", divide="ignore"):
        ref["leather_useful"] = ref["leather_hits"] / ref["leather_placed"]
    compact = read_games(table_path(run, "games"))
    events_path = table_path(run, "events")
    for d in (deal_metrics(compact, scan_events(events_path, compact, batch_rows=101)),
              deal_metrics(games, events)):
        cols = ["ruleset", "pairing", "deal", "leather_useful", "first_leather_useful"]
        pd.testing.assert_frame_equal(d[cols], ref[cols], check_exact=True, check_dtype=False)
    # and every other metric is the same with the compact games table
    pd.testing.assert_frame_equal(deal_metrics(compact, scan_events(events_path, compact)),
                                  deal_metrics(games, events), check_exact=True)
