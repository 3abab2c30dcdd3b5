"""What a run plays: the rulesets, the bots and their pairings, the number of deals and the
master seed (:class:`RunConfig`), built from values (:func:`make_run_config`) or read from a
ruleset or a run file into values first (:func:`load_run_config`)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard, get_args

from patchsim.bots.learned import ModelError, find_model
from patchsim.bots.registry import Bot, BotSpecError, bot_spec, make_bot
from patchsim.engine.ruleset import (
    Ruleset,
    RulesetError,
    load_ruleset,
    parse_override,
    ruleset_from_dict,
)
from patchsim.engine.yamlfile import YamlFileError, read_yaml
from patchsim.errors import ARGUMENT, OVERRIDE, PatchsimError, Problem
from patchsim.play.match import MOVE_SECONDS
from patchsim.play.run_name import NAME_RULE, is_folder_name

# The default line-up: a scripted bot and the strongest bot that keeps the main job at about
# a minute. The learned search where every ruleset of the run has a trained model (the
# shipped editions do); otherwise the rollout search (no model is trained implicitly).
# The learned search draws its first 8 plies by root visits (temperature 1): deterministic,
# it would play one game per deal in self-play, and the first seat's figure would hang on
# that one game (README, The skill trace).
DEFAULT_BOTS_LEARNED = ["greedy", "mcts(eval=learned, iterations=100, sample_plies=8, "
                                  "temperature=1)"]
DEFAULT_BOTS = ["greedy", "mcts(iterations=200)"]
DEFAULT_GAMES = 200
# With the learned line-up and no number of games given, the main job plays 600 deals: at a
# first-seat rate near 57% (its skill trace) that decides the headline verdict against the
# +-2-point margin about 85% of the time (the power calculation of analysis.estimators), in
# about a minute on 2 cores.
DEFAULT_GAMES_LEARNED = 1200
# who plays whom: every pair of bots and each bot against itself, only different bots, or
# only each bot against itself
PairingMode = Literal["all", "cross", "self"]
PAIRING_MODES: tuple[PairingMode, ...] = get_args(PairingMode)


def is_pairing_mode(value: object) -> TypeGuard[PairingMode]:
    """Is ``value`` one of PAIRING_MODES (a check that also tells the type checker)?"""
    return value in PAIRING_MODES


MAX_BOTS = 50  # bots of one run (all pairings: 1,275 of them)
MAX_RULESETS = 1000  # rulesets of one run file
MAX_GAMES = 10**9  # per ruleset and pairing: far beyond any study, well inside int64 game ids
RUN_KEYS = {"name", "description", "ruleset", "rulesets", "bots", "pairings", "games", "seed",
            "set", "batch_deals"}


class RunError(PatchsimError, ValueError):
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


def all_pairings(n: int, mode: PairingMode = "all") -> list[tuple[int, int]]:
    """Bot index pairs: ``all`` (self-play included), ``cross`` (no self-play), ``self``."""
    if mode == "self":
        return [(i, i) for i in range(n)]
    if mode == "cross":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    return [(i, j) for i in range(n) for j in range(i, n)]


def games_to_deals(games: int) -> int:
    """Games per pairing and ruleset to deals (each deal is a seat-swapped pair of games)."""
    return max(1, math.ceil(games / 2))


def _whole(value: Any, where: str, lo: int, source: str | None = None) -> int:
    """``value`` as a whole number >= ``lo``; a RunError about ``where`` (an argument's name,
    or a key of the file ``source``) otherwise."""
    given = ARGUMENT if source is None else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RunError(Problem(f"expected a whole number >= {lo}, got {value!r}", key=where,
                               value=value, source=source, given=given))
    if value < lo:
        raise RunError(Problem(f"must be at least {lo}, got {value}", key=where, value=value,
                               source=source, given=given))
    return value


def _in_file(ref: str, key: str, message: str) -> RunError:
    """A problem with the value of ``key`` in the experiment file ``ref``."""
    return RunError(Problem(message, key=key, source=ref))


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


@dataclass(frozen=True)
class Override:
    """One ruleset override: a dotted key, its value, and the value's text as the user gave
    it (the changed ruleset's name shows it: ``edition2 (bonus.points=9)``); ``source`` is
    the experiment file whose ``set`` gave it (None: given as an argument)."""

    key: str
    value: Any
    text: str
    source: str | None = None

    @classmethod
    def parse(cls, text: str) -> Override:
        """``"bonus.points=9"`` (the value read as YAML); RulesetError naming the override."""
        key, value = parse_override(text)
        return cls(key, value, text.partition("=")[2].strip())

    @classmethod
    def of(cls, key: str, value: Any, source: str | None = None) -> Override:
        """A value given as data (an experiment file's ``set``), shown as JSON."""
        return cls(key, value, json.dumps(value), source)


def _blame_files(error: RulesetError, changes: Sequence[Override]) -> RulesetError:
    """``error`` with each problem of an override that an experiment file's ``set`` gave
    blamed on that file's key (``run.yaml: set.bonus.points``): the user wrote it there, not
    as an override of their own. The last override that sets the key (or a mapping above
    it) is the one that took effect."""
    def owner(key: str | None) -> Override | None:
        hits = [o for o in changes if key is not None and (
            key == o.key or key.startswith((o.key + ".", o.key + "[")))]
        return hits[-1] if hits else None

    problems: list[str] = []
    for p in error.problems:
        o = owner(p.key) if isinstance(p, Problem) and p.given == OVERRIDE else None
        if o is not None and o.source is not None and isinstance(p, Problem):
            problems.append(Problem(p.message, key=f"set.{p.key}", value=p.value,
                                    source=o.source, hint=p.hint))
        else:
            problems.append(p)
    return RulesetError(problems, error.source, error.title)


def changed_label(name: str, overrides: Sequence[Override | str]) -> str:
    """The name of ruleset ``name`` changed by ``overrides`` (values or ``key=value`` texts),
    as given: ``edition2 (bonus.points=9, starting_buttons=6)``. Distinct rulesets keep
    distinct names: two rulesets of a run differ in name already, and get the same
    overrides."""
    def shown(o: Override | str) -> str:
        if isinstance(o, Override):
            return f"{o.key.strip()}={o.text}"
        k, _, v = o.partition("=")
        return f"{k.strip()}={v.strip()}"

    return f"{name} ({', '.join(shown(o) for o in overrides)})"


BotRef = str | dict[str, Any] | Bot


def make_run_config(rulesets: Sequence[Ruleset], bots: Sequence[BotRef] | None = None, *,
                    games: int | None = None, seed: int = 1, pairings: PairingMode = "all",
                    overrides: Sequence[Override] | Mapping[str, Any] = (),
                    batch_deals: int | None = None, name: str | None = None,
                    source: str = "<config>", bot_path: Sequence[str] = (),
                    allow_time_budgets: bool = False) -> RunConfig:
    """A run from values: rulesets (read from their files first), bots (specs, parsed once, or
    bot objects whose ``spec`` rebuilds them; default: the line-up for these rulesets, see
    ``DEFAULT_BOTS_LEARNED``), games per ruleset and pairing (default ``DEFAULT_GAMES``, or
    ``DEFAULT_GAMES_LEARNED`` with the default learned line-up), the master seed, the pairings
    (``all`` with self-play, ``cross``, ``self``) and ruleset overrides (each changed ruleset
    is named after what changed). Nothing is read or written. Every problem is a RunError
    whose problem names the argument (``key``) and the value, before anything runs.

    A bot with a time budget (``time_ms``) is refused unless ``allow_time_budgets``: its games
    depend on the machine and its load. Allowed, the config is marked ``timed``."""
    rulesets = list(rulesets)
    if not rulesets:
        raise RunError.about("rulesets", "give at least one ruleset")
    if len(rulesets) > MAX_RULESETS:
        raise RunError.about("rulesets", f"at most {MAX_RULESETS} rulesets, got "
                             f"{len(rulesets):,}")
    for i, rs in enumerate(rulesets):
        if not isinstance(rs, Ruleset):
            raise RunError.about(f"rulesets[{i}]", f"expected a Ruleset, got {type(rs).__name__} "
                                 "(load a name or file with load_ruleset)", value=rs)
    hashes = [r.content_hash() for r in rulesets]
    for i, h in enumerate(hashes):
        if h in hashes[:i]:  # one ruleset twice: the same games twice, under two names
            j = hashes.index(h)
            raise RunError.about(f"rulesets[{i}]", f"({rulesets[i].name}) has the same rules "
                                 f"as rulesets[{j}] ({rulesets[j].name}, hash {h}); list "
                                 "each ruleset once")
    if not is_pairing_mode(pairings):  # a caller without type checks
        raise RunError.about("pairings", f"{pairings!r} is not one of all, cross, self",
                             value=pairings)
    if games is None:  # the default line-up's size decides its headline (DEFAULT_GAMES_LEARNED)
        games = (DEFAULT_GAMES_LEARNED if not bots and default_bots(rulesets)
                 == DEFAULT_BOTS_LEARNED else DEFAULT_GAMES)
    _whole(games, "games", 1)
    if games > MAX_GAMES:
        raise RunError.about("games", f"{games:,} games per ruleset and pairing is more than "
                             f"patchsim plays in one run ({MAX_GAMES:,}); split the study "
                             "into several runs", value=games)
    _whole(seed, "seed", 0)
    if seed >= 2**63:
        raise RunError.about("seed", f"expected a whole number below 2**63, got {seed}",
                             value=seed)
    if batch_deals is not None:
        _whole(batch_deals, "batch_deals", 1)
    changes = ([Override.of(k, v) for k, v in overrides.items()]
               if isinstance(overrides, Mapping) else list(overrides))
    if changes:
        try:
            rulesets = [r.with_overrides({o.key: o.value for o in changes}) for r in rulesets]
        except RulesetError as e:
            raise RunError.wrapping(_blame_files(e, changes)) from None
        # changed rules get a name of their own, which says what changed: results must not
        # pass for the edition's ("edition2 (bonus.points=9)"; the manifest and the report
        # give each ruleset's hash beside it)
        rulesets = [dataclasses.replace(r, name=changed_label(r.name, changes))
                    for r in rulesets]
    given = list(bots) if bots else default_bots(rulesets)
    if len(given) > MAX_BOTS:
        raise RunError.about("bots", f"at most {MAX_BOTS} bots in one run, got "
                             f"{len(given):,}", value=len(given))
    canonical = []
    timed = False
    for b in given:
        bot = _built(b, bot_path)
        if getattr(bot, "values", {}).get("time_ms", 0):
            if not allow_time_budgets:
                raise RunError(Problem(
                    f"bot {bot.spec}: a time budget (time_ms) makes results depend on the "
                    "machine and its load; runs need reproducible bots (use iterations)",
                    key="time_ms", value=bot.spec,
                    hint="allow_time_budgets=True accepts it, for equal-time matches "
                         "recorded as machine-dependent"))
            timed = True
        canonical.append(bot.spec)  # one bot, one name, however it was typed
    if len(set(canonical)) != len(canonical):
        raise RunError.about("bots", f"the same bot is listed twice: {', '.join(canonical)}")
    pair_list = all_pairings(len(canonical), pairings)
    if not pair_list:
        raise RunError.about("pairings", f"{pairings!r} with {len(canonical)} bot(s) gives no "
                             "games (cross pairings need at least two bots)", value=pairings)
    run_name = name if name is not None else "+".join(r.name for r in rulesets)
    return RunConfig(run_name, rulesets, canonical, pair_list, games_to_deals(games), seed,
                     batch_deals, source, tuple(bot_path), timed=timed)


def _built(bot: BotRef, bot_path: Sequence[str]) -> Bot:
    """The bot a spec (parsed here, once) or a bot object names. A bot object must have a
    spec that builds the same bot again: the runner makes a fresh bot for every game, in
    worker processes too."""
    if isinstance(bot, str | dict):
        try:
            return make_bot(bot, bot_path=bot_path)
        except BotSpecError as e:
            raise RunError(str(e)) from None
    spec = bot_spec(bot)
    try:
        rebuilt = make_bot(spec, bot_path=bot_path)
    except BotSpecError as e:
        raise RunError(f"bot {bot!r}: its spec {spec!r} does not build a bot ({e}); "
                       "the runner makes a fresh bot from the spec for every game, so give "
                       "a built-in spec or an import path like mypackage.mybots:MyBot("
                       "x=1)") from None
    if type(rebuilt) is not type(bot):
        raise RunError(f"bot {bot!r}: its spec {spec!r} builds a {type(rebuilt).__name__}, "
                       f"not a {type(bot).__name__}")
    return rebuilt


def load_run_config(ref: str, *, games: int | None = None,
                    bots: Sequence[BotRef] | None = None, seed: int | None = None,
                    overrides: Sequence[str] = (), pairings: PairingMode | None = None,
                    batch_deals: int | None = None, bot_path: Sequence[str] = (),
                    allow_time_budgets: bool = False) -> RunConfig:
    """A run from a ruleset (name or file: the default line-up) or an experiment file (a YAML
    mapping with ``ruleset``/``rulesets`` and ``bots``), read into values and built by
    :func:`make_run_config`. Arguments win over the file. Every problem is a RunError naming
    the file, key and value, raised before anything runs. ``overrides`` are ``key=value``
    texts; see :func:`make_run_config` for time budgets."""
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
    try:
        changes = [Override.parse(o) for o in overrides]
    except RulesetError as e:
        raise RunError.wrapping(e) from None
    if not data:
        try:
            rulesets = [load_ruleset(ref)]
        except RulesetError as e:
            raise RunError.wrapping(e) from None
        return make_run_config(
            rulesets, bots, games=games,
            seed=1 if seed is None else seed, pairings=pairings or "all", overrides=changes,
            batch_deals=batch_deals, name=rulesets[0].name if not path.exists() else path.stem,
            source=ref, bot_path=bot_path, allow_time_budgets=allow_time_budgets)
    unknown = sorted(set(data) - RUN_KEYS)
    if unknown:
        raise RunError(f"{ref}: unknown key(s) {', '.join(unknown)} (an experiment has "
                       f"{', '.join(sorted(RUN_KEYS))})")
    refs = data.get("rulesets") if "rulesets" in data else [data.get("ruleset")]
    if isinstance(refs, str):
        refs = [refs]
    key = "rulesets" if "rulesets" in data else "ruleset"
    if isinstance(refs, list) and len(refs) > MAX_RULESETS:
        raise _in_file(ref, key, f"at most {MAX_RULESETS} rulesets, got {len(refs):,}")
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        raise _in_file(ref, key, "expected a ruleset name or file, or a list of them, got "
                       f"{data.get(key)!r}")
    name = str(data.get("name") or path.stem)
    if len(name) > 100 or not name.isprintable():  # it names the run folder
        raise _in_file(ref, "name", "expected at most 100 printable characters, got "
                                    f"{name[:60]!r}{'...' if len(name) > 60 else ''}")
    if "name" in data and not is_folder_name(name):
        # the name is the run's folder under reports/: ".." or "a/b" would lead out of it
        raise _in_file(ref, "name", f"{name!r} cannot name a folder under reports/; use "
                                    f"{NAME_RULE}")
    base = path.parent
    rulesets = []
    for i, r in enumerate(refs):
        target = base / r if r.endswith((".yaml", ".yml")) and (base / r).exists() else r
        try:
            rulesets.append(load_ruleset(target))
        except RulesetError as e:
            raise RunError.wrapping(e, f"{ref}: rulesets[{i}]: ") from None
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
        raise _in_file(ref, "bots", f"expected a list of bot specs, got {file_bots!r}")
    mode = pairings or str(data.get("pairings", "all"))
    if not is_pairing_mode(mode):
        raise _in_file(ref, "pairings", f"{mode!r} is not one of all, cross, self")
    extra = data.get("set") or {}
    if not isinstance(extra, dict):
        raise _in_file(ref, "set", "expected a mapping of ruleset fields to values, got "
                                   f"{extra!r}")
    if batch_deals is None and data.get("batch_deals") is not None:
        batch_deals = _whole(data["batch_deals"], "batch_deals", 1, ref)
    return make_run_config(
        rulesets, list(bots) if bots else file_bots,
        games=games if games is not None or "games" not in data
        else _whole(data["games"], "games", 1, ref),
        seed=seed if seed is not None else _whole(data.get("seed", 1), "seed", 0, ref),
        pairings=mode, overrides=[*(Override.of(str(k), v, ref) for k, v in extra.items()),
                                  *changes],
        batch_deals=batch_deals, name=name, source=ref, bot_path=bot_path,
        allow_time_budgets=allow_time_budgets)
