"""Text pictures of a position for people: both quilts, the time track, the offer, the score."""

from __future__ import annotations

from patchsim.engine import core
from patchsim.engine.game import Game
from patchsim.engine.tables import COLUMN_LETTERS

LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def quilt_labels(game: Game) -> list[list[list[str]]]:
    """Per player, a grid of labels: a letter per bought patch (in buying order), '#' for
    leather, '.' for empty; and the legend is ``patch_legend``."""
    rows, cols = game.tables.rows, game.tables.cols
    grids = [[["." for _ in range(cols)] for _ in range(rows)] for _ in range(2)]
    if len(game.history) != int(game.state[core.S_PLY]):
        # a position set up from text has no move history: draw what is covered, unlabelled
        for q in (0, 1):
            for s in range(rows * cols):
                lo, hi = core.square_bit(s)
                if game.state[core.S_QLO + q] & lo or game.state[core.S_QHI + q] & hi:
                    grids[q][s // cols][s % cols] = "X"
        return grids
    replayed = Game(game.tables, core.new_state(game.tab, _circle(game)), game.circle)
    counts = [0, 0]
    for code in game.history:
        p = replayed.to_move
        assert p is not None
        if code <= core.LEATHER_BASE:
            r, c = divmod(core.LEATHER_BASE - code, cols)
            grids[p][r][c] = "#"
        elif code >= 0:
            label = LABELS[counts[p] % len(LABELS)]
            counts[p] += 1
            for s in game.tables.placement_squares(code):
                r, c = divmod(s, cols)
                grids[p][r][c] = label
        core.apply_move(replayed.state, replayed.tab, code)
    return grids


def patch_legend(game: Game) -> list[list[str]]:
    """Per player, the patch ids bought, in order (label i is ``LABELS[i]``)."""
    out: list[list[str]] = [[], []]
    if len(game.history) != int(game.state[core.S_PLY]):
        return out  # set up from text: the buying order is not known
    replayed = Game(game.tables, core.new_state(game.tab, _circle(game)), game.circle)
    for code in game.history:
        p = replayed.to_move
        assert p is not None
        if code >= 0:
            out[p].append(game.tables.patch_ids[game.tables.placement_patch(code)])
        core.apply_move(replayed.state, replayed.tab, code)
    return out


def _circle(game: Game):
    import numpy as np

    return np.array([game.tables.patch_index[c] for c in game.circle], dtype=np.int64)


def render(game: Game) -> str:
    """A multi-line picture of the position."""
    rs = game.ruleset
    grids = quilt_labels(game)
    legend = patch_legend(game)
    cols = rs.cols
    header = "   " + " ".join(COLUMN_LETTERS[c] for c in range(cols))
    width = len(header)
    lines = [f"ruleset {rs.name}   move {game.ply}"]
    lines.append(f"{'Player 0':<{width}}    Player 1")
    lines.append(f"{header:<{width}}    {header}")
    for r in range(rs.rows):
        left = f"{r + 1:>2} " + " ".join(grids[0][r])
        right = f"{r + 1:>2} " + " ".join(grids[1][r])
        lines.append(f"{left:<{width}}    {right}")
    lines.append("")
    for p in range(2):
        v = game.player(p)
        bonus = " +bonus" if v.bonus else ""
        bought = " ".join(f"{LABELS[i % len(LABELS)]}={pid}" for i, pid in enumerate(legend[p]))
        lines.append(f"Player {p}: space {v.position}/{rs.last_space}, {v.buttons} buttons, "
                     f"income {v.income}, {v.empty_squares} empty{bonus}, score {v.score}")
        if bought:
            lines.append(f"  patches: {bought}")
    lines.append("")
    lines.append(track_line(game))
    offer = ", ".join(_patch_text(game, pid) for pid in game.offer)
    lines.append(f"Offer: {offer or '(none)'}   ({len(game.remaining)} patches left)")
    if game.finished:
        tb = " (tie-break: reached the end first)" if game.tie_break_decided else ""
        lines.append(f"Game over: player {game.winner} wins {game.scores[0]} : "
                     f"{game.scores[1]}{tb}")
    elif game.pending_leather:
        lines.append(f"Player {game.to_move} must place {game.pending_leather} leather patch(es)")
    else:
        lines.append(f"Player {game.to_move} to move ({game.legal_move_count()} legal moves)")
    return "\n".join(lines)


def _patch_text(game: Game, pid: str) -> str:
    p = game.ruleset.patch(pid)
    return f"{pid} [{p.shape}] cost {p.cost} time {p.time} income {p.income}"


def track_line(game: Game) -> str:
    """The time track as one line per mark type: tokens 0/1, income $, leather L."""
    rs = game.ruleset
    cells = []
    leather = set(game.leather_on_track)
    income = set(rs.income_marks)
    for s in range(rs.last_space + 1):
        here = [str(p) for p in (0, 1) if game.position(p) == s]
        if here:
            ch = "*" if len(here) == 2 else here[0]
        elif s in leather:
            ch = "L"
        elif s in income:
            ch = "$"
        else:
            ch = "-"
        cells.append(ch)
    return "Track: " + "".join(cells) + "   ($ income, L leather, * both tokens)"
