"""A change of rules at every level of a skill trace: several rulesets' traces on the same
deals, the change of the trace's metric from a base ruleset at each level with its verdict
(one Holm family over the table), and whether the change holds at every level."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.defaults import ALPHA
from patchsim.analysis.skill import ALIASES, RATE_LIKE


def change_by_level(deals: pd.DataFrame, base: str, metric: str = "first_player_win",
                    margin: float = est.DEFAULT_MARGIN, alpha: float = ALPHA) -> pd.DataFrame:
    """Does a change of rules hold at every skill level? ``deals``: per-deal values of
    several rulesets' traces (:func:`level_deals` with a ``ruleset`` column; the rulesets
    played the same deals). One row per level and ruleset other than ``base``: the change of
    ``metric`` from ``base`` on their common deals, its 95% interval and verdict against
    ``margin`` (one Holm family over the table)."""
    metric = ALIASES.get(metric, metric)
    bounds = est.RATE_DIFF_BOUNDS if metric in RATE_LIKE else None
    rows, changes = [], []
    ref = deals[deals["ruleset"] == base]
    for (ruleset, level), d in deals[deals["ruleset"] != base].groupby(
            ["ruleset", "level"], sort=False):
        r = ref[ref["level"] == level].set_index("deal")[metric]
        v = d.set_index("deal")[metric]
        common = r.index.intersection(v.index)
        c = est.paired_difference(r.loc[common].to_numpy(dtype=float),
                                  v.loc[common].to_numpy(dtype=float), est.VERDICT_LEVEL,
                                  bounds)
        rows.append({"ruleset": str(ruleset), "base": base, "level": int(level),
                     "bot": str(d["bot"].iloc[0]), "deals": c.deals, "diff": c.value,
                     "lo": c.lo, "hi": c.hi})
        changes.append(c)
    out = pd.DataFrame(rows, columns=["ruleset", "base", "level", "bot", "deals", "diff", "lo",
                                      "hi"])
    scale, unit = (100.0, " points") if bounds else (1.0, "")
    found = est.verdicts(changes, margin, 0.0, alpha, family="holm") if changes else []
    out["verdict_kind"] = [v.kind for v in found]
    out["verdict"] = [v.text(scale, unit) for v in found]
    return out


def holds_at_every_level(changes: pd.DataFrame,
                         label: Callable[[str], str] | None = None) -> dict[str, str]:
    """Per ruleset of :func:`change_by_level` (rows with ``ruleset``, ``level``,
    ``verdict_kind`` and ``diff``; ``bot`` names a level, through ``label`` when given):
    whether its change from the base holds at every level ("holds at every level: ..."),
    changes with the level, or is not decided at some level yet (naming those levels)."""
    out = {}
    for ruleset, t in changes.groupby("ruleset", sort=False):
        kinds = set(t["verdict_kind"])
        signs = set(np.sign(t.loc[t["verdict_kind"] == "differs", "diff"]))
        if kinds == {"equivalent"}:
            out[str(ruleset)] = "holds at every level: no change beyond the margin"
        elif kinds == {"differs"} and len(signs) == 1:
            side = "up" if signs == {1.0} else "down"
            out[str(ruleset)] = f"holds at every level: the metric moves {side} beyond the margin"
        elif "undecided" in kinds or "undefined" in kinds:
            open_rows = t[t["verdict_kind"].isin(["undecided", "undefined"])]
            if "bot" in t.columns:
                names = [label(str(b)) if label else str(b) for b in open_rows["bot"]]
            else:
                names = [f"level {x}" for x in open_rows["level"]]
            decided = t[~t["verdict_kind"].isin(["undecided", "undefined"])]
            text = f"not decided at every level (open at {', '.join(names)})"
            if len(decided):
                shown = [f"{label(str(b)) if label else b}: {k}" for b, k in zip(
                    decided["bot"] if "bot" in t.columns else decided["level"],
                    decided["verdict_kind"], strict=True)]
                text += f"; decided: {', '.join(shown)}"
            out[str(ruleset)] = text
        else:
            out[str(ruleset)] = "changes with the level: the verdict differs between levels"
    return out
