"""The price response of a patch (:mod:`patchsim.experiments.prices`, step 2): the monotone
(isotonic) fit of its restricted-play value against its cost, the fair price where that fit
falls to a negligible value with a bootstrap interval over deals, and the costs a scan adds
when it finds no fair price in range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from patchsim.analysis.bootstrap import RESAMPLES, bootstrap_over_deals
from patchsim.analysis.estimators import DEFAULT_MARGIN
from patchsim.document.format import num

BOOTSTRAP = RESAMPLES  # the one resample count of a bootstrap over deals
NEGLIGIBLE = DEFAULT_MARGIN / 4  # a value this small (0.5 points) is worth nothing to speak of


@dataclass(frozen=True)
class Crossing:
    """The price response of a patch: the monotone (isotonic) fit of value against cost
    (``fitted``), the fair price ``fair`` where it falls to a negligible value with its
    bootstrap interval, and for context the least-squares line through the per-cost means
    (``intercept``, ``slope`` with its bootstrap interval). ``in_range``: the fair price lies
    within the costs measured; ``side`` says where it lies otherwise ("above": the value is
    still worth something at the highest cost, "below": negligible even at the lowest)."""

    intercept: float
    slope: float
    slope_lo: float
    slope_hi: float
    fair: float
    fair_lo: float
    fair_hi: float
    in_range: bool
    costs: tuple[int, ...]
    fitted: tuple[float, ...] = ()  # the monotone fit at each cost
    means: tuple[float, ...] = ()
    cheapest_lo: float = math.nan  # lower bootstrap bound of the fitted value at min(costs)
    negligible: float = NEGLIGIBLE

    @property
    def flat(self) -> bool:
        """No measurable price response in the range: the line's slope interval holds 0
        and the fitted value at the cheapest cost is not shown above the negligible
        level."""
        sloped = self.slope_hi < 0 or self.slope_lo > 0
        return not (sloped or self.cheapest_lo > self.negligible)

    @property
    def side(self) -> str:
        """'in range', 'above' (the value stays above negligible over the range) or
        'below' (it is negligible already at the cheapest cost)."""
        if self.in_range or not math.isfinite(self.fair) or not self.costs:
            return "in range" if self.in_range else ""
        return "above" if self.fair > max(self.costs) else "below"

    def text(self) -> str:
        if len(self.costs) < 2:
            return "one price only: no price response"
        span = f"{min(self.costs)}..{max(self.costs)}"
        if self.flat and self.in_range:
            return (f"not identified: value flat over {span} (fit crosses at {self.fair:.1f} "
                    f"[{price_num(self.fair_lo)}, {price_num(self.fair_hi)}])")
        if not self.in_range:
            where = {"above": "the value is still positive at the highest cost",
                     "below": "the value is negligible even at the lowest cost"}
            return (f"not found in {span}"
                    + (f" ({where[self.side]})" if self.side in where else ""))
        return f"{self.fair:.1f} [{price_num(self.fair_lo)}, {price_num(self.fair_hi)}]"


def price_num(x: float) -> str:
    """``x`` to one decimal, as the price texts show it."""
    return num(x, 1)  # the one set of formatters: "+∞" as in every other document


def _line(costs: np.ndarray, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares intercepts and slopes of ``means`` (rows: replicates) on ``costs``."""
    xc = costs - costs.mean()
    slope = (means - means.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)
    return means.mean(axis=-1) - slope * costs.mean(), slope


def isotonic_decreasing(means: np.ndarray) -> np.ndarray:
    """The non-increasing least-squares fit of each row of ``means`` (per-cost means in
    order of cost, equal weights): pool-adjacent-violators, row by row."""
    y = np.atleast_2d(np.asarray(means, dtype=float))
    out = np.empty_like(y)
    for r, row in enumerate(y):
        level: list[float] = []
        size: list[int] = []
        for v in row:
            level.append(float(v))
            size.append(1)
            # a later block above an earlier one violates "non-increasing": pool them
            while len(level) > 1 and level[-1] > level[-2]:
                n = size[-1] + size[-2]
                merged = (level[-1] * size[-1] + level[-2] * size[-2]) / n
                level[-2:] = [merged]
                size[-2:] = [n]
        out[r] = np.repeat(level, size)
    return out


def _falls_to(costs: np.ndarray, fitted: np.ndarray, floor: float) -> np.ndarray:
    """Per row, the cost at which the non-increasing ``fitted`` values first fall to
    ``floor`` or below, linear between measured costs; -inf when the first already does,
    +inf when none does (so that percentiles of many replicates stay ordered)."""
    out = np.full(len(fitted), np.inf)
    for r, f in enumerate(fitted):
        below = np.flatnonzero(f <= floor)
        if len(below) == 0:
            continue
        j = int(below[0])
        if j == 0:
            out[r] = -np.inf
            continue
        a, b = f[j - 1], f[j]
        out[r] = costs[j - 1] + (a - floor) / (a - b) * (costs[j] - costs[j - 1])
    return out


