"""The ruleset contract as a library function: :func:`check_ruleset` tells whether a ruleset
is one the engine can play, and what is wrong if not.

A ruleset loaded from a file has passed validation already; a :class:`Ruleset` built in code
(``dataclasses.replace``, a generator of variants) has not. The check validates it again
through its own file form, compiles it, deals it and plays a few random games through the
move-by-move API, checking after every move the invariants every game keeps (the token behind
moves, tokens never go back, buttons never go negative, the quilt covers what was bought),
that the listed moves are exactly the legal ones, and that each game's record replays to
the same end. The report's types (:class:`ContractReport`, :class:`Problem`) are shared
with the bot contract (:func:`patchsim.bots.contract.check_bot`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game, decode_move, rules_reference
from patchsim.engine.record import GameRecord, final_position
from patchsim.engine.ruleset import Ruleset, RulesetError, load_ruleset, ruleset_from_dict
from patchsim.engine.tables import compile_ruleset


@dataclass(frozen=True)
class Problem:
    """One broken rule of a contract: which check, what is wrong and where (one paragraph),
    and when a game shows it, the record of that game up to the problem (it replays with
    :func:`patchsim.engine.record.final_position`)."""

    check: str
    message: str
    record: dict[str, Any] | None = None


@dataclass
class ContractReport:
    """What :func:`check_ruleset` or :func:`patchsim.bots.contract.check_bot` found:
    ``ok`` when no check failed; ``str(report)`` says what was checked and each problem."""

    subject: str  # "ruleset 'edition2'", "bot 'greedy'"
    checks: list[str] = field(default_factory=list)  # what was checked, in order
    problems: list[Problem] = field(default_factory=list)
    games: int = 0  # games played

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, check: str, message: str, record: dict[str, Any] | None = None) -> None:
        self.problems.append(Problem(check, message, record))

    def __str__(self) -> str:
        done = f"{', '.join(self.checks)}; {self.games} game(s)"
        if self.ok:
            return f"{self.subject} keeps its contract ({done})."
        lines = [f"{self.subject} breaks its contract ({len(self.problems)} problem(s); "
                 f"checked {done}):"]
        lines += [f"- {p.check}: {p.message}" for p in self.problems]
        return "\n".join(lines)

    def raise_for_problems(self) -> None:
        """Raise :class:`ContractError` carrying this report unless it is ok."""
        if not self.ok:
            raise ContractError(self)


class ContractError(ValueError):
    """A ruleset or bot broke its contract; ``report`` holds every problem found."""

    def __init__(self, report: ContractReport) -> None:
        super().__init__(str(report))
        self.report = report

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.report,))


GAMES = 3  # random games a check plays by default: quick, and every rule fires in each


def check_ruleset(ruleset: Ruleset | str, *, games: int = GAMES, seed: int = 0,
                  ) -> ContractReport:
    """Check that ``ruleset`` (a Ruleset, or a name or path for :func:`load_ruleset`) is one
    the engine plays correctly: it validates (through its file form, which also catches a
    Ruleset built in code with impossible values), every patch fits the quilt somewhere,
    deals are permutations of the patches, and ``games`` random games (seeds ``seed``,
    ``seed + 1``, ...) keep the game's invariants move by move and replay from their records.
    Returns the report (:meth:`ContractReport.raise_for_problems` raises it); a file that
    does not load raises its RulesetError as loading does."""
    rs = ruleset if isinstance(ruleset, Ruleset) else load_ruleset(ruleset)
    report = ContractReport(f"ruleset {rs.name!r}")
    report.checks.append("validation")
    try:
        again = ruleset_from_dict(rs.to_dict(), source=f"<Ruleset {rs.name!r} as given>")
    except RulesetError as e:
        report.add("validation", f"it does not pass validation: {e}")
        return report  # the engine's checks assume a valid ruleset
    if again.content_hash() != rs.content_hash():
        report.add("validation", "its file form reads back as other rules (content hash "
                   f"{again.content_hash()}, not {rs.content_hash()}): a value the file "
                   "format cannot hold")
    report.checks.append("tables")
    tables = compile_ruleset(rs)
    for i, patch in enumerate(rs.patches):
        if not tables.placement_lookup[i]:
            report.add("tables", f"patch {patch.id} fits nowhere on the {rs.rows}x{rs.cols} "
                       "quilt (no placement)")
    if not report.ok:
        return report
    report.checks.append("deals")
    ids = sorted(p.id for p in rs.patches)
    for s in range(seed, seed + games):
        circle = deal_circle(rs, s)
        if sorted(circle) != ids or deal_circle(rs, s) != circle:
            report.add("deals", f"the deal with seed {s} is not the same permutation of the "
                       f"patches each time ({', '.join(circle)})")
            return report
    report.checks.append("invariants")
    report.checks.append("records")
    for s in range(seed, seed + games):
        _check_game(rs, s, report)
        report.games += 1
        if not report.ok:
            break
    return report


def _check_game(rs: Ruleset, seed: int, report: ContractReport) -> None:
    """One random game of ``rs`` (deal and moves from ``seed``), checked move by move."""
    rng = np.random.default_rng(seed)
    game = Game.new(rs, circle=deal_circle(rs, seed))
    sizes = {p.id: p.size for p in rs.patches}
    bound = 2 * rs.last_space + len(rs.patches) + len(rs.leather_marks)
    covered = [0, 0]
    bought: set[str] = set()
    top = 0  # whose token is on top of a shared space

    def fail(what: str) -> None:
        report.add("invariants", f"random game with seed {seed}, move {game.ply + 1}: {what}",
                   {"rules": rules_reference(rs), "circle": list(game.circle),
                    "moves": game.move_texts()})

    try:
        while not game.finished:
            p = game.to_move
            if p is None:
                return fail("the game is not over, but nobody is to move")
            if game.ply > bound:
                return fail(f"the game has lasted over {bound} moves (two per space of the "
                            "track, one per patch and leather mark)")
            before = (game.position(0), game.position(1))
            if game.pending_leather == 0:
                expected = top if before[0] == before[1] else int(np.argmin(before))
                if p != expected:
                    return fail(f"player {p} is to move, but the rules give the turn to "
                                f"player {expected} (positions {before[0]} and {before[1]})")
            moves = game.legal_moves()
            if len(moves) != game.legal_move_count() or len(moves) == 0:
                return fail(f"{len(moves)} moves are listed but {game.legal_move_count()} "
                            "are counted (a game that is not over has at least one)")
            for code in moves.codes.tolist():  # codes: no Move objects, quick on big quilts
                why = game.illegal_reason(code)
                if why is not None:
                    return fail(f"the listed move {decode_move(code, game.tables)} is refused "
                                f"as illegal ({why})")
            move = moves[int(rng.integers(len(moves)))]
            offer = game.offer
            game.apply(move)
            if move.kind == "buy":
                if move.patch not in offer or move.patch in bought:
                    return fail(f"{move} buys a patch that is not on offer ({offer})")
                bought.add(move.patch)
                covered[p] += sizes[move.patch]
            elif move.kind == "leather":
                covered[p] += 1
            after = (game.position(0), game.position(1))
            if after[p] < before[p] or after[1 - p] != before[1 - p]:
                return fail(f"{move} moved the tokens from {before} to {after}")
            if after[p] > before[p] and after[p] == after[1 - p]:
                top = p
            if game.pending_leather and game.to_move != p:
                return fail("a claimed leather patch is not placed at once by its claimer")
            for q in (0, 1):
                if game.buttons(q) < 0 or game.position(q) > rs.last_space:
                    return fail(f"player {q} has {game.buttons(q)} buttons on space "
                                f"{game.position(q)} of {rs.last_space}")
                squares = rs.rows * rs.cols - game.empty_squares(q)
                if squares != covered[q] or bin(game.quilt_mask(q)).count("1") != covered[q]:
                    return fail(f"player {q}'s quilt covers {squares} squares, but "
                                f"{covered[q]} were placed")
        ends = (game.position(0), game.position(1))
        if ends != (rs.last_space, rs.last_space) or game.winner not in (0, 1):
            return fail(f"the game ended with the tokens on {ends} (not both on "
                        f"{rs.last_space}) or without a winner ({game.winner})")
        if set(game.remaining) != {p.id for p in rs.patches} - bought:
            return fail("the patches left are not the ones nobody bought")
        record = game.record()
        replayed = final_position(GameRecord.from_json(json.dumps(record)))
        if replayed.summary() != game.summary() or replayed.history != game.history:
            report.add("records", f"the record of the random game with seed {seed} replays "
                       "to another end", record)
    except Exception as e:  # noqa: BLE001 - the report says what failed, and where
        fail(f"{type(e).__name__}: {e}")
