"""Degenerate self-play games of a bot (passing wars: 25+ passes, or a seat far below zero),
found and traced: the share of such games, and for a few of them, move by move, what the
learned evaluation made of the position and what the search weighed at its root.

    python benchmarks/degenerate_games.py --games 1000 --show 2
        (default bot: mcts(eval=learned, iterations=100, epsilon=0.05))
    python benchmarks/degenerate_games.py --bots greedy --games 1000 --json
    python benchmarks/degenerate_games.py --run RUN_DIR
        (a played run's games: what the degenerate games cost, per pairing)

Prints the share of degenerate games (``patchsim.analysis.degenerate``) with a 95% interval
over deals; how well the bot packs beside greedy's self-play on the same deals (``--beside``;
``patchsim.analysis.packing.packing_table``: mean final score, 7x7 bonus share, isolated
holes at the end, games opening with 6+ passes, degenerate games, each with a 95% interval
over deals), and the share opening with 10+ passes; and per traced game a table: ply,
seat, track position, buttons, income, empty squares, the move, the model's predicted final
margin for the mover and its parts (buttons, empty squares, everything else), the root's
pass and best-buy values and visits. ``--json``
prints the figures as one JSON object instead (no traces). ``--run`` plays nothing: it reads
a run folder's games and prints ``patchsim.analysis.degenerate.war_summary`` (per ruleset
and pairing, the degenerate games against the others: the two seats' scores summed, the
winner's lead, the first seat's win rate) and the packing table of its distinct games.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

import patchsim
from patchsim.analysis import estimators as est
from patchsim.analysis.degenerate import degenerate_games, opening_passes
from patchsim.analysis.packing import PACKING_METRICS, packing_table
from patchsim.analysis.selfplay import distinct
from patchsim.bots import features as F
from patchsim.bots.learned import bind_bot
from patchsim.bots.registry import make_bot
from patchsim.engine import core
from patchsim.engine.deal import deal_circle
from patchsim.engine.game import Game
from patchsim.engine.ruleset import load_ruleset
from patchsim.engine.tables import compile_ruleset

# feature groups of the model's prediction, by name (the rest is "other")
BUTTON_TERMS = ("buttons", "buttons_x_time_left")
EMPTY_TERMS = ("empty_penalty", "empty_penalty_x_time_left", "empty_sq_share_penalty",
               "holes_penalty", "holes_x_time_left")


def share_with_interval(flags: pd.Series, deals: pd.Series) -> tuple[float, float, float]:
    """The share of flagged games with its 95% interval over deals (the games of a deal are
    not independent: the deal is the unit), as every rate of the library has it
    (``estimators.rate``), so that it agrees with the packing table's."""
    e = est.rate(flags.to_numpy(dtype=float), deals.to_numpy())
    return e.value, e.lo, e.hi


def packing_text(games: pd.DataFrame) -> str:
    """The packing table (one row per pairing and bot) as text, each figure with its 95%
    interval over deals."""
    t = packing_table(distinct(games))
    rows = []
    for r in t.to_dict("records"):
        # a self-play pairing is named by its bot
        row = {"pairing": r["pairing"]} if r["pairing"] != f"{r['bot']} vs {r['bot']}" else {}
        row.update(bot=r["bot"], games=r["games"])
        for m, (label, bounds) in PACKING_METRICS.items():
            k = 100.0 if bounds else 1.0
            d = 1 if bounds else 2
            row[label + (" %" if bounds else "")] = (
                f"{k * r[m]:.{d}f} [{k * r[m + '_lo']:.{d}f}, {k * r[m + '_hi']:.{d}f}]")
        rows.append(row)
    with pd.option_context("display.width", 250, "display.max_columns", 30,
                           "display.max_colwidth", 60):
        return pd.DataFrame(rows).fillna("").to_string(index=False)


def packing_figures(games: pd.DataFrame) -> dict[str, dict[str, list[float]]]:
    """Per bot (self-play), every packing figure as [value, lo, hi]."""
    t = packing_table(distinct(games))
    return {str(r["bot"]): {m: [round(float(r[c]), 4) for c in (m, f"{m}_lo", f"{m}_hi")]
                            for m in PACKING_METRICS} for r in t.to_dict("records")}


