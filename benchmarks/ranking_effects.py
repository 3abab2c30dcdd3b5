"""What the packing ranking's terms are worth: a placement judge fitted to the difference
placements make.

    python benchmarks/ranking_effects.py --games 3000 --jobs 2
    python benchmarks/ranking_effects.py --games 3000 --weights 1,0.5,1.5 --json

Plays ``--games`` self-play games of ``--bot`` (both seats; it chooses every patch and
pass) in which every placement is drawn uniformly among the patch's ``--k`` best by the
packing ranking ``--weights`` (contact, holes, window: the learned search's defaults
1, 1, 0.5), and regresses the final margin on each game's summed deviations of the drawn
placements' ranking terms from their mean over the ``k``
(:func:`patchsim.play.placement_effects.ranking_effects`). Prints each term's effect in
points a unit with its 95% interval, the ranking those effects imply on the search's
scale (contact 1), the games' wall time (the whole fit) and the load. The deal is the unit:
one row per game.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from patchsim.engine.ruleset import load_ruleset
from patchsim.play.placement_effects import RANKING_TERMS, ranking_effects

DEFAULT_BOT = "mcts(eval=learned, iterations=100, sample_plies=8, temperature=1)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--bot", default=DEFAULT_BOT)
    ap.add_argument("--games", type=int, default=3000)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--weights", default="1,1,0.5", help="contact,holes,window")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    weights = tuple(float(w) for w in a.weights.split(","))
    if len(weights) != 3:
        ap.error(f"--weights takes three numbers (contact,holes,window), got {a.weights!r}")
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    eff = ranking_effects(load_ruleset(a.rules), a.bot, a.games, seed=a.seed, k=a.k,
                          jobs=a.jobs, weights=weights)  # type: ignore[arg-type]
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    try:
        implied: tuple[float, ...] | None = eff.weights()
    except ValueError:
        implied = None
    out = {"rules": a.rules, "bot": a.bot, "games": a.games, "k": a.k, "drawn_by": weights,
           "effects": {t: {"points": float(b), "low": float(b - 1.96 * s),
                           "high": float(b + 1.96 * s)}
                       for t, b, s in zip(RANKING_TERMS, eff.beta, eff.se, strict=True)},
           "implied_weights": implied, "draws_per_game": eff.treatments,
           "residual_sd": eff.residual_sd, "wall_s": wall, "load": [load0, load1]}
    if a.json:
        print(json.dumps(out))
        return
    print(f"{a.games} games of {a.bot} on {a.rules}, placements drawn among the {a.k} best "
          f"by contact,holes,window = {a.weights}: {eff.treatments:.1f} draws a game, "
          f"residual sd {eff.residual_sd:.1f} points")
    for t, v in out["effects"].items():  # type: ignore[union-attr]
        print(f"  {t:<11} {v['points']:+.3f} points a unit [{v['low']:+.3f}, {v['high']:+.3f}]")
    if implied is None:
        print("  implied ranking: none (the contact effect is not positive)")
    else:
        print(f"  implied ranking: contact 1, holes {implied[1]:.2f}, window {implied[2]:.2f}")
    print(f"wall {wall:.0f} s (load {load0:.1f} -> {load1:.1f}, {a.jobs} jobs)")


if __name__ == "__main__":
    main()
