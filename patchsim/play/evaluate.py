"""Evaluation over a game: from every position, each seat's chance to win and the expected
final margin, estimated by compiled rollouts.

From each position of a game, ``rollouts`` games are played to the end by a compiled
non-search bot in both seats (by default ``greedy(epsilon=0.1)``: the strongest scripted
policy, with a little noise so that the rollouts differ), each with its own seeded random
streams. The share that seat 0 wins is its win probability under that policy, with a Wilson
interval; the mean of score0 - score1 is the expected margin. This is the same estimate the
search bot (:mod:`patchsim.bots.search`) builds its tree from, taken at every position of
the game instead of at the root of a search. Every rollout is one call of the compiled game
loop (:func:`patchsim.play.loops.play_game`), so no rule is applied outside the engine.

Where the ruleset has a trained model (:mod:`patchsim.bots.learned`), the strongest available
evaluation is the learned one: :func:`evaluate_game` with ``method="auto"`` (the default)
reads each position's win probability and margin from the model instead (no rollouts; the
interval columns then equal the estimate), and says which it used.

``lead_change`` marks the positions where the favourite (the seat above 50%) differs from
the favourite before it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.bots.features import N_ALL_FEATURES, predicted_margin, value0
from patchsim.bots.learned import ModelError, fill_params, model_for
from patchsim.bots.registry import BotSpecError, CompiledBot, MCTSBot, make_bot
from patchsim.bots.scripted import N_PARAMS
from patchsim.engine import core
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, RecordError
from patchsim.play import loops

DEFAULT_EVAL_BOT = "greedy(epsilon=0.1)"
# how positions are judged: the learned model where the ruleset has one (auto), or rollouts
EvalMethod = Literal["auto", "rollouts"]
DEFAULT_ROLLOUTS = 200
MAX_ROLLOUTS = 100_000

COLUMNS = ("ply", "to_move", "rollouts", "win0", "win0_lo", "win0_hi", "margin", "favourite",
           "lead_change")


class EvaluationStopped(Exception):
    """An evaluation given up because its ``stop`` callback said so (e.g. a server whose
    client left)."""


def rollout_bot(spec: str | CompiledBot = DEFAULT_EVAL_BOT) -> CompiledBot:
    """The compiled bot that plays the rollouts; BotSpecError for a search bot (a search per
    rollout move would take minutes) or a bot that is not compiled."""
    bot = spec if isinstance(spec, CompiledBot) else make_bot(spec)
    if isinstance(bot, MCTSBot) or not isinstance(bot, CompiledBot):
        raise BotSpecError(f"evaluation bot {getattr(bot, 'spec', spec)!r}: rollouts need a "
                           "built-in non-search bot (random, pass, first-fit, greedy, income, "
                           "area, bonus)")
    return bot


def rollouts(game: Game, bot: CompiledBot, n: int, seed: int = 0,
             stop: Callable[[], bool] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Play ``n`` games from ``game``'s position to the end with ``bot`` in both seats.

    Returns (winners, margins score0 - score1), one entry per rollout; ``game`` is unchanged.
    The streams depend on ``seed`` and the position's ply only, so an evaluation repeats.
    ``stop`` is asked before every rollout; EvaluationStopped when it says True."""
    if n < 1 or n > MAX_ROLLOUTS:
        raise ValueError(f"rollouts: give between 1 and {MAX_ROLLOUTS}, got {n}")
    kinds = np.array([bot.kind, bot.kind], dtype=np.int64)
    params = np.stack([bot.params, bot.params])
    streams = np.random.SeedSequence([seed, game.ply]).generate_state(2 * n, dtype=np.uint64)
    no_moves = np.empty(0, dtype=np.int64)  # the loop writes moves and events only if it has room
    no_events = np.zeros((0, core.EV_WIDTH), dtype=np.int64)
    result = np.zeros(loops.R_WIDTH, dtype=np.int64)
    work = np.empty_like(game.state)
    winners = np.empty(n, dtype=np.int64)
    margins = np.empty(n, dtype=np.int64)
    for i in range(n):
        if stop is not None and stop():
            raise EvaluationStopped(f"stopped at move {game.ply}")
        work[:] = game.state
        rng = streams[2 * i: 2 * i + 2].copy()
        loops.play_game(game.tab, work, kinds, params, rng, no_moves, no_events, result)
        if result[loops.R_ERROR]:  # a built-in policy never does this; say so if it does
            raise RuntimeError(f"evaluation bot {bot.spec!r} chose an illegal move in a "
                               f"rollout from move {game.ply}")
        winners[i] = result[loops.R_WINNER]
        margins[i] = result[loops.R_SCORE] - result[loops.R_SCORE + 1]
    return winners, margins


