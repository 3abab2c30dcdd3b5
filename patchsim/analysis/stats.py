"""Statistics over a run's tables: DataFrame in, DataFrame out.

The unit of analysis is the *deal*: every deal is played twice with the seats swapped, so the
two games of a deal are not independent (with deterministic bots in self-play they are the
same game). Rates therefore come with two variances: the per-game (binomial) one and the
per-deal (cluster-robust) one; their ratio, the design effect, says how much of the outcome
the deal decides, and intervals use the per-deal one.

Estimators that statsmodels or scipy provide are taken from there (Wilson intervals, exact
McNemar tests, TOST, cluster-robust regression, bootstrap, Holm correction). Written here:
the cluster variance of a rate with a weak prior, the seat-swapped pair counts, and a
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
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from patchsim.analysis.selfplay import distinct_games
from patchsim.analysis.tables import EventSummary, as_summary, take

Events = pd.DataFrame | EventSummary  # an events table, or its summary (analysis.tables)

Z95 = 1.959963984540054
ELO_PER_LOGIT = 400.0 / math.log(10.0)
MIN_DEALS = 10  # below this many deals a table row is flagged "too few games"
NAN = float("nan")


# --- basic estimators -------------------------------------------------------------------------
def wilson(successes: float | np.ndarray, n: float | np.ndarray,
           alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (vectorised; NaN where n is 0)."""
    s = np.asarray(successes, dtype=float)
    nn = np.asarray(n, dtype=float)
    safe = np.where(nn > 0, nn, 1.0)
    lo, hi = proportion_confint(np.where(nn > 0, s, 0.0), safe, alpha=alpha, method="wilson")
    lo = np.where(nn > 0, lo, np.nan)
    hi = np.where(nn > 0, hi, np.nan)
    return np.asarray(lo), np.asarray(hi)


def elo(p: float | np.ndarray) -> np.ndarray:
    """Elo difference of a score rate p (400 log10(p / (1 - p)); +-inf at 1 and 0)."""
    q = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ELO_PER_LOGIT * np.log(q / (1.0 - q))


def clustered_rate(y: np.ndarray | pd.Series, cluster: np.ndarray | pd.Series,
                   alpha: float = 0.05) -> dict[str, float]:
    """A rate over games grouped in deals.

    Returns the estimate ``rate``; ``var_game`` = p(1 - p), the per-game variance if the games
    were independent; ``var_deal``, the cluster-robust variance in the same per-game units
    (n times the variance of the estimate); their ratio ``deff`` (the design effect: above 1
    when a deal's games agree, below 1 when they cancel); ``lo``/``hi``, a Wilson interval on
    the effective number of games n / deff; and ``lo_game``/``hi_game``, the naive per-game
    Wilson interval. The interval's variance includes a weak prior of two imaginary deals, one
    all successes and one all failures, so that it neither collapses when every deal is split
    nor when every game is won.
    """
    yv = np.asarray(y, dtype=float)
    out = {"n": float(len(yv)), "deals": 0.0, "successes": NAN, "rate": NAN, "lo": NAN,
           "hi": NAN, "lo_game": NAN, "hi_game": NAN, "var_game": NAN, "var_deal": NAN,
           "deff": NAN, "n_eff": NAN, "se": NAN}
    n = len(yv)
    if n == 0:
        return out
    codes, uniq = pd.factorize(np.asarray(cluster))
    d = len(uniq)
    s = np.bincount(codes, weights=yv, minlength=d)
    m = np.bincount(codes, minlength=d).astype(float)
    total = float(yv.sum())
    p = total / n
    lo_g, hi_g = wilson(total, n, alpha)
    out.update(deals=float(d), successes=total, rate=p, lo_game=float(lo_g),
               hi_game=float(hi_g), var_game=p * (1 - p))
    if d >= 2:
        var_deal = d / (d - 1) * float(np.sum((s - p * m) ** 2)) / n
        out["var_deal"] = var_deal
        out["se"] = math.sqrt(var_deal / n)
        if p * (1 - p) > 0:
            out["deff"] = var_deal / (p * (1 - p))
    # interval: the same cluster variance with two pseudo-deals of the mean size added
    mbar = n / d
    ps = (total + mbar) / (n + 2 * mbar)
    resid = np.concatenate([s - ps * m, [mbar * (1 - ps), -mbar * ps]])
    dp = d + 2
    var_mean = dp / (dp - 1) * float(np.sum(resid**2)) / (n + 2 * mbar) ** 2
    n_eff = ps * (1 - ps) / var_mean
    lo, hi = wilson(p * n_eff, n_eff, alpha)
    out.update(lo=float(lo), hi=float(hi), n_eff=n_eff)
    return out


