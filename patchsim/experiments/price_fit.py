"""The price response of a patch (:mod:`patchsim.experiments.prices`, step 2): a monotone
broken-line ("hinge") fit of its restricted-play value against every cost measured (falling
at a constant rate, then flat where the bot stops buying the patch), the fair price at the
kink with a bootstrap interval over deals, and the costs a scan adds until that interval is
bounded.
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
    """The price response of a patch: the broken-line fit of value against cost
    (``fitted`` at each cost measured): a line of ``slope`` per button (with its bootstrap
    interval; ``intercept`` its value at cost 0) down to the fair price ``fair``, and flat at
    ``floor`` beyond it, where the bot no longer gains from the patch; ``fair_lo``,
    ``fair_hi``: the fair price's bootstrap interval (infinite where replicates put it beyond
    the costs measured). ``in_range``: the fair price lies within the costs measured;
    ``side`` says where it lies otherwise ("above": the value still falls at the highest
    cost, "below": flat already at the lowest)."""

    intercept: float
    slope: float
    slope_lo: float
    slope_hi: float
    fair: float
    fair_lo: float
    fair_hi: float
    in_range: bool
    costs: tuple[int, ...]
    fitted: tuple[float, ...] = ()  # the fit at each cost
    means: tuple[float, ...] = ()
    cheapest_lo: float = math.nan  # lower bootstrap bound of the fall from min(costs) to floor
    negligible: float = NEGLIGIBLE
    floor: float = math.nan  # the fitted value beyond the fair price
    # the fair price read off each half of the deals alone (two independent sets of deals,
    # like two seeds at half the size): how far two studies would disagree
    halves: tuple[float, float] = (math.nan, math.nan)

    @property
    def halves_spread(self) -> float:
        """How far apart the two halves' fair prices lie (NaN when either is not found)."""
        a, b = self.halves
        return abs(a - b) if math.isfinite(a) and math.isfinite(b) else math.nan

    @property
    def flat(self) -> bool:
        """No measurable price response in the range: the fitted fall from the cheapest cost
        to the floor is not shown to exceed the negligible value (0.5 points)."""
        return not self.cheapest_lo > self.negligible

    @property
    def bounded(self) -> bool:
        """The fair price's interval is finite and lies within the costs measured with two
        costs on each side of it (at or below its lower end, at or above its upper end), so
        that both the falling part and the flat part it is read from were measured."""
        c = sorted(self.costs)
        return (len(c) >= 4 and math.isfinite(self.fair_lo) and math.isfinite(self.fair_hi)
                and c[1] <= self.fair_lo and self.fair_hi <= c[-2])

    @property
    def side(self) -> str:
        """'in range', 'above' (the value still falls at the highest cost) or 'below' (it is
        flat already at the cheapest cost)."""
        if self.in_range or not math.isfinite(self.fair) or not self.costs:
            return "in range" if self.in_range else ""
        return "above" if self.fair > max(self.costs) else "below"

    def text(self) -> str:
        if len(self.costs) < 2:
            return "one price only: no price response"
        span = f"{min(self.costs)}..{max(self.costs)}"
        if self.flat and self.in_range:
            return (f"not identified: value flat over {span} (fit bends at {self.fair:.1f} "
                    f"[{price_num(self.fair_lo)}, {price_num(self.fair_hi)}])")
        if not self.in_range:
            where = {"above": "the value still falls at the highest cost",
                     "below": "the value is flat even at the lowest cost"}
            return (f"not found in {span}"
                    + (f" ({where[self.side]})" if self.side in where else ""))
        return f"{self.fair:.1f} [{price_num(self.fair_lo)}, {price_num(self.fair_hi)}]"


def price_num(x: float) -> str:
    """``x`` to one decimal, as the price texts show it."""
    return num(x, 1)  # the one set of formatters: "+∞" as in every other document


