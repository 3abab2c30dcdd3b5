"""The analysis mode (patchsim.play.analyse, ``patchsim replay --analyse``): a deterministic
bot's own moves are its best (loss 0) when it judges the game, values are probabilities, the
per-seat summary recomputes from the per-move table, the CLI's JSON is the library's, and bad
records, specs and flags get clear errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import BotSpecError, CompiledBot, make_bot
from patchsim.cli.main import app
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, RecordError
from patchsim.engine.ruleset import load_ruleset
from patchsim.play import analyse as A
from patchsim.play.evaluate import EvaluationStopped

LEARNED = "mcts(eval=learned, iterations=8)"  # deterministic (epsilon 0, no sampling)
SCRIPTED = "greedy"


def play(specs: tuple[str, str], seed: int = 3, plies: int | None = None) -> Game:
    """A game between two bots (seat 0, seat 1), each move by the bot's own choice."""
    game = Game.new("edition2", seed=seed)
    bots = [bind_bot(make_bot(s), game.ruleset) for s in specs]
    stream = np.array([7], dtype=np.uint64)
    while not game.finished and (plies is None or game.ply < plies):
        bot = bots[int(game.to_move or 0)]
        assert isinstance(bot, CompiledBot)
        game.apply(bot.choose_code(game, stream))
    return game


@pytest.fixture(scope="module")
def game() -> Game:
    return play((SCRIPTED, LEARNED))


@pytest.fixture(scope="module")
def by_learned(game: Game) -> A.GameAnalysis:
    return A.analyse_record(game.record(), LEARNED)


@pytest.fixture(scope="module")
def by_greedy(game: Game) -> A.GameAnalysis:
    return A.analyse_record(game.record(), SCRIPTED)


def test_every_move_of_the_judge_is_its_best(by_learned: A.GameAnalysis,
                                             by_greedy: A.GameAnalysis) -> None:
    for analysis, seat in ((by_learned, 1), (by_greedy, 0)):
        mine = [p for p in analysis.positions if p.seat == seat]
        assert mine
        for p in mine:
            assert p.played is not None
            assert p.played.code == p.best.code, (p.ply, p.played.move, p.best.move)
            assert p.loss == 0.0 and p.mark == ""
            assert p.played.played and p.played.best


def test_the_other_seat_is_not_all_best(by_learned: A.GameAnalysis) -> None:
    # the analysis is not trivially "loss 0": greedy's moves are not all the search's
    theirs = [p for p in by_learned.positions if p.seat == 0]
    assert any(p.played is not None and p.played.code != p.best.code for p in theirs)


def test_values_are_probabilities_and_losses_follow(by_learned: A.GameAnalysis,
                                                    by_greedy: A.GameAnalysis) -> None:
    for analysis in (by_learned, by_greedy):
        assert [p.ply for p in analysis.positions] == list(range(len(analysis.positions)))
        for p in analysis.positions:
            codes = [c.code for c in p.candidates]
            assert len(codes) == len(set(codes))
            assert p.best in p.candidates and p.played in p.candidates
            assert sum(c.best for c in p.candidates) == 1
            assert sum(c.played for c in p.candidates) == 1
            for c in p.candidates:
                assert 0.0 <= c.value <= 1.0
            values = [c.value for c in p.candidates]
            assert values == sorted(values, reverse=True)
            assert p.played is not None
            assert p.loss == pytest.approx(max(0.0, p.best.value - p.played.value))
            assert p.loss is not None and p.mark == A.mark_of(p.loss)


def test_candidates_are_pass_and_each_affordable_patch(game: Game,
                                                       by_greedy: A.GameAnalysis) -> None:
    replay = Game.new("edition2", circle=game.circle)
    for p, code in zip(by_greedy.positions, game.history, strict=True):
        if not replay.pending_leather:
            legal = replay.legal_moves()
            patches = {m.patch for m in legal if m.kind == "buy"}
            offered = {str(c.move).split()[1] for c in p.candidates
                       if c.move.startswith("buy")}
            assert offered == patches
            assert "pass" in [c.move for c in p.candidates]
        replay.apply(code)


def test_summary_recomputes_from_the_table(by_learned: A.GameAnalysis) -> None:
    table = by_learned.table()
    assert list(table.columns) == list(A.TABLE_COLUMNS)
    summary = by_learned.summary()
    for s in summary:
        mine = table[table["seat"] == s["seat"]]
        assert s["moves"] == len(mine)
        assert s["mean_loss"] == pytest.approx(mine["loss"].mean())
        assert s["total_loss"] == pytest.approx(mine["loss"].sum())
        assert s["mistakes"] == int((mine["mark"] == "?").sum())
        assert s["blunders"] == int((mine["mark"] == "??").sum())
    assert summary[1]["mean_loss"] == 0.0 and summary[1]["largest"] == []
    assert sum(s["moves"] for s in summary) == len(table)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.floats(0, 1)), min_size=0, max_size=30))
