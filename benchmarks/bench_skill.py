"""The skill trace's figures as JSON: per level its budget, cost (games/s), the first seat's
win rate with its 95% interval, the share of degenerate games, how well it packs (mean final
score, 7x7 bonus share, isolated holes at the end, games opening with 6+ passes, each with
its 95% interval over deals) and the strength gained over the level below (win rate, Elo,
Elo per doubling, cumulative Elo); the convergence verdict, the headline and the diversity
check at the strongest level; the weighted line behind the verdict (trend) and, with
--until-decided, how the trace stopped (stopping); the per-deal spread of the first seat's
win share at the strongest level (top_spread: what the default deals a level are sized from).

Strength and convergence are measured here (and by ``patchsim ladder``), not by timed tests.

    python benchmarks/bench_skill.py [--ruleset edition2] [--levels 25,50,100,200]
        [--deals 350] [--seed 1] [--jobs 1] [--diversity auto] [--no-compare] [--out DIR]
        [--until-decided [--budget 3000] [--work DIR]]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from patchsim.experiments.skill import (
    DEFAULT_BUDGET,
    DEFAULT_DEALS,
    DEFAULT_STEP,
    skill_trace,
    write_trace,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ruleset", default="edition2")
    ap.add_argument("--levels", default="25,50,100,200")
    ap.add_argument("--bots", default="greedy", help="scripted rungs, separated by ';'")
    ap.add_argument("--search", default=None)
    ap.add_argument("--deals", type=int, default=None,
                    help=f"deals a level (default {DEFAULT_DEALS}; the step with "
                         f"--until-decided, default {DEFAULT_STEP})")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--diversity", default="auto")
    ap.add_argument("--timed", action="store_true")
    ap.add_argument("--no-compare", dest="compare", action="store_false")
    ap.add_argument("--out", default=None, help="also write the trace folder here")
    ap.add_argument("--until-decided", action="store_true")
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    ap.add_argument("--work", default=None, help="the parts' run folders (--until-decided; "
                    "default a folder beside --out, else bench-skill.parts); resumes")
    a = ap.parse_args(argv)
    deals = a.deals if a.deals is not None else (DEFAULT_STEP if a.until_decided
                                                 else DEFAULT_DEALS)
    work = a.work or (f"{a.out}.parts" if a.out else "bench-skill.parts")
    levels = [float(x) if "." in x else int(x) for x in a.levels.split(",") if x.strip()]
    trace = skill_trace(a.ruleset, levels=levels, floor=[b for b in a.bots.split(";") if b],
                        search=a.search, deals=deals, seed=a.seed, jobs=a.jobs,
                        timed=a.timed, diversity=a.diversity, compare=a.compare,
                        until_decided=a.until_decided, budget=a.budget,
                        work_dir=work if a.until_decided else None,
                        echo=lambda line: print(line, file=sys.stderr, flush=True))
    figures = trace.figures()
    figures["load"] = [round(x, 2) for x in os.getloadavg()]
    top = trace.level_deals[trace.level_deals["level"] == len(trace.levels) - 1]
    figures["top_spread"] = round(float(top["first_player_win"].std(ddof=1)), 4)
    if a.out:
        # the command as given, without the folder (the games do not depend on it)
        args = list(argv if argv is not None else sys.argv[1:])
        shown = [x for i, x in enumerate(args) if x != "--out" and not x.startswith("--out=")
                 and (i == 0 or args[i - 1] != "--out")]
        write_trace(trace, a.out, " ".join(["python benchmarks/bench_skill.py", *shown]),
                    parts=work if a.until_decided else None)
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
