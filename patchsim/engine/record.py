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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchsim.engine.game import Game, IllegalMoveError
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset, ruleset_from_dict


class RecordError(ValueError):
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
        players = data.get("players")
        if players is not None and (not isinstance(players, list) or len(players) != 2 or not all(
                isinstance(p, str) and 0 < len(p) <= 200 for p in players)):
            raise RecordError(f"{source}: players: expected who sat in seat 0 and seat 1, two "
                              "texts such as [\"human\", \"greedy\"]")
        return cls(rules, list(circle), list(moves), source,
                   list(players) if players is not None else None)

    @classmethod
    def from_json(cls, text: str, source: str = "<record>") -> GameRecord:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise RecordError(f"{source}: not valid JSON: {e.msg} at line {e.lineno} "
                              f"column {e.colno}") from None
        except RecursionError:
            raise RecordError(f"{source}: nested too deeply to be a game record") from None
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> GameRecord:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise RecordError(f"{path}: cannot read the record: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise RecordError(f"{path}: not a UTF-8 text file (byte {e.start}); a record is "
                              "JSON text") from None
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
            raise RecordError(f"{self.source}: {e}") from None


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
            raise RecordError(f"{record.source}: move {i} ({text!r}) is illegal: {why}",
                              i) from None
        except ValueError as e:
            raise RecordError(f"{record.source}: move {i} ({text!r}) is malformed: {e}",
                              i) from None
        yield game


def final_position(record: GameRecord) -> Game:
    """Replay the whole record and return the final position."""
    *_, game = replay(record)
    return game
