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
   skipped) and the restricted-play value measured again on the same deals. The value
   falls with the cost until the bot stops buying X, where it flattens (at 0 in
   expectation; on one set of deals wherever their shared noise puts it), so a straight
   line would put the crossing wherever the measured costs happen to lie, and a crossing of
   a fixed small level depends on which side of it the flat tail sits; a broken line fitted
   to every cost measured (falling, then flat) gives the cost at which the value stops
   falling: the *fair price*, the highest cost at which having X on offer still helps the
   bot. Its 95% interval is a seeded bootstrap over deals (a deal is resampled with all its
   prices, and each replicate curve refitted). A scan widens itself until that interval is
   bounded by the costs measured (:func:`widen_costs`) and says "not found in a..b" if the
   fair price still lies outside them.
3. **Both directions.** An overpriced patch is one the bot stops buying, so its value at the
   printed price is about 0 ("no measurable value"): the downward scan finds the price at
   which the bot starts to buy it and gain from it, and :func:`price_reading` says
   "overpriced by about k buttons [lo, hi]" when that fair price lies clearly below the
   printed cost; "underpriced" needs the value at the printed cost beyond the margin.

For a player that used every option well a value could not be negative; a negative value
says the bot buys X when it should not (X is a trap for this bot at this price).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from patchsim.analysis.comparison import decide
from patchsim.analysis.estimators import (
    DEFAULT_MARGIN,
    Estimate,
    Verdict,
    deal_values,
    difference_pvalue,
    mean_estimate,
)
from patchsim.bots.registry import REGISTRY, BotSpecError, make_bot, parse_spec, resolve_patch_id
from patchsim.document.format import pts
from patchsim.document.model import Document
from patchsim.document.render import to_markdown
from patchsim.engine.ruleset import MAX_VALUE, Ruleset, load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.engine.yamlfile import quote
from patchsim.errors import PatchsimError
from patchsim.experiments.price_fit import (
    BOOTSTRAP,
    NEGLIGIBLE,
    Crossing,
    fit_crossing,
    isotonic_decreasing,
    widen_costs,
)
from patchsim.experiments.price_fit import price_num as _num
from patchsim.experiments.prices_document import prices_document
from patchsim.play.config import MAX_GAMES
from patchsim.play.simulate import simulate

DEFAULT_DELTAS = (-2, -1, 0, 1, 2)
VALUE_BOUNDS = (-0.5, 0.5)  # a value is 0.5 minus a win rate
MAX_DELTAS = 50  # cost changes per patch: each one plays the study's games again


class PricesError(PatchsimError, ValueError):
    """A prices study that cannot run as asked (unknown patch, bot that cannot be
    restricted, bad deltas); the message says what to give instead."""


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
        """The deltas measured for ``patch``, in order (costs below 0 are skipped; a widened
        scan adds its own)."""
        return sorted(d for p, d in self.values if p == patch)


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
            raise PricesError.about("patches", f"{quote(given.strip())} is not a patch of "
                                    f"ruleset {ruleset.name!r} (patches: {', '.join(ids)})",
                                    value=given)
        if pid not in out:
            out.append(pid)
    return out


MAX_WIDEN_ROUNDS = 5  # a scan widens itself at most this often per patch