def trace(rules: str, spec: str, row: pd.Series) -> pd.DataFrame:
    """One game replayed: per ply the position, the move, the model's view and the root."""
    rs = load_ruleset(rules)
    tab = compile_ruleset(rs).tab
    model_bot = bind_bot(make_bot("mcts(eval=learned)"), rs)
    searcher = bind_bot(make_bot(spec), rs)
    learned = getattr(searcher, "kind", -1) == F.LEARNED
    names = list(F.FEATURE_NAMES)
    weights = model_bot.params[F.L_WEIGHTS:F.L_WEIGHTS + F.N_FEATURES]
    game = Game.new(rs, circle=deal_circle(rs, int(row["deal_seed"])))
    feats = np.empty(F.N_FEATURES)
    rows = []
    for code in row["moves"]:
        st = game.state
        p = int(core.to_move(st, tab))
        F.features(st, tab, feats)
        sign = 1.0 if p == 0 else -1.0
        part = sign * weights * feats
        rec = {"ply": int(st[core.S_PLY]), "seat": p, "pos": int(st[core.S_POS + p]),
               "opp_pos": int(st[core.S_POS + 1 - p]), "buttons": int(st[core.S_BTN + p]),
               "income": int(st[core.S_INC + p]),
               "empty": int(core.empty_squares(st, tab, p)),
               "move": "pass" if code == core.PASS else "leather" if code <= core.LEATHER_BASE
               else "buy",
               "pred": round(float(part.sum()), 1),
               "btn_terms": round(float(sum(part[names.index(n)] for n in BUTTON_TERMS)), 1),
               "empty_terms": round(float(sum(part[names.index(n)] for n in EMPTY_TERMS)), 1)}
        rec["other"] = round(rec["pred"] - rec["btn_terms"] - rec["empty_terms"], 1)
        if learned and st[core.S_PENDING] == 0:
            moves, visits, values = F.learned_root(searcher.params, st, tab)
            if len(moves) > 1:
                passing = moves == core.PASS
                buys = np.flatnonzero(~passing)
                best = buys[np.argmax(visits[buys])]
                rec.update(pass_value=round(float(values[passing][0]), 3),
                           pass_visits=int(visits[passing][0]),
                           buy_value=round(float(values[best]), 3),
                           buy_visits=int(visits[best]))
        rows.append(rec)
        game.apply(int(code))
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bots", default="mcts(eval=learned, iterations=100, epsilon=0.05)",
                    help="the self-play bot")
    ap.add_argument("--rules", default="edition2")
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--show", type=int, default=1, help="degenerate games to trace")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON only")
    ap.add_argument("--run", default="", help="a run folder: summarise its games instead")
    ap.add_argument("--beside", default="greedy",
                    help="bots whose self-play is played and shown beside, separated by ';' "
                         "('' for none)")
    args = ap.parse_args()
    if args.run:
        from patchsim.analysis.degenerate import war_summary
        from patchsim.play.runfolder import read_run

        games = read_run(args.run).games
        table = war_summary(games)
        with pd.option_context("display.width", 250, "display.max_columns", 30):
            print(table.round(3).to_string(index=False))
        print("\nhow well the bots pack (95% intervals over deals)")
        print(packing_text(games))
        return

    beside = [b for b in args.beside.split(";") if b.strip()]
    t0 = time.perf_counter()
    sim = patchsim.simulate(args.rules, [args.bots, *beside], games=args.games,
                            seed=args.seed, pairings="self", jobs=args.jobs)
    secs = time.perf_counter() - t0
    everything = sim.games
    # the bot's own self-play (the first pairing); the others are shown beside it
    g = everything[everything["pairing"] == everything["pairing"].iloc[0]]
    flags = degenerate_games(g)
    passes = g["passes0"] + g["passes1"]
    low = np.minimum(g["score0"], g["score1"])
    share = share_with_interval(flags, g["deal"])
    figures = {
        "bot": args.bots, "rules": args.rules, "games": len(g), "seed": args.seed,
        "seconds": round(secs, 1),
        "degenerate_share": [round(x, 4) for x in share],
        "passes_25_plus": round(float((passes >= 25).mean()), 4),
        "seat_below_minus_20": round(float((low < -20).mean()), 4),
        "lowest_score": int(low.min()),
        "mean_passes": round(float(passes.mean()), 2),
        "first_seat_wins": round(float((g["winner"] == 0).mean()), 4),
        "mean_winner_score": round(float(np.maximum(g["score0"], g["score1"]).mean()), 2),
        "opens_10_plus_passes": round(float((opening_passes(g) >= 10).mean()), 4),
        # how well it packs, beside the other bots' self-play on the same deals
        "packing": packing_figures(everything),
    }
    if args.json:
        print(json.dumps(figures))
        return
    for k, v in figures.items():
        if k != "packing":
            print(f"{k:22s} {v}")
    print("\nhow well the bots pack (self-play, 95% intervals over deals)")
    print(packing_text(everything))
    bad = g[flags]
    for _, row in bad.head(args.show).iterrows():
        print(f"\ngame {row['game_id']} (deal {row['deal']}, order {row['order']}): "
              f"scores {row['score0']} / {row['score1']}, passes {row['passes0']} / "
              f"{row['passes1']}, buys {row['buys0']} / {row['buys1']}")
        with pd.option_context("display.width", 200, "display.max_rows", 200):
            print(trace(args.rules, args.bots, row).to_string(index=False))


if __name__ == "__main__":
    main()
