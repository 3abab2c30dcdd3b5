"""Statistics over a run's tables: DataFrame in, DataFrame out.

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

Written here rather than taken from a library: the seat-swapped pair counts, an exact McNemar
test on them (statsmodels), the design effect (from the estimator layer's per-deal spread),
the deal-weighted linear probability model of the patch table (statsmodels WLS), and a
penalised Bradley-Terry fit with a seat term (statsmodels has no ridge logit with standard
errors); each is checked against a hand-computed case or the library in tests/test_stats.py.

Tables built from events (patches, leather, bonus) take the events DataFrame or its
per-game summary (:class:`patchsim.analysis.tables.EventSummary`): the report passes the
summary, so that a run's events are never in memory at once; a DataFrame is summarised by
the same code first.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar

from patchsim.analysis import estimators as est
from patchsim.analysis.estimators import DEFAULT_MARGIN, MIN_DEALS, Estimate
from patchsim.analysis.selfplay import DISTINCT_NOTE, copied_pairings, distinct
from patchsim.analysis.tables import EventSummary, as_summary, take

Events = pd.DataFrame | EventSummary  # an events table, or its summary (analysis.tables)

ELO_PER_LOGIT = 400.0 / math.log(10.0)
NAN = float("nan")


# --- basic quantities ---------------------------------------------------------------------------
def elo(p: float | np.ndarray) -> np.ndarray:
    """Elo difference of a score rate p (400 log10(p / (1 - p)); +-inf at 1 and 0)."""
    q = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ELO_PER_LOGIT * np.log(q / (1.0 - q))


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


# --- helpers over the games table ---------------------------------------------------------------
def _groups(games: pd.DataFrame, keys: list[str]):
    """groupby in order of appearance, yielding (key tuple, frame)."""
    for key, g in games.groupby(keys, sort=False, observed=True):
        yield (key if isinstance(key, tuple) else (key,)), g


def first_bot(g: pd.DataFrame) -> str:
    """The pairing's first bot (the one in seat 0 when order is 0)."""
    row = g.iloc[0]
    return str(row["bot0"] if row["order"] == 0 else row["bot1"])


def second_bot(g: pd.DataFrame) -> str:
    row = g.iloc[0]
    return str(row["bot1"] if row["order"] == 0 else row["bot0"])


def is_self_play(g: pd.DataFrame) -> bool:
    return bool((g["bot0"] == g["bot1"]).all())


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


