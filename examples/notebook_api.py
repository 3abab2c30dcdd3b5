"""The Python API in a notebook's order: play games in memory, summarise them, then take one
game from the table back into a Game and replay it move by move.

    python examples/notebook_api.py

Runs in well under half a minute on two cores (the first run also compiles the engine).
"""

from __future__ import annotations

import pandas as pd

import patchsim


def main() -> None:
    # 1. Games in memory: the same games `patchsim run edition2 --games 200 --seed 7
    #    --bots "greedy;income"` stores, as DataFrames (nothing is written to disk).
    sim = patchsim.simulate("edition2", ["greedy", "income"], games=200, seed=7, jobs=2)
    print(f"{len(sim.games)} games, {len(sim.events)} events in {sim.seconds:.1f} s")

    # 2. Summary: one row per pairing, win rates with per-deal 95% intervals.
    with pd.option_context("display.width", 120, "display.max_columns", 20):
        print(sim.summary()[["pairing", "games", "seat0_win", "seat0_lo", "seat0_hi",
                             "first_bot_win", "score0", "score1"]].round(3))
    print(patchsim.format_summary(sim.summary()))

    # Per-patch and per-bot tables take the same DataFrames.
    patches = patchsim.patch_table(sim.games, sim.events, sim.rulesets)
    print(patches.sort_values("buy_rate", ascending=False).head(5)[
        ["patch", "cost", "buy_rate", "buyer_win", "other_win", "diff"]].round(3)
        .to_string(index=False))

    # 3. One game from the table: the closest game greedy played against income.
    cross = sim.games[sim.games["pairing"] == "greedy vs income"]
    row = cross.loc[(cross["score0"] - cross["score1"]).abs().idxmin()]
    print(f"\ngame {row.game_id}: {row.bot0} (seat 0) vs {row.bot1}, deal seed "
          f"{row.deal_seed}, scores {row.score0}:{row.score1}")

    # Its deal seed gives the same patch circle the runner dealt...
    game = patchsim.Game.new(row.ruleset, seed=int(row.deal_seed))
    # ...and its stored move codes replay it, every move checked by the rules.
    for code in row.moves:
        game.apply(int(code))
    texts = game.move_texts()
    print("  moves: " + "; ".join(texts[:4]) + f"; ... ({len(texts)} moves)")
    assert game.scores == (row.score0, row.score1) and game.winner == row.winner
    print(f"replayed: scores {game.scores}, winner seat {game.winner}")

    # A position can be saved as one line of text and set up again.
    text = game.to_text()
    print(f"final position: {text}")
    assert patchsim.Game.from_text(text, rules=row.ruleset).scores == game.scores


if __name__ == "__main__":
    main()
