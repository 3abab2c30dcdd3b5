"""Runner benchmark: whole `patchsim run` processes with 1 and 2 workers, against the bare
compiled loop playing the same games.

What it times:
- engine: the same deals and bot streams played by the compiled loop alone (play_deals), in
  this process, after a warm-up; no tables, no files.
- run --jobs N: the wall time of a whole `patchsim run` process (start-up, loading compiled
  code from the cache, planning, playing, storing batches, the merge into Parquet, the
  manifest; no report), started afresh each time into a new folder, on --backend (default
  auto: compiled bots play in threads of the run's process; loky: worker processes).
- fixed cost, --jobs N: the same whole process for 20 games (start-up, workers, warm-up,
  merge, exit; hardly any play). Subtracting it gives the scaling of the per-game part,
  which is what a longer run approaches.
Each figure is repeated (--repeats, default 3) and printed as min and median; the scaling is
the ratio of the medians of --jobs 1 and --jobs 2, measured in the same run (the machine is
shared: compare ratios, not absolute figures across days). Prints one JSON object.

    python benchmarks/bench_runner.py [--bots greedy] [--games 100000] [--repeats 3]
                                      [--backend auto|loky|threading]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def timed_run(args: argparse.Namespace, jobs: int, out: Path) -> float:
    cmd = [sys.executable, "-m", "patchsim.cli", "run", args.rules, "--games", str(args.games),
           "--bots", args.bots, "--seed", "1", "--jobs",
           str(jobs), "--backend", args.backend, "--no-report", "--no-progress", "--out",
           str(out)]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--bots", default="greedy", help="one bot spec: self-play")
    ap.add_argument("--games", type=int, default=100_000, help="games (self-play)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", default="auto", help="the runs' --backend")
    ap.add_argument("--json", action="store_true", help="print only the JSON object")
    args = ap.parse_args()

    from patchsim.bots.registry import make_bot
    from patchsim.engine.deal import deal_arrays, deal_seed
    from patchsim.engine.tables import compile_ruleset
    from patchsim.play import loops
    from patchsim.play.config import load_run_config
    from patchsim.play.match import max_events, max_plies

    cfg = load_run_config(args.rules, games=args.games, bots=[args.bots], seed=1)
    rs = cfg.rulesets[0]
    tables = compile_ruleset(rs)
    bot = make_bot(args.bots)
    seeds = np.array([deal_seed(cfg.seed, d) for d in range(cfg.deals)], dtype=np.int64)
    circles, streams = deal_arrays(rs, seeds)
    kinds = np.array([bot.kind, bot.kind], dtype=np.int64)
    params = np.stack([bot.params, bot.params])

    def engine() -> float:
        t = time.perf_counter()
        loops.play_deals(tables.tab, circles, streams, kinds, params, max_plies(rs),
                         max_events(rs), np.zeros(1, dtype=np.int64))
        return time.perf_counter() - t

    engine()  # compile or load, outside the timing
    games = 2 * cfg.deals
    eng = [engine() for _ in range(args.repeats)]
    runs: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as tmp:
        # one untimed small run: a changed source tree recompiles into a fresh cache once
        warm = argparse.Namespace(**{**vars(args), "games": 20})
        timed_run(warm, 1, Path(tmp) / "warm")
        fixed: dict[int, list[float]] = {1: [], 2: []}
        for i in range(args.repeats):
            for jobs in (1, 2):  # interleaved, so both see the same background load
                out = Path(tmp) / f"r{jobs}-{i}"
                runs[jobs].append(timed_run(args, jobs, out))
                shutil.rmtree(out)
                fixed[jobs].append(timed_run(warm, jobs, out))
                shutil.rmtree(out)
    med = {j: statistics.median(v) for j, v in runs.items()}
    result = {
        "what": f"{args.bots} self-play on {args.rules}, {games} games; whole `patchsim run` "
                f"processes (no report, --backend {args.backend}) vs the bare compiled loop",
        "repeats": args.repeats,
        "engine_games_per_s": {"min_time": games / min(eng),
                               "median": games / statistics.median(eng)},
        "run_jobs1_seconds": {"min": min(runs[1]), "median": med[1]},
        "run_jobs2_seconds": {"min": min(runs[2]), "median": med[2]},
        "run_jobs1_games_per_s": games / med[1],
        "run_jobs2_games_per_s": games / med[2],
        "scaling_jobs2_over_jobs1": med[1] / med[2],
        "fixed_cost_seconds": {"jobs1_median": statistics.median(fixed[1]),
                               "jobs2_median": statistics.median(fixed[2])},
        "scaling_of_per_game_part": (med[1] - statistics.median(fixed[1]))
        / (med[2] - statistics.median(fixed[2])),
        "overhead_jobs1_over_engine": med[1] / statistics.median(eng) - 1,
        "load_average": os.getloadavg()[0],
    }
    if not args.json:
        print(f"# {result['what']}; median of {args.repeats}")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
