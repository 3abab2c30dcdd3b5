"""Every ruleset setting changes play: each test compares games under rulesets that differ only
in that setting (board size, track, marks, buttons, offer, bonus, penalty, patches, start patch,
leather policy), and a user ruleset file extending a shipped one plays."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchsim.engine.game import Game
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset, ruleset_from_dict

# A 5x5 quilt, a track of 12 spaces without marks; "S" is the starting patch, never affordable.
BASE: dict[str, Any] = {
    "name": "base",
    "board": {"rows": 5, "cols": 5},
    "starting_buttons": 5,
    "track": {"last_space": 12, "income": [], "leather": []},
    "offer_size": 3,
    "bonus": None,
    "empty_square_penalty": 2,
    "patches": [
        {"id": "A", "shape": "XX", "cost": 1, "time": 1, "income": 0},
        {"id": "B", "shape": "XXX", "cost": 2, "time": 2, "income": 1},
        {"id": "C", "shape": "XX/XX", "cost": 3, "time": 3, "income": 1},
        {"id": "D", "shape": "XX/X.", "cost": 1, "time": 2, "income": 0},
        {"id": "S", "shape": "X", "cost": 99, "time": 1, "income": 0},
    ],
    "start_after": "S",
    "leather_when_full": "discard",
}


def rules(**changes: Any) -> Ruleset:
    """BASE with changes; a mapping is merged into its section, ``patch_A={...}`` changes
    fields of patch A."""
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        if key.startswith("patch_"):
            entry = next(p for p in data["patches"] if p["id"] == key[len("patch_"):])
            entry.update(value)
        elif isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return ruleset_from_dict(data)


def start(rs: Ruleset) -> Game:
    """A game with the patches in table order, the starting patch last."""
    ids = [p.id for p in rs.patches if p.id != rs.start_after]
    return Game.new(rs, circle=[*ids, rs.start_after])


def buy_counts(game: Game) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in game.legal_moves():
        if m.kind == "buy":
            counts[m.patch] = counts.get(m.patch, 0) + 1
    return counts


def passes_to_the_end(game: Game) -> Game:
    """Both players only pass; claimed leather goes on the first empty square."""
    while not game.finished:
        game.apply(game.legal_moves()[0])
    return game


def test_base_ruleset_is_valid_and_plays() -> None:
    game = passes_to_the_end(start(rules()))
    assert game.finished and game.winner == 1


# --------------------------------------------------------------------------------------------
# board


@pytest.mark.parametrize(("rows", "cols"), [(5, 5), (5, 8), (8, 5), (7, 10), (9, 9), (11, 11)])
def test_board_size(rows: int, cols: int) -> None:
    game = start(rules(board={"rows": rows, "cols": cols}))
    assert game.empty_squares(0) == rows * cols
    assert game.score(0) == 5 - 2 * rows * cols
    dominoes = rows * (cols - 1) + cols * (rows - 1)
    assert buy_counts(game)["A"] == dominoes
    assert game.quilt(0).shape == (rows, cols)
    corner = "abcdefghijk"[cols - 2] + str(rows), "abcdefghijk"[cols - 1] + str(rows)
    assert game.illegal_reason(f"buy A {corner[0]} {corner[1]}") is None
    with pytest.raises(ValueError, match="off the"):
        game.parse_move(f"buy A a{rows + 1} b{rows + 1}")


# --------------------------------------------------------------------------------------------
# track


@pytest.mark.parametrize("last", [3, 12, 40])
def test_last_space(last: int) -> None:
    game = passes_to_the_end(start(rules(track={"last_space": last})))
    assert game.position(0) == game.position(1) == last
    assert game.buttons(0) == game.buttons(1) == 5 + last
    assert game.first_to_finish == (1 if last % 2 == 0 else 0)


@pytest.mark.parametrize("marks", [[], [2], [1, 5, 12], list(range(1, 13))])
def test_income_marks(marks: list[int]) -> None:
    game = start(rules(track={"income": marks}))
    game.apply("buy B a1 b1 c1")  # income 1, cost 2, time 2
    passes_to_the_end(game)
    # player 0 shows 1 button from the start and passes every mark; player 1 has no patches
    assert game.buttons(0) == 5 - 2 + (12 - 2) + len(marks)
    assert game.buttons(1) == 5 + 12


@pytest.mark.parametrize("marks", [[], [6], [2, 4, 6, 8, 10], list(range(1, 13))])
def test_leather_marks(marks: list[int]) -> None:
    game = passes_to_the_end(start(rules(track={"leather": marks})))
    placed = [t for t in game.move_texts() if t.startswith("leather")]
    assert len(placed) == len(marks)
    assert game.leather_on_track == []
    # passing only, player 0 lands on the odd spaces and player 1 on the even ones first
    odd = sum(1 for m in marks if m % 2)
    assert 25 - game.empty_squares(0) == odd
    assert 25 - game.empty_squares(1) == len(marks) - odd


def test_leather_marks_and_income_marks_on_one_space() -> None:
    game = start(rules(track={"income": [3], "leather": [3]}))
    game.apply("buy C a1 b1 a2 b2")  # income 1, time 3
    assert game.pending_leather == 1
    assert game.buttons(0) == 5 - 3 + 1


# --------------------------------------------------------------------------------------------
# buttons and the offer


@pytest.mark.parametrize(("buttons", "affordable"), [
    (0, set()), (1, {"A"}), (2, {"A", "B"}), (5, {"A", "B", "C"}),
])
def test_starting_buttons(buttons: int, affordable: set[str]) -> None:
    game = start(rules(starting_buttons=buttons))
    assert game.buttons(0) == game.buttons(1) == buttons
    assert set(buy_counts(game)) == affordable
    assert game.score(1) == buttons - 2 * 25


@pytest.mark.parametrize("extra", [0, 1, 3])
def test_second_player_buttons(extra: int) -> None:
    """Extra starting buttons for the player who moves second (a balancing variant)."""
    game = start(rules(starting_buttons=2, second_player_buttons=extra))
    assert game.buttons(0) == 2
    assert game.buttons(1) == 2 + extra
    game.apply("pass")  # player 0 moves to 1; player 1 is behind and can now afford more
    assert game.to_move == 1
    assert game.score(1) == 2 + extra - 2 * 25
    edition = load_ruleset("edition2")
    varied = edition.with_overrides({"second_player_buttons": extra})
    assert (varied.content_hash() == edition.content_hash()) == (extra == 0)


def test_second_player_buttons_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="second_player_buttons"):
        rules(second_player_buttons=-1)


@pytest.mark.parametrize(("size", "offer"), [
    (1, ["A"]), (2, ["A", "B"]), (3, ["A", "B", "C"]), (5, ["A", "B", "C", "D", "S"]),
    (9, ["A", "B", "C", "D", "S"]), (200, ["A", "B", "C", "D", "S"]),
])
def test_offer_size(size: int, offer: list[str]) -> None:
    game = start(rules(offer_size=size, starting_buttons=200))
    assert game.offer == offer
    assert set(buy_counts(game)) == set(offer)
    if size < 5:
        assert "not on offer" in game.illegal_reason("buy S a1")


@pytest.mark.parametrize("size", [201, 1_000_000])
def test_offer_size_is_bounded_by_the_largest_patch_set(size: int) -> None:
    # no patch set offers more than 200 patches; a larger offer cost search bots memory and
    # time in proportion (mcts(iterations=5) took 732 MB at 1000000)
    with pytest.raises(RulesetError, match=r"offer_size: must be at most 200 \(the "
                                           rf"most patches a ruleset can have\), got {size}"):
        rules(offer_size=size)


def test_offer_size_after_a_purchase() -> None:
    game = start(rules(offer_size=2))
    game.apply("buy B a1 b1 c1")
    assert game.offer == ["C", "D"]


# --------------------------------------------------------------------------------------------
# bonus and scoring


@pytest.mark.parametrize(("square", "owner"), [(1, 0), (2, 0), (3, None)])
def test_bonus_square_size(square: int, owner: int | None) -> None:
    game = start(rules(bonus={"square": square, "points": 7}))
    game.apply("buy C a1 b1 a2 b2")
    assert game.bonus_owner == owner


@pytest.mark.parametrize("points", [0, 3, 7, 20])
def test_bonus_points(points: int) -> None:
    game = start(rules(bonus={"square": 2, "points": points}))
    game.apply("buy C a1 b1 a2 b2")
    assert game.bonus_owner == 0
    assert game.score(0) == game.buttons(0) - 2 * 21 + points


def test_no_bonus_tile() -> None:
    full = "XXXXX/XXXXX/XXXXX/XXXXX/XXXXX"
    game = start(rules(bonus=None, patch_A={"shape": full}))
    game.apply("buy A " + " ".join(f"{c}{r}" for r in range(1, 6) for c in "abcde"))
    assert game.empty_squares(0) == 0 and game.bonus_owner is None
    with_bonus = start(rules(bonus={"square": 5, "points": 7}, patch_A={"shape": full}))
    with_bonus.apply(game.move_texts()[0])
    assert with_bonus.bonus_owner == 0


def test_shipped_no_bonus_variant_has_no_bonus_tile() -> None:
    assert load_ruleset("variants/no_bonus").bonus_square is None
    assert load_ruleset("edition2").bonus_square == 7


@pytest.mark.parametrize("penalty", [0, 1, 2, 5])
def test_empty_square_penalty(penalty: int) -> None:
    game = start(rules(empty_square_penalty=penalty))
    game.apply("buy B a1 b1 c1")
    assert game.score(0) == 3 - penalty * 22
    assert game.score(1) == 5 - penalty * 25


# --------------------------------------------------------------------------------------------
# patches


def test_patch_id() -> None:
    game = start(rules(patches=[{**p, "id": "Foo"} if p["id"] == "A" else p
                                for p in BASE["patches"]]))
    assert game.offer[0] == "Foo"
    assert game.illegal_reason("buy Foo a1 b1") is None
    with pytest.raises(ValueError, match="unknown patch 'A'"):
        game.parse_move("buy A a1 b1")


@pytest.mark.parametrize(("shape", "placements"), [
    ("XX", 40), ("XXX", 30), ("XX/XX", 16), ("XXXXX", 10), (".X./XXX/.X.", 9),
])
def test_patch_shape(shape: str, placements: int) -> None:
    game = start(rules(patch_A={"shape": shape}))
    assert buy_counts(game)["A"] == placements
    assert sum(1 for _ in game.legal_moves()) == game.legal_move_count()


@pytest.mark.parametrize("cost", [0, 1, 4])
def test_patch_cost(cost: int) -> None:
    game = start(rules(patch_A={"cost": cost}))
    game.apply("buy A a1 b1")
    assert game.buttons(0) == 5 - cost


def test_patch_cost_above_the_buttons_in_hand() -> None:
    game = start(rules(patch_A={"cost": 6}))
    assert "A" not in buy_counts(game)


@pytest.mark.parametrize("time", [0, 1, 4, 30])
def test_patch_time(time: int) -> None:
    game = start(rules(patch_A={"time": time}))
    game.apply("buy A a1 b1")
    assert game.position(0) == min(time, 12)
    assert game.to_move == (0 if time == 0 else 1)


@pytest.mark.parametrize("income", [0, 1, 3])
def test_patch_income(income: int) -> None:
    game = start(rules(patch_A={"income": income, "time": 2}, track={"income": [2]}))
    game.apply("buy A a1 b1")
    assert game.income(0) == income
    assert game.buttons(0) == 5 - 1 + income


def test_patch_set_of_any_size() -> None:
    many = [{"id": f"M{i}", "shape": "X", "cost": 0, "time": 1, "income": 0} for i in range(40)]
    game = passes_to_the_end(Game.new(ruleset_from_dict({**BASE, "patches": many,
                                                          "start_after": "M0"}), seed=3))
    assert len(game.remaining) == 40
    one = [{"id": "Only", "shape": "X", "cost": 0, "time": 1, "income": 0}]
    game = Game.new(ruleset_from_dict({**BASE, "patches": one, "start_after": "Only"}))
    assert game.offer == ["Only"]
    game.apply("buy Only c3")
    assert game.offer == [] and game.legal_moves()[0].kind == "pass"
    assert len(game.legal_moves()) == 1


# --------------------------------------------------------------------------------------------
# start patch and leather policy


@pytest.mark.parametrize("start_after", ["S", "A", "C"])
def test_start_after(start_after: str) -> None:
    rs = rules(start_after=start_after)
    for seed in range(5):
        game = Game.new(rs, seed=seed)
        assert game.circle[-1] == start_after
        assert start_after not in game.offer


def test_edition2_deals_p00_last() -> None:
    rs = load_ruleset("edition2")
    rng = np.random.default_rng(0)
    circles = {tuple(Game.new(rs, seed=rng).circle) for _ in range(5)}
    assert len(circles) == 5  # shuffled
    assert all(c[-1] == "P00" for c in circles)


@pytest.mark.parametrize(("policy", "on_track", "player1_leather"), [
    ("discard", [], 0), ("stay", [2], 1),
])
def test_leather_when_full(policy: str, on_track: list[int], player1_leather: int) -> None:
    rs = rules(board={"rows": 3, "cols": 3}, track={"leather": [2]}, leather_when_full=policy,
               patch_A={"shape": "XXX/XXX/XXX", "time": 3})
    game = start(rs)
    game.apply("buy A a1 b1 c1 a2 b2 c2 a3 b3 c3")
    assert game.leather_on_track == on_track
    game.apply("pass")  # player 1 passes the mark
    assert game.pending_leather == player1_leather
    assert load_ruleset("variants/leather_stays").leather_when_full == "stay"


# --------------------------------------------------------------------------------------------
# a ruleset file of one's own


def test_custom_ruleset_file_extending_edition2_plays(tmp_path: Path) -> None:
    path = tmp_path / "six_buttons.yaml"
    path.write_text("extends: edition2\nstarting_buttons: 6\n", encoding="utf-8")
    rs = load_ruleset(path)
    e2 = load_ruleset("edition2")
    assert rs.name == "six_buttons" and rs.starting_buttons == 6
    assert rs.patches == e2.patches and rs.leather_marks == e2.leather_marks
    game = Game.new(rs, seed=11)
    assert game.buttons(0) == game.buttons(1) == 6
    game.apply("pass")
    assert game.buttons(0) == 7
    rng = np.random.default_rng(11)
    while not game.finished:
        moves = game.legal_moves()
        game.apply(moves[int(rng.integers(len(moves)))])
    assert game.position(0) == game.position(1) == 53
    assert game.winner in (0, 1)
