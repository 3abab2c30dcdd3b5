"""Curves over the game, and a self-contained replay of a few games for the report.

- :func:`game_states` replays stored games (the ``moves`` column of games.parquet) through the
  engine and keeps each seat's track position, buttons, income and score (as if the game ended
  then) after every move.
- :func:`curve_table` turns those states into curves per ruleset, bot (the skill level) and
  seat: by time-track position (the seat's numbers when its token stood at that space) or by
  move, with the mean, a 95% interval of the mean and the 10-90% spread of the games.
- :func:`plot_curves` draws them (a matplotlib Figure; nothing is shown, no backend is set).
- :func:`replay_snippet` returns an HTML fragment that replays a few game records with
  buttons, a slider and the arrow keys, all data and code inline: it works in a report opened
  from disk, with no server and no network. The positions in it are the engine's (computed
  here in Python); the script only draws them. :func:`sample_records` picks the games.

Wiring into a run report (``rulesets``: ruleset name -> Ruleset, as the report's
``Run.rulesets``)::

    games = pd.read_parquet(runfolder.table_path(run_dir, "games"))  # with the moves column
    states = game_states(games, rulesets)
    figure = plot_curves(curve_table(states, by="position"))
    fragment = replay_snippet(sample_records(run_dir, rulesets))  # raw HTML, inline
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from patchsim.analysis.estimators import t_intervals
from patchsim.analysis.tables import game_moves, read_games
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game, rules_reference
from patchsim.engine.record import GameRecord, RecordError
from patchsim.engine.ruleset import Ruleset
from patchsim.engine.view import BOARD_SCRIPT, replay_positions, ruleset_info
from patchsim.play.runfolder import table_path
from patchsim.reporting.plots import new_figure

METRICS = ("score", "buttons", "income")
GROUP = ("ruleset", "bot", "seat")
SEAT_COLOURS = ("#1f77b4", "#d62728")
LINESTYLES = ("-", "--", ":", "-.")
CURVE_COLUMNS = ("ruleset", "bot", "seat", "by", "x", "metric", "n", "mean", "lo", "hi", "q10",
                 "q90")
STATE_COLUMNS = ("game_id", "deal_seed", "ruleset", "pairing", "seat", "bot", "ply", "position",
                 "buttons", "income", "score")


# --- states ------------------------------------------------------------------------------------
def game_states(games: pd.DataFrame, rulesets: Mapping[str, Ruleset],
                per_group: int | None = 200) -> pd.DataFrame:
    """Each seat's position, buttons, income and score at the start and after every move of
    the stored games in ``games`` (needs the columns ``game_id``, ``ruleset``, ``pairing``,
    ``deal_seed``, ``bot0``, ``bot1`` and ``moves``), replayed by the engine.

    ``per_group`` keeps the first games (by game id) of each ruleset and pairing, so that a
    large run costs seconds (None: every game). Rulesets missing from ``rulesets`` are
    skipped. One row per game, ply and seat (columns :data:`STATE_COLUMNS`)."""
    missing = [c for c in ("game_id", "ruleset", "pairing", "deal_seed", "bot0", "bot1",
                           "moves") if c not in games.columns]
    if missing:
        raise ValueError(f"game_states: the games table lacks {', '.join(missing)} (read "
                         "games.parquet with its moves column)")
    chosen = games.sort_values("game_id", kind="stable")
    if per_group is not None:
        chosen = chosen.groupby(["ruleset", "pairing"], sort=False, observed=True).head(per_group)
    cols: dict[str, list[Any]] = {c: [] for c in STATE_COLUMNS}
    for row in chosen.itertuples(index=False):
        rs = rulesets.get(str(row.ruleset))
        if rs is None:
            continue
        game = Game.new(rs, circle=deal_circle(rs, int(row.deal_seed)))
        bots = (str(row.bot0), str(row.bot1))
        ids = (int(row.game_id), int(row.deal_seed), str(row.ruleset), str(row.pairing))
        _snapshot(cols, ids, bots, game)
        for code in row.moves:
            game.apply(int(code))
            _snapshot(cols, ids, bots, game)
    out = pd.DataFrame(cols)
    for c in ("seat", "ply", "position", "buttons", "income", "score"):
        out[c] = out[c].astype(np.int64)
    return out


def _snapshot(cols: dict[str, list[Any]], ids: tuple[int, int, str, str],
              bots: tuple[str, str], game: Game) -> None:
    """Append both seats' numbers in ``game``'s position to the column lists."""
    for p in (0, 1):
        for key, value in zip(("game_id", "deal_seed", "ruleset", "pairing"), ids, strict=True):
            cols[key].append(value)
        cols["seat"].append(p)
        cols["bot"].append(bots[p])
        cols["ply"].append(game.ply)
        cols["position"].append(game.position(p))
        cols["buttons"].append(game.buttons(p))
        cols["income"].append(game.income(p))
        cols["score"].append(game.score(p))


# --- curves ------------------------------------------------------------------------------------
def curve_table(states: pd.DataFrame, by: Literal["position", "ply"] = "position",
                metrics: Sequence[str] = METRICS, last_space: Mapping[str, int] | None = None
                ) -> pd.DataFrame:
    """Curves per ruleset, bot and seat from :func:`game_states`.

    ``by="position"``: x is a time-track space; a game's value at x is the seat's value after
    its last move that left its token at or before x (so a pass from 10 to 15 keeps the
    value of space 10 for 11 to 14, and x runs to the last space reached). ``by="ply"``: x is
    the move number; only games still going at that move count. ``last_space`` (ruleset ->
    last space) extends the position axis to the end of the track; by default the largest
    position seen.

    Columns :data:`CURVE_COLUMNS`: ``n`` games, ``mean`` (of the per-deal means),
    ``lo``/``hi`` the 95% t-interval of the mean over deals (equal to the mean for one
    deal), ``q10``/``q90`` the 10th and 90th percentiles of the games."""
    if by not in ("position", "ply"):
        raise ValueError(f"by={by!r}: give 'position' or 'ply'")
    bad = [m for m in metrics if m not in METRICS]
    if bad:
        raise ValueError(f"metrics: unknown {', '.join(bad)} (choose from {', '.join(METRICS)})")
    if states.empty:
        return pd.DataFrame(columns=list(CURVE_COLUMNS))
    frames = []
    for (ruleset, bot, seat), part in states.groupby(list(GROUP), sort=True, observed=True):
        if by == "ply":
            values = part[["game_id", "deal_seed", "ply", *metrics]].rename(
                columns={"ply": "x"})
        else:
            last = (last_space or {}).get(ruleset, int(part["position"].max()))
            values = _by_position(part, metrics, last)
        frames.append(_summarise(values, metrics).assign(ruleset=ruleset, bot=bot, seat=seat,
                                                          by=by))
    out = pd.concat(frames, ignore_index=True)
    out["seat"] = out["seat"].astype(np.int64)
    return out[list(CURVE_COLUMNS)]


def _by_position(part: pd.DataFrame, metrics: Sequence[str], last: int) -> pd.DataFrame:
    """Each game's values on the grid of spaces 0..last (see :func:`curve_table`)."""
    xs = np.arange(last + 1)
    rows = []
    for gid, g in part.groupby("game_id", sort=True):
        g = g.sort_values("ply", kind="stable")
        pos = g["position"].to_numpy()
        # positions never go down, so the last snapshot at or before x is found by bisection
        idx = np.searchsorted(pos, xs, side="right") - 1
        keep = idx >= 0
        frame = {"game_id": np.full(int(keep.sum()), gid),
                 "deal_seed": np.full(int(keep.sum()), int(g["deal_seed"].iloc[0])),
                 "x": xs[keep]}
        for m in metrics:
            frame[m] = g[m].to_numpy()[idx[keep]]
        rows.append(pd.DataFrame(frame))
    return pd.concat(rows, ignore_index=True)


