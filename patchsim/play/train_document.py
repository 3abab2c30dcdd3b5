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


def generations_table(history: Sequence[dict[str, Any]], opponents: Sequence[str]) -> Table:
    rows = [{**r, **{f"vs {o}": _win_rate(r, o) for o in opponents}} for r in history]
    return Table([Col("generation", "gen"), Col("minutes", "minutes", lambda x: num(x, 2)),
                  Col("games", "games"),
                  Col("train_rmse", "fit RMSE", lambda x: num(x, 2)),
                  Col("val_rmse", "held-out RMSE", lambda x: num(x, 2)),
                  Col("val_r2", "R^2", lambda x: num(x, 3)),
                  Col("scale", "scale", lambda x: num(x, 1)),
                  *[Col(f"vs {o}", f"vs {o}") for o in opponents]], rows)


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
    s.table(generations_table(history, opponents))
    s.p("Weights (points of predicted margin per unit of each feature difference):")
    s.table(weights_table(feature_names, weights))
    return Document(f"Learned evaluation: {man['ruleset_name']} ({man['ruleset_hash']})",
                    [s], nav=False)
