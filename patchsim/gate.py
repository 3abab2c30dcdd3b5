"""Balance checks as a gate: play deals in steps until every tolerance of an experiment is
shown to hold (exit 0), one is shown to fail (exit 1), or the budget runs out (exit 2).

At each look the estimate's interval is computed at a level that splits the error rate over
all planned looks (Bonferroni), so stopping early when the answer is clear does not inflate
the chance of a wrong verdict. "Shown to hold" is an equivalence test (TOST): the
(1 - 2 alpha) interval lies inside the tolerance; "shown to fail": the (1 - alpha) interval
lies entirely outside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from patchsim.experiment import Experiment, Tolerance
from patchsim.metrics import deal_metrics, estimate
from patchsim.runner import (
    RunConfig,
    all_pairings,
    execute,
    games_to_deals,
    load_events,
    load_games,
)

HOLDS, FAILS, UNDECIDED = 0, 1, 2


@dataclass
class GateResult:
    code: int
    games: int
    lines: list[str] = field(default_factory=list)


def _status(tol: Tolerance, mean: float, lo2: float, hi2: float, lo1: float, hi1: float,
            ) -> str:
    if lo2 >= tol.low and hi2 <= tol.high:
        return "holds"
    if hi1 < tol.low or lo1 > tol.high:
        return "fails"
    return "undecided"


def run_check(exp: Experiment, out: str | Path | None = None, *, jobs: int = 1,
              backend: str = "loky", scheduler: str | None = None, echo=print) -> GateResult:
    check = exp.check or {}
    alpha = float(check.get("alpha", 0.05))
    max_games = int(check.get("max_games", 20000))
    step = int(check.get("step_games", 2000))
    looks = max(1, math.ceil(max_games / step))
    a = alpha / looks  # Bonferroni over the planned looks
    bots = exp.bots
    out_dir = Path(out) if out else Path("reports") / f"{exp.name}-check"
    metrics = sorted({t.metric for t in exp.tolerances})
    lines: list[str] = []
    for k in range(1, looks + 1):
        games = min(max_games, k * step)
        cfg = RunConfig(f"{exp.name}-check", [exp.base], list(bots),
                        all_pairings(len(bots), exp.pairings), games_to_deals(games),
                        exp.seed, exp.batch_deals, str(exp.path))
        execute(cfg, out_dir, jobs=jobs, backend=backend, scheduler=scheduler, progress=False)
        deals = deal_metrics(load_games(out_dir), load_events(out_dir))
        wide = estimate(deals, metrics, by=("pairing",), level=1 - 2 * a)
        narrow = estimate(deals, metrics, by=("pairing",), level=1 - a)
        statuses = []
        lines = [f"look {k}/{looks}: {2 * cfg.deals} games per pairing "
                 f"(intervals at {100 * (1 - 2 * a):.2f}% / {100 * (1 - a):.2f}%)"]
        for tol in exp.tolerances:
            sel = wide["metric"] == tol.metric
            if tol.pairing:
                sel &= wide["pairing"] == tol.pairing
            for idx in wide[sel].index:
                w, n = wide.loc[idx], narrow.loc[idx]
                st = _status(tol, w["mean"], w["lo"], w["hi"], n["lo"], n["hi"])
                statuses.append(st)
                lines.append(f"  {w['pairing']}: {tol.describe()}: {w['mean']:.4f} "
                             f"[{w['lo']:.4f}, {w['hi']:.4f}] -> {st}")
        for ln in lines:
            echo(ln)
        if statuses and all(s == "holds" for s in statuses):
            return GateResult(HOLDS, 2 * cfg.deals, lines + ["every tolerance is shown to "
                                                             "hold"])
        if any(s == "fails" for s in statuses):
            return GateResult(FAILS, 2 * cfg.deals, lines + ["a tolerance is shown to fail"])
        if games >= max_games:
            break
    return GateResult(UNDECIDED, max_games, lines + [
        f"the budget of {max_games} games per pairing ran out before every tolerance was "
        "decided; raise check.max_games or widen the tolerances"])