def deal_means(values: np.ndarray | pd.Series, deal: np.ndarray | pd.Series) -> np.ndarray:
    """The mean of ``values`` within each deal (one number per deal)."""
    v = pd.Series(np.asarray(values, dtype=float))
    return v.groupby(np.asarray(deal), sort=True).mean().to_numpy()


def with_prior(x: np.ndarray) -> np.ndarray:
    """Per-deal rates plus two imaginary deals half a game either side of their mean: the
    mean is unchanged, but a small sample with no spread no longer looks certain."""
    x = np.asarray(x, dtype=float)
    m = float(x.mean()) if len(x) else 0.0
    return np.concatenate([x, [m - 0.5, m + 0.5]])


def tost_mean(x: np.ndarray, low: float, upp: float, prior: bool = True) -> float:
    """TOST p-value that the mean of per-deal rates x lies in (low, upp) (statsmodels
    ``ttost_mean``), by default with the weak prior of :func:`with_prior`; NaN with fewer
    than two deals. Without the prior, equal values give an exact 0 or 1."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return NAN
    if prior:
        x = with_prior(x)
    elif np.ptp(x) == 0:  # no spread: the t statistic is infinite, the answer is known
        return 0.0 if low < x[0] < upp else 1.0
    return float(DescrStatsW(x).ttost_mean(low, upp)[0])


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Exact McNemar p-value from the two discordant counts (statsmodels)."""
    if only_first + only_second == 0:
        return 1.0
    table = [[0, only_first], [only_second, 0]]
    return float(mcnemar(table, exact=True).pvalue)


def holm(pvalues: np.ndarray | pd.Series) -> np.ndarray:
    """Holm-adjusted p-values (statsmodels), NaN kept where the input is NaN."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="holm")[1]
    return out


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


def pair_counts(win: np.ndarray, deal: np.ndarray) -> tuple[int, int, int]:
    """Over complete seat-swapped deals, how many a side won twice, once, never."""
    s = pd.Series(np.asarray(win, dtype=float)).groupby(np.asarray(deal))
    k, n = s.sum(), s.count()
    full = n == 2
    return int((k[full] == 2).sum()), int((k[full] == 1).sum()), int((k[full] == 0).sum())


# --- pairings and the first seat ----------------------------------------------------------------
def pairing_table(games: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and pairing, lines like an engine-testing tool: the first bot in the first
    seat, in the second seat, pooled (not for self-play, where it is 50% by construction), and
    first seat against second seat. Seat lines have Wilson intervals; pooled lines have
    per-deal (paired) intervals, the seat-swapped pair counts (2-0, 1-1, 0-2), Elo and LOS."""
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
        a, b = first_bot(g), second_bot(g)
        selfp = is_self_play(g)
        a_win = (g["winner"].to_numpy() == g["order"].to_numpy()).astype(float)
        deal = g["deal"].to_numpy()
        base = {"ruleset": ruleset, "pairing": pairing, "self_play": selfp}
        for order, line in ((0, "first seat"), (1, "second seat")):
            sel = g["order"].to_numpy() == order
            n, w = int(sel.sum()), int(a_win[sel].sum())
            lo, hi = wilson(w, n, alpha)
            rows.append({**base, "line": line, "bot": a, "opponent": b, "games": n,
                         "wins": w, "losses": n - w, "win_rate": w / n if n else NAN,
                         "lo": float(lo), "hi": float(hi)})
        lines = [] if selfp else [("pooled", a, b, a_win)]
        lines.append(("seat 0 vs seat 1", "seat 0", "seat 1",
                      (g["winner"].to_numpy() == 0).astype(float)))
        for line, x, y, win in lines:
            r = clustered_rate(win, deal, alpha)
            two, one, zero = pair_counts(win, deal)
            se = r["se"]
            los = float(sps.norm.cdf((r["rate"] - 0.5) / se)) if se and se > 0 else NAN
            rows.append({**base, "line": line, "bot": x, "opponent": y, "games": int(r["n"]),
                         "wins": int(r["successes"]), "losses": int(r["n"] - r["successes"]),
                         "win_rate": r["rate"], "lo": r["lo"], "hi": r["hi"],
                         "lo_game": r["lo_game"], "hi_game": r["hi_game"],
                         "deals": int(r["deals"]), "pairs_2_0": two, "pairs_1_1": one,
                         "pairs_0_2": zero, "elo": float(elo(r["rate"])),
                         "elo_lo": float(elo(r["lo"])), "elo_hi": float(elo(r["hi"])),
                         "los": los})
    return pd.DataFrame(rows)


