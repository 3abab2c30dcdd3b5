"""Does `plan` size the verdict it leads to? For each case the plan's figure of deals (from
the per-deal spread of a large pilot) is played many times on simulated common deals (each
deal's own tilt shared by both rulesets, so pairing pays), and the share of studies whose
verdict reads "differs, beyond +-m" or "equivalent within +-m" is counted against the 80%
planned. The old figure for a difference (detect it from 0) is shown for contrast.

    python benchmarks/bench_plan.py [--runs 1000] [--margin 0.02] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from patchsim.analysis import estimators as E
from patchsim.analysis.planning import deals_beyond_margin, deals_within_margin


def paired(deals: int, change: float, reps: int, rng: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray]:
    """First-seat rates per deal (two seat-swapped games) under A and B on common deals."""
    tilt = rng.uniform(0.25, 0.75, (reps, deals))
    return (rng.binomial(2, tilt) / 2,
            rng.binomial(2, np.clip(tilt + change, 0, 1)) / 2)


def share(kind: str, deals: int, change: float, margin: float, runs: int,
          rng: np.random.Generator) -> float:
    a, b = paired(deals, change, runs, rng)
    found = [E.verdict(E.paired_difference(a[r], b[r], bounds=E.RATE_DIFF_BOUNDS),
                       margin).kind for r in range(runs)]
    return found.count(kind) / runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--margin", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    m = a.margin
    out: dict[str, str] = {}
    start = time.time()
    for d in (0.03, 0.04, 0.06):
        x, y = paired(200_000, d, 1, rng)
        sd = float((y - x).std(ddof=1))
        n = deals_beyond_margin(sd, d, m)
        old = E.deals_for_difference(sd, d)
        out[f"differs, beyond +-{100 * m:g}: true {100 * d:+g} points"] = (
            f"plan {n:,} deals: {100 * share('differs', n, d, m, a.runs, rng):.1f}%; the old "
            f"figure (detect it from 0) {old:,} deals: "
            f"{100 * share('differs', old, d, m, a.runs, rng):.1f}%")
    for c in (0.0, 0.005, 0.01):
        x, y = paired(200_000, c, 1, rng)
        sd = float((y - x).std(ddof=1))
        n = deals_within_margin(sd, m, c)
        out[f"equivalent within +-{100 * m:g}: true {100 * c:+g} points"] = (
            f"plan {n:,} deals: {100 * share('equivalent', n, c, m, a.runs, rng):.1f}%")
    out["seconds"] = f"{time.time() - start:.0f}"
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{a.runs} simulated studies a case, 80% power planned")
        for k, v in out.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
