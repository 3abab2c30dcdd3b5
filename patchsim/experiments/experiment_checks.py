"""The checkers of an experiment file's sections: the ``skill:`` trace, ``tune`` and
``check`` (its tolerances, their ranges and contradictions), and the small checks and names
they share with the loader (experiments/experiment.py), which reports what they find.

Each checker reports problems through ``bad(key, message)`` and carries on, so that one run
of the loader lists every problem in the file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from patchsim.analysis.metrics import ALIASES, METRICS, RANGES, UnknownMetric
from patchsim.analysis.metrics import metric as find_metric
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.document.format import pct, sig
from patchsim.engine.ruleset import Ruleset, RulesetError
from patchsim.engine.yamlfile import quote
from patchsim.play.config import MAX_GAMES

TUNE_KEYS = {"fields", "targets", "candidates", "rounds", "games", "finalists", "final_games",
             "seed"}
TARGET_KEYS = {"target", "tolerance"}
CHECK_KEYS = {"tolerances", "max_games", "step_games", "alpha", "beta", "resolution"}
TOLERANCE_KEYS = {"metric", "min", "max", "target", "margin", "pairing"}


# Metrics that say the same thing on shifted scales: (metric, scale metric, offset), meaning
# metric = scale metric + offset. Ranges on both are compared on the common scale.
LINKED_METRICS = {"first_player_edge": ("first_player_win", -0.5)}

# Far beyond any study on one machine; a few lines of YAML can otherwise ask for millions.
MAX_VARIANTS = 1000

# The range each metric's values lie in (a tolerance reaching beyond it cannot fail there).
METRIC_RANGES: dict[str, tuple[float, float]] = {
    **RANGES, **{alias: RANGES[name] for alias, name in ALIASES.items()}}


def known_metric(name: object) -> bool:
    """A metric name or alias (old names stay accepted, see analysis.metrics)."""
    return isinstance(name, str) and (name in METRICS or name in ALIASES)


def is_number(v: Any) -> bool:
    """A number from YAML (a bool is not one)."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def is_whole(v: Any, lo: int) -> bool:
    """A whole number (not a bool) of at least ``lo``."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def relation(metric: str) -> str:
    """How a linked metric follows from its scale metric, e.g. "a = b - 0.5"."""
    scale, offset = LINKED_METRICS[metric]
    return f"{metric} = {scale} {'-' if offset < 0 else '+'} {abs(offset):g}"


def canonical_pairing(text: str) -> str | None:
    """"<bot> vs <bot>" with both bots' canonical specs, or None if it is not one."""
    parts = text.split(" vs ")
    if len(parts) != 2:
        return None
    try:
        return " vs ".join(make_bot(part.strip()).spec for part in parts)
    except BotSpecError:
        return None


# --- a metric's values in its unit, as every document shows them --------------------------------
def metric_in_percent(m: str) -> bool:
    """Is metric ``m`` a rate or share, shown as a percentage (its tolerances and differences
    in points) as in every report? An unknown name (the loader refuses those) stays plain."""
    try:
        return find_metric(m).percent
    except UnknownMetric:
        return False


def metric_unit(m: str) -> str:
    """The unit of a metric that is no rate, with its space (" points", " moves"), or ""."""
    try:
        unit = find_metric(m).unit
    except UnknownMetric:
        return ""
    return f" {unit}" if unit else ""


def metric_value(m: str, value: float) -> str:
    """One value of metric ``m`` in its unit: '47.0%', '1.5 points'."""
    return pct(value) if metric_in_percent(m) else f"{sig(value)}{metric_unit(m)}"


def metric_amount(m: str, amount: float) -> str:
    """A distance on metric ``m``'s scale: '2.0 points' for a rate, '1.5 points' or '3 moves'
    in a unit of its own."""
    if metric_in_percent(m):
        return f"{100 * amount:.1f} points"
    return f"{sig(amount)}{metric_unit(m)}"


