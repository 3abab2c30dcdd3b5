"""Analysis of a game: every move as a strong player (the *judge*) sees it.

For each position of a game the judge gives:

- its own choice there (``best``): the move the judge's bot plays from that position, drawn
  with a stream seeded by the analysis seed and the ply, so an analysis repeats;
- the candidates: pass (when legal), for each offered patch the player can pay for its best
  placement, the judge's choice and the move played;
- each candidate's value: the win probability, for the player to move, of the position the
  candidate leads to;
- the win probability the move played lost against the judge's choice,
  ``loss = max(0, value(best) - value(played))``, and a mark on the moves that lost most
  (:data:`MISTAKE` and :data:`BLUNDER`).

Values, by the kind of judge:

- the learned searches (``mcts(eval=learned|pack|net)``): the judge's own search from the
  position after the candidate (one call of the compiled search,
  :func:`patchsim.bots.features.learned_root`, the same iterations as the judge plays with),
  read as the mean value of the child it visited most, for whoever moves there; the best
  placement of a patch is the one the judge's search at the position visited most;
- any other bot: the evaluation of the game viewer's curve
  (:func:`patchsim.play.evaluate.evaluate_game`: the ruleset's learned model where there is
  one, else rollouts), and the best placement of a patch is the searches' ranking (contact).

A judge's choice is by its own rule (a search's by visits), a value by a search of the
position after each candidate, so another candidate may be valued a little above the choice;
the move played then loses nothing (the loss is never below 0). A move that is the judge's
own choice loses exactly 0: a game between deterministic bots, analysed by one of them, shows
that bot's every move as the best.

Time is bounded per position: each search runs the judge's own budget (its ``iterations``,
or ``time_ms``), and a position asks for at most one choice, one search of the position and
one per candidate (pass, the offer, the choice, the move played). ``stop`` is asked before
each; :class:`~patchsim.play.evaluate.EvaluationStopped` when it says True.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis.tables import game_moves, read_games
from patchsim.bots.features import LEARNED, learned_root
from patchsim.bots.heuristics import top_placements
from patchsim.bots.learned import ModelError, bind_bot, find_model
from patchsim.bots.registry import Bot, BotSpecError, CompiledBot, make_bot
from patchsim.bots.tree import play_macro
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game, decode_move, rules_reference
from patchsim.engine.record import GameRecord, RecordError
from patchsim.errors import PatchsimError
from patchsim.play.evaluate import EvaluationStopped, evaluate_game
from patchsim.play.runfolder import RunFolder, inspect_run

# The judge by default: the learned search at the main job's strength (its line-up plays
# mcts(eval=learned, iterations=100, ...), play.config.DEFAULT_BOTS_LEARNED), without the
# opening sampling it uses for diverse self-play (an analysis must repeat); for a ruleset
# with no trained model, the rollout search of the fallback line-up.
DEFAULT_JUDGE = "mcts(eval=learned, iterations=100)"
FALLBACK_JUDGE = "mcts(iterations=200)"
# Marks: a move that lost at least MISTAKE of win probability against the judge's choice is
# a mistake ("?"), at least BLUNDER a blunder ("??"). A tenth of a game is what separates a
# clear favourite from an even game; a quarter turns a likely win into a likely loss.
MISTAKE = 0.10
BLUNDER = 0.25
MARKS = {"": "no mark", "?": f"mistake (lost {MISTAKE:.2f} or more)",
         "??": f"blunder (lost {BLUNDER:.2f} or more)"}
LARGEST = 3  # the largest mistakes a seat's summary lists
ROLLOUTS = 100  # rollouts per candidate when the values come from rollouts
# Where ``patchsim serve`` answers with the viewer (and analysis) of a stored game, relative
# to the run folder's files (a run's report.html is served at /files/<run>/report.html):
# the report links its games to their analysis by it
ANALYSIS_LINK = "game-analysis/{game_id}"
TABLE_COLUMNS = ("number", "ply", "seat", "played", "played_value", "best", "best_value",
                 "loss", "mark")


@dataclass(frozen=True)
class Candidate:
    """A move the judge weighed: its record text, core code and value (the win probability
    of the player to move after it), and whether it was played and is the judge's choice."""

    move: str
    code: int
    value: float
    played: bool = False
    best: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"move": self.move, "value": self.value, "played": self.played,
                "best": self.best}


