"""Balance checks as a gate: play deals in steps until every tolerance of an experiment is
shown to hold (exit 0), one is shown to fail (exit 1), or the budget runs out (exit 2).

Each (tolerance, pairing) is a sequential test on the per-deal values of its metric
(:class:`patchsim.analysis.estimators.BandTest`: a generalised SPRT per edge of the band, as
engine-testing frameworks run on game outcomes, with Wald's bounds from alpha and beta). The
test is evaluated after every deal in deal order, so stepping only sets how often games are
played, not how often the test looks. "Holds" needs every check to accept the inside of its
band: when a true value lies on an edge, the gate passes with probability at most about alpha.
The interval printed beside each check is anytime-valid (a confidence sequence,
:func:`patchsim.analysis.estimators.anytime_estimate`), at the deal that decided: it keeps its
95% coverage although the gate chose when to stop by looking at the data. It can be wider
than the band when the check holds (it covers every look at once; the test needs less):
then the line says which test decided and why (:func:`decision_words`).
"Fails" needs one check to accept an edge: when every true value lies at the centre of its
band (or ``resolution`` inside a one-sided bound), a false fail has probability at most about
beta, split over the checks. Nothing is decided on fewer than ``MIN_DEALS`` deals.

An SPRT may run as long as it needs without changing its error rates, so an undecided gate
(exit 2) can be continued: run it again on the same folder with a larger check.max_games and
the test goes on from the deals already played.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from patchsim.analysis.estimators import (
    FAIL,
    MIN_DEALS,
    PASS,
    BandTest,
    Estimate,
    anytime_estimate,
)
from patchsim.analysis.metrics import RATE_METRICS, deal_metrics
from patchsim.experiments.experiment import Experiment
from patchsim.experiments.experiment_checks import (
    Tolerance,
    metric_amount,
    metric_interval,
)
from patchsim.play.config import RunConfig, all_pairings, games_to_deals
from patchsim.play.runfolder import RunFolder, fresh_dir
from patchsim.play.steps import play_in_steps

HOLDS, FAILS, UNDECIDED = 0, 1, 2
TOO_FEW = "undecided: too few deals"


@dataclass
class GateResult:
    code: int
    games: int
    lines: list[str] = field(default_factory=list)
    checks: int = 0  # (tolerance, pairing) pairs tested
    alpha_per_check: float = float("nan")  # the false-pass rate each check is held to


def planned_checks(exp: Experiment) -> list[tuple[Tolerance, str]]:
    """Every (tolerance, pairing) the gate checks."""
    names = exp.pairing_names()
    return [(tol, name) for tol in exp.tolerances for name in names
            if tol.pairing is None or tol.pairing == name]


RESOLUTION_DEALS = 30  # the first deals whose spread sets a one-sided non-rate resolution


def band_test(tol: Tolerance, values: np.ndarray, alpha: float, beta: float,
              resolution: float | None) -> BandTest:
    """The sequential test of one tolerance. A one-sided bound needs a resolution (how far
    inside the bound a value must lie to pass): the check's, else 2 points for rates, else a
    quarter of the per-deal standard deviation (a small effect) of the first
    RESOLUTION_DEALS deals, which no later deal changes, and no decision before them: a
    decision once made at a step stays what it was when more deals are played."""
    if math.isfinite(tol.low) and math.isfinite(tol.high):
        return BandTest(tol.low, tol.high, alpha, beta, MIN_DEALS)
    min_deals = MIN_DEALS
    if resolution is None:
        if tol.metric in RATE_METRICS:
            resolution = 0.02
        else:
            first = values[:RESOLUTION_DEALS]
            first = first[np.isfinite(first)]
            sd = float(np.std(first, ddof=1)) if len(first) >= 2 else 1.0
            resolution = max(0.25 * sd, 1e-9)
            min_deals = max(MIN_DEALS, RESOLUTION_DEALS)
    return BandTest(tol.low, tol.high, alpha, beta, min_deals, resolution)


CheckStatus = Literal["holds", "fails", "undecided"]


def decision_words(status: CheckStatus, interval: Estimate, test: BandTest, at: int,
                   metric: str = "") -> str:
    """A check's decision beside the interval it prints: when that interval shows it (inside
    the band for "holds", wholly beyond an edge for "fails") it says so; otherwise which test
    decided and why the printed interval is wider, so that "holds" never sits unexplained
    beside an interval that leaves the band. ``metric`` gives the unit of the test's step
    (points for a rate)."""
    if status not in ("holds", "fails"):
        return status
    inside = interval.lo >= test.low and interval.hi <= test.high
    beyond = interval.hi < test.low or interval.lo > test.high
    if status == "holds" and inside:
        return f"holds (decided at deal {at}; the interval lies inside the band)"
    if status == "fails" and beyond:
        return f"fails (decided at deal {at}; the interval lies beyond the band)"
    if status == "holds":
        return (f"holds (decided at deal {at} by the sequential test: at every edge its "
                "likelihood ratio for a mean inside the band crossed Wald's bound, a false "
                "pass at most about alpha for a mean on an edge; the anytime-valid interval "
                "is wider than the band because it covers the mean at every number of deals "
                "at once, which the test's decision does not need)")
    return (f"fails (decided at deal {at} by the sequential test: the deals favour a mean on "
            f"an edge over one {metric_amount(metric, test.step)} inside it, a false fail at "
            "most about beta for a mean that far inside; the anytime-valid interval still "
            "reaches inside the band, so the mean may lie just inside an edge: the band is too "
            "tight to pass)")


def run_check(exp: Experiment, out: str | Path | None = None, *, jobs: int = 1,
              backend: str = "auto", scheduler: str | None = None,
              echo: Callable[[str], None] | None = None) -> GateResult:
    """Play deals in steps of check.step_games until the sequential tests decide."""
    check = exp.check or {}
    alpha = float(check.get("alpha", 0.05))
    beta = float(check.get("beta", 0.05))
    resolution = check.get("resolution")
    max_games = int(check.get("max_games", 20000))
    step = int(check.get("step_games", 1000))
    looks = max(1, math.ceil(max_games / step))
    plan = planned_checks(exp)
    b = beta / max(1, len(plan))  # a false fail may come from any check: beta is split
    bots = exp.skill or exp.bots
    say = echo or (lambda _line: None)
    out_dir = Path(out) if out else fresh_dir(f"{exp.name}-check")
    lines: list[str] = []

    def result(code: int, games: int, last: str) -> GateResult:
        return GateResult(code, games, lines + [last], len(plan), alpha)

    cfg = RunConfig(f"{exp.name}-check", [exp.base], list(bots),
                    all_pairings(len(bots), exp.pairing_mode), games_to_deals(step),
                    exp.seed, exp.batch_deals, str(exp.path))
    targets = list(dict.fromkeys(games_to_deals(min(max_games, k * step))
                                 for k in range(1, looks + 1)))
    statuses: list[CheckStatus] = []

    def decided(deals: int) -> bool:
        """Evaluate every check on the deals played; True once the gate is decided."""
        nonlocal lines
        folder = RunFolder(out_dir)  # the tables grow at every step: read anew
        deals_table = deal_metrics(folder.games, folder.events,
                                   list(dict.fromkeys(t.metric for t, _ in plan)))
        k = targets.index(deals) + 1
        lines = [f"step {k}/{looks}: {2 * deals} games per pairing (sequential test per "
                 f"check: alpha {alpha:g}, beta {beta:g} over {len(plan)} check(s))"]
        statuses.clear()
        for tol, pairing in plan:
            rows = deals_table[deals_table["pairing"] == pairing].sort_values("deal")
            x = rows[tol.metric].to_numpy(dtype=float) if len(rows) else np.array([])
            x = x[np.isfinite(x)]
            if len(x) < MIN_DEALS:
                statuses.append("undecided")
                lines.append(f"  {pairing}: {tol.describe()}: {len(x)} deals -> {TOO_FEW}")
                continue
            test = band_test(tol, x, alpha, b, resolution)
            kind, at = test.first_decision(x, range(test.min_deals, len(x) + 1))
            st: CheckStatus = ("holds" if kind == PASS else "fails" if kind == FAIL
                               else "undecided")
            # the interval at the deal that decided, anytime-valid: the stop was chosen by
            # looking at the data, where a fixed-sample interval would cover less than 95%
            est = anytime_estimate(x[:at] if st != "undecided" else x, 0.95,
                                   n0=max(MIN_DEALS, step // 2))
            statuses.append(st)
            lines.append(f"  {pairing}: {tol.describe()}: "
                         f"{metric_interval(tol.metric, est.value, est.lo, est.hi)} "
                         f"anytime-valid 95% ({est.deals} deals) -> "
                         f"{decision_words(st, est, test, at, tol.metric)}")
        for ln in lines:
            say(ln)
        return bool(statuses) and (all(s == "holds" for s in statuses)
                                   or any(s == "fails" for s in statuses))

    # the one sequential loop (play.execution); batch files kept: each step tops the run up
    # without re-splitting the tables
    steps = play_in_steps(cfg, out_dir, targets, decided, jobs=jobs, backend=backend,
                          scheduler=scheduler, progress=None, keep_batches=True)
    if steps.done and all(s == "holds" for s in statuses):
        return result(HOLDS, 2 * steps.deals, "every tolerance is shown to hold")
    if steps.done:
        return result(FAILS, 2 * steps.deals, "a tolerance is shown to fail")
    return result(UNDECIDED, max_games,
                  f"the budget of {max_games} games per pairing ran out before every tolerance "
                  "was decided. The sequential test keeps its error rates however long it "
                  "runs: run the gate again on the same folder with a larger "
                  "check.max_games and it continues from the deals already played, or widen "
                  "the tolerances")
