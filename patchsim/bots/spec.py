"""The bot-spec grammar: ``name``, ``name(k=v, ...)`` (a value may be a nested spec, as an
mcts rollout), a mapping ``{name: ..., k: v}`` or an import path ``pkg.mod:Bot(k=v)``; a
parameter's declaration (:class:`Param`) and the check and conversion of a given value
against it; and the one canonical text of a spec (sorted parameters, numbers read back the
same). What a name stands for is the registry's (:mod:`patchsim.bots.registry`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from patchsim.engine.yamlfile import YamlFileError, parse_yaml
from patchsim.errors import MAX_SPEC_CHARS, PatchsimError, quote


class BotSpecError(PatchsimError, ValueError):
    """A bot spec that names no bot, or gives it a bad parameter."""




@dataclass(frozen=True)
class Param:
    default: Any
    help: str
    kind: type = float
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None


def canonical_spec(name: str, given: dict[str, Any]) -> str:
    if not given:
        return name
    inner = ", ".join(f"{k}={format_value(v)}" for k, v in sorted(given.items()))
    return f"{name}({inner})"


def format_value(v: Any) -> str:
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return repr(v)  # shortest text that reads back as the same float
    return str(v)


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside parentheses."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def parse_spec(spec: str | dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A spec as (name, parameters). Accepts ``name``, ``name(k=v, ...)`` or a mapping."""
    if isinstance(spec, dict):
        if "name" not in spec:
            raise BotSpecError(f"bot mapping {quote(spec)} has no 'name' key")
        return str(spec["name"]), {k: v for k, v in spec.items() if k != "name"}
    if not isinstance(spec, str) or not spec.strip():
        raise BotSpecError(f"bot spec must be a non-empty string or mapping, got "
                           f"{quote(spec)}")
    if len(spec) > MAX_SPEC_CHARS:  # no bot's spec is this long: a mistake, named shortly
        raise BotSpecError(f"bot spec {quote(spec)} is longer than any bot spec "
                           f"({MAX_SPEC_CHARS:,} characters)")
    text = spec.strip()
    if "(" not in text:
        return text, {}
    if not text.endswith(")") or text.count("(") != text.count(")"):
        raise BotSpecError(f"bot spec {quote(spec)}: unbalanced parentheses")
    name, inner = text[: text.index("(")].strip(), text[text.index("(") + 1 : -1]
    params: dict[str, Any] = {}
    for part in _split_top(inner):
        if "=" not in part:
            raise BotSpecError(f"bot spec {quote(spec)}: parameter {quote(part)} is not "
                               "key=value")
        key, raw = part.split("=", 1)
        key, raw = key.strip(), raw.strip()
        params[key] = raw if "(" in raw else _scalar(raw)  # "(": a nested spec (rollout)
    return name, params


def _scalar(raw: str) -> Any:
    """A spec value: int, float (1e-3 included, which YAML 1.1 reads as text), bool, text."""
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    try:
        return parse_yaml(raw, "bot parameter")
    except YamlFileError:
        return raw


def coerce_param(bot: str, key: str, value: Any, param: Param) -> Any:
    """``value`` of parameter ``key`` of ``bot`` checked against ``param`` (choices, kind,
    bounds) and converted to its kind; BotSpecError naming the bot, key and value."""
    if param.choices:
        if value not in param.choices:
            raise BotSpecError(f"{bot}: {key}={quote(value)} is not one of "
                               f"{', '.join(param.choices)}")
        return value
    if param.kind is str:
        if isinstance(value, dict):  # a nested bot mapping (mcts rollout)
            return value
        if value is None:  # `key=` with nothing after it (YAML reads it as null)
            raise BotSpecError(f"{bot}: {key}= has no value")
        return str(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BotSpecError(f"{bot}: {key}={quote(value)} is not a number")
    try:
        as_float = float(value)
    except OverflowError:  # an integer past the floats (hundreds of digits)
        raise BotSpecError(f"{bot}: {key}={quote(value)} is too large a number") from None
    if not math.isfinite(as_float):
        raise BotSpecError(f"{bot}: {key}={quote(value)} must be a finite number")
    if param.kind is int:
        if float(value) != int(value):
            raise BotSpecError(f"{bot}: {key}={quote(value)} must be a whole number")
        value = int(value)
    else:
        value = float(value)
    lo, hi = param.low, param.high
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        def num(x: float | None) -> str:  # 1000000000, not 1e+09
            return format_value(float(x or 0))

        rule = (f"between {num(lo)} and {num(hi)}" if lo is not None and hi is not None
                else f"at least {num(lo)}" if lo is not None else f"at most {num(hi)}")
        raise BotSpecError(f"{bot}: {key}={quote(value)} must be {rule}")
    return value
