"""The skill trace: its verdict on synthetic level results (converged, still moving,
undecided), its per-level tables, a tiny trace played end to end (every column), the command,
the experiment file's skill section and the headline of a run."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import patchsim
from patchsim.analysis import skill as sk
from patchsim.analysis import skill_rules
from patchsim.analysis.seats import SKILL_GAP
from patchsim.cli.main import app
from patchsim.document.model import Document
from patchsim.document.render import to_html, to_markdown
from patchsim.experiments.experiment import ExperimentError, load_experiment
from patchsim.experiments.skill import SkillError, level_spec, skill_trace, write_trace
from patchsim.reporting.skill_plot import skill_figure
from patchsim.reporting.skill_section import (
    headline_line,
    headline_section,
    report_sections,
    rule_change_lines,
)


def _levels(per_level: list[np.ndarray], bots: list[str] | None = None) -> pd.DataFrame:
    """Per-deal values of the first seat's win rate at each level, on common deals."""
    rows = []
    for i, v in enumerate(per_level):
        rows.append(pd.DataFrame({"level": i, "bot": (bots or [f"L{j}" for j in range(
            len(per_level))])[i], "deal": np.arange(len(v)), "first_player_win": v}))
    return pd.concat(rows, ignore_index=True)


def _duels(level: int, wins: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"level": level, "bot": f"L{level}", "below": f"L{level - 1}",
                         "deal": np.arange(len(wins)), "win": wins})


def _deal_outcomes(rng: np.random.Generator, rate: float, n: int) -> np.ndarray:
    """Per-deal first-seat win shares of seat-swapped deals (two games each)."""
    return rng.binomial(2, rate, n) / 2


# --- the convergence verdict ---------------------------------------------------------------------
def test_a_flat_ladder_has_converged_per_100_elo() -> None:
    rng = np.random.default_rng(1)
    levels = [_deal_outcomes(rng, 0.57, 2000) for _ in range(3)]
    duels = pd.concat([_duels(1, _deal_outcomes(rng, 0.75, 2000)),
                       _duels(2, _deal_outcomes(rng, 0.65, 2000))], ignore_index=True)
    v = sk.convergence_verdict(_levels(levels), duels=duels, budgets=[100, 200, 400])
    assert v.kind == sk.CONVERGED and v.axis.axis == "elo"
    text = v.text()
    assert text.startswith("converged: equivalent within +-2.0 points per 100 Elo (")
    assert "; from a weighted line through 3 levels on 2,000 common deals (95% intervals" in text
    assert "which puts the strongest level at 5" in text and "stalled" not in text
    assert v.verdict.kind == "equivalent"


def test_a_flat_top_without_a_stronger_player_says_the_ladder_may_have_stalled() -> None:
    rng = np.random.default_rng(2)
    levels = [_deal_outcomes(rng, 0.57, 2000) for _ in range(3)]
    duels = pd.concat([_duels(1, _deal_outcomes(rng, 0.8, 2000)),
                       _duels(2, _deal_outcomes(rng, 0.5, 2000))], ignore_index=True)
    v = sk.convergence_verdict(_levels(levels), duels=duels)
    assert v.kind == sk.CONVERGED
    assert "may have stalled rather than converged" in v.text()


def test_a_metric_that_keeps_changing_is_still_moving_per_doubling() -> None:
    rng = np.random.default_rng(3)
    levels = [_deal_outcomes(rng, r, 3000) for r in (0.50, 0.56, 0.62)]
    v = sk.convergence_verdict(_levels(levels), budgets=[100, 200, 400])
    assert v.kind == sk.MOVING and v.axis.axis == "doubling"
    assert 0.045 < v.slope.value < 0.075
    e = v.slope
    assert v.text().startswith(
        f"still moving: differs by {100 * e.value:+.1f} points per doubling of the budget "
        f"[{100 * e.lo:+.1f}, {100 * e.hi:+.1f}], beyond +-2.0 points per doubling")


def test_without_budgets_or_duels_the_slope_is_per_level() -> None:
    rng = np.random.default_rng(4)
    low, high = _deal_outcomes(rng, 0.50, 3000), _deal_outcomes(rng, 0.62, 3000)
    v = sk.convergence_verdict(_levels([low, high]), budgets=[None, 100])
    assert v.kind == sk.MOVING and v.axis.axis == "level"
    assert " points per level [" in v.text()


