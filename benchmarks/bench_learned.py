"""The learned bot (``mcts(eval=learned)``) against the rollout search ``mcts``: speed and,
optionally, strength at equal time per move. Prints one JSON object.

1. self-play games/s, one core, whole games inside numba (``play_games``) on deals fixed
   before the clock starts, for each ``--learned-iterations`` and for
   ``mcts(iterations=--mcts-iterations)``; repeated, min/median. ``ms_per_move`` is the game
   time over the moves played (leather placements and forced passes included).
2. ``--match-deals D``: seat-swapped games on D common deals between the learned bot and mcts,
   both limited to ``--time-ms`` per move (``time_ms``: the batch runner refuses it because
   results then depend on the machine, so this driver plays them, ``--jobs`` threads). The
   iteration caps (20000) do not bind up to about 50 ms a move on one core. Win rate of the
   learned bot with a 95% normal interval. ``--match-a/--match-b SPEC`` replace the pair
   (e.g. iteration budgets: ``mcts(eval=learned, iterations=100)`` against
   ``mcts(iterations=1000)``).

    python benchmarks/bench_learned.py [--rules edition2] [--repeats 3]
        [--learned-iterations 25,100,400] [--mcts-iterations 1000] [--mcts-games 2]
        [--match-deals 200 --time-ms 10 --jobs 2] [--match-a SPEC --match-b SPEC]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def summary(values: list[float], digits: int = 3) -> dict:
    return {"min": round(min(values), digits), "median": round(statistics.median(values), digits),
            "runs": [round(v, digits) for v in values]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--learned-iterations", default="25,100,400")
    ap.add_argument("--learned-games", type=int, default=20, help="self-play games per repeat")
    ap.add_argument("--mcts-iterations", type=int, default=1000)
    ap.add_argument("--mcts-games", type=int, default=2)
    ap.add_argument("--match-deals", type=int, default=0)
    ap.add_argument("--time-ms", type=float, default=10.0)
    ap.add_argument("--match-a", default="", help="instead of the equal-time pair: this bot...")
    ap.add_argument("--match-b", default="", help="...against this one (iteration budgets)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    from patchsim.bots.learned import bind_bot
    from patchsim.bots.registry import make_bot
    from patchsim.engine.deal import deal_arrays
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.engine.tables import compile_ruleset
    from patchsim.play.loops import R_PLIES, R_WINNER, play_deals, play_games
    from patchsim.play.match import max_events, max_plies

    rs = load_ruleset(args.rules)
    tab = compile_ruleset(rs).tab
    out: dict = {
        "bench": "bench_learned", "rules": args.rules, "ruleset_hash": rs.content_hash(),
        "when": datetime.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(), "cores": os.cpu_count(),
        "load_average_start": round(os.getloadavg()[0], 2), "speed": {},
    }

    def self_play(spec: str, games: int) -> dict:
        bot = bind_bot(make_bot(spec), rs)
        circles, streams = deal_arrays(rs, np.arange(1000, 1000 + games))
        kinds = np.array([bot.kind, bot.kind], dtype=np.int64)
        params = np.stack([bot.params, bot.params])
        play_games(tab, circles[:1], streams[:1], kinds, params)  # compile / warm
        secs, plies = [], 0
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            res = play_games(tab, circles, streams, kinds, params)
            secs.append(time.perf_counter() - t0)
            plies = int(res[:, R_PLIES].sum())
        return {"spec": bot.spec, "games": games,
                "games_per_s": {"at_min_time": round(games / min(secs), 3),
                                "at_median_time": round(games / statistics.median(secs), 3)},
                "ms_per_move": round(1000 * min(secs) / plies, 3), "seconds": summary(secs)}

    for n in [int(x) for x in args.learned_iterations.split(",") if x and x != "0"]:
        spec = f"mcts(eval=learned, iterations={n})"
        out["speed"][spec] = self_play(spec, args.learned_games)
    ref = f"mcts(iterations={args.mcts_iterations})"
    if args.mcts_games:
        out["speed"][ref] = self_play(ref, args.mcts_games)
        base = out["speed"][ref]["games_per_s"]["at_min_time"]
        out["speedup_vs_" + ref] = {s: round(v["games_per_s"]["at_min_time"] / base, 1)
                                    for s, v in out["speed"].items() if s != ref}

    if args.match_deals:
        t = args.time_ms
        a = bind_bot(make_bot(args.match_a
                              or f"mcts(eval=learned, iterations=20000, time_ms={t:g})"), rs)
        b = bind_bot(make_bot(args.match_b or f"mcts(iterations=20000, time_ms={t:g})"), rs)
        circles, streams = deal_arrays(rs, np.arange(50_000, 50_000 + args.match_deals))
        kinds = np.array([a.kind, b.kind], dtype=np.int64)
        params = np.stack([a.params, b.params])
        chunks = np.array_split(np.arange(args.match_deals), max(1, 4 * args.jobs))

        def run(ix: np.ndarray) -> np.ndarray:
            res, *_ = play_deals(tab, circles[ix], streams[ix], kinds, params, max_plies(rs),
                                 max_events(rs), np.zeros(1, dtype=np.int64))
            return res

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.jobs) as ex:
            res = np.concatenate(list(ex.map(run, chunks)))
        seat = np.tile([0, 1], args.match_deals)  # the learned bot's seat in each game
        wins = res[:, R_WINNER] == seat
        p = float(wins.mean())
        half = 1.96 * math.sqrt(p * (1 - p) / len(wins))
        out["match"] = {"learned": a.spec, "opponent": b.spec, "games": int(len(wins)),
                        "learned_win_rate": round(p, 4),
                        "ci95": [round(p - half, 4), round(p + half, 4)],
                        "learned_win_rate_seat0": round(float(wins[seat == 0].mean()), 4),
                        "learned_win_rate_seat1": round(float(wins[seat == 1].mean()), 4),
                        "seconds": round(time.perf_counter() - t0, 1), "jobs": args.jobs}
    out["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
