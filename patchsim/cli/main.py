"""The ``patchsim`` command line: a thin typer layer; each command parses its arguments,
loads what it needs and calls one library function. User mistakes get a one-paragraph message
and a non-zero exit status, never a traceback."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from patchsim.cli.common import (
    bot_specs,
    command_line,
    fail,
    jobs_count,
    message,
    one_line_paragraphs,
    run_failure,
    run_progress,
    stop_on_signals,
    stopped_before_start,
    study_again,
)

if TYPE_CHECKING:  # the document package is imported only by the commands that write one
    from patchsim.document.model import Document
    from patchsim.engine.record import GameRecord

# what an option's value is, in its help line ("--out DIR"), instead of typer's type tags
# ("--out <str>", "--set <list[str]>"); by type otherwise: N a whole number, X a number
_METAVARS = {"out": "DIR", "save_dir": "DIR", "resume": "RUN_DIR", "compare_with": "RUN_DIR",
             "override": "KEY=VALUE", "set_": "KEY=VALUE", "bots": "SPECS",
             "scheduler": "ADDRESS", "backend": "NAME"}


class _Commands(typer.core.TyperGroup):
    """The command group: each command's values get words, not type tags, in its help, and
    `patchsim --help` lists each command with its first sentence whole (wrapped, where click
    would cut it off with "..." to fit one line)."""

    def format_commands(self, ctx, formatter):  # type: ignore[no-untyped-def]
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx, cmd_name):  # type: ignore[no-untyped-def]
        command = super().get_command(ctx, cmd_name)
        for param in getattr(command, "params", ()):
            if param.metavar is not None or getattr(param, "is_flag", False) \
                    or getattr(param, "count", False):
                continue  # named already, or a flag (no value)
            kind = param.bare_type() if hasattr(param, "bare_type") else ""
            param.metavar = _METAVARS.get(param.name or "") or (
                "N" if kind == "int" else "X" if kind == "float"
                else (param.name or "value").upper().rstrip("_").replace("_", "-"))
        return command


app = typer.Typer(
    cls=_Commands,
    help="Rules-variant simulation and balance testing for the board game Patchwork.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help: at 80 columns rich's option tables squeeze the help column until
    # defaults are cut off ("reports/<config>/<time…"); plain help wraps every word
    rich_markup_mode=None,
)


@app.command()
def replay(
    file: Annotated[str, typer.Argument(help="Game record (JSON); '-' reads standard input; "
                                        "with --game, a run folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the final position as JSON "
                                          "(with its position text under \"text\"); with "
                                          "--analyse, the analysis as JSON.")]
    = False,
    trace: Annotated[bool, typer.Option("--trace", help="Print the position at the start and "
                                        "after every move (JSON lines with --json).")] = False,
    analyse: Annotated[bool, typer.Option("--analyse", help="Analyse every move: the judge's "
                                          "value of the move played and of its own choice "
                                          "(pass and each affordable patch's best placement "
                                          "are weighed), the win probability lost, marks on "
                                          "the moves that lost most, a summary per seat.")]
    = False,
    bot: Annotated[str | None, typer.Option("--bot", metavar="SPEC", help="With --analyse: "
                                            "the judge (default: mcts(eval=learned, "
                                            "iterations=100), or mcts(iterations=200) for a "
                                            "ruleset with no trained model).")] = None,
    seed: Annotated[int, typer.Option(help="With --analyse: the seed of the judge's random "
                                      "streams (a deterministic judge draws nothing).")] = 0,
    game_id: Annotated[int | None, typer.Option("--game", metavar="ID", help="Replay game ID "
                                                "of the run folder FILE (the id in its games "
                                                "table and report).")] = None,
) -> None:
    """Replay a game record and show the final position (or every position with --trace).

    With --analyse, every move as the strongest level (or --bot) sees it: the value of the
    move played and of its own choice, the win probability lost, marks on the moves that
    lost most, and a summary per seat. With --game ID, FILE is a run folder and the game is
    the one stored under that id."""
    from patchsim.engine.record import MAX_RECORD_BYTES, GameRecord, RecordError
    from patchsim.engine.record import replay as replay_record
    from patchsim.engine.render import render

    if not analyse and (bot is not None or seed != 0):
        raise fail("--bot and --seed apply to --analyse only; add --analyse")
    if analyse and trace:
        raise fail("--trace and --analyse: give one of them")
    try:
        if game_id is not None:
            record = _stored_record(file, game_id)
        elif file == "-":
            # one character past the limit is enough for the record's size check
            record = GameRecord.from_json(sys.stdin.read(MAX_RECORD_BYTES + 1), "-")
        else:
            record = GameRecord.load(file)
        if analyse:
            _analyse_record(record, bot, seed, as_json)
            return
        game = None
        for game in replay_record(record):
            if trace:
                if as_json:
                    typer.echo(json.dumps(game.summary(text=True)))
                else:
                    typer.echo(render(game) + "\n")
        assert game is not None
        if not trace:
            typer.echo(json.dumps(game.summary(text=True)) if as_json else render(game))
    except RecordError as e:
        raise fail(e, 1) from None


def _stored_record(run_dir: str, game_id: int) -> GameRecord:
    """``replay RUN_DIR --game ID``: the record of a stored game, or the error message."""
    from patchsim.play.analyse import StoredGameError, stored_record
    from patchsim.play.runfolder import RunFolderError

    if not Path(run_dir).is_dir():
        raise fail(f"--game: {run_dir} is not a run folder (with --game, give the run folder "
                   "the game is stored in)", 1)
    try:
        return stored_record(run_dir, game_id)
    except (RunFolderError, StoredGameError) as e:
        raise fail(e, 1) from None


def _analyse_record(record: GameRecord, spec: str | None, seed: int, as_json: bool) -> None:
    """``replay --analyse``: the analysis of a loaded record, as a table or JSON."""
    from patchsim.bots.registry import BotSpecError, make_bot
    from patchsim.play.analyse import analyse_record, analysis_text, record_codes

    record_codes(record)  # a bad record is said before the judge is made
    try:
        judge = make_bot(spec, bot_path=[os.getcwd()]) if spec is not None else None
        analysis = analyse_record(record, judge, seed)
    except BotSpecError as e:
        raise fail(f"--bot: {message(e)}") from None
    if as_json:
        typer.echo(json.dumps({"record": record.source, **analysis.to_dict()}, indent=1))
    else:
        typer.echo(analysis_text(analysis))


@app.command("rulesets")
def list_rulesets() -> None:
    """List the shipped rulesets with their content hashes."""
    from patchsim.engine.ruleset import load_ruleset, shipped_rulesets

    for name in shipped_rulesets():
        rs = load_ruleset(name)
        typer.echo(f"{name:<28} {rs.content_hash()}  {rs.description}")


@app.command("show-ruleset")
def show_ruleset(
    ref: Annotated[str, typer.Argument(help="A shipped ruleset name or a YAML file.")],
    override: Annotated[list[str] | None, typer.Option("--set", help="key=value override, "
                                                       "e.g. --set bonus.points=9")] = None,
) -> None:
    """Print a ruleset fully resolved (extends and overrides applied), with its hash."""
    import yaml

    from patchsim.engine.ruleset import RulesetError, load_ruleset, parse_override

    try:
        rs = load_ruleset(ref)
        if override:
            rs = rs.with_overrides(dict(parse_override(o) for o in override))
    except RulesetError as e:
        raise fail(e) from None
    typer.echo(f"# {rs.name}  hash {rs.content_hash()}")
    typer.echo(yaml.safe_dump(rs.to_dict(), sort_keys=False, default_flow_style=None))


@app.command()
def bots() -> None:
    """List the built-in bots with the idea behind each, and their parameters."""
    from patchsim.bots.registry import REGISTRY, STRATEGIES

    for info in REGISTRY.values():
        typer.echo(f"{info.name:<10} {info.description}")
    typer.echo("\nParameters (name(key=value, ...)):")
    for info in REGISTRY.values():
        if info.params:
            preset = STRATEGIES.get(info.name, ("", {}))[1]
            keys = ", ".join(f"{k}={preset.get(k, p.default)}" for k, p in info.params.items())
            typer.echo(f"  {info.name}: {keys}")
    typer.echo("\nA bot of your own: mypackage.mybots:MyBot (a class with "
               "choose(game, moves, rng)).")


@app.command()
def run(
    config: Annotated[str | None, typer.Argument(
        help="A ruleset (shipped name or YAML) or an experiment YAML.")] = None,
    games: Annotated[int | None, typer.Option(help="Games per pairing and ruleset "
                                              "(rounded up to seat-swapped pairs; default "
                                              "1200 with the default learned line-up, "
                                              "else 200).")] = None,
    bots: Annotated[str | None, typer.Option(help=(
        "Bot specs separated by ';' (default: greedy;mcts(eval=learned, iterations=100, "
        "sample_plies=8, temperature=1), or greedy;mcts(iterations=200) for a ruleset "
        "without a trained model)."))] = None,
    seed: Annotated[int | None, typer.Option(help="Master seed (default 1).")] = None,
    jobs: Annotated[int, typer.Option(help="Parallel workers (-1: all cores).")] = -1,
    out: Annotated[str | None, typer.Option(help="Run folder (default "
                                            "reports/<config>/<time>-s<seed>).")] = None,
    backend: Annotated[str, typer.Option(help="auto (threads when every bot is compiled, "
                                         "else local processes), loky (local processes), "
                                         "dask, threading, sequential.")] = "auto",
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address or scheduler "
                                                  "file (with --backend dask).")] = None,
    override: Annotated[list[str] | None, typer.Option(
        "--set", help="Ruleset override key=value, e.g. --set starting_buttons=6.")] = None,
    resume: Annotated[str | None, typer.Option(help="Finish (or, with a larger --games, "
                                               "extend) an earlier run folder.")] = None,
    report: Annotated[bool, typer.Option(help="Write the report at the end.")] = True,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    until: Annotated[float | None, typer.Option(
        help="Stop when the first seat's win rate is known to +-this (0.01: +-1 point) for "
             "every pairing; --games is then the budget (default 20000).")] = None,
    until_decided: Annotated[float | None, typer.Option(
        help="Stop when a sequential test (SPRT on deal outcomes, 5% errors) has decided, "
             "for every pairing, whether the first seat's win rate is within 50% +-this "
             "(0.02: 2 points); --games is then the budget (default 20000).")] = None,
    keep_batches: Annotated[bool, typer.Option(
        help="Keep the batch files after they are merged into the tables.")] = False,
) -> None:
    """Play many seeded, seat-swapped games and store every game (Parquet) in a run folder.

    With --jobs 1 the games are played in this process: a bot of your own that ends the
    process itself (os._exit, a crash in native code) ends the run at once with its exit
    status and no message, since nothing in the process outlives it. The batches stored
    before are kept (continue with --resume); with --jobs 2 or more, Python bots play in
    worker processes, and a worker's death is reported as such."""

    from patchsim.engine.textfile import short_path
    from patchsim.play.config import RunError, games_to_deals, load_run_config
    from patchsim.play.runfolder import check_not_running, new_run_dir, read_manifest
    from patchsim.play.worker import local_backend, start_workers, stop_workers

    try:
        if resume:
            run_dir = Path(resume)
            if bots or override or seed is not None or config:
                raise RunError("--resume continues a run as it was configured; --bots, --set, "
                               "--seed and a config cannot change it (only --games can add "
                               "deals)")
            check_not_running(run_dir, "resuming it")
            _, cfg = read_manifest(run_dir)
            if out is not None and Path(out).resolve() != run_dir.resolve():
                raise RunError(f"--resume {resume} continues that run in its own folder; "
                               f"--out {out} cannot move it (copy the folder first to keep "
                               "the original)")
            cfg.bot_path = (os.getcwd(),)  # as for a new run: bots importable from here
            if games is not None:
                cfg.deals = max(cfg.deals, games_to_deals(games))
        else:
            if config is None:
                raise RunError("give a ruleset or experiment file (e.g. configs/edition2.yaml) "
                               "or --resume RUN_DIR")
            spec_list = bot_specs(bots)
            cfg = load_run_config(config, games=games, bots=spec_list, seed=seed,
                                  overrides=override or (), bot_path=[os.getcwd()])
            run_dir = new_run_dir(cfg, out)
        n_jobs = jobs_count(jobs) if backend != "dask" else jobs
        backend = local_backend(cfg, backend)
        if backend == "loky":
            start_workers(n_jobs, cfg)  # they start while the rest of patchsim loads
        from patchsim.analysis.summary import format_summary, run_summary
        from patchsim.play.execution import execute
        from patchsim.play.runfolder import RunFolder
        from patchsim.play.steps import execute_until

        stopping = until is not None or until_decided is not None
        if until is not None and until_decided is not None:
            raise RunError("--until and --until-decided are two stopping rules: give one")
        if stopping and games is None and not resume:
            cfg.deals = games_to_deals(20000)  # the budget when --games is not given
        workers = "the Dask cluster's workers" if backend == "dask" else f"{n_jobs} worker(s)"
        typer.echo(f"run {cfg.name}: {len(cfg.rulesets)} ruleset(s), {len(cfg.pairings)} "
                   f"pairing(s), {'up to ' if stopping else ''}{cfg.deals} deals x 2 seats, "
                   f"{workers} -> {short_path(run_dir)}\nbots: {'; '.join(cfg.bots)}")
        with run_progress(progress) as bar:
            if stopping:
                result = execute_until(cfg, run_dir, until, decide_margin=until_decided,
                                       echo=typer.echo, jobs=n_jobs, backend=backend,
                                       scheduler=scheduler, progress=bar,
                                       command=command_line(), keep_batches=keep_batches,
                                       warm_progress=_warm_line)
            else:
                result = execute(cfg, run_dir, jobs=n_jobs, backend=backend,
                                 scheduler=scheduler, progress=bar, command=command_line(),
                                 keep_batches=keep_batches, warm_progress=_warm_line)
    except RunError as e:
        raise run_failure(e) from None
    except KeyboardInterrupt as e:  # before the run started: nothing to resume
        raise stopped_before_start(e) from None
    stop_workers()  # the run is over: idle workers need not tear down at exit
    for note in result.notes:
        typer.echo(f"note: {note}")
    games_df = RunFolder(result.run_dir).games  # no move lists: flat in memory
    typer.echo(format_summary(run_summary(games_df)))
    typer.echo(f"{result.games} games; this session {result.games_per_s:.0f} games/s; "
               f"tables in {result.run_dir}")
    if report:
        from patchsim.reporting.report import ReportError, write_report

        try:
            path = write_report(result.run_dir)
        except ReportError as e:
            raise fail(e) from None
        typer.echo(f"report: {path}")


