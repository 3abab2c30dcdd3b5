"""Tests for the bots: every built-in bot on random rulesets (legal, finished, reproducible),
compiled vs Python game loops, records of bot games, custom and broken bots, spec parsing,
``patchsim bots``, and strength smoke tests with generous margins."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import ruleset_dicts
from typer.testing import CliRunner

from patchsim.bots import policies as P
from patchsim.bots import scripted, search
from patchsim.bots.registry import (
    DEFAULT_ROLLOUT,
    REGISTRY,
    STRATEGIES,
    Bot,
    BotSpecError,
    CompiledBot,
    MCTSBot,
    ScriptedBot,
    describe_bots,
    make_bot,
    parse_spec,
)
from patchsim.cli.main import app
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.record import GameRecord, final_position, replay
from patchsim.engine.ruleset import Ruleset, load_ruleset, ruleset_from_dict, shipped_rulesets
from patchsim.engine.tables import compile_ruleset
from patchsim.play import loops as playout
from patchsim.play import match
from patchsim.play.match import BotError, GameResult, game_record, play_game

FEW = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**63 - 1)
NAMES = sorted(REGISTRY)


def spec_of(name: str) -> str:
    """A quick spec for a registered bot: the search bot with few iterations."""
    return "mcts(iterations=20)" if name == "mcts" else name


@pytest.fixture(scope="module")
def e2() -> Ruleset:
    return load_ruleset("edition2")


# --- helpers ----------------------------------------------------------------------------------
def play_python(ruleset: Ruleset, bots, circle: list[str], seed: int,
                streams: np.ndarray | None = None) -> GameResult:
    """The game of match.play_game, forced through the Python loop even for compiled bots."""
    tables = compile_ruleset(ruleset)
    rs = tables.ruleset
    game = Game.new(rs, circle=circle)
    streams = match.seat_streams(seed) if streams is None else np.asarray(streams, np.uint64)
    moves = np.full(match.max_plies(rs), -9999, dtype=np.int64)
    ev = np.zeros((match.max_events(rs), core.EV_WIDTH), dtype=np.int64)
    result = np.zeros(playout.R_WIDTH, dtype=np.int64)
    return match._play_python(tables, game, bots, circle, seed, streams, moves, ev, result)


def assert_same_game(a: GameResult, b: GameResult) -> None:
    assert a.moves.tolist() == b.moves.tolist()
    assert a.events.tolist() == b.events.tolist()
    for attr in ("winner", "scores", "buttons", "empty", "positions", "bonus_owner",
                 "first_to_end", "plies", "passes", "buys", "leather", "holes"):
        assert getattr(a, attr) == getattr(b, attr), attr


@functools.cache
def shipped_hashes() -> dict[str, str]:
    return {load_ruleset(n).content_hash(): n for n in shipped_rulesets()}


def record_of(ruleset: Ruleset, circle: list[str], result: GameResult) -> dict:
    """The game's record: a shipped ruleset by name, any other inline."""
    rec = game_record(ruleset, circle, result)
    shipped = shipped_hashes()
    if ruleset.content_hash() in shipped:
        assert rec["rules"] == shipped[ruleset.content_hash()]
    else:
        assert isinstance(rec["rules"], dict)
    return rec


def assert_replays(ruleset: Ruleset, circle: list[str], result: GameResult) -> Game:
    """The record (through JSON) replays move by move, every move legal, to the same end."""
    rec = GameRecord.from_json(json.dumps(record_of(ruleset, circle, result)))
    assert len(rec.moves) == result.plies
    game = final_position(rec)
    assert game.finished
    assert game.position(0) == game.position(1) == ruleset.last_space
    assert game.scores == result.scores
    assert game.winner == result.winner
    assert (game.bonus_owner if game.bonus_owner is not None else -1) == result.bonus_owner
    assert (game.buttons(0), game.buttons(1)) == result.buttons
    assert (game.empty_squares(0), game.empty_squares(1)) == result.empty
    assert game.history == result.moves.tolist()
    return game