@dataclass(frozen=True)
class PositionAnalysis:
    """One position: whose turn (``seat``), the candidates (best first by value), the
    judge's choice and, when a move was played from here, that move and what it lost."""

    ply: int
    seat: int
    candidates: tuple[Candidate, ...]
    best: Candidate
    played: Candidate | None = None

    @property
    def loss(self) -> float | None:
        if self.played is None:
            return None
        return max(0.0, self.best.value - self.played.value)

    @property
    def mark(self) -> str:
        return mark_of(self.loss)

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.ply + 1, "ply": self.ply, "seat": self.seat,
                "played": self.played.move if self.played else None,
                "played_value": self.played.value if self.played else None,
                "best": self.best.move, "best_value": self.best.value, "loss": self.loss,
                "mark": self.mark, "candidates": [c.to_dict() for c in self.candidates]}


def mark_of(loss: float | None) -> str:
    """The mark of a move that lost ``loss`` (``""``, ``"?"`` or ``"??"``)."""
    if loss is None or loss < MISTAKE:
        return ""
    return "??" if loss >= BLUNDER else "?"


@dataclass(frozen=True)
class GameAnalysis:
    """A game's analysis: one :class:`PositionAnalysis` per move played, the judge's spec,
    the seed and how the values were got."""

    judge: str
    seed: int
    method: str
    positions: tuple[PositionAnalysis, ...]

    def table(self) -> pd.DataFrame:
        """One row per move (:data:`TABLE_COLUMNS`): move number, ply, seat, the move
        played and its value, the judge's choice and its value, the loss and the mark."""
        rows = [[p.ply + 1, p.ply, p.seat, p.played.move if p.played else None,
                 p.played.value if p.played else math.nan, p.best.move, p.best.value,
                 p.loss, p.mark] for p in self.positions]
        return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))

    def summary(self) -> list[dict[str, Any]]:
        """Per seat: see :func:`seat_summary` (computed from :meth:`table`)."""
        return seat_summary(self.table())

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "seed": self.seed, "method": self.method,
                "thresholds": {"mistake": MISTAKE, "blunder": BLUNDER},
                "moves": [p.to_dict() for p in self.positions], "summary": self.summary()}