def test_too_few_deals_is_undecided_with_the_deals_per_level_that_would_decide() -> None:
    rng = np.random.default_rng(5)
    levels = [_deal_outcomes(rng, r, 30) for r in (0.55, 0.56, 0.57)]
    v = sk.convergence_verdict(_levels(levels), budgets=[100, 200, 400])
    assert v.kind == sk.UNDECIDED
    assert v.more_deals > 0 and not v.too_close
    # the deals come from the power calculation every verdict uses
    assert v.more_deals == v.verdict.more_deals
    assert f"about {v.more_deals:,} more deals per level would likely decide it" in v.text()
    assert v.text().startswith("undecided: ")


def test_every_level_counts_not_the_top_two_alone_and_one_level_is_refused() -> None:
    rng = np.random.default_rng(6)
    # a steady climb whose top two levels happen to agree: the top two alone would say
    # converged, the line through every level does not
    rates = (0.45, 0.50, 0.55, 0.60, 0.60)
    top = _deal_outcomes(rng, 0.60, 2000)
    levels = [_deal_outcomes(rng, r, 2000) for r in rates[:-2]] + [top, top.copy()]
    v = sk.convergence_verdict(_levels(levels), budgets=[25, 50, 100, 200, 400])
    assert v.kind != sk.CONVERGED and v.slope.lo > 0
    assert v.top == "L4" and v.fit.levels == (0, 1, 2, 3, 4)
    with pytest.raises(ValueError, match="needs two levels"):
        sk.convergence_verdict(_levels([top]))


def test_the_verdict_fits_the_deals_common_to_every_level() -> None:
    rng = np.random.default_rng(7)
    a = _deal_outcomes(rng, 0.57, 1000)
    levels = _levels([a, a.copy()])
    # extra deals the weaker level played, all won by the first seat: not common, ignored
    extra = pd.DataFrame({"level": 0, "bot": "L0", "deal": np.arange(1000, 1500),
                          "first_player_win": 1.0})
    v = sk.convergence_verdict(pd.concat([levels, extra], ignore_index=True))
    assert v.fit.deals == 1000 and v.slope.value == pytest.approx(0)


# --- per-level tables ----------------------------------------------------------------------------
def _game(deal: int, order: int, bot: str, winner: int = 0, scores=(60, 50), passes=(3, 3),
          other: str | None = None) -> dict:
    b0, b1 = (bot, other or bot) if order == 0 else (other or bot, bot)
    return {"ruleset": "r", "pairing": f"{b0 if order == 0 else b1} vs "
                                       f"{b1 if order == 0 else b0}",
            "game_id": deal * 10 + order + (100 if other else 0), "deal": deal,
            "deal_seed": deal, "order": order, "bot0": b0, "bot1": b1, "winner": winner,
            "winner_bot": b0 if winner == 0 else b1, "tie_break": scores[0] == scores[1],
            "score0": scores[0], "score1": scores[1], "buttons0": 0, "buttons1": 0,
            "empty0": 0, "empty1": 0, "plies": 40, "first_to_end": 0, "passes0": passes[0],
            "passes1": passes[1], "bonus0": False, "bonus1": False}


def test_degenerate_games_are_counted_per_level() -> None:
    games = pd.DataFrame([
        _game(0, 0, "a"), _game(0, 1, "a", winner=1),
        _game(1, 0, "a", passes=(13, 12)), _game(1, 1, "a", scores=(-21, 30), winner=1),
        _game(0, 0, "b"), _game(0, 1, "b", winner=1),
        _game(1, 0, "b"), _game(1, 1, "b", winner=1)])
    d = sk.level_deals(games, None, ["a", "b"])
    a = d[d["level"] == 0].set_index("deal")
    assert a.loc[1, "many_passes"] == 0.5 and a.loc[1, "deep_negative"] == 0.5
    assert a.loc[1, "degenerate"] == 1.0 and a.loc[0, "degenerate"] == 0.0
    assert a.loc[0, "first_player_win"] == 0.5 and a.loc[0, "score_diff"] == 10
    # deal 1's two games differ (their passes and scores do), deal 0's too (the winner)
    assert (a["two_games"] == 1.0).all()
    t = sk.level_table(d, ["a", "b"], seconds=[2.0, 4.0], games=[4, 4])
    assert list(t["bot"]) == ["a", "b"]
    assert t.loc[0, "degenerate"] == 0.5 and t.loc[1, "degenerate"] == 0.0
    assert t.loc[1, "games_per_s"] == 1.0
    for m in sk.LEVEL_METRICS:
        assert {m, f"{m}_lo", f"{m}_hi"} <= set(t.columns)


