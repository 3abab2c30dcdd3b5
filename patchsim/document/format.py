"""The one set of number formatters for everything patchsim shows people: a missing value
(None, NaN, not a number) is "—" everywhere, an infinite one "+∞"/"−∞" where a number is
shown. Rates are proportions (0..1) shown as percentages; "pts" are percentage points."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

MISSING = "—"


def finite(x: Any) -> bool:
    """Is x a finite number (False for None, NaN, +-inf and non-numbers)?"""
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _infinite(x: Any) -> str | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    if math.isinf(v):
        return "+∞" if v > 0 else "−∞"
    return None


def pct(p: Any, digits: int = 1) -> str:
    """A proportion as a percentage: 0.1234 -> '12.3%' ("—" when missing)."""
    return f"{100 * float(p):.{digits}f}%" if finite(p) else MISSING


def num(x: Any, digits: int = 1, sign: bool = False) -> str:
    """A number with fixed decimals ("—" when missing, "+∞"/"−∞" when infinite)."""
    if finite(x):
        return f"{float(x):+.{digits}f}" if sign else f"{float(x):.{digits}f}"
    if isinstance(x, float | np.floating) and np.isinf(x):
        return "+∞" if x > 0 else "−∞"
    return MISSING


def pts(x: Any, digits: int = 1) -> str:
    """A difference of proportions in percentage points, signed: 0.031 -> '+3.1'."""
    return num(100 * float(x), digits, True) if finite(x) else MISSING


def pts_unit(x: Any, digits: int = 1) -> str:
    """Like :func:`pts` with the unit: '+3.1 pts'."""
    return f"{pts(x, digits)} pts" if finite(x) else MISSING


def ci(lo: Any, hi: Any, digits: int = 1) -> str:
    """An interval of proportions: '[48.0%, 53.1%]'."""
    if not (finite(lo) and finite(hi)):
        return MISSING
    return f"[{pct(lo, digits)}, {pct(hi, digits)}]"


def pval(p: Any) -> str:
    """A p-value to three decimals, '< 0.001' below that."""
    if not finite(p):
        return MISSING
    return "< 0.001" if float(p) < 0.001 else f"{float(p):.3f}"


def p_is(p: Any) -> str:
    """'p = 0.035' or 'p < 0.001'."""
    text = pval(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def est_ci(x: Any, lo: Any, hi: Any, digits: int = 1) -> str:
    """'12.3 [10.1, 14.0]', or the estimate alone when there is no interval."""
    if finite(lo) and finite(hi):
        return f"{num(x, digits)} [{num(lo, digits)}, {num(hi, digits)}]"
    return num(x, digits)


def plural(n: int, word: str) -> str:
    """'1 deal', '2 deals'."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def integer(x: Any) -> str:
    """A whole number ("—" when missing)."""
    return str(int(x)) if finite(x) else MISSING


def sig(x: Any, digits: int = 4) -> str:
    """A number to ``digits`` significant digits ('0.1235', '1.235e+05')."""
    if isinstance(x, bool | np.bool_):
        return str(x)
    if finite(x):
        return f"{float(x):.{digits}g}"
    inf = _infinite(x)
    if inf is not None:
        return inf
    missing = x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x))
    return MISSING if missing else str(x)


def format_pairings(table: pd.DataFrame, distinct_note: str) -> str:
    """A pairing table (``analysis.stats.pairing_table``) as text in the style of an
    engine-testing tool; a pairing whose deterministic self-play copies count once is
    headed with ``distinct_note``."""
    out = []
    for (ruleset, pairing), g in table.groupby(["ruleset", "pairing"], sort=False,
                                               observed=True):
        head = f"{ruleset}: {pairing}"
        if not bool(g["distinct_games"].iloc[0]):
            head += f" ({distinct_note})"
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
