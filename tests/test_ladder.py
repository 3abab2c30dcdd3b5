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


def test_deterministic_self_play_counts_each_deal_once():
    """Both games of a deal are the same game when one deterministic bot plays itself: the
    summary counts distinct games and says so; per-deal rates are unchanged."""
    from patchsim.analysis.selfplay import distinct_games, duplicated_pairings
    from patchsim.analysis.summary import format_summary, run_summary

    rows = []
    for deal in range(10):
        for order in (0, 1):
            w = deal % 3 == 0
            rows.append({"ruleset": "r", "pairing": "g vs g", "deal": deal, "order": order,
                         "bot0": "g", "bot1": "g", "winner": int(w), "winner_bot": "g",
                         "score0": 10 + deal, "score1": 12, "buttons0": 1, "buttons1": 2,
                         "empty0": 3, "empty1": 4, "plies": 40, "first_to_end": 0,
                         "tie_break": deal == 4})
    games = pd.DataFrame(rows)
    assert duplicated_pairings(games) == ["g vs g"]
    assert len(distinct_games(games)) == 10
    summary = run_summary(games).iloc[0]
    assert summary["games"] == 10 and summary["tie_breaks"] == 1
    assert summary["tie_break_seat0_share"] == 1.0
    assert "one distinct game per deal" in format_summary(run_summary(games))
    # a pairing whose swapped games differ is left alone
    games.loc[(games["deal"] == 2) & (games["order"] == 1), "score0"] = 99
    assert duplicated_pairings(games) == [] and run_summary(games).iloc[0]["games"] == 20
