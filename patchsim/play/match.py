"""Playing games between bots: one game from a deal, compiled when both bots are built in,
through the Python API otherwise, with the same result either way.

A *deal* is a patch circle plus a seed; the seed gives each seat its own random stream.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from patchsim.bots.learned import bind_bot, param_rows
from patchsim.bots.registry import Bot, CompiledBot, bot_spec
from patchsim.engine import core
from patchsim.engine.game import Game, Move, decode_move, rules_reference
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.tables import Tables, compile_ruleset
from patchsim.play import loops as playout


class BotError(RuntimeError):
    """A bot raised, or chose a move that is not legal. Carries a record reproducing it."""

    def __init__(self, message: str, bot: str, seed: int, move_number: int,
                 record: dict) -> None:
        super().__init__(message)
        self.bot = bot
        self.seed = seed
        self.move_number = move_number
        self.record = record

    def __reduce__(self):
        # picklable with all its fields, so that it crosses from a worker process intact
        return (type(self), (str(self), self.bot, self.seed, self.move_number, self.record))


class GameStopped(Exception):
    """A game was given up because its ``stop`` flag was set (the run is stopping)."""


MOVE_SECONDS = 60.0  # a Python bot's default time limit per move: generous, but not forever
_STOP_POLL = 0.05  # seconds between two looks at the stop flag while a Python bot thinks
_INT64 = 2**63


class _BotThread:
    """Runs a Python bot's ``choose`` on a thread of its own, so that the game's thread can
    give up on it: after ``limit`` seconds (a bot that hangs), or when the run stops. Then
    the thread is left to finish on its own (a daemon, on a copy of the game: it changes
    nothing), because a Python thread cannot be killed. And whatever the bot raises,
    ``KeyboardInterrupt`` and ``SystemExit`` included, is the bot's: a user's Ctrl-C or a
    signal is delivered to the main thread, never to this one."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="patchsim-python-bot",
                                       daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            call = self.calls.get()
            if call is None:
                return
            fn, args, box, done = call
            try:
                box.append((True, fn(*args)))
            except BaseException as e:  # noqa: BLE001 - the bot's, reported by the caller
                box.append((False, e))
            done.set()

    def call(self, fn: Callable[..., Any], args: tuple, limit: float | None,
             stop: np.ndarray | None) -> tuple[bool, Any]:
        """(True, what ``fn(*args)`` returned) or (False, what it raised); None when it
        took longer than ``limit`` seconds. Raises GameStopped once ``stop`` is set."""
        box: list[tuple[bool, Any]] = []
        done = threading.Event()
        self.calls.put((fn, args, box, done))
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            wait = _STOP_POLL if stop is not None else None
            if deadline is not None:
                left = deadline - time.monotonic()
                wait = left if wait is None else min(wait, left)
            if done.wait(None if wait is None else max(wait, 0.0)):
                return box[0]
            if stop is not None and stop[0] != 0:
                self.close()
                raise GameStopped()
            if deadline is not None and time.monotonic() >= deadline:
                self.close()
                return None  # type: ignore[return-value]

    def close(self) -> None:
        self.calls.put(None)  # the thread ends once the call it runs (if any) returns


@dataclass
class GameResult:
    """The outcome of one game, plus its move codes and event rows (see core.EV_*)."""

    winner: int
    scores: tuple[int, int]
    buttons: tuple[int, int]
    empty: tuple[int, int]
    positions: tuple[int, int]
    bonus_owner: int
    first_to_end: int
    plies: int
    passes: tuple[int, int]
    buys: tuple[int, int]
    leather: tuple[int, int]
    moves: np.ndarray = field(repr=False)
    events: np.ndarray = field(repr=False)

    @property
    def tie_break(self) -> bool:
        return self.scores[0] == self.scores[1]

    @classmethod
    def from_row(cls, r: np.ndarray, moves: np.ndarray, events: np.ndarray) -> GameResult:
        def pair(i: int) -> tuple[int, int]:
            return int(r[i]), int(r[i + 1])

        return cls(int(r[playout.R_WINNER]), pair(playout.R_SCORE), pair(playout.R_BUTTONS),
                   pair(playout.R_EMPTY), pair(playout.R_POS), int(r[playout.R_BONUS]),
                   int(r[playout.R_FIRST_END]), int(r[playout.R_PLIES]),
                   pair(playout.R_PASSES), pair(playout.R_BUYS), pair(playout.R_LEATHER),
                   moves, events)


