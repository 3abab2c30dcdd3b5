"""Do patchsim's verdicts mean what they say? Coverage and error rates by simulation, with
the estimator functions every study calls (patchsim.analysis.estimators), and planted
prices played by the engine (patchsim.experiments.prices).

1. Coverage of the 95% interval of a rate and of a paired change (seat-swapped deals).
2. The verdict at a true change of +1 point (4,000 deals, margin +-2): how often it reads
   "differs" when the difference is tested first (the old rule) and equivalence first (now).
3. False "equivalent" at the margin: one question; 5 and 10 variants, unadjusted and Holm.
4. Holm's family-wise error and Benjamini-Hochberg's false discovery rate.
5. The re-testing loop: read a fixed-sample verdict, add the "more deals" it asks for, read
   again (up to four looks), at a true change of 0 on a metric without a margin; against a
   sequential test.
6. After a sequential stop (run until decided, steps of 200 deals): coverage of the
   fixed-sample 95% interval and of the anytime-valid one.
7. "More deals" across the margin and at 0: the words at +1.99, +2.01, 0.00 and +0.01
   points.
9. "About N more deals would likely decide it" comes true: undecided studies (true changes
   spread uniformly over +-4 points) add the advised deals and are read again; the share
   decided, against the 80% the advice promises, overall and by where the truth lies.
8. Planted prices (the engine, greedy): P22 made expensive (cost 1 -> 9) and P32 made free
   (cost 0, time 1); the study's fair price and reading against the crossing read off a
   fine scan of every cost; and a few printed-price patches.

    python benchmarks/bench_verdicts.py [--runs 2000] [--games 2000] [--no-prices] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from patchsim.analysis import estimators as E

MARGIN = 0.02
SD = 0.35  # per-deal spread of a seat-swapped first-seat rate change (a typical run)


def deal_rates(rng: np.random.Generator, p: float, deals: int) -> np.ndarray:
    """Per-deal first-seat rates of seat-swapped deals (two games each)."""
    return (rng.random((deals, 2)) < p).mean(axis=1)


def changes(rng: np.random.Generator, true: float, deals: int, sd: float = SD) -> np.ndarray:
    """Per-deal paired changes with mean ``true``."""
    return rng.normal(true, sd, deals)


def share(hits: int, runs: int) -> str:
    return f"{100 * hits / runs:.1f}%"


def coverage(runs: int, rng: np.random.Generator) -> dict[str, str]:
    out = {}
    for p in (0.5, 0.55):
        hits = sum(_covers_rate(rng, p) for _ in range(runs))
        out[f"rate interval, p = {p:g}, 400 deals"] = share(hits, runs)
    hits = 0
    for _ in range(runs):
        a, b = deal_rates(rng, 0.52, 400), deal_rates(rng, 0.52, 400)
        d = E.paired_difference(a, b, bounds=E.RATE_DIFF_BOUNDS)
        hits += d.lo <= 0 <= d.hi
    out["paired change, true 0, 400 deals"] = share(hits, runs)
    return out


def _covers_rate(rng: np.random.Generator, p: float) -> bool:
    x = deal_rates(rng, p, 400)
    e = E.mean_estimate(x, bounds=E.WIN_BOUNDS)
    return e.lo <= p <= e.hi


def old_verdict_kind(e: E.Estimate) -> str:
    """The rule before: a significant difference first, then equivalence (TOST at 5%)."""
    if E.difference_pvalue(e) < 0.05:
        return "differs"
    if E.tost_pvalue(e, MARGIN) < 0.05:
        return "equivalent"
    return "undecided"


def one_point(runs: int, rng: np.random.Generator) -> dict[str, str]:
    old = new_differs = new_eq = 0
    for _ in range(runs):
        e = E.mean_estimate(changes(rng, 0.01, 4000))
        old += old_verdict_kind(e) == "differs"
        v = E.verdict(e, MARGIN)
        new_differs += v.kind == "differs"
        new_eq += v.kind == "equivalent"
    return {"old rule: differs": share(old, runs), "now: differs": share(new_differs, runs),
            "now: equivalent (negligible when non-zero)": share(new_eq, runs)}


def false_equivalence(runs: int, rng: np.random.Generator) -> dict[str, str]:
    out = {}
    hits = sum(E.verdict(E.mean_estimate(changes(rng, MARGIN, 3000)), MARGIN).kind
               == "equivalent" for _ in range(runs))
    out["one question at the margin"] = share(hits, runs)
    for k in (5, 10):
        raw = holm = old = 0
        for _ in range(runs // 2):
            ests = [E.mean_estimate(changes(rng, MARGIN, 3000)) for _ in range(k)]
            old += any(E.tost_pvalue(e, MARGIN) < 0.05 for e in ests)
            raw += any(E.verdict(e, MARGIN).kind == "equivalent" for e in ests)
            holm += any(v.kind == "equivalent" for v in E.verdicts(ests, MARGIN))
        n = runs // 2
        out[f"{k} variants at the margin: before (TOST at 5%, no adjustment)"] = share(old, n)
        out[f"{k} variants at the margin: now, unadjusted"] = share(raw, n)
        out[f"{k} variants at the margin: now, Holm"] = share(holm, n)
    return out


def holm_bh(runs: int, rng: np.random.Generator) -> dict[str, str]:
    fwer = fdr_sum = 0.0
    for _ in range(runs):
        p = [E.difference_pvalue(E.mean_estimate(changes(rng, 0.0, 500))) for _ in range(10)]
        fwer += (E.holm(p) < 0.05).any()
        truth = np.array([0.0] * 5 + [0.06] * 5)
        q = E.benjamini_hochberg([E.difference_pvalue(E.mean_estimate(changes(rng, t, 500)))
                                  for t in truth])
        found = q < 0.05
        fdr_sum += (found & (truth == 0)).sum() / max(1, found.sum())
    return {"Holm, 10 true nulls: family-wise error": share(int(fwer), runs),
            "BH, 5 nulls + 5 changes of 6 points: false discovery rate":
                f"{100 * fdr_sum / runs:.1f}%"}


def retesting(runs: int, rng: np.random.Generator) -> dict[str, str]:
    """True change 0, no margin: a fixed-sample verdict re-read after adding the advised
    deals, up to four looks; against a sequential test of the same question."""
    single = looped = sequential = 0
    for _ in range(runs):
        x = changes(rng, 0.0, 60_000)
        n = 500
        single += E.verdict(E.mean_estimate(x[:n]), 0.0).kind == "differs"
        for _look in range(4):
            v = E.verdict(E.mean_estimate(x[:n]), 0.0)
            if v.kind == "differs":
                looped += 1
                break
            if v.too_close:
                break
            # the advice on a change near 0 is huge: the loop adds at most 4x the deals
            n = min(len(x), n + min(v.more_deals, 4 * n))
        # the sequential path: a band test of |change| < 2 points, looked at every 500 deals
        kind, _at = E.BandTest.around(0.0, MARGIN, alpha=0.05, beta=0.05).first_decision(
            x, range(500, len(x) + 1, 500))
        sequential += kind == E.FAIL
    return {"one fixed-sample look: false 'differs'": share(single, runs),
            "re-read after adding the advised deals, up to 4 looks": share(looped, runs),
            "sequential band test (+-2 points, alpha 5%) at the same truth: false fail":
                share(sequential, runs)}


def sequential_stop(runs: int, rng: np.random.Generator) -> dict[str, str]:
    """A run until decided (band 50% +-2 points, steps of 200 deals, budget 10,000 deals)
    at a true rate of 51.5%: coverage at the stop."""
    p = 0.515
    fixed = anytime = stopped = 0
    for _ in range(runs):
        x = deal_rates(rng, p, 10_000)
        kind, at = E.BandTest.around(0.5, MARGIN).first_decision(x, range(200, 10_001, 200))
        n = at if kind != E.CONTINUE else len(x)
        stopped += kind != E.CONTINUE
        f = E.mean_estimate(x[:n], bounds=E.WIN_BOUNDS)
        a = E.anytime_estimate(x[:n], n0=200)
        fixed += f.lo <= p <= f.hi
        anytime += a.lo <= p <= a.hi
    return {"runs decided before the budget": share(stopped, runs),
            "fixed-sample 95% interval at the stop": share(fixed, runs),
            "anytime-valid 95% interval at the stop": share(anytime, runs)}


def more_deals_at_margin() -> dict[str, str]:
    out = {}
    for d, n in ((0.0199, 4000), (0.0201, 4000), (0.0, 1000), (0.0001, 1000)):
        se = SD / math.sqrt(n)
        q = 1.96
        v = E.verdict(E.Estimate(d, se, d - q * se, d + q * se, n, SD), MARGIN)
        out[f"observed {100 * d:+.2f} points on {n:,} deals"] = v.text()
    return out


def _from_sums(total: float, squares: float, n: int) -> E.Estimate:
    """The verdicts' estimate (t-interval over deals) from the sum and the sum of squares of
    ``n`` per-deal values."""
    m = total / n
    sd = math.sqrt(max(squares - n * m * m, 0.0) / (n - 1))
    se = sd / math.sqrt(n)
    q = float(E.t_ppf(0.975, n - 1))
    return E.Estimate(m, se, m - q * se, m + q * se, n, sd)


def _more(rng: np.random.Generator, true: float, n: int) -> tuple[float, float]:
    """The sum and the sum of squares of ``n`` more per-deal changes (normal, spread SD),
    drawn exactly without drawing each: the sum is normal, the spread about the mean a
    chi-square."""
    total = rng.normal(n * true, SD * math.sqrt(n))
    within = SD**2 * rng.chisquare(n - 1) if n > 1 else 0.0
    return total, within + total**2 / n


def advice_comes_true(runs: int, rng: np.random.Generator) -> dict[str, str]:
    """Studies of ``k`` changes whose true values are spread uniformly over +-4 points
    (twice the margin; one case +-10). Each undecided one that gets a number of more deals
    adds them (the others in its family unchanged) and is decided again in its family. The
    share decided is the advice's promise (80%) when the truths are spread over what the
    data allow; truths within a point of the margin are decided less often (a truth on the
    edge never is), which is what "too close to decide" is for. The advice reads the data
    as if any change were as likely as any other (a flat prior): where the truths are
    confined to a range not much wider than the standard error (300 deals, +-4 points), it
    promises a little more than it gives."""
    out: dict[str, str] = {}
    cases = [("1,000 deals, margin +-2", 1000, MARGIN, 1, 0.04),
             ("300 deals, margin +-2", 300, MARGIN, 1, 0.04),
             ("300 deals, margin +-2, truths over +-10 points", 300, MARGIN, 1, 0.10),
             ("4,000 deals, margin +-2", 4000, MARGIN, 1, 0.04),
             ("1,000 deals, no margin (differs from 0)", 1000, 0.0, 1, 0.04),
             ("1,000 deals, margin +-2, Holm over 5", 1000, MARGIN, 5, 0.04)]
    for label, deals, margin, k, spread in cases:
        family = "none" if k == 1 else "holm"
        advised = decided = close = undecided = 0
        bands: dict[str, list[int]] = {"inside": [0, 0], "near": [0, 0], "beyond": [0, 0]}
        for _ in range(max(1, runs // k)):
            truths = rng.uniform(-spread, spread, k)
            sums = []
            for t in truths:
                x = rng.normal(t, SD, deals)
                sums.append((float(x.sum()), float((x**2).sum()), deals))
            found = E.verdicts([_from_sums(*s) for s in sums], margin, family=family)
            for i, (t, v) in enumerate(zip(truths, found, strict=True)):
                if v.kind != "undecided":
                    continue
                undecided += 1
                if v.too_close:
                    close += 1
                    continue
                total, squares = _more(rng, t, v.more_deals)
                after = list(sums)
                after[i] = (sums[i][0] + total, sums[i][1] + squares, deals + v.more_deals)
                again = E.verdicts([_from_sums(*s) for s in after], margin, family=family)[i]
                ok = again.kind in ("equivalent", "differs")
                gap = abs(abs(t) - margin)
                band = "near" if gap < 0.01 else "inside" if abs(t) < margin else "beyond"
                advised += 1
                decided += ok
                bands[band][0] += 1
                bands[band][1] += ok
        parts = ", ".join(f"{b} {share(h, n)} of {n}" for b, (n, h) in bands.items() if n)
        out[label] = (f"{undecided} undecided: {close} too close to decide, {advised} advised; "
                      f"decided after adding the advised deals: {share(decided, advised)} "
                      f"(truth inside the margin / within 1 point of it / beyond: {parts})")
    return out


def planted_prices(games: int, jobs: int) -> dict[str, str]:
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.experiments.prices import (
        NEGLIGIBLE,
        measure_prices,
        patch_summary,
        price_table,
    )

    out: dict[str, str] = {}
    e2 = load_ruleset("edition2")
    plants = {
        "P22 expensive (cost 1 -> 9)": (e2.with_overrides(
            {"name": "planted-P22-9", "patch_changes": {"P22": {"cost": 9}}}), "P22", 9),
        "P32 free (cost 0, time 1)": (e2.with_overrides(
            {"name": "planted-P32-free", "patch_changes": {"P32": {"cost": 0, "time": 1}}}),
            "P32", 0),
    }
    for label, (rs, pid, cost) in plants.items():
        t0 = time.perf_counter()
        study = measure_prices(rs, "greedy", [pid], games=games, seed=11, jobs=jobs)
        s = patch_summary(study).iloc[0]
        # the fine scan: every cost from 0 to the study's highest, same deals
        top = max(cost + d for d in study.deltas_of(pid))
        fine = measure_prices(rs, "greedy", [pid], deltas=range(-cost, top - cost + 1),
                              games=games, seed=11, jobs=jobs, widen=False)
        t = price_table(fine)
        values = t["value"].to_numpy()
        costs = t["cost"].to_numpy()
        out[label] = (f"study costs {sorted(cost + d for d in study.deltas_of(pid))}: fair "
                      f"price {s['fair_text']}; reading: {s['reading']}. Fine scan 0..{top}: "
                      f"the per-cost values fall to 0.5 points at "
                      f"{_first_crossing(costs, values, NEGLIGIBLE):.1f} and to 0 at "
                      f"{_first_crossing(costs, values, 0.0):.1f} "
                      f"({time.perf_counter() - t0:.0f} s)")
    t0 = time.perf_counter()
    study = measure_prices(e2, "greedy", ["P19", "P16", "P01", "P22", "P32"], games=games,
                           seed=11, jobs=jobs)
    for r in patch_summary(study).itertuples():
        out[f"printed {r.patch} (cost {r.cost})"] = f"{r.price}: {r.reading}"
    out["printed patches: time"] = f"{time.perf_counter() - t0:.0f} s"
    return out


def _first_crossing(costs: np.ndarray, values: np.ndarray, floor: float) -> float:
    """Where the per-cost values first fall to ``floor`` going up in cost (linear between
    points)."""
    for i in range(len(costs) - 1):
        if values[i] > floor >= values[i + 1]:
            return float(costs[i] + (values[i] - floor) / (values[i] - values[i + 1])
                         * (costs[i + 1] - costs[i]))
    return math.nan


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000, help="simulated studies per figure")
    ap.add_argument("--games", type=int, default=2000, help="games per patch and cost")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--no-prices", action="store_true", help="skip the planted prices")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    results: dict[str, dict[str, str]] = {}
    t0 = time.perf_counter()
    results["1. coverage"] = coverage(a.runs, rng)
    results["2. true change +1 point, 4,000 deals"] = one_point(a.runs, rng)
    results["3. false 'equivalent' at the margin"] = false_equivalence(a.runs, rng)
    results["4. multiplicity"] = holm_bh(a.runs, rng)
    results["5. re-testing loop (true change 0)"] = retesting(max(200, a.runs // 4), rng)
    results["6. after a sequential stop (true rate 51.5%)"] = sequential_stop(a.runs, rng)
    results["7. more deals at the margin"] = more_deals_at_margin()
    results["9. 'about N more deals' comes true"] = advice_comes_true(a.runs, rng)
    results["time"] = {"simulations": f"{time.perf_counter() - t0:.0f} s"}
    if not a.no_prices:
        results["8. planted prices (greedy)"] = planted_prices(a.games, a.jobs)
    if a.json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return 0
    for section, rows in results.items():
        print(f"\n{section}")
        for k, v in rows.items():
            print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
