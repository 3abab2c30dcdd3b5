"""Designer experiments: loading and validation, a small sweep and a small tune end to end,
and the balance gate's three exit codes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from patchsim.cli import app
from patchsim.experiment import ExperimentError, load_experiment
from patchsim.runner import load_games
from patchsim.sweep import run_sweep
from patchsim.tune import candidates, run_tune


def write(tmp_path: Path, data: dict, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


BASE = {"name": "t", "base": "edition2", "bots": ["greedy"], "games": 20, "seed": 5}


def problems_of(tmp_path: Path, data: dict) -> str:
    with pytest.raises(ExperimentError) as err:
        load_experiment(write(tmp_path, data))
    return str(err.value)


def test_grid_builds_one_variant_per_distinct_ruleset(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**BASE, "grid": {"second_player_buttons": [0, 1, 2],
                                                            "bonus.points": [5, 7]}}))
    labels = [v.label for v in exp.variants]
    # the grid point (0, 7) is the base itself: played once, under the label "base"
    assert labels[0] == "base" and len(labels) == 6
    assert len(exp.grid_cells) == 6
    assert ({"second_player_buttons": 0, "bonus.points": 7}, "base") in exp.grid_cells
    assert len({v.ruleset.content_hash() for v in exp.variants}) == 6


def test_variants_list_and_sample(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**BASE, "variants": [
        {"name": "rich", "set": {"starting_buttons": 7}},
        {"set": {"track.leather": [20, 26, 32, 44, 50]}}],
        "sample": {"n": 3, "seed": 1, "fields": {"starting_buttons": {"min": 3, "max": 9}}}}))
    labels = [v.label for v in exp.variants]
    assert labels[:3] == ["base", "rich", "track.leather=[20,26,32,44,50]"]
    assert all(3 <= v.ruleset.starting_buttons <= 9 for v in exp.variants[3:])


@pytest.mark.parametrize(("data", "where"), [
    ({"bogus": 1}, "bogus: unknown key"),
    ({"base": "edition9"}, "base:"),
    ({"grid": {"starting_buttons": [5, -3]}}, "grid (starting_buttons=-3)"),
    ({"grid": {"starting_buttons": []}}, "grid.starting_buttons: expected a non-empty list"),
    ({"grid": {}}, "grid: expected a mapping"),
    ({"bots": ["greedy", "nosuchbot"]}, "bots[1]: unknown bot 'nosuchbot'"),
    ({"metric": "fun"}, "metric: unknown metric 'fun'"),
    ({"variants": [{"name": "x", "set": {"board.rows": 40}}]}, "variants[0]"),
    ({"check": {"tolerances": [{"metric": "first_player_win", "min": 0.6, "max": 0.4}]}},
     "check.tolerances[0]: the interval [0.6, 0.4] is empty"),
    ({"tune": {"fields": {"starting_buttons": {"min": 9, "max": 2}},
               "targets": {"first_player_win": {"target": 0.5, "tolerance": 0.01}}}},
     "tune.fields.starting_buttons: min 9 is above max 2"),
    ({"tune": {"fields": {"starting_buttons": [5]}, "targets": {"nope": {"target": 1}}}},
     "tune.targets.nope: unknown metric"),
])
def test_bad_experiments_name_file_and_key(tmp_path: Path, data: dict, where: str) -> None:
    text = problems_of(tmp_path, {**BASE, **data})
    assert "exp.yaml" in text
    assert where in text


def test_all_problems_reported_at_once(tmp_path: Path) -> None:
    text = problems_of(tmp_path, {**BASE, "bogus": 1, "metric": "fun", "games": 0})
    assert "3 problems" in text


def test_cli_reports_bad_experiment_without_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, {**BASE, "bogus": 1})
    result = CliRunner().invoke(app, ["sweep", str(path)])
    assert result.exit_code == 2
    assert "bogus: unknown key" in result.output
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("sweep")
    exp = load_experiment(write(tmp, {**BASE, "games": 24, "grid": {
        "second_player_buttons": [0, 3], "bonus.points": [5, 7]}}))
    return exp, run_sweep(exp, tmp / "run", jobs=1, backend="sequential", progress=False)


def test_sweep_plays_every_variant_on_the_same_deals(small_sweep) -> None:
    exp, res = small_sweep
    games = load_games(res.run_dir)
    assert set(games["ruleset"]) == {v.label for v in exp.variants}
    seeds = games.groupby("ruleset")["deal_seed"].apply(lambda s: tuple(sorted(set(s))))
    assert seeds.nunique() == 1  # common deals
    assert len(res.table) == len(exp.variants)


def test_sweep_table_has_intervals_and_paired_differences(small_sweep) -> None:
    _, res = small_sweep
    t = res.table.set_index("ruleset")
    assert (t["first_player_win_lo"] <= t["first_player_win"]).all()
    assert (t["first_player_win"] <= t["first_player_win_hi"]).all()
    assert pd.isna(t.loc["base", "d_first_player_win"]) or \
        t.loc["base", "d_first_player_win"] == 0
    rich = "second_player_buttons=3, bonus.points=5"
    assert t.loc[rich, "p_mean_score"] <= 1.0
    # three extra buttons for one seat raise the mean score on the same deals
    assert t.loc[rich, "d_mean_score"] > 0


def test_sweep_report_files_and_heatmap(small_sweep) -> None:
    _, res = small_sweep
    md = res.report_md.read_text()
    page = res.report_html.read_text()
    assert "## Verdict" in md and "## Variants" in md and "## Reproduce" in md
    assert (res.run_dir / "figures" / "sweep-heatmap.png").exists()
    assert page.count("data:image/png;base64,") >= 2
    assert "http://" not in page and "https://" not in page


def test_tune_end_to_end(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**BASE, "tune": {
        "fields": {"second_player_buttons": [0, 1, 2, 3]},
        "targets": {"first_player_win": {"target": 0.5, "tolerance": 0.05}},
        "games": 20, "rounds": 2, "finalists": 2, "final_games": 40}}))
    assert len(candidates(exp)) == 4
    res = run_tune(exp, tmp_path / "tune", jobs=1, backend="sequential", echo=lambda s: None)
    assert len(res.finalists) == 2
    assert set(res.rounds["round"]) == {0}
    assert (res.finalists["games"] == 40).all()
    text = res.report.read_text()
    assert "Best variant" in text and "Finalists" in text


def gate(tmp_path: Path, bots: list[str], tol: dict, max_games: int = 200) -> int:
    path = write(tmp_path, {**BASE, "bots": bots, "check": {
        "tolerances": [tol], "max_games": max_games, "step_games": 100}})
    result = CliRunner().invoke(app, ["check", str(path), "--jobs", "1",
                                      "--out", str(tmp_path / "gate")])
    assert "Traceback" not in result.output
    return result.exit_code


def test_gate_exits_0_when_every_tolerance_holds(tmp_path: Path) -> None:
    assert gate(tmp_path, ["greedy"], {"metric": "first_player_win", "min": 0.1,
                                       "max": 0.9}) == 0


def test_gate_exits_1_when_a_tolerance_fails(tmp_path: Path) -> None:
    # random play scores far below zero: "mean score at least 10" is shown to fail
    assert gate(tmp_path, ["random"], {"metric": "mean_score", "min": 10}) == 1


def test_gate_exits_2_when_the_budget_runs_out(tmp_path: Path) -> None:
    # a bound placed exactly at the estimate the last look will see can never be decided
    from patchsim.metrics import deal_metrics
    from patchsim.runner import execute, load_events, load_run_config

    cfg = load_run_config("edition2", games=200, bots=["greedy(epsilon=0.1)"], seed=5,
                          pairings="self")
    execute(cfg, tmp_path / "pilot", jobs=1, backend="sequential", progress=False)
    d = deal_metrics(load_games(tmp_path / "pilot"), load_events(tmp_path / "pilot"))
    bound = float(d["mean_score"].mean())
    assert gate(tmp_path, ["greedy(epsilon=0.1)"], {"metric": "mean_score",
                                                     "min": bound}) == 2


def test_gate_exits_3_on_a_bad_file(tmp_path: Path) -> None:
    path = write(tmp_path, {**BASE, "check": {"tolerances": []}})
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 3
    assert "check.tolerances" in result.output
