"""Designer experiments: loading and validation, a small sweep and a small tune end to end,
and the balance gate's three exit codes."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.experiments.experiment import ExperimentError, load_experiment
from patchsim.experiments.sweep import run_sweep
from patchsim.experiments.tune import candidates, run_tune
from patchsim.play.runfolder import load_games


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
    return exp, run_sweep(exp, tmp / "run", jobs=1, backend="sequential")


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


@pytest.mark.slow
def test_tune_end_to_end(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**BASE, "tune": {
        "fields": {"second_player_buttons": [0, 1, 2, 3]},
        "targets": {"first_player_win": {"target": 0.5, "tolerance": 0.05}},
        "games": 20, "rounds": 2, "finalists": 2, "final_games": 40}}))
    assert len(candidates(exp)) == 4
    res = run_tune(exp, tmp_path / "tune", jobs=1, backend="sequential", echo=lambda s: None)
    assert len(res.finalists) == 2
    # every round's estimates carry intervals; nothing is dropped on a point estimate
    assert {"first_player_win_lo", "first_player_win_hi", "loss_lo", "loss_hi",
            "dropped"} <= set(res.rounds.columns)
    for _, r in res.rounds[res.rounds["dropped"]].iterrows():
        same = res.rounds[res.rounds["round"] == r["round"]]
        assert r["loss_lo"] > same["loss_hi"].min()
    assert (res.finalists["games"] <= 40).all()
    text = res.report.read_text()
    assert "Best variant" not in text and "Finalists" in text
    assert "equivalence p" in text and "power calculation" in text


def test_tune_drops_only_candidates_shown_worse() -> None:
    from patchsim.experiments.tune import loss_bounds

    rng = np.random.default_rng(9)
    target = {FPW: {"target": 0.5, "tolerance": 0.05}}
    near = pd.DataFrame({FPW: rng.integers(0, 2, (400, 2)).mean(axis=1)})
    far = pd.DataFrame({FPW: (rng.random((400, 2)) < 0.8).mean(axis=1)})
    tiny = pd.DataFrame({FPW: (rng.random((8, 2)) < 0.7).mean(axis=1)})
    _, _, near_hi, _ = loss_bounds(near, target, 0.99)
    _, far_lo, _, _ = loss_bounds(far, target, 0.99)
    _, tiny_lo, _, _ = loss_bounds(tiny, target, 0.99)
    assert far_lo > near_hi  # shown worse: dropped
    assert tiny_lo <= near_hi  # too few deals to tell: kept, whatever its point estimate


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
    # a band of +-1 point around a fair-ish rate cannot be decided within 40 games
    assert gate(tmp_path, ["greedy(epsilon=0.1)"], {"metric": "first_player_win",
                                                     "min": 0.49, "max": 0.51},
                max_games=40) == 2


def test_gate_exits_3_on_a_bad_file(tmp_path: Path) -> None:
    path = write(tmp_path, {**BASE, "check": {"tolerances": []}})
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 3
    assert "check.tolerances" in result.output


# --- review fixes: validation --------------------------------------------------------------
TUNE_FIELDS = {"starting_buttons": [5, 6]}
FPW = "first_player_win"


@pytest.mark.parametrize(("data", "where"), [
    # tune targets: tolerance required, target a number
    ({"tune": {"fields": TUNE_FIELDS, "targets": {FPW: {"target": 0.5}}}},
     f"tune.targets.{FPW}.tolerance: required"),
    ({"tune": {"fields": TUNE_FIELDS, "targets": {FPW: {"target": "half",
                                                        "tolerance": 0.1}}}},
     f"tune.targets.{FPW}.target: expected a number"),
    ({"tune": {"fields": TUNE_FIELDS, "targets": {FPW: {"target": 0.5,
                                                        "tolerance": True}}}},
     f"tune.targets.{FPW}.tolerance: must be a positive number"),
    # tolerances: numbers only
    ({"check": {"tolerances": [{"metric": FPW, "min": "low"}]}},
     "check.tolerances[0].min: expected a number, got 'low'"),
    ({"check": {"tolerances": [{"metric": FPW, "max": [1]}]}},
     "check.tolerances[0].max: expected a number"),
    ({"check": {"tolerances": [{"metric": FPW, "target": "x", "margin": 0.1}]}},
     "check.tolerances[0].target: expected a number"),
    ({"check": {"tolerances": [{"metric": FPW, "target": 0.5, "margin": "wide"}]}},
     "check.tolerances[0].margin"),
    ({"check": {"tolerances": [{"metric": FPW, "target": 0.5, "margin": 0.1, "min": 0.2}]}},
     "check.tolerances[0]: give min and/or max, or target and margin, not both"),
    # sample seed
    ({"sample": {"n": 2, "seed": "abc", "fields": {"starting_buttons": [5, 6]}}},
     "sample.seed: expected a whole number >= 0, got 'abc'"),
    ({"sample": {"n": 2, "seed": 1.5, "fields": {"starting_buttons": [5, 6]}}},
     "sample.seed: expected a whole number >= 0"),
    # variant labels
    ({"variants": [{"name": "a", "set": {"starting_buttons": 6}},
                   {"name": "a", "set": {"starting_buttons": 7}}]},
     "variants[1]: the name 'a' is already used by variants[0]"),
    ({"variants": [{"name": "base", "set": {"starting_buttons": 6}}]},
     "variants[0]: the name 'base' is reserved"),
    # pairings of tolerances
    ({"check": {"tolerances": [{"metric": FPW, "min": 0.1, "pairing": "random vs random"}]}},
     "check.tolerances[0].pairing: 'random vs random' is none of this experiment's "
     "pairings (greedy vs greedy)"),
    # bots and whole numbers
    ({"bots": []}, "bots: expected a bot or a non-empty list of bots"),
    ({"bots": {"greedy": 1}}, "bots: expected a bot or a non-empty list of bots"),
    ({"bots": ["greedy", "greedy()"]}, "bots[1]: the same bot as bots[0] (greedy)"),
    ({"games": "many"}, "games: expected a whole number >= 1, got 'many'"),
    ({"games": 0}, "games: expected a whole number >= 1, got 0"),
    ({"games": 2.5}, "games: expected a whole number >= 1, got 2.5"),
    ({"seed": -1}, "seed: expected a whole number >= 0, got -1"),
    ({"seed": "x"}, "seed: expected a whole number >= 0, got 'x'"),
    ({"batch_deals": 0}, "batch_deals: expected a whole number >= 1, got 0"),
    ({"batch_deals": "big"}, "batch_deals: expected a whole number >= 1, got 'big'"),
    ({"tune": {"fields": TUNE_FIELDS, "seed": -3,
               "targets": {FPW: {"target": 0.5, "tolerance": 0.1}}}},
     "tune.seed: expected a whole number >= 0, got -3"),
    # contradictions
    ({"check": {"tolerances": [{"metric": FPW, "min": 0.55},
                               {"metric": "first_player_edge", "max": 0.0}]}},
     "check.tolerances[1]: contradictory"),
    ({"check": {"tolerances": [{"metric": "mean_score", "min": 10},
                               {"metric": "mean_score", "max": 5,
                                "pairing": "greedy vs greedy"}]}},
     "check.tolerances[1]: contradictory"),
    ({"check": {"tolerances": [{"metric": FPW, "target": 0.5, "margin": 0.02},
                               {"metric": FPW, "min": 0.52}]}},
     "check.tolerances[1]: contradictory"),
    ({"tune": {"fields": TUNE_FIELDS, "targets": {
        FPW: {"target": 0.5, "tolerance": 0.01},
        "first_player_edge": {"target": 0.1, "tolerance": 0.02}}}},
     "tune.targets: contradictory"),
])
def test_more_bad_experiments(tmp_path: Path, data: dict, where: str) -> None:
    text = problems_of(tmp_path, {**BASE, **data})
    assert "exp.yaml" in text
    assert where in text
    assert "Traceback" not in text


def test_consistent_edge_and_win_targets_are_fine(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**BASE, "tune": {"fields": TUNE_FIELDS, "targets": {
        FPW: {"target": 0.5, "tolerance": 0.02},
        "first_player_edge": {"target": 0.01, "tolerance": 0.02}}}, "check": {"tolerances": [
            {"metric": FPW, "min": 0.45, "max": 0.55},
            {"metric": "first_player_edge", "min": -0.02}]}}))
    assert len(exp.tolerances) == 2


def test_tolerances_on_different_pairings_may_differ(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**BASE, "bots": ["greedy", "random"], "check": {
        "tolerances": [
            {"metric": "mean_score", "min": 10, "pairing": "greedy vs greedy"},
            {"metric": "mean_score", "max": 5, "pairing": "random vs random"}]}}))
    assert [t.pairing for t in exp.tolerances] == ["greedy vs greedy", "random vs random"]


def test_tolerance_pairing_is_compared_by_canonical_bot_specs(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**BASE, "bots": ["greedy( epsilon = 0.10 )"],
                                           "check": {"tolerances": [
        {"metric": FPW, "min": 0.1, "pairing": "greedy(epsilon=0.1) vs greedy(epsilon=.1)"}]}}))
    assert exp.bots == ["greedy(epsilon=0.1)"]
    assert exp.tolerances[0].pairing == "greedy(epsilon=0.1) vs greedy(epsilon=0.1)"


def test_a_single_bot_may_be_a_string(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**BASE, "bots": "greedy"}))
    assert exp.bots == ["greedy"]
    exp = load_experiment(write(tmp_path, {**{k: v for k, v in BASE.items() if k != "bots"},
                                           "skill": "greedy"}))
    assert exp.skill == ["greedy"]


def test_a_directory_is_not_an_experiment(tmp_path: Path) -> None:
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(ExperimentError) as err:
        load_experiment(tmp_path / "dir.yaml")
    assert "dir.yaml: is a directory" in str(err.value)
    result = CliRunner().invoke(app, ["sweep", str(tmp_path / "dir.yaml")])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_an_unreadable_file_is_an_experiment_error(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(ExperimentError) as err:
        load_experiment(path)
    assert "bin.yaml: cannot read" in str(err.value)


def test_duplicate_keys_are_errors_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("name: t\nbase: edition2\ngames: 20\nbots: [greedy]\ngames: 40\n"
                    "check:\n  tolerances:\n    - metric: first_player_win\n      min: 0.1\n"
                    "      min: 0.2\n", encoding="utf-8")
    with pytest.raises(ExperimentError) as err:
        load_experiment(path)
    text = str(err.value)
    assert "dup.yaml: line 5: duplicate key 'games' (first on line 3)" in text
    assert "dup.yaml: line 10: duplicate key 'min' (first on line 9)" in text


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "merge.yaml"
    path.write_text("name: t\nbase: edition2\nbots: [greedy]\ngames: 20\nvariants:\n"
                    "  - &v {name: a, set: {starting_buttons: 6}}\n"
                    "  - {<<: *v, name: b, set: {starting_buttons: 7}}\n", encoding="utf-8")
    exp = load_experiment(path)
    assert [v.label for v in exp.variants] == ["base", "a", "b"]
    assert exp.variants[2].ruleset.starting_buttons == 7  # b's own key wins over the merged


def test_a_run_experiment_points_to_patchsim_run(tmp_path: Path) -> None:
    path = write(tmp_path, {"name": "r", "rulesets": ["edition1", "edition2"],
                            "bots": ["greedy"], "games": 20})
    with pytest.raises(ExperimentError) as err:
        load_experiment(path)
    assert len(err.value.problems) == 1
    assert ("this is a run experiment (ruleset/rulesets); use `patchsim run "
            f"{path}`") in str(err.value)
    for cmd, code in (("sweep", 2), ("tune", 2), ("check", 3)):
        result = CliRunner().invoke(app, [cmd, str(path)])
        assert result.exit_code == code
        assert "this is a run experiment" in result.output


def test_gate_exits_3_before_playing_for_an_unknown_pairing(tmp_path: Path) -> None:
    path = write(tmp_path, {**BASE, "check": {"tolerances": [
        {"metric": FPW, "min": 0.1, "pairing": "random vs random"}]}})
    result = CliRunner().invoke(app, ["check", str(path), "--jobs", "1",
                                      "--out", str(tmp_path / "gate")])
    assert result.exit_code == 3
    assert "pairing" in result.output
    assert not (tmp_path / "gate").exists()


# --- review fixes: tune --------------------------------------------------------------------
def test_tune_loss_never_defaults_the_tolerance() -> None:
    from patchsim.experiments.tune import loss

    est = pd.DataFrame({"metric": [FPW], "mean": [0.6]})
    assert loss(est, {FPW: {"target": 0.5, "tolerance": 0.05}}) == pytest.approx(4.0)
    with pytest.raises((KeyError, ValueError)):
        loss(est, {FPW: {"target": 0.5}})


# --- review fixes: skill flags -------------------------------------------------------------
def skill_deals(edges: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    rows = []
    for ruleset, by_bot in edges.items():
        for bot, values in by_bot.items():
            for deal, e in enumerate(values):
                rows.append({"ruleset": ruleset, "pairing": f"{bot} vs {bot}", "deal": deal,
                             "first_player_edge": e})
    return pd.DataFrame(rows)


def edges(n_plus: int, n_minus: int, n: int = 200) -> list[float]:
    """n deals: n_plus at +0.5, n_minus at -0.5, the rest at 0, in a scrambled order."""
    values = [0.5] * n_plus + [-0.5] * n_minus + [0.0] * (n - n_plus - n_minus)
    order = np.random.default_rng(7).permutation(n)
    return list(np.asarray(values)[order])


def test_skill_flags_do_not_flag_a_shrinking_imbalance() -> None:
    from patchsim.experiments.sweep import skill_flags

    # weak: first seat -10 points; strong: +5 points: the imbalance shrinks with skill
    deals = skill_deals({"base": {"weak": edges(20, 60), "strong": edges(50, 30)}})
    flags = skill_flags(pd.DataFrame(), deals, ["weak", "strong"])
    row = flags.iloc[0]
    assert row["edge_weakest"] == pytest.approx(-0.1)
    assert row["edge_strongest"] == pytest.approx(0.05)
    assert row["growth"] == pytest.approx(-0.05)
    assert row["change"] == pytest.approx(0.15)
    assert row["change_lo"] < row["change"] < row["change_hi"]
    assert row["trend"] in ("changes side", "undecided")
    assert not row["imbalance_grows_with_skill"]


def test_skill_flags_and_the_report_skill_table_give_one_answer() -> None:
    """A sweep's "does it grow with skill?" is the report's skill table's question, asked of
    the same deals: the same change, verdict and trend (one function)."""
    from patchsim.analysis.comparison import imbalance_changes
    from patchsim.experiments.sweep import skill_flags

    deals = skill_deals({"base": {"weak": edges(25, 20), "strong": edges(80, 10)},
                         "other": {"weak": edges(20, 20), "strong": edges(22, 20)}})
    flags = skill_flags(pd.DataFrame(), deals, ["weak", "strong"]).set_index("ruleset")
    assert flags.loc["base", "growth"] == pytest.approx(0.175 - 0.0125)
    assert flags.loc["base", "imbalance_grows_with_skill"]
    assert flags.loc["base", "trend"] == "grows"
    assert not flags.loc["other", "imbalance_grows_with_skill"]
    assert "Holm over 2" in flags.loc["base", "verdict"]
    # the same numbers as the shared function on the per-deal first-seat win rates
    pairs, levels = [], []
    for r in ("base", "other"):
        d = deals[deals["ruleset"] == r]
        w = d[d["pairing"] == "weak vs weak"].set_index("deal")["first_player_edge"] + 0.5
        s = d[d["pairing"] == "strong vs strong"].set_index("deal")["first_player_edge"] + 0.5
        pairs.append((w.to_numpy(), s.loc[w.index].to_numpy()))
        levels.append((w.mean(), s.mean()))
    found = imbalance_changes(pairs, levels, margin=0.02)
    for r, c in zip(("base", "other"), found, strict=True):
        assert flags.loc[r, "change"] == pytest.approx(c.change.value)
        assert flags.loc[r, "verdict_kind"] == c.verdict.kind
        assert flags.loc[r, "trend"] == c.trend
        assert flags.loc[r, "p_holm"] == pytest.approx(c.verdict.p_difference)


# --- review fixes: sweep verdict -----------------------------------------------------------
def test_sweep_verdict_says_point_estimate_and_who_is_not_distinguishable(small_sweep) -> None:
    _, res = small_sweep
    md = res.report_md.read_text()
    assert "fairest variant" not in md
    assert "closest to 50% by point estimate" in md
    assert "distinguishable" in md


def test_verdict_separates_clear_losers_from_ties() -> None:
    from types import SimpleNamespace

    from patchsim.experiments.sweep import _verdict

    rng = np.random.default_rng(3)
    n = 400
    win = {"fair": rng.permutation([1.0] * 200 + [0.0] * 200),
           "close": rng.permutation([1.0] * 206 + [0.0] * 194),
           "lopsided": rng.permutation([1.0] * 320 + [0.0] * 80)}
    deals = pd.DataFrame([{"ruleset": r, "pairing": "greedy vs greedy", "deal": i,
                           FPW: v[i]} for r, v in win.items() for i in range(n)])
    from patchsim.analysis.metrics import estimate

    est = estimate(deals, [FPW])
    table = pd.DataFrame({"ruleset": est["ruleset"], "pairing": est["pairing"],
                          "deals": est["deals"], FPW: est["mean"], f"{FPW}_lo": est["lo"],
                          f"{FPW}_hi": est["hi"]})
    lines = _verdict(SimpleNamespace(metric=FPW, margin=0.02), table, deals)
    text = "\n".join(lines)
    assert "closest to 50% by point estimate is **fair**" in text
    assert "not distinguishable from: close" in text
    assert "lopsided" not in text.split("not distinguishable from:")[1].split("\n")[0]
    # without the deals, overlapping intervals decide
    text = "\n".join(_verdict(SimpleNamespace(metric=FPW, margin=0.02), table))
    assert "not distinguishable from: close" in text


# --- review fixes: the gate ----------------------------------------------------------------
def test_gate_decides_nothing_before_ten_deals(tmp_path: Path) -> None:
    from patchsim.experiments.gate import MIN_DEALS, run_check

    assert MIN_DEALS == 10
    exp = load_experiment(write(tmp_path, {**BASE, "bots": ["random"], "check": {
        "tolerances": [{"metric": "mean_score", "min": 10}], "max_games": 200,
        "step_games": 10}}))
    seen: list[str] = []
    res = run_check(exp, tmp_path / "gate", jobs=1, backend="sequential", echo=seen.append)
    assert "undecided: too few deals" in "\n".join(seen)
    assert res.code == 1
    assert res.games >= 2 * MIN_DEALS


def test_gate_tests_every_tolerance_and_pairing_sequentially(tmp_path: Path) -> None:
    from patchsim.experiments.gate import run_check

    exp = load_experiment(write(tmp_path, {**BASE, "bots": ["greedy", "random"], "check": {
        "tolerances": [{"metric": FPW, "min": 0.01, "max": 0.99},
                       {"metric": "mean_score", "min": -1000},
                       {"metric": "plies", "min": 1, "pairing": "greedy vs greedy"}],
        "max_games": 200, "step_games": 100, "alpha": 0.06}}))
    res = run_check(exp, tmp_path / "gate", jobs=1, backend="sequential", echo=lambda s: None)
    # 2 tolerances x 2 pairings + 1 tolerance x 1 pairing = 5 sequential tests, each held to
    # a false-pass rate of alpha (all must pass) with beta split over them
    assert res.checks == 5
    assert res.alpha_per_check == pytest.approx(0.06)
    assert "over 5 check(s)" in res.lines[0]
    assert res.code == 0 and all("holds (decided at deal" in ln for ln in res.lines[1:-1])
    # one unit style, as every other document: rates in percent (issue 30), counts in theirs
    rates = [ln for ln in res.lines if f"{FPW} within [1.0%, 99.0%]: " in ln]
    assert len(rates) == 2, res.lines
    assert all(re.search(r": -?\d+\.\d% \[-?\d+\.\d%, -?\d+\.\d%\] anytime-valid", ln)
               for ln in rates), rates
    assert not any(re.search(r"\b0\.\d{4}\b", ln) for ln in res.lines), res.lines
    assert any("plies at least 1 moves: " in ln and " moves anytime-valid" in ln
               for ln in res.lines), res.lines


def test_a_check_that_holds_prints_the_interval_that_shows_it_or_says_why_not() -> None:
    """Issue 28: `check experiments/fair-start.yaml` printed "holds" beside an anytime-valid
    [0.4638, 0.5446], wider than its own band [0.47, 0.53]."""
    from patchsim.analysis.estimators import BandTest, Estimate
    from patchsim.experiments.gate import decision_words

    band = BandTest(0.47, 0.53)
    wide = Estimate(0.5042, 0.01, 0.4638, 0.5446, 1500, 0.35)
    said = decision_words("holds", wide, band, 1203)
    assert said.startswith("holds (decided at deal 1203 by the sequential test")
    assert "wider than the band" in said
    narrow = Estimate(0.50, 0.005, 0.485, 0.515, 9000, 0.35)
    assert decision_words("holds", narrow, band, 9000) == (
        "holds (decided at deal 9000; the interval lies inside the band)")
    out = Estimate(0.60, 0.01, 0.56, 0.64, 900, 0.35)
    assert decision_words("fails", out, band, 900).endswith("the interval lies beyond the band)")
    near = Estimate(0.53, 0.005, 0.52, 0.54, 900, 0.35)
    assert "still reaches inside the band" in decision_words("fails", near, band, 900)
    assert "over one 3.0 points inside it" in decision_words("fails", near, band, 900, FPW)
    assert decision_words("undecided", near, band, 900) == "undecided"


def test_an_undecided_gate_continues_on_the_same_folder(tmp_path: Path) -> None:
    """The sequential test keeps its error rates however long it runs: exit 2 says to run it
    again with a larger budget, and the second run continues from the deals played."""
    from patchsim.experiments.gate import run_check

    spec = {**BASE, "check": {"tolerances": [{"metric": FPW, "min": 0.4, "max": 0.6}],
                              "max_games": 20, "step_games": 20}}
    exp = load_experiment(write(tmp_path, spec))
    res = run_check(exp, tmp_path / "gate", jobs=1, backend="sequential")
    assert res.code == 2
    assert "same folder" in res.lines[-1] and "max_games" in res.lines[-1]
    spec["check"] = {**spec["check"], "max_games": 2000, "step_games": 200}
    exp = load_experiment(write(tmp_path, spec))
    res = run_check(exp, tmp_path / "gate", jobs=1, backend="sequential")
    assert res.code in (0, 1) and "decided at deal" in "\n".join(res.lines)


def test_skill_sweep_reports_growth_with_its_interval(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path, {**{k: v for k, v in BASE.items() if k != "bots"},
                                           "skill": ["random", "greedy"], "games": 20}))
    res = run_sweep(exp, tmp_path / "run", jobs=1, backend="sequential")
    md = res.report_md.read_text()
    assert "## Imbalance and skill" in md
    assert "a paired difference over deals with its verdict (Holm over 1 variant)" in md
    flags = pd.read_csv(res.run_dir / "sweep-skill.csv")
    assert {"growth", "change", "change_lo", "change_hi", "verdict", "trend"} <= set(
        flags.columns)
    assert (flags["change_lo"] <= flags["change_hi"]).all()


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parent.parent
                                          / "experiments").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_shipped_experiments_load(path: Path) -> None:
    """Every shipped experiment is valid for the command it is written for."""
    from patchsim.play.config import load_run_config

    data = yaml.safe_load(path.read_text())
    if "base" in data:
        exp = load_experiment(path)
        assert exp.variants and exp.variants[0].label == "base"
    else:
        cfg = load_run_config(str(path))
        assert cfg.rulesets and cfg.pairings


def test_sweep_gives_each_variant_one_of_three_verdicts() -> None:
    """The primary metric: Holm over the variants, then "differs by X [a, b]", "equivalent
    within +-m" or "undecided: about N more deals"; secondary metrics are exploratory (BH)."""
    from patchsim.experiments.sweep import sweep_table

    rng = np.random.default_rng(8)
    n = 3000
    base = rng.integers(0, 2, (n, 2)).mean(axis=1)
    shifted = np.clip(base + rng.choice([0.0, 0.5], n, p=[0.8, 0.2]), 0, 1)
    same = base.copy()
    noisy = rng.integers(0, 2, (n, 2)).mean(axis=1)
    rows = []
    for r, v in (("base", base), ("shifted", shifted), ("same", same), ("noisy", noisy)):
        for i in range(n if r != "noisy" else 40):
            rows.append({"ruleset": r, "pairing": "g vs g", "deal": i, FPW: v[i],
                         "plies": 40.0 + (r == "shifted")})
    deals = pd.DataFrame(rows)
    table = sweep_table(pd.DataFrame(), None, metrics=[FPW, "plies"], primary=FPW,
                        margin=0.02, deals=deals).set_index("ruleset")
    assert table.loc["shifted", "verdict_kind"] == "differs"
    assert table.loc["shifted", "verdict"].startswith("differs by +")
    assert table.loc["same", "verdict_kind"] == "equivalent"
    assert "equivalent within +-2.0 points" in table.loc["same", "verdict"]
    assert table.loc["noisy", "verdict_kind"] == "undecided"
    assert "more deals would likely decide it" in table.loc["noisy", "verdict"]
    assert table.loc["noisy", "more_deals"] > 0