def _summarise(values: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    long = values.melt(id_vars=["game_id", "deal_seed", "x"], value_vars=list(metrics),
                       var_name="metric", value_name="value")
    grouped = long.groupby(["metric", "x"], sort=True)["value"]
    out = grouped.agg(n="count").reset_index()
    q = grouped.quantile([0.1, 0.9]).unstack()
    out["q10"] = q[0.1].to_numpy()
    out["q90"] = q[0.9].to_numpy()
    # the interval of the mean is over deals (a bot in two pairings of a run plays the same
    # deal twice from a seat): per-deal means first, then the estimator layer's t-interval
    per_deal = long.groupby(["metric", "x", "deal_seed"], sort=True)["value"].mean()
    by_deal = per_deal.groupby(level=["metric", "x"], sort=True).agg(["mean", "std", "count"])
    lo, hi = t_intervals(by_deal["mean"].to_numpy(), by_deal["std"].fillna(0.0).to_numpy(),
                         by_deal["count"].to_numpy())
    one = by_deal["count"].to_numpy() < 2  # one deal: the interval is the value itself
    out["mean"] = by_deal["mean"].to_numpy()
    out["lo"] = np.where(one, out["mean"], lo)
    out["hi"] = np.where(one, out["mean"], hi)
    return out


def plot_curves(curves: pd.DataFrame, metrics: Sequence[str] | None = None,
                title: str | None = None) -> Figure:
    """One panel per metric (columns) and ruleset (rows): a line per bot and seat (colour by
    seat, line style by bot) with its 95% interval of the mean shaded and the 10-90% spread
    of the games as thin dotted lines. Returns a Figure drawn with Agg (not shown)."""
    metrics = list(metrics or [m for m in METRICS if m in set(curves.get("metric", []))])
    rulesets = list(dict.fromkeys(curves["ruleset"])) if len(curves) else []
    rows, cols = max(1, len(rulesets)), max(1, len(metrics))
    fig = new_figure(4.2 * cols, 3.0 * rows + 0.4)
    if not len(curves) or not metrics:
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.5, 0.5, "No games to draw curves from.", ha="center", va="center")
        return fig
    axes = fig.subplots(rows, cols, squeeze=False)
    bots = list(dict.fromkeys(curves["bot"]))
    by = str(curves["by"].iloc[0])
    for i, ruleset in enumerate(rulesets):
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            sub = curves[(curves["ruleset"] == ruleset) & (curves["metric"] == metric)]
            for (bot, seat), line in sub.groupby(["bot", "seat"], sort=True):
                line = line.sort_values("x")
                colour = SEAT_COLOURS[int(seat) % 2]
                style = LINESTYLES[bots.index(bot) % len(LINESTYLES)]
                ax.plot(line["x"], line["mean"], color=colour, linestyle=style, linewidth=1.6,
                        label=f"{bot}, seat {seat}")
                ax.fill_between(line["x"], line["lo"], line["hi"], color=colour, alpha=0.2,
                                linewidth=0)
                ax.plot(line["x"], line["q10"], color=colour, linestyle=":", linewidth=0.7,
                        alpha=0.7)
                ax.plot(line["x"], line["q90"], color=colour, linestyle=":", linewidth=0.7,
                        alpha=0.7)
            ax.set_title(f"{metric}" + (f" ({ruleset})" if len(rulesets) > 1 else ""),
                         fontsize=10)
            ax.set_xlabel("time-track position" if by == "position" else "move")
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