def seats_of(record: dict) -> list[int]:
    """The player who made each move of a record."""
    seats = []
    games = replay(GameRecord.from_dict(record))
    game = next(games)
    seats.append(game.to_move)
    for game in games:
        seats.append(game.to_move)
    return seats[:-1]


# --- built-in bots on random rulesets ---------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=ruleset_dicts(), seed=SEEDS, opponent=st.sampled_from(NAMES))
@pytest.mark.slow
def test_builtin_bot_plays_legal_finished_reproducible_games(name, data, seed, opponent):
    rs = ruleset_from_dict(data)
    circle = deal_circle(rs, seed)
    bot, opp = make_bot(spec_of(name)), make_bot(spec_of(opponent))
    for seats in ((bot, opp), (opp, bot)):
        result = play_game(rs, seats, circle, seed)
        assert result.plies <= match.max_plies(rs)
        # same seed, same game, with fresh bots made from the recorded specs
        again = play_game(rs, tuple(make_bot(b.spec) for b in seats), circle, seed)
        assert_same_game(result, again)
        # the compiled loop and the Python loop agree move for move
        assert_same_game(result, play_python(rs, seats, circle, seed))
        # every move legal (Game.apply checks each), the game finished, the same result
        assert_replays(rs, circle, result)


@FEW
@given(data=ruleset_dicts(), seed=SEEDS, threshold=st.integers(0, 6))
@pytest.mark.slow
def test_python_bot_plays_legal_finished_reproducible_games(data, seed, threshold):
    rs = ruleset_from_dict(data)
    circle = deal_circle(rs, seed)
    spec = f"custom_bots:Hoarder(threshold={threshold})"
    for seats in ((make_bot(spec), make_bot("random")), (make_bot("greedy"), make_bot(spec))):
        result = play_game(rs, seats, circle, seed)
        again = play_game(rs, tuple(make_bot(b.spec) for b in seats), circle, seed)
        assert_same_game(result, again)
        assert_replays(rs, circle, result)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.slow
def test_compiled_game_equals_python_loop(name, e2):
    bot = make_bot(spec_of(name))
    for opponent in ("random", "greedy(epsilon=0.3)", "mcts(iterations=10)"):
        other = make_bot(opponent)
        for seed in range(3):
            circle = deal_circle(e2, seed)
            for seats in ((bot, other), (other, bot)):
                fast = play_game(e2, seats, circle, seed)
                slow = play_python(e2, seats, circle, seed)
                assert_same_game(fast, slow)


def test_seat_streams_are_per_seat(e2):
    """Swapping the streams with the seats gives each bot its own stream back: a random bot
    against itself then plays the mirrored game's moves in the same order of its draws."""
    circle = deal_circle(e2, 11)
    streams = match.seat_streams(11)
    r = make_bot("random")
    a = play_game(e2, (r, r), circle, 11)
    b = play_game(e2, (r, r), circle, 11, streams=streams)
    assert_same_game(a, b)
    c = play_game(e2, (r, r), circle, 11, streams=streams[::-1].copy())
    assert c.moves.tolist() != a.moves.tolist()
    d = play_python(e2, (r, r), circle, 11, streams=streams[::-1].copy())
    assert_same_game(c, d)


def test_different_seeds_give_different_games(e2):
    r = make_bot("random")
    circle = deal_circle(e2, 0)
    games = {tuple(play_game(e2, (r, r), circle, s).moves.tolist()) for s in range(5)}
    assert len(games) == 5