# --- pairings and the first seat ----------------------------------------------------------------
def pairing_table(games: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
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
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
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


def format_pairings(table: pd.DataFrame) -> str:
    """``pairing_table`` as text in the style of an engine-testing tool."""
    out = []
    for (ruleset, pairing), g in _groups(table, ["ruleset", "pairing"]):
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


def first_player_advantage(games: pd.DataFrame, margin: float = DEFAULT_MARGIN,
                           alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and pairing: the first seat's win rate (:func:`estimators.rate`: per-deal
    interval) and its verdict against 50% (:func:`estimators.verdicts`: "equivalent within
    +-margin", "differs by X [a, b], beyond +-margin" or "undecided"; ``p_value``
    its t-test over deals, ``balanced_p`` its equivalence test, both Holm-adjusted over the
    table's rows, one family of claims); the advantage in points and
    Elo; the seat-swapped pair counts with an exact McNemar p-value on the deals one seat won
    twice (split deals say nothing about the seat; see :func:`pair_counts` for deterministic
    self-play, whose game counts are of distinct games); and the design effect (how much the
    deal decides the outcome; not defined when a deal is one distinct game)."""
    games = distinct(games)
    copies = copied_pairings(games)
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
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
    # one family: every ruleset and pairing of the table is a claim of balance (Holm)
    for r, v in zip(rows, est.verdicts([r.pop("_est") for r in rows], margin, 0.5, alpha,
                                       family="holm"), strict=True):
        r.update(p_value=v.p_difference, balanced_p=v.p_equivalence,
                 verdict_kind=v.kind, verdict=v.text(100.0, " points"),
                 more_deals=v.more_deals)
    return pd.DataFrame(rows)


def _trend(kind: str, ref_rate: float, rate: float) -> str:
    """What a verdict on the change of the first-seat win rate says about the imbalance."""
    if kind == "equivalent":
        return "unchanged"
    if kind != "differs":
        return "undecided"
    before, after = ref_rate - 0.5, rate - 0.5
    if before * after < 0:
        return "changes side"
    return "grows" if abs(after) > abs(before) else "shrinks"


def skill_balance(games: pd.DataFrame, margin: float = DEFAULT_MARGIN,
                  alpha: float = 0.05) -> pd.DataFrame:
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
    changes: list[tuple[int, Estimate]] = []
    for (ruleset,), g in _groups(games, ["ruleset"]):
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
            change = est.paired_difference(ref.loc[common].to_numpy(),
                                           per_deal[k].loc[common].to_numpy(), level,
                                           est.RATE_DIFF_BOUNDS)
            changes.append((len(rows) - len(pairings) + k, change))
    if not rows:
        return pd.DataFrame(columns=cols)
    p_raw = [est.difference_pvalue(c) for _, c in changes]
    # one family: every level and ruleset of the table, for the tests of no change, of
    # equivalence and of a change beyond the margin alike (Holm)
    found = est.verdicts([c for _, c in changes], margin, 0.0, alpha, family="holm")
    ref_rate: dict[Any, float] = {}
    for r in rows:
        ref_rate.setdefault(r["ruleset"], r["rate"])
    for (i, change), p, v in zip(changes, p_raw, found, strict=True):
        r = rows[i]
        r.update(common_deals=change.deals, diff=change.value, diff_lo=change.lo,
                 diff_hi=change.hi, p=p, p_holm=v.p_difference, verdict_kind=v.kind,
                 verdict=v.text(100.0, " points"), more_deals=v.more_deals,
                 trend=_trend(v.kind, ref_rate[r["ruleset"]], r["rate"]))
    return pd.DataFrame(rows).reindex(columns=cols)


# --- scores and game length -------------------------------------------------------------------
def _deal_matrix(values: np.ndarray, deal: np.ndarray) -> np.ndarray:
    """Values as a (deals x games per deal) matrix, NaN-padded, for resampling whole deals."""
    codes, uniq = pd.factorize(np.asarray(deal))
    counts = np.bincount(codes, minlength=len(uniq))
    order = np.argsort(codes, kind="stable")
    within = np.arange(len(codes)) - np.repeat(np.cumsum(counts) - counts, counts)
    mat = np.full((len(uniq), int(counts.max()) if len(counts) else 0), np.nan)
    mat[codes[order], within] = np.asarray(values, dtype=float)[order]
    return mat


def describe_by_deal(values: np.ndarray, deal: np.ndarray, n_boot: int = 999,
                     seed: int = 0, alpha: float = 0.05) -> dict[str, float]:
    """Mean, median, quartiles and IQR, with percentile bootstrap intervals (scipy) that
    resample whole deals, so that a deal's two games stay together."""
    v = np.asarray(values, dtype=float)
    keys = ["mean", "median", "iqr"]
    out: dict[str, float] = {"n": float(len(v))}
    for k in keys + ["q1", "q3"]:
        out[k] = NAN
    for k in keys:
        out[f"{k}_lo"] = out[f"{k}_hi"] = NAN
    if len(v) == 0:
        return out
    mat = _deal_matrix(v, deal)
    # the NaN-aware functions are several times slower; only incomplete deals need them
    padded = bool(np.isnan(mat).any())
    percentile = np.nanpercentile if padded else np.percentile
    mean = np.nanmean if padded else np.mean

    def stat(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        x = mat[idx.astype(np.intp)]
        x = x.reshape(*x.shape[:-2], -1)
        q1, med, q3 = percentile(x, [25, 50, 75], axis=-1)
        return np.stack([mean(x, axis=-1), med, q3 - q1])

    q1, q3 = np.percentile(v, [25, 75])
    point = stat(np.arange(len(mat)))
    out.update(mean=float(point[0]), median=float(point[1]), iqr=float(point[2]),
               q1=float(q1), q3=float(q3))
    if len(mat) >= 2 and n_boot > 0 and np.ptp(v) > 0:
        batch = max(1, 4_000_000 // max(1, mat.size))
        res = sps.bootstrap((np.arange(len(mat)),), stat, n_resamples=n_boot,
                            vectorized=True, method="percentile", batch=batch,
                            confidence_level=1 - alpha, rng=np.random.default_rng(seed))
        for i, k in enumerate(keys):
            out[f"{k}_lo"] = float(res.confidence_interval.low[i])
            out[f"{k}_hi"] = float(res.confidence_interval.high[i])
    elif len(mat) >= 2:  # no spread at all: the statistic is the same in every resample
        for i, k in enumerate(keys):
            out[f"{k}_lo"] = out[f"{k}_hi"] = float(point[i])
    return out


def score_table(games: pd.DataFrame, n_boot: int = 999, seed: int = 0) -> pd.DataFrame:
    """Per ruleset and pairing, distributions of scores (per seat and per bot), margins
    (seat 0 - seat 1, and first bot - second bot), game length (plies) and passes: mean,
    median, quartiles and IQR with deal-resampling bootstrap intervals. Deterministic
    self-play counts each deal's game once (``n`` is then the number of distinct games)."""
    games = distinct(games)
    copies = copied_pairings(games)
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
        deal = g["deal"].to_numpy()
        s0, s1 = g["score0"].to_numpy(float), g["score1"].to_numpy(float)
        order = g["order"].to_numpy()
        series: list[tuple[str, str, np.ndarray, np.ndarray]] = [
            ("score", "seat 0", s0, deal), ("score", "seat 1", s1, deal)]
        if not is_self_play(g):
            a, b = first_bot(g), second_bot(g)
            sa = np.where(order == 0, s0, s1)
            sb = np.where(order == 0, s1, s0)
            series += [("score", a, sa, deal), ("score", b, sb, deal)]
        series.append(("margin", "seat 0 - seat 1", s0 - s1, deal))
        if not is_self_play(g):
            series.append(("margin", f"{a} - {b}", sa - sb, deal))
        series.append(("plies", "game", g["plies"].to_numpy(float), deal))
        series.append(("passes", "game", (g["passes0"] + g["passes1"]).to_numpy(float), deal))
        for quantity, group, v, dl in series:
            d = describe_by_deal(v, dl, n_boot=n_boot, seed=seed)
            rows.append({"ruleset": ruleset, "pairing": pairing,
                         "distinct_games": str(pairing) not in copies, "quantity": quantity,
                         "group": group, **d})
    return pd.DataFrame(rows)


def game_summary(games: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and pairing: game length, passes, buys, how often the tie-break decided
    (:func:`estimators.rate`), the bonus rate and who reached the end first. Deterministic
    self-play counts each deal's game once (``distinct_games`` False)."""
    games = distinct(games)
    copies = copied_pairings(games)
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
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


# --- per-game seat rows -------------------------------------------------------------------------
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


def _ruleset_lookup(rulesets: Mapping[str, Any] | None, name: str) -> Any | None:
    return None if rulesets is None else rulesets.get(name)


# --- patches ------------------------------------------------------------------------------------
def _lpm_difference(won: np.ndarray, flag: np.ndarray, groups: np.ndarray,
                    alpha: float) -> tuple[float, float, float, float]:
    """P(win | flag) - P(win | not flag), each rate as :func:`estimators.rate` measures it
    (the mean over deals of the per-deal rates), with a deal-clustered interval and p-value.

    The estimator layer has paired differences only, and a seat that bought a patch and one
    that did not are not pairs, so this is the slope of a linear probability model with
    cluster-robust errors (statsmodels WLS): each row is weighted by one over the number of
    rows of its group in its deal, which makes each group's fitted mean its per-deal rate,
    so that the slope is exactly the difference of the two rates the table shows."""
    import statsmodels.api as sm  # heavy; only the patch table needs it

    if flag.all() or not flag.any() or len(np.unique(groups)) < 2:
        return NAN, NAN, NAN, NAN
    x = np.column_stack([np.ones(len(flag)), flag.astype(float)])
    codes = pd.factorize(groups)[0]
    cell = 2 * codes + flag.astype(np.int64)  # (deal, group)
    weights = 1.0 / np.bincount(cell)[cell]
    with warnings.catch_warnings():
        # few deals make statsmodels warn about the cluster count; the interval is still
        # the right one to show, and the report flags small runs itself
        warnings.simplefilter("ignore")
        fit = sm.WLS(won.astype(float), x, weights=weights).fit(
            cov_type="cluster", cov_kwds={"groups": codes})
    lo, hi = fit.conf_int(alpha)[1]
    p = float(fit.pvalues[1])
    return float(fit.params[1]), float(lo), float(hi), p if np.isfinite(p) else NAN


def patch_table(games: pd.DataFrame, events: Events,
                rulesets: Mapping[str, Any] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and patch (pooled over pairings): how often it is bought, when (track
    position before the buy), by which seat; the win rate of a seat that bought it and of a
    seat that did not (:func:`estimators.rate`); their difference with a cluster-robust
    interval and p-value (:func:`_lpm_difference`), Holm-corrected over the patches; and a
    ``flag``, "buyers win more" / "buyers win less" where that difference is significant.
    This is an association in the bots' play (they buy for reasons, and cheap patches are
    bought by the player who is behind), not a price: whether a patch is over- or
    underpriced is the causal question of :mod:`patchsim.experiments.prices`.

    When the run has self-play games, only those are used: in a game between two different
    bots, the patches the stronger bot prefers would look like winning buys for that reason
    alone.
    Deterministic self-play counts each deal's game once.
    """
    games = distinct(games)
    self_play = games["bot0"] == games["bot1"]
    if self_play.any() and not self_play.all():
        games = games[self_play]
    ev = as_summary(events, games)
    rows = []
    for (ruleset,), g in _groups(games, ["ruleset"]):
        n = len(g)
        at = ev.rows(g["game_id"].to_numpy())
        # one row per game and seat: seat 0 of every game, then seat 1 (as seat_games)
        winner = g["winner"].to_numpy()
        won = np.concatenate([winner == 0, winner == 1])
        deal = np.concatenate([g["deal"].to_numpy()] * 2)
        rs = _ruleset_lookup(rulesets, ruleset)
        if rs is not None:
            ids = [p.id for p in rs.patches]
        else:
            ids = sorted(p for p in ev.patches
                         if (take(ev.buy_seat, at, ev.patch_slot(p), -1) >= 0).any())
        start: list[dict] = []
        for pid in ids:
            slot = ev.patch_slot(pid)
            seat = take(ev.buy_seat, at, slot, -1)
            has = seat >= 0
            bought = np.concatenate([seat == 0, seat == 1])
            rb = est.rate(won[bought], deal[bought], 1 - alpha)
            ro = est.rate(won[~bought], deal[~bought], 1 - alpha)
            diff, dlo, dhi, p = _lpm_difference(won, bought, deal, alpha)
            pos = take(ev.buy_pos, at, slot)[has].astype(float)
            k = int(has.sum())
            spec = rs.patch(pid) if rs is not None else None
            start.append({
                "ruleset": ruleset, "patch": pid,
                "cost": spec.cost if spec else (ev.patch_cost.get((ruleset, pid), NAN)
                                                if k else NAN),
                "time": spec.time if spec else NAN, "income": spec.income if spec else NAN,
                "squares": spec.size if spec else NAN,
                "games": n, "bought": k, "buy_rate": k / n if n else NAN,
                "by_seat0": int((seat == 0).sum()), "by_seat1": int((seat == 1).sum()),
                "pos_mean": float(pos.mean()) if len(pos) else NAN,
                "pos_median": float(np.median(pos)) if len(pos) else NAN,
                "pos_q1": float(np.percentile(pos, 25)) if len(pos) else NAN,
                "pos_q3": float(np.percentile(pos, 75)) if len(pos) else NAN,
                "buyer_win": rb.value, "buyer_lo": rb.lo, "buyer_hi": rb.hi,
                "other_win": ro.value, "other_lo": ro.lo, "other_hi": ro.hi,
                "diff": diff, "diff_lo": dlo, "diff_hi": dhi, "p_value": p,
            })
        part = pd.DataFrame(start)
        if len(part):
            part["p_holm"] = est.holm(part["p_value"])
            # an association, worded as one: it says who won, not what the price should be
            part["flag"] = np.where(part["p_holm"] < alpha,
                                    np.where(part["diff"] > 0, "buyers win more",
                                             "buyers win less"), "")
            part = part.sort_values("diff", ascending=False, na_position="last")
        rows.append(part)
    cols = ["ruleset", "patch", "cost", "time", "income", "squares", "games", "bought",
            "buy_rate", "by_seat0", "by_seat1", "pos_mean", "pos_median", "pos_q1", "pos_q3",
            "buyer_win", "buyer_lo", "buyer_hi", "other_win", "other_lo", "other_hi", "diff",
            "diff_lo", "diff_hi", "p_value", "p_holm", "flag"]
    out = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=cols)
    return out.reindex(columns=cols)


def patch_bots(events: Events, games: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per ruleset, patch and bot: buys, the bot's share of the patch's buys, mean position.
    With ``games``, over those games only, deterministic self-play counting each deal's game
    once (the report passes them); without, over every game of the events."""
    cols = ["ruleset", "patch", "bot", "buys", "share", "pos_mean"]
    if games is None:
        t = as_summary(events).bot_buys
    else:
        t = _bot_buys(distinct(games), as_summary(events, games))
    if t.empty:
        return pd.DataFrame(columns=cols)
    t = t.assign(pos_mean=t["pos_sum"] / t["buys"])
    t["share"] = t["buys"] / t.groupby(["ruleset", "patch"])["buys"].transform("sum")
    return t[cols]


def _bot_buys(games: pd.DataFrame, ev: EventSummary) -> pd.DataFrame:
    """``EventSummary.bot_buys`` (buys and the sum of their positions per ruleset, patch and
    bot) over the given games, from the per-game buy arrays. Counted with integer codes and
    ``bincount``: a row per buy (tens of millions in a large run) would take gigabytes."""
    cols = ["ruleset", "patch", "bot", "buys", "pos_sum"]
    at = ev.rows(games["game_id"].to_numpy())
    r_code, r_names = pd.factorize(games["ruleset"].to_numpy())
    b_code, b_names = pd.factorize(np.concatenate([games["bot0"].to_numpy(),
                                                   games["bot1"].to_numpy()]))
    bot0, bot1 = b_code[:len(games)], b_code[len(games):]
    nb = len(b_names)
    cells = len(r_names) * nb
    rows = []
    for pid in ev.patches:
        slot = ev.patch_slot(pid)
        seat = take(ev.buy_seat, at, slot, -1)
        ok = seat >= 0
        if not ok.any():
            continue
        key = r_code[ok] * nb + np.where(seat == 0, bot0, bot1)[ok]
        buys = np.bincount(key, minlength=cells)
        pos = np.bincount(key, weights=take(ev.buy_pos, at, slot)[ok].astype(np.float64),
                          minlength=cells)
        for k in np.flatnonzero(buys):
            rows.append((str(r_names[k // nb]), pid, str(b_names[k % nb]), int(buys[k]),
                         int(round(pos[k]))))
    if not rows:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame(rows, columns=cols).sort_values(["ruleset", "patch", "bot"],
                                                        ignore_index=True)


# --- leather patches ----------------------------------------------------------------------------
@dataclass
class _Marks:
    """The leather marks of one ruleset's games (those at which anything happened in them,
    in track order: rank 1 is the first) and per game and mark what happened there."""

    marks: list[int]
    seat: np.ndarray  # (games, marks): the claimer, -1 if nobody claimed it
    lead: np.ndarray
    opp: np.ndarray
    placed: np.ndarray
    useful: np.ndarray  # placed, and a placement filled an isolated hole
    row: np.ndarray  # (games, marks): the game has a row in leather_games (claim or loss)


def _marks(ev: EventSummary, game_ids: np.ndarray) -> _Marks:
    at = ev.rows(game_ids)
    ok = at >= 0
    n, m = len(at), len(ev.marks)

    def cols(a: np.ndarray, fill: Any) -> np.ndarray:
        out = np.full((n, m), fill, dtype=a.dtype)
        out[ok] = a[at[ok]]
        return out

    seat = cols(ev.claim_seat, -1)
    row = (seat >= 0) | cols(ev.lost, False)
    keep = np.flatnonzero(row.any(axis=0))  # marks at which something happened
    placed = cols(ev.placed, False)[:, keep]
    return _Marks([int(x) for x in ev.marks[keep]], seat[:, keep],
                  cols(ev.claim_lead, 0)[:, keep], cols(ev.claim_opp, -1)[:, keep], placed,
                  placed & cols(ev.hole, False)[:, keep], row[:, keep])


def leather_games(games: pd.DataFrame, events: Events) -> pd.DataFrame:
    """One row per game and leather mark that anything happened at: who claimed it, the
    claimer's score lead, whether it was placed in an isolated one-square hole, whether it was
    lost (no empty square), the claimer's win, and the mark's rank on the track (1 = first)."""
    cols = ["ruleset", "pairing", "game_id", "deal", "mark", "rank", "claimed", "seat",
            "score_lead", "opp_position", "placed", "useful", "lost", "claimer_won"]
    ev = as_summary(events, games)
    parts = []
    for (_ruleset,), g in _groups(games, ["ruleset"]):
        mk = _marks(ev, g["game_id"].to_numpy())
        for j, mark in enumerate(mk.marks):
            sel = np.flatnonzero(mk.row[:, j])
            seat = mk.seat[sel, j]
            claimed = seat >= 0
            part = g.iloc[sel][["ruleset", "pairing", "game_id", "deal"]].reset_index(drop=True)
            winner = g["winner"].to_numpy()[sel]
            part = part.assign(
                mark=mark, rank=j + 1, claimed=claimed,
                seat=np.where(claimed, seat, np.nan),
                score_lead=np.where(claimed, mk.lead[sel, j], np.nan),
                opp_position=np.where(claimed, mk.opp[sel, j], np.nan),
                placed=mk.placed[sel, j], useful=mk.useful[sel, j], lost=~claimed,
                claimer_won=np.where(claimed, winner == seat, np.nan))
            parts.append(part)
    if not parts:
        return pd.DataFrame(columns=cols)
    return (pd.concat(parts, ignore_index=True)[cols]
            .sort_values(["ruleset", "game_id", "mark"], ignore_index=True))


def leather_table(games: pd.DataFrame, events: Events,
                  alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and leather mark (pooled over pairings): games, how often it was claimed,
    by seat 0, by the player leading / trailing on score at the claim; how often it filled an
    isolated one-square hole ("useful": per game, lost patches counting as not useful), an
    ordinary square, or was lost; the claimer's win rate. Rates and intervals are
    :func:`estimators.rate` over deals; deterministic self-play counts each deal's game
    once."""
    games = distinct(games)
    ev = as_summary(events, games)
    rows = []
    for (ruleset,), g in _groups(games, ["ruleset"]):
        n = len(g)
        gid, deal = g["game_id"].to_numpy(), g["deal"].to_numpy()
        winner = g["winner"].to_numpy()
        by_id = np.argsort(gid, kind="stable")  # claims are taken in game-id order
        mk = _marks(ev, gid)
        for j, mark in enumerate(mk.marks):
            # every game passes every mark: a game with no row at a mark has no claim there
            useful = mk.row[:, j] & mk.useful[:, j]
            r = est.rate(useful.astype(float), deal, 1 - alpha)
            ci = by_id[mk.seat[by_id, j] >= 0]
            seat, lead = mk.seat[ci, j], mk.lead[ci, j]
            c_useful, c_placed = mk.useful[ci, j], mk.placed[ci, j]
            cw = est.rate((winner[ci] == seat).astype(float), deal[ci], 1 - alpha)
            k = len(ci)
            rows.append({
                "ruleset": ruleset, "mark": mark, "rank": j + 1,
                "games": n, "claimed": k, "claim_rate": k / n,
                "by_seat0": int((seat == 0).sum()),
                "by_leader": int((lead > 0).sum()),
                "by_trailer": int((lead < 0).sum()),
                "by_level": int((lead == 0).sum()),
                "lead_mean": float(lead.sum(dtype=np.float64) / k) if k else NAN,
                "useful": int(useful.sum()), "useful_rate": r.value,
                "useful_lo": r.lo, "useful_hi": r.hi,
                "useful_of_claimed": int(c_useful.sum()) / k if k else NAN,
                "ordinary": int((c_placed & ~c_useful).sum()),
                "lost": int((mk.row[:, j] & (mk.seat[:, j] < 0)).sum()),
                "claimer_win": cw.value, "claimer_lo": cw.lo, "claimer_hi": cw.hi,
            })
    cols = ["ruleset", "mark", "rank", "games", "claimed", "claim_rate", "by_seat0",
            "by_leader", "by_trailer", "by_level", "lead_mean", "useful", "useful_rate",
            "useful_lo", "useful_hi", "useful_of_claimed", "ordinary", "lost", "claimer_win",
            "claimer_lo", "claimer_hi"]
    return pd.DataFrame(rows, columns=cols)


def first_leather_useless(games: pd.DataFrame, events: Events, center: float = 0.5,
                          margin: float = 0.10, alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and pairing: how often the first leather patch was useless (it filled no
    isolated one-square hole, or was lost: rank 1 of :func:`leather_table` on the pairing's
    games), as :func:`estimators.rate` over deals, with :func:`estimators.verdicts` against
    ``center +- margin`` (the publisher's "about half of the games"). Deterministic
    self-play counts each deal's game once."""
    cols = ["ruleset", "pairing", "distinct_games", "mark", "games", "deals", "rate", "lo",
            "hi", "verdict_kind", "verdict", "more_deals"]
    games = distinct(games)
    copies = copied_pairings(games)
    ev = as_summary(events, games)
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
        mk = _marks(ev, g["game_id"].to_numpy())
        if not mk.marks:
            continue
        useless = ~(mk.row[:, 0] & mk.useful[:, 0])
        e = est.rate(useless.astype(float), g["deal"].to_numpy(), 1 - alpha)
        rows.append({"ruleset": ruleset, "pairing": str(pairing),
                     "distinct_games": str(pairing) not in copies, "mark": mk.marks[0],
                     "games": len(g), "deals": e.deals, "rate": e.value, "lo": e.lo,
                     "hi": e.hi, "_est": e})
    # one family over the rulesets and pairings (Holm)
    for r, v in zip(rows, est.verdicts([r.pop("_est") for r in rows], margin, center, alpha,
                                       family="holm"), strict=True):
        r.update(verdict_kind=v.kind, verdict=v.text(100.0, " points"),
                 more_deals=v.more_deals)
    return pd.DataFrame(rows, columns=cols)


def leather_game_values(games: pd.DataFrame, events: Events) -> tuple[np.ndarray, np.ndarray]:
    """Per game (in the order of ``games``): whether the first leather patch of its ruleset
    (rank 1 in ``leather_games``) filled a hole, and the share of its leather patches that
    did (over the marks with a claim or a loss); NaN where the game has no such row."""
    ev = as_summary(events, games)
    first = np.full(len(games), np.nan)
    share = np.full(len(games), np.nan)
    pos = np.arange(len(games))
    for (_ruleset,), g in _groups(games.assign(_pos=pos), ["ruleset"]):
        mk = _marks(ev, g["game_id"].to_numpy())
        if not mk.marks:
            continue
        at = g["_pos"].to_numpy()
        first[at] = np.where(mk.row[:, 0], mk.useful[:, 0], np.nan)
        rows = mk.row.sum(axis=1)
        hits = (mk.row & mk.useful).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            share[at] = np.where(rows > 0, hits / rows, np.nan)
    return first, share


# --- the 7x7 bonus ------------------------------------------------------------------------------
def bonus_events(games: pd.DataFrame, events: Events) -> pd.DataFrame:
    """One row per bonus claim: ruleset, pairing, game_id, deal, seat, track position (of the
    claimer when it was claimed) and the game's ply count (events give no ply: seq is the
    event's index in the game). Deterministic self-play counts each deal's game once."""
    games = distinct(games)
    ev = as_summary(events, games)
    # the position of each summary row in ``games``; claims keep their stored order
    where = np.full(len(ev.game_ids), -1, dtype=np.int64)
    at = ev.rows(games["game_id"].to_numpy())
    where[at[at >= 0]] = np.flatnonzero(at >= 0)
    k = where[ev.bonus_row]
    ok = k >= 0
    out = games.iloc[k[ok]][["ruleset", "pairing", "game_id", "deal"]].reset_index(drop=True)
    return out.assign(seat=ev.bonus_seat[ok], position=ev.bonus_pos[ok], seq=ev.bonus_seq[ok])


def bonus_table(games: pd.DataFrame, events: Events,
                rulesets: Mapping[str, Any] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and pairing: how often the 7x7 bonus was claimed (per-deal interval), by
    which seat, when (the claimer's track position), the claimer's win rate, and how often it
    changed the winner: the holder won by fewer points than the bonus is worth (margin <
    bonus points), so without it they would have lost (a margin equal to the bonus would have
    been a tie, left to the tie-break, and is not counted). Rates are :func:`estimators.rate`
    over deals; deterministic self-play counts each deal's game once."""
    games = distinct(games)
    copies = copied_pairings(games)
    be = bonus_events(games, events)
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
        rs = _ruleset_lookup(rulesets, ruleset)
        points = (rs.bonus_points if rs is not None and rs.bonus_square is not None
                  else (0 if rs is not None else 7))
        deal = g["deal"].to_numpy()
        has0, has1 = g["bonus0"].to_numpy(bool), g["bonus1"].to_numpy(bool)
        claimed = has0 | has1
        r = est.rate(claimed.astype(float), deal, 1 - alpha)
        holder = np.where(has0, 0, np.where(has1, 1, -1))
        winner = g["winner"].to_numpy()
        margin = np.abs(g["score0"].to_numpy() - g["score1"].to_numpy())
        hw = est.rate((winner[claimed] == holder[claimed]).astype(float), deal[claimed],
                      1 - alpha)
        changed = claimed & (winner == holder) & (margin < points)
        rc = est.rate(changed.astype(float), deal, 1 - alpha)
        pos = be.loc[(be["ruleset"] == ruleset) & (be["pairing"] == pairing), "position"]
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "self_play": is_self_play(g),
            "distinct_games": str(pairing) not in copies, "points": points, "games": len(g),
            "claimed": int(claimed.sum()), "claim_rate": r.value, "claim_lo": r.lo,
            "claim_hi": r.hi, "by_seat0": int(has0.sum()), "by_seat1": int(has1.sum()),
            "pos_mean": float(pos.mean()) if len(pos) else NAN,
            "pos_median": float(pos.median()) if len(pos) else NAN,
            "holder_win": hw.value, "holder_lo": hw.lo, "holder_hi": hw.hi,
            "changed": int(changed.sum()), "changed_rate": rc.value,
            "changed_lo": rc.lo, "changed_hi": rc.hi,
        })
    return pd.DataFrame(rows)


# --- ratings ------------------------------------------------------------------------------------
def _fit_logit(x: np.ndarray, y: np.ndarray, precision: np.ndarray,
               tol: float = 1e-10, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """MAP of a logistic regression with a Gaussian prior of the given precision matrix
    (zero: maximum likelihood), by Newton's method; returns (beta, inverse Hessian)."""
    beta = np.zeros(x.shape[1])
    for _ in range(max_iter):
        mu = 1.0 / (1.0 + np.exp(-(x @ beta)))
        grad = x.T @ (y - mu) - precision @ beta
        hess = (x * (mu * (1.0 - mu))[:, None]).T @ x + precision
        step = np.linalg.solve(hess, grad)
        beta = beta + step
        if np.max(np.abs(step)) < tol:
            break
    mu = 1.0 / (1.0 + np.exp(-(x @ beta)))
    hess = (x * (mu * (1.0 - mu))[:, None]).T @ x + precision
    return beta, np.linalg.inv(hess)


def cluster_sandwich(x: np.ndarray, resid: np.ndarray, hess_inv: np.ndarray,
                     groups: np.ndarray) -> np.ndarray:
    """Cluster-robust (CRV1) covariance H^-1 (sum_g s_g s_g') H^-1 with the small-sample
    factor G/(G-1) (n-1)/(n-k), as statsmodels' ``cov_type="cluster"`` computes it."""
    codes, uniq = pd.factorize(groups)
    g = len(uniq)
    n, k = x.shape
    if g < 2 or n <= k:
        return np.full((k, k), np.nan)
    scores = np.zeros((g, k))
    np.add.at(scores, codes, x * resid[:, None])
    meat = scores.T @ scores
    return hess_inv @ meat @ hess_inv * (g / (g - 1.0) * (n - 1.0) / (n - k))


def ratings(games: pd.DataFrame, prior_elo: float | None = 400.0, anchor: str | None = None,
            cluster: bool = True, alpha: float = 0.05) -> pd.DataFrame:
    """Bradley-Terry (Elo) ratings of the bots in a run, with a seat term:
    P(seat 0 wins) = logistic(h + r[bot0] - r[bot1]).

    The fit is a logistic regression with a weak Gaussian prior (sd ``prior_elo`` Elo on every
    rating around their mean and on the seat term; None: plain maximum likelihood), so that a
    100% result gives a large finite rating instead of diverging. Ratings are relative to the
    bots' average (or to ``anchor``). Standard errors: with ``cluster`` the larger of the
    model-based one and the deal-clustered sandwich one (a deal's two games are not
    independent), else model-based. Columns: bot, elo, elo_lo, elo_hi, elo_se, games (against
    other bots), wins, score (their share). ``attrs`` holds the seat term (seat_elo,
    seat_elo_lo, seat_elo_hi, seat_elo_se)."""
    bots = sorted(set(games["bot0"].unique()) | set(games["bot1"].unique()))
    k = len(bots)
    idx = {b: i for i, b in enumerate(bots)}
    i0 = pd.Index(bots).get_indexer(games["bot0"])
    i1 = pd.Index(bots).get_indexer(games["bot1"])
    y = (games["winner"].to_numpy() == 0).astype(float)
    n = len(games)
    # reference coding (the first bot fixed at 0) keeps the likelihood identifiable
    full = np.zeros((n, k))
    full[np.arange(n), i0] += 1.0
    full[np.arange(n), i1] -= 1.0
    x = np.column_stack([np.ones(n), full[:, 1:]])
    precision = np.zeros((k, k))
    if prior_elo is not None:
        tau = 1.0 / (prior_elo / ELO_PER_LOGIT) ** 2
        # exchangeable prior sum((r - mean r)^2) / sd^2 written in reference coordinates,
        # so that it does not depend on which bot is the reference; plus one on the seat term
        centre = np.eye(k) - 1.0 / k
        embed = np.vstack([np.zeros((1, k - 1)), np.eye(k - 1)])
        precision[1:, 1:] = tau * embed.T @ centre @ embed
        precision[0, 0] = tau
    beta, cov = _fit_logit(x, y, precision)
    if cluster and n and "deal" in games.columns:
        mu = 1.0 / (1.0 + np.exp(-(x @ beta)))
        # clusters: (ruleset, deal), numbered in order of appearance as factorize would
        # number their text keys, without building a string per game
        keys = ["ruleset", "deal"] if "ruleset" in games.columns else ["deal"]
        groups = games.groupby(keys, sort=False, observed=True).ngroup().to_numpy()
        robust = cluster_sandwich(x, y - mu, cov, groups)
    else:
        robust = np.full_like(cov, np.nan)
    # map (h, r_1..r_k-1) to all k ratings relative to the average (or the anchor)
    to_r = np.zeros((k, k))
    to_r[1:, 1:] = np.eye(k - 1)
    ref = (np.full((k, k), 1.0 / k) if anchor is None
           else np.outer(np.ones(k), np.eye(k)[idx[anchor]]))
    tr = (np.eye(k) - ref) @ to_r
    r = tr @ beta
    se = np.sqrt(np.clip(np.diag(tr @ cov @ tr.T), 0, None))
    se_rob = np.sqrt(np.clip(np.diag(tr @ robust @ tr.T), 0, None))
    se = np.fmax(se, se_rob)  # fmax ignores a NaN robust value
    h = beta[0]
    hse = float(np.fmax(math.sqrt(cov[0, 0]), math.sqrt(max(robust[0, 0], 0.0))
                        if np.isfinite(robust[0, 0]) else np.nan))
    z = est.z_quantile(1 - alpha / 2)
    wins = np.zeros(k)
    played = np.zeros(k)
    other = i0 != i1
    won = games["winner"].to_numpy()
    for seat, ids in ((0, i0), (1, i1)):
        np.add.at(played, ids[other], 1)
        np.add.at(wins, ids[other], (won[other] == seat).astype(float))
    out = pd.DataFrame({
        "bot": bots, "elo": r * ELO_PER_LOGIT, "elo_lo": (r - z * se) * ELO_PER_LOGIT,
        "elo_hi": (r + z * se) * ELO_PER_LOGIT, "elo_se": se * ELO_PER_LOGIT,
        "games": played.astype(int), "wins": wins.astype(int),
        "score": np.divide(wins, played, out=np.full(k, np.nan), where=played > 0),
    }).sort_values("elo", ascending=False, ignore_index=True)
    out.attrs.update(seat_elo=float(h * ELO_PER_LOGIT),
                     seat_elo_lo=float((h - z * hse) * ELO_PER_LOGIT),
                     seat_elo_hi=float((h + z * hse) * ELO_PER_LOGIT),
                     seat_elo_se=float(hse * ELO_PER_LOGIT), prior_elo=prior_elo)
    return out


# --- number formatting shared by the report and the command line --------------------------------
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
