"""The learned bot's compiled half: position features, the linear evaluation and the search
that uses it (no rollouts), all inside numba.

Features are differences "player 0 minus player 1" of per-player quantities measured in
points of the ruleset at hand (buttons, income still to be paid, empty squares times the
penalty, ...), plus whose turn it is. Swapping the players negates every feature, so a linear
model without intercept is exactly antisymmetric: it predicts the final score margin of
player 0, and of player 1 by sign. Every term is defined for any valid ruleset (any quilt up
to 128 squares, any track, patch set, offer size, with or without bonus or leather).

The bot's parameter vector (``N_PARAMS`` floats, like every compiled bot) carries the
search settings (and its ``L_EPSILON``) in ``L_*`` and the model weights from ``L_WEIGHTS``
(settings added later sit after the weights): the weights reach the compiled search with no
change to the game loops and no Python call per node.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from patchsim.bots.heuristics import (
    MEMO_COLS,
    MEMO_SLOTS,
    best_window,
    contact,
    count_holes,
    empty_regions,
    holes_and_perimeter,
    income_marks_left,
    keep_best,
    leather_square,
    new_memo,
    placement_score,
    top_placements,
    top_placements_memo,
)
from patchsim.bots.kept_tree import find_kept, keep_subtree, kept_nodes, new_keep, restore_subtree
from patchsim.bots.network import H_VERSION, net_value0, scratch_size
from patchsim.bots.network import HEADER as NET_HEADER
from patchsim.bots.scripted import N_PARAMS
from patchsim.bots.tree import (
    Int,
    backup,
    expand,
    grouped_uct_child,
    most_visited_decision,
    new_tree,
    now_ms,
    play_macro,
    regrow,
    sample_by_visits,
    sample_decision_by_visits,
    uct_child,
)
from patchsim.engine import core

LEARNED = 5  # policy id (patchsim.bots.policies dispatches on it)
FEATURE_VERSION = 1  # bump whenever a feature's definition changes: stored models then refuse
PACK_FEATURE_VERSION = 2  # the base features and the packing features (mcts(eval=pack))

# --- parameter vector layout ------------------------------------------------------------------
L_ITERATIONS = 0
L_C = 1  # UCT exploration constant
L_TOP_K = 2  # placements searched per patch
L_SCALE = 3  # points of predicted margin for tanh(1): the model's win-probability squash
L_MARGIN_WEIGHT = 4  # at finished games: share of the reward from the squashed margin
L_TIME_MS = 5  # if > 0, stop after this many milliseconds (not reproducible)
L_CONTACT = 6  # placement ranking of the searched moves (see heuristics.placement_score)
L_HOLES = 7
L_WINDOW = 8
# probability of a random move among the root's searched moves (0: deterministic). It took
# the slot of a "bound" flag that nothing compiled read: a vector carries a model once
# L_SCALE > 0 (patchsim.bots.learned.fill_params; a model's scale is always positive).
L_EPSILON = 9
L_WEIGHTS = 10
N_FEATURES = 22  # slots L_WEIGHTS .. L_WEIGHTS + 21
# opening diversity, as the rollout search's M_TEMPERATURE / M_SAMPLE_PLIES: in the game's
# first L_SAMPLE_PLIES plies the root move is drawn by visits^(1 / L_TEMPERATURE)
L_TEMPERATURE = L_WEIGHTS + N_FEATURES  # 32
L_SAMPLE_PLIES = L_TEMPERATURE + 1
# passing wars (see learned_tree): k > 0 values a node reached by k passes in a row within
# the tree (the offer frozen) by the model's own one-ply player's playout to the end
L_WAR_ROLLOUTS = L_SAMPLE_PLIES + 1
# placements chosen by search (progressive widening; see learned_tree). L_WIDEN = T > 0: a
# node's children are pass and, per affordable patch, its best placements by the model's
# own judgement of the quilt after it (placement_prior): one at first, then 2, 4, 8, ...
# once the node has T, 4T, 16T, ... visits, up to L_WIDEN_MAX. 0: today's search (top_k
# placements per patch by the contact ranking, never widened).
L_WIDEN = L_WAR_ROLLOUTS + 1  # 35
L_WIDEN_MAX = L_WIDEN + 1
# 1: the vector carries the packing features' weights at L_PACK_WEIGHTS (a feature-version-2
# model, mcts(eval=pack)); 0: the 22 base features alone, exactly as before
L_PACK = L_WIDEN_MAX + 1
# the seat's own points beside its chance of winning (KataGo's score utility, for the seat
# itself): a seat's reward adds L_OWN_SCORE x its passive final score (passive_score), so
# that between moves of about equal value the one that leaves the seat more points wins.
# 0: the reward is the win expectation alone, exactly as before
L_OWN_SCORE = L_PACK + 1  # 38
# the order a widening search takes a patch's placements in: 0 the model's own judgement of
# the quilt after it (placement_prior), 1 the packing heuristic the unwidened search ranks by
# (contact, holes, bonus window: heuristics.placement_score with L_CONTACT..L_WINDOW)
L_WIDEN_BY = L_OWN_SCORE + 1  # 39
L_PACK_WEIGHTS = 40
N_PACK_FEATURES = 5  # slots L_PACK_WEIGHTS .. L_PACK_WEIGHTS + 4
# what a widened search charges a placement for falling below its patch's best by the
# packing ranking (L_WIDEN_BY = 1): points per unit of heuristics.placement_score (a side in
# contact), taken off the placing seat's reward along every line through it (converted at
# the squash's slope, 0.5 / L_SCALE a point). The ranking's terms are worth that much in
# final margin (benchmarks/ranking_effects.py: 0.63 points a side in contact), and the
# model sees none of contact, so without it the tree picks among a patch's placements by
# differences of a few thousandths. 0: no charge, exactly as before
L_PLACE_COST = L_PACK_WEIGHTS + N_PACK_FEATURES  # 45
# 1: the search starts from the subtree it kept under its last move (patchsim.bots.kept_tree)
# when the position it is asked about is a node of it; its iterations or time come on top
# of the visits kept. 0: every search starts from an empty tree, exactly as before
L_REUSE = L_PLACE_COST + 1  # 46
N_ALL_FEATURES = 22 + N_PACK_FEATURES
SMALL_REGION = 3  # squares: an empty region this small takes only the smallest patches

FEATURE_NAMES = (
    "buttons",  # 0
    "income_to_come",  # 1: income x income marks still ahead
    "empty_penalty",  # 2: -penalty x empty squares
    "empty_penalty_x_time_left",  # 3
    "holes_penalty",  # 4: -penalty x one-square holes
    "bonus_owned",  # 5: bonus points if owned
    "bonus_window",  # 6: bonus points x (fill of the fullest window)^2 while it is open
    "time_left",  # 7: spaces to the last space
    "income",  # 8
    "buttons_x_time_left",  # 9
    "to_move",  # 10
    "empty_sq_share_penalty",  # 11: -penalty x empty^2 / squares (big gaps are hard to fill)
    "leather_near",  # 12: untaken leather marks ahead, discounted by distance
    "offer_best_net",  # 13: best points gain on offer (squares + income - cost), if affordable
    "offer_best_rate",  # 14: the same per time space
    "income_marks_left",  # 15
    "holes_x_time_left",  # 16
    "income_to_come_x_time_left",  # 17
    "bonus_window_lin",  # 18: bonus points x window fill while open
    "bonus_window_x_time_left",  # 19
    "time_left_sq",  # 20: (spaces left)^2 / last space
    "affordable_offer",  # 21: offered patches (of the next three) the player can pay for
)
# feature version 2 (mcts(eval=pack)): the base features, then how well the quilt is packed
PACK_FEATURE_NAMES = (
    "empty_perimeter",  # 22: -penalty x sides of empty squares facing a patch or the border / 4
    "empty_perimeter_x_time_left",  # 23
    "empty_regions",  # 24: -penalty x connected empty regions
    "small_region_squares",  # 25: -penalty x empty squares in regions of <= 3 squares
    "small_region_x_time_left",  # 26
)
ALL_FEATURE_NAMES = FEATURE_NAMES + PACK_FEATURE_NAMES


# The tree is sized for at most this many iterations' expansions (as the rollout search's):
# a larger time budget decides with the full tree instead of asking for unbounded memory.
TREE_ITERATIONS = 20000
CLOCK_EVERY = 8  # iterations between two reads of the clock (time budgets)
STOP_EVERY = 16  # iterations between two reads of the stop flag


@njit(cache=True)
def patch_size(tab: np.ndarray, patch: int) -> Int:
    """Squares a patch covers."""
    return core.patch_size(tab, patch)


@njit(cache=True)
def _quilt_terms(tab: np.ndarray, qlo: int, qhi: int, tl: float, owner: Int, p: Int | np.int64,
                 pack: bool | np.bool_, regions: bool | np.bool_, out: np.ndarray,
                 sign: float) -> None:
    """The terms of player p's features that depend on where its patches lie (one-square
    holes, the bonus tile and window, and with ``pack`` the packing features: the
    perimeter, and with ``regions`` too the empty regions), for quilt ``qlo``/``qhi``, time
    left ``tl`` (share of the track) and bonus owner ``owner`` (-1: still on offer), times
    ``sign``, added to ``out``. Shared by the features of a position and the search's
    ranking of placements (:func:`placement_prior`), so both judge a quilt by one
    definition."""
    pen = np.float64(tab[core.T_PENALTY])
    if pack:
        h, perim_i = holes_and_perimeter(tab, qlo, qhi)
        holes = np.float64(h)
        perim = np.float64(perim_i)
    else:
        holes = np.float64(count_holes(tab, qlo, qhi))
        perim = np.float64(0.0)
    out[4] += sign * (-pen * holes)
    bp = np.float64(tab[core.T_BONUS_POINTS]) if tab[core.T_HAS_BONUS] == 1 else 0.0
    out[5] += sign * (bp if owner == p else 0.0)
    fill = 0.0
    if bp != 0.0 and owner < 0 and tab[core.T_NWINDOWS] > 0:
        wl = core.window_lo(tab, 0)  # every window has the same size
        wh = core.window_hi(tab, 0)
        wsize = core.popcount64(wl) + core.popcount64(wh)
        if wsize > 0:
            fill = best_window(tab, qlo, qhi) / wsize
    out[6] += sign * (bp * fill * fill)
    out[16] += sign * (-pen * holes * tl)
    out[18] += sign * (bp * fill)
    out[19] += sign * (bp * fill * fill * tl)
    if pack:
        out[22] += sign * (-pen * perim / 4.0)
        out[23] += sign * (-pen * perim / 4.0 * tl)
    if pack and regions:
        nreg, small = empty_regions(tab, qlo, qhi, SMALL_REGION)
        out[24] += sign * (-pen * np.float64(nreg))
        out[25] += sign * (-pen * np.float64(small))
        out[26] += sign * (-pen * np.float64(small) * tl)


@njit(cache=True)
def _player_terms(state: np.ndarray, tab: np.ndarray, p: Int | np.int64, out: np.ndarray,
                  sign: float, pack: bool | np.bool_) -> None:
    """Per-player quantities (see FEATURE_NAMES, and PACK_FEATURE_NAMES with ``pack``) of
    player p, times ``sign``, added to ``out`` (so the difference of two players needs no
    buffer of its own: a leaf is judged without allocating)."""
    last = tab[core.T_LAST]
    pen = np.float64(tab[core.T_PENALTY])
    nsq = np.float64(tab[core.T_NSQ])
    pos = state[core.S_POS + p]
    tl = (last - pos) / last if last > 0 else 0.0
    btn = np.float64(state[core.S_BTN + p])
    inc = np.float64(state[core.S_INC + p])
    mk = np.float64(income_marks_left(tab, pos))
    qlo = state[core.S_QLO + p]
    qhi = state[core.S_QHI + p]
    empty = np.float64(core.empty_squares(state, tab, int(p)))
    out[0] += sign * (btn)
    out[1] += sign * (inc * mk)
    out[2] += sign * (-pen * empty)
    out[3] += sign * (-pen * empty * tl)
    _quilt_terms(tab, qlo, qhi, tl, state[core.S_BONUS], p, pack, pack, out, sign)
    out[7] += sign * (np.float64(last - pos))
    out[8] += sign * (inc)
    out[9] += sign * (btn * tl)
    to_move = core.to_move(state, tab)
    out[10] += sign * (1.0 if to_move == p else 0.0)
    out[11] += sign * (-pen * empty * empty / nsq if nsq > 0 else 0.0)
    near = 0.0
    nl = tab[core.T_NLEATHER]
    for i in range(nl):
        if state[core.S_LEATHER_TAKEN] & (np.int64(1) << np.int64(i)):
            continue
        m = core.leather_mark(tab, int(i))
        if m > pos:
            near += 0.75 ** (m - pos - 1)
    out[12] += sign * (near)
    best_net = 0.0
    best_rate = 0.0
    n_aff = 0.0
    for k in range(min(3, tab[core.T_OFFER])):
        patch = core.offer_patch(state, tab, int(k))
        if patch < 0:
            break
        cost = core.patch_cost(tab, patch)
        if cost > btn:
            continue
        n_aff += 1.0
        t = core.patch_time(tab, patch)
        if t > last - pos:
            t = last - pos
        net = (pen * patch_size(tab, patch) + core.patch_income(tab, patch) * mk
               - cost)
        if net > best_net:
            best_net = net
        rate = net / (t + 1.0)
        if rate > best_rate:
            best_rate = rate
    out[13] += sign * (best_net)
    out[14] += sign * (best_rate)
    out[15] += sign * (mk)
    out[17] += sign * (inc * mk * tl)
    out[20] += sign * ((last - pos) * (last - pos) / last if last > 0 else 0.0)
    out[21] += sign * (n_aff)


@njit(cache=True)
def features(state: np.ndarray, tab: np.ndarray, out: np.ndarray) -> None:
    """The feature vector of a position (player 0's terms minus player 1's) into ``out``
    (``N_FEATURES`` floats)."""
    # 0 + a - b in IEEE arithmetic is exactly a - b: the same features as two buffers gave
    for i in range(N_FEATURES):
        out[i] = 0.0
    # typed arguments, not constants: numba compiles a function once per constant it is
    # called with (four copies of _player_terms, and of what it calls, for 0/1 x False/True)
    _player_terms(state, tab, np.int64(0), out, 1.0, np.bool_(False))
    _player_terms(state, tab, np.int64(1), out, -1.0, np.bool_(False))


@njit(cache=True)
def all_features(state: np.ndarray, tab: np.ndarray, out: np.ndarray) -> None:
    """The feature vector of feature version 2 (the base features, then the packing
    features; ``N_ALL_FEATURES`` floats) into ``out``."""
    for i in range(N_ALL_FEATURES):
        out[i] = 0.0
    _player_terms(state, tab, np.int64(0), out, 1.0, np.bool_(True))  # (see features)
    _player_terms(state, tab, np.int64(1), out, -1.0, np.bool_(True))


@njit(cache=True)
def predicted_margin(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                     scratch: np.ndarray) -> float:
    """The model's predicted final score margin of player 0 (points)."""
    pack = params[L_PACK] > 0
    if pack:
        all_features(state, tab, scratch)
    else:
        features(state, tab, scratch)
    return weighted(params, scratch, pack)