def test_each_level_shows_how_well_it_packs() -> None:
    p = -1  # a pass
    games = pd.DataFrame([
        _game(0, 0, "a", scores=(20, 10)), _game(0, 1, "a", scores=(6, 4)),
        _game(1, 0, "a", scores=(-30, 2)), _game(1, 1, "a", scores=(8, 8))]).assign(
        holes0=[1, 0, 4, 2], holes1=[3, 0, 0, 2], bonus0=[True, False, False, False],
        moves=[np.array([p] * 7 + [5]), np.array([3, p]), np.array([p] * 5 + [2]),
               np.array([p] * 6)])
    d = sk.level_deals(games, None, ["a"]).set_index("deal")
    assert d.loc[0, "mean_score"] == 10.0 and d.loc[1, "mean_score"] == -3.0
    assert d.loc[0, "holes"] == 1.0 and d.loc[1, "holes"] == 2.0
    assert d.loc[0, "opens_with_passes"] == 0.5 and d.loc[1, "opens_with_passes"] == 0.5
    assert d.loc[0, "bonus_rate"] == 0.5
    t = sk.level_table(d.reset_index(), ["a"])
    assert t.loc[0, "holes"] == 1.5 and t.loc[0, "opens_with_passes"] == 0.5
    assert t.loc[0, "opens_with_passes_lo"] < 0.5 < t.loc[0, "opens_with_passes_hi"]
    # a run stored before the holes (and a table without moves): missing, never zero
    old = sk.level_table(sk.level_deals(pd.DataFrame([_game(0, 0, "a"), _game(0, 1, "a")]),
                                        None, ["a"]), ["a"])
    assert math.isnan(old.loc[0, "holes"]) and math.isnan(old.loc[0, "opens_with_passes"])


def test_a_deterministic_levels_copies_count_once() -> None:
    # both games of each deal identical: the copy of each is dropped, the values unchanged
    games = pd.DataFrame([_game(k, o, "a", winner=0) for k in range(3) for o in (0, 1)])
    d = sk.level_deals(games, None, ["a"])
    assert len(d) == 3 and (d["first_player_win"] == 1.0).all()
    assert (d["two_games"] == 0.0).all()  # one game per deal: no diversity at all
    t = sk.level_table(d, ["a"])
    assert t.loc[0, "two_games"] == 0.0


def test_two_different_games_compares_the_move_records() -> None:
    from patchsim.analysis.selfplay import two_different_games

    rows = [_game(0, 0, "a"), _game(0, 1, "a"), _game(1, 0, "a"), _game(1, 1, "a")]
    games = pd.DataFrame(rows).assign(moves=[np.array([1, 2, 3]), np.array([1, 2, 3]),
                                             np.array([1, 2, 3]), np.array([1, 4, 3])])
    two = two_different_games(games)
    assert two.tolist() == [False, True]  # the same end, yet deal 1's games differ
    d = sk.level_deals(games, None, ["a"])
    assert d["two_games"].tolist() == [0.0, 1.0]


def test_duels_give_the_win_rate_elo_and_elo_per_doubling() -> None:
    wins = np.array([1.0, 0.5] * 200)  # 75% of the games
    t = sk.duel_table(_duels(1, wins).assign(bot="b", below="a"), ["a", "b"], [100, 400])
    r = t.iloc[0]
    assert r["win"] == pytest.approx(0.75)
    # the rate with the weak prior of one deal at each bound, on the Elo scale
    shrunk = (0.75 * 400 + 1) / 402
    assert r["elo"] == pytest.approx(400 * math.log10(shrunk / (1 - shrunk)))
    assert r["doublings"] == 2 and r["elo_per_doubling"] == pytest.approx(r["elo"] / 2)
    assert r["elo_lo"] < r["elo"] < r["elo_hi"]
    assert r["cum_elo"] == pytest.approx(r["elo"])


