"""Distributions of scores, margins and game length, with intervals that resample whole
deals (:func:`patchsim.analysis.bootstrap.bootstrap_over_deals`, the one bootstrap of the
package), so that a deal's two games stay together.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from patchsim.analysis.seats import NAN, first_bot, is_self_play, iter_groups, second_bot
from patchsim.analysis.selfplay import copied_pairings, distinct


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
    for (ruleset, pairing), g in iter_groups(games, ["ruleset", "pairing"]):
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
