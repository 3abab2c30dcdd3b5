"""The names in a run folder: every file a run, a report or a study writes there, and the
columns of the prices study a report reads. Importing nothing of patchsim and no pandas, so
that the runner's workers, the report, the web app and the studies spell every name the
same way; :class:`patchsim.play.runfolder.RunFolder` turns them into paths and reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

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

# a failed game's record, left for a bug report (its seed in the name)
FAILED_GAME = "failed-game-seed{seed}.json"

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
TUNE_FINALISTS = "tune-finalists.csv"
SWEEP_TABLE = "sweep.csv"
SWEEP_SKILL = "sweep-skill.csv"
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


# --- a skill trace's folder (``patchsim skill``; one folder per ruleset when several) -----------
SKILL_LEVELS = "levels"  # .csv and .parquet: one row per level
SKILL_DUELS = "duels"  # .csv and .parquet: one row per duel of neighbouring levels
SKILL_LEVEL_DEALS = "level_deals.parquet"  # one row per level and deal
SKILL_DUEL_DEALS = "duel_deals.parquet"
SKILL_DIVERSITY = "diversity.csv"
SKILL_STUDY = "trace.json"  # the figures the trace measured
SKILL_CHANGES = "changes.csv"  # several rulesets: each one's change from the first
SKILL_DOCUMENT = "skill"  # skill.html and skill.md

# the two tables of a run, as the functions that take one name them
TableKind = Literal["games", "events"]
TABLE_KINDS: tuple[TableKind, ...] = ("games", "events")
