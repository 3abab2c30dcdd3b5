"""Bot speed, two measurements, each repeated (min and median reported):

1. scripted self-play games/s: ``play_games`` with the scripted bot (default ``greedy``) in
   both seats, whole games inside numba, on fixed deals dealt before the clock starts.
2. search bot in its own games: ``mcts(iterations=N)`` plays itself on fixed deals, one
   compiled ``mcts_move`` call per move from a thin Python driver. Timed separately:
   - iterations/s: the ``mcts_move`` calls that search (no pending leather, more than one
     root action: each runs exactly N iterations), iterations divided by their summed time.
     The positions are the ones MCTS self-play reaches, not positions from scripted games
     (an earlier version timed those, which flattered the search by about 15%).
   - games/s: whole games, every move included (leather placements and forced passes
     too); the driver's own check for a searching position is timed and left out.

One core; the same deals and random streams in every repeat, so every repeat plays the same
games and repeats differ only by timing noise.

    python benchmarks/bench_bots.py [--repeats 5] [--scripted greedy] [--scripted-games 4000]
                                    [--mcts-iterations 1000] [--mcts-games 2]
                                    [--rules edition2] [--json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import sys
import time

import numpy as np


def summary(values: list[float], digits: int = 3) -> dict:
    return {"min": round(min(values), digits), "median": round(statistics.median(values), digits),
            "max": round(max(values), digits), "runs": [round(v, digits) for v in values]}


def rates(work: float, seconds: list[float], digits: int = 0) -> dict:
    """Work per second from the repeat times: at the minimum time (the least disturbed
    repeat) and at the median time."""
    def r(x: float) -> float:
        return round(x, digits) if digits else round(x)
    return {"at_min_time": r(work / min(seconds)),
            "at_median_time": r(work / statistics.median(seconds)),
            "seconds": summary(seconds)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--repeats", type=int, default=5, help="repeats of each measurement")
    ap.add_argument("--scripted", default="greedy")
    ap.add_argument("--scripted-games", type=int, default=4000, help="games per repeat")
    ap.add_argument("--mcts-iterations", type=int, default=1000)
    ap.add_argument("--mcts-extra", default="", help="more mcts parameters, e.g. ', top_k=3'")
    ap.add_argument("--mcts-games", type=int, default=2, help="self-play games per repeat")
    ap.add_argument("--json", action="store_true", help="print one JSON object only")
    args = ap.parse_args()

    from patchsim.bots import search
    from patchsim.bots.registry import make_bot
    from patchsim.engine import core
    from patchsim.engine.deal import deal_arrays
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.engine.tables import compile_ruleset
    from patchsim.play.loops import R_PLIES, R_SCORE, play_games

    scripted = make_bot(args.scripted)
    mcts = make_bot(f"mcts(iterations={args.mcts_iterations}{args.mcts_extra})")
    if mcts.params[search.M_TIME_MS] > 0:
        ap.error("time_ms would stop searches early: iterations/s needs whole searches")
    header = [
        f"bench_bots: rules {args.rules}, {args.repeats} repeats, one core; "
        f"{datetime.datetime.now().isoformat(timespec='seconds')}, python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f} "
        f"({os.cpu_count()} cores)",
        f"  [scripted] play_games: {args.scripted_games} {scripted.spec} self-play games per "
        "repeat, whole games in numba, deals fixed beforehand",
        f"  [mcts] {args.mcts_games} {mcts.spec} self-play games per repeat (one compiled "
        "mcts_move per move): iterations/s over the searching calls only; games/s over whole "
        "games",
    ]
    for line in header:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    t0 = time.perf_counter()
    rs = load_ruleset(args.rules)
    tables = compile_ruleset(rs)
    tab = tables.tab
    circles, streams = deal_arrays(rs, np.arange(args.scripted_games))
    kinds = np.array([scripted.kind, scripted.kind], dtype=np.int64)
    params = np.stack([scripted.params, scripted.params])
    play_games(tab, circles[:4], streams[:4], kinds, params)  # compile or load
    small = make_bot(mcts.spec.replace(f"iterations={args.mcts_iterations}", "iterations=5"))
    mk = np.array([small.kind, small.kind], dtype=np.int64)
    play_games(tab, circles[:1], streams[:1], mk, np.stack([small.params, small.params]))
    first_start = time.perf_counter() - t0

    # 1. scripted self-play
    scripted_times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        res = play_games(tab, circles, streams, kinds, params)
        scripted_times.append(time.perf_counter() - t)
    scripted_mean = float(res[:, R_SCORE:R_SCORE + 2].mean())
    scripted_plies = int(res[:, R_PLIES].sum())

    # 2. the search bot playing itself
    m_circles, m_streams = deal_arrays(rs, 10_000 + np.arange(args.mcts_games))
    buf = np.empty(core.max_moves(tab), dtype=np.int64)
    acts = np.empty(1 + tab[core.T_OFFER] * 64, dtype=np.int64)
    search_times, game_times = [], []
    searches = plies = 0
    scores: list[int] = []
    for _ in range(args.repeats):
        search_s = check_s = 0.0
        searches = plies = 0
        scores = []
        t = time.perf_counter()
        for i in range(args.mcts_games):
            state = core.new_state(tab, m_circles[i])
            rng = [m_streams[i, 0:1].copy(), m_streams[i, 1:2].copy()]
            while True:
                p = core.to_move(state, tab)
                if p < 0:
                    break
                tc = time.perf_counter()
                searching = state[core.S_PENDING] == 0 and search.search_actions(
                    mcts.params, state, tab, acts) > 1
                check_s += time.perf_counter() - tc
                if searching:
                    ts = time.perf_counter()
                    code = search.mcts_move(mcts.params, state, tab, rng[p], buf)
                    search_s += time.perf_counter() - ts
                    searches += 1
                else:  # a leather placement or a forced pass: no search
                    code = search.mcts_move(mcts.params, state, tab, rng[p], buf)
                core.apply_move(state, tab, code)
                plies += 1
            scores += [int(core.score(state, tab, 0)), int(core.score(state, tab, 1))]
        game_times.append(time.perf_counter() - t - check_s)
        search_times.append(search_s)
    iterations = searches * args.mcts_iterations

    result = {
        "benchmark": "bots",
        "date": datetime.date.today().isoformat(),
        "rules": rs.name,
        "repeats": args.repeats,
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
        "this_process_first_start_s": round(first_start, 3),
        "scripted_selfplay": {
            "bot": scripted.spec,
            "games_per_repeat": args.scripted_games,
            "games_per_s": rates(args.scripted_games, scripted_times),
            "mean_score": round(scripted_mean, 2),
            "mean_plies": round(scripted_plies / args.scripted_games, 2),
        },
        "mcts_selfplay": {
            "bot": mcts.spec,
            "games_per_repeat": args.mcts_games,
            "searching_moves_per_repeat": searches,
            "moves_per_repeat": plies,
            "iterations_per_s": rates(iterations, search_times),
            "games_per_s": rates(args.mcts_games, game_times, 3),
            "mean_score": round(float(np.mean(scores)), 2),
        },
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if args.json:
        print(json.dumps(result))
        return
    s, m = result["scripted_selfplay"], result["mcts_selfplay"]
    print(f"{'measurement':<44}{'at min time':>14}{'at median':>14}")
    for label, r, fmt in ((f"{s['bot']} self-play games/s", s["games_per_s"], ",.0f"),
                          (f"{m['bot']} iterations/s (own games)", m["iterations_per_s"],
                           ",.0f"),
                          (f"{m['bot']} self-play games/s", m["games_per_s"], ".3f")):
        print(f"{label:<44}{r['at_min_time']:>14{fmt}}{r['at_median_time']:>14{fmt}}")
    print(f"{s['bot']}: mean score {s['mean_score']}, {s['mean_plies']} moves per game; "
          f"{m['bot']}: {m['searching_moves_per_repeat']} searches in "
          f"{m['moves_per_repeat']} moves per repeat, mean score {m['mean_score']}; "
          f"peak RSS {result['peak_rss_mb']} MB; this process started in "
          f"{result['this_process_first_start_s']} s")


if __name__ == "__main__":
    main()
