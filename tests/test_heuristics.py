"""Pinned behaviour of the bot heuristics (patchsim.bots.heuristics) and of the scripted
strategies built on them (patchsim.bots.scripted), on hand-built positions.

Positions are built through the public Game API (a chosen patch circle, moves in record
notation) or by writing quilt bitboards, buttons and track positions into a state array.
Squares are named as in game records: column letter, then row from the top ("a1" is the
top-left corner, "i9" the bottom-right one of the 9x9 quilt).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from patchsim.bots import heuristics as H
from patchsim.bots import scripted
from patchsim.bots.registry import make_bot
from patchsim.engine import core
from patchsim.engine.game import Game, parse_move
from patchsim.engine.ruleset import Ruleset, load_ruleset, ruleset_from_dict
from patchsim.engine.tables import Tables, compile_ruleset, parse_square, split, square_name

MASK64 = (1 << 64) - 1

# The circle that Game.new("edition2", seed=0) deals, written out so that the tests below do
# not depend on the dealing code.
SEED0_CIRCLE = (
    "P30", "P15", "P04", "P24", "P02", "P17", "P26", "P07", "P31", "P10", "P21", "P18", "P19",
    "P28", "P12", "P08", "P23", "P13", "P25", "P11", "P16", "P27", "P22", "P06", "P20", "P05",
    "P09", "P03", "P32", "P01", "P14", "P29", "P00",
)


# --- helpers ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def e2() -> Ruleset:
    return load_ruleset("edition2")


def tables_of(rules: Ruleset | str) -> Tables:
    return compile_ruleset(rules if isinstance(rules, Ruleset) else load_ruleset(rules))


def words(tables: Tables, names: Sequence[str]) -> tuple[np.int64, np.int64]:
    """The (lo, hi) bitboard words of a quilt with exactly the named squares covered."""
    m = 0
    for n in names:
        m |= 1 << parse_square(n, tables.rows, tables.cols)
    lo, hi = split(m)
    return np.int64(lo), np.int64(hi)


def names_of(tables: Tables, lo, hi) -> list[str]:
    """Record names of the squares set in a (lo, hi) pair (signed or unsigned words)."""
    m = (int(lo) & MASK64) | ((int(hi) & MASK64) << 64)
    return [square_name(s, tables.cols) for s in range(tables.rows * tables.cols) if m >> s & 1]


def holes(tables: Tables, covered: Sequence[str]) -> tuple[int, list[str]]:
    lo, hi = words(tables, covered)
    hlo, hhi = H.hole_mask(tables.tab, lo, hi)
    return int(H.count_holes(tables.tab, lo, hi)), names_of(tables, hlo, hhi)


def all_squares(tables: Tables) -> list[str]:
    return [square_name(s, tables.cols) for s in range(tables.rows * tables.cols)]


def all_but(tables: Tables, empty: Sequence[str]) -> list[str]:
    return [s for s in all_squares(tables) if s not in set(empty)]


def circle_with(rules: Ruleset, offer: Sequence[str]) -> list[str]:
    """A circle whose first patches (the offer) are ``offer``; the rest in table order, the
    starting patch last."""
    ids = [p.id for p in rules.patches]
    rest = [i for i in ids if i not in offer and i != rules.start_after]
    last = [] if rules.start_after in offer else [rules.start_after]
    return [*offer, *rest, *last]


def set_quilt(game: Game, p: int, covered: Sequence[str]) -> None:
    lo, hi = words(game.tables, covered)
    game.state[core.S_QLO + p] = lo
    game.state[core.S_QHI + p] = hi


def choose(spec: str, game: Game) -> str:
    """The move a bot picks, through the bot protocol, as record text."""
    move = make_bot(spec).choose(game.copy(), game.legal_moves(), np.random.default_rng(0))
    assert move in game.legal_moves()
    return str(move)


# --- one-square holes -------------------------------------------------------------------------
# An empty square whose four neighbours are covered or off the quilt: only a leather patch can
# fill it (docs/rules.md R1.8), so the placement heuristic avoids making one.
@pytest.mark.parametrize("rules", ["edition2", "variants/quilt7", "variants/quilt11"])
def test_no_holes_on_an_empty_quilt(rules: str) -> None:
    t = tables_of(rules)
    assert holes(t, []) == (0, [])


def test_full_quilt_has_no_holes(e2: Ruleset) -> None:
    t = tables_of(e2)
    assert holes(t, all_squares(t)) == (0, [])


def test_one_square_hole_in_the_first_row(e2: Ruleset) -> None:
    t = tables_of(e2)
    # b1: a1 and c1 beside it, b2 below it, the top border above it
    assert holes(t, ["a1", "c1", "b2"]) == (1, ["b1"])


def test_one_square_hole_in_the_first_row_made_by_a_purchase(e2: Ruleset) -> None:
    g = Game.new(e2, circle=circle_with(e2, ["P10", "P01", "P02"]))
    g.apply("buy P10 d1 f1 d2 e2 f2")  # the U shape, open side up against the top border
    lo, hi = g.state[core.S_QLO], g.state[core.S_QHI]
    assert H.count_holes(g.tab, lo, hi) == 1
    assert names_of(g.tables, *H.hole_mask(g.tab, lo, hi)) == ["e1"]


@pytest.mark.parametrize(("covered", "hole"), [
    (["b1", "a2"], "a1"),  # top-left corner: two borders
    (["h1", "i2"], "i1"),  # top-right corner
    (["h9", "i8"], "i9"),  # bottom-right corner
    (["a8", "b9"], "a9"),  # bottom-left corner
    (["a4", "a6", "b5"], "a5"),  # left border
    (["i4", "i6", "h5"], "i5"),  # right border
    (["d9", "f9", "e8"], "e9"),  # bottom border (the high word of the bitboard)
    (["a7", "a9", "b8"], "a8"),  # square 63: its neighbours below and to the right are in
    (["h8", "g9", "i9"], "h9"),  # the high word; h9 is surrounded by three and the border
])
def test_border_square_surrounded_on_its_other_sides_is_a_hole(e2: Ruleset, covered, hole):
    assert holes(tables_of(e2), covered) == (1, [hole])


@pytest.mark.parametrize("covered", [
    ["a1", "c1"],  # b1 still open below
    ["a4", "b5"],  # a5 still open below
    ["a1", "d1", "b2", "c2"],  # b1 c1: a two-square gap is not a one-square hole
    ["d5", "f5", "e4"],  # e5 open below
])
def test_square_with_an_open_side_is_not_a_hole(e2: Ruleset, covered) -> None:
    assert holes(tables_of(e2), covered) == (0, [])


def test_interior_hole_and_its_count(e2: Ruleset) -> None:
    t = tables_of(e2)
    # e5 (interior) and a1 (corner) are holes; c5 (c4, c6, d5 covered) is open to the left
    assert holes(t, ["e4", "d5", "f5", "e6", "b1", "a2", "c4", "c6"]) == (2, ["a1", "e5"])


@pytest.mark.parametrize("rules", ["edition2", "variants/quilt7", "variants/quilt11"])
def test_hole_mask_matches_the_definition_on_random_quilts(rules: str) -> None:
    """Against a square-by-square reading of the definition (every orthogonal neighbour
    covered or off the quilt), on 200 random quilts of every density."""
    t = tables_of(rules)
    rows, cols = t.rows, t.cols
    rnd = random.Random(2026)
    for _ in range(200):
        density = rnd.random()
        cov = {(r, c) for r in range(rows) for c in range(cols) if rnd.random() < density}
        expected = [square_name(r * cols + c, cols) for r in range(rows) for c in range(cols)
                    if (r, c) not in cov and all(
                        (rr, cc) in cov or not (0 <= rr < rows and 0 <= cc < cols)
                        for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)))]
        got = holes(t, [square_name(r * cols + c, cols) for r, c in cov])
        assert got == (len(expected), expected)


# --- the bonus window -------------------------------------------------------------------------
# Any 7x7 block of the quilt, fully covered, wins the bonus (docs/rules.md R9.1); best_window
# counts the covered squares of the fullest block.
def test_best_window_finds_the_fullest_window(e2: Ruleset) -> None:
    t = tables_of(e2)
    block = [f"{c}{r}" for c in "abc" for r in (1, 2, 3)]  # a1..c3
    corner = [f"{c}{r}" for c in "ghi" for r in (7, 8, 9)]  # g7..i9
    lo, hi = words(t, [*block, "d1", *corner])
    # window a1..g7 holds the block, d1 and g7 (11); window c3..i9 holds c3 and the corner (10);
    # window b2..h8 holds 4 + 4
    assert H.best_window(t.tab, lo, hi) == 11
    lo, hi = words(t, [*block, *corner, "i6", "i5"])
    assert H.best_window(t.tab, lo, hi) == 12  # now window c3..i9: c3, corner, i5, i6


def test_best_window_empty_full_and_without_bonus() -> None:
    t = tables_of("edition2")
    assert H.best_window(t.tab, *words(t, [])) == 0
    assert H.best_window(t.tab, *words(t, all_squares(t))) == 49
    t7 = tables_of("variants/quilt7")  # a 5x5 bonus square
    assert H.best_window(t7.tab, *words(t7, all_squares(t7))) == 25
    t11 = tables_of("variants/quilt11")  # 9x9 on 11x11: squares in both words
    assert H.best_window(t11.tab, *words(t11, all_squares(t11))) == 81
    nb = tables_of("variants/no_bonus")
    assert H.best_window(nb.tab, *words(nb, all_squares(nb))) == 0


# --- placement --------------------------------------------------------------------------------
def test_contact_counts_border_sides_and_covered_neighbours(e2: Ruleset) -> None:
    t = tables_of(e2)

    def contact(move: str, covered: Sequence[str]) -> int:
        return int(H.contact(t.tab, *words(t, covered), parse_move(move, t).code))

    assert contact("buy P00 a1 b1", []) == 3  # a1: top and left border; b1: top border
    assert contact("buy P00 h9 i9", []) == 3
    assert contact("buy P00 e5 f5", []) == 0  # floating in the middle
    assert contact("buy P00 e5 f5", ["d5"]) == 1
    assert contact("buy P00 e5 f5", ["d5", "g5", "e4", "f4", "e6", "f6"]) == 6
    assert contact("buy P00 e5 f5", ["d4", "g6", "a1"]) == 0  # diagonal neighbours do not count
    assert contact("buy P00 a1 b1", ["c1", "a2", "b2"]) == 6


def test_placement_score_terms(e2: Ruleset) -> None:
    t = tables_of(e2)
    g = parse_move("buy P00 a1 b1", t).code
    empty = words(t, [])
    # contact 3, no hole created, best window 2 squares x 0.3 (the printed 7-point bonus)
    assert H.placement_score(t.tab, *empty, 0, g, 1.0, 0.5, 0.3, True) == pytest.approx(3.6)
    assert H.placement_score(t.tab, *empty, 0, g, 1.0, 0.5, 0.3, False) == pytest.approx(3.0)
    # P00 on b1 c1 with a2 covered: contact 2 (the top border), and it leaves a1 as a
    # one-square hole: 2 - 0.5
    cov = words(t, ["a2"])
    g2 = parse_move("buy P00 b1 c1", t).code
    assert H.placement_score(t.tab, *cov, 0, g2, 1.0, 0.5, 0.0, True) == pytest.approx(1.5)
    assert H.placement_score(t.tab, *cov, 0, g2, 1.0, 0.0, 0.0, True) == pytest.approx(2.0)


def test_best_placement_prefers_contact_with_patches_and_border(e2: Ruleset) -> None:
    t = tables_of(e2)
    g = Game.new(e2, circle=circle_with(e2, ["P01", "P02", "P03"]))
    # a pocket d5 e5 f5 walled in on all sides by covered squares
    set_quilt(g, 0, ["d4", "e4", "f4", "d6", "e6", "f6", "c5", "g5"])
    p01 = t.patch_index["P01"]
    gid, score = H.best_placement(g.state, t.tab, 0, p01, 1.0, 0.0, 0.0, False)
    assert gid == parse_move("buy P01 d5 e5 f5", t).code
    assert score == pytest.approx(8.0)  # 8 covered neighbours; a corner would give 4
    # with first_fit the first placement that fits is taken, whatever it scores
    gid, score = H.best_placement(g.state, t.tab, 0, p01, 1.0, 0.0, 0.0, True)
    assert gid == parse_move("buy P01 a1 b1 c1", t).code
    assert score == pytest.approx(4.0)
    # and the scripted bots put it into the pocket too (with 2 buttons only P01 is affordable)
    g.state[core.S_BTN] = 2
    assert choose("greedy", g) == "buy P01 d5 e5 f5"
    assert choose("area", g) == "buy P01 d5 e5 f5"


def test_best_placement_on_an_empty_quilt_takes_a_corner(e2: Ruleset) -> None:
    t = tables_of(e2)
    g = Game.new(e2, circle=circle_with(e2, ["P00", "P01", "P02"]))
    gid, score = H.best_placement(g.state, t.tab, 0, t.patch_index["P00"], 1.0, 0.0, 0.0, False)
    assert gid == parse_move("buy P00 a1 b1", t).code
    assert score == pytest.approx(3.0)


def test_best_placement_of_a_patch_that_does_not_fit(e2: Ruleset) -> None:
    t = tables_of(e2)
    g = Game.new(e2, circle=circle_with(e2, ["P03", "P01", "P02"]))
    set_quilt(g, 0, all_but(t, ["a1", "b1", "c1", "d1"]))  # four in a row left; P03 is five
    gid, score = H.best_placement(g.state, t.tab, 0, t.patch_index["P03"], 1.0, 0.5, 0.3, False)
    assert (gid, score) == (-1, 0.0)


def test_greedy_avoids_making_a_hole(e2: Ruleset) -> None:
    g = Game.new(e2, circle=circle_with(e2, ["P16", "P11", "P24"]))
    # P16 (a cross with a long arm) against the top-left corner: b1 a2 ... would wall in a1
    assert choose("first-fit", g) == "buy P16 b1 a2 b2 c2 d2 b3"
    assert choose("greedy", g) == "buy P16 c1 a2 b2 c2 d2 c3"


def scripted_placements(spec: str, patches: Sequence[str]) -> list[tuple[int, int]]:
    """Place ``patches`` one after another on an empty edition-2 quilt where ``spec``'s
    placement heuristic puts them; (covered squares, fullest window) after each."""
    rs = load_ruleset("edition2")
    t = compile_ruleset(rs)
    bot = make_bot(spec)
    c, h, w = (bot.params[scripted.P_CONTACT], bot.params[scripted.P_HOLES],
               bot.params[scripted.P_WINDOW])
    state = core.new_state(t.tab, np.array([t.patch_index[i] for i in SEED0_CIRCLE]))
    out = []
    for pid in patches:
        g, _ = H.best_placement(state, t.tab, 0, t.patch_index[pid], c, h, w, False)
        assert g >= 0, pid
        state[core.S_QLO] |= t.tab[t.tab[core.O_PLACE_LO] + g]
        state[core.S_QHI] |= t.tab[t.tab[core.O_PLACE_HI] + g]
        lo, hi = state[core.S_QLO], state[core.S_QHI]
        out.append((int(core.popcount64(lo) + core.popcount64(hi)),
                    int(H.best_window(t.tab, lo, hi))))
    return out


def test_bonus_placement_keeps_the_same_patches_in_one_window() -> None:
    seq = ["P23", "P06", "P22"]
    # bonus (window=2.0): all 21 squares inside one 7x7 window
    assert scripted_placements("bonus", seq) == [(8, 8), (14, 14), (21, 21)]
    # area (window=0.3, the default): the third patch goes partly outside the window
    assert scripted_placements("area", seq) == [(8, 8), (14, 14), (21, 19)]


def window_trajectory(spec: str, buys: int) -> list[tuple[int, int]]:
    """Self-play of ``spec`` on a fixed deal: seat 0's (covered, fullest window) after each of
    its first ``buys`` purchases."""
    g = Game.new("edition2", circle=SEED0_CIRCLE)
    bot = make_bot(spec)
    rng = np.random.default_rng(0)
    out: list[tuple[int, int]] = []
    while not g.finished and len(out) < buys:
        p = g.to_move
        move = bot.choose(g.copy(), g.legal_moves(), rng)
        g.apply(move)
        if p == 0 and move.kind == "buy":
            lo, hi = g.state[core.S_QLO], g.state[core.S_QHI]
            out.append((int(core.popcount64(lo) + core.popcount64(hi)),
                        int(H.best_window(g.tab, lo, hi))))
    return out


def test_bonus_fills_one_window_first_in_a_game() -> None:
    bonus = window_trajectory("bonus", 5)
    assert [cov - win for cov, win in bonus] == [0, 0, 0, 0, 0], bonus
    area = window_trajectory("area", 5)
    # area does not need to: by its fifth purchase four squares lie outside its best window
    assert [cov - win for cov, win in area] == [0, 0, 3, 3, 4], area


# --- leather ----------------------------------------------------------------------------------
# A claimed leather patch is placed at once by its claimer on any empty square
# (docs/rules.md R8.3); the heuristic chooses which.
def with_pending_leather(game: Game, p: int) -> Game:
    """The position with one claimed leather patch (the first mark's) waiting for p."""
    game.state[core.S_PENDING] = 1
    game.state[core.S_PENDING_PLAYER] = p
    game.state[core.S_PENDING_MARKS] = 1
    game.state[core.S_LEATHER_TAKEN] = 1
    return game


def test_leather_goes_into_a_one_square_hole(e2: Ruleset) -> None:
    t = tables_of(e2)
    g = with_pending_leather(Game.new(e2, seed=0), 0)
    set_quilt(g, 0, ["e4", "d5", "f5", "e6"])
    assert int(H.leather_square(g.state, t.tab, 0)) == parse_square("e5", 9, 9)
    assert choose("greedy", g) == "leather e5"
    assert choose("bonus", g) == "leather e5"
    assert choose("mcts(iterations=5)", g) == "leather e5"
    assert choose("first-fit", g) == "leather a1"  # the baseline: first empty square


def test_leather_without_a_hole_goes_where_most_sides_are_covered(e2: Ruleset) -> None:
    t = tables_of(e2)
    g = with_pending_leather(Game.new(e2, seed=0), 1)
    assert int(H.leather_square(g.state, t.tab, 1)) == 0  # empty quilt: the corner a1
    set_quilt(g, 1, ["e4", "d5", "f5"])  # e5: three covered sides, open below
    assert int(H.leather_square(g.state, t.tab, 1)) == parse_square("e5", 9, 9)


def test_leather_claimed_in_a_game_fills_the_hole_in_the_first_row(e2: Ruleset) -> None:
    rules = ruleset_from_dict({"name": "leather-at-2", "extends": "edition2",
                               "track": {"leather": [2]}})
    g = Game.new(rules, circle=circle_with(rules, ["P10", "P01", "P02"]))
    g.apply("buy P10 d1 f1 d2 e2 f2")  # time 2: crosses the leather mark at 2
    assert (g.pending_leather, g.to_move) == (1, 0)
    assert choose("greedy", g) == "leather e1"
    assert choose("area", g) == "leather e1"
    g.apply(choose("greedy", g))
    assert H.count_holes(g.tab, g.state[core.S_QLO], g.state[core.S_QHI]) == 0


# --- income marks -----------------------------------------------------------------------------
@pytest.mark.parametrize(("pos", "left"), [
    (0, 9), (4, 9),
    (5, 8),  # on a mark: it has fired (docs/rules.md R6.1), eight still ahead
    (6, 8), (46, 2), (47, 1), (52, 1),
    (53, 0),  # on the last space, which carries the last mark (R7.4)
])
def test_income_marks_left_edition2(e2: Ruleset, pos: int, left: int) -> None:
    assert H.income_marks_left(tables_of(e2).tab, pos) == left


def test_income_marks_left_past_the_last_mark() -> None:
    rules = ruleset_from_dict({"name": "early-income", "extends": "edition2",
                               "track": {"income": [5, 10]}})
    tab = compile_ruleset(rules).tab
    assert [int(H.income_marks_left(tab, pos)) for pos in (0, 5, 9, 10, 11, 30, 53)] == \
        [2, 1, 1, 0, 0, 0, 0]


# --- scripted strategies: greedy and first-fit ------------------------------------------------
def test_greedy_passes_when_nothing_is_affordable(e2: Ruleset) -> None:
    g = Game.new(e2, circle=circle_with(e2, ["P19", "P06", "P32"]))  # all cost 10
    assert choose("greedy", g) == "pass"
    assert choose("first-fit", g) == "pass"
    assert len(g.legal_moves()) == 1


def test_greedy_passes_when_no_patch_pays() -> None:
    """Late in a game where empty squares cost nothing, a 10-button patch that pays 2-3
    buttons of income once more is a loss: greedy passes though it could buy. Under the
    printed penalty (2 per empty square) the same purchase pays and greedy buys."""
    offer = ["P19", "P06", "P32"]  # cost 10; income 2, 3, 3; 5, 6, 5 squares
    picks = {}
    for penalty in (0, 2):
        rules = ruleset_from_dict({"name": f"penalty-{penalty}", "extends": "edition2",
                                   "empty_square_penalty": penalty})
        g = Game.new(rules, circle=circle_with(rules, offer))
        g.state[core.S_POS] = 48  # one income mark (53) ahead
        g.state[core.S_POS + 1] = 50
        g.state[core.S_BTN] = 20
        assert g.to_move == 0 and len(g.legal_moves()) > 1
        picks[penalty] = choose("greedy", g)
    assert picks[0] == "pass"
    # (3 + 6 x 2 - 10) / (5 + 1) for P06 beats (2 + 10 - 10) / 4 for P19 and 3 / 5 for P32
    assert picks[2] == "buy P06 a1 b1 c1 d1 a2 b2"


def test_greedy_buys_a_patch_that_clearly_pays(e2: Ruleset) -> None:
    # P16: free, one button of income for nine marks, six squares: (9 + 12) / 4 per space
    g = Game.new(e2, circle=circle_with(e2, ["P11", "P24", "P16"]))
    assert choose("greedy", g) == "buy P16 c1 a2 b2 c2 d2 c3"
    assert H.income_marks_left(g.tab, 0) == 9


def test_first_fit_takes_the_first_affordable_patch(e2: Ruleset) -> None:
    # P19 (10 buttons) cannot be paid with 5; P22 is the first affordable one
    g = Game.new(e2, circle=circle_with(e2, ["P19", "P22", "P16"]))
    assert choose("first-fit", g) == "buy P22 c1 a2 b2 c2 d2 e2 c3"
    assert str(g.legal_moves()[1]) == "buy P22 c1 a2 b2 c2 d2 e2 c3"  # its first placement


def test_first_fit_skips_a_patch_that_does_not_fit(e2: Ruleset) -> None:
    t = tables_of(e2)
    g = Game.new(e2, circle=circle_with(e2, ["P19", "P01", "P00"]))
    set_quilt(g, 0, all_but(t, ["h9", "i9", "a1", "b1", "e5"]))  # no three in a row left
    assert choose("first-fit", g) == "buy P00 a1 b1"  # P19 too dear, P01 does not fit
    g.state[core.S_BTN] = 10  # now P19 is affordable but does not fit either
    assert choose("first-fit", g) == "buy P00 a1 b1"
    set_quilt(g, 0, all_but(t, ["h9", "i9", "g9"]))  # now P01 fits on g9 h9 i9
    assert choose("first-fit", g) == "buy P01 g9 h9 i9"
