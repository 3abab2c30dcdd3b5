"""Tests of the reference referee itself: the worked examples of docs/rules.md (W1-W4),
rule details on small custom boards, random games and error messages."""

import copy
import json
import random

import pytest

from .referee import (
    BASE_PATCHES,
    Game,
    IllegalMove,
    edition_rules,
    legal_move_texts,
    parse_square,
    random_record,
    replay_trace,
    square_name,
)


def base_circle(*first):
    """A base-game circle starting with the given ids, the rest in id order, P00 last."""
    rest = [p["id"] for p in BASE_PATCHES if p["id"] not in first and p["id"] != "P00"]
    return list(first) + rest + ["P00"]


def tiny_rules(patches, rows=3, cols=3, last=10, income=(), leather=(), bonus=None, **extra):
    """A small custom ruleset; the last patch in `patches` is the start_after patch."""
    rules = {
        "board": {"rows": rows, "cols": cols},
        "starting_buttons": 5,
        "track": {"last_space": last, "income": list(income), "leather": list(leather)},
        "offer_size": 3,
        "bonus": bonus,
        "empty_square_penalty": 2,
        "patches": patches,
        "start_after": patches[-1]["id"],
        "leather_when_full": "discard",
    }
    rules.update(extra)
    return rules


def patch(pid, shape, cost=0, time=1, income=0):
    return {"id": pid, "shape": shape, "cost": cost, "time": time, "income": income}


def trace_of(rules, circle, moves):
    return replay_trace({"rules": rules, "circle": circle, "moves": moves})


# ----------------------------------------------------------------------------- components


def test_base_patch_check_sums():
    assert len(BASE_PATCHES) == 33
    assert sum(p["cost"] for p in BASE_PATCHES) == 133
    assert sum(p["time"] for p in BASE_PATCHES) == 107
    assert sum(p["income"] for p in BASE_PATCHES) == 38
    assert sum(p["shape"].count("X") for p in BASE_PATCHES) == 166


def test_editions_differ_only_in_leather():
    one, two = edition_rules(1), edition_rules(2)
    assert one["track"]["leather"] == [20, 26, 32, 44, 50]
    assert two["track"]["leather"] == [26, 32, 38, 44, 50]
    one["track"]["leather"] = two["track"]["leather"]
    assert one == two


def test_square_names():
    assert square_name((0, 0)) == "a1"
    assert square_name((8, 8)) == "i9"
    assert square_name((10, 10)) == "k11"
    assert parse_square("a10") == (9, 0)
    assert parse_square("k11") == (10, 10)


# ----------------------------------------------------------------------------- worked examples


def test_example_1_turn_order_and_passing():
    trace = trace_of(edition_rules(1), base_circle(), ["pass", "pass"])
    start, after1, after2 = trace
    assert start["to_move"] == 0  # start player on top of the shared space 0
    assert [p["position"] for p in after1["players"]] == [1, 0]
    assert after1["players"][0]["buttons"] == 6
    assert after1["to_move"] == 1
    assert [p["position"] for p in after2["players"]] == [1, 2]
    assert after2["players"][1]["buttons"] == 7
    assert after2["to_move"] == 0


def test_example_2_income_with_a_pass():
    moves = [
        "buy P16 b1 a2 b2 c2 d2 b3",  # p0 -> 3, income 1
        "pass",  # p1 -> 4
        "buy P22 c4 a5 b5 c5 d5 e5 c6",  # p0 -> 7, income 2 (mark 5 pays 2)
        "pass",  # p1 -> 8
        "buy P11 a7 b7 c7 d7 a8 d8",  # p0 -> 12, income 3 (mark 11 pays 3)
        "pass",  # p1 -> 13
        "buy P26 f1 g1 f2",  # p0 -> 15
        "buy P04 a1 b1 a2 b2",  # p1 -> 18
        "pass",  # p0: 15 -> 19, four spaces, passes mark 17
    ]
    trace = trace_of(edition_rules(2), base_circle("P16", "P22", "P11", "P26", "P04"), moves)
    assert trace[3]["players"][0]["buttons"] == 5 - 1 + 2
    assert trace[5]["players"][0]["buttons"] == 6 - 1 + 3
    before, after = trace[8]["players"][0], trace[9]["players"][0]
    assert trace[8]["to_move"] == 0
    assert (before["position"], after["position"]) == (15, 19)
    assert before["income"] == 3
    assert after["buttons"] - before["buttons"] == 4 + 3


