"""How a skill trace plays its parts (:mod:`patchsim.experiments.skill`): every level's
self-play and every step's duel on the same deals, in memory, through a scratch run folder
(time budgets), or into a run folder per part that grows by a step at a time (a trace until
decided, which a rerun resumes), and the per-level tables they give."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from patchsim.analysis import skill as sk
from patchsim.engine.ruleset import Ruleset
from patchsim.play.config import PairingMode, RunError, load_run_config
from patchsim.play.execution import execute
from patchsim.play.runfolder import MANIFEST, load_events, load_games, read_manifest
from patchsim.play.simulate import simulate

GAME_ID_STRIDE = 10**12  # game ids of one part of the trace: far below this


class SkillError(ValueError):
    """A skill trace that cannot be run as asked (a bad level, bot or method). The message
    starts with the parameter's name (``levels:``, ``search:``...), which the CLI maps to
    its flag."""



@dataclass
class Ladder:
    level_deals: pd.DataFrame
    duel_deals: pd.DataFrame
    levels_table: pd.DataFrame
    duels_table: pd.DataFrame
    verdict: sk.ConvergenceVerdict | None


def ladder_tables(player: Player, specs: list[str], budgets: list[float | None], deals: int,
            metric: str, margin: float, n0: int | None) -> Ladder:
    """Every level's self-play and every step's duel at ``deals`` deals, and their tables."""
    selfs = [player.play([spec], "self", f"level {i} self-play", deals)
             for i, spec in enumerate(specs)]
    duels = [player.play([specs[i], specs[i - 1]], "cross",
                         f"level {i} against level {i - 1}", deals)[0]
             for i in range(1, len(specs))]
    self_games = pd.concat([g for g, _ in selfs], ignore_index=True)
    ld = sk.level_deals(self_games, pd.concat([e for _, e in selfs], ignore_index=True),
                        specs)
    dd = (sk.duel_deals(pd.concat(duels, ignore_index=True), specs) if duels
          else sk.duel_deals(self_games.iloc[:0], specs))
    counts = [player.played.get(f"level {i} self-play", 0) for i in range(len(specs))]
    secs = [player.seconds.get(f"level {i} self-play", 0.0) for i in range(len(specs))]
    lt = sk.level_table(ld, specs, secs, counts)
    dt = sk.duel_table(dd, specs, budgets)
    verdict = (sk.convergence_verdict(ld, metric, margin, duels=dd, budgets=budgets, n0=n0)
               if len(specs) >= 2 else None)
    return Ladder(ld, dd, lt, dt, verdict)


class Player:
    """Plays the trace's parts, each on the same deals (one seed): in memory (a trace of
    fixed size), through a scratch run folder (time budgets: the in-memory runner refuses
    them, such games depend on the machine and a run's manifest records that), or into a
    run folder per part under ``work`` (a trace until decided: each step tops the parts
    up, and a rerun resumes from what they hold). Game ids are made unique across the
    parts; ``played`` and ``seconds`` count this session's games and time per part."""

    def __init__(self, rs: Ruleset, *, seed: int, jobs: int, bot_path: Sequence[str],
                 timed: bool, work: Path | None, say: Callable[[str], None]) -> None:
        self.rs, self.seed, self.jobs, self.bot_path = rs, seed, jobs, tuple(bot_path)
        self.timed, self.work, self.say = timed, work, say
        self.index: dict[str, int] = {}
        self.games: dict[str, pd.DataFrame] = {}
        self.played: dict[str, int] = {}
        self.seconds: dict[str, float] = {}

    def play(self, bots: list[str], pairings: PairingMode, what: str, deals: int
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
        k = self.index.setdefault(what, len(self.index))
        if self.work is not None:
            games, evs, secs, played = self._top_up(self.work / f"part-{k:02d}", bots,
                                                    pairings, deals)
        elif self.timed:
            with tempfile.TemporaryDirectory(prefix="patchsim-skill-") as folder:
                games, evs, secs, played = self._top_up(Path(folder) / "run", bots,
                                                        pairings, deals)
        else:
            sim = simulate(self.rs, bots, pairings=pairings, games=2 * deals, seed=self.seed,
                           jobs=self.jobs, bot_path=self.bot_path)
            games, evs, secs, played = sim.games, sim.events, sim.seconds, len(sim.games)
        self.played[what] = self.played.get(what, 0) + played
        self.seconds[what] = self.seconds.get(what, 0.0) + secs
        if played:
            self.say(f"{what}: {played} games in {secs:.1f} s")
        offset = k * GAME_ID_STRIDE  # game ids restart in every part
        g = games.assign(part=what, game_id=games["game_id"] + offset)
        self.games[what] = g
        return g, evs.assign(game_id=evs["game_id"] + offset)

    def _top_up(self, folder: Path, bots: list[str], pairings: PairingMode, deals: int
                ) -> tuple[pd.DataFrame, pd.DataFrame, float, int]:
        """The part's games on its first ``deals`` deals, played into ``folder`` as far as
        it does not hold them yet."""
        stored = read_manifest(folder)[1].deals if (folder / MANIFEST).exists() else 0
        secs, played = 0.0, 0
        if stored < deals:
            try:
                cfg = load_run_config("edition2", games=2 * deals, bots=bots, seed=self.seed,
                                      pairings=pairings, bot_path=self.bot_path,
                                      allow_time_budgets=self.timed)
            except RunError as e:
                raise SkillError(f"search: {e}") from None
            # the line-up is checked on a stand-in ruleset, then plays this one
            cfg = dataclasses.replace(cfg, rulesets=[self.rs], name=f"{self.rs.name}-skill")
            res = execute(cfg, folder, jobs=self.jobs, keep_batches=self.work is not None,
                          command="patchsim skill" + (" --timed" if self.timed else ""))
            secs, played = res.seconds, res.played
        games, evs = load_games(folder), load_events(folder)
        if stored > deals:  # a look already played: read it off the first deals
            games = games[games["deal"] < deals]
            evs = evs[evs["game_id"].isin(games["game_id"])]
        return games, evs, secs, played

    def all_games(self) -> pd.DataFrame:
        return pd.concat(list(self.games.values()), ignore_index=True)
