"""Which patches are bought, when, by whom, and whether their buyers win more.

An association in the bots' play, not a price (that is the causal question of
:mod:`patchsim.experiments.prices`): the deal-weighted linear probability model of
:func:`patch_table` (statsmodels WLS with deal-clustered errors). Tables built from events
take the events DataFrame or its per-game summary
(:class:`patchsim.analysis.tables.EventSummary`): the report passes the summary, so that a
run's events are never in memory at once.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.defaults import ALPHA
from patchsim.analysis.games import NAN, Events, iter_groups, ruleset_of
from patchsim.analysis.selfplay import distinct
from patchsim.analysis.tables import EventSummary, as_summary, take


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
                rulesets: Mapping[str, Any] | None = None, alpha: float = ALPHA) -> pd.DataFrame:
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
    for (ruleset,), g in iter_groups(games, ["ruleset"]):
        n = len(g)
        at = ev.rows(g["game_id"].to_numpy())
        # one row per game and seat: seat 0 of every game, then seat 1 (as seat_games)
        winner = g["winner"].to_numpy()
        won = np.concatenate([winner == 0, winner == 1])
        deal = np.concatenate([g["deal"].to_numpy()] * 2)
        rs = ruleset_of(rulesets, ruleset)
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
