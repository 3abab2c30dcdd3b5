"""The analysis of ``patchsim serve``: every move of a game as the judge sees it
(:mod:`patchsim.play.analyse`), beside the game viewer, and a hint on the play page.

Routes (registered by :func:`patchsim.web.app.create_app` through :func:`analysis_routes`):

- ``GET /api/runs/{rid}/games/{gid}/analysis``, ``GET /api/runs/{rid}/record/analysis?path=``,
  ``GET /api/saved/{name}/analysis``, ``POST /api/analysis`` (body ``{"name", "record"}``):
  the analysis of a game (``?bot=SPEC``: another built-in judge, with the play page's limits);
- ``GET /files/{rid}/game-analysis/{id}``: a report's link to a stored game's analysis (the
  report is served at ``/files/{rid}/report.html``), answered with the game viewer;
- ``GET /api/play/{sid}/hint``: the judge's view of the position of a game in play, when it
  is the person's turn (the candidates with their values, the judge's choice).

Bounded like the evaluation curve: one analysis at a time (a request waits at most
:data:`WAIT` seconds for the one running), each stopped after :data:`SECONDS`, and stopped
as soon as its client leaves; finished analyses are cached.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote as url_quote

from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Route

from patchsim.bots.registry import Bot, BotSpecError
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, RecordError
from patchsim.errors import quote
from patchsim.play.analyse import (
    ANALYSIS_LINK,
    analyse_game,
    analyse_position,
    judge_spec,
    make_judge,
    method_of,
    record_codes,
)
from patchsim.web.play import PlayManager, check_bot_spec
from patchsim.web.records import record_error, uploaded_record
from patchsim.web.runs import RunIndex, WebError, load_record_file
from patchsim.web.slots import take_slot

log = logging.getLogger("patchsim.web")

SECONDS = 120.0  # an analysis running longer is stopped (the learned judge: some 5 s a game)
HINT_SECONDS = 20.0
WAIT = 60.0  # how long a request waits for the running analysis to end
CACHE = 32


class _State(Protocol):
    """What the routes need of the server's state (patchsim.web.app.ServerState)."""

    index: RunIndex
    play: PlayManager
    save_dir: Path


class Analyser:
    """Runs analyses one at a time, time-limited and stoppable, and keeps the last few."""

    def __init__(self, seconds: float = SECONDS, wait: float = WAIT) -> None:
        self.slot = threading.Semaphore(1)
        self.seconds, self.wait = seconds, wait
        self.cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.stopped = 0  # analyses given up because their client left

    def run(self, key: str, work: Callable[[Callable[[], bool]], dict[str, Any]],
            cancel: threading.Event | None, seconds: float | None = None) -> dict[str, Any]:
        """``work(stop)`` (cached under ``key``; an empty key: not cached) in the one slot,
        ``stop`` saying True once the client left or the time is up. WebError 503 when the
        server is busy, the client left or the time ran out."""
        if key and key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]

        def left() -> None:
            self.stopped += 1

        limit = self.seconds if seconds is None else seconds
        with take_slot(self.slot, self.wait, cancel, limit, "analysis",
                       "ask for a weaker judge (?bot=)", left) as stop:
            result = work(stop)
        if key:
            self.cache[key] = result
            while len(self.cache) > CACHE:
                self.cache.popitem(last=False)
        return result


def _judge(request: Request, game: Game) -> Bot:
    """The judge a request asks for (``?bot=``, a built-in bot within the play page's
    limits) or the default for the game's ruleset; WebError 400 for a bad one."""
    spec = request.query_params.get("bot") or judge_spec(game)
    bot = check_bot_spec(spec)
    try:
        return make_judge(bot, game)
    except BotSpecError as e:
        raise WebError(400, f"bot: {e}") from None


def _cancel(request: Request) -> threading.Event | None:
    return getattr(request.state, "cancel", None)