def isotonic_decreasing(means: np.ndarray) -> np.ndarray:
    """The non-increasing least-squares fit of each row of ``means`` (per-cost means in
    order of cost, equal weights): pool-adjacent-violators, row by row (the fit the fair
    price was once read from, kept for comparison)."""
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
    +inf when none does (the isotonic reading, kept for comparison)."""
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


MIN_HALF = 10  # deals in each half before the halves' fair prices are read
KINK_STEP = 0.05  # buttons: the grid the fair price (the fit's kink) is searched on


@dataclass(frozen=True)
class Hinges:
    """Broken-line fits of many curves at once (one per row of per-cost means): the kink
    ``kink`` (-inf where no falling line fits better than a flat one, +inf where the best
    kink is the highest cost: still falling), the fall per button ``rate`` (>= 0), the
    ``floor`` beyond the kink, and the ``fall`` from the cheapest cost to the floor."""

    kink: np.ndarray
    rate: np.ndarray
    floor: np.ndarray
    fall: np.ndarray

    def at(self, costs: np.ndarray) -> np.ndarray:
        """The fitted values at ``costs``, one row per curve."""
        k = np.where(np.isfinite(self.kink), self.kink, costs.max())
        return self.floor[:, None] + self.rate[:, None] * np.maximum(
            0.0, k[:, None] - costs[None, :])


def fit_hinges(costs: np.ndarray, means: np.ndarray, weights: np.ndarray) -> Hinges:
    """The weighted least-squares fit of ``floor + rate * max(0, kink - cost)`` (rate >= 0: the
    value does not rise with the cost) to each row of ``means``, every cost measured taking
    part: for each kink on a grid of KINK_STEP buttons between the cheapest and the highest
    cost the fit is linear in (floor, rate), so the kink is the grid point of least squares."""
    x = np.asarray(costs, dtype=float)
    m = np.atleast_2d(np.asarray(means, dtype=float))
    w = np.asarray(weights, dtype=float)
    steps = int(round((x.max() - x.min()) / KINK_STEP))
    # whole multiples of the step, rounded: a kink at a measured cost is that cost exactly
    grid = np.round(x.min() + KINK_STEP * np.arange(1, steps + 1), 9)
    h = np.maximum(0.0, grid[:, None] - x[None, :])  # (kinks, costs): the falling part
    sw = w.sum()
    h_mean = h @ w / sw
    hc = h - h_mean[:, None]
    shh = (hc ** 2) @ w
    rate = (m @ (hc * w).T) / shh  # (curves, kinks): the slope each kink fits best
    # what a kink explains beyond a flat line; a rising line explains nothing allowed
    gain = np.where(rate > 0, rate * rate * shh, 0.0)
    g = gain.argmax(axis=1)
    rows = np.arange(len(m))
    ok = gain[rows, g] > 0
    r = np.where(ok, rate[rows, g], 0.0)
    kink = np.where(ok, grid[g], -np.inf)
    kink = np.where(ok & (g == len(grid) - 1), np.inf, kink)
    floor = m @ w / sw - r * h_mean[g]
    return Hinges(kink, r, floor, r * (grid[g] - x.min()))


def _weights(v: np.ndarray) -> np.ndarray:
    """1 / se^2 per cost of the per-deal values ``v`` (rows: deals)."""
    se = (v.std(axis=0, ddof=1) / math.sqrt(len(v)) if len(v) > 1
          else np.ones(v.shape[1]))
    # a cost with no spread (nobody buys the patch in any game) is not infinitely sure
    se = np.maximum(np.nan_to_num(se), max(float(np.nanmean(se)) / 4, 1e-6))
    return 1.0 / se ** 2


def fit_crossing(costs: Sequence[float], values: np.ndarray, *, seed: int = 0,
                 boot: int = BOOTSTRAP, level: float = 0.95,
                 negligible: float = NEGLIGIBLE) -> Crossing:
    """The fair price from per-deal values: ``values[i, j]`` is deal i's value at
    ``costs[j]`` (the same deals at every cost).

    The value falls with the cost and flattens where the bot stops buying the patch, at a
    level that is 0 in expectation but, on one set of deals, wherever their shared noise
    puts it (the same games are played at every cost the patch is not bought at: a flat
    tail of -1.6 points is as likely as one of +0.4). So the fair price is not where a
    curve crosses a fixed level (a threshold the flat tail may sit on either side of) but
    where the falling value meets the tail: the kink of a broken line fitted by weighted
    least squares to every cost measured (:func:`fit_hinges`; weights 1 / se^2 per cost).
    Its interval is the percentile interval over a bootstrap over deals seeded by ``seed``
    (a deal is resampled with all its costs, so each replicate is a whole curve, refitted);
    a replicate whose kink is the highest cost (still falling) counts as +inf, one with no
    fall as -inf, so an interval that reaches past the costs measured says so. A fall of
    less than ``negligible`` (0.5 points) from the cheapest cost to the floor, in its lower
    bound, is a flat curve."""
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
    w = _weights(v)
    fit = fit_hinges(x, means[None, :], w)

    def curves(sample: np.ndarray) -> np.ndarray:
        # per-cost means of each resampled set of deals: one curve per replicate (a cost's
        # column made contiguous first, so that its sums are those of a plain 2-d mean)
        return np.stack([np.ascontiguousarray(sample[:, :, j]).mean(axis=1)
                         for j in range(len(x))], axis=1)

    boot_fit = fit_hinges(x, bootstrap_over_deals(v, curves, resamples=boot,
                                                  seed=seed).replicates, w)
    q = ((1 - level) / 2, (1 + level) / 2)
    # "lower"/"higher" pick replicate values: no interpolation between infinities
    f_lo = float(np.quantile(boot_fit.kink, q[0], method="lower"))
    f_hi = float(np.quantile(boot_fit.kink, q[1], method="higher"))
    s_lo, s_hi = (float(-z) for z in np.quantile(boot_fit.rate, q[::-1]))
    fair = float(fit.kink[0])
    in_range = bool(math.isfinite(fair))
    if not in_range:  # where it lies: just past the range, on the side it stays
        fair = float(x.max() + 1) if fair > 0 else float(x.min() - 1)
    rate, floor = float(fit.rate[0]), float(fit.floor[0])
    half = len(v) // 2
    halves = (tuple(float(fit_hinges(x, part.mean(axis=0)[None, :], _weights(part)).kink[0])
                    for part in (v[:half], v[half:])) if half >= MIN_HALF
              else (math.nan, math.nan))
    # the falling line's value at cost 0 (when it still falls at the highest cost, the line
    # runs through it)
    start = float(x.max()) if fit.kink[0] == np.inf else fair if in_range else 0.0
    return Crossing(floor + rate * start, -rate, s_lo, s_hi, fair,
                    f_lo, f_hi, in_range, costs_t, tuple(float(f) for f in fit.at(x)[0]),
                    tuple(float(m) for m in means),
                    float(np.quantile(boot_fit.fall, q[0])), negligible, floor,
                    halves)  # type: ignore[arg-type]  # a pair


def widen_costs(costs: Sequence[int], crossing: Crossing, max_cost: int,
                step: int = 2) -> list[int]:
    """The costs a scan adds until its fair price's interval is bounded by the costs
    measured: below the lowest (down to 0) when the value is flat over the range (the bot
    never gains from the patch there: look for the price at which it starts to) or the
    interval reaches below it; above the highest (up to ``max_cost``) when the value still
    falls there or the interval reaches above it. Two costs, ``step`` and ``2 * step``
    buttons beyond, on each side that needs them; none when the interval is bounded or the
    scan is at its limits."""
    c = sorted(costs)
    if len(c) < 2 or crossing.in_range and not crossing.flat and crossing.bounded:
        return []
    lo, hi = c[0], c[-1]
    down = crossing.flat or crossing.side == "below" or not crossing.fair_lo >= c[1]
    up = not crossing.flat and (crossing.side == "above" or not crossing.fair_hi <= c[-2])
    new: list[int] = []
    if down:
        more = [c for c in (lo - step, lo - 2 * step) if c >= 0]
        new += more or ([0] if lo > 0 else [])
    if up:
        more = [c for c in (hi + step, hi + 2 * step) if c <= max_cost]
        new += more or ([max_cost] if hi < max_cost else [])
    return sorted(set(new) - set(costs))
