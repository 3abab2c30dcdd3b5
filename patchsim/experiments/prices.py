"""Causal patch prices: what a patch is worth, by restricted play and by price response.

The report's buyer-versus-non-buyer win rates are an association (cheap patches are bought by
the player who is behind). Here the patch is the treatment:

1. **Restricted play** (Jaffe et al., "Evaluating Competitive Game Balance with Restricted
   Play", AIIDE 2012). A bot forbidden to buy patch X plays the same bot unrestricted on
   common seat-swapped deals. The value of X is ``0.5 - (win rate of the restricted bot)``:
   how many points of win rate the option to buy X is worth at its price. Each deal (its two
   games) is one observation; the interval and the verdict (margin +-2 points, Holm over
   the patches) come from :mod:`patchsim.analysis.estimators`.
2. **Price response.** X's cost is moved by each delta (``patch_changes``; a cost below 0 is
   skipped) and the restricted-play value measured again on the same deals. A straight line
   fitted to value against cost (least squares over the per-deal values; every cost has the
   same deals, so this is the line through the per-cost means) gives the cost at which the
   value crosses zero: the *fair price*, the highest cost at which having X on offer still
   helps the bot. Its 95% interval is a seeded bootstrap over deals (a deal is resampled
   with all its prices, which keeps the pairing across prices).

For a player that used every option well a value could not be negative; a negative value
says the bot buys X when it should not (X is a trap for this bot at this price).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis.estimators import (
    DEFAULT_MARGIN,
    Estimate,
    benjamini_hochberg,
    deal_values,
    difference_pvalue,
    holm,
    mean_estimate,
    verdict,
)
from patchsim.bots.registry import REGISTRY, BotSpecError, make_bot, parse_spec, resolve_patch_id
from patchsim.engine.ruleset import MAX_VALUE, Ruleset, load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.engine.yamlfile import quote
from patchsim.play.config import MAX_GAMES
from patchsim.play.simulate import simulate
from patchsim.play.storage import read_manifest
from patchsim.reporting.plots import new_figure, png_bytes

DEFAULT_DELTAS = (-2, -1, 0, 1, 2)
BOOTSTRAP = 2000
VALUE_BOUNDS = (-0.5, 0.5)  # a value is 0.5 minus a win rate
MAX_DELTAS = 50  # cost changes per patch: each one plays the study's games again


class PricesError(ValueError):
    """A prices study that cannot run as asked (unknown patch, bot that cannot be
    restricted, bad deltas); the message says what to give instead."""


# --- the price response fit ---------------------------------------------------------------------
@dataclass(frozen=True)
class Crossing:
    """The line ``value = intercept + slope * cost`` through the per-cost means and the cost
    where it crosses zero (``fair``, NaN if the slope is 0) with its bootstrap interval.
    ``in_range``: the crossing lies within the costs measured."""

    intercept: float
    slope: float
    slope_lo: float
    slope_hi: float
    fair: float
    fair_lo: float
    fair_hi: float
    in_range: bool
    costs: tuple[int, ...]

    @property
    def flat(self) -> bool:
        """The slope's interval holds 0: no measurable price response in the range."""
        return not (self.slope_hi < 0 or self.slope_lo > 0)

    def text(self) -> str:
        if len(self.costs) < 2:
            return "one price only: no price response"
        if self.flat and self.in_range:
            return (f"not identified: value flat over {min(self.costs)}..{max(self.costs)} "
                    f"(line crosses at {self.fair:.1f} [{_num(self.fair_lo)}, "
                    f"{_num(self.fair_hi)}])")
        if not self.in_range:
            return (f"no crossing in range {min(self.costs)}..{max(self.costs)}"
                    + (f" (line crosses at {self.fair:.1f})" if math.isfinite(self.fair) else ""))
        return f"{self.fair:.1f} [{_num(self.fair_lo)}, {_num(self.fair_hi)}]"


def _num(x: float) -> str:
    return f"{x:.1f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")


