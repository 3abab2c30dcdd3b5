"""Issue 22 (run-folder integrity) and issue 21 (no machine paths): the manifest's digests
refuse edited settings and changed tables; damaged files are named, never a traceback, and
nothing is touched; leftovers of a killed run are cleaned; output folders are checked."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from patchsim.cli.main import app
from patchsim.play import execution, runfolder
from patchsim.play.config import RunError, load_run_config
from patchsim.play.errors import RunStorageError
from patchsim.play.execution import execute, portable_path
from patchsim.play.run_name import folder_name
from patchsim.play.runfolder import (
    RunFolderError,
    RunLock,
    check_folder,
    checks,
    fresh_dir,
    read_manifest,
    storage,
)
from patchsim.reporting import report as report_module

BOTS = ["greedy", "random"]


def cfg(games: int = 20, seed: int = 5, rules: str = "edition2"):
    c = load_run_config(rules, games=games, bots=BOTS, seed=seed, pairings="cross")
    c.batch_deals = 5
    return c


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A finished run (seed 5, 20 games) with its batch files kept, and one without."""
    base = tmp_path_factory.mktemp("runfolder")
    execute(cfg(), base / "kept", jobs=1, backend="sequential", keep_batches=True)
    execute(cfg(), base / "run", jobs=1, backend="sequential")
    execute(cfg(rules="edition1"), base / "other", jobs=1, backend="sequential")
    return base


