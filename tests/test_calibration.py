"""Tests for the calibration of a search's root value (patchsim.analysis.calibration): the
deal is the unit, the words agree with the interval beside them, the reliability bins."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis.calibration import (
    agreement_words,
    calibration_summary,
    per_deal,
    reliability_table,
)
from patchsim.analysis.intervals import Estimate


def games_of(values: np.ndarray, rng: np.random.Generator, per_deal_games: int = 2
             ) -> pd.DataFrame:
    """Games whose first seat wins with probability ``values[deal]``."""
    deal = np.repeat(np.arange(len(values)), per_deal_games)
    won = rng.random(len(deal)) < values[deal]
    return pd.DataFrame({"deal": deal, "root_value": values[deal], "first_won": won})


def test_per_deal_makes_the_deal_the_unit():
    g = pd.DataFrame({"deal": [3, 3, 1, 1, 1], "root_value": [0.6, 0.6, 0.4, 0.4, 0.4],
                      "first_won": [True, False, True, True, False]})
    t = per_deal(g["root_value"], g["first_won"], g["deal"])
    assert t["deal"].tolist() == [1, 3]
    assert t["first_won"].tolist() == pytest.approx([2 / 3, 0.5])
    assert t["games"].tolist() == [3, 2]
    assert t["root_value"].tolist() == [0.4, 0.6]


def test_a_calibrated_value_agrees_and_a_biased_one_does_not():
    rng = np.random.default_rng(3)
    values = rng.uniform(0.3, 0.8, 2000)
    g = games_of(values, rng)
    fair = calibration_summary(per_deal(g["root_value"], g["first_won"], g["deal"]))
    assert fair["verdict"].startswith("agrees")
    assert fair["deals"] == 2000 and fair["games"] == 4000
    low = calibration_summary(per_deal(g["root_value"] - 0.15, g["first_won"], g["deal"]))
    assert low["verdict"].startswith("under by ")  # the value is below the win rate
    d = low["difference"]
    assert d.lo > 0 and d.value == pytest.approx(fair["difference"].value + 0.15)
    high = calibration_summary(per_deal(g["root_value"] + 0.1, g["first_won"], g["deal"]))
    assert high["verdict"].startswith("over by ")
    assert high["difference"].value == pytest.approx(fair["difference"].value - 0.1)


def test_the_words_follow_the_interval():
    assert agreement_words(Estimate(0.02, 0.01, -0.01, 0.05, 100, 0.1)).startswith("agrees")
    assert agreement_words(Estimate(0.12, 0.02, 0.08, 0.16, 100, 0.2)) == (
        "under by 12.0 [8.0, 16.0] points")
    assert agreement_words(Estimate(-0.12, 0.02, -0.16, -0.08, 100, 0.2)) == (
        "over by 12.0 [8.0, 16.0] points")
    nan = float("nan")
    assert agreement_words(Estimate(nan, nan, nan, nan, 0, nan)).startswith("undecided")


def test_reliability_bins_cover_every_deal_in_value_order():
    rng = np.random.default_rng(5)
    values = rng.uniform(0.1, 0.9, 503)
    g = games_of(values, rng, 4)
    t = reliability_table(per_deal(g["root_value"], g["first_won"], g["deal"]), bins=5)
    assert t["deals"].sum() == 503 and len(t) == 5
    assert (t["value_from"].diff().dropna() > 0).all()
    assert (t["value_to"].to_numpy()[:-1] <= t["value_from"].to_numpy()[1:]).all()
    # a calibrated value: the win rates rise with the bins and most bins agree
    assert (t["first_seat_wins"].diff().dropna() > 0).all()
    assert t["agrees"].sum() >= 4
    assert ((t["lo"] <= t["first_seat_wins"]) & (t["first_seat_wins"] <= t["hi"])).all()
    with pytest.raises(ValueError, match="bins"):
        reliability_table(per_deal(g["root_value"], g["first_won"], g["deal"]), bins=0)