@njit(cache=True, inline="always")
def weighted(params: np.ndarray, scratch: np.ndarray, pack: bool) -> float:
    """The model's weights times the feature values in ``scratch`` (the base features, then
    with ``pack`` the packing ones): a position's predicted margin, or a placement's prior."""
    m = 0.0
    for i in range(N_FEATURES):
        m += params[L_WEIGHTS + i] * scratch[i]
    if pack:
        for i in range(N_PACK_FEATURES):
            m += params[L_PACK_WEIGHTS + i] * scratch[N_FEATURES + i]
    return m


@njit(cache=True)
def value0(params: np.ndarray, state: np.ndarray, tab: np.ndarray, scratch: np.ndarray) -> float:
    """Player 0's expected reward in [0, 1]: exact at a finished game (win/loss, with a share
    of squashed margin), else the model's squashed prediction."""
    scale = params[L_SCALE] if params[L_SCALE] > 0 else 10.0
    if core.is_finished(state, tab):
        w = core.winner(state, tab)
        margin = core.score(state, tab, int(np.int64(0))) - core.score(state, tab, int(np.int64(1)))
        mw = params[L_MARGIN_WEIGHT]
        return (1.0 - mw) * (1.0 if w == 0 else 0.0) + mw * (0.5 + 0.5 * np.tanh(margin / scale))
    # the one place a leaf is judged: another evaluation plugs in here
    return 0.5 + 0.5 * np.tanh(predicted_margin(params, state, tab, scratch) / scale)