@pytest.fixture
def run(pristine, tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(pristine / "run", d)
    return d


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def edit(run_dir: Path, change) -> None:
    path = run_dir / "manifest.json"
    m = json.loads(path.read_text())
    change(m)
    path.write_text(json.dumps(m, indent=2))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_paragraph_error(result) -> str:
    """The command failed with a message, not a traceback; the message."""
    assert result.exit_code not in (0, None)
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    assert "Traceback" not in result.output
    assert "error: " in result.output, result.output
    message = result.output[result.output.index("error: "):].strip()
    assert "\n\n" not in message, message  # one paragraph
    return message


# --- edited manifests ------------------------------------------------------------------------
def test_a_seed_edited_from_5_to_99_is_refused_on_resume_and_nothing_is_touched(run):
    edit(run, lambda m: m["config"].update(seed=99))
    before = snapshot(run)
    out = one_paragraph_error(invoke("run", "--resume", str(run), "--games", "400",
                                     "--no-progress", "--no-report"))
    assert "manifest.json" in out and "config.seed (99)" in out
    assert snapshot(run) == before


@pytest.mark.parametrize("key,change", [
    ("config.rulesets", lambda m: m["config"]["rulesets"][0]["rules"].update(
        starting_buttons=50)),
    ("config.deals", lambda m: m["config"].update(deals=-5)),
    ("config.pairings", lambda m: m["config"].update(pairings=[[0, 7]])),
    ("merged_deals", lambda m: m.update(merged_deals=3)),
])
def test_other_edits_are_refused_naming_the_key(run, key, change):
    edit(run, change)
    before = snapshot(run)
    for args in (["run", "--resume", str(run), "--games", "40", "--no-progress"],
                 ["report", str(run)], ["plan", str(run)]):
        out = one_paragraph_error(invoke(*args))
        assert "manifest.json" in out and key in out, out
    assert snapshot(run) == before


def test_a_manifest_without_digests_still_loads_with_a_note(run, monkeypatch):
    edit(run, lambda m: m.pop("digests"))
    monkeypatch.setattr(report_module, "build_sections", lambda *_a, **_k: [])  # seconds
    result = invoke("report", str(run))
    assert result.exit_code == 0, result.output
    assert "note: " in result.output and "no digests" in result.output
    assert check_folder(run).problem is None


def test_digests_set_to_null_are_not_taken_for_an_old_manifest(run):
    edit(run, lambda m: m.update(digests=None))
    out = one_paragraph_error(invoke("plan", str(run)))
    assert "digests" in out


def test_an_edited_seed_without_digests_is_caught_by_the_run_id(run):
    edit(run, lambda m: (m.pop("digests"), m["config"].update(seed=99)))
    with pytest.raises(RunFolderError, match="run_id"):
        read_manifest(run)


def test_the_committed_reports_still_load_for_report_and_serve():
    """Committed run folders (manifest and report, no tables) load; one made before the
    digests were recorded says so in a note, one made since has its settings checked."""
    manifests = list(Path("reports").glob("*/manifest.json"))
    assert manifests
    for manifest in manifests:
        found = check_folder(manifest.parent, tables=False)
        assert found.problem is None, found.problem
        old = "digests" not in json.loads(manifest.read_text())
        assert old == any("no digests" in n for n in found.notes), manifest


def test_a_top_up_updates_the_table_digests(pristine, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(pristine / "run", run_dir)
    execute(cfg(games=30), run_dir, jobs=1, backend="sequential")
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["digests"]["tables"]["games.parquet"] == runfolder.file_digest(
        run_dir / "games.parquet")
    assert check_folder(run_dir).problem is None
    assert pq.read_table(run_dir / "games.parquet").num_rows == 30


# --- damaged tables and batch files ----------------------------------------------------------
def damage(path: Path, how: str, run_dir: Path) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "random":
        path.write_bytes(bytes((i * 37 + 11) % 256 for i in range(len(data))))
    elif how == "empty":
        path.write_bytes(b"")
    else:  # the events copied over the games
        shutil.copyfile(path.with_name(path.name.replace("games", "events")), path)


HOW = ["truncated", "random", "empty", "swapped"]


@pytest.mark.parametrize("digests", [True, False])
@pytest.mark.parametrize("how", HOW)
def test_a_damaged_table_is_named_by_resume_report_plan_and_compare(pristine, run, how,
                                                                   digests):
    if not digests:
        edit(run, lambda m: m.pop("digests"))
    damage(run / "games.parquet", how, run)
    other = pristine / "other"
    before, before_other = snapshot(run), snapshot(other)
    for args in (["run", "--resume", str(run), "--no-progress"], ["report", str(run)],
                 ["plan", str(run)], ["compare", str(other), str(run)]):
        out = one_paragraph_error(invoke(*args))
        assert "games.parquet" in out and ("restore" in out or "delete" in out), out
    assert snapshot(run) == before and snapshot(other) == before_other


def test_a_garbage_or_missing_events_table_is_not_a_successful_resume(run):
    (run / "events.parquet").write_bytes(b"garbage")
    out = one_paragraph_error(invoke("run", "--resume", str(run), "--no-progress",
                                     "--no-report"))
    assert "events.parquet" in out
    (run / "events.parquet").unlink()
    out = one_paragraph_error(invoke("run", "--resume", str(run), "--no-progress",
                                     "--no-report"))
    assert "events.parquet is missing" in out


@pytest.mark.parametrize("how", HOW)
def test_a_damaged_batch_file_is_named_on_resume(pristine, tmp_path, how):
    run_dir = tmp_path / "kept"
    shutil.copytree(pristine / "kept", run_dir)
    batch = sorted((run_dir / "batches").glob("*.games.arrow"))[1]
    damage(batch, how, run_dir)
    before = snapshot(run_dir)
    out = one_paragraph_error(invoke("run", "--resume", str(run_dir), "--no-progress"))
    assert batch.name in out and "delete it and resume" in out
    assert snapshot(run_dir) == before
    batch.unlink()  # as the message says: its games are played again, the tables match
    result = invoke("run", "--resume", str(run_dir), "--no-progress", "--no-report")
    assert result.exit_code == 0, result.output
    assert (run_dir / "games.parquet").read_bytes() == \
        (pristine / "run" / "games.parquet").read_bytes()


# --- leftovers of a killed run ---------------------------------------------------------------
def test_partial_merge_files_of_a_killed_run_are_removed_on_resume(pristine, tmp_path):
    run_dir = tmp_path / "kept"
    shutil.copytree(pristine / "kept", run_dir)
    # what atomic_path leaves when the process is killed mid-merge or mid-batch
    leftovers = [run_dir / ".games.parquet.k1l2m3.parquet",
                 run_dir / ".events.parquet.x9y8z7.parquet",
                 run_dir / ".manifest.json.abcdef.tmp",
                 run_dir / "batches" / ".0123456789ab-r0p0d0.games.arrow.q1w2e3.arrow"]
    for p in leftovers:
        p.write_bytes(b"\0" * 1000)
    result = invoke("run", "--resume", str(run_dir), "--no-progress", "--no-report")
    assert result.exit_code == 0, result.output
    assert not any(p.exists() for p in leftovers)
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".")
                and p.name != ".patchsim.lock"]


