"""What one leaf of the learned search costs: the linear model's features against the value
network's inputs, its forward pass and the whole network value (inputs, forward pass,
squash), in nanoseconds per position, compiled, on the positions of greedy self-play games.

Each figure times ``--reps`` passes over every position, repeated ``--repeats`` times; it
prints the min and the median per position. The search evaluates every child it creates,
so a leaf's cost is most of an iteration's (why ``eval=net`` plays fewer iterations in the
same time as ``eval=learned``).

    python benchmarks/bench_leaf.py [--rules edition2] [--games 30] [--reps 20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from numba import njit

from patchsim.bots import features as F
from patchsim.bots import network as N
from patchsim.bots.learned import net_for
from patchsim.bots.registry import make_bot
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset


@njit(cache=True)
def _linear(states: np.ndarray, tab: np.ndarray, reps: int) -> float:
    out = np.empty(F.N_FEATURES, dtype=np.float64)
    acc = 0.0
    for _ in range(reps):
        for i in range(states.shape[0]):
            F.features(states[i], tab, out)
            acc += out[0]
    return acc


@njit(cache=True)
def _inputs(states: np.ndarray, tab: np.ndarray, reps: int) -> float:
    x = np.empty(N.N_INPUTS, dtype=np.float64)
    acc = 0.0
    for _ in range(reps):
        for i in range(states.shape[0]):
            N.net_inputs(states[i], tab, 0, x)
            acc += x[0]
    return acc


@njit(cache=True)
def _forward(net: np.ndarray, x: np.ndarray, reps: int) -> float:
    work = np.empty(N.work_size(net), dtype=np.float64)
    acc = 0.0
    for _ in range(reps):
        for i in range(x.shape[0]):
            acc += N.forward(net, x[i], work)
    return acc


@njit(cache=True)
def _value(net: np.ndarray, states: np.ndarray, tab: np.ndarray, reps: int) -> float:
    buf = np.empty(N.scratch_size(net), dtype=np.float64)
    acc = 0.0
    for _ in range(reps):
        for i in range(states.shape[0]):
            acc += N.net_value0(net, states[i], tab, buf)
    return acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--games", type=int, default=30)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    rs = load_ruleset(args.rules)
    bot = make_bot("greedy")
    rng = np.random.default_rng(1)
    rows = []
    for seed in range(args.games):
        g = Game.new(rs, seed=seed)
        while not g.finished:
            rows.append(g.state.copy())
            g.apply(bot.choose(g, g.legal_moves(), rng))
    states = np.array(rows)
    tab = g.tab
    net = net_for(rs).net
    x = np.zeros((len(states), N.N_INPUTS))
    N.batch_inputs(states, tab, np.zeros(len(states), dtype=np.int64), x)
    out = {"rules": rs.name, "positions": len(states), "load_start": os.getloadavg()[0]}
    for name, fn, fargs in (("linear_features", _linear, (states, tab)),
                            ("net_inputs", _inputs, (states, tab)),
                            ("net_forward", _forward, (net, x)),
                            ("net_value", _value, (net, states, tab))):
        fn(*fargs, 1)  # compile
        ns = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn(*fargs, args.reps)
            ns.append((time.perf_counter() - t0) / (args.reps * len(states)) * 1e9)
        out[name] = {"min_ns": round(min(ns)), "median_ns": round(float(np.median(ns)))}
    out["load_end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
