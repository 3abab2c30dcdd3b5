"""``patchsim serve``: the local web app (runs, game viewer, play against a bot).

Registered by :mod:`patchsim.cli.main` (``app.command("serve")(cli_serve.serve)``).
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
from pathlib import Path
from typing import Annotated

import typer

from patchsim.cli.common import fail


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` and listening, so that an address in use or a
    host that is no address of this machine is a message here, not uvicorn's log lines.
    OSError (with a sentence in ``strerror``) when it cannot be had."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        raise OSError(f"--host {host}: not an address or a known host name "
                      f"({getattr(e, 'strerror', None) or e})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            why = (f"port {port} is in use on {host} (another server runs there; stop it or "
                   "give --port)")
        elif e.errno == errno.EADDRNOTAVAIL:
            why = f"--host {host}: not an address of this machine"
        elif e.errno == errno.EACCES:
            why = f"--port {port}: not allowed here (ports below 1024 need privileges)"
        else:
            why = f"cannot listen on {host}:{port} ({e.strerror or e})"
        raise OSError(why) from None
    return sock


def serve(
    run_dirs: Annotated[list[str] | None, typer.Argument(
        help="Run folders, or folders holding run folders (default: reports/).")] = None,
    host: Annotated[str, typer.Option(
        help="Interface to listen on. The default serves this machine only; another "
             "address makes the runs and the files in them readable from the network.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    save_dir: Annotated[str, typer.Option(
        help="Folder where games played in the browser are saved as records.")]
    = "played-games",
    eval_bot: Annotated[str, typer.Option(
        help="Bot that plays the rollouts of the evaluation curve (a built-in non-search "
             "bot).")] = "greedy(epsilon=0.1)",
    eval_rollouts: Annotated[int, typer.Option(
        help="Rollouts per position for the evaluation curve.")] = 200,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Serve a local web app: the runs with their reports and games tables, a game viewer
    (every position drawn, an evaluation curve), and games against a bot in the browser."""
    import uvicorn

    from patchsim.bots.registry import BotSpecError
    from patchsim.web.app import MAX_EVAL_ROLLOUTS, create_app
    from patchsim.web.runs import FolderError

    roots = [Path(d) for d in run_dirs] if run_dirs else [Path("reports")]
    missing = [str(r) for r in roots if not r.exists()]
    if missing and run_dirs:
        raise fail(f"no such folder: {', '.join(missing)} (give run folders written by "
                    "'patchsim run', or folders that hold them)")
    if not 0 <= port <= 65535:
        raise fail(f"--port {port}: give a port between 0 and 65535")
    if log_level not in ("debug", "info", "warning", "error"):
        raise fail(f"--log-level {log_level}: give debug, info, warning or error")
    if not 1 <= eval_rollouts <= MAX_EVAL_ROLLOUTS:
        raise fail(f"--eval-rollouts {eval_rollouts}: give between 1 and {MAX_EVAL_ROLLOUTS}")
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s: %(name)s: %(message)s")
    loopback = is_loopback(host)
    if not loopback:
        typer.echo(f"warning: listening on {host}: anybody who can reach this machine can read "
                   "the run folders and play here", err=True)
    if missing:
        typer.echo(f"note: {missing[0]} does not exist yet; the runs page stays empty until "
                   "'patchsim run' writes there (or give run folders)", err=True)
    try:
        # on this machine only, requests must name it (no DNS rebinding from other sites'
        # pages); an address given for the network is reached under any name
        allowed = (sorted({"127.0.0.1", "localhost", "::1", "[::1]", host.strip("[]")})
                   if loopback else None)
        app = create_app(roots, save_dir, eval_bot=eval_bot, eval_rollouts=eval_rollouts,
                         allowed_hosts=allowed)
    except BotSpecError as e:
        raise fail(f"--eval-bot: {e}") from None
    except FolderError as e:
        flag = "--save-dir " if e.what == "save folder" else ""
        raise fail(f"{flag}{e}") from None
    try:
        sock = listening_socket(host, port)
    except OSError as e:
        raise fail(e) from None
    port = sock.getsockname()[1]  # the one chosen for --port 0
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"patchsim serve: http://{shown}:{port}/ (Ctrl-C stops it)")
    with sock:
        uvicorn.Server(uvicorn.Config(app, log_level=log_level)).run(sockets=[sock])