def measure_prices(ruleset: str | os.PathLike[str] | Ruleset, bot: str,
                   patches: Sequence[str] | None = None, *,
                   deltas: Sequence[int] = DEFAULT_DELTAS, games: int = 1000, seed: int = 1,
                   jobs: int = 1, margin: float = DEFAULT_MARGIN, widen: bool = True,
                   max_cost: int | None = None,
                   echo: Callable[[str], None] | None = None,
                   bot_path: Sequence[str] = ()) -> PriceStudy:
    """Play the study: for each patch (default every patch) and each cost ``base + delta``
    (0 always included; costs below 0 skipped), ``games`` seat-swapped games between ``bot``
    forbidden the patch and ``bot``, on the same deals (``seed``) for every patch and cost.
    Import-path bots are looked for in ``bot_path`` too (as :func:`simulate` does).

    With ``widen`` (the default) a patch whose fair price's interval is not bounded by the
    costs measured gets more costs, on the same deals (:func:`widen_costs`: downward when
    the value is flat or the interval reaches below, upward when the value still falls at
    the highest cost or the interval reaches above; at most MAX_WIDEN_ROUNDS rounds, down
    to 0 and up to ``max_cost``, default the base cost + 20), so that an overpriced patch,
    which the bot stops buying, shows the price at which it starts to gain from it.

    Raises PricesError, RulesetError, BotSpecError or RunError for a bad request before
    playing anything (except a ruleset variant a cost change makes invalid)."""
    rs = ruleset if isinstance(ruleset, Ruleset) else load_ruleset(ruleset)
    ids = _parse_patches(rs, patches)
    if games < 2:
        raise PricesError.about("games", f"{games} is too few; give at least 2 (one "
                                "seat-swapped deal) per patch and price", value=games)
    if games > MAX_GAMES:
        raise PricesError.about("games", f"at most {MAX_GAMES:,} per patch and price, got "
                                f"{games:,}", value=games)
    try:
        base = make_bot(bot, bot_path=bot_path).spec
    except BotSpecError as e:
        raise PricesError.about("bots", str(e), value=bot) from None
    ds = sorted({0, *(int(d) for d in deltas)})
    if len(ds) > MAX_DELTAS:
        raise PricesError.about("deltas", f"at most {MAX_DELTAS} cost changes, got "
                                f"{len(ds)}", value=list(deltas))
    # a cost the ruleset refuses would surface as an override problem of some variant
    top = MAX_VALUE - max(p.cost for p in rs.patches)
    too_far = [d for d in ds if d > top or d < -MAX_VALUE]
    if too_far:
        raise PricesError.about("deltas", f"{too_far[0]} moves a cost beyond what a ruleset "
                                f"allows (costs are at most {MAX_VALUE:,}); give smaller "
                                "changes", value=too_far[0])
    study = PriceStudy(rs, base, ids, ds, games, seed, margin)
    say = echo or (lambda _line: None)
    for n, pid in enumerate(ids, 1):
        restricted = restricted_spec(base, pid)
        # an unknown patch fails here, not in a worker
        make_bot(restricted).bind(compile_ruleset(rs))  # type: ignore[attr-defined]  # compiled
        cost = rs.patch(pid).cost
        mine = [d for d in ds if cost + d >= 0]
        say(f"[{n}/{len(ids)}] {pid} (cost {cost}): costs "
            f"{', '.join(str(cost + d) for d in mine)}, {games} games each")
        _play_costs(study, pid, restricted, mine, jobs, bot_path)
        top = cost + 20 if max_cost is None else max_cost
        for _ in range(MAX_WIDEN_ROUNDS if widen else 0):
            costs = [cost + d for d in study.deltas_of(pid)]
            more = widen_costs(costs, _fit(study, pid), top)
            if not more:
                break
            say(f"  {pid}: fair price not bounded in {min(costs)}..{max(costs)}; adding costs "
                f"{', '.join(map(str, more))}")
            _play_costs(study, pid, restricted, [c - cost for c in more], jobs, bot_path)
    return study


def _play_costs(study: PriceStudy, pid: str, restricted: str, deltas: list[int],
                jobs: int, bot_path: Sequence[str] = ()) -> None:
    """Measure ``pid`` at ``base + delta`` for each delta, on the study's deals."""
    rs, base = study.ruleset, study.bot
    cost = rs.patch(pid).cost
    variants = [rs if d == 0 else rs.with_overrides(
        {"name": f"{rs.name}-{pid}-cost{cost + d}",
         "patch_changes": {pid: {"cost": cost + d}}}) for d in deltas]
    sim = simulate(variants, [base, restricted], games=study.games, seed=study.seed, jobs=jobs,
                   pairings="cross", bot_path=bot_path)
    g, ev = sim.games, sim.events
    for d, v in zip(deltas, variants, strict=True):
        rows = g[g["ruleset_hash"] == v.content_hash()]
        won = (rows["winner_bot"] == restricted).to_numpy()
        study.values[(pid, d)] = 0.5 - deal_values(won, rows["deal"].to_numpy())
        # context: how often the unrestricted bot buys the patch at this cost
        bought = ev[(ev["game_id"].isin(rows["game_id"])) & (ev["event"] == "buy")
                    & (ev["patch"] == pid) & (ev["bot"] == base)]
        study.buys[(pid, d)] = len(bought) / max(1, len(rows))


def _fit(study: PriceStudy, pid: str) -> Crossing:
    ds = study.deltas_of(pid)
    base = study.base_cost(pid)
    mat = np.column_stack([study.values[(pid, d)] for d in ds])
    return fit_crossing([base + d for d in ds], mat, seed=study.seed)


