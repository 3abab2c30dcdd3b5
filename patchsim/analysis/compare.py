"""Comparing two variants on the same deals (planning how many deals a question needs is
:mod:`patchsim.analysis.planning`; its names are kept here too).

Two rulesets played on the same deals (same deal seeds, same bots: common random numbers)
are compared deal by deal: each metric is averaged over a deal's games under each ruleset,
and the per-deal differences give a paired interval, usually much narrower than the unpaired
one because the deal's own luck cancels. Every interval, test and verdict comes from
:mod:`patchsim.analysis.estimators` (the paired difference, its t-test and equivalence test,
and the verdict of :func:`estimators.verdicts`: "equivalent within +-m" first (or "differs by
X [a, b], within +-m: negligible"), "differs by X [a, b], beyond +-m", or "undecided: about N
more deals would likely decide it"), so a comparison gives the answer a sweep gives. The
first-seat win rate (the primary question) is Holm-corrected, the other metrics are
exploratory (Benjamini-Hochberg). Winners that flip between the rulesets get an exact McNemar
test over deals. Deterministic self-play (the same game twice per deal) counts each deal's
game once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.comparison import change_of, paired_comparison, redecide, verdict_text
from patchsim.analysis.defaults import ALPHA, DEFAULT_MARGIN
from patchsim.analysis.games import NAN, Events, split_rulesets
from patchsim.analysis.leather import leather_table
from patchsim.analysis.metrics import EVENT_METRICS, Metric
from patchsim.analysis.metrics import METRICS as REGISTRY
from patchsim.analysis.planning import format_plan, plan
from patchsim.analysis.seats import MIN_DEALS, first_player_advantage, mcnemar_exact
from patchsim.analysis.selfplay import DISTINCT_NOTE, copied_pairings, duplicated_pairings
from patchsim.analysis.tables import as_summary
from patchsim.document.format import num, pct
from patchsim.errors import PatchsimError

ALL_PAIRINGS = "all pairings"

# the metrics a comparison reports (registry names), in the order of its table
COMPARED = ("first_player_win", "first_bot_win", "first_leather_mark_useful",
            "leather_useful_all", "bonus_rate", "tie_break_rate", "mean_score", "score_diff",
            "plies")


def _kind(m: Metric) -> str:
    """A comparison row's kind: "rate" (rates and shares: they get the equivalence margin)
    or the unit of the metric's values ("points", "moves")."""
    return "rate" if m.percent else m.unit


# label (the table's metric column) -> (kind, description), from the registry
METRICS: dict[str, tuple[str, str]] = {
    REGISTRY[n].label: (_kind(REGISTRY[n]), REGISTRY[n].description) for n in COMPARED}


class CompareError(PatchsimError, ValueError):
    """Two runs that cannot be compared deal by deal."""


@dataclass
class Comparison:
    """The result of :func:`compare`: B (the variant) against A (the reference)."""

    label_a: str
    label_b: str
    margin: float
    alpha: float
    metrics: pd.DataFrame
    flips: pd.DataFrame
    fpa: pd.DataFrame
    leather: pd.DataFrame
    shared_deals: int
    notes: list[str] = field(default_factory=list)

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"metrics": self.metrics, "flips": self.flips, "fpa": self.fpa,
                "leather": self.leather}

    def metric(self, name: str, group: str | None = None) -> pd.Series | None:
        """One metric row (for ``group`` or, by default, the pooled / only group)."""
        m = self.metrics[self.metrics["metric"] == name]
        if group is not None:
            m = m[m["group"] == group]
        elif (m["group"] == ALL_PAIRINGS).any():
            m = m[m["group"] == ALL_PAIRINGS]
        return None if m.empty else m.iloc[0]

    def verdict(self, restate: bool = True) -> str:
        """Plain-language sentences for a designer; numbers from ``fpa``, ``leather`` and
        ``metrics``. Without ``restate`` the first-seat win rates of A and B are left out
        (for a report that has already given them) and only their change is told."""
        a, b = self.label_a, self.label_b
        out = []
        for pairing, g in self.fpa.groupby("pairing", sort=False):
            ra = g[g["side"] == "A"].iloc[0]
            rb = g[g["side"] == "B"].iloc[0]
            if restate:
                text = (f"With {pairing}, the first seat wins {pct(ra['rate'])} "
                        f"[{pct(ra['lo'])}, {pct(ra['hi'])}] of games under {a} and "
                        f"{pct(rb['rate'])} [{pct(rb['lo'])}, {pct(rb['hi'])}] under {b}")
            else:
                text = f"With {pairing}, from {a} to {b} the first seat's win rate"
            m = self.metric("first-seat win rate", pairing)
            if m is not None and math.isfinite(m["diff"]):
                text += (f"; over {int(m['deals'])} shared deals the change " if restate
                         else f" over {int(m['deals'])} shared deals ")
                text += _change_words(m) + "."
            elif restate:
                text += "."
            else:
                continue
            out.append(text)
        first = self.leather[self.leather["rank"] == 1]
        la = first[first["side"] == "A"]
        lb = first[first["side"] == "B"]
        if len(la) and len(lb):
            ra, rb = la.iloc[0], lb.iloc[0]
            text = (f"Under {b} the first leather patch (mark {int(rb['mark'])}) fills an "
                    f"isolated one-square hole in {pct(rb['useful_rate'])} "
                    f"[{pct(rb['useful_lo'])}, {pct(rb['useful_hi'])}] of games, against "
                    f"{pct(ra['useful_rate'])} [{pct(ra['useful_lo'])}, "
                    f"{pct(ra['useful_hi'])}] under {a} (mark {int(ra['mark'])})")
            m = self.metric("first leather useful")
            if m is not None and math.isfinite(m["diff"]):
                text += f"; the change {_change_words(m)}"
            out.append(text + ".")
        if self.shared_deals < MIN_DEALS:
            out.append(f"Only {self.shared_deals} shared deals: too few games for firm "
                       "conclusions.")
        return "\n".join(out)


