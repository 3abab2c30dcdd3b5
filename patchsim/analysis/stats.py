"""The analysis tables of a run by one name, for the report and the package API.

Each job lives in its own module; this one only gathers their public names (so that
``from patchsim.analysis import stats as st`` keeps working): who wins by seat and pairing
(:mod:`~patchsim.analysis.seats`), ratings (:mod:`~patchsim.analysis.ratings`), score
distributions (:mod:`~patchsim.analysis.scores`), patches
(:mod:`~patchsim.analysis.patches`), leather and the bonus (:mod:`~patchsim.analysis.leather`)
and the text formatters (:mod:`~patchsim.document.format`). Nothing is computed here.
"""

from __future__ import annotations

from patchsim.analysis.games import (
    NAN,
    Events,
    first_bot,
    is_self_play,
    iter_groups,
    second_bot,
)
from patchsim.analysis.leather import (
    bonus_events,
    bonus_table,
    first_leather_useless,
    leather_game_values,
    leather_games,
    leather_table,
)
from patchsim.analysis.patches import patch_bots, patch_table
from patchsim.analysis.ratings import ELO_PER_LOGIT, cluster_sandwich, elo, ratings
from patchsim.analysis.scores import describe_by_deal, score_table
from patchsim.analysis.seats import (
    MIN_DEALS,
    SKILL_GAP,
    design_effect,
    first_player_advantage,
    game_summary,
    mcnemar_exact,
    pair_counts,
    pairing_table,
    seat_games,
    seat_information,
    skill_balance,
)
from patchsim.document.format import finite, num, pct

__all__ = ["ELO_PER_LOGIT", "MIN_DEALS", "NAN", "Events", "bonus_events", "bonus_table",
           "cluster_sandwich", "describe_by_deal", "design_effect", "elo", "finite",
           "first_bot", "first_leather_useless", "first_player_advantage",
           "game_summary", "is_self_play", "iter_groups", "leather_game_values",
           "leather_games", "leather_table", "mcnemar_exact", "num", "pair_counts",
           "pairing_table", "patch_bots", "patch_table", "pct", "ratings", "score_table",
           "seat_games", "seat_information", "second_bot", "skill_balance", "SKILL_GAP"]
