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

from patchsim.analysis.defaults import DEFAULT_MARGIN
from patchsim.analysis.metrics import METRICS
from patchsim.analysis.metrics import metric as find_metric
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.engine.ruleset import (
    MAX_NAME,
    Ruleset,
    RulesetError,
    load_ruleset,
)
from patchsim.engine.yamlfile import YamlFileError, read_yaml
from patchsim.errors import MAX_SPEC_CHARS, PatchsimError, quote
from patchsim.experiments.experiment_checks import (
    MAX_VARIANTS,
    METRIC_RANGES,
    Tolerance,
    check_check,
    check_trace,
    check_tune,
    draw_value,
    is_number,
    is_whole,
    known_metric,
)
from patchsim.play.config import (
    MAX_BOTS,
    MAX_GAMES,
    PairingMode,
    all_pairings,
    is_pairing_mode,
)
from patchsim.play.run_name import NAME_RULE, folder_name, is_folder_name

TOP_KEYS = {"name", "description", "base", "set", "bots", "pairings", "games", "seed",
            "variants", "grid", "sample", "skill", "metric", "margin", "tune", "check",
            "batch_deals"}
BASE_LABEL = "base"  # the base ruleset's label; no variant may take it
RULESET_KEY = "ruleset"  # in a variant: play this whole ruleset instead of the base


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


def pairing_names(bots: list[str], mode: PairingMode) -> list[str]:
    """The pairings a run of ``bots`` in ``mode`` plays, named as in its tables."""
    return [f"{bots[a]} vs {bots[b]}" for a, b in all_pairings(len(bots), mode)]


@dataclass
class Variant:
    label: str
    overrides: dict[str, Any]
    ruleset: Ruleset
    coords: dict[str, Any] = field(default_factory=dict)  # grid coordinates, for heatmaps


@dataclass
class Experiment:
    name: str
    description: str
    path: Path
    base: Ruleset
    variants: list[Variant]
    bots: list[str]
    pairings: PairingMode
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
    margin: float = DEFAULT_MARGIN  # equivalence margin of the primary metric (``metric``)
    # a ``skill:`` mapping: the skill trace ``patchsim skill`` plays (levels, bots, ...)
    trace: dict[str, Any] | None = None

    @property
    def pairing_mode(self) -> PairingMode:
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
        if not is_whole(v, lo):
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
            if len(spec) > MAX_SPEC_CHARS:  # the registry's messages would quote it whole
                bad(f"{key}[{i}]", f"{quote(spec)} is longer than any bot spec "
                                   f"({MAX_SPEC_CHARS:,} characters)")
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
        trace = check_trace(data["skill"], bad)
    skill = [] if trace is not None else bot_list("skill")
    given = bot_list("bots")
    bots_ok = len(problems) == n_problems
    bots = given or skill or ["greedy"]
    if skill and given:
        bad("skill", "give either bots or skill (skill plays each bot in self-play)")
    given_pairings = str(data.get("pairings", "self"))
    pairings: PairingMode = "self"
    if is_pairing_mode(given_pairings):
        pairings = given_pairings
    else:
        bad("pairings", f"{quote(given_pairings)} is not one of self, all, cross")
    if pairings == "cross" and len(bots) < 2:
        bad("pairings", "cross needs at least two bots")
    # the pairings the gate and the tuner play (a skill experiment: each bot in self-play)
    names = (pairing_names(skill or bots, "self" if skill else pairings)
             if bots_ok and is_pairing_mode(given_pairings) else None)
    metric = str(data.get("metric", "first_player_win"))
    if not known_metric(metric):
        bad("metric", f"unknown metric {quote(metric)} (metrics: {', '.join(METRICS)})")
    else:
        metric = find_metric(metric).name  # an old name: the table column is the new one
    # the equivalence margin of the primary metric: +-2 points for rates, 1 unit otherwise
    margin = data.get("margin", find_metric(metric).default_margin if known_metric(metric)
                      else 1.0)
    low, high = METRIC_RANGES.get(metric, (-math.inf, math.inf))
    if not is_number(margin) or not 0 < margin < math.inf:
        bad("margin", f"expected a number above 0 (0.02: +-2 points), got {quote(margin)}")
        margin = DEFAULT_MARGIN
    elif margin >= (high - low) / 2:
        # a margin of half the range makes every value "the same as fair"
        bad("margin", f"must be below {(high - low) / 2:g}, half the range of {metric} "
                      f"[{low:g}, {high:g}] (0.02: +-2 points), got {margin:g}")
        margin = DEFAULT_MARGIN

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
        check_tune(tune, base, bad)
    check = data.get("check")
    tolerances: list[Tolerance] = []
    if check is not None:
        tolerances = check_check(check, bad, names)
    if problems:
        raise ExperimentError(problems)
    assert base is not None
    return Experiment(name, str(data.get("description", "")), p, base, variants, bots,
                      pairings, games, seed, metric, skill, grid_fields, cells, tune, check,
                      batch_deals, tolerances, float(margin), trace)


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
            if not is_whole(sample_seed, 0):
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


