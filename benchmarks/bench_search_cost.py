"""What a move of a learned-search spec costs, on the same positions for every spec:

    python benchmarks/bench_search_cost.py --specs "mcts(eval=learned, iterations=400);\
mcts(eval=learned, iterations=400, widen=8, widen_by=1, place_cost=5)" --repeats 3

The positions are those of ``--games`` self-play games of the first spec (deals 0, 1, ...;
leather placements left out), collected before any clock starts. Each repeat times, for
each spec in turn, one ``choose_code`` call per position (the compiled search, as the game
loops call it; compiled and warmed on one position first) and prints milliseconds a move;
then min and median over the repeats, and each spec's median as a ratio to the first
spec's (the machine is shared: compare ratios within one run), with the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import make_bot
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specs", required=True, help="bot specs separated by ';'")
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--games", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rs = load_ruleset(a.rules)
    specs = [s.strip() for s in a.specs.split(";") if s.strip()]
    bots = [bind_bot(make_bot(s), rs) for s in specs]
    positions = []
    for seed in range(a.games):
        game = Game.new(rs, seed=seed)
        stream = np.array([seed + 1], dtype=np.uint64)
        while not game.finished:
            if not game.pending_leather:
                positions.append(game.copy())
            game.apply(int(bots[0].choose_code(game, stream)))
    for bot in bots:
        bot.choose_code(positions[0], np.array([1], dtype=np.uint64))
    load0 = os.getloadavg()[0]
    times: list[list[float]] = [[] for _ in specs]
    for rep in range(a.repeats):
        for i, bot in enumerate(bots):
            t0 = time.perf_counter()
            for pos in positions:
                bot.choose_code(pos, np.array([1], dtype=np.uint64))
            times[i].append((time.perf_counter() - t0) / len(positions) * 1000)
            print(f"repeat {rep + 1}: {specs[i]}: {times[i][-1]:.3f} ms a move")
    print(f"{len(positions)} positions from {a.games} games of {specs[0]} on {a.rules}; "
          f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    base = statistics.median(times[0])
    for spec, t in zip(specs, times, strict=True):
        med = statistics.median(t)
        print(f"  {spec}: min {min(t):.3f}, median {med:.3f} ms a move "
              f"({med / base:.2f}x the first)")


if __name__ == "__main__":
    main()