def seat_streams(seed: int) -> np.ndarray:
    """The two seats' splitmix64 stream seeds of a game seed (shape (2,), uint64)."""
    return np.random.SeedSequence(seed).generate_state(2, dtype=np.uint64)


def max_plies(ruleset: Ruleset) -> int:
    """An upper bound on the moves of a game: every pass advances a token, every buy takes a
    patch, every leather placement uses a mark."""
    return 2 * ruleset.last_space + len(ruleset.patches) + len(ruleset.leather_marks) + 2


def max_events(ruleset: Ruleset) -> int:
    return max_plies(ruleset) + 2 * len(ruleset.income_marks) + 3 * len(ruleset.leather_marks) + 2


def _record(tables: Tables, circle: list[str], codes: np.ndarray | list[int]) -> dict:
    return {"rules": rules_reference(tables.ruleset), "circle": list(circle),
            "moves": [str(decode_move(int(c), tables)) for c in codes]}


def play_game(ruleset: Ruleset | Tables, bots: tuple[Bot, Bot] | list[Bot],
              circle: list[str], seed: int, streams: np.ndarray | None = None, *,
              move_seconds: float | None = MOVE_SECONDS,
              stop: np.ndarray | None = None) -> GameResult:
    """Play one game: ``bots[0]`` takes the first turn. Raises BotError naming the bot, the
    seed and the 1-based move number when a bot fails: raises anything (even
    ``KeyboardInterrupt`` or ``SystemExit``), returns something that is not a legal move,
    or, for a Python bot, takes longer than ``move_seconds`` over a move (None: no limit).

    ``streams`` (two uint64) overrides the seats' random streams derived from ``seed``; the
    batch runner uses it so that a bot keeps its stream when the seats are swapped. ``stop``
    (a one-element int64 array another thread may set): the game is given up
    (GameStopped) before the next move, or while a Python bot thinks."""
    tables = ruleset if isinstance(ruleset, Tables) else compile_ruleset(ruleset)
    rs = tables.ruleset
    # a learned bot carries its ruleset's model in its parameters (then it plays, and draws
    # its epsilon moves from the seat's stream, exactly as in the compiled loop); a
    # restricted bot (forbid=<patch id>) gets the patch's index in this ruleset
    bots = [bind_bot(b, tables) for b in bots]
    bots = [b.bind(tables) if isinstance(b, CompiledBot) else b for b in bots]
    game = Game.new(rs, circle=circle)
    streams = seat_streams(seed) if streams is None else np.asarray(streams, dtype=np.uint64)
    moves = np.full(max_plies(rs), -9999, dtype=np.int64)
    ev = np.zeros((max_events(rs), core.EV_WIDTH), dtype=np.int64)
    result = np.zeros(playout.R_WIDTH, dtype=np.int64)
    if all(isinstance(b, CompiledBot) for b in bots):
        kinds = np.array([b.kind for b in bots], dtype=np.int64)  # type: ignore[union-attr]
        params = param_rows([b.params for b in bots])  # type: ignore[union-attr]
        rng = streams.copy()
        ne = playout.play_game(tables.tab, game.state, kinds, params, rng, moves, ev, result)
        if result[playout.R_ERROR]:
            p = int(result[playout.R_ERROR]) - 1
            n = int(result[playout.R_PLIES])
            bad = int(moves[n - 1])
            raise bot_error(tables, circle, moves[: n - 1], bots[p], p, seed, n,
                             f"chose an illegal move (code {bad})")
        return GameResult.from_row(result, moves[: result[playout.R_PLIES]].copy(), ev[:ne].copy())
    return _play_python(tables, game, bots, circle, seed, streams, moves, ev, result,
                        move_seconds=move_seconds, stop=stop)


