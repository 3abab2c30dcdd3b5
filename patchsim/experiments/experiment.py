"""Designer experiments: a YAML file naming a base ruleset and what to vary, the bots, the
deals and the seed; plus an optional ``tune`` section (search for the best variant) and an
optional ``check`` section (tolerances for the balance gate).

Everything is validated before anything runs; every problem names the file and the key
(duplicate keys in the YAML included, with their line numbers).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from patchsim.analysis.metrics import ALIASES, METRICS, RANGES
from patchsim.analysis.metrics import metric as find_metric
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.engine.ruleset import (
    MAX_NAME,
    Ruleset,
    RulesetError,
    load_ruleset,
)
from patchsim.engine.yamlfile import YamlFileError, quote, read_yaml
from patchsim.errors import PatchsimError
from patchsim.layout import NAME_RULE, folder_name, is_folder_name
from patchsim.play.config import MAX_BOTS, MAX_GAMES, all_pairings

TOP_KEYS = {"name", "description", "base", "set", "bots", "pairings", "games", "seed",
            "variants", "grid", "sample", "skill", "metric", "margin", "tune", "check",
            "batch_deals"}
TUNE_KEYS = {"fields", "targets", "candidates", "rounds", "games", "finalists", "final_games",
             "seed"}
TARGET_KEYS = {"target", "tolerance"}
CHECK_KEYS = {"tolerances", "max_games", "step_games", "alpha", "beta", "resolution"}
TOLERANCE_KEYS = {"metric", "min", "max", "target", "margin", "pairing"}
BASE_LABEL = "base"  # the base ruleset's label; no variant may take it

# Metrics that say the same thing on shifted scales: (metric, scale metric, offset), meaning
# metric = scale metric + offset. Ranges on both are compared on the common scale.
LINKED_METRICS = {"first_player_edge": ("first_player_win", -0.5)}


RULESET_KEY = "ruleset"  # in a variant: play this whole ruleset instead of the base

# Far beyond any study on one machine; a few lines of YAML can otherwise ask for millions.
MAX_VARIANTS = 1000

# The range each metric's values lie in (a tolerance reaching beyond it cannot fail there).
METRIC_RANGES: dict[str, tuple[float, float]] = {
    **RANGES, **{alias: RANGES[name] for alias, name in ALIASES.items()}}


def _known(name: object) -> bool:
    """A metric name or alias (old names stay accepted, see analysis.metrics)."""
    return isinstance(name, str) and (name in METRICS or name in ALIASES)


class ExperimentError(PatchsimError, ValueError):
    """Problems in an experiment file, all of them, each with file and key."""

    def __init__(self, problems: list[str]) -> None:
        # "invalid experiment (N problems):" and the problems, one a line (PatchsimError)
        super().__init__(*problems, title="invalid experiment")


def _read_yaml(p: Path, src: str) -> Any:
    """The YAML document at ``p``; ExperimentError for anything that keeps it from loading."""
    try:
        return read_yaml(p, src)
    except YamlFileError as e:
        raise ExperimentError(e.problems) from None


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_whole(v: Any, lo: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _relation(metric: str) -> str:
    """How a linked metric follows from its scale metric, e.g. "a = b - 0.5"."""
    scale, offset = LINKED_METRICS[metric]
    return f"{metric} = {scale} {'-' if offset < 0 else '+'} {abs(offset):g}"


def pairing_names(bots: list[str], mode: str) -> list[str]:
    """The pairings a run of ``bots`` in ``mode`` plays, named as in its tables."""
    return [f"{bots[a]} vs {bots[b]}" for a, b in all_pairings(len(bots), mode)]


def canonical_pairing(text: str) -> str | None:
    """"<bot> vs <bot>" with both bots' canonical specs, or None if it is not one."""
    parts = text.split(" vs ")
    if len(parts) != 2:
        return None
    try:
        return " vs ".join(make_bot(part.strip()).spec for part in parts)
    except BotSpecError:
        return None


@dataclass
class Variant:
    label: str
    overrides: dict[str, Any]
    ruleset: Ruleset
    coords: dict[str, Any] = field(default_factory=dict)  # grid coordinates, for heatmaps


@dataclass
class Tolerance:
    metric: str
    low: float
    high: float
    pairing: str | None = None

    def describe(self) -> str:
        return f"{self.metric} within [{self.low:g}, {self.high:g}]"


