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

from patchsim.bots import policies
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import make_bot
from patchsim.engine.deal import deal_arrays
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play.match import max_events, max_plies

E2 = load_ruleset("edition2")


def test_the_loop_holds_the_rollout_search_only_when_a_bot_is_one():
    assert playout.rollout_search([policies.SCRIPTED, policies.LEARNED]) is None
    assert playout.rollout_search(np.array([policies.RANDOM, policies.RANDOM])) is None
    assert playout.rollout_search([policies.SCRIPTED, policies.MCTS]) is True
    assert playout.rollout_search([policies.MCTS]) is True


def test_both_specialisations_play_the_same_games():
    # the main job's pairing (greedy against the learned search) through the loop without
    # the rollout search, and through the loop that has it: the same moves, events, results
    tables = compile_ruleset(E2)
    bots = [bind_bot(make_bot(s), tables)
            for s in ("greedy", "mcts(eval=learned, iterations=8, sample_plies=4, "
                                "temperature=1)")]
    kinds = np.array([b.kind for b in bots], dtype=np.int64)
    params = np.stack([b.params for b in bots])
    circles, streams = deal_arrays(E2, np.arange(3, dtype=np.int64))

    def play(searches):
        return playout.play_deals(tables.tab, circles, streams, kinds, params, max_plies(E2),
                                  max_events(E2), np.zeros(1, dtype=np.int64),
                                  searches=searches)

    without, with_search = play(None), play([policies.MCTS])
    assert without[4] == -1
    for a, b in zip(without[:4], with_search[:4], strict=True):
        np.testing.assert_array_equal(a, b)
    # and the specialisation taken without a search is the one whose flag is None
    types = [str(sig[-1]) for sig in playout._play_deals.signatures]
    assert "none" in types and "bool" in types


# a fresh process with an empty cache warms a run up as `patchsim run` does and tells what
# numba compiled in it
WARM = """
import json, sys
from patchsim.bots import network, search
from patchsim.bots import features
from patchsim.play.config import load_run_config
from patchsim.play.worker import warm_up

warm_up(load_run_config("edition2", games=2, bots=sys.argv[1].split(";")))
print(json.dumps({"mcts": len(search.mcts_search.signatures),
                  "learned": len(features.learned_search.signatures)}))
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
    assert got["learned"] == 1  # compiled here (the observable can see a compile)
    assert got["mcts"] == 0  # and the rollout search's branch was pruned
