"""Parameter sweeps: every variant of an experiment on the same deals, and a comparison
report (one row per variant, differences to the base paired by deal through
:func:`patchsim.analysis.comparison.paired_comparison`; the primary metric's verdicts with
the variants of a pairing as one Holm family, the other metrics exploratory, BH).

"Does the imbalance grow with skill?" is the report's skill-table question, answered by the
same function (:func:`patchsim.analysis.comparison.imbalance_changes`). "Is the variant
closest to 50% really fairer than the others?" compares distances to a fair game
(|first-seat edge|) with the one bootstrap over deals
(:func:`patchsim.analysis.bootstrap.bootstrap_over_deals`, fixed seed), so a report is
reproducible to the digit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.colors
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from patchsim.analysis import estimators as est_layer
from patchsim.analysis.bootstrap import RESAMPLES, SEED, bootstrap_over_deals
from patchsim.analysis.comparison import imbalance_changes, paired_comparison
from patchsim.analysis.defaults import ALPHA, DEFAULT_MARGIN
from patchsim.analysis.metrics import (
    DEAL_METRICS,
    RATE_METRICS,
    Metric,
    canonical,
    deal_metrics,
    estimate,
)
from patchsim.analysis.metrics import METRICS as REGISTRY
from patchsim.atomic import atomic_write
from patchsim.document.model import Document
from patchsim.document.render import write
from patchsim.experiments.experiment import Experiment
from patchsim.experiments.sweep_document import sweep_document, verdict_lines
from patchsim.play.config import MAX_GAMES, RunConfig, RunError, all_pairings, games_to_deals
from patchsim.play.execution import ProgressFn, execute
from patchsim.play.runfolder import SWEEP_SKILL, SWEEP_TABLE, RunFolder, fresh_dir, load_manifest
from patchsim.reporting.plots import png_bytes

# each metric's one-sentence description, as the report prints it (from the registry)
METRICS: dict[str, str] = {n: m.description for n, m in REGISTRY.items()}
SWEEP_METRICS = ["first_player_win", "abs_margin", "mean_score", "plies",
                 "bonus_rate", "leather_useful", "first_leather_useful"]
BOOTSTRAP_RESAMPLES = RESAMPLES  # the one bootstrap over deals (analysis.bootstrap)
BOOTSTRAP_SEED = SEED  # fixed: the same deals give the same intervals
FAIR = {"first_player_win": 0.5, "first_player_edge": 0.0}  # a fair game on each scale
PERCENT_METRICS = RATE_METRICS


def run_config(exp: Experiment, games: int | None = None, seed: int | None = None,
               variants: list | None = None, name: str | None = None) -> RunConfig:
    """The batch run that plays every variant of ``exp`` on common deals."""
    vs = variants if variants is not None else exp.variants
    bots = exp.skill or exp.bots
    mode = "self" if exp.skill else exp.pairings
    return RunConfig(name or exp.name, [v.ruleset for v in vs], list(bots),
                     all_pairings(len(bots), mode),
                     games_to_deals(exp.games if games is None else games),
                     exp.seed if seed is None else seed, exp.batch_deals, str(exp.path))


@dataclass
class SweepResult:
    run_dir: Path
    table: pd.DataFrame
    report_md: Path
    report_html: Path
    document: Document | None = None  # the report itself: the CLI shows sections of it


def sweep_table(games: pd.DataFrame, events: pd.DataFrame | None,
                metrics: list[str] | None = None, primary: str = "first_player_win",
                margin: float = DEFAULT_MARGIN, deals: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (variant, pairing): each metric with its 95% interval over deals, and its
    paired difference to the base on the same deals. The primary metric's p-values are
    Holm-corrected over the variants of each pairing and each variant gets a verdict from
    :func:`estimators.verdicts` with the variants of its pairing as one Holm family
    (``verdict_kind``, ``verdict``: equivalent within +-margin (negligible when also
    non-zero) / differs beyond the margin / undecided with the deals that would decide it);
    the secondary metrics are exploratory (Benjamini-Hochberg over all their tests)."""
    metrics = [canonical(m) for m in (metrics or SWEEP_METRICS)]
    primary = canonical(primary)
    if primary not in metrics:
        metrics = [primary, *metrics]
    if deals is None:
        deals = deal_metrics(games, events, [*DEAL_METRICS, *metrics])
    est = estimate(deals, metrics)
    wide = est.pivot_table(index=["ruleset", "pairing"], columns="metric",
                           values=["mean", "lo", "hi"], sort=False)
    out = pd.DataFrame(index=wide.index)
    for m in metrics:
        out[m] = wide[("mean", m)]
        out[f"{m}_lo"] = wide[("lo", m)]
        out[f"{m}_hi"] = wide[("hi", m)]
    out["deals"] = est.groupby(["ruleset", "pairing"], sort=False)["deals"].max()
    if not ((deals["ruleset"] == "base").any() and deals["ruleset"].nunique() > 1):
        return out.reset_index()
    base = deals[deals["ruleset"] == "base"]
    variants = deals[deals["ruleset"] != "base"]
    scale, unit = (100.0, " points") if primary in PERCENT_METRICS else (1.0, "")

    def say(v: est_layer.Verdict, _m: Metric) -> str:
        return v.text(scale, unit, 1 if scale == 100 else 2)

    # the primary question: one Holm family per pairing, its variants adjusted together for
    # the tests of no change, of equivalence and of a change beyond the margin alike
    prim = pd.concat([paired_comparison(base[base["pairing"] == p],
                                        variants[variants["pairing"] == p], [primary],
                                        margin=margin, family="holm", text=say)
                      for p in dict.fromkeys(variants["pairing"])], ignore_index=True)
    # secondary metrics: exploratory, false discovery rate over all of them (no margin)
    others = [m for m in metrics if m != primary]
    sec = (paired_comparison(base, variants, others, margin=0.0, family="bh")
           if others else pd.DataFrame())
    diff = pd.concat([prim, sec], ignore_index=True)
    for m in metrics:
        d = diff[diff["metric"] == m].set_index(["ruleset", "pairing"])
        out[f"d_{m}"] = d["diff"]
        out[f"d_{m}_lo"] = d["lo"]
        out[f"d_{m}_hi"] = d["hi"]
        out[f"p_{m}"] = d["p_adjusted"]
    v = prim.set_index(["ruleset", "pairing"]).reindex(out.index)
    kinds = v["verdict_kind"].fillna("").tolist()
    texts = v["verdict"].fillna("").tolist()
    more = v["more_deals"].fillna(0).astype(int).tolist()
    out["verdict_kind"], out["verdict"], out["more_deals"] = kinds, texts, more
    return out.reset_index()


