"""A training run's report as a Document (:mod:`patchsim.document`): what was trained and
how, the held-out fit, the curves, one row per generation and the weights. The numbers come
from :func:`patchsim.play.train.train`; this module only words and lays them out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from patchsim.document.format import num, pct
from patchsim.document.model import Col, Document, Figure, Section, Table


def _win_rate(r: dict[str, Any], opp: str) -> str:
    return pct(r["win_rates"][opp], 0) if r["win_rates"] else ""


# how a generation's self-play went (patchsim.play.selfplay.play_quality): history key,
# column heading, digits; a share is printed as a percentage
PLAY_COLUMNS = (("degenerate", "degenerate", None), ("opens_with_passes", "opens 6+ passes", None),
                ("bonus", "7x7", None), ("holes", "holes", 2), ("score", "score", 1))


def play_cell(r: dict[str, Any], key: str, digits: int | None) -> str:
    """One generation's figure ``key`` of how its self-play went, as a table cell."""
    play = r.get("play") or {}  # histories written before 2026-12-06 have none
    if key not in play:
        return ""
    return pct(play[key], 1) if digits is None else num(play[key], digits)


def generations_table(history: Sequence[dict[str, Any]], opponents: Sequence[str]) -> Table:
    rows = [{**r, **{f"vs {o}": _win_rate(r, o) for o in opponents},
             **{f"play {k}": play_cell(r, k, d) for k, _, d in PLAY_COLUMNS}}
            for r in history]
    return Table([Col("generation", "gen"), Col("minutes", "minutes", lambda x: num(x, 2)),
                  Col("games", "games"),
                  Col("train_rmse", "fit RMSE", lambda x: num(x, 2)),
                  Col("val_rmse", "held-out RMSE", lambda x: num(x, 2)),
                  Col("val_r2", "R^2", lambda x: num(x, 3)),
                  Col("scale", "scale", lambda x: num(x, 1)),
                  *[Col(f"vs {o}", f"vs {o}") for o in opponents],
                  *[Col(f"play {k}", h) for k, h, _ in PLAY_COLUMNS]], rows)


def play_paragraph(history: Sequence[dict[str, Any]]) -> str | None:
    """The first and the last generation's self-play, in words (None before any is
    recorded): did the training settle into a passing convention?"""
    played = [r for r in history if (r.get("play") or {}).get("games")]
    if not played:
        return None

    def share(r: dict[str, Any], key: str) -> str:
        q = r["play"]
        return f"{pct(q[key], 1)} [{pct(q[key + '_lo'], 1)}, {pct(q[key + '_hi'], 1)}]"

    first, last = played[0], played[-1]
    greedy = " (greedy's games)" if first["generation"] == 1 else ""
    return ("How each generation's self-play went (the games the learner played against "
            "itself, random searched moves included; degenerate: 25+ passes in all or a seat "
            "below -20 points; 95% intervals over the games): generation "
            f"{first['generation']}{greedy} had {share(first, 'degenerate')} degenerate games and "
            f"{share(first, 'opens_with_passes')} that open with 6+ passes in a row, "
            f"generation {last['generation']} {share(last, 'degenerate')} and "
            f"{share(last, 'opens_with_passes')}; the 7x7 bonus was claimed in "
            f"{pct(first['play']['bonus'], 1)} and {pct(last['play']['bonus'], 1)} of them.")


def weights_table(names: Sequence[str], weights: Sequence[float] | np.ndarray) -> Table:
    rows = [{"feature": n, "weight": float(v)} for n, v in zip(names, weights, strict=True)]
    return Table([Col("feature", "feature", align="left"),
                  Col("weight", "weight", lambda x: num(x, 4, True))], rows)


def training_document(man: dict[str, Any], history: Sequence[dict[str, Any]],
                      opponents: Sequence[str], feature_names: Sequence[str],
                      weights: Sequence[float] | np.ndarray, prefix: str = "") -> Document:
    """The training report of a model (its manifest, per-generation history and weights);
    its figures are strength.png and loss.png beside it."""
    s = Section("Training")
    s.p(f"Feature version {man['feature_version']}, seed {man['seed']}, "
        f"{man['generations']} generations, {man['training_games']} self-play games, "
        f"{num(man['train_minutes'], 1)} minutes on {man['jobs']} worker(s); patchsim "
        f"{man['patchsim_version']}, {man['created']}.")
    s.p("Method: fitted Monte Carlo value iteration. Each generation plays self-play games "
        f"(`{man['settings']['train_spec']}` with the previous model, "
        f"{pct(man['settings']['epsilon'], 0)} random searched moves; generation 0 plays "
        "`greedy`); a linear model of the final score margin is refit by ridge regression "
        f"on the last {man['settings']['window']} generations.")
    s.p("Held out (every tenth game of the last generations): RMSE "
        f"{num(man['validation']['rmse'], 2)} points, "
        f"R^2 {num(man['validation']['r2'], 3)}, winner predicted by the sign in "
        f"{pct(man['validation']['winner_sign_accuracy'])} of positions.")
    s.add(Figure(f"{prefix}strength.png", f"Strength against {', '.join(opponents)} over "
                 "training time.", alt="strength"))
    s.add(Figure(f"{prefix}loss.png", "Fit and held-out error of the final margin over "
                 "training time.", alt="loss"))
    words = play_paragraph(history)
    if words is not None:
        s.add(Figure(f"{prefix}play.png", "How the self-play games were played, generation by "
                     "generation: degenerate games, games that open with 6+ passes in a row "
                     "and the 7x7 bonus claimed.", alt="self-play"))
        s.p(words)
    s.table(generations_table(history, opponents))
    s.p("Weights (points of predicted margin per unit of each feature difference):")
    s.table(weights_table(feature_names, weights))
    return Document(f"Learned evaluation: {man['ruleset_name']} ({man['ruleset_hash']})",
                    [s], nav=False)
