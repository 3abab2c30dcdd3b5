"""The widened learned search (``widen`` > 0): the decision first (pass, or which patch)
and then where the patch goes, the packing ranking's ties searched once, and the charge a
placement below its patch's best pays (``place_cost``). See docs/players.md, "Who should
choose a placement"."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from positions import played_position, root_node

from patchsim.bots import features as F
from patchsim.bots import heuristics as H
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.bots.tree import (
    grouped_uct_child,
    most_visited_decision,
    sample_decision_by_visits,
    uct_child,
)
from patchsim.engine import core
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset

E2 = load_ruleset("edition2")
TAB = compile_ruleset(E2).tab


def _placements(patch: int, n: int) -> list[int]:
    return [core.patch_first(TAB, patch) + i for i in range(n)]


def test_many_placements_do_not_buy_a_patch_more_exploration() -> None:
    """Eight placements of a patch, all valued as the pass: one UCT score a child explores
    the patch eight times as often; the grouped choice splits the node between the two
    decisions, and a patch is worth its best placement, not the mean of its poor ones."""
    g = _placements(3, 8)
    counts = {"pass": 0, "patch": 0}
    fc, nc, visits, value, move = root_node([core.PASS, *g], [1] * 9, [0.5] * 9)
    for _ in range(400):
        ch = grouped_uct_child(fc, nc, visits, value, move, TAB, 0, 0.3)
        counts["pass" if move[ch] == core.PASS else "patch"] += 1
        visits[ch] += 1
        visits[0] += 1
        value[ch] += 0.5
    assert 0.35 < counts["pass"] / 400 < 0.65
    # ungrouped, the same tree gives the patch about 8 of every 9 visits
    fc, nc, visits, value, move = root_node([core.PASS, *g], [1] * 9, [0.5] * 9)
    patch = 0
    for _ in range(400):
        ch = uct_child(fc, nc, visits, value, 0, 0.3)
        patch += move[ch] != core.PASS
        visits[ch] += 1
        visits[0] += 1
        value[ch] += 0.5
    assert patch / 400 > 0.8
    # a patch with one good placement among poor ones tried once: its worth is the good one
    fc, nc, visits, value, move = root_node([core.PASS, *g[:4]], [30, 30, 1, 1, 1],
                                        [0.50, 0.60, -2.0, -2.0, -2.0])
    ch = grouped_uct_child(fc, nc, visits, value, move, TAB, 0, 0.0)
    assert move[ch] == g[0]
    # an unvisited child comes first, as in uct_child
    fc, nc, visits, value, move = root_node([core.PASS, *g[:2]], [5, 5, 0], [0.5, 0.5, 0.0])
    assert grouped_uct_child(fc, nc, visits, value, move, TAB, 0, 0.3) == 3


def test_a_sampled_opening_draws_the_decision_then_plays_its_best_placement() -> None:
    g_a = _placements(3, 4)
    g_b = _placements(7, 1)
    moves = [core.PASS, *g_a, *g_b]
    fc, nc, visits, value, move = root_node(moves, [30, 40, 1, 1, 8, 20],
                                        [0.5, 0.6, 0.1, 0.1, 0.5, 0.5])
    rng = np.array([12345], dtype=np.uint64)
    drawn = {}
    for _ in range(3000):
        ch = sample_decision_by_visits(fc, nc, visits, value, move, TAB, 0, 1.0, rng)
        drawn[int(move[ch])] = drawn.get(int(move[ch]), 0) + 1
    # the patch's placements tried once or a few times are never played
    assert set(drawn) == {core.PASS, g_a[0], g_b[0]}
    # decisions by their summed visits: pass 30, patch a 50, patch b 20 of 100
    assert abs(drawn[core.PASS] / 3000 - 0.30) < 0.04
    assert abs(drawn[g_a[0]] / 3000 - 0.50) < 0.04
    # a temperature near 0 plays the most visited decision
    ch = sample_decision_by_visits(fc, nc, visits, value, move, TAB, 0, 0.01, rng)
    assert ch == most_visited_decision(fc, nc, visits, value, move, TAB, 0)
    # the same stream, the same draw
    a = sample_decision_by_visits(fc, nc, visits, value, move, TAB, 0, 1.0,
                                  np.array([9], dtype=np.uint64))
    b = sample_decision_by_visits(fc, nc, visits, value, move, TAB, 0, 1.0,
                                  np.array([9], dtype=np.uint64))
    assert a == b


def _scores(params: np.ndarray, game: Game, codes: list[int]) -> list[float]:
    state, tab = game.state, game.tab
    p = int(game.to_move)
    qlo, qhi = state[core.S_QLO + p], state[core.S_QHI + p]
    bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
    holes0 = H.count_holes(tab, qlo, qhi)
    return [H.placement_score(tab, qlo, qhi, holes0, g, params[F.L_CONTACT],
                              params[F.L_HOLES], params[F.L_WINDOW], bonus_open)
            if g >= 0 else 0.0 for g in codes]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31), plies=st.integers(0, 40), m=st.sampled_from([2, 4, 8]))
def test_ties_are_searched_once_and_charges_are_the_distance_to_the_best(
        seed: int, plies: int, m: int) -> None:
    game = played_position("edition2", seed, plies)
    if game is None:
        return
    params = make_bot("mcts(eval=learned, widen=8, widen_by=1, place_cost=2)").params  # type: ignore[attr-defined]
    params = params.copy()
    params[F.L_SCALE] = 10.0  # the squash of a model: 0.05 reward a point
    acts = np.empty(1 + 3 * m, dtype=np.int64)
    na = H.top_placements(game.state, game.tab, acts, m, params[F.L_CONTACT],
                          params[F.L_HOLES], params[F.L_WINDOW], -1)
    full = [int(a) for a in acts[:na]]
    kept_n = F.distinct_placements(params, game.state, game.tab, acts, na, np.empty(na))
    kept = [int(a) for a in acts[:kept_n]]
    # pass, and per patch the first placement of each score, in the ranking's order
    assert kept[0] == core.PASS and set(kept) <= set(full)
    assert kept == [g for g in full if g in kept]
    sc = dict(zip(full, _scores(params, game, full), strict=True))
    seen: dict[tuple[int, float], int] = {}
    for g in full[1:]:
        key = (core.placement_patch(game.tab, g), sc[g])
        seen.setdefault(key, g)
    assert sorted(kept[1:]) == sorted(seen.values())
    # each kept placement's charge: 2 points a unit below its patch's best, at 0.05 a point
    move = np.array(kept, dtype=np.int64)
    charge = np.full(len(kept), np.nan)
    F.placement_charges(params, game.state, game.tab, move, charge, 0, len(kept),
                        np.empty(len(kept)))
    for i, g in enumerate(kept):
        if g < 0:
            assert charge[i] == 0.0
            continue
        patch = core.placement_patch(game.tab, g)
        best = max(sc[o] for o in kept[1:] if core.placement_patch(game.tab, o) == patch)
        assert charge[i] == pytest.approx(2 * 0.05 * (best - sc[g]))
        assert charge[i] >= 0.0


def test_a_prohibitive_charge_plays_the_rankings_placements() -> None:
    """With every placement below its patch's best charged out of reach, the widened search
    buys as it likes but places where the ranking says (the first of a tie), move by move."""
    bot = bind_bot(make_bot("mcts(eval=learned, iterations=150, widen=4, widen_by=1, "
                            "place_cost=100)"), E2)
    params = bot.params
    for seed in range(2):
        game = Game.new(E2, seed=seed)
        stream = np.array([seed + 3], dtype=np.uint64)
        while not game.finished:
            code = int(bot.choose_code(game, stream))
            if code >= 0 and not game.pending_leather:
                patch = core.placement_patch(game.tab, code)
                out = np.empty(1 + 3, dtype=np.int64)
                n = H.top_placements(game.state, game.tab, out, 1, params[F.L_CONTACT],
                                     params[F.L_HOLES], params[F.L_WINDOW], -1)
                best = [g for g in out[1:n] if core.placement_patch(game.tab, g) == patch]
                assert best and _scores(params, game, [code]) == _scores(params, game, best)
            game.apply(code)


def test_the_widened_search_is_deterministic() -> None:
    spec = "mcts(eval=learned, iterations=120, widen=4, widen_by=1, place_cost=5)"
    a = bind_bot(make_bot(spec), E2)
    b = bind_bot(make_bot(spec), E2)
    game = Game.new(E2, seed=4)
    for _ in range(30):
        if game.finished:
            break
        m = a.choose_code(game, np.array([1], dtype=np.uint64))
        assert b.choose_code(game, np.array([1], dtype=np.uint64)) == m
        game.apply(int(m))


def test_place_cost_is_a_knob_of_the_evaluations_only() -> None:
    spec = "mcts(eval=learned, widen=8, widen_by=1, place_cost=5)"
    assert make_bot(spec).params[F.L_PLACE_COST] == 5  # type: ignore[attr-defined]
    # without a widening by the ranking there is nothing to charge: said, not ignored
    for knobs in ("place_cost=5", "widen=8, place_cost=5", "widen_by=1, place_cost=5"):
        with pytest.raises(BotSpecError, match="needs widen > 0 and widen_by=1"):
            make_bot(f"mcts(eval=learned, {knobs})")
    with pytest.raises(BotSpecError, match="widen=0, widen_by=1"):
        make_bot("mcts(eval=net, widen_by=1, place_cost=1)")
    assert make_bot("mcts(eval=net)").params[F.L_PLACE_COST] == 0  # type: ignore[attr-defined]
    with pytest.raises(BotSpecError, match="place_cost"):
        make_bot("mcts(place_cost=1)")
    with pytest.raises(BotSpecError, match="place_cost"):
        make_bot("mcts(eval=learned, place_cost=-1)")


def test_the_two_benchmarks_of_the_placement_judge_print_their_figures() -> None:
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "ranking_effects.py"),
                          "--rules", "variants/quilt7", "--bot", "greedy", "--games", "8",
                          "--jobs", "1", "--json"], capture_output=True, text=True,
                         check=True, cwd=root)
    figures = json.loads(out.stdout)
    assert set(figures["effects"]) == {"contact", "holes_made", "window"}
    assert figures["games"] == 8 and figures["draws_per_game"] > 0
    for v in figures["effects"].values():
        assert v["low"] <= v["points"] <= v["high"]
    refused = subprocess.run([sys.executable, str(root / "benchmarks" / "ranking_effects.py"),
                              "--weights", "1,2"], capture_output=True, text=True, cwd=root)
    assert refused.returncode == 2 and "three numbers" in refused.stderr
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_search_cost.py"),
                          "--specs", "mcts(eval=learned, iterations=10);mcts(eval=learned, "
                          "iterations=10, widen=2, widen_by=1, place_cost=5)", "--games", "1",
                          "--repeats", "2"], capture_output=True, text=True, check=True,
                         cwd=root)
    assert out.stdout.count("ms a move") == 2 * 2 + 2 and "1.00x the first" in out.stdout
