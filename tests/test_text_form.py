"""The position text form (Game.to_text / Game.from_text): every position of random games on
both editions and on random rulesets reads back to the same state and the same legal moves;
bad text is refused naming the field and the value; ``patchsim replay --json`` carries it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import ruleset_dicts
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.engine import core
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, replay
from patchsim.engine.ruleset import Ruleset, load_ruleset, ruleset_from_dict

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)

START_SEED_1 = (
    "q0=9/9/9/9/9/9/9/9/9 q1=9/9/9/9/9/9/9/9/9 p0=0,5,0 p1=0,5,0 top=0 "
    "circle=*P25,P22,P18,P31,P06,P04,P16,P17,P02,P05,P15,P01,P12,P20,P27,P26,P03,P08,P11,P10,"
    "P28,P09,P32,P07,P14,P23,P21,P29,P13,P30,P24,P19,P00 leather=26,32,38,44,50 bonus=- "
    "end=- ply=0"
)


def live_state(game: Game) -> np.ndarray:
    """The whole state: the engine clears the slot of a bought patch, so a position is its
    state array and text round-trips it exactly."""
    state = game.state.copy()
    assert (state[core.S_CIRCLE + int(state[core.S_NCIRCLE]):] == -1).all()
    return state


def assert_round_trip(game: Game) -> None:
    text = game.to_text()
    assert "\n" not in text
    back = Game.from_text(text, rules=game.ruleset)
    np.testing.assert_array_equal(back.state, live_state(game), err_msg=text)
    assert back.to_text() == text
    np.testing.assert_array_equal(back.legal_moves().codes, game.legal_moves().codes)
    assert back.summary() == game.summary()
    assert (back.offer, back.remaining, back.leather_on_track) == (
        game.offer, game.remaining, game.leather_on_track)


def play_random(rules: Ruleset, seed: int, buy_bias: float = 0.0):
    """Yield every position of a random game (buys preferred with probability buy_bias, so
    that quilts fill and bonus squares get completed)."""
    rng = np.random.default_rng(seed)
    game = Game.new(rules, seed=seed)
    yield game
    while not game.finished:
        moves = game.legal_moves()
        buys = np.flatnonzero(moves.codes >= 0)
        if len(buys) and rng.random() < buy_bias:
            i = int(rng.choice(buys))
        else:
            i = int(rng.integers(len(moves)))
        game.apply(moves[i])
        yield game


# --------------------------------------------------------------------------------------------
# round trips


def test_start_position_text() -> None:
    game = Game.new("edition2", seed=1)
    assert game.to_text() == START_SEED_1
    assert_round_trip(game)


@pytest.mark.parametrize("name", ["edition1", "edition2"])
def test_every_position_of_edition_games_round_trips(name: str) -> None:
    rules = load_ruleset(name)
    seen = set()
    for seed in range(6):
        for game in play_random(rules, seed, buy_bias=0.8 if seed % 2 else 0.0):
            assert_round_trip(game)
            seen.add((game.pending_leather > 0, game.bonus_owner is not None,
                      game.first_to_finish is not None))
    # the games pass through the fields that are easy to get wrong
    assert any(s[0] for s in seen) and any(s[2] for s in seen)


@FAST
@given(data=ruleset_dicts(), seed=SEEDS, bias=st.sampled_from([0.0, 0.9]))
def test_every_position_of_random_rulesets_round_trips(data: dict, seed: int,
                                                        bias: float) -> None:
    rules = ruleset_from_dict(data)
    for game in play_random(rules, seed, bias):
        assert_round_trip(game)


def test_position_text_keeps_playing_like_the_original() -> None:
    """A game continued from its text plays on exactly as the original (same states)."""
    rules = load_ruleset("edition1")
    games = list(g.copy() for g in play_random(rules, 11, buy_bias=0.8))
    final = games[-1]
    for i in (5, 20, len(games) // 2):
        back = Game.from_text(games[i].to_text(), rules=rules)
        for code in final.history[i:]:
            back.apply(int(code))
        np.testing.assert_array_equal(live_state(back), live_state(final))


def test_fields_may_come_in_any_order_and_spacing() -> None:
    game = Game.new("edition2", seed=1)
    shuffled = "  ".join(reversed(game.to_text().split()))
    assert Game.from_text(shuffled).to_text() == game.to_text()


def test_a_position_from_text_has_no_record_but_a_start_position_has() -> None:
    game = Game.new("edition2", seed=4)
    start = Game.from_text(game.to_text())
    assert GameRecord.from_dict(start.record()).start().to_text() == game.to_text()
    game.apply("pass")
    later = Game.from_text(game.to_text())
    assert later.history == [] and later.ply == 1
    with pytest.raises(ValueError, match=r"position \(after move 1\)"):
        later.record()


# --------------------------------------------------------------------------------------------
# bad text


def _start() -> str:
    return Game.new("edition2", seed=1).to_text()


def _with(field: str, value: str) -> str:
    return " ".join(f"{field}={value}" if w.startswith(f"{field}=") else w
                    for w in _start().split())


BAD = {
    "not_key_value": (_start() + " hello", ["'hello'", "key=value"]),
    "unknown_field": (_start() + " colour=red", ["unknown field 'colour'"]),
    "missing_field": (" ".join(w for w in _start().split() if not w.startswith("ply=")),
                      ["missing field(s) ply"]),
    "twice": (_start() + " ply=0", ["'ply' given twice"]),
    "rows": (_with("q0", "9/9/9"), ["q0='9/9/9'", "expected 9 rows"]),
    "row_width": (_with("q1", "9/9/9/9/9/9/9/8/9"), ["q1=", "row 8", "has 8 squares"]),
    "row_char": (_with("q0", "9/9/9/9/9/9/9/9/4o4"), ["q0=", "unexpected 'o'"]),
    "player": (_with("p0", "0,5"), ["p0='0,5'", "position,buttons,income"]),
    "position": (_with("p1", "99,5,0"), ["p1='99,5,0'", "between 0 and 53"]),
    "buttons": (_with("p1", "0,-5,0"), ["p1='0,-5,0'", "buttons"]),
    "top": (_with("top", "2"), ["top='2'", "one of 0, 1"]),
    "bonus": (_with("bonus", "x"), ["bonus='x'", "one of -, 0, 1"]),
    "end": (_with("end", "yes"), ["end='yes'"]),
    "ply": (_with("ply", "-1"), ["ply='-1'", "move count"]),
    "patch": (_with("circle", "*P25,P99"), ["circle='*P25,P99'", "unknown patch 'P99'"]),
    "patch_twice": (_with("circle", "*P25,P25"), ["patch 'P25' listed twice"]),
    "no_token": (_with("circle", "P25,P22"), ["circle='P25,P22'", "no '*'"]),
    "two_tokens": (_with("circle", "*P25,*P22"), ["more than one '*'"]),
    "leather_marks": (_with("leather", "20,26,32,44,50"), ["leather='20,26,32,44,50'",
                                                           "26,32,38,44,50"]),
    "leather_tag": (_with("leather", "26q,32,38,44,50"), ["'26q' is not a mark"]),
    "leather_both": (_with("leather", "26p0,32p1,38,44,50"), ["both players"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_text_names_the_field_and_value(case: str) -> None:
    text, fragments = BAD[case]
    with pytest.raises(ValueError) as info:
        Game.from_text(text, rules="edition2")
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_text_of_another_ruleset_is_refused() -> None:
    text = Game.new("variants/quilt7", seed=1).to_text()
    with pytest.raises(ValueError, match="q0=.*expected 9 rows"):
        Game.from_text(text, rules="edition2")


# --------------------------------------------------------------------------------------------
# patchsim replay --json


def test_replay_json_carries_the_text_of_every_position(tmp_path: Path) -> None:
    rules = load_ruleset("edition2")
    *_, game = play_random(rules, 3, buy_bias=0.5)
    record = game.record()
    path = tmp_path / "game.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    result = CliRunner().invoke(app, ["replay", str(path), "--trace", "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    positions = [g.to_text() for g in replay(GameRecord.from_dict(record))]
    assert [line["text"] for line in lines] == positions
    for line in lines:
        back = Game.from_text(line["text"], rules=rules)
        assert back.summary() == {k: v for k, v in line.items() if k != "text"}
    final = json.loads(CliRunner().invoke(app, ["replay", str(path), "--json"]).stdout)
    assert final["text"] == positions[-1]


def test_a_position_from_text_is_drawn_from_its_quilts() -> None:
    """render: a game set up from text has no history, so covered squares are drawn from the
    bitboards (unlabelled) and match the original game's covered squares."""
    from patchsim.engine.render import quilt_labels

    game = Game.new("edition2", seed=3)
    for _ in range(12):
        game.apply(game.legal_moves()[-1])
    back = Game.from_text(game.to_text(), rules="edition2")
    drawn = quilt_labels(back)
    labels = quilt_labels(game)
    for p in (0, 1):
        covered = [[c != "." for c in row] for row in labels[p]]
        assert [[c == "X" for c in row] for row in drawn[p]] == covered
