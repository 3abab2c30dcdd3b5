"""Games against a bot in the browser.

A page sends moves as record text (``buy P05 a1 b1 c1 a2 b2``, ``pass``, ``leather e5``);
the engine parses them and :meth:`Game.apply` plays them or refuses them
(:class:`IllegalMoveError`, whose reason goes back to the page). The page's own check of a
placement against the legal placements it was sent is a courtesy to the player, not the
rule. The bot moves here, through the bot protocol, on a copy of the game. A finished game is
written as a record (``{"rules", "circle", "moves"}``) that ``patchsim replay`` reads.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import re
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from patchsim.atomic import atomic_write
from patchsim.bots.learned import LearnedBot, ModelError
from patchsim.bots.registry import REGISTRY, Bot, BotSpecError, MCTSBot, make_bot, parse_spec
from patchsim.engine import core
from patchsim.engine.game import Game, IllegalMoveError, decode_move
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.view import QuiltTracker, legal_view, position_view, ruleset_info
from patchsim.errors import quote
from patchsim.web.runs import WebError

log = logging.getLogger("patchsim.web")

MAX_SESSIONS = 64  # games kept in memory; the oldest is dropped beyond this
MAX_ITERATIONS = 20_000  # a search bot's iterations per move: a few seconds at most
MAX_TIME_MS = 10_000


def check_bot_spec(spec: object) -> Bot:
    """The bot a page asked for: a built-in bot only (a request must not make the server
    import a module), with a search budget of seconds, not hours. WebError 400 otherwise."""
    if not isinstance(spec, str) or not spec.strip() or len(spec) > 200:
        raise WebError(400, "bot: give a bot spec such as random, greedy or "
                            "mcts(iterations=500)")
    try:
        name, _ = parse_spec(spec)
        if ":" in name or name not in REGISTRY:
            raise BotSpecError(f"unknown bot {quote(name)}; the built-in bots are "
                               f"{', '.join(REGISTRY)} (import paths are not loaded by the "
                               "server)")
        bot = make_bot(spec)
    except BotSpecError as e:
        raise WebError(400, f"bot: {e}") from None
    if isinstance(bot, LearnedBot) and (bot.models or bot.model_choice not in ("auto",
                                                                               "shipped")):
        # a request must not make the server read a file it names
        raise WebError(400, f"bot: {bot.spec}: models= and model files are not read here; "
                            "the server plays with the trained or shipped model (model=auto)")
    if isinstance(bot, MCTSBot | LearnedBot):
        values = bot.values
        if values["iterations"] > MAX_ITERATIONS or values["time_ms"] > MAX_TIME_MS:
            raise WebError(400, f"bot: {bot.spec}: at most iterations={MAX_ITERATIONS} and "
                                f"time_ms={MAX_TIME_MS} here")
    return bot


@dataclass
class PlaySession:
    """One game in progress between the person at the page (``human``'s seat) and a bot."""

    id: str
    game: Game
    bot: Bot
    human: int
    ruleset_label: str
    rng: np.random.Generator
    tracker: QuiltTracker
    moves: list[dict[str, Any]] = field(default_factory=list)
    saved: Path | None = None
    save_error: str | None = None
    error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def play(self, code: int) -> None:
        """Apply a move of the player to move (IllegalMoveError if it is not legal)."""
        player = self.game.to_move
        self.game.apply(code)
        assert player is not None
        self.tracker.note(player, code)
        self.moves.append({"seat": player, "text": str(decode_move(code, self.game.tables)),
                           "number": len(self.moves) + 1})


class PlayManager:
    """The games being played, by session id, and the folder finished games are saved in."""

    def __init__(self, save_dir: Path) -> None:
        self.save_dir = Path(save_dir)
        self.sessions: OrderedDict[str, PlaySession] = OrderedDict()
        self._lock = threading.Lock()

    def new(self, ruleset: Ruleset, label: str, bot_spec: object, human: object,
            seed: object = None) -> dict[str, Any]:
        """Start a game; the bot moves at once if it has the first turn."""
        bot = check_bot_spec(bot_spec)
        # true == 1 and 1.0 == 1 in Python; a seat is the number 0 or 1, nothing else
        if type(human) is not int or human not in (0, 1):
            raise WebError(400, "seat: give 0 (you move first) or 1 (the bot moves first)")
        if isinstance(bot, LearnedBot):
            try:  # found now, not at the bot's first move in the middle of the game
                bot.bind(ruleset)
            except ModelError as e:
                raise WebError(400, f"bot: {e}") from None
        if seed is None or seed == "":
            seed = secrets.randbelow(2**62)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
            raise WebError(400, "seed: give a whole number between 0 and 2^63-1, got "
                                f"{quote(seed)}")
        game = Game.new(ruleset, seed=seed)
        sid = secrets.token_hex(8)
        session = PlaySession(sid, game, bot, int(human), label,
                              np.random.default_rng([seed, 1 + int(human)]),
                              QuiltTracker(game))
        with self._lock:
            self.sessions[sid] = session
            while len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        with session.lock:
            self._bot_turns(session)
            return self.view(session)

    def get(self, sid: str) -> PlaySession:
        with self._lock:
            session = self.sessions.get(sid)
        if session is None:
            raise WebError(404, f"no game {quote(sid)} in progress (games are kept in memory; a "
                                "restarted server has none: start a new one)")
        return session

    def state(self, sid: str) -> dict[str, Any]:
        session = self.get(sid)
        with session.lock:
            return self.view(session)

    def move(self, sid: str, text: object) -> dict[str, Any]:
        """Play the person's move (record text), then the bot's replies. WebError 400 for
        text that is no move, 409 for a move the engine refuses (with its reason)."""
        session = self.get(sid)
        if not isinstance(text, str) or not text.strip() or len(text) > 1000:
            raise WebError(400, "move: give a move as text: pass, buy <patch> <squares...> or "
                                "leather <square>")
        with session.lock:
            game = session.game
            if session.error:
                raise WebError(409, session.error)
            if game.finished:
                raise WebError(409, "the game is over")
            if game.to_move != session.human:
                raise WebError(409, "it is the bot's turn")
            try:
                move = game.parse_move(text)
            except ValueError as e:
                raise WebError(400, f"move {quote(text)}: {e}") from None
            try:
                session.play(move.code)
            except IllegalMoveError as e:
                raise IllegalMove(e, game.ruleset.offer_size) from None
            self._bot_turns(session)
            return self.view(session)

    def _bot_turns(self, session: PlaySession) -> None:
        game = session.game
        while not game.finished and game.to_move != session.human:
            try:
                choice = session.bot.choose(game.copy(), game.legal_moves(), session.rng)
                session.play(choice.code)
            except Exception as e:  # noqa: BLE001 - a bot failure ends this game, not the server
                session.error = (f"the bot {session.bot.spec} failed at move {game.ply + 1}: "
                                 f"{type(e).__name__}: {e}")
                raise WebError(500, session.error) from None
        if game.finished and session.saved is None and session.save_error is None:
            self._save(session)

    def _save(self, session: PlaySession) -> None:
        """Write the finished game as a record; a folder that cannot take it is said on the
        page, which still has the record to download (the game is not lost)."""
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        who = re.sub(r"[^A-Za-z0-9]+", "-", session.bot.spec).strip("-")[:40]
        rules = re.sub(r"[^A-Za-z0-9]+", "-", session.game.ruleset.name).strip("-")[:40]
        path = self.save_dir / f"{stamp}-{rules}-seat{session.human}-vs-{who}-{session.id}.json"
        try:
            self.save_dir.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps(session_record(session), indent=1) + "\n")
        except OSError as e:
            session.save_error = (f"the game could not be saved in {self.save_dir} "
                                  f"({e.strerror or e}); download its record below")
            log.warning("%s", session.save_error)
            return
        session.saved = path

    def view(self, session: PlaySession) -> dict[str, Any]:
        game = session.game
        yours = not game.finished and game.to_move == session.human
        return {
            "id": session.id,
            "human": session.human,
            "bot": session.bot.spec,
            "ruleset": session.ruleset_label,
            "rules": ruleset_info(game.ruleset),
            "position": position_view(game, session.tracker,
                                      session.moves[-1] if session.moves else None),
            "moves": session.moves,
            "your_turn": yours,
            "legal": legal_view(game) if yours else None,
            "unbuyable": _unbuyable(game) if yours and not game.pending_leather else {},
            "error": session.error,
            "saved": session.saved.name if session.saved else None,
            "saved_path": str(session.saved) if session.saved else None,
            "save_error": session.save_error,
            "record": session_record(session) if game.finished else None,
        }


