"""Engine speed, three measurements, each repeated (min and median reported):

1. compiled random games/s: ``play_games`` (random vs random, whole games inside numba) on
   fixed deals; dealing is done before the clock starts.
2. Python-API random-bot games/s: ``make_bot("random")`` driven through the bot protocol
   (``bot.choose(game.copy(), game.legal_moves(), rng)``) and the Game API
   (``Game.new(rules, circle=...)``, ``game.apply(move)``), the way a user's own bot is
   played; circles dealt before the clock starts.
3. warm-up of a second process: a fresh ``python`` process, compiled code loaded from the
   cache that this process has just filled; timed inside the child from before its first
   ``import patchsim`` to the end of its first 10 compiled random games; the wall time of the
   whole process (interpreter start-up included) is reported beside it.

One core; the same deals in every repeat, so repeats differ only by timing noise.

    python benchmarks/bench_engine.py [--repeats 5] [--games 100000] [--python-games 1000]
                                      [--warmup-runs 5] [--rules edition2] [--json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

CHILD = """
import time
t0 = time.perf_counter()
import numpy as np
from patchsim.bots import policies
from patchsim.engine.deal import deal_arrays
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play.loops import play_games
rs = load_ruleset({rules!r})
tables = compile_ruleset(rs)
circles, streams = deal_arrays(rs, np.arange(10))
kinds = np.array([policies.RANDOM, policies.RANDOM], dtype=np.int64)
play_games(tables.tab, circles, streams, kinds, np.zeros((2, policies.N_PARAMS)))
print(time.perf_counter() - t0)
"""


def summary(values: list[float], digits: int = 3) -> dict:
    return {"min": round(min(values), digits), "median": round(statistics.median(values), digits),
            "max": round(max(values), digits), "runs": [round(v, digits) for v in values]}


def rates(work: float, seconds: list[float]) -> dict:
    """Work per second from the repeat times: at the minimum time (the least disturbed
    repeat) and at the median time."""
    return {"at_min_time": round(work / min(seconds)),
            "at_median_time": round(work / statistics.median(seconds)),
            "seconds": summary(seconds)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--repeats", type=int, default=5, help="repeats of each measurement")
    ap.add_argument("--games", type=int, default=100_000, help="compiled random games per repeat")
    ap.add_argument("--python-games", type=int, default=1_000,
                    help="games through the bot protocol and Game API per repeat")
    ap.add_argument("--warmup-runs", type=int, default=5, help="second processes started")
    ap.add_argument("--json", action="store_true", help="print one JSON object only")
    args = ap.parse_args()

    header = [
        f"bench_engine: rules {args.rules}, {args.repeats} repeats, one core; "
        f"{datetime.datetime.now().isoformat(timespec='seconds')}, python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f} "
        f"({os.cpu_count()} cores)",
        f"  [compiled] play_games: {args.games} random-vs-random games per repeat, whole games "
        "in numba, deals fixed beforehand",
        f"  [python-api] {args.python_games} games per repeat: Game.new(circle) + per move "
        "legal_moves(), make_bot('random').choose(game.copy(), moves, rng), apply(move)",
        f"  [warmup] {args.warmup_runs} fresh processes: from first import to the end of 10 "
        "compiled random games, compiled code from the cache",
    ]
    for line in header:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    t0 = time.perf_counter()
    from patchsim.bots import policies
    from patchsim.bots.registry import make_bot
    from patchsim.engine.deal import deal_arrays
    from patchsim.engine.game import Game
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.engine.tables import compile_ruleset
    from patchsim.play.loops import R_PLIES, play_games

    rs = load_ruleset(args.rules)
    tables = compile_ruleset(rs)
    kinds = np.array([policies.RANDOM, policies.RANDOM], dtype=np.int64)
    params = np.zeros((2, policies.N_PARAMS))
    circles, streams = deal_arrays(rs, np.arange(args.games))
    play_games(tables.tab, circles[:10], streams[:10], kinds, params)  # compile or load
    bot = make_bot("random")
    g = Game.new(rs, seed=0)
    bot.choose(g.copy(), g.legal_moves(), np.random.default_rng(0))
    first_start = time.perf_counter() - t0  # this process: compiled or loaded, plus deals

    # 1. compiled random games
    compiled, plies = [], 0
    for _ in range(args.repeats):
        t = time.perf_counter()
        res = play_games(tables.tab, circles, streams, kinds, params)
        compiled.append(time.perf_counter() - t)
        plies = int(res[:, R_PLIES].sum())
    mean_plies = plies / args.games

    # 2. the random bot through the bot protocol and the Game API
    ids = tables.patch_ids
    py_circles = [[ids[i] for i in row] for row in circles[: args.python_games]]
    python_api, py_plies = [], 0
    for _ in range(args.repeats):
        rng = np.random.default_rng(1)
        py_plies = 0
        t = time.perf_counter()
        for circle in py_circles:
            game = Game.new(rs, circle=circle)
            while not game.finished:
                moves = game.legal_moves()
                game.apply(bot.choose(game.copy(), moves, rng))
            py_plies += game.ply
        python_api.append(time.perf_counter() - t)

    # 3. a second process, compiled code from the cache
    child = CHILD.format(rules=args.rules)
    inside, wall = [], []
    for _ in range(args.warmup_runs):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", child], check=True, capture_output=True,
                             text=True)
        wall.append(time.perf_counter() - t)
        inside.append(float(out.stdout.strip().splitlines()[-1]))

    result = {
        "benchmark": "engine",
        "date": datetime.date.today().isoformat(),
        "rules": rs.name,
        "repeats": args.repeats,
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
        "this_process_first_start_s": round(first_start, 3),
        "compiled_random": {
            "games_per_repeat": args.games,
            "mean_plies": round(mean_plies, 2),
            "games_per_s": rates(args.games, compiled),
            "moves_per_s": rates(plies, compiled),
        },
        "python_api_random_bot": {
            "games_per_repeat": args.python_games,
            "mean_plies": round(py_plies / args.python_games, 2),
            "games_per_s": rates(args.python_games, python_api),
            "moves_per_s": rates(py_plies, python_api),
        },
        "second_process_warmup_s": summary(inside),
        "second_process_wall_s": summary(wall),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if args.json:
        print(json.dumps(result))
        return
    c, p = result["compiled_random"], result["python_api_random_bot"]
    w, ww = result["second_process_warmup_s"], result["second_process_wall_s"]
    print(f"{'measurement':<36}{'at min time':>14}{'at median':>14}")
    for label, r in (("compiled random games/s", c["games_per_s"]),
                     ("compiled random moves/s", c["moves_per_s"]),
                     ("python-api random-bot games/s", p["games_per_s"]),
                     ("python-api random-bot moves/s", p["moves_per_s"])):
        print(f"{label:<36}{r['at_min_time']:>14,}{r['at_median_time']:>14,}")
    print(f"{'second-process warm-up, s':<36}{w['min']:>14.3f}{w['median']:>14.3f}")
    print(f"{'second-process wall time, s':<36}{ww['min']:>14.3f}{ww['median']:>14.3f}")
    print(f"moves per game: {c['mean_plies']} (compiled), {p['mean_plies']} (python api); "
          f"peak RSS {result['peak_rss_mb']} MB; this process started in "
          f"{result['this_process_first_start_s']} s (compilation if the cache was cold)")


if __name__ == "__main__":
    main()