def metric_interval(m: str, value: float, lo: float, hi: float) -> str:
    """A metric's estimate and interval in its unit: '49.8% [48.7%, 51.0%]', '1.2 [0.8, 1.6]
    points'."""
    if metric_in_percent(m):
        return f"{pct(value)} [{pct(lo)}, {pct(hi)}]"
    return f"{sig(value)} [{sig(lo)}, {sig(hi)}]{metric_unit(m)}"


@dataclass
class Tolerance:
    """A bound the balance gate checks: ``metric`` within [low, high] (on one pairing)."""

    metric: str
    low: float
    high: float
    pairing: str | None = None

    def describe(self) -> str:
        """'first_player_win within [47.0%, 53.0%]', 'mean_margin at most 3 points'."""
        m = self.metric
        if math.isfinite(self.low) and math.isfinite(self.high):
            if metric_in_percent(m):
                return f"{m} within [{pct(self.low)}, {pct(self.high)}]"
            return f"{m} within [{sig(self.low)}, {sig(self.high)}]{metric_unit(m)}"
        if math.isfinite(self.high):
            return f"{m} at most {metric_value(m, self.high)}"
        if math.isfinite(self.low):
            return f"{m} at least {metric_value(m, self.low)}"
        return f"{m} (no bound)"


TRACE_KEYS = {"levels", "bots", "search", "deals", "seed", "timed", "diversity", "compare",
              "margin"}


def check_trace(spec: dict[str, Any], bad: Any) -> dict[str, Any]:
    """The ``skill:`` mapping (a skill trace for ``patchsim skill``), checked key by key:
    levels (increasing budgets), bots (the scripted foot of the ladder), search (a bot
    spec), deals, seed, timed, diversity, compare, margin."""
    out: dict[str, Any] = {}
    for k in sorted(set(spec) - TRACE_KEYS, key=str):
        bad(f"skill.{k}", f"unknown key (known: {', '.join(sorted(TRACE_KEYS))})")
    levels = spec.get("levels")
    if levels is not None:
        if not (isinstance(levels, list) and levels
                and all(is_number(v) and v > 0 for v in levels)):
            bad("skill.levels", f"expected a list of budgets above 0, got {quote(levels)}")
        elif levels != sorted(set(levels)):
            bad("skill.levels", f"budgets must increase, got {quote(levels)}")
        else:
            out["levels"] = levels
    for key, check, want in (("deals", lambda v: is_whole(v, 2), "a whole number >= 2"),
                             ("seed", lambda v: is_whole(v, 0), "a whole number >= 0"),
                             ("timed", lambda v: isinstance(v, bool), "true or false"),
                             ("compare", lambda v: isinstance(v, bool), "true or false"),
                             ("margin", lambda v: is_number(v) and 0 < v < 0.5,
                              "a number between 0 and 0.5 (0.02: +-2 points)"),
                             ("diversity", lambda v: v in ("auto", "temperature", "epsilon",
                                                           "none"),
                              "auto, temperature, epsilon or none")):
        if key in spec:
            if check(spec[key]):
                out[key] = spec[key]
            else:
                bad(f"skill.{key}", f"expected {want}, got {quote(spec[key])}")
    for key in ("bots", "search"):
        if key not in spec:
            continue
        v = spec[key]
        items = [v] if isinstance(v, str) else v
        if key == "search" and not isinstance(v, str) or not isinstance(items, list) \
                or not items:
            bad(f"skill.{key}", f"expected a bot spec{' or a list of them' * (key == 'bots')},"
                                f" got {quote(v)}")
            continue
        specs = []
        for i, item in enumerate(items):
            where = f"skill.{key}" + (f"[{i}]" if key == "bots" else "")
            try:
                specs.append(make_bot(item).spec if isinstance(item, str) else None)
            except BotSpecError as e:
                bad(where, str(e))
                continue
            if specs[-1] is None:
                bad(where, f"expected a bot spec such as greedy, got {quote(item)}")
        if all(specs) and len(specs) == len(items):
            out[key] = specs[0] if key == "search" else specs
    return out


