"""The report's closing sections: each comparison, how many deals, methods and the
reproducibility stamp.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis.compare import Comparison
from patchsim.analysis.selfplay import DISTINCT_NOTE
from patchsim.analysis.stats import MIN_DEALS
from patchsim.document.format import finite, num, pct, pval
from patchsim.document.model import Section, slug
from patchsim.reporting import plots
from patchsim.reporting.common import add_figure, fmt_table
from patchsim.reporting.run import Run


def comparison_section(c: Comparison) -> Section:
    s = Section(f"Comparison: {c.label_b} against {c.label_a}",
                anchor=f"compare-{slug(c.label_b)}")
    s.p(f"{c.label_b} (B) against {c.label_a} (A) on {c.shared_deals} shared deals: the same "
        "deal seeds and bots under both, so each deal is compared with itself.")
    s.bullets(c.verdict().splitlines() + c.notes)
    m = c.metrics
    if len(m):
        def val(kind: str, x: Any) -> str:
            return pct(x) if kind == "rate" else num(x, 2)

        def diff(kind: str, x: Any) -> str:
            return (f"{num(100 * x, 1, True)} pts" if kind == "rate" and finite(x)
                    else num(x, 2, True))

        s.table(fmt_table(m, [
            ("group", lambda r: r.group), ("metric", lambda r: r.metric),
            ("deals", lambda r: str(r.deals)), ("A", lambda r: val(r.kind, r.a)),
            ("B", lambda r: val(r.kind, r.b)), ("B - A", lambda r: diff(r.kind, r.diff)),
            ("95% CI (paired)", lambda r: f"[{diff(r.kind, r.lo)}, {diff(r.kind, r.hi)}]"),
            ("95% CI (unpaired)",
             lambda r: f"[{diff(r.kind, r.lo_unpaired)}, {diff(r.kind, r.hi_unpaired)}]"),
            ("p (adjusted)", lambda r: pval(r.p_holm)),
            (f"within +-{100 * c.margin:g} (adjusted p)", lambda r: pval(r.p_equivalent)),
            ("adjustment", lambda r: str(r.adjustment)),
            ("verdict", lambda r: str(r.verdict) if r.deals >= MIN_DEALS
             else "too few deals"),
        ]), "Paired differences per metric (B - A) over shared deals; p-values Holm-corrected "
            "for the first-seat win rate (the primary question), Benjamini-Hochberg for the "
            "exploratory others, for the tests of no change, of equivalence and of a change "
            f"beyond the margin alike; the verdict uses these and, for rates, the "
            f"+-{100 * c.margin:g}-point equivalence margin (other metrics have none), and "
            "is read off the interval printed in it: in a family of several rows the interval "
            "at the level its adjusted test was made, named beside it (wider than the 95% "
            "one)")
        add_figure(s, f"compare-{slug(c.label_b)}", plots.comparison_chart(m, c.margin),
                 "Changes in rates with paired (thick) and unpaired (thin) 95% intervals; "
                 f"grey: +-{100 * c.margin:g} points.")
    s.table(fmt_table(c.flips, [
        ("group", lambda r: r.group), ("games", lambda r: str(r.games)),
        ("winner flips", lambda r: f"{r.flips} ({pct(r.flip_rate)})"),
        ("seat 0 wins only under A / B", lambda r: f"{r.seat0_only_a} / {r.seat0_only_b}"),
        ("deals net toward seat 0 under A / B",
         lambda r: f"{r.deals_toward_a} / {r.deals_toward_b}"),
        ("exact McNemar p", lambda r: pval(r.p_value)),
    ]), "Games whose winning seat flips between the rulesets; the exact test counts deals")
    return s


def planning_section(table: pd.DataFrame) -> Section:
    s = Section("How many deals?", anchor="plan")
    s.table(fmt_table(table, [
        ("ruleset", lambda r: r.ruleset), ("pairing", lambda r: r.pairing),
        ("question", lambda r: r.question), ("pilot deals", lambda r: str(r.pilot_deals)),
        ("+-1 point", lambda r: f"{r.deals_precision:,} "
                                f"({r.games_per_deal * r.deals_precision:,} games)"),
        ("detect 2 points", lambda r: f"{r.deals_difference:,}"),
        ("equivalent within +-2", lambda r: f"{r.deals_equivalence:,}"),
        ("note", lambda r: r.note),
    ]), "Deals needed, from the per-deal spread in this run, for the designs the runner plays "
        "(seat-swapped deals; the same deals under both rulesets for a change): a 95% interval "
        "of +-1 point, detecting a true 2-point difference (80% power) and showing "
        "equivalence within +-2 points (the 95% interval inside the margin, as the verdicts "
        "decide it; 80% power if the truth is fair or unchanged). An undecided verdict's "
        "'more deals' is the number that decides it either way with a chance of 80% on its "
        "own data (the truth uncertain), so it is larger than these figures, which take a "
        "true change as known")
    return s


def methods_section(margin: float, n_boot: int) -> Section:
    s = Section("Methods", anchor="methods")
    s.bullets([
        "Every deal (a shuffled patch circle with its random streams) is played twice with "
        "the seats swapped, and every ruleset of a run gets the same deals. The deal is the "
        "unit of analysis: a deal's games are dependent. With a deterministic bot in "
        f"self-play they are the same game: every table counts it once ({DISTINCT_NOTE}).",
        "Every interval, test and verdict comes from one estimator layer "
        "(patchsim.analysis.estimators), the one sweeps, comparisons and the run summary use. "
        "Rates: the mean over deals of each deal's rate (the share of games when every deal "
        "is complete) with a t-interval over deals; a weak prior of one imaginary deal at 0% "
        "and one at 100% in the standard error keeps the interval from collapsing when every "
        "deal went the same way.",
        "Verdicts (patchsim.analysis.estimators.verdicts, the one verdict function): each is "
        "read off the interval printed in it, equivalence first. 'Equivalent within +-m' "
        "when the interval lies inside the margin (the two one-sided tests at 2.5% each; "
        "'differs by X [a, b], within +-m: negligible' when it also excludes 0); 'differs by "
        "X [a, b], beyond +-m' only when it lies outside the margin (with no margin: when it "
        "excludes 0); otherwise 'undecided' ('differs from 0 ... but may lie within +-m' "
        "when the interval excludes 0 but crosses the margin). When a table makes several "
        "claims (pairings, levels, variants, patches, comparisons) they are one family: the "
        "p-values of no change, of equivalence and of a change beyond the margin are each "
        "Holm-adjusted over it (Benjamini-Hochberg for exploratory metrics), and the interval "
        "printed is the one at the level its claim was tested at (Holm's step, "
        "Bonferroni's alpha / k for an undecided claim), named beside it ('Holm over 8: "
        "99.4% interval'); so no verdict's words contradict its interval. An undecided "
        "verdict gets the further deals that would decide it either way with a chance of "
        "80% on its own data (the truth taken as the observed change give or take its "
        "standard error); within one standard error of an edge of the margin it is 'too "
        "close to decide', with the chance that four times the deals played would buy. To "
        "decide an undecided question run a sequential test (a check, or a run until "
        "decided) rather than adding deals and reading a fixed-sample verdict again, which "
        "raises its error rates.",
        f"First-player advantage: the verdict of the first seat's win rate against 50% "
        f"(margin +-{100 * margin:g} points), with at least {MIN_DEALS} deals. The exact "
        "McNemar test on the deals that the same seat won twice (split deals say nothing about "
        "the seat) is shown beside it; a deal of deterministic self-play is one game, counted "
        "by its winning seat.",
        "Balance by skill level: each self-play pairing is a skill level; the change of the "
        "first seat's win rate from the first level is a paired difference over the deals "
        "both played, Holm-corrected over the levels and rulesets, with its verdict.",
        f"Scores, margins, game length: mean, median and IQR with percentile bootstrap "
        f"intervals ({n_boot} resamples of whole deals).",
        "Patches: per seat and game, whether the seat bought the patch and whether it won; the "
        "difference in win rates is the slope of a linear probability model weighted so that "
        "each side's mean is its rate over deals, with deal-clustered errors (statsmodels), "
        "Holm-corrected over the patches. It measures an association in the bots' play, not "
        "the effect of the price.",
        "Leather: per mark, the claim (the claimer's score lead at that moment) and whether "
        "the placed patch filled an isolated one-square hole (every orthogonal neighbour "
        "covered or off the board).",
        "7x7 bonus: it changed the winner when the holder won by fewer points than the bonus "
        "is worth.",
        "Ratings: Bradley-Terry with a seat term, P(seat 0 wins) = logistic(h + r0 - r1), "
        "fitted by Newton's method with a weak Gaussian prior (sd 400 Elo) so that perfect "
        "results stay finite; intervals use the larger of the model-based and the "
        "deal-clustered standard error.",
        "Comparisons: each metric is averaged per deal under each ruleset; the paired "
        "difference has a t interval and test, rates also an equivalence test against "
        f"+-{100 * margin:g} points; p-values are Holm-corrected for the first-seat win rate "
        "(the primary question, over every comparison and pairing) and Benjamini-Hochberg "
        "adjusted for the other, exploratory metrics, and each change gets a verdict. Winner "
        "flips get an exact McNemar test over deals.",
        "Sequential stops: a check and a run until decided use a generalised SPRT on deal "
        "outcomes with Wald's bounds; the intervals they print are anytime-valid (a "
        "normal-mixture confidence sequence), which keep their coverage at a stop chosen by "
        "the data.",
        "Planning: deals needed = z^2 variance / half-width^2 with the per-game, per-deal or "
        "per-deal-difference variance of the run.",
    ])
    return s


def stamp_section(run: Run, other: Run | None) -> Section:
    import matplotlib
    import scipy
    import statsmodels

    s = Section("Reproducibility", anchor="stamp")
    rows = []
    for label, r in (("this run", run), ("compared with", other)):
        if r is None:
            continue
        m = r.manifest
        cfg = m.get("config", {})
        rows += [
            (f"{label}: folder", r.run_dir.name),  # no machine paths in a shipped report
            (f"{label}: run id", str(m.get("run_id", "—"))),
            (f"{label}: command", str(m.get("command", "—"))),
            (f"{label}: seed", str(cfg.get("seed", "—"))),
            (f"{label}: deals", str(cfg.get("deals", "—"))),
            (f"{label}: bots", "; ".join(cfg.get("bots", []))),
            (f"{label}: rulesets", ", ".join(f"{x['name']} {x.get('hash', '')}"
                                             for x in cfg.get("rulesets", []))),
            (f"{label}: versions", ", ".join(f"{k} {v}"
                                             for k, v in m.get("versions", {}).items())),
            (f"{label}: started / finished",
             f"{m.get('started', '—')} / {m.get('finished', '—')}"),
        ]
    rows.append(("analysis", f"scipy {scipy.__version__}, statsmodels {statsmodels.__version__}, "
                             f"matplotlib {matplotlib.__version__}, pandas {pd.__version__}, "
                             f"numpy {np.__version__}"))
    s.table(pd.DataFrame(rows, columns=["", "value"]))
    return s


