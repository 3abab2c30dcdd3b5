"""Number formatting shared by the report and the command line (kept together: they move
into the document layer's formatters as one piece).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis.selfplay import DISTINCT_NOTE


def finite(x: Any) -> bool:
    """Is x a finite number (False for None, NaN, +-inf and non-numbers)?"""
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def pct(p: Any, digits: int = 1) -> str:
    """A proportion as a percentage ("—" when missing)."""
    return f"{100 * float(p):.{digits}f}%" if finite(p) else "—"


def num(x: Any, digits: int = 1, sign: bool = False) -> str:
    """A number with fixed decimals ("—" when missing, "+∞"/"−∞" when infinite)."""
    if finite(x):
        return f"{float(x):+.{digits}f}" if sign else f"{float(x):.{digits}f}"
    if isinstance(x, float | np.floating) and np.isinf(x):
        return "+∞" if x > 0 else "−∞"
    return "—"


def format_pairings(table: pd.DataFrame) -> str:
    """``pairing_table`` as text in the style of an engine-testing tool."""
    out = []
    for (ruleset, pairing), g in table.groupby(["ruleset", "pairing"], sort=False,
                                                observed=True):
        head = f"{ruleset}: {pairing}"
        if not bool(g["distinct_games"].iloc[0]):
            head += f" ({DISTINCT_NOTE})"
        out.append(head)
        for r in g.itertuples():
            who = (f"{r.bot} in the {r.line}" if r.line.endswith("seat")
                   else f"{r.bot} vs {r.opponent}")
            text = (f"  {who:<46} {r.wins:>6} - {r.losses:<6} [{pct(r.win_rate)}] "
                    f"95% {pct(r.lo)}..{pct(r.hi)}  {r.games} games")
            if r.line != "first seat" and r.line != "second seat":
                text += (f"  pairs 2-0/1-1/0-2: {r.pairs_2_0:.0f}/{r.pairs_1_1:.0f}/"
                         f"{r.pairs_0_2:.0f}"
                         f"  Elo {num(r.elo, 0, True)}")
            out.append(text)
    return "\n".join(out)
