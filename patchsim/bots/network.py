"""The value network of ``mcts(eval=net)``, compiled: its inputs, its forward pass and the
leaf value the learned search reads from it (issue 20: a stronger top of the ladder).

The network is a small multilayer perceptron (one or two hidden ReLU layers) that predicts
the final score margin, in points, of the player to move. Its inputs (``N_INPUTS``) describe
the position from that player's side: per player (the mover first, then the opponent) the
quantities the linear model uses (buttons, income still to come, empty squares, holes,
time left, bonus, leather ahead, what the offer is worth to them) plus quilt-shape terms
(pairs and 2x2 blocks of empty squares: whether big patches still fit), and per offered
patch (the next three) its price, time, size, income and whether it fits and is affordable
for each player. Seen from the mover, one network serves both seats (a position and its
mirror get the same value by construction).

A network is ONE flat float64 array (``net``): a header (``H_*``: version, layer sizes,
win-probability scale), the input standardisation (mean, sd) and the weights, layer by
layer. The same array is what a model file stores, what the numpy reference
(:func:`forward_numpy`) and training read, and what the compiled search reads: the bot's
row handed to the compiled game loops is its parameter vector (``policies.N_PARAMS``
floats) followed by this array (the loops take rows of any width), so the network's size
is not bounded by the parameter vector and no loop signature changed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from patchsim.bots.heuristics import best_window, count_holes, income_marks_left
from patchsim.engine import core

NET_VERSION = 1  # the layout of the flat array and the definition of the inputs
N_INPUTS = 2 * 17 + 3 * 8 + 2  # 60: per player, per offered patch, shared
N_PLAYER = 17  # per-player inputs (mover, then opponent)
N_OFFER = 3  # offered patches described
N_PER_OFFER = 8

# --- header of the flat network array ----------------------------------------------------------
H_VERSION = 0
H_INPUTS = 1
H_HIDDEN1 = 2
H_HIDDEN2 = 3  # 0: one hidden layer
H_SCALE = 4  # points of predicted margin for tanh(1): the win-probability squash
HEADER = 8

INPUT_NAMES = tuple(
    [f"{who}_{name}" for who in ("me", "opp") for name in (
        "buttons", "income", "income_marks_left", "income_to_come", "empty_share", "holes",
        "time_left_share", "bonus_owned", "bonus_window_fill", "leather_near",
        "empty_pairs_share", "empty_blocks_share", "affordable_offer", "offer_best_net",
        "buttons_x_time_left", "score_now", "projected_score")]
    + [f"offer{k}_{name}" for k in range(N_OFFER) for name in (
        "cost", "time", "size", "income", "fits_me", "fits_opp", "affordable_me",
        "affordable_opp")]
    + ["position_lead", "shared_space"])
assert len(INPUT_NAMES) == N_INPUTS


def n_weights(n_in: int, h1: int, h2: int) -> int:
    """Length of the flat array of a network with these layer sizes."""
    if h2 > 0:
        return HEADER + 2 * n_in + h1 * n_in + h1 + h2 * h1 + h2 + h2 + 1
    return HEADER + 2 * n_in + h1 * n_in + h1 + h1 + 1


@njit(cache=True, inline="always")
def _shift_down(lo: int, hi: int, k: int) -> tuple[int, int]:
    """The 128-bit board (lo, hi) shifted towards bit 0 by k (0 < k < 64), logically."""
    ulo = np.uint64(lo)
    uhi = np.uint64(hi)
    kk = np.uint64(k)
    # np.int64 of a uint64 reinterprets the bits (a board, not a number)
    return (np.int64((ulo >> kk) | (uhi << (np.uint64(64) - kk))),  # type: ignore[return-value]
            np.int64(uhi >> kk))


@njit(cache=True)
def _player_inputs(state: np.ndarray, tab: np.ndarray, p: int, out: np.ndarray,
                   at: int) -> None:
    """Player p's N_PLAYER inputs into ``out[at:]`` (scaled to be of order one)."""
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
    empty = np.float64(core.empty_squares(state, tab, p))
    holes = np.float64(count_holes(tab, qlo, qhi))
    bp = np.float64(tab[core.T_BONUS_POINTS]) if tab[core.T_HAS_BONUS] == 1 else 0.0
    owned = 1.0 if state[core.S_BONUS] == p else 0.0
    fill = 0.0
    if bp != 0.0 and state[core.S_BONUS] < 0 and tab[core.T_NWINDOWS] > 0:
        wsize = (core.popcount64(core.window_lo(tab, 0))
                 + core.popcount64(core.window_hi(tab, 0)))
        if wsize > 0:
            fill = best_window(tab, qlo, qhi) / wsize
    near = 0.0
    for i in range(tab[core.T_NLEATHER]):
        if state[core.S_LEATHER_TAKEN] & (1 << int(i)):
            continue
        m = core.leather_mark(tab, i)
        if m > pos:
            near += 0.75 ** (m - pos - 1)
    # quilt shape: empty squares with an empty right neighbour, with an empty one below,
    # and empty 2x2 blocks (big patches need them; holes alone miss this)
    cols = tab[core.T_COLS]
    full_lo, full_hi = core.full_quilt(tab)
    elo = ~qlo & full_lo
    ehi = ~qhi & full_hi
    last_lo, last_hi = core.border_line(tab, core.BORDER_LAST_COL)
    rlo, rhi = _shift_down(elo, ehi, 1)
    hlo = elo & rlo & ~last_lo  # the right neighbour exists: not in the last column
    hhi = ehi & rhi & ~last_hi
    vlo, vhi = _shift_down(elo, ehi, cols)
    pairs = (core.popcount64(hlo) + core.popcount64(hhi) + core.popcount64(elo & vlo)
             + core.popcount64(ehi & vhi))
    blo, bhi = _shift_down(hlo, hhi, cols)
    blocks = core.popcount64(hlo & blo) + core.popcount64(hhi & bhi)
    n_aff = 0.0
    best_net = 0.0
    for k in range(min(N_OFFER, tab[core.T_OFFER])):
        patch = core.offer_patch(state, tab, k)
        if patch < 0:
            break
        cost = core.patch_cost(tab, patch)
        if cost > btn:
            continue
        n_aff += 1.0
        net = (pen * core.patch_size(tab, patch) + core.patch_income(tab, patch) * mk
               - cost)
        if net > best_net:
            best_net = net
    score_now = btn - pen * empty + bp * owned
    out[at + 0] = btn / 20.0
    out[at + 1] = inc / 10.0
    out[at + 2] = mk / 9.0
    out[at + 3] = inc * mk / 30.0
    out[at + 4] = empty / nsq if nsq > 0 else 0.0
    out[at + 5] = holes / 5.0
    out[at + 6] = tl
    out[at + 7] = owned
    out[at + 8] = fill
    out[at + 9] = near
    out[at + 10] = pairs / nsq if nsq > 0 else 0.0
    out[at + 11] = blocks / nsq if nsq > 0 else 0.0
    out[at + 12] = n_aff / 3.0
    out[at + 13] = best_net / 20.0
    out[at + 14] = btn * tl / 20.0
    out[at + 15] = score_now / 30.0
    out[at + 16] = (score_now + inc * mk) / 30.0