# --- records of bot games ---------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("rules", ["edition1", "edition2"])
@pytest.mark.slow
def test_bot_game_record_replays(name, rules):
    rs = load_ruleset(rules)
    for seed in (3, 4):
        circle = deal_circle(rs, seed)
        seats = (make_bot(spec_of(name)), make_bot("greedy(epsilon=0.2)"))
        for pair in (seats, seats[::-1]):
            result = play_game(rs, pair, circle, seed)
            rec = game_record(rs, circle, result)
            assert rec["rules"] == rules  # a shipped ruleset is named, not inlined
            assert rec["circle"] == circle
            assert_replays(rs, circle, result)


def test_game_record_of_overridden_ruleset_replays(e2):
    """An overridden ruleset keeps its base's name, so its record must carry it inline."""
    rs = e2.with_overrides({"starting_buttons": 0})
    assert rs.name == "edition2" and rs.content_hash() != e2.content_hash()
    circle = deal_circle(rs, 5)
    result = play_game(rs, (make_bot("greedy"), make_bot("income")), circle, 5)
    assert isinstance(game_record(rs, circle, result)["rules"], dict)
    assert_replays(rs, circle, result)


# --- custom bots from an import path ----------------------------------------------------------
def test_custom_bot_from_import_path_plays_full_game(e2):
    bot = make_bot("custom_bots:Hoarder(threshold=3)")
    assert type(bot).__name__ == "Hoarder" and bot.threshold == 3
    assert bot.spec == "custom_bots:Hoarder(threshold=3)"
    assert isinstance(bot, Bot) and not isinstance(bot, CompiledBot)
    circle = deal_circle(e2, 21)
    for pair in ((bot, make_bot("greedy")), (make_bot("mcts(iterations=10)"), bot)):
        result = play_game(e2, pair, circle, 21)
        seat = pair.index(bot)
        assert result.buys[seat] > 0 and result.passes[seat] > 0
        again = play_game(e2, tuple(make_bot(b.spec) for b in pair), circle, 21)
        assert_same_game(result, again)
        assert_replays(e2, circle, result)


def test_custom_bot_parameter_takes_effect(e2):
    circle = deal_circle(e2, 2)
    miser = play_game(e2, (make_bot("custom_bots:Hoarder(threshold=1000)"),
                           make_bot("greedy")), circle, 2)
    assert miser.buys[0] == 0 and miser.passes[0] > 0
    spender = play_game(e2, (make_bot({"name": "custom_bots:Hoarder", "threshold": 0}),
                             make_bot("greedy")), circle, 2)
    assert spender.buys[0] > 0


def test_custom_bot_without_spec_gets_its_import_path():
    assert make_bot("custom_bots:NoSpec").spec == "custom_bots:NoSpec"


BROKEN = [
    ("custom_bots:Raiser(at=5)", "raised RuntimeError: the bot broke down", 5),
    ("custom_bots:Illegal(at=3)", "chose an illegal move (not one of the legal moves)", 3),
    ("custom_bots:IllegalCode(at=3)",
     "chose an illegal move (no leather patch is waiting to be placed)", 3),
    ("custom_bots:Stale(at=4)", "chose an illegal move (not one of the legal moves)", None),
]


@pytest.mark.parametrize("seat", [0, 1])
@pytest.mark.parametrize(("spec", "what", "at"), BROKEN)
def test_broken_bot_stops_game_withbot_error(e2, spec, what, at, seat):
    seed = 9
    circle = deal_circle(e2, seed)
    pair = [make_bot("greedy"), make_bot("greedy")]
    pair[seat] = make_bot(spec)
    with pytest.raises(BotError) as info:
        play_game(e2, tuple(pair), circle, seed)
    err = info.value
    msg = str(err)
    assert err.bot == spec and err.seed == seed
    assert repr(spec) in msg and f"seat {seat}" in msg and what in msg
    assert f"move {err.move_number} " in msg and f"seed {seed}" in msg
    # the record replays to the position where the bot failed, the bot to move there
    assert len(err.record["moves"]) == err.move_number - 1
    assert err.record["rules"] == "edition2" and err.record["circle"] == circle
    *_, game = replay(GameRecord.from_dict(err.record))
    assert game.to_move == seat and not game.finished
    if at is not None:  # the bot failed on its at-th turn
        assert seats_of(err.record).count(seat) == at - 1


