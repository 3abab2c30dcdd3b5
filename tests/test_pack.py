"""The packing player, ``mcts(eval=pack)`` (issue 29): packing measures of a quilt (empty
perimeter, empty regions), the feature-version-2 features, the search's ranking of every
placement by the model (placement_prior), progressive widening of the tree, the model file
pack.json beside today's model.json, and the league training.

Quilts are built square by square as in tests/test_heuristics.py ("a1" the top-left corner).
"""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from positions import root_node

from patchsim.bots import features as F
from patchsim.bots import heuristics as H
from patchsim.bots.learned import (
    PACK_FILE,
    Model,
    ModelError,
    bind_bot,
    fill_params,
    load_model,
)
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.bots.tree import most_visited_decision, regrow
from patchsim.engine import core
from patchsim.engine.game import Game
from patchsim.engine.ruleset import Ruleset, load_ruleset
from patchsim.engine.tables import Tables, compile_ruleset, parse_square, split, square_name


@pytest.fixture(scope="module")
def e2() -> Ruleset:
    return load_ruleset("edition2")


def tables_of(rules: str) -> Tables:
    return compile_ruleset(load_ruleset(rules))


def words(t: Tables, cov: set[tuple[int, int]]) -> tuple[np.int64, np.int64]:
    m = 0
    for r, c in cov:
        m |= 1 << parse_square(square_name(r * t.cols + c, t.cols), t.rows, t.cols)
    lo, hi = split(m)
    return np.int64(lo), np.int64(hi)


def reference(t: Tables, cov: set[tuple[int, int]], small: int) -> tuple[int, int, int, int]:
    """Perimeter, regions, squares in small regions and holes, read square by square."""
    rows, cols = t.rows, t.cols
    empty = {(r, c) for r in range(rows) for c in range(cols)} - cov
    perim = 0
    holes = 0
    for r, c in empty:
        facing = sum((rr, cc) not in empty
                     for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)))
        perim += facing
        holes += facing == 4
    seen: set[tuple[int, int]] = set()
    regions = in_small = 0
    for sq in sorted(empty):
        if sq in seen:
            continue
        regions += 1
        todo, size = [sq], 0
        seen.add(sq)
        while todo:
            r, c = todo.pop()
            size += 1
            for nb in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if nb in empty and nb not in seen:
                    seen.add(nb)
                    todo.append(nb)
        in_small += size if size <= small else 0
    return perim, regions, in_small, holes


@pytest.mark.parametrize("rules", ["edition2", "variants/quilt7", "variants/quilt11"])
def test_packing_measures_match_their_definitions_on_random_quilts(rules: str) -> None:
    t = tables_of(rules)
    rnd = random.Random(29)
    for _ in range(150):
        density = rnd.random()
        cov = {(r, c) for r in range(t.rows) for c in range(t.cols) if rnd.random() < density}
        lo, hi = words(t, cov)
        perim, regions, in_small, holes = reference(t, cov, F.SMALL_REGION)
        assert H.empty_perimeter(t.tab, lo, hi) == perim
        assert H.holes_and_perimeter(t.tab, lo, hi) == (holes, perim)
        assert H.count_holes(t.tab, lo, hi) == holes
        assert H.empty_regions(t.tab, lo, hi, F.SMALL_REGION) == (regions, in_small)


def test_packing_measures_of_empty_and_full_quilts() -> None:
    t = tables_of("edition2")
    assert H.empty_perimeter(t.tab, 0, 0) == 4 * 9  # the border: 9 sides a row and column
    assert H.empty_regions(t.tab, 0, 0, 3) == (1, 0)
    full = {(r, c) for r in range(9) for c in range(9)}
    lo, hi = words(t, full)
    assert H.empty_perimeter(t.tab, lo, hi) == 0
    assert H.empty_regions(t.tab, lo, hi, 3) == (0, 0)


def test_a_wall_splits_the_quilt_into_two_regions_and_rows_do_not_wrap() -> None:
    """Column e covered: two regions of 36 squares each. Squares at the end of a row are
    not neighbours of the next row's first square (the bitboard's wrap)."""
    t = tables_of("edition2")
    wall = {(r, 4) for r in range(9)}
    lo, hi = words(t, wall)
    assert H.empty_regions(t.tab, lo, hi, 3) == (2, 0)
    # everything covered but a1 (top left) and i1 (top right) ... and i2 under it
    cov = {(r, c) for r in range(9) for c in range(9)} - {(0, 0), (0, 8), (1, 8)}
    lo, hi = words(t, cov)
    assert H.empty_regions(t.tab, lo, hi, 3) == (2, 3)
    assert H.empty_regions(t.tab, lo, hi, 1) == (2, 1)


