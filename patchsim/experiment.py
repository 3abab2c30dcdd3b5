"""Designer experiments: a YAML file naming a base ruleset and what to vary, the bots, the
deals and the seed; plus an optional ``tune`` section (search for the best variant) and an
optional ``check`` section (tolerances for the balance gate).

Everything is validated before anything runs; every problem names the file and the key.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from patchsim.bots import BotSpecError, make_bot
from patchsim.metrics import METRICS
from patchsim.ruleset import Ruleset, RulesetError, load_ruleset

TOP_KEYS = {"name", "description", "base", "set", "bots", "pairings", "games", "seed",
            "variants", "grid", "sample", "skill", "metric", "tune", "check", "batch_deals"}
TUNE_KEYS = {"fields", "targets", "candidates", "rounds", "games", "finalists", "final_games",
             "seed"}
CHECK_KEYS = {"tolerances", "max_games", "step_games", "alpha"}
TOLERANCE_KEYS = {"metric", "min", "max", "target", "margin", "pairing"}


RULESET_KEY = "ruleset"  # in a variant: play this whole ruleset instead of the base


class ExperimentError(ValueError):
    """Problems in an experiment file, all of them, each with file and key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        head = f"invalid experiment ({len(problems)} problem{'s' * (len(problems) != 1)}):"
        super().__init__("\n".join([head, *("  " + p for p in problems)]))


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


def _label(overrides: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in overrides.items())