def fit_crossing(costs: Sequence[float], values: np.ndarray, *, seed: int = 0,
                 boot: int = BOOTSTRAP, level: float = 0.95,
                 negligible: float = NEGLIGIBLE) -> Crossing:
    """The fair price from per-deal values: ``values[i, j]`` is deal i's value at
    ``costs[j]`` (the same deals at every cost).

    The value falls with the cost and flattens at 0 where the bot stops buying the patch
    (often after a dip below 0, where the bot still buys it at a loss), so the fit is
    monotone: the non-increasing least-squares (isotonic) fit of the per-cost means, and the
    fair price is the cost at which it falls to a negligible value (``negligible``, a
    quarter of the verdict margin: 0.5 points), linear between measured costs. (A tail of
    tiny values where the bot still buys it now and then would put a crossing of exactly 0
    several buttons later.) Its interval is the percentile interval over a bootstrap over
    deals seeded by ``seed`` (a deal is resampled with all its costs, so each replicate is a
    whole curve, refitted). A fair price beyond the costs measured is not found
    (``in_range`` False): widen the scan. The least-squares line is kept for its slope (the
    value of one button)."""
    x = np.asarray(costs, dtype=float)
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] != len(x):
        raise ValueError(f"values: expected (deals, {len(x)}) per-deal values, got {v.shape}")
    v = v[np.isfinite(v).all(axis=1)]
    order = np.argsort(x, kind="stable")
    x, v = x[order], v[:, order]
    costs_t = tuple(int(c) for c in x)
    if len(x) < 2 or len(v) == 0:
        nan = math.nan
        return Crossing(nan, nan, nan, nan, nan, nan, nan, False, costs_t)
    means = v.mean(axis=0)
    a, b = _line(x, means)
    fitted = isotonic_decreasing(means[None, :])
    fair = float(_falls_to(x, fitted, negligible)[0])

    def curves(sample: np.ndarray) -> np.ndarray:
        # per-cost means of each resampled set of deals: one curve per replicate (a cost's
        # column made contiguous first, so that its sums are those of a plain 2-d mean)
        return np.stack([np.ascontiguousarray(sample[:, :, j]).mean(axis=1)
                         for j in range(len(x))], axis=1)

    boot_means = bootstrap_over_deals(v, curves, resamples=boot, seed=seed).replicates
    _ba, bb = _line(x, boot_means)
    boot_fit = isotonic_decreasing(boot_means)
    zeros = _falls_to(x, boot_fit, negligible)
    q = ((1 - level) / 2, (1 + level) / 2)
    # "lower"/"higher" pick replicate values: no interpolation between infinities
    f_lo = float(np.quantile(zeros, q[0], method="lower"))
    f_hi = float(np.quantile(zeros, q[1], method="higher"))
    s_lo, s_hi = (float(z) for z in np.quantile(bb, q))
    in_range = bool(math.isfinite(fair))
    if not in_range:  # where it lies: just past the range, on the side it stays
        fair = float(x.max() + 1) if fair > 0 else float(x.min() - 1)
    return Crossing(float(a), float(b), s_lo, s_hi, fair, f_lo, f_hi, in_range, costs_t,
                    tuple(float(m) for m in fitted[0]), tuple(float(m) for m in means),
                    float(np.quantile(boot_fit[:, 0], q[0])), negligible)


def widen_costs(costs: Sequence[int], crossing: Crossing, max_cost: int,
                step: int = 2) -> list[int]:
    """The costs a scan adds when its fit found no fair price in range: below the lowest
    (down to 0) when the value is not positive there or flat over the range (the bot never
    gains from the patch: look for the price at which it starts to), above the highest (up
    to ``max_cost``) when it is still positive. Two costs, ``step`` and ``2 * step``
    buttons beyond; none when the fair price is in range or the scan is at its limits."""
    lo, hi = min(costs), max(costs)
    if crossing.in_range and not crossing.flat:
        return []
    down = crossing.flat or crossing.side == "below"
    if down:
        new = [c for c in (lo - step, lo - 2 * step) if c >= 0]
        if not new and lo > 0:
            new = [0]
    else:
        new = [c for c in (hi + step, hi + 2 * step) if c <= max_cost]
        if not new and hi < max_cost:
            new = [max_cost]
    return sorted(set(new) - set(costs))