def test_example_3_scoring():
    game = Game(edition_rules(1), base_circle())
    game.position = [53, 53]
    game.first_at_last = 0
    game.buttons = [14, 18]
    game.bonus_holder = 0
    all_squares = [(r, c) for r in range(9) for c in range(9)]
    game.covered = [set(all_squares[5:]), set(all_squares[2:])]
    snap = game.snapshot()
    assert snap["finished"] and snap["to_move"] is None and snap["legal_moves"] == 0
    assert [p["empty_squares"] for p in snap["players"]] == [5, 2]
    assert [p["score"] for p in snap["players"]] == [11, 14]
    assert snap["winner"] == 1


def test_example_4_another_turn_and_stacking():
    moves = [
        "buy P16 b1 a2 b2 c2 d2 b3",  # p0: 0 -> 3
        "buy P25 a1 b1 a2",  # p1: 0 -> 1, still behind
        "buy P29 a4 b4 c4 c5 d5",  # p1 again: 1 -> 4, now ahead
    ]
    trace = trace_of(edition_rules(1), base_circle("P16", "P25", "P26", "P29"), moves)
    assert [t["to_move"] for t in trace] == [0, 1, 1, 0]
    # Stacking: p1 arrives on p0's space and goes on top, so p1 moves again.
    moves = ["buy P16 b1 a2 b2 c2 d2 b3", "buy P31 b1 a2 b2 c2 d2 c3", "buy P13 a5 b5 c5 b6"]
    trace = trace_of(edition_rules(1), base_circle("P16", "P31", "P13"), moves)
    assert [p["position"] for p in trace[2]["players"]] == [3, 1]
    assert [p["position"] for p in trace[3]["players"]] == [3, 3]
    assert trace[3]["to_move"] == 1


# ----------------------------------------------------------------------------- rule details


def test_legal_move_counts_at_start():
    # P01 (XXX): 126 placements; P02 (XXXX): 108; P04 costs 6 > 5 buttons.
    assert trace_of(edition_rules(1), base_circle("P01", "P02", "P04"), [])[0]["legal_moves"] == 235
    # Same shape under two ids counts twice: 4 orientations x 64 positions each.
    assert trace_of(edition_rules(1), base_circle("P25", "P26", "P04"), [])[0]["legal_moves"] == 513


def test_offer_follows_the_neutral_token():
    game = Game(edition_rules(1), base_circle("P01", "P02", "P05", "P10"))
    assert game.offer() == ["P01", "P02", "P05"]
    game.play("buy P02 a1 a2 a3 a4")
    assert game.offer() == ["P05", "P10", "P03"]  # P01 skipped, still in the circle (last)
    assert game.circle[-1] == "P01"


def test_first_leather_claim_by_passing():
    trace = trace_of(edition_rules(1), base_circle(), ["pass"] * 20 + ["leather e5"])
    claim = trace[20]  # move 20 is p1's and reaches 20
    assert claim["players"][1]["position"] == 20
    assert claim["pending_leather"] == 1 and claim["to_move"] == 1 and claim["legal_moves"] == 81
    placed = trace[21]
    assert placed["pending_leather"] == 0 and placed["to_move"] == 0
    assert placed["players"][1]["empty_squares"] == 80 and placed["players"][1]["income"] == 0
    with pytest.raises(IllegalMove, match="move 21"):
        trace_of(edition_rules(1), base_circle(), ["pass"] * 20 + ["pass"])