# --- the self-contained replay -------------------------------------------------------------------
def sample_records(run_dir: str | Path, rulesets: Mapping[str, Ruleset], limit: int = 3
                   ) -> list[dict[str, Any]]:
    """Up to ``limit`` games of a run folder as ``{"title", "record", "players"}`` (the bots
    in seats 0 and 1): the first game (by game id) of each ruleset and pairing in turn, read
    from games.parquet and replayed by the engine."""
    cols = ["game_id", "ruleset", "pairing", "deal", "deal_seed", "bot0", "bot1", "score0",
            "score1", "winner"]
    # text as categoricals: a fraction of the memory of a plain read of a large run
    path = table_path(Path(run_dir), "games")
    games = read_games(path, columns=cols).sort_values("game_id")
    firsts = games.groupby(["ruleset", "pairing"], sort=False).head(1)
    out = []
    for row in firsts.head(limit).itertuples(index=False):
        rs = rulesets.get(str(row.ruleset))
        if rs is None:
            continue
        codes = game_moves(path, int(row.game_id))  # one row group, not the file
        game = Game.new(rs, circle=deal_circle(rs, int(row.deal_seed)))
        for code in codes:
            game.apply(code)
        out.append({
            "title": (f"{row.ruleset}: {row.bot0} (seat 0) vs {row.bot1} (seat 1), deal "
                      f"{int(row.deal)}: {int(row.score0)} : {int(row.score1)}"),
            "record": game.record(rules_reference(rs)),
            "players": [str(row.bot0), str(row.bot1)],
        })
    return out


