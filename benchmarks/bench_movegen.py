"""Move generation speed: perft (every legal move sequence to a depth) with the compiled core.

    python benchmarks/bench_movegen.py [--rules edition2] [--depth 3] [--repeats 5]

What is timed: one call of ``core.perft(state, tab, depth)`` per run, nothing else (the
position is set up and the function compiled or loaded from the cache before the clock
starts). perft walks the tree depth first: every move above the last ply is applied to a copy
of its position and the child's legal moves generated; the last ply's moves are only counted
(bulk counting, as chess engines do). Reported per position, as the minimum and the median
over the runs:

* leaves/s: perft(depth), the move sequences counted, per second;
* generations/s: legal-move generations (positions whose moves were listed) per second,
  the figure that does not depend on how wide the last ply is.

Positions: the start of the deal with seed 2024, and a mid-game position of the same deal
(tests/test_perft.py pins both). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

MID_GAME = (
    "q0=3xxxx2/9/9/7x1/6xx1/6xx1/5xxx1/6x2/9 q1=9/7x1/7x1/1x5x1/xxx1xx3/1x2x4/1x2x4/4x4/3xxx3 "
    "p0=14,4,3 p1=15,3,3 top=1 circle=P22,P30,P28,P23,P19,P26,P08,P07,P32,P06,P12,P03,*P17,P18,"
    "P11,P10,P05,P27,P29,P15,P24,P31,P09,P04,P20,P00 leather={leather} bonus=- end=- ply=12")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default="edition2", help="a 9x9 shipped ruleset")
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    from patchsim.engine import core
    from patchsim.engine.game import Game

    start = Game.new(args.rules, seed=2024)
    marks = ",".join(map(str, start.ruleset.leather_marks))
    positions = {"start": start,
                 "mid-game": Game.from_text(MID_GAME.format(leather=marks), rules=args.rules)}
    out: dict = {"benchmark": "movegen", "rules": args.rules, "depth": args.depth,
                 "repeats": args.repeats, "timed": "core.perft(state, tab, depth), one call "
                 "per run, compiled; last ply bulk-counted"}
    for label, game in positions.items():
        core.perft(game.state, game.tab, 2)  # compile or load from the cache: not timed
        # positions whose moves perft lists: every node above the last ply
        generations = sum(game.perft(d) for d in range(args.depth))
        times = []
        leaves = 0
        for _ in range(args.repeats):
            t = time.perf_counter()
            leaves = int(core.perft(game.state, game.tab, args.depth))
            times.append(time.perf_counter() - t)
        best, median = min(times), statistics.median(times)
        out[label] = {
            "perft": leaves, "generations": generations,
            "seconds_min": round(best, 4), "seconds_median": round(median, 4),
            "leaves_per_s_min_time": round(leaves / best),
            "leaves_per_s_median_time": round(leaves / median),
            "generations_per_s_min_time": round(generations / best),
            "generations_per_s_median_time": round(generations / median),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
