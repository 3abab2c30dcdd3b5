"""``patchsim skill --until-decided``: a tiny ladder of cheap bots (random, greedy, a search at
2 iterations) that adds deals to every level in steps until the trend and the first seat are
decided, stops when they are, resumes from its parts' run folders, and refuses bad requests."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.experiments.skill import SkillError, skill_trace, write_trace

TINY = {"floor": ("random", "greedy"), "levels": (2,), "seed": 5, "diversity": "epsilon",
        "compare": False}


def test_it_stops_as_soon_as_both_are_decided(tmp_path) -> None:
    # a margin of +-40 points: the first seat's rate and the trend are decided within a
    # few looks, well before the budget
    t = skill_trace("edition2", **TINY, deals=10, budget=200, margin=0.4, until_decided=True,
                    work_dir=tmp_path / "parts")
    st = t.stopping
    assert st["decided"] and st["deals"] < 200 and st["step"] == 10
    assert [look["deals"] for look in st["looks"]] == list(range(10, st["deals"] + 1, 10))
    assert st["looks"][-1]["decided"] and not any(x["decided"] for x in st["looks"][:-1])
    assert t.deals == st["deals"] and (t.levels_table["deals"] == st["deals"]).all()
    h = t.headline()
    assert h["decided"] and t.verdict is not None and t.verdict.kind != "undecided"
    # every interval it prints is anytime-valid
    assert t.anytime_n0 == 10 and t.verdict.fit.anytime
    assert "(anytime-valid 95% intervals)" in t.verdict.text()
    figures = t.figures()
    assert figures["stopping"] == st and figures["trend"]["anytime"]


def test_a_budget_that_runs_out_says_so_and_a_rerun_resumes(tmp_path) -> None:
    parts = tmp_path / "parts"
    first = skill_trace("edition2", **TINY, deals=10, budget=20, until_decided=True,
                        work_dir=parts)
    assert not first.stopping["decided"] and first.stopping["deals"] == 20
    assert "a larger budget" in first.verdict.text()
    # the same call with a larger budget re-reads the looks it played and plays only the
    # deals it lacks
    again = skill_trace("edition2", **TINY, deals=10, budget=40, until_decided=True,
                        work_dir=parts)
    assert [x["deals"] for x in again.stopping["looks"]][:2] == [10, 20]
    assert again.stopping["looks"][:2] == first.stopping["looks"]
    assert (again.levels_table["games"] == 2 * (again.stopping["deals"] - 20)).all()
    # and it is the trace an uninterrupted run gives
    whole = skill_trace("edition2", **TINY, deals=10, budget=40, until_decided=True,
                        work_dir=tmp_path / "whole")
    pd.testing.assert_frame_equal(again.level_deals, whole.level_deals)
    assert again.stopping == whole.stopping
    # writing the trace keeps the games: the parts move into it
    folder = write_trace(again, tmp_path / "trace", parts=parts)
    assert not parts.exists() and (folder / "runs" / "part-00").is_dir()
    assert json.loads((folder / "trace.json").read_text())["stopping"] == again.stopping
    md = (folder / "skill.md").read_text()
    assert "Played until decided" in md and "anytime-valid" in md


@pytest.mark.parametrize("kw,match", [
    ({"budget": 5}, "budget: at least the step of 10"),
    ({"budget": 20.5}, "budget: "),
    ({"work_dir": None}, "out: a trace until decided needs a folder"),
])
def test_bad_requests_say_which_parameter(kw, match, tmp_path) -> None:
    args = {**TINY, "deals": 10, "budget": 20, "until_decided": True,
            "work_dir": tmp_path / "p", **kw}
    with pytest.raises(SkillError, match=match):
        skill_trace("edition2", **args)


def test_the_command_plays_until_decided_and_says_what_decided_it(tmp_path) -> None:
    out = tmp_path / "t"
    args = ["skill", "edition2", "--bots", "random;greedy", "--levels", "2", "--seed", "5",
            "--deals", "10", "--until-decided", "--budget", "20", "--diversity", "epsilon",
            "--no-compare", "--jobs", "1", "--out", str(out), "--no-progress"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "until decided: the budget of 20 deals a level ran out after 2 looks" in r.output
    assert "is NOT decided at 20 deals a level (a larger --budget would go on)" in r.output
    assert "(anytime-valid 95%)" in r.output and "skill trace: undecided: " in r.output
    assert (out / "runs").is_dir() and not (tmp_path / "t.parts").exists()
    # --budget without --until-decided is refused, naming both
    r = CliRunner().invoke(app, ["skill", "edition2", "--budget", "20", "--out",
                                 str(tmp_path / "u")])
    assert r.exit_code != 0 and "--budget bounds a trace played --until-decided" in r.output
    r = CliRunner().invoke(app, [*args[:-3], "--out", str(tmp_path / "v"), "--budget", "5"])
    assert r.exit_code != 0 and "--budget: at least the step of 10" in r.output


def test_a_stop_while_playing_says_how_to_resume_the_trace(tmp_path, monkeypatch) -> None:
    from patchsim.experiments import skill as experiment
    from patchsim.play.errors import RunInterrupted

    def stopped(*_a, **_k):
        raise RunInterrupted(tmp_path / "t.parts" / "part-03", 1, 2, "interrupted")

    monkeypatch.setattr(experiment, "skill_traces", stopped)
    out = tmp_path / "t"
    r = CliRunner().invoke(app, ["skill", "edition2", "--until-decided", "--out", str(out)])
    assert r.exit_code == 130
    assert f"the games played are kept in {out}.parts/" in r.output
    assert "rerun the same command" in r.output and "patchsim run --resume" not in r.output
