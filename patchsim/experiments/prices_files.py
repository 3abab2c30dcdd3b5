"""A prices study's files and picture (:mod:`patchsim.experiments.prices`): value against
cost per patch as a figure, and the study's folder (prices.csv, patches.csv, prices.md,
prices.html, prices.png, study.json), written whole or not at all.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from patchsim.atomic import current_umask
from patchsim.document.model import Document
from patchsim.document.render import to_markdown, write
from patchsim.experiments.price_fit import Crossing
from patchsim.experiments.prices import (
    DEFAULT_DELTAS,
    PricesError,
    PriceStudy,
    crossings,
    measure_prices,
    patch_summary,
    price_table,
    prices_document_of,
)
from patchsim.play.runfolder import read_manifest
from patchsim.play.runfolder.names import PRICES_FOLDER, PRICES_STUDY, PRICES_SUMMARY, PRICES_TABLE
from patchsim.reporting.plots import new_figure, png_bytes


def plot_prices(study: PriceStudy, table: pd.DataFrame | None = None,
                fits: dict[str, Crossing] | None = None):
    """Value against cost per patch: per-cost intervals, the broken-line fit the fair price is
    read from (solid, with its kink), the level it flattens at (dashed), the printed cost
    (dotted) and the fair price with its interval (shaded). A matplotlib Figure."""
    table = price_table(study) if table is None else table
    fits = crossings(study) if fits is None else fits
    n = len(study.patches)
    cols = min(4, n)
    nrows = math.ceil(n / cols)
    fig = new_figure(3.2 * cols, 2.6 * nrows)
    axes = fig.subplots(nrows, cols, squeeze=False, sharey=True)
    for k, pid in enumerate(study.patches):
        ax = axes[k // cols][k % cols]
        t = table[table["patch"] == pid]
        x = t["cost"].to_numpy(dtype=float)
        y = 100 * t["value"].to_numpy(dtype=float)
        err = np.nan_to_num(100 * np.vstack([t["value"] - t["value_lo"],
                                             t["value_hi"] - t["value"]]), nan=0.0)
        ax.axhline(0, color="#888", lw=0.8)
        ax.axvline(study.base_cost(pid), color="#888", lw=0.8, ls=":")
        ax.errorbar(x, y, yerr=err, fmt="o", color="#1f77b4", capsize=3)
        c = fits[pid]
        if c.fitted:
            # the curve the fair price is read from, its kink drawn where it lies
            pts_ = [(float(x_), f) for x_, f in zip(c.costs, c.fitted, strict=True)]
            if c.in_range and math.isfinite(c.floor):
                pts_ = sorted([*pts_, (c.fair, c.floor)])
            ax.plot([p for p, _ in pts_], [100 * f for _, f in pts_], color="#d62728",
                    lw=1.2)
            if math.isfinite(c.floor):
                ax.axhline(100 * c.floor, color="#d62728", lw=0.6, ls="--")
        if c.in_range and not c.flat:  # a flat fit bends nowhere: draw no fair price
            lo = max(c.fair_lo, x.min() - 1)
            hi = min(c.fair_hi, x.max() + 1)
            ax.axvspan(lo, hi, color="#d62728", alpha=0.12)
            ax.plot([c.fair], [100 * c.floor], marker="x", color="#d62728", ms=8)
        ax.set_title(f"{pid} (cost {study.base_cost(pid)})", fontsize=10)
        ax.set_xlabel("cost (buttons)")
        if k % cols == 0:
            ax.set_ylabel("value (points of win rate)")
    for k in range(n, nrows * cols):
        axes[k // cols][k % cols].axis("off")
    return fig


# --- writing --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PricesResult:
    folder: Path
    table: pd.DataFrame
    summary: pd.DataFrame
    markdown: str
    document: Document | None = None  # the report itself: the CLI shows sections of it


STUDY_FILE = PRICES_STUDY  # what a prices folder measured: ruleset, bot, games, seed


def study_header(study: PriceStudy) -> dict[str, Any]:
    """What a study measured, for whoever reads its folder later (e.g. a report)."""
    return {"ruleset": study.ruleset.name, "ruleset_hash": study.ruleset.content_hash(),
            "bot": study.bot, "games": study.games, "seed": study.seed,
            "deltas": list(study.deltas), "margin": study.margin,
            "patches": list(study.patches),
            # a widened scan measured more costs than were asked for
            "measured_deltas": {p: study.deltas_of(p) for p in study.patches}}


def prices_for_run(run_dir: str | os.PathLike[str], bot: str | None = None, *,
                   games: int = 400, deltas: Sequence[int] = DEFAULT_DELTAS, jobs: int = 1,
                   echo: Callable[[str], None] | None = None) -> PricesResult:
    """A prices study for a run, written to ``run_dir/prices`` where its report finds it:
    the run's first ruleset, ``bot`` (default the run's first bot), the run's seed. Raises
    PricesError when the folder already holds a study (it is kept, never overwritten)."""
    _, config = read_manifest(Path(run_dir))
    target = Path(run_dir) / PRICES_FOLDER
    if target.exists():
        raise PricesError(f"{target} already holds a prices study; the report shows it (remove "
                          "the folder to measure again)")
    study = measure_prices(config.rulesets[0], bot or config.bots[0], deltas=deltas,
                           games=games, seed=config.seed, jobs=jobs, echo=echo)
    return write_prices(study, target)


def write_prices(study: PriceStudy, out_dir: str | os.PathLike[str]) -> PricesResult:
    """Write prices.csv (every patch and cost), patches.csv (one row per patch), prices.md,
    prices.html, prices.png and study.json (what was measured) into ``out_dir``, a folder
    that must not exist yet: the files are written into a temporary folder beside it, which
    is renamed into place when complete, so the folder appears whole or not at all."""
    target = Path(out_dir)
    if target.exists():
        raise PricesError(f"{target} already exists; write the study to a new folder")
    table = price_table(study)
    fits = crossings(study)
    summary = patch_summary(study, table, fits)
    doc = prices_document_of(study, table, summary,
                             png_bytes(plot_prices(study, table, fits)))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        table.to_csv(tmp / PRICES_TABLE, index=False)
        summary.to_csv(tmp / PRICES_SUMMARY, index=False)  # its columns: layout.PriceRow
        write(doc, tmp, "prices")  # prices.html, prices.md and the picture, prices.png
        (tmp / STUDY_FILE).write_text(json.dumps(study_header(study), indent=1),
                                      encoding="utf-8")
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp leaves 0700
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return PricesResult(target, table, summary, to_markdown(doc), doc)


__all__ = ["PricesResult", "plot_prices", "prices_for_run", "study_header", "write_prices"]