def test_seat_summary_of_any_table(rows: list[tuple[int, float]]) -> None:
    table = pd.DataFrame([[i + 1, i, seat, f"m{i}", 0.5, f"b{i}", 0.5, loss,
                           A.mark_of(loss)] for i, (seat, loss) in enumerate(rows)],
                         columns=list(A.TABLE_COLUMNS))
    for s in A.seat_summary(table):
        losses = [loss for seat, loss in rows if seat == s["seat"]]
        assert s["moves"] == len(losses)
        assert s["mean_loss"] == pytest.approx(sum(losses) / len(losses) if losses else 0.0)
        marked = sorted((loss for loss in losses if loss >= A.MISTAKE), reverse=True)
        assert [m["loss"] for m in s["largest"]] == pytest.approx(marked[:A.LARGEST])
        assert s["mistakes"] + s["blunders"] == len(marked)
        assert s["blunders"] == sum(loss >= A.BLUNDER for loss in losses)


def test_marks_at_their_thresholds() -> None:
    assert A.mark_of(None) == "" and A.mark_of(0.0) == ""
    assert A.mark_of(math.nextafter(A.MISTAKE, 0)) == ""
    assert A.mark_of(A.MISTAKE) == "?"
    assert A.mark_of(math.nextafter(A.BLUNDER, 0)) == "?"
    assert A.mark_of(A.BLUNDER) == "??" and A.mark_of(1.0) == "??"


def test_deterministic_for_a_seed(game: Game, by_learned: A.GameAnalysis) -> None:
    again = A.analyse_record(game.record(), LEARNED)
    assert again.to_dict() == by_learned.to_dict()
    # a judge drawing from its streams (epsilon) repeats for the same seed too
    noisy = "mcts(eval=learned, iterations=8, epsilon=0.5)"
    short = play((SCRIPTED, LEARNED), plies=12)
    one = A.analyse_game(Game.new("edition2", circle=short.circle), short.history, noisy, 5)
    two = A.analyse_game(Game.new("edition2", circle=short.circle), short.history, noisy, 5)
    assert one.to_dict() == two.to_dict()


def test_a_position_with_no_move_played_is_a_hint() -> None:
    game = Game.new("edition2", seed=4)
    judge = A.make_judge(LEARNED, game)
    hint = A.analyse_position(game, judge)
    assert hint.played is None and hint.loss is None and hint.mark == ""
    assert hint.best.code == int(judge.choose_code(game, np.zeros(1, dtype=np.uint64)))
    assert game.ply == 0  # unchanged


def test_default_judge_and_rules_without_a_model() -> None:
    assert A.judge_spec(Game.new("edition2", seed=1)) == A.DEFAULT_JUDGE
    odd = Game.new(load_ruleset("edition2").with_overrides({"starting_buttons": 7}), seed=1)
    assert A.judge_spec(odd) == A.FALLBACK_JUDGE
    with pytest.raises(BotSpecError, match="no model"):
        A.make_judge("mcts(eval=learned)", odd)


def test_bad_inputs() -> None:
    game = play((SCRIPTED, SCRIPTED))
    with pytest.raises(ValueError, match="over"):
        A.analyse_position(game, A.make_judge(SCRIPTED, game))
    start = Game.new("edition2", circle=game.circle)
    with pytest.raises(ValueError, match="illegal"):
        A.analyse_position(start, A.make_judge(SCRIPTED, start), played=10**6)
    bad = {**game.record(), "moves": ["pass", "buy P99 a1"]}
    with pytest.raises(RecordError, match="move 2"):
        A.analyse_record(bad, SCRIPTED)
    with pytest.raises(BotSpecError, match="unknown bot"):
        A.analyse_record(game.record(), "nosuchbot")
    with pytest.raises(EvaluationStopped):
        A.analyse_record(game.record(), SCRIPTED, stop=lambda: True)


def test_a_judge_of_the_user_s() -> None:
    game = play((SCRIPTED, SCRIPTED), plies=6)
    rec = game.record()
    hoarder = A.analyse_record(rec, "custom_bots:Hoarder(threshold=3)")
    assert hoarder.judge == "custom_bots:Hoarder(threshold=3)"
    assert all(0 <= c.value <= 1 for p in hoarder.positions for c in p.candidates)
    for spec in ("custom_bots:Illegal(at=1)", "custom_bots:IllegalCode(at=1)"):
        with pytest.raises(BotSpecError, match="chose an illegal move at move 1"):
            A.analyse_record(rec, spec)


# --- the command line -------------------------------------------------------------------------
def invoke(*args: str):
    return CliRunner().invoke(app, ["replay", *args])


@pytest.fixture(scope="module")
def record_file(tmp_path_factory: pytest.TempPathFactory, game: Game) -> Path:
    path = tmp_path_factory.mktemp("analyse") / "game.json"
    path.write_text(json.dumps(game.record()), encoding="utf-8")
    return path


