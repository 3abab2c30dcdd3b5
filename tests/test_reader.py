"""Issue 18: one reader of a run folder (play/runfolder/) for the report, the web app and the
command line, the names of the folder's files and study columns in one place
(patchsim/play/runfolder/names.py), one run-name rule and one busy-folder error."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from patchsim.analysis.tables import EventSummary
from patchsim.experiments.experiment import ExperimentError, load_experiment
from patchsim.experiments.prices import PriceStudy, patch_summary, price_table
from patchsim.play import run_name, runfolder
from patchsim.play.config import RunError, load_run_config
from patchsim.play.execution import execute
from patchsim.play.runfolder import (
    RunFolderBusy,
    RunFolderError,
    RunLock,
    RunNotFinished,
    inspect_run,
    read_prices,
    read_run,
)
from patchsim.play.runfolder import names as layout


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A finished run of two rulesets (12 games each per pairing)."""
    base = tmp_path_factory.mktemp("reader")
    cfg = load_run_config("experiments/edition1-vs-edition2.yaml", games=12,
                          bots=["greedy", "random"], seed=3)
    execute(cfg, base / "run", jobs=1, backend="sequential")
    return base / "run"


@pytest.fixture
def run(pristine, tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(pristine, d)
    return d


def edit(run_dir: Path, change) -> None:
    path = run_dir / layout.MANIFEST
    m = json.loads(path.read_text())
    change(m)
    path.write_text(json.dumps(m))


def test_read_run_gives_manifest_config_rulesets_games_events_and_no_study(pristine):
    run = read_run(pristine)
    manifest = json.loads((pristine / layout.MANIFEST).read_text())
    assert run.manifest == manifest and run.notes == []
    assert run.config is not None and run.config.seed == 3
    # the rulesets by the names the games table holds
    assert set(run.rulesets) == set(run.games["ruleset"].astype(str)) == {"edition1",
                                                                           "edition2"}
    assert [r.content_hash() for r in run.rulesets.values()] == \
        [r["hash"] for r in manifest["config"]["rulesets"]]
    stored = pd.read_parquet(pristine / layout.GAMES)
    assert len(run.games) == len(stored) and "moves" not in run.games.columns
    assert isinstance(run.events, EventSummary) and run.events.events == \
        len(pd.read_parquet(pristine / layout.EVENTS))
    assert run.prices is None
    head = inspect_run(pristine)
    assert head.games_total == len(stored) and head.manifest == manifest
    assert head.rulesets.keys() == run.rulesets.keys()


def damage_games(run_dir: Path, how: str) -> None:
    path = run_dir / layout.GAMES
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "missing":
        path.unlink()
    else:  # the events copied over the games: a whole Parquet file, not the run's games
        shutil.copyfile(run_dir / layout.EVENTS, path)


# (what is done to the folder, a word of the message, whether the manifest was read)
DAMAGE = [
    ("no folder", "no such folder", False),
    ("a file", "is a file", False),
    ("no manifest", "no manifest.json", False),
    ("not json", "not JSON", False),
    ("nested", "nested too deeply", False),
    ("edited seed", "config.seed (99)", True),
    ("no digests, edited seed", "run_id", True),
    ("not finished", "resume the run first", True),
    ("report only", "play it again with:", True),
    ("truncated", "games.parquet is damaged", True),
    ("empty", "games.parquet is damaged", True),
    ("missing events", "events.parquet is missing", True),
    ("swapped", "it holds the events table", True),
]


def spoil(run_dir: Path, what: str) -> Path:
    if what == "no folder":
        shutil.rmtree(run_dir)
    elif what == "a file":
        shutil.rmtree(run_dir)
        run_dir.write_text("x")
    elif what == "no manifest":
        (run_dir / layout.MANIFEST).unlink()
    elif what == "not json":
        (run_dir / layout.MANIFEST).write_text("{not json")
    elif what == "nested":
        (run_dir / layout.MANIFEST).write_text("[" * 100_000 + "]" * 100_000)
    elif what == "edited seed":
        edit(run_dir, lambda m: m["config"].update(seed=99))
    elif what == "no digests, edited seed":
        edit(run_dir, lambda m: (m.pop("digests"), m["config"].update(seed=99)))
    elif what == "not finished":
        edit(run_dir, lambda m: m.update(complete=False))
        damage_games(run_dir, "missing")
    elif what == "report only":
        damage_games(run_dir, "missing")
        (run_dir / layout.EVENTS).unlink()
    elif what == "missing events":
        (run_dir / layout.EVENTS).unlink()
    else:
        damage_games(run_dir, what)
    return run_dir


@pytest.mark.parametrize("what,word,read", DAMAGE, ids=[d[0] for d in DAMAGE])
def test_every_damaged_folder_is_one_message_from_the_one_reader(run, what, word, read):
    spoil(run, what)
    with pytest.raises(RunFolderError) as info:
        read_run(run)
    message = str(info.value)
    assert word in message and "\n" not in message, message
    assert str(run) in message  # the folder or the file at fault is named
    assert (info.value.manifest is not None) == read, info.value.manifest
    # the web app's listing (the games table's footer, no digests) gives the same message,
    # or finds nothing wrong where only the events table is at fault
    try:
        inspect_run(run, verify_tables=False)
    except RunFolderError as e:
        assert str(e) == message
    else:
        assert what == "missing events"


def test_not_finished_and_report_only_carry_what_they_are(run):
    spoil(run, "report only")
    with pytest.raises(RunNotFinished) as info:
        inspect_run(run)
    command = json.loads((run / layout.MANIFEST).read_text())["command"]
    assert info.value.report_only and info.value.command == command
    edit(run, lambda m: m.update(complete=False))
    with pytest.raises(RunNotFinished) as info:
        inspect_run(run)
    assert not info.value.report_only and "report only" not in str(info.value)


def test_a_running_run_is_one_busy_error_for_readers_and_runs(run):
    """One class for a folder a live run holds: the readers' refusal and the lock's."""
    assert not hasattr(runfolder, "RunStillRunning")
    with RunLock(run, {"pid": 4242, "started": "now"}):
        with pytest.raises(RunFolderBusy) as info:
            read_run(run)
        assert info.value.holder["pid"] == 4242 and info.value.doing == "reading it"
        assert "pid 4242" in str(info.value) and "before reading it" in str(info.value)
        with pytest.raises(RunFolderBusy) as info:
            RunLock(run, {"pid": 1}).acquire()
        assert info.value.doing is None and "write to another folder" in str(info.value)
        assert isinstance(info.value, RunFolderError) and isinstance(info.value, RunError)


def test_a_prices_study_is_read_by_its_columns_and_a_bad_one_is_a_problem(tmp_path):
    """The writer (patch_summary) writes the columns the reader checks (layout.PriceRow)."""
    rng = np.random.default_rng(0)
    study = PriceStudy(load_run_config("edition2").rulesets[0], "greedy", ["P19"], [-1, 0, 1],
                       games=400, seed=2)
    for d, mean in ((-1, 0.1), (0, 0.05), (1, 0.0)):
        study.values[("P19", d)] = np.clip(mean + rng.choice([-0.5, 0.0, 0.5], 200), -0.5, 0.5)
    summary = patch_summary(study, price_table(study))
    assert set(layout.PRICE_COLUMNS) <= set(summary.columns)
    folder = tmp_path / layout.PRICES_FOLDER
    folder.mkdir()
    assert read_prices(tmp_path) is None or read_prices(tmp_path).problem  # no summary yet
    summary.to_csv(folder / layout.PRICES_SUMMARY, index=False)
    (folder / layout.PRICES_STUDY).write_text(json.dumps({"ruleset": "edition2"}))
    found = read_prices(tmp_path)
    assert found is not None and found.problem is None
    assert found.rows["patch"].tolist() == ["P19"] and found.header == {"ruleset": "edition2"}
    summary.drop(columns="fair_text").to_csv(folder / layout.PRICES_SUMMARY, index=False)
    found = read_prices(tmp_path)
    assert found is not None and "fair_text" in found.problem and found.rows.empty


@pytest.mark.parametrize("name,ok", [
    ("edition2-test", True), ("a.b+c_d", True), ("..", False), ("../x", False),
    (".hidden", False), ("a/b", False), ("-flag", False), ("two words", False),
])
def test_one_name_rule_for_run_files_and_experiments(tmp_path, name, ok):
    """A run file and an experiment accept the same names: those that are their own
    folder name (run_name.folder_name); before, a run file took a leading dash."""
    assert run_name.is_folder_name(name) == ok
    run_file = tmp_path / "run.yaml"
    run_file.write_text(f"name: {json.dumps(name)}\nruleset: edition2\nbots: [greedy]\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"name: {json.dumps(name)}\nbase: edition2\nbots: [greedy]\n"
                   "variants:\n  - {name: more, set: {starting_buttons: 6}}\n")
    if ok:
        assert load_run_config(str(run_file)).name == name
        assert load_experiment(exp).name == name
    else:
        with pytest.raises(RunError, match=r"name: .*" + run_name.NAME_RULE[:20]):
            load_run_config(str(run_file))
        with pytest.raises(ExperimentError, match="cannot name a folder"):
            load_experiment(exp)


@pytest.mark.slow
def test_a_worker_process_imports_no_pandas() -> None:
    """The reader needs pandas; the run-folder module the workers import does not."""
    code = ("import sys, patchsim.play.worker, patchsim.play.runfolder; "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip()
    assert out == "False"


# a model folder's manifest (bots/learned.py) and a training folder's report (play/train.py,
# cli/train.py) are not a run folder's files, though they share the names
OTHER_FOLDERS = {("bots/learned.py", layout.MANIFEST), ("play/train.py", layout.REPORT_MD),
                 ("cli/train.py", layout.REPORT_MD)}


def test_a_run_folders_file_names_are_spelled_only_in_names() -> None:
    """Every module takes a run folder's file names (and a study's written beside them) from
    patchsim.play.runfolder.names, so that a reader and a writer cannot disagree on one."""
    package = Path(layout.__file__).parents[2]
    names = {layout.MANIFEST, layout.GAMES, layout.EVENTS, layout.STOPPING_FILE,
             layout.REPORT_HTML, layout.REPORT_MD, layout.PRICES_SUMMARY, layout.PRICES_STUDY,
             layout.PRICES_TABLE, layout.SWEEP_MD, layout.SWEEP_HTML, layout.TUNE_MD,
             layout.TUNE_ROUNDS, layout.TUNE_FINALISTS, layout.LADDER_MD, layout.SWEEP_TABLE,
             layout.SWEEP_SKILL, layout.SKILL_STUDY, layout.SKILL_DIVERSITY,
             layout.SKILL_LEVEL_DEALS, layout.SKILL_DUEL_DEALS, layout.SKILL_CHANGES}
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel == "play/runfolder/names.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names \
                    and (rel, node.value) not in OTHER_FOLDERS:
                found.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not found, "use the names of patchsim.play.runfolder.names: " + ", ".join(found)