def test_a_metric_that_does_not_apply_to_a_variant_is_not_defined_not_undecided() -> None:
    """Without leather marks there is no first leather patch: the verdict says the metric
    does not apply, not that more deals would decide it."""
    from patchsim.experiments.sweep import sweep_table

    metric = "first_leather_useful"
    rows = [{"ruleset": "base", "pairing": "g vs g", "deal": i, metric: float(i % 3 > 0),
             "plies": 40.0} for i in range(200)]
    rows += [{"ruleset": "no-leather", "pairing": "g vs g", "deal": i, metric: np.nan,
              "plies": 41.0} for i in range(200)]
    table = sweep_table(pd.DataFrame(), None, metrics=[metric, "plies"], primary=metric,
                        margin=0.02, deals=pd.DataFrame(rows)).set_index("ruleset")
    assert table.loc["no-leather", "verdict_kind"] == "undefined"
    assert table.loc["no-leather", "verdict"] == "not defined: no deal where the metric applies"
    assert table.loc["no-leather", "more_deals"] == 0


def test_a_one_sided_gate_decision_never_changes_after_it_was_made() -> None:
    """A one-sided tolerance on a non-rate metric without a resolution: the resolution came
    from the spread of every deal played so far, so a check that held at step 1 could be
    re-judged with a later spread ("fails, decided at deal 58"). Now it comes from the first
    deals only: at every later step the first decision is the same."""
    from patchsim.experiments.experiment_checks import Tolerance
    from patchsim.experiments.gate import RESOLUTION_DEALS, band_test

    tol = Tolerance("mean_score", 10.0, math.inf)
    rng = np.random.default_rng(2)
    flips = 0
    for _ in range(200):
        # a spread that grows later in the run (e.g. longer games further on)
        x = np.concatenate([rng.normal(10.6, 1.0, 100), rng.normal(10.6, 6.0, 900)])
        first = band_test(tol, x[:100], 0.05, 0.05, None).first_decision(x[:100],
                                                                          range(10, 101))
        if first[0] == "continue":
            continue
        later = band_test(tol, x, 0.05, 0.05, None).first_decision(x, range(10, 1001))
        flips += later != first
        assert first[1] >= RESOLUTION_DEALS
    assert flips == 0