def _short(v: Any) -> str:
    return json.dumps(v, separators=(",", ":")) if isinstance(v, list | dict) else str(v)


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment file; ExperimentError lists every problem."""
    p = Path(path)
    src = str(path)
    if not p.exists():
        raise ExperimentError([f"{src}: no such file"])
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ExperimentError([f"{src}: not valid YAML: {e}"]) from None
    if not isinstance(data, dict):
        raise ExperimentError([f"{src}: an experiment is a YAML mapping"])
    problems: list[str] = []

    def bad(key: str, msg: str) -> None:
        problems.append(f"{src}: {key}: {msg}")

    for k in sorted(set(data) - TOP_KEYS):
        bad(k, f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    name = str(data.get("name") or p.stem)
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

    def ints(key: str, default: int, lo: int = 0) -> int:
        v = data.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            bad(key, f"expected a whole number >= {lo}, got {v!r}")
            return default
        return v

    games = ints("games", 400, 1)
    seed = ints("seed", 1)
    batch_deals = data.get("batch_deals")
    skill = [str(s) for s in (data.get("skill") or [])]
    bots = [str(b) for b in (data.get("bots") or (skill or ["greedy"]))]
    if skill and data.get("bots"):
        bad("skill", "give either bots or skill (skill plays each bot in self-play)")
    for key, specs in (("bots", bots), ("skill", skill)):
        for i, spec in enumerate(specs):
            try:
                make_bot(spec)
            except BotSpecError as e:
                bad(f"{key}[{i}]", str(e))
    pairings = str(data.get("pairings", "self"))
    if pairings not in ("self", "all", "cross"):
        bad("pairings", f"{pairings!r} is not one of self, all, cross")
    if pairings == "cross" and len(bots) < 2:
        bad("pairings", "cross needs at least two bots")
    metric = str(data.get("metric", "first_player_win"))
    if metric not in METRICS:
        bad("metric", f"unknown metric {metric!r} (metrics: {', '.join(METRICS)})")

    variants: list[Variant] = []
    grid_fields: list[str] = []
    cells: list[tuple[dict[str, Any], str]] = []
    if base is not None:
        variants.append(Variant("base", {}, dataclasses.replace(base, name="base")))
        if isinstance(data.get("grid"), dict):
            grid_fields = list(data["grid"].keys())
        seen = {base.content_hash(): "base"}
        for key, label, overrides, coords in _variant_specs(data, src, bad):
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
            if h not in seen:  # identical rules (e.g. the base's grid point) are played once
                seen[h] = label
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
        tolerances = _check_check(check, bad)
    if problems:
        raise ExperimentError(problems)
    assert base is not None
    return Experiment(name, str(data.get("description", "")), p, base, variants, bots,
                      pairings, games, seed, metric, skill, grid_fields, cells, tune, check,
                      batch_deals, tolerances)


def _variant_specs(data: dict[str, Any], src: str, bad) -> list[tuple[str, str, dict, dict]]:
    """(key for messages, label, overrides, grid coordinates) of every declared variant."""
    out: list[tuple[str, str, dict, dict]] = []
    if "variants" in data:
        vs = data["variants"]
        if not isinstance(vs, list) or not vs:
            bad("variants", "expected a non-empty list of {name, set} mappings")
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
                if "ruleset" in v:
                    # a whole other ruleset (e.g. another quilt size with its own track and
                    # patch set), still played on the experiment's deals
                    overrides = {RULESET_KEY: str(v["ruleset"]), **overrides}
                out.append((f"variants[{i}]", str(v.get("name") or _label(overrides)),
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
            if ok:
                keys = list(grid)
                for combo in itertools.product(*(grid[k] for k in keys)):
                    ov = dict(zip(keys, combo, strict=True))
                    out.append((f"grid ({_label(ov)})", _label(ov), ov, dict(ov)))
    if "sample" in data:
        sample = data["sample"]
        if not isinstance(sample, dict) or "fields" not in sample or \
                not isinstance(sample.get("fields"), dict):
            bad("sample", "expected {n: N, seed: S, fields: {field: [choices] or "
                          "{min: a, max: b}}}")
        else:
            n = sample.get("n", 8)
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                bad("sample.n", f"expected a whole number >= 1, got {n!r}")
                n = 0
            rng = np.random.default_rng(sample.get("seed", 0))
            for i in range(n):
                ov = {}
                for k, dom in sample["fields"].items():
                    value = _draw(dom, rng)
                    if value is None:
                        bad(f"sample.fields.{k}", "expected a list of choices or "
                                                  "{min: a, max: b}")
                        return out
                    ov[k] = value
                out.append((f"sample[{i}]", _label(ov), ov, {}))
    return out


def _draw(domain: Any, rng: np.random.Generator) -> Any:
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
            v = _draw(dom, rng)
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
    if not isinstance(targets, dict) or not targets:
        bad("tune.targets", "expected {metric: {target: x, tolerance: t}, ...}")
    else:
        for m, t in targets.items():
            if m not in METRICS:
                bad(f"tune.targets.{m}", f"unknown metric (metrics: {', '.join(METRICS)})")
            if not isinstance(t, dict) or "target" not in t:
                bad(f"tune.targets.{m}", "expected {target: x, tolerance: t}")
            elif not isinstance(t.get("tolerance", 1), int | float) or t.get("tolerance", 1) <= 0:
                bad(f"tune.targets.{m}.tolerance", "must be a positive number")
    for k in ("candidates", "rounds", "games", "finalists", "final_games"):
        v = tune.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            bad(f"tune.{k}", f"expected a whole number >= 1, got {v!r}")


def _check_check(check: Any, bad) -> list[Tolerance]:
    out: list[Tolerance] = []
    if not isinstance(check, dict):
        bad("check", "expected a mapping with tolerances")
        return out
    for k in sorted(set(check) - CHECK_KEYS):
        bad(f"check.{k}", f"unknown key (known: {', '.join(sorted(CHECK_KEYS))})")
    tols = check.get("tolerances")
    if not isinstance(tols, list) or not tols:
        bad("check.tolerances", "expected a list of {metric, min, max} or "
                                "{metric, target, margin}")
        return out
    for i, t in enumerate(tols):
        key = f"check.tolerances[{i}]"
        if not isinstance(t, dict):
            bad(key, "expected a mapping")
            continue
        for k in sorted(set(t) - TOLERANCE_KEYS):
            bad(f"{key}.{k}", f"unknown key (known: {', '.join(sorted(TOLERANCE_KEYS))})")
        m = t.get("metric")
        if m not in METRICS:
            bad(f"{key}.metric", f"unknown metric {m!r} (metrics: {', '.join(METRICS)})")
            continue
        if "target" in t:
            margin = t.get("margin")
            if not isinstance(margin, int | float) or margin <= 0:
                bad(f"{key}.margin", "a positive number is needed with target")
                continue
            lo, hi = t["target"] - margin, t["target"] + margin
        else:
            lo, hi = t.get("min", -np.inf), t.get("max", np.inf)
            if "min" not in t and "max" not in t:
                bad(key, "give min and/or max, or target and margin")
                continue
        if not lo < hi:
            bad(key, f"the interval [{lo}, {hi}] is empty: contradictory tolerance")
            continue
        out.append(Tolerance(str(m), float(lo), float(hi), t.get("pairing")))
    alpha = check.get("alpha", 0.05)
    if not isinstance(alpha, float) or not 0 < alpha < 0.5:
        bad("check.alpha", f"expected a number between 0 and 0.5, got {alpha!r}")
    for k in ("max_games", "step_games"):
        v = check.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 2):
            bad(f"check.{k}", f"expected a whole number >= 2, got {v!r}")
    return out
