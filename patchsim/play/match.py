"""Playing games between bots: one game from a deal, compiled when both bots are built in,
through the Python API otherwise, with the same result either way.

A *deal* is a patch circle plus a seed; the seed gives each seat its own random stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from patchsim.bots.contract import (
    MOVE_SECONDS,
    BotFault,
    BotThread,
    GameStopped,
    ask_move,
    seat_streams,
)
from patchsim.bots.learned import bind_bot, param_rows
from patchsim.bots.registry import Bot, CompiledBot, bot_spec
from patchsim.engine import core
from patchsim.engine.game import Game, decode_move, rules_reference
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.tables import Tables, compile_ruleset
from patchsim.errors import PatchsimError
from patchsim.play import loops as playout


class BotError(PatchsimError, RuntimeError):
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
    holes: tuple[int, int]  # isolated one-square holes left at the end
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
                   pair(playout.R_HOLES), moves, events)


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
    compiled = [b for b in bots if isinstance(b, CompiledBot)]
    if len(compiled) == len(bots):
        kinds = np.array([b.kind for b in compiled], dtype=np.int64)
        params = param_rows([b.params for b in compiled])
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


def bot_error(tables: Tables, circle: list[str], codes, bot: Bot, seat: int, seed: int,
               move_number: int, what: str) -> BotError:
    spec = bot_spec(bot)
    return BotError(f"bot {spec!r} (seat {seat}) {what} at move {move_number} of the game "
                    f"with seed {seed}", spec, seed, move_number,
                    _record(tables, circle, codes))


def _play_python(tables: Tables, game: Game, bots, circle, seed: int, streams: np.ndarray,
                 moves: np.ndarray, ev: np.ndarray, result: np.ndarray,
                 runner: BotThread | None = None, move_seconds: float | None = MOVE_SECONDS,
                 stop: np.ndarray | None = None) -> GameResult:
    if runner is None:
        runner = BotThread()
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
            code = ask_move(bot, game, gens[p], rngs[p], runner, move_seconds, stop)
        except BotFault as f:
            raise bot_error(tables, circle, moves[:n], bot, p, seed, n + 1,
                             f.what) from f.__cause__
        moves[n] = code
        if code == core.PASS:
            result[playout.R_PASSES + p] += 1
        elif code <= core.LEATHER_BASE:
            result[playout.R_LEATHER + p] += 1
        else:
            result[playout.R_BUYS + p] += 1
        ne = core.apply_logged(state, tab, code, ev, ne)
        game.history.append(code)
    playout.finish_result(state, tab, result)
    plies = int(state[core.S_PLY])
    return GameResult.from_row(result, moves[:plies].copy(), ev[:ne].copy())


def game_record(ruleset: Ruleset | Tables, circle: list[str], result: GameResult) -> dict:
    """The record of a played game (replays to the same result)."""
    tables = ruleset if isinstance(ruleset, Tables) else compile_ruleset(ruleset)
    return _record(tables, circle, result.moves)
