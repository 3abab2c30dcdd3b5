"""First-run benchmark: the main job with an empty compile cache against the same job with
the cache it filled.

What it times, in fresh `patchsim run` processes (the command a newcomer types):
- first run: ``patchsim run CONFIG --jobs N`` with PATCHSIM_CACHE_DIR set to a new, empty
  folder (numba compiles everything the run plays, then the run plays);
- cached run: the same command again with the same cache folder (numba loads the code).
Each repeat (--repeats, default 2) starts from a new empty cache folder; the two runs of a
repeat follow each other, so both see about the same background load. Printed: the wall
time of each (min and median), the compile cost (first minus cached, per repeat) and the
ratio of the medians (the issue's target: at most 1.5), with the load average before and
after. The machine is shared: compare ratios, not absolute figures across days.

    python benchmarks/bench_first_run.py [--config configs/edition2.yaml] [--jobs 2]
                                         [--repeats 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_run(config: str, jobs: int, cache: Path, out: Path) -> float:
    """Seconds of wall time of one whole `patchsim run` process on ``cache``."""
    env = dict(os.environ, PATCHSIM_CACHE_DIR=str(cache))
    env.pop("NUMBA_CACHE_DIR", None)  # it would override the folder chosen here
    cmd = [sys.executable, "-m", "patchsim.cli", "run", config, "--jobs", str(jobs),
           "--no-progress", "--out", str(out)]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT, env=env)
    return time.perf_counter() - t


def spread(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 1), "median": round(statistics.median(values), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="configs/edition2.yaml", help="the run to time")
    ap.add_argument("--jobs", type=int, default=2, help="the runs' --jobs")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print only the JSON object")
    args = ap.parse_args()

    load_before = os.getloadavg()[0]
    first: list[float] = []
    cached: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            cache = Path(tmp) / f"cache{i}"  # empty: nothing compiled yet
            first.append(timed_run(args.config, args.jobs, cache, Path(tmp) / f"first{i}"))
            cached.append(timed_run(args.config, args.jobs, cache, Path(tmp) / f"again{i}"))
            if not args.json:
                print(f"repeat {i + 1}: first run {first[-1]:.1f} s, cached {cached[-1]:.1f} s "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)
    compile_cost = [f - c for f, c in zip(first, cached, strict=True)]
    result = {
        "what": f"`patchsim run {args.config} --jobs {args.jobs}`, whole processes: an empty "
                "compile cache, then the cache it filled",
        "repeats": args.repeats,
        "first_run_seconds": spread(first),
        "cached_run_seconds": spread(cached),
        "compile_cost_seconds": spread(compile_cost),
        "first_over_cached": round(statistics.median(first) / statistics.median(cached), 2),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
    }
    if not args.json:
        print(f"# first run {result['first_run_seconds']['median']} s, cached "
              f"{result['cached_run_seconds']['median']} s (medians of {args.repeats}): "
              f"{result['first_over_cached']}x")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