def _board_js() -> str:

    return BOARD_SCRIPT.read_text(encoding="utf-8")


_STEPPER_JS = r"""
(function () {
  "use strict";
  var root = document.getElementById("%(uid)s");
  var data = JSON.parse(document.getElementById("%(uid)s-data").textContent);
  Array.prototype.forEach.call(root.querySelectorAll(".psr-game"), function (box) {
    var g = data.games[parseInt(box.getAttribute("data-game"), 10)];
    var board = box.querySelector(".psr-board");
    var slider = box.querySelector("input[type=range]");
    var label = box.querySelector(".psr-label");
    var ply = 0, last = g.positions.length - 1;
    slider.max = last;
    function go(n) {
      ply = Math.max(0, Math.min(last, n));
      var pos = g.positions[ply];
      PatchsimBoard.draw(board, g.rules, pos, { names: g.names, highlightLast: true });
      slider.value = ply;
      var text = ply === 0 ? "start" : "move " + ply + " of " + last + ": " +
        pos.last_move.text + " (seat " + pos.last_move.seat + ")";
      if (pos.finished) {
        text += "; seat " + pos.winner + " wins " + pos.players[0].score + " : " +
          pos.players[1].score;
      }
      label.textContent = text;
      box.setAttribute("data-ply", ply);
    }
    Array.prototype.forEach.call(box.querySelectorAll("button[data-step]"), function (b) {
      b.addEventListener("click", function () {
        go(ply + parseInt(b.getAttribute("data-step"), 10));
      });
    });
    slider.addEventListener("input", function () { go(parseInt(slider.value, 10)); });
    box.addEventListener("keydown", function (e) {
      if (e.target === slider) { return; }
      var step = { ArrowLeft: -1, ArrowRight: 1, Home: -1e9, End: 1e9 }[e.key];
      if (step) { go(ply + step); e.preventDefault(); }
    });
    go(0);
  });
}());
"""

_SNIPPET_CSS = """
#%(uid)s .psr-game { border: 1px solid #d8dde2; border-radius: 6px; padding: 0.5rem;
  margin: 0.8rem 0; background: #fff; outline: none; }
#%(uid)s .psr-game:focus { border-color: #2a6f97; }
#%(uid)s .psr-title { font-weight: 600; margin-bottom: 0.3rem; }
#%(uid)s .psr-players { font-size: 0.85rem; margin-bottom: 0.3rem; }
#%(uid)s .psr-seat0 { color: #1f77b4; font-weight: 600; }
#%(uid)s .psr-seat1 { color: #d62728; font-weight: 600; }
#%(uid)s .psr-controls { display: flex; gap: 0.4rem; align-items: center; flex-wrap: wrap;
  margin-bottom: 0.3rem; }
#%(uid)s .psr-controls input[type=range] { flex: 1 1 200px; }
#%(uid)s .psr-label { font-size: 0.85rem; min-width: 16rem; }
#%(uid)s .psr-board svg { display: block; width: 100%%; max-width: 760px; height: auto; }
"""


