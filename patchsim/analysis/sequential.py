"""The sequential side of the estimator layer (offered by :mod:`patchsim.analysis.estimators`):
:class:`BandTest`, a generalised SPRT on deal outcomes of whether a metric lies inside a band,
and :func:`anytime_estimate`, the interval a mean keeps after a stop chosen by looking at the
data."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from patchsim.analysis.defaults import ALPHA
from patchsim.analysis.intervals import NAN, Estimate, finite

# --- sequential test -----------------------------------------------------------------------------
PASS, FAIL, CONTINUE = "pass", "fail", "continue"


@dataclass(frozen=True)
class BandTest:
    """A sequential test of whether the mean of per-deal outcomes lies inside ``[low, high]``
    (pass) or outside it (fail), looked at after every deal if need be.

    For each finite edge a generalised SPRT (the log-likelihood ratio of a normal model with
    the variance estimated from the data, as engine-testing frameworks use on game outcomes)
    tests "the mean is on the edge" against "the mean is ``resolution`` inside it" (for a
    two-sided band the default resolution reaches the centre). Pass needs every edge's test
    to accept the inside; fail needs one to accept its edge. Wald's bounds give: a false pass
    at most about ``alpha`` when the true mean is on an edge, a false fail at most about
    ``beta`` when it is ``resolution`` inside every edge (``beta`` is split between the
    edges). One-sided bands (an infinite edge) need a ``resolution``."""

    low: float
    high: float
    alpha: float = ALPHA
    beta: float = 0.05
    min_deals: int = 10
    resolution: float | None = None

    @classmethod
    def around(cls, center: float, tolerance: float, **kw: Any) -> BandTest:
        """The band ``center +- tolerance``."""
        return cls(center - tolerance, center + tolerance, **kw)

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"band [{self.low}, {self.high}]: low must be below high")
        finite = math.isfinite(self.low) + math.isfinite(self.high)
        if finite == 0:
            raise ValueError("band: at least one edge must be finite")
        if finite == 1 and not (self.resolution and self.resolution > 0):
            raise ValueError("a one-sided band needs a resolution > 0")

    @property
    def step(self) -> float:
        """How far inside an edge the alternative lies."""
        if self.resolution:
            return self.resolution
        return (self.high - self.low) / 2

    @property
    def edges(self) -> list[tuple[float, float]]:
        """(edge, the alternative inside it) for each finite edge."""
        out = []
        if math.isfinite(self.low):
            out.append((self.low, self.low + self.step))
        if math.isfinite(self.high):
            out.append((self.high, self.high - self.step))
        return out

    @property
    def bounds(self) -> tuple[float, float]:
        b_edge = self.beta / len(self.edges)
        return math.log(b_edge / (1 - self.alpha)), math.log((1 - b_edge) / self.alpha)

    def _llrs(self, n: np.ndarray, total: np.ndarray, squares: np.ndarray
              ) -> list[np.ndarray]:
        """Log-likelihood ratios (inside vs edge) per finite edge, from the count, sum and
        sum of squares of the outcomes (vectorised over looks)."""
        n = np.maximum(n, 1)
        xbar = total / n
        var = squares / n - xbar**2  # the MLE of the variance, as in the GSPRT
        # a floor keeps a run of identical outcomes from giving an infinite ratio
        var = np.maximum(var, max(0.25 * self.step**2, 1e-12))
        # H1: mean mu1 (inside) against H0: mean mu0 (the edge)
        return [n * (mu1 - mu0) * (xbar - (mu0 + mu1) / 2) / var for mu0, mu1 in self.edges]

    def llrs(self, x: np.ndarray | Sequence[float]) -> list[float]:
        """Log-likelihood ratios of the outcomes ``x``, one per finite edge."""
        v = finite(x)
        return [float(r[0]) for r in self._llrs(np.array([len(v)]), np.array([v.sum()]),
                                                np.array([(v**2).sum()]))]

    def decide(self, x: np.ndarray | Sequence[float]) -> str:
        """The decision after the deals ``x`` (per-deal outcomes, in play order)."""
        v = finite(x)
        return self.first_decision(v, [len(v)])[0]

    def first_decision(self, x: np.ndarray | Sequence[float],
                       looks: Sequence[int] | range) -> tuple[str, int]:
        """The first decision when looking after ``looks`` deals (increasing), and the number
        of deals it took; (``continue``, last look) if none is reached."""
        v = finite(x)
        at = np.asarray([k for k in looks if k <= len(v)], dtype=np.int64)
        if len(at) == 0:
            return CONTINUE, 0
        total = np.concatenate([[0.0], np.cumsum(v)])[at]
        squares = np.concatenate([[0.0], np.cumsum(v**2)])[at]
        ratios = self._llrs(at.astype(float), total, squares)
        low, high = self.bounds
        ready = at >= self.min_deals
        fail = ready & np.logical_or.reduce([r <= low for r in ratios])
        passed = ready & np.logical_and.reduce([r >= high for r in ratios])
        done = np.flatnonzero(fail | passed)
        if len(done) == 0:
            return CONTINUE, int(at[-1])
        i = int(done[0])
        return (FAIL if fail[i] else PASS), int(at[i])


# --- intervals after a sequential stop -----------------------------------------------------------
def anytime_estimate(x: np.ndarray | Sequence[float], level: float = 0.95,
                     n0: int = 100) -> Estimate:
    """The mean of per-deal values with an anytime-valid interval (a confidence sequence):
    it covers the true mean at ``level`` simultaneously over every number of deals, so it
    keeps its coverage when the number of deals was chosen by looking at the data (a
    sequential test that stopped, a run stopped when decided), where the fixed-sample
    t-interval of :func:`mean_estimate` covers less.

    The normal-mixture boundary of Robbins (see Howard et al. 2021, "Time-uniform,
    nonparametric, nonasymptotic confidence sequences"), two-sided by a union of two
    one-sided sequences at (1 - level) / 2 each, with the per-deal spread estimated from the
    deals: ``|mean - mu| <= sqrt((n + n0) * sd^2 * log((n + n0) / (n0 * a^2))) / n`` with
    ``a = (1 - level) / 2``. ``n0`` sets where the sequence is tightest (about the deals at
    which it is expected to be read)."""
    v = finite(x)
    n = len(v)
    if n < 2:
        return Estimate(float(v.mean()) if n else NAN, NAN, NAN, NAN, n, NAN, level)
    m, sd = float(v.mean()), float(v.std(ddof=1))
    a = (1 - level) / 2
    half = math.sqrt((n + n0) * sd**2 * math.log((n + n0) / (n0 * a**2))) / n
    return Estimate(m, sd / math.sqrt(n), m - half, m + half, n, sd, level)
