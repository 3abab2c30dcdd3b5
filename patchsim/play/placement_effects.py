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

from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from patchsim.bots import features as F
from patchsim.bots.heuristics import contact
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


def randomised_game(ruleset: Ruleset, spec: str, seed: int,
                    k: int = DEFAULT_K) -> tuple[np.ndarray, float, int]:
    """One game of ``spec`` against itself on the deal of ``seed`` whose every placement is
    drawn uniformly among the patch's ``k`` best by contact: (sum over the game's draws of
    the drawn placement's features minus their mean over the ``k``, final margin of seat 0,
    number of draws). The features are seat 0's minus seat 1's, so both seats' draws add up
    with their signs."""
    bot = make_bot(spec)
    choose_code = getattr(bot, "choose_code", None)
    if choose_code is None:  # a Python bot: it plays through choose(), far too slowly here
        raise ValueError(f"placement_effects plays built-in bots only, not {spec!r}")
    game = Game.new(ruleset, circle=deal_circle(ruleset, seed))
    tab = game.tab
    rng = np.random.default_rng(seed)
    # the bot's own stream (epsilon, sampled openings): from the seed, apart from the draws
    stream = np.array([(seed * 0x9E3779B97F4A7C15 + 1) % 2**64], dtype=np.uint64)
    total = np.zeros(F.N_ALL_FEATURES)
    feats = np.empty(F.N_ALL_FEATURES)
    draws = 0
    while not game.finished:
        code = int(choose_code(game, stream))
        mover = game.to_move
        if code >= 0 and mover is not None:  # a placement: the bot chose the patch, the
            p = int(mover)  # draw chooses where
            state = game.state
            patch = core.placement_patch(tab, code)
            qlo, qhi = state[core.S_QLO + p], state[core.S_QHI + p]
            first = core.patch_first(tab, patch)
            fitting = [(contact(tab, qlo, qhi, g), g)
                       for g in range(first, first + core.patch_count(tab, patch))
                       if core.fits(state, tab, p, g)]
            fitting.sort(key=lambda t: (-t[0], t[1]))
            top = [g for _, g in fitting[:k]]
            if len(top) > 1:
                rows = np.empty((len(top), F.N_ALL_FEATURES))
                for i, g in enumerate(top):
                    after = state.copy()
                    core.apply_move(after, tab, g)
                    F.all_features(after, tab, feats)
                    rows[i] = feats
                j = int(rng.integers(len(top)))
                total += rows[j] - rows.mean(axis=0)
                draws += 1
                code = top[j]
        game.apply(code)
    s0, s1 = game.scores
    return total, float(s0 - s1), draws


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