def test_several_leather_marks_and_income_marks_in_one_move():
    patches = [patch("A", "XX", cost=2, time=3, income=2), patch("B", "X", cost=9)]
    rules = tiny_rules(patches, income=[1, 2, 3], leather=[2, 3])
    trace = trace_of(rules, ["A", "B"], ["buy A a1 b1", "leather c3", "leather a3"])
    assert trace[1]["players"][0]["buttons"] == 5 - 2 + 3 * 2
    assert trace[1]["pending_leather"] == 2 and trace[1]["to_move"] == 0
    assert trace[1]["legal_moves"] == 7
    assert trace[2]["pending_leather"] == 1 and trace[2]["to_move"] == 0
    assert trace[3]["pending_leather"] == 0 and trace[3]["to_move"] == 1
    assert trace[3]["players"][0]["empty_squares"] == 5


@pytest.mark.parametrize("mode", ["discard", "stay"])
def test_leather_on_a_full_quilt(mode):
    patches = [patch("A", "XX", time=3), patch("B", "XXX", cost=9)]
    rules = tiny_rules(patches, rows=1, cols=2, leather=[2], leather_when_full=mode)
    trace = trace_of(rules, ["A", "B"], ["buy A a1 b1", "pass"])
    assert trace[1]["pending_leather"] == 0 and trace[1]["to_move"] == 1
    if mode == "discard":
        assert trace[2]["pending_leather"] == 0
    else:  # it stayed on the track and p1 now claims it
        assert trace[2]["pending_leather"] == 1 and trace[2]["to_move"] == 1


def test_leather_pending_after_quilt_fills():
    patches = [patch("A", "XX", time=3), patch("B", "XXX", cost=9)]
    rules = tiny_rules(patches, rows=1, cols=3, leather=[2, 3])
    trace = trace_of(rules, ["A", "B"], ["buy A a1 b1", "leather c1"])
    # docs/rules.md R8.5: one empty square, so one claim; the second mark is discarded at once
    assert trace[1]["pending_leather"] == 1
    assert trace[2]["pending_leather"] == 0 and trace[2]["to_move"] == 1


def test_bonus_goes_to_the_first_only_and_counts_leather():
    patches = [patch("A", "XX/X.", time=2), patch("C", "XX/XX"), patch("B", "X", cost=9)]
    rules = tiny_rules(patches, leather=[2], bonus={"square": 2, "points": 7})
    # p0 covers three squares of a 2x2 window, claims the leather at 2 and completes it.
    trace = trace_of(rules, ["A", "C", "B"], ["buy A a1 b1 a2", "leather b2", "buy C b2 c2 b3 c3"])
    assert not trace[1]["players"][0]["bonus"]
    assert trace[2]["players"][0]["bonus"]
    assert trace[2]["players"][0]["score"] == 5 + 7 - 2 * 5
    assert not trace[3]["players"][1]["bonus"]  # p1 completes a window too late


def test_clamped_at_last_space_and_tie_break():
    patches = [patch("A", "X", cost=4, time=9), patch("B", "XX", cost=99)]
    rules = tiny_rules(patches, rows=1, cols=1, last=3)
    trace = trace_of(rules, ["A", "B"], ["buy A a1", "pass"])
    assert trace[1]["players"][0]["position"] == 3 and trace[1]["players"][0]["buttons"] == 1
    # p1 passes 0 -> 3 (not to 4: never past the last space), takes 3 buttons; game over.
    assert trace[2]["finished"]
    assert trace[2]["players"][1]["buttons"] == 8
    with pytest.raises(IllegalMove, match="move 3 'pass': the game is already over"):
        trace_of(rules, ["A", "B"], ["buy A a1", "pass", "pass"])
    # Equal scores: the first to reach the last space wins.
    rules = tiny_rules(patches, rows=1, cols=1, last=3)
    trace = trace_of(rules, ["A", "B"], ["pass", "pass", "pass", "pass"])
    assert [p["score"] for p in trace[-1]["players"]] == [8 - 2, 8 - 2]
    assert trace[-1]["winner"] == 0
    assert trace[-2]["to_move"] == 1 and trace[-2]["winner"] is None


def test_player_on_last_space_takes_no_more_turns():
    patches = [patch("A", "X", time=9), patch("C", "X"), patch("B", "XX", cost=99)]
    rules = tiny_rules(patches, rows=2, cols=2, last=8)
    trace = trace_of(rules, ["A", "C", "B"], ["buy A a1", "buy C a1", "pass"])
    assert [t["to_move"] for t in trace] == [0, 1, 1, None]
    assert [p["position"] for p in trace[3]["players"]] == [8, 8]
    assert trace[3]["finished"] and trace[3]["winner"] == 1  # 5 - 6 versus 5 + 7 - 6


