"""patchsim.analysis.stats: the report's tables against hand-computed cases, the libraries and
the estimator layer (every rate and interval is ``estimators.rate`` on the same data), and
deterministic self-play counted once."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from runs import shared_run
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from patchsim.analysis import estimators as E
from patchsim.analysis import patches, ratings, selfplay
from patchsim.analysis import stats as st
from patchsim.analysis.selfplay import DISTINCT_NOTE, distinct_games
from patchsim.analysis.summary import format_summary, run_summary
from patchsim.document.format import format_pairings
from patchsim.play.runfolder import load_events, load_games, table_path

# --- shared runs (kept on disk per session; other test modules reuse the same folders) ----------


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_run(tmp_path_factory, "small", "edition2", 40, ["greedy", "income"])


# --- synthetic games ---------------------------------------------------------------------------
def make_games(outcomes: list[tuple[int, int]], bots: tuple[str, str] = ("A", "B"),
               ruleset: str = "r") -> pd.DataFrame:
    """Games from per-deal winners (winning seat in order 0, in order 1); bot a sits in seat
    0 in order 0. Scores: the winner 20, the loser 10."""
    rows = []
    a, b = bots
    for deal, pair in enumerate(outcomes):
        for order, w in enumerate(pair):
            b0, b1 = (a, b) if order == 0 else (b, a)
            rows.append({"ruleset": ruleset, "ruleset_hash": "h", "game_id": 2 * deal + order,
                         "deal": deal, "deal_seed": 1000 + deal, "pairing": f"{a} vs {b}",
                         "order": order, "bot0": b0, "bot1": b1, "winner": w,
                         "winner_bot": b0 if w == 0 else b1, "tie_break": False,
                         "score0": 20 if w == 0 else 10, "score1": 10 if w == 0 else 20,
                         "bonus0": False, "bonus1": False, "first_to_end": 0,
                         "passes0": 4, "passes1": 5, "buys0": 10, "buys1": 11, "plies": 40})
    return pd.DataFrame(rows)


# --- basic quantities -------------------------------------------------------------------------
def test_design_effect_is_the_cluster_variance_over_the_binomial_one():
    # four deals of two games: 2, 1, 0, 2 successes
    y = np.array([1, 1, 1, 0, 0, 0, 1, 1])
    deal = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    p = 5 / 8
    # the cluster-robust variance in per-game units, written out by hand
    resid = np.array([2, 1, 0, 2]) - 2 * p
    var_deal = 4 / 3 * float(np.sum(resid**2)) / 8
    assert st.design_effect(E.rate(y, deal), 8) == pytest.approx(var_deal / (p * (1 - p)))
    # every deal's two games agree: 2; every deal split: 0
    agree = np.repeat([1, 0, 1, 1, 0], 2)
    assert st.design_effect(E.rate(agree, np.repeat(np.arange(5), 2)), 10) == pytest.approx(
        2 * 5 / 4)  # 2 n/(n-1): the per-deal variance has n - 1 degrees of freedom
    split = np.tile([1, 0], 5)
    assert st.design_effect(E.rate(split, np.repeat(np.arange(5), 2)), 10) == 0
    assert math.isnan(st.design_effect(E.rate(np.ones(4), [0, 0, 1, 1]), 4))  # rate 1


def test_pair_counts_and_one_game_deals():
    win = np.array([1, 1, 1, 0, 0, 0, 1])  # the last deal is incomplete and ignored
    deal = np.array([0, 0, 1, 1, 2, 2, 3])
    assert st.pair_counts(win, deal) == (1, 1, 1)
    # deterministic self-play without its copies: each deal is one game, never split
    assert st.pair_counts(np.array([1, 0, 1]), np.array([0, 1, 2]), one_game=True) == (2, 0, 1)
    assert st.pair_counts(np.array([1, 0, 1]), np.array([0, 1, 2])) == (0, 0, 0)


def test_first_player_advantage_hand_computed():
    # seat 0 wins both games of 5 deals, seat 1 of 1 deal, 4 deals split
    outcomes = [(0, 0)] * 5 + [(1, 1)] + [(0, 1)] * 4
    games = make_games(outcomes, ("X", "X"))
    fpa = st.first_player_advantage(games)
    r = fpa.iloc[0]
    assert bool(r.distinct_games) and r.games == 20  # split deals: not copies
    assert (r.seat0_both, r.split, r.seat1_both) == (5, 4, 1)
    assert r.rate == pytest.approx(14 / 20)
    assert r.adv_pp == pytest.approx(20.0)
    assert r.elo == pytest.approx(400 * math.log10(0.7 / 0.3))
    # the exact McNemar test on the deals one seat won twice is a sign test: 5 against 1
    assert r.p_mcnemar == pytest.approx(sps.binomtest(5, 6, 0.5).pvalue)
    # the interval, the tests and the verdict are the estimator layer's, on per-deal rates
    x = np.array([1.0] * 5 + [0.0] + [0.5] * 4)
    rate = E.mean_estimate(x, bounds=(0.0, 1.0))
    assert (r.lo, r.hi, r.se) == pytest.approx((rate.lo, rate.hi, rate.se))
    assert r.p_value == pytest.approx(E.difference_pvalue(rate, 0.5))
    assert r.balanced_p == pytest.approx(E.equivalence_pvalue(rate, 0.02, 0.5))
    v = E.verdict(rate, 0.02, 0.5)  # one ruleset and pairing: a family of one
    assert r.verdict == v.text(100.0, " points") and r.verdict_kind == v.kind == "undecided"
    assert r.verdict.startswith("undecided: +20.0 points [")
    assert r.deff == pytest.approx(2 * x.var(ddof=1) / (0.7 * 0.3))
    assert not r.few  # exactly MIN_DEALS deals is enough


def test_first_player_advantage_verdict_differs_with_enough_deals():
    # seat 0 wins both games of 30 deals and loses both of 10: 75%, clearly not 50%
    fpa = st.first_player_advantage(make_games([(0, 0)] * 30 + [(1, 1)] * 10 + [(0, 1)] * 10))
    r = fpa.iloc[0]
    assert r.verdict_kind == "differs" and r.verdict.startswith("differs by +20.0 points [")


def test_first_player_advantage_flags_only_small_runs():
    fpa = st.first_player_advantage(make_games([(0, 0)] * 9 + [(0, 1)], ("X", "X")))
    assert not bool(fpa.iloc[0].few)
    fpa = st.first_player_advantage(make_games([(0, 0)] * 3, ("X", "X")))
    assert bool(fpa.iloc[0].few)


def test_paired_interval_narrower_on_seat_swapped_data():
    # a strong seat effect: seat 0 wins both games of 40 deals (A and B one each); A wins
    # both games of 6 deals (seat 0, then seat 1), B both of 4
    outcomes = [(0, 0)] * 40 + [(0, 1)] * 6 + [(1, 0)] * 4
    games = make_games(outcomes)
    t = st.pairing_table(games)
    pooled = t[t["line"] == "pooled"].iloc[0]
    assert pooled.wins == 40 + 12
    assert (pooled.pairs_2_0, pooled.pairs_1_1, pooled.pairs_0_2) == (6, 40, 4)
    a_win = (games["winner"] == games["order"]).to_numpy(float)
    e = E.rate(a_win, games["deal"])
    assert (pooled.win_rate, pooled.lo, pooled.hi) == pytest.approx((e.value, e.lo, e.hi))
    # the seat effect cancels within a deal: narrower than a per-game interval would be
    glo, ghi = proportion_confint(52, 100, method="wilson")
    assert pooled.hi - pooled.lo < ghi - glo
    seat = t[t["line"] == "seat 0 vs seat 1"].iloc[0]
    assert seat.win_rate == pytest.approx((80 + 6 + 4) / 100)
    first = t[t["line"] == "first seat"].iloc[0]
    assert first.wins == 46 and first.games == 50
    first_games = games[games["order"] == 0]
    e = E.rate((first_games["winner"] == 0).to_numpy(float), first_games["deal"])
    assert (first.lo, first.hi) == pytest.approx((e.lo, e.hi))


def test_pairing_table_self_play_has_no_pooled_line():
    t = st.pairing_table(make_games([(0, 1), (1, 1)], ("X", "X")))
    assert set(t["line"]) == {"first seat", "second seat", "seat 0 vs seat 1"}
    assert t["distinct_games"].all()
    assert "X in the first seat" in format_pairings(t, DISTINCT_NOTE)


def test_deterministic_self_play_is_counted_once_in_every_games_table():
    """Both games of every deal are the same game: each table counts it once, says so, and
    keeps the per-deal rates (and so every interval) of the full table."""
    outcomes = [(0, 0)] * 6 + [(1, 1)] * 4
    games = make_games(outcomes, ("X", "X"))
    games["tie_break"] = games["deal"] < 2  # the first two deals' games
    t = st.pairing_table(games)
    assert list(t["line"]) == ["seat 0 vs seat 1"] and not t["distinct_games"].any()
    r = t.iloc[0]
    assert (r.games, r.wins, r.losses) == (10, 6, 4)
    assert (r.pairs_2_0, r.pairs_1_1, r.pairs_0_2) == (6, 0, 4)  # a copy cannot be split
    full = E.rate((games["winner"] == 0).to_numpy(float), games["deal"])
    assert (r.win_rate, r.lo, r.hi) == pytest.approx((full.value, full.lo, full.hi))
    assert "deterministic self-play: one distinct game per deal" in format_pairings(
        t, DISTINCT_NOTE)
    fpa = st.first_player_advantage(games).iloc[0]
    assert (fpa.games, fpa.deals, fpa.seat0_wins) == (10, 10, 6)
    assert (fpa.seat0_both, fpa.split, fpa.seat1_both) == (6, 0, 4)
    # McNemar on distinct games: the sign test of 6 against 4, not of 12 against 8
    assert fpa.p_mcnemar == pytest.approx(sps.binomtest(6, 10, 0.5).pvalue)
    assert (fpa.lo, fpa.hi) == pytest.approx((full.lo, full.hi))
    assert math.isnan(fpa.deff) and not fpa.distinct_games
    summary = st.game_summary(games).iloc[0]
    assert (summary.games, summary.tie_breaks) == (10, 2) and not summary.distinct_games
    tie = E.rate(games["tie_break"].to_numpy(float), games["deal"])
    assert (summary.tie_lo, summary.tie_hi) == pytest.approx((tie.lo, tie.hi))
    scores = st.score_table(games, n_boot=0)
    assert (scores["n"] == 10).all() and not scores["distinct_games"].any()
    bonus = st.bonus_table(games, _events([])).iloc[0]
    assert bonus.games == 10 and not bonus.distinct_games
    # a table that has been through distinct() already is not deduplicated again
    once = selfplay.distinct(games)
    assert len(once) == 10 and selfplay.copied_pairings(once) == {"X vs X"}
    assert selfplay.distinct(once) is once


# --- balance by skill level ----------------------------------------------------------------------
def skill_games(levels: dict[str, list[tuple[int, int]]]) -> pd.DataFrame:
    """Self-play games of several bots (skill levels, in this order) on the same deals."""
    parts = []
    for k, (bot, outcomes) in enumerate(levels.items()):
        g = make_games(outcomes, (bot, bot))
        parts.append(g.assign(game_id=g["game_id"] + 10_000 * k))
    return pd.concat(parts, ignore_index=True)


def deal_rates(games: pd.DataFrame, pairing: str) -> np.ndarray:
    g = games[games["pairing"] == pairing]
    return E.deal_values((g["winner"] == 0).to_numpy(float), g["deal"])


def test_skill_balance_is_a_paired_difference_with_a_verdict():
    # W: seat 0 wins 52.5% over 40 deals; S: 80% on the same deals; M: W's deals again
    w = [(0, 1)] * 30 + [(0, 0)] * 6 + [(1, 1)] * 4
    strong = [(0, 0)] * 28 + [(0, 1)] * 8 + [(1, 1)] * 4
    games = skill_games({"W": w, "S": strong, "M": w})
    t = st.skill_balance(games)
    assert list(t["level"]) == ["W", "S", "M"] and (t["reference"] == "W").all()
    for r in t.itertuples():
        g = games[games["pairing"] == r.pairing]
        e = E.rate((g["winner"] == 0).to_numpy(float), g["deal"])
        assert (r.rate, r.lo, r.hi, r.deals) == pytest.approx((e.value, e.lo, e.hi, e.deals))
    ref = deal_rates(games, "W vs W")
    changes = [E.paired_difference(ref, deal_rates(games, p), bounds=E.RATE_DIFF_BOUNDS)
               for p in ("S vs S", "M vs M")]
    p_raw = [E.difference_pvalue(c) for c in changes]
    p_holm = E.holm(p_raw)  # one family over the table's changes
    family = E.verdicts(changes, 0.02, 0.0, 0.05, family="holm")
    for (_, r), c, p, pa, v in zip(t.iloc[1:].iterrows(), changes, p_raw, p_holm, family,
                                   strict=True):
        assert (r["diff"], r["diff_lo"], r["diff_hi"]) == pytest.approx((c.value, c.lo, c.hi))
        assert r["common_deals"] == 40 and r["p"] == pytest.approx(p)
        assert r["p_holm"] == pytest.approx(pa)
        assert r["verdict"] == v.text(100.0, " points")
    strong_row, same_row = t.iloc[1], t.iloc[2]
    assert strong_row["diff"] == pytest.approx(11 / 40)
    assert strong_row["verdict"].startswith("differs by +27.5 points [")
    assert strong_row["trend"] == "grows"
    # no change at all on 40 deals: the weak prior keeps the interval from collapsing, so
    # 40 deals cannot show the imbalance unchanged within +-2 points
    assert same_row["diff"] == 0 and same_row["trend"] == "undecided"
    assert same_row["verdict"].startswith("undecided: +0.0 points [")
    assert t.iloc[0][["diff", "p"]].isna().all()  # the reference level has no change


def test_skill_balance_pairs_only_the_same_deals():
    w = [(0, 1)] * 30 + [(0, 0)] * 6 + [(1, 1)] * 4
    strong = [(0, 0)] * 28 + [(0, 1)] * 8 + [(1, 1)] * 4
    games = skill_games({"W": w, "S": strong})
    other_seed = (games["pairing"] == "S vs S") & (games["deal"] < 5)
    games.loc[other_seed, "deal_seed"] += 1  # five deal numbers are different deals
    r = st.skill_balance(games).iloc[1]
    assert r["common_deals"] == 35
    keep = np.arange(5, 40)
    c = E.paired_difference(deal_rates(games, "W vs W")[keep],
                            deal_rates(games, "S vs S")[keep])
    assert r["diff"] == pytest.approx(c.value)
    # a run with one self-play pairing per ruleset has no skill levels
    assert st.skill_balance(make_games(w, ("W", "W"))).empty
    assert st.skill_balance(make_games(w)).empty


@pytest.mark.parametrize(("ref", "rate", "kind", "trend"), [
    (0.55, 0.60, "differs", "grows"), (0.40, 0.45, "differs", "shrinks"),
    (0.45, 0.55, "differs", "changes side"), (0.5, 0.5, "equivalent", "unchanged"),
    (0.5, 0.6, "undecided", "undecided")])
def test_skill_trend_reads_the_distance_from_fair(ref, rate, kind, trend):
    from patchsim.analysis.comparison import trend as read_trend

    assert read_trend(kind, ref, rate) == trend
    assert read_trend(kind, ref - 0.5, rate - 0.5, center=0.0) == trend  # on the edge scale


@pytest.mark.parametrize("whole", [False, True])
def test_describe_by_deal_resamples_deals_with_the_one_bootstrap(whole):
    from patchsim.analysis.bootstrap import RESAMPLES, bootstrap_over_deals

    rng = np.random.default_rng(5)
    v = rng.normal(size=60)
    if whole:  # whole numbers take the counting path: the same numbers as sorting
        v = np.round(10 * v)
    deal = np.repeat(np.arange(30), 2)
    r = st.describe_by_deal(v, deal, seed=7)
    assert r["mean"] == pytest.approx(v.mean()) and r["median"] == pytest.approx(np.median(v))
    q1, q3 = np.percentile(v, [25, 75])
    assert r["iqr"] == pytest.approx(q3 - q1)
    # for the mean, resampling deals is bootstrapping the per-deal means
    ref = bootstrap_over_deals(E.deal_values(v, deal), lambda s: s.mean(axis=-1), seed=7)
    assert len(ref.replicates) == RESAMPLES
    assert r["mean_lo"] == pytest.approx(ref.lo) and r["mean_hi"] == pytest.approx(ref.hi)
    # the median's interval from sorting every resample (numpy), to the last bit
    idx = np.random.default_rng(7).integers(0, 30, size=(RESAMPLES, 30))
    meds = np.median(v.reshape(30, 2)[idx].reshape(RESAMPLES, -1), axis=1)
    lo, hi = np.quantile(meds, [0.025, 0.975])
    assert (r["median_lo"], r["median_hi"]) == (lo, hi)
    tiny = st.describe_by_deal(np.array([3.0, 5.0]), np.array([0, 0]))
    assert tiny["mean"] == 4 and np.isnan(tiny["mean_lo"])


# --- leather and bonus on hand-made events ------------------------------------------------------
def _events(rows: list[tuple]) -> pd.DataFrame:
    cols = ["game_id", "seq", "event", "seat", "position", "filled_hole", "score_lead",
            "opp_position"]
    df = pd.DataFrame(rows, columns=cols)
    df["ruleset"] = "r"
    df["bot"] = "X"
    df["patch"] = None
    return df


def test_leather_table_hand_computed():
    games = make_games([(0, 1)], ("X", "X"))  # games 0 and 1
    ev = _events([
        (0, 0, "leather_claim", 0, 20, False, 3, 18),
        (0, 1, "leather_place", 0, 20, True, 0, -1),
        (0, 2, "leather_claim", 1, 26, False, -2, 24),
        (0, 3, "leather_place", 1, 26, False, 0, -1),
        (1, 0, "leather_claim", 1, 20, False, 0, 19),
        (1, 1, "leather_place", 1, 20, False, 0, -1),
        (1, 2, "leather_lost", 0, 26, False, 0, -1),
    ])
    t = st.leather_table(games, ev).set_index("mark")
    assert t.loc[20, "claimed"] == 2 and t.loc[20, "useful"] == 1
    assert t.loc[20, "useful_rate"] == pytest.approx(0.5)
    assert (t.loc[20, "by_leader"], t.loc[20, "by_level"]) == (1, 1)
    assert t.loc[26, "claimed"] == 1 and t.loc[26, "lost"] == 1
    assert t.loc[26, "ordinary"] == 1 and t.loc[26, "by_trailer"] == 1
    assert t.loc[20, "rank"] == 1 and t.loc[26, "rank"] == 2
    # game 0: seat 0 won and claimed at 20
    lg = st.leather_games(games, ev)
    assert lg.loc[(lg.game_id == 0) & (lg.mark == 20), "claimer_won"].item() == 1


def test_bonus_changed_the_winner_hand_computed():
    g = make_games([(0, 0), (0, 0)], ("X", "X"))
    g["bonus0"] = [True, True, False, True]
    g["score0"] = [20, 30, 20, 27]
    g["score1"] = [15, 15, 19, 20]  # margins 5, 15, 1, 7
    t = st.bonus_table(g, _events([]))
    r = t.iloc[0]
    assert r.claimed == 3 and r.by_seat0 == 3
    # changed: held and won by < 7 points: only the first game (margin 7 is a tie without it)
    assert r.changed == 1
    assert r.holder_win == 1.0


# --- ratings ------------------------------------------------------------------------------------
def _rating_games(seed: int = 3, deals: int = 150) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = {"a": 0.0, "b": 0.6, "c": -0.4}
    names = list(strength)
    rows = []
    for deal in range(deals):
        x, y = rng.choice(3, size=2, replace=False)
        for order in (0, 1):
            b0, b1 = (names[x], names[y]) if order == 0 else (names[y], names[x])
            p = 1 / (1 + math.exp(-(0.2 + strength[b0] - strength[b1])))
            w = 0 if rng.random() < p else 1
            rows.append({"ruleset": "r", "deal": deal, "order": order, "bot0": b0, "bot1": b1,
                         "winner": w})
    return pd.DataFrame(rows)


def _design(games: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    bots = ["a", "b", "c"]
    x = np.zeros((len(games), 3))
    x[:, 0] = 1.0
    for j, name in enumerate(bots[1:], start=1):
        x[:, j] = (games["bot0"] == name).astype(float) - (games["bot1"] == name)
    return x, (games["winner"] == 0).to_numpy(float)


def test_ratings_match_statsmodels_logit_without_prior():
    g = _rating_games()
    x, y = _design(g)
    fit = sm.Logit(y, x).fit(disp=0)
    t = st.ratings(g, prior_elo=None, anchor="a", cluster=False).set_index("bot")
    k = st.ELO_PER_LOGIT
    assert t.loc["a", "elo"] == pytest.approx(0, abs=1e-9)
    assert t.loc["b", "elo"] == pytest.approx(k * fit.params[1], rel=1e-6)
    assert t.loc["c", "elo"] == pytest.approx(k * fit.params[2], rel=1e-6)
    assert t.loc["b", "elo_se"] == pytest.approx(k * fit.bse[1], rel=1e-6)
    assert t.loc["c", "elo_se"] == pytest.approx(k * fit.bse[2], rel=1e-6)
    assert t.attrs["seat_elo"] == pytest.approx(k * fit.params[0], rel=1e-6)
    assert t.attrs["seat_elo_se"] == pytest.approx(k * fit.bse[0], rel=1e-6)
    # relative to the average bot, the differences are unchanged
    avg = st.ratings(g, prior_elo=None, cluster=False).set_index("bot")
    assert avg["elo"].sum() == pytest.approx(0, abs=1e-6)
    assert avg.loc["b", "elo"] - avg.loc["a", "elo"] == pytest.approx(k * fit.params[1])


def test_cluster_sandwich_matches_statsmodels():
    g = _rating_games(seed=11)
    x, y = _design(g)
    fit = sm.Logit(y, x).fit(disp=0, cov_type="cluster", cov_kwds={"groups": g["deal"]})
    mu = fit.predict(x)
    beta, hinv = ratings._fit_logit(x, y, np.zeros((3, 3)))
    assert beta == pytest.approx(fit.params, rel=1e-6)
    cov = st.cluster_sandwich(x, y - mu, hinv, g["deal"].to_numpy())
    assert cov == pytest.approx(np.asarray(fit.cov_params()), rel=1e-5)


def test_ratings_stay_finite_on_a_perfect_result():
    g = make_games([(0, 1)] * 10)  # A wins every game
    t = st.ratings(g).set_index("bot")
    assert np.isfinite(t["elo"]).all() and np.isfinite(t["elo_lo"]).all()
    assert t.loc["A", "elo"] > 100 > 0 > t.loc["B", "elo"]
    assert t.loc["A", "score"] == 1.0 and t.loc["A", "games"] == 20


# --- on a real run ------------------------------------------------------------------------------
def test_tables_on_a_small_run(small_run: Path):
    g, e = load_games(small_run), load_events(small_run)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fpa = st.first_player_advantage(g)
        scores = st.score_table(g, n_boot=199)
        patches = st.patch_table(g, e)
        leather = st.leather_table(g, e)
        bonus = st.bonus_table(g, e)
        summary = st.game_summary(g)
        ratings = st.ratings(g)
    # greedy and income are deterministic: their self-play games count once a deal
    assert fpa.set_index("pairing")["games"].to_dict() == {
        "greedy vs greedy": 20, "greedy vs income": 40, "income vs income": 20}
    assert (fpa["deals"] == 20).all()
    assert ((fpa["lo"] <= fpa["rate"]) & (fpa["rate"] <= fpa["hi"])).all()
    assert set(scores["quantity"]) == {"score", "margin", "plies", "passes"}
    ok = scores.dropna(subset=["mean_lo"])
    assert ((ok["mean_lo"] <= ok["mean"]) & (ok["mean"] <= ok["mean_hi"])).all()
    # the patch table uses the self-play games when the run has them (see patch_table),
    # each deterministic game once
    d = distinct_games(g)
    self_play = d.loc[d["bot0"] == d["bot1"], "game_id"]
    buys = e[(e["event"] == "buy") & e["game_id"].isin(self_play)]
    assert (patches["by_seat0"] + patches["by_seat1"]).sum() == len(buys)
    assert (patches["p_holm"].dropna() >= patches["p_value"].dropna() - 1e-12).all()
    # the linear-probability slope is exactly the difference of the two win rates
    both = patches.dropna(subset=["diff"])
    assert both["diff"].to_numpy() == pytest.approx(
        (both["buyer_win"] - both["other_win"]).to_numpy())
    assert list(leather["mark"]) == [26, 32, 38, 44, 50]
    assert (leather["useful"] + leather["ordinary"] + leather["lost"] <= leather["games"]).all()
    assert bonus["claimed"].sum() == int((d["bonus0"] | d["bonus1"]).sum())
    assert summary["tie_breaks"].sum() == int(d["tie_break"].sum())
    assert set(ratings["bot"]) == {"greedy", "income"}
    assert ratings["elo"].sum() == pytest.approx(0, abs=1e-6)


def test_every_interval_is_the_estimator_layers_rate(small_run: Path):
    """The intervals the report prints are estimators.rate on the same (distinct) games."""
    from patchsim.analysis.tables import read_games, scan_events

    g = read_games(table_path(small_run, "games"))
    e = scan_events(table_path(small_run, "events"), g)
    d = distinct_games(g)

    def rate(won: np.ndarray, deal: np.ndarray) -> tuple[float, float, float]:
        r = E.rate(np.asarray(won, dtype=float), np.asarray(deal))
        return r.value, r.lo, r.hi

    fpa = st.first_player_advantage(g)
    pairings = st.pairing_table(g)
    summary = st.game_summary(g)
    bonus = st.bonus_table(g, e)
    for (pairing,), gp in st.iter_groups(d, ["pairing"]):
        deal = gp["deal"].to_numpy()
        seat0 = rate(gp["winner"] == 0, deal)
        row = fpa[fpa["pairing"] == pairing].iloc[0]
        assert (row.rate, row.lo, row.hi) == pytest.approx(seat0)
        line = pairings[(pairings["pairing"] == pairing)
                        & (pairings["line"] == "seat 0 vs seat 1")].iloc[0]
        assert (line.win_rate, line.lo, line.hi) == pytest.approx(seat0)
        s = summary[summary["pairing"] == pairing].iloc[0]
        assert (s.tie_rate, s.tie_lo, s.tie_hi) == pytest.approx(rate(gp["tie_break"], deal))
        b = bonus[bonus["pairing"] == pairing].iloc[0]
        claimed = (gp["bonus0"] | gp["bonus1"]).to_numpy()
        assert (b.claim_rate, b.claim_lo, b.claim_hi) == pytest.approx(rate(claimed, deal))
        # the same per-deal rates as the full table: copies change counts, not rates
        full = g[g["pairing"] == pairing]
        assert seat0 == pytest.approx(rate(full["winner"] == 0, full["deal"].to_numpy()))
    leather = st.leather_table(g, e).set_index("mark")
    lg = st.leather_games(d, e)
    for mark, row in leather.iterrows():
        hit = lg[(lg["mark"] == mark) & lg["useful"]]["game_id"]
        useful = d["game_id"].isin(hit).to_numpy()
        assert (row.useful_rate, row.useful_lo, row.useful_hi) == pytest.approx(
            rate(useful, d["deal"].to_numpy()))
    useless = st.first_leather_useless(g, e)
    ests = []
    for r in useless.itertuples():
        gp = d[d["pairing"] == r.pairing]
        first = lg[(lg["pairing"] == r.pairing) & (lg["mark"] == r.mark) & lg["useful"]]
        no_hole = ~gp["game_id"].isin(first["game_id"]).to_numpy()
        est = E.rate(no_hole.astype(float), gp["deal"].to_numpy())
        assert (r.rate, r.lo, r.hi) == pytest.approx((est.value, est.lo, est.hi))
        ests.append(est)
    # the pairings are one Holm family
    family = E.verdicts(ests, 0.10, 0.5, family="holm")
    assert list(useless["verdict"]) == [v.text(100.0, " points") for v in family]
    # run_summary, the terminal's table, gives the same first-seat numbers
    rs = run_summary(g).set_index("pairing")
    for row in fpa.itertuples():
        assert (rs.loc[row.pairing, "seat0_lo"], rs.loc[row.pairing, "seat0_hi"]) == (
            pytest.approx((row.lo, row.hi)))


def test_run_summary_still_formats(small_run: Path):
    text = format_summary(run_summary(load_games(small_run)))
    assert "greedy vs income" in text and "seat0 wins" in text


# --- the events summary against the in-memory pandas computation it replaced ------------------
# The report never holds a run's events: patchsim.analysis.tables scans events.parquet into
# per-game arrays. These references are the straightforward pandas versions (every event in
# one frame) that the tables were computed with before; the summary must give the same
# numbers to the last bit, through the streaming scan (in small batches, so that games
# straddle them) and through an in-memory frame.
def _ref_leather_games(games: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    ev = events[events["event"].isin(["leather_claim", "leather_place", "leather_lost"])]
    claims = (ev[ev["event"] == "leather_claim"].rename(columns={"position": "mark"})
              [["game_id", "mark", "seat", "score_lead", "opp_position"]]
              .drop_duplicates(["game_id", "mark"]))
    places = (ev[ev["event"] == "leather_place"].rename(columns={"position": "mark"})
              .groupby(["game_id", "mark"]).agg(useful=("filled_hole", "max"),
                                                placed=("seq", "size")).reset_index())
    lost = (ev[ev["event"] == "leather_lost"].rename(columns={"position": "mark"})
            .groupby(["game_id", "mark"]).size().rename("lost_n").reset_index())
    keys = pd.concat([claims[["game_id", "mark"]], lost[["game_id", "mark"]]]).drop_duplicates()
    t = (keys.merge(claims, how="left", on=["game_id", "mark"])
         .merge(places, how="left", on=["game_id", "mark"])
         .merge(lost, how="left", on=["game_id", "mark"]))
    t["claimed"] = t["seat"].notna()
    t["placed"] = t["placed"].fillna(0) > 0
    t["useful"] = t["useful"].fillna(False).astype(bool) & t["placed"]
    t["lost"] = ~t["claimed"]
    t = t.merge(games[["game_id", "ruleset", "pairing", "deal", "winner"]], on="game_id")
    t["claimer_won"] = np.where(t["claimed"], t["winner"] == t["seat"], np.nan)
    t["rank"] = t.groupby("ruleset")["mark"].rank(method="dense").astype(int)
    cols = ["ruleset", "pairing", "game_id", "deal", "mark", "rank", "claimed", "seat",
            "score_lead", "opp_position", "placed", "useful", "lost", "claimer_won"]
    return t.reindex(columns=cols).sort_values(["ruleset", "game_id", "mark"],
                                              ignore_index=True)


def _ref_leather_table(games: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    games = distinct_games(games)
    lg = _ref_leather_games(games, events)
    rows = []
    for (ruleset,), g in st.iter_groups(games, ["ruleset"]):
        n = len(g)
        deal_of = dict(zip(g["game_id"], g["deal"], strict=False))
        for mark, m in lg[lg["ruleset"] == ruleset].groupby("mark"):
            useful = np.isin(g["game_id"].to_numpy(), m.loc[m["useful"], "game_id"])
            r = E.rate(useful.astype(float), g["deal"].to_numpy())
            c = m[m["claimed"]]
            cw = E.rate(c["claimer_won"].to_numpy(float), c["game_id"].map(deal_of).to_numpy())
            rows.append({
                "ruleset": ruleset, "mark": int(mark), "rank": int(m["rank"].iloc[0]),
                "games": n, "claimed": int(len(c)), "claim_rate": len(c) / n,
                "by_seat0": int((c["seat"] == 0).sum()),
                "by_leader": int((c["score_lead"] > 0).sum()),
                "by_trailer": int((c["score_lead"] < 0).sum()),
                "by_level": int((c["score_lead"] == 0).sum()),
                "lead_mean": float(c["score_lead"].mean()) if len(c) else st.NAN,
                "useful": int(useful.sum()), "useful_rate": r.value,
                "useful_lo": r.lo, "useful_hi": r.hi,
                "useful_of_claimed": float(c["useful"].mean()) if len(c) else st.NAN,
                "ordinary": int((c["placed"] & ~c["useful"]).sum()),
                "lost": int(m["lost"].sum()),
                "claimer_win": cw.value, "claimer_lo": cw.lo, "claimer_hi": cw.hi})
    return pd.DataFrame(rows)


def _ref_patch_table(games: pd.DataFrame, events: pd.DataFrame,
                     rulesets: dict | None) -> pd.DataFrame:
    games = distinct_games(games)
    self_play = games["bot0"] == games["bot1"]
    if self_play.any() and not self_play.all():
        games = games[self_play]
        events = events[events["game_id"].isin(games["game_id"])]
    rows = []
    sg_all = st.seat_games(games)
    buys_all = events[events["event"] == "buy"]
    for (ruleset,), g in st.iter_groups(games, ["ruleset"]):
        sg = sg_all[sg_all["ruleset"] == ruleset]
        key = sg["game_id"].to_numpy() * 2 + sg["seat"].to_numpy()
        won, deal = sg["won"].to_numpy(), sg["deal"].to_numpy()
        buys = buys_all[(buys_all["ruleset"] == ruleset)
                        & buys_all["game_id"].isin(g["game_id"])]
        rs = None if rulesets is None else rulesets.get(ruleset)
        ids = [p.id for p in rs.patches] if rs is not None else sorted(buys["patch"].unique())
        part = []
        for pid in ids:
            b = buys[buys["patch"] == pid]
            bought = np.isin(key, b["game_id"].to_numpy() * 2 + b["seat"].to_numpy())
            rb = E.rate(won[bought], deal[bought])
            ro = E.rate(won[~bought], deal[~bought])
            diff, dlo, dhi, p = patches._lpm_difference(won, bought, deal, 0.05)
            pos = b["position"].to_numpy(float)
            spec = rs.patch(pid) if rs is not None else None
            part.append({
                "ruleset": ruleset, "patch": pid,
                "cost": spec.cost if spec else (int(b["cost"].iloc[0]) if len(b) else st.NAN),
                "bought": int(b["game_id"].nunique()),
                "buy_rate": b["game_id"].nunique() / len(g),
                "by_seat0": int((b["seat"] == 0).sum()), "by_seat1": int((b["seat"] == 1).sum()),
                "pos_mean": float(pos.mean()) if len(pos) else st.NAN,
                "pos_median": float(np.median(pos)) if len(pos) else st.NAN,
                "pos_q1": float(np.percentile(pos, 25)) if len(pos) else st.NAN,
                "pos_q3": float(np.percentile(pos, 75)) if len(pos) else st.NAN,
                "buyer_win": rb.value, "buyer_lo": rb.lo, "buyer_hi": rb.hi,
                "other_win": ro.value, "other_lo": ro.lo, "other_hi": ro.hi,
                "diff": diff, "diff_lo": dlo, "diff_hi": dhi, "p_value": p})
        part = pd.DataFrame(part)
        part["p_holm"] = E.holm(part["p_value"])
        rows.append(part.sort_values("diff", ascending=False, na_position="last"))
    return pd.concat(rows, ignore_index=True)


def _ref_patch_bots(events: pd.DataFrame) -> pd.DataFrame:
    b = events[events["event"] == "buy"]
    t = (b.groupby(["ruleset", "patch", "bot"], observed=True)
         .agg(buys=("seq", "size"), pos_mean=("position", "mean")).reset_index())
    t["share"] = t["buys"] / t.groupby(["ruleset", "patch"])["buys"].transform("sum")
    return t[["ruleset", "patch", "bot", "buys", "share", "pos_mean"]]


def _ref_bonus_events(games: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    games = distinct_games(games)
    b = events[events["event"] == "bonus"][["game_id", "seat", "position", "seq"]]
    g = games[["game_id", "ruleset", "pairing", "deal"]]
    return b.merge(g, on="game_id", how="inner")[
        ["ruleset", "pairing", "game_id", "deal", "seat", "position", "seq"]]


def plain(df: pd.DataFrame) -> pd.DataFrame:
    """Categorical columns as text, a fresh index: for comparing values only."""
    out = df.reset_index(drop=True).copy()
    for c in out.columns:
        if isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype(str)
    return out


def same(new: pd.DataFrame, ref: pd.DataFrame, cols: list[str] | None = None) -> None:
    """Equal to the last bit (NaN equal to NaN), whatever the dtypes."""
    cols = cols or list(ref.columns)
    pd.testing.assert_frame_equal(plain(new[cols]), plain(ref[cols]), check_exact=True,
                                  check_dtype=False)


@pytest.fixture(scope="session")
def two_rulesets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.getbasetemp() / "two-editions.yaml"
    path.write_text("{name: two, rulesets: [edition1, edition2], games: 60, seed: 3}\n")
    return shared_run(tmp_path_factory, "two-editions", str(path), 60, ["greedy", "income"],
                      seed=3)


@pytest.mark.parametrize("which", ["small_run", "two_rulesets"])
@pytest.mark.slow
def test_event_tables_are_the_in_memory_ones_to_the_bit(which: str,
                                                        request: pytest.FixtureRequest):
    from patchsim.analysis.tables import EventSummary, read_games, scan_events, summarize
    from patchsim.reporting.report import load_run

    run = request.getfixturevalue(which)
    g_ref, e_ref = load_games(run), load_events(run)
    rulesets = load_run(run).rulesets
    games = read_games(table_path(run, "games"))
    assert "moves" not in games.columns and isinstance(games["bot0"].dtype, pd.CategoricalDtype)
    # games straddle the batches
    streamed = scan_events(table_path(run, "events"), games, batch_rows=97)
    assert isinstance(streamed, EventSummary) and streamed.events == len(e_ref)
    for g, e in ((games, streamed), (games, summarize(e_ref)), (g_ref, e_ref)):
        same(st.leather_games(g, e), _ref_leather_games(g_ref, e_ref))
        same(st.leather_table(g, e), _ref_leather_table(g_ref, e_ref))
        for rs in (None, rulesets):
            ref = _ref_patch_table(g_ref, e_ref, rs)
            same(st.patch_table(g, e, rs), ref)
        same(st.patch_bots(e), _ref_patch_bots(e_ref))
        once = e_ref[e_ref["game_id"].isin(distinct_games(g_ref)["game_id"])]
        same(st.patch_bots(e, g), _ref_patch_bots(once))
        same(st.bonus_events(g, e), _ref_bonus_events(g_ref, e_ref))
        same(st.bonus_table(g, e, rulesets), st.bonus_table(g_ref, summarize(e_ref), rulesets))
    # the games-only tables do not care whether the text columns are categorical
    same(st.pairing_table(games), st.pairing_table(g_ref))
    same(st.score_table(games, n_boot=99), st.score_table(g_ref, n_boot=99))
    same(st.ratings(games), st.ratings(g_ref))


def test_summary_does_not_depend_on_the_batch_size(small_run: Path):
    from patchsim.analysis.tables import read_games, scan_events

    games = read_games(table_path(small_run, "games"))
    events_path = table_path(small_run, "events")
    a, b = scan_events(events_path, games), scan_events(events_path, games, batch_rows=13)
    for name in ("marks", "claim_seat", "claim_lead", "claim_opp", "placed", "hole", "lost",
                 "place_count", "place_hits", "first_hole", "buy_seat", "buy_pos",
                 "bonus_row", "bonus_seat", "bonus_pos", "bonus_seq"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.patches == b.patches and a.patch_cost == b.patch_cost
    pd.testing.assert_frame_equal(a.bot_buys, b.bot_buys)


def test_summary_keeps_the_first_claim_and_the_first_placement():
    from patchsim.analysis.tables import summarize

    ev = _events([
        (7, 0, "leather_claim", 1, 26, False, 4, 20),
        (7, 1, "leather_place", 1, 26, False, 0, -1),
        (7, 2, "leather_claim", 0, 26, False, -9, 30),  # a second claim at 26: ignored
        (7, 3, "leather_place", 0, 32, True, 0, -1),
        (8, 0, "bonus", 1, 40, False, 0, -1),
    ])
    s = summarize(ev.iloc[::-1].sort_values("game_id", kind="stable"))  # seq order reversed
    r = s.rows([7, 8, 9])
    assert list(r[:2]) == [0, 1] and r[2] == -1  # game 9 has no events
    j = list(s.marks).index(26)
    assert s.claim_seat[0, j] == 0  # the first claim in stored order (here: seq 2)
    assert (s.place_count[0], s.place_hits[0]) == (2, 1)
    assert s.first_hole[0] == 0  # the placement with the lowest seq filled no hole
    assert list(s.bonus_row) == [1] and list(s.bonus_pos) == [40]


def test_run_summary_of_the_compact_games_table(small_run: Path):
    from patchsim.analysis.tables import read_games

    ref = run_summary(load_games(small_run))
    pd.testing.assert_frame_equal(run_summary(read_games(table_path(small_run, "games"))), ref,
                                  check_exact=True)