# --- tables -------------------------------------------------------------------------------------
def _value(x: np.ndarray) -> Estimate:
    return mean_estimate(x, bounds=VALUE_BOUNDS)


def verdicts_at_price(study: PriceStudy) -> dict[str, Verdict]:
    """Each patch's verdict at its printed cost: one Holm family over the patches (the
    primary question of a price study; the table and the summary both read it here)."""
    at_price = [_value(study.values[(pid, 0)]) for pid in study.patches]
    return dict(zip(study.patches, decide(at_price, study.margin, family="holm"), strict=True))


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
    # the verdicts: one Holm family over the patches at their printed cost (the primary
    # question, as :func:`verdicts_at_price`), one Benjamini-Hochberg family over the other
    # costs (exploratory)
    primary = (df["delta"] == 0).to_numpy()
    found: list[Verdict | None] = [None] * len(df)
    at_price = verdicts_at_price(study)
    for i in np.flatnonzero(primary):
        found[i] = at_price[df["patch"].iloc[i]]
    idx = np.flatnonzero(~primary)
    for i, v in zip(idx, decide([df["_est"].iloc[i] for i in idx], study.margin,
                                family="bh"), strict=True):
        found[i] = v
    vs = [v for v in found if v is not None]
    df["p_adjusted"] = [v.p_difference for v in vs]
    df["verdict_kind"] = [v.kind for v in vs]
    df["verdict"] = [v.text() for v in vs]
    return df.drop(columns="_est")


def crossings(study: PriceStudy) -> dict[str, Crossing]:
    """The price-response fit of every patch (bootstrap seeded by the study's seed)."""
    return {pid: _fit(study, pid) for pid in study.patches}


PRICE_MARGIN = 1.0  # buttons: a fair price this close to the printed cost is "about right"


@dataclass(frozen=True)
class PriceReading:
    """What a patch's price is for the bot: ``kind`` one of ``underpriced``, ``overpriced``,
    ``about right``, ``undecided``, ``not measured``; ``by`` (with ``lo``, ``hi``) how many
    buttons the fair price lies above (under-) or below (overpriced) the printed cost;
    ``text`` the sentence."""

    kind: str
    text: str
    by: float = math.nan
    lo: float = math.nan
    hi: float = math.nan


def price_reading(v: Verdict, cross: Crossing, cost: int,
                  margin: float = PRICE_MARGIN) -> PriceReading:
    """The reading of a patch's price from the verdict on its value at the printed cost
    (equivalence first, as everywhere) and its fair price (:func:`fit_crossing`).

    Underpriced needs the value beyond the margin above 0 at its price; a trap (a value
    beyond the margin below 0: the bot buys it and loses) is overpriced. A value within the
    margin says nothing measurable is gained at the price: the fair price then decides
    between overpriced (its whole interval more than ``margin`` buttons below the cost: the
    bot gains from the patch only when it is cheaper) and about right. A value undecided at
    the printed cost (it may lie on either side of the margin) is overpriced too when the
    fair price's bounded interval lies wholly more than ``margin`` buttons below the cost:
    the value measured at every cost says so; "undecided" where neither is shown."""
    fair_ok = cross.in_range and not cross.flat
    fair = (f"fair price about {cross.fair:.1f} [{_num(cross.fair_lo)}, {_num(cross.fair_hi)}]"
            if fair_ok else f"fair price {cross.text()}")
    worth = f"{pts(v.estimate.value - v.center)} points at its price"
    if v.kind == "undefined":
        return PriceReading("not measured", "not measured (no deals)")
    off, off_lo, off_hi = (cross.fair - cost, cross.fair_lo - cost, cross.fair_hi - cost)
    if v.kind == "differs" and v.estimate.value > v.center:
        if fair_ok:
            return PriceReading("underpriced", f"underpriced by about {off:.1f} buttons "
                                f"[{_num(off_lo)}, {_num(off_hi)}]: worth {worth}; {fair}",
                                off, off_lo, off_hi)
        return PriceReading("underpriced", f"underpriced: worth {worth}; {fair}")
    if v.kind == "differs":
        if fair_ok and off < 0:  # (a pooled fit can put the fair price above the cost)
            return PriceReading("overpriced", f"a trap, overpriced by about {-off:.1f} buttons "
                                f"[{_num(-off_hi)}, {_num(-off_lo)}]: the bot does better "
                                f"without it ({worth}); {fair}", -off, -off_hi, -off_lo)
        return PriceReading("overpriced", f"a trap: the bot does better without it "
                            f"({worth}); {fair}")
    if v.kind == "undecided":
        if fair_ok and cross.bounded and off_hi < -margin:
            # not shown to be worth anything at its price, and the value stops falling
            # clearly below it: the whole price response says overpriced
            return PriceReading("overpriced", f"overpriced by about {-off:.1f} buttons "
                                f"[{_num(-off_hi)}, {_num(-off_lo)}]: the bot gains from it "
                                f"below about {cross.fair:.1f}; its value at its price is "
                                f"undecided ({worth})", -off, -off_hi, -off_lo)
        return PriceReading("undecided", f"undecided at its price ({worth}); {fair}")
    # the value is within the margin at the printed cost: does it pay when cheaper?
    if fair_ok and off_hi < -margin:
        return PriceReading("overpriced", f"overpriced by about {-off:.1f} buttons "
                            f"[{_num(-off_hi)}, {_num(-off_lo)}]: no measurable value at its "
                            f"price, the bot gains from it below about {cross.fair:.1f}",
                            -off, -off_hi, -off_lo)
    if fair_ok and off_lo >= -margin:
        return PriceReading("about right", f"priced about right for this bot: no measurable "
                            f"value at its price ({worth}); {fair}", off, off_lo, off_hi)
    return PriceReading("undecided", f"no measurable value at its price ({worth}); whether "
                        f"it is overpriced is undecided: {fair}")


