"""The ``random`` bot is uniform over the legal moves (README, Bots), tested by chi-square
goodness of fit on the moves it picks from fixed positions.

The bot is used as every other caller uses it, through ``choose(game, moves, rng)`` of
``make_bot("random")``, which calls the compiled ``core.random_move`` (via
``policies.choose_move``). That function has two routes: it draws from every placement of the
affordable offered patches plus pass and rejects draws that overlap the quilt, and after eight
misses it enumerates the legal moves and draws one; pending leather is drawn among the empty
squares; with more than three patches on offer it always enumerates. The positions below are
chosen so that each route carries a sizeable share of the draws (``fallback`` is the
probability of reaching the enumeration, ``(1 - legal / candidates) ** 8``).

Draws: 200 per legal move (expected count 200 in every cell), from a fixed seed, so the test
is deterministic. Each of the twelve uniformity tests uses significance 0.001: with fresh seeds
a correct bot would fail one of them with probability about 1.2%. The p-values observed
with the seeds below (2026-11-30):

    position                 ply  legal moves (per patch)       fallback  p (choose)  p (stream)
    early-rejection            7  355 (pass 1, 81, 66, 207)        0.002     0.588       0.098
    mid-both-routes           22   23 (pass 1, 18, 4)              0.554     0.982       0.535
    late-enumeration          30   10 (pass 1, 8, 1)               0.851     0.671       0.857
    pending-leather           25   38 empty squares                   -      0.424       0.678
    quilt7                    22   32 (pass 1, 2, 29)              0.432     0.247       0.453
    offer-of-four             18   71 (pass 1, 21, 21, 28)            -      0.546       0.737

("choose": the bot protocol, a fresh stream per call; "stream": the compiled policy on one
splitmix64 stream, as the compiled game loops use it.)

``test_chi_square_detects_a_two_stage_draw`` shows that the same harness rejects the classic
mistake, a uniform choice of pass or a patch followed by a uniform placement of it, on every
position without leather (chi-square statistics 2,672 to 1,559,842; p underflows to 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from scipy.stats import chisquare

from patchsim.bots import policies as P
from patchsim.bots.registry import make_bot
from patchsim.engine import core
from patchsim.engine.game import Game
from patchsim.engine.ruleset import Ruleset, load_ruleset, ruleset_from_dict

ALPHA = 1e-3
DRAWS_PER_MOVE = 200


def candidates(game: Game) -> int:
    """What the rejection route draws from: pass plus every placement (fitting or not) of
    each affordable offered patch."""
    st, tab, p = game.state, game.tab, game.to_move
    total = 1
    for k in range(int(tab[core.T_OFFER])):
        patch = core.offer_patch(st, tab, k)
        if patch < 0:
            break
        if tab[tab[core.O_COST] + patch] <= st[core.S_BTN + p]:
            total += int(tab[tab[core.O_PATCH_COUNT] + patch])
    return total


def fallback(game: Game) -> float:
    """Probability that random_move gives up rejecting and enumerates (offer of three)."""
    return (1.0 - game.legal_move_count() / candidates(game)) ** 8


def random_play_positions(rules: Ruleset, seeds: range) -> Iterator[Game]:
    """Every position of games between two uniform movers driven by numpy (not by the bot
    under test), dealt and played from fixed seeds."""
    for s in seeds:
        rng = np.random.default_rng(s)
        g = Game.new(rules, seed=s)
        while not g.finished:
            yield g.copy()
            moves = g.legal_moves()
            g.apply(moves[int(rng.integers(len(moves)))])


def first_position(rules: Ruleset, pred: Callable[[Game], bool]) -> Game:
    for g in random_play_positions(rules, range(20)):
        if pred(g):
            return g
    raise AssertionError("no position of the wanted kind in 20 games")


def no_leather(g: Game) -> bool:
    return g.pending_leather == 0


def legal_between(lo: int, hi: int) -> Callable[[Game], bool]:
    return lambda g: lo <= len(g.legal_moves()) <= hi


def patches_at_least(k: int) -> Callable[[Game], bool]:
    """At least k different patches have a legal placement (besides pass)."""
    return lambda g: len({m.patch for m in g.legal_moves() if m.kind == "buy"}) >= k


def kind(pred_legal: Callable[[Game], bool], k: int, lo: float = -1.0,
         hi: float = 2.0) -> Callable[[Game], bool]:
    """No pending leather, a legal-move count, k patches to choose from, a fallback range."""
    return lambda g: (no_leather(g) and pred_legal(g) and patches_at_least(k)(g)
                      and lo < fallback(g) < hi)


POSITIONS: dict[str, tuple[str | dict, Callable[[Game], bool]]] = {
    "early-rejection": ("edition2", kind(legal_between(20, 400), 3, hi=0.01)),
    "mid-both-routes": ("edition2", kind(legal_between(10, 40), 2, lo=0.3, hi=0.7)),
    "late-enumeration": ("edition2", kind(legal_between(4, 20), 2, lo=0.85)),
    "pending-leather": ("edition2", lambda g: g.pending_leather > 0 and legal_between(10, 40)(g)),
    "quilt7": ("variants/quilt7", kind(legal_between(10, 60), 2, lo=0.2, hi=0.8)),
    # more than three patches on offer: random_move always enumerates
    "offer-of-four": ({"name": "offer4", "extends": "edition2", "offer_size": 4},
                      kind(legal_between(10, 80), 3)),
}


# 355 legal moves x 200 draws: the slowest case, left to the full run (-m "not slow" skips it)
CASES = [pytest.param(n, marks=pytest.mark.slow) if n == "early-rejection" else n
         for n in POSITIONS]


@pytest.fixture(scope="module")
def positions() -> dict[str, Game]:
    out = {}
    for name, (rules, pred) in POSITIONS.items():
        rs = ruleset_from_dict(rules) if isinstance(rules, dict) else load_ruleset(rules)
        out[name] = first_position(rs, pred)
    return out


def tally(game: Game, pick: Callable[[], int]) -> np.ndarray:
    """Counts per legal move (in legal_moves order) of DRAWS_PER_MOVE x n calls of pick."""
    codes = [int(c) for c in game.legal_moves().codes]
    index = {c: i for i, c in enumerate(codes)}
    counts = np.zeros(len(codes), dtype=np.int64)
    for _ in range(DRAWS_PER_MOVE * len(codes)):
        code = pick()
        assert code in index, f"illegal move code {code}"
        counts[index[code]] += 1
    return counts


@pytest.mark.parametrize("name", CASES)
def test_random_bot_is_uniform_over_legal_moves(positions: dict[str, Game], name: str) -> None:
    game = positions[name]
    moves = game.legal_moves()
    bot = make_bot("random")
    rng = np.random.default_rng(20261130)
    counts = tally(game, lambda: bot.choose(game.copy(), moves, rng).code)
    p = chisquare(counts).pvalue
    assert counts.min() > 0
    assert p > ALPHA, f"{name}: {len(counts)} moves, p = {p:.3g}, counts {counts.tolist()}"


@pytest.mark.parametrize("name", CASES)
def test_compiled_random_policy_is_uniform_on_one_stream(positions: dict[str, Game],
                                                         name: str) -> None:
    """The same policy as the compiled game loops call it: one splitmix64 stream for all
    draws (the bot protocol above starts a fresh stream per call)."""
    game = positions[name]
    params = np.zeros(P.N_PARAMS)
    stream = np.array([987654321], dtype=np.uint64)
    buf = np.empty(core.max_moves(game.tab), dtype=np.int64)
    state = game.state.copy()

    def pick() -> int:
        code = int(P.choose_move(P.RANDOM, params, state, game.tab, stream, buf))
        assert np.array_equal(state, game.state)  # choosing does not move
        return code

    counts = tally(game, pick)
    p = chisquare(counts).pvalue
    assert counts.min() > 0
    assert p > ALPHA, f"{name}: {len(counts)} moves, p = {p:.3g}, counts {counts.tolist()}"


def test_positions_exercise_both_routes(positions: dict[str, Game]) -> None:
    """The selected positions are what the table in the module docstring says."""
    assert fallback(positions["early-rejection"]) < 0.01
    assert 0.3 < fallback(positions["mid-both-routes"]) < 0.7
    assert fallback(positions["late-enumeration"]) > 0.85
    assert positions["pending-leather"].pending_leather > 0
    assert positions["offer-of-four"].ruleset.offer_size == 4
    # two or more patches to choose from, with different numbers of legal placements, so a
    # draw that is uniform per patch first would not be uniform per move
    for name in ("early-rejection", "mid-both-routes", "late-enumeration", "quilt7",
                 "offer-of-four"):
        counts = per_patch(positions[name])
        assert len(counts) >= 3 and len(set(counts.values())) >= 2, (name, counts)


def per_patch(game: Game) -> dict[str, int]:
    """Legal moves per patch on offer (and pass)."""
    out: dict[str, int] = {}
    for m in game.legal_moves():
        key = m.patch or m.kind
        out[key] = out.get(key, 0) + 1
    return out


@pytest.mark.parametrize("name", [c for c in CASES if c != "pending-leather"])
def test_chi_square_detects_a_two_stage_draw(positions: dict[str, Game], name: str) -> None:
    """The harness has power: pass-or-patch uniformly, then a uniform placement of that patch,
    is rejected on every position."""
    game = positions[name]
    groups: dict[str, list[int]] = {}
    for m in game.legal_moves():
        groups.setdefault(m.patch or m.kind, []).append(m.code)
    keys = list(groups)
    rng = np.random.default_rng(20261130)

    def pick() -> int:
        group = groups[keys[int(rng.integers(len(keys)))]]
        return group[int(rng.integers(len(group)))]

    assert chisquare(tally(game, pick)).pvalue < ALPHA
