"""Balance checks as a gate: play deals in steps until every tolerance of an experiment is
shown to hold (exit 0), one is shown to fail (exit 1), or the budget runs out (exit 2).

At each look every tolerance is checked on every pairing it applies to, and each of these
checks uses an error rate of alpha / (looks x checks per look) (Bonferroni over the planned
looks, the tolerances and the pairings), so neither stopping early when the answer is clear
nor checking many things at once inflates the chance of a wrong verdict above alpha. "Shown to
hold" is an equivalence test (TOST): the (1 - 2a) interval lies inside the tolerance; "shown
to fail": the (1 - a) interval lies entirely outside it. Nothing is decided on fewer than
``MIN_DEALS`` deals of a pairing (the interval of so few deals is not to be trusted).

The error rate is spent over the looks of one run. Re-running a gate on the same folder after
exit 2 restarts alpha spending on deals that were already looked at (the run folder is topped
up, not replaced), so the combined procedure can err more often than alpha: to decide an
undecided gate, start again from scratch with a new --out folder and a larger
check.max_games.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from patchsim.analysis.metrics import deal_metrics, estimate
from patchsim.analysis.tables import read_games, scan_events
from patchsim.experiments.experiment import Experiment, Tolerance
from patchsim.play.config import RunConfig, all_pairings, games_to_deals
from patchsim.play.execution import execute
from patchsim.play.storage import fresh_dir

HOLDS, FAILS, UNDECIDED = 0, 1, 2
MIN_DEALS = 10  # no verdict on fewer deals per pairing
TOO_FEW = "undecided: too few deals"


@dataclass
class GateResult:
    code: int
    games: int
    lines: list[str] = field(default_factory=list)
    checks: int = 0  # planned checks: looks x (tolerance, pairing) pairs per look
    alpha_per_check: float = float("nan")  # the Bonferroni share of alpha each check gets


def planned_checks(exp: Experiment) -> list[tuple[Tolerance, str]]:
    """Every (tolerance, pairing) the gate checks at each look."""
    names = exp.pairing_names()
    return [(tol, name) for tol in exp.tolerances for name in names
            if tol.pairing is None or tol.pairing == name]


def _status(tol: Tolerance, mean: float, lo2: float, hi2: float, lo1: float, hi1: float,
            deals: int = MIN_DEALS) -> str:
    if deals < MIN_DEALS:
        return TOO_FEW
    if lo2 >= tol.low and hi2 <= tol.high:
        return "holds"
    if hi1 < tol.low or lo1 > tol.high:
        return "fails"
    return "undecided"


def run_check(exp: Experiment, out: str | Path | None = None, *, jobs: int = 1,
              backend: str = "loky", scheduler: str | None = None,
              echo: Callable[[str], None] | None = None) -> GateResult:
    check = exp.check or {}
    alpha = float(check.get("alpha", 0.05))
    max_games = int(check.get("max_games", 20000))
    step = int(check.get("step_games", 2000))
    looks = max(1, math.ceil(max_games / step))
    plan = planned_checks(exp)
    n_checks = looks * max(1, len(plan))
    a = alpha / n_checks  # Bonferroni over the looks, the tolerances and the pairings
    bots = exp.skill or exp.bots
    say = echo or (lambda _line: None)
    out_dir = Path(out) if out else fresh_dir(f"{exp.name}-check")
    metrics = sorted({t.metric for t in exp.tolerances})
    lines: list[str] = []

    def result(code: int, games: int, last: str) -> GateResult:
        return GateResult(code, games, lines + [last], n_checks, a)

    for k in range(1, looks + 1):
        games = min(max_games, k * step)
        cfg = RunConfig(f"{exp.name}-check", [exp.base], list(bots),
                        all_pairings(len(bots), exp.pairing_mode), games_to_deals(games),
                        exp.seed, exp.batch_deals, str(exp.path))
        execute(cfg, out_dir, jobs=jobs, backend=backend, scheduler=scheduler, progress=None)
        played = read_games(out_dir)
        deals = deal_metrics(played, scan_events(out_dir, played))
        wide = estimate(deals, metrics, by=("pairing",), level=1 - 2 * a).set_index(
            ["metric", "pairing"])
        narrow = estimate(deals, metrics, by=("pairing",), level=1 - a).set_index(
            ["metric", "pairing"])
        statuses = []
        lines = [f"look {k}/{looks}: {2 * cfg.deals} games per pairing "
                 f"(intervals at {100 * (1 - 2 * a):.2f}% / {100 * (1 - a):.2f}%: alpha "
                 f"{alpha:g} over {n_checks} checks)"]
        for tol, pairing in plan:
            idx = (tol.metric, pairing)
            if idx not in wide.index:
                statuses.append("undecided")
                lines.append(f"  {pairing}: {tol.describe()}: no data -> undecided")
                continue
            w, n = wide.loc[idx], narrow.loc[idx]
            st = _status(tol, w["mean"], w["lo"], w["hi"], n["lo"], n["hi"], int(w["deals"]))
            statuses.append(st)
            lines.append(f"  {pairing}: {tol.describe()}: {w['mean']:.4f} "
                         f"[{w['lo']:.4f}, {w['hi']:.4f}] ({int(w['deals'])} deals) -> {st}")
        for ln in lines:
            say(ln)
        if statuses and all(s == "holds" for s in statuses):
            return result(HOLDS, 2 * cfg.deals, "every tolerance is shown to hold")
        if any(s == "fails" for s in statuses):
            return result(FAILS, 2 * cfg.deals, "a tolerance is shown to fail")
        if games >= max_games:
            break
    return result(UNDECIDED, max_games,
                  f"the budget of {max_games} games per pairing ran out before every tolerance "
                  "was decided. Re-running the gate on this folder restarts alpha spending on "
                  "deals already looked at (the verdict would not be at the stated error "
                  "rate): start again from scratch with a new --out folder and a larger "
                  "check.max_games, or widen the tolerances")
