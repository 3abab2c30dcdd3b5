"""What a placement is worth: the effect of the quilt's shape on the final margin, measured
by games whose placements are drawn at random.

Why a randomised design: the value model is a regression of the final margin on the
features of positions from self-play, and the shape terms of a quilt (one-square holes,
empty perimeter, empty regions, the fill of the bonus window) go with everything else a
player did: a scattered quilt early in the game goes with many cheap buys, so the fit
rewards an empty perimeter early. A search that ranks placements by those weights then
scatters its patches (measured: `mcts(eval=pack)` trained that way won 12-19% against
today's player). Placements of one patch at one moment differ in these terms only, so
when the placement among a patch's ``k`` best by contact is drawn uniformly at random, the
deviation of the drawn placement's features from the mean over the ``k`` is independent of
everything before it; summed over a game's placements, its regression on the final
margin estimates the effect of each shape term, free of that confounding (a randomised
experiment inside every game: about 24 placements a game are treatments).

The continuation policy is the bot given (both seats, its own choice of patch or pass;
only where the patch goes is drawn), so the effects are those of a quilt's shape under
that player's later play. Deterministic for a seed: game i is the deal ``deal_seed(seed,
i)`` and its draws come from that seed alone, whatever the number of workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from patchsim.bots import features as F
from patchsim.bots.heuristics import (
    REFERENCE_BONUS_POINTS,
    best_window,
    contact,
    count_holes,
    placement_score,
)
from patchsim.bots.registry import make_bot
from patchsim.engine import core
from patchsim.engine.deal import deal_circle, deal_seed
from patchsim.engine.game import Game
from patchsim.engine.ruleset import Ruleset

# the features that differ between placements of one patch at one moment: the terms
# features._quilt_terms writes (holes, bonus tile and window, the packing terms)
SHAPE_COLUMNS = (4, 5, 6, 16, 18, 19, 22, 23, 24, 25, 26)
# the bonus tile owned (5) is a shape term too (a placement completes a window), but a draw
# completes one too rarely to measure it (2,000 games: +-0.44), and its worth is plain: its
# points at the end. Its weight is fitted with the rest; the others are held at the effects
HELD_COLUMNS = tuple(c for c in SHAPE_COLUMNS if c != 5)
DEFAULT_K = 4  # placements drawn among: the best few by contact (a uniform legal
# placement is nearly always absurd, and the effects are wanted among sensible ones)


@dataclass(frozen=True)
class PlacementEffects:
    """Effects of the shape terms on the final margin (points a unit of each feature, in
    the features' own units, so they stand in for the value model's weights)."""

    columns: tuple[int, ...]
    beta: np.ndarray
    se: np.ndarray
    games: int
    treatments: float  # randomised placements a game, on average
    residual_sd: float

    def held(self) -> dict[int, float]:
        """Feature index -> effect of the columns a fit holds fixed (``HELD_COLUMNS``)."""
        return {c: float(b) for c, b in zip(self.columns, self.beta, strict=True)
                if c in HELD_COLUMNS}


def _drawn_game(ruleset: Ruleset, spec: str, seed: int, k: int,
                rank: Callable[[np.ndarray, np.ndarray, int, int], list[int]],
                terms: Callable[[np.ndarray, np.ndarray, int, int], np.ndarray],
                width: int) -> tuple[np.ndarray, float, int]:
    """One game of ``spec`` against itself on the deal of ``seed`` whose every placement is
    drawn uniformly among the first ``k`` of ``rank(state, tab, p, patch)``: (sum over the
    game's draws of ``terms(state, tab, p, g)`` of the drawn placement minus their mean over
    the ``k``, final margin of seat 0, number of draws). ``terms`` are seat 0's minus seat
    1's (``width`` of them), so both seats' draws add up with their signs."""
    bot = make_bot(spec)
    choose_code = getattr(bot, "choose_code", None)
    if choose_code is None:  # a Python bot: it plays through choose(), far too slowly here
        raise ValueError(f"placement_effects plays built-in bots only, not {spec!r}")
    game = Game.new(ruleset, circle=deal_circle(ruleset, seed))
    tab = game.tab
    rng = np.random.default_rng(seed)
    # the bot's own stream (epsilon, sampled openings): from the seed, apart from the draws
    stream = np.array([(seed * 0x9E3779B97F4A7C15 + 1) % 2**64], dtype=np.uint64)
    total = np.zeros(width)
    draws = 0
    while not game.finished:
        code = int(choose_code(game, stream))
        mover = game.to_move
        if code >= 0 and mover is not None:  # a placement: the bot chose the patch, the
            p = int(mover)  # draw chooses where
            state = game.state
            top = rank(state, tab, p, core.placement_patch(tab, code))[:k]
            if len(top) > 1:
                rows = np.array([terms(state, tab, p, g) for g in top])
                j = int(rng.integers(len(top)))
                total += rows[j] - rows.mean(axis=0)
                draws += 1
                code = top[j]
        game.apply(code)
    s0, s1 = game.scores
    return total, float(s0 - s1), draws


def _fitting(state: np.ndarray, tab: np.ndarray, p: int, patch: int) -> list[int]:
    first = core.patch_first(tab, patch)
    return [g for g in range(first, first + core.patch_count(tab, patch))
            if core.fits(state, tab, p, g)]


def _by_contact(state: np.ndarray, tab: np.ndarray, p: int, patch: int) -> list[int]:
    qlo, qhi = state[core.S_QLO + p], state[core.S_QHI + p]
    return sorted(_fitting(state, tab, p, patch),
                  key=lambda g: (-contact(tab, qlo, qhi, g), g))


def _features_after(state: np.ndarray, tab: np.ndarray, p: int, g: int) -> np.ndarray:
    after = state.copy()
    core.apply_move(after, tab, g)
    feats = np.empty(F.N_ALL_FEATURES)
    F.all_features(after, tab, feats)
    return feats


def randomised_game(ruleset: Ruleset, spec: str, seed: int,
                    k: int = DEFAULT_K) -> tuple[np.ndarray, float, int]:
    """One game of ``spec`` against itself on the deal of ``seed`` whose every placement is
    drawn uniformly among the patch's ``k`` best by contact: (sum over the game's draws of
    the drawn placement's features minus their mean over the ``k``, final margin of seat 0,
    number of draws). The features are seat 0's minus seat 1's, so both seats' draws add up
    with their signs."""
    return _drawn_game(ruleset, spec, seed, k, _by_contact, _features_after,
                       F.N_ALL_FEATURES)


def placement_effects(ruleset: Ruleset, spec: str, games: int, seed: int = 1,
                      k: int = DEFAULT_K, jobs: int = 1) -> PlacementEffects:
    """The shape terms' effects from ``games`` randomised games of ``spec`` (see the module
    docstring): least squares of the final margin on the games' summed deviations, with an
    intercept (the first seat's edge), and their standard errors."""
    if games < len(SHAPE_COLUMNS) + 2:
        raise ValueError(f"placement_effects needs at least {len(SHAPE_COLUMNS) + 2} games, "
                         f"got {games}")
    seeds = [deal_seed(seed, i) for i in range(games)]
    out = Parallel(n_jobs=jobs)(delayed(randomised_game)(ruleset, spec, s, k) for s in seeds)
    d = np.array([o[0] for o in out])[:, list(SHAPE_COLUMNS)]
    y = np.array([o[1] for o in out])
    beta, se, sd = _least_squares(d, y)
    return PlacementEffects(SHAPE_COLUMNS, beta, se, games,
                            float(np.mean([o[2] for o in out])), sd)


# the packing ranking's terms (heuristics.placement_score): sides in contact, one-square holes
# the placement makes, and the fullest bonus window's covered squares x the tile's worth in
# the printed game's points (0 once the tile is claimed)
RANKING_TERMS = ("contact", "holes_made", "window")


@dataclass(frozen=True)
class RankingEffects:
    """Effects of the packing ranking's terms on the final margin (points a unit of each of
    ``RANKING_TERMS``), measured among the placements the ranking ``drawn_by`` puts first."""

    drawn_by: tuple[float, float, float]
    beta: np.ndarray
    se: np.ndarray
    games: int
    treatments: float
    residual_sd: float

    def weights(self) -> tuple[float, float, float]:
        """The ranking these effects imply, on placement_score's scale (contact 1 a side,
        holes a penalty, window a reward): what a side, a hole and a window square are
        worth in points, divided by what a side is worth."""
        c, h, w = (float(b) for b in self.beta)
        if c <= 0.0:
            raise ValueError(f"the contact effect is {c:+.3f} points a side, not positive: "
                             "no ranking on placement_score's scale follows")
        return 1.0, -h / c, w / c


def _ranking(weights: tuple[float, float, float]
             ) -> tuple[Callable[[np.ndarray, np.ndarray, int, int], list[int]],
                        Callable[[np.ndarray, np.ndarray, int, int], np.ndarray]]:
    """The ranking by ``weights`` (contact, holes, window) and the terms it weighs, signed
    for seat 0, as :func:`_drawn_game` takes them."""
    wc, wh, ww = weights

    def terms(state: np.ndarray, tab: np.ndarray, p: int, g: int) -> np.ndarray:
        qlo, qhi = state[core.S_QLO + p], state[core.S_QHI + p]
        nlo = qlo | core.placement_lo(tab, g)
        nhi = qhi | core.placement_hi(tab, g)
        bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
        worth = tab[core.T_BONUS_POINTS] / REFERENCE_BONUS_POINTS if bonus_open else 0.0
        row = np.array([contact(tab, qlo, qhi, g),
                        count_holes(tab, nlo, nhi) - count_holes(tab, qlo, qhi),
                        worth * best_window(tab, nlo, nhi)], dtype=np.float64)
        return row if p == 0 else -row

    def rank(state: np.ndarray, tab: np.ndarray, p: int, patch: int) -> list[int]:
        # the search's own score (one definition of the ranking), best first, ties by id
        qlo, qhi = state[core.S_QLO + p], state[core.S_QHI + p]
        bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
        holes0 = count_holes(tab, qlo, qhi)
        scored = [(-placement_score(tab, qlo, qhi, holes0, g, wc, wh, ww, bonus_open), g)
                  for g in _fitting(state, tab, p, patch)]
        return [g for _, g in sorted(scored)]

    return rank, terms


def ranking_game(ruleset: Ruleset, spec: str, seed: int, k: int = DEFAULT_K,
                 weights: tuple[float, float, float] = (1.0, 1.0, 0.5)
                 ) -> tuple[np.ndarray, float, int]:
    """:func:`randomised_game` with the placement drawn among the patch's ``k`` best by the
    packing ranking ``weights`` (contact, holes, window; the learned search's defaults),
    and the ranking's own terms (``RANKING_TERMS``) as what is measured."""
    rank, terms = _ranking(weights)
    return _drawn_game(ruleset, spec, seed, k, rank, terms, len(RANKING_TERMS))


def ranking_effects(ruleset: Ruleset, spec: str, games: int, seed: int = 1,
                    k: int = DEFAULT_K, jobs: int = 1,
                    weights: tuple[float, float, float] = (1.0, 1.0, 0.5)) -> RankingEffects:
    """What each term of the packing ranking is worth in points, from ``games`` games of
    ``spec`` whose placements are drawn among the ranking's ``k`` best (the design of the
    module docstring, with the ranking's terms as the treatments): the weights a placement
    judge fitted to the difference placements make."""
    if games < len(RANKING_TERMS) + 2:
        raise ValueError(f"ranking_effects needs at least {len(RANKING_TERMS) + 2} games, "
                         f"got {games}")
    seeds = [deal_seed(seed, i) for i in range(games)]
    out = Parallel(n_jobs=jobs)(delayed(ranking_game)(ruleset, spec, s, k, weights)
                                for s in seeds)
    d = np.array([o[0] for o in out])
    y = np.array([o[1] for o in out])
    beta, se, sd = _least_squares(d, y)
    return RankingEffects(tuple(float(w) for w in weights), beta, se, games,  # type: ignore[arg-type]
                          float(np.mean([o[2] for o in out])), sd)


def _least_squares(d: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Coefficients of ``d`` (an intercept fitted, not returned), their standard errors and
    the residual standard deviation. A column that never varies gets effect 0 and an
    infinite standard error (the data say nothing about it)."""
    live = d.std(axis=0) > 1e-12
    x = np.column_stack([np.ones(len(y)), d[:, live]])
    b, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ b
    dof = max(1, len(y) - x.shape[1])
    s2 = float(resid @ resid) / dof
    cov = s2 * np.linalg.pinv(x.T @ x)
    beta = np.zeros(d.shape[1])
    se = np.full(d.shape[1], np.inf)
    beta[live] = b[1:]
    se[live] = np.sqrt(np.maximum(np.diag(cov)[1:], 0.0))
    return beta, se, float(np.sqrt(s2))