def _warm_line(worker, done: int, total: int) -> None:
    """Progress of a Dask cluster's warm-up, one line per worker (through tqdm, so that a
    progress bar already on screen is redrawn below the line)."""
    from tqdm import tqdm

    from patchsim.play.cluster import COMPILE_COST

    if worker is None:
        line = (f"warming {total} Dask worker(s): the first on each machine compiles "
                f"patchsim's code ({COMPILE_COST}), the others then load it")
    else:
        how = "loaded from the cache" if worker.was_warm else "compiled"
        line = (f"  {done}/{total} ready: {worker.address} on {worker.host}, {how} in "
                f"{worker.seconds:.1f} s")
    tqdm.write(line, file=sys.stderr)


@app.command()
def warm(
    scheduler: Annotated[str, typer.Option(help="Dask scheduler address or scheduler file.")],
    config: Annotated[str, typer.Argument(
        help="The ruleset or experiment the runs will play.")] = "edition2",
    bots: Annotated[str | None, typer.Option(help="Bot specs separated by ';' (default: "
                                             "the run's default line-up).")] = None,
    override: Annotated[list[str] | None, typer.Option(
        "--set", help="Ruleset override key=value, as for run.")] = None,
) -> None:
    """Warm a Dask cluster: load patchsim's compiled code into every worker before a run.

    A line per worker: the first worker on each machine compiles (about 40 s on an idle
    core, minutes on a busy machine), the others then load the code from the cache folder
    they share. Runs with --backend dask warm the
    workers too (warm ones answer at once); this does it ahead, for the run's ruleset and
    bots."""
    from patchsim.play.cluster import warm_cluster
    from patchsim.play.config import RunError, load_run_config
    from patchsim.play.execution import dask_client

    try:
        spec_list = bot_specs(bots)
        cfg = load_run_config(config, bots=spec_list, overrides=override or (),
                              bot_path=[os.getcwd()])
        client = dask_client(scheduler)
        try:
            warmed = warm_cluster(client, cfg, _warm_line, scheduler=scheduler)
        finally:
            client.close()
    except RunError as e:
        raise run_failure(e) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    typer.echo(f"{len(warmed)} worker(s) warm for {cfg.name}: {'; '.join(cfg.bots)}")