def draw_value(domain: Any, rng: np.random.Generator) -> Any:
    """One value from a field's domain (a list of choices or a numeric range)."""
    if isinstance(domain, list) and domain:
        return domain[int(rng.integers(len(domain)))]
    if isinstance(domain, dict) and {"min", "max"} <= set(domain):
        lo, hi = domain["min"], domain["max"]
        if not isinstance(lo, int | float) or not isinstance(hi, int | float) or lo > hi:
            return None
        if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool):
            return int(rng.integers(lo, hi + 1))
        if isinstance(lo, int | float) and isinstance(hi, int | float):
            return float(rng.uniform(lo, hi))
    return None


def check_tune(tune: Any, base: Ruleset | None, bad) -> None:
    """The ``tune`` section: its fields (each drawable and valid on ``base``), targets and
    limits."""
    if not isinstance(tune, dict):
        bad("tune", "expected a mapping with fields and targets")
        return
    for k in sorted(set(tune) - TUNE_KEYS):
        bad(f"tune.{k}", f"unknown key (known: {', '.join(sorted(TUNE_KEYS))})")
    fields = tune.get("fields")
    if not isinstance(fields, dict) or not fields:
        bad("tune.fields", "expected a mapping of ruleset fields to [choices] or {min, max}")
    else:
        rng = np.random.default_rng(0)
        for k, dom in fields.items():
            v = draw_value(dom, rng)
            if isinstance(dom, dict) and {"min", "max"} <= set(dom) and \
                    isinstance(dom["min"], int | float) and isinstance(dom["max"], int | float) \
                    and dom["min"] > dom["max"]:
                bad(f"tune.fields.{k}", f"min {dom['min']} is above max {dom['max']}")
            elif v is None:
                bad(f"tune.fields.{k}", "expected a non-empty list of choices or {min, max}")
            elif base is not None:
                try:
                    base.with_overrides({k: v})
                except RulesetError as e:
                    bad(f"tune.fields.{k}", "; ".join(e.problems))
    targets = tune.get("targets")
    ranges: dict[str, tuple[float, float]] = {}
    if not isinstance(targets, dict) or not targets:
        bad("tune.targets", "expected {metric: {target: x, tolerance: t}, ...}")
    else:
        for m, t in targets.items():
            key = f"tune.targets.{m}"
            if not known_metric(m):
                bad(key, f"unknown metric (metrics: {', '.join(METRICS)})")
            if not isinstance(t, dict):
                bad(key, "expected {target: x, tolerance: t}")
                continue
            for k in sorted(set(t) - TARGET_KEYS, key=str):
                bad(f"{key}.{k}", f"unknown key (known: {', '.join(sorted(TARGET_KEYS))})")
            ok = True
            if "target" not in t:
                bad(f"{key}.target", "required: the value to aim for")
                ok = False
            elif not is_number(t["target"]) or not np.isfinite(t["target"]):
                bad(f"{key}.target", f"expected a number, got {quote(t['target'])}")
                ok = False
            elif m in METRIC_RANGES and not (
                    METRIC_RANGES[m][0] <= t["target"] <= METRIC_RANGES[m][1]):
                lo_m, hi_m = METRIC_RANGES[m]
                bad(f"{key}.target", f"{t['target']:g} is outside the range of {m} "
                                     f"[{lo_m:g}, {hi_m:g}]")
                ok = False
            if "tolerance" not in t:
                bad(f"{key}.tolerance", "required: how far from the target is close enough "
                                        "(the loss measures distances in tolerances)")
                ok = False
            elif not is_number(t["tolerance"]) or not 0 < t["tolerance"] < np.inf:
                bad(f"{key}.tolerance", f"must be a positive number, got {quote(t['tolerance'])}")
                ok = False
            if ok and known_metric(m):
                ranges[find_metric(m).name] = (t["target"] - t["tolerance"],
                                               t["target"] + t["tolerance"])
    for m, (scale, offset) in LINKED_METRICS.items():
        if m in ranges and scale in ranges:
            (lo1, hi1), (lo2, hi2) = ranges[scale], ranges[m]
            if max(lo1, lo2 - offset) >= min(hi1, hi2 - offset):
                bad("tune.targets", f"contradictory: {scale} in [{lo1:g}, {hi1:g}] and {m} in "
                                    f"[{lo2:g}, {hi2:g}] cannot both hold "
                                    f"({relation(m)})")
    # rounds double the games: 30 rounds already ask for 2**30 times tune.games
    limits = {"candidates": MAX_VARIANTS, "rounds": 30, "games": MAX_GAMES,
              "finalists": MAX_VARIANTS, "final_games": MAX_GAMES}
    for k, most in limits.items():
        v = tune.get(k)
        if v is not None and not (is_whole(v, 1) and v <= most):
            bad(f"tune.{k}", f"expected a whole number from 1 to {most:,}, got {quote(v)}")
    if tune.get("seed") is not None and not is_whole(tune["seed"], 0):
        bad("tune.seed", f"expected a whole number >= 0, got {quote(tune['seed'])}")