# --- output folders --------------------------------------------------------------------------
def test_resume_with_another_out_is_refused(run, tmp_path):
    out = one_paragraph_error(invoke("run", "--resume", str(run), "--out",
                                     str(tmp_path / "elsewhere")))
    assert "--out" in out and not (tmp_path / "elsewhere").exists()
    result = invoke("run", "--resume", str(run), "--out", str(run), "--no-progress",
                    "--no-report")
    assert result.exit_code == 0, result.output  # the same folder is no contradiction


def _hostile_out(kind: str, tmp_path: Path, run: Path) -> str:
    """A ``--out`` of the kind named, made under ``tmp_path`` (``run``: a finished run)."""
    if kind == "a file":
        (tmp_path / "f").write_text("mine")
        return str(tmp_path / "f")
    if kind == "a named pipe":
        os.mkfifo(tmp_path / "pipe")
        return str(tmp_path / "pipe")
    if kind == "a link to nothing":
        (tmp_path / "link").symlink_to(tmp_path / "nowhere")
        return str(tmp_path / "link")
    if kind == "a loop of links":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        return str(tmp_path / "a")
    if kind == "a folder under a file":
        (tmp_path / "f").write_text("mine")
        return str(tmp_path / "f" / "sub")
    if kind == "a name of 5,000 characters":
        return str(tmp_path / ("n" * 5000))
    if kind == "a path of 5,000 characters":
        return str(tmp_path.joinpath(*["p" * 99] * 50))
    if kind == "a null byte":
        return str(tmp_path / "x\0y")
    if kind == "unprintable characters":
        (tmp_path / "a\nb").write_text("mine")
        return str(tmp_path / "a\nb")
    if kind == "foreign files":
        (tmp_path / "docs").mkdir()
        (tmp_path / "docs" / "thesis.tex").write_text("mine")
        return str(tmp_path / "docs")
    if kind == "a run's batches folder":
        (run / "batches").mkdir(exist_ok=True)
        return str(run / "batches")
    if kind == "another run":
        return str(run)
    assert kind == "nothing"
    return ""


HOSTILE_OUT = {  # what the message says of each
    "a file": "it is a file",
    "a named pipe": "it is a named pipe (FIFO)",
    "a link to nothing": "a symbolic link to nothing",
    "a loop of links": "lead round in a loop",
    "a folder under a file": "a part of its path is a file, not a folder",
    "a name of 5,000 characters": "is too long for the file system",
    "a path of 5,000 characters": "is too long for the file system",
    "a null byte": "it holds a null byte",
    "unprintable characters": "it is a file",
    "foreign files": "holds files that are not a patchsim run (thesis.tex)",
    "a run's batches folder": "it is the batches folder of the run in",
    "another run": "holds a different run",
    "nothing": "--out: empty",
}


@pytest.mark.parametrize("kind", HOSTILE_OUT)
def test_a_hostile_out_is_one_short_message_naming_it(kind, run, tmp_path):
    (tmp_path / "t").mkdir()
    out = _hostile_out(kind, tmp_path / "t", run)
    before = snapshot(tmp_path)
    result = invoke("run", "edition2", "--bots", "greedy;income", "--games", "2", "--jobs",
                    "1", "--no-report", "--no-progress", "--out", out)
    message = one_paragraph_error(result)
    assert HOSTILE_OUT[kind] in message, message
    assert len(message) < 800, message  # the path shortened, not echoed whole
    assert len(result.output) < 1600, result.output
    shown = out if len(out) <= 300 and out.isprintable() else repr(out)[:100]
    assert shown in message, message  # the path (or its start) named
    assert snapshot(tmp_path) == before  # nothing written anywhere