def _change_words(m: pd.Series) -> str:
    """A metrics row's verdict as words that follow "the change": "differs by X [a, b]
    (Holm-adjusted p ...)", "is equivalent within +-m (...)", "is undecided: ...", or, below
    MIN_DEALS deals, the change alone."""
    if m["deals"] < MIN_DEALS:
        scale, unit = (100, " points") if m["kind"] == "rate" else (1, f" {m['kind']}")
        return (f"is {num(scale * m['diff'], 1, True)}{unit} "
                f"[{num(scale * m['lo'], 1, True)}, {num(scale * m['hi'], 1, True)}]: too few "
                "deals to say more")
    if m["verdict_kind"] == "differs":
        # the p-value that decided: of a change beyond the margin (of any change, for a
        # metric without a margin); the verdict text already names the family
        p = m.get("p_beyond")
        p = m["p_holm"] if p is None or not np.isfinite(p) else p
        return f"{m['verdict']} (adjusted p {_p(p)})"
    # a negligible change reads "differs by X [a, b], within +-m: negligible"
    return m["verdict"] if str(m["verdict"]).startswith("differs") else f"is {m['verdict']}"



def _p(p: float) -> str:
    """'= 0.035' or '< 0.001' (to follow 'p ')."""
    if not math.isfinite(p):
        return "= —"
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


# --- per-game metric values -------------------------------------------------------------------
def game_metrics(games: pd.DataFrame, events: Events | None) -> pd.DataFrame:
    """One row per game: the keys that match games across runs (pairing, deal, order,
    deal_seed) and each metric's value in that game (NaN where it does not apply).
    ``events``: the events table or its summary (:mod:`patchsim.analysis.tables`)."""
    out = games[["game_id", "pairing", "deal", "order", "deal_seed"]].copy()
    ev = as_summary(events, games)
    for name in COMPARED:
        m = REGISTRY[name]
        if m.name in EVENT_METRICS and ev is None:
            continue  # no events: the leather rows are left out
        assert m.per_game is not None
        out[m.label] = m.per_game(games, ev)
    return out