def patch_summary(study: PriceStudy, table: pd.DataFrame | None = None,
                  fits: dict[str, Crossing] | None = None) -> pd.DataFrame:
    """One row per patch: value at the printed cost (Holm verdict), slope of the value per
    button of cost, fair price with its interval and as each half of the deals reads it
    (``fair_half_a``, ``fair_half_b``), and the price reading
    (:func:`price_reading`: ``price``, ``off_by`` buttons with ``off_lo``, ``off_hi``,
    ``reading``)."""
    table = price_table(study) if table is None else table
    fits = crossings(study) if fits is None else fits
    at_price = verdicts_at_price(study)  # one Holm family, as in the table
    rows = []
    for pid in study.patches:
        r = table[(table["patch"] == pid) & (table["delta"] == 0)].iloc[0]
        c = fits[pid]
        reading = price_reading(at_price[pid], c, int(r["cost"]))
        rows.append({"patch": pid, "cost": int(r["cost"]), "value": r["value"],
                     "value_lo": r["value_lo"], "value_hi": r["value_hi"],
                     "p_holm": r["p_adjusted"], "verdict": r["verdict"],
                     "slope_per_button": c.slope, "slope_lo": c.slope_lo,
                     "slope_hi": c.slope_hi, "fair_price": c.fair if c.in_range else math.nan,
                     "fair_lo": c.fair_lo if c.in_range else math.nan,
                     "fair_hi": c.fair_hi if c.in_range else math.nan,
                     "fair_text": c.text(), "fair_half_a": c.halves[0],
                     "fair_half_b": c.halves[1], "price": reading.kind,
                     "off_by": reading.by, "off_lo": reading.lo, "off_hi": reading.hi,
                     "reading": reading.text})
    return pd.DataFrame(rows)


def prices_document_of(study: PriceStudy, table: pd.DataFrame | None = None,
                       summary: pd.DataFrame | None = None,
                       png: bytes | None = None) -> Document:
    """The study as a Document (:mod:`patchsim.experiments.prices_document`)."""
    table = price_table(study) if table is None else table
    summary = patch_summary(study, table) if summary is None else summary
    return prices_document(ruleset=study.ruleset.name, bot=study.bot,
                           deals=study.games // 2 + study.games % 2, seed=study.seed,
                           margin=study.margin, negligible=NEGLIGIBLE,
                           price_margin=PRICE_MARGIN, table=table, summary=summary, png=png)


def prices_markdown(study: PriceStudy, table: pd.DataFrame | None = None,
                    summary: pd.DataFrame | None = None) -> str:
    """The study as Markdown: method, one row per patch, then every cost."""
    return to_markdown(prices_document_of(study, table, summary))


__all__ = ["BOOTSTRAP", "NEGLIGIBLE", "Crossing", "PriceStudy", "PricesError", "crossings",
           "fit_crossing", "isotonic_decreasing", "measure_prices", "patch_summary",
           "price_table", "prices_document_of", "prices_markdown", "restricted_spec",
           "widen_costs"]
