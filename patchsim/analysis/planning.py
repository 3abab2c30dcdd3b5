"""How many deals a question needs, from the per-deal spread of a pilot run, for the designs
the runner plays (seat-swapped deals, and common deals across rulesets), sized for the
verdicts the reports print: "differs, beyond +-m" and "equivalent within +-m" are read off
the 95% interval, so the power is that of the interval landing wholly beyond the margin, or
wholly inside it, and the distance from the margin is what is planned for."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import special

from patchsim.analysis import estimators as est
from patchsim.analysis.defaults import ALPHA, DEFAULT_MARGIN
from patchsim.analysis.games import NAN, split_rulesets
from patchsim.document.format import num, pct

MAX_PLAN_DEALS = 100_000_000  # a plan larger than this is reported as "not practical" (0)


def _z(level: float) -> float:
    return est.z_quantile(level)


def power_beyond(sd: float, deals: int, difference: float, margin: float,
                 alpha: float = ALPHA) -> float:
    """Chance that the ``1 - alpha`` interval of a mean over ``deals`` deals (per-deal spread
    ``sd``) lies wholly beyond ``+-margin`` when the true change is ``difference``: the
    chance of the verdict "differs, beyond +-m" (normal approximation)."""
    if not (deals > 0 and np.isfinite(sd) and sd > 0):
        return NAN
    se, z = sd / math.sqrt(deals), _z(1 - alpha / 2)
    d = abs(difference)
    # either side counts, as the verdict reads it; the far side is all but impossible
    return float(special.ndtr((d - margin) / se - z) + special.ndtr((-d - margin) / se - z))


def power_within(sd: float, deals: int, margin: float, true_change: float = 0.0,
                 alpha: float = ALPHA) -> float:
    """Chance that the ``1 - alpha`` interval lies wholly inside ``+-margin`` when the true
    change is ``true_change``: the chance of the verdict "equivalent within +-m"."""
    if not (deals > 0 and np.isfinite(sd) and sd > 0):
        return NAN
    se, z = sd / math.sqrt(deals), _z(1 - alpha / 2)
    c = true_change
    return max(0.0, float(special.ndtr((margin - c) / se - z)
                          - special.ndtr((-margin - c) / se + z)))


def _smallest(power_at, power: float, guess: float) -> int:
    """The smallest deal count whose ``power_at(n)`` reaches ``power`` (power grows with n),
    found from ``guess`` by doubling then bisection; 0 when beyond MAX_PLAN_DEALS."""
    lo, hi = 1, max(2, math.ceil(guess))
    while power_at(hi) < power:
        lo, hi = hi, 2 * hi
        if hi > MAX_PLAN_DEALS:
            return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(mid) >= power else (mid, hi)
    return max(2, hi)


def deals_beyond_margin(sd: float, difference: float, margin: float, alpha: float = ALPHA,
                        power: float = 0.8) -> int:
    """Deals for the verdict "differs, beyond +-``margin``" with ``power`` when the true change
    is ``difference``: the 95% interval must clear the margin, so the distance planned for
    is ``|difference| - margin``, not ``|difference|``. 0 when the difference is not beyond
    the margin (no number of deals shows it)."""
    gap = abs(difference) - margin
    if not (np.isfinite(sd) and sd > 0 and gap > 0):
        return 0
    guess = ((_z(1 - alpha / 2) + _z(power)) * sd / gap) ** 2
    return _smallest(lambda n: power_beyond(sd, n, difference, margin, alpha), power, guess)


def deals_within_margin(sd: float, margin: float, true_change: float = 0.0,
                        alpha: float = ALPHA, power: float = 0.8) -> int:
    """Deals for the verdict "equivalent within +-``margin``" with ``power`` when the true
    change is ``true_change``: the 95% interval must lie inside the margin on both sides
    (at a change of 0 this is :func:`estimators.deals_for_equivalence` at ``alpha / 2``, the
    figure an undecided verdict's "more deals" starts from). 0 when the change is not inside
    the margin."""
    gap = margin - abs(true_change)
    if not (np.isfinite(sd) and sd > 0 and gap > 0):
        return 0
    guess = ((_z(1 - alpha / 2) + _z(power)) * sd / gap) ** 2
    return _smallest(lambda n: power_within(sd, n, margin, true_change, alpha), power, guess)


def _first_seat_sds(gp: pd.DataFrame, x: pd.Series) -> tuple[float, float]:
    """Per-deal spread of the first seat's win rate as played (the two games of a deal,
    seats swapped) and without pairing (each game on a deal of its own: the two games'
    variances without their covariance)."""
    sd = float(x.std(ddof=1)) if len(x) > 1 else NAN
    win = (gp["winner"] == 0).astype(float)
    if "order" in gp:
        v = [float(win[gp["order"] == o].var(ddof=1)) for o in (0, 1)]
    else:
        v = [float(win.var(ddof=1))] * 2
    v = [a for a in v if np.isfinite(a)]
    unpaired = math.sqrt(sum(v) / 4) if len(v) == 2 else NAN
    return sd, unpaired


def plan(games: pd.DataFrame, target_halfwidth: float = 0.01, margin: float = DEFAULT_MARGIN,
         difference: float = 0.04, alpha: float = ALPHA, power: float = 0.8,
         equivalence: float = 0.0) -> pd.DataFrame:
    """How many deals a question needs, from the per-deal spread seen in a pilot run, for the
    designs the runner plays: seat-swapped deals (the first-seat win rate of each ruleset and
    pairing, against 50%) and, with two or more rulesets, common deals (the change against
    the first ruleset, paired by deal). For each:

    - ``deals_precision``: a 95% interval of +-``target_halfwidth``;
    - ``deals_difference``: the verdict "differs, beyond +-``margin``" with ``power`` when
      the true change is ``difference`` (planned on its distance from the margin; 0 when
      it is not beyond it);
    - ``deals_equivalence``: the verdict "equivalent within +-``margin``" with ``power`` when
      the true change is ``equivalence`` (0 by default: fair, or unchanged).

    One question asked alone: a family adjusted by Holm needs more. The same three without
    pairing (``*_unpaired``, with ``sd_unpaired``) say what the pairing saves (or costs):
    the two games of a deal, or the two rulesets, on deals of their own. Where the pilot
    shows no spread the worst case (a fair coin per game, games of a deal fully correlated)
    is used."""
    rows = []
    parts = split_rulesets(games)
    per_deal: dict[tuple[str, str], pd.Series] = {}

    def sizes(sd: float, suffix: str = "") -> dict[str, int]:
        return {f"deals_precision{suffix}": est.deals_for_precision(sd, target_halfwidth,
                                                                     1 - alpha),
                f"deals_difference{suffix}": deals_beyond_margin(sd, difference, margin, alpha,
                                                                 power),
                f"deals_equivalence{suffix}": deals_within_margin(sd, margin, equivalence,
                                                                  alpha, power)}

    for label, g, _ in parts:
        for pairing, gp in g.groupby("pairing", sort=False, observed=True):
            win = (gp["winner"] == 0).astype(float)
            x = win.groupby(gp["deal"].to_numpy()).mean()
            per_deal[(label, pairing)] = x
            sd, sd_u = _first_seat_sds(gp, x)
            note = ""
            if not (np.isfinite(sd) and sd > 0):
                sd, note = 0.5, "pilot too small: worst case assumed"
            if not (np.isfinite(sd_u) and sd_u > 0):
                sd_u = math.sqrt(0.5)  # a fair coin per game, two games a deal
            rows.append({"ruleset": label, "pairing": pairing,
                         "question": "first-seat win rate", "pilot_deals": len(x),
                         "estimate": float(x.mean()) if len(x) else NAN, "sd_deal": sd,
                         "sd_unpaired": sd_u, **sizes(sd), **sizes(sd_u, "_unpaired"),
                         "games_per_deal": 2, "note": note})
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
            # without pairing: each ruleset on deals of its own, so the variances add
            sd_u = (math.sqrt(float(xa.var(ddof=1)) + float(xb.var(ddof=1)))
                    if len(xa) > 1 and len(xb) > 1 else NAN)
            if not (np.isfinite(sd_u) and sd_u > 0):
                sd_u = math.sqrt(0.5)  # two fair-coin rates on deals of their own
            rows.append({"ruleset": f"{label} - {base}", "pairing": pairing,
                         "question": "change in first-seat win rate",
                         "pilot_deals": len(both),
                         "estimate": float(d.mean()) if len(d) else NAN, "sd_deal": sd,
                         "sd_unpaired": sd_u, **sizes(sd), **sizes(sd_u, "_unpaired"),
                         "games_per_deal": 4, "note": note})
    out = pd.DataFrame(rows)
    if len(out):
        out.attrs.update(halfwidth=target_halfwidth, margin=margin, difference=difference,
                         equivalence=equivalence, alpha=alpha, power=power)
    return out


def _deals(n: int, games_per_deal: int) -> str:
    return f"{n:,} deals ({games_per_deal * n:,} games)" if n > 0 else "not practical"


def _points(x: float) -> str:
    return f"{x:g} point" + ("" if x == 1 else "s")


def _what(points: float, change: bool) -> str:
    return (f"a true change of {_points(points)}" if change
            else f"a first seat {_points(points)} from 50%")


def format_plan(table: pd.DataFrame) -> str:
    """The plan as text for the terminal."""
    a = table.attrs
    m, diff = 100 * a.get("margin", DEFAULT_MARGIN), 100 * a.get("difference", 0.04)
    eq = 100 * a.get("equivalence", 0.0)
    lines = [f"deals needed for each verdict with {100 * a.get('power', 0.8):.0f}% power "
             "(a deal is one seat-swapped pair of games per ruleset; verdicts are read off the "
             "95% interval; one question asked alone: a family adjusted by Holm needs more):"]
    if abs(diff) <= m:
        lines.append(f"  a true {diff:g}-point difference is not beyond +-{m:g} points: no "
                     "number of deals shows \"differs, beyond\" the margin; give a "
                     "--difference above --margin")
    for r in table.itertuples():
        change = r.question.startswith("change")
        est_text = (f"{num(100 * r.estimate, 1, True)} points" if change
                    else pct(r.estimate))
        g = r.games_per_deal
        lines.append(
            f"{r.ruleset} / {r.pairing}: {r.question} (pilot {r.pilot_deals} deals, "
            f"{est_text}, per-deal sd {r.sd_deal:.3f}; {r.sd_unpaired:.3f} without pairing)"
            + (f"  [{r.note}]" if r.note else ""))
        lines.append(f"  +-{_points(100 * a.get('halfwidth', 0.01))} precision: "
                     f"{_deals(r.deals_precision, g)}")
        if abs(diff) > m:
            lines.append(
                f"  \"differs, beyond +-{m:g} points\" for {_what(diff, change)}: "
                f"{_deals(r.deals_difference, g)} (planned on its {diff - m:g}-point "
                "distance from the margin)")
        lines.append(
            f"  \"equivalent within +-{m:g} points\" for {_what(eq, change)}: "
            f"{_deals(r.deals_equivalence, g)}")
        pairing_of = "the two rulesets" if change else "the two games of a deal"
        lines.append(
            f"  without pairing ({pairing_of} on deals of their own), for comparison: "
            f"{_deals(r.deals_precision_unpaired, g)}, "
            + (f"{_deals(r.deals_difference_unpaired, g)}, " if abs(diff) > m else "")
            + f"{_deals(r.deals_equivalence_unpaired, g)}")
    return "\n".join(lines)