@njit(cache=True)
def _fits_anywhere(state: np.ndarray, tab: np.ndarray, p: int, patch: int) -> bool:
    # fewer empty squares than the patch has: no placement to scan (the late game's case,
    # where a scan would find none after trying them all)
    if core.patch_size(tab, patch) > core.empty_squares(state, tab, p):
        return False
    first = core.patch_first(tab, patch)
    for g in range(first, first + core.patch_count(tab, patch)):
        if core.fits(state, tab, p, g):
            return True
    return False


@njit(cache=True)
def net_inputs(state: np.ndarray, tab: np.ndarray, me: int, out: np.ndarray) -> None:
    """The network's N_INPUTS inputs of a position seen from player ``me`` into ``out``."""
    opp = 1 - me
    _player_inputs(state, tab, me, out, 0)
    _player_inputs(state, tab, opp, out, N_PLAYER)
    at = 2 * N_PLAYER
    for k in range(N_OFFER):
        patch = core.offer_patch(state, tab, k) if k < tab[core.T_OFFER] else -1
        base = at + k * N_PER_OFFER
        if patch < 0:
            for j in range(N_PER_OFFER):
                out[base + j] = 0.0
            continue
        cost = core.patch_cost(tab, patch)
        out[base + 0] = cost / 10.0
        out[base + 1] = core.patch_time(tab, patch) / 6.0
        out[base + 2] = core.patch_size(tab, patch) / 8.0
        out[base + 3] = core.patch_income(tab, patch) / 3.0
        out[base + 4] = 1.0 if _fits_anywhere(state, tab, me, patch) else 0.0
        out[base + 5] = 1.0 if _fits_anywhere(state, tab, opp, patch) else 0.0
        out[base + 6] = 1.0 if cost <= state[core.S_BTN + me] else 0.0
        out[base + 7] = 1.0 if cost <= state[core.S_BTN + opp] else 0.0
    last = tab[core.T_LAST]
    lead = state[core.S_POS + opp] - state[core.S_POS + me]  # how far the mover may go
    out[at + N_OFFER * N_PER_OFFER] = lead / last if last > 0 else 0.0
    out[at + N_OFFER * N_PER_OFFER + 1] = 1.0 if lead == 0 else 0.0


