"""What a run plays: the rulesets, the bots and their pairings, the number of deals and the
master seed, read from a ruleset or a run file (:class:`RunConfig`, :func:`load_run_config`)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchsim.bots.learned import ModelError, find_model
from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.engine.ruleset import (
    Ruleset,
    RulesetError,
    load_ruleset,
    parse_override,
    ruleset_from_dict,
)
from patchsim.engine.yamlfile import YamlFileError, read_yaml
from patchsim.layout import NAME_RULE, is_folder_name
from patchsim.play.match import MOVE_SECONDS

# The default line-up: a scripted bot and the strongest bot that keeps the main job at about
# a minute. The learned search where every ruleset of the run has a trained model (the
# shipped editions do); otherwise the rollout search (no model is trained implicitly).
DEFAULT_BOTS_LEARNED = ["greedy", "mcts(eval=learned, iterations=100)"]
DEFAULT_BOTS = ["greedy", "mcts(iterations=200)"]
DEFAULT_GAMES = 200
MAX_BOTS = 50  # bots of one run (all pairings: 1,275 of them)
MAX_RULESETS = 1000  # rulesets of one run file
MAX_GAMES = 10**9  # per ruleset and pairing: far beyond any study, well inside int64 game ids
RUN_KEYS = {"name", "description", "ruleset", "rulesets", "bots", "pairings", "games", "seed",
            "set", "batch_deals"}


class RunError(ValueError):
    """A problem with a run's configuration or output, found before any work starts."""


# --- configuration ----------------------------------------------------------------------------
@dataclass
class RunConfig:
    """Everything that determines a run's games."""

    name: str
    rulesets: list[Ruleset]
    bots: list[str]
    pairings: list[tuple[int, int]]
    deals: int
    seed: int = 1
    batch_deals: int | None = None  # deals per batch; None: chosen by the bots' speed
    source: str = "<config>"
    bot_path: tuple[str, ...] = ()  # folders searched for import-path bots (see make_bot)
    # a bot plays to a time budget (time_ms, allowed by load_run_config(allow_time_budgets=
    # True)): the games depend on the machine and its load, and a rerun plays other games
    timed: bool = False
    # a Python bot's time limit per move (None: none); how long to wait is not part of what
    # the run's games are, so it is neither stored nor in the run's identity
    move_seconds: float | None = MOVE_SECONDS

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rulesets": [{"name": r.name, "hash": r.content_hash(), "rules": r.to_dict()}
                         for r in self.rulesets],
            "bots": self.bots,
            "pairings": [list(p) for p in self.pairings],
            "deals": self.deals,
            "seed": self.seed,
            "batch_deals": self.batch_deals,
            # no bot_path: it holds this machine's folders (a resume searches the working
            # folder, as a new run does)
            "timed": self.timed,
        }

    @classmethod
    def from_manifest(cls, data: dict[str, Any]) -> RunConfig:
        """The config a manifest recorded; RunError naming the dotted key of a value that
        cannot be one (a damaged or hand-edited manifest)."""
        def bad(key: str, want: str, got: Any) -> RunError:
            return RunError(f"config.{key}: expected {want}, got {_shown(got)}")

        if not isinstance(data, dict):
            raise RunError(f"config: expected a mapping, got {_shown(data)}")
        for key in ("name", "rulesets", "bots", "pairings", "deals", "seed"):
            if key not in data:
                raise RunError(f"config.{key} is missing")
        if not isinstance(data["name"], str):
            raise bad("name", "a name", data["name"])
        if not isinstance(data["rulesets"], list) or not data["rulesets"]:
            raise bad("rulesets", "a list of rulesets", data["rulesets"])
        rulesets = []
        for i, r in enumerate(data["rulesets"]):
            if not isinstance(r, dict) or not isinstance(r.get("rules"), dict) \
                    or not isinstance(r.get("name"), str):
                raise bad(f"rulesets[{i}]", "{name, hash, rules}", r)
            try:
                # a manifest's rules are written out in full: they may name no other file
                rs = ruleset_from_dict(r["rules"], source=f"manifest: {r['name']}",
                                       allowed_roots=())
            except RulesetError as e:
                raise RunError(f"config.rulesets[{i}].rules: {e}") from None
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise RunError(f"config.rulesets[{i}].rules: not a ruleset "
                               f"({type(e).__name__}: {e})") from None
            if "hash" in r and r["hash"] != rs.content_hash():
                raise RunError(f"config.rulesets[{i}]: its rules do not match its hash "
                               f"{_shown(r['hash'])} (they were edited after the run)")
            rulesets.append(rs)
        bots = data["bots"]
        if not isinstance(bots, list) or not bots or not all(isinstance(b, str) for b in bots):
            raise bad("bots", "a list of bot specs", bots)
        pairings = data["pairings"]
        if not isinstance(pairings, list) or not pairings or not all(
                isinstance(p, list) and len(p) == 2
                and all(type(i) is int and 0 <= i < len(bots) for i in p) for p in pairings):
            raise bad("pairings", f"pairs of bot numbers from 0 to {len(bots) - 1}", pairings)
        deals = data["deals"]
        if type(deals) is not int or not 1 <= deals <= MAX_GAMES:
            raise bad("deals", "a whole number of deals >= 1", deals)
        seed = data["seed"]
        if type(seed) is not int or not 0 <= seed < 2**63:
            raise bad("seed", "a whole number from 0 to 2**63 - 1", seed)
        batch = data.get("batch_deals")
        if batch is not None and (type(batch) is not int or batch < 1):
            raise bad("batch_deals", "a whole number >= 1 or null", batch)
        timed = data.get("timed", False)  # manifests before it: untimed
        if not isinstance(timed, bool):
            raise bad("timed", "true or false", timed)
        return cls(data["name"], rulesets, list(bots), [tuple(p) for p in pairings], deals,
                   seed, batch, timed=timed)

    def pairing_label(self, i: int) -> str:
        a, b = self.pairings[i]
        return f"{self.bots[a]} vs {self.bots[b]}"


