"""The bot contract: what a bot must do, how a game asks it for a move, and
:func:`check_bot`, which plays a few games to tell whether a bot (built in or a user's own)
keeps the contract and what it breaks if not.

A bot answers ``choose(game, moves, rng)`` with one of ``moves`` (a Move, its code or its
record text), within the time limit per move, without raising; and it draws its randomness
from ``rng`` only, so that the same seed gives the same game. :func:`ask_move` is the one
place that asks a bot and judges its answer: the game loop of :mod:`patchsim.play.match`
calls it for every move of a Python-loop game, and :func:`check_bot` calls it too, so the
check judges a bot exactly as a run does.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from patchsim.bots.learned import ModelError, bind_bot
from patchsim.bots.registry import Bot, BotSpecError, CompiledBot, bot_spec, make_bot
from patchsim.engine import core
from patchsim.engine.contract import ContractReport
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game, Move, decode_move, rules_reference
from patchsim.engine.ruleset import Ruleset, load_ruleset
from patchsim.engine.tables import compile_ruleset

MOVE_SECONDS = 60.0  # a Python bot's default time limit per move: generous, but not forever
_STOP_POLL = 0.05  # seconds between two looks at the stop flag while a Python bot thinks
_INT64 = 2**63
_FOREIGN = -10**9  # stands for a Move of another game or ruleset (no code of this one)


class GameStopped(Exception):
    """A game was given up because its ``stop`` flag was set (the run is stopping)."""


class BotFault(Exception):
    """A bot's answer broke the contract; ``what`` says how, as the end of a sentence that
    starts with the bot ("raised ValueError: ...", "chose an illegal move (...)")."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def seat_streams(seed: int) -> np.ndarray:
    """The two seats' splitmix64 stream seeds of a game seed (shape (2,), uint64)."""
    return np.random.SeedSequence(seed).generate_state(2, dtype=np.uint64)


