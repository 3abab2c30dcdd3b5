"""The rules tuner: search declared ruleset fields for variants that meet declared targets.

Rounds of growing size: every surviving candidate plays more deals each round (topping up its
own run, so no game is wasted). A candidate is dropped only when confidence bounds show it is
further from the targets than the best candidate could be (intervals Bonferroni-corrected over
the round's candidates), never on a point estimate. The finalists are then confirmed on fresh
deals (another master seed) by the verdict rule of every study (each target's 95% interval
inside its tolerance), sized by a power calculation from the per-deal spread seen in the
search; the verdict names every finalist shown to meet the targets and never picks a "best"
among variants within noise of each other.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis.estimators import (
    Estimate,
    deals_for_equivalence,
    mean_estimate,
    simultaneous_level,
    verdicts,
)
from patchsim.analysis.metrics import BOUNDS, canonical, deal_metrics
from patchsim.atomic import atomic_write
from patchsim.document.model import Document
from patchsim.document.render import write
from patchsim.experiments.experiment import Experiment, variant_label
from patchsim.experiments.experiment_checks import draw_value
from patchsim.experiments.tune_document import tune_document
from patchsim.play.config import RunConfig, all_pairings, games_to_deals
from patchsim.play.execution import ProgressFn, execute
from patchsim.play.runfolder import TUNE_FINALISTS, TUNE_ROUNDS, RunFolder, fresh_dir

FRESH_SEED_OFFSET = 1_000_003  # finalists are re-checked on deals no candidate was chosen on


@dataclass
class TuneResult:
    out_dir: Path
    rounds: pd.DataFrame  # every candidate's estimates per round
    finalists: pd.DataFrame  # the re-check on fresh deals
    report: Path  # tune.md (tune.html beside it)
    document: Document | None = None  # the report itself: the CLI shows sections of it


def candidates(exp: Experiment) -> list[dict[str, Any]]:
    """The candidate overrides: the whole grid when every field is a list of choices and the
    grid is small enough, else a random sample of the declared domains."""
    tune = exp.tune or {}
    fields: dict[str, Any] = tune["fields"]
    n = int(tune.get("candidates", 12))
    if all(isinstance(d, list) for d in fields.values()):
        grid = [dict(zip(fields, combo, strict=True))
                for combo in itertools.product(*fields.values())]
        if len(grid) <= n:
            return grid
    rng = np.random.default_rng(int(tune.get("seed", exp.seed)))
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for _ in range(50 * n):
        ov = {k: draw_value(d, rng) for k, d in fields.items()}
        key = json.dumps(ov, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(ov)
        if len(out) == n:
            break
    return out


def _tolerance(metric: str, t: dict[str, float]) -> float:
    """A target's tolerance: required (the experiment loader checks it), never defaulted."""
    tol = t.get("tolerance")
    if isinstance(tol, bool) or not isinstance(tol, int | float) or not 0 < tol < np.inf:
        raise ValueError(f"tune.targets.{metric}.tolerance: a positive number is required, "
                         f"got {tol!r}")
    return float(tol)


def loss(est: pd.DataFrame, targets: dict[str, dict[str, float]]) -> float:
    """Sum of squared distances to the targets in units of their tolerances."""
    total = 0.0
    means = est.groupby("metric")["mean"].mean()
    for m, t in targets.items():
        total += ((means.get(m, np.nan) - t["target"]) / _tolerance(m, t)) ** 2
    return float(total)


def _config(exp: Experiment, ov: dict[str, Any], games: int, seed: int) -> RunConfig:
    rs = exp.base.with_overrides(ov) if ov else exp.base
    rs = dataclasses.replace(rs, name=variant_label(ov) or "base")
    bots = exp.skill or exp.bots
    return RunConfig(f"{exp.name}-tune", [rs], list(bots),
                     all_pairings(len(bots), exp.pairing_mode),
                     games_to_deals(games), seed, exp.batch_deals, str(exp.path))


def _deal_values(run_dir: Path, metrics: list[str]) -> pd.DataFrame:
    """One row per deal, each metric averaged over the pairings (deals are common to the
    pairings, so this keeps the deal as the unit)."""
    folder = RunFolder(run_dir)
    deals = deal_metrics(folder.games, folder.events, metrics)
    # the columns under the targets' names (an old name of a metric stays the target's key)
    cols = {m: deals[canonical(m)] for m in metrics}
    return pd.DataFrame(cols).groupby(deals["deal"].to_numpy(), sort=True).mean()


def loss_bounds(values: pd.DataFrame, targets: dict[str, dict[str, float]],
                level: float) -> tuple[float, float, float, dict[str, Estimate]]:
    """The loss at the point estimates and its lowest and highest values over the metrics'
    confidence intervals at ``level`` (deal the unit), and the estimates."""
    point = low = high = 0.0
    ests: dict[str, Estimate] = {}
    for m, t in targets.items():
        e = mean_estimate(values[m].to_numpy(), level, BOUNDS.get(canonical(m)))
        ests[m] = e
        tol, target = _tolerance(m, t), t["target"]
        near = 0.0 if e.lo <= target <= e.hi else min(abs(e.lo - target), abs(e.hi - target))
        far = max(abs(e.lo - target), abs(e.hi - target))
        point += ((e.value - target) / tol) ** 2
        low += (near / tol) ** 2
        high += (far / tol) ** 2
    return point, low, high, ests


