"""The compiled loops are compiled for what a run plays: a run without a rollout search
(``mcts`` without ``eval=``) neither compiles nor loads the search's code, and both
specialisations of the loop play the same games.

The observable is numba's own record of what it compiled in a process: a dispatcher's
``signatures`` list the types it compiled (or loaded) for. A cached caller's code is loaded
whole, so its callees' dispatchers are never asked; only a process that compiles from an
empty cache shows that the pruned branch is not compiled (the slow test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from test_network import random_net

from patchsim.bots import policies
from patchsim.bots.features import L_REUSE, L_WAR_ROLLOUTS, L_WIDEN
from patchsim.bots.learned import bind_bot, param_rows
from patchsim.bots.registry import CompiledBot, make_bot
from patchsim.engine.deal import deal_arrays
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play.match import max_events, max_plies

E2 = load_ruleset("edition2")


def bound(spec: str, tables):
    bot = bind_bot(make_bot(spec), tables)
    return bot.bind(tables) if isinstance(bot, CompiledBot) else bot


def net_row(tables) -> np.ndarray:
    # a network bot's row: the parameter vector, then a (random) value network
    return np.concatenate([bound("mcts(eval=net, iterations=12)", tables).params,
                           random_net(3)])


def test_the_loop_holds_only_the_code_its_bots_use():
    tables = compile_ruleset(E2)
    greedy = bound("greedy", tables).params
    learned = bound("mcts(eval=learned, iterations=4)", tables).params
    wars = bound("mcts(eval=learned, iterations=4, war_rollouts=2)", tables).params
    search = bound("mcts(iterations=4)", tables).params
    S, L, M = policies.SCRIPTED, policies.LEARNED, policies.MCTS

    def needed(kinds, rows):
        return playout.code_needed(np.array(kinds), param_rows(rows))

    widen = bound("mcts(eval=learned, iterations=4, widen=2)", tables).params
    reuse = bound("mcts(eval=learned, iterations=4, reuse=1)", tables).params
    assert needed([S, L], [greedy, learned]) == (None, None, None, None, None)  # the main job
    assert needed([S, M], [greedy, search]) == (True, None, None, None, None)
    assert needed([L, L], [learned, wars]) == (None, None, True, None, None)
    assert needed([S, L], [greedy, net_row(tables)]) == (None, True, None, None, None)
    assert needed([M, L], [search, net_row(tables)]) == (True, True, None, None, None)
    assert needed([L, S], [widen, greedy]) == (None, None, None, True, None)
    assert needed([L, L], [learned, reuse]) == (None, None, None, None, True)
    # a rollout search's row is read as a search's: its slot L_WAR_ROLLOUTS is not a war
    odd = search.copy()
    odd[L_WAR_ROLLOUTS] = 5
    odd[L_WIDEN] = 3
    odd[L_REUSE] = 1
    assert needed([M, S], [odd, greedy]) == (True, None, None, None, None)


def python_api_moves(tables, bots, circle, streams) -> list[int]:
    """The moves of a game driven move by move through the Python API (each bot's
    choose_code, compiled for every bot), on the seats' streams as the loop draws them."""
    game = Game.new(E2, circle=circle)
    rngs = [streams[0:1].copy(), streams[1:2].copy()]
    while not game.finished:
        p = game.to_move
        game.apply(bots[p].choose_code(game, rngs[p]))
    return list(game.history)