@app.command("ladder")
def ladder_cmd(
    bots: Annotated[str, typer.Option(help="Bot specs separated by ';'.")]
    = "random;first-fit;area;bonus;income;greedy;mcts(iterations=1000)",
    rules: Annotated[str, typer.Option(help="Ruleset for the games.")] = "edition2",
    games: Annotated[int, typer.Option(help="Games per pairing (seat-swapped pairs).")] = 200,
    seed: Annotated[int, typer.Option(help="Master seed.")] = 1,
    jobs: Annotated[int, typer.Option(help="Parallel workers (-1: all cores).")] = -1,
    out: Annotated[str | None, typer.Option(help="Run folder (default "
                                            "reports/ladder/<time>-s<seed>).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    timed: Annotated[bool, typer.Option(
        "--timed", help="Allow bots with a time budget (time_ms) for equal-time matches; the "
        "results then depend on the machine and its load (the manifest says so). Use at most "
        "one worker per core.")] = False,
) -> None:
    """Seat-swapped round robin between bots on common deals: the ladder with 95% intervals
    (per deal) and Bradley-Terry (Elo) ratings."""

    from patchsim.analysis.ladder import format_ladder, head_to_head, ladder
    from patchsim.play.config import RunError, load_run_config
    from patchsim.play.execution import execute
    from patchsim.play.runfolder import RunFolder, new_run_dir

    try:
        # import-path bots from the working folder, as `run` finds them
        cfg = load_run_config(rules, games=games, bots=bot_specs(bots),
                              seed=seed, pairings="cross", allow_time_budgets=timed,
                              bot_path=[os.getcwd()])
        cfg.name = "ladder"
        if cfg.timed:
            typer.echo("timed: bots with time budgets; the results depend on this machine and "
                       "its load")
        run_dir = new_run_dir(cfg, out)
        n_jobs = jobs_count(jobs, dask=False)
        typer.echo(f"ladder: {len(cfg.bots)} bots, {len(cfg.pairings)} pairings x "
                   f"{2 * cfg.deals} games on {rules}, {n_jobs} worker(s) -> {run_dir}")
        with run_progress(progress) as bar:
            execute(cfg, run_dir, jobs=n_jobs, progress=bar, command=command_line())
    except RunError as e:
        raise run_failure(e) from None
    folder = RunFolder(run_dir)
    g = folder.games
    text = format_ladder(ladder(g), head_to_head(g))
    folder.write_ladder(text + "\n")
    typer.echo(text)


