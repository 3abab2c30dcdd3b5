"""The rules of docs/rules.md (R1-R11), one named test per worked example, rule and edge case.

Most tests use a tiny custom ruleset (a 3x3 quilt, a short track, a handful of patches) so that
every position can be followed by hand. Squares are named by column letter and 1-based row:
``a1`` is the top-left square, ``b1`` the one right of it, ``a2`` the one below it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from patchsim.engine.game import Game, IllegalMoveError
from patchsim.engine.ruleset import Ruleset, load_ruleset, ruleset_from_dict

# A 3x3 quilt, a track 0..10 without marks, 5 buttons each, no bonus tile. The starting patch
# "Z" is never affordable, so the tests below control every purchase.
TINY: dict[str, Any] = {
    "name": "tiny",
    "board": {"rows": 3, "cols": 3},
    "starting_buttons": 5,
    "track": {"last_space": 10, "income": [], "leather": []},
    "offer_size": 3,
    "bonus": None,
    "empty_square_penalty": 2,
    "start_after": "Z",
    "leather_when_full": "discard",
}

FULL_3X3 = "a1 b1 c1 a2 b2 c2 a3 b3 c3"


def patch(pid: str, shape: str, cost: int = 0, time: int = 1, income: int = 0) -> dict:
    return {"id": pid, "shape": shape, "cost": cost, "time": time, "income": income}


def tiny(*patches: dict, **changes: Any) -> Ruleset:
    """The tiny ruleset with these patches (plus the starting patch Z, last) and changes.

    A mapping value is merged into the section it names: ``track={"leather": [3]}``.
    """
    data = copy.deepcopy(TINY)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    data["patches"] = [*patches, patch("Z", "X", cost=99, time=1)]
    return ruleset_from_dict(data)


def start(rules: Ruleset, *circle: str) -> Game:
    """A new game whose circle is ``circle`` (default: table order), Z last."""
    order = list(circle) if circle else [p.id for p in rules.patches if p.id != "Z"]
    return Game.new(rules, circle=[*order, "Z"])


def play(game: Game, *moves: str) -> Game:
    for move in moves:
        game.apply(move)
    return game


def pass_until_over(game: Game) -> Game:
    while not game.finished:
        game.apply("pass")
    return game


def edition2_circle(*first: str) -> list[str]:
    """An edition-2 circle starting with ``first``, the rest in table order, P00 last
    (unless ``first`` names it)."""
    ids = [p.id for p in load_ruleset("edition2").patches]
    rest = [pid for pid in ids if pid not in first and pid != "P00"]
    return [*first, *rest] + ([] if "P00" in first else ["P00"])


def counts_by_patch(game: Game) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in game.legal_moves():
        if m.kind == "buy":
            counts[m.patch] = counts.get(m.patch, 0) + 1
    return counts


# --------------------------------------------------------------------------------------------
# Worked examples of docs/rules.md (W1-W4)


def test_worked_example_1_turn_order_and_passing() -> None:
    game = Game.new("edition2", seed=0)
    assert (game.position(0), game.position(1)) == (0, 0)
    assert game.to_move == 0  # the start player's token is on top
    game.apply("pass")
    assert game.position(0) == 1 and game.buttons(0) == 6
    assert game.to_move == 1  # now behind
    game.apply("pass")
    assert game.position(1) == 2 and game.buttons(1) == 7
    assert game.to_move == 0


def test_worked_example_2_income_with_a_pass() -> None:
    rules = tiny(patch("G", "X", time=1, income=3), patch("T", "X", time=4),
                 track={"income": [5]})
    game = play(start(rules), "buy G a1", "buy T a1")
    assert (game.position(0), game.position(1)) == (1, 4)
    assert game.income(0) == 3 and game.to_move == 0
    before = game.buttons(0)
    game.apply("pass")  # 1 -> 5: four spaces and the income mark at 5
    assert game.position(0) == 5
    assert game.buttons(0) - before == 4 + 3


def test_worked_example_3_scoring() -> None:
    # Player 0 covers a 2x2 (the bonus window on this 3x3 quilt): 4 covered, 5 empty.
    # Player 1 covers 7 squares: 2 empty. Passing to the end gives 14 and 18 buttons.
    rules = tiny(patch("Q", "XX/XX", cost=1, time=10), patch("H", "XXX/XXX/X..", cost=2, time=5),
                 track={"last_space": 20}, bonus={"square": 2, "points": 7})
    game = play(start(rules), "buy Q a1 b1 a2 b2", "buy H a1 b1 c1 a2 b2 c2 a3")
    pass_until_over(game)
    assert (game.buttons(0), game.buttons(1)) == (14, 18)
    assert game.bonus_owner == 0
    assert (game.empty_squares(0), game.empty_squares(1)) == (5, 2)
    assert game.scores == (14 + 7 - 10, 18 - 4) == (11, 14)
    assert game.winner == 1


def test_worked_example_4_another_turn_while_still_behind() -> None:
    game = Game.new("edition2", circle=edition2_circle("P11", "P25", "P01"))
    game.apply("buy P11 a1 b1 c1 d1 a2 d2")  # time 5
    assert game.position(0) == 5 and game.to_move == 1
    game.apply("buy P25 a1 b1 a2")  # time 1: 0 -> 1, still behind
    assert game.position(1) == 1 and game.to_move == 1
    game.apply("buy P01 a4 b4 c4")  # time 2: 1 -> 3, still behind
    assert game.position(1) == 3 and game.to_move == 1


# --------------------------------------------------------------------------------------------
# Whose turn


def test_turn_goes_to_the_token_further_behind() -> None:
    rules = tiny(patch("A", "X", time=3), patch("B", "X", time=1), patch("C", "X", time=1),
                 patch("D", "X", time=1), patch("E", "X", time=1))
    game = start(rules)
    game.apply("buy A a1")
    assert (game.position(0), game.position(1), game.to_move) == (3, 0, 1)
    game.apply("buy B a1")
    assert (game.position(1), game.to_move) == (1, 1)
    game.apply("buy C b1")
    assert (game.position(1), game.to_move) == (2, 1)


def test_start_player_is_on_top_at_the_start() -> None:
    game = start(tiny(patch("A", "X")))
    assert game.position(0) == game.position(1) == 0
    assert game.to_move == 0


def test_token_arriving_on_an_occupied_space_goes_on_top_and_moves_again() -> None:
    rules = tiny(patch("A", "X", time=2), patch("B", "X", time=2), patch("C", "X", time=1))
    game = play(start(rules), "buy A a1", "buy B a1")
    assert game.position(0) == game.position(1) == 2
    assert game.to_move == 1  # player 1 arrived second: on top
    game.apply("buy C b1")
    assert game.position(1) == 3 and game.to_move == 0


def test_one_player_takes_several_turns_in_a_row() -> None:
    rules = tiny(patch("A", "X", time=6), patch("B", "X"), patch("C", "X"), patch("D", "X"))
    game = play(start(rules), "buy A a1")
    movers = []
    for move in ("buy B a1", "buy C b1", "buy D c1"):
        movers.append(game.to_move)
        game.apply(move)
    assert movers == [1, 1, 1]
    assert game.position(1) == 3 and game.to_move == 1
    game.apply("pass")  # to one space in front of the opponent
    assert game.position(1) == 7 and game.to_move == 0


def test_player_on_the_last_space_takes_no_more_turns() -> None:
    rules = tiny(patch("A", "X", time=10), patch("B", "X"), patch("C", "X"))
    game = play(start(rules), "buy A a1")
    assert game.position(0) == 10 and not game.finished
    for move in ("buy B a1", "buy C b1", "pass"):
        assert game.to_move == 1
        game.apply(move)
    assert game.finished


# --------------------------------------------------------------------------------------------
# The offer and the neutral token


def test_offer_is_the_next_three_after_the_neutral_token() -> None:
    rules = tiny(*(patch(pid, "X") for pid in "ABCDE"))
    game = start(rules, "A", "B", "C", "D", "E")
    assert game.offer == ["A", "B", "C"]
    assert game.remaining == ["A", "B", "C", "D", "E", "Z"]


def test_neutral_token_moves_to_the_bought_patch() -> None:
    rules = tiny(*(patch(pid, "X") for pid in "ABCDE"))
    game = start(rules, "A", "B", "C", "D", "E")
    game.apply("buy B a1")
    assert game.offer == ["C", "D", "E"]
    assert game.remaining == ["C", "D", "E", "Z", "A"]
    game.apply("buy E a1")  # the circle wraps round past Z
    assert game.offer == ["Z", "A", "C"]


def test_offer_shrinks_when_fewer_patches_remain() -> None:
    rules = tiny(patch("A", "X"), patch("B", "X"))
    game = start(rules, "A", "B")
    assert game.offer == ["A", "B", "Z"]
    game.apply("buy A a1")
    assert game.offer == ["B", "Z"]
    game.apply("buy B a1")
    assert game.offer == ["Z"]


def test_patch_beyond_the_offer_cannot_be_bought() -> None:
    rules = tiny(*(patch(pid, "X") for pid in "ABCD"))
    game = start(rules, "A", "B", "C", "D")
    assert "not on offer" in game.illegal_reason("buy D a1")
    assert "D" not in counts_by_patch(game)
    with pytest.raises(IllegalMoveError, match="not on offer"):
        game.apply("buy D a1")


def test_only_affordable_patches_can_be_bought() -> None:
    rules = tiny(patch("A", "X", cost=6), patch("B", "X", cost=5))
    game = start(rules)
    assert set(counts_by_patch(game)) == {"B"}
    assert game.illegal_reason("buy A a1") == "the player cannot afford it"
    game.apply("buy B a1")
    assert game.buttons(0) == 0


def test_only_patches_that_fit_can_be_bought() -> None:
    rules = tiny(patch("F", "XXX/XXX"), patch("G", "XX/XX"), patch("H", "XXX"))
    game = play(start(rules), "buy F a1 b1 c1 a2 b2 c2", "pass")
    assert game.to_move == 0 and game.offer == ["G", "H", "Z"]
    assert set(counts_by_patch(game)) == {"H"}  # only row 3 is free: no 2x2 fits
    assert game.illegal_reason("buy G a2 b2 a3 b3") == "it overlaps a patch already on the quilt"
    assert game.illegal_reason("buy H a3 b3 c3") is None


def test_buying_pays_the_cost_and_moves_by_the_time_and_adds_income() -> None:
    rules = tiny(patch("A", "XX", cost=3, time=4, income=2))
    game = play(start(rules), "buy A a1 b1")
    assert (game.buttons(0), game.position(0), game.income(0)) == (2, 4, 2)
    assert game.empty_squares(0) == 7


def test_pass_is_always_allowed_while_below_the_last_space() -> None:
    game = start(tiny(patch("A", "X")))
    assert game.legal_moves()[0].kind == "pass"
    assert game.illegal_reason("pass") is None


# --------------------------------------------------------------------------------------------
# Rotations and reflections


def test_placements_on_an_empty_9x9_are_distinct_square_sets() -> None:
    rules = load_ruleset("edition2").with_overrides({"starting_buttons": 20})
    game = Game.new(rules, circle=edition2_circle("P04", "P00", "P25"))
    counts = counts_by_patch(game)
    assert counts == {"P04": 64, "P00": 144, "P25": 256}  # 2x2, 1x2, L-tromino
    for pid in counts:
        sets = [frozenset(m.squares) for m in game.legal_moves() if m.patch == pid]
        assert len(set(sets)) == len(sets)
    assert len(game.legal_moves()) == game.legal_move_count() == 1 + 64 + 144 + 256


@pytest.mark.parametrize(("shape", "placements"), [
    ("X", 9),              # 1 orientation x 9 positions
    ("XX", 12),            # 2 orientations x 6
    ("XX/XX", 4),          # 1 x 4
    ("XX/X.", 16),         # 4 x 4
    ("XX./.XX", 8),        # S: 2 rotations x 2 reflections, each 2 positions
    ("XXX/.X.", 8),        # T: 4 orientations x 2 positions
    ("XXX/XX.", 16),       # P: 8 orientations x 2 positions
    (".X./XXX/.X.", 1),    # plus: symmetric
])
def test_placement_count_on_a_3x3_quilt(shape: str, placements: int) -> None:
    game = start(tiny(patch("A", shape)))
    assert counts_by_patch(game) == {"A": placements}


def test_rotated_and_reflected_placements_are_legal() -> None:
    game = start(tiny(patch("S", "XX./.XX")))
    assert game.illegal_reason("buy S a1 b1 b2 c2") is None  # as printed
    assert game.illegal_reason("buy S b1 c1 a2 b2") is None  # mirrored
    assert game.illegal_reason("buy S a1 a2 b2 b3") is None  # rotated
    with pytest.raises(ValueError, match="not a placement"):
        game.apply("buy S a1 b1 c1 c2")


# --------------------------------------------------------------------------------------------
# Passing and the last space


def test_pass_moves_one_space_in_front_and_pays_per_space() -> None:
    game = play(start(tiny(patch("A", "X", time=4))), "buy A a1")
    game.apply("pass")  # player 1: 0 -> 5
    assert game.position(1) == 5 and game.buttons(1) == 5 + 5


def test_pass_is_clamped_at_the_last_space() -> None:
    game = play(start(tiny(patch("A", "X", time=10))), "buy A a1")
    assert game.position(0) == 10
    game.apply("pass")  # would be 11
    assert game.position(1) == 10
    assert game.buttons(1) == 5 + 10  # only the spaces actually moved


def test_buy_is_clamped_at_the_last_space_and_costs_in_full() -> None:
    rules = tiny(patch("A", "X", time=8), patch("B", "X", cost=3, time=6))
    game = play(start(rules), "buy A a1", "pass")  # player 1 to 9
    game.apply("buy B a2")  # player 0: 8 + 6 = 14, stops at 10
    assert game.position(0) == 10
    assert game.buttons(0) == 5 - 3


# --------------------------------------------------------------------------------------------
# Income marks


def test_income_mark_fires_on_reaching_it_and_only_once() -> None:
    rules = tiny(patch("G", "X", time=2, income=2), track={"income": [2]})
    game = play(start(rules), "buy G a1")  # 0 -> 2 reaches the mark
    assert game.buttons(0) == 5 + 2
    game.apply("pass")  # player 1: 0 -> 3 with income 0
    assert game.buttons(1) == 5 + 3
    game.apply("pass")  # player 0: 2 -> 4, the mark at 2 is behind it
    assert game.buttons(0) == 7 + 2


def test_two_income_marks_in_one_pass_pay_twice() -> None:
    rules = tiny(patch("G", "X", time=1, income=2), patch("T", "X", time=5),
                 track={"income": [2, 4]})
    game = play(start(rules), "buy G a1", "buy T a1")
    assert game.to_move == 0
    game.apply("pass")  # 1 -> 6: five spaces, marks 2 and 4
    assert game.buttons(0) == 5 + 5 + 2 * 2


def test_patch_bought_this_turn_counts_for_income() -> None:
    rules = tiny(patch("G", "X", cost=1, time=4, income=2), track={"income": [3]})
    game = play(start(rules), "buy G a1")
    assert game.buttons(0) == 5 - 1 + 2


def test_final_income_is_paid_on_reaching_the_last_space() -> None:
    rules = tiny(patch("G", "X", time=1, income=2), patch("T", "X", time=10),
                 track={"income": [10]})
    game = play(start(rules), "buy G a1", "buy T a1")
    game.apply("pass")  # 1 -> 10 (clamped): nine spaces and the last income
    assert game.position(0) == 10
    assert game.buttons(0) == 5 + 9 + 2


def test_empty_quilt_income_pays_nothing() -> None:
    game = start(tiny(patch("A", "X"), track={"income": [1, 2]}))
    game.apply("pass")
    assert game.buttons(0) == 6


# --------------------------------------------------------------------------------------------
# Leather patches


def test_leather_is_claimed_by_the_first_player_to_reach_it() -> None:
    game = play(start(tiny(patch("A", "X"), track={"leather": [3]})), "pass", "pass")
    assert game.leather_on_track == [3] and game.pending_leather == 0
    game.apply("pass")  # player 0: 1 -> 3, exactly on the mark
    assert game.pending_leather == 1 and game.to_move == 0  # placed at once, though ahead
    assert game.leather_on_track == []
    game.apply("leather b2")
    assert game.empty_squares(0) == 8 and game.to_move == 1
    game.apply("pass")  # player 1 passes the mark: nothing left there
    assert game.pending_leather == 0 and game.empty_squares(1) == 9


def test_leather_costs_no_buttons_and_no_time() -> None:
    game = play(start(tiny(patch("A", "X"), track={"leather": [1]})), "pass")
    before = (game.position(0), game.buttons(0))
    game.apply("leather a1")
    assert (game.position(0), game.buttons(0)) == before


def test_several_leather_patches_in_one_move() -> None:
    rules = tiny(patch("T", "X", time=5), track={"leather": [2, 3, 4]})
    game = play(start(rules), "buy T a1")
    assert game.pending_leather == 3 and game.leather_on_track == []
    play(game, "leather b1", "leather c1")
    assert game.pending_leather == 1 and game.to_move == 0
    game.apply("leather a2")
    assert game.pending_leather == 0 and game.to_move == 1
    assert game.empty_squares(0) == 9 - 4


def test_several_leather_patches_are_taken_in_track_order() -> None:
    # One empty square left after the buy: the earlier mark (2) is placed; the mark at 4 finds
    # the quilt full. Under "stay" it visibly remains on the track.
    rules = tiny(patch("F", "XXX/XXX/XX.", time=5), track={"leather": [2, 4]},
                 leather_when_full="stay")
    game = play(start(rules), "buy F a1 b1 c1 a2 b2 c2 a3 b3")
    assert game.pending_leather == 1
    assert game.leather_on_track == [4]
    game.apply("leather c3")
    assert game.empty_squares(0) == 0


def test_leather_with_a_full_quilt_is_discarded() -> None:
    rules = tiny(patch("F", "XXX/XXX/XXX", time=3), track={"leather": [2]})
    game = play(start(rules), f"buy F {FULL_3X3}")
    assert game.pending_leather == 0
    assert game.leather_on_track == []  # not left for the opponent
    assert game.to_move == 1
    game.apply("pass")  # player 1: 0 -> 4 passes the mark
    assert game.pending_leather == 0 and game.empty_squares(1) == 9


def test_leather_with_a_full_quilt_stays_under_leather_when_full_stay() -> None:
    rules = tiny(patch("F", "XXX/XXX/XXX", time=3), track={"leather": [2]},
                 leather_when_full="stay")
    game = play(start(rules), f"buy F {FULL_3X3}")
    assert game.pending_leather == 0 and game.leather_on_track == [2]
    game.apply("pass")  # player 1 reaches the mark next and takes the patch
    assert game.pending_leather == 1 and game.to_move == 1
    game.apply("leather a1")
    assert game.empty_squares(1) == 8 and game.leather_on_track == []


def test_leather_partly_discarded_when_only_one_square_is_free() -> None:
    rules = tiny(patch("F", "XXX/XXX/XX.", time=5), track={"leather": [2, 4]})
    game = play(start(rules), "buy F a1 b1 c1 a2 b2 c2 a3 b3")
    assert game.pending_leather == 1 and game.leather_on_track == []


def test_pending_leather_blocks_every_other_move() -> None:
    rules = tiny(patch("A", "XX", time=2), patch("B", "X"), track={"leather": [2]})
    game = play(start(rules), "buy A a1 b1")
    assert game.pending_leather == 1
    moves = game.legal_moves()
    assert {m.kind for m in moves} == {"leather"}
    assert len(moves) == game.empty_squares(0) == 7
    assert sorted(m.squares[0] for m in moves) == ["a2", "a3", "b2", "b3", "c1", "c2", "c3"]
    reason = "a claimed leather patch must be placed first"
    assert game.illegal_reason("pass") == reason
    assert game.illegal_reason("buy B c1") == reason
    assert game.summary()["legal_moves"] == 7


def test_leather_must_go_on_an_empty_square() -> None:
    rules = tiny(patch("A", "XX", time=2), track={"leather": [2]})
    game = play(start(rules), "buy A a1 b1")
    assert game.illegal_reason("leather a1") == "the square is already covered"
    with pytest.raises(IllegalMoveError, match="already covered"):
        game.apply("leather b1")


def test_leather_move_without_a_claimed_patch_is_illegal() -> None:
    game = start(tiny(patch("A", "X")))
    assert game.illegal_reason("leather a1") == "no leather patch is waiting to be placed"


def test_game_is_not_over_while_a_leather_patch_is_pending() -> None:
    # Player 1 reaches the end with a full quilt; the leather at 10 stays for player 0.
    rules = tiny(patch("F", "XXX/XXX/XXX", time=10), track={"leather": [10]},
                 leather_when_full="stay")
    game = play(start(rules), "pass", f"buy F {FULL_3X3}")
    assert game.position(1) == 10 and game.leather_on_track == [10]
    game.apply("pass")  # player 0: 1 -> 10 takes the leather patch
    assert game.position(0) == game.position(1) == 10
    assert game.pending_leather == 1 and game.to_move == 0
    assert not game.finished and game.winner is None
    game.apply("leather b2")
    assert game.finished and game.to_move is None


# --------------------------------------------------------------------------------------------
# The bonus tile


def test_bonus_goes_to_the_first_player_to_cover_the_square() -> None:
    rules = tiny(patch("Q", "XX/XX"), patch("R", "XX/XX"), bonus={"square": 2, "points": 7})
    game = start(rules)
    assert game.bonus_owner is None
    game.apply("buy Q a1 b1 a2 b2")
    assert game.bonus_owner == 0
    game.apply("buy R b2 c2 b3 c3")  # player 1 completes a window too, later
    assert game.bonus_owner == 0
    assert game.player(0).bonus and not game.player(1).bonus
    assert game.score(0) - game.score(1) == 7


def test_bonus_window_may_lie_anywhere_on_the_quilt() -> None:
    rules = tiny(patch("Q", "XX/XX"), bonus={"square": 2, "points": 7})
    game = play(start(rules), "buy Q b2 c2 b3 c3")
    assert game.bonus_owner == 0


def test_bonus_is_not_given_for_an_incomplete_square() -> None:
    rules = tiny(patch("L", "XX/X."), patch("M", "X"), bonus={"square": 2, "points": 7})
    game = play(start(rules), "buy L a1 b1 a2", "buy M b2")  # b2 on player 1's quilt
    assert game.bonus_owner is None


def test_bonus_via_a_leather_placement() -> None:
    rules = tiny(patch("L", "XX/X.", time=3), track={"leather": [2]},
                 bonus={"square": 2, "points": 7})
    game = play(start(rules), "buy L a1 b1 a2")
    assert game.bonus_owner is None and game.pending_leather == 1
    game.apply("leather b2")
    assert game.bonus_owner == 0


# --------------------------------------------------------------------------------------------
# Scoring and the end


def test_score_is_buttons_plus_bonus_minus_twice_the_empty_squares() -> None:
    rules = tiny(patch("Q", "XX/XX", cost=2), bonus={"square": 2, "points": 7})
    game = play(start(rules), "buy Q a1 b1 a2 b2")
    assert game.score(0) == 3 + 7 - 2 * 5
    assert game.score(1) == 5 - 2 * 9  # scores can be negative
    assert game.summary()["players"][1]["score"] == -13


def test_income_buttons_on_patches_are_not_points() -> None:
    rules = tiny(patch("G", "X", time=1, income=3))
    game = play(start(rules), "buy G a1")
    assert game.score(0) == game.buttons(0) - 2 * 8


def test_tie_break_goes_to_the_first_player_to_reach_the_last_space() -> None:
    # Only passes: both end with 5 + 10 buttons and an empty quilt. Player 1 moves to the even
    # spaces and so reaches 10 first.
    game = pass_until_over(start(tiny(patch("A", "X"))))
    assert game.scores == (15 - 18, 15 - 18)
    assert game.first_to_finish == 1
    assert game.tie_break_decided
    assert game.winner == 1


def test_tie_break_for_the_start_player() -> None:
    game = pass_until_over(start(tiny(patch("A", "X"), track={"last_space": 9})))
    assert game.scores[0] == game.scores[1]
    assert game.first_to_finish == 0 and game.winner == 0


def test_higher_score_wins_even_when_reaching_the_end_later() -> None:
    rules = tiny(patch("A", "XXX/XXX/XXX", time=1))
    game = play(start(rules), f"buy A {FULL_3X3}")
    pass_until_over(game)
    assert game.first_to_finish == 1
    assert game.score(0) > game.score(1)
    assert game.winner == 0 and not game.tie_break_decided


def test_game_ends_when_both_tokens_are_on_the_last_space() -> None:
    game = start(tiny(patch("A", "X")))
    while not (game.position(0) == 10 or game.position(1) == 10):
        assert not game.finished
        game.apply("pass")
    assert (game.position(0), game.position(1)) == (9, 10)
    assert not game.finished and game.to_move == 0 and game.winner is None
    game.apply("pass")
    assert game.finished
    assert game.to_move is None
    assert len(game.legal_moves()) == 0 and game.legal_move_count() == 0
    assert game.illegal_reason("pass") == "the game is over"
    with pytest.raises(IllegalMoveError, match="the game is over"):
        game.apply("pass")


def test_summary_reports_the_finished_game() -> None:
    game = pass_until_over(start(tiny(patch("A", "X"))))
    summary = game.summary()
    assert summary["finished"] is True
    assert summary["to_move"] is None and summary["winner"] == 1
    assert summary["legal_moves"] == 0 and summary["pending_leather"] == 0
    assert [p["position"] for p in summary["players"]] == [10, 10]


# --------------------------------------------------------------------------------------------
# Component data


def test_p16_costs_no_buttons_and_three_time() -> None:
    spec = load_ruleset("edition2").patch("P16")
    assert (spec.cost, spec.time, spec.income) == (0, 3, 1)


def test_neutral_token_starts_after_p00() -> None:
    game = Game.new("edition2", seed=7)
    assert game.circle[-1] == "P00"
    assert game.offer == list(game.circle[:3])
    assert len(game.remaining) == 33


# --------------------------------------------------------------------------------------------
# Move codes


def test_unknown_move_code_is_illegal_while_the_game_runs() -> None:
    game = start(tiny(patch("A", "X")))
    nplace = len(game.tables.placement_masks)
    for code in (nplace, 10**6, -2 - 9, -1000):
        assert game.illegal_reason(code) is not None
        with pytest.raises(IllegalMoveError):
            game.apply(code)


@pytest.mark.parametrize("when", ["game over", "leather pending"])
def test_unknown_move_code_is_illegal_in_every_position(when: str) -> None:
    rules = tiny(patch("A", "XX", time=2), track={"leather": [2]})
    game = play(start(rules), "buy A a1 b1")
    if when == "game over":
        game.apply("leather c3")
        pass_until_over(game)
    assert game.illegal_reason(10**6) is not None
    with pytest.raises(IllegalMoveError):
        game.apply(10**6)