# --- the value network's branch (mcts(eval=net), patchsim.bots.network) --------------------
# A bot row longer than the parameter vector may carry a value network after it (the flat
# array of patchsim.bots.network, whose version is never 0); the search then judges
# unfinished leaves by it. Rows padded with zeros (patchsim.bots.learned.param_rows) carry none.
@njit(cache=True)
def leaf_value0(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                scratch: np.ndarray, net: bool | None = True) -> float:
    """:func:`value0`, or the network's value of an unfinished position when ``params``
    carries one (``scratch``: :func:`leaf_scratch` floats). ``net`` None: compiled without
    the network (no bot of the game carries one; numba prunes a branch on a None argument
    before it types the code, so the network's code is neither compiled nor loaded)."""
    if net is not None and carries_net(params) and not core.is_finished(state, tab):
        return net_value0(params[N_PARAMS:], state, tab, scratch)
    return value0(params, state, tab, scratch)


@njit(cache=True)
def carries_net(params: np.ndarray) -> bool:
    """Whether a bot row carries a value network after its parameter vector."""
    return params.shape[0] > N_PARAMS + NET_HEADER and params[N_PARAMS + H_VERSION] > 0


@njit(cache=True)
def leaf_scratch(params: np.ndarray, net: bool | None = True) -> int:
    """Floats of scratch :func:`leaf_value0` needs for this bot row (``net``: as there)."""
    if net is not None and carries_net(params):
        return max(N_ALL_FEATURES, scratch_size(params[N_PARAMS:]))
    return N_ALL_FEATURES