@njit(cache=True, inline="always")
def _dense(net: np.ndarray, w: int, b: int, n_src: int, n_dst: int,
           work: np.ndarray, src: int, dst: int, relu: bool) -> None:
    """work[dst:dst + n_dst] = (relu of) bias + sum over i of work[src + i] * W[i, :], the
    sum taken in input order i = 0, 1, ... (W stored input-major: row i holds the weights
    from input i to every output, so the inner loop runs over contiguous outputs and
    vectorises without reordering any sum)."""
    for j in range(n_dst):
        work[dst + j] = net[b + j]
    for i in range(n_src):
        a = work[src + i]
        if a == 0.0:
            continue  # a dead ReLU unit adds nothing (exactly: 0 * w is 0 for finite w)
        row = w + i * n_dst
        for j in range(n_dst):
            work[dst + j] += net[row + j] * a
    if relu:
        for j in range(n_dst):
            if work[dst + j] < 0.0:
                work[dst + j] = 0.0


@njit(cache=True)
def work_size(net: np.ndarray) -> int:
    """Floats of scratch :func:`forward` needs: inputs, hidden layers, output."""
    return int(net[H_INPUTS]) + int(net[H_HIDDEN1]) + int(net[H_HIDDEN2]) + 1


@njit(cache=True)
def forward(net: np.ndarray, x: np.ndarray, work: np.ndarray) -> float:
    """The network's output (predicted margin of the mover, in points) for one input row
    ``x``; ``work`` holds :func:`work_size` floats. The one forward pass: the search, the
    Python API (:func:`predict`) and training use it; the tests hold it to a numpy reference."""
    n_in = int(net[H_INPUTS])
    h1 = int(net[H_HIDDEN1])
    h2 = int(net[H_HIDDEN2])
    mu = HEADER
    sd = mu + n_in
    for i in range(n_in):
        work[i] = (x[i] - net[mu + i]) / net[sd + i]
    w1 = sd + n_in
    b1 = w1 + n_in * h1
    _dense(net, w1, b1, n_in, h1, work, 0, n_in, True)
    at = b1 + h1
    src = n_in
    width = h1
    if h2 > 0:
        _dense(net, at, at + h1 * h2, h1, h2, work, n_in, n_in + h1, True)
        at = at + h1 * h2 + h2
        src = n_in + h1
        width = h2
    out = src + width
    _dense(net, at, at + width, width, 1, work, src, out, False)
    return work[out]


@njit(cache=True)
def scratch_size(net: np.ndarray) -> int:
    """Floats of scratch :func:`net_margin_into` needs: the inputs, then :func:`forward`'s."""
    return N_INPUTS + work_size(net)


@njit(cache=True)
def net_margin_into(net: np.ndarray, state: np.ndarray, tab: np.ndarray, me: int,
                    buf: np.ndarray) -> float:
    """:func:`net_margin` with the caller's scratch (:func:`scratch_size` floats): the
    search judges its leaves without allocating."""
    x = buf[:N_INPUTS]
    net_inputs(state, tab, me, x)
    return forward(net, x, buf[N_INPUTS:])