@dataclass
class Experiment:
    name: str
    description: str
    path: Path
    base: Ruleset
    variants: list[Variant]
    bots: list[str]
    pairings: str
    games: int
    seed: int
    metric: str = "first_player_win"
    skill: list[str] = field(default_factory=list)
    grid_fields: list[str] = field(default_factory=list)
    grid_cells: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    tune: dict[str, Any] | None = None
    check: dict[str, Any] | None = None
    batch_deals: int | None = None
    tolerances: list[Tolerance] = field(default_factory=list)
    margin: float = 0.02  # equivalence margin of the primary metric (``metric``)
    # a ``skill:`` mapping: the skill trace ``patchsim skill`` plays (levels, bots, ...)
    trace: dict[str, Any] | None = None

    @property
    def pairing_mode(self) -> str:
        """How the bots are paired: skill experiments play each bot in self-play."""
        return "self" if self.skill else self.pairings

    def pairing_names(self) -> list[str]:
        return pairing_names(self.skill or self.bots, self.pairing_mode)


def variant_label(overrides: dict[str, Any]) -> str:
    """A variant's name from its overrides: ``starting_buttons=6, bonus.points=9``."""
    return ", ".join(f"{k}={_short(v)}" for k, v in overrides.items())


def _short(v: Any) -> str:
    return json.dumps(v, separators=(",", ":")) if isinstance(v, list | dict) else str(v)


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment file; ExperimentError lists every problem."""
    p = Path(path)
    src = str(path)
    data = _read_yaml(p, src)
    if not isinstance(data, dict):
        raise ExperimentError([f"{src}: an experiment is a YAML mapping"])
    if ("ruleset" in data or "rulesets" in data) and "base" not in data:
        raise ExperimentError([f"{src}: this is a run experiment (ruleset/rulesets); use "
                               f"`patchsim run {src}`"])
    problems: list[str] = []

    def bad(key: str, msg: str) -> None:
        problems.append(f"{src}: {key}: {msg}")

    for k in sorted(set(data) - TOP_KEYS, key=str):
        bad(k, f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    name = str(data.get("name") or p.stem)
    if len(name) > MAX_NAME or not name.isprintable():
        # the name becomes the report folder's name
        bad("name", f"expected at most {MAX_NAME} printable characters, got {quote(name)}")
    elif "name" in data and not is_folder_name(name):
        # the name is the study's folder under reports/: "..", "a/b" or ".x" would lead
        # out of it or hide it
        bad("name", f"{name!r} cannot name a folder under reports/; use {NAME_RULE} "
                    f"(e.g. {folder_name(name)!r})")
    base_ref = data.get("base")
    base: Ruleset | None = None
    if not isinstance(base_ref, str):
        bad("base", "required: the ruleset the variants change (a shipped name or a YAML path)")
    else:
        target: str | Path = base_ref
        if base_ref.endswith((".yaml", ".yml")) and (p.parent / base_ref).exists():
            target = p.parent / base_ref
        try:
            base = load_ruleset(target)
        except RulesetError as e:
            bad("base", str(e).replace("\n", " "))
    if base is not None and data.get("set"):
        if not isinstance(data["set"], dict):
            bad("set", "expected a mapping of ruleset fields to values")
        else:
            try:
                base = base.with_overrides(dict(data["set"]))
            except RulesetError as e:
                bad("set", "; ".join(e.problems))

    def ints(key: str, default: int, lo: int) -> int:
        v = data.get(key, default)
        if not _is_whole(v, lo):
            bad(key, f"expected a whole number >= {lo}, got {quote(v)}")
            return default
        return v

    games = ints("games", 400, 1)
    if games > MAX_GAMES:
        bad("games", f"at most {MAX_GAMES:,} games per variant and pairing, got {games:,}")
        games = 400
    seed = ints("seed", 1, 0)
    batch_deals = ints("batch_deals", 1, 1) if data.get("batch_deals") is not None else None

    def bot_list(key: str) -> list[str]:
        """The canonical specs of a bot list (a single bot may be given as a string)."""
        v = data.get(key)
        if v is None:
            return []
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not v:
            bad(key, f"expected a bot or a non-empty list of bots, got {quote(v)}")
            return []
        if len(v) > MAX_BOTS:
            bad(key, f"at most {MAX_BOTS} bots, got {len(v):,}")
            return []
        out: list[str] = []
        first: dict[str, int] = {}
        for i, spec in enumerate(v):
            if not isinstance(spec, str):
                bad(f"{key}[{i}]", f"expected a bot spec such as greedy, got {quote(spec)}")
                continue
            try:
                canon = make_bot(spec).spec
            except BotSpecError as e:
                bad(f"{key}[{i}]", str(e))
                continue
            if canon in first:
                bad(f"{key}[{i}]", f"the same bot as {key}[{first[canon]}] ({canon})")
                continue
            first[canon] = i
            out.append(canon)
        return out

    n_problems = len(problems)
    trace = None
    if isinstance(data.get("skill"), dict):  # a skill trace, not a list of levels
        trace = _check_trace(data["skill"], bad)
    skill = [] if trace is not None else bot_list("skill")
    given = bot_list("bots")
    bots_ok = len(problems) == n_problems
    bots = given or skill or ["greedy"]
    if skill and given:
        bad("skill", "give either bots or skill (skill plays each bot in self-play)")
    pairings = str(data.get("pairings", "self"))
    if pairings not in ("self", "all", "cross"):
        bad("pairings", f"{quote(pairings)} is not one of self, all, cross")
    if pairings == "cross" and len(bots) < 2:
        bad("pairings", "cross needs at least two bots")
    # the pairings the gate and the tuner play (a skill experiment: each bot in self-play)
    names = (pairing_names(skill or bots, "self" if skill else pairings)
             if bots_ok and pairings in ("self", "all", "cross") else None)
    metric = str(data.get("metric", "first_player_win"))
    if not _known(metric):
        bad("metric", f"unknown metric {quote(metric)} (metrics: {', '.join(METRICS)})")
    else:
        metric = find_metric(metric).name  # an old name: the table column is the new one
    # the equivalence margin of the primary metric: +-2 points for rates, 1 unit otherwise
    margin = data.get("margin", find_metric(metric).default_margin if _known(metric)
                      else 1.0)
    low, high = METRIC_RANGES.get(metric, (-math.inf, math.inf))
    if not _is_number(margin) or not 0 < margin < math.inf:
        bad("margin", f"expected a number above 0 (0.02: +-2 points), got {quote(margin)}")
        margin = 0.02
    elif margin >= (high - low) / 2:
        # a margin of half the range makes every value "the same as fair"
        bad("margin", f"must be below {(high - low) / 2:g}, half the range of {metric} "
                      f"[{low:g}, {high:g}] (0.02: +-2 points), got {margin:g}")
        margin = 0.02

    variants: list[Variant] = []
    grid_fields: list[str] = []
    cells: list[tuple[dict[str, Any], str]] = []
    if base is not None:
        variants.append(Variant(BASE_LABEL, {}, dataclasses.replace(base, name=BASE_LABEL)))
        if isinstance(data.get("grid"), dict):
            grid_fields = list(data["grid"].keys())
        seen = {base.content_hash(): BASE_LABEL}
        seen_key = {base.content_hash(): "the base ruleset"}  # the key that declared it
        labels: dict[str, tuple[str, str]] = {}  # label -> (key, overrides) of its first use
        for key, label, overrides, coords in _variant_specs(data, src, bad):
            if label == BASE_LABEL:
                bad(key, f"the name {BASE_LABEL!r} is reserved for the base ruleset")
                continue
            as_json = json.dumps(overrides, sort_keys=True, default=str)
            if label in labels:
                first_key, first_json = labels[label]
                # the same overrides drawn twice by `sample` (or a grid point repeating a
                # variant) are the same variant, played once; a name given twice is a mistake
                if key.startswith("variants[") or as_json != first_json:
                    bad(key, f"the name {quote(label)} is already used by {first_key}")
                    continue
            else:
                labels[label] = (key, as_json)
            try:
                rs = base
                rest = dict(overrides)
                if RULESET_KEY in rest:
                    ref = rest.pop(RULESET_KEY)
                    local = p.parent / ref
                    rs = load_ruleset(local if ref.endswith((".yaml", ".yml"))
                                      and local.exists() else ref)
                rs = rs.with_overrides(rest) if rest else rs
            except RulesetError as e:
                bad(f"{key}.ruleset" if RULESET_KEY in overrides and "\n" in str(e) else key,
                    "; ".join(e.problems))
                continue
            h = rs.content_hash()
            if h in seen and seen[h] != label and not _may_repeat(key, seen[h], seen_key[h]):
                bad(key, f"the same rules as {seen_key[h]} (hash {h}): each variant must "
                         "differ from the base and from the others")
                continue
            if h not in seen:  # identical rules (e.g. the base's grid point) are played once
                seen[h] = label
                seen_key[h] = key
                variants.append(Variant(label, overrides, dataclasses.replace(rs, name=label),
                                        coords))
            if coords:
                cells.append((coords, seen[h]))
    tune = data.get("tune")
    if tune is not None:
        _check_tune(tune, base, bad)
    check = data.get("check")
    tolerances: list[Tolerance] = []
    if check is not None:
        tolerances = _check_check(check, bad, names)
    if problems:
        raise ExperimentError(problems)
    assert base is not None
    return Experiment(name, str(data.get("description", "")), p, base, variants, bots,
                      pairings, games, seed, metric, skill, grid_fields, cells, tune, check,
                      batch_deals, tolerances, float(margin), trace)


TRACE_KEYS = {"levels", "bots", "search", "deals", "seed", "timed", "diversity", "compare",
              "margin"}


def _check_trace(spec: dict[str, Any], bad: Any) -> dict[str, Any]:
    """The ``skill:`` mapping (a skill trace for ``patchsim skill``), checked key by key:
    levels (increasing budgets), bots (the scripted foot of the ladder), search (a bot
    spec), deals, seed, timed, diversity, compare, margin."""
    out: dict[str, Any] = {}
    for k in sorted(set(spec) - TRACE_KEYS, key=str):
        bad(f"skill.{k}", f"unknown key (known: {', '.join(sorted(TRACE_KEYS))})")
    levels = spec.get("levels")
    if levels is not None:
        if not (isinstance(levels, list) and levels
                and all(_is_number(v) and v > 0 for v in levels)):
            bad("skill.levels", f"expected a list of budgets above 0, got {quote(levels)}")
        elif levels != sorted(set(levels)):
            bad("skill.levels", f"budgets must increase, got {quote(levels)}")
        else:
            out["levels"] = levels
    for key, check, want in (("deals", lambda v: _is_whole(v, 2), "a whole number >= 2"),
                             ("seed", lambda v: _is_whole(v, 0), "a whole number >= 0"),
                             ("timed", lambda v: isinstance(v, bool), "true or false"),
                             ("compare", lambda v: isinstance(v, bool), "true or false"),
                             ("margin", lambda v: _is_number(v) and 0 < v < 0.5,
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


def _may_repeat(key: str, first_label: str, first_key: str) -> bool:
    """Whether a variant (``key``) may have the same rules as an earlier one: a grid point
    may be the base itself (the grid is complete), a random sample may draw anything."""
    return (key.startswith("sample[") or first_key.startswith("sample[")
            or (key.startswith("grid") and first_label == BASE_LABEL))


def _variant_specs(data: dict[str, Any], src: str, bad) -> list[tuple[str, str, dict, dict]]:
    """(key for messages, label, overrides, grid coordinates) of every declared variant."""
    out: list[tuple[str, str, dict, dict]] = []
    if "variants" in data:
        vs = data["variants"]
        if not isinstance(vs, list) or not vs:
            bad("variants", "expected a non-empty list of {name, set} mappings")
        elif len(vs) > MAX_VARIANTS:
            bad("variants", f"at most {MAX_VARIANTS} variants, got {len(vs):,}")
        else:
            for i, v in enumerate(vs):
                if not isinstance(v, dict) or set(v) - {"name", "set", "ruleset"}:
                    bad(f"variants[{i}]", "expected {name: ..., set: {field: value, ...}} or "
                                          "{name: ..., ruleset: NAME_OR_FILE}")
                    continue
                overrides = v.get("set") or {}
                if not isinstance(overrides, dict):
                    bad(f"variants[{i}].set", "expected a mapping of ruleset fields to values")
                    continue
                given = v.get("name")
                if given is not None and (not isinstance(given, str) or len(given) > MAX_NAME
                                          or not given.isprintable() or not given.strip()):
                    bad(f"variants[{i}].name", f"expected at most {MAX_NAME} printable "
                                               f"characters, got {quote(given)}")
                    continue
                if "ruleset" in v:
                    # a whole other ruleset (e.g. another quilt size with its own track and
                    # patch set), still played on the experiment's deals
                    overrides = {RULESET_KEY: str(v["ruleset"]), **overrides}
                out.append((f"variants[{i}]", str(v.get("name") or variant_label(overrides)),
                            dict(overrides), {}))
    if "grid" in data:
        grid = data["grid"]
        if not isinstance(grid, dict) or not grid:
            bad("grid", "expected a mapping of ruleset fields to lists of values")
        else:
            ok = True
            for k, values in grid.items():
                if not isinstance(values, list) or not values:
                    bad(f"grid.{k}", "expected a non-empty list of values")
                    ok = False
                    continue
                first: dict[str, int] = {}
                for i, value in enumerate(values):
                    text = json.dumps(value, sort_keys=True, default=str)
                    if text in first:
                        bad(f"grid.{k}[{i}]", f"{quote(value)} is listed twice (also "
                                              f"grid.{k}[{first[text]}])")
                        ok = False
                    first.setdefault(text, i)
            points = math.prod(len(v) for v in grid.values() if isinstance(v, list))
            if ok and points > MAX_VARIANTS:
                bad("grid", f"{points:,} grid points, more than {MAX_VARIANTS} variants")
                ok = False
            if ok:
                keys = list(grid)
                for combo in itertools.product(*(grid[k] for k in keys)):
                    ov = dict(zip(keys, combo, strict=True))
                    out.append((f"grid ({variant_label(ov)})", variant_label(ov), ov, dict(ov)))
    if "sample" in data:
        sample = data["sample"]
        if not isinstance(sample, dict) or "fields" not in sample or \
                not isinstance(sample.get("fields"), dict):
            bad("sample", "expected {n: N, seed: S, fields: {field: [choices] or "
                          "{min: a, max: b}}}")
        else:
            n = sample.get("n", 8)
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_VARIANTS:
                bad("sample.n", f"expected a whole number from 1 to {MAX_VARIANTS}, got "
                                f"{quote(n)}")
                n = 0
            sample_seed = sample.get("seed", 0)
            if not _is_whole(sample_seed, 0):
                bad("sample.seed", f"expected a whole number >= 0, got {quote(sample_seed)}")
                sample_seed = 0
            rng = np.random.default_rng(sample_seed)
            for i in range(n):
                ov = {}
                for k, dom in sample["fields"].items():
                    value = draw_value(dom, rng)
                    if value is None:
                        bad(f"sample.fields.{k}", "expected a list of choices or "
                                                  "{min: a, max: b}")
                        return out
                    ov[k] = value
                out.append((f"sample[{i}]", variant_label(ov), ov, {}))
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


def _check_tune(tune: Any, base: Ruleset | None, bad) -> None:
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
            if not _known(m):
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
            elif not _is_number(t["target"]) or not np.isfinite(t["target"]):
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
            elif not _is_number(t["tolerance"]) or not 0 < t["tolerance"] < np.inf:
                bad(f"{key}.tolerance", f"must be a positive number, got {quote(t['tolerance'])}")
                ok = False
            if ok and _known(m):
                ranges[find_metric(m).name] = (t["target"] - t["tolerance"],
                                               t["target"] + t["tolerance"])
    for m, (scale, offset) in LINKED_METRICS.items():
        if m in ranges and scale in ranges:
            (lo1, hi1), (lo2, hi2) = ranges[scale], ranges[m]
            if max(lo1, lo2 - offset) >= min(hi1, hi2 - offset):
                bad("tune.targets", f"contradictory: {scale} in [{lo1:g}, {hi1:g}] and {m} in "
                                    f"[{lo2:g}, {hi2:g}] cannot both hold "
                                    f"({_relation(m)})")
    # rounds double the games: 30 rounds already ask for 2**30 times tune.games
    limits = {"candidates": MAX_VARIANTS, "rounds": 30, "games": MAX_GAMES,
              "finalists": MAX_VARIANTS, "final_games": MAX_GAMES}
    for k, most in limits.items():
        v = tune.get(k)
        if v is not None and not (_is_whole(v, 1) and v <= most):
            bad(f"tune.{k}", f"expected a whole number from 1 to {most:,}, got {quote(v)}")
    if tune.get("seed") is not None and not _is_whole(tune["seed"], 0):
        bad("tune.seed", f"expected a whole number >= 0, got {quote(tune['seed'])}")


def _check_check(check: Any, bad, pairings: list[str] | None) -> list[Tolerance]:
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
        if not isinstance(m, str) or not _known(m):
            bad(f"{key}.metric", f"unknown metric {quote(m)} (metrics: {', '.join(METRICS)})")
            continue
        m = find_metric(m).name
        numbers_ok = True
        for k in ("min", "max", "target", "margin"):
            if k in t and not _is_number(t[k]):
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
    if res is not None and (not _is_number(res) or not res > 0):
        bad("check.resolution", f"expected a number above 0 (how far inside a one-sided "
                                f"bound a value must lie to pass), got {quote(res)}")
    for k in ("max_games", "step_games"):
        v = check.get(k)
        if v is not None and not (_is_whole(v, 2) and v <= MAX_GAMES):
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
                note = f" ({_relation(linked)})"
            where = f" on {ti.pairing or tj.pairing}" if ti.pairing or tj.pairing else ""
            bad(keys[i], f"contradictory: {ti.describe()} and {keys[j]} ({tj.describe()}) "
                         f"cannot both hold{where}{note}")
            break