def game_after(n_moves: int, seed: int) -> Game:
    g = Game.new("edition2", seed=seed)
    bot = make_bot("greedy")
    rng = np.random.default_rng(seed)
    for _ in range(n_moves):
        if g.finished:
            break
        g.apply(bot.choose(g, g.legal_moves(), rng))
    return g


def test_the_version_2_features_begin_with_the_base_features() -> None:
    for seed in range(4):
        g = game_after(12 + 3 * seed, seed)
        base = np.zeros(F.N_FEATURES)
        every = np.zeros(F.N_ALL_FEATURES)
        F.features(g.state, g.tab, base)
        F.all_features(g.state, g.tab, every)
        assert np.array_equal(every[:F.N_FEATURES], base)
        assert np.any(every[F.N_FEATURES:] != 0)
        assert len(F.ALL_FEATURE_NAMES) == F.N_ALL_FEATURES


def random_pack_model(seed: int) -> Model:
    rng = np.random.default_rng(seed)
    return Model(rng.normal(size=F.N_ALL_FEATURES), 12.0,
                 {"feature_version": F.PACK_FEATURE_VERSION})


def test_a_version_1_model_leaves_the_packing_terms_out() -> None:
    """A 22-weight model plays exactly as before: no packing flag, no packing weights."""
    base = make_bot("mcts(eval=learned)").params  # type: ignore[attr-defined]
    v1 = fill_params(base, Model(np.ones(F.N_FEATURES), 10.0))
    assert v1[F.L_PACK] == 0 and np.all(v1[F.L_PACK_WEIGHTS:F.L_PACK_WEIGHTS + 5] == 0)
    v2 = fill_params(base, random_pack_model(1))
    assert v2[F.L_PACK] == 1
    assert np.array_equal(v2[F.L_PACK_WEIGHTS:F.L_PACK_WEIGHTS + F.N_PACK_FEATURES],
                          random_pack_model(1).weights[F.N_FEATURES:])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 30))
def test_the_prior_orders_a_patchs_placements_as_the_model_values_them(seed: int,
                                                                       moves: int) -> None:
    """Without the empty regions' weights (the one term the prior leaves out) and up to the
    contact tie-breaker, the best placement of a patch by the prior is the best by the
    linear model's prediction of the position after it (RULES: a placement changes only
    the buyer's quilt)."""
    g = game_after(moves, seed % 50)
    if g.finished or g.state[core.S_PENDING] > 0:
        return
    model = random_pack_model(seed)
    model.weights[24:] = 0.0  # the regions' terms
    params = fill_params(make_bot("mcts(eval=pack)").params, model)  # type: ignore[attr-defined]
    tab = g.tab
    p = core.to_move(g.state, tab)
    scratch = np.zeros(F.N_ALL_FEATURES)
    pos = g.state[core.S_POS + p]
    last = tab[core.T_LAST]
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(g.state, tab, k)
        if patch < 0 or core.patch_cost(tab, patch) > g.state[core.S_BTN + p]:
            continue
        tl = (last - min(pos + core.patch_time(tab, patch), last)) / last
        first = core.patch_first(tab, patch)
        fits = [q for q in range(first, first + core.patch_count(tab, patch))
                if core.fits(g.state, tab, p, q)]
        if len(fits) < 2:
            continue
        prior = {q: F.placement_prior(params, g.state, tab, p, q, tl, scratch) for q in fits}
        value = {}
        for q in fits:
            child = g.state.copy()
            core.apply_move(child, tab, q)
            m = F.predicted_margin(params, child, tab, np.zeros(F.N_ALL_FEATURES))
            value[q] = m if p == 0 else -m
        best = max(value.values())
        top = max(fits, key=lambda q: prior[q])
        # contact breaks ties: at most a thousandth of a point a side (4 sides a square)
        assert value[top] >= best - F.CONTACT_TIE * 4 * 9 - 1e-9