def run_tune(exp: Experiment, out: str | Path | None = None, *, jobs: int = 1,
             backend: str = "auto", scheduler: str | None = None,
             progress: ProgressFn | None = None,
             echo: Callable[[str], None] | None = None) -> TuneResult:
    tune = exp.tune
    if not tune:
        raise ValueError(f"{exp.path}: no tune section")
    say = echo or (lambda _line: None)
    out_dir = Path(out) if out else fresh_dir(f"{exp.name}-tune")
    targets: dict[str, dict[str, float]] = tune["targets"]
    for m, t in targets.items():  # before any game: load_experiment checks these too
        _tolerance(m, t)
        if isinstance(t.get("target"), bool) or not isinstance(t.get("target"), int | float):
            raise ValueError(f"tune.targets.{m}.target: a number is required, got "
                             f"{t.get('target')!r}")
    metrics = list(targets)
    games = int(tune.get("games", 200))
    n_rounds = int(tune.get("rounds", 3))
    n_final = int(tune.get("finalists", 3))
    alive = candidates(exp)
    rows = []
    spread: dict[str, list[float]] = {m: [] for m in metrics}
    for rnd in range(n_rounds):
        g = games * 2**rnd
        level = simultaneous_level(len(alive))  # Bonferroni over this round's candidates
        scored = []
        for ov in alive:
            cfg = _config(exp, ov, g, exp.seed)
            run_dir = out_dir / "candidates" / cfg.rulesets[0].content_hash()
            execute(cfg, run_dir, jobs=jobs, backend=backend, scheduler=scheduler,
                    progress=progress)
            values = _deal_values(run_dir, metrics)
            point, low, high, ests = loss_bounds(values, targets, level)
            scored.append((point, low, high, ov))
            row: dict[str, Any] = {"round": rnd, "candidate": variant_label(ov) or "base",
                                   "games": 2 * cfg.deals, "loss": point, "loss_lo": low,
                                   "loss_hi": high, "level": level}
            for m, e in ests.items():
                row.update({m: e.value, f"{m}_lo": e.lo, f"{m}_hi": e.hi})
                if np.isfinite(e.sd):
                    spread[m].append(e.sd)
            rows.append(row)
        # drop only what is shown worse: its best case is worse than the leader's worst case
        ceiling = min(high for _, _, high, _ in scored)
        keep = [s for s in scored if s[1] <= ceiling]
        for r in rows[-len(scored):]:
            r["dropped"] = not any(variant_label(s[3]) == r["candidate"]
                                   or (not s[3] and r["candidate"] == "base") for s in keep)
        keep.sort(key=lambda s: s[0])
        say(f"round {rnd + 1}/{n_rounds}: {len(alive)} candidates x {g} games; "
            f"{len(scored) - len(keep)} shown further from the targets and dropped")
        alive = [s[3] for s in keep]
        if len(alive) <= n_final:
            break
    finalists = alive[:n_final]
    # fresh deals, as many as showing every target within tolerance needs (80% power) at
    # the largest per-deal spread seen, capped by the budget
    cap = int(tune.get("final_games", 4 * games))
    # alpha / 2 per one-sided test: a finalist is within a target when its 95% interval lies
    # inside the tolerance (the one verdict rule, estimators.verdicts)
    need = max([deals_for_equivalence(max(spread[m] or [0.5]), _tolerance(m, targets[m]),
                                      alpha=0.025)
                for m in metrics] + [10])
    final_games = min(cap, 2 * need)
    frows = []
    for ov in finalists:
        cfg = _config(exp, ov, final_games, exp.seed + FRESH_SEED_OFFSET)
        run_dir = out_dir / "finalists" / cfg.rulesets[0].content_hash()
        execute(cfg, run_dir, jobs=jobs, backend=backend, scheduler=scheduler,
                progress=progress)
        values = _deal_values(run_dir, metrics)
        point, _, _, ests = loss_bounds(values, targets, 0.95)
        row = {"candidate": variant_label(ov) or "base", "games": 2 * cfg.deals,
               "loss": point, "all_within": True}
        for m, e in ests.items():
            t = targets[m]
            # every target must hold (an intersection-union claim: no adjustment over them)
            v = verdicts([e], _tolerance(m, t), t["target"], family="none")[0]
            p_eq, within = v.p_equivalence, v.kind == "equivalent"
            row.update({m: e.value, f"{m}_lo": e.lo, f"{m}_hi": e.hi, f"{m}_p_within": p_eq,
                        f"{m}_within": within})
            row["all_within"] = row["all_within"] and within
        frows.append(row)
    final = pd.DataFrame(frows).sort_values("loss", ignore_index=True)
    final.attrs.update(planned_deals=need, final_games=final_games, cap=cap)
    rounds = pd.DataFrame(rows)
    report, doc = _write_report(exp, out_dir, rounds, final, targets)
    return TuneResult(out_dir, rounds, final, report, doc)


def _write_report(exp: Experiment, out_dir: Path, rounds: pd.DataFrame, final: pd.DataFrame,
                  targets: dict[str, dict[str, float]]) -> tuple[Path, Document]:
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = tune_document(exp, rounds, final, targets,
                        {m: _tolerance(m, t) for m, t in targets.items()})
    _html, path = write(doc, out_dir, "tune")
    atomic_write(out_dir / TUNE_ROUNDS, rounds.to_csv(index=False))
    atomic_write(out_dir / TUNE_FINALISTS, final.to_csv(index=False))
    return path, doc