def test_brokenbot_error_from_compiled_loop(e2, monkeypatch):
    """The compiled loop reports a policy's illegal move: the bot, the seed, the move number,
    and a record of the moves before it."""
    circle = deal_circle(e2, 4)
    legal = play_game(e2, (make_bot("greedy"), make_bot("random")), circle, 4).moves[:3]

    def fake(tab, state, kinds, params, rng, moves, ev, result):
        moves[:3] = legal
        moves[3] = 10**6
        result[:] = 0
        result[playout.R_ERROR] = 2
        result[playout.R_PLIES] = 4
        return 0

    monkeypatch.setattr(playout, "play_game", fake)
    with pytest.raises(BotError) as info:
        play_game(e2, (make_bot("greedy"), make_bot("random")), circle, 4)
    err = info.value
    assert err.bot == "random" and err.seed == 4 and err.move_number == 4
    assert "'random' (seat 1)" in str(err) and "move 4 " in str(err) and "seed 4" in str(err)
    assert len(err.record["moves"]) == 3
    final_position(GameRecord.from_dict(err.record))


# --- spec parsing -----------------------------------------------------------------------------
def test_spec_plain_name():
    assert parse_spec("greedy") == ("greedy", {})
    bot = make_bot("greedy")
    assert isinstance(bot, ScriptedBot) and bot.spec == "greedy"
    assert bot.params[scripted.P_EPSILON] == 0.0


def test_spec_with_parameter():
    assert parse_spec("greedy(epsilon=0.1)") == ("greedy", {"epsilon": 0.1})
    bot = make_bot("greedy(epsilon=0.1)")
    assert bot.spec == "greedy(epsilon=0.1)"
    assert bot.params[scripted.P_EPSILON] == pytest.approx(0.1)
    assert bot.params[scripted.P_W_INCOME] == make_bot("greedy").params[scripted.P_W_INCOME]


def test_spec_with_nested_rollout():
    text = "mcts(iterations=100, rollout=income(epsilon=0.2))"
    name, params = parse_spec(text)
    assert name == "mcts" and params == {"iterations": 100, "rollout": "income(epsilon=0.2)"}
    bot = make_bot(text)
    assert isinstance(bot, MCTSBot) and bot.spec == text
    assert bot.params[search.M_ITERATIONS] == 100
    roll = make_bot("income(epsilon=0.2)")
    assert bot.params[search.M_ROLLOUT_KIND] == roll.kind == P.SCRIPTED
    n = P.N_PARAMS - search.ROLLOUT_OFFSET
    assert bot.params[search.ROLLOUT_OFFSET:].tolist() == roll.params[:n].tolist()


def test_spec_mapping_form():
    for spec in ({"name": "mcts", "iterations": 50},
                 yaml.safe_load("{name: mcts, iterations: 50}")):
        bot = make_bot(spec)
        assert isinstance(bot, MCTSBot) and bot.spec == "mcts(iterations=50)"
        assert bot.params[search.M_ITERATIONS] == 50
    assert make_bot({"name": "greedy"}).spec == "greedy"


@pytest.mark.parametrize(("given", "canonical"), [
    (" greedy ( epsilon = 0.10 ) ", "greedy(epsilon=0.1)"),
    ("greedy()", "greedy"),
    ("area(w_cost=2, epsilon=0.5)", "area(epsilon=0.5, w_cost=2)"),
    ("mcts(iterations=100.0)", "mcts(iterations=100)"),
    (f"mcts(rollout={DEFAULT_ROLLOUT})", "mcts"),
    ("mcts(rollout=greedy(epsilon=0.1))", "mcts(rollout=greedy(epsilon=0.1))"),
    ("mcts(rollout=greedy)", "mcts(rollout=greedy)"),
    ("mcts(c=1.5,rollout=first-fit,iterations=30)",
     "mcts(c=1.5, iterations=30, rollout=first-fit)"),
    ("greedy(placement=first)", "greedy(placement=first)"),
])
def test_spec_canonical_form_round_trips(given, canonical):
    bot = make_bot(given)
    assert bot.spec == canonical
    again = make_bot(bot.spec)
    assert again.spec == canonical
    assert again.kind == bot.kind and again.params.tolist() == bot.params.tolist()


