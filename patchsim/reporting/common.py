"""What the report's sections share: a table of formatted columns, a figure from
matplotlib, the words of a pairing and of a change with skill.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from patchsim.analysis.selfplay import DISTINCT_NOTE, copied_pairings
from patchsim.document.model import Section
from patchsim.reporting import plots

Col = tuple[str, Callable[[Any], str]]


def fmt_table(df: pd.DataFrame, cols: Sequence[Col]) -> pd.DataFrame:
    """Format rows with (header, row -> text) column specs."""
    return pd.DataFrame([[f(r) for _, f in cols] for r in df.itertuples(index=False)],
                        columns=[h for h, _ in cols])


def add_figure(s: Section, name: str, fig: Any, caption: str) -> None:
    """A matplotlib figure into a section, as ``figures/<name>.png`` (embedded in the HTML)."""
    s.figure(f"figures/{name}.png", plots.png_bytes(fig), caption)


def pairing_label(r: Any) -> str:
    """A row's pairing, saying so when its deterministic self-play copies count once (the
    words of the run summary)."""
    if getattr(r, "distinct_games", True):
        return str(r.pairing)
    return f"{r.pairing} ({DISTINCT_NOTE})"


def copies_note(games: pd.DataFrame) -> str:
    """For a table pooled over pairings: which pairings' copies count once ("" if none)."""
    copies = sorted(copied_pairings(games))
    return f" Games of {', '.join(copies)}: {DISTINCT_NOTE}." if copies else ""



TREND_WORDS = {
    "grows": "the imbalance grows with skill",
    "shrinks": "the imbalance shrinks with skill",
    "changes side": "the advantage changes side with skill",
    "unchanged": "the imbalance does not change with skill beyond the margin",
    "undecided": "whether the imbalance changes with skill is not decided yet",
}


def skill_change(r: Any, sentence: bool = True) -> str:
    """A skill_balance row's verdict, and what it means for the imbalance when decided; in a
    ``sentence`` after "the change" ("differs by ..." / "is equivalent ...")."""
    # "differs by ..." (a difference, or a negligible one) takes no "is"
    words = f"{'is ' if sentence and not str(r.verdict).startswith('differs') else ''}" \
            f"{r.verdict}"
    if r.verdict_kind in ("differs", "equivalent"):
        words += f": {TREND_WORDS[r.trend]}"
    return words

