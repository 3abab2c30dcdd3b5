"""``patchsim train``: learn the learned bot's evaluation for a ruleset from self-play."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from patchsim.cli.common import fail, jobs_count, stop_on_signals


def train(
    ruleset: Annotated[str, typer.Argument(help="Ruleset name or YAML file.")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a ruleset key "
                                                   "(k=v, repeatable).")] = None,
    minutes: Annotated[float, typer.Option(help="Training time budget (a generation in "
                                           "progress finishes).")] = 20.0,
    generations: Annotated[int | None, typer.Option(help="Train exactly this many "
                                                    "generations (overrides --minutes; "
                                                    "reproducible).")] = None,
    jobs: Annotated[int, typer.Option(help="Worker threads (-1: all cores).")] = -1,
    seed: Annotated[int, typer.Option(help="Seed of the self-play games.")] = 1,
    models: Annotated[str | None, typer.Option(help="Models folder (default "
                                               "$PATCHSIM_MODEL_DIR or "
                                               "~/.cache/patchsim/models).")] = None,
    fresh: Annotated[bool, typer.Option(help="Ignore a checkpoint and start over.")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    net: Annotated[bool, typer.Option("--net", help="Train the value network of "
                                      "mcts(eval=net) (net.json) instead of the linear "
                                      "model.")] = False,
    pack: Annotated[bool, typer.Option("--pack", help="Train the packing player "
                                       "mcts(eval=pack) (pack.json: packing features, "
                                       "placements chosen by search, a league of earlier "
                                       "generations and greedy).")] = False,
) -> None:
    """Train the evaluation of the search bot mcts(eval=learned) for a ruleset, from
    self-play (resumable: rerun the same command after Ctrl-C). Writes
    <models>/<ruleset hash>/model.json, manifest.json and report.md; with --net the value
    network of mcts(eval=net): net.json, net-manifest.json and net-report.md; with --pack
    the packing player mcts(eval=pack): pack.json, pack-manifest.json, pack-report.md."""
    from patchsim.engine.ruleset import RulesetError, load_ruleset, parse_override
    from patchsim.play.train import TrainError, check_arguments, pack_settings
    from patchsim.play.train import train as run_train
    from patchsim.play.train_net import train_net

    try:
        rs = load_ruleset(ruleset)
        if set_:
            rs = rs.with_overrides(dict(parse_override(s) for s in set_))
    except RulesetError as e:
        raise fail(e) from None
    except (FileNotFoundError, ValueError) as e:
        raise fail(e) from None
    if net and pack:
        raise fail("--net and --pack train different models: give one of them")
    n_jobs = jobs_count(jobs, dask=False)
    try:
        check_arguments(minutes, n_jobs, seed, generations)
    except TrainError as e:
        raise fail(e) from None
    bar: dict[str, Any] = {}

    def show(done: int, total: int, label: str) -> None:
        if not progress:
            return
        from tqdm import tqdm

        if done == 0:
            if "bar" in bar:
                bar["bar"].close()
            bar["bar"] = tqdm(total=total, unit="game", desc=label, dynamic_ncols=True,
                              file=sys.stderr, leave=False)
        else:
            bar["bar"].update(done)

    flag = " --net" if net else " --pack" if pack else ""
    typer.echo(f"train{flag}: {rs.name} ({rs.content_hash()}), "
               f"{n_jobs} worker(s), "
               + (f"{generations} generations" if generations is not None
                  else f"{minutes:g} minutes"))
    stop_on_signals()
    try:
        if net:
            res = train_net(rs, minutes=minutes, jobs=n_jobs, seed=seed,
                            generations=generations, models=models, fresh=fresh,
                            progress=show)
        else:
            res = run_train(rs, minutes=minutes, jobs=n_jobs, seed=seed,
                            generations=generations, models=models, fresh=fresh,
                            progress=show,
                            settings=pack_settings(seed) if pack else None)
    except TrainError as e:
        # the library's problems name its parameters; here they are flags (common.FLAGS)
        raise fail(e) from None
    except KeyboardInterrupt:
        if "bar" in bar:
            bar["bar"].close()
        typer.echo("\ninterrupted: the model and a checkpoint of the last finished "
                   "generation are kept; rerun the same command to resume.", err=True)
        raise typer.Exit(130) from None
    if "bar" in bar:
        bar["bar"].close()
    strength = res.model.manifest.get("strength") or {}
    rates = ", ".join(f"{100 * v:.0f}% vs {k}" for k, v in strength.items())
    typer.echo(f"model: {res.model_path} (generation {res.generations}"
               + (f", resumed from {res.resumed_from}" if res.resumed_from else "")
               + f"; {rates})")
    report = "net-report.md" if net else "pack-report.md" if pack else "report.md"
    typer.echo(f"report: {res.model_path.parent / report}")
