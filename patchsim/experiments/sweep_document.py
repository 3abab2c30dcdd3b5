"""A sweep's report as a Document (:mod:`patchsim.document`): the verdict lines, one row
per variant and pairing, the imbalance by skill, the pictures, what the variants are and
how to reproduce it. Everything computed comes in from :mod:`patchsim.experiments.sweep`;
this module only words and lays it out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est_layer
from patchsim.analysis.metrics import RATE_METRICS, metric
from patchsim.document.format import num, pct, pts_unit, sig
from patchsim.document.model import Bullets, Col, Document, Section, Table
from patchsim.experiments.experiment import Experiment

FIGURE_CAPTIONS = {
    "metric": "The primary metric per variant with 95% intervals over deals (one marker per "
              "pairing).",
    "heatmap": "The primary metric over the two-parameter grid, with each cell's 95% "
               "half-width.",
    "skill": "First-seat win rate against bot strength (self-play), one line per variant.",
}


def fmt_metric(m: str, x: Any) -> str:
    """A metric's value: a rate as a percentage, anything else to two decimals."""
    return pct(x) if m in RATE_METRICS else num(x, 2)


def _closest_line(m: str, c: dict) -> str:
    best = c["best"]
    show = pct if m == "first_player_win" else pts_unit
    line = (f"closest to {c['fair_text']} by point estimate is **{best['ruleset']}**: "
            f"{metric(m).description} {show(best[m])} "
            f"[{show(best[m + '_lo'])}, {show(best[m + '_hi'])}]"
            + (" (a fair game lies inside the interval)"
               if best[m + "_lo"] <= c["center"] <= best[m + "_hi"] else ""))
    if not c["others"]:
        return line + "."
    if c["tied"]:
        return line + f"; not distinguishable from: {', '.join(map(str, c['tied']))} " \
                      f"({c['how']})."
    return line + f"; distinguishable from every other variant ({c['how']})."


def verdict_lines(exp: Experiment, table: pd.DataFrame,
                  closest: dict[str, dict] | None = None) -> list[str]:
    """Plain-language lines: the primary metric per variant with its interval and, against
    the base on the same deals, its verdict (one Holm family over the variants)."""
    m = exp.metric
    margin = (f"+-{100 * exp.margin:g} points" if m in RATE_METRICS
              else f"+-{exp.margin:g}")
    lines = [f"Primary metric: {metric(m).description}; each variant against the base on the "
             "same deals, "
             f"with its 95% interval; equivalence margin {margin}. A verdict is read off the "
             "interval printed in it, equivalence first: 'equivalent' when it lies inside the "
             "margin ('negligible' when it also excludes 0), 'differs' only when it lies "
             "beyond the margin; the variants are one family, Holm-adjusted for each of these "
             "tests, so with several variants the interval a verdict prints is the family's "
             "adjusted one (its level named beside it), wider than the variant's own 95% one. "
             "Other metrics are exploratory (Benjamini-Hochberg)."]
    for pairing, t in table.groupby("pairing", sort=False):
        lines.append(f"With {pairing} ({int(t['deals'].max())} deals per variant, "
                     f"seat-swapped):")
        if closest and pairing in closest:
            lines.append("the variant " + _closest_line(m, closest[pairing]))
        for r in t.to_dict("records"):
            text = (f"{r['ruleset']}: {metric(m).description} {fmt_metric(m, r[m])} "
                    f"[{fmt_metric(m, r[m + '_lo'])}, {fmt_metric(m, r[m + '_hi'])}]")
            if r["ruleset"] != "base" and isinstance(r.get("verdict"), str) and r["verdict"]:
                text += f"; against the base: {r['verdict']}"
            lines.append(text)
    if "verdict_kind" in table and (table["verdict_kind"] == "undecided").any():
        lines.append(est_layer.SEQUENTIAL_ADVICE)
    return lines


def _n_variants(k: int) -> str:
    return f"{k} variant{'s' * (k != 1)}"


def skill_lines(exp: Experiment, flags: pd.DataFrame) -> list[str]:
    """A verdict line per variant whose first-seat imbalance is shown to grow with skill."""
    out = []
    for f in flags.itertuples():
        if f.imbalance_grows_with_skill:
            out.append(f"**{f.ruleset}**: the first-seat imbalance grows with skill "
                       f"({pct(f.edge_weakest + 0.5)} with {exp.skill[0]} -> "
                       f"{pct(f.edge_strongest + 0.5)} with {exp.skill[-1]}; the change "
                       f"over the same deals {f.verdict}).")
    if len(flags) and not flags["imbalance_grows_with_skill"].any():
        out.append(f"the first-seat imbalance is not shown to grow from {exp.skill[0]} to "
                   f"{exp.skill[-1]} in any variant (see Imbalance and skill).")
    return out