def paired_abs_gap(a: np.ndarray, b: np.ndarray, center: float = 0.0, level: float = 0.95,
                   resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                   ) -> tuple[float, float, float]:
    """|mean(b) - center| - |mean(a) - center| and its percentile interval at ``level`` from a
    paired bootstrap over deals (``a[i]`` and ``b[i]`` are the same deal, resampled together).
    Deterministic: a numpy Generator seeded with ``seed``."""
    pair = np.column_stack([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])

    def gap(sample: np.ndarray) -> np.ndarray:
        # contiguous columns first: the sums are those of a plain 2-d mean, to the last bit
        return (np.abs(np.ascontiguousarray(sample[..., 1]).mean(axis=-1) - center)
                - np.abs(np.ascontiguousarray(sample[..., 0]).mean(axis=-1) - center))

    if len(pair) < 2:
        point = float(gap(pair[None])[0]) if len(pair) else np.nan
        return point, np.nan, np.nan
    res = bootstrap_over_deals(pair, gap, resamples=resamples, seed=seed, level=level)
    return float(res.point), float(res.lo), float(res.hi)


def skill_flags(table: pd.DataFrame, deals: pd.DataFrame, skill: list[str], *,
                alpha: float = ALPHA, margin: float = est_layer.DEFAULT_MARGIN,
                ) -> pd.DataFrame:
    """Per variant: the first-seat edge of the weakest and the strongest bot (self-play), and
    whether the imbalance grows with skill.

    The question the report's skill table asks too, answered by the same function
    (:func:`patchsim.analysis.comparison.imbalance_changes`): the paired change of the
    first-seat edge from the weakest to the strongest bot over the deals both played
    (``change``, ``change_lo``, ``change_hi``), its verdict against +-``margin`` with the
    variants as one Holm family (``p_holm``, ``verdict_kind``, ``verdict``), and the
    ``trend`` it shows (grows / shrinks / changes side / unchanged / undecided); the
    imbalance grows with skill when the change lies beyond the margin away from a fair
    game. ``growth`` is |edge, strongest| - |edge, weakest| at the point estimates (a
    shrinking imbalance is negative, whichever seat it favours)."""
    weak, strong = f"{skill[0]} vs {skill[0]}", f"{skill[-1]} vs {skill[-1]}"
    keys, pairs, levels, means = [], [], [], []
    for ruleset, d in deals.groupby("ruleset", sort=False):
        w = d[d["pairing"] == weak].set_index("deal")["first_player_edge"]
        st = d[d["pairing"] == strong].set_index("deal")["first_player_edge"]
        both = pd.concat([w, st], axis=1, keys=["w", "s"]).dropna()
        mw, ms = float(both["w"].mean()), float(both["s"].mean())
        keys.append(ruleset)
        pairs.append((both["w"].to_numpy(), both["s"].to_numpy()))
        levels.append((mw, ms))
        means.append((mw, ms, len(both)))
    found = imbalance_changes(pairs, levels, margin=margin, center=0.0, alpha=alpha)
    rows = []
    for ruleset, (mw, ms, n), c in zip(keys, means, found, strict=True):
        rows.append({"ruleset": ruleset, "edge_weakest": mw, "edge_strongest": ms,
                     "growth": abs(ms) - abs(mw), "change": c.change.value,
                     "change_lo": c.change.lo, "change_hi": c.change.hi,
                     "p_holm": c.verdict.p_difference, "verdict_kind": c.verdict.kind,
                     "verdict": c.verdict.text(100.0, " points"), "trend": c.trend,
                     "deals": n, "imbalance_grows_with_skill": c.grows})
    return pd.DataFrame(rows)


