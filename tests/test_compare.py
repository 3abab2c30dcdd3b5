"""patchsim.analysis.compare: paired comparisons of rulesets on shared deals, and planning."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from runs import shared_run
from scipy import stats as sps
from typer.testing import CliRunner

from patchsim.analysis import estimators as E
from patchsim.analysis.compare import (
    CompareError,
    compare,
    compare_rulesets,
    format_plan,
    plan,
    split_rulesets,
)
from patchsim.analysis.stats import first_player_advantage, leather_games
from patchsim.cli import analysis as cli_analysis
from patchsim.play.runfolder import load_events, load_games, table_path

GAMES = 60


def _experiment(factory: pytest.TempPathFactory) -> str:
    path = factory.getbasetemp() / "two-editions.yaml"
    path.write_text("{name: two, rulesets: [edition1, edition2], games: 60, seed: 3}\n")
    return str(path)


@pytest.fixture(scope="session")
def two_rulesets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """edition1 and edition2 on the same deals, one run."""
    return shared_run(tmp_path_factory, "two-editions", _experiment(tmp_path_factory), GAMES,
                      ["greedy", "income"], seed=3)


@pytest.fixture(scope="session")
def separate_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same two rulesets as two runs with the same seed and bots."""
    return (shared_run(tmp_path_factory, "ed1", "edition1", GAMES, ["greedy", "income"], seed=3),
            shared_run(tmp_path_factory, "ed2", "edition2", GAMES, ["greedy", "income"], seed=3))


def test_split_rulesets_keeps_run_order(two_rulesets: Path):
    parts = split_rulesets(load_games(two_rulesets), load_events(two_rulesets))
    assert [p[0] for p in parts] == ["edition1", "edition2"]
    for _label, g, e in parts:
        assert len(g) == 3 * GAMES and set(e["game_id"]) <= set(g["game_id"])


@pytest.mark.slow
def test_compare_two_rulesets_of_one_run(two_rulesets: Path):
    g, e = load_games(two_rulesets), load_events(two_rulesets)
    c = compare_rulesets(g, e)
    assert (c.label_a, c.label_b) == ("edition1", "edition2")
    assert c.shared_deals == GAMES // 2
    m = c.metrics
    assert {"first-seat win rate", "first leather useful", "bonus claimed",
            "mean score"} <= set(m["metric"])
    assert "all pairings" in set(m["group"])
    # the first bot's win rate only exists for pairings of two different bots
    fb = m[m["metric"] == "first bot win rate"]
    assert set(fb["group"]) == {"greedy vs income", "all pairings"}
    assert (m["p_holm"] >= m["p"] - 1e-12).all()
    assert m.loc[m["kind"] != "rate", "tost_p"].isna().all()
    # the paired first-seat difference is the difference of the per-ruleset rates
    fpa = first_player_advantage(g)
    for pairing, grp in fpa.groupby("pairing"):
        row = m[(m["metric"] == "first-seat win rate") & (m["group"] == pairing)].iloc[0]
        rates = grp.set_index("ruleset")["rate"]
        assert row["diff"] == pytest.approx(rates["edition2"] - rates["edition1"])
    # common deals: scores are strongly correlated, so the paired interval is narrower
    for metric in ("mean score", "plies"):
        r = m[(m["metric"] == metric) & (m["group"] == "all pairings")].iloc[0]
        assert r["corr"] > 0
        assert r["hi"] - r["lo"] < r["hi_unpaired"] - r["lo_unpaired"]
    text = c.verdict()
    assert "edition1" in text and "edition2" in text and "first leather patch" in text


@pytest.mark.slow
def test_flips_mcnemar_counts_deals(two_rulesets: Path):
    g, e = load_games(two_rulesets), load_events(two_rulesets)
    c = compare_rulesets(g, e)
    for r in c.flips.itertuples():
        assert r.flips == r.seat0_only_a + r.seat0_only_b
        n = r.deals_toward_a + r.deals_toward_b
        expected = 1.0 if n == 0 else sps.binomtest(r.deals_toward_a, n, 0.5).pvalue
        assert r.p_value == pytest.approx(expected)