# --- end of the value network's branch ------------------------------------------------------


# the contact heuristic, as a tie-breaker between placements the model values alike (a
# side is worth a thousandth of a point)
CONTACT_TIE = 1e-3


@njit(cache=True)
def placement_prior(params: np.ndarray, state: np.ndarray, tab: np.ndarray, p: Int, g: Int,
                    tl: float, scratch: np.ndarray) -> float:
    """What the model makes of player p's quilt after placement ``g`` (``tl``: p's time left
    after the buy, as a share of the track): its weights on the quilt's terms
    (:func:`_quilt_terms`, the bonus tile if the placement completes a window; the empty
    regions left out, they cost a flood fill), plus the contact heuristic as a tie-breaker.
    Placements of one patch differ in these terms only, so the order of the linear model's
    values of the positions after them is this order, up to the empty regions. A bot row
    without linear weights (``eval=net``) ranks by contact alone."""
    qlo = state[core.S_QLO + p]
    qhi = state[core.S_QHI + p]
    nlo = qlo | core.placement_lo(tab, g)
    nhi = qhi | core.placement_hi(tab, g)
    owner = state[core.S_BONUS]
    if owner < 0 and tab[core.T_HAS_BONUS] == 1:
        for w in range(tab[core.T_NWINDOWS]):
            wlo = core.window_lo(tab, w)
            whi = core.window_hi(tab, w)
            if (nlo & wlo) == wlo and (nhi & whi) == whi:
                owner = p  # the placement completes a window: the tile is p's (RULES R9)
                break
    for i in range(N_ALL_FEATURES):
        scratch[i] = 0.0
    pack = params[L_PACK] > 0
    _quilt_terms(tab, nlo, nhi, tl, owner, p, pack, np.bool_(False), scratch, 1.0)
    return weighted(params, scratch, pack) + CONTACT_TIE * contact(tab, qlo, qhi, g)


@njit(cache=True)
def ranked_actions(params: np.ndarray, state: np.ndarray, tab: np.ndarray, out: np.ndarray,
                   m: Int | np.int64, scratch: np.ndarray, best_g: np.ndarray,
                   best_s: np.ndarray) -> Int:
    """Pass, then for each affordable offered patch its ``m`` best placements among all
    that fit, by :func:`placement_prior` (the searched moves of a node widened to ``m``),
    or with ``L_WIDEN_BY`` by the packing ranking the unwidened search uses
    (:func:`patchsim.bots.heuristics.top_placements`); returns how many.
    ``best_g``/``best_s`` hold ``m`` entries (no allocation per node)."""
    if params[L_WIDEN_BY] > 0:
        # the unwidened search's own ranking, m deep (one definition of it; no memo: its
        # keys do not hold m)
        return top_placements(state, tab, out, int(m), params[L_CONTACT], params[L_HOLES],
                              params[L_WINDOW], (-1))
    p = core.to_move(state, tab)
    out[0] = core.PASS
    n = 1
    btn = state[core.S_BTN + p]
    last = tab[core.T_LAST]
    pos = state[core.S_POS + p]
    for k in range(tab[core.T_OFFER]):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        if core.patch_cost(tab, patch) > btn:
            continue
        after = min(pos + core.patch_time(tab, patch), last)
        tl = (last - after) / last if last > 0 else 0.0
        kept = int(np.int64(0))  # typed: a constant 0 compiles keep_best once more
        first = core.patch_first(tab, patch)
        for g in range(first, first + core.patch_count(tab, patch)):
            if not core.fits(state, tab, p, g):
                continue
            s = placement_prior(params, state, tab, p, g, tl, scratch)
            if kept < m or s > best_s[kept - 1]:
                kept = keep_best(best_g, best_s, kept, int(m), g, s)
        for j in range(kept):
            out[n] = best_g[j]
            n += 1
    return n


@njit(cache=True)
def tree_actions(params: np.ndarray, state: np.ndarray, tab: np.ndarray, out: np.ndarray,
                 m: Int | np.int64, scratch: np.ndarray, best_g: np.ndarray, best_s: np.ndarray,
                 memo: np.ndarray, widen: bool | None = True) -> Int:
    """The moves a node of the learned search branches on: with ``L_WIDEN`` > 0 (placements
    chosen by search) the ``m`` best placements of each patch by the model
    (:func:`ranked_actions`), else, or when the widening follows the packing ranking
    (``L_WIDEN_BY``; a node is expanded with one placement a patch, as ``top_k=1`` has it),
    :func:`search_actions` (``top_k`` by the packing ranking, remembered in the search's
    ``memo``). ``widen`` None: compiled without the model's ranking (no bot
    of the caller widens; see :func:`patchsim.play.loops.code_needed`)."""
    if widen is not None and params[L_WIDEN] > 0 and params[L_WIDEN_BY] == 0:
        return ranked_actions(params, state, tab, out, m, scratch, best_g, best_s)
    return search_actions_memo(params, state, tab, out, memo)


@njit(cache=True)
def widen_width(params: np.ndarray) -> Int:
    """The most placements per patch a node of this search holds (the acts buffer)."""
    if params[L_WIDEN] > 0:
        return max(1, int(params[L_WIDEN_MAX]))
    return max(1, int(params[L_TOP_K]))