@pytest.mark.parametrize(("spec", "fragments"), [
    ("gredy", ["unknown bot 'gredy'", "did you mean 'greedy'?", *NAMES, "import path"]),
    ("mtcs(iterations=5)", ["unknown bot 'mtcs'", "did you mean 'mcts'?"]),
    ("zzzzzz", ["unknown bot 'zzzzzz'", "built-in bots:", *NAMES]),
    ("greedy(foo=1)", ["greedy: unknown parameter 'foo'", "epsilon", "w_income"]),
    ("random(epsilon=0.1)", ["random: unknown parameter 'epsilon'", "none"]),
    ("mcts(depth=3)", ["mcts: unknown parameter 'depth'", "iterations", "rollout"]),
    ("greedy(epsilon=abc)", ["greedy: epsilon='abc' is not a number"]),
    ("greedy(epsilon=true)", ["epsilon=True is not a number"]),
    ("greedy(epsilon=2)", ["greedy: epsilon=2.0 must be between 0 and 1"]),
    ("mcts(iterations=1.5)", ["mcts: iterations=1.5 must be a whole number"]),
    ("mcts(iterations=0)", ["mcts: iterations=0 must be between 1 and 1000000000"]),
    ("mcts(iterations=1000000000000)",
     ["mcts: iterations=1000000000000 must be between 1 and 1000000000"]),
    ("greedy(placement=loose)", ["placement='loose' is not one of tight, first"]),
    ("mcts(rollout=mcts)", ["rollout='mcts' must be a built-in non-search bot"]),
    ("mcts(rollout=custom_bots:Hoarder)", ["must be a built-in non-search bot"]),
    ("mcts(rollout=gredy)", ["unknown bot 'gredy'"]),
    ("greedy(epsilon)", ["parameter 'epsilon' is not key=value"]),
    ("greedy(epsilon=0.1", ["unbalanced parentheses"]),
    ("", ["non-empty string or mapping"]),
    ({"iterations": 5}, ["has no 'name' key"]),
    ({"name": "mcts", "iterations": "many"}, ["iterations='many' is not a number"]),
    ("no_such_module_xyz:Bot", ["cannot import bot module 'no_such_module_xyz'"]),
    ("custom_bots:Nope", ["module 'custom_bots' has no attribute 'Nope'"]),
    ("custom_bots:Hoarder(colour=3)", ["custom_bots:Hoarder: bad parameters", "colour"]),
    ("custom_bots:NotABot", ["custom_bots:NotABot is not a bot", "choose(game, moves, rng)"]),
    ("custom_bots:not_a_class", ["is not a bot"]),
    (42, ["not a bot spec: 42"]),
])
def test_spec_errors(spec, fragments):
    with pytest.raises(BotSpecError) as info:
        make_bot(spec)
    assert isinstance(info.value, ValueError)
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize(("text", "value"), [("1e-3", 0.001), ("2.5E-2", 0.025),
                                            ("1e0", 1.0), (".5", 0.5)])
def test_spec_accepts_scientific_notation(text, value):
    """YAML 1.1 reads 1e-3 (no dot) as text; spec values must still read it as a number."""
    bot = make_bot(f"greedy(epsilon={text})")
    assert bot.params[scripted.P_EPSILON] == value