def test_a_path_that_may_not_be_searched_is_named_as_such(tmp_path, monkeypatch):
    real = os.stat
    target = tmp_path / "locked" / "run"

    def stat(path, *args, **kwargs):
        if Path(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(checks.os, "stat", stat)
    with pytest.raises(RunFolderError, match=r"cannot write to the output folder .*locked/run: "
                       r"permission denied \(a folder on its path may not be searched\)"):
        checks.check_output_folder(target)


def test_an_unwritable_out_names_it_and_why(tmp_path, monkeypatch):
    def refused(*_a, **_k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(storage.tempfile, "mkstemp", refused)
    out = one_paragraph_error(invoke("run", "edition2", "--bots", "greedy;random", "--games",
                                     "2", "--jobs", "1", "--no-report", "--no-progress",
                                     "--out", str(tmp_path / "r")))
    assert f"cannot write to the output folder {tmp_path / 'r'}: Permission denied" in out


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_a_folder_without_permission_is_refused_plainly(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        out = one_paragraph_error(invoke("run", "edition2", "--bots", "greedy;random",
                                         "--games", "2", "--jobs", "1", "--no-report",
                                         "--no-progress", "--out", str(locked)))
        assert f"cannot write to the output folder {locked}: Permission denied" in out
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("bad", ["n" * 5000, "x\0y", "pipe"])
def test_a_hostile_resume_or_report_folder_is_named_shortly(bad, tmp_path):
    if bad == "pipe":
        os.mkfifo(tmp_path / "pipe")
    folder = str(tmp_path / bad)
    for args in (["run", "--resume", folder], ["report", folder], ["plan", folder]):
        message = one_paragraph_error(invoke(*args))
        assert len(message) < 800 and ("too long" in message or "null byte" in message
                                       or "named pipe (FIFO), not a run folder" in message)


def test_a_manifest_that_is_a_pipe_is_refused_not_read(run):
    (run / "manifest.json").unlink()
    os.mkfifo(run / "manifest.json")
    message = one_paragraph_error(invoke("plan", str(run)))  # would block for ever if read
    assert "manifest.json is a named pipe (FIFO), not a manifest" in message


def test_out_into_a_folder_of_unrelated_files_is_refused(tmp_path):
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "thesis.tex").write_text("mine")
    before = snapshot(folder)
    with pytest.raises(RunFolderError, match=r"thesis\.tex"):
        execute(cfg(), folder, jobs=1, backend="sequential")
    assert snapshot(folder) == before and sorted(p.name for p in folder.iterdir()) == \
        ["thesis.tex"]


def test_an_experiment_named_dotdot_cannot_write_outside_reports(tmp_path, monkeypatch):
    from patchsim.experiments.experiment import ExperimentError, load_experiment

    monkeypatch.chdir(tmp_path)
    exp = tmp_path / "e.yaml"
    exp.write_text("name: ..\nbase: edition2\nbots: [greedy]\nvariants:\n"
                   "  - {name: a, set: {starting_buttons: 6}}\n")
    with pytest.raises(ExperimentError, match="cannot name a folder"):
        load_experiment(exp)
    run_file = tmp_path / "r.yaml"
    run_file.write_text("name: ../../x\nruleset: edition2\nbots: [greedy]\n")
    with pytest.raises(RunError, match="cannot name a folder"):
        load_run_config(str(run_file))
    for name in ("..", "../x", ".hidden", "a/b"):
        path = fresh_dir(name)
        assert path.parent.parent == Path("reports") and path.parent.name == folder_name(name)
        assert not path.parent.name.startswith(".")


# --- messages --------------------------------------------------------------------------------
def test_a_running_run_is_named_as_running_with_its_pid(run):
    with RunLock(run, {"pid": 4242, "started": "now"}):
        for args in (["report", str(run)], ["plan", str(run)],
                     ["run", "--resume", str(run), "--no-progress"]):
            out = one_paragraph_error(invoke(*args))
            assert "still running" in out and "pid 4242" in out, out
            assert "resume the run first" not in out


def test_resume_of_a_file_says_so(run):
    out = one_paragraph_error(invoke("run", "--resume", str(run / "games.parquet")))
    assert "is a file, not a run folder" in out and "NotADirectoryError" not in out


def test_a_read_only_filesystem_is_not_told_to_free_space(tmp_path, monkeypatch):
    def read_only(*_a, **_k):
        raise OSError(errno.EROFS, "Read-only file system", "manifest.json")

    monkeypatch.setattr(execution, "atomic_write_text", read_only)
    out = one_paragraph_error(invoke("run", "edition2", "--bots", "greedy;random", "--games",
                                     "4", "--jobs", "1", "--out", str(tmp_path / "r"),
                                     "--no-progress"))
    assert "read-only" in out and "free some space" not in out.lower()


def test_small_disk_needs_are_not_printed_as_zero_gb(tmp_path, monkeypatch):
    monkeypatch.setattr(storage.shutil, "disk_usage",
                        lambda _p: shutil._ntuple_diskusage(10**9, 10**9 - 1000, 1000))
    with pytest.raises(RunError) as info:
        execute(cfg(), tmp_path / "r", jobs=1, backend="sequential")
    assert "0.0 GB" not in str(info.value) and "kB" in str(info.value)


def test_a_disk_that_fills_at_the_final_manifest_write_is_a_message_and_resumes(
        pristine, tmp_path, monkeypatch):
    real, calls = execution.atomic_write_text, {"n": 0}

    def filling(text, path):
        calls["n"] += 1
        if calls["n"] == 2:  # the manifest written at the end of the run
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(text, path)

    monkeypatch.setattr(execution, "atomic_write_text", filling)
    run_dir = tmp_path / "r"
    with pytest.raises(RunStorageError, match="the disk is full"):
        execute(cfg(), run_dir, jobs=1, backend="sequential")
    monkeypatch.undo()
    execute(cfg(), run_dir, jobs=1, backend="sequential")
    assert (run_dir / "games.parquet").read_bytes() == \
        (pristine / "run" / "games.parquet").read_bytes()
    assert check_folder(run_dir).problem is None


def test_compare_of_two_runs_of_one_experiment_is_refused(pristine, run):
    for args in (["compare", str(pristine / "run"), str(run)],
                 ["report", str(run), "--compare-with", str(pristine / "run")]):
        out = one_paragraph_error(invoke(*args))
        assert "the same experiment" in out and "equivalent" not in out


# --- issue 21: no machine paths --------------------------------------------------------------
def test_new_runs_store_no_machine_paths(tmp_path):
    out = tmp_path / "machine-folder"
    result = invoke("run", "edition2", "--bots", "greedy;random", "--games", "4", "--jobs",
                    "1", "--out", str(out), "--no-progress", "--no-report")
    assert result.exit_code == 0, result.output
    text = (out / "manifest.json").read_text()
    assert str(tmp_path) not in text and str(Path.cwd()) not in text
    assert "bot_path" not in json.loads(text)["config"]
    shipped = Path(execution.__file__).resolve().parents[1] / "models" / "x" / "model.json"
    assert portable_path(str(shipped)) == "patchsim/models/x/model.json"
    assert portable_path("/elsewhere/abc/model.json") == "abc/model.json"


def test_the_committed_reports_carry_no_machine_paths():
    for path in Path("reports").rglob("*"):
        if path.suffix in (".json", ".md", ".html", ".csv"):
            text = path.read_text(encoding="utf-8")
            for marker in ("/tmp/", "/work/", "/root/", "/home/"):
                assert marker not in text, f"{path}: {marker}"


# --- fuzz: a mutated manifest is a message or a success, never a traceback -------------------
def _mutations():
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers(-10, 10**20) | st.floats(allow_nan=False)
        | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5),
                                                                    inner, max_size=3),
        max_leaves=6)
    at_key = st.tuples(st.just("set"), st.lists(st.integers(0, 50), min_size=1, max_size=4),
                       json_values)
    cut = st.tuples(st.just("cut"), st.integers(0, 10**6), st.none())
    noise = st.tuples(st.just("bytes"), st.binary(min_size=1, max_size=30), st.integers(0, 10**6))
    return st.one_of(at_key, cut, noise)


