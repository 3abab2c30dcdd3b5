"""Who wins, by seat and by pairing: DataFrame in, DataFrame out.

The unit of analysis is the *deal*: every deal is played twice with the seats swapped, so the
two games of a deal are not independent. Every rate, interval, test and verdict here comes
from the one estimator layer, :mod:`patchsim.analysis.estimators` (a rate is the mean of the
per-deal rates with a t-interval over deals and a weak prior at 0 and 1; a change between
skill levels is a paired difference over deals; verdicts come from
:func:`estimators.verdicts`, equivalence first, one Holm family per table), so a number here
is the number a sweep, a comparison or the run summary gives for the same question.

Deterministic self-play: when one deterministic bot plays itself, a deal's seat-swapped game
is the same game again (:mod:`patchsim.analysis.selfplay`). Every table counts such a copy
once (game counts, pair counts, tie-breaks, claims), says so in its ``distinct_games`` column,
and leaves per-deal rates unchanged (both copies give the deal the same value).

Written here rather than taken from a library: the seat-swapped pair counts and an exact
McNemar test on them (statsmodels), and the design effect (from the estimator layer's
per-deal spread); each is checked against a hand-computed case in tests/test_stats.py.
The helpers over the games table (:func:`iter_groups`, :func:`first_bot`, ...) are shared
by the other table modules (leather, patches, scores).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.contingency_tables import mcnemar

from patchsim.analysis import estimators as est
from patchsim.analysis.comparison import imbalance_changes
from patchsim.analysis.defaults import ALPHA
from patchsim.analysis.estimators import DEFAULT_MARGIN, MIN_DEALS, Estimate
from patchsim.analysis.games import (
    NAN,
    first_bot,
    is_self_play,
    iter_groups,
    second_bot,
)
from patchsim.analysis.ratings import elo
from patchsim.analysis.selfplay import copied_pairings, distinct


def design_effect(e: Estimate, games: int) -> float:
    """How much the deal decides a rate: the variance of the per-deal rates (``e.sd``, from
    :func:`estimators.rate`) over the variance they would have if a deal's ``games / deals``
    games were independent, p(1 - p) / (games per deal). With two games a deal: about 2 when
    they always agree, 1 when independent, below 1 when they cancel. NaN below two deals or at a
    rate of 0 or 1."""
    p = e.value
    if e.deals < 2 or not (np.isfinite(p) and 0 < p < 1 and np.isfinite(e.sd)):
        return NAN
    return float(games / e.deals * e.sd**2 / (p * (1 - p)))


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Exact McNemar p-value from the two discordant counts (statsmodels)."""
    if only_first + only_second == 0:
        return 1.0
    table = [[0, only_first], [only_second, 0]]
    return float(mcnemar(table, exact=True).pvalue)


def pair_counts(win: np.ndarray, deal: np.ndarray, one_game: bool = False
                ) -> tuple[int, int, int]:
    """Over complete seat-swapped deals, how many a side won twice, once, never.

    ``one_game``: the deals of deterministic self-play after their copies were dropped
    (:func:`distinct`). Such a deal is one distinct game played twice, so it can never be
    split: it counts as won twice or never by its one result. An exact McNemar test on these
    counts is then the sign test over the distinct games, which is what the data can say
    (the copy adds no second observation of the seat)."""
    s = pd.Series(np.asarray(win, dtype=float)).groupby(np.asarray(deal))
    k, n = s.sum(), s.count()
    if one_game:
        full = n == 1
        k = 2 * k
    else:
        full = n == 2
    return int((k[full] == 2).sum()), int((k[full] == 1).sum()), int((k[full] == 0).sum())


