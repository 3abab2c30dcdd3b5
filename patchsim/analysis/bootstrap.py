"""The one bootstrap over deals: resample whole deals with replacement, seeded.

A deal's games are not independent (the two seat-swapped games, and across rulesets or costs
the same deal again), so a bootstrap resamples deals, each with everything measured on it: a
row of ``values`` is one deal. Every study that needs an interval no t-interval gives (score
quantiles, the growth of |first-seat edge| with skill, a price study's fair price) calls
:func:`bootstrap_over_deals` with the same resample count and a fixed seed, so a report is
reproducible to the digit.

The resampled deal numbers are drawn from ``numpy.random.default_rng(seed)`` in one stream
(in chunks of bounded memory; the chunking does not change the numbers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000  # the one resample count of every bootstrap over deals
LARGE_RUN_RESAMPLES = 199  # a report's score table beyond 50,000 games (a cost cap)
SEED = 2026  # fixed: the same deals give the same intervals
CHUNK_VALUES = 4_000_000  # resampled values held at once (about 32 MB of floats)


@dataclass(frozen=True)
class Bootstrap:
    """A statistic with its percentile interval at ``level`` over ``replicates`` (one row per
    resample). ``point``, ``lo`` and ``hi`` have the statistic's shape (a float for a
    scalar statistic)."""

    point: np.ndarray | float
    lo: np.ndarray | float
    hi: np.ndarray | float
    replicates: np.ndarray
    level: float


def _scalar(x: np.ndarray) -> np.ndarray | float:
    return float(x) if np.ndim(x) == 0 else x


def resampled_indices(deals: int, resamples: int = RESAMPLES, seed: int = SEED,
                      chunk: int | None = None):
    """Blocks of resampled deal numbers (each a (k, deals) array), ``resamples`` rows in all,
    from one seeded stream."""
    rng = np.random.default_rng(seed)
    step = chunk or max(1, CHUNK_VALUES // max(1, deals))
    for start in range(0, resamples, step):
        yield rng.integers(0, deals, size=(min(step, resamples - start), deals))


def bootstrap_over_deals(values: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], *,
                         resamples: int = RESAMPLES, seed: int = SEED, level: float = 0.95,
                         method: str = "linear", by_index: bool = False) -> Bootstrap:
    """``statistic`` of the deals and its percentile interval from resampling deals.

    ``values``: one row per deal (any further axes: what was measured on the deal).
    ``statistic(sample)``: ``sample`` has a leading axis of resamples, shape (k, deals, ...);
    it returns one value (or one array) per resample, shape (k, ...). The point estimate is
    the statistic of the deals as they are. Below two deals the interval is NaN (one deal
    still gives its replicates, every one that deal); ``method``:
    numpy's quantile method (e.g. "lower"/"higher" to pick replicate values). ``by_index``:
    ``statistic`` gets the resampled deal numbers, shape (k, deals), instead of the values
    (for a statistic that needs no copy of every resample), and ``statistic(None)`` is the
    point estimate."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    point = (np.asarray(statistic(None))  # type: ignore[arg-type]  # by_index: None is "as is"
             if by_index else np.asarray(statistic(v[None]))[0])
    nan = np.full_like(point, np.nan, dtype=float)
    if n < 1 or resamples < 1:
        return Bootstrap(_scalar(point), _scalar(nan), _scalar(nan),
                         np.empty((0, *np.shape(point))), level)
    per_deal = max(1, v[0].size)
    reps = [np.asarray(statistic(idx if by_index else np.take(v, idx, axis=0)))
            for idx in resampled_indices(n, resamples, seed,
                                         max(1, CHUNK_VALUES // max(1, n * per_deal)))]
    replicates = np.concatenate(reps, axis=0)
    if n < 2:
        return Bootstrap(_scalar(point), _scalar(nan), _scalar(nan), replicates, level)
    tail = (1 - level) / 2
    lo, hi = np.quantile(replicates, [tail, 1 - tail], axis=0,
                         method=method)  # type: ignore[call-overload]  # any numpy method
    return Bootstrap(_scalar(point), _scalar(lo), _scalar(hi), replicates, level)


__all__ = ["LARGE_RUN_RESAMPLES", "RESAMPLES", "SEED", "Bootstrap", "bootstrap_over_deals",
           "resampled_indices"]