@njit(cache=True)
def search_actions(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                   out: np.ndarray) -> int:
    """Pass, and for each affordable offered patch its ``top_k`` best placements by the
    packing heuristic (contact, holes, bonus window): the shared
    :func:`patchsim.bots.heuristics.top_placements` with the learned bot's weights."""
    return search_actions_memo(params, state, tab, out, np.empty((0, MEMO_COLS), dtype=np.int64))


@njit(cache=True)
def search_actions_memo(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                        out: np.ndarray, memo: np.ndarray) -> int:
    """:func:`search_actions` through a search's placement memo
    (:func:`patchsim.bots.heuristics.new_memo`): the same moves."""
    return top_placements_memo(state, tab, out, int(max(1, int(params[L_TOP_K]))),
                               params[L_CONTACT], params[L_HOLES], params[L_WINDOW], (-1),
                               memo)


@njit(cache=True)
def learned_move(params: np.ndarray, state: np.ndarray, tab: np.ndarray, rng: np.ndarray,
                 buf: np.ndarray) -> Int:
    """:func:`learned_search`, never stopped early, from an empty tree."""
    return learned_move_kept(params, state, tab, rng, buf,
                             new_keep(int(np.int64(0)), state.shape[0]))


@njit(cache=True)
def learned_keep(params: np.ndarray, tab: np.ndarray) -> np.ndarray:
    """An empty kept tree for a learned bot of parameter row ``params``: room for a whole
    search's tree with ``L_REUSE`` (the subtree it keeps is smaller), none without."""
    n = 0
    if params[L_REUSE] > 0:
        n = 1 + min(max(1, int(params[L_ITERATIONS])), TREE_ITERATIONS) * (
            1 + tab[core.T_OFFER] * widen_width(params))
    return new_keep(n, core.S_CIRCLE + tab[core.T_NPATCH])  # a state's length (new_state)


@njit(cache=True)
def learned_move_kept(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                      rng: np.ndarray, buf: np.ndarray, keep: np.ndarray) -> Int:
    """:func:`learned_search`, never stopped early, with the seat's kept tree ``keep``
    (:func:`patchsim.bots.kept_tree.new_keep`; read and refilled with ``L_REUSE``)."""
    return learned_search(params, state, tab, rng, buf, np.zeros(1, dtype=np.int64),
                          new_memo(MEMO_SLOTS), keep)


# inlined where it is called (the compiled loops): one compiled level fewer in the loop's
# first compile (see patchsim.play.loops.choose_or_stop)
@njit(cache=True, inline="always")
def learned_search(params: np.ndarray, state: np.ndarray, tab: np.ndarray, rng: np.ndarray,
                   buf: np.ndarray, stop: np.ndarray, memo: np.ndarray, keep: np.ndarray,
                   net: bool | None = True, wars: bool | None = True,
                   widen: bool | None = True, reuse: bool | None = True) -> Int:
    """Tree search with the learned evaluation at the leaves (no rollouts).

    Expanding a node creates every searched child and evaluates it at once, so one
    iteration is a one-ply look-ahead wherever the tree ends; the expanded node backs up its
    best child (a one-ply max, the mover's view) and UCT decides where to deepen. With one
    iteration the bot is the greedy one-ply player of the model. Returns the most visited
    root move (ties: the better value).

    With ``L_EPSILON`` > 0, a share epsilon of the decisions (where there is a choice) is a
    uniform pick among the root's searched moves instead, drawn from ``rng`` (the seat's
    splitmix64 stream, as the scripted bots' epsilon). At 0 ``rng`` is never touched and the
    search is deterministic, as it always was.

    With ``L_TEMPERATURE`` > 0, while the game's ply count is below ``L_SAMPLE_PLIES``, the
    move is drawn from the root's children with probability proportional to their visit
    counts to the power 1 / temperature, from ``rng`` (the seat's stream); later, or at
    temperature 0, the most visited move plays and ``rng`` is not touched.

    Cut short (the most visited root move so far) once another thread sets ``stop[0]``,
    read every 16 iterations, so that a run stops within a move.

    ``memo`` (:func:`patchsim.bots.heuristics.new_memo`) remembers the placement ranking;
    the compiled loops keep one per bot for a whole batch of games, since its keys are exact
    (the same moves with any memo) and most positions' rankings are met again.

    ``keep`` (:mod:`patchsim.bots.kept_tree`): with ``L_REUSE`` the search starts from the
    subtree kept under this bot's last move when ``state`` is a node of it, and keeps the
    subtree under the move it plays (the compiled loops empty it at each game's start).
    ``reuse`` None: compiled without it.
    """
    p0 = core.to_move(state, tab)
    if state[core.S_PENDING] > 0:
        return core.LEATHER_BASE - leather_square(state, tab, p0)
    width = widen_width(params)
    acts = np.empty(1 + tab[core.T_OFFER] * width, dtype=np.int64)
    prior = np.empty(N_ALL_FEATURES, dtype=np.float64)
    n_root = tree_actions(params, state, tab, acts, np.int64(1), prior,
                          np.empty(width, dtype=np.int64), np.empty(width, dtype=np.float64),
                          memo, widen)
    if n_root == 1:
        return core.PASS
    # Epsilon picks among the searched root moves, not all legal moves: a uniform legal move
    # is nearly always some patch at an arbitrary spot and orientation (hundreds of
    # placements against a handful of decisions), a blunder that wrecks the quilt. The
    # searched moves are pass and each affordable patch at its best packing, so the variety
    # is in the decisions a strong player weighs (which patch, or pass), and the bot stays
    # strong. Training explores the same way (patchsim.play.selfplay.selfplay).
    eps = params[L_EPSILON]
    if eps > 0 and core.rng_unit(rng) < eps:
        return acts[core.rng_below(rng, n_root)]
    (first_child, nchild, visits, value, move, states, mover, stage,
     charge) = learned_tree(params, state, tab, stop, memo, keep, net, wars, widen, reuse)
    fc = first_child[0]
    if fc < 0:
        return core.PASS  # not reached: the first iteration always expands the root
    temperature = params[L_TEMPERATURE]
    root = int(np.int64(0))  # typed, not the literal 0: one signature of each, compiled ahead
    if temperature > 0 and state[core.S_PLY] < params[L_SAMPLE_PLIES]:
        if widen is not None and params[L_WIDEN] > 0:  # several a patch: the decision
            chosen = sample_decision_by_visits(first_child, nchild, visits, value, move,
                                               tab, root, temperature, rng)
        else:
            chosen = sample_by_visits(first_child, nchild, visits, root, temperature, rng)
    else:
        chosen = most_visited_decision(first_child, nchild, visits, value, move, tab, root)
    if reuse is not None and params[L_REUSE] > 0:
        keep_subtree(keep, chosen, state[core.S_PLY], states, first_child, nchild, visits,
                     value, mover, move, stage, charge)
    return move[chosen]


