"""Distributions of scores, margins and game length, with intervals that resample whole
deals (:func:`patchsim.analysis.bootstrap.bootstrap_over_deals`, the one bootstrap of the
package), so that a deal's two games stay together.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from patchsim.analysis.bootstrap import RESAMPLES, bootstrap_over_deals
from patchsim.analysis.defaults import ALPHA
from patchsim.analysis.games import NAN, first_bot, is_self_play, iter_groups, second_bot
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


MAX_HISTOGRAM = 4096  # whole-number values spanning at most this many: counted, not sorted


def _lerp(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """numpy's linear interpolation between order statistics, to the last bit."""
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


def _histogram_stat(counts: np.ndarray, lowest: float) -> np.ndarray:
    """Mean, median and IQR of each row of counts per whole-number value (``lowest`` and up):
    what ``np.mean`` and ``np.percentile`` (linear) give on the values themselves, without
    sorting every resample (the scores, margins, plies and passes of a game are whole numbers
    in a narrow range)."""
    n = int(counts[0].sum())
    cum = counts.cumsum(axis=1)
    values = np.arange(counts.shape[1], dtype=float) + lowest
    total = counts @ values  # whole numbers: the sums are exact, as np.mean's are
    out = [total / n]
    for q in (0.25, 0.5, 0.75):
        h = (n - 1) * q
        lo = int(math.floor(h))
        a = values[(cum > lo).argmax(axis=1)]
        b = values[(cum > min(lo + 1, n - 1)).argmax(axis=1)]
        out.append(_lerp(a, b, h - lo))
    return np.stack([out[0], out[2], out[3] - out[1]], axis=-1)


def _deal_counts(mat: np.ndarray, lowest: float, width: int):
    """Per deal, how many of its games took each value: a sparse (deals x values) matrix."""
    from scipy import sparse  # only the score table needs it

    n, g = mat.shape
    cols = (mat - lowest).astype(np.int64).ravel()
    rows = np.repeat(np.arange(n), g)
    return sparse.csr_matrix((np.ones(n * g), (rows, cols)), shape=(n, width))


def describe_by_deal(values: np.ndarray, deal: np.ndarray, n_boot: int = RESAMPLES,
                     seed: int = 0, alpha: float = ALPHA) -> dict[str, float]:
    """Mean, median, quartiles and IQR, with percentile intervals from the one bootstrap over
    deals (:func:`bootstrap_over_deals`: whole deals resampled, so that a deal's two games
    stay together)."""
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

    lowest = float(np.min(v))
    width = int(np.max(v) - lowest) + 1 if np.isfinite(v).all() else 0
    whole = (not padded and np.array_equal(v, np.round(v)) and 0 < width <= MAX_HISTOGRAM
             and abs(lowest) < 2**40)

    per_deal = _deal_counts(mat, lowest, width) if whole else None

    def stat(idx: np.ndarray | None) -> np.ndarray:
        if idx is None:  # the deals as they are
            idx = np.arange(len(mat))[None]
        if per_deal is not None:
            # how often each deal was drawn, times its counts per value: the resample's
            # counts per value, exactly those of its values
            k, n = idx.shape
            drawn = np.bincount((idx + (np.arange(k) * n)[:, None]).ravel(),
                                minlength=k * n).reshape(k, n)
            return _histogram_stat(np.asarray((per_deal.T @ drawn.T).T), lowest)
        x = np.take(mat, idx, axis=0).reshape(len(idx), -1)  # every game of the drawn deals
        q1, med, q3 = percentile(x, [25, 50, 75], axis=-1)
        return np.stack([mean(x, axis=-1), med, q3 - q1], axis=-1)

    q1, q3 = np.percentile(v, [25, 75])
    point = stat(None)[0]
    out.update(mean=float(point[0]), median=float(point[1]), iqr=float(point[2]),
               q1=float(q1), q3=float(q3))
    if len(mat) >= 2 and n_boot > 0 and np.ptp(v) > 0:
        b = bootstrap_over_deals(mat, stat, resamples=n_boot, seed=seed, level=1 - alpha,
                                 by_index=True)
        for i, k in enumerate(keys):
            out[f"{k}_lo"] = float(np.asarray(b.lo)[i])
            out[f"{k}_hi"] = float(np.asarray(b.hi)[i])
    elif len(mat) >= 2:  # no spread at all: the statistic is the same in every resample
        for i, k in enumerate(keys):
            out[f"{k}_lo"] = out[f"{k}_hi"] = float(point[i])
    return out


def score_table(games: pd.DataFrame, n_boot: int = RESAMPLES, seed: int = 0) -> pd.DataFrame:
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
