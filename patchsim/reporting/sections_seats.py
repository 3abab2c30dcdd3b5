"""The report's sections on the run, seats and pairings, ratings and scores.
"""

from __future__ import annotations

import pandas as pd

from patchsim.analysis import stats as st
from patchsim.analysis.compare import split_rulesets
from patchsim.analysis.stats import MIN_DEALS
from patchsim.document.format import ci, est_ci, finite, integer, num, pct, plural, pval
from patchsim.document.model import Section, slug
from patchsim.reporting import plots
from patchsim.reporting.common import (
    add_figure,
    fmt_table,
    pairing_label,
    skill_change,
)
from patchsim.reporting.run import Run


def overview_section(run: Run, summary: pd.DataFrame) -> Section:
    s = Section("The run", anchor="run")
    cfg = run.manifest.get("config", {})
    rs = pd.DataFrame([{"ruleset": r["name"], "hash": r.get("hash", "—"),
                        "leather marks": ", ".join(map(str, r["rules"]["track"]["leather"]))}
                       for r in cfg.get("rulesets", []) if "rules" in r])
    if len(rs):
        s.table(rs.astype(str), "Rulesets")
    s.table(fmt_table(summary, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("games", lambda r: str(r.games)), ("deals", lambda r: str(r.deals)),
        ("plies", lambda r: num(r.plies)), ("passes", lambda r: num(r.passes)),
        ("buys", lambda r: num(r.buys)),
        ("tie-breaks", lambda r: f"{r.tie_breaks} ({pct(r.tie_rate)} {ci(r.tie_lo, r.tie_hi)})"),
        ("mean |margin|", lambda r: num(r.abs_margin)),
        ("seat 0 ends first", lambda r: pct(r.seat0_first_to_end)),
    ]), "Games per ruleset and pairing: length (plies, passes and buys per game), how often "
        "equal scores left the tie-break to decide. Deterministic self-play plays the same "
        "game from both seats of a deal: it is counted once.")
    return s


def seats_section(pairings: pd.DataFrame, fpa: pd.DataFrame, skill: pd.DataFrame,
                  margin: float) -> Section:
    s = Section("Seats and pairings", anchor="seats")
    s.table(fmt_table(pairings, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("line", lambda r: f"{r.bot} in the {r.line}" if r.line.endswith("seat")
         else f"{r.bot} vs {r.opponent}"),
        ("games", lambda r: str(r.games)), ("W - L", lambda r: f"{r.wins} - {r.losses}"),
        ("win rate", lambda r: pct(r.win_rate)), ("95% CI", lambda r: ci(r.lo, r.hi)),
        ("pairs 2-0 / 1-1 / 0-2", lambda r: (f"{integer(r.pairs_2_0)} / "
                                             f"{integer(r.pairs_1_1)} / {integer(r.pairs_0_2)}"
                                             if finite(getattr(r, "pairs_2_0", None))
                                             else "")),
        ("Elo", lambda r: num(getattr(r, "elo", None), 0, True)
         if finite(getattr(r, "pairs_2_0", None)) else ""),
    ]), "Per pairing, like an engine-testing tool: the first bot in the first seat, in the "
        "second seat, pooled over both (not for self-play, where it is 50% by construction), "
        "and seat 0 against seat 1; every interval is over deals. Pairs: deals won twice, "
        "once, never. Deterministic self-play counts each deal's one distinct game once (it "
        "cannot be split) and shows only seat 0 against seat 1.")
    s.table(fmt_table(fpa, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("deals", lambda r: str(r.deals)), ("first seat wins", lambda r: pct(r.rate)),
        ("95% CI", lambda r: ci(r.lo, r.hi)),
        ("advantage", lambda r: f"{num(r.adv_pp, 1, True)} pts"),
        ("Elo", lambda r: f"{num(r.elo, 0, True)} [{num(r.elo_lo, 0, True)}, "
                          f"{num(r.elo_hi, 0, True)}]"),
        ("against 50%", lambda r: ("says nothing about the seats: the skill gap decides "
                                   "these games" if not getattr(r, "seat_informative", True)
                                   else str(r.verdict) if r.deals >= MIN_DEALS else "")),
        ("deals 2-0 / split / 0-2", lambda r: f"{r.seat0_both} / {r.split} / {r.seat1_both}"),
        ("exact McNemar p", lambda r: pval(r.p_mcnemar)),
        ("design effect", lambda r: num(r.deff, 2)),
        ("note", lambda r: "too few games" if r.few else ""),
    ]), f"First-player advantage: the first seat's win rate with its interval over deals and "
        f"the verdict against 50% (equivalence margin +-{100 * margin:g} points). The exact "
        "McNemar test counts the deals one seat won twice (for deterministic self-play: the "
        "distinct games by winning seat). The design effect is the per-deal variance over "
        "the per-game one: 2 means a deal's two games always agree on the winning seat (the "
        "deal decides it), 1 that they are as good as independent, below 1 that they cancel; "
        "a deal of deterministic self-play is one game and has none.")
    if len(skill):
        _skill_table(s, skill)
    add_figure(s, "seat-win-rates", plots.seat_winrates(fpa, pairings, margin),
             "First-seat win rate per ruleset and pairing with its 95% interval over deals; "
             "right: each first bot by seat.")
    return s


