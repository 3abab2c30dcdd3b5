"""Differential tests: the compiled engine against the independent reference referee
(tests/reference), position by position, on both editions and on random rulesets."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference.referee import random_record, replay_trace
from strategies import ruleset_dicts

from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, replay
from patchsim.engine.ruleset import load_ruleset, ruleset_from_dict


def engine_trace(record: dict) -> list[dict]:
    return [g.summary() for g in replay(GameRecord.from_dict(record))]


def engine_random_record(rules, seed: int) -> dict:
    """A game of uniformly random moves played by the engine's Python API."""
    rng = np.random.default_rng(seed)
    game = Game.new(rules, circle=deal_circle(rules, rng))
    while not game.finished:
        moves = game.legal_moves()
        game.apply(moves[int(rng.integers(len(moves)))])
    return {"rules": rules.to_dict(), "circle": list(game.circle), "moves": game.move_texts()}


def assert_same_trace(record: dict) -> None:
    ours = engine_trace(record)
    ref = replay_trace(record)
    assert len(ours) == len(ref)
    for i, (a, b) in enumerate(zip(ours, ref, strict=True)):
        assert a == b, f"positions differ after move {i}: {record['moves'][i - 1] if i else ''}"


def test_editions_engine_games_match_referee() -> None:
    for name in ("edition1", "edition2"):
        rs = load_ruleset(name)
        for seed in range(12):
            assert_same_trace(engine_random_record(rs, seed))


def test_editions_referee_games_match_engine() -> None:
    for name in ("edition1", "edition2"):
        rules = load_ruleset(name).to_dict()
        for seed in range(12):
            assert_same_trace(random_record(rules, seed))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=ruleset_dicts(), seed=st.integers(0, 2**32 - 1))
def test_random_rulesets_match_referee(data: dict, seed: int) -> None:
    rs = ruleset_from_dict(data)
    assert_same_trace(engine_random_record(rs, seed))
    assert_same_trace(random_record(rs.to_dict(), seed))


def test_more_leather_marks_than_empty_squares_matches_referee() -> None:
    """docs/rules.md R8.5: crossing more leather marks than there are empty squares claims one
    per square in track order; the rest go back on the track under `leather_when_full: stay`
    (a case hypothesis found where the referee had claimed them all first)."""
    data = {
        "name": "tiny", "board": {"rows": 3, "cols": 3}, "starting_buttons": 0,
        "second_player_buttons": 0,
        "track": {"last_space": 8, "income": [], "leather": [1, 2, 3, 4, 5]},
        "offer_size": 1, "bonus": None, "empty_square_penalty": 0,
        "patches": [{"id": f"Q{i:02d}", "shape": "XX", "cost": 0, "time": 0, "income": 0}
                    for i in range(14)],
        "start_after": "Q00", "leather_when_full": "stay",
    }
    rs = ruleset_from_dict(data)
    for seed in range(40):
        assert_same_trace(engine_random_record(rs, seed))
        assert_same_trace(random_record(rs.to_dict(), seed))
