"""Compiled versus interpreted: the same rules core run by numba and as plain Python
(``NUMBA_DISABLE_JIT=1``) must play exactly the same games.

One script plays fixed-seed games through the compiled loops (``playout.play_games`` and
``playout.play_game`` with move and event logs) and a game through the Python API, on edition 2
and on an unusual custom ruleset, and prints everything as JSON. It runs twice in subprocesses,
jitted and not, and the outputs must be identical.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r'''
import json
import sys

import numpy as np

from patchsim.engine import core
from patchsim.bots import policies
from patchsim.bots import scripted as S
from patchsim.bots import scripted as S
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.play.loops import R_ERROR, R_WIDTH, play_game, play_games
from patchsim.engine.ruleset import load_ruleset, ruleset_from_dict
from patchsim.engine.tables import compile_ruleset

ODD = {
    "name": "odd",
    "board": {"rows": 6, "cols": 8},
    "starting_buttons": 7,
    "track": {"last_space": 31, "income": [4, 9, 15, 22, 31], "leather": [3, 8, 12, 13, 25]},
    "offer_size": 4,
    "bonus": {"square": 3, "points": 5},
    "empty_square_penalty": 1,
    "patches": [
        {"id": "A", "shape": "XX", "cost": 1, "time": 1, "income": 0},
        {"id": "B", "shape": "XXX/X..", "cost": 3, "time": 2, "income": 1},
        {"id": "C", "shape": "XX/XX", "cost": 5, "time": 4, "income": 2},
        {"id": "D", "shape": ".X./XXX/.X.", "cost": 2, "time": 3, "income": 1},
        {"id": "E", "shape": "X", "cost": 0, "time": 0, "income": 0},
        {"id": "F", "shape": "XXXXX", "cost": 6, "time": 2, "income": 2},
        {"id": "G", "shape": "XX./.XX", "cost": 2, "time": 1, "income": 0},
        {"id": "H", "shape": "XXX/X.X", "cost": 1, "time": 5, "income": 1},
        {"id": "I", "shape": "XXXX/X...", "cost": 4, "time": 3, "income": 2},
        {"id": "J", "shape": "XXX/XXX", "cost": 7, "time": 6, "income": 3},
    ],
    "start_after": "A",
    "leather_when_full": "stay",
}

scripted = np.zeros(policies.N_PARAMS)
scripted[S.P_W_INCOME] = 1.0
scripted[S.P_W_AREA] = 1.0
scripted[S.P_W_COST] = 1.0
scripted[S.P_W_TIME] = 1.0
scripted[S.P_CONTACT] = 0.2
scripted[S.P_HOLES] = 1.0
scripted[S.P_WINDOW] = 0.3
scripted[S.P_EPSILON] = 0.1

PAIRINGS = [
    ((policies.RANDOM, policies.RANDOM), None),
    ((policies.RANDOM, policies.FIRST_FIT), None),
    ((policies.SCRIPTED, policies.RANDOM), scripted),
]

out = {}
for rules in (load_ruleset("edition2"), ruleset_from_dict(ODD)):
    tables = compile_ruleset(rules)
    rng = np.random.default_rng(12345)
    n = 30
    circles = np.array([[tables.patch_index[c] for c in deal_circle(rules, rng)]
                        for _ in range(n)], dtype=np.int64)
    seeds = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64).astype(np.uint64)
    for i, (kinds, vec) in enumerate(PAIRINGS):
        params = np.zeros((2, policies.N_PARAMS))
        if vec is not None:
            params[0] = vec
        k = np.array(kinds, dtype=np.int64)
        m = n if vec is None else 6
        res = play_games(tables.tab, circles[:m], seeds[:m], k, params)
        assert (res[:, R_ERROR] == 0).all(), res
        out[f"{rules.name}/games/{i}"] = res.tolist()
        # one game with the move list and the event log
        state = core.new_state(tables.tab, circles[0])
        moves = np.full(400, -9999, dtype=np.int64)
        ev = np.zeros((1000, core.EV_WIDTH), dtype=np.int64)
        result = np.zeros(R_WIDTH, dtype=np.int64)
        ne = play_game(tables.tab, state, k, params, seeds[0].copy(), moves, ev, result)
        out[f"{rules.name}/logged/{i}"] = {
            "moves": moves.tolist(), "events": ev[:ne].tolist(), "result": result.tolist(),
            "state": state.tolist(),
        }
    # the Python API: legal moves, move counts and summaries along a random game
    game = Game.new(rules, circle=deal_circle(rules, np.random.default_rng(7)))
    pick = np.random.default_rng(8)
    trace = []
    while not game.finished:
        moves = game.legal_moves()
        trace.append([len(moves), game.legal_move_count(), int(moves.codes.sum()),
                      game.summary()])
        game.apply(moves[int(pick.integers(len(moves)))])
    trace.append(game.summary())
    out[f"{rules.name}/api"] = trace

compiled = hasattr(core.apply_move, "py_func")  # a numba dispatcher, not a plain function
sys.stderr.write(f"compiled={compiled}\n")
json.dump(out, sys.stdout, sort_keys=True)
'''


def run_script(tmp_path: Path, jit: bool) -> subprocess.Popen:
    script = tmp_path / "parity.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    if not jit:
        env["NUMBA_DISABLE_JIT"] = "1"
    # numpy warns about the intended uint64 wrap-around of the random number generator when
    # it runs as plain Python; that is not a difference.
    env["PYTHONWARNINGS"] = "ignore::RuntimeWarning"
    return subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, jit: bool) -> dict:
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert f"compiled={jit}" in stderr  # the run really was (not) compiled
    return json.loads(stdout)


def test_compiled_and_interpreted_core_play_identical_games(tmp_path: Path) -> None:
    (tmp_path / "jit").mkdir()
    (tmp_path / "py").mkdir()
    jitted = run_script(tmp_path / "jit", jit=True)
    python = run_script(tmp_path / "py", jit=False)
    a, b = finish(jitted, jit=True), finish(python, jit=False)
    assert sorted(a) == sorted(b)
    for key in a:
        assert a[key] == b[key], f"compiled and interpreted runs differ in {key}"
    # the comparison is not vacuous: whole games were played on both rulesets
    for name in ("edition2", "odd"):
        games = a[f"{name}/games/0"]
        assert len(games) == 30
        assert len(a[f"{name}/api"]) > 10
        assert any(e for e in a[f"{name}/logged/0"]["events"])
