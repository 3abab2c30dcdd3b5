"""Tests for batch runs (patchsim.play, ``patchsim run``): stored tables independent of
workers and batch size, resume after a kill, top-up, seat-swapped and common deals, bad
input found before any work starts, failing bots, and the command end to end."""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from patchsim.bots.registry import BotSpecError, make_bot
from patchsim.cli.main import app
from patchsim.engine.deal import deal_arrays, deal_circle, deal_seed, deal_streams
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, replay
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset
from patchsim.play import execution as runner
from patchsim.play import loops as playout
from patchsim.play.batches import BatchStopped, plan_batches, play_batch
from patchsim.play.config import (
    DEFAULT_BOTS_LEARNED,
    RunConfig,
    RunError,
    load_run_config,
    run_identity,
)
from patchsim.play.execution import execute
from patchsim.play.match import max_events, max_plies, play_game
from patchsim.play.worker import in_threads, local_backend

SCENARIOS = {
    "compiled": ["greedy", "random"],
    "search": ["greedy", "mcts(iterations=10)"],
    "python": ["greedy", "custom_bots:Hoarder(threshold=3)"],
}
KINDS = ("games", "events")
REAL_BATCH_JOB = runner.run_batch


def config(bots=("greedy", "random"), games: int = 40, batch: int | None = None,
           ref: str = "edition2", **kw) -> RunConfig:
    cfg = load_run_config(ref, games=games, bots=list(bots), **kw)
    cfg.batch_deals = batch
    return cfg


def run(cfg: RunConfig, run_dir: Path, **kw) -> runner.RunResult:
    kw.setdefault("jobs", 1)
    kw.setdefault("keep_batches", True)  # these tests look at the batch files
    return execute(cfg, run_dir, **kw)


def frame(run_dir: Path, kind: str) -> pd.DataFrame:
    df = pd.read_parquet(run_dir / f"{kind}.parquet")
    if "moves" in df:
        df["moves"] = df["moves"].map(lambda m: tuple(int(x) for x in m))
    return df


def assert_same_tables(a: Path, b: Path) -> None:
    for kind in KINDS:
        assert (a / f"{kind}.parquet").read_bytes() == (b / f"{kind}.parquet").read_bytes(), kind
        pd.testing.assert_frame_equal(frame(a, kind), frame(b, kind))


def batch_files(run_dir: Path) -> list[str]:
    return sorted(p.name for p in (run_dir / "batches").glob("*.arrow"))