# ----------------------------------------------------------------------------- random games


@pytest.mark.parametrize("edition", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_random_games_are_sane(edition, seed):
    rules = edition_rules(edition)
    record = random_record(rules, seed)
    trace = replay_trace(record)
    json.dumps(trace)
    assert len(trace) == len(record["moves"]) + 1
    assert record["circle"][-1] == "P00"
    final = trace[-1]
    assert final["finished"] and final["to_move"] is None and final["legal_moves"] == 0
    assert [p["position"] for p in final["players"]] == [53, 53]
    scores = [p["score"] for p in final["players"]]
    if scores[0] != scores[1]:
        assert final["winner"] == scores.index(max(scores))
    assert sum(p["bonus"] for p in final["players"]) <= 1
    for before, after in zip(trace[:-1], trace[1:], strict=True):
        assert not before["finished"]
        for p in (0, 1):
            b, a = before["players"][p], after["players"][p]
            assert a["position"] >= b["position"] and a["buttons"] >= 0
            assert a["empty_squares"] <= b["empty_squares"] and a["income"] >= b["income"]
            bonus = 7 if a["bonus"] else 0
            assert a["score"] == a["buttons"] + bonus - 2 * a["empty_squares"]
        if after["pending_leather"]:
            assert after["legal_moves"] == after["players"][after["to_move"]]["empty_squares"]


def test_every_listed_move_is_legal_and_counted():
    rng = random.Random(7)
    record = random_record(edition_rules(1), 7)
    game = Game(record["rules"], record["circle"])
    for text in record["moves"]:
        texts = legal_move_texts(game)
        assert text in texts
        assert len(texts) == len(set(texts)) == game.snapshot()["legal_moves"]
        for sample in rng.sample(texts, min(5, len(texts))):
            copy.deepcopy(game).play(sample)
        game.play(text)


@pytest.mark.slow
def test_random_play_statistics_roughly_match_rules():
    games = [random_record(edition_rules(1), 1000 + seed) for seed in range(40)]
    mean_moves = sum(len(r["moves"]) for r in games) / len(games)
    finals = [replay_trace(r)[-1] for r in games]
    scores = [p["score"] for f in finals for p in f["players"]]
    assert 36 < mean_moves < 50  # docs/rules.md F1: about 42.8 moves
    assert -20 < sum(scores) / len(scores) < -2  # docs/rules.md F1: about -11


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("move", "reason"),
    [
        ("buy P05 a1 b1 c1 a2 b2", "not on offer"),
        ("buy P04 a1 b1 a2 b2", "costs 6"),
        ("buy P01 a1 b1 b2", "shape"),
        ("buy P01 a1 b1 c1 d1", "shape"),
        ("buy P01 h1 i1 j1", "off the board"),
        ("buy P01 a1 a1 a2", "named twice"),
        ("buy P01 1a 2a 3a", "malformed"),
        ("leather a1", "no leather"),
        ("jump", "unknown action"),
        ("pass now", "no arguments"),
    ],
)
def test_illegal_moves_name_the_move(move, reason):
    circle = base_circle("P01", "P02", "P04")
    with pytest.raises(IllegalMove, match=f"move 2 '{move}'.*{reason}"):
        trace_of(edition_rules(1), circle, ["pass", move])


def test_overlap_and_bad_circle():
    circle = base_circle("P01", "P02", "P25")
    with pytest.raises(IllegalMove, match="move 3 .*overlaps"):
        trace_of(edition_rules(1), circle, ["buy P01 a1 b1 c1", "pass", "buy P25 b1 b2 c2"])
    with pytest.raises(ValueError, match="circle"):
        trace_of(edition_rules(1), circle[:-1], [])
    with pytest.raises(ValueError, match="start_after"):
        trace_of(edition_rules(1), circle[-1:] + circle[:-1], [])
