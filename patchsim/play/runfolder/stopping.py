"""A run's stopping record (``stopping.json``): written when a sequential test chose the run's
length (``run --until-decided``), read by the report, which must say that its fixed-sample
intervals were stopped on. One writer and one reader, so the two cannot disagree on a key."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from patchsim.atomic import atomic_write
from patchsim.play.runfolder.errors import RunFolderError, first_line
from patchsim.play.runfolder.names import STOPPING_FILE

Decision = Literal["within", "outside"]


@dataclass(frozen=True)
class Decided:
    """One (ruleset, pairing) the test decided: ``decision`` whether the first seat's win
    rate lies within the margin around 50% or outside it, at ``deal``, with its anytime-valid
    interval ``rate`` [``lo``, ``hi``] (fractions)."""

    ruleset: str
    pairing: str
    decision: Decision | None  # None: a record written before it was recorded
    deal: int
    rate: float
    lo: float
    hi: float


@dataclass(frozen=True)
class StoppingRecord:
    """What the sequential test did: the ``margin`` it decided against (a fraction), the deals
    played in each step, the deals the run stopped at and each decision."""

    margin: float
    step_deals: int
    deals: int
    decided: tuple[Decided, ...] = field(default_factory=tuple)
    rule: str = "decided"

    def to_json(self) -> str:
        data = asdict(self)
        data["decided"] = [asdict(d) for d in self.decided]
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, data: Any) -> StoppingRecord:
        """The record from parsed JSON; ValueError (or KeyError, TypeError) if it is not one
        (a file is data: the caller says it is damaged)."""
        if not isinstance(data, dict):
            raise TypeError(f"expected a mapping, got {type(data).__name__}")
        decided = tuple(
            Decided(str(d["ruleset"]), str(d["pairing"]), _decision(d.get("decision")),
                    int(d["deal"]), float(d["rate"]), float(d["lo"]), float(d["hi"]))
            for d in data.get("decided", []))
        return cls(float(data.get("margin", 0)), int(data.get("step_deals", 0)),
                   int(data["deals"]), decided, str(data.get("rule", "decided")))


def _decision(value: Any) -> Decision | None:
    if value is None:
        return None
    if value == "within":
        return "within"
    if value == "outside":
        return "outside"
    raise ValueError(f"decision: expected within or outside, got {value!r}")


def stopping_path(run_dir: Path) -> Path:
    return Path(run_dir) / STOPPING_FILE


def write_stopping(run_dir: Path, record: StoppingRecord) -> None:
    """Write the record into the run folder (atomically)."""
    atomic_write(stopping_path(run_dir), record.to_json())


def read_stopping(run_dir: Path) -> StoppingRecord | None:
    """The run's stopping record, None when it has none; RunFolderError naming the file when
    it is damaged (the caller decides whether that stops it)."""
    path = stopping_path(run_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise RunFolderError(path, f"cannot read {path}: {e.strerror or e}") from None
    try:
        return StoppingRecord.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise RunFolderError(path, f"{path} is damaged ({first_line(e)})") from None