def run_sweep(exp: Experiment, out: str | Path | None = None, *, jobs: int = 1,
              backend: str = "auto", scheduler: str | None = None,
              progress: ProgressFn | None = None, games: int | None = None,
              command: str = "") -> SweepResult:
    """Play every variant on common deals (resumable: the run folder is reused) and write
    the sweep report. ``games`` (per variant and pairing) replaces the file's."""
    if games is not None and (isinstance(games, bool) or not 1 <= games <= MAX_GAMES):
        # 0 must not mean "the file's number" (it did, as a false value)
        raise RunError.about("games", f"give from 1 to {MAX_GAMES:,} games per variant and "
                             f"pairing, got {games}", value=games)
    cfg = run_config(exp, games=games)
    run_dir = Path(out) if out else fresh_dir(exp.name)
    execute(cfg, run_dir, jobs=jobs, backend=backend, scheduler=scheduler, progress=progress,
            command=command)
    return write_sweep_report(exp, run_dir)


def write_sweep_report(exp: Experiment, run_dir: Path) -> SweepResult:
    # per-game event summaries, never the whole event log in memory
    folder = RunFolder(run_dir)
    games, events = folder.games, folder.events
    deals = deal_metrics(games, events, [*DEAL_METRICS, exp.metric])
    table = sweep_table(games, events, primary=exp.metric, margin=exp.margin, deals=deals)
    figures: dict[str, Figure] = {"metric": plot_metric(table, exp.metric)}
    if len(exp.grid_fields) == 2:
        figures["heatmap"] = plot_heatmap(table, exp, exp.metric)
    flags = None
    if exp.skill and len(exp.skill) >= 2:
        flags = skill_flags(table, deals, exp.skill, margin=exp.margin
                            if exp.metric in ("first_player_win", "first_player_edge")
                            else est_layer.DEFAULT_MARGIN)
        figures["skill"] = plot_skill(table, exp)
    atomic_write(run_dir / SWEEP_TABLE, table.to_csv(index=False))
    if flags is not None:
        atomic_write(run_dir / SWEEP_SKILL, flags.to_csv(index=False))
    manifest = load_manifest(run_dir)
    doc = sweep_document(exp, table, flags, {k: png_bytes(f, dpi=110) for k, f in
                                             figures.items()}, manifest,
                         shown=[m for m in SWEEP_METRICS if m in table.columns],
                         verdict=_verdict(exp, table, deals))
    page, md = write(doc, run_dir, "sweep")
    return SweepResult(run_dir, table, md, page, doc)


