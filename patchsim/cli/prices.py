"""``patchsim prices``: what each patch is worth to a bot, by restricted play, and the price at
which it stops being worth buying (:mod:`patchsim.experiments.prices`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated

import typer

from patchsim.cli.common import FLAGS, fail, jobs_count, message, new_folder
from patchsim.errors import quote


def _deltas(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise fail(f"--deltas {quote(text)}: give whole numbers of buttons separated by "
                   "commas, e.g. --deltas=-2,-1,0,1,2") from None
    return out or [0]


def prices(
    ruleset: Annotated[str, typer.Argument(help="Ruleset name or YAML file.")],
    bots: Annotated[str, typer.Option(help="The bot to restrict and to play against (one "
                                      "spec: greedy, income, area, bonus or mcts(...)).")],
    games: Annotated[int, typer.Option(help="Games per patch and cost (seat-swapped "
                                       "pairs).")] = 1000,
    patches: Annotated[str | None, typer.Option(help="Patch ids separated by commas (default "
                                                "every patch), e.g. P19,P20.")] = None,
    deltas: Annotated[str, typer.Option(help="Cost changes to measure, e.g. "
                                        "--deltas=-2,-1,0,1,2 (0 is always measured; a cost "
                                        "below 0 is skipped).")] = "-2,-1,0,1,2",
    seed: Annotated[int, typer.Option(help="Master seed (the same deals for every patch and "
                                      "cost).")] = 1,
    jobs: Annotated[int, typer.Option(help="Parallel workers (-1: all cores).")] = -1,
    out: Annotated[str | None, typer.Option(help="New folder for the results (default "
                                            "reports/<ruleset>-prices/<time>).")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress (a line per patch).")] = True,
    widen: Annotated[bool, typer.Option(help="Add costs (down to 0, or up) for a patch whose "
                                        "fair price's interval is not bounded by the costs "
                                        "measured.")]
    = True,
) -> None:
    """Causal patch prices: the win rate a bot loses when forbidden to buy each patch
    (restricted play), and the cost at which that value stops falling (price response).
    Writes prices.csv, patches.csv, prices.md, prices.html and prices.png into a new folder."""
    from patchsim.document.render import section_markdown
    from patchsim.engine.ruleset import RulesetError, load_ruleset
    from patchsim.experiments.prices import measure_prices
    from patchsim.experiments.prices_document import PATCHES_TITLE
    from patchsim.experiments.prices_files import write_prices
    from patchsim.play.runfolder import fresh_dir

    if ";" in bots:
        raise fail(f"--bots {quote(bots)}: give one bot; it plays against itself restricted")
    ds = _deltas(deltas)
    try:
        rs = load_ruleset(ruleset)
    except RulesetError as e:
        raise fail(e) from None
    target = Path(out) if out else fresh_dir(f"{rs.name}-prices")
    new_folder(target)
    n_jobs = jobs_count(jobs, dask=False)
    ids = None
    if patches is not None:
        ids = [p.strip() for p in patches.split(",") if p.strip()]
        if not ids:  # an empty list would mean every patch
            raise fail(f"--patches {quote(patches)}: no patch id given; give ids separated "
                       "by commas (e.g. P19,P20), or leave --patches out for every patch")
    with prices_errors(PRICE_FLAGS):
        # import-path bots from the working folder, as `patchsim run` finds them
        study = measure_prices(rs, bots, ids, deltas=ds, games=games, seed=seed, jobs=n_jobs,
                               widen=widen, echo=typer.echo if progress else None,
                               bot_path=[os.getcwd()])
        res = write_prices(study, target)
    doc = res.document
    assert doc is not None  # write_prices always words its study
    typer.echo("\n".join([f"# {doc.title}", "",
                          *section_markdown(doc.section(PATCHES_TITLE))]).rstrip())
    typer.echo(f"\nwritten: {res.folder}/ (prices.csv, patches.csv, prices.md, prices.html, "
               "prices.png)")


PRICE_FLAGS = {"patches": "--patches", "games": "--games", "bots": "--bots", "deltas": "--deltas"}


@contextlib.contextmanager
def prices_errors(flags: Mapping[str, str]) -> Iterator[None]:
    """Turn what a prices study raises into one-paragraph messages and exit codes (2 for a
    bad request, 1 for a failing bot, 130 when interrupted: nothing is written then).
    A library error names the arguments it is about; ``flags`` gives this command's flags
    for them (over the common ones)."""
    from patchsim.bots.registry import BotSpecError
    from patchsim.engine.ruleset import RulesetError
    from patchsim.experiments.prices import PricesError
    from patchsim.play.config import RunError
    from patchsim.play.match import BotError

    try:
        yield
    except PricesError as e:  # its problems name the arguments: the command's flags
        raise fail(message(e, {**FLAGS, **flags})) from None
    except (RulesetError, BotSpecError, RunError) as e:
        raise fail(e) from None
    except BotError as e:
        raise fail(e, 1) from None
    except KeyboardInterrupt:
        raise fail("interrupted; nothing was written", 130) from None
