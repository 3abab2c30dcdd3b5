"""``patchsim skill``: the skill trace of a ruleset, a balance metric along a ladder of
players from the scripted bots through a search at doubling budgets, with a verdict on
whether it has converged (:mod:`patchsim.experiments.skill`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from patchsim.analysis.defaults import DEFAULT_MARGIN
from patchsim.cli.common import bot_specs, command_line, fail, jobs_count, new_folder

if TYPE_CHECKING:
    from patchsim.experiments.skill import SkillTrace

# the library's parameter names (how its messages start) -> this command's flags
FLAGS = {"levels": "--levels", "bots": "--bots", "search": "--search", "deals": "--deals",
         "diversity": "--diversity", "metric": "--metric", "margin": "--margin",
         "out": "--out", "ruleset": "RULESET", "budget": "--budget"}


def _budgets(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise fail(f"--levels {text!r}: give budgets separated by commas, e.g. "
                   "--levels 25,50,100,200") from None
    return [int(v) if v.is_integer() else v for v in values]


def _flag(message: str) -> str:
    for name, flag in FLAGS.items():
        if message.startswith(f"{name}:"):
            return flag + message[len(name):]
        if message.startswith(f"{name}["):  # bots[1]: ...
            return flag + message[len(name):]
    return message


def _experiment_kind(ref: str) -> str:
    """``design`` for an experiment file with a base ruleset (its variants), ``run`` for a
    run file (ruleset or rulesets), else '' (a ruleset)."""
    from patchsim.engine.yamlfile import YamlFileError, read_yaml

    if not (ref.endswith((".yaml", ".yml")) and Path(ref).is_file()):
        return ""
    try:
        data = read_yaml(Path(ref), ref)
    except YamlFileError:
        return ""  # load_ruleset says what is wrong with it
    if not isinstance(data, dict):
        return ""
    if "base" in data:
        return "design"
    return "run" if "rulesets" in data or "ruleset" in data else ""


def skill(
    ruleset: Annotated[str, typer.Argument(help="Ruleset name or YAML file; or an experiment "
                                           "YAML (a trace per variant, its skill: section "
                                           "as defaults) or a run file (a trace per "
                                           "ruleset), on the same deals.")],
    override: Annotated[list[str] | None, typer.Option(
        "--set", help="Ruleset override key=value, e.g. --set starting_buttons=6.")] = None,
    bots: Annotated[str | None, typer.Option(help="The scripted bots at the foot of the "
                                             "ladder, separated by ';' (default greedy).")]
    = None,
    search: Annotated[str | None, typer.Option(help="The search whose budget the levels "
                                               "double (default: the learned search where "
                                               "the ruleset has a model, else mcts).")]
    = None,
    levels: Annotated[str | None, typer.Option(help="Search budgets, increasing, separated "
                                               "by commas: iterations per move, or ms per "
                                               "move with --timed (default "
                                               "25,50,100,200,400).")] = None,
    deals: Annotated[int | None, typer.Option(help="Seat-swapped deals per level, for "
                                              "self-play and against the level below "
                                              "(default 350: enough that the strongest "
                                              "level decides the first seat; with "
                                              "--until-decided the step, default 100).")]
    = None,
    until_decided: Annotated[bool, typer.Option(
        "--until-decided", help="Add --deals deals to every level at a time until both the "
        "trend (still moving with strength or converged) and the first seat under the "
        "strongest level are decided, or --budget runs out; every interval anytime-valid. "
        "Resumable: rerun the same command with the same --out.")] = False,
    budget: Annotated[int | None, typer.Option(help="With --until-decided: deals per level "
                                               "at most (default 3000).")] = None,
    seed: Annotated[int | None, typer.Option(help="Master seed: the same deals for every "
                                             "level (default 1).")] = None,
    jobs: Annotated[int, typer.Option(help="Parallel workers (-1: all cores).")] = -1,
    out: Annotated[str | None, typer.Option(help="New folder for the trace (default "
                                            "reports/<ruleset>-skill/<time>).")] = None,
    timed: Annotated[bool, typer.Option(
        "--timed", help="Levels are ms per move instead of iterations; the results then "
        "depend on this machine and its load. Use at most one worker per core.")] = False,
    diversity: Annotated[str | None, typer.Option(
        help="How self-play is made diverse: temperature (the first plies sampled in "
        "proportion to the root visit counts), epsilon (a random searched move 5% of the "
        "time), none, or auto (temperature where the search takes it).")] = None,
    compare: Annotated[bool, typer.Option(help="Play the strongest level's self-play with "
                                          "the other diversity methods too.")] = True,
    progress: Annotated[bool, typer.Option(help="Show a line per part played.")] = True,
) -> None:
    """The skill trace: the first seat's win rate (and the other balance metrics) at each
    level of a ladder from the scripted bots through a search at doubling budgets, each
    level against the one below (Elo per doubling), and whether the answer has converged.
    Writes levels.csv, duels.csv (and .parquet), trace.json, skill.png, skill.html and
    skill.md into a new folder."""
    from patchsim.analysis.skill_rules import holds_at_every_level
    from patchsim.bots.registry import BotSpecError
    from patchsim.engine.ruleset import RulesetError, load_ruleset, parse_override
    from patchsim.experiments.experiment import ExperimentError, load_experiment
    from patchsim.experiments.skill import (
        DEFAULT_BUDGET,
        DEFAULT_DEALS,
        DEFAULT_FLOOR,
        DEFAULT_LEVELS,
        DEFAULT_STEP,
        SkillError,
        rule_change,
        skill_traces,
        write_trace,
    )
    from patchsim.play.config import RunError, load_run_config
    from patchsim.play.errors import RunInterrupted
    from patchsim.play.match import BotError
    from patchsim.play.runfolder import fresh_dir
    from patchsim.reporting.skill_plot import short_label

    spec: dict = {}
    try:
        kind = _experiment_kind(ruleset)
        if kind == "run":  # its rulesets and seed (its bots and games are the run's)
            cfg = load_run_config(ruleset)
            rulesets = list(cfg.rulesets)
            spec = {"seed": cfg.seed}
        elif kind == "design":
            exp = load_experiment(ruleset)
            # every variant of the experiment (the base first): a trace each, same deals
            rulesets = [v.ruleset for v in exp.variants]
            spec = dict(exp.trace or {})
            spec.setdefault("seed", exp.seed)
            spec.setdefault("margin", exp.margin)
        else:
            rulesets = [load_ruleset(ruleset)]
        if override:
            pairs = dict(parse_override(o) for o in override)
            rulesets = [r.with_overrides(pairs) for r in rulesets]
        rs = rulesets[0]
    except RunError as e:
        raise fail(str(e)) from None
    except ExperimentError as e:
        raise fail(str(e)) from None
    except RulesetError as e:
        raise fail(str(e)) from None
    floor = bot_specs(bots) if bots is not None else spec.get("bots", list(DEFAULT_FLOOR))
    budgets = _budgets(levels) if levels is not None else spec.get("levels",
                                                                   list(DEFAULT_LEVELS))
    target = Path(out) if out else fresh_dir(f"{rs.name}-skill")
    new_folder(target)
    if budget is not None and not until_decided:
        raise fail("--budget bounds a trace played --until-decided; give both, or --deals")
    # until decided: the parts' run folders, beside the trace until it is written (a rerun
    # with the same --out resumes from them)
    parts = target.parent / f"{target.name}.parts" if until_decided else None
    if parts is not None and os.path.exists(parts):  # False too for a name past the limits
        typer.echo(f"resuming from {parts}/")
    if timed or spec.get("timed"):
        typer.echo("timed: levels are ms per move; the results depend on this machine and its "
                   "load")
    try:
        traces = skill_traces(
            rulesets, levels=budgets, floor=floor, search=search or spec.get("search"),
            deals=deals if deals is not None else spec.get(
                "deals", DEFAULT_STEP if until_decided else DEFAULT_DEALS),
            until_decided=until_decided,
            budget=budget if budget is not None else DEFAULT_BUDGET, work_dir=parts,
            seed=seed if seed is not None else spec.get("seed", 1),
            jobs=jobs_count(jobs, dask=False), timed=timed or spec.get("timed", False),
            diversity=diversity or spec.get("diversity", "auto"),
            compare=compare and spec.get("compare", True),
            metric=spec.get("metric", "first_player_win"),
            margin=spec.get("margin", DEFAULT_MARGIN),
            echo=typer.echo if progress else None, bot_path=[os.getcwd()])
        folder = write_trace(traces, target, command_line(), parts=parts)
    except SkillError as e:
        raise fail(_flag(str(e))) from None
    except RunInterrupted as e:  # a part's run stopped: the trace resumes, not the part
        if parts is not None:
            raise fail(f"{e.cause}; the games played are kept in {parts}/: rerun the same "
                       f"command (with --out {target}) to resume", 130) from None
        raise fail(str(e), 130) from None
    except (RunError, BotSpecError) as e:
        raise fail(str(e)) from None
    except BotError as e:
        raise fail(str(e), 1) from None
    except KeyboardInterrupt:
        if parts is not None and parts.exists():
            raise fail(f"interrupted; the games played are kept in {parts}/: rerun the same "
                       f"command (with --out {target}) to resume", 130) from None
        raise fail("interrupted; nothing was written", 130) from None
    except OSError as e:
        raise fail(f"--out {target}: cannot write the trace ({e.strerror or e})") from None
    for trace in traces:
        for line in summary_lines(trace, len(traces) > 1):
            typer.echo(line)
    if len(traces) > 1:
        for name, text in holds_at_every_level(rule_change(traces), short_label).items():
            typer.echo(f"{name} against {traces[0].ruleset}: {text}")
    typer.echo(f"written: {folder}/ (levels.csv, duels.csv, trace.json, skill.png, "
               "skill.html, skill.md)")


def summary_lines(trace: SkillTrace, named: bool = False) -> list[str]:
    """What the command prints of a played trace: the first seat under the strongest level
    (saying plainly when it is not decided), the trend, and how a trace until decided
    stopped."""
    h = trace.headline()
    head = f"{trace.ruleset}: " if named else ""
    kind = "anytime-valid " if trace.anytime_n0 else ""
    out = [f"{head}first seat wins {100 * h['rate']:.1f}% [{100 * h['lo']:.1f}, "
           f"{100 * h['hi']:.1f}] ({kind}95%) under {h['level']} ({h['deals']} deals): "
           f"{h['verdict']}"]
    if not h["decided"]:
        more = ("a larger --budget" if trace.anytime_n0
                else "--until-decided, or more --deals")
        out.append(f"{head}the first seat under the strongest level is NOT decided at "
                   f"{h['deals']} deals a level ({more} would go on)")
    if trace.verdict is not None:
        out.append(f"{head}skill trace: {trace.verdict.text()}")
    st = trace.stopping
    if st:
        looks = len(st["looks"])
        what = (f"first seat {st['looks'][-1]['first_seat']}, trend "
                f"{st['looks'][-1]['trend'] or 'one level'}")
        if st["decided"]:
            out.append(f"{head}until decided: decided at {st['deals']} deals a level, look "
                       f"{looks} (steps of {st['step']}): {what}")
        else:
            out.append(f"{head}until decided: the budget of {st['budget']} deals a level ran "
                       f"out after {looks} looks before both were decided: {what}")
    return out