def _mutate(text: str, mutation) -> bytes:
    kind, a, b = mutation
    if kind == "cut":
        return text.encode()[: a % (len(text) + 1)]
    if kind == "bytes":
        raw = text.encode()
        at = b % (len(raw) + 1)
        return raw[:at] + a + raw[at + len(a):]
    data = json.loads(text)
    node = data
    for step in a[:-1]:  # walk down to a random container
        if isinstance(node, dict) and node:
            child = node[sorted(node)[step % len(node)]]
        elif isinstance(node, list) and node:
            child = node[step % len(node)]
        else:
            break
        if not isinstance(child, dict | list):
            break
        node = child
    if isinstance(node, dict) and node:
        node[sorted(node)[a[-1] % len(node)]] = b
    elif isinstance(node, list) and node:
        node[a[-1] % len(node)] = b
    return json.dumps(data).encode()


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=_mutations())
def test_fuzzed_manifests_give_a_message_or_success_and_touch_nothing(pristine, tmp_path,
                                                                      mutation):
    run_dir = tmp_path / "fuzz"
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(pristine / "run", run_dir)
    path = run_dir / "manifest.json"
    path.write_bytes(_mutate(path.read_text(), mutation))
    with pytest.MonkeyPatch.context() as mp:
        # what is fuzzed is the loading: the report's pages (seconds each) are left out
        mp.setattr(report_module, "build_sections", lambda *_a, **_k: [])
        check_commands(run_dir)