def test_ranked_actions_keep_the_m_best_placements_of_each_affordable_patch() -> None:
    g = game_after(6, 3)
    params = fill_params(make_bot("mcts(eval=pack)").params,  # type: ignore[attr-defined]
                         random_pack_model(4))
    out = np.empty(1 + 3 * 4, dtype=np.int64)
    n1 = F.ranked_actions(params, g.state, g.tab, out, 1, np.zeros(F.N_ALL_FEATURES),
                          np.empty(4, dtype=np.int64), np.empty(4))
    one = out[:n1].copy()
    n4 = F.ranked_actions(params, g.state, g.tab, out, 4, np.zeros(F.N_ALL_FEATURES),
                          np.empty(4, dtype=np.int64), np.empty(4))
    four = out[:n4].copy()
    assert one[0] == four[0] == core.PASS
    assert set(one) <= set(four) and n4 > n1
    for code in four[1:]:
        assert core.legality(g.state, g.tab, int(code)) == core.LEGAL


def test_regrow_moves_the_children_with_their_statistics() -> None:
    g = game_after(4, 1)
    tab = g.tab
    cap = 50
    states = np.zeros((cap, g.state.shape[0]), dtype=np.int64)
    states[0] = g.state
    first_child = np.full(cap, -1, dtype=np.int64)
    nchild = np.zeros(cap, dtype=np.int64)
    visits = np.zeros(cap, dtype=np.int64)
    value = np.zeros(cap)
    mover = np.zeros(cap, dtype=np.int64)
    move = np.zeros(cap, dtype=np.int64)
    stage = np.zeros(cap, dtype=np.int64)
    buf = np.empty(core.max_moves(tab), dtype=np.int64)
    codes = [int(c) for c in buf[:core.legal_moves(g.state, tab, buf)][:6]]
    # node 0 with children 1..3 (the first three moves), node 2 with a child of its own
    first_child[0], nchild[0] = 1, 3
    for i, code in enumerate(codes[:3]):
        move[1 + i], visits[1 + i], value[1 + i] = code, 10 + i, 5.0 + i
    first_child[2], nchild[2] = 4, 1
    nodes, first_new = regrow(states, first_child, nchild, visits, value, mover, move, stage,
                              tab, 0, 5, np.array(codes[1:6], dtype=np.int64), 5, 0)
    assert first_child[0] == 5 and nchild[0] == 6 and first_new == 8 and nodes == 11
    assert list(move[5:8]) == list(codes[:3]) and list(visits[5:8]) == [10, 11, 12]
    assert first_child[6] == 4 and nchild[6] == 1  # the moved child keeps its subtree
    assert list(move[8:11]) == list(codes[3:6]) and list(visits[8:11]) == [0, 0, 0]
    after = g.state.copy()
    core.apply_move(after, tab, int(codes[3]))
    if after[core.S_PENDING] == 0:  # play_macro places a claimed leather patch too
        assert np.array_equal(states[8], after)


def root_children(spec: str, model: Model, game: Game) -> np.ndarray:
    params = fill_params(make_bot(spec).params, model)  # type: ignore[attr-defined]
    moves, visits, values = F.learned_root(params, game.state, game.tab)
    assert np.all((values >= 0) & (values <= 1))
    return moves


def test_a_widened_root_searches_more_placements_than_one_a_patch() -> None:
    g = game_after(2, 5)
    model = random_pack_model(7)
    narrow = root_children("mcts(eval=pack, iterations=5)", model, g)
    wide = root_children("mcts(eval=pack, iterations=400)", model, g)
    patches = {core.placement_patch(g.tab, int(c)) for c in wide if c >= 0}
    assert len(narrow) <= 1 + len(patches)
    assert len(wide) > 1 + len(patches)  # some patch has several placements in the tree
    assert len(set(wide.tolist())) == len(wide)  # no move twice
    off = root_children("mcts(eval=pack, iterations=400, widen=0)", model, g)
    assert len(off) <= 1 + int(g.tab[core.T_OFFER])  # top_k=1: one placement a patch