@njit(cache=True)
def model_rollout(params: np.ndarray, work: np.ndarray, tab: np.ndarray, acts: np.ndarray,
                  scratch: np.ndarray, prior: np.ndarray, best_g: np.ndarray,
                  best_s: np.ndarray, memo: np.ndarray, widen: bool | None = True) -> None:
    """Play ``work`` to the end in place, both seats the model's one-ply player (each move
    the searched move whose position the model likes best for the mover; leather by the
    leather heuristic): the learned search with one iteration, which plays no passing wars."""
    child = np.empty(work.shape[0], dtype=np.int64)
    while True:
        pm = core.to_move(work, tab)
        if pm < 0:
            return
        if work[core.S_PENDING] > 0:
            core.apply_move(work, tab, core.LEATHER_BASE - leather_square(work, tab, pm))
            continue
        na = tree_actions(params, work, tab, acts, np.int64(1), prior, best_g, best_s, memo,
                          widen)
        best = acts[0]
        best_v = -1.0
        for a in range(na):
            core.copy_into(child, work)
            play_macro(child, tab, acts[a])
            v = value0(params, child, tab, scratch)
            if pm == 1:
                v = 1.0 - v
            if v > best_v:
                best_v = v
                best = acts[a]
        play_macro(work, tab, best)


@njit(cache=True)
def passive_score(state: np.ndarray, tab: np.ndarray, p: Int | np.int64) -> float:
    """Seat p's final score if from here it only passes: its score now (docs/rules.md R11),
    its income at every income mark still ahead (R7) and a button a track space for the
    spaces still ahead (R4.2). At a finished game it is the score. Buying moves it by what
    the patch is worth to the seat (twice its squares, its income still to come) less its
    price and the spaces it costs; a pass leaves it where it was."""
    last = tab[core.T_LAST]
    pos = state[core.S_POS + p]
    ahead = max(last - pos, 0)
    return np.float64(core.score(state, tab, int(p)) + state[core.S_INC + p]
                      * income_marks_left(tab, pos) + ahead)


@njit(cache=True, inline="always")
def seat_rewards(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                 v0: float) -> tuple[float, float]:
    """The two seats' rewards at ``state`` whose value for player 0 is ``v0``: the win
    expectations v0 and 1 - v0, each with L_OWN_SCORE x the seat's passive score."""
    own = params[L_OWN_SCORE]
    if own == 0.0:
        return v0, 1.0 - v0
    return (v0 + own * passive_score(state, tab, int(np.int64(0))),
            1.0 - v0 + own * passive_score(state, tab, int(np.int64(1))))


@njit(cache=True)
def ranking_scores(params: np.ndarray, state: np.ndarray, tab: np.ndarray, move: np.ndarray,
                   first: Int, end: Int, scores: np.ndarray) -> None:
    """``scores[i]``: the packing ranking's score of the move ``move[first + i]`` at
    ``state`` (:func:`patchsim.bots.heuristics.placement_score` with the search's weights;
    0 for a pass), for ``i < end - first``."""
    p = core.to_move(state, tab)
    qlo = state[core.S_QLO + p]
    qhi = state[core.S_QHI + p]
    wh = params[L_HOLES]
    bonus_open = state[core.S_BONUS] < 0 and tab[core.T_HAS_BONUS] == 1
    holes0 = count_holes(tab, qlo, qhi) if wh != 0.0 else 0
    for i in range(end - first):
        g = move[first + i]
        scores[i] = 0.0
        if g >= 0:
            scores[i] = placement_score(tab, qlo, qhi, holes0, g, params[L_CONTACT], wh,
                                        params[L_WINDOW], bonus_open)


@njit(cache=True)
def placement_charges(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                      move: np.ndarray, charge: np.ndarray, first: Int, end: Int,
                      scores: np.ndarray) -> None:
    """``charge[ch]`` for the children ``first .. end - 1`` of a node at ``state``: how far
    each child's placement falls below the best placement of the same patch among them by
    the packing ranking (:func:`ranking_scores`), times ``L_PLACE_COST`` points a unit, in
    reward at the squash's slope (``scores``: room for ``end - first`` floats). A pass and
    a patch's best placement cost nothing, so a node holding one placement a patch (the
    first stage of the widening) is charged nothing."""
    scale = params[L_SCALE] if params[L_SCALE] > 0 else 10.0
    per_unit = params[L_PLACE_COST] * 0.5 / scale
    ranking_scores(params, state, tab, move, first, end, scores)
    for i in range(end - first):
        g = move[first + i]
        charge[first + i] = 0.0
        if g < 0:
            continue
        patch = core.placement_patch(tab, g)
        best = scores[i]
        for j in range(end - first):
            o = move[first + j]
            if o >= 0 and core.placement_patch(tab, o) == patch and scores[j] > best:
                best = scores[j]
        charge[first + i] = per_unit * (best - scores[i])