def _load_experiment(path: str):
    from patchsim.experiments.experiment import ExperimentError, load_experiment

    try:
        return load_experiment(path)
    except ExperimentError as e:
        raise fail(e) from None


def _sections_text(doc: Document | None, titles: list[str]) -> str:
    """A study's subtitle and the named sections of its document, as Markdown text."""
    from patchsim.document.render import section_markdown

    assert doc is not None  # every study's result carries its document
    lines = [doc.subtitle, ""] if doc.subtitle else []
    for title in titles:
        lines += section_markdown(doc.section(title))
    return "\n".join(lines)


@app.command()
def sweep(
    experiment: Annotated[str, typer.Argument(help="Experiment YAML (experiments/...).")],
    games: Annotated[int | None, typer.Option(help="Games per variant and pairing.")] = None,
    jobs: Annotated[int, typer.Option(help="Parallel workers (-1: all cores).")] = -1,
    out: Annotated[str | None, typer.Option(help="Run folder (default reports/<name>).")]
    = None,
    backend: Annotated[str, typer.Option(
        help="auto (threads for compiled bots), loky, dask, threading, sequential.")] = "auto",
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address or file.")]
    = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Play every variant of an experiment on the same deals; write the comparison report."""
    from patchsim.experiments.sweep import run_sweep
    from patchsim.play.config import RunError

    exp = _load_experiment(experiment)
    typer.echo(f"sweep {exp.name}: {len(exp.variants)} variants x "
               f"{len(exp.skill or exp.bots)} bot(s)")
    try:
        with run_progress(progress) as bar:
            res = run_sweep(exp, out, jobs=jobs_count(jobs), backend=backend,
                            scheduler=scheduler, progress=bar, games=games,
                            command=command_line())
    except RunError as e:
        raise run_failure(e, study_again("sweep", experiment)) from None
    typer.echo(_sections_text(res.document, ["Verdict"]))
    typer.echo(f"report: {res.report_html} (and {res.report_md.name})")


@app.command()
def tune(
    experiment: Annotated[str, typer.Argument(help="Experiment YAML with a tune section.")],
    jobs: Annotated[int, typer.Option(help="Parallel workers (-1: all cores).")] = -1,
    out: Annotated[str | None, typer.Option(help="Folder (default reports/<name>-tune).")]
    = None,
    backend: Annotated[str, typer.Option(
        help="auto (threads for compiled bots), loky, dask, threading, sequential.")] = "auto",
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address or file.")]
    = None,
) -> None:
    """Search the declared ruleset fields for variants shown to meet the declared targets."""
    from patchsim.experiments.tune import run_tune
    from patchsim.experiments.tune_document import FINALISTS_TITLE
    from patchsim.play.config import RunError

    exp = _load_experiment(experiment)
    if not exp.tune:
        raise fail(f"{experiment}: no tune section (fields and targets to tune for)")
    stop_on_signals()
    try:
        res = run_tune(exp, out, jobs=jobs_count(jobs), backend=backend, scheduler=scheduler,
                       echo=typer.echo)
    except RunError as e:
        raise run_failure(e, study_again("tune", experiment)) from None
    typer.echo(_sections_text(res.document, ["Verdict", FINALISTS_TITLE]))
    typer.echo(f"report: {res.report}")


@app.command()
def check(
    experiment: Annotated[str, typer.Argument(help="Experiment YAML with a check section.")],
    jobs: Annotated[int, typer.Option(help="Parallel workers (-1: all cores).")] = -1,
    out: Annotated[str | None, typer.Option(help="Folder (default reports/<name>-check).")]
    = None,
    backend: Annotated[str, typer.Option(
        help="auto (threads for compiled bots), loky, dask, threading, sequential.")] = "auto",
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address or file.")]
    = None,
) -> None:
    """Balance gate: exit 0 when every tolerance is shown to hold, 1 when one is shown to
    fail, 2 when the game budget ran out undecided (3: the experiment file is invalid)."""
    from patchsim.experiments.experiment import ExperimentError, load_experiment
    from patchsim.experiments.gate import run_check
    from patchsim.play.config import RunError
    from patchsim.play.errors import RunInterrupted, RunStorageError

    try:
        exp = load_experiment(experiment)
    except ExperimentError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(3) from None
    if not exp.tolerances:
        typer.echo(f"error: {experiment}: no check section with tolerances", err=True)
        raise typer.Exit(3)
    stop_on_signals()
    try:
        res = run_check(exp, out, jobs=jobs_count(jobs), backend=backend, scheduler=scheduler,
                        echo=typer.echo)
    except (RunInterrupted, RunStorageError) as e:
        raise run_failure(e, study_again("check", experiment)) from None
    except RunError as e:
        typer.echo(f"error: {message(e)}", err=True)
        raise typer.Exit(3) from None
    typer.echo(res.lines[-1])
    raise typer.Exit(res.code)


# Analysis commands (report, compare, plan) live in their own module.
from patchsim.cli import analysis as cli_analysis  # noqa: E402

app.command("report")(cli_analysis.report)
app.command("compare")(cli_analysis.compare)
app.command("plan")(cli_analysis.plan)
from patchsim.cli import train as cli_train  # noqa: E402, I001
app.command("train")(cli_train.train)
from patchsim.cli import serve as cli_serve  # noqa: E402, I001
app.command("serve")(cli_serve.serve)
from patchsim.cli import prices as cli_prices  # noqa: E402, I001
app.command("prices")(cli_prices.prices)
from patchsim.cli import skill as cli_skill  # noqa: E402, I001
app.command("skill")(cli_skill.skill)

for _command in app.registered_commands:  # help from the docstrings, one line per paragraph
    if _command.help is None and _command.callback is not None and _command.callback.__doc__:
        _command.help = one_line_paragraphs(_command.callback.__doc__)

def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()