class BotThread:
    """Runs a Python bot's ``choose`` on a thread of its own, so that the game's thread can
    give up on it: after ``limit`` seconds (a bot that hangs), or when the run stops. Then
    the thread is left to finish on its own (a daemon, on a copy of the game: it changes
    nothing), because a Python thread cannot be killed. And whatever the bot raises,
    ``KeyboardInterrupt`` and ``SystemExit`` included, is the bot's: a user's Ctrl-C or a
    signal is delivered to the main thread, never to this one."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
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

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float | None,
             stop: np.ndarray | None) -> tuple[bool, Any] | None:
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
                return None

    def close(self) -> None:
        self.calls.put(None)  # the thread ends once the call it runs (if any) returns


def _what(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def ask_move(bot: Bot, game: Game, rng: np.random.Generator, rng_state: np.ndarray,
             runner: BotThread, move_seconds: float | None = MOVE_SECONDS,
             stop: np.ndarray | None = None) -> int:
    """The legal move code ``bot`` chooses in ``game`` (its turn). A compiled bot draws from
    its splitmix64 stream ``rng_state``; a Python bot is asked on ``runner``'s thread with a
    copy of the game, the legal moves and ``rng``, and given ``move_seconds`` (None: no
    limit). BotFault when the bot raises, answers with no move, takes too long or chooses
    an illegal move (chained to what the bot raised); GameStopped once ``stop`` is set."""
    try:
        if isinstance(bot, CompiledBot):
            code = bot.choose_code(game, rng_state)
        else:
            legal = game.legal_moves()
            answer = runner.call(bot.choose, (game.copy(), legal, rng), move_seconds, stop)
            if answer is None:
                raise BotFault(f"took longer than {move_seconds:g} s to choose a move (the "
                               "limit per move of a Python bot)")
            ok, choice = answer
            if not ok:  # whatever it raised on its thread, SystemExit included
                raise BotFault(f"raised {_what(choice)}") from choice
            if isinstance(choice, str):  # record text such as "buy P05 a1 b1"
                try:
                    choice = game.parse_move(choice)
                except ValueError as e:
                    raise BotFault(f"returned a move that is not one: {e}") from None
            if not isinstance(choice, Move | int | np.integer) or isinstance(choice, bool):
                raise BotFault(f"returned {choice!r}, which is not a Move, a move code or "
                               "move text")
            code = choice.code if isinstance(choice, Move) else int(choice)
            if isinstance(choice, Move) and choice.code not in legal:
                code = _FOREIGN
            if not -_INT64 <= code < _INT64:  # no move code, and no room in the table
                raise BotFault(f"returned {choice!r}, which is not a move code")
    except (BotFault, GameStopped):
        raise
    except Exception as e:  # a compiled bot's Python side may raise too: report it
        raise BotFault(f"raised {type(e).__name__}: {e}") from e
    if core.legality(game.state, game.tables.tab, code) != 0:
        why = game.illegal_reason(code) if code > _FOREIGN else "not one of the legal moves"
        raise BotFault(f"chose an illegal move ({why})")
    return code


# --- the check ----------------------------------------------------------------------------
CHECK_MOVE_SECONDS = 5.0  # check_bot's limit per move: a bot slower than this stalls a run
CHECK_GAMES = 2  # deals per ruleset; each is played in both seats, and each twice


def check_bot(bot: str | dict[str, Any] | Bot, *, rulesets: Sequence[Ruleset | str] = (
              "edition2",), games: int = CHECK_GAMES, seed: int = 0, opponent: str = "random",
              move_seconds: float = CHECK_MOVE_SECONDS, bot_path: Sequence[str] = (),
              ) -> ContractReport:
    """Check that ``bot`` (a spec, or a bot object) keeps the bot contract on each of
    ``rulesets``: it plays ``games`` deals (seeds ``seed``, ``seed + 1``, ...) against
    ``opponent`` in both seats, and each game again with a fresh bot made from its spec,
    which must choose the same moves (reproducible). Every move must be legal, returned
    without raising and within ``move_seconds`` (a Python bot is given up on then; a
    compiled one is timed). Stops at a ruleset's first problem (the report carries the
    record of the game up to it; ``play_game(ruleset, seats, circle, seed)`` plays that
    game again). Returns the report; :meth:`ContractReport.raise_for_problems` raises it.

    A bot that crashes the interpreter (a segfault in its own code) cannot be checked in
    this process: a run survives it in worker processes, this check does not."""
    label = spec_text(bot)
    report = ContractReport(f"bot {label!r}")
    report.checks.append("spec")
    try:
        made = make_bot(bot, bot_path=bot_path)
        again = make_bot(made.spec, bot_path=bot_path) if isinstance(
            bot, str | dict) else None
        other = make_bot(opponent)
    except BotSpecError as e:
        report.add("spec", str(e))
        return report
    if again is not None and again.spec != made.spec:
        report.add("spec", f"its spec {made.spec!r} makes a bot whose spec is {again.spec!r}"
                   " (a recorded spec must name the same bot again)")
    report.subject = f"bot {made.spec!r}"
    report.checks += ["legal moves", "time per move", "reproducible"]
    for ruleset in rulesets:
        rs = ruleset if isinstance(ruleset, Ruleset) else load_ruleset(ruleset)
        _warm(made, rs)
        for s in range(seed, seed + games):
            if not _check_deal(made, bot, other, rs, s, move_seconds, bot_path, report):
                break
    return report


def _warm(bot: Bot, rs: Ruleset) -> None:
    """Compile a compiled bot's search for this ruleset before any move is timed: numba
    compiles on the first call (tens of seconds with an empty cache), and compiling is not
    choosing. A fault here is left to the timed games, which report it with its move."""
    if not isinstance(bot, CompiledBot):
        return
    try:
        tables = compile_ruleset(rs)
        game = Game.new(rs, circle=deal_circle(rs, 0))
        bound = bind_bot(bot, tables)
        bound = bound.bind(tables) if isinstance(bound, CompiledBot) else bound
        bound.choose(game.copy(), game.legal_moves(), np.random.default_rng(0))
    except Exception:  # noqa: BLE001 - the checked games report what is wrong, with where
        return


def spec_text(bot: object) -> str:
    """How a report names a bot it was given (a spec, a mapping or a bot object)."""
    if isinstance(bot, str):
        return bot
    if isinstance(bot, dict):
        return ", ".join(f"{k}={v}" for k, v in bot.items())
    return str(getattr(bot, "spec", type(bot).__name__))


def _check_deal(made: Bot, given: Any, other: Bot, rs: Ruleset, seed: int,
                move_seconds: float, bot_path: Sequence[str], report: ContractReport) -> bool:
    """Both seats of one deal, each played twice; False once a problem is reported."""
    circle = deal_circle(rs, seed)
    for seat in (0, 1):
        first = _play(made, other, seat, rs, circle, seed, move_seconds, report)
        report.games += 1
        if first is None:
            return False
        # a fresh bot from the spec (a bot object the user passed keeps its own state, so
        # a second game with the same object is what a run's worker would not play)
        fresh = make_bot(made.spec, bot_path=bot_path) if isinstance(given, str | dict) \
            else made
        second = _play(fresh, other, seat, rs, circle, seed, move_seconds, report)
        report.games += 1
        if second is None:
            return False
        if second != first:
            n = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
                     min(len(first), len(second)))
            tables = compile_ruleset(rs)
            report.add("reproducible", f"ruleset {rs.name!r}, seed {seed}, seat {seat}: the "
                       f"same deal and seed gave another game from move {n + 1} on; a bot "
                       "must draw its randomness from the rng it is given (not from a "
                       "global generator, the clock or its own state across games)",
                       {"rules": rules_reference(rs), "circle": circle,
                        "moves": [str(decode_move(c, tables)) for c in first[:n]]})
            return False
    return True


def _play(bot: Bot, other: Bot, seat: int, rs: Ruleset, circle: list[str], seed: int,
          move_seconds: float, report: ContractReport) -> list[int] | None:
    """The move codes of one game (``bot`` in ``seat``), or None after reporting a
    problem. Seats and streams as in :func:`patchsim.play.match.play_game`."""
    tables = compile_ruleset(rs)
    try:
        bots = [bind_bot(b, tables) for b in ((bot, other) if seat == 0 else (other, bot))]
    except ModelError as e:
        report.add("legal moves", f"ruleset {rs.name!r}: {e}")
        return None
    bots = [b.bind(tables) if isinstance(b, CompiledBot) else b for b in bots]
    game = Game.new(rs, circle=circle)
    streams = seat_streams(seed)
    gens = [np.random.default_rng(int(streams[s])) for s in (0, 1)]
    rngs = [streams[s : s + 1].copy() for s in (0, 1)]
    runner = BotThread()
    try:
        while not game.finished:
            p = game.to_move
            assert p is not None
            t = time.perf_counter()
            try:
                code = ask_move(bots[p], game, gens[p], rngs[p], runner, move_seconds)
            except BotFault as f:
                check = "time per move" if f.what.startswith("took longer") else "legal moves"
                if p != seat:  # not the checked bot's fault, but the check cannot go on
                    check = f"opponent {bot_spec(other)!r}"
                report.add(check, _where(rs, seed, p, game, f.what), game.record())
                return None
            took = time.perf_counter() - t
            if p == seat and took > move_seconds:  # a compiled bot cannot be given up on
                report.add("time per move", _where(
                    rs, seed, seat, game, f"took {took:.2f} s to choose a move (the limit "
                    f"is {move_seconds:g} s)"), game.record())
                return None
            game.apply(code)
    finally:
        runner.close()
    return list(game.history)


def _where(rs: Ruleset, seed: int, seat: int, game: Game, what: str) -> str:
    return f"ruleset {rs.name!r}, seed {seed}, seat {seat}, move {game.ply + 1}: it {what}"