@njit(cache=True)
def distinct_placements(params: np.ndarray, state: np.ndarray, tab: np.ndarray,
                        acts: np.ndarray, na: Int, scores: np.ndarray) -> Int:
    """Keep of ``acts[:na]`` (pass, then each patch's placements best first) the pass and,
    per patch, the first placement of each packing-ranking score; returns how many are
    left. Placements of one patch that the ranking scores alike are mostly mirror images
    of one another (an empty quilt's corners), and a widened node searching them all splits
    the patch's visits among copies of one move."""
    ranking_scores(params, state, tab, acts, 0, na, scores)
    n = 0
    for a in range(na):
        g = acts[a]
        sc = scores[a]
        if g >= 0:
            patch = core.placement_patch(tab, g)
            copy = False
            for b in range(n):
                if (acts[b] >= 0 and core.placement_patch(tab, acts[b]) == patch
                        and scores[b] == sc):
                    copy = True
                    break
            if copy:
                continue
        acts[n] = g
        scores[n] = sc
        n += 1
    return n


@njit(cache=True)
def judge_children(params: np.ndarray, states: np.ndarray, visits: np.ndarray,
                   value: np.ndarray, tab: np.ndarray, first: Int, end: Int, pm: Int,
                   scratch: np.ndarray, charge: np.ndarray,
                   net: bool | None = True) -> tuple[float, float]:
    """Evaluate the new children ``first .. end - 1`` of a node where ``pm`` moves (one
    visit each, valued by the mover's reward) and return the two seats' rewards (player 0,
    player 1) at the best of them for the mover: what the expansion (or widening) backs
    up. ``charge``: what each child's placement costs the mover, in reward (``L_PLACE_COST``;
    empty: nothing, the arithmetic as before)."""
    own = params[L_OWN_SCORE]
    charged = charge.shape[0] > 0
    best_u = -np.inf
    best_v = 0.0  # the mover's win expectation at the best child
    best_ch = first
    for ch in range(first, end):
        v = leaf_value0(params, states[ch], tab, scratch, net)
        if pm == 1:
            v = 1.0 - v
        u = v
        if own != 0.0:
            u = v + own * passive_score(states[ch], tab, np.int64(pm))
        if charged:
            u -= charge[ch]
        visits[ch] = 1
        value[ch] = u
        if u > best_u:
            best_u = u
            best_v = v
            best_ch = ch
    if charged:
        # the mover's reward at the best child, its charge included (the other seat's is its
        # win expectation, with its own score term)
        other = 1.0 - best_v
        if own != 0.0:
            other += own * passive_score(states[best_ch], tab, np.int64(1 - pm))
        if pm == 0:
            return best_u, other
        return other, best_u
    if own == 0.0:
        # the win expectations alone, in the same arithmetic as ever (the same games)
        v0 = best_v if pm == 0 else 1.0 - best_v
        return v0, 1.0 - v0
    other = 1.0 - best_v + own * passive_score(states[best_ch], tab, np.int64(1 - pm))
    if pm == 0:
        return best_u, other
    return other, best_u


