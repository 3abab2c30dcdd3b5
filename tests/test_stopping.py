"""Stops that are prompt and never crash, and bots that can neither hang nor crash a run:
the stop flag read per move (and inside the search), Python bots on a thread of their own
with a time limit per move, and what the command line says when a run ends early.

The fast tests drive the library in this process; the slow ones run ``patchsim run`` in a
subprocess and send it real signals once it has visibly started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.engine.deal import deal_arrays, deal_circle
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play.config import load_run_config
from patchsim.play.execution import execute
from patchsim.play.match import BotError, GameStopped, max_events, max_plies, play_game
from patchsim.play.worker import warm_up

TESTS = Path(__file__).parent
E2 = load_ruleset("edition2")


def _python_game(spec: str, **kw):
    return play_game(E2, (make_bot(spec), make_bot("greedy")), deal_circle(E2, 3), 3, **kw)


# --- Python bots: whatever they do, it is a bot failure with the bot's name ---------------------
def test_a_python_bot_that_hangs_fails_at_the_time_limit_per_move():
    t = time.monotonic()
    with pytest.raises(BotError, match=r"bot 'unruly_bots:Sleeper\(at=2\)' \(seat 0\) took "
                                       r"longer than 0.3 s to choose a move .* at move 3 ") as e:
        _python_game("unruly_bots:Sleeper(at=2)", move_seconds=0.3)
    assert e.value.move_number == 3
    assert time.monotonic() - t < 1800  # not the hour it sleeps


def test_a_run_gives_a_python_bot_its_configured_time_per_move():
    from patchsim.play.batches import plan_batches, play_batch
    from patchsim.play.config import run_identity

    cfg = load_run_config("edition2", games=2, bots=["unruly_bots:Sleeper(at=2)", "greedy"],
                          pairings="cross")
    assert cfg.move_seconds == 60  # the default: generous, but a hang ends
    cfg.move_seconds = 0.3
    with pytest.raises(BotError, match="took longer than 0.3 s"):
        play_batch(cfg, plan_batches(cfg)[0], run_identity(cfg))


def test_a_python_bot_returning_a_huge_number_is_a_bot_failure():
    with pytest.raises(BotError, match=r"Huge\(at=3\)' \(seat 0\) returned 1180591620717411303424"
                                       r", which is not a move code at move 5"):
        _python_game("unruly_bots:Huge(at=3)")


@pytest.mark.parametrize(("bot", "what"), [("Interrupter", "raised KeyboardInterrupt at"),
                                           ("Exiter", "raised SystemExit: 3 at")])
def test_a_python_bot_raising_keyboardinterrupt_or_exiting_is_a_bot_failure(bot, what):
    # on its own thread: a KeyboardInterrupt from there is the bot's, never the user's
    with pytest.raises(BotError, match=rf"{bot}\(at=2\)' \(seat 0\) {what} move 3 "):
        _python_game(f"unruly_bots:{bot}(at=2)")


def test_a_python_bot_is_not_waited_for_once_the_game_is_stopped():
    thinking = threading.Event()

    class Thinker:
        spec = "thinker"

        def choose(self, game, moves, rng):
            thinking.set()
            time.sleep(3600)
            return moves[0]

    stop = np.zeros(1, dtype=np.int64)
    out: dict = {}

    def play() -> None:
        try:
            play_game(E2, (Thinker(), make_bot("greedy")), deal_circle(E2, 1), 1, stop=stop)
        except GameStopped as e:
            out["stopped"] = e

    thread = threading.Thread(target=play)
    thread.start()
    assert thinking.wait(60)
    stop[0] = 1
    thread.join(600)  # without the stop, the hour the bot thinks
    assert "stopped" in out


def test_a_bot_module_calling_sys_exit_on_import_is_a_spec_error():
    with pytest.raises(BotSpecError, match="bot module 'exiting_bot_module' raised SystemExit "
                                           "while being imported: 4"):
        make_bot("exiting_bot_module:Bot")


def test_search_budgets_are_bounded():
    with pytest.raises(BotSpecError, match="iterations"):
        make_bot("mcts(iterations=1000000000000)")
    make_bot("mcts(iterations=1000000)")


# --- the search stops within a move -------------------------------------------------------------
def test_a_search_move_stops_when_the_flag_is_set_while_it_searches():
    # a million iterations per move take minutes; the tree is sized for far fewer (it would
    # take gigabytes), so this also shows that a huge budget plays in bounded memory
    tables = compile_ruleset(E2)
    bot = make_bot("mcts(iterations=100000000)")
    circles, streams = deal_arrays(E2, np.arange(1, dtype=np.int64))
    kinds = np.array([bot.kind, bot.kind], dtype=np.int64)
    params = np.stack([bot.params, bot.params])

    def play(stop: np.ndarray):
        return playout.play_deals(tables.tab, circles, streams, kinds, params, max_plies(E2),
                                  max_events(E2), stop)

    t = time.thread_time()
    play(np.ones(1, dtype=np.int64))  # compiled (or loaded), and the set-up's CPU time
    setup = time.thread_time() - t
    stop = np.zeros(1, dtype=np.int64)
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(r=play(stop)))
    thread.start()
    # set once the thread is searching: 200 ms of its own CPU time past its set-up
    clock = time.pthread_getcpuclockid(thread.ident)
    while time.clock_gettime(clock) < 2 * setup + 0.2 and "r" not in out:
        time.sleep(0.001)
    stop[0] = 1
    thread.join(600)  # without the flag in the search: the first move alone takes hours
    assert not thread.is_alive()
    assert out["r"][-1] == playout.STOPPED


@pytest.mark.parametrize("spec", ["mcts(iterations=1000)",
                                  "mcts(eval=learned, iterations=1000)"])
def test_a_stopped_search_still_returns_a_legal_move(spec):
    # the flag is read only once the root has children: a stopped search returns a move
    from patchsim.bots.learned import bind_bot
    from patchsim.engine import core
    from patchsim.engine.game import Game

    tables = compile_ruleset(E2)
    bot = bind_bot(make_bot(spec), tables)
    game = Game.new(E2, circle=deal_circle(E2, 2))
    buf = np.empty(core.max_moves(tables.tab), dtype=np.int64)
    code = playout.choose_or_stop(bot.kind, bot.params, game.state, tables.tab,
                                  np.ones(1, dtype=np.uint64), buf, np.ones(1, dtype=np.int64),
                                  playout.bot_memo(bot.kind),
                                  playout.bot_keep(bot.kind, bot.params, tables.tab))
    assert core.legality(game.state, tables.tab, code) == 0


# --- the command line ---------------------------------------------------------------------------
def cli(*args: str, cwd: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONFAULTHANDLER="1")  # a crash would show, not pass silently
    return subprocess.Popen([sys.executable, "-m", "patchsim.cli", "run", *args,
                             "--no-report", "--no-progress"], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path_glob: str, folder: Path, proc: subprocess.Popen) -> None:
    """Until a file matching ``path_glob`` exists in ``folder`` (the run visibly started);
    a run that ends first fails the test with its output."""
    while not list(folder.glob(path_glob)):
        if proc.poll() is not None:
            raise AssertionError(f"the run ended first: {proc.stderr.read()}")
        time.sleep(0.05)


def tables(run_dir: Path) -> dict[str, bytes]:
    return {k: (run_dir / f"{k}.parquet").read_bytes() for k in ("games", "events")}


@pytest.fixture(scope="module")
def warm() -> None:
    """The compiled code in the cache before a run starts, so that a signal lands while
    the run plays, not while it compiles (which takes a minute and cannot be cut short)."""
    warm_up(load_run_config("edition2", games=2, bots=["mcts(iterations=2)", "greedy"]))


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_long_search_run_at_once_with_the_resume_command(warm, tmp_path, sig,
                                                                          code):
    """One worker: the batch plays on a thread while the main thread takes the signal (in
    the main thread, a signal landing as numba boxed a result crashed the process with
    SIGSEGV). A move of this search takes minutes: the stop is per move, or faster."""
    out = tmp_path / "run"
    p = cli("edition2", "--bots", "mcts(iterations=1000000)", "--games", "40", "--jobs", "1",
            "--out", str(out), cwd=tmp_path)
    _wait_for("manifest.json", out, p)
    p.send_signal(sig)
    t = time.monotonic()
    assert p.wait(600) == code
    waited = time.monotonic() - t
    err = p.stderr.read()
    assert "Traceback" not in err and "Fatal Python error" not in err, err
    assert f"patchsim run --resume {out}" in err
    assert waited < 60, f"{waited:.1f} s from the signal to the exit"


STOP_RUN = ("ruleset: edition2\nbots: ['mcts(iterations=150)', greedy]\npairings: cross\n"
            "games: 8\nbatch_deals: 1\n")


@pytest.mark.slow
def test_a_search_run_stopped_by_sigint_resumes_to_the_tables_of_an_uninterrupted_run(warm,
                                                                                      tmp_path):
    exp = tmp_path / "stop.yaml"
    exp.write_text(STOP_RUN)
    ref = tmp_path / "ref"
    execute(load_run_config(str(exp)), ref, jobs=1)
    out = tmp_path / "run"
    p = cli(str(exp), "--jobs", "1", "--keep-batches", "--out", str(out), cwd=tmp_path)
    _wait_for("batches/*.games.arrow", out, p)
    p.send_signal(signal.SIGINT)
    assert p.wait(600) == 130
    err = p.stderr.read()
    assert "Traceback" not in err and f"patchsim run --resume {out}" in err, err
    assert json.loads((out / "manifest.json").read_text())["complete"] is False
    resumed = cli("--resume", str(out), "--jobs", "1", cwd=tmp_path)
    assert resumed.wait(600) == 0, resumed.stderr.read()
    assert tables(out) == tables(ref)


@pytest.mark.slow
def test_a_python_bot_run_that_completes_or_resumes_prints_no_thread_exception(warm, tmp_path):
    out = tmp_path / "run"
    args = ["--jobs", "2", "--out", str(out)]
    first = cli("edition2", "--bots", "custom_bots:Hoarder;greedy", "--games", "4", *args,
                cwd=TESTS)
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0 and "Exception" not in err, err
    again = cli("--resume", str(out), "--jobs", "2", cwd=TESTS)  # complete: nothing to play
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0 and "Exception" not in err and "Traceback" not in err, err


@pytest.mark.slow
@pytest.mark.parametrize(("bot", "jobs", "what"), [
    ("custom_bots:Raiser(at=5)", "2", "raised RuntimeError: the bot broke down"),
    ("unruly_bots:Interrupter(at=3)", "1", "raised KeyboardInterrupt"),
    ("unruly_bots:Interrupter(at=3)", "2", "raised KeyboardInterrupt"),
    ("unruly_bots:Exiter(at=3)", "1", "raised SystemExit: 3"),
    ("unruly_bots:Exiter(at=3)", "2", "raised SystemExit: 3"),
    ("unruly_bots:Huge(at=3)", "2", "which is not a move code"),
])
def test_a_failing_python_bot_in_a_run_is_reported_as_the_bot_s_failure(tmp_path, bot, jobs,
                                                                         what):
    p = cli("edition2", "--bots", f"{bot};greedy", "--games", "8", "--jobs", jobs,
            "--out", str(tmp_path / "run"), cwd=TESTS)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 1, err
    assert err.startswith(f"error: bot '{bot}'") and what in err, err
    assert "cancelled" not in err and "Traceback" not in err and "patchsim replay" in err


@pytest.mark.slow
def test_a_bot_module_exiting_on_import_is_a_message(tmp_path):
    p = cli("edition2", "--bots", "exiting_bot_module:Bot;greedy", "--games", "2",
            "--out", str(tmp_path / "run"), cwd=TESTS)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 2, err
    assert "raised SystemExit while being imported: 4" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_python_bot_that_crashes_its_worker_is_one_message_with_the_stacks_in_a_log(tmp_path):
    out = tmp_path / "run"
    p = cli("edition2", "--bots", "unruly_bots:Crasher(at=3);greedy", "--games", "4",
            "--jobs", "2", "--out", str(out), cwd=TESTS)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 1, err
    log = out / "batches" / "worker-crashes.log"
    assert f"a worker process died (it crashed, e.g. a segmentation fault in a bot, or the " \
           f"system killed it for its memory; its stacks are in {log})" in err
    assert "Fatal Python error" not in err and f"patchsim run --resume {out}" in err, err
    assert "Segmentation fault" in log.read_text()


def test_a_stop_before_the_run_starts_says_so_with_the_signals_exit_status(capsys) -> None:
    """SIGTERM (or Ctrl-C) while a run is still being set up ended with status 130 and no
    word; now a line says nothing was played, with the status of the signal that stopped it."""
    from patchsim.cli.common import stopped_before_start

    for cause, status in (("stopped by SIGTERM", 143), ("stopped by SIGHUP", 129), ("", 130)):
        assert stopped_before_start(KeyboardInterrupt(cause)).exit_code == status
        err = capsys.readouterr().err
        assert "before any game was played; nothing to resume" in err
        assert (cause or "interrupted") in err