def check_check(check: Any, bad, pairings: list[str] | None) -> list[Tolerance]:
    """The tolerances of a check section. ``pairings``: the names of the pairings the gate
    plays (None when the bots are invalid: pairings are then not checked)."""
    out: list[Tolerance] = []
    if not isinstance(check, dict):
        bad("check", "expected a mapping with tolerances")
        return out
    for k in sorted(set(check) - CHECK_KEYS, key=str):
        bad(f"check.{k}", f"unknown key (known: {', '.join(sorted(CHECK_KEYS))})")
    tols = check.get("tolerances")
    keys: list[str] = []
    if not isinstance(tols, list) or not tols:
        bad("check.tolerances", "expected a list of {metric, min, max} or "
                                "{metric, target, margin}")
        tols = []
    for i, t in enumerate(tols):
        key = f"check.tolerances[{i}]"
        if not isinstance(t, dict):
            bad(key, "expected a mapping")
            continue
        for k in sorted(set(t) - TOLERANCE_KEYS, key=str):
            bad(f"{key}.{k}", f"unknown key (known: {', '.join(sorted(TOLERANCE_KEYS))})")
        m = t.get("metric")
        if not isinstance(m, str) or not known_metric(m):
            bad(f"{key}.metric", f"unknown metric {quote(m)} (metrics: {', '.join(METRICS)})")
            continue
        m = find_metric(m).name
        numbers_ok = True
        for k in ("min", "max", "target", "margin"):
            if k in t and not is_number(t[k]):
                bad(f"{key}.{k}", f"expected a number, got {quote(t[k])}")
                numbers_ok = False
        if not numbers_ok:
            continue
        if "target" in t and ("min" in t or "max" in t):
            bad(key, "give min and/or max, or target and margin, not both")
            continue
        if "target" in t:
            margin = t.get("margin")
            if margin is None or not margin > 0:
                bad(f"{key}.margin", "a positive number is needed with target")
                continue
            lo, hi = t["target"] - margin, t["target"] + margin
        else:
            if "margin" in t:
                bad(f"{key}.margin", "a margin needs a target (or give min and/or max)")
                continue
            if "min" not in t and "max" not in t:
                bad(key, "give min and/or max, or target and margin")
                continue
            lo, hi = t.get("min", -np.inf), t.get("max", np.inf)
        if not lo < hi:
            bad(key, f"the interval [{lo}, {hi}] is empty: contradictory tolerance")
            continue
        outside = _outside_range(str(m), lo, hi, "target" in t)
        if outside:
            bad(key, outside)
            continue
        pairing = t.get("pairing")
        if pairing is not None:
            if not isinstance(pairing, str):
                bad(f"{key}.pairing", f"expected \"<bot> vs <bot>\", got {quote(pairing)}")
                continue
            canon = canonical_pairing(pairing)
            if pairings is not None and canon not in pairings:
                bad(f"{key}.pairing", f"{quote(pairing)} is none of this experiment's pairings "
                                      f"({', '.join(pairings)})")
                continue
            pairing = canon or pairing
        out.append(Tolerance(str(m), float(lo), float(hi), pairing))
        keys.append(key)
    _contradictions(out, keys, bad)
    for name in ("alpha", "beta"):
        value = check.get(name, 0.05)
        if not isinstance(value, float) or not 0 < value < 0.5:
            bad(f"check.{name}", f"expected a number between 0 and 0.5, got {quote(value)}")
    res = check.get("resolution")
    if res is not None and (not is_number(res) or not res > 0):
        bad("check.resolution", f"expected a number above 0 (how far inside a one-sided "
                                f"bound a value must lie to pass), got {quote(res)}")
    for k in ("max_games", "step_games"):
        v = check.get(k)
        if v is not None and not (is_whole(v, 2) and v <= MAX_GAMES):
            bad(f"check.{k}", f"expected a whole number from 2 to {MAX_GAMES:,}, got "
                              f"{quote(v)}")
    return out


