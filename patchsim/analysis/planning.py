"""How many deals a question needs, from the per-deal spread of a pilot run, for the designs
the runner plays (seat-swapped deals, and common deals across rulesets)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.games import NAN, split_rulesets
from patchsim.document.format import num, pct


def plan(games: pd.DataFrame, target_halfwidth: float = 0.01, margin: float = 0.02,
         difference: float = 0.02, alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """How many deals a question needs, from the per-deal spread seen in a pilot run, for the
    designs the runner plays: seat-swapped deals (the first-seat win rate of each ruleset and
    pairing) and, with two or more rulesets, common deals (the change against the first
    ruleset, paired by deal). For each: deals for a 95% interval of +-``target_halfwidth``,
    deals to detect a true ``difference`` (from 50%, or between rulesets) with ``power``, and
    deals to show equivalence within +-``margin`` with ``power`` if the truth is fair or
    unchanged (the 95% interval inside the margin, as the verdicts decide it; an undecided
    verdict's "more deals" is this figure, less the deals played, when its change is within
    a standard error of 0). Where the pilot shows no spread the worst case (a fair coin per
    game, games of a deal fully correlated) is used."""
    rows = []
    parts = split_rulesets(games)
    per_deal: dict[tuple[str, str], pd.Series] = {}

    def sizes(sd: float) -> dict[str, int]:
        return {"deals_precision": est.deals_for_precision(sd, target_halfwidth, 1 - alpha),
                "deals_difference": est.deals_for_difference(sd, difference, alpha, power),
                # alpha / 2 per one-sided test: the verdict shows equivalence when the 95%
                # interval lies inside the margin, so this is the deals the verdict needs
                "deals_equivalence": est.deals_for_equivalence(sd, margin, 0.0, alpha / 2,
                                                               power)}

    for label, g, _ in parts:
        for pairing, gp in g.groupby("pairing", sort=False, observed=True):
            win = (gp["winner"] == 0).astype(float)
            x = win.groupby(gp["deal"].to_numpy()).mean()
            per_deal[(label, pairing)] = x
            sd, note = (float(x.std(ddof=1)) if len(x) > 1 else NAN), ""
            if not (np.isfinite(sd) and sd > 0):
                sd, note = 0.5, "pilot too small: worst case assumed"
            rows.append({"ruleset": label, "pairing": pairing,
                         "question": "first-seat win rate", "pilot_deals": len(x),
                         "estimate": float(x.mean()) if len(x) else NAN, "sd_deal": sd,
                         **sizes(sd), "games_per_deal": 2, "note": note})
    base = parts[0][0] if parts else ""
    for label, _g, _ in parts[1:]:
        for (lab, pairing), xb in per_deal.items():
            if lab != label or (base, pairing) not in per_deal:
                continue
            xa = per_deal[(base, pairing)]
            both = xa.index.intersection(xb.index)
            d = (xb.loc[both] - xa.loc[both]).to_numpy()
            sd, note = (float(d.std(ddof=1)) if len(d) > 1 else NAN), ""
            if not (np.isfinite(sd) and sd > 0):
                sd, note = 1.0, "pilot too small: worst case assumed"
            rows.append({"ruleset": f"{label} - {base}", "pairing": pairing,
                         "question": "change in first-seat win rate",
                         "pilot_deals": len(both),
                         "estimate": float(d.mean()) if len(d) else NAN, "sd_deal": sd,
                         **sizes(sd), "games_per_deal": 4, "note": note})
    out = pd.DataFrame(rows)
    if len(out):
        out.attrs.update(halfwidth=target_halfwidth, margin=margin, difference=difference,
                         alpha=alpha, power=power)
    return out


def format_plan(table: pd.DataFrame) -> str:
    """The plan as text for the terminal."""
    a = table.attrs
    lines = ["deals needed (a deal is one seat-swapped pair of games per ruleset; "
             f"alpha {a.get('alpha', 0.05):g}, power {100 * a.get('power', 0.8):.0f}%):"]
    for r in table.itertuples():
        est_text = (f"{num(100 * r.estimate, 1, True)} points"
                    if r.question.startswith("change") else pct(r.estimate))
        g = r.games_per_deal
        lines.append(
            f"{r.ruleset} / {r.pairing}: {r.question} (pilot {r.pilot_deals} deals, "
            f"{est_text}, per-deal sd {r.sd_deal:.3f})"
            + (f"  [{r.note}]" if r.note else ""))
        lines.append(
            f"  +-{100 * a.get('halfwidth', 0.01):g} points precision: {r.deals_precision:,} "
            f"deals ({g * r.deals_precision:,} games); detect a "
            f"{100 * a.get('difference', 0.02):g}-point difference: {r.deals_difference:,} "
            f"deals ({g * r.deals_difference:,} games); show equivalence within "
            f"+-{100 * a.get('margin', 0.02):g} points: {r.deals_equivalence:,} deals "
            f"({g * r.deals_equivalence:,} games)")
    return "\n".join(lines)
