"""The report's first section: the verdict sentences, read off the same tables as the
rest of the report, and the note of a run whose length a sequential test chose.
"""

from __future__ import annotations

import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.compare import Comparison
from patchsim.analysis.selfplay import DISTINCT_NOTE
from patchsim.analysis.stats import MIN_DEALS
from patchsim.document.format import ci, num, pct, plural
from patchsim.document.model import Section
from patchsim.play.runfolder import STOPPING_FILE, RunFolderError, read_stopping
from patchsim.reporting.common import skill_change
from patchsim.reporting.run import Run


def verdict_section(run: Run, fpa: pd.DataFrame, skill: pd.DataFrame, leather: pd.DataFrame,
                    bonus: pd.DataFrame, comparisons: list[Comparison], margin: float,
                    few: int) -> Section:
    s = Section("Verdict", anchor="verdict")
    lines: list[str] = []
    if few < MIN_DEALS:
        s.note(f"Too few games: the smallest pairing has {plural(few, 'deal')}, each played "
               f"from both seats. The numbers below are shown, but intervals are wide or "
               f"missing and no conclusion should be drawn before at least {MIN_DEALS} deals "
               "per pairing.")
    for r in (fpa if len(fpa) <= 6 else _headline_rows(fpa)).itertuples():
        played = ("each played from both seats" if r.distinct_games
                  else f"each played from both seats; {DISTINCT_NOTE}")
        text = (f"Under {r.ruleset}, with {r.pairing}, the first seat wins {pct(r.rate)} "
                f"{ci(r.lo, r.hi)} of games ({plural(r.deals, 'deal')}, {played})")
        if not getattr(r, "seat_informative", True):
            # the skill gap decides these games: no seat verdict, whatever it would say
            text += f"; {r.seat_reason}"
        elif r.deals >= MIN_DEALS and isinstance(r.verdict, str) and r.verdict:
            text += f"; against 50%: {r.verdict}"
            if r.verdict_kind == "differs":
                text += (f" ({num(abs(r.elo), 0)} Elo for the "
                         f"{'first' if r.adv_pp > 0 else 'second'} seat)")
        lines.append(text + ".")
    lines.extend(_skill_lines(skill))
    for c in comparisons:  # the rates themselves are in the lines above
        lines.extend(c.verdict(restate=False).splitlines())
    if not comparisons and len(leather):
        for rs, t in leather.groupby("ruleset", sort=False):
            first = t[t["rank"] == 1]
            if len(first):
                r = first.iloc[0]
                lines.append(
                    f"Under {rs} the first leather patch (mark {int(r['mark'])}) fills an "
                    f"isolated one-square hole in {pct(r['useful_rate'])} "
                    f"{ci(r['useful_lo'], r['useful_hi'])} of games; elsewhere it covers an "
                    f"ordinary square ({int(r['ordinary'])} of {int(r['games'])} games).")
    for r in _headline_rows(bonus).itertuples():
        if r.points == 0:
            continue
        lines.append(
            f"Under {r.ruleset}, with {r.pairing}, the 7x7 bonus is claimed in "
            f"{pct(r.claim_rate)} {ci(r.claim_lo, r.claim_hi)} of games; its holder won by "
            f"fewer points than it is worth in {pct(r.changed_rate)} "
            f"{ci(r.changed_lo, r.changed_hi)}. That is not what the game would be without "
            "it (players would play differently): a run of the same deals with "
            "bonus=null answers that, paired by deal.")
    s.bullets(lines)
    stop = stopping_note(run)
    if stop:
        s.note(stop)
    if any("undecided" in str(line) for line in lines):
        s.p(est.SEQUENTIAL_ADVICE)
    s.p("These are results for these bots: stronger or different play can change every "
        "number. Intervals are 95%, and every verdict is read off the interval printed "
        "in it (in a family of several claims, the family's adjusted interval, named beside "
        "it: wider than the 95% one); the unit of analysis is the deal.")
    return s


def stopping_note(run: Run) -> str:
    """A note for a run whose length a sequential test chose (``run --until-decided`` writes
    the folder's stopping record), or ''."""
    try:
        record = read_stopping(run.run_dir)
    except RunFolderError:
        # a file is data: a damaged record is said, not a crash of the whole report
        return (f"The run's stopping record ({STOPPING_FILE}) is damaged and was ignored; if "
                "a sequential test chose the run's length, its intervals cover somewhat less "
                "than 95%.")
    if record is None:
        return ""
    margin, stopped_at = record.margin, record.deals
    parts = [f"{d.ruleset}, {d.pairing}: {pct(d.rate)} {ci(d.lo, d.hi)} at deal {d.deal}"
             for d in record.decided]
    deals = int(run.games["deal"].nunique()) if "deal" in run.games else stopped_at
    if deals != stopped_at:
        return (f"A sequential test stopped this run at {stopped_at:,} deals; it was extended "
                f"to {deals:,} afterwards. Its intervals are fixed-sample ones over every deal; "
                "because the first stop depended on the data, they may cover slightly less "
                "than 95%.")
    return ("This run stopped when a sequential test had decided whether the first seat's "
            f"win rate lies within 50% +-{100 * margin:g} points. "
            "The report's intervals are fixed-sample ones: after a stop chosen by looking at "
            "the data they cover somewhat less than 95% (92-94% in simulation, "
            "benchmarks/bench_verdicts.py), and its verdicts are those of a fixed sample. "
            "The sequential test's own decisions keep their error rates; their anytime-valid "
            "95% intervals: " + ("; ".join(parts) if parts else "none decided") + ".")



def _skill_lines(skill: pd.DataFrame) -> list[str]:
    """Per ruleset and stronger level: the first-seat win rate at each skill level and the
    verdict on the change (``stats.skill_balance``)."""
    out = []
    for rs, t in skill.groupby("ruleset", sort=False):
        ref = t.iloc[0]
        for r in t.iloc[1:].itertuples():
            out.append(
                f"Under {rs}, balance by skill level (self-play): the first seat wins "
                f"{pct(ref.rate)} {ci(ref.lo, ref.hi)} of games with {ref.level} and "
                f"{pct(r.rate)} {ci(r.lo, r.hi)} with {r.level}; the change over "
                f"{plural(int(r.common_deals), 'common deal')} {skill_change(r)}.")
    return out



def _headline_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows a verdict names: per ruleset, the self-play pairings (else the first pairing);
    the tables have the rest."""
    out = []
    for _rs, t in table.groupby("ruleset", sort=False):
        sp = t[t["self_play"].astype(bool)]
        out.append(sp if len(sp) else t.head(1))
    return pd.concat(out) if out else table