def session_record(session: PlaySession) -> dict[str, Any]:
    """The game's record, with who sat where ("human" and the bot's spec)."""
    players = [session.bot.spec, session.bot.spec]
    players[session.human] = "human"
    return {**session.game.record(), "players": players}


class IllegalMove(WebError):
    """A move the engine refused: status 409 with the engine's reason."""

    def __init__(self, error: IllegalMoveError, offer_size: int) -> None:
        super().__init__(409, f"refused by the engine: {error}")
        self.reason = error.reason.name
        self.reason_text = error.reason.describe(offer_size)


def _unbuyable(game: Game) -> dict[str, str]:
    """Why each patch on offer cannot be bought now, in the engine's words (the verdict on
    its first placement: cannot afford it), or that it fits nowhere."""
    tables = game.tables
    legal = {m.patch for m in game.legal_moves() if m.kind == "buy"}
    out = {}
    for pid in game.offer:
        if pid in legal:
            continue
        k = tables.patch_index[pid]
        first = int(core.patch_first(tables.tab, k))
        why = game.legality(first)
        if why is not None and why.name != "OVERLAP":
            out[pid] = why.describe(game.ruleset.offer_size)
        else:
            out[pid] = "it fits nowhere on your quilt (every placement overlaps a patch)"
    return out
