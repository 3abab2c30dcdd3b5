"""The metric registry (analysis.metrics): one definition per metric, its bounds, margins and
aliases, and the two leather definitions on a hand-made game."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis import metrics as M
from patchsim.analysis.tables import summarize


def test_every_metric_is_complete_and_named_once() -> None:
    labels = [m.label for m in M.METRICS.values()]
    assert len(set(labels)) == len(labels)  # two metrics never share a label
    for name, m in M.METRICS.items():
        assert m.name == name and m.kind in M.KINDS and m.description
        lo, hi = m.bounds
        assert lo < hi
        assert m.default_margin < (hi - lo) / 2  # a margin of half the range says nothing
        assert m.default_margin == (0.02 if m.kind in ("rate", "share") else 1.0)
    # aliases point at metrics, and never shadow a metric's own name
    assert set(M.ALIASES.values()) <= set(M.METRICS)
    assert not set(M.ALIASES) & set(M.METRICS)


def test_derived_views_come_from_the_registry() -> None:
    assert M.BOUNDS["first_player_edge"] == (-0.5, 0.5)
    assert all(M.BOUNDS[n] == (0.0, 1.0) for n in M.RATE_METRICS)
    assert "mean_score" not in M.BOUNDS and "abs_margin" not in M.BOUNDS
    assert M.RANGES["abs_margin"] == (0.0, math.inf)
    assert M.MIN_DEALS == 10
    from patchsim.analysis import compare, stats
    from patchsim.experiments import gate
    assert compare.MIN_DEALS is M.MIN_DEALS and stats.MIN_DEALS is M.MIN_DEALS
    assert gate.MIN_DEALS is M.MIN_DEALS and gate.RATE_METRICS is M.RATE_METRICS


@pytest.mark.parametrize(("alias", "name"), [
    ("first_seat_win", "first_player_win"), ("score_margin", "abs_margin"),
    ("winner_lead", "abs_margin"), ("first-seat win rate", "first_player_win"),
    ("leather useful (all)", "leather_useful_all"), ("abs_margin", "abs_margin")])
def test_old_names_and_labels_are_aliases(alias: str, name: str) -> None:
    assert M.metric(alias).name == name


def test_unknown_metric_names_the_known_ones() -> None:
    with pytest.raises(M.UnknownMetric) as e:
        M.metric("first_player_wins")
    assert isinstance(e.value, ValueError)
    assert e.value.name == "first_player_wins" and "first_player_win" in e.value.known
    assert "first_player_wins" in str(e.value) and "abs_margin" in str(e.value)


def test_the_three_margins_are_three_metrics() -> None:
    games = pd.DataFrame({"ruleset": "r", "pairing": "a vs b", "deal": [0, 0],
                          "score0": [10, 3], "score1": [4, 9], "winner": [0, 1]})
    diff = M.metric("score_diff").per_game(games, None)
    absm = M.metric("abs_margin").per_game(games, None)
    assert list(diff) == [6.0, -6.0] and list(absm) == [6.0, 6.0]
    # the deal means: the signed one cancels over the seat swap, the absolute one does not
    assert M.metric("score_diff").per_deal(games, None).iloc[0] == 0.0
    assert M.metric("abs_margin").per_deal(games, None).iloc[0] == 6.0


def _leather_game() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two games of one deal. Game 1: mark 20 claimed and placed in a hole, mark 26 claimed
    and placed on an ordinary square, mark 32 lost. Game 2: mark 20 placed in an ordinary
    square, a second patch of mark 26 in a hole."""
    games = pd.DataFrame({"ruleset": "r", "pairing": "a vs a", "game_id": [1, 2],
                          "deal": [0, 0], "order": [0, 1], "bot0": "a", "bot1": "a",
                          "winner": [0, 1]})
    ev = []

    def add(gid: int, seq: int, event: str, mark: int, hole: bool = False) -> None:
        ev.append({"game_id": gid, "seq": seq, "event": event, "seat": 0, "bot": "a",
                   "ruleset": "r", "position": mark, "patch": None, "cost": 0,
                   "filled_hole": hole, "score_lead": 0, "opp_position": 0})

    add(1, 0, "leather_claim", 20)
    add(1, 1, "leather_place", 20, True)
    add(1, 2, "leather_claim", 26)
    add(1, 3, "leather_place", 26, False)
    add(1, 4, "leather_lost", 32)
    add(2, 0, "leather_claim", 20)
    add(2, 1, "leather_place", 20, False)
    add(2, 2, "leather_claim", 26)
    add(2, 3, "leather_place", 26, True)
    add(2, 4, "leather_lost", 32)
    return games, pd.DataFrame(ev)


def test_the_two_leather_definitions_on_a_hand_made_game() -> None:
    games, events = _leather_game()
    ev = summarize(events, games)
    # placed: game 1 one hit in two placements, game 2 one in two; lost patches left out
    placed = M.metric("leather_useful")
    assert list(placed.per_game(games, ev)) == [0.5, 0.5]
    assert placed.per_deal(games, ev).iloc[0] == 0.5
    # all marks: game 1 one of three (the lost one counts as not useful), game 2 one of three
    every = M.metric("leather_useful_all")
    assert list(every.per_game(games, ev)) == pytest.approx([1 / 3, 1 / 3])
    # the first placement and the first mark: useful in game 1, not in game 2
    assert list(M.metric("first_leather_useful").per_game(games, ev)) == [1.0, 0.0]
    assert list(M.metric("first_leather_mark_useful").per_game(games, ev)) == [1.0, 0.0]
    d = M.deal_metrics(games, ev, ["leather_useful", "leather_useful_all"])
    assert d["leather_useful"].iloc[0] == 0.5
    assert d["leather_useful_all"].iloc[0] == pytest.approx(1 / 3)