def _variant_cell(exp: Experiment, m: str, d: dict) -> str:
    cell = f"{fmt_metric(m, d[m])} [{fmt_metric(m, d[m + '_lo'])}, {fmt_metric(m, d[m + '_hi'])}]"
    delta = d.get(f"d_{m}", np.nan)
    if d["ruleset"] != "base" and np.isfinite(delta):
        shown_delta = pts_unit(delta) if m in RATE_METRICS else num(delta, 2, True)
        label = "p" if m == exp.metric else "q"
        cell += f"\nΔ {shown_delta} ({label}={sig(d['p_' + m], 3)})"
    return cell


def variants_table(exp: Experiment, table: pd.DataFrame, shown: list[str]) -> Table:
    """One row per variant and pairing: each metric's estimate and interval, and its paired
    difference to the base."""
    rows = []
    for r in table.to_dict("records"):
        row = {"variant": r["ruleset"], "pairing": r["pairing"], "deals": str(r["deals"])}
        row.update({m: _variant_cell(exp, m, r) for m in shown})
        rows.append(row)
    cols = [Col("variant", "variant", align="left"), Col("pairing", "pairing", align="left"),
            Col("deals", "deals", align="left")]
    cols += [Col(m, m, align="left") for m in shown]
    return Table(cols, rows)


def skill_table(flags: pd.DataFrame) -> Table:
    rows = [{"variant": f.ruleset, "weak": pts_unit(f.edge_weakest),
             "strong": pts_unit(f.edge_strongest),
             "change": str(f.verdict), "trend": str(f.trend),
             "grows": "yes" if f.imbalance_grows_with_skill else "no"}
            for f in flags.itertuples()]
    return Table([Col("variant", "variant", align="left"), Col("weak", "edge weakest"),
                  Col("strong", "edge strongest"), Col("change", "change", align="left"),
                  Col("trend", "trend", align="left"), Col("grows", "grows", align="left")],
                 rows)


def sweep_document(exp: Experiment, table: pd.DataFrame, flags: pd.DataFrame | None,
                   pngs: dict[str, bytes], manifest: dict[str, Any], *, shown: list[str],
                   verdict: list[str]) -> Document:
    """The sweep report: Verdict, Variants, (Imbalance and skill), Variants defined,
    Reproduce. ``verdict``: the lines of :func:`verdict_lines`; ``pngs``: pictures by name
    (metric, heatmap, skill), written as figures/sweep-<name>.png."""
    verdict = list(verdict)
    if flags is not None:
        verdict += skill_lines(exp, flags)
    doc = Document(f"Sweep: {exp.name}", subtitle=exp.description, nav=False)
    doc.sections.append(Section("Verdict").bullets(verdict))
    variants = Section("Variants").p(
        "Each cell: estimate [95% interval over deals]; Δ is the difference to the base on the "
        f"same deals (paired). For the primary metric ({exp.metric}) p is Holm-adjusted over "
        "the variants; the other metrics are exploratory: q is the Benjamini-Hochberg adjusted "
        "p-value over all of them.")
    variants.table(variants_table(exp, table, shown))
    variants.p("Metrics: " + "; ".join(f"{m}: {metric(m).description}" for m in shown))
    doc.sections.append(variants)
    if flags is not None and len(flags):
        doc.sections.append(Section("Imbalance and skill").p(
            f"Change: the first-seat edge with {exp.skill[-1]} minus with {exp.skill[0]} "
            "(self-play, same deals), a paired difference over deals with its verdict "
            f"(Holm over {_n_variants(len(flags))}), as the run report's skill table reads it; "
            "the imbalance grows when the change lies beyond the margin, away from a fair "
            "game.").table(skill_table(flags)))
    for k, data in pngs.items():
        variants.figure(f"figures/sweep-{k}.png", data, FIGURE_CAPTIONS.get(k, k), alt=k)
    doc.sections.append(Section("Variants defined", [Bullets([
        f"{v.label}: {v.overrides or 'the base ruleset'} (hash {v.ruleset.content_hash()})"
        for v in exp.variants])]))
    doc.sections.append(Section("Reproduce").bullets([
        f"experiment: `{exp.path}`, seed {exp.seed}, {table['deals'].max()} deals per variant "
        "and pairing, seat-swapped",
        f"command: `{manifest.get('command', '')}`",
        f"versions: {manifest.get('versions', {})}"]))
    return doc