def _drop_common_copies(games_a: pd.DataFrame, games_b: pd.DataFrame
                        ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Both runs without the copies of the self-play pairings that are deterministic in both
    (the same game twice per deal: matched, they would count every flip twice); a pairing
    with copies in one run only keeps both games on both sides (its per-deal values are the
    same either way)."""

    def copies(g: pd.DataFrame) -> set[str]:
        if "duplicated_pairings" in g.attrs:  # already without its copies
            return copied_pairings(g)
        return set(duplicated_pairings(g))

    both = sorted(copies(games_a) & copies(games_b))
    if not both:
        return games_a, games_b, both

    def drop(g: pd.DataFrame) -> pd.DataFrame:
        return g[~(g["pairing"].astype(str).isin(both) & (g["order"] == 1)).to_numpy()]

    return drop(games_a), drop(games_b), both


def match_games(games_a: pd.DataFrame, games_b: pd.DataFrame) -> pd.DataFrame:
    """Pair the games of two runs (or two rulesets of a run) that were played on the same
    deal by the same pairing in the same seat order; raise CompareError if none are shared
    or the shared deal numbers have different seeds."""
    keys = ["pairing", "deal", "order"]
    a = games_a[[*keys, "deal_seed", "game_id"]]
    b = games_b[[*keys, "deal_seed", "game_id"]]
    if isinstance(a["pairing"].dtype, pd.CategoricalDtype) or isinstance(
            b["pairing"].dtype, pd.CategoricalDtype):
        # categorical pairings (tables.read_games) of two runs: one set of categories, so
        # that the merge compares codes instead of converting every row to text
        cats = sorted(set(a["pairing"].unique()) | set(b["pairing"].unique()))
        a = a.assign(pairing=pd.Categorical(a["pairing"], categories=cats))
        b = b.assign(pairing=pd.Categorical(b["pairing"], categories=cats))
    m = a.merge(b, on=keys, suffixes=("_a", "_b"))
    if m.empty:
        pa, pb = set(games_a["pairing"]), set(games_b["pairing"])
        why = ("they have no pairing in common" if not pa & pb
               else "they have no deal number in common")
        raise CompareError(f"the two runs share no deals: {why}")
    bad = m["deal_seed_a"] != m["deal_seed_b"]
    if bad.any():
        raise CompareError(
            f"{int(bad.sum())} of {len(m)} games have the same deal number but a different "
            "deal seed: the runs used different master seeds, so they do not share deals "
            "(run both with the same seed)")
    return m


def compare(games_a: pd.DataFrame, games_b: pd.DataFrame,
            events_a: Events | None = None, events_b: Events | None = None,
            margin: float = DEFAULT_MARGIN, alpha: float = ALPHA, label_a: str | None = None,
            label_b: str | None = None) -> Comparison:
    """Compare variant B against reference A on their shared deals (see the module doc).

    ``metrics`` has one row per metric and pairing (plus "all pairings" when there are
    several): the means under A and B, the paired difference B - A
    (:func:`estimators.paired_difference`: ``diff``, ``se``, ``sd``, ``lo``, ``hi``,
    ``deals``) with its t-test p-value, the unpaired interval for contrast, a TOST p-value
    for rates (|B - A| < margin), the adjusted p-value and the verdict (see
    :func:`correct_jointly`). ``flips`` holds exact McNemar tests on games whose winning
    seat differs between A and B."""
    if games_a.empty or games_b.empty:
        raise CompareError("a run without games cannot be compared")
    la = label_a or _label(games_a)
    lb = label_b or _label(games_b)
    if la == lb:
        la, lb = f"A ({la})", f"B ({lb})"
    notes: list[str] = []
    full_a, full_b = games_a, games_b  # each side's own tables drop their own copies
    games_a, games_b, copies = _drop_common_copies(games_a, games_b)
    if copies:
        notes.append(f"{', '.join(copies)}: {DISTINCT_NOTE} under both; winner flips count "
                     "each deal's game once")
    matched = match_games(games_a, games_b)
    only = (set(games_a["pairing"]) ^ set(games_b["pairing"]))
    if only:
        notes.append(f"pairings in only one run are left out: {', '.join(sorted(only))}")
    va = game_metrics(games_a, events_a).set_index("game_id")
    vb = game_metrics(games_b, events_b).set_index("game_id")
    pairings = list(matched["pairing"].unique())  # in order of appearance
    groups = [(p, (matched["pairing"] == p).to_numpy()) for p in pairings]
    if len(pairings) > 1:
        groups.append((ALL_PAIRINGS, np.ones(len(matched), dtype=bool)))
    deals_a, deals_b = _deal_tables(matched, va, vb, groups)
    names = [n for n in COMPARED if REGISTRY[n].label in va.columns
             and REGISTRY[n].label in vb.columns]
    # the one paired comparison: the primary question a family of its own (Holm over every
    # pairing), the exploratory metrics another (Benjamini-Hochberg); rates get the margin,
    # the other metrics none (differs or undecided)
    metrics = paired_comparison(
        deals_a, deals_b, names, margin={n: margin if REGISTRY[n].percent else 0.0
                                         for n in names},
        family={n: "holm" if n == PRIMARY_NAME else "bh" for n in names}, alpha=alpha,
        level=1 - alpha, text=lambda v, m: verdict_text(v, _kind(m)), unpaired=True,
        skip_empty=True)
    if len(metrics):
        metrics = _as_comparison_table(metrics, margin, alpha)
    flips = _flips(matched, games_a, games_b, pairings)
    fpa = pd.concat([first_player_advantage(full_a[full_a["pairing"].isin(pairings)],
                                            margin, alpha).assign(side="A", label=la),
                     first_player_advantage(full_b[full_b["pairing"].isin(pairings)],
                                            margin, alpha).assign(side="B", label=lb)],
                    ignore_index=True)
    leather = []
    for side, lab, g, e in (("A", la, full_a, events_a), ("B", lb, full_b, events_b)):
        if e is not None:
            leather.append(leather_table(g[g["pairing"].isin(pairings)], e, alpha)
                           .assign(side=side, label=lab))
    lt = pd.concat(leather, ignore_index=True) if leather else pd.DataFrame(
        columns=["side", "label", "rank", "mark", "useful_rate", "useful_lo", "useful_hi"])
    shared = int(matched.groupby("pairing", observed=True)["deal"].nunique().min())
    return Comparison(la, lb, margin, alpha, metrics, flips, fpa, lt, shared, notes)


def _flips(matched: pd.DataFrame, games_a: pd.DataFrame, games_b: pd.DataFrame,
           pairings: list[str]) -> pd.DataFrame:
    """Games whose winning seat differs between A and B, and an exact McNemar test on them.

    The test counts deals, not games: a deal's two games are dependent (with deterministic
    bots in self-play they are the same game), so each deal is one discordant pair when its
    net flip points one way (toward seat 0 under B or under A), and neutral when it is zero.
    """
    wa = games_a.set_index("game_id")["winner"]
    wb = games_b.set_index("game_id")["winner"]
    s_a = (wa.loc[matched["game_id_a"]].to_numpy() == 0)
    s_b = (wb.loc[matched["game_id_b"]].to_numpy() == 0)
    rows = []
    groups = [(p, (matched["pairing"] == p).to_numpy()) for p in pairings]
    pairing_code = pd.factorize(matched["pairing"])[0]
    if len(pairings) > 1:
        groups.append((ALL_PAIRINGS, np.ones(len(matched), dtype=bool)))
    for group, sel in groups:
        only_a = int((s_a & ~s_b)[sel].sum())
        only_b = int((~s_a & s_b)[sel].sum())
        # net flip per deal (pairing and deal number: codes, not a text key per game)
        net = pd.Series((s_b.astype(int) - s_a.astype(int))[sel]).groupby(
            [pairing_code[sel], matched["deal"].to_numpy()[sel]]).sum()
        toward_b, toward_a = int((net > 0).sum()), int((net < 0).sum())
        n = int(sel.sum())
        rows.append({"group": group, "games": n, "flips": only_a + only_b,
                     "flip_rate": (only_a + only_b) / n if n else NAN,
                     "seat0_only_a": only_a, "seat0_only_b": only_b,
                     "deals": int(len(net)), "deals_toward_a": toward_a,
                     "deals_toward_b": toward_b,
                     "p_value": mcnemar_exact(toward_a, toward_b)})
    return pd.DataFrame(rows)


def _label(games: pd.DataFrame) -> str:
    names = list(dict.fromkeys(games["ruleset"]))
    return names[0] if len(names) == 1 else " + ".join(names)


PRIMARY_NAME = "first_player_win"  # the question a comparison is run for (registry name)
PRIMARY = REGISTRY[PRIMARY_NAME].label
FAMILY_NAMES = {"holm": "Holm (primary)", "bh": "BH (exploratory)"}


def _deal_tables(matched: pd.DataFrame, va: pd.DataFrame, vb: pd.DataFrame,
                 groups: list[tuple[str, np.ndarray]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per group (a pairing, or all of them) and deal, each metric's mean over the deal's
    matched games that both runs measured (a game one side cannot measure is left out on
    both): the per-deal tables :func:`paired_comparison` takes, the group in ``pairing``."""
    sides: tuple[list[pd.DataFrame], list[pd.DataFrame]] = ([], [])
    for group, sel in groups:
        mg = matched[sel]
        deal = mg["deal"].to_numpy()
        cols: tuple[dict[str, pd.Series], dict[str, pd.Series]] = ({}, {})
        for name in COMPARED:
            label = REGISTRY[name].label
            if label not in va.columns or label not in vb.columns:
                continue
            xa = va.loc[mg["game_id_a"], label].to_numpy(dtype=float)
            xb = vb.loc[mg["game_id_b"], label].to_numpy(dtype=float)
            ok = np.isfinite(xa) & np.isfinite(xb)
            for out, x in zip(cols, (xa, xb), strict=True):
                out[name] = pd.Series(x[ok]).groupby(deal[ok], sort=True).mean()
        for side, c in zip(sides, cols, strict=True):
            t = pd.DataFrame(c).reindex(np.unique(deal)) if c else pd.DataFrame(
                index=np.unique(deal))
            side.append(t.rename_axis("deal").reset_index().assign(pairing=group))
    return (pd.concat(sides[0], ignore_index=True), pd.concat(sides[1], ignore_index=True))


