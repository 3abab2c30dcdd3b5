"""Property tests: invariants of random games on random valid rulesets (tests/strategies.py),
through the Python API, the record format and the compiled game loop."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import ruleset_dicts

from patchsim.bots import policies
from patchsim.bots.heuristics import count_holes
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game, decode_move
from patchsim.engine.record import GameRecord, final_position
from patchsim.engine.ruleset import Ruleset, ruleset_from_dict
from patchsim.play.loops import (
    R_BONUS,
    R_BUTTONS,
    R_BUYS,
    R_EMPTY,
    R_ERROR,
    R_FIRST_END,
    R_HOLES,
    R_LEATHER,
    R_PASSES,
    R_PLIES,
    R_POS,
    R_SCORE,
    R_WIDTH,
    R_WINNER,
    play_game,
    play_games,
)

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)


def ply_bound(rs: Ruleset) -> int:
    """Most moves a game can last: a pass or a timed buy moves a token at least one space
    (at most 2 x last_space of them), a buy of a patch with time 0 does not (one per patch),
    and each leather mark yields at most one placement."""
    return 2 * rs.last_space + len(rs.patches) + len(rs.leather_marks)


def new_game(data: dict, seed: int) -> tuple[Game, np.random.Generator]:
    rs = ruleset_from_dict(data)
    rng = np.random.default_rng(seed)
    return Game.new(rs, circle=deal_circle(rs, rng)), rng


def random_game(data: dict, seed: int) -> Game:
    game, rng = new_game(data, seed)
    while not game.finished:
        moves = game.legal_moves()
        game.apply(moves[int(rng.integers(len(moves)))])
    return game


@FAST
@given(data=ruleset_dicts(), seed=SEEDS)
def test_random_games_keep_the_state_invariants(data: dict, seed: int) -> None:
    game, rng = new_game(data, seed)
    rs = game.ruleset
    sizes = {p.id: p.size for p in rs.patches}
    covered = [0, 0]
    bought: set[str] = set()
    top = 0  # whose token is on top of a shared space
    bound = ply_bound(rs)
    while not game.finished:
        assert game.ply <= bound
        p = game.to_move
        assert p is not None
        before = (game.position(0), game.position(1))
        if game.pending_leather == 0:
            # the token further behind moves; on a shared space the one on top
            expected = top if before[0] == before[1] else int(np.argmin(before))
            assert p == expected
            assert before[p] < rs.last_space
        moves = game.legal_moves()
        move = moves[int(rng.integers(len(moves)))]
        offer = game.offer
        game.apply(move)
        if move.kind == "buy":
            assert move.patch in offer
            assert move.patch not in bought
            bought.add(move.patch)
            covered[p] += sizes[move.patch]
        elif move.kind == "leather":
            covered[p] += 1
        after = (game.position(0), game.position(1))
        assert after[0] >= before[0] and after[1] >= before[1]
        assert after[1 - p] == before[1 - p]
        if after[p] > before[p] and after[p] == after[1 - p]:
            top = p
        if game.pending_leather:
            assert game.to_move == p  # the claimer places at once
        for q in (0, 1):
            assert game.buttons(q) >= 0
            assert game.position(q) <= rs.last_space
            assert rs.rows * rs.cols - game.empty_squares(q) == covered[q]
            assert bin(game.quilt_mask(q)).count("1") == covered[q]
    assert game.ply <= bound
    assert game.position(0) == game.position(1) == rs.last_space
    assert set(game.remaining) == {p.id for p in rs.patches} - bought
    assert game.winner in (0, 1) and game.to_move is None


@FAST
@given(data=ruleset_dicts(), seed=SEEDS)
def test_listed_moves_are_legal_and_unlisted_codes_are_not(data: dict, seed: int) -> None:
    game, rng = new_game(data, seed)
    nplace = len(game.tables.placement_masks)
    nsq = game.tables.rows * game.tables.cols
    lo, hi = core.LEATHER_BASE - nsq - 3, nplace + 3
    while not game.finished:
        moves = game.legal_moves()
        codes = {int(c) for c in moves.codes}
        assert len(codes) == len(moves) == game.legal_move_count()
        for m in moves:
            assert game.illegal_reason(m) is None
        for code in rng.integers(lo, hi, size=8):
            if int(code) not in codes:
                assert game.illegal_reason(int(code)) is not None
        game.apply(moves[int(rng.integers(len(moves)))])
    assert len(game.legal_moves()) == 0
    assert game.illegal_reason(core.PASS) == "the game is over"


@FAST
@given(data=ruleset_dicts(), seed=SEEDS, cut=st.floats(0, 1))
def test_copy_is_independent(data: dict, seed: int, cut: float) -> None:
    full = random_game(data, seed)
    game, _ = new_game(data, seed)
    for code in full.history[: int(cut * len(full.history))]:
        game.apply(code)
    if game.finished:
        return
    copy = game.copy()
    snapshot = (game.summary(), list(game.history), game.offer, game.quilt_mask(0),
                game.quilt_mask(1))
    copy.apply(copy.legal_moves()[-1])
    assert (game.summary(), list(game.history), game.offer, game.quilt_mask(0),
            game.quilt_mask(1)) == snapshot
    assert len(copy.history) == len(game.history) + 1
    snapshot = (copy.summary(), list(copy.history))
    game.apply(game.legal_moves()[0])
    assert (copy.summary(), list(copy.history)) == snapshot


@FAST
@given(data=ruleset_dicts(), seed=SEEDS)
def test_record_round_trips_through_json_and_replay(data: dict, seed: int) -> None:
    game = random_game(data, seed)
    record = game.record()
    record["rules"] = game.ruleset.to_dict()
    text = json.dumps(record)
    replayed = final_position(GameRecord.from_json(text))
    assert replayed.summary() == game.summary()
    assert replayed.history == game.history
    assert replayed.move_texts() == record["moves"]


def compiled_game(tables, circle: np.ndarray, kinds: tuple[int, int], seed: int,
                  bound: int) -> tuple[np.ndarray, np.ndarray]:
    state = core.new_state(tables.tab, circle)
    moves = np.full(bound + 1, 999_999, dtype=np.int64)
    result = np.zeros(R_WIDTH, dtype=np.int64)
    streams = np.array([seed, seed ^ 0x5DEECE66D], dtype=np.uint64)  # one per seat
    play_game(tables.tab, state, np.array(kinds, dtype=np.int64),
              np.zeros((2, policies.N_PARAMS)), streams, moves,
              np.zeros((0, core.EV_WIDTH), dtype=np.int64), result)
    return moves, result


@FAST
@given(data=ruleset_dicts(), seed=SEEDS,
       kinds=st.sampled_from([(policies.RANDOM, policies.RANDOM),
                              (policies.FIRST_FIT, policies.RANDOM),
                              (policies.RANDOM, policies.FIRST_FIT),
                              (policies.FIRST_FIT, policies.ALWAYS_PASS)]))
def test_compiled_games_replay_through_records(data: dict, seed: int,
                                               kinds: tuple[int, int]) -> None:
    start, _ = new_game(data, seed)
    tables, rs = start.tables, start.ruleset
    circle = np.array([tables.patch_index[c] for c in start.circle], dtype=np.int64)
    bound = ply_bound(rs)
    moves, result = compiled_game(tables, circle, kinds, seed, bound)
    assert result[R_ERROR] == 0
    plies = int(result[R_PLIES])
    assert 0 < plies <= bound
    texts = [str(decode_move(int(c), tables)) for c in moves[:plies]]
    record = {"rules": rs.to_dict(), "circle": list(start.circle), "moves": texts}
    game = final_position(GameRecord.from_dict(record))
    assert game.finished
    assert game.scores == (result[R_SCORE], result[R_SCORE + 1])
    assert game.winner == result[R_WINNER]
    for p in (0, 1):
        assert game.buttons(p) == result[R_BUTTONS + p]
        assert game.empty_squares(p) == result[R_EMPTY + p]
        assert game.position(p) == result[R_POS + p] == rs.last_space
        assert result[R_HOLES + p] == count_holes(
            tables.tab, game.state[core.S_QLO + p], game.state[core.S_QHI + p])
    assert (game.bonus_owner if game.bonus_owner is not None else -1) == result[R_BONUS]
    assert game.first_to_finish == result[R_FIRST_END]
    kinds_played = [t.split()[0] for t in texts]
    assert kinds_played.count("pass") == result[R_PASSES] + result[R_PASSES + 1]
    assert kinds_played.count("buy") == result[R_BUYS] + result[R_BUYS + 1]
    assert kinds_played.count("leather") == result[R_LEATHER] + result[R_LEATHER + 1]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=ruleset_dicts(), seed=SEEDS)
def test_batch_loop_matches_single_games(data: dict, seed: int) -> None:
    rs = ruleset_from_dict(data)
    start = Game.new(rs, seed=seed)
    tables = start.tables
    rng = np.random.default_rng(seed)
    circles = np.array([[tables.patch_index[c] for c in deal_circle(rs, rng)]
                        for _ in range(6)], dtype=np.int64)
    seeds = rng.integers(0, 2**32, size=6, dtype=np.int64)
    streams = np.stack([seeds, seeds ^ 0x5DEECE66D], axis=1).astype(np.uint64)
    kinds = (policies.RANDOM, policies.FIRST_FIT)
    batch = play_games(tables.tab, circles, streams, np.array(kinds, dtype=np.int64),
                       np.zeros((2, policies.N_PARAMS)))
    assert batch.shape == (6, R_WIDTH)
    assert (batch[:, R_ERROR] == 0).all()
    assert (batch[:, R_PLIES] <= ply_bound(rs)).all()
    for i in range(6):
        _, single = compiled_game(tables, circles[i], kinds, int(seeds[i]), ply_bound(rs))
        assert single.tolist() == batch[i].tolist()
