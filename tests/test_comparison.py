"""The one paired comparison (analysis.comparison) and the one bootstrap over deals
(analysis.bootstrap): families of verdicts, and reproducible resampling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis import estimators as E
from patchsim.analysis.bootstrap import RESAMPLES, bootstrap_over_deals
from patchsim.analysis.comparison import paired_comparison


def _deals(values: dict[str, np.ndarray], pairing: str = "a vs a") -> pd.DataFrame:
    n = len(next(iter(values.values())))
    return pd.DataFrame({"pairing": pairing, "deal": np.arange(n), **values})


def _two(seed: int, shift: float, n: int = 200) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    a = rng.binomial(2, 0.5, n) / 2
    b = np.clip(a + rng.choice([-0.5, 0, 0.5], n, p=[0.3 - shift, 0.4, 0.3 + shift]), 0, 1)
    sa = rng.normal(10, 5, n)
    return (_deals({"first_player_win": a, "mean_score": sa}),
            _deals({"first_player_win": b, "mean_score": sa + rng.normal(0.1, 1, n)}))


def test_one_row_per_metric_with_the_estimator_layer_numbers() -> None:
    base, var = _two(1, 0.1)
    t = paired_comparison(base, var, ["first_player_win", "mean_score"], family="none")
    assert list(t["metric"]) == ["first_player_win", "mean_score"]
    d = E.paired_difference(base["first_player_win"], var["first_player_win"],
                            bounds=E.RATE_DIFF_BOUNDS)
    r = t.iloc[0]
    assert (r["diff"], r["lo"], r["hi"], r["deals"]) == (d.value, d.lo, d.hi, d.deals)
    v = E.verdict(d, 0.02)
    assert r["verdict_kind"] == v.kind and r["p_adjusted"] == v.p_difference
    assert r["verdict"] == v.text(100.0, " points", 1)
    # default margins from the registry: 2 points for the rate, 1 point for the score
    assert list(t["margin"]) == [0.02, 1.0]
    assert r["base"] == pytest.approx(base["first_player_win"].mean())


def test_the_family_is_explicit_and_covers_every_row_of_the_call() -> None:
    parts = [_two(s, 0.05) for s in range(4)]
    base = pd.concat([b.assign(pairing=f"p{k}") for k, (b, _) in enumerate(parts)])
    var = pd.concat([v.assign(pairing=f"p{k}") for k, (_, v) in enumerate(parts)])
    raw = paired_comparison(base, var, ["first_player_win"], family="none")
    holm = paired_comparison(base, var, ["first_player_win"], family="holm")
    bh = paired_comparison(base, var, ["first_player_win"], family="bh")
    assert list(holm["pairing"]) == ["p0", "p1", "p2", "p3"]
    np.testing.assert_array_equal(raw["p_adjusted"], raw["p"])
    np.testing.assert_allclose(holm["p_adjusted"], E.holm(raw["p"]))
    np.testing.assert_allclose(bh["p_adjusted"], E.benjamini_hochberg(raw["p"]))
    assert set(holm["family"]) == {"holm"}
    with pytest.raises(ValueError, match="family"):
        paired_comparison(base, var, ["first_player_win"], family="bonferroni")


def test_several_variants_and_margins_per_metric() -> None:
    base, v1 = _two(3, 0.0)
    _, v2 = _two(3, 0.2)
    var = pd.concat([v1.assign(ruleset="v1"), v2.assign(ruleset="v2")])
    t = paired_comparison(base, var, ["first_seat_win", "mean_score"],  # an alias is fine
                          margin={"first_player_win": 0.05, "mean_score": 0.0})
    assert list(zip(t["ruleset"], t["metric"], strict=True)) == [
        ("v1", "first_player_win"), ("v1", "mean_score"), ("v2", "first_player_win"),
        ("v2", "mean_score")]
    assert list(t["margin"]) == [0.05, 0.0, 0.05, 0.0]
    # a margin of 0 asks only "does it differ": never "equivalent"
    assert "equivalent" not in set(t.loc[t["metric"] == "mean_score", "verdict_kind"])


def test_deals_pair_up_by_deal_number_not_by_row() -> None:
    base, var = _two(5, 0.1, 50)
    shuffled = var.sample(frac=1.0, random_state=0)
    a = paired_comparison(base, var, ["first_player_win"], family="none")
    b = paired_comparison(base, shuffled.iloc[:40], ["first_player_win"], family="none")
    assert a["deals"].iloc[0] == 50 and b["deals"].iloc[0] == 40
    c = paired_comparison(base, shuffled, ["first_player_win"], family="none")
    assert c["diff"].iloc[0] == pytest.approx(a["diff"].iloc[0])


def test_bootstrap_is_seeded_and_chunking_does_not_change_it() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))

    def gap(s: np.ndarray) -> np.ndarray:
        return np.abs(s[..., 1].mean(axis=-1)) - np.abs(s[..., 0].mean(axis=-1))

    a = bootstrap_over_deals(x, gap, seed=7)
    b = bootstrap_over_deals(x, gap, seed=7)
    assert (a.lo, a.hi) == (b.lo, b.hi) and len(a.replicates) == RESAMPLES
    assert a.point == pytest.approx(gap(x[None])[0])
    assert a.lo < a.point < a.hi
    # the same stream as one draw of every resample at once
    idx = np.random.default_rng(7).integers(0, 300, size=(RESAMPLES, 300))
    np.testing.assert_array_equal(a.replicates, gap(x[idx]))
    c = bootstrap_over_deals(x, gap, seed=8)
    assert c.lo != a.lo
    one = bootstrap_over_deals(x[:1], gap)
    assert np.isnan(one.lo) and np.isnan(one.hi)


def test_a_family_per_metric_adjusts_each_over_its_own_rows() -> None:
    """compare asks the primary question (Holm) and exploratory ones (BH) in one call."""
    parts = [_two(s, 0.05) for s in range(3)]
    base = pd.concat([b.assign(pairing=f"p{k}") for k, (b, _) in enumerate(parts)])
    var = pd.concat([v.assign(pairing=f"p{k}") for k, (_, v) in enumerate(parts)])
    names = ["first_player_win", "mean_score"]
    raw = paired_comparison(base, var, names, family="none")
    split = paired_comparison(base, var, names,
                              family={"first_player_win": "holm", "mean_score": "bh"})
    prim = (split["metric"] == "first_player_win").to_numpy()
    np.testing.assert_allclose(split["p_adjusted"][prim], E.holm(raw["p"][prim]))
    np.testing.assert_allclose(split["p_adjusted"][~prim],
                               E.benjamini_hochberg(raw["p"][~prim]))
    assert list(split["family"]) == ["holm", "bh"] * 3
    with pytest.raises(ValueError, match="no family for mean_score"):
        paired_comparison(base, var, names, family={"first_player_win": "holm"})


def test_the_unpaired_interval_is_wider_when_the_deals_correlate() -> None:
    base, var = _two(3, 0.0)
    t = paired_comparison(base, var, ["mean_score"], family="none", unpaired=True).iloc[0]
    b, v = base["mean_score"].to_numpy(), var["mean_score"].to_numpy()
    se = np.hypot(b.std(ddof=1), v.std(ddof=1)) / np.sqrt(len(b))
    half = E.t_ppf(0.975, len(b) - 1) * se
    assert t["lo_unpaired"] == pytest.approx(t["diff"] - half)
    assert t["hi_unpaired"] == pytest.approx(t["diff"] + half)
    assert t["corr"] == pytest.approx(np.corrcoef(b, v)[0, 1])
    assert t["hi_unpaired"] - t["lo_unpaired"] > 5 * (t["hi"] - t["lo"])  # pairing pays


def test_an_empty_group_is_a_row_of_zero_deals_unless_skipped() -> None:
    base, var = _two(4, 0.0, n=30)
    base = base.assign(mean_score=np.nan)
    kept = paired_comparison(base, var, ["first_player_win", "mean_score"], family="holm")
    assert list(kept["deals"]) == [30, 0] and kept["verdict_kind"].iat[1] == "undefined"
    skipped = paired_comparison(base, var, ["first_player_win", "mean_score"],
                                family="holm", skip_empty=True)
    assert list(skipped["metric"]) == ["first_player_win"]