@pytest.mark.parametrize("spec", ["war", "net", "widen", "reuse"])
def test_each_specialisation_plays_as_the_python_api_and_its_code_matters(spec):
    # the loop compiled for what the bots use (here the war rollouts, the value network or
    # the widening) plays the games the Python API plays; the loop without that code plays
    # others, so a bot whose code were pruned by mistake would show
    tables = compile_ruleset(E2)
    greedy = bound("greedy", tables)
    if spec == "war":
        bot = bound("mcts(eval=learned, iterations=30, war_rollouts=1)", tables)
        row = bot.params
        pruned = row.copy()
        pruned[L_WAR_ROLLOUTS] = 0
    elif spec == "reuse":
        bot = bound("mcts(eval=learned, iterations=30, reuse=1)", tables)
        row = bot.params
        pruned = row.copy()
        pruned[L_REUSE] = 0
    elif spec == "widen":
        bot = bound("mcts(eval=learned, iterations=30, widen=2)", tables)
        row = bot.params
        pruned = row.copy()
        pruned[L_WIDEN] = 0
    else:
        bot = bound("mcts(eval=net, iterations=12)", tables)
        row = net_row(tables)
        bot.params = row
        pruned = row[:policies.N_PARAMS]
    kinds = np.array([bot.kind, greedy.kind], dtype=np.int64)
    rows = param_rows([row, greedy.params])
    circles, streams = deal_arrays(E2, np.arange(2, dtype=np.int64))

    def loop_moves(like=None) -> list[list[int]]:
        res, moves, *_, bad = playout.play_deals(
            tables.tab, circles, streams, kinds, rows, max_plies(E2), max_events(E2),
            np.zeros(1, dtype=np.int64), like=like)
        assert bad == -1
        plies = res[:, playout.R_PLIES]
        ends = np.cumsum(plies)
        return [moves[e - n:e].tolist() for e, n in zip(ends, plies, strict=True)]

    games = loop_moves()
    for i in range(2):  # row 2i: the pairing's first bot (ours) in seat 0
        circle = [tables.patch_ids[k] for k in circles[i]]
        assert games[2 * i] == python_api_moves(tables, (bot, greedy), circle, streams[i])
    assert loop_moves(like=(kinds, param_rows([pruned, greedy.params]))) != games


# a fresh process with an empty cache warms a run up as `patchsim run` does and tells what
# numba compiled in it
WARM = """
import json, sys
from patchsim.bots import network, search
from patchsim.bots import features
from patchsim.play import loops
from patchsim.play.config import load_run_config
from patchsim.play.worker import warm_up

warm_up(load_run_config("edition2", games=2, bots=sys.argv[1].split(";")))
import gc
from numba.core.registry import CPUDispatcher
twice = sorted(d.py_func.__name__ for d in gc.get_objects()
               if isinstance(d, CPUDispatcher) and len(d.signatures) > 1)
print(json.dumps({"mcts": len(search.mcts_search.signatures),
                  "twice": twice,
                  "loop": len(loops._play_deals.signatures),
                  "tree_loaded": len(features.learned_tree.stats.cache_hits),
                  "tree_compiled": len(features.learned_tree.stats.cache_misses)}))
"""


def compiled_in_fresh_process(bots: str, cache: str) -> dict:
    env = dict(os.environ, PATCHSIM_CACHE_DIR=cache)
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", WARM, bots], env=env, capture_output=True,
                         text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_run_without_a_rollout_search_does_not_compile_it(tmp_path):
    # an empty cache: everything the warm-up needs is compiled here, in this process
    got = compiled_in_fresh_process("greedy;mcts(eval=learned, iterations=4)",
                                    str(tmp_path / "cache"))
    assert got["loop"] == 1  # compiled here (the observable can see a compile)
    assert got["mcts"] == 0  # and the rollout search's branch was pruned
    # what compile_ahead compiles beside the helper is what the loop calls, not a second
    # signature of it (a literal 0 for a typed int would compile the function twice)
    assert got["twice"] == []
    # the learned search's tree was compiled beside, by the helper (play.compile_ahead), for
    # the very types the loop calls it with: this process loaded it from the cache
    assert got["tree_loaded"] == 1 and got["tree_compiled"] == 0


def test_the_warm_up_of_a_run_with_a_python_bot_compiles_the_move_policy():
    # a compiled bot against a Python one moves through choose_move, not the loop: that is
    # what the warm-up compiles (or loads) then, and a Python bot's pairing plays nothing
    from patchsim.play.config import load_run_config
    from patchsim.play.worker import warm_up

    cfg = load_run_config("edition2", games=2, bots=["unruly_bots:Sleeper(at=2)", "greedy"],
                          pairings="cross")
    warm_up(cfg)
    assert policies.choose_move.signatures
