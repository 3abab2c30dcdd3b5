"""A tuning study's report as a Document (:mod:`patchsim.document`): the targets and the
verdict, the finalists on fresh deals, every search round. The numbers come from
:func:`patchsim.experiments.tune.run_tune`; this module only words and lays them out, in the
units of every report: rates as percentages, their tolerances in points (the CSV tables
beside the report keep the proportions, for programs)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from patchsim.document.format import sig
from patchsim.document.model import Col, Document, Section, Table
from patchsim.experiments.experiment import Experiment
from patchsim.experiments.experiment_checks import metric_in_percent, metric_interval, metric_unit

SEARCH_TITLE = ("Search rounds (estimates with intervals Bonferroni-corrected over each "
                "round's candidates; a candidate is dropped when its loss interval lies above "
                "the best candidate's)")
FINALISTS_TITLE = "Finalists (fresh deals, 95% intervals over deals)"


def _cell(v: Any) -> str:
    """A value of the rounds table: a float to 4 significant digits, anything else as is."""
    return sig(v, 4) if isinstance(v, float) else str(v)


def _target(m: str, target: float, tolerance: float) -> str:
    """'first_player_win = 50% ± 2 points', 'mean_margin = 0 ± 1.5 points'."""
    if metric_in_percent(m):
        return f"{m} = {100 * target:g}% ± {100 * tolerance:g} points"
    unit = metric_unit(m)
    return f"{m} = {target:g}{unit} ± {tolerance:g}{unit}"


def verdict_section(final: pd.DataFrame, targets: dict[str, dict[str, float]],
                    tolerances: dict[str, float]) -> Section:
    s = Section("Verdict").p("Targets: " + "; ".join(
        _target(m, t["target"], tolerances[m]) for m, t in targets.items()))
    if len(final):
        met = final[final["all_within"]]
        games = int(final["games"].max())
        plan = (f"{games} fresh games per pairing (a power calculation asked for "
                f"{2 * final.attrs.get('planned_deals', 0)}; the budget allows "
                f"{final.attrs.get('cap', games)})")
        if len(met) == 0:
            s.p(f"No finalist is shown to meet every target on {plan}: more games, "
                "or wider tolerances, are needed to be sure.")
        else:
            names = ", ".join(f"**{c}**" for c in met["candidate"])
            s.p(f"Shown to meet every target within its tolerance (each target's "
                f"95% interval inside it, on {plan}): {names}.")
            if len(met) > 1:
                s.p("These variants are not told apart: each is within tolerance, "
                    "and which of them is closest is within noise.")
    return s


def finalists_table(final: pd.DataFrame, targets: dict[str, dict[str, float]]) -> Table:
    rows = []
    for r in final.to_dict("records"):
        row = {"candidate": r["candidate"], "games": str(r["games"]),
               "all": "yes" if r["all_within"] else "no"}
        for m in targets:
            row[m] = (f"{metric_interval(m, r[m], r[m + '_lo'], r[m + '_hi'])} "
                      f"(equivalence p {sig(r[m + '_p_within'], 3)})"
                      f"{' ✓' if r[m + '_within'] else ''}")
        rows.append(row)
    return Table([Col("candidate", "candidate", align="left"), Col("games", "games"),
                  *[Col(m, m, align="left") for m in targets],
                  Col("all", "meets every target", align="left")], rows)


def rounds_table(rounds: pd.DataFrame, targets: dict[str, dict[str, float]]) -> Table:
    shown = rounds.copy()
    for m in targets:
        shown[m] = [metric_interval(m, v, lo, hi) for v, lo, hi in
                    zip(shown[m], shown[f"{m}_lo"], shown[f"{m}_hi"], strict=True)]
    shown["loss"] = [f"{sig(v, 3)} [{sig(lo, 3)}, {sig(hi, 3)}]" for v, lo, hi in
                     zip(shown["loss"], shown["loss_lo"], shown["loss_hi"], strict=True)]
    cols = ["round", "candidate", "games", *targets, "loss", "dropped"]
    return Table([Col(c, c, _cell, align="left") for c in cols], shown[cols])


def tune_document(exp: Experiment, rounds: pd.DataFrame, final: pd.DataFrame,
                  targets: dict[str, dict[str, float]],
                  tolerances: dict[str, float]) -> Document:
    """The tuning report: Verdict (with the targets), Finalists, Search rounds."""
    doc = Document(f"Tuning: {exp.name}", subtitle=exp.description, nav=False)
    doc.sections.append(verdict_section(final, targets, tolerances))
    doc.sections.append(Section(FINALISTS_TITLE).table(finalists_table(final, targets)))
    search = Section(SEARCH_TITLE, anchor="search")
    if len(rounds):
        search.table(rounds_table(rounds, targets))
    doc.sections.append(search)
    return doc