def format_pairings(table: pd.DataFrame) -> str:
    """``pairing_table`` as text in the style of an engine-testing tool."""
    out = []
    for (ruleset, pairing), g in _groups(table, ["ruleset", "pairing"]):
        out.append(f"{ruleset}: {pairing}")
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


def first_player_advantage(games: pd.DataFrame, margin: float = 0.02,
                           alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and pairing: the first seat's win rate with a per-deal (paired) 95%
    interval and the naive per-game one; the advantage in points and Elo; the exact McNemar
    p-value of "no seat advantage" (deals won twice by seat 0 against deals won twice by seat
    1; split deals carry no information about the seat); a TOST p-value for "balanced within
    +-margin" (per-deal rates with the weak prior of ``with_prior``); and how much the deal
    decides the outcome: per-game and per-deal variances, the design effect and the
    intra-deal correlation (deff - 1 for pairs)."""
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
        win = (g["winner"].to_numpy() == 0).astype(float)
        deal = g["deal"].to_numpy()
        r = clustered_rate(win, deal, alpha)
        both0, split, both1 = pair_counts(win, deal)
        x = deal_means(win, deal)
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "self_play": is_self_play(g),
            "games": int(r["n"]), "deals": int(r["deals"]), "seat0_wins": int(r["successes"]),
            "rate": r["rate"], "lo": r["lo"], "hi": r["hi"],
            "lo_game": r["lo_game"], "hi_game": r["hi_game"],
            "adv_pp": 100 * (r["rate"] - 0.5), "adv_lo_pp": 100 * (r["lo"] - 0.5),
            "adv_hi_pp": 100 * (r["hi"] - 0.5),
            "elo": float(elo(r["rate"])), "elo_lo": float(elo(r["lo"])),
            "elo_hi": float(elo(r["hi"])),
            "p_value": mcnemar_exact(both0, both1),
            "balanced_p": tost_mean(x, 0.5 - margin, 0.5 + margin), "margin": margin,
            "seat0_both": both0, "split": split, "seat1_both": both1,
            "var_game": r["var_game"], "var_deal": r["var_deal"], "deff": r["deff"],
            "deal_icc": r["deff"] - 1 if np.isfinite(r["deff"]) else NAN,
            "few": r["deals"] < MIN_DEALS,
        })
    return pd.DataFrame(rows)


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
    median, quartiles and IQR with deal-resampling bootstrap intervals."""
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
            rows.append({"ruleset": ruleset, "pairing": pairing, "quantity": quantity,
                         "group": group, **d})
    return pd.DataFrame(rows)


def game_summary(games: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and pairing: game length, passes, buys, how often the tie-break decided
    (with a per-deal interval), the bonus rate and who reached the end first."""
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
        tie = clustered_rate(g["tie_break"].to_numpy(float), g["deal"].to_numpy(), alpha)
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "games": len(g),
            "deals": int(g["deal"].nunique()),
            "plies": float(g["plies"].mean()),
            "passes": float((g["passes0"] + g["passes1"]).mean()),
            "buys": float((g["buys0"] + g["buys1"]).mean()),
            "tie_breaks": int(g["tie_break"].sum()), "tie_rate": tie["rate"],
            "tie_lo": tie["lo"], "tie_hi": tie["hi"],
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
    """P(win | flag) - P(win | not flag) with a deal-clustered interval and p-value: the
    slope of a linear probability model with cluster-robust errors (statsmodels OLS)."""
    import statsmodels.api as sm  # heavy; only the patch table needs it

    if flag.all() or not flag.any() or len(np.unique(groups)) < 2:
        return NAN, NAN, NAN, NAN
    x = np.column_stack([np.ones(len(flag)), flag.astype(float)])
    codes = pd.factorize(groups)[0]
    with warnings.catch_warnings():
        # few deals make statsmodels warn about the cluster count; the interval is still
        # the right one to show, and the report flags small runs itself
        warnings.simplefilter("ignore")
        fit = sm.OLS(won.astype(float), x).fit(cov_type="cluster", cov_kwds={"groups": codes})
    lo, hi = fit.conf_int(alpha)[1]
    p = float(fit.pvalues[1])
    return float(fit.params[1]), float(lo), float(hi), p if np.isfinite(p) else NAN


def patch_table(games: pd.DataFrame, events: Events,
                rulesets: Mapping[str, Any] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Per ruleset and patch (pooled over pairings): how often it is bought, when (track
    position before the buy), by which seat; the win rate of a seat that bought it and of a
    seat that did not, with per-deal intervals; their difference with a cluster-robust
    interval and p-value, Holm-corrected over the patches; and a flag: buyers winning more
    than non-buyers suggests the patch is under-priced, less suggests over-priced. This is an
    association in the bots' play (they buy for reasons), not a causal effect of the patch.

    When the run has self-play games, only those are used: in a game between two different
    bots, the patches the stronger bot prefers would look under-priced for that reason alone.
    """
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
            rb = clustered_rate(won[bought], deal[bought], alpha)
            ro = clustered_rate(won[~bought], deal[~bought], alpha)
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
                "buyer_win": rb["rate"], "buyer_lo": rb["lo"], "buyer_hi": rb["hi"],
                "other_win": ro["rate"], "other_lo": ro["lo"], "other_hi": ro["hi"],
                "diff": diff, "diff_lo": dlo, "diff_hi": dhi, "p_value": p,
            })
        part = pd.DataFrame(start)
        if len(part):
            part["p_holm"] = holm(part["p_value"])
            part["flag"] = np.where(part["p_holm"] < alpha,
                                    np.where(part["diff"] > 0, "under-priced?", "over-priced?"),
                                    "")
            part = part.sort_values("diff", ascending=False, na_position="last")
        rows.append(part)
    cols = ["ruleset", "patch", "cost", "time", "income", "squares", "games", "bought",
            "buy_rate", "by_seat0", "by_seat1", "pos_mean", "pos_median", "pos_q1", "pos_q3",
            "buyer_win", "buyer_lo", "buyer_hi", "other_win", "other_lo", "other_hi", "diff",
            "diff_lo", "diff_hi", "p_value", "p_holm", "flag"]
    out = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=cols)
    return out.reindex(columns=cols)