class CountingJobs:
    """Wraps runner.run_batch (sequential runs only): counts the batches played, and can
    raise KeyboardInterrupt instead of playing batch number ``interrupt_at``."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.calls = 0
        self.interrupt_at = interrupt_at

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.interrupt_at is not None and self.calls >= self.interrupt_at:
            raise KeyboardInterrupt
        return REAL_BATCH_JOB(*args, **kwargs)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, Path]:
    """One sequential run per scenario, default batching: the tables the others must match."""
    base = tmp_path_factory.mktemp("reference")
    out = {}
    for name, bots in SCENARIOS.items():
        run(config(bots), base / name)
        out[name] = base / name
    return out


# --- same tables for any workers and batch size -----------------------------------------------
@pytest.mark.slow
def test_reference_tables(reference):
    cfg = config()
    games, events = frame(reference["compiled"], "games"), frame(reference["compiled"], "events")
    assert len(games) == 3 * 20 * 2  # pairings x deals x seats
    assert games["game_id"].is_unique
    assert set(games["run_id"]) == {run_identity(cfg)}
    assert set(games["pairing"]) == {"greedy vs greedy", "greedy vs random", "random vs random"}
    assert set(events["game_id"]) == set(games["game_id"])
    counts = events.groupby("game_id").size()
    assert (counts > 0).all()
    for _, ev in events.groupby("game_id"):
        assert ev["seq"].tolist() == list(range(len(ev)))
    manifest = json.loads((reference["compiled"] / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["games_total"] == 120
    assert manifest["batches_total"] == 3 and len(batch_files(reference["compiled"])) == 6


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize(("jobs", "batch", "backend"), [
    (2, None, "loky"),
    (2, 3, "loky"),
    (1, 7, "sequential"),
    (2, 6, "threading"),
    (2, None, "auto"),
])
@pytest.mark.slow
def test_tables_independent_of_workers_and_batch_size(reference, tmp_path, scenario, jobs,
                                                      batch, backend):
    cfg = config(SCENARIOS[scenario], batch=batch)
    result = run(cfg, tmp_path / "run", jobs=jobs, backend=backend)
    assert result.complete and result.games == 120
    if batch:
        assert len(batch_files(tmp_path / "run")) == 2 * 3 * -(-20 // batch)
    assert_same_tables(reference[scenario], tmp_path / "run")


@pytest.mark.slow
def test_same_config_in_two_folders_gives_identical_tables(reference, tmp_path):
    run(config(), tmp_path / "again")
    assert_same_tables(reference["compiled"], tmp_path / "again")


# --- seat-swapped pairs and common deals ------------------------------------------------------
def replay_row(rs, row) -> Game:
    """Replay a stored game's moves on its deal's circle; every move must be legal."""
    game = Game.new(rs, circle=deal_circle(rs, int(row.deal_seed)))
    for code in row.moves:
        game.apply(int(code))
    return game


@pytest.mark.parametrize("scenario", ["compiled", "python"])
@pytest.mark.slow
def test_seat_swapped_pairs_share_the_deal(reference, scenario):
    rs = load_ruleset("edition2")
    cfg = config(SCENARIOS[scenario])
    games = frame(reference[scenario], "games")
    for (pairing, deal), pair in games.groupby(["pairing", "deal"]):
        assert sorted(pair["order"]) == [0, 1]
        first, second = (pair[pair["order"] == o].iloc[0] for o in (0, 1))
        assert first.deal_seed == second.deal_seed == deal_seed(cfg.seed, int(deal))
        assert (first.bot0, first.bot1) == (second.bot1, second.bot0)
        assert pairing == f"{first.bot0} vs {first.bot1}"
        for row in (first, second):
            game = replay_row(rs, row)
            assert game.finished
            assert game.scores == (row.score0, row.score1)
            assert game.winner == row.winner
            assert row.winner_bot == (row.bot0, row.bot1)[row.winner]


@pytest.mark.slow
def test_stored_games_are_the_games_of_match_play(reference):
    """Each bot keeps its own stream when the seats swap: match.play_game with the deal's
    streams (reversed for the swapped game) plays exactly the stored games."""
    rs = load_ruleset("edition2")
    games = frame(reference["compiled"], "games")
    for row in games[games["pairing"] == "greedy vs random"].itertuples():
        seed = int(row.deal_seed)
        streams = deal_streams(rs, seed)
        if row.order == 1:
            streams = streams[::-1].copy()
        bots = (make_bot(row.bot0), make_bot(row.bot1))
        result = play_game(rs, bots, deal_circle(rs, seed), seed, streams=streams)
        assert result.moves.tolist() == list(row.moves)
        assert result.scores == (row.score0, row.score1)


def test_common_deals_across_rulesets(tmp_path):
    exp = tmp_path / "both.yaml"
    exp.write_text("name: both\nrulesets: [edition1, edition2]\nbots: [greedy, random]\n"
                   "pairings: cross\ngames: 10\nseed: 7\n")
    cfg = load_run_config(str(exp))
    assert [r.name for r in cfg.rulesets] == ["edition1", "edition2"] and cfg.seed == 7
    run(cfg, tmp_path / "run")
    games = frame(tmp_path / "run", "games")
    assert len(games) == 2 * 5 * 2
    e1, e2 = load_ruleset("edition1"), load_ruleset("edition2")
    by_rules = {name: g.set_index(["deal", "order"]) for name, g in games.groupby("ruleset")}
    assert set(by_rules) == {"edition1", "edition2"}
    assert (by_rules["edition1"]["deal_seed"] == by_rules["edition2"]["deal_seed"]).all()
    for deal in range(5):
        seed = deal_seed(7, deal)
        assert deal_circle(e1, seed) == deal_circle(e2, seed)
    for rs in (e1, e2):
        rows = games[games["ruleset"] == rs.name]
        assert set(rows["ruleset_hash"]) == {rs.content_hash()}
        for row in rows.itertuples():
            assert replay_row(rs, row).scores == (row.score0, row.score1)


# --- resume and top-up ------------------------------------------------------------------------
def forget_batches(run_dir: Path, keys: list[str], *, from_manifest: bool = True) -> None:
    """Make the folder look like a run killed before finishing those batches."""
    for key in keys:
        for kind in KINDS:
            [path] = (run_dir / "batches").glob(f"*-{key}.{kind}.arrow")
            path.unlink()
    for kind in KINDS:
        (run_dir / f"{kind}.parquet").unlink()
    mpath = run_dir / "manifest.json"
    manifest = json.loads(mpath.read_text())
    manifest["complete"] = False
    manifest.pop("finished", None)
    mpath.write_text(json.dumps(manifest, indent=2))


@pytest.mark.slow
def test_resume_after_kill_replays_only_missing_batches(reference, tmp_path, monkeypatch):
    cfg = config(batch=4)
    run(cfg, tmp_path / "run")
    keys = [b.key for b in plan_batches(cfg)]
    assert len(keys) == 15
    lost = keys[2:5] + keys[-1:]
    forget_batches(tmp_path / "run", lost)
    jobs = CountingJobs()
    monkeypatch.setattr(runner, "run_batch", jobs)
    result = run(config(batch=4), tmp_path / "run")
    assert result.complete and jobs.calls == len(lost)
    assert_same_tables(reference["compiled"], tmp_path / "run")


@pytest.mark.slow
def test_resume_replays_listed_batches_whose_files_are_missing(reference, tmp_path):
    cfg = config(batch=4)
    run(cfg, tmp_path / "run")
    keys = [b.key for b in plan_batches(cfg)]
    forget_batches(tmp_path / "run", keys[:3], from_manifest=False)
    run(config(batch=4), tmp_path / "run")
    assert_same_tables(reference["compiled"], tmp_path / "run")


@pytest.mark.slow
def test_keyboard_interrupt_keeps_finished_batches_and_resumes(reference, tmp_path,
                                                               monkeypatch):
    jobs = CountingJobs(interrupt_at=4)
    monkeypatch.setattr(runner, "run_batch", jobs)
    with pytest.raises(runner.RunInterrupted) as info:
        execute(config(batch=4), tmp_path / "run", jobs=1)
    run_dir = tmp_path / "run"
    assert len(batch_files(run_dir)) == 3 * 2
    assert not (run_dir / "games.parquet").exists()
    assert not list(run_dir.glob("*.tmp*")) and not list((run_dir / "batches").glob(".tmp-*"))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest.get("complete") is not True
    assert (info.value.done, info.value.total, info.value.run_dir) == (3, 15, run_dir)
    assert "interrupted: 3 of 15 batches" in str(info.value)
    assert not (run_dir / ".patchsim.lock").read_text()  # released cleanly
    jobs = CountingJobs()
    monkeypatch.setattr(runner, "run_batch", jobs)
    result = run(config(batch=4), run_dir)
    assert result.complete and jobs.calls == 12
    assert_same_tables(reference["compiled"], run_dir)


@pytest.mark.slow
def test_cli_resume_finishes_interrupted_run(reference, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "run_batch", CountingJobs(interrupt_at=2))
    with pytest.raises(runner.RunInterrupted):
        run(config(batch=4), tmp_path / "run")
    monkeypatch.undo()
    result = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "run"), "--jobs", "1",
                                      "--no-report", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "greedy vs random" in result.output
    assert_same_tables(reference["compiled"], tmp_path / "run")


@pytest.mark.slow
def test_cli_resume_reuses_finished_batches_of_experiment(reference, tmp_path, monkeypatch):
    exp = tmp_path / "exp.yaml"
    exp.write_text("ruleset: edition2\nbots: [greedy, random]\ngames: 40\nbatch_deals: 4\n")
    monkeypatch.setattr(runner, "run_batch", CountingJobs(interrupt_at=4))
    with pytest.raises(runner.RunInterrupted):
        run(load_run_config(str(exp)), tmp_path / "run")
    jobs = CountingJobs()
    monkeypatch.setattr(runner, "run_batch", jobs)
    result = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "run"), "--jobs", "1",
                                      "--no-report", "--no-progress"])
    assert result.exit_code == 0, result.output
    monkeypatch.undo()
    run(load_run_config(str(exp)), tmp_path / "whole")
    assert_same_tables(tmp_path / "whole", tmp_path / "run")
    assert jobs.calls == 12


@pytest.mark.parametrize("batch", [None, 4])
@pytest.mark.slow
def test_top_up_adds_deals_and_keeps_the_first(reference, tmp_path, monkeypatch, batch):
    run_dir = tmp_path / "run"
    run(config(games=20, batch=batch), run_dir)
    before = {k: frame(run_dir, k) for k in KINDS}
    assert sorted(before["games"]["deal"].unique()) == list(range(10))
    run(config(games=40, batch=batch), run_dir)
    after = {k: frame(run_dir, k) for k in KINDS}
    assert sorted(after["games"]["deal"].unique()) == list(range(20))
    assert len(after["games"]) == 2 * len(before["games"]) == 120
    old = after["games"][after["games"]["deal"] < 10].reset_index(drop=True)
    pd.testing.assert_frame_equal(old, before["games"].reset_index(drop=True))
    old_ids = set(before["games"]["game_id"])
    old_events = after["events"][after["events"]["game_id"].isin(old_ids)]
    pd.testing.assert_frame_equal(old_events.reset_index(drop=True),
                                  before["events"].reset_index(drop=True))
    assert json.loads((run_dir / "manifest.json").read_text())["config"]["deals"] == 20
    # the topped-up run is the run of 40 games
    assert_same_tables(reference["compiled"], run_dir)
    # asking for fewer games is refused (a size given is honoured or refused, never
    # silently replaced) and plays nothing
    jobs = CountingJobs()
    monkeypatch.setattr(runner, "run_batch", jobs)
    with pytest.raises(RunError, match="can grow but not shrink"):
        run(config(games=10, batch=batch), run_dir)
    assert jobs.calls == 0
    assert_same_tables(reference["compiled"], run_dir)


# --- bad input --------------------------------------------------------------------------------
@pytest.fixture
def bad_files(tmp_path) -> dict[str, Path]:
    files = {
        "bad_ruleset": "extends: edition2\nstarting_buttons: -3\n",
        "bad_experiment": "rulesets: [edition2, no_such_ruleset_xyz]\nbots: [greedy]\n",
        "unknown_key": "ruleset: edition2\nbots: [greedy]\ngamez: 4\n",
        "bad_pairings": "ruleset: edition2\nbots: [greedy]\npairings: some\n",
        "bad_yaml": "ruleset: [edition2\n",
    }
    out = {}
    for name, text in files.items():
        out[name] = tmp_path / f"{name}.yaml"
        out[name].write_text(text)
    return out


@pytest.mark.parametrize(("case", "kwargs", "fragments"), [
    ("no/such/config.yaml", {}, ["no/such/config.yaml"]),
    ("no_such_ruleset_xyz", {}, ["no_such_ruleset_xyz", "edition2"]),
    ("bad_ruleset", {}, ["starting_buttons"]),
    ("bad_experiment", {}, ["rulesets[1]", "no_such_ruleset_xyz"]),
    ("unknown_key", {}, ["unknown key(s) gamez"]),
    ("bad_pairings", {}, ["pairings: 'some'"]),
    ("bad_yaml", {}, ["YAML syntax error"]),
    ("edition2", {"bots": ["greedy", "gredy"]}, ["unknown bot 'gredy'", "did you mean"]),
    ("edition2", {"bots": ["greedy(epsilon=5)"]}, ["epsilon=5.0 must be between 0 and 1"]),
    ("edition2", {"bots": ["custom_bots:Nope"]}, ["has no attribute 'Nope'"]),
    ("edition2", {"overrides": ["no_such_key=1"]}, ["no_such_key", "unknown key"]),
    ("edition2", {"overrides": ["starting_buttons=-1"]}, ["starting_buttons"]),
    ("edition2", {"overrides": ["starting_buttons"]}, ["expected KEY=VALUE"]),
    ("edition2", {"games": 0}, ["games: must be at least 1, got 0"]),
    ("edition2", {"pairings": "most"}, ["'most' is not one of all, cross, self"]),
])
def test_bad_config_is_a_run_error(bad_files, case, kwargs, fragments):
    ref = str(bad_files.get(case, case))
    with pytest.raises(RunError) as info:
        load_run_config(ref, **kwargs)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_unwritable_output_is_a_run_error(tmp_path):
    target = tmp_path / "taken"
    target.write_text("a file where the run folder should be")
    with pytest.raises(RunError, match="cannot write to the output folder"):
        run(config(games=2), target)
    assert target.read_text() == "a file where the run folder should be"
    nested = tmp_path / "taken" / "sub"
    with pytest.raises(RunError, match="cannot write to the output folder"):
        run(config(games=2), nested)


def test_folder_of_a_different_run_is_a_run_error(tmp_path):
    run(config(games=2), tmp_path / "run")
    before = batch_files(tmp_path / "run")
    for other in (config(games=2, bots=["greedy", "income"]), config(games=2, seed=2),
                  config(games=2, overrides=["starting_buttons=6"])):
        with pytest.raises(RunError, match="holds a different run"):
            run(other, tmp_path / "run")
    assert batch_files(tmp_path / "run") == before


def test_bad_backend_is_a_run_error(tmp_path):
    with pytest.raises(RunError, match="backend: expected one of .*, got 'spark'"):
        run(config(games=2), tmp_path / "run", backend="spark")
    assert not list((tmp_path / "run").glob("batches/*.arrow"))


def test_bad_backend_leaves_no_run_folder(tmp_path):
    with pytest.raises(RunError):
        run(config(games=2), tmp_path / "run", backend="spark")
    assert not (tmp_path / "run" / "manifest.json").exists()


CLI_BAD = [
    ([], "give a ruleset or experiment file"),
    (["no_such_ruleset_xyz"], "no_such_ruleset_xyz"),
    (["{bad_ruleset}"], "starting_buttons"),
    (["{bad_experiment}"], "rulesets[1]"),
    (["edition2", "--bots", "greedy;gredy"], "did you mean 'greedy'"),
    (["edition2", "--set", "no_such_key=1"], "no_such_key"),
    (["edition2", "--games", "0"], "--games: must be at least 1, got 0"),
    (["edition2", "--out", "{file}"], "cannot write to the output folder"),
    (["edition2", "--backend", "dask"], "--scheduler"),
    (["--resume", "{missing}"], "is not a run folder"),
]


@pytest.mark.parametrize(("args", "fragment"), CLI_BAD)
def test_cli_bad_input_exits_with_message(bad_files, tmp_path, args, fragment):
    (tmp_path / "file").write_text("not a folder")
    names = {**{k: str(v) for k, v in bad_files.items()}, "file": str(tmp_path / "file"),
             "missing": str(tmp_path / "missing")}
    args = [a.format(**names) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, ["run", *args, "--jobs", "1", "--no-report",
                                      "--no-progress"])
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit)
    assert "error:" in result.output and fragment in result.output
    assert "Traceback" not in result.output
    if "--backend" not in args:  # found before any work: no run folder made
        assert not (tmp_path / "out").exists()


# --- failing bots in a run --------------------------------------------------------------------
def test_broken_bot_in_run_is_run_error_with_record(tmp_path):
    cfg = config(["greedy", "custom_bots:Raiser(at=7)"], games=6, batch=1)
    run_dir = tmp_path / "run"
    with pytest.raises(RunError) as info:
        run(cfg, run_dir)
    msg = str(info.value)
    seed = deal_seed(cfg.seed, 0)
    assert "'custom_bots:Raiser(at=7)'" in msg and f"seed {seed}" in msg
    assert "raised RuntimeError: the bot broke down" in msg
    move = int(msg.split(" at move ")[1].split()[0])
    rec_path = run_dir / f"failed-game-seed{seed}.json"
    assert rec_path.exists() and str(rec_path) in msg
    record = GameRecord.load(rec_path)
    assert len(record.moves) == move - 1
    *_, game = replay(record)
    assert not game.finished and game.to_move == 1  # the bot's seat in the first game
    # greedy vs greedy (planned first) finished and is kept; nothing was merged
    run_id = run_identity(cfg)
    assert batch_files(run_dir) == sorted(f"{run_id}-r00-p000-d{d:07d}-1.{k}.arrow"
                                          for d in range(3) for k in KINDS)
    assert not (run_dir / "games.parquet").exists()
    assert json.loads((run_dir / "manifest.json").read_text())["complete"] is False
    # the record works with `patchsim replay`, as the message says
    shown = CliRunner().invoke(app, ["replay", str(rec_path), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["to_move"] == 1


def test_auto_backend_threads_compiled_bots_and_spawns_processes_for_python_bots():
    """Compiled bots play inside the loop that releases the GIL: threads run them in
    parallel. A Python bot holds the GIL while it thinks: it needs worker processes."""
    assert local_backend(config(SCENARIOS["compiled"])) == "threading"
    assert local_backend(config(SCENARIOS["search"])) == "threading"
    assert local_backend(config(SCENARIOS["python"])) == "loky"
    # the default line-up: a learned bot becomes a compiled one once bound to its model
    assert local_backend(config(DEFAULT_BOTS_LEARNED)) == "threading"
    for name in ("loky", "threading", "sequential", "dask"):
        assert local_backend(config(SCENARIOS["compiled"]), name) == name


def test_an_unknown_backend_is_refused_with_the_choices(tmp_path):
    with pytest.raises(RunError,
                       match="backend: expected one of auto, loky, threading.*, got 'fast'"):
        run(config(games=4), tmp_path / "run", jobs=2, backend="fast")
    assert not (tmp_path / "run" / "games.parquet").exists()


def test_in_threads_stops_the_calls_still_running_when_the_caller_leaves():
    # a thread inside compiled code cannot be interrupted; the stop flag is how a threaded
    # run ends promptly on Ctrl-C or a bot failure instead of finishing its batches
    started = []

    def call(i: int, stop: np.ndarray) -> int:
        started.append(i)
        if i == 0:
            return i
        while stop[0] == 0:  # a long batch: plays until asked to stop
            time.sleep(0.001)
        raise BatchStopped(str(i))

    results = in_threads(2, call, [(i,) for i in range(6)])
    assert next(results) == 0
    closer = threading.Thread(target=results.close)
    closer.start()
    closer.join(timeout=60)
    assert not closer.is_alive(), "closing waited for calls that were never told to stop"
    assert len(started) < 6  # calls not started yet were dropped


def test_in_threads_waits_for_its_threads_even_through_a_second_interrupt():
    # a second Ctrl-C while the pool winds down must not end the run (and release its lock)
    # while a thread still plays and writes
    finished = []
    playing = threading.Event()
    handled = threading.Event()  # the main thread has taken the second Ctrl-C

    def on_sigint(_signum: int, _frame: object) -> None:
        handled.set()
        raise KeyboardInterrupt

    def call(i: int, stop: np.ndarray) -> int:
        if i == 0:
            return i
        playing.set()
        while stop[0] == 0:
            time.sleep(0.001)
        # the pool winds down: a real signal at the main thread (interrupt_main would wait
        # for the join to return), and the rest of the game until the main thread took it
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        assert handled.wait(60)
        finished.append(i)
        return i

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        results = in_threads(2, call, [(0,), (1,)])
        assert next(results) == 0
        assert playing.wait(60)
        with pytest.raises(KeyboardInterrupt):
            results.close()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert handled.is_set()
    assert finished == [1]


def test_a_stopped_batch_gives_up_before_its_next_game():
    cfg = config(SCENARIOS["compiled"], games=8)
    batch = plan_batches(cfg)[0]
    with pytest.raises(BatchStopped):
        play_batch(cfg, batch, run_identity(cfg), np.ones(1, dtype=np.int64))
    python_cfg = config(SCENARIOS["python"], games=8)
    with pytest.raises(BatchStopped):
        play_batch(python_cfg, plan_batches(python_cfg)[0], run_identity(python_cfg),
                   np.ones(1, dtype=np.int64))


def test_the_compiled_loop_sees_a_stop_set_by_another_thread_while_it_plays():
    # a load of the flag hoisted out of the loop would play every deal
    rs = load_ruleset("edition2")
    tables = compile_ruleset(rs)
    bot = make_bot("greedy")
    # enough deals (about 10 s of CPU) that a thread which never sees the flag cannot finish
    # them while a loaded machine keeps this one from setting it
    # (5,000 deals dealt, each played four times: dealing is Python, the loop is not)
    circles, streams = (np.tile(a, (4, 1)) for a in deal_arrays(rs, np.arange(5000)))
    deals = len(circles)
    kinds = np.array([bot.kind, bot.kind], dtype=np.int64)
    params = np.stack([bot.params, bot.params])

    def play(n: int, stop: np.ndarray):
        return playout.play_deals(tables.tab, circles[:n], streams[:n], kinds, params,
                                  max_plies(rs), max_events(rs), stop)

    play(1, np.zeros(1, dtype=np.int64))  # compiled (or loaded) before it is timed
    # the CPU time of the call's set-up alone (its output arrays), stopped before a game
    t = time.thread_time()
    play(deals, np.ones(1, dtype=np.int64))
    setup = time.thread_time() - t
    stop = np.zeros(1, dtype=np.int64)
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(r=play(deals, stop)))
    thread.start()
    # the flag is set once the thread has played: its own CPU time, which a busy machine
    # does not advance, is 0.5 s past three times the measured set-up (some 2,000 greedy
    # games of the 40,000; the set-up is mostly page faults of its output arrays, which vary:
    # CI once saw a thread stopped before its first game at twice the set-up plus 50 ms)
    clock = time.pthread_getcpuclockid(thread.ident)
    while time.clock_gettime(clock) < 3 * setup + 0.5 and "r" not in out:
        time.sleep(0.001)
    stop[0] = 1
    thread.join()
    res, *_, bad = out["r"]
    assert bad == playout.STOPPED
    assert 0 < np.count_nonzero(res[:, playout.R_PLIES]) < deals


@pytest.mark.slow
def test_a_threaded_run_stopped_midway_resumes_to_the_same_tables(reference, tmp_path):
    calls = []

    def progress(games: int, total: int) -> None:
        calls.append(games)
        if len(calls) == 3:  # Ctrl-C while other batches are still playing
            raise KeyboardInterrupt

    run_dir = tmp_path / "run"
    with pytest.raises(runner.RunInterrupted) as info:
        run(config(batch=2), run_dir, jobs=2, backend="threading", progress=progress)
    assert 2 <= info.value.done < info.value.total
    assert not (run_dir / "games.parquet").exists()
    run(config(batch=2), run_dir, jobs=2, backend="threading")
    assert_same_tables(reference["compiled"], run_dir)


@pytest.mark.slow
def test_the_manifest_records_the_backend_auto_chose(tmp_path):
    for scenario, chosen in (("compiled", "threading"), ("python", "loky")):
        run(config(SCENARIOS[scenario], games=8, batch=2), tmp_path / scenario, jobs=2)
        manifest = json.loads((tmp_path / scenario / "manifest.json").read_text())
        assert manifest["last_session"]["backend"] == chosen


@pytest.mark.slow
def test_broken_bot_in_parallel_run_is_run_error(tmp_path):
    cfg = config(["greedy", "custom_bots:Raiser(at=7)"], games=6, batch=1)
    with pytest.raises(RunError, match="Raiser"):
        run(cfg, tmp_path / "run", jobs=2)


def test_stateful_python_bot_tables_independent_of_batch_size(tmp_path):
    bots = ["greedy", "custom_bots:Rotator"]
    run(config(bots, games=8, batch=1), tmp_path / "one")
    run(config(bots, games=8, batch=4), tmp_path / "four")
    assert_same_tables(tmp_path / "one", tmp_path / "four")


def test_cli_broken_bot_exits_with_message(tmp_path):
    result = CliRunner().invoke(app, [
        "run", "edition2", "--games", "2", "--bots", "custom_bots:Illegal(at=2);greedy",
        "--out", str(tmp_path / "run"), "--jobs", "1", "--no-report", "--no-progress"])
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "error: bot 'custom_bots:Illegal(at=2)'" in result.output
    assert "chose an illegal move" in result.output and "Traceback" not in result.output
    assert list((tmp_path / "run").glob("failed-game-seed*.json"))


def test_experiment_with_mapping_bot_spec(tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text("ruleset: edition2\nbots: [{name: greedy, epsilon: 0.1}, random]\n"
                   "games: 2\n")
    run(load_run_config(str(exp)), tmp_path / "run")
    assert "greedy(epsilon=0.1)" in set(frame(tmp_path / "run", "games")["bot0"])


def test_run_records_canonical_bot_specs(tmp_path):
    run(config(["greedy(epsilon=0.10)", "random"], games=2), tmp_path / "run")
    games = frame(tmp_path / "run", "games")
    assert set(games["bot0"]) | set(games["bot1"]) == {"greedy(epsilon=0.1)", "random"}


# --- the command end to end -------------------------------------------------------------------
def test_cli_run_end_to_end(tmp_path):
    out = tmp_path / "cli"
    args = ["run", "edition2", "--games", "4", "--bots", "greedy; random", "--seed", "5",
            "--out", str(out), "--jobs", "1", "--no-report", "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "run edition2: 1 ruleset(s), 3 pairing(s), 2 deals x 2 seats, 1 worker(s)" in text
    for pairing in ("greedy vs greedy", "greedy vs random", "random vs random"):
        assert pairing in text
    assert "12 games" in text and str(out) in text
    assert "report:" not in text
    # the same tables as the library call
    run(load_run_config("edition2", games=4, bots=["greedy", "random"], seed=5),
        tmp_path / "api")
    assert_same_tables(out, tmp_path / "api")
    # a finished run resumed: summary again, nothing played
    again = CliRunner().invoke(app, ["run", "--resume", str(out), "--no-report",
                                     "--no-progress"])
    assert again.exit_code == 0, again.output
    assert "12 games" in again.output
    assert_same_tables(out, tmp_path / "api")


def test_cli_run_experiment_with_overrides(tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text("name: rich\nruleset: edition2\nbots: [greedy]\ngames: 2\n"
                   "set: {starting_buttons: 8}\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(exp), "--set", "bonus.points=9", "--out",
                                      str(out), "--jobs", "1", "--no-report", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "run rich:" in result.output
    want = load_ruleset("edition2").with_overrides({"starting_buttons": 8, "bonus.points": 9})
    games = frame(out, "games")
    assert set(games["ruleset_hash"]) == {want.content_hash()}
    assert len(games) == 2
    rows = games.itertuples()
    for row in rows:
        game = Game.new(want, circle=deal_circle(want, int(row.deal_seed)))
        for code in row.moves:
            game.apply(int(code))
        assert game.scores == (row.score0, row.score1)
    assert np.all(games["bot0"] == "greedy")


@pytest.mark.slow
def test_run_folder_copy_resumes_elsewhere(reference, tmp_path):
    """A run folder is self-contained: a copy finishes on its own."""
    src = tmp_path / "src"
    run(config(batch=5), src)
    forget_batches(src, [plan_batches(config(batch=5))[0].key])
    dst = tmp_path / "dst"
    shutil.copytree(src, dst)
    run(config(batch=5), dst)
    assert_same_tables(reference["compiled"], dst)


# --- review findings: bad experiment files, top-ups, reproducibility guards -------------------
def write_exp(tmp_path: Path, text: str) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("text", "fragment"), [
    ("ruleset: edition2\ngames: abc\n", "games: expected a whole number"),
    ("ruleset: edition2\nseed: -1\n", "seed: must be at least 0"),
    ("ruleset: edition2\nset: [1, 2]\n", "set: expected a mapping"),
    ("rulesets: [5]\n", "rulesets: expected a ruleset name or file"),
    ("ruleset: null\n", "ruleset: expected a ruleset name or file"),
    ("ruleset: edition2\nbatch_deals: -1\n", "batch_deals: must be at least 1"),
    ("ruleset: edition2\nbatch_deals: 1.5\n", "batch_deals: expected a whole number"),
    ("ruleset: edition2\nbots: [pass]\npairings: cross\n", "gives no games"),
    ("ruleset: edition2\nbots: []\n", "bots: expected a list"),
    ("base: edition2\nbots: [greedy]\n", "use `patchsim sweep"),
])
def test_bad_run_experiment_is_a_run_error(tmp_path, text, fragment):
    with pytest.raises(RunError) as info:
        load_run_config(write_exp(tmp_path, text))
    assert fragment in str(info.value)


def test_a_single_bot_string_in_an_experiment_is_one_bot(tmp_path):
    cfg = load_run_config(write_exp(tmp_path, "ruleset: edition2\nbots: greedy\ngames: 2\n"))
    assert cfg.bots == ["greedy"]


def test_negative_seed_and_folder_config_are_run_errors(tmp_path):
    with pytest.raises(RunError, match="seed: must be at least 0"):
        load_run_config("edition2", seed=-3)
    with pytest.raises(RunError, match="is a folder"):
        load_run_config(str(tmp_path))


def test_time_budget_bots_are_refused_in_runs():
    with pytest.raises(RunError, match="time budget"):
        load_run_config("edition2", bots=["mcts(iterations=10, time_ms=5)"])


def test_overridden_rules_get_their_own_readable_name():
    cfg = load_run_config("edition2", overrides=["offer_size=4", " bonus.points = 9"],
                          bots=["greedy"])
    assert cfg.rulesets[0].name == "edition2 (offer_size=4, bonus.points=9)"
    assert cfg.to_dict()["rulesets"][0]["hash"] == cfg.rulesets[0].content_hash()
    # an experiment's rulesets, changed alike, keep names of their own
    both = load_run_config("experiments/edition1-vs-edition2.yaml", overrides=["offer_size=4"])
    names = [r.name for r in both.rulesets]
    assert len(set(names)) == len(names) == 2
    assert all(n.endswith(" (offer_size=4)") for n in names)


@pytest.mark.parametrize("text", ["{", "{}", '{"config": {}}'])
def test_damaged_manifest_is_a_run_error(tmp_path, text):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(text)
    with pytest.raises(RunError, match="damaged"):
        run(config(games=4), run_dir)
    result = CliRunner().invoke(app, ["run", "--resume", str(run_dir), "--no-progress"])
    assert result.exit_code != 0 and "damaged" in result.output
    assert "Traceback" not in result.output


def test_resume_refuses_options_that_would_change_the_run(tmp_path):
    result = CliRunner().invoke(app, ["run", "--resume", str(tmp_path), "--bots", "random"])
    assert result.exit_code != 0 and "--resume continues a run" in result.output


def test_jobs_zero_is_an_error(tmp_path):
    result = CliRunner().invoke(app, ["run", "edition2", "--jobs", "0", "--out",
                                      str(tmp_path / "o")])
    assert result.exit_code != 0 and "--jobs 0" in result.output


def test_top_up_keeps_the_finished_batches(tmp_path):
    """Topping up plans only the new deals: the earlier segment's batches are reused as they
    are (no replay of a partly covered last batch), and the tables equal a one-go run."""
    small = config(bots=("greedy",), games=20, pairings="self")
    run_dir = tmp_path / "run"
    run(small, run_dir)
    before = {p.name: p.stat().st_mtime_ns for p in (run_dir / "batches").iterdir()}
    bigger = config(bots=("greedy",), games=40, pairings="self")
    run(bigger, run_dir)
    after = {p.name: p.stat().st_mtime_ns for p in (run_dir / "batches").iterdir()}
    assert all(after[name] == t for name, t in before.items())  # untouched, not replayed
    assert json.loads((run_dir / "manifest.json").read_text())["segments"] == [10, 20]
    whole = tmp_path / "whole"
    run(config(bots=("greedy",), games=40, pairings="self"), whole)
    assert_same_tables(run_dir, whole)


def test_python_bot_may_return_record_text():
    from custom_bots import Hoarder

    class TextBot(Hoarder):
        def choose(self, game, moves, rng):
            return str(super().choose(game, moves, rng))

    rs = load_ruleset("edition2")
    circle = deal_circle(rs, 3)
    a = play_game(rs, (TextBot(threshold=3), make_bot("greedy")), circle, 3)
    b = play_game(rs, (Hoarder(threshold=3), make_bot("greedy")), circle, 3)
    assert a.scores == b.scores and list(a.moves) == list(b.moves)


def test_custom_bot_module_in_the_working_folder(tmp_path, monkeypatch):
    (tmp_path / "mybots_here.py").write_text(
        "class Passer:\n    spec = 'mybots_here:Passer'\n"
        "    def choose(self, game, moves, rng):\n        return moves[0]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", ".")
                                     and p != str(tmp_path)])
    import sys

    before = list(sys.path)
    with pytest.raises(BotSpecError, match="cannot import bot module"):
        make_bot("mybots_here:Passer")  # the library does not search the working folder
    assert make_bot("mybots_here:Passer", bot_path=[str(tmp_path)]).spec == "mybots_here:Passer"
    assert sys.path == before  # an explicit option, not a change to the interpreter
    sys.modules.pop("mybots_here", None)
    # the command line searches the working folder, as python -m does
    result = CliRunner().invoke(app, ["run", "edition2", "--bots", "mybots_here:Passer;random",
                                      "--games", "2", "--jobs", "1", "--no-report",
                                      "--no-progress", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output


def test_run_until_stops_when_precise_enough(tmp_path):
    """--until tops the run up in steps and stops at the first step whose interval is narrow
    enough; the result equals a plain run of that many deals."""
    from patchsim.play.steps import execute_until

    cfg = config(bots=("greedy(epsilon=0.05)",), games=400, pairings="self")
    messages = []
    res = execute_until(cfg, tmp_path / "until", 0.15, step_deals=20, jobs=1,
                        backend="sequential", echo=messages.append)
    assert res.complete and "20 deals" in messages[0]
    played = frame(tmp_path / "until", "games")
    assert played["deal"].nunique() < 200  # stopped before the budget
    # the last line says the target was reached; the rate is the session's, every step's
    # games over the whole time (not the last step's 40 games over its own time)
    deals = played["deal"].nunique()
    assert messages[-1] == (f"target reached at {deals} deals: every 95% half-width is at "
                            "most 15.00 points")
    assert res.played == len(played) > 40
    assert res.games_per_s == pytest.approx(res.played / res.seconds)
    plain = config(bots=("greedy(epsilon=0.05)",), games=2 * played["deal"].nunique(),
                   pairings="self")
    run(plain, tmp_path / "plain")
    assert frame(tmp_path / "plain", "games").drop(columns="run_id").equals(
        played.drop(columns="run_id"))
    with pytest.raises(RunError, match="half-width"):
        execute_until(cfg, tmp_path / "bad", 0.0, jobs=1, backend="sequential")


def test_run_until_decided_stops_when_the_sequential_test_decides(tmp_path):
    """--until-decided: a sequential test per pairing of 'first seat within 50% +- m'; random
    play is close to fair, a wide margin is decided quickly and the run stops before its
    budget with the decision in the notes."""
    from patchsim.play.steps import execute_until

    cfg = config(bots=("random",), games=4000, pairings="self")
    res = execute_until(cfg, tmp_path / "sprt", decide_margin=0.2, step_deals=50, jobs=1,
                        backend="sequential")
    assert res.complete and any("within 50% +-20 points" in n for n in res.notes)
    assert frame(tmp_path / "sprt", "games")["deal"].nunique() < 2000
    assert res.played == len(frame(tmp_path / "sprt", "games"))
    # the decision carries an anytime-valid interval, and the folder records the stop for
    # its report (a fixed-sample interval covers less than 95% after such a stop)
    assert any("anytime-valid 95%" in n for n in res.notes)
    import json

    record = json.loads((tmp_path / "sprt" / "stopping.json").read_text())
    assert record["rule"] == "decided" and record["margin"] == 0.2
    d = record["decided"][0]
    assert d["decision"] == "within" and d["lo"] <= d["rate"] <= d["hi"]
    with pytest.raises(RunError, match="not both"):
        execute_until(cfg, tmp_path / "x", 0.01, decide_margin=0.02, jobs=1)


def test_default_line_up_uses_the_learned_search_only_where_a_model_exists():
    """The shipped editions have trained models: the default line-up is greedy and the
    learned search. A changed ruleset has none, so it gets the rollout search (asking for the
    learned bot there explicitly is an error that names patchsim train)."""
    assert load_run_config("edition2").bots == DEFAULT_BOTS_LEARNED
    changed = load_run_config("edition2", overrides=["starting_buttons=6"])
    assert changed.bots == ["greedy", "mcts(iterations=200)"]
