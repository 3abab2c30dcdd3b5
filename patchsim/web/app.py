"""The web application of ``patchsim serve`` (Starlette): pages, a JSON API, run files.

Pages (plain HTML and JavaScript from ``static/``, nothing from the network):

- ``/``: the runs, with their reports; saved games; links to open a record and to play.
- ``/run?id=RUN``: one run: the filterable games table, a link to each game.
- ``/game?run=RUN&game=ID`` (a stored game), ``/game?run=RUN&file=PATH`` (a record file in
  a run folder), ``/game?saved=NAME`` (a game played here), ``/game`` (open a record file
  from disk): the game viewer.
- ``/play``: a game against a bot.

Every answer to a request that cannot be served is a 4xx with a one-line message (JSON
``{"error": ...}`` under ``/api/``, a short page elsewhere), never a traceback; an
unexpected failure is a 500 with a message, and its traceback goes to the log only.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from patchsim.bots.registry import REGISTRY, BotSpecError
from patchsim.engine.game import Game, IllegalMoveError
from patchsim.engine.record import GameRecord, RecordError
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset, shipped_rulesets
from patchsim.engine.textfile import PATH_CHARS
from patchsim.engine.view import BOARD_SCRIPT
from patchsim.engine.yamlfile import JsonNumberError, parse_json
from patchsim.errors import quote
from patchsim.play.evaluate import (
    DEFAULT_EVAL_BOT,
    DEFAULT_ROLLOUTS,
    evaluate_game,
    learned_params,
    rollout_bot,
)
from patchsim.web import STATIC_DIR
from patchsim.web.analysis import analysis_routes
from patchsim.web.play import IllegalMove, PlayManager
from patchsim.web.records import record_error, uploaded_record
from patchsim.web.runs import (
    MAX_RECORD_BYTES,
    RunIndex,
    WebError,
    check_folders,
    inside,
    load_record_file,
    record_view,
    too_deep,
)
from patchsim.web.slots import take_slot

log = logging.getLogger("patchsim.web")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
MAX_EVAL_ROLLOUTS = 2000
# The evaluation is the one request that costs minutes if let: its work is bounded per
# request (rollouts x positions, scaled by the track's length), in time, and across requests
# (one at a time), and it stops when the client leaves.
EVAL_WORK = 40_000  # rollouts of a standard-length game per request: some 20 s of one core
STANDARD_TRACK = 53
EVAL_SECONDS = 120.0
EVAL_WAIT = 60.0  # how long a request waits for the running evaluation to end
MAX_JSON_DEPTH = 32  # records and move bodies are shallow; deeper nesting is refused
PAGES = {"/": "index.html", "/run": "run.html", "/game": "game.html", "/play": "play.html"}


class ServerState:
    """What the routes share: the run index, the games in play, the evaluation settings and
    a small cache of evaluations."""

    def __init__(self, roots: Sequence[Path], save_dir: Path, eval_bot: str,
                 eval_rollouts: int) -> None:
        self.index = RunIndex(list(roots))
        self.save_dir = Path(save_dir)
        self.play = PlayManager(self.save_dir)
        self.eval_bot = rollout_bot(eval_bot)  # fails at start-up, not at the first request
        self.eval_rollouts = eval_rollouts
        self.evals: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self.eval_slot = threading.Semaphore(1)
        self.eval_work, self.eval_wait = EVAL_WORK, EVAL_WAIT
        self.evals_stopped = 0  # evaluations given up because their client left

    def evaluate(self, key: str, start: Game, codes: list[int], n: int,
                 cancel: threading.Event | None = None) -> dict[str, Any]:
        """The evaluation curve of a game (cached); ``cancel`` set stops it (the client
        left). WebError 422 for a game too long to evaluate here, 503 when it is stopped
        or the server is busy with another one."""
        learned = learned_params(start) is not None
        note = None
        if not learned:
            moving = max(1, len(codes))  # the final position costs nothing
            scale = max(1.0, start.ruleset.last_space / STANDARD_TRACK)
            most = int(self.eval_work / (moving * scale))
            if most < 1:
                raise WebError(422, f"this game has {moving} positions on a track of "
                                    f"{start.ruleset.last_space}: too long to evaluate here")
            if n > most:
                note = (f"{n} rollouts per position were asked; {most} are played, which "
                        f"bounds the server's work on a game of {moving} positions on a "
                        f"track of {start.ruleset.last_space}")
                n = most
        cache_key = f"{key}|{n}"
        table = self.evals.get(cache_key)
        if table is None:
            table = self._run_evaluation(start, codes, n, cancel)
            self.evals[cache_key] = table
            while len(self.evals) > 64:
                self.evals.popitem(last=False)
        if learned:
            # the model gives a number, not a sampling interval: no band is drawn rather
            # than one of zero width
            table = [{**p, "win0_lo": None, "win0_hi": None} for p in table]
        return {"bot": "mcts(eval=learned)" if learned else self.eval_bot.spec,
                "rollouts": 0 if learned else n, "points": table, "note": note,
                "method": ("win probability of seat 0 from this ruleset's learned evaluation "
                           "(the strongest available)" if learned else
                           f"win probability of seat 0 from {n} rollouts per position by "
                           f"{self.eval_bot.spec} in both seats (no trained model for this "
                           "ruleset)")}

    def _run_evaluation(self, start: Game, codes: list[int], n: int,
                        cancel: threading.Event | None) -> list[dict[str, Any]]:
        def left() -> None:
            self.evals_stopped += 1

        with take_slot(self.eval_slot, self.eval_wait, cancel, EVAL_SECONDS, "evaluation",
                       "ask for fewer rollouts", left) as stop:
            frame = evaluate_game(start, codes, self.eval_bot, n, stop=stop)
        return json.loads(frame.to_json(orient="records"))


def create_app(roots: Sequence[str | Path], save_dir: str | Path = "played-games", *,
               eval_bot: str = DEFAULT_EVAL_BOT, eval_rollouts: int = DEFAULT_ROLLOUTS,
               allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS) -> Starlette:
    """The application serving the run folders in (or below) ``roots``.

    Games played in the browser are saved to ``save_dir``. The evaluation curve uses
    ``eval_rollouts`` rollouts of ``eval_bot`` per position. ``allowed_hosts`` are the Host
    names a request may use (the loopback names by default, which keeps other sites' pages
    from reaching the server through DNS rebinding); None allows any.
    :class:`~patchsim.web.runs.FolderError` for a root or ``save_dir`` that is a file."""
    if not 1 <= eval_rollouts <= MAX_EVAL_ROLLOUTS:
        raise ValueError(f"eval_rollouts: give between 1 and {MAX_EVAL_ROLLOUTS}, "
                         f"got {eval_rollouts}")
    check_folders([Path(r) for r in roots], Path(save_dir))
    state = ServerState([Path(r) for r in roots], Path(save_dir), eval_bot, eval_rollouts)
    runs = state.index.scan()
    log.info("serving %d run folder(s) from %s; games played here are saved in %s",
             len(runs), ", ".join(map(str, roots)) or "(none)", state.save_dir)

    routes = [
        *(Route(path, _page(name)) for path, name in PAGES.items()),
        Route("/api/runs", _api(lambda r: _runs(state)), methods=["GET"]),
        Route("/api/runs/{rid}", _api(lambda r: _run(state, r)), methods=["GET"]),
        Route("/api/runs/{rid}/games", _api(lambda r: _games(state, r)), methods=["GET"]),
        Route("/api/runs/{rid}/games/{gid}", _api(lambda r: _game(state, r)), methods=["GET"]),
        Route("/api/runs/{rid}/games/{gid}/eval",
              _api(lambda r: _game_eval(state, r), watch=True), methods=["GET"]),
        Route("/api/runs/{rid}/record", _api(lambda r: _run_record(state, r)),
              methods=["GET"]),
        Route("/api/runs/{rid}/record/eval",
              _api(lambda r: _run_record_eval(state, r), watch=True), methods=["GET"]),
        Route("/api/saved/{name}", _api(lambda r: _saved(state, r)), methods=["GET"]),
        Route("/api/saved/{name}/eval", _api(lambda r: _saved_eval(state, r), watch=True),
              methods=["GET"]),
        Route("/api/record", _api(lambda r, body: _upload(state, body), body=True),
              methods=["POST"]),
        Route("/api/eval", _api(lambda r, body: _upload_eval(state, r, body), body=True,
                                watch=True), methods=["POST"]),
        Route("/api/play/options", _api(lambda r: _play_options(state)), methods=["GET"]),
        Route("/api/play", _api(lambda r, body: _play_new(state, body), body=True),
              methods=["POST"]),
        Route("/api/play/{sid}", _api(lambda r: state.play.state(r.path_params["sid"])),
              methods=["GET"]),
        Route("/api/play/{sid}/move",
              _api(lambda r, body: state.play.move(r.path_params["sid"], body.get("move")),
                   body=True), methods=["POST"]),
        *analysis_routes(state, _api),  # the judge's view of a game's moves, and hints
        Route("/api/{rest:path}", _api(lambda r: _no_api(r))),
        Route("/files/{rid}/{path:path}", _api(lambda r: _file(state, r)), methods=["GET"]),
        # the position view's drawing script lives with the view (engine/view.py), not here
        Route("/static/board.js", _board_script, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    middleware = []
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    handlers = {WebError: _web_error, HTTPException: _http_error, Exception: _crash}
    app = Starlette(routes=routes, middleware=middleware,
                    exception_handlers=handlers)  # type: ignore[arg-type]
    app.state.patchsim = state
    return app


# --- plumbing ---------------------------------------------------------------------------------
async def _board_script(request: Request) -> Response:
    return FileResponse(BOARD_SCRIPT, media_type="text/javascript; charset=utf-8")


def _page(name: str):
    async def endpoint(request: Request) -> Response:
        return FileResponse(STATIC_DIR / name, media_type="text/html; charset=utf-8",
                            headers={"Cache-Control": "no-cache"})
    return endpoint


def _api(fn, body: bool = False, watch: bool = False):
    """An endpoint running ``fn(request[, body])`` in a worker thread (the engine, pandas and
    the bots are CPU work); a dict becomes JSON, a Response is passed through. ``watch``:
    while it runs, the connection is watched, and ``request.state.cancel`` (an Event) is
    set when the client leaves, so that long work stops instead of running for nobody."""

    async def endpoint(request: Request) -> Response:
        args = (request, await _read_json(request)) if body else (request,)
        if watch:
            cancel = request.state.cancel = threading.Event()
            work = asyncio.ensure_future(run_in_threadpool(fn, *args))
            try:
                while not work.done():
                    await asyncio.wait({work}, timeout=0.25)
                    if not work.done() and await request.is_disconnected():
                        cancel.set()
            finally:
                cancel.set()  # a cancelled request (server stopping) stops the work too
            result = work.result()
        else:
            result = await run_in_threadpool(fn, *args)
        if isinstance(result, Response):
            return result
        return JSONResponse(result)

    return endpoint


async def _read_json(request: Request, limit: int = MAX_RECORD_BYTES) -> dict[str, Any]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        # a page of another site cannot send JSON here without the browser asking first
        raise WebError(415, "send the request body as JSON (Content-Type: application/json)")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise WebError(413, f"the request body is larger than {limit // 1_000_000} MB")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise WebError(413, f"the request body is larger than {limit // 1_000_000} MB")
    try:
        data = parse_json(bytes(raw).decode("utf-8"), "the request body")
    except JsonNumberError as e:  # thousands of digits: json's bare ValueError, once a 500
        raise WebError(400, str(e)) from None
    except RecursionError:
        raise WebError(400, "the request body is nested too deeply") from None
    except UnicodeDecodeError as e:
        raise WebError(400, f"the request body is not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise WebError(400, f"the request body is not valid JSON: {e.msg} at line {e.lineno} "
                            f"column {e.colno}") from None
    if not isinstance(data, dict):
        raise WebError(400, "the request body must be a JSON object")
    if too_deep(data, MAX_JSON_DEPTH):
        raise WebError(400, f"the request body is nested more than {MAX_JSON_DEPTH} levels "
                            "deep; a record or a move is not")
    return data


def _error(request: Request, status: int, message: str, extra: dict[str, Any] | None = None
           ) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message, "status": status, **(extra or {})},
                            status_code=status)
    page = (f"<!doctype html><html lang=en><meta charset=utf-8><title>patchsim: {status}"
            f"</title><link rel=stylesheet href=/static/style.css><body><main class=page>"
            f"<h1>{status}</h1><p class=error>{html.escape(message)}</p>"
            f"<p><a href=/>Back to the runs</a></p></main></body></html>")
    return HTMLResponse(page, status_code=status)


async def _web_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, WebError)
    if exc.status >= 500:
        log.error("%s %s: %s", request.method, request.url.path, exc.message)
    extra = {}
    if isinstance(exc, IllegalMove):
        extra = {"reason": exc.reason, "reason_text": exc.reason_text}
    return _error(request, exc.status, exc.message, extra)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    messages = {404: f"nothing here: {request.url.path}",
                405: f"{request.method} is not allowed on {request.url.path}"}
    return _error(request, exc.status_code, messages.get(exc.status_code, str(exc.detail)))


async def _crash(request: Request, exc: Exception) -> Response:
    log.error("%s %s failed", request.method, request.url.path,
              exc_info=(type(exc), exc, exc.__traceback__))
    return _error(request, 500, f"the server failed on this request ({type(exc).__name__}: "
                                f"{exc}); the details are in the server's log")


def _query(request: Request) -> dict[str, str]:
    return dict(request.query_params)


def _int_param(value: str | None, name: str, lo: int, hi: int, default: int | None = None
               ) -> int:
    if value is None or value == "":
        if default is None:
            raise WebError(400, f"{name}: missing")
        return default
    try:
        number = int(value)
    except ValueError:
        raise WebError(400, f"{name}={quote(value)}: expected a whole number") from None
    if not lo <= number <= hi:
        raise WebError(400, f"{name}={quote(value)}: expected a number between {lo} and {hi}")
    return number


# --- runs and games ---------------------------------------------------------------------------
def _runs(state: ServerState) -> dict[str, Any]:
    runs = state.index.scan()
    return {"runs": [r.summary() for r in runs], "problems": state.index.problems,
            "roots": [str(r) for r in state.index.roots], "saved": _saved_names(state)}


def _saved_names(state: ServerState) -> list[str]:
    if not state.save_dir.is_dir():
        return []
    return sorted((p.name for p in state.save_dir.glob("*.json") if p.is_file()
                   and not p.name.startswith(".")), reverse=True)


def _run(state: ServerState, request: Request) -> dict[str, Any]:
    run = state.index.get(request.path_params["rid"])
    return {**run.summary(), "options": state.index.filter_options(run),
            "records": state.index.record_files(run)}


def _games(state: ServerState, request: Request) -> dict[str, Any]:
    run = state.index.get(request.path_params["rid"])
    return state.index.filter_games(run, _query(request))


def _game_id(request: Request) -> int:
    return _int_param(request.path_params["gid"], "game id", 0, 2**62)


def _game(state: ServerState, request: Request) -> dict[str, Any]:
    run = state.index.get(request.path_params["rid"])
    gid = _game_id(request)
    view = state.index.game_view(run, gid)
    return {**view, "eval_url": f"/api/runs/{run.id}/games/{gid}/eval"}


def _rollouts(state: ServerState, request: Request) -> int:
    return _int_param(request.query_params.get("rollouts"), "rollouts", 1, MAX_EVAL_ROLLOUTS,
                      state.eval_rollouts)


def _game_eval(state: ServerState, request: Request) -> dict[str, Any]:
    run = state.index.get(request.path_params["rid"])
    gid = _game_id(request)
    n = _rollouts(state, request)
    start, codes = state.index.start(run, gid)
    return state.evaluate(f"run:{run.id}:{gid}", start, codes, n, _cancel(request))


def _cancel(request: Request) -> threading.Event | None:
    return getattr(request.state, "cancel", None)


def _record_codes(record: GameRecord, allowed: list[Path]) -> tuple[Game, list[int]]:
    start = record.start(allowed)
    probe = start.copy()
    codes = []
    for text in record.moves:
        move = probe.parse_move(text)
        probe.apply(move)
        codes.append(move.code)
    return start, codes


def _run_record_file(state: ServerState, request: Request) -> tuple[GameRecord, dict, str]:
    run = state.index.get(request.path_params["rid"], loaded=False)
    rel = request.query_params.get("path", "")
    try:
        rec, written = load_record_file(run.path, rel, f"{run.label}/{rel}")
    except RecordError as e:
        raise record_error(e) from None
    return rec, written, f"/api/runs/{run.id}/record/eval?path={_quote(rel)}"


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _view(state: ServerState, rec: GameRecord, written: dict[str, Any]) -> dict[str, Any]:
    try:
        return record_view(rec, written, state.index.allowed_roots)
    except RecordError as e:
        raise record_error(e) from None


def _run_record(state: ServerState, request: Request) -> dict[str, Any]:
    rec, written, eval_url = _run_record_file(state, request)
    return {**_view(state, rec, written), "eval_url": eval_url}


def _record_eval(state: ServerState, request: Request, rec: GameRecord, key: str
                 ) -> dict[str, Any]:
    try:
        start, codes = _record_codes(rec, state.index.allowed_roots)
    except RecordError as e:
        raise record_error(e) from None
    except (IllegalMoveError, ValueError) as e:
        raise record_error(RecordError(f"{rec.source}: {e}")) from None
    return state.evaluate(key, start, codes, _rollouts(state, request), _cancel(request))


def _run_record_eval(state: ServerState, request: Request) -> dict[str, Any]:
    rec, _, _ = _run_record_file(state, request)
    key = f"file:{json.dumps(rec.to_dict(), sort_keys=True)}"
    return _record_eval(state, request, rec, key)


def _saved_file(state: ServerState, request: Request) -> tuple[GameRecord, dict[str, Any]]:
    name = request.path_params["name"]
    if "/" in name:
        raise WebError(403, f"saved game {quote(name)}: a file name, not a path")
    if not state.save_dir.is_dir():
        raise WebError(404, f"no saved games yet (they go to {state.save_dir})")
    try:
        return load_record_file(state.save_dir, name, f"saved game {name}")
    except RecordError as e:
        raise record_error(e) from None


def _saved(state: ServerState, request: Request) -> dict[str, Any]:
    rec, written = _saved_file(state, request)
    name = request.path_params["name"]
    return {**_view(state, rec, written), "eval_url": f"/api/saved/{_quote(name)}/eval",
            "saved_path": str(state.save_dir / name)}


def _saved_eval(state: ServerState, request: Request) -> dict[str, Any]:
    rec, _ = _saved_file(state, request)
    return _record_eval(state, request, rec, f"saved:{json.dumps(rec.to_dict(), sort_keys=True)}")


def _upload(state: ServerState, body: dict[str, Any]) -> dict[str, Any]:
    rec = uploaded_record(body)
    return _view(state, rec, rec.to_dict())


def _upload_eval(state: ServerState, request: Request, body: dict[str, Any]
                 ) -> dict[str, Any]:
    rec = uploaded_record(body)
    return _record_eval(state, request, rec, f"upload:{json.dumps(rec.to_dict(), sort_keys=True)}")


def _file(state: ServerState, request: Request) -> Response:
    # a run whose games do not load still has its report and figures to show
    run = state.index.get(request.path_params["rid"], loaded=False)
    path = inside(run.path, request.path_params["path"])
    return FileResponse(path)


def _no_api(request: Request) -> None:
    raise WebError(404, f"the API has no {request.method} {request.url.path}")


# --- play -------------------------------------------------------------------------------------
def _play_options(state: ServerState) -> dict[str, Any]:
    state.index.scan()
    rulesets = [{"key": name, "label": f"{name} (shipped)"} for name in shipped_rulesets()]
    rulesets += [{"key": f"run:{run.id}:{rel}", "label": f"{run.label}/{rel}"}
                 for run, rel in state.index.ruleset_files()]
    bots = [{"name": info.name, "description": info.description}
            for info in REGISTRY.values()]
    return {"rulesets": rulesets, "bots": bots, "save_dir": str(state.save_dir)}


def _play_ruleset(state: ServerState, key: object) -> tuple[Ruleset, str]:
    """The ruleset a page chose: a shipped name, or ``run:<run id>:<path>`` for a YAML file
    in a run folder (never any other path)."""
    if not isinstance(key, str) or not key:
        raise WebError(400, "ruleset: give a shipped ruleset name or a ruleset file of a run")
    try:
        if key.startswith("run:"):
            parts = key.split(":", 2)
            if len(parts) != 3:
                raise WebError(400, f"ruleset {quote(key, PATH_CHARS)}: a ruleset file of a "
                                    "run is named run:<run id>:<path in the run folder>")
            _, rid, rel = parts
            run = state.index.get(rid, loaded=False)
            path = inside(run.path, rel, "ruleset file")
            # what the file names (extends, a patch table) must be served or shipped too
            return (load_ruleset(path, allowed_roots=state.index.allowed_roots),
                    f"{run.label}/{rel}")
        if key not in shipped_rulesets():
            raise WebError(400, f"ruleset {quote(key, PATH_CHARS)}: not a shipped ruleset "
                                f"(shipped: {', '.join(shipped_rulesets())})")
        return load_ruleset(key), key
    except RulesetError as e:  # an invalid ruleset file: the page and the log say why
        log.warning("%s", e)
        raise WebError(400, f"ruleset {quote(key, PATH_CHARS)}: {e}") from None
    except RecursionError:
        raise WebError(400, f"ruleset {quote(key, PATH_CHARS)}: nested too deeply to be a "
                            "ruleset") from None


def _play_new(state: ServerState, body: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(body) - {"ruleset", "bot", "seat", "seed"})
    if unknown:
        raise WebError(400, f"unknown field(s) {', '.join(unknown)} (give ruleset, bot, seat "
                            "and optionally seed)")
    ruleset, label = _play_ruleset(state, body.get("ruleset"))
    try:
        return state.play.new(ruleset, label, body.get("bot"), body.get("seat", 0),
                              body.get("seed"))
    except BotSpecError as e:
        raise WebError(400, f"bot: {e}") from None