def _line(costs: np.ndarray, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares intercepts and slopes of ``means`` (rows: replicates) on ``costs``."""
    xc = costs - costs.mean()
    slope = (means - means.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)
    return means.mean(axis=-1) - slope * costs.mean(), slope


def _zero(intercept: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Where the lines cross zero; +-inf for a flat line (the sign says where the value
    stays), so that percentiles of many replicates stay ordered."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = -intercept / slope
    flat = slope == 0
    return np.where(flat, np.where(intercept > 0, np.inf, -np.inf), x)


def fit_crossing(costs: Sequence[float], values: np.ndarray, *, seed: int = 0,
                 boot: int = BOOTSTRAP, level: float = 0.95) -> Crossing:
    """The fair price from per-deal values: ``values[i, j]`` is deal i's value at
    ``costs[j]`` (the same deals at every cost). The line is fitted by least squares over
    the per-deal values (equal deals per cost: the line through the per-cost means); the
    intervals are percentiles of a bootstrap over deals seeded by ``seed``."""
    x = np.asarray(costs, dtype=float)
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] != len(x):
        raise ValueError(f"values: expected (deals, {len(x)}) per-deal values, got {v.shape}")
    v = v[np.isfinite(v).all(axis=1)]
    costs_t = tuple(int(c) for c in x)
    if len(x) < 2 or len(v) == 0:
        nan = math.nan
        return Crossing(nan, nan, nan, nan, nan, nan, nan, False, costs_t)
    a, b = _line(x, v.mean(axis=0))
    fair = float(_zero(np.array(a), np.array(b)))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(v), size=(boot, len(v)))
    # per-cost means of each resampled set of deals, then one line per replicate
    means = np.stack([v[:, j][idx].mean(axis=1) for j in range(len(x))], axis=1)
    ba, bb = _line(x, means)
    zeros = _zero(ba, bb)
    q = ((1 - level) / 2, (1 + level) / 2)
    # "lower"/"higher" pick replicate values: no interpolation between infinities
    f_lo = float(np.quantile(zeros, q[0], method="lower"))
    f_hi = float(np.quantile(zeros, q[1], method="higher"))
    s_lo, s_hi = (float(s) for s in np.quantile(bb, q))
    in_range = math.isfinite(fair) and x.min() <= fair <= x.max()
    return Crossing(float(a), float(b), s_lo, s_hi, fair, f_lo, f_hi, in_range, costs_t)


# --- the study ------------------------------------------------------------------------------------
@dataclass
class PriceStudy:
    """Everything a prices study measured: per (patch, cost) the per-deal values of the
    patch (0.5 minus the restricted bot's per-deal win rate), aligned by deal."""

    ruleset: Ruleset
    bot: str
    patches: list[str]
    deltas: list[int]
    games: int
    seed: int
    margin: float = DEFAULT_MARGIN
    # (patch, delta) -> per-deal values in deal order; (patch, delta) -> buys per game
    values: dict[tuple[str, int], np.ndarray] = field(default_factory=dict, repr=False)
    buys: dict[tuple[str, int], float] = field(default_factory=dict, repr=False)

    def base_cost(self, patch: str) -> int:
        return self.ruleset.patch(patch).cost

    def deltas_of(self, patch: str) -> list[int]:
        """The deltas measured for ``patch`` (costs below 0 are skipped)."""
        return [d for d in self.deltas if (patch, d) in self.values]


def restricted_spec(bot: str, patch: str) -> str:
    """The spec of ``bot`` forbidden to buy ``patch``."""
    name, params = parse_spec(bot)
    info = REGISTRY.get(name)
    if info is None or "forbid" not in info.params:
        able = ", ".join(n for n, i in REGISTRY.items() if "forbid" in i.params)
        raise PricesError(f"bot {quote(bot)} cannot be restricted: forbid= is a parameter of "
                          f"{able} only")
    if params.get("forbid"):
        raise PricesError(f"bot {quote(bot)} is already restricted (forbid=); give the "
                          "unrestricted bot, the study forbids each patch in turn")
    return make_bot({"name": name, **params, "forbid": patch}).spec


def _parse_patches(ruleset: Ruleset, patches: Sequence[str] | None) -> list[str]:
    ids = [p.id for p in ruleset.patches]
    if not patches:
        return ids
    out = []
    for given in patches:
        pid = resolve_patch_id(given.strip(), ids)
        if pid is None:
            raise PricesError(f"patches: {quote(given.strip())} is not a patch of ruleset "
                              f"{ruleset.name!r} (patches: {', '.join(ids)})")
        if pid not in out:
            out.append(pid)
    return out


def measure_prices(ruleset: str | os.PathLike[str] | Ruleset, bot: str,
                   patches: Sequence[str] | None = None, *,
                   deltas: Sequence[int] = DEFAULT_DELTAS, games: int = 1000, seed: int = 1,
                   jobs: int = 1, margin: float = DEFAULT_MARGIN,
                   echo: Callable[[str], None] | None = None,
                   bot_path: Sequence[str] = ()) -> PriceStudy:
    """Play the study: for each patch (default every patch) and each cost ``base + delta``
    (0 always included; costs below 0 skipped), ``games`` seat-swapped games between ``bot``
    forbidden the patch and ``bot``, on the same deals (``seed``) for every patch and cost.
    Import-path bots are looked for in ``bot_path`` too (as :func:`simulate` does).

    Raises PricesError, RulesetError, BotSpecError or RunError for a bad request before
    playing anything (except a ruleset variant a cost change makes invalid)."""
    rs = ruleset if isinstance(ruleset, Ruleset) else load_ruleset(ruleset)
    ids = _parse_patches(rs, patches)
    if games < 2:
        raise PricesError(f"games: {games} is too few; give at least 2 (one seat-swapped "
                          "deal) per patch and price")
    if games > MAX_GAMES:
        raise PricesError(f"games: at most {MAX_GAMES:,} per patch and price, got {games:,}")
    try:
        base = make_bot(bot, bot_path=bot_path).spec
    except BotSpecError as e:
        raise PricesError(f"bots: {e}") from None
    ds = sorted({0, *(int(d) for d in deltas)})
    if len(ds) > MAX_DELTAS:
        raise PricesError(f"deltas: at most {MAX_DELTAS} cost changes, got {len(ds)}")
    # a cost the ruleset refuses would surface as an override problem of some variant
    top = MAX_VALUE - max(p.cost for p in rs.patches)
    too_far = [d for d in ds if d > top or d < -MAX_VALUE]
    if too_far:
        raise PricesError(f"deltas: {too_far[0]} moves a cost beyond what a ruleset allows "
                          f"(costs are at most {MAX_VALUE:,}); give smaller changes")
    study = PriceStudy(rs, base, ids, ds, games, seed, margin)
    say = echo or (lambda _line: None)
    for n, pid in enumerate(ids, 1):
        restricted = restricted_spec(base, pid)
        # an unknown patch fails here, not in a worker
        make_bot(restricted).bind(compile_ruleset(rs))
        cost = rs.patch(pid).cost
        mine = [d for d in ds if cost + d >= 0]
        variants = [rs if d == 0 else rs.with_overrides(
            {"name": f"{rs.name}-{pid}-cost{cost + d}",
             "patch_changes": {pid: {"cost": cost + d}}}) for d in mine]
        say(f"[{n}/{len(ids)}] {pid} (cost {cost}): costs "
            f"{', '.join(str(cost + d) for d in mine)}, {games} games each")
        sim = simulate(variants, [base, restricted], games=games, seed=seed, jobs=jobs,
                       pairings="cross", bot_path=bot_path)
        g, ev = sim.games, sim.events
        for d, v in zip(mine, variants, strict=True):
            rows = g[g["ruleset_hash"] == v.content_hash()]
            won = (rows["winner_bot"] == restricted).to_numpy()
            study.values[(pid, d)] = 0.5 - deal_values(won, rows["deal"].to_numpy())
            # context: how often the unrestricted bot buys the patch at this cost
            bought = ev[(ev["game_id"].isin(rows["game_id"])) & (ev["event"] == "buy")
                        & (ev["patch"] == pid) & (ev["bot"] == base)]
            study.buys[(pid, d)] = len(bought) / max(1, len(rows))
    return study


# --- tables -------------------------------------------------------------------------------------
def _value(x: np.ndarray) -> Estimate:
    return mean_estimate(x, bounds=VALUE_BOUNDS)


def price_table(study: PriceStudy) -> pd.DataFrame:
    """One row per patch and cost: the restricted-play value with its per-deal interval and
    verdict. p-values are Holm-adjusted over the patches at their printed cost (the primary
    question) and Benjamini-Hochberg-adjusted over the other costs (exploratory)."""
    rows = []
    for pid in study.patches:
        base = study.base_cost(pid)
        for d in study.deltas_of(pid):
            est = _value(study.values[(pid, d)])
            rows.append({"patch": pid, "base_cost": base, "delta": d, "cost": base + d,
                         "deals": est.deals, "games": 2 * est.deals,
                         "restricted_win_rate": 0.5 - est.value, "value": est.value,
                         "value_lo": est.lo, "value_hi": est.hi, "value_se": est.se,
                         "p_value": difference_pvalue(est),
                         "unrestricted_buys_per_game": study.buys.get((pid, d), math.nan),
                         "_est": est})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    primary = df["delta"] == 0
    df["p_adjusted"] = math.nan
    df.loc[primary, "p_adjusted"] = holm(df.loc[primary, "p_value"].to_numpy())
    df.loc[~primary, "p_adjusted"] = benjamini_hochberg(df.loc[~primary, "p_value"].to_numpy())
    df["verdict"] = [verdict(e, study.margin, p_difference=p).text()
                     for e, p in zip(df["_est"], df["p_adjusted"], strict=True)]
    return df.drop(columns="_est")


def crossings(study: PriceStudy) -> dict[str, Crossing]:
    """The price-response fit of every patch (bootstrap seeded by the study's seed)."""
    out = {}
    for pid in study.patches:
        ds = study.deltas_of(pid)
        base = study.base_cost(pid)
        mat = np.column_stack([study.values[(pid, d)] for d in ds])
        out[pid] = fit_crossing([base + d for d in ds], mat, seed=study.seed)
    return out


def _reading(value: Estimate, p_adj: float, margin: float, cross: Crossing) -> str:
    """A plain-language reading of one patch's value at its printed cost."""
    v = verdict(value, margin, p_difference=p_adj)
    if v.kind == "equivalent":
        return "no measurable value: buying it is worth no more than passing it by"
    if v.kind == "undecided":
        return "undecided"
    if v.kind == "undefined":
        return "not measured (no deals)"
    fair = f" (fair price about {cross.fair:.0f})" if cross.in_range and not cross.flat else ""
    if value.value > 0:
        return f"worth having: underpriced for this bot{fair}"
    return f"a trap: the bot does better without it, overpriced for this bot{fair}"


def patch_summary(study: PriceStudy, table: pd.DataFrame | None = None,
                  fits: dict[str, Crossing] | None = None) -> pd.DataFrame:
    """One row per patch: value at the printed cost (Holm verdict), slope of the value per
    button of cost, fair price with its interval, and a reading."""
    table = price_table(study) if table is None else table
    fits = crossings(study) if fits is None else fits
    rows = []
    for pid in study.patches:
        r = table[(table["patch"] == pid) & (table["delta"] == 0)].iloc[0]
        est = _value(study.values[(pid, 0)])
        c = fits[pid]
        rows.append({"patch": pid, "cost": int(r["cost"]), "value": r["value"],
                     "value_lo": r["value_lo"], "value_hi": r["value_hi"],
                     "p_holm": r["p_adjusted"], "verdict": r["verdict"],
                     "slope_per_button": c.slope, "slope_lo": c.slope_lo,
                     "slope_hi": c.slope_hi, "fair_price": c.fair if c.in_range else math.nan,
                     "fair_lo": c.fair_lo if c.in_range else math.nan,
                     "fair_hi": c.fair_hi if c.in_range else math.nan,
                     "fair_text": c.text(),
                     "reading": _reading(est, float(r["p_adjusted"]), study.margin, c)})
    return pd.DataFrame(rows)


def _pts(x: float) -> str:
    return f"{100 * x:+.1f}" if math.isfinite(x) else "n/a"


def prices_markdown(study: PriceStudy, table: pd.DataFrame | None = None,
                    summary: pd.DataFrame | None = None) -> str:
    """The study as Markdown: method, one row per patch, then every cost."""
    table = price_table(study) if table is None else table
    summary = patch_summary(study, table) if summary is None else summary
    deals = study.games // 2 + study.games % 2
    lines = [
        f"# Patch prices: {study.ruleset.name}, bot {study.bot}", "",
        f"Restricted play: `{study.bot}` forbidden to buy a patch plays `{study.bot}` on "
        f"{deals} common seat-swapped deals (seed {study.seed}) per patch and cost. Value = "
        "0.5 - the restricted bot's win rate, in points of win rate; 95% intervals over deals "
        f"(the deal is the unit). Verdicts: margin +-{100 * study.margin:.0f} points; Holm "
        "over the patches at the printed cost, Benjamini-Hochberg over the other costs "
        "(exploratory). Fair price: where a least-squares line of value on cost crosses 0, "
        "with a 95% bootstrap interval over deals.", "",
        "| patch | cost | value (points) [95%] | verdict | value per +1 button | fair price "
        "[95%] | reading |",
        "|---|---:|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        slope = ("n/a" if not math.isfinite(r["slope_per_button"]) else
                 f"{_pts(r['slope_per_button'])} [{_pts(r['slope_lo'])}, "
                 f"{_pts(r['slope_hi'])}]")
        lines.append(f"| {r['patch']} | {r['cost']} | {_pts(r['value'])} "
                     f"[{_pts(r['value_lo'])}, {_pts(r['value_hi'])}] | {r['verdict']} | "
                     f"{slope} | {r['fair_text']} | {r['reading']} |")
    lines += ["", "## Every cost", "",
              "| patch | cost | deals | restricted bot wins | value (points) [95%] | verdict "
              "| unrestricted buys / game |", "|---|---:|---:|---:|---|---|---:|"]
    for _, r in table.iterrows():
        lines.append(f"| {r['patch']} | {r['cost']} | {r['deals']} | "
                     f"{100 * r['restricted_win_rate']:.1f}% | {_pts(r['value'])} "
                     f"[{_pts(r['value_lo'])}, {_pts(r['value_hi'])}] | {r['verdict']} | "
                     f"{r['unrestricted_buys_per_game']:.2f} |")
    lines += ["", "The restricted bot's own search (mcts) never buys the patch, but its "
              "rollouts may; its opponent is never restricted."]
    return "\n".join(lines) + "\n"


def plot_prices(study: PriceStudy, table: pd.DataFrame | None = None,
                fits: dict[str, Crossing] | None = None):
    """Value against cost per patch: per-cost intervals, the fitted line, the printed cost
    (dotted) and the fair price with its interval (shaded). A matplotlib Figure."""
    table = price_table(study) if table is None else table
    fits = crossings(study) if fits is None else fits
    n = len(study.patches)
    cols = min(4, n)
    nrows = math.ceil(n / cols)
    fig = new_figure(3.2 * cols, 2.6 * nrows)
    axes = fig.subplots(nrows, cols, squeeze=False, sharey=True)
    for k, pid in enumerate(study.patches):
        ax = axes[k // cols][k % cols]
        t = table[table["patch"] == pid]
        x = t["cost"].to_numpy(dtype=float)
        y = 100 * t["value"].to_numpy(dtype=float)
        err = np.nan_to_num(100 * np.vstack([t["value"] - t["value_lo"],
                                             t["value_hi"] - t["value"]]), nan=0.0)
        ax.axhline(0, color="#888", lw=0.8)
        ax.axvline(study.base_cost(pid), color="#888", lw=0.8, ls=":")
        ax.errorbar(x, y, yerr=err, fmt="o", color="#1f77b4", capsize=3)
        c = fits[pid]
        if math.isfinite(c.slope):
            xs = np.array([x.min(), x.max()])
            ax.plot(xs, 100 * (c.intercept + c.slope * xs), color="#d62728", lw=1.2)
        if c.in_range and not c.flat:  # a flat line crosses anywhere: draw no fair price
            lo = max(c.fair_lo, x.min() - 1)
            hi = min(c.fair_hi, x.max() + 1)
            ax.axvspan(lo, hi, color="#d62728", alpha=0.12)
            ax.plot([c.fair], [0], marker="x", color="#d62728", ms=8)
        ax.set_title(f"{pid} (cost {study.base_cost(pid)})", fontsize=10)
        ax.set_xlabel("cost (buttons)")
        if k % cols == 0:
            ax.set_ylabel("value (points of win rate)")
    for k in range(n, nrows * cols):
        axes[k // cols][k % cols].axis("off")
    return fig


# --- writing --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PricesResult:
    folder: Path
    table: pd.DataFrame
    summary: pd.DataFrame
    markdown: str


STUDY_FILE = "study.json"  # what a prices folder measured: ruleset, bot, games, seed


def study_header(study: PriceStudy) -> dict[str, Any]:
    """What a study measured, for whoever reads its folder later (e.g. a report)."""
    return {"ruleset": study.ruleset.name, "ruleset_hash": study.ruleset.content_hash(),
            "bot": study.bot, "games": study.games, "seed": study.seed,
            "deltas": list(study.deltas), "margin": study.margin,
            "patches": list(study.patches)}


def prices_for_run(run_dir: str | os.PathLike[str], bot: str | None = None, *,
                   games: int = 400, deltas: Sequence[int] = DEFAULT_DELTAS, jobs: int = 1,
                   echo: Callable[[str], None] | None = None) -> PricesResult:
    """A prices study for a run, written to ``run_dir/prices`` where its report finds it:
    the run's first ruleset, ``bot`` (default the run's first bot), the run's seed. Raises
    PricesError when the folder already holds a study (it is kept, never overwritten)."""
    _, config = read_manifest(Path(run_dir))
    target = Path(run_dir) / PRICES_FOLDER
    if target.exists():
        raise PricesError(f"{target} already holds a prices study; the report shows it (remove "
                          "the folder to measure again)")
    study = measure_prices(config.rulesets[0], bot or config.bots[0], deltas=deltas,
                           games=games, seed=config.seed, jobs=jobs, echo=echo)
    return write_prices(study, target)


PRICES_FOLDER = "prices"  # a run's prices study, which its report shows


def write_prices(study: PriceStudy, out_dir: str | os.PathLike[str]) -> PricesResult:
    """Write prices.csv (every patch and cost), patches.csv (one row per patch), prices.md,
    prices.png and study.json (what was measured) into ``out_dir``, a folder that must not
    exist yet: the files are written into a temporary folder beside it, which is renamed into
    place when complete, so the folder appears whole or not at all."""
    target = Path(out_dir)
    if target.exists():
        raise PricesError(f"{target} already exists; write the study to a new folder")
    table = price_table(study)
    fits = crossings(study)
    summary = patch_summary(study, table, fits)
    text = prices_markdown(study, table, summary)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        table.to_csv(tmp / "prices.csv", index=False)
        summary.to_csv(tmp / "patches.csv", index=False)
        (tmp / "prices.md").write_text(text, encoding="utf-8")
        (tmp / "prices.png").write_bytes(png_bytes(plot_prices(study, table, fits)))
        (tmp / STUDY_FILE).write_text(json.dumps(study_header(study), indent=1),
                                      encoding="utf-8")
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp leaves 0700
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return PricesResult(target, table, summary, text)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


__all__ = ["Crossing", "PriceStudy", "PricesError", "PricesResult", "crossings", "fit_crossing",
           "measure_prices", "patch_summary", "plot_prices", "price_table", "prices_for_run",
           "prices_markdown", "restricted_spec", "study_header", "write_prices"]