def _skill_table(s: Section, skill: pd.DataFrame) -> None:
    """The first-seat win rate per skill level side by side, one row per ruleset, and the
    verdict on each change from the first level (``stats.skill_balance``)."""
    levels = list(dict.fromkeys(skill["level"]))
    rows = []
    for rs, t in skill.groupby("ruleset", sort=False):
        by = {str(r.level): r for r in t.itertuples()}
        row = {"ruleset": str(rs), "deals": str(int(t["deals"].max()))}
        for lv in levels:
            r = by.get(lv)
            row[f"first seat wins: {lv}"] = (f"{pct(r.rate)} {ci(r.lo, r.hi)}"
                                             if r is not None else "—")
        for lv in levels[1:]:
            r = by.get(lv)
            row[f"change: {lv} - {t.iloc[0].level}"] = (
                f"{skill_change(r, sentence=False)} "
                f"({plural(int(r.common_deals), 'common deal')})"
                if r is not None and isinstance(r.verdict, str) else "—")
        rows.append(row)
    s.table(pd.DataFrame(rows),
            "Balance by skill level: each self-play pairing is a skill level, in the order "
            "the run lists the bots. The change from the first level is a paired difference "
            "over the deals every level played (the same deals), Holm-corrected over the "
            "changes in this table, with its verdict; the imbalance grows with skill when "
            "the first seat's distance from 50% grows.")


def ratings_section(games: pd.DataFrame) -> Section | None:
    bots = set(games["bot0"]) | set(games["bot1"])
    if len(bots) < 2:
        return None
    s = Section("Ratings", anchor="ratings")
    figs = []
    for label, g, _ in split_rulesets(games):
        t = st.ratings(g)
        s.table(fmt_table(t, [
            ("bot", lambda r: r.bot), ("Elo", lambda r: num(r.elo, 0, True)),
            ("95% CI", lambda r: f"[{num(r.elo_lo, 0, True)}, {num(r.elo_hi, 0, True)}]"),
            ("games", lambda r: str(r.games)), ("score", lambda r: pct(r.score)),
        ]), f"{label}: Bradley-Terry ratings relative to the average bot; seat term "
            f"{num(t.attrs['seat_elo'], 0, True)} Elo [{num(t.attrs['seat_elo_lo'], 0, True)}, "
            f"{num(t.attrs['seat_elo_hi'], 0, True)}] for seat 0")
        figs.append((label, t))
    for label, t in figs:
        add_figure(s, f"ratings-{slug(label)}", plots.ratings_plot(t), f"Ratings under {label}.")
    return s


def scores_section(games: pd.DataFrame, scores: pd.DataFrame, summary: pd.DataFrame) -> Section:
    s = Section("Scores and game length", anchor="scores")
    s.table(fmt_table(scores, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("quantity", lambda r: r.quantity), ("group", lambda r: r.group),
        ("n", lambda r: integer(r.n)),
        ("mean [95% CI]", lambda r: est_ci(r.mean, r.mean_lo, r.mean_hi)),
        ("median [95% CI]", lambda r: est_ci(r.median, r.median_lo, r.median_hi)),
        ("IQR [95% CI]", lambda r: est_ci(r.iqr, r.iqr_lo, r.iqr_hi)),
        ("quartiles", lambda r: f"{num(r.q1)} - {num(r.q3)}"),
    ]), "Distributions with bootstrap intervals that resample whole deals (no interval: too "
        "few deals); n counts distinct games")
    add_figure(s, "scores", plots.score_distributions(games, scores),
             "Final scores by seat and the margin, per ruleset (dashed: medians from the "
             "table when the ruleset has one pairing).")
    return s