def pairing_table(games: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per ruleset and pairing, lines like an engine-testing tool: the first bot in the first
    seat, in the second seat, pooled (not for self-play, where it is 50% by construction), and
    first seat against second seat. Every line's rate and interval is
    :func:`estimators.rate` over deals; pooled lines add the seat-swapped pair counts (2-0,
    1-1, 0-2) and Elo.

    Deterministic self-play (``distinct_games`` False) counts each deal's game once and has
    only the seat 0 vs seat 1 line: the bot in the first and in the second seat are the two
    sides of that same game."""
    games = distinct(games)
    copies = copied_pairings(games)
    level = 1 - alpha
    rows = []
    for (ruleset, pairing), g in iter_groups(games, ["ruleset", "pairing"]):
        a, b = first_bot(g), second_bot(g)
        selfp = is_self_play(g)
        one_game = str(pairing) in copies
        winner, order = g["winner"].to_numpy(), g["order"].to_numpy()
        a_win = (winner == order).astype(float)
        deal = g["deal"].to_numpy()
        base = {"ruleset": ruleset, "pairing": pairing, "self_play": selfp,
                "distinct_games": not one_game}
        lines: list[tuple[str, str, str, np.ndarray, np.ndarray, bool]] = []
        if not one_game:
            for o, line in ((0, "first seat"), (1, "second seat")):
                sel = order == o
                lines.append((line, a, b, a_win[sel], deal[sel], False))
        if not selfp:
            lines.append(("pooled", a, b, a_win, deal, True))
        lines.append(("seat 0 vs seat 1", "seat 0", "seat 1", (winner == 0).astype(float),
                      deal, True))
        for line, x, y, win, dl, paired in lines:
            e = est.rate(win, dl, level)
            n, w = len(win), int(win.sum())
            row = {**base, "line": line, "bot": x, "opponent": y, "games": n, "wins": w,
                   "losses": n - w, "win_rate": e.value, "lo": e.lo, "hi": e.hi,
                   "deals": e.deals}
            if paired:
                two, one, zero = pair_counts(win, dl, one_game)
                row.update(pairs_2_0=two, pairs_1_1=one, pairs_0_2=zero,
                           elo=float(elo(e.value)), elo_lo=float(elo(e.lo)),
                           elo_hi=float(elo(e.hi)))
            rows.append(row)
    return pd.DataFrame(rows)


SKILL_GAP = 0.9  # a bot that wins more than this share in both seats decides the games


def seat_information(games: pd.DataFrame, alpha: float = ALPHA,
                     limit: float = SKILL_GAP) -> tuple[bool, str]:
    """Can this pairing's games say anything about the seats? ``(informative, reason)``.

    Not when the skill gap decides them: one bot's win rate, in the first seat and in the
    second seat alike, has its interval (:func:`estimators.rate` over deals, at 1 - alpha)
    wholly above ``limit`` (90%). The first-seat win rate is 50% plus half the difference of
    that bot's win rates in the two seats, so with both above 90% it is forced within 5 points
    of 50% whatever the seat is worth: "equivalent within +-2 points" would then restate the
    skill gap, not a balance of the seats. Self-play pairings are always informative (one
    bot on both sides); the rule looks at each seat separately, so a bot that wins 100% in one
    seat and 80% in the other still tells (its seats differ)."""
    if len(games) == 0 or is_self_play(games):
        return True, ""
    winner, order = games["winner"].to_numpy(), games["order"].to_numpy()
    deal = games["deal"].to_numpy()
    a_win = (winner == order).astype(float)  # the pairing's first bot won
    for who, won in ((first_bot(games), a_win), (second_bot(games), 1.0 - a_win)):
        seats = [est.rate(won[order == o], deal[order == o], 1 - alpha) for o in (0, 1)]
        if all(e.deals > 0 and e.lo > limit for e in seats):
            lo = min(e.lo for e in seats)
            return False, (f"{who} wins over {100 * limit:.0f}% of games in either seat "
                           f"(lower bounds from {100 * lo:.1f}%): the skill gap decides these "
                           "games, so they say nothing about the first seat")
    return True, ""


def first_player_advantage(games: pd.DataFrame, margin: float = DEFAULT_MARGIN,
                           alpha: float = ALPHA,
                           alone: Collection[tuple[str, str]] = ()) -> pd.DataFrame:
    """Per ruleset and pairing: the first seat's win rate (:func:`estimators.rate`: per-deal
    interval) and its verdict against 50% (:func:`estimators.verdicts`: "equivalent within
    +-margin", "differs by X [a, b], beyond +-margin" or "undecided"; ``p_value``
    its t-test over deals, ``balanced_p`` its equivalence test, both Holm-adjusted over the
    table's rows, one family of claims); the advantage in points and
    Elo; the seat-swapped pair counts with an exact McNemar p-value on the deals one seat won
    twice (split deals say nothing about the seat; see :func:`pair_counts` for deterministic
    self-play, whose game counts are of distinct games); and the design effect (how much the
    deal decides the outcome; not defined when a deal is one distinct game).
    ``seat_informative`` and ``seat_reason`` (:func:`seat_information`): False, with why,
    for a pairing whose games the skill gap decides; its verdict then tells nothing about the
    seats, however it reads. ``alone``: (ruleset, pairing) rows that are each a question of
    their own (a report's headline: the first seat under the strongest level), decided
    alone as the headline decides them, so the report gives one verdict for one question;
    the other rows stay one Holm family (``family`` says which a row is in)."""
    games = distinct(games)
    copies = copied_pairings(games)
    rows = []
    for (ruleset, pairing), g in iter_groups(games, ["ruleset", "pairing"]):
        one_game = str(pairing) in copies
        win = (g["winner"].to_numpy() == 0).astype(float)
        deal = g["deal"].to_numpy()
        e = est.rate(win, deal, 1 - alpha)
        both0, split, both1 = pair_counts(win, deal, one_game)
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "self_play": is_self_play(g),
            "distinct_games": not one_game, "games": len(g), "deals": e.deals,
            "seat0_wins": int(win.sum()), "rate": e.value, "lo": e.lo, "hi": e.hi,
            "se": e.se, "sd_deal": e.sd,
            "adv_pp": 100 * (e.value - 0.5), "adv_lo_pp": 100 * (e.lo - 0.5),
            "adv_hi_pp": 100 * (e.hi - 0.5),
            "elo": float(elo(e.value)), "elo_lo": float(elo(e.lo)), "elo_hi": float(elo(e.hi)),
            "margin": margin, "_est": e,
            "p_mcnemar": mcnemar_exact(both0, both1),
            "seat0_both": both0, "split": split, "seat1_both": both1,
            "deff": NAN if one_game else design_effect(e, len(g)),
            "few": e.deals < MIN_DEALS,
        })
        rows[-1]["seat_informative"], rows[-1]["seat_reason"] = seat_information(g, alpha)
    # one family: every ruleset and pairing of the table is a claim of balance (Holm), but
    # for the rows asked alone (a headline's question: its verdict is the headline's)
    keys = {(str(a), str(b)) for a, b in alone}
    single = [(str(r["ruleset"]), str(r["pairing"])) in keys for r in rows]
    ests = [r.pop("_est") for r in rows]
    found: list[est.Verdict | None] = [None] * len(rows)
    asked: tuple[tuple[bool, est.Family], ...] = ((True, "none"), (False, "holm"))
    for pick, family in asked:
        idx = [i for i, s in enumerate(single) if s == pick]
        if not idx:
            continue
        vs = est.verdicts([ests[i] for i in idx], margin, 0.5, alpha, family=family)
        for i, one in zip(idx, vs, strict=True):
            found[i] = one
    for r, v in zip(rows, found, strict=True):
        assert v is not None
        r.update(p_value=v.p_difference, balanced_p=v.p_equivalence,
                 verdict_kind=v.kind, verdict=v.text(100.0, " points"),
                 more_deals=v.more_deals, verdict_lo=v.interval.lo,
                 verdict_hi=v.interval.hi, verdict_level=v.interval.level,
                 family=v.family if v.family_size > 1 else "none")
    return pd.DataFrame(rows)


def skill_balance(games: pd.DataFrame, margin: float = DEFAULT_MARGIN,
                  alpha: float = ALPHA) -> pd.DataFrame:
    """Does the first seat's advantage change with the bots' skill?

    Per ruleset, each self-play pairing is a skill level, in the order the run lists them;
    the first is the reference. One row per ruleset and level: the first-seat win rate with
    its interval (:func:`estimators.rate`, as in :func:`first_player_advantage`); for every
    later level, the change from the reference on the deals both played (every pairing of a
    run plays the same deals; deals whose seeds differ are left out) as
    :func:`estimators.paired_difference` with its t-test p-value, Holm-corrected over the
    table's comparisons (``p_holm``), and :func:`estimators.verdicts` on them, one Holm
    family (``verdict`` text, ``more_deals``). ``trend`` reads the verdict for the
    imbalance: ``grows`` or ``shrinks`` (the distance from 50%), ``changes side``,
    ``unchanged`` (equivalent within +-margin) or ``undecided``. Empty when no ruleset has
    two self-play pairings."""
    cols = ["ruleset", "level", "pairing", "reference", "distinct_games", "games", "deals",
            "rate", "lo", "hi", "common_deals", "diff", "diff_lo", "diff_hi", "p", "p_holm",
            "verdict_kind", "verdict", "more_deals", "trend"]
    games = distinct(games)
    copies = copied_pairings(games)
    level = 1 - alpha
    rows: list[dict[str, Any]] = []
    pairs: list[tuple[int, np.ndarray, np.ndarray]] = []
    for (ruleset,), g in iter_groups(games, ["ruleset"]):
        sp = g[(g["bot0"] == g["bot1"]).to_numpy()]
        pairings = list(dict.fromkeys(sp["pairing"]))
        if len(pairings) < 2:
            continue
        per_deal: list[pd.Series] = []
        seeds: list[pd.Series] = []
        reference = first_bot(sp[(sp["pairing"] == pairings[0]).to_numpy()])
        for pairing in pairings:
            gp = sp[(sp["pairing"] == pairing).to_numpy()]
            win = (gp["winner"].to_numpy() == 0).astype(float)
            deal = gp["deal"].to_numpy()
            e = est.rate(win, deal, level)
            # est.deal_values lists the deals in sorted order: index them the same way
            per_deal.append(pd.Series(est.deal_values(win, deal), index=np.unique(deal)))
            if "deal_seed" in gp.columns:
                seeds.append(gp.groupby("deal", sort=True)["deal_seed"].first())
            rows.append({"ruleset": ruleset, "level": first_bot(gp), "pairing": str(pairing),
                         "reference": reference,
                         "distinct_games": str(pairing) not in copies, "games": len(gp),
                         "deals": e.deals, "rate": e.value, "lo": e.lo, "hi": e.hi})
        ref = per_deal[0]
        for k in range(1, len(pairings)):
            common = ref.index.intersection(per_deal[k].index)
            if seeds:
                common = common[(seeds[0].loc[common] == seeds[k].loc[common]).to_numpy()]
            at = len(rows) - len(pairings) + k
            pairs.append((at, ref.loc[common].to_numpy(), per_deal[k].loc[common].to_numpy()))
    if not rows:
        return pd.DataFrame(columns=cols)
    ref_rate: dict[Any, float] = {}
    for r in rows:
        ref_rate.setdefault(r["ruleset"], r["rate"])
    # one family: every level and ruleset of the table (Holm), decided by the one function
    # that also answers a sweep's "does it grow with skill?"
    found = imbalance_changes([(a, b) for _, a, b in pairs],
                              [(ref_rate[rows[i]["ruleset"]], rows[i]["rate"])
                               for i, _, _ in pairs], margin=margin, alpha=alpha)
    for (i, _, _), c in zip(pairs, found, strict=True):
        v = c.verdict
        rows[i].update(common_deals=c.change.deals, diff=c.change.value, diff_lo=c.change.lo,
                       diff_hi=c.change.hi, p=c.p, p_holm=v.p_difference,
                       verdict_kind=v.kind, verdict=v.text(100.0, " points"),
                       more_deals=v.more_deals, trend=c.trend)
    return pd.DataFrame(rows).reindex(columns=cols)


def game_summary(games: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per ruleset and pairing: game length, passes, buys, how often the tie-break decided
    (:func:`estimators.rate`), the bonus rate and who reached the end first. Deterministic
    self-play counts each deal's game once (``distinct_games`` False)."""
    games = distinct(games)
    copies = copied_pairings(games)
    rows = []
    for (ruleset, pairing), g in iter_groups(games, ["ruleset", "pairing"]):
        tie = est.rate(g["tie_break"].to_numpy(float), g["deal"].to_numpy(), 1 - alpha)
        rows.append({
            "ruleset": ruleset, "pairing": pairing,
            "distinct_games": str(pairing) not in copies, "games": len(g),
            "deals": int(g["deal"].nunique()),
            "plies": float(g["plies"].mean()),
            "passes": float((g["passes0"] + g["passes1"]).mean()),
            "buys": float((g["buys0"] + g["buys1"]).mean()),
            "tie_breaks": int(g["tie_break"].sum()), "tie_rate": tie.value,
            "tie_lo": tie.lo, "tie_hi": tie.hi,
            "abs_margin": float((g["score0"] - g["score1"]).abs().mean()),
            "seat0_first_to_end": float((g["first_to_end"] == 0).mean()),
        })
    return pd.DataFrame(rows)


def seat_games(games: pd.DataFrame) -> pd.DataFrame:
    """One row per game and seat: ruleset, pairing, game_id, deal, seat, bot, won, score."""
    parts = []
    for seat in (0, 1):
        parts.append(pd.DataFrame({
            "ruleset": games["ruleset"].to_numpy(), "pairing": games["pairing"].to_numpy(),
            "game_id": games["game_id"].to_numpy(), "deal": games["deal"].to_numpy(),
            "seat": seat, "bot": games[f"bot{seat}"].to_numpy(),
            "won": (games["winner"].to_numpy() == seat),
            "score": games[f"score{seat}"].to_numpy(),
        }))
    return pd.concat(parts, ignore_index=True)
