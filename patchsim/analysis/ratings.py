"""Ratings of the bots of a run: a penalised Bradley-Terry (Elo) fit with a seat term.

Written here rather than taken from a library: statsmodels has no ridge logit with standard
errors. The fit is checked against the library's unpenalised one in tests/test_stats.py.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.defaults import ALPHA

ELO_PER_LOGIT = 400.0 / math.log(10.0)


def elo(p: float | np.ndarray) -> np.ndarray:
    """Elo difference of a score rate p (400 log10(p / (1 - p)); +-inf at 1 and 0)."""
    q = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ELO_PER_LOGIT * np.log(q / (1.0 - q))


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
            cluster: bool = True, alpha: float = ALPHA) -> pd.DataFrame:
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