def board_name(name: str, rules: Mapping[str, Any]) -> str | None:
    """The name the board can show whole in a seat's heading ("Seat 0: NAME" beside the
    status): ``name``, else its bot's name without the parameters ("mcts" for
    "mcts(eval=learned, iterations=100)"), else None (the board shows "Seat 0"). The room
    is the one board.js leaves (its layout(): the cell size from the quilt's larger side,
    about 7.6 px a character, 110 px for the status)."""
    side = max(int(rules["rows"]), int(rules["cols"]))
    cell = max(14, min(28, 252 // side))
    room = max(8, (cell * int(rules["cols"]) + 16 - 110) * 10 // 76)
    for text in (name, name.split("(")[0].strip()):
        if text and len(f"Seat 0: {text}") <= room:
            return text
    return None


def _players_line(game: dict[str, Any]) -> str:
    """The bots in full under the title when the board shows a name shortened and the title
    does not name them all (a sample's title does)."""
    if game["names"] == game["players"] or all(p in game["title"] for p in game["players"]):
        return ""
    seats = " &middot; ".join(f'<span class="psr-seat{p}">seat {p}</span>: {html.escape(n)}'
                              for p, n in enumerate(game["players"]))
    return f'<div class="psr-players">{seats}</div>'


def replay_snippet(records: Sequence[dict[str, Any] | GameRecord], titles: Sequence[str]
                   | None = None, players: Sequence[Sequence[str]] | None = None) -> str:
    """An HTML fragment replaying ``records`` (game records, or ``{"title", "record",
    "players"}`` as :func:`sample_records` returns them) move by move: buttons, a slider and
    the arrow keys (when a game has the focus). Everything is inline (data, drawing code,
    style), so the fragment works in a file opened from disk with no network; the same input
    gives the same text. RecordError if a record does not replay."""

    games: list[dict[str, Any]] = []
    for i, item in enumerate(records):
        title = titles[i] if titles and i < len(titles) else None
        names = list(players[i]) if players and i < len(players) else None
        if isinstance(item, dict) and "record" in item and "moves" not in item:
            title = title or item.get("title")
            names = names or item.get("players")
            item = item["record"]
        rec = item if isinstance(item, GameRecord) else GameRecord.from_dict(item,
                                                                           f"record {i + 1}")
        start = rec.start()
        probe = start.copy()
        codes = []
        for n, text in enumerate(rec.moves, start=1):
            try:
                move = probe.parse_move(text)
                probe.apply(move)
            except ValueError as e:  # malformed, or illegal (IllegalMoveError)
                raise RecordError(f"{rec.source}: move {n} ({text!r}): {e}", n) from None
            codes.append(move.code)
        positions, moves = replay_positions(start, codes)
        rules = ruleset_info(start.ruleset)
        full = list(names or ("seat 0", "seat 1"))
        games.append({"title": title or f"Game {i + 1} ({start.ruleset.name})",
                      "players": full, "names": [board_name(n, rules) for n in full],
                      "rules": rules, "positions": positions, "moves": moves})
    payload = json.dumps({"games": games}, separators=(",", ":"), sort_keys=True)
    uid = "psr-" + hashlib.sha1(payload.encode()).hexdigest()[:10]
    # inside <script>, "</script" would end the element early and "<!--" would change how
    # the page reads the rest: no "<" at all, as JSON's \u003c (the same text once parsed)
    safe = payload.replace("<", "\\u003c")
    parts = [f'<div class="psr" id="{uid}">', f"<style>{_SNIPPET_CSS % {'uid': uid}}</style>"]
    for i, g in enumerate(games):
        parts.append(
            f'<div class="psr-game" data-game="{i}" tabindex="0">'
            f'<div class="psr-title">{html.escape(g["title"])}</div>'
            f'{_players_line(g)}'
            '<div class="psr-controls">'
            '<button type="button" data-step="-1000000">|&#x25c0;</button>'
            '<button type="button" data-step="-1">&#x25c0;</button>'
            '<button type="button" data-step="1">&#x25b6;</button>'
            '<button type="button" data-step="1000000">&#x25b6;|</button>'
            '<input type="range" min="0" max="0" value="0" aria-label="move">'
            '<span class="psr-label"></span></div>'
            '<div class="psr-board"></div></div>')
    parts.append(f'<script type="application/json" id="{uid}-data">{safe}</script>')
    parts.append(f"<script>{_board_js()}</script>")
    parts.append(f"<script>{_STEPPER_JS % {'uid': uid}}</script>")
    parts.append("</div>")
    return "\n".join(parts)
