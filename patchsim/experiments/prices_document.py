"""A price study's report as a Document (:mod:`patchsim.document`): the method, one row per
patch with its reading, the picture, then every cost measured. The numbers come from
:mod:`patchsim.experiments.prices`; this module only words and lays them out."""

from __future__ import annotations

import math

import pandas as pd

from patchsim.document.format import num, pct, pts
from patchsim.document.model import Col, Document, Section, Table

PATCHES_TITLE = "Patches"
FIGURE = "prices.png"


def method_text(*, bot: str, deals: int, seed: int, margin: float, negligible: float,
                price_margin: float) -> str:
    return (
        f"Restricted play: `{bot}` forbidden to buy a patch plays `{bot}` on "
        f"{deals} common seat-swapped deals (seed {seed}) per patch and cost. Value = "
        "0.5 - the restricted bot's win rate, in points of win rate; 95% intervals over deals "
        f"(the deal is the unit). Verdicts are read off those intervals, equivalence first: "
        f"margin +-{100 * margin:.0f} points; Holm over the patches at the printed "
        "cost, Benjamini-Hochberg over the other costs (exploratory). Fair price: the cost "
        "at which the value stops falling (the bot stops gaining from the patch), the kink of "
        "a broken line (falling, then flat) fitted to the value at every cost measured, with "
        "a 95% bootstrap interval over deals that refits the whole curve; a fall of less "
        f"than {100 * negligible:g} points is a flat curve, and a scan widens itself until "
        "the interval lies within its costs. Price reading: underpriced when the value at "
        "the printed cost lies beyond the margin above 0; overpriced when it lies beyond it "
        "below 0 (a trap) or, with no measurable or an undecided value at the printed cost, "
        f"when the fair price's interval lies more than {price_margin:g} button below it "
        "(the bot gains from the patch only when it is cheaper). The fair price of each "
        "half of the deals, read alone, shows how far two studies of half the size (two "
        "seeds) would disagree.")


def _value(r: dict) -> str:
    return f"{pts(r['value'])} [{pts(r['value_lo'])}, {pts(r['value_hi'])}]"


def summary_table(summary: pd.DataFrame) -> Table:
    """One row per patch: value at the printed cost, verdict, slope, fair price, reading."""
    rows = []
    for r in summary.to_dict("records"):
        slope = ("—" if not math.isfinite(r["slope_per_button"]) else
                 f"{pts(r['slope_per_button'])} [{pts(r['slope_lo'])}, {pts(r['slope_hi'])}]")
        a, b = r.get("fair_half_a", math.nan), r.get("fair_half_b", math.nan)
        # two decimals: the kink is read on a grid of 0.05 buttons, and one decimal would
        # show 6.45 and 6.449 as "6.5 and 6.4, 0.0 apart"
        halves = (f"{a:.2f} and {b:.2f} ({abs(a - b):.2f} apart)"
                  if math.isfinite(a) and math.isfinite(b) else "—")
        rows.append({**r, "value_text": _value(r), "slope_text": slope,
                     "halves_text": halves})
    return Table([Col("patch", "patch", align="left"), Col("cost", "cost"),
                  Col("value_text", "value (points) [95%]", align="left"),
                  Col("verdict", "verdict", align="left"),
                  Col("slope_text", "value per +1 button, while it falls", align="left"),
                  Col("fair_text", "fair price [95%]", align="left"),
                  Col("halves_text", "fair price of each half of the deals", align="left"),
                  Col("reading", "reading", align="left")], rows)


def costs_table(table: pd.DataFrame) -> Table:
    """Every patch and cost measured."""
    rows = [{**r, "value_text": _value(r)} for r in table.to_dict("records")]
    return Table([Col("patch", "patch", align="left"), Col("cost", "cost"),
                  Col("deals", "deals"), Col("restricted_win_rate", "restricted bot wins", pct),
                  Col("value_text", "value (points) [95%]", align="left"),
                  Col("verdict", "verdict", align="left"),
                  Col("unrestricted_buys_per_game", "unrestricted buys / game",
                      lambda x: num(x, 2))], rows)


def prices_document(*, ruleset: str, bot: str, deals: int, seed: int, margin: float,
                    negligible: float, price_margin: float, table: pd.DataFrame,
                    summary: pd.DataFrame, png: bytes | None = None) -> Document:
    """The study: Patches (method, one row per patch, the picture), Every cost."""
    doc = Document(f"Patch prices: {ruleset}, bot {bot}", nav=False)
    s = Section(PATCHES_TITLE).p(method_text(bot=bot, deals=deals, seed=seed, margin=margin,
                                             negligible=negligible,
                                             price_margin=price_margin))
    s.table(summary_table(summary))
    if png is not None:
        s.figure(FIGURE, png, "Value against cost per patch: per-cost 95% intervals, the "
                 "broken-line fit the fair price is read from (solid), the level it "
                 "flattens at (dashed), the printed cost (dotted), the fair price's interval "
                 "(shaded).")
    doc.sections.append(s)
    doc.sections.append(Section("Every cost").table(costs_table(table)).p(
        "The restricted bot's own search (mcts) never buys the patch, but its rollouts may; "
        "its opponent is never restricted."))
    return doc