def check_commands(run_dir: Path) -> None:
    for args in (["plan", str(run_dir)], ["run", "--resume", str(run_dir), "--no-progress",
                                          "--no-report"], ["report", str(run_dir)]):
        before = snapshot(run_dir)
        result = invoke(*args)
        if result.exit_code != 0:
            one_paragraph_error(result)
            assert snapshot(run_dir) == before, args


def test_a_read_only_folder_is_not_told_to_free_space_by_report(run, monkeypatch):
    def read_only(*_a, **_k):
        raise OSError(errno.EROFS, "Read-only file system")

    from patchsim.document import render  # the report is written by the one renderer

    monkeypatch.setattr(report_module, "build_sections", lambda *_a, **_k: [])
    monkeypatch.setattr(render, "atomic_write", read_only)
    out = one_paragraph_error(invoke("report", str(run)))
    assert "Read-only" in out and "free some space" not in out


def test_a_committed_report_without_tables_says_how_to_play_it_again():
    out = one_paragraph_error(invoke("plan", "reports/edition1-vs-edition2"))
    assert "play it again with: patchsim run experiments/edition1-vs-edition2.yaml" in out
    assert "resume the run first" not in out


def test_simulate_writes_no_batch_files_among_unrelated_files(tmp_path):
    from patchsim.play.simulate import simulate

    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    sim = simulate("edition2", "greedy;random", games=2, pairings="cross")
    with pytest.raises(RunFolderError, match=r"notes\.txt"):
        sim.write(folder)
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_a_readers_probe_of_the_lock_does_not_refuse_a_run(tmp_path, monkeypatch) -> None:
    """report and serve take the run lock shared for an instant (runfolder.running); a run
    starting at that instant must wait it out, not be refused as 'still running'. A lock a
    run really holds still refuses."""
    import fcntl as real_fcntl

    from patchsim.play.runfolder import RunFolderBusy, RunLock, storage

    busy = {"left": 3}  # a reader holding the lock during the first three tries
    flock = real_fcntl.flock

    def probing(fd: int, op: int) -> None:
        if op & real_fcntl.LOCK_EX and busy["left"] > 0:
            busy["left"] -= 1
            raise BlockingIOError
        flock(fd, op)

    monkeypatch.setattr(storage.fcntl, "flock", probing)
    with RunLock(tmp_path, {"pid": 1}):
        assert busy["left"] == 0
    monkeypatch.setattr(storage.fcntl, "flock", flock)
    with RunLock(tmp_path, {"pid": 2}), pytest.raises(RunFolderBusy):
        RunLock(tmp_path, {"pid": 3}).acquire()


