"""Do fair prices stay put? Planted mispriced patches played by the engine, each studied as
`patchsim prices` studies it (the default costs -2..+2 around the printed one, widened
until the fair price's interval is bounded), on two sets of deals (two seeds): the fair
price with its interval, the reading, the spread between the seeds, and each seed's own
reading of each half of its deals (the spread a study prints).

Each plant makes a patch of edition 2 dearer (its printed cost moved up by k buttons), so
the true reading is "overpriced by about k buttons" give or take the patch's own pricing.
A plant's first line is its fine scan's answer too (every cost from 0, on the first seed),
for what the scan should find.

    python benchmarks/bench_prices.py [--games 2000] [--bot "greedy(epsilon=0.05)"]
        [--plants P02:10,P12:8,P20:10] [--seeds 1,2] [--fine] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from patchsim.engine.ruleset import load_ruleset
from patchsim.experiments.prices import crossings, measure_prices, patch_summary


def study(pid: str, cost: int, bot: str, games: int, seed: int, jobs: int,
          deltas: range | None = None) -> dict[str, object]:
    """One planted study: ``pid`` at ``cost`` in edition 2, read as `patchsim prices`
    reads it."""
    rs = load_ruleset("edition2").with_overrides(
        {"name": f"planted-{pid}-{cost}", "patch_changes": {pid: {"cost": cost}}})
    kw = {"deltas": deltas, "widen": False} if deltas is not None else {}
    s = measure_prices(rs, bot, [pid], games=games, seed=seed, jobs=jobs, **kw)
    fit = crossings(s)[pid]
    row = patch_summary(s, fits={pid: fit}).iloc[0]
    return {"costs": f"{min(fit.costs)}..{max(fit.costs)} ({len(fit.costs)} costs)",
            "fair": fit.fair if fit.in_range else None, "fair_lo": fit.fair_lo,
            "fair_hi": fit.fair_hi, "fair_text": fit.text(), "floor": 100 * fit.floor,
            "halves": "{:.2f} and {:.2f}".format(*fit.halves),
            "price": row["price"], "reading": row["reading"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=2000, help="games per cost (2 per deal)")
    ap.add_argument("--bot", default="greedy(epsilon=0.05)")
    ap.add_argument("--plants", default="P02:10,P12:8,P20:10",
                    help="patch:cost pairs (edition 2 prints P02, P12 and P20 at 3)")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--fine", action="store_true", help="also scan every cost from 0")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    seeds = [int(x) for x in a.seeds.split(",")]
    base = load_ruleset("edition2")
    results: dict[str, object] = {}
    start = time.time()
    for plant in a.plants.split(","):
        pid, cost = plant.split(":")[0], int(plant.split(":")[1])
        printed = base.patch(pid).cost
        label = f"{pid} {printed} -> {cost} ({cost - printed:+d} buttons)"
        runs = {seed: study(pid, cost, a.bot, a.games, seed, a.jobs) for seed in seeds}
        fairs = [r["fair"] for r in runs.values() if r["fair"] is not None]
        entry: dict[str, object] = {f"seed {s}": r for s, r in runs.items()}
        if len(fairs) == len(seeds) and len(fairs) > 1:
            spread = max(fairs) - min(fairs)  # type: ignore[type-var,operator]
            agree = all(r["fair_lo"] <= f <= r["fair_hi"]  # type: ignore[operator]
                        for r in runs.values() for f in fairs)
            entry["spread between seeds"] = (f"{spread:.2f} buttons; each seed's fair price "
                                             + ("inside" if agree else "NOT inside")
                                             + " every seed's interval")
        if a.fine:
            entry["fine scan 0..top, seed " + str(seeds[0])] = study(
                pid, cost, a.bot, a.games, seeds[0], a.jobs, range(-cost, 5))
        results[label] = entry
    results["seconds"] = round(time.time() - start)
    if a.json:
        print(json.dumps(results, indent=1, default=str))
        return 0
    print(f"bot {a.bot}, {a.games // 2:,} deals a cost, seeds {a.seeds}")
    for label, entry in results.items():
        if not isinstance(entry, dict):
            print(f"{label}: {entry}")
            continue
        print(label)
        for k, r in entry.items():
            if isinstance(r, dict):
                print(f"  {k}: costs {r['costs']}; fair price {r['fair_text']} (flat at "
                      f"{r['floor']:+.1f} points; each half of the deals: {r['halves']}); "
                      f"{r['price']}: {r['reading']}")
            else:
                print(f"  {k}: {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