def seat_summary(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Per seat (0 and 1) from a per-move table (:meth:`GameAnalysis.table`): its moves,
    mean and total loss, how many mistakes and blunders, and its largest losses (up to
    :data:`LARGEST` moves with a mark, largest first; ties: the earlier move)."""
    out = []
    for seat in (0, 1):
        mine = table[table["seat"] == seat]
        losses = mine["loss"].astype(float)
        marked = mine[mine["mark"] != ""].sort_values(["loss", "number"],
                                                      ascending=[False, True], kind="stable")
        out.append({"seat": seat, "moves": len(mine),
                    "mean_loss": float(losses.mean()) if len(mine) else 0.0,
                    "total_loss": float(losses.sum()),
                    "mistakes": int((mine["mark"] == "?").sum()),
                    "blunders": int((mine["mark"] == "??").sum()),
                    "largest": [{"number": int(r.number), "played": r.played, "best": r.best,
                                 "loss": float(r.loss)}
                                for r in marked.head(LARGEST).itertuples()]})
    return out


# --- the judge --------------------------------------------------------------------------------
def judge_spec(game: Game) -> str:
    """The default judge for ``game``'s ruleset: :data:`DEFAULT_JUDGE` where the ruleset has a
    trained model, else :data:`FALLBACK_JUDGE`."""
    try:
        find_model(game.ruleset)
    except ModelError:
        return FALLBACK_JUDGE
    return DEFAULT_JUDGE


def make_judge(spec: str | Bot | None, game: Game) -> Bot:
    """The judge ``spec`` names (None: :func:`judge_spec`), ready for ``game``'s ruleset;
    BotSpecError for a bad spec or a learned judge with no model for the ruleset."""
    bot = make_bot(judge_spec(game) if spec is None else spec)
    return bind_bot(bot, game.ruleset)


def _is_learned(bot: Bot) -> bool:
    return isinstance(bot, CompiledBot) and bot.kind == LEARNED


def method_of(bot: Bot) -> str:
    """How an analysis by ``bot`` gets its values, in words."""
    if _is_learned(bot):
        return (f"win probability of the player to move after each candidate, by "
                f"{bot.spec}'s own search from that position")
    return (f"win probability of the player to move after each candidate, by the viewer's "
            f"evaluation (the ruleset's learned model where there is one, else {ROLLOUTS} "
            f"rollouts); {bot.spec} chooses the best move")


def _stream(seed: int, ply: int) -> np.ndarray:
    return np.random.SeedSequence([seed, ply]).generate_state(1, dtype=np.uint64)


def _choice(bot: Bot, game: Game, seed: int) -> int:
    """The judge's move at ``game`` (seeded by the seed and the ply)."""
    if isinstance(bot, CompiledBot):
        return int(bot.choose_code(game, _stream(seed, game.ply)))
    rng = np.random.default_rng([seed, game.ply])
    move = bot.choose(game.copy(), game.legal_moves(), rng)
    return int(move) if isinstance(move, int | np.integer) else int(move.code)


def _most_visited(moves: np.ndarray, visits: np.ndarray, means: np.ndarray,
                  keep: np.ndarray | None = None) -> int:
    """The index of the most visited root child (ties: the better mean) among ``keep``."""
    best = -1
    for i in range(len(moves)):
        if keep is not None and not keep[i]:
            continue
        if best < 0 or (visits[i], means[i]) > (visits[best], means[best]):
            best = i
    return best


def _search_value(bot: CompiledBot, state: np.ndarray, tab: np.ndarray, me: int) -> float:
    """``me``'s win probability at ``state`` by the learned judge's search (leather pending
    is placed by the searches' leather heuristic first, as inside the search)."""
    if core.is_finished(state, tab):
        return 1.0 if int(core.winner(state, tab)) == me else 0.0
    mover = int(core.to_move(state, tab))
    moves, visits, means = learned_root(bot.params, state, tab)
    v = float(means[_most_visited(moves, visits, means)])
    return v if mover == me else 1.0 - v


def _clip(v: float) -> float:
    return min(1.0, max(0.0, float(v)))


class _Valuer:
    """Values of the positions after candidate moves, for the player to move before them."""

    def __init__(self, bot: Bot, seed: int, stop: Callable[[], bool] | None) -> None:
        self.bot, self.seed, self.stop = bot, seed, stop
        self.learned = _is_learned(bot)

    def check(self) -> None:
        if self.stop is not None and self.stop():
            raise EvaluationStopped("the analysis was stopped")

    def after(self, game: Game, code: int) -> float:
        me = int(core.to_move(game.state, game.tab))
        self.check()
        if self.learned:
            assert isinstance(self.bot, CompiledBot)
            state = game.state.copy()
            play_macro(state, game.tab, code)
            return _clip(_search_value(self.bot, state, game.tab, me))
        child = game.copy()
        child.apply(code)
        row = evaluate_game(child, (), n_rollouts=ROLLOUTS, seed=self.seed,
                            stop=self.stop).iloc[0]
        win0 = float(row["win0"])
        return _clip(win0 if me == 0 else 1.0 - win0)

    def placements(self, game: Game) -> list[int]:
        """Pass (when legal) and the best placement of each affordable offered patch."""
        state, tab = game.state, game.tab
        if self.learned:
            assert isinstance(self.bot, CompiledBot)
            self.check()
            moves, visits, means = learned_root(self.bot.params, state, tab)
            patches = [decode_move(int(m), game.tables).patch for m in moves]
            out = []
            for patch in dict.fromkeys(patches):  # each patch once, in the search's order
                keep = np.array([p == patch for p in patches])
                out.append(int(moves[_most_visited(moves, visits, means, keep)]))
            return out
        buf = np.empty(1 + tab[core.T_OFFER], dtype=np.int64)
        n = top_placements(state, tab, buf, 1, 1.0, 0.0, 0.0, -1)
        return [int(c) for c in buf[:n]]


def analyse_position(game: Game, judge: Bot, played: int | None = None, seed: int = 0,
                     stop: Callable[[], bool] | None = None) -> PositionAnalysis:
    """The judge's view of ``game``'s position (not finished): its choice, the candidates
    with their values, and, given ``played`` (a legal move code), that move and its loss.
    ``game`` is unchanged. ValueError for a finished game or an illegal ``played``."""
    if game.finished:
        raise ValueError("the game is over: there is no move to analyse")
    if played is not None and game.legality(played) is not None:
        raise ValueError(f"move {game.ply + 1} ({game.illegal_reason(played)}) is illegal")
    valuer = _Valuer(judge, seed, stop)
    valuer.check()
    best = _choice(judge, game, seed)
    if game.legality(best) is not None:  # a bot of the user's may do this; say which
        raise BotSpecError(f"the judge {getattr(judge, 'spec', judge)} chose an illegal move "
                           f"at move {game.ply + 1}: {game.illegal_reason(best)}")
    codes: list[int] = []
    if not game.pending_leather:
        by_patch = {decode_move(c, game.tables).patch: c for c in valuer.placements(game)}
        # the judge's own placement stands for its patch
        by_patch[decode_move(best, game.tables).patch] = best
        codes = list(by_patch.values())
    for extra in (best, played):
        if extra is not None and extra not in codes:
            codes.append(extra)
    cands = [Candidate(str(decode_move(c, game.tables)), c, valuer.after(game, c),
                       played=c == played, best=c == best) for c in codes]
    cands.sort(key=lambda c: (-c.value, not c.best, c.move))
    by_code = {c.code: c for c in cands}
    return PositionAnalysis(game.ply, int(core.to_move(game.state, game.tab)), tuple(cands),
                            by_code[best], by_code[played] if played is not None else None)


def analyse_game(start: Game, codes: Iterable[int], judge: str | Bot | None = None,
                 seed: int = 0, stop: Callable[[], bool] | None = None,
                 progress: Callable[[int], None] | None = None) -> GameAnalysis:
    """Analyse every move of the game from ``start`` through ``codes`` (move codes, played
    on a copy; an illegal one raises IllegalMoveError) by ``judge`` (a spec, a bot, or None
    for :func:`judge_spec`). ``progress(n)`` is told after each move analysed."""
    bot = make_judge(judge, start)
    game = start.copy()
    positions = []
    for code in codes:
        code = int(code)
        if game.legality(code) is not None:
            game.apply(code)  # raises the engine's IllegalMoveError, naming the move
        positions.append(analyse_position(game, bot, code, seed, stop))
        game.apply(code)
        if progress is not None:
            progress(len(positions))
    return GameAnalysis(bot.spec, seed, method_of(bot), tuple(positions))


def record_codes(record: GameRecord, allowed_roots: Sequence[str | os.PathLike[str]] | None
                 = None) -> tuple[Game, list[int]]:
    """A record's start position and its moves as codes; RecordError naming the move
    number, its text and why, for a malformed or illegal move. ``allowed_roots``: the
    folders a rules file the record names may be in (:meth:`GameRecord.start`)."""
    start = record.start(allowed_roots)
    game = start.copy()
    codes = []
    for i, text in enumerate(record.moves, start=1):
        try:
            move = game.parse_move(text)
            game.apply(move)
        except ValueError as e:  # IllegalMoveError is a ValueError too
            raise RecordError(f"{record.source}: move {i} ({text!r}): {e}", i) from None
        codes.append(move.code)
    return start, codes


class StoredGameError(PatchsimError, ValueError):
    """A game id that a run folder does not hold."""


def stored_record(run_dir: str | Path, game_id: int) -> GameRecord:
    """The record of game ``game_id`` of a finished run folder (its rules, its deal's circle
    and its moves, replayed by the engine), with the bots as its players. RunFolderError
    for a folder that is not a finished run, StoredGameError for an id it does not hold."""
    head = inspect_run(run_dir, verify_tables=False)
    folder = RunFolder(head.run_dir, head)
    games = read_games(folder.games_path, columns=["game_id", "ruleset", "deal_seed", "bot0",
                                              "bot1"])
    rows = games[games["game_id"] == int(game_id)]
    if rows.empty:
        ids = games["game_id"]
        span = f" (its games are {ids.min()} to {ids.max()})" if len(ids) else ""
        raise StoredGameError(f"{head.run_dir}: no game {game_id}{span}")
    row = rows.iloc[0]
    rs = head.rulesets[str(row["ruleset"])]
    game = Game.new(rs, circle=deal_circle(rs, int(row["deal_seed"])))
    for code in game_moves(folder.games_path, int(game_id)):
        game.apply(int(code))
    data = {**game.record(rules_reference(rs)), "players": [str(row["bot0"]), str(row["bot1"])]}
    return GameRecord.from_dict(data, f"{head.run_dir} game {game_id}")


def analyse_record(record: GameRecord | dict, judge: str | Bot | None = None, seed: int = 0,
                   stop: Callable[[], bool] | None = None,
                   progress: Callable[[int], None] | None = None) -> GameAnalysis:
    """:func:`analyse_game` over a game record; RecordError if the record does not load or
    a move is malformed or illegal, BotSpecError for a bad judge."""
    rec = record if isinstance(record, GameRecord) else GameRecord.from_dict(record)
    start, codes = record_codes(rec)
    return analyse_game(start, codes, judge, seed, stop, progress)


def analysis_text(analysis: GameAnalysis) -> str:
    """The analysis as a readable table (one line per move: number, seat, the move played
    and its value, the judge's choice and its value, the loss, the mark) and the per-seat
    summary below it. Values are the mover's win probability, in percent."""
    table = analysis.table()

    def pct(v: float) -> str:
        return "" if v is None or math.isnan(v) else f"{100 * v:5.1f}"

    played_w = max([6, *(len(str(m)) for m in table["played"])])
    best_w = max([4, *(len(str(m)) for m in table["best"])])
    lines = [f"judge: {analysis.judge} (seed {analysis.seed}); {analysis.method}",
             f"marks: ? a mistake (lost {100 * MISTAKE:.0f} points of win probability or "
             f"more), ?? a blunder ({100 * BLUNDER:.0f} or more)", "",
             f"{'move':>4}  seat  {'played':<{played_w}}  {'win%':>5}  {'best':<{best_w}}  "
             f"{'win%':>5}  {'loss':>5}  mark"]
    for r in table.itertuples():
        same = r.played == r.best
        lines.append(f"{r.number:>4}  {r.seat:>4}  {r.played:<{played_w}}  "
                     f"{pct(r.played_value):>5}  {'(same)' if same else r.best:<{best_w}}  "
                     f"{pct(r.best_value):>5}  {pct(r.loss):>5}  {r.mark}".rstrip())
    lines.append("")
    for s in seat_summary(table):
        worst = ", ".join(f"move {m['number']} ({m['played']}: -{100 * m['loss']:.1f}, best "
                          f"{m['best']})" for m in s["largest"]) or "none marked"
        lines.append(f"seat {s['seat']}: {s['moves']} moves, mean loss "
                     f"{100 * s['mean_loss']:.1f} points of win probability (total "
                     f"{100 * s['total_loss']:.1f}), {s['mistakes']} mistake(s), "
                     f"{s['blunders']} blunder(s); largest: {worst}")
    return "\n".join(lines)


__all__ = ["ANALYSIS_LINK", "BLUNDER", "DEFAULT_JUDGE", "FALLBACK_JUDGE", "MISTAKE", "BotSpecError",
           "Candidate", "GameAnalysis", "PositionAnalysis", "analyse_game",
           "analyse_position", "analyse_record", "analysis_text", "judge_spec", "make_judge",
           "mark_of", "record_codes", "seat_summary", "stored_record"]
