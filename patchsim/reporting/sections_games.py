"""The report's sections drawn from replayed games: sample final quilts with how well each
bot packs, and the curves over the game with replays.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis.degenerate import (
    COLLAPSE_SCORE,
    OPENING_PASSES,
    PASSING_WAR_PASSES,
    degenerate_games,
)
from patchsim.analysis.packing import packing_table
from patchsim.analysis.selfplay import distinct
from patchsim.analysis.tables import (
    game_events,
    game_moves,
    read_games,
    read_rows,
)
from patchsim.document import format as fm
from patchsim.document.model import Col, Html, Section, Table
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.record import RecordError
from patchsim.engine.render import patch_legend, quilt_labels
from patchsim.play.analyse import ANALYSIS_LINK, DEFAULT_JUDGE
from patchsim.play.runfolder import table_path
from patchsim.reporting import plots
from patchsim.reporting.common import add_figure
from patchsim.reporting.curves import (
    curve_table,
    game_states,
    plot_curves,
    replay_snippet,
    sample_records,
)
from patchsim.reporting.run import Run


def sample_games(run: Run, limit: int = 3) -> list[dict[str, Any]]:
    """Replay one game per ruleset (the first pairing's first deal, first bot in seat 0; the
    same deal under every ruleset) for the quilt pictures."""
    out: list[dict[str, Any]] = []
    g = run.games
    if g.empty:
        return out
    first_pairing = g["pairing"].iloc[0]
    for name in list(dict.fromkeys(g["ruleset"]))[:limit]:
        rs = run.rulesets.get(name)
        sub = g[(g["ruleset"] == name) & (g["pairing"] == first_pairing)]
        if rs is None or sub.empty:
            continue
        row = sub.sort_values(["deal", "order"]).iloc[0]
        try:
            game = Game.new(rs, circle=deal_circle(rs, int(row["deal_seed"])))
            for code in game_moves(table_path(run.run_dir, "games"), int(row["game_id"])):
                game.apply(int(code))
        except Exception:  # noqa: BLE001 - a picture must never stop the report
            continue
        # only this game's events, read from the file (the run's are never all in memory)
        ev = game_events(table_path(run.run_dir, "events"), int(row["game_id"]))
        buys = ev[ev["event"] == "buy"][["seat", "position", "patch"]].to_dict("records")
        leather = (ev[ev["event"] == "leather_claim"].rename(columns={"position": "mark"})
                   [["mark", "seat"]].to_dict("records"))
        out.append({
            "title": (f"{name}: {row['bot0']} (seat 0) vs {row['bot1']} (seat 1), deal "
                      f"{int(row['deal'])}; seat {int(row['winner'])} wins"
                      f"{' on the tie-break' if row['tie_break'] else ''}"),
            "labels": quilt_labels(game), "legend": patch_legend(game), "ruleset": rs,
            "buys": buys, "leather": leather,
            "scores": (int(row["score0"]), int(row["score1"])),
        })
    return out


CURVE_GAMES = 200  # games per ruleset and pairing replayed for the curves


def sample_with_moves(run_dir: Path, per_group: int = CURVE_GAMES,
                      game_ids: np.ndarray | None = None) -> pd.DataFrame:
    """The first ``per_group`` games (by game id) of each ruleset and pairing, with their
    moves, read group by group from games.parquet (never the whole moves column); only
    games in ``game_ids`` if given (the report passes the distinct games, so that a
    deterministic self-play copy is not drawn twice)."""
    path = table_path(run_dir, "games")
    cols = ["game_id", "ruleset", "pairing", "deal_seed", "bot0", "bot1", "moves"]
    # categorical: 2 bytes a game
    keys = read_games(path, columns=["ruleset", "pairing", "game_id"])
    if game_ids is not None:
        keys = keys[keys["game_id"].isin(game_ids).to_numpy()]  # the index stays the row
    # the first games of each group in file order, groups in order of appearance; only the
    # row groups holding them are read (a filtered dataset scan reads ahead through the
    # moves of the whole file: 700 MB for a million games)
    rows = [g.index[:per_group] for _, g in keys.groupby(["ruleset", "pairing"], sort=False,
                                                         observed=True)]
    if not rows:
        return pd.DataFrame(columns=cols)
    return read_rows(path, np.concatenate(rows), cols).to_pandas()


def over_the_game_section(run: Run, distinct: pd.DataFrame | None = None) -> Section | None:
    """Curves over the game per ruleset, bot and seat (mean score, buttons and income by
    time-track position, with bands), and a self-contained replay of a few sample games;
    over the ``distinct`` games if given."""
    if not run.rulesets:
        return None
    s = Section("Over the game", anchor="curves")
    try:
        ids = None if distinct is None else distinct["game_id"].to_numpy()
        games = sample_with_moves(run.run_dir, game_ids=ids)
        states = game_states(games, run.rulesets, per_group=CURVE_GAMES)
        last = {name: rs.last_space for name, rs in run.rulesets.items()}
        curves = curve_table(states, by="position", last_space=last)
    except (OSError, ValueError) as e:
        s.note(f"The curves could not be drawn: {e}")
        return s
    s.p(f"Each seat's mean score, buttons and income by position on the time track, per "
        f"ruleset and bot, over the first {CURVE_GAMES} distinct games of each pairing "
        "(replayed by the engine), with the 95% interval of the mean (shaded) and the "
        "10-90% spread of the games (dotted). Where the curves of the two seats part is "
        "where the game is won.")
    add_figure(s, "curves", plot_curves(curves), "Score, buttons and income over the game, by "
             "seat and bot")
    try:
        snippet = replay_snippet(sample_records(run.run_dir, run.rulesets))
    except (OSError, ValueError, RecordError) as e:
        s.note(f"No sample game could be replayed: {e}")
        return s
    s.p("Sample games, replayed move by move (buttons, the slider, or the arrow keys once a "
        "game has the focus); the replay is part of this file and needs no server.")
    s.add(Html(snippet, "*(The interactive replay is in report.html.)*"))
    return s


def _rate(r: dict[str, Any], m: str) -> str:
    return f"{fm.pct(r[m])} {fm.ci(r[f'{m}_lo'], r[f'{m}_hi'])}"


def _plain(r: dict[str, Any], m: str, digits: int = 1) -> str:
    return fm.est_ci(r[m], r[f"{m}_lo"], r[f"{m}_hi"], digits)


def packing_quality(games: pd.DataFrame) -> Table:
    """How well each bot packs, per ruleset and pairing (``games``: the distinct games):
    its mean final score, 7x7 bonus share and isolated holes at the end, and the games'
    shares that open with a run of passes or are degenerate, with 95% intervals over
    deals."""
    t = packing_table(games)
    several = t["ruleset"].nunique() > 1
    rows = []
    for r in t.to_dict("records"):
        rows.append({"ruleset": r["ruleset"], "pairing": r["pairing"], "bot": r["bot"],
                     "games": fm.integer(r["games"]), "score": _plain(r, "score"),
                     "bonus": _rate(r, "bonus"), "holes": _plain(r, "holes", 2),
                     "opens": _rate(r, "opens_with_passes"),
                     "degenerate": _rate(r, "degenerate")})
    cols = [Col("pairing", "pairing", align="left"), Col("bot", "bot", align="left"),
            Col("games", "games"), Col("score", "mean final score"),
            Col("bonus", "7x7 bonus"), Col("holes", "holes at the end"),
            Col("opens", f"opens with {OPENING_PASSES}+ passes"),
            Col("degenerate", "degenerate games")]
    if several:
        cols.insert(0, Col("ruleset", "ruleset", align="left"))
    note = ("Per bot, over the seats it held: its final score, the share of games in which "
            "it claimed the 7x7 bonus, and the isolated one-square holes it left at the end "
            "(empty squares whose four neighbours are covered or off the quilt: only leather "
            "can fill them; — for a run stored before they were recorded). Per game: it "
            f"opens with {OPENING_PASSES} or more passes in a row by both seats, or it is "
            f"degenerate ({PASSING_WAR_PASSES}+ passes in all, or a seat below "
            f"{COLLAPSE_SCORE} points). 95% intervals over deals.")
    return Table(cols, rows, "How well the bots pack", note)


ANALYSE_DEGENERATE = 3  # degenerate games listed per ruleset and pairing


def analyse_command(run_dir: Path, game_id: int) -> str:
    """The command that prints the analysis of a stored game, move by move."""
    return f"patchsim replay {shlex.quote(str(run_dir))} --game {game_id} --analyse"


def games_to_analyse(run: Run, games: pd.DataFrame) -> Table | None:
    """Per ruleset and pairing of ``games`` (the distinct games): its most lopsided game
    (the largest score margin; ties: the first game) and its first degenerate games (up to
    :data:`ANALYSE_DEGENERATE`), each with the command that analyses it and a link to its
    analysis in the viewer of ``patchsim serve``. None when the table lacks the columns."""
    try:
        flags = degenerate_games(games)
    except KeyError:
        return None
    g = games.assign(degenerate=flags.to_numpy(),
                     margin=(games["score0"] - games["score1"]).abs().to_numpy())
    keys = [k for k in ("ruleset", "pairing") if k in g.columns]
    rows = []
    for _, part in g.groupby(keys, sort=False, observed=True):
        part = part.sort_values("game_id", kind="stable")
        chosen = [("most lopsided", part.loc[part["margin"].idxmax()])]
        degenerate = part[part["degenerate"]]
        chosen += [(f"degenerate ({len(degenerate)} in all)", r)
                   for _, r in degenerate.head(ANALYSE_DEGENERATE).iterrows()]
        for why, r in chosen:
            gid = int(r["game_id"])
            rows.append({"ruleset": str(r["ruleset"]), "pairing": str(r["pairing"]),
                         "why": why, "game": str(gid),
                         "score": f"{int(r['score0'])} : {int(r['score1'])}",
                         "passes": f"{int(r['passes0'])} + {int(r['passes1'])}",
                         "analysis": (f"[in the viewer]({ANALYSIS_LINK.format(game_id=gid)})"
                                      f"\n`{analyse_command(run.run_dir, gid)}`")})
    if not rows:
        return None
    cols = [Col("pairing", "pairing", align="left"), Col("why", "game", align="left"),
            Col("game", "id"), Col("score", "score (seat 0 : seat 1)"),
            Col("passes", "passes (seat 0 + seat 1)"), Col("analysis", "analysis",
                                                           align="left")]
    if g["ruleset"].nunique() > 1:
        cols.insert(0, Col("ruleset", "ruleset", align="left"))
    note = ("Each game as the strongest level sees it, move by move: the win probability "
            f"each move lost against the judge's own choice (by default {DEFAULT_JUDGE}), "
            "the moves that lost most marked. The viewer's link works in "
            "`patchsim serve` (which serves this report); the command works anywhere. "
            f"Degenerate: {PASSING_WAR_PASSES}+ passes in all, or a seat below "
            f"{COLLAPSE_SCORE} points.")
    return Table(cols, rows, "Games to analyse: the most lopsided and the degenerate ones",
                 note)


def quilts_section(run: Run) -> Section:
    s = Section("Sample final quilts", anchor="quilts")
    if not run.games.empty:
        # the deterministic self-play copies count once, as in every other table
        distinct_games = distinct(run.games)
        s.table(packing_quality(distinct_games))
        to_analyse = games_to_analyse(run, distinct_games)
        if to_analyse is not None:
            s.table(to_analyse)
    samples = sample_games(run)
    if not samples:
        s.note("No game could be replayed for a picture (the manifest has no rules data).")
        return s
    add_figure(s, "quilts", plots.quilt_pictures(samples),
             "Final quilts of one deal (under each ruleset): patches coloured by id, leather "
             "brown with an L, empty squares white; below, the time track.")
    return s


