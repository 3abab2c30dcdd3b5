"""Coordinate search over the scripted bot's weights: each candidate plays seat-swapped
common deals against the current best; a change is kept when it wins clearly. Prints the
path as JSON lines. This is how the presets in patchsim/bots.py were chosen.

    python benchmarks/tune_scripted.py [--deals 1500] [--start greedy] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from patchsim.bots.registry import make_bot
from patchsim.engine.deal import deal_circle
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play.loops import R_SCORE, R_WINNER, play_games

GRID = {
    "w_income": [0.6, 0.8, 1.0, 1.2, 1.5],
    "w_area": [0.6, 0.8, 1.0, 1.2, 1.5],
    "w_cost": [0.6, 0.8, 1.0, 1.2],
    "time_offset": [0.0, 0.5, 1.0, 2.0, 3.0],
    "w_place": [0.0, 0.05, 0.1, 0.2, 0.4],
    "contact": [0.5, 1.0, 1.5],
    "holes": [0.0, 0.5, 1.0, 2.0, 3.0],
    "window": [0.0, 0.1, 0.3, 0.6],
    "pass_margin": [-0.5, 0.0, 0.3, 0.6, 1.0],
    "area_ramp": [0.0, 0.3, 0.6, 1.0],
    "button_cap": [0.0, 10.0, 20.0],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--deals", type=int, default=1500)
    ap.add_argument("--start", default="greedy")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rs = load_ruleset(args.rules)
    tb = compile_ruleset(rs)
    rng = np.random.default_rng(args.seed)
    circles = np.array([[tb.patch_index[c] for c in deal_circle(rs, rng)]
                        for _ in range(args.deals)], dtype=np.int64)
    seeds = rng.integers(0, 2**62, size=(args.deals, 2)).astype(np.uint64)

    def duel(a, b) -> tuple[float, float]:
        """Win share of a against b over seat-swapped deals, and a's mean score."""
        r1 = play_games(tb.tab, circles, seeds, np.array([a.kind, b.kind]),
                        np.stack([a.params, b.params]))
        r2 = play_games(tb.tab, circles, seeds, np.array([b.kind, a.kind]),
                        np.stack([b.params, a.params]))
        wins = (r1[:, R_WINNER] == 0).sum() + (r2[:, R_WINNER] == 1).sum()
        score = (r1[:, R_SCORE].mean() + r2[:, R_SCORE + 1].mean()) / 2
        return wins / (2 * args.deals), float(score)

    best_given: dict[str, float] = {}
    best = make_bot(args.start)
    for rnd in range(args.rounds):
        for key, values in GRID.items():
            for v in values:
                if v == best.values[key]:
                    continue
                cand_given = {**best_given, key: v}
                cand = make_bot(f"{args.start}(" + ", ".join(
                    f"{k}={x}" for k, x in cand_given.items()) + ")")
                share, score = duel(cand, best)
                # keep only clear wins: 2 standard errors over 50% on 2*deals games
                se = 0.5 / np.sqrt(2 * args.deals)
                if share > 0.5 + 2 * se:
                    best_given, best = cand_given, cand
                    print(json.dumps({"round": rnd, "accepted": cand.spec,
                                      "win_share": round(share, 4), "score": round(score, 2)}),
                          flush=True)
    self_share, self_score = duel(best, best)
    base_share, _ = duel(best, make_bot(args.start))
    rnd_share, _ = duel(best, make_bot("random"))
    print(json.dumps({"final": best.spec, "vs_start": round(base_share, 4),
                      "vs_random": round(rnd_share, 4),
                      "selfplay_mean_score": round(self_score, 2)}))


if __name__ == "__main__":
    main()
