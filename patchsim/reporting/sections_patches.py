"""The report's sections on patches (with a prices study beside the run), leather
patches and the 7x7 bonus.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from patchsim.analysis import stats as st
from patchsim.document.format import ci, finite, integer, num, p_is, pct, pts, pval
from patchsim.document.model import Section, slug
from patchsim.reporting import plots
from patchsim.reporting.common import add_figure, copies_note, fmt_table, pairing_label
from patchsim.reporting.run import Run


def _causal_prices(s: Section, run: Run) -> None:
    """The causal prices of a prices study stored in the run folder (``prices/``, written by
    ``patchsim report --prices`` or ``patchsim prices --out RUN/prices``), if any:
    restricted-play value with its interval and verdict, and the fair price; with the
    study's ruleset, bot and games (its ``study.json``) and a warning when the study was made
    on a ruleset this run did not play."""
    found = run.prices  # read by the run-folder reader, its columns checked (layout.PriceRow)
    if found is None:
        return
    if found.problem is not None:
        s.note(found.problem)
        return
    study, header = found.rows, found.header
    what = (f"{header['ruleset']}, bot {header['bot']}, {header['games']:,} games per patch "
            f"and cost, seed {header['seed']}" if header else "ruleset and bot not recorded")
    s.table(fmt_table(study, [
        ("patch", lambda r: r.patch), ("cost", lambda r: integer(r.cost)),
        ("value [95%]", lambda r: f"{pts(r.value)} [{pts(r.value_lo)}, {pts(r.value_hi)}]"),
        ("verdict", lambda r: str(r.verdict)), ("fair price", lambda r: str(r.fair_text)),
        ("reading", lambda r: str(r.reading)),
    ]), f"Causal prices ({what}; restricted play: the win-rate points the bot loses when "
        "forbidden the patch, on common deals; price response: the cost at which that value "
        "crosses zero)")
    hashes = {str(h) for h in run.games["ruleset_hash"].unique()} \
        if "ruleset_hash" in run.games.columns else set()
    if header and hashes and header.get("ruleset_hash") not in hashes:
        s.note(f"This prices study was made on {header['ruleset']} "
               f"({header.get('ruleset_hash')}), a ruleset this run did not play.")


def patches_section(patches: pd.DataFrame, run: Run, games: pd.DataFrame) -> Section:
    s = Section("Patches", anchor="patches")
    _causal_prices(s, run)
    if patches.empty:
        s.note("No patches were bought.")
        return s
    s.p("Buyers against non-buyers (below) is an association in these bots' play, not a "
        "price verdict: cheap patches are bought by the player who is behind, and a patch "
        "one seat bought is one the other did not. Whether a patch is over- or underpriced is "
        "a causal question, answered by restricted play and price response: "
        "`patchsim report RUN --prices` measures it for this run and shows it above.")
    flagged = patches[patches["flag"] != ""]
    if len(flagged):
        s.bullets([f"{r.ruleset}: buyers of {r.patch} (cost {integer(r.cost)}, time "
                   f"{integer(r.time)}, income {integer(r.income)}) won {pct(r.buyer_win)}, "
                   f"non-buyers {pct(r.other_win)} (Holm-adjusted {p_is(r.p_holm)}; "
                   "association)" for r in flagged.itertuples()])
    else:
        s.p("No buyer/non-buyer difference stands out after correcting for testing every "
            "patch (Holm).")
    s.table(fmt_table(patches, [
        ("ruleset", lambda r: r.ruleset), ("patch", lambda r: r.patch),
        ("cost/time/income", lambda r: f"{integer(r.cost)}/{integer(r.time)}/"
                                       f"{integer(r.income)}"),
        ("bought", lambda r: f"{r.bought} ({pct(r.buy_rate, 0)})"),
        ("seat 0 / 1", lambda r: f"{r.by_seat0} / {r.by_seat1}"),
        ("position median (IQR)", lambda r: f"{num(r.pos_median, 0)} ({num(r.pos_q1, 0)}-"
                                            f"{num(r.pos_q3, 0)})"),
        ("buyer wins", lambda r: f"{pct(r.buyer_win)} {ci(r.buyer_lo, r.buyer_hi)}"),
        ("non-buyer wins", lambda r: f"{pct(r.other_win)} {ci(r.other_lo, r.other_hi)}"),
        ("difference", lambda r: f"{pts(r.diff)} [{pts(r.diff_lo)}, {pts(r.diff_hi)}]"),
        ("p (Holm)", lambda r: pval(r.p_holm)),
    ]), "Association: per patch, ranked by the buyers' edge (points) in these bots' play; "
        "not a causal price. Win rates are over deals; the difference is a deal-weighted "
        "linear probability model with deal-clustered errors." + copies_note(games))
    for rs in dict.fromkeys(patches["ruleset"]):
        add_figure(s, f"patches-{slug(rs)}", plots.patch_chart(patches, rs),
                 f"Patches under {rs}: buyers' edge with 95% intervals; when and how often "
                 "they were bought.")
    bots = st.patch_bots(run.events, games)
    if bots["bot"].nunique() > 1:
        s.table(fmt_table(bots, [
            ("ruleset", lambda r: r.ruleset), ("patch", lambda r: r.patch),
            ("bot", lambda r: r.bot), ("buys", lambda r: str(r.buys)),
            ("share", lambda r: pct(r.share, 0)), ("mean position", lambda r: num(r.pos_mean)),
        ]), "Who bought each patch." + copies_note(games))
    return s


def _leather_by_skill(games: pd.DataFrame, events: Any) -> pd.DataFrame:
    """The leather table of each pairing (the bots' skill) separately."""
    parts = []
    for pairing, g in games.groupby("pairing", sort=False, observed=True):
        t = st.leather_table(g, events)
        t.insert(1, "pairing", str(pairing))
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _publisher_question(s: Section, useless: pd.DataFrame, by_skill: pd.DataFrame) -> None:
    """The publisher's reason for the new edition, as a question the data can answer: was
    the first leather patch useless (no hole to fill) in about half of the games? Per ruleset
    and skill level, with a verdict against 50% +- 10 points (``stats.first_leather_useless``);
    and, across rulesets, the patch that moved apart from the patch that became first."""
    if by_skill.empty:
        return
    lines = []
    for r in useless.itertuples():
        if not finite(r.rate):
            continue
        lines.append(f"{r.ruleset}, {pairing_label(r)}: the first leather patch (mark "
                     f"{r.mark}) was useless in {pct(r.rate)} {ci(r.lo, r.hi)} of games "
                     f"(no isolated hole to fill); against 'about half': {r.verdict}")
    marks = {r: sorted(t["mark"].unique()) for r, t in by_skill.groupby("ruleset", sort=False)}
    names = list(marks)
    if len(names) >= 2:
        a, b = names[0], names[1]
        moved_from = [m for m in marks[a] if m not in marks[b]]
        moved_to = [m for m in marks[b] if m not in marks[a]]
        pooled = by_skill.groupby(["ruleset", "mark"], sort=False)[["useful_rate"]].mean()

        def rate(r: str, m: int) -> str:
            return pct(pooled.loc[(r, m), "useful_rate"]) if (r, m) in pooled.index else "—"

        if moved_from and moved_to:
            lines.append(f"The patch that moved ({', '.join(map(str, moved_from))} under {a} "
                         f"-> {', '.join(map(str, moved_to))} under {b}): useful in "
                         f"{rate(a, moved_from[0])} of games at {moved_from[0]}, "
                         f"{rate(b, moved_to[0])} at {moved_to[0]}.")
        first_b = marks[b][0] if marks[b] else None
        if first_b is not None and first_b in marks[a] and marks[a][0] != first_b:
            lines.append(f"The patch that became first (mark {first_b}: rank "
                         f"{marks[a].index(first_b) + 1} under {a}, first under {b}): useful "
                         f"in {rate(a, first_b)} of games under {a}, {rate(b, first_b)} "
                         f"under {b}. Comparing 'the first leather patch' across the "
                         "editions mixes these two changes.")
    if lines:
        s.p("The publisher's reason for the new edition: the first leather patch was useless "
            "in about half of the games. Useful means it filled an isolated one-square hole, "
            "which nothing else can fill (a rule a designer can check on any quilt); rates are "
            "per game with 95% intervals over deals, per skill level (pairing).")
        s.bullets(lines)


def leather_section(leather: pd.DataFrame, games: pd.DataFrame | None = None,
                    events: Any = None) -> Section:
    s = Section("Leather patches", anchor="leather")
    if leather.empty:
        s.note("No leather patch was claimed in these games.")
        return s
    if games is not None and events is not None:
        _publisher_question(s, st.first_leather_useless(games, events),
                            _leather_by_skill(games, events))
    s.p("The question behind the edition change (docs/rules.md E2): a leather patch is "
        "useful when it fills an isolated one-square hole, which nothing else can fill.")
    s.table(fmt_table(leather, [
        ("ruleset", lambda r: r.ruleset), ("mark", lambda r: str(r.mark)),
        ("games", lambda r: str(r.games)), ("claimed", lambda r: str(r.claimed)),
        ("by seat 0", lambda r: str(r.by_seat0)),
        ("by leader / trailer / level",
         lambda r: f"{r.by_leader} / {r.by_trailer} / {r.by_level}"),
        ("useful (hole)", lambda r: f"{r.useful} ({pct(r.useful_rate)} "
                                    f"{ci(r.useful_lo, r.useful_hi)})"),
        ("ordinary", lambda r: str(r.ordinary)), ("lost", lambda r: str(r.lost)),
        ("claimer wins", lambda r: f"{pct(r.claimer_win)} {ci(r.claimer_lo, r.claimer_hi)}"),
    ]), "Per leather mark: who claimed it (leader / trailer on score at the claim) and where "
        "it went; rates with 95% intervals over deals." + ("" if games is None
                                                          else copies_note(games)))
    add_figure(s, "leather", plots.leather_chart(leather),
             "Leather patches by track position: useful (filled a hole, with 95% interval), "
             "ordinary square, lost.")
    return s


def bonus_section(bonus: pd.DataFrame, bonus_ev: pd.DataFrame, run: Run) -> Section:
    s = Section("The 7x7 bonus", anchor="bonus")
    s.table(fmt_table(bonus, [
        ("ruleset", lambda r: r.ruleset), ("pairing", pairing_label),
        ("games", lambda r: str(r.games)),
        ("claimed", lambda r: f"{r.claimed} ({pct(r.claim_rate)} {ci(r.claim_lo, r.claim_hi)})"),
        ("seat 0 / 1", lambda r: f"{r.by_seat0} / {r.by_seat1}"),
        ("position median", lambda r: num(r.pos_median, 0)),
        ("holder wins", lambda r: f"{pct(r.holder_win)} {ci(r.holder_lo, r.holder_hi)}"),
        ("holder won by less than the bonus",
         lambda r: f"{r.changed} ({pct(r.changed_rate)} {ci(r.changed_lo, r.changed_hi)})"),
    ]), "Claims of the 7x7 bonus, and games whose holder won by fewer points than it is worth "
        "(with play held fixed; the bonus's effect on who wins needs a paired run without it)")
    last = max((r.last_space for r in run.rulesets.values()), default=53)
    add_figure(s, "bonus", plots.bonus_timing(bonus_ev, bonus, last),
             "When the bonus was claimed: the claimer's track position.")
    return s