@settings(max_examples=60, deadline=None)
@given(epsilon=st.floats(0, 1), w_cost=st.floats(-1e20, 1e20), iterations=st.integers(1, 10**6))
def test_canonical_spec_round_trips_any_value(epsilon, w_cost, iterations):
    """The recorded spec names the same bot: floats such as 1e-05 read back exactly."""
    bot = make_bot({"name": "greedy", "epsilon": epsilon, "w_cost": w_cost})
    again = make_bot(bot.spec)
    assert again.spec == bot.spec and again.params.tolist() == bot.params.tolist()
    search = make_bot(f"mcts(iterations={iterations}, rollout={bot.spec})")
    again = make_bot(search.spec)
    assert again.spec == search.spec and again.params.tolist() == search.params.tolist()


def test_spec_mapping_with_nested_rollout_mapping():
    for spec in ({"name": "mcts", "iterations": 50,
                  "rollout": {"name": "income", "epsilon": 0.2}},
                 yaml.safe_load("{name: mcts, iterations: 50, "
                                "rollout: {name: income, epsilon: 0.2}}")):
        bot = make_bot(spec)
        assert bot.spec == "mcts(iterations=50, rollout=income(epsilon=0.2))"
        assert bot.params.tolist() == make_bot(bot.spec).params.tolist()


def test_spec_of_default_rollout_in_any_order_is_canonical():
    """The same bot has one spec: the default rollout spelled another way is left out."""
    name, params = parse_spec(DEFAULT_ROLLOUT)
    reordered = f"{name}({', '.join(f'{k}={v}' for k, v in reversed(params.items()))})"
    assert reordered != DEFAULT_ROLLOUT
    bot = make_bot(f"mcts(rollout={reordered})")
    assert bot.params.tolist() == make_bot("mcts").params.tolist()
    assert bot.spec == "mcts"


def test_make_bot_passes_bot_objects_through():
    bot = make_bot("greedy")
    assert make_bot(bot) is bot


# --- patchsim bots ----------------------------------------------------------------------------
def test_cli_bots_lists_every_bot_with_description():
    result = CliRunner().invoke(app, ["bots"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for name, description in describe_bots():
        assert any(line.split(" ", 1)[0] == name and description in line for line in lines), \
            name
    assert [n for n, _ in describe_bots()] == list(REGISTRY)
    assert "mypackage.mybots:MyBot" in result.output


def test_cli_bots_shows_each_presets_own_defaults():
    """Each scripted preset lists the weights it really uses (income: w_income=1.6)."""
    result = CliRunner().invoke(app, ["bots"])
    lines = {ln.strip().split(":", 1)[0]: ln for ln in result.output.splitlines()
             if ln.startswith("  ")}
    for name in STRATEGIES:
        bot = make_bot(name)
        for key, value in bot.values.items():
            assert f"{key}={value}" in lines[name], (name, key)


# --- strength smoke tests (edition2, seat-swapped deals, generous margins) --------------------
def wins_over_deals(rs: Ruleset, spec_a: str, spec_b: str, deals: int) -> tuple[int, list]:
    a, b = make_bot(spec_a), make_bot(spec_b)
    wins, results = 0, []
    for seed in range(1000, 1000 + deals):
        circle = deal_circle(rs, seed)
        first = play_game(rs, (a, b), circle, seed)
        second = play_game(rs, (b, a), circle, seed)
        wins += (first.winner == 0) + (second.winner == 1)
        results += [first, second]
    return wins, results


def test_greedy_beats_random(e2):
    wins, _ = wins_over_deals(e2, "greedy", "random", 25)
    assert wins >= 45


@pytest.mark.slow
def test_mcts_beats_greedy(e2):
    wins, _ = wins_over_deals(e2, "mcts(iterations=300)", "greedy", 10)
    assert wins >= 12


def test_greedy_self_play_scores(e2):
    _, results = wins_over_deals(e2, "greedy", "greedy", 25)
    scores = [s for r in results for s in r.scores]
    assert np.mean(scores) > 5