def test_the_widened_search_is_deterministic_and_plays_legal_moves() -> None:
    g = game_after(8, 2)
    params = fill_params(make_bot("mcts(eval=pack, iterations=150)").params,  # type: ignore[attr-defined]
                         random_pack_model(3))
    rng = np.zeros(1, dtype=np.uint64)
    buf = np.empty(core.max_moves(g.tab), dtype=np.int64)
    a = F.learned_move(params, g.state, g.tab, rng, buf)
    b = F.learned_move(params, g.state.copy(), g.tab, rng, buf)
    assert a == b
    assert core.legality(g.state, g.tab, int(a)) == core.LEGAL


def test_eval_pack_reads_pack_json_and_says_how_to_train_it(tmp_path, e2: Ruleset) -> None:
    folder = tmp_path / e2.content_hash()
    with pytest.raises(ModelError, match=r"mcts\(eval=pack\).*--pack"):
        bind_bot(make_bot(f"mcts(eval=pack, models={tmp_path}, model=user)"), e2)
    m = random_pack_model(2)
    m.manifest.update({"ruleset_hash": e2.content_hash(), "ruleset_name": e2.name})
    m.save(folder / PACK_FILE)
    assert (folder / "pack-manifest.json").exists() and not (folder / "manifest.json").exists()
    bot = bind_bot(make_bot(f"mcts(eval=pack, models={tmp_path}, model=user)"), e2)
    assert bot.params[F.L_PACK] == 1 and bot.params[F.L_WIDEN] > 0
    # a version-1 model named as the pack player's file is refused with its version
    v1 = Model(np.ones(F.N_FEATURES), 10.0, {"feature_version": F.FEATURE_VERSION,
                                             "ruleset_hash": e2.content_hash()})
    v1.save(folder / PACK_FILE)
    with pytest.raises(ModelError, match="feature version 1"):
        bind_bot(make_bot(f"mcts(eval=pack, models={tmp_path}, model=user)"), e2)


def test_a_model_file_of_an_unknown_feature_version_is_refused(tmp_path) -> None:
    m = random_pack_model(0)
    path = m.save(tmp_path / "m.json")
    data = json.loads(path.read_text())
    data["manifest"]["feature_version"] = 3
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match="feature version 3"):
        load_model(path)
    data["manifest"]["feature_version"] = 1  # 27 weights are not version 1's 22
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match="22 finite numbers"):
        load_model(path)


def test_todays_player_keeps_its_search_and_spec() -> None:
    """mcts(eval=learned) neither widens nor reads packing weights unless told to."""
    p = make_bot("mcts(eval=learned)").params  # type: ignore[attr-defined]
    assert p[F.L_WIDEN] == 0 and p[F.L_PACK] == 0
    assert make_bot("mcts(eval=pack)").spec == "mcts(eval=pack)"
    assert make_bot("mcts(eval=pack, widen=0)").params[F.L_WIDEN] == 0  # type: ignore[attr-defined]


def test_the_league_schedule(e2: Ruleset) -> None:
    from patchsim.play.train import TrainSettings, league_opponent, pack_settings

    plain = TrainSettings()
    assert {league_opponent(plain, 5, c, [(np.zeros(3), 1.0)]) for c in range(8)} == {-1}
    league = pack_settings()
    assert {league_opponent(league, 0, c, []) for c in range(8)} == {-1}  # greedy's data
    whom = [league_opponent(league, 4, c, []) for c in range(8)]
    assert whom.count(-1) == 4 and whom.count(-2) == 4  # no pool yet: greedy
    pool = [(np.zeros(3), 1.0)] * 3
    whom = [league_opponent(league, 4, c, pool) for c in range(8)]
    assert whom.count(-1) == 4 and whom.count(-2) == 2
    assert all(0 <= w < 3 for w in whom if w >= 0)


@pytest.mark.slow
def test_a_pack_training_writes_its_files_beside_todays_model(tmp_path) -> None:
    from patchsim.play.train import pack_settings, train

    small = load_ruleset("variants/quilt7")
    st_ = dataclasses.replace(pack_settings(3), games_per_generation=16, eval_every=10,
                              eval_deals=2)
    res = train(small, generations=2, jobs=1, models=tmp_path, settings=st_)
    folder = tmp_path / small.content_hash()
    assert res.model_path == folder / PACK_FILE
    names = {p.name for p in folder.iterdir()}
    assert {"pack.json", "pack-manifest.json", "pack-report.md", "pack-strength.png",
            "pack-loss.png"} <= names
    assert not names & {"model.json", "manifest.json", "report.md"}
    man = res.model.manifest
    assert man["feature_version"] == F.PACK_FEATURE_VERSION
    assert man["features"] == list(F.ALL_FEATURE_NAMES)
    assert "mcts(eval=learned, iterations=100)" in man["strength"]
    again = train(small, generations=2, jobs=1, models=tmp_path / "b", settings=st_)
    assert np.array_equal(again.model.weights, res.model.weights)  # a seed replays it