def test_a_clean_sweep_has_a_finite_elo_gain() -> None:
    t = sk.duel_table(_duels(1, np.ones(100)).assign(bot="b", below="a"), ["a", "b"])
    assert math.isfinite(t.iloc[0]["elo"]) and t.iloc[0]["elo"] > 400
    assert math.isnan(t.iloc[0]["elo_per_doubling"])  # no budgets: no doublings


def test_the_diversity_check_says_whether_the_method_matters() -> None:
    rng = np.random.default_rng(8)
    a = _deal_outcomes(rng, 0.57, 3000)
    near = a.copy()
    far = _deal_outcomes(rng, 0.67, 3000)
    deals = pd.concat([pd.DataFrame({"method": m, "deal": np.arange(3000),
                                     "first_player_win": v})
                       for m, v in (("temperature", a), ("epsilon", near), ("none", far))])
    t = sk.diversity_table(deals).set_index("method")
    assert t.loc["temperature", "verdict"] == ""
    assert t.loc["epsilon", "verdict_kind"] == "equivalent"
    assert t.loc["none", "verdict_kind"] == "differs"
    assert "Holm over 2" in t.loc["none", "verdict"]


def test_budgets_are_read_from_specs() -> None:
    assert sk.budget_of("greedy") is None
    assert sk.budget_of("mcts(eval=learned, iterations=400)") == 400
    assert sk.budget_of("mcts(eval=learned)") == 100
    assert sk.budget_of("mcts(iterations=50, time_ms=20)") == 20


# --- a trace played ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_trace():
    return skill_trace("edition2", levels=(2, 4), deals=4, seed=5, diversity="epsilon")


def test_a_tiny_trace_runs_and_produces_every_column(tiny_trace, tmp_path) -> None:
    t = tiny_trace
    assert t.levels[0] == "greedy" and len(t.levels) == 3
    assert t.budgets == [None, 2.0, 4.0]
    assert list(t.levels_table["level"]) == [0, 1, 2]
    want = {"level", "bot", "deals", "games", "seconds", "games_per_s",
            *(c for m in sk.LEVEL_METRICS for c in (m, f"{m}_lo", f"{m}_hi"))}
    assert want <= set(t.levels_table.columns)
    assert (t.levels_table["deals"] == 4).all()
    assert (t.levels_table["games_per_s"] > 0).all()
    assert list(t.duels_table["level"]) == [1, 2]
    assert not t.duels_table[["win", "elo", "cum_elo"]].isna().any().any()
    assert t.duels_table["doublings"].iloc[1] == 1
    assert (t.duel_deals.groupby("level").size() == 4).all()
    assert t.verdict is not None and t.verdict.kind in (sk.CONVERGED, sk.MOVING, sk.UNDECIDED)
    # the strongest level again with the other methods, on the same deals
    assert set(t.diversity["method"]) >= {"epsilon", "none"}
    folder = write_trace(t, tmp_path / "trace", "patchsim skill edition2")
    names = {p.name for p in folder.iterdir()}
    assert {"levels.csv", "levels.parquet", "duels.csv", "duels.parquet", "trace.json",
            "level_deals.parquet", "duel_deals.parquet", "diversity.csv", "skill.png",
            "skill.html", "skill.md"} <= names
    figures = json.loads((folder / "trace.json").read_text())
    assert [r["bot"] for r in figures["levels"]] == t.levels
    assert figures["verdict"] == t.verdict.text()
    # how well each level packs, measured (the games record the holes and the moves)
    for r in figures["levels"]:
        for m in ("mean_score", "bonus_rate", "holes", "opens_with_passes"):
            assert len(r[m]) == 3 and r[m][0] is not None, (r["bot"], m)
    assert not t.levels_table[["holes", "opens_with_passes"]].isna().any().any()
    md = (folder / "skill.md").read_text()
    assert "## Headline" in md and t.verdict.text() in md and "(skill.png)" in md
    assert "holes at the end" in md and "opens with 6+ passes" in md
    with pytest.raises(SkillError, match="already exists"):
        write_trace(t, folder)


def test_the_trace_plays_common_deals_for_every_part(tiny_trace) -> None:
    g = tiny_trace.games
    seeds = g.groupby("part")["deal_seed"].apply(lambda s: tuple(sorted(set(s))))
    assert seeds.nunique() == 1
    assert g["game_id"].is_unique