def game_analysis(analyser: Analyser, request: Request, key: str, start: Game,
                  codes: list[int]) -> dict[str, Any]:
    """The analysis of the game from ``start`` through ``codes`` (cached by ``key`` and the
    judge)."""
    judge = _judge(request, start)

    def work(stop: Callable[[], bool]) -> dict[str, Any]:
        return analyse_game(start, codes, judge, stop=stop).to_dict()

    return analyser.run(f"{key}|{judge.spec}", work, _cancel(request))


def analysis_routes(state: _State, api: Callable[..., Any]) -> list[Route]:
    """The analysis routes over ``state``; ``api`` wraps a handler as the server's other
    JSON endpoints (errors as JSON, work in a thread, ``watch`` for disconnects)."""
    analyser = Analyser()

    def record_game(rec: GameRecord, key: str, request: Request) -> dict[str, Any]:
        try:
            start, codes = record_codes(rec, state.index.allowed_roots)
        except RecordError as e:
            raise record_error(e) from None
        return game_analysis(analyser, request, key, start, codes)

    def stored(request: Request) -> dict[str, Any]:
        run = state.index.get(request.path_params["rid"])
        gid_text = request.path_params["gid"]
        if not gid_text.isdigit() or len(gid_text) > 19:
            raise WebError(400, f"game id={quote(gid_text)}: expected a whole number")
        start, codes = state.index.start(run, int(gid_text))
        return game_analysis(analyser, request, f"run:{run.id}:{gid_text}", start, codes)

    def run_file(request: Request) -> dict[str, Any]:
        run = state.index.get(request.path_params["rid"], loaded=False)
        rel = request.query_params.get("path", "")
        try:
            rec, _ = load_record_file(run.path, rel, f"{run.label}/{rel}")
        except RecordError as e:
            raise record_error(e) from None
        return record_game(rec, f"file:{json.dumps(rec.to_dict(), sort_keys=True)}", request)

    def saved(request: Request) -> dict[str, Any]:
        name = request.path_params["name"]
        if "/" in name:
            raise WebError(403, f"saved game {quote(name)}: a file name, not a path")
        try:
            rec, _ = load_record_file(state.save_dir, name, f"saved game {name}")
        except RecordError as e:
            raise record_error(e) from None
        return record_game(rec, f"saved:{json.dumps(rec.to_dict(), sort_keys=True)}", request)

    def upload(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        rec = uploaded_record(body)
        return record_game(rec, f"upload:{json.dumps(rec.to_dict(), sort_keys=True)}", request)

    def hint(request: Request) -> dict[str, Any]:
        session = state.play.get(request.path_params["sid"])
        with session.lock:  # a snapshot: the game moves on only through this session
            game = session.game.copy()
            yours = not game.finished and game.to_move == session.human
        if not yours:
            raise WebError(409, "a hint is for your turn" if not game.finished else
                                "the game is over")
        judge = _judge(request, game)

        def work(stop: Callable[[], bool]) -> dict[str, Any]:
            view = analyse_position(game, judge, stop=stop).to_dict()
            return {**view, "judge": judge.spec, "method": method_of(judge)}

        return analyser.run("", work, _cancel(request), HINT_SECONDS)

    def report_link(request: Request) -> RedirectResponse:
        # a report's link to a game's analysis (relative to the run's files): the viewer
        rid, gid = request.path_params["rid"], request.path_params["game_id"]
        if not gid.isdigit() or len(gid) > 19:
            raise WebError(400, f"game id={quote(gid)}: expected a whole number")
        state.index.get(rid, loaded=False)  # 404 for a run not served
        return RedirectResponse(f"/game?run={url_quote(rid, safe='')}&game={int(gid)}",
                                status_code=303)

    return [
        Route("/files/{rid}/" + ANALYSIS_LINK, api(report_link), methods=["GET"]),
        Route("/api/runs/{rid}/games/{gid}/analysis", api(stored, watch=True),
              methods=["GET"]),
        Route("/api/runs/{rid}/record/analysis", api(run_file, watch=True), methods=["GET"]),
        Route("/api/saved/{name}/analysis", api(saved, watch=True), methods=["GET"]),
        Route("/api/analysis", api(upload, body=True, watch=True), methods=["POST"]),
        Route("/api/play/{sid}/hint", api(hint, watch=True), methods=["GET"]),
    ]