def test_the_root_decides_the_patch_by_its_placements_summed_visits(e2: Ruleset) -> None:
    tab = compile_ruleset(e2).tab
    g_a = [core.patch_first(tab, 3) + i for i in range(3)]  # three placements of one patch
    g_b = core.patch_first(tab, 7)
    # pass has the most visits of any single child, the patch the most in all
    fc, nc, visits, value, move = root_node([core.PASS, *g_a, g_b], [40, 20, 25, 15, 10],
                                        [0.5, 0.5, 0.5, 0.5, 0.4])
    best = most_visited_decision(fc, nc, visits, value, move, tab, 0)
    assert move[best] == g_a[1]  # the patch, at its most visited placement
    # one placement a patch: the plain most visited child, ties to the better mean
    fc, nc, visits, value, move = root_node([core.PASS, g_a[0], g_b], [30, 30, 10],
                                        [0.4, 0.6, 0.9])
    assert move[most_visited_decision(fc, nc, visits, value, move, tab, 0)] == g_a[0]
    fc, nc, visits, value, move = root_node([core.PASS, g_a[0], g_b], [30, 10, 20],
                                        [0.4, 0.6, 0.9])
    assert move[most_visited_decision(fc, nc, visits, value, move, tab, 0)] == core.PASS


def test_widening_by_the_packing_ranking_takes_the_heuristics_order() -> None:
    """widen_by=1: a widened node's placements are the packing ranking's m best, the same
    placements and order top_placements gives with top_k=m."""
    g = game_after(6, 3)
    params = make_bot("mcts(eval=learned, widen=8, widen_by=1)").params  # type: ignore[attr-defined]
    for m in (1, 2, 4):
        out = np.empty(1 + 3 * m, dtype=np.int64)
        n = F.ranked_actions(params, g.state, g.tab, out, m, np.zeros(F.N_ALL_FEATURES),
                             np.empty(m, dtype=np.int64), np.empty(m))
        ref = np.empty(1 + 3 * m, dtype=np.int64)
        n_ref = H.top_placements(g.state, g.tab, ref, m, params[F.L_CONTACT],
                                 params[F.L_HOLES], params[F.L_WINDOW], -1)
        assert n == n_ref and list(out[:n]) == list(ref[:n_ref])


def test_widening_by_the_packing_ranking_with_one_placement_is_todays_player() -> None:
    """widen_max=1 with widen_by=1 never widens and expands as top_k=1: the same moves as
    today's player; widen_by=0 lets the model pick the one placement instead."""
    e2 = load_ruleset("edition2")
    today = bind_bot(make_bot("mcts(eval=learned, iterations=60)"), e2)
    same = bind_bot(make_bot("mcts(eval=learned, iterations=60, widen=8, widen_max=1, "
                             "widen_by=1)"), e2)
    by_model = bind_bot(make_bot("mcts(eval=learned, iterations=60, widen=8, widen_max=1)"), e2)
    differs = 0
    for seed in range(2):
        game = Game.new(e2, seed=seed)
        while not game.finished:
            a = today.choose_code(game, np.array([7], dtype=np.uint64))
            assert same.choose_code(game, np.array([7], dtype=np.uint64)) == a
            differs += by_model.choose_code(game, np.array([7], dtype=np.uint64)) != a
            game.apply(a)
    assert differs > 0  # the model's placement is not the ranking's


def test_widen_by_is_a_knob_of_the_evaluations_only() -> None:
    assert make_bot("mcts(eval=learned, widen_by=1)").params[F.L_WIDEN_BY] == 1  # type: ignore[attr-defined]
    assert make_bot("mcts(eval=learned)").params[F.L_WIDEN_BY] == 0  # type: ignore[attr-defined]
    with pytest.raises(BotSpecError, match="widen_by"):
        make_bot("mcts(widen_by=1)")
    with pytest.raises(BotSpecError, match="widen_by"):
        make_bot("mcts(eval=learned, widen_by=2)")
