"""What every command shares: turning library errors (which carry data) into one-paragraph
messages with the flags to use, the progress bar, the worker count and the signals that
stop a run."""

from __future__ import annotations

import contextlib
import errno
import inspect
import os
import shlex
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from patchsim.errors import MAX_SPEC_CHARS, OVERRIDE, PatchsimError, quote

if TYPE_CHECKING:
    from patchsim.play.config import RunError


def one_line_paragraphs(doc: str) -> str:
    """A docstring as help text: each paragraph joined into one line. Typer's rich help keeps
    single line breaks, so a docstring wrapped at the source's line length would show breaks
    mid-sentence; joined, the terminal wraps it. A paragraph starting with ``\\b`` (click's
    "keep my line breaks") is kept as written."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


# What the library names, and the command line's flag for it. A library error's problems carry
# how the user gave each key (patchsim.errors): a ruleset override ("override KEY") is a --set
# flag here, a library argument the option that sets it. Options of one command only, such
# as --pairings, are absent: their commands check them before the library sees them.
FLAGS = {
    OVERRIDE: "--set",
    "games": "--games",
    "seed": "--seed",
    "jobs": "--jobs",
    "bots": "--bots",
    "until": "--until",
    "decide_margin": "--until-decided",
    "backend": "--backend",
    "scheduler": "--scheduler",
    "minutes": "--minutes",
    "generations": "--generations",
    "models": "--models",
    "out": "--out",
}
# the command line's own advice for a problem about a key, instead of the library's hint
HINTS = {
    "time_ms": "the ladder accepts time budgets with --timed, for equal-time matches "
               "recorded as machine-dependent",
}


def message(error: BaseException | str, flags: Mapping[str, str] = FLAGS) -> str:
    """The text of an error for the command line: a library error rendered from its fields
    with the flags of ``flags`` and the hints of HINTS; any other text as it is."""
    if isinstance(error, PatchsimError):
        return error.render(flags, HINTS)
    return str(error)


def fail(error: BaseException | str, code: int = 2) -> typer.Exit:
    """Print a user-facing error (a message, or a library error rendered with the command
    line's flags) and return the Exit to raise."""
    typer.echo(f"error: {message(error)}", err=True)
    return typer.Exit(code)


def bot_specs(text: str | None) -> list[str] | None:
    """The specs of a ``--bots`` value, split at ';' and stripped; None when the flag is not
    given (the default line-up). An empty value, or an empty spec between separators
    (``''``, ``';;'``, ``'greedy;'``), is refused: it would otherwise play the default
    line-up, or a line-up other than the one typed, without a word."""
    if text is None:
        return None
    specs = [spec.strip() for spec in text.split(";")]
    if not any(specs):
        raise fail(f"--bots {quote(text)}: no bot spec given; give specs separated by ';' "
                   "(e.g. --bots 'greedy;random'), or leave out --bots for the default "
                   "line-up")
    empty = [i for i, spec in enumerate(specs, start=1) if not spec]
    if empty:
        raise fail(f"--bots {quote(text)}: spec {', '.join(map(str, empty))} of "
                   f"{len(specs)} is empty; give specs separated by single ';' (no ';' at "
                   "either end)")
    for i, spec in enumerate(specs, start=1):
        if len(spec) > MAX_SPEC_CHARS:  # the library's messages would quote it whole
            raise fail(f"--bots: spec {i} ({quote(spec)}) is longer than any bot spec "
                       f"({MAX_SPEC_CHARS:,} characters)")
    return specs



def new_folder(target: Path) -> None:
    """A study's ``--out`` that must be a new folder: refused when something is there (a
    link to nothing included), or when the path cannot even be looked at (too long, a null
    byte, a file on the way), in one message naming it (shortened when long)."""
    from patchsim.engine.textfile import short_path
    from patchsim.play.runfolder.checks import stat_path
    from patchsim.play.runfolder.errors import RunFolderError

    try:
        found = stat_path(target, "--out: cannot use")
    except RunFolderError as e:
        raise fail(e) from None
    if found is not None or os.path.islink(target):
        raise fail(f"--out {short_path(target)} already exists; give a new folder")


def resume_command(run_dir: str | Path) -> str:
    return f"patchsim run --resume {shlex.quote(str(run_dir))}"


def study_again(command: str, experiment: str) -> Callable[[Path], str]:
    """For a study (sweep, tune, check): the same command on the same folder continues it.
    ``command`` is the study's name; the tuner's runs sit two levels below its folder."""
    def again(run_dir: Path) -> str:
        folder = Path(run_dir)
        if command == "tune" and folder.parent.name in ("candidates", "finalists"):
            folder = folder.parent.parent
        return (f"patchsim {command} {shlex.quote(experiment)} --out "
                f"{shlex.quote(str(folder))}")
    return again


def run_failure(e: RunError, again: Callable[[Path], str] | None = None) -> typer.Exit:
    """The message and exit status for an error of a run, with what to do next. ``again``
    gives the command that continues from a run folder (default: ``patchsim run --resume``;
    a study passes its own, e.g. the same sweep with ``--out`` that folder)."""
    # imported here, not at the top: `patchsim --help` loads no numpy, numba nor the runner
    from patchsim.play.errors import BotFailure, RunInterrupted, RunStorageError
    from patchsim.play.runfolder import RunFolderBusy

    cont = again or resume_command
    text = message(e)
    if isinstance(e, RunInterrupted):
        typer.echo(f"\n{text}.\nNothing is lost: continue with\n    {cont(e.run_dir)}",
                   err=True)
        return typer.Exit(STOP_CODES.get(e.cause, 1))
    if isinstance(e, RunStorageError):
        return fail(f"{text}. {_storage_advice(e.error)}, then continue with\n"
                    f"    {cont(e.run_dir)}", 1)
    if isinstance(e, BotFailure):
        return fail(f"{text}\nreplay it with: patchsim replay "
                    f"{shlex.quote(str(e.record_path))}", 1)
    if isinstance(e, RunFolderBusy) and e.doing is None:  # a new run into a busy folder
        return fail(f"{text} (choose one with --out)")
    return fail(e)


STOP_CODES = {"interrupted": 130, "stopped by SIGHUP": 129, "stopped by SIGTERM": 143}


def stopped_before_start(e: KeyboardInterrupt) -> typer.Exit:
    """Ctrl-C, SIGTERM or SIGHUP before anything was played: a line that says so, and the
    exit status of that signal (130, 143, 129)."""
    cause = str(e) or "interrupted"
    typer.echo(f"\n{cause} before any game was played; nothing to resume.", err=True)
    return typer.Exit(STOP_CODES.get(cause, 130))


def _storage_advice(error: OSError) -> str:
    """What to do about a folder that cannot be written: space only helps a full disk."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "Free some space"
    if error.errno == errno.EROFS:
        return "The file system is read-only: make it writable (or copy the folder elsewhere)"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "Give yourself write permission on the folder"
    return "Fix the folder"


def jobs_count(jobs: int, dask: bool = True) -> int:
    """--jobs: -1 means every core. ``dask``: the command has --backend dask (a cluster)."""
    if jobs == -1:
        return os.cpu_count() or 1
    if jobs < 1:
        raise fail(f"--jobs {jobs}: give a number of workers >= 1, or -1 for every core")
    cores = os.cpu_count() or 1
    if jobs > cores:
        raise fail(f"--jobs {jobs}: this machine has {cores} core(s); more workers than cores "
                   f"only slow a run down and multiply its memory (use --jobs {cores}"
                   + (", or --backend dask for a cluster)" if dask else ")"))
    return jobs


class ProgressBar:
    """A progress callback for the library: a tqdm bar on stderr, a new bar per phase."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.bar: Any = None

    def __bool__(self) -> bool:
        return self.enabled

    def __call__(self, games: int, total: int) -> None:
        from tqdm import tqdm

        if games == 0:
            self.close()
            if total:
                self.bar = tqdm(total=total, unit="game", smoothing=0.1, dynamic_ncols=True,
                                file=sys.stderr)
        elif self.bar is not None:
            self.bar.update(games)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP stop a run like Ctrl-C does: finished batches are kept, workers are
    stopped and the message says how to resume (instead of dying mid-write)."""

    def handler(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


@contextlib.contextmanager
def run_progress(enabled: bool = True) -> Iterator[ProgressBar]:
    """For a command that plays games: SIGTERM and SIGHUP stop it as Ctrl-C does
    (:func:`stop_on_signals`), and its progress bar is closed however the work ends."""
    stop_on_signals()
    bar = ProgressBar(enabled)
    try:
        yield bar
    finally:
        bar.close()


def command_line() -> str:
    """The command as typed, for a manifest (shipped with reports): without this machine's
    folders. An absolute path inside the working folder is made relative to it; an --out
    elsewhere (a temporary folder) is left out, since the games do not depend on it."""
    args, out, i = sys.argv[1:], [], 0
    while i < len(args):
        a = args[i]
        if a == "--out" and i + 1 < len(args) and _machine_path(args[i + 1]):
            i += 2
            continue
        if a.startswith("--out=") and _machine_path(a[6:]):
            i += 1
            continue
        out.append(_relative(a))
        i += 1
    return " ".join(shlex.quote(a) for a in ["patchsim", *out])


def _relative(arg: str) -> str:
    key, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    path = Path(value)
    if path.is_absolute():
        with contextlib.suppress(ValueError):
            value = path.relative_to(Path.cwd()).as_posix() or "."
    return f"{key}{eq}{value}"


def _machine_path(value: str) -> bool:
    return Path(value).is_absolute() and not Path(value).is_relative_to(Path.cwd())
