"""Restricted play (bots with forbid=<patch>) and the causal patch-price study."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import patchsim
from patchsim.analysis import estimators as E
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.cli.main import app
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.experiments.prices import (
    PricesError,
    PriceStudy,
    fit_crossing,
    patch_summary,
    price_reading,
    price_table,
    restricted_spec,
    widen_costs,
)
from patchsim.play.match import play_game

E2 = load_ruleset("edition2")
# columns that name the bots (or the run they were played in) rather than the play
BOT_COLUMNS = ["run_id", "pairing", "bot0", "bot1", "winner_bot"]


def _buys(sim, spec: str, patch: str) -> int:
    ev = sim.events
    return int(((ev["event"] == "buy") & (ev["patch"] == patch) & (ev["bot"] == spec)).sum())


@pytest.mark.parametrize("spec", ["greedy(forbid=P19)", "income(epsilon=0.3, forbid=P19)",
                                  "mcts(forbid=P19, iterations=30)"])
def test_a_forbidden_patch_is_never_bought(spec: str) -> None:
    base = spec.replace("forbid=P19, ", "").replace(", forbid=P19", "").replace("(forbid=P19)",
                                                                                 "")
    games = 8 if spec.startswith("mcts") else 200
    sim = patchsim.simulate("edition2", [spec, base], games=games, seed=3, pairings="cross")
    assert _buys(sim, spec, "P19") == 0
    assert _buys(sim, base, "P19") > 0  # the opponent is not restricted: the test means something
    # and the restricted bot does buy other patches
    assert (sim.events[sim.events["bot"] == spec]["event"] == "buy").sum() > 0


def test_a_forbidden_patch_is_never_bought_in_the_python_driver() -> None:
    """play_game binds the bots itself; a bot object used move by move binds per game."""
    tables = compile_ruleset(E2)
    bot = make_bot("greedy(epsilon=0.2, forbid=P19)")
    p19 = tables.patch_index["P19"]
    for seed in range(30):
        r = play_game(tables, (bot, make_bot("greedy")), deal_circle(E2, seed), seed)
        buys = r.events[r.events[:, 0] == core.EV_BUY]
        assert not ((buys[:, 1] == 0) & (buys[:, 2] == p19)).any()
    game = patchsim.Game.new("edition2", seed=5)
    while not game.finished:
        move = bot.choose(game.copy(), game.legal_moves(), np.random.default_rng(game.ply))
        assert move.patch != "P19"  # the bot plays both seats here
        game.apply(move)


def test_forbidding_a_patch_nobody_buys_changes_nothing() -> None:
    """P19 at cost 99 is never affordable: restricted and unrestricted bots play the same
    games, random moves (epsilon) included, so the games tables are identical apart from
    the bot names."""
    dear = E2.with_overrides({"patch_changes": {"P19": {"cost": 99}}})
    # (restricted, unrestricted, a different spec of the unrestricted bot's very parameters)
    for spec, base, twin, games in (
            ("greedy(epsilon=0.1, forbid=P19)", "greedy(epsilon=0.1)",
             "greedy(epsilon=0.1, w_cost=1)", 200),
            ("mcts(forbid=P19, iterations=20)", "mcts(iterations=20)",
             "mcts(c=0.7, iterations=20)", 6)):
        a = patchsim.simulate([dear], [spec, base], games=games, seed=11, pairings="cross")
        b = patchsim.simulate([dear], [twin, base], games=games, seed=11, pairings="cross")
        assert (a.games["bot0"] == np.where(a.games["order"] == 0, spec, base)).all()
        pd.testing.assert_frame_equal(a.games.drop(columns=BOT_COLUMNS),
                                      b.games.drop(columns=BOT_COLUMNS))
        assert a.events.drop(columns=["run_id", "bot"]).equals(
            b.events.drop(columns=["run_id", "bot"]))


def test_bind_sets_the_index_per_ruleset_and_names_an_unknown_patch() -> None:
    tables = compile_ruleset(E2)
    bot = make_bot("greedy(forbid=p19)")  # case and leading zeros are forgiven
    bound = bot.bind(tables)
    assert bound is not bot and bound.params[15] == 1 + tables.patch_index["P19"]
    assert bot.params[15] == 0  # the spec's bot stays unbound
    plain = make_bot("greedy")
    assert plain.bind(tables) is plain and make_bot("mcts").bind(tables) is not None
    assert make_bot("mcts(forbid=P19)").bind(tables).params[7] == 1 + tables.patch_index["P19"]
    with pytest.raises(BotSpecError, match="P99"):
        make_bot("greedy(forbid=P99)").bind(tables)
    with pytest.raises(BotSpecError, match="rollouts"):
        make_bot("mcts(rollout=greedy(forbid=P19))")
    assert make_bot("greedy(forbid='')").spec == "greedy"


def test_restricted_spec() -> None:
    assert restricted_spec("greedy(epsilon=0.05)", "P19") == "greedy(epsilon=0.05, forbid=P19)"
    assert restricted_spec("mcts(iterations=50)", "P01") == "mcts(forbid=P01, iterations=50)"
    with pytest.raises(PricesError, match="cannot be restricted"):
        restricted_spec("random", "P19")


def test_crossing_hand_worked() -> None:
    # deal A loses 0.15 a button up to cost 2, deal B 0.05, then both are flat at 0: means
    # 0.2, 0.1, 0, 0, 0 at costs 0..4, a broken line with its kink (the fair price) at 2
    values = np.array([[0.3, 0.15, 0.0, 0.0, 0.0], [0.1, 0.05, 0.0, 0.0, 0.0]])
    c = fit_crossing(range(5), values, seed=1, boot=400)
    assert c.fair == pytest.approx(2.0) and c.in_range and not c.flat and c.bounded
    assert c.fitted == pytest.approx((0.2, 0.1, 0.0, 0.0, 0.0), abs=1e-9)
    assert c.slope == pytest.approx(-0.1) and c.floor == pytest.approx(0.0, abs=1e-9)
    assert c.intercept == pytest.approx(0.2)
    # every resample of the two deals (AA, AB, BA, BB) bends at 2, falling 0.05 to 0.15 a
    # button: the interval is the point, the fall's lower bound BB's 0.1
    assert (c.fair_lo, c.fair_hi) == (pytest.approx(2.0), pytest.approx(2.0))
    assert (c.slope_lo, c.slope_hi) == (pytest.approx(-0.15), pytest.approx(-0.05))
    assert c.cheapest_lo == pytest.approx(0.1)
    assert c.text() == "2.0 [2.0, 2.0]"
    assert fit_crossing(range(5), values, seed=1, boot=400) == c  # seeded
    # the same curve on a tail that sits 1.6 points below 0 (one set of deals' shared
    # noise): the same fair price, where a crossing of a fixed level moved
    low = fit_crossing(range(5), values - 0.016, seed=1, boot=400)
    assert low.fair == pytest.approx(2.0) and low.floor == pytest.approx(-0.016)
    # still falling at the highest cost: no fair price in range
    up = fit_crossing([3, 4, 5], np.array([[0.3, 0.2, 0.1], [0.1, 0.05, 0.0]]), boot=50)
    assert not up.in_range and up.side == "above"
    assert up.text() == "not found in 3..5 (the value still falls at the highest cost)"
    # a fall of less than the negligible 0.5 points is a flat curve
    flat = fit_crossing(range(5), np.array([[0.004, 0.0, 0.0, 0.0, 0.0]] * 2), boot=50)
    assert flat.flat
    assert not fit_crossing([4], values[:, :1]).in_range


def test_the_broken_line_reads_a_rising_curve_as_flat() -> None:
    """A value that rises with the cost (noise) fits no falling line: the fit is flat."""
    rising = fit_crossing(range(4), np.array([[0.0, 0.01, 0.02, 0.03]] * 3), boot=20)
    assert rising.flat and not rising.in_range and rising.slope == 0


def planted_values(costs: np.ndarray, knee: float, slope: float, deals: int,
                   rng: np.random.Generator, noise: float = 0.3) -> np.ndarray:
    """Per-deal values shaped like a measured one (planted P22 and P32 under greedy): worth
    ``slope`` per button below ``knee``, a shallow dip below 0 for three buttons after it
    (the bot still buys the patch, at a loss), then 0 where the bot stops buying it; the
    per-deal noise is ``noise`` where the patch is bought and a tenth of it after that."""
    true = np.where(costs < knee, slope * (knee - costs),
                    np.where(costs < knee + 3, -0.01, 0.0))
    sd = np.where(costs < knee + 3, noise, noise / 10)
    return true[None, :] + rng.normal(0, 1, (deals, len(costs))) * sd[None, :]


@pytest.mark.parametrize(("knee", "costs"), [(12.0, np.arange(4, 25, 2)),
                                             (4.5, np.arange(1, 12))])
def test_the_fair_price_is_where_a_flattening_curve_reaches_zero(knee, costs) -> None:
    """A value that falls, dips and then stays at 0: the least-squares line put the
    crossing 3-7 buttons off (18.6 for P32 crossing at about 12 over 4..24); the broken line
    finds the knee within a button, and its bootstrap interval holds it."""
    rng = np.random.default_rng(1)
    v = planted_values(costs, knee, 0.02, 1500, rng)
    c = fit_crossing(costs, v, seed=2, boot=400)
    assert c.in_range and not c.flat and c.bounded
    assert abs(c.fair - knee) <= 1.0
    assert c.fair_lo <= knee <= c.fair_hi and c.fair_hi - c.fair_lo < 4
    assert (np.diff(c.fitted) <= 1e-12).all()  # monotone
    slope, intercept = np.polyfit(costs, v.mean(axis=0), 1)
    assert abs(-intercept / slope - knee) > 1.0  # the old straight line, for contrast


def test_two_sets_of_deals_agree_where_the_flat_tail_does_not() -> None:
    """The issue's fragility: two seeds put the flat tail at +0.4 and -1.6 points (the same
    games at every cost the patch is not bought at share one noise), and the crossing of
    0.5 points moved by 2.5 buttons. The broken line's fair prices agree within their
    intervals."""
    costs = np.arange(0, 13)
    fits = []
    for seed, tail in ((5, 0.004), (6, -0.016)):
        rng = np.random.default_rng(seed)
        v = planted_values(costs, 4.5, 0.03, 1000, rng) + tail
        fits.append(fit_crossing(costs, v, seed=seed, boot=400))
    a, b = fits
    assert a.bounded and b.bounded
    assert a.fair_lo <= b.fair <= a.fair_hi and b.fair_lo <= a.fair <= b.fair_hi
    # each study also reads each half of its deals alone: the spread two seeds would show
    v = planted_values(costs, 4.5, 0.03, 1000, np.random.default_rng(5))
    c = fit_crossing(costs, v, boot=50)
    alone = [fit_crossing(costs, part, boot=10).fair for part in (v[:500], v[500:])]
    assert c.halves == pytest.approx(tuple(alone))
    assert c.halves_spread == pytest.approx(abs(alone[0] - alone[1])) and c.halves_spread < 1.5
    assert math.isnan(fit_crossing(costs, v[:15], boot=10).halves_spread)  # too few deals


def test_the_fair_price_interval_covers_a_planted_knee() -> None:
    """Planted curves (falling 3 points a button to a knee at 4.5, a dip, then 0; 1,000
    deals): the bootstrap interval holds the knee in about 95% of studies (92 of these 100,
    300 resamples each; 92.0% over 200 studies of 500 resamples), and is always bounded."""
    costs = np.arange(0, 13)
    rng = np.random.default_rng(1)
    hits = finite = 0
    for r in range(100):
        c = fit_crossing(costs, planted_values(costs, 4.5, 0.03, 1000, rng), seed=r, boot=300)
        finite += c.bounded
        hits += c.fair_lo <= 4.5 <= c.fair_hi
    assert finite == 100 and 0.85 <= hits / 100 <= 1.0


def test_a_scan_widens_toward_the_price_it_misses() -> None:
    rng = np.random.default_rng(3)
    high = np.arange(8, 13)  # a patch overpriced at 10: flat at 0 over 8..12
    flat = fit_crossing(high, planted_values(high, 4.5, 0.02, 300, rng), boot=200)
    assert flat.flat or flat.side == "below"
    assert widen_costs(list(high), flat, 30) == [4, 6]
    low = np.arange(0, 5)  # a free patch still worth a lot at 4: its interval reaches above
    pos = fit_crossing(low, planted_values(low, 12.0, 0.02, 300, rng), boot=200)
    assert not pos.bounded and widen_costs(list(low), pos, 30) == [6, 8]
    assert widen_costs([0, 1, 2], flat, 30) == []  # at 0 already: nowhere to go
    found = fit_crossing(np.arange(2, 12), planted_values(np.arange(2, 12), 6.5, 0.02, 300,
                                                          rng), boot=200)
    assert found.bounded and widen_costs(list(range(2, 12)), found, 30) == []
    # bounded means two costs measured beyond each end of the interval: one is not enough
    edge = fit_crossing(np.arange(2, 12), planted_values(np.arange(2, 12), 2.5, 0.02, 300,
                                                         rng), boot=200)
    assert not edge.bounded and widen_costs(list(range(2, 12)), edge, 30) == [0]


def test_price_readings_in_both_directions() -> None:
    """An overpriced patch has no measurable value at its price: the reading comes from the
    fair price below it. An underpriced one needs a value beyond the margin; a value within
    it with a fair price near the printed cost is about right."""
    costs = np.arange(3, 12)
    rng = np.random.default_rng(4)
    cross = fit_crossing(costs, planted_values(costs, 4.5, 0.02, 800, rng), boot=300)
    at9 = E.mean_estimate(planted_values(np.array([9]), 4.5, 0.02, 3000, rng)[:, 0])
    over = price_reading(E.verdict(at9, 0.02), cross, 9)
    assert over.kind == "overpriced" and over.text.startswith("overpriced by about ")
    assert over.lo <= 4.5 <= over.hi and over.lo > 1
    # the same curve read at a printed cost of 5 (its knee): about right, or undecided
    at5 = E.mean_estimate(planted_values(np.array([5]), 4.5, 0.02, 3000, rng)[:, 0])
    assert price_reading(E.verdict(at5, 0.02), cross, 5).kind in ("about right", "undecided")
    # worth 8 points at a cost of 0: underpriced, by about the knee
    at0 = E.mean_estimate(planted_values(np.array([0]), 4.5, 0.02, 3000, rng)[:, 0])
    low = fit_crossing(np.arange(0, 9), planted_values(np.arange(0, 9), 4.5, 0.02, 800, rng),
                       boot=300)
    under = price_reading(E.verdict(at0, 0.02), low, 0)
    assert under.kind == "underpriced" and abs(under.by - 4.5) <= 1
    # a detectably positive value inside the margin is never "underpriced"
    tiny = E.mean_estimate(rng.normal(0.006, 0.1, 20_000))
    assert E.verdict(tiny, 0.02).negligible
    assert price_reading(E.verdict(tiny, 0.02), low, 4).kind != "underpriced"


def test_an_undecided_value_reads_overpriced_when_the_fair_price_is_clearly_below() -> None:
    """The issue's plant (printed 3 -> 10, 1,000 deals a cost): -0.6 points at its price,
    undecided (its interval reaches past -2), with the value falling to its floor near 4.5:
    "overpriced", not "undecided at its price"."""
    costs = np.arange(0, 13)
    cross = fit_crossing(costs, planted_values(costs, 4.5, 0.03, 1000, np.random.default_rng(8)),
                         boot=300)
    assert cross.bounded and cross.fair_hi < 9
    at10 = E.Estimate(-0.006, 0.008, -0.0217, 0.0097, 1000, 0.25)
    v = E.verdict(at10, 0.02)
    assert v.kind == "undecided"
    r = price_reading(v, cross, 10)
    assert r.kind == "overpriced" and r.text.startswith("overpriced by about ")
    assert "its value at its price is undecided (-0.6 points at its price)" in r.text
    assert r.lo <= 10 - 4.5 <= r.hi
    # an unbounded interval reaching the printed cost decides nothing
    near = fit_crossing(np.arange(8, 13), planted_values(np.arange(8, 13), 9.5, 0.03, 1000,
                                                         np.random.default_rng(9)), boot=300)
    assert price_reading(v, near, 10).kind == "undecided"


def test_price_table_on_a_synthetic_study() -> None:
    rng = np.random.default_rng(0)
    study = PriceStudy(E2, "greedy", ["P19"], [-1, 0, 1], games=400, seed=2)
    for d, mean in ((-1, 0.1), (0, 0.05), (1, 0.0)):
        study.values[("P19", d)] = np.clip(mean + rng.choice([-0.5, 0.0, 0.5], 200), -0.5, 0.5)
    t = price_table(study)
    assert t["cost"].tolist() == [9, 10, 11]
    for d in (-1, 0, 1):
        row = t[t["delta"] == d].iloc[0]
        assert row["value"] == pytest.approx(study.values[("P19", d)].mean())
        assert row["restricted_win_rate"] == pytest.approx(0.5 - row["value"])
        assert row["value_lo"] < row["value"] < row["value_hi"]
    s = patch_summary(study, t)
    assert len(s) == 1 and s.iloc[0]["cost"] == 10


def test_the_figure_draws_the_fit_the_fair_price_is_read_from() -> None:
    """The figure once showed the least-squares line and the fair price at value 0; it draws
    the broken line the fair price is read from, with its kink, and marks the kink."""
    from patchsim.experiments.prices import crossings
    from patchsim.experiments.prices_files import plot_prices

    rng = np.random.default_rng(1)
    study = PriceStudy(E2, "greedy", ["P19"], [-2, -1, 0, 1, 2], games=400, seed=2)
    for d, mean in ((-2, 0.12), (-1, 0.06), (0, -0.01), (1, 0.0), (2, 0.0)):
        study.values[("P19", d)] = np.clip(mean + rng.choice([-0.3, 0.0, 0.3], 200), -0.5, 0.5)
    fit = crossings(study)["P19"]
    ax = plot_prices(study).axes[0]
    assert fit.in_range and not fit.flat
    want = sorted([*zip(fit.costs, fit.fitted, strict=True), (fit.fair, fit.floor)])
    curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(want)
              and ln.get_linestyle() == "-"]
    assert any(np.allclose(ln.get_xdata(), [x for x, _ in want])
               and np.allclose(ln.get_ydata(), [100 * y for _, y in want]) for ln in curves)
    marks = [ln for ln in ax.get_lines() if ln.get_marker() == "x"]
    assert marks and marks[0].get_xdata()[0] == pytest.approx(fit.fair)
    assert marks[0].get_ydata()[0] == pytest.approx(100 * fit.floor)


def test_command_writes_its_files(tmp_path) -> None:
    out = tmp_path / "p"
    r = CliRunner().invoke(app, ["prices", "edition2", "--bots", "greedy", "--games", "40",
                                 "--patches", "P19,P1", "--deltas=-1,0,1", "--jobs", "1",
                                 "--no-widen", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["patches.csv", "prices.csv",
                                                     "prices.html", "prices.md", "prices.png",
                                                     "study.json"]
    table = pd.read_csv(out / "prices.csv")
    assert table["patch"].tolist() == ["P19"] * 3 + ["P01"] * 3
    assert (table["deals"] == 20).all()
    assert (out / "prices.png").read_bytes()[:4] == b"\x89PNG"
    assert "| P19 | 10 |" in (out / "prices.md").read_text()
    again = CliRunner().invoke(app, ["prices", "edition2", "--bots", "greedy", "--out",
                                     str(out)])
    assert again.exit_code == 2 and "already exists" in again.output


@pytest.mark.parametrize(("args", "needle"), [
    (["edition2", "--bots", "greedy", "--patches", "P19,P99"], "'P99' is not a patch"),
    (["nosuch", "--bots", "greedy"], "not a shipped ruleset"),
    (["edition2", "--bots", "random"], "cannot be restricted"),
    (["edition2", "--bots", "gredy"], "unknown bot"),
    (["edition2", "--bots", "greedy", "--deltas", "a,b"], "--deltas"),
])
def test_command_errors_are_messages(tmp_path, args: list[str], needle: str) -> None:
    r = CliRunner().invoke(app, ["prices", *args, "--games", "4", "--jobs", "1", "--out",
                                 str(tmp_path / "x")])
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_report_prices_measures_the_runs_ruleset_and_shows_it(tmp_path) -> None:
    """`patchsim report RUN --prices`: a prices study of the run's first ruleset and bot,
    on the run's seed, written to RUN/prices and shown in the report's patch section with
    what it measured; a second --prices keeps the first study."""
    import json

    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", "edition2", "--bots", "greedy(epsilon=0.1)", "--games",
                                 "20", "--seed", "5", "--jobs", "1", "--no-report",
                                 "--no-progress", "--out", str(run)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["report", str(run), "--prices", "--prices-games", "2",
                                 "--jobs", "1"])
    assert r.exit_code == 0, r.output
    header = json.loads((run / "prices" / "study.json").read_text())
    assert header["bot"] == "greedy(epsilon=0.1)" and header["seed"] == 5
    assert header["ruleset_hash"] == load_ruleset("edition2").content_hash()
    assert len(header["patches"]) == len(load_ruleset("edition2").patches)
    # every cost measured, widened ones included, per patch
    assert set(header["measured_deltas"]) == set(header["patches"])
    assert all(0 in ds for ds in header["measured_deltas"].values())
    md = (run / "report.md").read_text()
    assert "Causal prices (edition2, bot greedy(epsilon=0.1), 2 games per patch and cost" in md
    assert "a ruleset this run did not play" not in md
    again = CliRunner().invoke(app, ["report", str(run), "--prices"])
    assert again.exit_code == 2 and "already holds a prices study" in again.output
    bad = CliRunner().invoke(app, ["report", str(run / "nothing"), "--prices"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
