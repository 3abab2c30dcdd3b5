"""Dealing: the patch circle of a deal and its bots' random streams, from one integer seed.

This is the one dealing function of patchsim: ``Game.new(seed=s)``, the runner's deal whose
stored ``deal_seed`` is ``s`` and :func:`deal_circle` give the same circle, so any stored
game's deal can be taken into the Python API. A run derives each deal's seed from its master
seed with :func:`deal_seed`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from patchsim.engine import core
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.tables import compile_ruleset

SEED_LIMIT = 2**63  # deal seeds are non-negative int64 values


def deal_seed(master: int, deal: int) -> int:
    """The seed of deal number ``deal`` of a run: a SeedSequence child of the master seed
    (independent of how many deals the run has, so topping a run up keeps its deals)."""
    ss = np.random.SeedSequence(entropy=master, spawn_key=(deal,))
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


@njit(cache=True)
def deal_setup(seeds: np.ndarray, npatch: int, start: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Each deal's patch circle and the two bots' random streams, from the deal seed.

    The circle is every patch but ``start`` in a Fisher-Yates shuffle, then ``start`` last
    (docs/rules.md R2.3); the streams are the next two words of the deal's splitmix64 stream.
    Returns (circles (n, npatch) of patch indices, streams (n, 2))."""
    n = seeds.shape[0]
    circles = np.empty((n, npatch), dtype=np.int64)
    streams = np.empty((n, 2), dtype=np.uint64)
    rng = np.zeros(1, dtype=np.uint64)
    for i in range(n):
        rng[0] = np.uint64(seeds[i])
        k = 0
        for p in range(npatch):
            if p != start:
                circles[i, k] = p
                k += 1
        circles[i, npatch - 1] = start
        for j in range(npatch - 2, 0, -1):
            r = core.rng_below(rng, j + 1)
            t = circles[i, j]
            circles[i, j] = circles[i, r]
            circles[i, r] = t
        streams[i, 0] = core.rng_next(rng)
        streams[i, 1] = core.rng_next(rng)
    return circles, streams


def deal_arrays(ruleset: Ruleset, seeds: Sequence[int] | np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Circles (patch indices, shape (n, patches)) and bot streams (shape (n, 2)) of many
    deals at once, compiled."""
    seeds = np.asarray(seeds, dtype=np.int64)
    if seeds.size and (seeds.min() < 0):
        raise ValueError(f"deal seeds must be between 0 and 2**63 - 1, got {int(seeds.min())}")
    tables = compile_ruleset(ruleset)
    start = tables.patch_index[ruleset.start_after]
    return deal_setup(seeds.astype(np.uint64), len(ruleset.patches), start)


def deal_streams(ruleset: Ruleset, seed: int) -> np.ndarray:
    """The random streams of a deal's two bots (first bot of the pairing, second bot). They
    follow the circle's shuffle in the deal's stream, so they depend on the patch count."""
    return deal_arrays(ruleset, [seed])[1][0]


def deal_circle(ruleset: Ruleset, seed: int | np.random.Generator | None = None) -> list[str]:
    """The circle of the deal with seed ``seed`` (patch ids clockwise from the neutral token,
    the starting patch last). It is the same for every ruleset with the same patch table (the
    shuffle permutes table positions), which is what makes deals common across rulesets.

    A NumPy Generator draws the seed from it; ``None`` draws one from the operating system."""
    if seed is None or isinstance(seed, np.random.Generator):
        seed = int(np.random.default_rng(seed).integers(0, SEED_LIMIT))
    if isinstance(seed, bool | float) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed: expected an integer, got {seed!r}")
    if not 0 <= int(seed) < SEED_LIMIT:
        raise ValueError(f"seed: expected 0 <= seed < 2**63, got {seed}")
    ids = [p.id for p in ruleset.patches]
    return [ids[i] for i in deal_arrays(ruleset, [int(seed)])[0][0]]
