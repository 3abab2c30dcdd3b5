"""Plots of a run's statistics; every function returns a matplotlib Figure.

Figures are built with ``matplotlib.figure.Figure`` directly, never through pyplot: nothing
is shown, no GUI backend is touched, no global figure list grows, and saving renders with
Agg. Each plot takes the table the report prints (from :mod:`patchsim.analysis.stats`), so that the
numbers in the text and in the pictures are the same numbers.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from patchsim.analysis.defaults import DEFAULT_MARGIN
from patchsim.document.palette import patch_colour  # THE patch palette (web, report, pictures)
from patchsim.engine.render import LABELS

SEAT_COLOURS = ("#1f77b4", "#d62728")  # seat 0, seat 1
LEATHER = "#5b3a1a"
USEFUL, ORDINARY, LOST = "#2ca02c", "#bcbd22", "#7f7f7f"


def new_figure(width: float, height: float) -> Figure:
    """An empty Figure of ``width`` x ``height`` inches, laid out by matplotlib and drawn
    with Agg: built without pyplot, so the session's backend and figure list are untouched."""
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)  # render with Agg whatever the session's backend is
    return fig


def png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _empty(fig: Figure, text: str) -> Figure:
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=12, color="#555")
    return fig


def _err(rate: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Error-bar lengths from interval ends (NaN-safe: a missing interval draws none)."""
    return np.nan_to_num(np.vstack([rate - lo, hi - rate]), nan=0.0).clip(min=0)


# --- seats and pairings -------------------------------------------------------------------------
def seat_winrates(fpa: pd.DataFrame, pairings: pd.DataFrame | None = None,
                  margin: float = DEFAULT_MARGIN) -> Figure:
    """First-seat win rate per ruleset and pairing with its 95% interval over deals, 50% and
    the +-margin band marked; with ``pairings`` (from
    ``stats.pairing_table``), a second panel: each first bot's win rate in the first seat, the
    second seat and pooled."""
    if fpa.empty:
        return _empty(new_figure(7, 2), "no games")
    cross = (pairings[pairings["line"].isin(["first seat", "second seat", "pooled"])
                      & ~pairings["self_play"]] if pairings is not None else pd.DataFrame())
    n = len(fpa)
    # long bot specs ("mcts(eval=learned, iterations=100)") and ruleset names are wrapped:
    # on one line they took the panels' width, and the right panel's title ran off the image
    left = [_wrap(f"{r.pairing}\n{r.ruleset}") for r in fpa.itertuples()]
    right = [_wrap(f"{r.bot} {r.line}\n{r.pairing}\n({r.ruleset})") for r in cross.itertuples()]
    lines_l = max(t.count("\n") + 1 for t in left)
    lines_r = max((t.count("\n") + 1 for t in right), default=0)
    height = max(n * (0.14 * lines_l + 0.17), len(cross) * (0.12 * lines_r + 0.06))
    fig = new_figure(11 if len(cross) else 7, 1.2 + height)
    axes = fig.subplots(1, 2 if len(cross) else 1, squeeze=False)[0]
    ax = axes[0]
    y = np.arange(n)[::-1]
    rate = fpa["rate"].to_numpy(float)
    ax.axvspan(50 - 100 * margin, 50 + 100 * margin, color="#dddddd", zorder=0)
    ax.axvline(50, color="#888", lw=1)
    ax.errorbar(100 * rate, y, xerr=100 * _err(rate, fpa["lo"].to_numpy(float),
                                               fpa["hi"].to_numpy(float)),
                fmt="o", color=SEAT_COLOURS[0], elinewidth=3, capsize=0)
    ax.set_yticks(y, left, fontsize=8)
    ax.set_xlabel("first seat wins (%)")
    ax.set_title("First-seat win rate (95% CI over deals)", fontsize=9)
    if len(cross):
        ax2 = axes[1]
        labels, vals, los, his, cols = right, [], [], [], []
        for r in cross.itertuples():
            vals.append(r.win_rate)
            los.append(r.lo)
            his.append(r.hi)
            cols.append({"first seat": SEAT_COLOURS[0], "second seat": SEAT_COLOURS[1]}
                        .get(r.line, "k"))
        yy = np.arange(len(vals))[::-1]
        v = np.array(vals, float)
        ax2.axvline(50, color="#888", lw=1)
        for i in range(len(v)):
            ax2.errorbar(100 * v[i], yy[i], xerr=100 * _err(v[i:i + 1], np.array(los[i:i + 1]),
                                                            np.array(his[i:i + 1])),
                         fmt="o", color=cols[i], capsize=3)
        ax2.set_yticks(yy, labels, fontsize=7)
        ax2.set_xlabel("first bot wins (%)")
        # two lines: on one, the colour key ran past the figure's right edge
        ax2.set_title("First bot's win rate by seat\n(blue: first seat, red: second seat, "
                      "black: pooled)", fontsize=9)
    return fig


def _wrap(text: str, width: int = 30) -> str:
    """Each line of ``text`` wrapped at spaces to about ``width`` characters (a tick label)."""
    return "\n".join(textwrap.fill(line, width, break_long_words=False)
                     for line in text.split("\n"))


def ratings_plot(table: pd.DataFrame) -> Figure:
    """Bot ratings (Elo relative to the average bot) with 95% intervals."""
    if table.empty:
        return _empty(new_figure(6, 2), "no bots")
    fig = new_figure(6.5, 1.0 + 0.4 * len(table))
    ax = fig.add_subplot()
    y = np.arange(len(table))[::-1]
    e = table["elo"].to_numpy(float)
    ax.errorbar(e, y, xerr=_err(e, table["elo_lo"].to_numpy(float),
                                table["elo_hi"].to_numpy(float)), fmt="o", capsize=3)
    ax.axvline(0, color="#888", lw=1)
    ax.set_yticks(y, table["bot"].tolist(), fontsize=8)
    ax.set_xlabel("Elo (relative to the average bot)")
    return fig


# --- scores -------------------------------------------------------------------------------------
def score_distributions(games: pd.DataFrame, scores: pd.DataFrame | None = None) -> Figure:
    """Per ruleset: score histograms by seat, and the margin (seat 0 - seat 1); dashed lines
    at the medians of ``scores`` (``stats.score_table``) when given."""
    rulesets = list(dict.fromkeys(games["ruleset"]))
    if not rulesets:
        return _empty(new_figure(7, 2), "no games")
    fig = new_figure(10, 2.6 * len(rulesets))
    axes = fig.subplots(len(rulesets), 2, squeeze=False)
    for i, rs in enumerate(rulesets):
        g = games[games["ruleset"] == rs]
        lo = int(min(g["score0"].min(), g["score1"].min()))
        hi = int(max(g["score0"].max(), g["score1"].max()))
        bins = np.arange(lo - 0.5, hi + 1.5, max(1, (hi - lo) // 30 + 1))
        ax = axes[i, 0]
        for seat in (0, 1):
            ax.hist(g[f"score{seat}"], bins=bins, histtype="step", lw=1.5,
                    color=SEAT_COLOURS[seat], label=f"seat {seat}")
        ax.set_title(f"{rs}: final scores", fontsize=9)
        ax.set_xlabel("score")
        ax.set_ylabel("games")
        margin = g["score0"] - g["score1"]
        m_lo, m_hi = int(margin.min()), int(margin.max())
        ax2 = axes[i, 1]
        ax2.hist(margin, bins=np.arange(m_lo - 0.5, m_hi + 1.5, max(1, (m_hi - m_lo) // 40 + 1)),
                 color="#9467bd")
        ax2.axvline(0, color="#444", lw=1)
        ax2.set_title(f"{rs}: margin seat 0 - seat 1", fontsize=9)
        ax2.set_xlabel("points")
        if scores is not None and len(scores):
            s = scores[(scores["ruleset"] == rs) & (scores["quantity"] == "score")]
            for seat in (0, 1):
                med = s.loc[s["group"] == f"seat {seat}", "median"]
                # the pooled median over pairings is not in the table: only draw one pairing's
                if len(med) == 1:
                    ax.axvline(float(med.iloc[0]), color=SEAT_COLOURS[seat], ls="--", lw=1)
        ax.legend(fontsize=8)
    return fig


# --- patches ------------------------------------------------------------------------------------
def patch_chart(table: pd.DataFrame, ruleset: str | None = None) -> Figure:
    """Per patch (one ruleset): left, the win-rate difference between seats that bought it
    and seats that did not, with its 95% interval (green / red: buyers win significantly
    more / less after Holm correction; an association, not a price); right, when it was
    bought (median track position and quartiles) and how often (bar shade)."""
    t = table if ruleset is None else table[table["ruleset"] == ruleset]
    t = t[t["bought"] > 0]
    if t.empty:
        return _empty(new_figure(7, 2), "no patches bought")
    t = t.sort_values("diff", ascending=True, na_position="first")
    fig = new_figure(12, 1.0 + 0.24 * len(t))
    ax, ax1, ax2 = fig.subplots(1, 3, sharey=True, width_ratios=[3, 1.2, 2])
    y = np.arange(len(t))
    d = t["diff"].to_numpy(float)
    colours = [{"buyers win more": "#2ca02c", "buyers win less": "#d62728"}.get(f, "#555")
               for f in t["flag"]]
    ax.axvline(0, color="#888", lw=1)
    for i in range(len(t)):
        ax.errorbar(100 * d[i], y[i], xerr=100 * _err(d[i:i + 1],
                                                      t["diff_lo"].to_numpy(float)[i:i + 1],
                                                      t["diff_hi"].to_numpy(float)[i:i + 1]),
                    fmt="o", color=colours[i], ms=4, capsize=2)
    labels = [f"{r.patch} ({_int(r.cost)}b/{_int(r.time)}t)" for r in t.itertuples()]
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("win rate of buyer - non-buyer (points)")
    ax.set_title(f"{ruleset or ''} patches: buyers' edge (green / red: flagged)".strip(),
                 fontsize=9)
    ax1.barh(y, 100 * t["buy_rate"].to_numpy(float), color="#9ecae1", height=0.7)
    ax1.set_xlim(0, 100)
    ax1.set_xlabel("bought in % of games")
    med = t["pos_median"].to_numpy(float)
    ax2.errorbar(med, y, xerr=_err(med, t["pos_q1"].to_numpy(float),
                                   t["pos_q3"].to_numpy(float)), fmt="o", ms=3, color="k",
                 capsize=2)
    ax2.set_xlim(0, 54)
    ax2.set_xlabel("track position when bought (median, quartiles)")
    return fig


def _int(x: Any) -> str:
    try:
        return str(int(x))
    except (TypeError, ValueError):
        return "?"


# --- leather and bonus ----------------------------------------------------------------------------
def leather_chart(table: pd.DataFrame) -> Figure:
    """Per ruleset and leather mark: the share of games in which the patch filled an isolated
    one-square hole (useful, with its 95% interval), went on an ordinary square, or was lost;
    rulesets side by side at their marks on the time track."""
    if table.empty:
        return _empty(new_figure(7, 2), "no leather patches")
    rulesets = list(dict.fromkeys(table["ruleset"]))
    fig = new_figure(10, 3.6)
    ax = fig.add_subplot()
    width = 4.0 / max(1, len(rulesets))
    hatches = ["", "//", "..", "xx"]
    for i, rs in enumerate(rulesets):
        t = table[table["ruleset"] == rs]
        x = t["mark"].to_numpy(float) + (i - (len(rulesets) - 1) / 2) * width
        n = t["games"].to_numpy(float)
        useful = t["useful"].to_numpy(float) / n
        ordinary = t["ordinary"].to_numpy(float) / n
        lost = t["lost"].to_numpy(float) / n
        h = hatches[i % len(hatches)]
        ax.bar(x, 100 * useful, width, color=USEFUL, hatch=h, edgecolor="k", lw=0.5,
               label=f"{rs}: useful (hole)")
        ax.bar(x, 100 * ordinary, width, bottom=100 * useful, color=ORDINARY, hatch=h,
               edgecolor="k", lw=0.5, label=f"{rs}: ordinary square")
        ax.bar(x, 100 * lost, width, bottom=100 * (useful + ordinary), color=LOST, hatch=h,
               edgecolor="k", lw=0.5, label=f"{rs}: lost")
        ur = t["useful_rate"].to_numpy(float)
        ax.errorbar(x, 100 * ur, yerr=100 * _err(ur, t["useful_lo"].to_numpy(float),
                                                 t["useful_hi"].to_numpy(float)),
                    fmt="none", ecolor="k", capsize=3)
    marks = sorted(set(table["mark"].astype(int)))
    ax.set_xticks(marks, [str(m) for m in marks])
    ax.set_xlabel("leather mark (track position)")
    ax.set_ylabel("share of games (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Leather patches: filled an isolated hole, an ordinary square, or lost",
                 fontsize=9)
    return fig


def bonus_timing(events: pd.DataFrame, table: pd.DataFrame | None = None,
                 last_space: int = 53) -> Figure:
    """When the 7x7 bonus was claimed (the claimer's track position), per ruleset and seat;
    the legend gives the claim rate from ``table`` (``stats.bonus_table``) when given."""
    fig = new_figure(8, 3)
    if events.empty:
        return _empty(fig, "the 7x7 bonus was never claimed")
    ax = fig.add_subplot()
    bins = np.arange(-0.5, last_space + 1.5, 2)
    styles = ["-", "--", ":", "-."]
    for i, rs in enumerate(dict.fromkeys(events["ruleset"])):
        e = events[events["ruleset"] == rs]
        for seat in (0, 1):
            pos = e.loc[e["seat"] == seat, "position"]
            label = f"{rs}, seat {seat} ({len(pos)} claims)"
            if table is not None and len(table):
                t = table[table["ruleset"] == rs]
                rate = t[f"by_seat{seat}"].sum() / max(1, t["games"].sum())
                label += f", {100 * rate:.1f}% of games"
            ax.hist(pos, bins=list(bins), histtype="step", lw=1.5, color=SEAT_COLOURS[seat],
                    ls=styles[i % len(styles)], label=label)
    ax.set_xlim(0, last_space + 1)
    ax.set_xlabel("claimer's track position")
    ax.set_ylabel("claims")
    ax.legend(fontsize=7)
    ax.set_title("When the 7x7 bonus was claimed", fontsize=9)
    return fig


# --- comparison -------------------------------------------------------------------------------
def comparison_chart(metrics: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> Figure:
    """Rate metrics: the change B - A in points with the paired 95% interval (thick) and the
    unpaired one the same data would give without shared deals (thin); grey band: +-margin."""
    m = metrics[metrics["kind"] == "rate"] if len(metrics) else metrics
    if m.empty:
        return _empty(new_figure(7, 2), "nothing to compare")
    fig = new_figure(8, 1.0 + 0.35 * len(m))
    ax = fig.add_subplot()
    y = np.arange(len(m))[::-1]
    d = m["diff"].to_numpy(float)
    ax.axvspan(-100 * margin, 100 * margin, color="#dddddd", zorder=0)
    ax.axvline(0, color="#888", lw=1)
    ax.errorbar(100 * d, y, xerr=100 * _err(d, m["lo_unpaired"].to_numpy(float),
                                            m["hi_unpaired"].to_numpy(float)),
                fmt="none", ecolor="#999", capsize=3)
    ax.errorbar(100 * d, y, xerr=100 * _err(d, m["lo"].to_numpy(float),
                                            m["hi"].to_numpy(float)),
                fmt="o", elinewidth=3, color="#1f77b4")
    ax.set_yticks(y, [f"{r.metric}\n{r.group}" for r in m.itertuples()], fontsize=7)
    ax.set_xlabel("change B - A (points)")
    return fig


# --- final quilts ------------------------------------------------------------------------------
def quilt_pictures(samples: Sequence[dict[str, Any]]) -> Figure:
    """Final quilts of sample games with their time tracks.

    Each sample is a dict with ``title``, ``labels`` (per player a grid of labels as
    ``render.quilt_labels`` gives), ``legend`` (per player the patch ids in buying order),
    ``ruleset`` (the Ruleset), ``buys`` (rows with seat, position, patch), ``leather``
    (rows with mark, seat) and ``scores``. Patches are coloured by id, leather patches
    brown with an L, empty squares white; below, the track with income marks ($), leather
    marks (coloured by the claimer) and each player's purchases at their track position."""
    if not samples:
        return _empty(new_figure(6, 2), "no sample games")
    fig = new_figure(9, 5.0 * len(samples))
    sub = fig.subfigures(len(samples), 1, squeeze=False)[:, 0]
    for sf, s in zip(sub, samples, strict=True):
        gs = sf.add_gridspec(2, 2, height_ratios=[4, 1.3])
        rs = s["ruleset"]
        for p in (0, 1):
            ax = sf.add_subplot(gs[0, p])
            grid = s["labels"][p]
            legend = s["legend"][p]
            index = {LABELS[i % len(LABELS)]: pid for i, pid in enumerate(legend)}
            for r, row in enumerate(grid):
                for c, lab in enumerate(row):
                    if lab == "#":
                        colour, text = LEATHER, "L"
                    elif lab == ".":
                        colour, text = "white", ""
                    else:
                        colour, text = patch_colour(index.get(lab, lab)), ""
                    ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="#ccc",
                                           lw=0.5))
                    if text:
                        ax.text(c + 0.5, r + 0.5, text, ha="center", va="center",
                                color="white", fontsize=7, weight="bold")
            # patch outlines: a thick edge where neighbouring squares differ
            rows, cols = len(grid), len(grid[0])
            for r in range(rows):
                for c in range(cols):
                    if c + 1 < cols and grid[r][c] != grid[r][c + 1]:
                        ax.plot([c + 1, c + 1], [r, r + 1], color="k", lw=0.8)
                    if r + 1 < rows and grid[r][c] != grid[r + 1][c]:
                        ax.plot([c, c + 1], [r + 1, r + 1], color="k", lw=0.8)
            ax.add_patch(Rectangle((0, 0), cols, rows, fill=False, edgecolor="k", lw=1.5))
            ax.set_xlim(0, cols)
            ax.set_ylim(rows, 0)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"seat {p}: score {s['scores'][p]}", fontsize=9,
                         color=SEAT_COLOURS[p])
        ax = sf.add_subplot(gs[1, :])
        last = rs.last_space
        ax.add_patch(Rectangle((0, -0.5), last + 1, 2, facecolor="#f4f0e6", edgecolor="#999"))
        for m in rs.income_marks:
            ax.text(m - 0.5, 1.65, "$", ha="center", va="bottom", fontsize=7, color="#8c6d1f")
        claimed = {int(row["mark"]): row.get("seat") for row in s["leather"]}
        for m in rs.leather_marks:
            who = claimed.get(int(m))
            colour = SEAT_COLOURS[int(who)] if who is not None and who == who else "#999"
            ax.add_patch(Rectangle((m - 0.9, 1.55), 0.8, 0.8, facecolor=LEATHER,
                                   edgecolor=colour, lw=2))
        for row in s["buys"]:
            p = int(row["seat"])
            ax.plot(float(row["position"]) + 0.5, 1 - p, "o", ms=6,
                    color=patch_colour(str(row["patch"])), mec=SEAT_COLOURS[p])
        ax.set_xlim(-0.5, last + 1.5)
        ax.set_ylim(-0.8, 2.6)
        ax.set_yticks([1, 0], ["seat 0", "seat 1"], fontsize=7)
        ticks = list(range(0, last + 1, 5))
        ax.set_xticks(ticks, [str(t) for t in ticks], fontsize=7)
        ax.set_xlabel("time track: purchases by position ($ income marks, brown leather "
                      "marks edged in the claimer's colour)", fontsize=7)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        sf.suptitle(s["title"], fontsize=10)
    return fig
