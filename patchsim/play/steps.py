"""Runs whose length a rule chooses: the one sequential loop (:func:`play_in_steps`: top a
run up in steps until a stop rule is met), and the run's own stopping rules
(:func:`execute_until`: a target half-width of the first seat's interval, or a sequential
test of the first seat's balance, whose decisions the run folder keeps in its stopping
record)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from patchsim.analysis.estimators import (
    CONTINUE,
    PASS,
    WIN_BOUNDS,
    BandTest,
    anytime_estimate,
    deal_values,
    mean_estimate,
)
from patchsim.play import execution
from patchsim.play.config import RunConfig, RunError
from patchsim.play.execution import RunResult
from patchsim.play.runfolder import (
    MANIFEST,
    Decided,
    Decision,
    StoppingRecord,
    read_manifest,
    table_path,
    write_stopping,
)


@dataclass
class Steps:
    """What :func:`play_in_steps` did: the last step's result (None if no step ran), the
    deals the run holds, the games played in this session over every step, and whether the
    stop rule was met (False: the budget ran out, or a step did not complete)."""

    result: RunResult | None
    deals: int
    played: int
    done: bool


def play_in_steps(config: RunConfig, run_dir: Path, targets: Iterator[int] | list[int],
                  done: Callable[[int], bool], **kw: Any) -> Steps:
    """The one sequential loop: top the run up to each number of deals in ``targets``
    (increasing; the run folder is reused, so each step plays only the new deals) and after
    every complete step ask ``done(deals)`` whether to stop. Stops at the first ``done``,
    after the last target, or at a step that did not complete (interrupted). ``kw`` goes to
    :func:`execute`. The stop rule reads the run folder itself: the loop knows nothing about
    what is tested (the run's first-seat rate, an experiment's tolerances)."""
    played, deals, last = 0, 0, None
    for target in targets:
        deals = target
        config.deals = deals
        last = execution.execute(config, run_dir, **kw)  # looked up: a test replaces it
        played += last.played
        if not last.complete:
            return Steps(last, deals, played, False)
        if done(deals):
            return Steps(last, deals, played, True)
    return Steps(last, deals, played, False)


def step_targets(budget: int, step: int, start: int | None = None) -> Iterator[int]:
    """``start`` (default ``step``) deals, then ``step`` more at a time, up to ``budget``."""
    deals = min(budget, max(start if start is not None else step, 1))
    while True:
        yield deals
        if deals >= budget:
            return
        deals = min(budget, deals + max(step, 1))


def execute_until(config: RunConfig, run_dir: Path, halfwidth: float | None = None, *,
                  decide_margin: float | None = None, step_deals: int = 200,
                  echo: Callable[[str], None] | None = None, **kw: Any) -> RunResult:
    """Sequential stopping: play ``step_deals`` more deals at a time (topping the run up)
    until, for every ruleset and pairing, either

    - ``halfwidth``: the 95% interval of the first seat's win rate is at most that wide on
      each side (the rule looks only at the width, which hardly depends on the estimate, so
      it does not bias the estimate as stopping on significance would); or
    - ``decide_margin``: a sequential test (a generalised SPRT on deal outcomes,
      :class:`~patchsim.analysis.estimators.BandTest`, alpha = beta = 5%) has decided whether
      the rate lies within 50% +- the margin (fair) or outside it (a seat advantage),

    or ``config.deals`` (the budget) is reached. The result's notes carry the decisions, each
    with an anytime-valid interval (a confidence sequence) at the deal that decided it; with
    ``decide_margin`` the run folder gets its stopping record (runfolder.stopping), which
    tells a report that the run's length was chosen by a sequential test (so a fixed-sample
    interval covers less than its level)."""
    if (halfwidth is None) == (decide_margin is None):
        raise RunError("give either a half-width (until) or an equivalence margin "
                       "(decide_margin), not both")
    for name, value in (("until", halfwidth), ("decide_margin", decide_margin)):
        if value is not None and not 0 < value < 0.5:
            what = "a half-width" if name == "until" else "a margin"
            raise RunError.about(name, f"give {what} between 0 and 0.5 (0.01: 1 point), "
                                 f"got {value}", value=value)
    say = echo or (lambda _line: None)
    t0 = time.perf_counter()
    played = 0  # over every step: the session's rate, not the last step's (set below)

    def session(result: RunResult) -> RunResult:
        seconds = time.perf_counter() - t0
        return dataclasses.replace(result, seconds=seconds, played=played,
                                   games_per_s=played / seconds if played else 0.0)

    budget = config.deals
    first = min(budget, max(step_deals, 1))
    if (Path(run_dir) / MANIFEST).exists():  # resuming: never ask for fewer deals than stored
        first = min(budget, max(first, read_manifest(Path(run_dir))[1].deals))
    notes: list[str] = []
    decided: list[Decided] = []

    def stop(deals: int) -> bool:
        games = pd.read_parquet(table_path(Path(run_dir), "games"),
                                columns=["ruleset", "pairing", "deal", "winner"])
        widest, open_groups = 0.0, 0
        notes.clear()
        decided.clear()
        for (ruleset, pairing), g in games.groupby(["ruleset", "pairing"], sort=False,
                                                   observed=True):
            x = deal_values((g["winner"] == 0).to_numpy(), g["deal"].to_numpy())
            if halfwidth is not None:
                widest = max(widest, mean_estimate(x, 0.95, WIN_BOUNDS).halfwidth)
                continue
            assert decide_margin is not None
            kind, at = BandTest.around(0.5, decide_margin).first_decision(
                x, range(10, len(x) + 1))
            if kind == CONTINUE:
                open_groups += 1
            else:
                inside: Decision = "within" if kind == PASS else "outside"
                # anytime-valid: the stop was chosen by looking at the data, where the
                # fixed-sample interval covers less than 95%
                e = anytime_estimate(x[:at], 0.95, n0=max(10, step_deals))
                notes.append(f"{ruleset}, {pairing}: the first seat's win rate is {inside} "
                             f"50% +-{100 * decide_margin:g} points (sequential test, decided "
                             f"at deal {at}; {100 * e.value:.1f}% [{100 * e.lo:.1f}, "
                             f"{100 * e.hi:.1f}] anytime-valid 95%)")
                decided.append(Decided(str(ruleset), str(pairing), inside, at, e.value,
                                       e.lo, e.hi))
        if halfwidth is not None:
            say(f"{deals} deals: widest 95% half-width of the first-seat win rate "
                f"{100 * widest:.2f} points (target {100 * halfwidth:.2f})")
            return widest <= halfwidth
        say(f"{deals} deals: {len(notes)} decided, {open_groups} still open")
        return open_groups == 0

    steps = play_in_steps(config, run_dir, step_targets(budget, step_deals, first), stop,
                          **kw)
    played = steps.played
    result = steps.result
    assert result is not None  # at least one step is always played
    if not result.complete:
        return session(result)
    deals = steps.deals
    if steps.done and halfwidth is not None:
        say(f"target reached at {deals} deals: every 95% half-width is at most "
            f"{100 * halfwidth:.2f} points")
    elif steps.done:
        say(f"target reached at {deals} deals: every pairing is decided")
    else:
        say(f"stopped at the budget of {budget} deals before reaching the target")
    if decide_margin is not None:
        # the report reads this: its fixed-sample intervals were stopped on
        write_stopping(Path(run_dir), StoppingRecord(decide_margin, step_deals, deals,
                                                     tuple(decided)))
    result.notes.extend(notes)
    return session(result)
