"""Game records a page opens (an uploaded file, or a record file in a served folder), checked
so that no record makes the server read a file outside the served folders, and replayed by
the engine in the shape of a stored game's view."""

from __future__ import annotations

import logging
import posixpath
from pathlib import Path
from typing import Any

from patchsim.engine.game import IllegalMoveError
from patchsim.engine.record import GameRecord, RecordError
from patchsim.engine.ruleset import shipped_rulesets
from patchsim.engine.view import replay_positions, ruleset_info
from patchsim.errors import quote
from patchsim.web.paths import WebError, inside, too_deep

MAX_RECORD_BYTES = 4_000_000

log = logging.getLogger("patchsim.web")


def record_view(record: GameRecord, as_written: dict[str, Any] | None = None,
                allowed_roots: list[Path] | None = None) -> dict[str, Any]:
    """A game record replayed by the engine, in the shape of :meth:`RunIndex.game_view`.
    RecordError (with the move number) when it does not load or a move is illegal; the
    files its rules name must lie in ``allowed_roots`` (default: none but the shipped
    configs)."""
    start = record.start(allowed_roots if allowed_roots is not None else [])
    codes = []
    probe = start.copy()
    for i, text in enumerate(record.moves, start=1):
        try:
            move = probe.parse_move(text)
            probe.apply(move)
        except IllegalMoveError as e:
            raise RecordError(f"{record.source}: move {i} ({quote(text)}) is illegal: "
                              f"{e.reason.describe(probe.ruleset.offer_size)}", i) from None
        except ValueError as e:
            raise RecordError(f"{record.source}: move {i} ({quote(text)}) is malformed: {e}",
                              i) from None
        codes.append(move.code)
    positions, texts = replay_positions(start, codes)
    return {
        "kind": "record",
        "title": f"{record.source} ({start.ruleset.name})",
        # who played is recorded since records have "players"; older ones do not say
        "players": (list(record.players) if record.players else ["seat 0", "seat 1"]),
        "rules": ruleset_info(start.ruleset),
        "moves": texts,
        "positions": positions,
        "record": as_written or record.to_dict(),
        "warnings": [],
    }


def safe_record(record: GameRecord, folder: Path | None = None,
                rel_dir: str = "") -> GameRecord:
    """The record with rules the server may load: a shipped ruleset name, a fully written
    mapping (``extends`` only of a shipped ruleset, patches inline), or a YAML file inside
    ``folder`` (the allowed folder the record lies in; ``rel_dir`` is the record's own folder
    relative to it). A record must not make the server read files elsewhere."""
    rules = record.rules
    shipped = shipped_rulesets()
    if isinstance(rules, dict) and too_deep(rules, 32):
        raise RecordError(f"{record.source}: rules: nested too deeply to be a ruleset")
    if isinstance(rules, dict):
        ext = rules.get("extends")
        if ext is not None and ext not in shipped:
            raise RecordError(f"{record.source}: rules: 'extends: {ext}' names no shipped "
                              "ruleset; a record opened here must write its rules out in full")
        if not isinstance(rules.get("patches", []), list):
            raise RecordError(f"{record.source}: rules: 'patches' must be an inline list in a "
                              "record opened here (not a path to a patch table)")
        return record
    if rules in shipped:
        return record
    if rules.endswith((".yaml", ".yml")) and folder is not None:
        rel = posixpath.normpath(posixpath.join(rel_dir, rules))
        try:
            path = inside(folder, rel, "ruleset file")
        except WebError as e:
            raise RecordError(f"{record.source}: rules: {e.message}") from None
        return GameRecord(str(path), record.circle, record.moves, record.source,
                          record.players)
    where = "a YAML file beside the record, " if folder is not None else ""
    raise RecordError(f"{record.source}: rules: {quote(rules)} is not a shipped ruleset (give "
                      f"one of {', '.join(shipped)}, {where}or the rules written out in full)")


def parse_record(data: object, source: str) -> GameRecord:
    """A record sent by a page (an uploaded file); RecordError when it is not one."""
    return safe_record(GameRecord.from_dict(data, source))


def record_error(e: RecordError) -> WebError:
    """The answer to a record that cannot be read or replayed: 422 with its message."""
    log.warning("%s", e)
    return WebError(422, str(e))


def uploaded_record(body: dict[str, Any]) -> GameRecord:
    """The record of an upload's body (``{"name": ..., "record": {...}}``); WebError saying
    what is missing or wrong."""
    name = body.get("name") or "uploaded record"
    if not isinstance(name, str):
        raise WebError(400, "name: expected the file name as text")
    if "record" not in body:
        raise WebError(400, "give the record under \"record\" (a JSON object with rules, "
                            "circle and moves)")
    try:
        return parse_record(body["record"], f"upload: {name[:100]}")
    except RecordError as e:
        raise record_error(e) from None


def load_record_file(folder: Path, rel: str, source: str) -> tuple[GameRecord, dict[str, Any]]:
    """The record file ``rel`` inside ``folder`` (WebError if the path is refused) and its
    data as written; RecordError when it is not a record."""
    path = inside(folder, rel, "record file")
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            raise RecordError(f"{source}: larger than {MAX_RECORD_BYTES // 1_000_000} MB; "
                              "not a game record")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RecordError(f"{source}: cannot read the record: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise RecordError(f"{source}: not a UTF-8 text file (byte {e.start}); a record is "
                          "JSON text") from None
    rec = GameRecord.from_json(text, source)
    return safe_record(rec, folder, posixpath.dirname(rel)), rec.to_dict()
