"""Deals whose games open with a run of passes: is passing first the better move there?

    python benchmarks/opening_passes.py --deals 300 --judge "mcts(iterations=1000)" --games 6
    python benchmarks/opening_passes.py --judge "mcts(eval=learned, iterations=100, \
own_score=0.005, sample_plies=8, temperature=1)" --games 20 --json

Plays each of ``--deals`` deals with ``--bot`` (deterministic: no opening temperature) in
both seats and keeps the deals whose game opens with ``--passes`` passes in a row or more,
and as many other deals (the first ones that do not) as a control. From each kept deal's
first position it plays ``--games`` games after the first seat passes and as many after it
makes the buy the bot's search visited most, both seats then played by each ``--judge``
(its seat streams seeded by deal and game), and prints per judge and group the first seat's
win rate after the pass, after the buy, and the difference "buy minus pass" with its 95%
interval over deals. ``--after N`` judges the position after N opening passes instead (the
seat to move there, its best buy by the bot's search there; for the control deals a position
their games did not reach) (the deal is the unit: its games after one move are not independent),
with the wall time and the load. ``--json`` prints the figures as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from joblib import Parallel, delayed

from patchsim.analysis.intervals import RATE_DIFF_BOUNDS, mean_estimate, paired_difference
from patchsim.bots import features as F
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import make_bot
from patchsim.engine import core
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset

SEARCH_PLIES = 40  # an opening run is counted within the game's first plies


def start(ruleset, seed: int, after: int) -> Game:
    """Deal ``seed``'s first position after ``after`` passes."""
    game = Game.new(ruleset, seed=seed)
    for _ in range(after):
        game.apply(core.PASS)
    return game


def opening_run(rules: str, spec: str, seed: int, after: int) -> tuple[int, int]:
    """The passes the bot's self-play game of deal ``seed`` opens with, and the buy its
    search visits most after ``after`` opening passes (-1: it can buy nothing)."""
    ruleset = load_ruleset(rules)
    bot = bind_bot(make_bot(spec), ruleset)
    judged = start(ruleset, seed, after)
    moves, visits, _ = F.learned_root(bot.params, judged.state, judged.tab)
    game = Game.new(ruleset, seed=seed)
    buys = [(int(v), int(m)) for m, v in zip(moves, visits, strict=True) if m != core.PASS]
    best_buy = max(buys)[1] if buys else -1
    run = 0
    stream = np.array([seed + 1], dtype=np.uint64)
    while not game.finished and game.ply < SEARCH_PLIES and run == game.ply:
        code = bot.choose_code(game, stream)
        if code == core.PASS:
            run += 1
        game.apply(code)
    return run, best_buy


def judged_game(rules: str, judge: str, seed: int, after: int, first: int, k: int) -> int:
    """1 if the seat to move after ``after`` opening passes of deal ``seed`` wins after its
    move ``first``, both seats then played by ``judge`` (game ``k`` of that start: its own
    seat stream)."""
    ruleset = load_ruleset(rules)
    bot = bind_bot(make_bot(judge), ruleset)
    game = start(ruleset, seed, after)
    mover = int(core.to_move(game.state, game.tab))
    game.apply(int(first))
    stream = np.array([(seed * 1_000_003 + k * 7_919 + (first == core.PASS)) + 1],
                      dtype=np.uint64)
    while not game.finished:
        game.apply(bot.choose_code(game, stream))
    return int(game.winner == mover)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--bot", default="mcts(eval=learned, iterations=100)",
                    help="the player whose openings are scanned (an eval=learned search)")
    ap.add_argument("--deals", type=int, default=300, help="deals scanned (seeds 0..N-1)")
    ap.add_argument("--passes", type=int, default=6, help="opening run kept: this many or more")
    ap.add_argument("--judge", default="mcts(iterations=1000)",
                    help="bot specs that play on after the first move, separated by ';'")
    ap.add_argument("--after", type=int, default=0,
                    help="judge the position after this many opening passes (< --passes)")
    ap.add_argument("--games", type=int, default=6, help="games per deal and first move")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not 0 <= args.after < args.passes:
        ap.error(f"--after {args.after}: must be at least 0 and below --passes {args.passes}")

    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    scans = Parallel(n_jobs=args.jobs)(delayed(opening_run)(args.rules, args.bot, s, args.after)
                                       for s in range(args.deals))
    runs = [(s, run, buy) for s, (run, buy) in enumerate(scans) if buy >= 0]
    passing = [(s, b) for s, run, b in runs if run >= args.passes]
    control = [(s, b) for s, run, b in runs if run == 0][:len(passing)]
    out: dict = {"rules": args.rules, "bot": args.bot, "deals": args.deals,
                 "passes": args.passes, "after": args.after, "opening_runs": len(passing),
                 "share": len(passing) / args.deals, "judges": {}}
    for judge in [j.strip() for j in args.judge.split(";") if j.strip()]:
        tj = time.perf_counter()
        groups = {"opens with passes": passing, "control (opens with a buy)": control}
        jobs = [(name, s, first, k) for name, deals in groups.items() for s, b in deals
                for first in (core.PASS, b) for k in range(args.games)]
        wins = Parallel(n_jobs=args.jobs)(
            delayed(judged_game)(args.rules, judge, s, args.after, f, k)
            for _, s, f, k in jobs)
        table: dict[tuple[str, int, bool], list[int]] = {}
        for (name, s, first, _), w in zip(jobs, wins, strict=True):
            table.setdefault((name, s, first == core.PASS), []).append(w)
        res = {}
        for name, deals in groups.items():
            after_pass = np.array([np.mean(table[(name, s, True)]) for s, _ in deals])
            after_buy = np.array([np.mean(table[(name, s, False)]) for s, _ in deals])
            p = mean_estimate(after_pass, bounds=(0.0, 1.0))
            b = mean_estimate(after_buy, bounds=(0.0, 1.0))
            d = paired_difference(after_pass, after_buy, bounds=RATE_DIFF_BOUNDS)
            res[name] = {"deals": len(deals), "after_pass": p.value, "after_buy": b.value,
                         "buy_minus_pass": d.value, "lo": d.lo, "hi": d.hi}
        out["judges"][judge] = {"groups": res, "seconds": time.perf_counter() - tj}
    out["seconds"] = time.perf_counter() - t0
    out["load"] = [load0, os.getloadavg()[0]]
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{args.bot} on {args.rules}: {len(passing)} of {args.deals} deals "
          f"({100 * out['share']:.1f}%) open with {args.passes}+ passes in a row")
    for judge, j in out["judges"].items():
        seat = ("the first seat" if args.after == 0
                else f"the seat to move after {args.after} passes")
        print(f"judge {judge} ({args.games} games per deal and first move, "
              f"{j['seconds']:.0f} s), {seat}:")
        for name, r in j["groups"].items():
            print(f"  {name}, {r['deals']} deals: it wins "
                  f"{100 * r['after_pass']:.1f}% after a pass, {100 * r['after_buy']:.1f}% "
                  f"after its best buy; buy minus pass {100 * r['buy_minus_pass']:+.1f} "
                  f"[{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}] points")
    print(f"{out['seconds']:.0f} s in all, load {out['load'][0]:.2f} -> {out['load'][1]:.2f}")


if __name__ == "__main__":
    main()