def _as_comparison_table(rows: pd.DataFrame, margin: float, alpha: float) -> pd.DataFrame:
    """A paired comparison's rows in the columns a comparison of runs has always had: the
    group (a pairing or all of them), the metric by its label and kind (rate or the unit),
    the means under A and B, the TOST p-value of rates and the adjusted p-values by their
    names here, with ``different`` / ``equivalent`` at MIN_DEALS deals or more."""
    out = rows.rename(columns={"pairing": "group", "base": "a", "variant": "b",
                               "metric": "metric_name", "p_adjusted": "p_holm"})
    out.insert(1, "metric", [REGISTRY[n].label for n in out["metric_name"]])
    out["kind"] = [_kind(REGISTRY[n]) for n in out["metric_name"]]
    out["tost_p"] = [est.tost_pvalue(change_of(r, 1 - alpha, est.RATE_DIFF_BOUNDS), margin)
                     if r.kind == "rate" else NAN for r in out.itertuples(index=False)]
    out["adjustment"] = [FAMILY_NAMES[f] for f in out["family"]]
    out.attrs.update(margin=margin, alpha=alpha)
    _flag(out)
    return out


def _flag(f: pd.DataFrame) -> None:
    enough = f["deals"] >= MIN_DEALS
    f["different"] = enough & (f["verdict_kind"] == "differs")
    f["equivalent"] = enough & (f["verdict_kind"] == "equivalent")