def test_deal_metrics_takes_aliases_and_any_registry_metric() -> None:
    games = pd.DataFrame({"ruleset": "r", "pairing": "a vs b", "game_id": [1, 2, 3, 4],
                          "deal": [0, 0, 1, 1], "order": [0, 1, 0, 1], "bot0": ["a", "b"] * 2,
                          "bot1": ["b", "a"] * 2, "winner": [0, 0, 1, 0],
                          "score0": [5, 7, 1, 2], "score1": [3, 2, 4, 2]})
    d = M.deal_metrics(games, None, ["score_margin", "score_diff", "first_bot_win"])
    assert list(d.columns) == ["ruleset", "pairing", "deal", "abs_margin", "score_diff",
                               "first_bot_win"]
    assert list(d["abs_margin"]) == [3.5, 1.5]
    assert list(d["score_diff"]) == [3.5, -1.5]
    # deal 0: a wins game 1 (seat 0), b game 2 (seat 0); deal 1: b wins both
    assert list(d["first_bot_win"]) == [0.5, 0.0]
    assert np.isnan(M.metric("first_bot_win").per_game(
        games.assign(bot1=games["bot0"]), None)).all()  # self-play: not defined


# --- the skill-gap rule of the first-seat table ---------------------------------------------
def _pairing(n_deals: int, a_wins_seat0: int, a_wins_seat1: int, a: str = "mcts",
             b: str = "greedy") -> pd.DataFrame:
    """Seat-swapped deals of a vs b: in deal d, a wins its seat-0 game if d < a_wins_seat0 and
    its seat-1 game if d < a_wins_seat1."""
    rows = []
    for d in range(n_deals):
        rows.append({"ruleset": "r", "pairing": f"{a} vs {b}", "game_id": 2 * d, "deal": d,
                     "order": 0, "bot0": a, "bot1": b, "winner": 0 if d < a_wins_seat0 else 1})
        rows.append({"ruleset": "r", "pairing": f"{a} vs {b}", "game_id": 2 * d + 1,
                     "deal": d, "order": 1, "bot0": b, "bot1": a,
                     "winner": 1 if d < a_wins_seat1 else 0})
    return pd.DataFrame(rows)


def test_a_pairing_decided_by_the_skill_gap_says_nothing_about_seats() -> None:
    from patchsim.analysis.seats import first_player_advantage, seat_information

    crushed = _pairing(100, 100, 100)  # the stronger bot wins all 200 games
    fpa = first_player_advantage(crushed).iloc[0]
    assert fpa["rate"] == 0.5  # which reads as "balanced" ...
    assert not fpa["seat_informative"]  # ... but tells nothing about the seats
    assert "mcts wins over 90%" in fpa["seat_reason"] and "skill gap" in fpa["seat_reason"]
    # the weaker bot's side is seen too (the pairing named the other way round)
    assert not seat_information(_pairing(100, 0, 0))[0]
    # an even pairing, a seat that matters, and too few deals to tell: informative
    assert seat_information(_pairing(100, 50, 50)) == (True, "")
    assert seat_information(_pairing(100, 100, 70))[0]  # 100% in one seat, 70% in the other
    assert seat_information(_pairing(10, 10, 10))[0]  # 20 games: the interval reaches 90%
    # self-play is always informative
    selfp = _pairing(100, 100, 0, a="greedy", b="greedy")
    assert seat_information(selfp) == (True, "")
    assert bool(first_player_advantage(selfp).iloc[0]["seat_informative"])


# --- experiment files: old names still load, defaults come from the registry -----------------
def _experiment(tmp_path, **extra):
    import yaml

    from patchsim.experiments.experiment import load_experiment

    data = {"name": "t", "base": "edition2", "bots": ["greedy"], "games": 20, "seed": 5,
            **extra}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_experiment(path)


def test_an_old_metric_name_loads_as_its_registry_name(tmp_path) -> None:
    exp = _experiment(tmp_path, metric="score_margin",
                      check={"tolerances": [{"metric": "first_seat_win", "min": 0.4,
                                             "max": 0.6}]})
    assert exp.metric == "abs_margin" and exp.margin == 1.0
    assert exp.tolerances[0].metric == "first_player_win"


def test_the_first_seat_edge_gets_a_rate_margin_by_default(tmp_path) -> None:
    # it used to get 1.0, more than half its range, which the file check then refused
    assert _experiment(tmp_path, metric="first_player_edge").margin == 0.02


def test_an_unknown_metric_in_a_file_names_the_known_ones(tmp_path) -> None:
    from patchsim.experiments.experiment import ExperimentError

    with pytest.raises(ExperimentError, match="unknown metric 'first_player_wins'.*abs_margin"):
        _experiment(tmp_path, metric="first_player_wins")
