"""The ladder: win rates with intervals over deals (the seat-swapped pair is the unit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis import estimators as E
from patchsim.analysis.ladder import format_ladder, head_to_head, ladder


def table(outcomes: list[tuple[int, int]]) -> pd.DataFrame:
    """A vs B over seat-swapped deals; each outcome is (winner of order 0, of order 1) as the
    seat that won."""
    rows = []
    for deal, pair in enumerate(outcomes):
        for order, w in enumerate(pair):
            b0, b1 = ("A", "B") if order == 0 else ("B", "A")
            rows.append({"pairing": "A vs B", "deal": deal, "order": order, "bot0": b0,
                         "bot1": b1, "winner": w, "winner_bot": (b0, b1)[w],
                         "score0": 10 - w, "score1": 9 + w, "ruleset": "r"})
    return pd.DataFrame(rows)


def test_head_to_head_interval_is_over_deals():
    # A wins both games of 6 deals, splits 3, loses both of 1: per-deal 1, 1/2, 0
    outcomes = [(0, 1)] * 6 + [(0, 0)] * 3 + [(1, 0)] * 1
    h = head_to_head(table(outcomes)).set_index(["bot", "opponent"])
    a = h.loc[("A", "B")]
    per_deal = np.array([1.0] * 6 + [0.5] * 3 + [0.0])
    est = E.mean_estimate(per_deal, 0.95, E.WIN_BOUNDS)
    assert a["games"] == 20 and a["wins"] == 15 and a["deals"] == 10
    assert (a["win_rate"], a["lo"], a["hi"]) == pytest.approx((0.75, est.lo, est.hi))
    assert h.loc[("B", "A"), "win_rate"] == pytest.approx(0.25)


def test_ladder_ranks_and_formats():
    games = table([(0, 1)] * 30 + [(1, 0)] * 10)
    lad = ladder(games)
    assert list(lad["bot"]) == ["A", "B"] and lad.loc[0, "deals"] == 40
    assert lad.loc[0, "lo"] < lad.loc[0, "win_rate"] < lad.loc[0, "hi"]
    assert "| A |" in format_ladder(lad, head_to_head(games))