def test_the_same_seed_gives_the_same_trace(tiny_trace) -> None:
    again = skill_trace("edition2", levels=(2, 4), deals=4, seed=5, diversity="epsilon",
                        compare=False)
    cols = [c for c in tiny_trace.levels_table.columns if c not in ("seconds", "games_per_s")]
    pd.testing.assert_frame_equal(tiny_trace.levels_table[cols], again.levels_table[cols])
    pd.testing.assert_frame_equal(tiny_trace.duels_table, again.duels_table)


@pytest.mark.parametrize("kw,match", [
    ({"levels": (4, 2)}, "levels: budgets must increase"),
    ({"levels": ()}, "levels: give at least one budget"),
    ({"levels": (0,)}, "levels: budgets must be numbers above 0"),
    ({"levels": (2.5,)}, "levels: iterations are whole numbers"),
    ({"deals": 1}, "deals: at least 2"),
    ({"floor": ("nonsense",)}, r"bots\[0\]"),
    ({"search": "mcts(bogus=1)"}, "search: "),
    ({"diversity": "shuffle"}, "diversity: 'shuffle' is not one of"),
    ({"metric": "first_player_edge"}, "metric: 'first_player_edge' is not a trace metric"),
    ({"margin": 0.6}, "margin: "),
])
def test_bad_requests_say_which_parameter(kw, match) -> None:
    with pytest.raises(SkillError, match=match):
        skill_trace("edition2", **{"levels": (2,), "deals": 2, **kw})


def test_level_specs_carry_the_budget_and_the_diversity() -> None:
    assert level_spec("mcts(eval=learned, iterations=7)", 50, "epsilon") == \
        "mcts(epsilon=0.05, eval=learned, iterations=50)"
    assert level_spec("mcts(eval=learned)", 20, "none", timed=True) == \
        "mcts(eval=learned, iterations=1000000, time_ms=20)"
    # the method decides the diversity, whatever the search spec carries: "none" is the
    # deterministic search and "epsilon" epsilon alone (a search given with sampled
    # openings, as the main job's line-up is, once made every method sample them)
    sampled = "mcts(eval=learned, sample_plies=8, temperature=1)"
    assert level_spec(sampled, 400, "none") == "mcts(eval=learned, iterations=400)"
    assert level_spec(sampled, 400, "epsilon") == \
        "mcts(epsilon=0.05, eval=learned, iterations=400)"
    assert level_spec("mcts(eval=learned, epsilon=0.2)", 9, "temperature") == \
        level_spec("mcts(eval=learned)", 9, "temperature")


def test_the_default_search_carries_no_diversity_knobs() -> None:
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.experiments.skill import default_search
    from patchsim.play.config import default_bots

    rs = load_ruleset("edition2")
    assert "sample_plies" in default_bots([rs])[-1]  # the main job samples its openings
    assert default_search(rs) == "mcts(eval=learned)"