@njit(cache=True)
def net_margin(net: np.ndarray, state: np.ndarray, tab: np.ndarray, me: int) -> float:
    """The network's predicted final margin (points) of player ``me``."""
    return net_margin_into(net, state, tab, me, np.empty(scratch_size(net), dtype=np.float64))


@njit(cache=True)
def net_value0(net: np.ndarray, state: np.ndarray, tab: np.ndarray, buf: np.ndarray) -> float:
    """Player 0's expected reward in [0, 1] of an unfinished position by the network:
    its prediction for the player to move, squashed, seen from player 0 (``buf``: scratch
    of :func:`scratch_size` floats)."""
    me = core.to_move(state, tab)
    if me < 0:
        me = 0
    v = 0.5 + 0.5 * np.tanh(net_margin_into(net, state, tab, me, buf) / net[H_SCALE])
    return v if me == 0 else 1.0 - v


@njit(cache=True)
def batch_inputs(states: np.ndarray, tab: np.ndarray, mes: np.ndarray, out: np.ndarray) -> None:
    """:func:`net_inputs` of many positions (rows of ``states``, seen from ``mes``)."""
    for i in range(states.shape[0]):
        net_inputs(states[i], tab, mes[i], out[i])


@njit(cache=True)
def batch_forward(net: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """:func:`forward` of every row of ``x`` into ``out``."""
    work = np.empty(work_size(net), dtype=np.float64)
    for i in range(x.shape[0]):
        out[i] = forward(net, x[i], work)


def predict(net: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The compiled forward pass over the rows of ``x`` (n, inputs): predicted margins."""
    x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1, int(net[H_INPUTS]))
    out = np.empty(x.shape[0], dtype=np.float64)
    batch_forward(np.ascontiguousarray(net, dtype=np.float64), x, out)
    return out


# --- the flat array, from and to numpy layers (training and model files) -------------------------
def pack(layers: list[tuple[np.ndarray, np.ndarray]], mean: np.ndarray, sd: np.ndarray,
         scale: float) -> np.ndarray:
    """The flat network array of dense ``layers`` [(W (out, in), b (out,)), ...] (the last
    one has one output), input standardisation ``mean``/``sd`` and squash ``scale``."""
    if len(layers) not in (2, 3) or layers[-1][0].shape[0] != 1:
        raise ValueError("a network has one or two hidden layers and one output")
    n_in = layers[0][0].shape[1]
    h1 = layers[0][0].shape[0]
    h2 = layers[1][0].shape[0] if len(layers) == 3 else 0
    head = np.zeros(HEADER)
    head[H_VERSION] = NET_VERSION
    head[H_INPUTS] = n_in
    head[H_HIDDEN1] = h1
    head[H_HIDDEN2] = h2
    head[H_SCALE] = scale
    parts = [head, np.asarray(mean, dtype=np.float64), np.asarray(sd, dtype=np.float64)]
    for w, b in layers:  # W (out, in) is stored input-major: W.T row by row
        parts += [np.asarray(w, dtype=np.float64).T.ravel(), np.asarray(b, dtype=np.float64)]
    out = np.concatenate(parts)
    assert out.shape[0] == n_weights(n_in, h1, h2)
    return out


def unpack(net: np.ndarray) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray,
                                     np.ndarray, float]:
    """(layers, mean, sd, scale) of a flat network array (the inverse of :func:`pack`)."""
    n_in, h1, h2 = (int(net[H_INPUTS]), int(net[H_HIDDEN1]), int(net[H_HIDDEN2]))
    at = HEADER
    mean = net[at:at + n_in]
    sd = net[at + n_in:at + 2 * n_in]
    at += 2 * n_in
    sizes = [n_in, h1] + ([h2] if h2 > 0 else []) + [1]
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        w = net[at:at + a * b].reshape(a, b).T
        at += a * b
        layers.append((w, net[at:at + b]))
        at += b
    return layers, mean, sd, float(net[H_SCALE])


def forward_numpy(net: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A numpy reference of :func:`forward` (rows of ``x``), written from the layers: the
    tests hold the compiled pass to it, training's gradients are taken through it."""
    layers, mean, sd, _ = unpack(net)
    h = (np.atleast_2d(x) - mean) / sd
    for w, b in layers[:-1]:
        h = np.maximum(h @ w.T + b, 0.0)
    w, b = layers[-1]
    return (h @ w.T + b)[:, 0]


# --- training: one pass of minibatch Adam over the flat array, compiled ---------------------------
# Plain loops, no BLAS: the sums run in one fixed order, so the same data and seed give the
# same network bit for bit whatever the machine's thread count (a BLAS product need not).
LOSS_POINTS = 20.0  # the squared error is taken on (prediction - target) / LOSS_POINTS


@njit(cache=True)
def train_epoch(net: np.ndarray, x: np.ndarray, y: np.ndarray, order: np.ndarray,
                batch: int, lr: float, step: int, m: np.ndarray,
                v: np.ndarray, weight_decay: float) -> tuple[float, int]:
    """One pass over the rows ``order`` of (``x``, ``y``: targets in points) by minibatch
    Adam on the weights of ``net`` (in place; header and standardisation untouched), through
    :func:`forward`. ``m``/``v`` are Adam's moment arrays (the shape of ``net``) and ``step``
    its count; returns (mean squared error in points^2, new step count)."""
    b1_, b2_, eps = 0.9, 0.999, 1e-8
    n_in = int(net[H_INPUTS])
    h1 = int(net[H_HIDDEN1])
    h2 = int(net[H_HIDDEN2])
    w1 = HEADER + 2 * n_in
    b1 = w1 + n_in * h1
    w2 = b1 + h1  # the second hidden layer, or the output layer when there is none
    b2 = w2 + h1 * h2
    w3 = b2 + h2 if h2 > 0 else w2
    width = h2 if h2 > 0 else h1
    b3 = w3 + width
    top = n_in + h1 if h2 > 0 else n_in  # where the last hidden layer sits in ``work``
    first = w1  # the trainable part: weights and biases
    grad = np.zeros(net.shape[0], dtype=np.float64)
    work = np.empty(work_size(net), dtype=np.float64)
    dtop = np.empty(width, dtype=np.float64)
    d1 = np.empty(h1, dtype=np.float64)
    total = 0.0
    n = order.shape[0]
    for start in range(0, n, batch):
        stop = min(n, start + batch)
        grad[first:] = 0.0
        for r in range(start, stop):
            i = order[r]
            out = forward(net, x[i], work)  # work: inputs, hidden layer(s), output
            total += (out - y[i]) ** 2
            dy = (out - y[i]) / (LOSS_POINTS * LOSS_POINTS)  # d/d out of (err/LP)^2 / 2
            grad[b3] += dy
            for k in range(width):
                a = work[top + k]
                grad[w3 + k] += dy * a
                dtop[k] = dy * net[w3 + k] if a > 0.0 else 0.0
            if h2 > 0:
                for j in range(h2):
                    grad[b2 + j] += dtop[j]
                for k in range(h1):
                    a = work[n_in + k]
                    d1[k] = 0.0
                    if a <= 0.0:
                        continue
                    row = w2 + k * h2
                    s = 0.0
                    for j in range(h2):
                        grad[row + j] += a * dtop[j]
                        s += net[row + j] * dtop[j]
                    d1[k] = s
            else:
                for k in range(h1):
                    d1[k] = dtop[k]
            for j in range(h1):
                grad[b1 + j] += d1[j]
            for k in range(n_in):
                a = work[k]
                row = w1 + k * h1
                for j in range(h1):
                    grad[row + j] += a * d1[j]
        step += 1
        scale = 1.0 / (stop - start)
        c1 = 1.0 - b1_ ** step
        c2 = 1.0 - b2_ ** step
        for k in range(first, net.shape[0]):
            g = grad[k] * scale
            m[k] = b1_ * m[k] + (1.0 - b1_) * g
            v[k] = b2_ * v[k] + (1.0 - b2_) * g * g
            net[k] -= lr * ((m[k] / c1) / (np.sqrt(v[k] / c2) + eps) + weight_decay * net[k])
    return total / max(n, 1), step