@pytest.mark.slow
def test_two_runs_on_the_same_deals_give_the_same_comparison(
        two_rulesets: Path, separate_runs: tuple[Path, Path]):
    a, b = separate_runs
    c1 = compare(load_games(a), load_games(b), load_events(a), load_events(b))
    c2 = compare_rulesets(load_games(two_rulesets), load_events(two_rulesets))
    cols = ["group", "metric", "deals", "a", "b", "diff", "lo", "hi", "p"]
    pd.testing.assert_frame_equal(c1.metrics[cols], c2.metrics[cols])
    assert c1.verdict() == c2.verdict()


def test_different_seeds_share_no_deals(separate_runs: tuple[Path, Path],
                                        tmp_path_factory: pytest.TempPathFactory):
    other = shared_run(tmp_path_factory, "ed2-seed4", "edition2", GAMES, ["greedy", "income"],
                 seed=4)
    with pytest.raises(CompareError, match="different master seeds"):
        compare(load_games(separate_runs[0]), load_games(other))
    with pytest.raises(CompareError, match="only one ruleset"):
        compare_rulesets(load_games(other))


def _synthetic(deals: int, seed: int = 0, flips: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Self-play games A and B on the same deals: the seat-0 winner of each deal is random and
    both games of a deal agree (as with deterministic bots). Under B the winner flips in
    ``flips`` deals won by seat 0 under A and as many won by seat 1: the change of every
    rate is exactly zero, with spread."""
    rng = np.random.default_rng(seed)
    wa = rng.integers(2, size=deals)
    wb = wa.copy()
    for w in (0, 1):
        wb[np.flatnonzero(wa == w)[:flips]] = 1 - w

    def games(winners: np.ndarray) -> pd.DataFrame:
        rows = []
        for deal, w in enumerate(winners):
            for order in (0, 1):
                rows.append({"ruleset": "r", "ruleset_hash": "h", "game_id": 2 * deal + order,
                             "deal": deal, "deal_seed": deal, "pairing": "X vs X",
                             "order": order, "bot0": "X", "bot1": "X", "winner": int(w),
                             "winner_bot": "X", "tie_break": False, "score0": 10 + int(w),
                             "score1": 11 - int(w), "bonus0": False, "bonus1": False,
                             "plies": 40})
        return pd.DataFrame(rows)

    return games(wa), games(wb)


def test_compare_is_the_estimator_layers_paired_difference():
    a, b = _synthetic(40, seed=2, flips=6)
    b.loc[b["deal"] < 12, "winner"] = 0  # B favours seat 0 in a few more deals
    c = compare(a, b)
    row = c.metric("first-seat win rate")
    ra = E.deal_values((a["winner"] == 0).to_numpy(float), a["deal"])
    rb = E.deal_values((b["winner"] == 0).to_numpy(float), b["deal"])
    d = E.paired_difference(ra, rb, bounds=E.RATE_DIFF_BOUNDS)
    assert (row["diff"], row["lo"], row["hi"], row["deals"]) == pytest.approx(
        (d.value, d.lo, d.hi, d.deals))
    assert row["p"] == pytest.approx(E.difference_pvalue(d))
    assert row["tost_p"] == pytest.approx(E.tost_pvalue(d, 0.02))
    # the primary metric's family: this pairing's row alone (one pairing, one comparison)
    v = E.verdicts([d], 0.02, 0.0, 0.05, family="holm")[0]
    assert row["p_holm"] == pytest.approx(v.p_difference)
    assert row["p_equivalent"] == pytest.approx(E.equivalence_pvalue(d, 0.02))
    assert row["verdict"] == v.text(100.0, " points") and row["verdict_kind"] == v.kind
    assert bool(row["different"]) == (v.kind == "differs")
    # the words of the verdict are the estimator layer's
    assert v.text(100.0, " points") in c.verdict()
    # deterministic self-play on both sides: each deal's game counts once in the flips
    assert any("one distinct game per deal" in n for n in c.notes)
    flips = c.flips.iloc[0]
    changed = int(((b["winner"] != a["winner"]) & (a["order"] == 0)).sum())
    assert flips["games"] == 40 and flips["flips"] == changed
    assert c.fpa["games"].tolist() == [40, 40]


def test_other_metrics_get_a_verdict_without_a_margin():
    a, b = _synthetic(40, seed=3)
    b["plies"] = 40 + (b["deal"] % 2)  # every other deal's games are a move longer under B
    m = compare(a, b).metric("plies")
    assert m["diff"] == pytest.approx(0.5)
    assert m["verdict"].startswith("differs by +0.50 moves [")
    assert np.isnan(m["tost_p"])


@pytest.mark.slow
def test_equivalence_needs_the_data():
    # rates that change in some deals and not on average: 30 deals do not show "the same
    # within 2 points"; 3000 do
    small, big = _synthetic(30, flips=2), _synthetic(3000, flips=150)
    c = compare(*small)
    assert c.label_a != c.label_b
    rates = c.metrics[c.metrics["kind"] == "rate"]
    assert (rates["diff"] == 0).all() and not c.metrics["different"].any()
    row = c.metric("first-seat win rate")
    assert not row["equivalent"] and row["verdict"].startswith("undecided: +0.0 points")
    assert "more deals would likely decide it" in c.verdict()
    c = compare(*big)
    row = c.metric("first-seat win rate")
    assert row["equivalent"] and row["verdict"].startswith("equivalent within +-2.0 points")
    assert "the change is equivalent within +-2.0 points" in c.verdict()


def test_plan_hand_computed():
    # one ruleset, self-play: 10 deals, seat 0 wins both games of 4, split 2, loses 4
    rows = []
    outcomes = [(0, 0)] * 4 + [(0, 1)] * 2 + [(1, 1)] * 4
    for deal, pair in enumerate(outcomes):
        for order, w in enumerate(pair):
            rows.append({"ruleset": "r", "ruleset_hash": "h", "pairing": "X vs X",
                         "deal": deal, "order": order, "winner": w})
    t = plan(pd.DataFrame(rows), target_halfwidth=0.05, difference=0.2, margin=0.1).iloc[0]
    x = np.array([1.0] * 4 + [0.5] * 2 + [0.0] * 4)
    sd = x.std(ddof=1)
    z = sps.norm.ppf
    assert t["deals_precision"] == math.ceil((z(0.975) * sd / 0.05) ** 2)
    # "differs, beyond +-10 points" for a true 20-point difference with 80% power: planned on
    # its 10-point distance from the margin (tests/test_planning.py checks it by simulation);
    # equivalence within +-10 points, the 95% interval inside the margin as the verdicts
    # decide it (2.5% per one-sided test)
    assert abs(t["deals_difference"] - ((z(0.975) + z(0.8)) * sd / 0.1) ** 2) <= 1
    assert t["deals_equivalence"] == math.ceil(((z(0.975) + z(0.9)) * sd / 0.1) ** 2)
    text = format_plan(plan(pd.DataFrame(rows)))
    assert "X vs X" in text and '"equivalent within +-2 points"' in text
    # the unpaired figure is shown only beside the paired one, for comparison
    assert "without pairing (the two games of a deal on deals of their own)" in text


def test_plan_for_a_change_prefers_shared_deals(two_rulesets: Path):
    t = plan(load_games(two_rulesets))
    change = t[t["question"] == "change in first-seat win rate"]
    assert len(change) == 3 and (change["ruleset"] == "edition2 - edition1").all()
    assert (change["games_per_deal"] == 4).all()
    assert (change["deals_equivalence"] > 0).all() and (change["deals_difference"] > 0).all()


# --- command-line functions ---------------------------------------------------------------------
def _app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("report")(cli_analysis.report)
    app.command("compare")(cli_analysis.compare)
    app.command("plan")(cli_analysis.plan)
    return app


def test_cli_plan_and_errors(two_rulesets: Path, tmp_path: Path):
    runner = CliRunner()
    res = runner.invoke(_app(), ["plan", str(two_rulesets), "--halfwidth", "0.02"])
    assert res.exit_code == 0, res.output
    assert '"differs, beyond +-2 points" for a true change of 4 points' in res.output
    for args in (["plan", str(tmp_path / "nothing")], ["report", str(tmp_path)],
                 ["plan", str(two_rulesets), "--halfwidth", "2"],
                 ["plan", str(two_rulesets), "--equivalence", "0.03"],
                 ["compare", str(two_rulesets), "edition2"],
                 ["compare", "edition2", "edition2", "--games", "2"],
                 ["compare", "edition1", "no-such-ruleset", "--games", "2"]):
        res = runner.invoke(_app(), args)
        assert res.exit_code == 2, (args, res.output)
        assert "error:" in res.output and "Traceback" not in res.output


@pytest.mark.slow
def test_cli_compare_two_rulesets(tmp_path: Path):
    out = tmp_path / "cmp"
    res = CliRunner().invoke(_app(), ["compare", "edition1", "edition2", "--games", "20",
                                      "--bots", "greedy", "--out", str(out), "--jobs", "1"])
    assert res.exit_code == 0, res.output
    assert "first leather patch" in res.output
    assert (out / "report.html").exists() and (out / "experiment.yaml").exists()
    assert "Comparison: edition2 against edition1" in (out / "report.md").read_text()


@pytest.mark.slow
def test_cli_compare_two_run_folders(separate_runs: tuple[Path, Path]):
    a, b = separate_runs
    res = CliRunner().invoke(_app(), ["compare", str(a), str(b)])
    assert res.exit_code == 0, res.output
    assert "under edition2" in res.output
    assert "Comparison: edition2 against edition1" in (b / "report.md").read_text()


@pytest.mark.slow
def test_joint_holm_over_several_comparisons_is_at_least_each_alone() -> None:
    """With several variants against one reference, p-values are corrected together: each
    adjusted p is at least what the comparison alone gave, and never below the raw p."""
    import numpy as np
    import pandas as pd

    from patchsim.analysis.compare import Comparison, correct_jointly

    def fake(ps: list[float]) -> Comparison:
        # changes whose t-test over 100 deals gives these p-values (the verdicts recompute
        # them from the estimate)
        diff = [0.005 * float(E.t_ppf(1 - p / 2, 99)) for p in ps]
        m = pd.DataFrame({"p": ps, "tost_p": ps, "deals": 100, "kind": "rate", "diff": diff,
                          "se": 0.005, "lo": 0.0, "hi": 0.02, "sd": 0.05})
        m["p_holm"] = E.holm(m["p"])
        c = Comparison.__new__(Comparison)
        c.metrics = m
        return c

    a, b = fake([0.01, 0.04, 0.3]), fake([0.02, 0.5, 0.9])
    alone = [c.metrics["p_holm"].to_numpy().copy() for c in (a, b)]
    correct_jointly([a, b])
    for c, before in zip((a, b), alone, strict=True):
        assert (c.metrics["p_holm"].to_numpy() >= before - 1e-12).all()
        assert (c.metrics["p_holm"] >= c.metrics["p"] - 1e-12).all()
    # six tests in one family: the smallest p (0.01) is multiplied by 6
    assert np.isclose(a.metrics["p_holm"].iloc[0], 0.06)
    # the verdicts follow the joint adjustment: 0.01 alone would differ, 0.06 does not
    assert a.metrics["verdict_kind"].iloc[0] != "differs"
    assert not a.metrics["different"].any() and b.metrics["verdict_kind"].iloc[0] != "differs"


def test_cli_compare_a_run_with_itself_is_an_error(tmp_path) -> None:
    from typer.testing import CliRunner

    from patchsim.cli.main import app

    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text("{}")
    (run_dir / "games.parquet").write_bytes(b"")
    result = CliRunner().invoke(app, ["compare", str(run_dir), str(run_dir)])
    assert result.exit_code == 2
    assert "same run folder" in result.output


@pytest.mark.slow
def test_comparisons_from_the_events_summary_are_the_in_memory_ones(
        two_rulesets: Path, separate_runs: tuple[Path, Path]):
    """Compact games and streamed event summaries (what the report loads) give exactly the
    comparison of the full in-memory tables."""
    from patchsim.analysis.compare import game_metrics
    from patchsim.analysis.tables import read_games, scan_events

    def both(run: Path) -> tuple[tuple, tuple]:
        games = read_games(table_path(run, "games"))
        events = scan_events(table_path(run, "events"), games, batch_rows=101)
        return (games, events), (load_games(run), load_events(run))

    (g, e), (g_ref, e_ref) = both(two_rulesets)
    new, ref = compare_rulesets(g, e), compare_rulesets(g_ref, e_ref)
    a, b = separate_runs
    (ga, ea), (ga_ref, ea_ref) = both(a)
    (gb, eb), (gb_ref, eb_ref) = both(b)
    pairs = [(new, ref), (compare(ga, gb, ea, eb), compare(ga_ref, gb_ref, ea_ref, eb_ref))]
    for c_new, c_ref in pairs:
        for name, t in c_ref.tables().items():
            pd.testing.assert_frame_equal(c_new.tables()[name].reset_index(drop=True),
                                          t.reset_index(drop=True), check_exact=True,
                                          check_dtype=False, check_categorical=False)
        assert c_new.verdict() == c_ref.verdict()
    # the per-game leather values against leather_games (itself checked in test_stats)
    lg = leather_games(g_ref, e_ref)
    m = game_metrics(g, e).set_index("game_id")
    first = lg[lg["rank"] == 1].set_index("game_id")["useful"].astype(float)
    share = lg.groupby("game_id")["useful"].mean()
    assert m["first leather useful"].equals(m.index.to_series().map(first).astype(float))
    assert m["leather useful (all)"].equals(m.index.to_series().map(share).astype(float))


def test_a_negligible_change_reads_as_one() -> None:
    """"the change differs by +0.6 ..., within +-2: negligible", never "is differs" nor a
    bare "differs" for a change inside the margin."""
    import pandas as pd

    from patchsim.analysis.compare import _change_words

    v = E.verdict(E.Estimate(0.006, 0.002, 0.002, 0.010, 30_000, 0.35), 0.02)
    row = pd.Series({"deals": 30_000, "kind": "rate", "verdict_kind": v.kind,
                     "verdict": v.text(), "p_holm": v.p_difference, "adjustment": "Holm"})
    assert v.negligible
    assert _change_words(row) == ("differs by +0.6 points [+0.2, +1.0], within +-2.0 points: "
                                  "negligible")


def test_a_differs_row_prints_the_p_value_that_decided_it() -> None:
    """'differs' on a rate is decided by the test of a change beyond the margin; the row
    printed the no-change p-value, and named the adjustment twice."""
    import pandas as pd

    from patchsim.analysis.compare import _change_words

    row = pd.Series({"deals": 4000, "kind": "rate", "diff": 0.05, "lo": 0.03, "hi": 0.07,
                     "verdict_kind": "differs", "p_holm": 1e-9, "p_beyond": 0.0012,
                     "verdict": "differs by +5.0 points [+3.0, +7.0], beyond +-2.0 points "
                                "(Holm over 3)", "adjustment": "Holm (primary)"})
    text = _change_words(row)
    assert "adjusted p = 0.001)" in text and text.count("Holm") == 1
