"""Runner overhead and parallel scaling: the same games through the bare compiled loop, the
runner with one worker and with two. Prints one JSON object.

    python benchmarks/bench_runner.py [--bots greedy] [--games 20000]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--bots", default="greedy", help="';'-separated; self-play of each")
    ap.add_argument("--games", type=int, default=20000, help="games per pairing")
    args = ap.parse_args()

    from patchsim.bots.registry import make_bot
    from patchsim.engine.deal import deal_circle, deal_seed, deal_streams
    from patchsim.engine.tables import compile_ruleset
    from patchsim.play import loops as playout
    from patchsim.play.config import load_run_config
    from patchsim.play.execution import execute

    specs = [b.strip() for b in args.bots.split(";")]
    cfg = load_run_config(args.rules, games=args.games, bots=specs, seed=1, pairings="self")
    rs = cfg.rulesets[0]
    tables = compile_ruleset(rs)

    # the engine alone: the same deals and streams, straight through the compiled loop
    seeds = [deal_seed(cfg.seed, d) for d in range(cfg.deals)]
    idx = np.array([[tables.patch_index[c] for c in deal_circle(rs, s)] for s in seeds],
                   dtype=np.int64)
    streams = np.array([deal_streams(rs, s) for s in seeds], dtype=np.uint64)
    bots = [make_bot(s) for s in specs]
    kinds = np.array([bots[0].kind] * 2, dtype=np.int64)
    params = np.stack([bots[0].params] * 2)
    playout.play_games(tables.tab, idx[:2], streams[:2], kinds, params)
    t0 = time.perf_counter()
    for _order in range(2):
        playout.play_games(tables.tab, idx, streams, kinds, params)
    engine = 2 * cfg.deals * len(bots) / (time.perf_counter() - t0) if len(bots) == 1 else None

    out = {}
    tmp = Path(tempfile.mkdtemp())
    try:
        for jobs in (1, 2):
            run_dir = tmp / f"j{jobs}"
            t = time.perf_counter()
            execute(cfg, run_dir, jobs=jobs, backend="loky" if jobs > 1 else "sequential",
                    progress=False)
            out[jobs] = 2 * cfg.deals * len(cfg.pairings) / (time.perf_counter() - t)
        same = all((tmp / "j1" / f).read_bytes() == (tmp / "j2" / f).read_bytes()
                   for f in ("games.parquet", "events.parquet"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({
        "benchmark": "runner",
        "rules": rs.name,
        "bots": specs,
        "games": 2 * cfg.deals * len(cfg.pairings),
        "engine_games_per_s": round(engine) if engine else None,
        "runner_1_job_games_per_s": round(out[1]),
        "runner_2_jobs_games_per_s": round(out[2]),
        "runner_overhead_vs_engine": round(1 - out[1] / engine, 3) if engine else None,
        "speedup_2_jobs": round(out[2] / out[1], 2),
        "tables_identical_1_vs_2_jobs": same,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


if __name__ == "__main__":
    main()