def wilson(wins: float, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of seat 0's share of ``n`` rollouts (each rollout an
    independent trial): :func:`patchsim.analysis.estimators.wilson_interval`."""
    return est.wilson_interval(wins, n)


def evaluate_game(start: Game, codes: Iterable[int] = (), bot: str | CompiledBot =
                  DEFAULT_EVAL_BOT, n_rollouts: int = DEFAULT_ROLLOUTS,
                  seed: int = 0, method: EvalMethod = "auto",
                  stop: Callable[[], bool] | None = None) -> pd.DataFrame:
    """Evaluate ``start`` and every position after each of ``codes`` (move codes, played on a
    copy through :meth:`Game.apply`, so an illegal one raises IllegalMoveError).

    One row per position (columns :data:`COLUMNS`): ``ply``, ``to_move`` (-1 at the end),
    ``win0`` (seat 0's win probability; exactly 0 or 1 once the game is over) with its 95%
    interval ``win0_lo``/``win0_hi``, ``margin`` (mean score0 - score1), ``favourite`` (the
    seat above 50%; a tie keeps the previous one) and ``lead_change``. ``stop``: see
    :func:`rollouts`."""
    params = learned_params(start) if method == "auto" else None
    policy = rollout_bot(bot)
    game = start.copy()

    def row(g: Game) -> list:
        if params is not None:
            return _learned_position(g, params)
        return _evaluate_position(g, policy, n_rollouts, seed, stop)

    rows = [row(game)]
    for code in codes:
        game.apply(int(code))
        rows.append(row(game))
    table = mark_lead_changes(pd.DataFrame(rows, columns=list(COLUMNS[:-2])))
    table.attrs["method"] = ("the learned evaluation of this ruleset's model"
                             if params is not None else
                             f"{n_rollouts} rollouts per position by {policy.spec}")
    return table


def learned_params(game: Game) -> np.ndarray | None:
    """A learned bot's parameter vector with the model of ``game``'s ruleset, or None when
    the ruleset has no model (the caller then uses rollouts)."""
    try:
        model = model_for(game.ruleset)
    except ModelError:
        return None
    return fill_params(np.zeros(N_PARAMS), model)


def _learned_position(game: Game, params: np.ndarray) -> list:
    to_move = game.to_move
    if game.finished:
        w = game.winner
        win0 = 1.0 if w == 0 else 0.0
        return [game.ply, -1, 0, win0, win0, win0, float(game.score(0) - game.score(1))]
    scratch = np.zeros(N_ALL_FEATURES)
    win0 = float(value0(params, game.state, game.tab, scratch))
    margin = float(predicted_margin(params, game.state, game.tab, scratch))
    return [game.ply, to_move, 0, win0, win0, win0, margin]


def evaluate_record(record: GameRecord | dict, bot: str | CompiledBot = DEFAULT_EVAL_BOT,
                    n_rollouts: int = DEFAULT_ROLLOUTS, seed: int = 0,
                    method: EvalMethod = "auto") -> pd.DataFrame:
    """:func:`evaluate_game` over a game record; RecordError if the record does not load or a
    move of it is malformed or illegal."""

    rec = record if isinstance(record, GameRecord) else GameRecord.from_dict(record)
    start = rec.start()
    codes = []
    game = start.copy()
    for i, text in enumerate(rec.moves, start=1):
        try:
            move = game.parse_move(text)
            game.apply(move)
        except ValueError as e:  # IllegalMoveError is a ValueError too
            raise RecordError(f"{rec.source}: move {i} ({text!r}): {e}", i) from None
        codes.append(move.code)
    return evaluate_game(start, codes, bot, n_rollouts, seed, method)


def _evaluate_position(game: Game, bot: CompiledBot, n: int, seed: int,
                       stop: Callable[[], bool] | None = None) -> list:
    to_move = game.to_move
    if game.finished:
        w = game.winner
        win0 = 1.0 if w == 0 else 0.0
        return [game.ply, -1, 0, win0, win0, win0, float(game.score(0) - game.score(1))]
    winners, margins = rollouts(game, bot, n, seed, stop)
    wins0 = int(np.sum(winners == 0))
    lo, hi = wilson(wins0, n)
    return [game.ply, to_move, n, wins0 / n, lo, hi, float(margins.mean())]


def mark_lead_changes(table: pd.DataFrame) -> pd.DataFrame:
    """Add ``favourite`` (0 or 1: the seat above 50%; -1 before anybody is) and
    ``lead_change`` (the favourite differs from the one before) to an evaluation table."""
    favourite, changes, current = [], [], -1
    for win0 in table["win0"]:
        now = 0 if win0 > 0.5 else 1 if win0 < 0.5 else current
        changes.append(current != -1 and now != current)
        current = now
        favourite.append(now)
    out = table.copy()
    out["favourite"] = np.array(favourite, dtype=np.int64)
    out["lead_change"] = np.array(changes, dtype=bool)
    return out
