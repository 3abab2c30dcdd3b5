"""Opening diversity of the searches (``mcts(..., temperature=T, sample_plies=K)``): at T=0
the games are those of the bots before the knobs existed, sampled games are reproducible per
seed and differ between the seats of a deal, sampled moves are legal root moves drawn in
proportion to visits^(1/T)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

import patchsim
from patchsim.bots import features as F
from patchsim.bots import search
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.bots.tree import sample_by_visits
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play.match import max_plies, play_game, seat_streams

SAMPLED_LEARNED = "mcts(eval=learned, iterations=8, temperature=1, sample_plies=12)"
SAMPLED_ROLLOUT = "mcts(iterations=16, temperature=1, sample_plies=6)"


@pytest.fixture(autouse=True)
def shipped_only(monkeypatch, tmp_path):
    """No user-trained models: the learned bot plays the shipped ones."""
    monkeypatch.setenv("PATCHSIM_MODEL_DIR", str(tmp_path / "empty"))


@pytest.fixture(scope="module")
def e2():
    return load_ruleset("edition2")


def digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj).encode()).hexdigest()


def selfplay_moves(e2, spec: str, seeds=(3, 4)) -> list:
    return [play_game(e2, (make_bot(spec), make_bot(spec)), deal_circle(e2, s), s)
            .moves.tolist() for s in seeds]


def run_moves(spec: str, pairings: str = "cross", games: int = 4, seed: int = 7) -> list:
    others = [spec, "greedy"] if pairings == "cross" else [spec]
    sim = patchsim.simulate("edition2", others, games=games, seed=seed, pairings=pairings,
                            backend="sequential")
    g = sim.games
    return [[int(d), int(o), [int(m) for m in mv]]
            for d, o, mv in zip(g["deal"], g["order"], g["moves"], strict=True)]


# Digests of the games these bots played before temperature existed (same seeds): the Python
# driver's self-play of deals 3 and 4, and a 4-game batch run against greedy. The learned
# search's placement ranking then was contact alone (holes=0, window=0; the default since
# 2026-12-03 also counts holes and the bonus window), so the pins name it.
BEFORE = {
    "mcts(iterations=30)": (
        "0b993e309463475cd71bec3b0b67f2a61d0f56fcd096a879203a97feec2f053b",
        "05eb8bb37c2c352829cbfc11698cfd6f6b721b664ae7d1bb1e509b93f4f47016"),
    "mcts(eval=learned, iterations=8, holes=0, window=0)": (
        "dcfe67a8492fba0f504e036021682158ad9e37cc5f98815a92c5b36e8cee9154",
        "191ad1fc413cb735020507c5dde773fc10724deb7b2b34556b9229d0fce9bb78"),
    "mcts(eval=learned, iterations=30, epsilon=0.1, holes=0, window=0)": (
        "c1cc9f54b1df485e5104735ca90cc0060d2872448e123d8b87768faea96ce01a",
        "2c30c5c4dd5d789e5c83ca51a9cf406c8385539b28ea411373e8db0db3dd0b03"),
}


@pytest.mark.parametrize("spec", sorted(BEFORE))
def test_temperature_zero_plays_exactly_as_before(e2, spec):
    for variant in (spec, spec[:-1] + ", temperature=0, sample_plies=0)"):
        assert digest(selfplay_moves(e2, variant)) == BEFORE[spec][0], variant
        assert digest(run_moves(variant)) == BEFORE[spec][1], variant
    # the knobs at their defaults leave the parameter vector alone
    zero = make_bot(spec[:-1] + ", temperature=0)")
    assert zero.params.tolist() == make_bot(spec).params.tolist()


@pytest.mark.parametrize("spec", [SAMPLED_LEARNED, SAMPLED_ROLLOUT])
def test_sampled_openings_are_reproducible_and_differ_between_seats(spec):
    deals = 6
    games = run_moves(spec, pairings="self", games=2 * deals, seed=5)
    assert run_moves(spec, pairings="self", games=2 * deals, seed=5) == games
    assert run_moves(spec, pairings="self", games=2 * deals, seed=6) != games
    pairs = [(games[2 * i][2], games[2 * i + 1][2]) for i in range(deals)]
    differ = sum(a != b for a, b in pairs)
    assert differ >= deals - 1, f"only {differ} of {deals} deals' games differ"


def test_the_deterministic_search_gives_one_game_per_deal_without_temperature():
    games = run_moves("mcts(eval=learned, iterations=8)", pairings="self", games=6, seed=5)
    assert all(games[2 * i][2] == games[2 * i + 1][2] for i in range(3))


def test_sampling_compiled_loop_and_move_by_move_play_the_same_games(e2):
    tables = compile_ruleset(e2)
    for spec in (SAMPLED_LEARNED, SAMPLED_ROLLOUT):
        bot = bind_bot(make_bot(spec), e2)
        greedy = make_bot("greedy")
        circle = deal_circle(e2, 2)
        game = Game.new(e2, circle=circle)
        moves = np.full(max_plies(e2), -9999, dtype=np.int64)
        out = np.zeros(playout.R_WIDTH, dtype=np.int64)
        playout.play_game(tables.tab, game.state, np.array([bot.kind, greedy.kind]),
                          np.stack([bot.params, greedy.params]), seat_streams(2), moves,
                          np.zeros((0, core.EV_WIDTH), dtype=np.int64), out)
        compiled = moves[: out[playout.R_PLIES]].tolist()
        game = Game.new(e2, circle=circle)
        rng = [seat_streams(2)[s:s + 1].copy() for s in (0, 1)]
        seats = (bot, greedy)
        while not game.finished:
            p = game.to_move
            game.apply(seats[p].choose_code(game, rng[p]))
        assert game.history == compiled, spec


def test_sampling_stops_after_sample_plies(e2):
    """After ply K the sampled bot plays what the deterministic one plays in the same
    position (the plies before K are the only ones that draw)."""
    tab = compile_ruleset(e2).tab
    for sampled, plain in ((SAMPLED_LEARNED, "mcts(eval=learned, iterations=8)"),
                           (SAMPLED_ROLLOUT, "mcts(iterations=16)")):
        sb, pb = bind_bot(make_bot(sampled), e2), bind_bot(make_bot(plain), e2)
        k = int(make_bot(sampled).params[F.L_SAMPLE_PLIES if "learned" in sampled
                                           else search.M_SAMPLE_PLIES])
        game = Game.new(e2, circle=deal_circle(e2, 9))
        rng = np.array(seat_streams(9)[:1])
        while not game.finished:
            code = sb.choose_code(game, rng)
            if game.state[core.S_PLY] >= k and "learned" in sampled:
                # the learned search draws nothing else: same move as without temperature
                assert code == pb.choose_code(game, rng.copy())
            assert core.legality(game.state, tab, code) == 0
            game.apply(code)


def test_sampled_moves_are_searched_root_moves_drawn_by_visits(e2):
    """At one position, the sampled move over many streams follows visits^(1/T) of the
    deterministic search's root (the learned search is deterministic given the position,
    so its tree is the same in every draw)."""
    bound = bind_bot(make_bot("mcts(eval=learned, iterations=40, temperature=1, "
                              "sample_plies=1000)"), e2)
    tab = compile_ruleset(e2).tab
    game = Game.new(e2, circle=deal_circle(e2, 4))
    greedy = make_bot("greedy")
    while True:  # a few greedy moves in, where the search weighs several moves
        moves, visits, _ = F.learned_root(bound.params, game.state, tab)
        if len(moves) >= 3 and (visits > 3).sum() >= 3:
            break
        game.apply(greedy.choose_code(game, np.zeros(1, dtype=np.uint64)))
    assert game.state[core.S_PLY] < 20
    draws = 3000
    counts = dict.fromkeys(moves.tolist(), 0)
    for i in range(draws):
        code = bound.choose_code(game, np.array([i * 7919 + 1], dtype=np.uint64))
        assert code in counts  # a searched root move
        counts[code] += 1
    want = visits / visits.sum()
    got = np.array([counts[m] for m in moves.tolist()]) / draws
    # a loose bound: 3000 draws give a standard error under 0.01 for each share
    assert np.abs(got - want).max() < 0.04, (got, want)


@pytest.mark.parametrize("temperature", [1.0, 0.5, 0.05])
def test_sample_by_visits_follows_the_tempered_visit_distribution(temperature):
    visits = np.array([0, 5, 40, 0, 15, 40, 100], dtype=np.int64)
    first_child = np.array([1, -1, -1, -1, -1, -1, -1], dtype=np.int64)
    nchild = np.array([6, 0, 0, 0, 0, 0, 0], dtype=np.int64)
    rng = np.array([12345], dtype=np.uint64)
    draws = 20000
    counts = np.zeros(7)
    for _ in range(draws):
        counts[sample_by_visits(first_child, nchild, visits, 0, temperature, rng)] += 1
    want = np.where(visits[1:] > 0, (visits[1:] / 100.0) ** (1 / temperature), 0.0)
    want /= want.sum()
    got = counts[1:] / draws
    assert counts[0] == 0 and got[2] == 0  # never the node itself, never an unvisited child
    assert np.abs(got - want).max() < 0.015, (got, want)


def test_temperature_spec_and_errors():
    bot = make_bot("mcts(eval=learned, temperature=0.5, sample_plies=10)")
    assert bot.spec == "mcts(eval=learned, sample_plies=10, temperature=0.5)"
    assert make_bot(bot.spec).spec == bot.spec
    assert (bot.params[F.L_TEMPERATURE], bot.params[F.L_SAMPLE_PLIES]) == (0.5, 10)
    rollout = make_bot("mcts(temperature=1, sample_plies=4)")
    assert (rollout.params[search.M_TEMPERATURE], rollout.params[search.M_SAMPLE_PLIES]) == (1, 4)
    with pytest.raises(BotSpecError, match="temperature=1.0 needs sample_plies > 0"):
        make_bot("mcts(temperature=1)")
    with pytest.raises(BotSpecError, match="sample_plies=3 needs temperature > 0"):
        make_bot("mcts(eval=learned, sample_plies=3)")
    with pytest.raises(BotSpecError, match="temperature=-1"):
        make_bot("mcts(temperature=-1, sample_plies=3)")
    with pytest.raises(BotSpecError, match="sample_plies=2.5 must be a whole number"):
        make_bot("mcts(temperature=1, sample_plies=2.5)")