# --- command, experiment file, headline ----------------------------------------------------------
def test_the_command_writes_a_trace_folder(tmp_path) -> None:
    out = tmp_path / "t"
    r = CliRunner().invoke(app, ["skill", "edition2", "--levels", "2,3", "--deals", "2",
                                 "--jobs", "1", "--no-compare", "--diversity", "epsilon",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "first seat wins" in r.output and "skill trace: " in r.output
    # two deals decide nothing, and the command says so plainly
    assert ("is NOT decided at 2 deals a level (--until-decided, or more --deals would go "
            "on)") in r.output
    assert (out / "skill.md").exists() and (out / "levels.csv").exists()
    bad = CliRunner().invoke(app, ["skill", "edition2", "--levels", "3,2", "--out",
                                   str(tmp_path / "u")])
    assert bad.exit_code == 2 and "--levels: budgets must increase" in bad.output
    assert not (tmp_path / "u").exists()
    again = CliRunner().invoke(app, ["skill", "edition2", "--out", str(out)])
    assert again.exit_code == 2 and "already exists" in again.output


def _experiment(tmp_path, body: str):
    p = tmp_path / "exp.yaml"
    p.write_text("base: edition2\n" + body)
    return p


def test_an_experiment_file_declares_a_trace(tmp_path) -> None:
    p = _experiment(tmp_path, "skill:\n  levels: [2, 3]\n  deals: 2\n  bots: [greedy]\n"
                              "  search: mcts(eval=learned)\n  diversity: epsilon\n"
                              "  compare: false\n")
    exp = load_experiment(p)
    assert exp.trace == {"levels": [2, 3], "deals": 2, "bots": ["greedy"],
                         "search": "mcts(eval=learned)", "diversity": "epsilon",
                         "compare": False}
    assert exp.skill == []  # not the list form (each bot in self-play in a sweep)
    out = tmp_path / "t"
    r = CliRunner().invoke(app, ["skill", str(p), "--jobs", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads((out / "trace.json").read_text())["deals"] == 2


def test_a_bad_skill_section_names_the_key(tmp_path) -> None:
    p = _experiment(tmp_path, "skill:\n  levels: [4, 2]\n  deals: 1\n  colour: red\n"
                              "  bots: [nonsense]\n  diversity: maybe\n")
    with pytest.raises(ExperimentError) as e:
        load_experiment(p)
    text = str(e.value)
    for key in ("skill.levels", "skill.deals", "skill.colour", "skill.bots[0]",
                "skill.diversity"):
        assert key in text, key


def test_the_list_form_of_skill_still_means_levels_in_self_play(tmp_path) -> None:
    exp = load_experiment(_experiment(tmp_path, "skill: [greedy, income]\n"))
    assert exp.skill == ["greedy", "income"] and exp.trace is None


def test_a_run_holds_a_trace_and_its_headline() -> None:
    sim = patchsim.simulate("edition2", ["mcts(eval=learned, iterations=3, epsilon=0.05)",
                                         "greedy"], games=8, seed=2)
    (t,) = sk.run_traces(sim.games, sim.events)
    # weakest first: by the cross games, whatever the run's order
    cross = sim.games[sim.games["bot0"] != sim.games["bot1"]]
    wins = cross["winner_bot"].astype(str).value_counts()
    assert wins.get(t.levels[1], 0) >= wins.get(t.levels[0], 0)
    assert len(t.levels) == 2 and len(t.duels_table) == 1
    line = headline_line(t)
    assert line.startswith("**edition2**: the first seat wins ")
    assert "under the strongest level" in line and "Skill trace (2 levels): " in line
    s = headline_section([t])
    assert s.title == "Headline" and len(s.blocks[0].items) == 1


def _lopsided_run() -> pd.DataFrame:
    """Two levels in self-play and their cross pairing, which the stronger wins throughout."""
    rows = []
    for k in range(40):
        rows += [_game(k, 0, "weak", winner=k % 2), _game(k, 1, "weak", winner=k % 2)]
        rows += [_game(k, 0, "strong", winner=(k // 2) % 2),
                 _game(k, 1, "strong", winner=1 - (k // 2) % 2)]
        for order in (0, 1):  # the strong bot wins from either seat
            g = _game(k, order, "strong", other="weak", winner=order)
            g["winner_bot"] = "strong"
            g["pairing"] = "strong vs weak"
            rows.append(g)
    for i, r in enumerate(rows):
        if r["bot0"] == r["bot1"]:
            r["pairing"] = f"{r['bot0']} vs {r['bot0']}"
        r["game_id"] = i
    return pd.DataFrame(rows)


def test_a_pairing_the_skill_gap_decides_is_labelled_as_saying_nothing_about_seats() -> None:
    games = _lopsided_run()
    t = sk.lopsided_pairings(games)
    assert list(t["pairing"]) == ["strong vs weak"] and t.loc[0, "stronger"] == "strong"
    assert t.loc[0, "win"] == 1.0 and t.loc[0, "lo"] > SKILL_GAP
    assert "the skill gap decides these games" in t.loc[0, "reason"]
    sections = report_sections(games, None)
    assert [s.title for s in sections] == ["Headline", "Skill trace: r"]
    head = sections[0]
    text = " ".join(b if isinstance(b, str) else " ".join(getattr(b, "items", []))
                    for b in head.blocks)
    assert "tell nothing about the seats" in text and "`strong vs weak`" in text
    assert "under the strongest level (`strong`" in text  # weakest first by the cross games
    assert sections[1].blocks[-1].path == "figures/skill-r.png"
    # the report renders them with the one renderer
    doc = Document("report", sections)
    assert "## Headline" in to_markdown(doc) and "Skill trace: r" in to_html(doc)


def test_a_run_without_self_play_has_no_skill_sections() -> None:
    games = _lopsided_run()
    assert report_sections(games[games["bot0"] != games["bot1"]], None) == []


def test_a_run_whose_levels_never_met_shows_no_made_up_strength() -> None:
    # self-play only: no step rows of zero deals, a sentence instead, and a figure whose
    # levels stand in ladder order (not all at a cumulative Elo of zero)
    games = _lopsided_run()
    games = games[(games["bot0"] == games["bot1"]).to_numpy()]
    (t,) = sk.run_traces(games, None)
    assert len(t.levels) == 2 and t.duels_table.empty
    sections = report_sections(games, None)
    trace = sections[1]
    tables = [b for b in trace.blocks if hasattr(b, "columns")]
    assert len(tables) == 1  # the levels, no table of steps
    text = " ".join(b for b in trace.blocks if isinstance(b, str))
    assert "played no games against each other" in text
    fig = skill_figure(t.levels_table, t.duels_table, t.metric, t.margin)
    ax = fig.axes[0]
    assert len(fig.axes) == 1  # no cost panel: nothing measured it
    assert [x.get_text() for x in ax.get_xticklabels()] == t.levels
    assert "not measured" in ax.get_xlabel()
    played = sk.run_traces(_lopsided_run(), None)[0]
    fig = skill_figure(played.levels_table, played.duels_table, played.metric, played.margin)
    assert "cumulative Elo" in fig.axes[0].get_xlabel()


class _Comparison:
    """The two things rule_change_lines reads from a Comparison."""

    def __init__(self, kinds: dict[str, tuple[str, float]]) -> None:
        self.label_a, self.label_b = "r", "r2"
        self.kinds = kinds

    def metric(self, name: str, group: str | None = None) -> pd.Series | None:
        assert name == "first-seat win rate"
        k = self.kinds.get(str(group))
        return None if k is None else pd.Series({"verdict_kind": k[0], "diff": k[1]})


def test_a_runs_change_of_rules_is_stated_per_level_from_its_own_verdicts() -> None:
    games = _lopsided_run()
    games = games[(games["bot0"] == games["bot1"]).to_numpy()]
    traces = sk.run_traces(games, None)
    (line,) = rule_change_lines(traces, [_Comparison({"weak vs weak": ("equivalent", 0.0),
                                                      "strong vs strong": ("equivalent", 0.01)})])
    assert line.startswith("**r2** against r") and "holds at every level" in line
    (line,) = rule_change_lines(traces, [_Comparison({"weak vs weak": ("equivalent", 0.0),
                                                      "strong vs strong": ("undecided", 0.02)})])
    assert "not decided at every level (open at strong)" in line
    assert "decided: weak: equivalent" in line
    # a comparison against another reference, or one level only: nothing to say
    assert rule_change_lines(traces, [_Comparison({"weak vs weak": ("equivalent", 0.0)})]) == []
    text = " ".join(" ".join(b.items) for b in headline_section(
        traces, None, [_Comparison({"weak vs weak": ("differs", 0.05),
                                    "strong vs strong": ("differs", 0.04)})]).blocks
        if hasattr(b, "items"))
    assert "holds at every level: the metric moves up beyond the margin" in text


# --- a change of rules at every level ------------------------------------------------------------
def _two_rulesets(shift: list[float], n: int = 3000, seed: int = 9) -> pd.DataFrame:
    """Per-deal first-seat values of a base and a variant at each level: the variant moved
    by ``shift[level]``."""
    rng = np.random.default_rng(seed)
    parts = []
    for level, s in enumerate(shift):
        base = _deal_outcomes(rng, 0.55, n)
        moved = np.clip(base + rng.choice([0.0, 0.5], n, p=[1 - 2 * s, 2 * s])
                        if s > 0 else base, 0, 1)
        for name, v in (("base", base), ("variant", moved)):
            parts.append(pd.DataFrame({"ruleset": name, "level": level, "bot": f"L{level}",
                                       "deal": np.arange(n), "first_player_win": v}))
    return pd.concat(parts, ignore_index=True)


def test_a_change_of_rules_that_holds_at_every_level() -> None:
    t = skill_rules.change_by_level(_two_rulesets([0.0, 0.0]), "base")
    assert list(t["level"]) == [0, 1] and set(t["verdict_kind"]) == {"equivalent"}
    assert skill_rules.holds_at_every_level(t) == {
        "variant": "holds at every level: no change beyond the margin"}


def test_a_change_of_rules_that_changes_with_the_level() -> None:
    t = skill_rules.change_by_level(_two_rulesets([0.0, 0.1]), "base")
    assert list(t["verdict_kind"]) == ["equivalent", "differs"]
    assert "Holm over 2" in t.loc[1, "verdict"]
    assert skill_rules.holds_at_every_level(t)["variant"].startswith("changes with the level")


def test_a_change_of_rules_not_decided_at_a_level_says_which() -> None:
    t = skill_rules.change_by_level(_two_rulesets([0.1, 0.1], n=40), "base")
    assert "undecided" in set(t["verdict_kind"])
    assert skill_rules.holds_at_every_level(t)["variant"].startswith("not decided at every level")
    # the open levels by name (a label function shortens them)
    assert "(open at L" in skill_rules.holds_at_every_level(t)["variant"]
    assert "(open at l" in skill_rules.holds_at_every_level(t, str.lower)["variant"]


def test_an_experiments_variants_get_a_trace_each_and_the_change_at_every_level(
        tmp_path) -> None:
    p = _experiment(tmp_path, "variants:\n  - {name: rich, set: {starting_buttons: 7}}\n"
                              "skill:\n  levels: [2]\n  deals: 3\n  compare: false\n")
    out = tmp_path / "t"
    r = CliRunner().invoke(app, ["skill", str(p), "--jobs", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "rich against base: " in r.output
    # no model for the variant: both ladders use the rollout search, sampled openings
    levels = pd.read_csv(out / "rich" / "levels.csv")
    assert levels["bot"].iloc[-1] == "mcts(iterations=2, sample_plies=8, temperature=1)"
    assert (out / "base" / "levels.csv").exists()
    changes = pd.read_csv(out / "changes.csv")
    assert list(changes["level"]) == [0, 1] and (changes["deals"] == 3).all()
    md = (out / "skill.md").read_text()
    assert "## The change of rules at every level" in md
    assert "## Skill trace: base" in md and "(skill-base.png)" in md
    assert (out / "skill-base.png").exists()


@pytest.mark.slow  # two rulesets' traces through the command
def test_a_run_file_gives_its_rulesets_and_seed(tmp_path) -> None:
    p = tmp_path / "run.yaml"
    p.write_text("rulesets: [edition1, edition2]\nbots: [greedy]\nseed: 4\n")
    out = tmp_path / "t"
    r = CliRunner().invoke(app, ["skill", str(p), "--levels", "2", "--deals", "2",
                                 "--no-compare", "--diversity", "epsilon", "--jobs", "1",
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "edition2 against edition1: " in r.output
    assert json.loads((out / "edition1" / "trace.json").read_text())["seed"] == 4


@pytest.mark.slow  # games to a time budget, through run folders
def test_a_timed_trace_gives_ms_per_move_and_says_so(tmp_path) -> None:
    out = tmp_path / "t"
    r = CliRunner().invoke(app, ["skill", "edition2", "--timed", "--levels", "1,2",
                                 "--deals", "2", "--no-compare", "--diversity", "epsilon",
                                 "--jobs", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "the results depend on this machine" in r.output
    figures = json.loads((out / "trace.json").read_text())
    assert figures["timed"] is True
    assert [lv["budget"] for lv in figures["levels"]] == [None, 1.0, 2.0]
    assert "time_ms=2" in figures["levels"][-1]["bot"]


@pytest.mark.slow  # two workers
def test_the_trace_does_not_depend_on_the_number_of_workers(tiny_trace) -> None:
    two = skill_trace("edition2", levels=(2, 4), deals=4, seed=5, diversity="epsilon",
                      compare=False, jobs=2)
    pd.testing.assert_frame_equal(tiny_trace.level_deals, two.level_deals)
    pd.testing.assert_frame_equal(tiny_trace.duel_deals, two.duel_deals)
