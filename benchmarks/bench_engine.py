"""Engine speed: random vs random through the compiled loop, and a plain-Python bot through
the public API. Prints one JSON object.

    python benchmarks/bench_engine.py [--games N] [--rules edition2]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--games", type=int, default=200_000, help="compiled random games")
    ap.add_argument("--python-games", type=int, default=2_000, help="games via the Python API")
    ap.add_argument("--rules", default="edition2")
    args = ap.parse_args()

    t0 = time.perf_counter()
    from patchsim.bots import policies
    from patchsim.engine.deal import deal_circle
    from patchsim.engine.game import Game
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.engine.tables import compile_ruleset
    from patchsim.play.loops import R_PLIES, play_games

    rs = load_ruleset(args.rules)
    tables = compile_ruleset(rs)
    rng = np.random.default_rng(0)

    def batch(n: int) -> tuple[np.ndarray, np.ndarray]:
        circles = np.array([[tables.patch_index[c] for c in deal_circle(rs, rng)]
                            for _ in range(n)], dtype=np.int64)
        seeds = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64).astype(np.uint64)
        return circles, seeds

    kinds = np.array([policies.RANDOM, policies.RANDOM], dtype=np.int64)
    params = np.zeros((2, policies.N_PARAMS))
    c, s = batch(10)
    play_games(tables.tab, c, s, kinds, params)  # compile or load from cache
    warmup = time.perf_counter() - t0

    c, s = batch(args.games)
    t1 = time.perf_counter()
    res = play_games(tables.tab, c, s, kinds, params)
    dt = time.perf_counter() - t1
    plies = int(res[:, R_PLIES].sum())

    # A bot written in plain Python, driving the engine through its public API.
    prng = np.random.default_rng(1)
    t2 = time.perf_counter()
    py_plies = 0
    for _ in range(args.python_games):
        g = Game.new(rs, seed=prng)
        while not g.finished:
            moves = g.legal_moves()
            g.apply(moves[int(prng.integers(len(moves)))])
        py_plies += g.ply
    dt2 = time.perf_counter() - t2

    print(json.dumps({
        "benchmark": "engine",
        "rules": rs.name,
        "warmup_s": round(warmup, 3),
        "compiled_random_games": args.games,
        "compiled_random_games_per_s": round(args.games / dt),
        "compiled_random_moves_per_s": round(plies / dt),
        "mean_plies": round(plies / args.games, 2),
        "python_api_random_games": args.python_games,
        "python_api_random_games_per_s": round(args.python_games / dt2),
        "python_api_moves_per_s": round(py_plies / dt2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


if __name__ == "__main__":
    main()