def _what(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def bot_error(tables: Tables, circle: list[str], codes, bot: Bot, seat: int, seed: int,
               move_number: int, what: str) -> BotError:
    spec = bot_spec(bot)
    return BotError(f"bot {spec!r} (seat {seat}) {what} at move {move_number} of the game "
                    f"with seed {seed}", spec, seed, move_number,
                    _record(tables, circle, codes))


def _play_python(tables: Tables, game: Game, bots, circle, seed: int, streams: np.ndarray,
                 moves: np.ndarray, ev: np.ndarray, result: np.ndarray,
                 runner: _BotThread | None = None, move_seconds: float | None = MOVE_SECONDS,
                 stop: np.ndarray | None = None) -> GameResult:
    if runner is None:
        runner = _BotThread()
        try:
            return _play_python(tables, game, bots, circle, seed, streams, moves, ev, result,
                                runner, move_seconds, stop)
        finally:
            runner.close()
    tab = tables.tab
    state = game.state
    gens = [np.random.default_rng(int(streams[s])) for s in (0, 1)]
    rngs = [streams[s : s + 1].copy() for s in (0, 1)]
    ne = 0
    while True:
        p = int(core.to_move(state, tab))
        if p < 0:
            break
        if stop is not None and stop[0] != 0:
            raise GameStopped()
        bot = bots[p]
        n = int(state[core.S_PLY])
        try:
            if isinstance(bot, CompiledBot):
                code = bot.choose_code(game, rngs[p])
            else:
                legal = game.legal_moves()
                answer = runner.call(bot.choose, (game.copy(), legal, gens[p]), move_seconds,
                                     stop)
                if answer is None:
                    raise bot_error(tables, circle, moves[:n], bot, p, seed, n + 1,
                                     f"took longer than {move_seconds:g} s to choose a move "
                                     "(the limit per move of a Python bot)")
                ok, choice = answer
                if not ok:  # whatever it raised on its thread, SystemExit included
                    raise bot_error(tables, circle, moves[:n], bot, p, seed, n + 1,
                                     f"raised {_what(choice)}") from choice
                if isinstance(choice, str):  # record text such as "buy P05 a1 b1"
                    try:
                        choice = game.parse_move(choice)
                    except ValueError as e:
                        raise bot_error(tables, circle, moves[:n], bot, p, seed, n + 1,
                                         f"returned a move that is not one: {e}") from None
                if not isinstance(choice, Move | int | np.integer) or isinstance(choice, bool):
                    raise bot_error(tables, circle, moves[:n], bot, p, seed, n + 1,
                                     f"returned {choice!r}, which is not a Move, a move code "
                                     "or move text")
                code = choice.code if isinstance(choice, Move) else int(choice)
                if isinstance(choice, Move) and choice.code not in legal:
                    code = -10**9  # a Move from another game or ruleset
                if not -_INT64 <= code < _INT64:  # no move code, and no room in the table
                    raise bot_error(tables, circle, moves[:n], bot, p, seed, n + 1,
                                     f"returned {choice!r}, which is not a move code")
        except (BotError, GameStopped):
            raise
        except Exception as e:  # a user's bot may raise anything: report it, with the game
            raise bot_error(tables, circle, moves[:n], bot, p, seed, n + 1,
                             f"raised {type(e).__name__}: {e}") from e
        moves[n] = code
        if core.legality(state, tab, code) != 0:
            why = game.illegal_reason(code) if code > -10**9 else "not one of the legal moves"
            raise bot_error(tables, circle, moves[:n], bot, p, seed, n + 1,
                             f"chose an illegal move ({why})")
        if code == core.PASS:
            result[playout.R_PASSES + p] += 1
        elif code <= core.LEATHER_BASE:
            result[playout.R_LEATHER + p] += 1
        else:
            result[playout.R_BUYS + p] += 1
        ne = core.apply_logged(state, tab, code, ev, ne)
        game.history.append(code)
    result[playout.R_WINNER] = core.winner(state, tab)
    for p in (0, 1):
        result[playout.R_SCORE + p] = core.score(state, tab, p)
        result[playout.R_BUTTONS + p] = state[core.S_BTN + p]
        result[playout.R_EMPTY + p] = core.empty_squares(state, tab, p)
        result[playout.R_POS + p] = state[core.S_POS + p]
    result[playout.R_BONUS] = state[core.S_BONUS]
    result[playout.R_FIRST_END] = state[core.S_FIRST_END]
    result[playout.R_PLIES] = state[core.S_PLY]
    plies = int(state[core.S_PLY])
    return GameResult.from_row(result, moves[:plies].copy(), ev[:ne].copy())


def game_record(ruleset: Ruleset | Tables, circle: list[str], result: GameResult) -> dict:
    """The record of a played game (replays to the same result)."""
    tables = ruleset if isinstance(ruleset, Tables) else compile_ruleset(ruleset)
    return _record(tables, circle, result.moves)