def _outside_range(metric: str, lo: float, hi: float, centred: bool) -> str | None:
    """Why a tolerance [lo, hi] on ``metric`` is no test, or None: a bound beyond the range of
    the metric's values (a gate that cannot fail there), or a band that covers the whole range
    or none of it."""
    a, b = METRIC_RANGES.get(metric, (-math.inf, math.inf))
    where = f"{metric} lies in [{a:g}, {b:g}]"
    given = (f"target +- margin gives [{lo:g}, {hi:g}]" if centred
             else f"[{lo:g}, {hi:g}]")
    if lo >= b or hi <= a:
        return f"{given} cannot hold: {where}"
    if (math.isfinite(lo) and lo < a) or (math.isfinite(hi) and hi > b):
        side = "lower" if math.isfinite(lo) and lo < a else "upper"
        return (f"{given} leaves the range of the metric ({where}): its {side} edge could "
                "never be crossed; give bounds inside the range (min or max alone for a "
                "one-sided check)")
    if lo <= a and hi >= b:
        return f"{given} covers every value ({where}): a check that cannot fail"
    return None


def _contradictions(tols: list[Tolerance], keys: list[str], bad) -> None:
    """Tolerances that cannot all hold: on one metric (or linked metrics, e.g. the first-seat
    edge and win rate) and a pairing they share, with ranges that do not overlap."""

    def on_scale(t: Tolerance) -> tuple[str, float, float]:
        scale, offset = LINKED_METRICS.get(t.metric, (t.metric, 0.0))
        return scale, t.low - offset, t.high - offset

    for i, ti in enumerate(tols):
        scale_i, lo_i, hi_i = on_scale(ti)
        for j in range(i):
            tj = tols[j]
            scale_j, lo_j, hi_j = on_scale(tj)
            shared = ti.pairing is None or tj.pairing is None or ti.pairing == tj.pairing
            if scale_i != scale_j or not shared or max(lo_i, lo_j) < min(hi_i, hi_j):
                continue
            note = ""
            if ti.metric != tj.metric:
                linked = ti.metric if ti.metric in LINKED_METRICS else tj.metric
                note = f" ({relation(linked)})"
            where = f" on {ti.pairing or tj.pairing}" if ti.pairing or tj.pairing else ""
            bad(keys[i], f"contradictory: {ti.describe()} and {keys[j]} ({tj.describe()}) "
                         f"cannot both hold{where}{note}")
            break
