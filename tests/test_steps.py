"""The one sequential loop (play.steps.play_in_steps): top a run up in steps until a stop
rule holds; used by `run --until` (execute_until) and by the balance gate."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from patchsim.play import execution, steps


@dataclass
class FakeResult:
    played: int
    complete: bool = True


def test_step_targets_top_up_to_the_budget() -> None:
    assert list(steps.step_targets(10, 4)) == [4, 8, 10]
    assert list(steps.step_targets(10, 4, start=9)) == [9, 10]
    assert list(steps.step_targets(3, 50)) == [3]
    assert list(steps.step_targets(6, 0)) == [1, 2, 3, 4, 5, 6]  # a step of at least 1


def test_play_in_steps_stops_at_the_rule_the_budget_or_an_interrupted_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    class Config:
        deals = 0

    def fake_execute(config, run_dir, **kw):
        new = config.deals - (asked[-1] if asked else 0)
        asked.append(config.deals)
        assert kw == {"jobs": 1}
        return FakeResult(2 * new, complete=config.deals != 30)

    monkeypatch.setattr(execution, "execute", fake_execute)
    seen: list[int] = []

    def done(deals: int) -> bool:
        seen.append(deals)
        return deals >= 20

    s = steps.play_in_steps(Config(), Path("x"), [10, 20, 30], done, jobs=1)
    assert (s.done, s.deals, s.played, seen) == (True, 20, 40, [10, 20])
    asked.clear()
    s = steps.play_in_steps(Config(), Path("x"), [10, 20], lambda d: False, jobs=1)
    assert (s.done, s.deals, s.played) == (False, 20, 40)  # the budget ran out
    asked.clear()
    s = steps.play_in_steps(Config(), Path("x"), [10, 30, 40], lambda d: False, jobs=1)
    assert (s.done, s.deals, s.result.complete) == (False, 30, False)  # interrupted: stop
