"""Estimates over deals: rate metrics get a weak prior (two imaginary deals at 0 and 1) so that
their intervals never collapse to a point and never leave the metric's range."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis.metrics import METRICS, RATE_METRICS, estimate


def deals_of(metric: str, values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"ruleset": "base", "pairing": "greedy vs greedy",
                         "deal": range(len(values)), metric: values})


def test_rate_metrics_are_known_metrics() -> None:
    assert set(RATE_METRICS) == {"first_player_win", "bonus_rate", "tie_break_rate",
                                 "leather_useful", "first_leather_useful"}
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