# --- the run folder as one object (issue 30) --------------------------------------------------
def test_a_run_folder_opens_as_one_object_with_its_manifest_tables_and_records(run):
    from patchsim.play.runfolder import RunFolder

    folder = RunFolder.open(run)
    assert folder.manifest["run_id"] and folder.manifest_path == run / "manifest.json"
    assert folder.config.seed == 5 and set(folder.rulesets) == {"edition2"}
    assert len(folder.games) == folder.header.games_total == 20  # games=20 in cfg()
    assert "moves" not in folder.games.columns
    assert folder.events.events > 0
    first = int(folder.games["game_id"].iloc[0])
    assert folder.game_moves(first) and not folder.game_events(first).empty
    assert folder.stopping is None and folder.prices is None and folder.documents() == []
    path = folder.write_ladder("ladder\n")
    assert path == run / "ladder.md" and folder.documents() == ["ladder.md"]
    for bad in ("../x.md", "a/b.md", ".hidden"):
        with pytest.raises(ValueError, match="not a plain file name"):
            folder.write_document(bad, "x")


def test_a_handle_reads_the_tables_without_checking_and_open_refuses_a_bad_folder(run,
                                                                                  tmp_path):
    from patchsim.play.runfolder import RunFolder

    assert len(RunFolder(run).games) == 20  # a handle: the tables as they are
    with pytest.raises(RunFolderError, match="not a run folder"):
        RunFolder.open(tmp_path / "nowhere")
    (run / "events.parquet").write_bytes(b"garbage")
    with pytest.raises(RunFolderError, match="events.parquet is damaged"):
        RunFolder.open(run)
    with pytest.raises(RunFolderError, match="events.parquet: cannot read the table"):
        _ = RunFolder(run).events


def test_the_stopping_record_is_written_and_read_by_one_pair_of_functions(tmp_path):
    from patchsim.play.runfolder import (
        Decided,
        StoppingRecord,
        read_stopping,
        write_stopping,
    )

    assert read_stopping(tmp_path) is None
    record = StoppingRecord(0.02, 200, 1400, (Decided("edition2", "a vs b", "within", 1400,
                                                      0.505, 0.48, 0.53),))
    write_stopping(tmp_path, record)
    assert read_stopping(tmp_path) == record
    for bad in ("[1]", '{"deals": "x"}', '{"deals": 5, "decided": [{"rate": 1}]}',
                '{"deals": 5, "decided": [{"ruleset": "r", "pairing": "p", "deal": 1, '
                '"rate": 0.5, "lo": 0.4, "hi": 0.6, "decision": "maybe"}]}', "{"):
        (tmp_path / "stopping.json").write_text(bad)
        with pytest.raises(RunFolderError, match="stopping.json is damaged"):
            read_stopping(tmp_path)


def test_the_statistics_read_table_files_and_say_so_for_a_folder(tmp_path):
    """The table readers take a table's file (the run folder's names are the run folder's);
    a run folder given as before is refused with the way to read it."""
    from patchsim.analysis.tables import game_events, game_moves, read_games, scan_events

    for read in (read_games, scan_events, lambda p: game_moves(p, 0),
                 lambda p: game_events(p, 0)):
        with pytest.raises(ValueError, match=r"is a folder: give the (games|events) table's "
                           r"file, or read a run folder with .*RunFolder\(path\)"):
            read(tmp_path)