def _shown(value: Any, limit: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def run_identity(config: RunConfig) -> str:
    """A run's id: a hash of what determines its games (not of the number of deals, so a
    top-up keeps it; not of the folder, so two identical runs store identical tables; not of
    ``timed``, which follows from the bots' specs, so the ids of earlier runs stay)."""
    import hashlib

    ident = {k: v for k, v in config.to_dict().items()
             if k not in ("deals", "rulesets", "batch_deals", "bot_path", "timed")}
    ident["rulesets"] = [r.content_hash() for r in config.rulesets]
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:12]


def all_pairings(n: int, mode: str = "all") -> list[tuple[int, int]]:
    """Bot index pairs: ``all`` (self-play included), ``cross`` (no self-play), ``self``."""
    if mode == "self":
        return [(i, i) for i in range(n)]
    if mode == "cross":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    return [(i, j) for i in range(n) for j in range(i, n)]


def games_to_deals(games: int) -> int:
    """Games per pairing and ruleset to deals (each deal is a seat-swapped pair of games)."""
    return max(1, math.ceil(games / 2))


def _whole(value: Any, where: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RunError(f"{where}: expected a whole number >= {lo}, got {value!r}")
    if value < lo:
        raise RunError(f"{where} must be at least {lo}, got {value}")
    return value


def _read_yaml(path: Path, ref: str) -> Any:
    try:
        return read_yaml(path, ref)
    except YamlFileError as e:
        raise RunError("\n".join(e.problems)) from None


def default_bots(rulesets: Sequence[Ruleset]) -> list[str]:
    """The default line-up for these rulesets (see ``DEFAULT_BOTS_LEARNED``)."""
    try:
        for rs in rulesets:
            find_model(rs)
    except ModelError:
        return list(DEFAULT_BOTS)
    return list(DEFAULT_BOTS_LEARNED)


def changed_label(name: str, overrides: Sequence[str]) -> str:
    """The name of ruleset ``name`` changed by ``overrides`` (``key=value`` texts), as typed:
    ``edition2 (bonus.points=9, starting_buttons=6)``. Distinct rulesets keep distinct
    names: two rulesets of a run differ in name already, and get the same overrides."""
    changes = ", ".join(f"{k.strip()}={v.strip()}" for k, _, v in
                        (o.partition("=") for o in overrides))
    return f"{name} ({changes})"


def load_run_config(ref: str, *, games: int | None = None, bots: Sequence[str] | None = None,
                    seed: int | None = None, overrides: Sequence[str] = (),
                    pairings: str | None = None, batch_deals: int | None = None,
                    bot_path: Sequence[str] = (), allow_time_budgets: bool = False) -> RunConfig:
    """A run from a ruleset (name or file: the default line-up) or an experiment file (a YAML
    mapping with ``ruleset``/``rulesets`` and ``bots``). Command-line options win. Every
    problem is a RunError naming the file, key and value, raised before anything runs.

    A bot with a time budget (``time_ms``) is refused unless ``allow_time_budgets`` (the
    ladder's ``--timed``, for equal-time matches): its games depend on the machine and its
    load. Allowed, the config is marked ``timed`` and the run's manifest records it."""
    path = Path(ref)
    data: dict[str, Any] = {}
    if path.is_dir():
        raise RunError(f"{ref} is a folder; give a ruleset or run YAML file (a run folder is "
                       "continued by resuming it)")
    if path.suffix in (".yaml", ".yml") and path.exists():
        loaded = _read_yaml(path, ref)
        if isinstance(loaded, dict) and "base" in loaded and not (
                "rulesets" in loaded or "ruleset" in loaded):
            raise RunError(f"{ref} is a sweep experiment (it has `base`): use "
                           f"`patchsim sweep {ref}` (or tune/check)")
        if isinstance(loaded, dict) and ("rulesets" in loaded or "ruleset" in loaded):
            data = loaded
    if data:
        unknown = sorted(set(data) - RUN_KEYS)
        if unknown:
            raise RunError(f"{ref}: unknown key(s) {', '.join(unknown)} (an experiment has "
                           f"{', '.join(sorted(RUN_KEYS))})")
        refs = data.get("rulesets") if "rulesets" in data else [data.get("ruleset")]
        if isinstance(refs, str):
            refs = [refs]
        key = "rulesets" if "rulesets" in data else "ruleset"
        if isinstance(refs, list) and len(refs) > MAX_RULESETS:
            raise RunError(f"{ref}: {key}: at most {MAX_RULESETS} rulesets, got {len(refs):,}")
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            raise RunError(f"{ref}: {key}: expected a ruleset name or file, or a list of "
                           f"them, got {data.get(key)!r}")
        name = str(data.get("name") or path.stem)
        if len(name) > 100 or not name.isprintable():  # it names the run folder
            raise RunError(f"{ref}: name: expected at most 100 printable characters, got "
                           f"{name[:60]!r}{'...' if len(name) > 60 else ''}")
        if "name" in data and not is_folder_name(name):
            # the name is the run's folder under reports/: ".." or "a/b" would lead out of it
            raise RunError(f"{ref}: name: {name!r} cannot name a folder under reports/; use "
                           f"{NAME_RULE}")
        base = path.parent
        rulesets = []
        for i, r in enumerate(refs):
            target = base / r if r.endswith((".yaml", ".yml")) and (base / r).exists() else r
            try:
                rulesets.append(load_ruleset(target))
            except RulesetError as e:
                raise RunError(f"{ref}: rulesets[{i}]: {e}") from None
        hashes = [r.content_hash() for r in rulesets]
        for i, h in enumerate(hashes):
            if h in hashes[:i]:  # one ruleset twice: the same games twice, under two names
                raise RunError(f"{ref}: {key}[{i}] ({refs[i]}) has the same rules as "
                               f"{key}[{hashes.index(h)}] ({refs[hashes.index(h)]}, hash {h}); "
                               "list each ruleset once")
        file_bots = data.get("bots")
        if isinstance(file_bots, str | dict):
            file_bots = [file_bots]  # one bot
        if file_bots is not None and (not isinstance(file_bots, list) or not file_bots):
            raise RunError(f"{ref}: bots: expected a list of bot specs, got {file_bots!r}")
        bot_specs = list(bots) if bots else list(file_bots or [])
        mode = pairings or str(data.get("pairings", "all"))
        if mode not in ("all", "cross", "self"):
            raise RunError(f"{ref}: pairings: {mode!r} is not one of all, cross, self")
        games_n = games if games is not None else _whole(data.get("games", DEFAULT_GAMES),
                                                         f"{ref}: games", 1)
        seed_n = seed if seed is not None else _whole(data.get("seed", 1), f"{ref}: seed", 0)
        extra = data.get("set") or {}
        if not isinstance(extra, dict):
            raise RunError(f"{ref}: set: expected a mapping of ruleset fields to values, got "
                           f"{extra!r}")
        overrides = [*(f"{k}={json.dumps(v)}" for k, v in extra.items()), *overrides]
        if batch_deals is None and data.get("batch_deals") is not None:
            batch_deals = _whole(data["batch_deals"], f"{ref}: batch_deals", 1)
    else:
        try:
            rulesets = [load_ruleset(ref)]
        except RulesetError as e:
            raise RunError(str(e)) from None
        name = rulesets[0].name if not path.exists() else path.stem
        bot_specs = list(bots) if bots else []
        mode = pairings or "all"
        if mode not in ("all", "cross", "self"):
            raise RunError(f"pairings: {mode!r} is not one of all, cross, self")
        games_n = games if games is not None else DEFAULT_GAMES
        seed_n = seed if seed is not None else 1
    _whole(games_n, "games", 1)
    if games_n > MAX_GAMES:
        raise RunError(f"games: {games_n:,} games per ruleset and pairing is more than patchsim "
                       f"plays in one run ({MAX_GAMES:,}); split the study into several runs")
    _whole(seed_n, "seed", 0)
    if seed_n >= 2**63:
        raise RunError(f"seed: expected a whole number below 2**63, got {seed_n}")
    if batch_deals is not None:
        _whole(batch_deals, "batch_deals", 1)
    if overrides:
        try:
            pairs = dict(parse_override(o) for o in overrides)
            rulesets = [r.with_overrides(pairs) for r in rulesets]
        except RulesetError as e:
            raise RunError(str(e)) from None
        # changed rules get a name of their own, which says what changed: results must not
        # pass for the edition's ("edition2 (bonus.points=9)"; the manifest and the report
        # give each ruleset's hash beside it)
        rulesets = [dataclasses.replace(r, name=changed_label(r.name, overrides))
                    for r in rulesets]
    if not bot_specs:
        bot_specs = default_bots(rulesets)
    if len(bot_specs) > MAX_BOTS:
        raise RunError(f"bots: at most {MAX_BOTS} bots in one run, got {len(bot_specs):,}")
    canonical = []
    timed = False
    for spec in bot_specs:
        try:
            bot = make_bot(spec, bot_path=bot_path)
        except BotSpecError as e:
            raise RunError(str(e)) from None
        if getattr(bot, "values", {}).get("time_ms", 0):
            if not allow_time_budgets:
                raise RunError(f"bot {bot.spec}: a time budget (time_ms) makes results depend "
                               "on the machine and its load; runs need reproducible bots (use "
                               "iterations). The ladder accepts time budgets with --timed "
                               "(equal-time matches, recorded as machine-dependent)")
            timed = True
        canonical.append(bot.spec)  # one bot, one name, however it was typed
    if len(set(canonical)) != len(canonical):
        raise RunError(f"the same bot is listed twice: {', '.join(canonical)}")
    pair_list = all_pairings(len(canonical), mode)
    if not pair_list:
        raise RunError(f"pairings {mode!r} with {len(canonical)} bot(s) gives no games "
                       "(cross pairings need at least two bots)")
    return RunConfig(name, rulesets, canonical, pair_list, games_to_deals(games_n), seed_n,
                     batch_deals, ref, tuple(bot_path), timed=timed)
