"""The rules tuner: search declared ruleset fields for the variant closest to declared targets.

Successive halving: every candidate plays a few deals, the better half plays twice as many
(topping up its own run, so no game is wasted), and so on; the finalists are then re-checked
on fresh deals (another master seed) with intervals, which is what the verdict rests on.
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

from patchsim.analysis.metrics import deal_metrics, estimate
from patchsim.analysis.tables import read_games, scan_events
from patchsim.atomic import atomic_write
from patchsim.experiments.experiment import Experiment, draw_value, variant_label
from patchsim.play.config import RunConfig, all_pairings, games_to_deals
from patchsim.play.execution import ProgressFn, execute
from patchsim.play.storage import fresh_dir

FRESH_SEED_OFFSET = 1_000_003  # finalists are re-checked on deals no candidate was chosen on


@dataclass
class TuneResult:
    out_dir: Path
    rounds: pd.DataFrame  # every candidate's estimates per round
    finalists: pd.DataFrame  # the re-check on fresh deals
    report: Path


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


def _estimates(run_dir: Path, metrics: list[str]) -> pd.DataFrame:
    games = read_games(run_dir)
    deals = deal_metrics(games, scan_events(run_dir, games))
    return estimate(deals, metrics, by=("pairing",))


def run_tune(exp: Experiment, out: str | Path | None = None, *, jobs: int = 1,
             backend: str = "loky", scheduler: str | None = None,
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
    for rnd in range(n_rounds):
        g = games * 2**rnd
        scored = []
        for ov in alive:
            cfg = _config(exp, ov, g, exp.seed)
            run_dir = out_dir / "candidates" / cfg.rulesets[0].content_hash()
            execute(cfg, run_dir, jobs=jobs, backend=backend, scheduler=scheduler,
                    progress=progress)
            est = _estimates(run_dir, metrics)
            lo = loss(est, targets)
            scored.append((lo, ov))
            row = {"round": rnd, "candidate": variant_label(ov) or "base", "games": 2 * cfg.deals,
                   "loss": lo}
            for m in metrics:
                row[m] = float(est[est["metric"] == m]["mean"].mean())
            rows.append(row)
        scored.sort(key=lambda x: x[0])
        say(f"round {rnd + 1}/{n_rounds}: {len(alive)} candidates x {g} games; best "
             f"{variant_label(scored[0][1]) or 'base'} (loss {scored[0][0]:.2f})")
        keep = max(n_final, len(scored) // 2)
        alive = [ov for _, ov in scored[:keep]]
        if len(alive) <= n_final:
            break
    finalists = alive[:n_final]
    final_games = int(tune.get("final_games", 4 * games))
    frows = []
    for ov in finalists:
        cfg = _config(exp, ov, final_games, exp.seed + FRESH_SEED_OFFSET)
        run_dir = out_dir / "finalists" / cfg.rulesets[0].content_hash()
        execute(cfg, run_dir, jobs=jobs, backend=backend, scheduler=scheduler,
                progress=progress)
        est = _estimates(run_dir, metrics)
        row: dict[str, Any] = {"candidate": variant_label(ov) or "base", "games": 2 * cfg.deals,
                               "loss": loss(est, targets), "all_within": True}
        for m in metrics:
            e = est[est["metric"] == m]
            mean, lo, hi = (float(e["mean"].mean()), float(e["lo"].min()),
                            float(e["hi"].max()))
            t = targets[m]
            tol = _tolerance(m, t)
            within = (t["target"] - tol) <= lo and hi <= (t["target"] + tol)
            row.update({m: mean, f"{m}_lo": lo, f"{m}_hi": hi, f"{m}_within": within})
            row["all_within"] = row["all_within"] and within
        frows.append(row)
    final = pd.DataFrame(frows).sort_values("loss", ignore_index=True)
    rounds = pd.DataFrame(rows)
    report = _write_report(exp, out_dir, rounds, final, targets)
    return TuneResult(out_dir, rounds, final, report)


def md_table(df: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table (numbers to 4 significant digits)."""

    def cell(v: Any) -> str:
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def _write_report(exp: Experiment, out_dir: Path, rounds: pd.DataFrame, final: pd.DataFrame,
                  targets: dict[str, dict[str, float]]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# Tuning: {exp.name}", "", exp.description, "",
             "Targets: " + "; ".join(f"{m} = {t['target']} ± {_tolerance(m, t):g}"
                                     for m, t in targets.items()), "", "## Verdict", ""]
    if len(final):
        best = final.iloc[0]
        sure = ("every target is met within its tolerance with 95% confidence"
                if best["all_within"] else
                "not every target is shown to be within tolerance: more games, or wider "
                "tolerances, are needed to be sure")
        lines.append(f"Best variant: **{best['candidate']}** (re-checked on "
                     f"{int(best['games'])} fresh games per pairing): {sure}.")
    lines += ["", "## Finalists (fresh deals, 95% intervals)", "",
              "| candidate | games | " + " | ".join(targets) + " | all within |",
              "|---|---:|" + "---|" * len(targets) + "---|"]
    for r in final.to_dict("records"):
        cells = [f"{r[m]:.4g} [{r[m + '_lo']:.4g}, {r[m + '_hi']:.4g}]"
                 f"{' ✓' if r[m + '_within'] else ''}" for m in targets]
        lines.append(f"| {r['candidate']} | {r['games']} | " + " | ".join(cells) +
                     f" | {'yes' if r['all_within'] else 'no'} |")
    lines += ["", "## Search (successive halving; point estimates)", "",
              md_table(rounds) if len(rounds) else "", ""]
    path = out_dir / "tune.md"
    atomic_write(path, "\n".join(lines))
    atomic_write(out_dir / "tune-rounds.csv", rounds.to_csv(index=False))
    atomic_write(out_dir / "tune-finalists.csv", final.to_csv(index=False))
    return path
