"""Bot speed: scripted vs scripted full games/s, MCTS iterations/s and games/s, one core.
Prints one JSON object.

    python benchmarks/bench_bots.py [--rules edition2] [--scripted-games 4000]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--scripted", default="greedy")
    ap.add_argument("--scripted-games", type=int, default=4000)
    ap.add_argument("--mcts-iterations", type=int, default=1000)
    ap.add_argument("--mcts-extra", default="", help="more mcts parameters, e.g. ', top_k=3'")
    ap.add_argument("--mcts-games", type=int, default=4)
    ap.add_argument("--positions", type=int, default=200, help="positions for iterations/s")
    args = ap.parse_args()

    t0 = time.perf_counter()
    from patchsim.bots import search
    from patchsim.bots.registry import make_bot
    from patchsim.engine.deal import deal_circle
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.engine.tables import compile_ruleset
    from patchsim.play.loops import R_SCORE, play_games

    rs = load_ruleset(args.rules)
    tables = compile_ruleset(rs)
    rng = np.random.default_rng(0)

    def deals(n: int) -> tuple[np.ndarray, np.ndarray]:
        circles = np.array([[tables.patch_index[c] for c in deal_circle(rs, rng)]
                            for _ in range(n)], dtype=np.int64)
        seeds = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64).astype(np.uint64)
        return circles, seeds

    scripted = make_bot(args.scripted)
    mcts = make_bot(f"mcts(iterations={args.mcts_iterations}{args.mcts_extra})")
    kinds = np.array([scripted.kind, scripted.kind], dtype=np.int64)
    params = np.stack([scripted.params, scripted.params])
    c, s = deals(4)
    play_games(tables.tab, c, s, kinds, params)
    mk = np.array([mcts.kind, mcts.kind], dtype=np.int64)
    mp = np.stack([mcts.params, mcts.params])
    small = make_bot(mcts.spec.replace(f"iterations={args.mcts_iterations}", "iterations=5"))
    play_games(tables.tab, c[:1], s[:1], mk, np.stack([small.params, small.params]))
    warmup = time.perf_counter() - t0

    c, s = deals(args.scripted_games)
    t1 = time.perf_counter()
    res = play_games(tables.tab, c, s, kinds, params)
    dt = time.perf_counter() - t1
    scripted_mean = float(res[:, R_SCORE:R_SCORE + 2].mean())

    # MCTS iterations/s: time the search alone on positions from scripted games (every
    # position where the search bot has a real choice), then whole games at the budget.
    from patchsim.engine import core
    from patchsim.engine.game import Game

    positions = []
    prng = np.random.default_rng(3)
    for _ in range(args.positions // 20 + 1):
        g = Game.new(rs, seed=prng)
        while not g.finished and len(positions) < args.positions:
            code = scripted.choose_code(g, np.array([prng.integers(2**63)], dtype=np.uint64))
            if g.pending_leather == 0 and g.legal_move_count() > 1 and prng.random() < 0.5:
                positions.append(g.state.copy())
            g.apply(code)
    buf = np.empty(core.max_moves(tables.tab), dtype=np.int64)
    rng_state = np.array([12345], dtype=np.uint64)
    t2 = time.perf_counter()
    for st in positions:
        search.mcts_move(mcts.params, st, tables.tab, rng_state, buf)
    dt2 = time.perf_counter() - t2
    iters_per_s = len(positions) * args.mcts_iterations / dt2

    c, s = deals(args.mcts_games)
    t3 = time.perf_counter()
    play_games(tables.tab, c, s, mk, mp)
    dt3 = time.perf_counter() - t3
    print(json.dumps({
        "benchmark": "bots",
        "rules": rs.name,
        "warmup_s": round(warmup, 3),
        "scripted_bot": scripted.spec,
        "scripted_selfplay_games_per_s": round(args.scripted_games / dt),
        "scripted_selfplay_mean_score": round(scripted_mean, 2),
        "mcts_bot": mcts.spec,
        "mcts_positions_searched": len(positions),
        "mcts_iterations_per_s": round(iters_per_s),
        "mcts_selfplay_games": args.mcts_games,
        "mcts_selfplay_games_per_s": round(args.mcts_games / dt3, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


if __name__ == "__main__":
    main()