@njit(cache=True)
def learned_tree(params: np.ndarray, state: np.ndarray, tab: np.ndarray, stop: np.ndarray,
                 memo: np.ndarray, keep: np.ndarray, net: bool | None = True,
                 wars: bool | None = True, widen_code: bool | None = True,
                 reuse: bool | None = True):
    """The tree :func:`learned_search` grows from ``state`` (not finished, no leather
    pending): (first_child, nchild, visits, value, move, states, mover, stage, charge), node
    0 the root. Deterministic: the search draws nothing from a random stream. ``memo``: the
    bot's placement memo (a widening search ranks by the model and never reads it).
    ``keep``: with ``L_REUSE``, the tree starts as the kept subtree whose root is ``state``
    if there is one (:func:`patchsim.bots.kept_tree.find_kept`); it is only read here.

    With ``L_WAR_ROLLOUTS`` = k > 0, a node the tree reaches by k passes in a row (a
    passing war: the offer frozen) backs up the result of :func:`model_rollout` from it
    instead of the model's value. Why: the tree is deep only where the search already
    likes a move. A line of passes keeps the model's margin steady (nobody buys, the
    quilts stay empty, and the model prices an empty square mid-game at a fraction of its
    end value), so it is followed deep, while a buy line stops right after the opponent's
    answers, before the buyer's own; the search then drifts into passing wars that end with
    both seats far below zero. The model's one-ply player, which wars never, plays the
    war out to the end and shows what it is worth.

    ``net``, ``wars``, ``widen_code``, ``reuse`` None: compiled without the value network,
    the war rollouts, the progressive widening, the kept tree
    (:func:`patchsim.play.loops.code_needed`).
    """
    iters = max(1, int(params[L_ITERATIONS]))
    c = params[L_C]
    time_ms = params[L_TIME_MS]
    t_start = now_ms() if time_ms > 0 else 0.0
    width = widen_width(params)
    max_children = 1 + tab[core.T_OFFER] * width
    acts = np.empty(max_children, dtype=np.int64)
    war = int(params[L_WAR_ROLLOUTS])
    widen = int(params[L_WIDEN])
    work = np.empty(state.shape[0], dtype=np.int64)
    # iterations bound the tree (with time_ms too); the cap bounds memory for huge budgets.
    # A widening search expands to one placement a patch and moves a block of children at
    # each widening: twice the first expansions' room, and room for a few full blocks
    n = min(iters, TREE_ITERATIONS)
    if widen > 0:
        cap = 1 + 2 * n * (1 + tab[core.T_OFFER]) + 8 * max_children
    else:
        cap = 1 + n * max_children
    kept_at = -1
    if reuse is not None and params[L_REUSE] > 0:
        kept_at = find_kept(keep, state)
        if kept_at >= 0:  # room for the kept subtree (its rows are all after its root's)
            cap += kept_nodes(keep) - kept_at
    states, first_child, nchild, visits, value, mover, move, path = new_tree(cap, state)
    stage = np.zeros(cap if widen > 0 else 1, dtype=np.int64)
    scratch = np.empty(leaf_scratch(params, net), dtype=np.float64)
    prior = np.empty(N_ALL_FEATURES, dtype=np.float64)
    best_g = np.empty(width, dtype=np.int64)
    best_s = np.empty(width, dtype=np.float64)
    # placements charged for falling below their patch's best (L_PLACE_COST), in a search
    # widened by the packing ranking: per node, taken off its mover's reward on every line
    # through it. Empty: no charges (judge_children's arithmetic as before)
    charged = (widen_code is not None and widen > 0 and params[L_WIDEN_BY] > 0
               and params[L_PLACE_COST] > 0)
    charge = np.zeros(cap if charged else 0, dtype=np.float64)
    pscores = np.empty(max_children, dtype=np.float64)
    # typed, not constants: numba would compile expand, uct_child and judge_children once
    # more for the first iteration's constant node numbers
    nodes: Int = int(np.int64(1))
    if reuse is not None and kept_at >= 0:
        nodes = restore_subtree(keep, kept_at, states, first_child, nchild, visits, value,
                                mover, move, stage, charge)
    for it in range(iters):
        if time_ms > 0 and it % CLOCK_EVERY == CLOCK_EVERY - 1 and now_ms() - t_start > time_ms:
            break
        # never before the first iteration has expanded the root
        if it % STOP_EVERY == STOP_EVERY - 1 and stop[0] != 0:
            break
        node: Int = int(np.int64(0))
        depth = 0
        path[0] = 0
        widened = False
        r0 = 0.5
        r1 = 0.5
        # select: descend by UCT through expanded nodes (every child has been evaluated,
        # so counts one visit)
        while first_child[node] >= 0:
            # widen_code None: compiled without the widening (pruned, as the war branch)
            if widen_code is not None and widen > 0:
                # progressive widening: at widen * 4^s visits a node holding 2^s placements
                # a patch takes the next 2^s best (by the model, or with L_WIDEN_BY by the
                # packing ranking; k(n) ~ sqrt(n))
                m_now = np.int64(1) << stage[node]
                if m_now < width and visits[node] >= widen * (np.int64(4) ** stage[node]):
                    m_new = min(2 * m_now, width)
                    pm = core.to_move(states[node], tab)
                    na = ranked_actions(params, states[node], tab, acts, m_new, prior, best_g,
                                        best_s)
                    if params[L_WIDEN_BY] > 0:  # the ranking's ties: one of each
                        na = distinct_placements(params, states[node], tab, acts, na, pscores)
                    stage[node] += 1
                    if nodes + nchild[node] + na <= cap:
                        nodes, first_new = regrow(states, first_child, nchild, visits, value,
                                                  mover, move, stage, tab, node, nodes, acts,
                                                  na, pm)
                        if charged:  # the whole block: its children moved
                            placement_charges(params, states[node], tab, move, charge,
                                              first_child[node], nodes, pscores)
                        if first_new < nodes:
                            # this iteration backs up the best new move, as an expansion
                            r0, r1 = judge_children(params, states, visits, value,
                                                    tab, first_new, nodes, pm, scratch,
                                                    charge, net)
                            if not charged:
                                widened = True
                                break
                            # charged, the new placements are the patch's worse ones: their
                            # best is no news about the node; the descent goes on by UCT
            # several placements a patch: the decision, then where (widen_code None:
            # compiled without it, as the widening)
            if widen_code is not None and widen > 0:
                node = grouped_uct_child(first_child, nchild, visits, value, move, tab, node,
                                         c)
            else:
                node = uct_child(first_child, nchild, visits, value, node, c)
            depth += 1
            path[depth] = node
        if not widened:
            st = states[node]
            if core.is_finished(st, tab):
                r0, r1 = seat_rewards(params, st, tab, value0(params, st, tab, scratch))
            else:
                pm = core.to_move(st, tab)
                na = tree_actions(params, st, tab, acts, np.int64(1), prior, best_g, best_s, memo,
                                  widen_code)
                if nodes + na > cap:
                    break  # the tree is full (time budget beyond the sized tree): decide now
                first = nodes
                nodes = expand(states, first_child, nchild, mover, move, tab, node, nodes,
                               acts, na, pm)
                if widen_code is not None and charged:
                    placement_charges(params, st, tab, move, charge, first, nodes, pscores)
                # evaluate every new child at once: the mover's view, and its best backs up
                r0, r1 = judge_children(params, states, visits, value, tab, first, nodes, pm,
                                        scratch, charge, net)
                # wars None: compiled without the war rollouts (no bot of the game sets
                # them; the branch on a None argument is pruned, as leaf_value0's)
                if wars is not None and war > 0 and depth >= war:
                    run = 0  # passes in a row that led here (within the tree)
                    while run < war and move[path[depth - run]] == core.PASS:
                        run += 1
                    if run == war:
                        core.copy_into(work, st)
                        model_rollout(params, work, tab, acts, scratch, prior, best_g, best_s,
                                      memo, widen_code)
                        r0, r1 = seat_rewards(params, work, tab,
                                              value0(params, work, tab, scratch))
        # the placements on the line, each charged to the seat that made it
        if widen_code is not None and charged:
            for d in range(1, depth + 1):
                if mover[path[d]] == 0:
                    r0 -= charge[path[d]]
                else:
                    r1 -= charge[path[d]]
        backup(path, depth, visits, value, mover, r0, r1)
    return first_child, nchild, visits, value, move, states, mover, stage, charge


def learned_root(params: np.ndarray, state: np.ndarray,
                 tab: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The root of the learned search's tree at ``state`` (diagnostics and tests): the move
    codes of its children, their visit counts and their mean values (the mover's win
    expectation after the move)."""
    first_child, nchild, visits, value, move, _, _, _, _ = learned_tree(
        params, state, tab, np.zeros(1, dtype=np.int64), new_memo(MEMO_SLOTS),
        new_keep(0, state.shape[0]))
    sl = slice(first_child[0], first_child[0] + nchild[0])
    return move[sl].copy(), visits[sl].copy(), value[sl] / np.maximum(visits[sl], 1)