# --- plots ------------------------------------------------------------------------------------
def _subplots(figsize: tuple[float, float]):
    """A Figure and its axes, built without pyplot: no backend is chosen or changed and no
    global figure registry grows (plots never call show())."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def plot_metric(table: pd.DataFrame, metric: str) -> Figure:
    """The metric per variant with 95% intervals (one marker per pairing)."""
    labels = list(dict.fromkeys(table["ruleset"]))
    fig, ax = _subplots(figsize=(8, 0.45 * len(labels) + 1.6))
    pairings = list(dict.fromkeys(table["pairing"]))
    for k, pairing in enumerate(pairings):
        t = table[table["pairing"] == pairing].set_index("ruleset").reindex(labels)
        y = np.arange(len(labels)) + (k - (len(pairings) - 1) / 2) * 0.15
        err = np.vstack([t[metric] - t[f"{metric}_lo"], t[f"{metric}_hi"] - t[metric]])
        ax.errorbar(t[metric], y, xerr=err, fmt="o", capsize=3, label=pairing)
    if metric == "first_player_win":
        ax.axvline(0.5, color="grey", lw=1, ls="--")
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(f"{metric} (95% interval over deals)")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def plot_heatmap(table: pd.DataFrame, exp: Experiment, metric: str) -> Figure:
    """A two-parameter grid: the metric per cell, annotated with its 95% half-width."""
    fx, fy = exp.grid_fields
    pairing = table["pairing"].iloc[0]
    t = table[table["pairing"] == pairing].set_index("ruleset")
    xs = list(dict.fromkeys(c[fx] for c, _ in exp.grid_cells))
    ys = list(dict.fromkeys(c[fy] for c, _ in exp.grid_cells))
    z = np.full((len(ys), len(xs)), np.nan)
    half = np.full_like(z, np.nan)
    for coords, label in exp.grid_cells:
        if label in t.index:
            i, j = ys.index(coords[fy]), xs.index(coords[fx])
            z[i, j] = t.loc[label, metric]
            half[i, j] = (t.loc[label, f"{metric}_hi"] - t.loc[label, f"{metric}_lo"]) / 2
    fig, ax = _subplots(figsize=(1.3 * len(xs) + 2.5, 0.8 * len(ys) + 2))
    norm = None
    if metric == "first_player_win" and np.isfinite(z).any():
        # centred on a fair game, so that colour shows which seat a variant favours
        span = max(0.01, float(np.nanmax(np.abs(z - 0.5))))
        norm = matplotlib.colors.TwoSlopeNorm(0.5, 0.5 - span, 0.5 + span)
    im = ax.imshow(z, cmap="coolwarm", aspect="auto", norm=norm)
    for i in range(len(ys)):
        for j in range(len(xs)):
            if np.isfinite(z[i, j]):
                ax.text(j, i, f"{z[i, j]:.3f}\n±{half[i, j]:.3f}", ha="center", va="center",
                        fontsize=8)
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_yticks(range(len(ys)), [str(y) for y in ys])
    ax.set_xlabel(fx)
    ax.set_ylabel(fy)
    ax.set_title(f"{metric} ({pairing})")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    return fig


def plot_skill(table: pd.DataFrame, exp: Experiment) -> Figure:
    """First-seat win rate against bot strength (self-play), one line per variant."""
    fig, ax = _subplots(figsize=(8, 4.5))
    order = [f"{b} vs {b}" for b in exp.skill]
    for ruleset, t in table.groupby("ruleset", sort=False):
        t = t.set_index("pairing").reindex(order)
        x = np.arange(len(order))
        err = np.vstack([t["first_player_win"] - t["first_player_win_lo"],
                         t["first_player_win_hi"] - t["first_player_win"]])
        ax.errorbar(x, t["first_player_win"], yerr=err, marker="o", capsize=3, label=ruleset)
    ax.axhline(0.5, color="grey", lw=1, ls="--")
    ax.set_xticks(np.arange(len(order)), exp.skill, rotation=15, fontsize=8)
    ax.set_xlabel("bot (self-play), weakest to strongest")
    ax.set_ylabel("first-seat win rate")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _verdict(exp: Experiment, table: pd.DataFrame, deals: pd.DataFrame | None = None,
             ) -> list[str]:
    """The verdict lines (:func:`patchsim.experiments.sweep_document.verdict_lines`), with
    the variant closest to a fair game told apart from the others on the deals if given."""
    closest = ({p: closest_to_fair(exp.metric, t, deals)
                for p, t in table.groupby("pairing", sort=False)}
               if exp.metric in FAIR else {})
    return verdict_lines(exp, table, closest)


def _distance_range(lo: float, hi: float, center: float) -> tuple[float, float]:
    """The distances to ``center`` of the values in [lo, hi]."""
    far = max(abs(lo - center), abs(hi - center))
    return (0.0, far) if lo <= center <= hi else (min(abs(lo - center), abs(hi - center)), far)


def closest_to_fair(m: str, t: pd.DataFrame, deals: pd.DataFrame | None,
                    alpha: float = ALPHA) -> dict:
    """The variant closest to a fair game by point estimate (which, chosen from the same data,
    flatters it: the winner's curse), and the variants it cannot be told apart from:
    ``{"best": row, "center", "others", "tied": [rulesets], "how": method}``.

    With the deals: a paired bootstrap over deals of the difference in distance to a fair
    game, at level 1 - alpha / (k - 1) over the k - 1 other variants; else whether the
    intervals of the distance (from the 95% intervals of the metric) overlap."""
    center = FAIR[m]
    t = t.assign(dist=(t[m] - center).abs()).sort_values("dist", kind="stable")
    best = t.iloc[0]
    fair_text = "50%" if m == "first_player_win" else "0"
    others = t.iloc[1:]
    out = {"best": best, "center": center, "fair_text": fair_text, "others": len(others),
           "tied": [], "how": ""}
    if not len(others):
        return out
    tied, how = [], ""
    if deals is not None and {"ruleset", "pairing", "deal", m} <= set(deals.columns):
        level = 1 - alpha / len(others)
        d = deals[deals["pairing"] == best["pairing"]]
        ref = d[d["ruleset"] == best["ruleset"]].set_index("deal")[m]
        for r in others["ruleset"]:
            other = d[d["ruleset"] == r].set_index("deal")[m]
            both = pd.concat([ref, other], axis=1, keys=["a", "b"]).dropna()
            _gap, lo, _hi = paired_abs_gap(both["a"].to_numpy(), both["b"].to_numpy(), center,
                                           level)
            if not lo > 0:
                tied.append(r)
        how = (f"paired bootstrap over deals of the difference in distance to {fair_text}, "
               f"{100 * (1 - alpha):.0f}% family-wise")
    else:
        b_lo, b_hi = _distance_range(best[m + "_lo"], best[m + "_hi"], center)
        for r in others.to_dict("records"):
            o_lo, _o_hi = _distance_range(r[m + "_lo"], r[m + "_hi"], center)
            if not o_lo > b_hi:
                tied.append(r["ruleset"])
        how = f"overlapping 95% intervals of the distance to {fair_text}"
    out.update(tied=tied, how=how)
    return out
