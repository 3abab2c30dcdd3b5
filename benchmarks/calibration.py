"""Calibration of the learned search's root value at move 1, level by level: the value the
search gives the first seat in the opening position of each deal, beside how often the first
seat wins that deal's self-play games (issue 29's reliability table).

    python benchmarks/calibration.py [--search "mcts(eval=learned)"] [--levels 25,100,400]
                                     [--deals 300] [--seed 1] [--jobs 2] [--bins 5] [--json]

What it does, per level (the search at that many iterations a move):
- plays 2 x --deals self-play games (each deal with both seat orders, which are the same
  seat-swapped game in self-play) with the skill trace's opening diversity
  (``temperature=1, sample_plies=8``: the first plies drawn in proportion to the root visits);
- for each deal, runs the same search (no sampling, which does not change the tree) at the
  deal's opening position and takes the root's value for the seat to move: the mean reward
  over the root's visits, what the search expects the first seat to get;
- prints the mean root value, the first seat's win rate and their paired difference (win rate
  minus value) with 95% intervals over deals (``patchsim.analysis.calibration``), and a
  reliability table: the deals in --bins groups by root value, each group's mean value beside
  its first seat's win rate.

The search's value is its reward, not a probability: the learned model's predicted margin
squashed by tanh (``0.5 + 0.5 tanh(margin / scale)``), and at finished games 0.8 x win + 0.2 x
the squashed margin. "Agrees" means the difference's interval holds 0. Prints the wall time
of each level and the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pandas as pd

import patchsim
from patchsim.analysis.calibration import calibration_summary, per_deal, reliability_table
from patchsim.bots import features as F
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import make_bot
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.experiments.skill import SAMPLE_PLIES, TEMPERATURE


def with_knobs(search: str, **knobs: object) -> str:
    """``search`` (a spec ending in ')' or a bare name) with ``knobs`` added."""
    extra = ", ".join(f"{k}={v}" for k, v in knobs.items())
    if search.endswith(")"):
        return f"{search[:-1]}, {extra})"
    return f"{search}({extra})"


def root_value(bound, ruleset, tab: np.ndarray, deal_seed: int) -> float:
    """The search's expected reward for the first seat at the deal's opening position."""
    game = Game.new(ruleset, circle=deal_circle(ruleset, deal_seed))
    _, visits, values = F.learned_root(bound.params, game.state, tab)
    return float((values * visits).sum() / visits.sum())


def level_figures(search: str, ruleset, level: int, deals: int, seed: int, jobs: int,
                  bins: int) -> tuple[dict, pd.DataFrame, float]:
    spec = with_knobs(search, iterations=level)
    sampled = with_knobs(spec, temperature=TEMPERATURE, sample_plies=SAMPLE_PLIES)
    t = time.perf_counter()
    sim = patchsim.simulate(ruleset, [sampled], games=2 * deals, seed=seed, jobs=jobs,
                            pairings="self")
    games = sim.games
    tab = compile_ruleset(ruleset).tab
    bound = bind_bot(make_bot(spec), ruleset)
    values = {s: root_value(bound, ruleset, tab, int(s)) for s in games["deal_seed"].unique()}
    table = per_deal(games["deal_seed"].map(values), games["winner"] == 0, games["deal"])
    return calibration_summary(table), reliability_table(table, bins), time.perf_counter() - t


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def interval(e) -> str:
    return f"{pct(e.value)}% [{pct(e.lo)}, {pct(e.hi)}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--search", default="mcts(eval=learned)")
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--levels", default="25,100,400")
    ap.add_argument("--deals", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--bins", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ruleset = load_ruleset(args.rules)
    levels = [int(x) for x in args.levels.split(",")]
    out = []
    print(f"search {args.search}, rules {args.rules}, {args.deals} deals a level, seed "
          f"{args.seed}, load before {os.getloadavg()[0]:.2f}")
    for level in levels:
        summary, bins, seconds = level_figures(args.search, ruleset, level, args.deals,
                                               args.seed, args.jobs, args.bins)
        out.append({"level": level, "seconds": round(seconds, 1),
                    "root_value": summary["root_value"].value,
                    "first_seat_wins": summary["first_seat_wins"].value,
                    "difference": [summary["difference"].value, summary["difference"].lo,
                                   summary["difference"].hi],
                    "verdict": summary["verdict"], "bins": bins.to_dict("records")})
        if args.json:
            continue
        print(f"\n{level} iterations ({seconds:.0f} s): root value for the first seat "
              f"{interval(summary['root_value'])}, first seat wins "
              f"{interval(summary['first_seat_wins'])}; {summary['verdict']}")
        shown = bins.assign(value=lambda b: b.apply(
            lambda r: f"{r.value_from:.3f}-{r.value_to:.3f}", axis=1),
            mean_value=lambda b: (100 * b.mean_value).round(1),
            wins=lambda b: b.apply(lambda r: f"{pct(r.first_seat_wins)} [{pct(r.lo)}, "
                                   f"{pct(r.hi)}]", axis=1))
        print(shown[["value", "deals", "mean_value", "wins", "agrees"]].rename(columns={
            "value": "root value", "mean_value": "mean value %",
            "wins": "first seat wins %"}).to_string(index=False))
    if args.json:
        print(json.dumps(out))
    else:
        print(f"\nload after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
