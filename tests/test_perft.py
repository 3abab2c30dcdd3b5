"""Perft: the number of legal move sequences of a given length from fixed positions, pinned
for every shipped ruleset, as chess engines pin theirs. Any change to move generation or move
application (a placement too many, a mark that fires one space late) changes these numbers.

The numbers come from the compiled counter (core.perft, through Game.perft); the depth-2
ones are checked here against the Python API (Game.legal_moves / Game.apply) as well. When a
number changes on purpose (a rules fix), recompute it with Game.perft and say why in the
commit."""

from __future__ import annotations

import pytest

from patchsim.engine.game import Game
from patchsim.engine.ruleset import shipped_rulesets

DEAL = 2024  # the deal of the start positions: Game.new(name, seed=DEAL)

# the 9x9 rulesets share the patch table, so the start position and its first three plies
START_9X9 = (347, 95_865, 8_155_935)
START = {
    "edition1": START_9X9,
    "edition2": START_9X9,
    "variants/leather_stays": START_9X9,
    "variants/no_bonus": START_9X9,
    "variants/quilt11": (969, 999_713, 588_087_713),
    "variants/quilt7": (71, 13_861, 2_114_087),
}

# mid-game positions (from random games on the deal above) in the position text form
_MID_9X9_QUILTS = ("q0=3xxxx2/9/9/7x1/6xx1/6xx1/5xxx1/6x2/9 "
                   "q1=9/7x1/7x1/1x5x1/xxx1xx3/1x2x4/1x2x4/4x4/3xxx3 ")
_MID_9X9_REST = ("p0=14,4,3 p1=15,3,3 top=1 circle=P22,P30,P28,P23,P19,P26,P08,P07,P32,P06,"
                 "P12,P03,*P17,P18,P11,P10,P05,P27,P29,P15,P24,P31,P09,P04,P20,P00 "
                 "leather={leather} bonus=- end=- ply=12")
MID_EDITION2 = _MID_9X9_QUILTS + _MID_9X9_REST.format(leather="26,32,38,44,50")
MID = {
    # the same position; edition 1's leather mark at 20 lies in the next moves' reach
    "edition1": (_MID_9X9_QUILTS + _MID_9X9_REST.format(leather="20,26,32,44,50"),
                 (650, 88_324, 12_218_329)),
    "edition2": (MID_EDITION2, (650, 153_774, 23_392_568)),
    "variants/leather_stays": (MID_EDITION2, (650, 153_774, 23_392_568)),
    "variants/no_bonus": (MID_EDITION2, (650, 153_774, 23_392_568)),
    "variants/quilt11": (
        "q0=3xx6/3x7/3x1x5/2xxxx5/5xx4/3xxx2x1x/4x3xxx/3xx3x1x/11/11/11 "
        "q1=11/5x5/2xxxx5/2x8/11/1x9/xx9/1x5x3/7x3/7xx2/2xxx6 p0=11,4,0 p1=12,4,1 top=0 "
        "circle=P11,P28,X24,P02,P03,P21,X12,X11,*P04,X17,X06,P27,X05,X29,P22,P09,P23,P29,X08,"
        "X14,P20,P16,P14,X15,P12,X04,X07,X23,X20,X21,X02,P19,P18,P08,P26,P07,P25,X09,P06,P15,"
        "P05,P32,P00 leather=33,39,48,57,63,69,75 bonus=- end=- ply=12",
        (357, 222_578, 446_417)),
    "variants/quilt7": (
        "q0=7/7/2x4/1xx1xx1/1xxxxx1/1xx1xx1/1xxxxxx q1=7/1x5/xx3x1/1x2xx1/xx2xx1/xx1xx2/1xxx3 "
        "p0=19,4,3 p1=16,4,0 top=1 circle=P04,P19,P14,P31,P16,P32,P17,P25,P27,P21,P03,*P02,"
        "P20,P00 leather=19x,25,30 bonus=- end=- ply=17",
        (82, 1_673, 6_339)),
}

# a claimed leather patch waiting to be placed (edition 1, player 0 claimed the mark at 20)
LEATHER_PENDING = (
    "q0=xxx6/1xxxx4/1x7/2x2x3/2xxxxx2/5x2x/3x1xxxx/1xxxxx3/3x5 "
    "q1=4x4/4xxxx1/1x5x1/1xx6/5xxx1/1x2xxx2/1x2x4/1x1xxx3/1x7 p0=23,6,6 p1=18,3,1 top=0 "
    "circle=P28,P23,P19,P21,P07,P32,P06,P12,P03,P17,*P11,P10,P05,P27,P29,P15,P24,P31,P09,P04,"
    "P20,P00 leather=20p0,26,32,44,50 bonus=- end=- ply=15")
LEATHER_PENDING_PERFT = (53, 6_201, 241_028)

SLOW = {"variants/quilt11"}  # depth 3 from its start is 588 million sequences (seconds)


def python_perft2(game: Game) -> int:
    """Depth-2 perft through the Python API only."""
    total = 0
    for move in game.legal_moves():
        child = game.copy()
        child.apply(move)
        total += len(child.legal_moves())
    return total


def test_every_shipped_ruleset_is_pinned() -> None:
    assert set(START) == set(MID) == set(shipped_rulesets())


def _cases(table: dict, slow: set[str]):
    return [pytest.param(name, marks=pytest.mark.slow) if name in slow else name
            for name in sorted(table)]


@pytest.mark.parametrize("name", _cases(START, set()))
def test_perft_from_the_start_depth_1_and_2(name: str) -> None:
    game = Game.new(name, seed=DEAL)
    assert (game.perft(1), game.perft(2)) == START[name][:2]
    assert len(game.legal_moves()) == START[name][0]
    assert python_perft2(game) == START[name][1]


@pytest.mark.parametrize("name", _cases(START, SLOW))
def test_perft_from_the_start_depth_3(name: str) -> None:
    assert Game.new(name, seed=DEAL).perft(3) == START[name][2]


@pytest.mark.parametrize("name", sorted(MID))
def test_perft_from_a_mid_game_position(name: str) -> None:
    text, expected = MID[name]
    game = Game.from_text(text, rules=name)
    assert game.to_text() == text
    assert (game.perft(1), game.perft(2), game.perft(3)) == expected
    assert python_perft2(game) == expected[1]


def test_perft_with_a_leather_patch_pending() -> None:
    game = Game.from_text(LEATHER_PENDING, rules="edition1")
    assert game.pending_leather == 1 and game.to_move == 0
    assert tuple(game.perft(d) for d in (1, 2, 3)) == LEATHER_PENDING_PERFT
    assert LEATHER_PENDING_PERFT[0] == game.empty_squares(0)  # one move per empty square
    assert python_perft2(game) == LEATHER_PENDING_PERFT[1]


def test_perft_leaves_the_position_alone_and_counts_the_trivial_depths() -> None:
    game = Game.new("edition2", seed=DEAL)
    before = game.state.copy()
    assert game.perft(0) == 1
    game.perft(3)
    assert (game.state == before).all()


def test_perft_of_a_finished_game_is_zero() -> None:
    game = Game.new("edition2", seed=DEAL)
    while not game.finished:
        game.apply(game.legal_moves()[0])  # pass, or a waiting leather patch on a free square
    assert (game.perft(0), game.perft(1), game.perft(2)) == (1, 0, 0)
