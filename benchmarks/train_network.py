"""The value network's whole recipe on one ruleset, timed: train ``mcts(eval=net)`` from
nothing, then play it against today's linear ``mcts(eval=learned)`` at equal iterations and
(optionally) at equal time per move. Prints one JSON object.

1. ``patchsim.play.train_net.train_net`` for ``--minutes`` (or ``--generations``) with ``--jobs``
   workers into ``--models`` (a fresh folder by default, so the shipped models are not
   replaced); the JSON gives the generations, games, minutes and held-out figures.
2. ``--games`` seat-swapped games on common deals (half as many deals) of
   ``mcts(eval=net, iterations=I)`` against ``mcts(eval=learned, iterations=I)`` for each
   ``--iterations`` I, and, for each ``--time-ms`` T, both at T ms a move (iterations capped
   at 20000; the batch runner refuses time budgets, so this driver plays them). Win rate of
   the network with a deal-level 95% normal interval (each deal's two games are one
   observation), and the load average before and after. The defaults are the issue's
   recipe: 30 minutes of training on 2 workers, 400 games a match, 100 iterations, 10 and
   50 ms a move (``--time-ms ""`` skips the equal-time matches).

    python benchmarks/train_network.py [--rules edition2] [--minutes 30] [--jobs 2]
        [--games 400] [--iterations 100] [--time-ms 10,50] [--hidden 16,16] [--seed 1]
        [--models DIR] [--skip-training]

The machine should be quiet: the figures (speed, equal-time results) move with load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--generations", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hidden", default="16,16")
    ap.add_argument("--games-per-generation", type=int, default=300)
    ap.add_argument("--models", default="", help="models folder (default: a fresh one)")
    ap.add_argument("--skip-training", action="store_true",
                    help="use the network already in --models")
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--iterations", default="100")
    ap.add_argument("--time-ms", default="10,50")
    ap.add_argument("--match-seed", type=int, default=20)
    args = ap.parse_args()

    from patchsim.bots import features as F
    from patchsim.bots.learned import bind_bot, param_rows
    from patchsim.bots.registry import make_bot
    from patchsim.engine.deal import deal_arrays
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.engine.tables import compile_ruleset
    from patchsim.play.loops import R_PLIES, R_WINNER, play_deals
    from patchsim.play.match import max_events, max_plies
    from patchsim.play.train_net import NetSettings, train_net

    rs = load_ruleset(args.rules)
    models = args.models or tempfile.mkdtemp(prefix="patchsim-net-")
    out: dict = {"rules": rs.name, "ruleset_hash": rs.content_hash(), "models": models,
                 "cpu_count": os.cpu_count(), "load_start": load()}
    if not args.skip_training:
        h1, h2 = (int(v) for v in args.hidden.split(","))
        settings = NetSettings(seed=args.seed, hidden=(h1, h2),
                               games_per_generation=args.games_per_generation)
        t0 = time.perf_counter()
        res = train_net(rs, minutes=args.minutes, generations=args.generations,
                        jobs=args.jobs, models=models, settings=settings)
        man = res.model.manifest
        out["training"] = {
            "wall_minutes": round((time.perf_counter() - t0) / 60.0, 2),
            "train_minutes": man["train_minutes"], "generations": man["generations"],
            "games": man["training_games"], "shape": res.model.shape,
            "validation": man["validation"],
            "strength": man["strength"], "jobs": args.jobs, "load_end": load(),
            "history": [{k: r[k] for k in ("generation", "minutes", "val_rmse",
                                           "win_rates")} for r in res.history]}

    tables = compile_ruleset(rs)
    deals = max(1, args.games // 2)
    seeds = np.random.SeedSequence(args.match_seed).generate_state(deals, dtype=np.uint64)
    circles, streams = deal_arrays(rs, (seeds >> np.uint64(1)).astype(np.int64))

    def match(a_spec: str, b_spec: str, time_ms: float = 0.0) -> dict:
        a = bind_bot(make_bot(a_spec), rs)
        b = bind_bot(make_bot(b_spec), rs)
        pa, pb = a.params.copy(), b.params.copy()
        if time_ms > 0:
            for p in (pa, pb):
                p[F.L_ITERATIONS] = 20000
                p[F.L_TIME_MS] = time_ms
        rows = param_rows([pa, pb])
        kinds = np.array([a.kind, b.kind], dtype=np.int64)
        parts = np.array_split(np.arange(deals), max(1, args.jobs))
        before = load()
        t0 = time.perf_counter()

        def run(ix: np.ndarray) -> np.ndarray:
            res, *_ = play_deals(tables.tab, circles[ix], streams[ix], kinds, rows,
                                 max_plies(rs), max_events(rs), np.zeros(1, dtype=np.int64))
            return res

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            res = np.concatenate(list(ex.map(run, [p for p in parts if len(p)])))
        seconds = time.perf_counter() - t0
        a_wins = (res[:, R_WINNER] == np.tile([0, 1], deals)).astype(float)
        per_deal = a_wins.reshape(deals, 2).mean(axis=1)
        mean = float(per_deal.mean())
        half = 1.96 * float(per_deal.std(ddof=1)) / math.sqrt(deals) if deals > 1 else 1.0
        return {"a": a_spec, "b": b_spec, "time_ms": time_ms or None, "games": 2 * deals,
                "a_win_rate": round(mean, 4),
                "interval95": [round(mean - half, 4), round(mean + half, 4)],
                "seconds": round(seconds, 1),
                "ms_per_move": round(1000 * seconds * args.jobs / res[:, R_PLIES].sum(), 3),
                "load_before": before, "load_after": load()}

    models_arg = f"models={models}"
    out["matches"] = []
    for it in [int(v) for v in args.iterations.split(",") if v]:
        out["matches"].append(match(f"mcts(eval=net, iterations={it}, {models_arg})",
                                    f"mcts(eval=learned, iterations={it}, model=shipped)"))
    for ms in [float(v) for v in args.time_ms.split(",") if v]:
        out["matches"].append(match(f"mcts(eval=net, {models_arg})",
                                    "mcts(eval=learned, model=shipped)", ms))
    out["load_end"] = load()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
