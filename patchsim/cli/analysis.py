"""Analysis commands for the ``patchsim`` command line: report, compare, plan.

Plain typer-annotated functions, registered by :mod:`patchsim.cli.main`
(``app.command("report")(cli_analysis.report)`` and so on). Each parses its arguments,
calls the library and prints; a user mistake ends with ``error: ...`` and exit status 2,
never a traceback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from patchsim.analysis.defaults import DEFAULT_MARGIN
from patchsim.atomic import atomic_write
from patchsim.cli.common import (
    bot_specs,
    command_line,
    fail,
    jobs_count,
    run_failure,
    run_progress,
)
from patchsim.cli.prices import prices_errors


def _is_run_dir(ref: str) -> bool:
    from patchsim.play.runfolder.names import MANIFEST

    p = Path(ref)
    return p.is_dir() and (p / MANIFEST).exists()


def _check_margin(margin: float) -> None:
    if not 0 < margin < 0.5:
        raise fail(f"--margin must be a proportion between 0 and 0.5 (0.02 is 2 points), "
                    f"got {margin}")


def report(
    run_dir: Annotated[str, typer.Argument(help="A run folder written by 'patchsim run'.")],
    compare_with: Annotated[str | None, typer.Option(
        "--compare-with", help="Another run folder on the same deals (same seed and bots) "
        "to compare with; it is the reference.")] = None,
    margin: Annotated[float, typer.Option(
        help="Equivalence margin for 'balanced' and 'the same' (0.02: +-2 points)."
    )] = DEFAULT_MARGIN,
    prices: Annotated[bool, typer.Option(
        "--prices", help="First measure causal patch prices (restricted play and price "
        "response) for the run's first ruleset and bot, into RUN/prices, and show them.")]
    = False,
    prices_bot: Annotated[str | None, typer.Option(
        help="The bot of the prices study (default: the run's first bot).")] = None,
    prices_games: Annotated[int, typer.Option(
        help="Games per patch and cost in the prices study.")] = 400,
    jobs: Annotated[int, typer.Option(help="Parallel workers for --prices (-1: all "
                                      "cores).")] = -1,
    progress: Annotated[bool, typer.Option(
        help="Show each step of the report on stderr as it starts (a large run's report "
             "takes tens of seconds).")] = True,
) -> None:
    """Write report.html (self-contained) and report.md into a run folder."""
    from patchsim.reporting.report import ReportError, write_report

    _check_margin(margin)
    if compare_with is not None and Path(compare_with).resolve() == Path(run_dir).resolve():
        raise fail(f"--compare-with {compare_with} is the run being reported: compare a run "
                    "with another run folder")
    if compare_with is not None:
        _refuse_same_experiment(compare_with, run_dir)
    if prices:
        _measure_prices(run_dir, prices_bot, prices_games, jobs)
    try:
        path = write_report(run_dir, compare_with=compare_with, margin=margin,
                            progress=report_steps() if progress else None)
    except ReportError as e:
        raise fail(e) from None
    _notes(run_dir)
    typer.echo(f"report: {path}")
    typer.echo(f"markdown: {path.with_suffix('.md')}")


def report_steps() -> Callable[[int, int, str], None]:
    """A report's progress for the terminal: a line on stderr as each step starts, with the
    seconds since the first (the library tells the steps, :data:`ReportProgress`)."""
    t0 = time.monotonic()

    def show(done: int, total: int, what: str) -> None:
        typer.echo(f"report {done + 1}/{total}: {what} ({time.monotonic() - t0:.0f} s)",
                   err=True)

    return show


def _notes(run_dir: str) -> None:
    from patchsim.play.runfolder import check_folder

    for note in check_folder(run_dir, tables=False).notes:
        typer.echo(f"note: {note}")


def _refuse_same_experiment(a: str, b: str) -> None:
    """Two run folders of one experiment (same rules, bots, pairings and seed) hold the same
    games: a comparison would call them "equivalent" whatever the rules do."""
    from patchsim.play.runfolder import RunFolderError, load_manifest, same_experiment

    try:
        ma, mb = load_manifest(Path(a)), load_manifest(Path(b))
    except RunFolderError:
        return  # the loader says what is wrong with it
    if same_experiment(ma, mb):
        raise fail(f"{a} and {b} are the same experiment (the same rules, bots, pairings "
                    f"and seed {ma['config'].get('seed')}): their games are the same, so "
                    "they cannot show a difference; compare runs of different rules on the "
                    "same seed")


def _measure_prices(run_dir: str, bot: str | None, games: int, jobs: int) -> None:
    from patchsim.experiments.prices_files import prices_for_run

    with prices_errors({"games": "--prices-games", "bots": "--prices-bot"}):
        res = prices_for_run(run_dir, bot, games=games, jobs=jobs_count(jobs, dask=False),
                             echo=typer.echo)
    typer.echo(f"prices: {res.folder}/prices.md")


def compare(
    a: Annotated[str, typer.Argument(help="Reference: a run folder, or a ruleset (shipped "
                                     "name or YAML file).")],
    b: Annotated[str, typer.Argument(help="Variant: a run folder, or a ruleset.")],
    margin: Annotated[float, typer.Option(
        help="Equivalence margin (0.02: the same within +-2 points).")] = DEFAULT_MARGIN,
    games: Annotated[int, typer.Option(
        help="With rulesets: games per pairing and ruleset (seat-swapped pairs).")] = 400,
    bots: Annotated[str, typer.Option(
        help="With rulesets: bot specs separated by ';'.")] = "greedy",
    out: Annotated[str | None, typer.Option(
        help="With rulesets: the run folder (default reports/<a>-vs-<b>/<time>-s<seed>).")]
    = None,
    seed: Annotated[int, typer.Option(help="With rulesets: master seed.")] = 1,
    jobs: Annotated[int, typer.Option(help="With rulesets: parallel workers (-1: all "
                                      "cores).")] = -1,
) -> None:
    """Compare variant B with reference A on the same deals (two run folders, or two rulesets)."""
    # Two run folders that share deals (same seed and bots): B is compared with A and the
    # report is written into B's folder. Two rulesets: both are played on the same deals in
    # one run (an experiment of two rulesets) whose report compares them.
    from patchsim.analysis.compare import CompareError
    from patchsim.reporting.report import ReportError, comparisons_for, load_run, write_report

    _check_margin(margin)
    dirs = (_is_run_dir(a), _is_run_dir(b))
    try:
        if all(dirs):
            if Path(a).resolve() == Path(b).resolve():
                raise fail(f"{a} and {b} are the same run folder: compare a run with another")
            _refuse_same_experiment(a, b)

            # one verdict object: the lines printed here are the report's
            cs = comparisons_for(load_run(b), load_run(a), margin)
            path = write_report(b, compare_with=a, margin=margin, comparisons=cs,
                                progress=report_steps())
        elif any(dirs):
            which = a if dirs[0] else b
            raise fail(f"{which} is a run folder but the other argument is not; give two run "
                        "folders or two rulesets")
        else:
            run_dir = _run_two_rulesets(a, b, games, bots, out, seed, jobs)
            cs = comparisons_for(load_run(run_dir), None, margin)
            path = write_report(run_dir, margin=margin, comparisons=cs,
                                progress=report_steps())
    except (CompareError, ReportError) as e:
        raise fail(e) from None
    for c in cs:
        typer.echo(c.verdict())
    typer.echo(f"report: {path}")


def _run_two_rulesets(a: str, b: str, games: int, bots: str, out: str | None, seed: int,
                      jobs: int) -> Path:
    """Play rulesets a and b on the same deals: an experiment of two rulesets."""
    from patchsim.engine.ruleset import RulesetError, load_ruleset
    from patchsim.engine.yamlfile import dump_yaml
    from patchsim.play.config import RunError, make_run_config
    from patchsim.play.execution import execute
    from patchsim.play.runfolder import new_run_dir

    if games < 1:
        raise fail(f"--games must be at least 1, got {games}")
    n_jobs = jobs_count(jobs, dask=False)  # before a run folder is made
    specs = bot_specs(bots)
    assert specs is not None  # --bots has a default here
    name = f"{Path(a).stem}-vs-{Path(b).stem}"
    try:
        rulesets = []
        for ref in (a, b):
            try:
                rulesets.append(load_ruleset(ref))
            except RulesetError as e:
                raise RunError.wrapping(e) from None
        h = [r.content_hash() for r in rulesets]
        if h[0] == h[1]:
            raise RunError(f"{a} and {b} are the same rules (hash {h[0]}): nothing to compare")
        cfg = make_run_config(rulesets, specs, games=games, seed=seed, name=name,
                              source=f"{a} vs {b}")
        run_dir = new_run_dir(cfg, out)
        typer.echo(f"compare {a} and {b}: {len(cfg.pairings)} pairing(s), {cfg.deals} deals x "
                   f"2 seats under each, {n_jobs} worker(s) -> {run_dir}")
        with run_progress() as bar:
            execute(cfg, run_dir, jobs=n_jobs, backend="auto", progress=bar,
                    command=command_line())
        # the run as an experiment file beside its tables, to run it again (file references
        # absolute: the file lives elsewhere)
        refs = [str(Path(r).resolve()) if Path(r).is_file() else r for r in (a, b)]
        atomic_write(run_dir / "experiment.yaml", dump_yaml(
            {"name": name, "rulesets": refs, "bots": specs, "games": games, "seed": seed},
            sort_keys=False))
    except RunError as e:
        raise run_failure(e) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    return run_dir


def plan(
    run_dir: Annotated[str, typer.Argument(help="A pilot run folder.")],
    halfwidth: Annotated[float, typer.Option(
        help="Target half-width of the 95% interval (0.01: +-1 point).")] = 0.01,
    difference: Annotated[float, typer.Option(
        help="A true difference to show as \"differs, beyond +-margin\" (0.04: 4 points; "
             "planned on its distance from the margin).")] = 0.04,
    margin: Annotated[float, typer.Option(
        help="The verdicts' margin (0.02: +-2 points).")] = DEFAULT_MARGIN,
    equivalence: Annotated[float, typer.Option(
        help="A true change to show as \"equivalent within +-margin\" (0: none).")] = 0.0,
    power: Annotated[float, typer.Option(help="Power of the tests (0.8: 80%).")] = 0.8,
) -> None:
    """How many deals a question needs for a precision, for the verdict "differs, beyond
    +-margin" at a true difference and for "equivalent within +-margin" at a true change,
    from a pilot run's per-deal spread, with and without pairing."""
    from patchsim.analysis.planning import format_plan
    from patchsim.analysis.planning import plan as plan_deals
    from patchsim.reporting.report import ReportError, load_run

    for name, value in (("--halfwidth", halfwidth), ("--difference", difference),
                        ("--margin", margin)):
        if not 0 < value < 0.5:
            raise fail(f"{name} must be a proportion between 0 and 0.5 (0.01 is 1 point), "
                        f"got {value}")
    if not abs(equivalence) < margin:
        raise fail(f"--equivalence must lie inside the margin (+-{margin:g}), got "
                   f"{equivalence}")
    if not 0.5 <= power < 1:
        raise fail(f"--power must be between 0.5 and 1, got {power}")
    try:
        run = load_run(run_dir)
    except ReportError as e:
        raise fail(e) from None
    typer.echo(format_plan(plan_deals(run.games, target_halfwidth=halfwidth, margin=margin,
                                      difference=difference, power=power,
                                      equivalence=equivalence)))