def test_cli_json_round_trip(record_file: Path, by_learned: A.GameAnalysis) -> None:
    result = invoke(str(record_file), "--analyse", "--bot", LEARNED, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data.pop("record") == str(record_file)
    assert data == json.loads(json.dumps(by_learned.to_dict()))
    table = pd.DataFrame([{k: m[k] for k in A.TABLE_COLUMNS} for m in data["moves"]])
    assert A.seat_summary(table) == data["summary"]


def test_cli_table(record_file: Path, by_learned: A.GameAnalysis) -> None:
    result = invoke(str(record_file), "--analyse", "--bot", LEARNED)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"judge: {LEARNED}")
    rows = [line for line in lines if line[:4].strip().isdigit()]
    assert len(rows) == len(by_learned.positions)
    assert lines[-2].startswith("seat 0:") and lines[-1].startswith("seat 1:")
    assert "mean loss 0.0 points" in lines[-1]


@pytest.mark.parametrize("args,fragment", [
    (("--bot", "greedy"), "add --analyse"),
    (("--analyse", "--trace"), "give one of them"),
    (("--analyse", "--bot", "nosuchbot"), "--bot: unknown bot 'nosuchbot'"),
    (("--analyse", "--bot", "mcts(iterations=-1)"), "--bot: mcts: iterations="),
])
def test_cli_bad_flags(record_file: Path, args: tuple[str, ...], fragment: str) -> None:
    result = invoke(str(record_file), *args)
    assert result.exit_code == 2
    assert result.stdout == "" and "Traceback" not in result.output
    assert result.stderr.startswith("error: ") and fragment in result.stderr, result.stderr


def test_cli_bad_records(tmp_path: Path, game: Game) -> None:
    missing = invoke(str(tmp_path / "nope.json"), "--analyse")
    assert missing.exit_code == 1 and missing.stderr.startswith("error: ")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**game.record(), "moves": ["pass", "buy P99 a1"]}))
    bad = invoke(str(path), "--analyse", "--bot", SCRIPTED)
    assert bad.exit_code == 1 and "move 2" in bad.stderr and bad.stdout == ""
    odd = Game.new(load_ruleset("edition2").with_overrides({"starting_buttons": 7}), seed=1)
    odd.apply("pass")
    path.write_text(json.dumps(odd.record()))
    nomodel = invoke(str(path), "--analyse", "--bot", "mcts(eval=learned)")
    assert nomodel.exit_code == 2 and "no model" in nomodel.stderr
    assert GameRecord.load(path).moves == ["pass"]


# --- stored games and the report's links ------------------------------------------------------
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from runs import shared_run

    return shared_run(tmp_path_factory, "web-small", "edition2", 8, ["greedy", "random"])


def test_stored_record_replays_the_stored_game(run_dir: Path) -> None:
    games = pd.read_parquet(run_dir / "games.parquet")
    row = games.iloc[-1]
    rec = A.stored_record(run_dir, int(row["game_id"]))
    start, codes = A.record_codes(rec)
    assert codes == [int(c) for c in row["moves"]]
    assert rec.players == [row["bot0"], row["bot1"]]
    with pytest.raises(A.StoredGameError, match="no game 999999"):
        A.stored_record(run_dir, 999999)


def test_cli_analyses_a_stored_game(run_dir: Path) -> None:
    games = pd.read_parquet(run_dir / "games.parquet")
    gid = int(games.iloc[0]["game_id"])
    result = invoke(str(run_dir), "--game", str(gid), "--analyse", "--bot", SCRIPTED, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["moves"]) == len(games.iloc[0]["moves"])
    assert data == {"record": f"{run_dir} game {gid}",
                    **json.loads(json.dumps(A.analyse_record(
                        A.stored_record(run_dir, gid), SCRIPTED).to_dict()))}
    plain = invoke(str(run_dir), "--game", str(gid))
    assert plain.exit_code == 0 and "score" in plain.stdout
    missing = invoke(str(run_dir), "--game", "999999", "--analyse")
    assert missing.exit_code == 1 and "no game 999999" in missing.stderr
    notdir = invoke(str(run_dir / "games.parquet"), "--game", "1")
    assert notdir.exit_code == 1 and "not a run folder" in notdir.stderr


def test_report_lists_games_to_analyse(run_dir: Path) -> None:
    from patchsim.analysis.degenerate import degenerate_games
    from patchsim.analysis.selfplay import distinct
    from patchsim.reporting import sections_games as S
    from patchsim.reporting.run import load_run

    run = load_run(run_dir)
    games = distinct(run.games)
    table = S.games_to_analyse(run, games)
    assert table is not None
    rows = table.records()
    flags = degenerate_games(games)
    for (_, pairing), part in games.assign(degenerate=flags.to_numpy()).groupby(
            ["ruleset", "pairing"], observed=True):
        mine = [r for r in rows if r["pairing"] == pairing]
        lopsided = [r for r in mine if r["why"] == "most lopsided"]
        assert len(lopsided) == 1
        margin = (part["score0"] - part["score1"]).abs()
        gid = int(part.loc[margin.idxmax(), "game_id"])
        assert lopsided[0]["game"] == str(gid)
        degenerate = [r for r in mine if r["why"].startswith("degenerate")]
        assert len(degenerate) == min(int(part["degenerate"].sum()), S.ANALYSE_DEGENERATE)
        for r in mine:
            link = A.ANALYSIS_LINK.format(game_id=r["game"])
            assert f"({link})" in r["analysis"]
            assert f"replay {run_dir} --game {r['game']} --analyse" in r["analysis"]
