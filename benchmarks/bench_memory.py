"""Peak memory and time of `patchsim run` and `patchsim report` as the number of games grows.

    python benchmarks/bench_memory.py [--games 100000 1000000] [--bots "greedy(epsilon=0.05)"]
    python benchmarks/bench_memory.py --report-only RUN_DIR [RUN_DIR ...]

For each game count N, plays N games per pairing (one bot: N games of self-play; k bots:
every pairing, k(k+1)/2 of them) with
`patchsim run RULES --games N --bots BOTS --no-report --no-progress`, then writes the report
with `patchsim report RUN_DIR`, each as a subprocess of this script (the same Python,
`-m patchsim.cli`), and measures:

  peak_rss_mb       the largest resident set of any one process of the command (the kernel's
                    ru_maxrss from wait4: the patchsim process itself, or a worker if larger)
  main_peak_rss_mb  the peak resident set of the patchsim process itself (sampled)
  tree_peak_pss_mb  the peak of the summed proportional set size of the patchsim process and
                    all its workers (sampled; shared pages counted once): the machine's total
  wall_s            wall time; games_per_s = games / wall_s (run only)

Samples are taken every --interval seconds (default 0.2) with psutil (without it they are
null), so the sampled peaks can miss a spike shorter than that; peak_rss_mb cannot.

Prints a header (what is measured) on stderr and one JSON object on stdout. Run folders go to
--out (default: a temporary folder, deleted afterwards unless --keep).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:  # for the sampled figures; without it only the kernel's peak (peak_rss_mb) is given
    import psutil
except ImportError:  # pragma: no cover - psutil comes with the test extras
    psutil = None

MB = 1024 * 1024
# what is measured: the module doc from "For each game count" to the output format
HEADER = "For each game count" + __doc__.split("For each game count", 1)[1].split(
    "Prints a header", 1)[0].rstrip()


def measure(cmd: list[str], interval: float) -> dict[str, Any]:
    """Run ``cmd``; its wall time, exit code and peak memory (see the module doc)."""
    # output to a file, not a pipe: nobody reads it while the command runs
    with tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        main_peak, tree_peak, status, usage = _watch(proc.pid, interval)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by _watch: tell Popen
        log.seek(0)
        out = log.read().decode("utf-8", "replace")
    # ru_maxrss is in kilobytes on Linux, bytes on macOS
    scale = 1 if sys.platform == "darwin" else 1024
    return {"cmd": " ".join(cmd), "exit": proc.returncode, "wall_s": round(wall, 2),
            "peak_rss_mb": round(usage.ru_maxrss * scale / MB, 1),
            "main_peak_rss_mb": round(main_peak / MB, 1) if psutil else None,
            "tree_peak_pss_mb": round(tree_peak / MB, 1) if psutil else None,
            "output_tail": out[-600:]}


def _watch(pid: int, interval: float) -> tuple[int, int, int, Any]:
    """Sample the process ``pid`` and its descendants until it exits; reap it with wait4,
    whose rusage holds the kernel's exact peak (ru_maxrss). Returns (peak RSS of ``pid``,
    peak summed PSS of the tree, wait status, rusage)."""
    main = psutil.Process(pid) if psutil else None
    main_peak = tree_peak = 0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return main_peak, tree_peak, status, usage
        if main is None:
            time.sleep(interval)
            continue
        try:
            main_peak = max(main_peak, main.memory_info().rss)
            total = 0
            for p in [main, *main.children(recursive=True)]:
                try:
                    total += p.memory_full_info().pss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            tree_peak = max(tree_peak, total)
        except psutil.NoSuchProcess:
            pass
        time.sleep(interval)


def patchsim(*args: str) -> list[str]:
    return [sys.executable, "-m", "patchsim.cli", *args]


def folder_mb(path: Path, names: tuple[str, ...] = ("games.parquet", "events.parquet")) -> float:
    return round(sum((path / n).stat().st_size for n in names if (path / n).exists()) / MB, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, nargs="+", default=[100_000, 1_000_000],
                    help="game counts (per pairing) to measure")
    ap.add_argument("--bots", default="greedy(epsilon=0.05)",
                    help="';'-separated bot specs (self-play of each)")
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--jobs", type=int, default=-1, help="runner workers (-1: all cores)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="folder for the run folders")
    ap.add_argument("--keep", action="store_true", help="keep the run folders")
    ap.add_argument("--interval", type=float, default=0.2, help="sampling interval (s)")
    ap.add_argument("--report-only", type=Path, nargs="+", default=None, metavar="RUN_DIR",
                    help="only measure `patchsim report` on existing run folders")
    args = ap.parse_args()

    print(f"bench_memory.py\n{HEADER}\n", file=sys.stderr)
    result: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                              "memory_gb": round(os.sysconf("SC_PAGE_SIZE")
                                                 * os.sysconf("SC_PHYS_PAGES") / 1024**3, 1),
                              "rules": args.rules, "bots": args.bots, "jobs": args.jobs,
                              "runs": []}
    if args.report_only:
        for run_dir in args.report_only:
            rep = measure(patchsim("report", str(run_dir)), args.interval)
            result["runs"].append({"run_dir": str(run_dir), "tables_mb": folder_mb(run_dir),
                                   "report": rep})
        print(json.dumps(result, indent=2))
        return
    base = args.out or Path(tempfile.mkdtemp(prefix="bench-memory-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        for n in args.games:
            run_dir = base / f"{n}-games"
            if run_dir.exists():
                shutil.rmtree(run_dir)
            run = measure(patchsim("run", args.rules, "--games", str(n), "--bots", args.bots,
                                   "--seed", str(args.seed), "--jobs", str(args.jobs),
                                   "--out", str(run_dir), "--no-progress", "--no-report"),
                          args.interval)
            k = len([b for b in args.bots.split(";") if b.strip()])
            games = n * k * (k + 1) // 2
            run["games_per_s"] = round(games / run["wall_s"], 1) if run["wall_s"] else None
            entry: dict[str, Any] = {"games": games, "run": run}
            if run["exit"] == 0:
                entry["tables_mb"] = folder_mb(run_dir)
                entry["report"] = measure(patchsim("report", str(run_dir)), args.interval)
            result["runs"].append(entry)
            print(json.dumps(entry), file=sys.stderr)  # progress: one line per game count
            if not args.keep:
                shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
