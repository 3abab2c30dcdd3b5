"""The names in a run folder: every file a run, a report or a study writes there, the columns
of the prices study a report reads, and the rule for a run's name (it names a folder).

On the lowest floor, importing nothing of patchsim, so that every layer spells these names
the same way: the statistics (which may not import the runner), the runner's configuration
(which its run-folder reader imports), the report (which may not import the studies) and the
studies that write the files. :mod:`patchsim.play.runfolder` offers them with the reader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

# --- a run's own files ------------------------------------------------------------------------
MANIFEST = "manifest.json"
GAMES = "games.parquet"
EVENTS = "events.parquet"
TABLES = (GAMES, EVENTS)
# written by execute_until when a sequential test chose the run's length (a report reads it)
STOPPING_FILE = "stopping.json"
BATCHES = "batches"
LOCK = ".patchsim.lock"
BATCH_SUFFIX = "arrow"  # batch files: Arrow IPC with lz4, far cheaper to write than Parquet

# games-table columns added after runs were first stored (the isolated holes left at the end,
# issue 29): a table written before lacks them, and every reader fills them as missing
LATER_GAME_COLUMNS = ("holes0", "holes1")

# --- what is written beside them ------------------------------------------------------------------
REPORT_HTML = "report.html"
REPORT_MD = "report.md"
FIGURES = "figures"  # the Markdown documents' pictures
SWEEP_HTML = "sweep.html"
SWEEP_MD = "sweep.md"
TUNE_MD = "tune.md"
TUNE_ROUNDS = "tune-rounds.csv"
LADDER_MD = "ladder.md"
# the documents a folder may hold, in the order a listing shows them
DOCUMENTS = (REPORT_HTML, SWEEP_HTML, REPORT_MD, SWEEP_MD, TUNE_MD, LADDER_MD)

# --- a run's prices study (``patchsim report --prices``), which its report shows ---------------
PRICES_FOLDER = "prices"
PRICES_TABLE = "prices.csv"  # every patch and cost
PRICES_SUMMARY = "patches.csv"  # one row per patch: the table a report shows
PRICES_STUDY = "study.json"  # what the study measured: ruleset, bot, games, seed


@dataclass(frozen=True)
class PriceRow:
    """One patch of a prices study as a report shows it: the columns of ``patches.csv`` that
    the writer (``experiments.prices.patch_summary``) must write and a reader may rely on."""

    patch: str
    cost: int
    value: float  # win-rate points the bot loses when forbidden the patch
    value_lo: float
    value_hi: float
    verdict: str
    fair_text: str  # the fair price, in words
    reading: str  # what the value and the fair price say of the printed cost


PRICE_COLUMNS = tuple(f.name for f in fields(PriceRow))


# --- a run's name ---------------------------------------------------------------------------------
NAME_RULE = "letters, digits and ._+- (not starting with a dot or a dash)"


def folder_name(name: str) -> str:
    """``name`` made into one plain folder name: no separators, no leading dot (so ``..``
    or ``../x`` cannot lead out of ``reports/``) or dash (it would read as a flag), nothing
    but letters, digits and ``._+-``."""
    safe = re.sub(r"[^A-Za-z0-9._+-]+", "-", str(name)).lstrip(".-")
    return safe or "run"


def is_folder_name(name: str) -> bool:
    """Whether ``name`` can name a run's folder as it is (:data:`NAME_RULE`)."""
    return folder_name(name) == name