def patch_bots(events: Events) -> pd.DataFrame:
    """Per ruleset, patch and bot: buys, the bot's share of the patch's buys, mean position."""
    t = as_summary(events).bot_buys
    if t.empty:
        return pd.DataFrame(columns=["ruleset", "patch", "bot", "buys", "share", "pos_mean"])
    t = t.assign(pos_mean=t["pos_sum"] / t["buys"])
    t["share"] = t["buys"] / t.groupby(["ruleset", "patch"])["buys"].transform("sum")
    return t[["ruleset", "patch", "bot", "buys", "share", "pos_mean"]]


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
    isolated one-square hole ("useful": per game, lost patches counting as not useful, with
    a per-deal interval), an ordinary square, or was lost; the claimer's win rate."""
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
            r = clustered_rate(useful.astype(float), deal, alpha)
            ci = by_id[mk.seat[by_id, j] >= 0]
            seat, lead = mk.seat[ci, j], mk.lead[ci, j]
            c_useful, c_placed = mk.useful[ci, j], mk.placed[ci, j]
            cw = clustered_rate((winner[ci] == seat).astype(float), deal[ci], alpha)
            k = len(ci)
            rows.append({
                "ruleset": ruleset, "mark": mark, "rank": j + 1,
                "games": n, "claimed": k, "claim_rate": k / n,
                "by_seat0": int((seat == 0).sum()),
                "by_leader": int((lead > 0).sum()),
                "by_trailer": int((lead < 0).sum()),
                "by_level": int((lead == 0).sum()),
                "lead_mean": float(lead.sum(dtype=np.float64) / k) if k else NAN,
                "useful": int(r["successes"]), "useful_rate": r["rate"],
                "useful_lo": r["lo"], "useful_hi": r["hi"],
                "useful_of_claimed": int(c_useful.sum()) / k if k else NAN,
                "ordinary": int((c_placed & ~c_useful).sum()),
                "lost": int((mk.row[:, j] & (mk.seat[:, j] < 0)).sum()),
                "claimer_win": cw["rate"], "claimer_lo": cw["lo"], "claimer_hi": cw["hi"],
            })
    cols = ["ruleset", "mark", "rank", "games", "claimed", "claim_rate", "by_seat0",
            "by_leader", "by_trailer", "by_level", "lead_mean", "useful", "useful_rate",
            "useful_lo", "useful_hi", "useful_of_claimed", "ordinary", "lost", "claimer_win",
            "claimer_lo", "claimer_hi"]
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
    event's index in the game)."""
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
    been a tie, left to the tie-break, and is not counted)."""
    be = bonus_events(games, events)
    rows = []
    for (ruleset, pairing), g in _groups(games, ["ruleset", "pairing"]):
        rs = _ruleset_lookup(rulesets, ruleset)
        points = (rs.bonus_points if rs is not None and rs.bonus_square is not None
                  else (0 if rs is not None else 7))
        deal = g["deal"].to_numpy()
        has0, has1 = g["bonus0"].to_numpy(bool), g["bonus1"].to_numpy(bool)
        claimed = has0 | has1
        r = clustered_rate(claimed.astype(float), deal, alpha)
        holder = np.where(has0, 0, np.where(has1, 1, -1))
        winner = g["winner"].to_numpy()
        margin = np.abs(g["score0"].to_numpy() - g["score1"].to_numpy())
        hw = clustered_rate((winner[claimed] == holder[claimed]).astype(float),
                            deal[claimed], alpha)
        changed = claimed & (winner == holder) & (margin < points)
        rc = clustered_rate(changed.astype(float), deal, alpha)
        pos = be.loc[(be["ruleset"] == ruleset) & (be["pairing"] == pairing), "position"]
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "self_play": is_self_play(g),
            "points": points, "games": len(g),
            "claimed": int(claimed.sum()), "claim_rate": r["rate"], "claim_lo": r["lo"],
            "claim_hi": r["hi"], "by_seat0": int(has0.sum()), "by_seat1": int(has1.sum()),
            "pos_mean": float(pos.mean()) if len(pos) else NAN,
            "pos_median": float(pos.median()) if len(pos) else NAN,
            "holder_win": hw["rate"], "holder_lo": hw["lo"], "holder_hi": hw["hi"],
            "changed": int(changed.sum()), "changed_rate": rc["rate"],
            "changed_lo": rc["lo"], "changed_hi": rc["hi"],
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
    z = sps.norm.ppf(1 - alpha / 2)
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


# --- the terminal summary used by ``patchsim run`` ----------------------------------------------
def run_summary(games: pd.DataFrame) -> pd.DataFrame:
    """One row per ruleset and pairing: games, first-seat win rate and the first bot's win
    rate (over both seats), each with a 95% interval that treats the deal (the seat-swapped
    pair) as the unit, mean scores by seat."""
    rows = []
    games = distinct_games(games)  # deterministic self-play: a deal's copy counts once
    dup = set(games.attrs.get("duplicated_pairings", []))
    for (ruleset, pairing), g in games.groupby(["ruleset", "pairing"], sort=False,
                                               observed=True):
        n = len(g)
        seat0 = clustered_rate((g["winner"] == 0).to_numpy(), g["deal"].to_numpy())
        bot_a = pairing.split(" vs ")[0]
        self_play = g["bot0"].iloc[0] == g["bot1"].iloc[0]
        first = clustered_rate((g["winner_bot"] == bot_a).to_numpy(), g["deal"].to_numpy())
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "games": n,
            "seat0_win": seat0["rate"], "seat0_lo": seat0["lo"], "seat0_hi": seat0["hi"],
            "first_bot_win": np.nan if self_play else first["rate"],
            "first_bot_lo": np.nan if self_play else first["lo"],
            "first_bot_hi": np.nan if self_play else first["hi"],
            "score0": g["score0"].mean(), "score1": g["score1"].mean(),
            "tie_breaks": int(g["tie_break"].sum()),
            # who wins the ties (docs/rules.md R11.5: the first to reach the last space)
            "tie_break_seat0_share": (float((g["tie_break"] & (g["winner"] == 0)).sum()
                                            / g["tie_break"].sum())
                                      if g["tie_break"].any() else np.nan),
            "distinct_games": str(pairing) not in dup,
        })
    return pd.DataFrame(rows)


def format_summary(summary: pd.DataFrame) -> str:
    """The terminal summary of a run."""
    lines = []
    for r in summary.itertuples():
        line = (f"{r.ruleset:<12} {r.pairing:<44} games {r.games:>6}  "
                f"seat0 wins {100 * r.seat0_win:5.1f}% [{100 * r.seat0_lo:4.1f}, "
                f"{100 * r.seat0_hi:4.1f}]")
        if not np.isnan(r.first_bot_win):
            line += (f"  {r.pairing.split(' vs ')[0]} wins {100 * r.first_bot_win:5.1f}% "
                     f"[{100 * r.first_bot_lo:4.1f}, {100 * r.first_bot_hi:4.1f}]")
        line += f"  mean score {r.score0:6.1f} : {r.score1:6.1f}"
        if not r.distinct_games:
            line += "  (deterministic self-play: one distinct game per deal)"
        lines.append(line)
    return "\n".join(lines)


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