def correct_jointly(comparisons: list[Comparison], alpha: float = est.ALPHA) -> None:
    """Adjust every comparison's p-values together (in place): with several variants against
    one reference, a family of tests per variant is not enough. Holm for the primary metric,
    Benjamini-Hochberg for the exploratory rest, as in one comparison
    (:func:`comparison.redecide`)."""
    frames = [c.metrics for c in comparisons if len(c.metrics)]
    if len(frames) < 2:
        return
    for f in frames:
        # a table made before these columns (or by hand): the families and margins of
        # compare, rates against the table's margin, every other metric against none
        if "family" not in f:
            f["family"] = (np.where(f["metric"] == PRIMARY, "holm", "bh") if "metric" in f
                           else "holm")
        if "margin" not in f:
            f["margin"] = np.where(f["kind"] == "rate",
                                   float(f.attrs.get("margin", DEFAULT_MARGIN)), 0.0)
        f["p_adjusted"] = f["p_holm"]
    redecide(frames, alpha, 1 - alpha, lambda v, r: verdict_text(v, r["kind"]),
             bounds=lambda r: est.RATE_DIFF_BOUNDS if r.kind == "rate" else None)
    for f in frames:
        f["p_holm"] = f.pop("p_adjusted")
        _flag(f)


def compare_rulesets(games: pd.DataFrame, events: Events | None = None,
                     a: str | None = None, b: str | None = None, margin: float = DEFAULT_MARGIN,
                     alpha: float = ALPHA) -> Comparison:
    """Compare two rulesets of one run (default: the second against the first)."""
    parts = split_rulesets(games, events)
    if len(parts) < 2:
        raise CompareError("the run has only one ruleset; give a second run to compare with")
    by = {lab: (g, e) for lab, g, e in parts}
    la = a or parts[0][0]
    lb = b or parts[1][0]
    for lab in (la, lb):
        if lab not in by:
            raise CompareError(f"no ruleset {lab!r} in the run (it has {', '.join(by)})")
    return compare(by[la][0], by[lb][0], by[la][1], by[lb][1], margin, alpha, la, lb)


__all__ = ["Comparison", "CompareError", "compare", "compare_rulesets", "format_plan",
           "game_metrics", "match_games", "plan", "split_rulesets"]
