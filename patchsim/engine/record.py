"""Game records: the JSON text form of a game, and replaying one move by move.

A record is ``{"rules": ..., "circle": [...], "moves": [...]}``:

* ``rules``: a shipped ruleset name, a path to a ruleset file (relative paths are looked up
  beside the record first, then in the working directory), or an inline ruleset mapping.
* ``circle``: every patch id once, clockwise, from the patch right after the neutral token.
* ``moves``: ``pass``, ``buy <patch> <square>...``, ``leather <square>``; player 0 moves first.
* ``players`` (optional): who sat in seat 0 and seat 1, e.g. ``["human", "greedy"]`` (bot
  specs or ``"human"``); records without it still load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchsim.engine.game import Game, IllegalMoveError
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset, ruleset_from_dict
from patchsim.engine.yamlfile import (
    InputTooLargeError,
    JsonNumberError,
    not_a_file,
    parse_json,
    read_text_bounded,
    short_path,
)
from patchsim.errors import PatchsimError, quote

# A record of a finished game is a few kB; these limits are far above any real one.
MAX_RECORD_BYTES = 4_000_000
MAX_RECORD_DEPTH = 40  # nested JSON arrays and objects (an inline ruleset needs 4)
MAX_MOVES = 10_000  # a game on the largest board and track has far fewer
MAX_MOVE_CHARS = 1000  # "buy <patch> <square>...": a patch covers at most 128 squares


class RecordError(PatchsimError, ValueError):
    """A malformed record, or a move that cannot be played; says where and why."""

    def __init__(self, message: str, move_number: int | None = None) -> None:
        super().__init__(message)
        self.move_number = move_number


@dataclass
class GameRecord:
    rules: str | dict[str, Any]
    circle: list[str]
    moves: list[str] = field(default_factory=list)
    source: str = "<record>"
    players: list[str] | None = None

    @classmethod
    def from_dict(cls, data: object, source: str = "<record>") -> GameRecord:
        if not isinstance(data, dict):
            raise RecordError(f"{source}: a record is a JSON object with keys rules, circle, moves")
        unknown = sorted(map(str, set(data) - {"rules", "circle", "moves", "players"}))
        if unknown:
            raise RecordError(f"{source}: unknown key(s) {', '.join(unknown)} "
                              "(a record has rules, circle, moves and optionally players)")
        for key in ("rules", "circle", "moves"):
            if key not in data:
                raise RecordError(f"{source}: missing key {key!r}")
        rules, circle, moves = data["rules"], data["circle"], data["moves"]
        if not isinstance(rules, str | dict):
            raise RecordError(f"{source}: rules: expected a ruleset name, path or mapping")
        if not isinstance(circle, list) or not all(isinstance(c, str) for c in circle):
            raise RecordError(f"{source}: circle: expected a list of patch ids")
        if not isinstance(moves, list) or not all(isinstance(m, str) for m in moves):
            raise RecordError(f"{source}: moves: expected a list of move strings")
        if len(moves) > MAX_MOVES:
            raise RecordError(f"{source}: moves: {len(moves):,} moves, more than any game has "
                              f"(the limit is {MAX_MOVES:,})")
        for i, move in enumerate(moves, start=1):
            if len(move) > MAX_MOVE_CHARS:
                raise RecordError(f"{source}: move {i} ({quote(move)}) is malformed: longer "
                                  f"than any move ({MAX_MOVE_CHARS} characters)", i)
        players = data.get("players")
        if players is not None and (not isinstance(players, list) or len(players) != 2 or not all(
                isinstance(p, str) and 0 < len(p) <= 200 for p in players)):
            raise RecordError(f"{source}: players: expected who sat in seat 0 and seat 1, two "
                              "texts such as [\"human\", \"greedy\"]")
        return cls(rules, list(circle), list(moves), source,
                   list(players) if players is not None else None)

    @classmethod
    def from_json(cls, text: str, source: str = "<record>") -> GameRecord:
        if len(text) > MAX_RECORD_BYTES:
            raise RecordError(f"{source}: longer than {MAX_RECORD_BYTES:,} characters, the "
                              "limit for a game record")
        depth = _nesting(text)
        if depth > MAX_RECORD_DEPTH:
            # json.loads recurses once per level: refuse before a RecursionError
            raise RecordError(f"{source}: nested more than {MAX_RECORD_DEPTH} levels deep; a "
                              "record is {\"rules\": ..., \"circle\": [...], \"moves\": [...]}")
        try:
            data = parse_json(text, source)
        except JsonNumberError as e:  # an integer of thousands of digits
            raise RecordError(str(e)) from None
        except json.JSONDecodeError as e:
            raise RecordError(f"{source}: not valid JSON: {e.msg} at line {e.lineno} "
                              f"column {e.colno}") from None
        except RecursionError:
            raise RecordError(f"{source}: nested too deeply to be a game record") from None
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> GameRecord:
        shown = short_path(path)
        try:
            kind = not_a_file(path)
            if kind is not None and kind != "a character device":  # /dev/zero: read bounded
                # a pipe without a writer would block the read for ever: say what it is
                what = kind if kind.startswith("no such") else f"it is {kind}, not a file"
                raise RecordError(f"{shown}: cannot read the record: {what}")
            text = read_text_bounded(path, MAX_RECORD_BYTES, "a game record", shown)
        except InputTooLargeError as e:
            raise RecordError(str(e)) from None
        except OSError as e:
            raise RecordError(f"{shown}: cannot read the record: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise RecordError(f"{shown}: not a UTF-8 text file (byte {e.start}); a record is "
                              "JSON text") from None
        except ValueError as e:  # a NUL character in the path
            if isinstance(e, RecordError):
                raise
            raise RecordError(f"{shown}: not a usable file name ({e})") from None
        return cls.from_json(text, str(path))

    def to_dict(self) -> dict[str, Any]:
        out = {"rules": self.rules, "circle": list(self.circle), "moves": list(self.moves)}
        if self.players is not None:
            out["players"] = list(self.players)
        return out

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def resolve_rules(self, allowed_roots: Sequence[str | os.PathLike[str]] | None = None
                      ) -> Ruleset:
        """The ruleset the record names; RecordError if it cannot be found or is invalid.
        With ``allowed_roots``, every file it reads must lie inside them (see
        :func:`load_ruleset`)."""
        try:
            if isinstance(self.rules, dict):
                return ruleset_from_dict(self.rules, source=f"{self.source}: rules",
                                         allowed_roots=allowed_roots)
            ref = self.rules
            if ref.endswith((".yaml", ".yml")) and self.source not in ("<record>", "-"):
                beside = Path(self.source).parent / ref
                if beside.exists():
                    return load_ruleset(beside, allowed_roots=allowed_roots)
            return load_ruleset(ref, allowed_roots=allowed_roots)
        except OSError as e:  # a name too long for a file
            raise RecordError(f"{self.source}: rules: {quote(self.rules)}: not a usable file "
                              f"name ({e.strerror or e})") from None
        except RulesetError as e:
            raise RecordError(f"{self.source}: rules: {e}") from None
        except RecursionError:  # a YAML or mapping nested thousands of levels deep
            raise RecordError(f"{self.source}: rules: nested too deeply to be a "
                              "ruleset") from None

    def start(self, allowed_roots: Sequence[str | os.PathLike[str]] | None = None) -> Game:
        """The start position of the recorded game (``allowed_roots``: see
        :meth:`resolve_rules`)."""
        ruleset = self.resolve_rules(allowed_roots)
        try:
            return Game.new(ruleset, circle=self.circle)
        except ValueError as e:
            raise RecordError(f"{self.source}: {_cut(str(e))}") from None


def replay(record: GameRecord) -> Iterator[Game]:
    """Yield the game at the start and after each move (the same Game object, updated).

    Raises RecordError naming the 1-based move number, its text and the reason when a move is
    malformed or illegal.
    """
    game = record.start()
    yield game
    for i, text in enumerate(record.moves, start=1):
        try:
            move = game.parse_move(text)
            game.apply(move)
        except IllegalMoveError as e:
            why = e.reason.describe(game.ruleset.offer_size)
            raise RecordError(f"{record.source}: move {i} ({quote(text)}) is illegal: {why}",
                              i) from None
        except ValueError as e:
            raise RecordError(f"{record.source}: move {i} ({quote(text)}) is malformed: "
                              f"{_cut(str(e))}", i) from None
        yield game


def _cut(message: str, limit: int = 300) -> str:
    """A message from the move parser, which may quote the whole move, cut to a paragraph."""
    return message if len(message) <= limit else message[:limit] + "..."


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def _nesting(text: str) -> int:
    """How deeply the JSON arrays and objects of ``text`` nest (brackets inside strings are
    skipped; the text need not be valid JSON)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def final_position(record: GameRecord) -> Game:
    """Replay the whole record and return the final position."""
    *_, game = replay(record)
    return game
