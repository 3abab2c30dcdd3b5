"""The leather patches and the 7x7 bonus: who claims them, whether a leather patch fills an
isolated one-square hole, and how often the bonus changes the winner.

Tables built from events take the events DataFrame or its per-game summary
(:class:`patchsim.analysis.tables.EventSummary`); a DataFrame is summarised by the same code
first. Rates are :func:`estimators.rate` over deals; deterministic self-play counts each
deal's game once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from patchsim.analysis import estimators as est
from patchsim.analysis.defaults import ALPHA
from patchsim.analysis.games import NAN, Events, is_self_play, iter_groups, ruleset_of
from patchsim.analysis.selfplay import copied_pairings, distinct
from patchsim.analysis.tables import EventSummary, as_summary


@dataclass
class _Marks:
    """The leather marks of one ruleset's games (those at which anything happened in them,
    in track order: rank 1 is the first) and per game and mark what happened there."""

    marks: list[int]
    seat: np.ndarray  # (games, marks): the claimer, -1 if nobody claimed it
    lead: np.ndarray
    opp: np.ndarray
    placed: np.ndarray
    useful: np.ndarray  # placed, and a placement filled an isolated hole
    row: np.ndarray  # (games, marks): the game has a row in leather_games (claim or loss)


def _marks(ev: EventSummary, game_ids: np.ndarray) -> _Marks:
    at = ev.rows(game_ids)
    ok = at >= 0
    n, m = len(at), len(ev.marks)

    def cols(a: np.ndarray, fill: Any) -> np.ndarray:
        out = np.full((n, m), fill, dtype=a.dtype)
        out[ok] = a[at[ok]]
        return out

    seat = cols(ev.claim_seat, -1)
    row = (seat >= 0) | cols(ev.lost, False)
    keep = np.flatnonzero(row.any(axis=0))  # marks at which something happened
    placed = cols(ev.placed, False)[:, keep]
    return _Marks([int(x) for x in ev.marks[keep]], seat[:, keep],
                  cols(ev.claim_lead, 0)[:, keep], cols(ev.claim_opp, -1)[:, keep], placed,
                  placed & cols(ev.hole, False)[:, keep], row[:, keep])


def leather_games(games: pd.DataFrame, events: Events) -> pd.DataFrame:
    """One row per game and leather mark that anything happened at: who claimed it, the
    claimer's score lead, whether it was placed in an isolated one-square hole, whether it was
    lost (no empty square), the claimer's win, and the mark's rank on the track (1 = first)."""
    cols = ["ruleset", "pairing", "game_id", "deal", "mark", "rank", "claimed", "seat",
            "score_lead", "opp_position", "placed", "useful", "lost", "claimer_won"]
    ev = as_summary(events, games)
    parts = []
    for (_ruleset,), g in iter_groups(games, ["ruleset"]):
        mk = _marks(ev, g["game_id"].to_numpy())
        for j, mark in enumerate(mk.marks):
            sel = np.flatnonzero(mk.row[:, j])
            seat = mk.seat[sel, j]
            claimed = seat >= 0
            part = g.iloc[sel][["ruleset", "pairing", "game_id", "deal"]].reset_index(drop=True)
            winner = g["winner"].to_numpy()[sel]
            part = part.assign(
                mark=mark, rank=j + 1, claimed=claimed,
                seat=np.where(claimed, seat, np.nan),
                score_lead=np.where(claimed, mk.lead[sel, j], np.nan),
                opp_position=np.where(claimed, mk.opp[sel, j], np.nan),
                placed=mk.placed[sel, j], useful=mk.useful[sel, j], lost=~claimed,
                claimer_won=np.where(claimed, winner == seat, np.nan))
            parts.append(part)
    if not parts:
        return pd.DataFrame(columns=cols)
    return (pd.concat(parts, ignore_index=True)[cols]
            .sort_values(["ruleset", "game_id", "mark"], ignore_index=True))


def leather_table(games: pd.DataFrame, events: Events,
                  alpha: float = ALPHA) -> pd.DataFrame:
    """Per ruleset and leather mark (pooled over pairings): games, how often it was claimed,
    by seat 0, by the player leading / trailing on score at the claim; how often it filled an
    isolated one-square hole ("useful": per game, lost patches counting as not useful), an
    ordinary square, or was lost; the claimer's win rate. Rates and intervals are
    :func:`estimators.rate` over deals; deterministic self-play counts each deal's game
    once."""
    games = distinct(games)
    ev = as_summary(events, games)
    rows = []
    for (ruleset,), g in iter_groups(games, ["ruleset"]):
        n = len(g)
        gid, deal = g["game_id"].to_numpy(), g["deal"].to_numpy()
        winner = g["winner"].to_numpy()
        by_id = np.argsort(gid, kind="stable")  # claims are taken in game-id order
        mk = _marks(ev, gid)
        for j, mark in enumerate(mk.marks):
            # every game passes every mark: a game with no row at a mark has no claim there
            useful = mk.row[:, j] & mk.useful[:, j]
            r = est.rate(useful.astype(float), deal, 1 - alpha)
            ci = by_id[mk.seat[by_id, j] >= 0]
            seat, lead = mk.seat[ci, j], mk.lead[ci, j]
            c_useful, c_placed = mk.useful[ci, j], mk.placed[ci, j]
            cw = est.rate((winner[ci] == seat).astype(float), deal[ci], 1 - alpha)
            k = len(ci)
            rows.append({
                "ruleset": ruleset, "mark": mark, "rank": j + 1,
                "games": n, "claimed": k, "claim_rate": k / n,
                "by_seat0": int((seat == 0).sum()),
                "by_leader": int((lead > 0).sum()),
                "by_trailer": int((lead < 0).sum()),
                "by_level": int((lead == 0).sum()),
                "lead_mean": float(lead.sum(dtype=np.float64) / k) if k else NAN,
                "useful": int(useful.sum()), "useful_rate": r.value,
                "useful_lo": r.lo, "useful_hi": r.hi,
                "useful_of_claimed": int(c_useful.sum()) / k if k else NAN,
                "ordinary": int((c_placed & ~c_useful).sum()),
                "lost": int((mk.row[:, j] & (mk.seat[:, j] < 0)).sum()),
                "claimer_win": cw.value, "claimer_lo": cw.lo, "claimer_hi": cw.hi,
            })
    cols = ["ruleset", "mark", "rank", "games", "claimed", "claim_rate", "by_seat0",
            "by_leader", "by_trailer", "by_level", "lead_mean", "useful", "useful_rate",
            "useful_lo", "useful_hi", "useful_of_claimed", "ordinary", "lost", "claimer_win",
            "claimer_lo", "claimer_hi"]
    return pd.DataFrame(rows, columns=cols)


def first_leather_useless(games: pd.DataFrame, events: Events, center: float = 0.5,
                          margin: float = 0.10, alpha: float = ALPHA) -> pd.DataFrame:
    """Per ruleset and pairing: how often the first leather patch was useless (it filled no
    isolated one-square hole, or was lost: rank 1 of :func:`leather_table` on the pairing's
    games), as :func:`estimators.rate` over deals, with :func:`estimators.verdicts` against
    ``center +- margin`` (the publisher's "about half of the games"). Deterministic
    self-play counts each deal's game once."""
    cols = ["ruleset", "pairing", "distinct_games", "mark", "games", "deals", "rate", "lo",
            "hi", "verdict_kind", "verdict", "more_deals"]
    games = distinct(games)
    copies = copied_pairings(games)
    ev = as_summary(events, games)
    rows = []
    for (ruleset, pairing), g in iter_groups(games, ["ruleset", "pairing"]):
        mk = _marks(ev, g["game_id"].to_numpy())
        if not mk.marks:
            continue
        useless = ~(mk.row[:, 0] & mk.useful[:, 0])
        e = est.rate(useless.astype(float), g["deal"].to_numpy(), 1 - alpha)
        rows.append({"ruleset": ruleset, "pairing": str(pairing),
                     "distinct_games": str(pairing) not in copies, "mark": mk.marks[0],
                     "games": len(g), "deals": e.deals, "rate": e.value, "lo": e.lo,
                     "hi": e.hi, "_est": e})
    # one family over the rulesets and pairings (Holm)
    for r, v in zip(rows, est.verdicts([r.pop("_est") for r in rows], margin, center, alpha,
                                       family="holm"), strict=True):
        r.update(verdict_kind=v.kind, verdict=v.text(100.0, " points"),
                 more_deals=v.more_deals)
    return pd.DataFrame(rows, columns=cols)


def leather_game_values(games: pd.DataFrame, events: Events) -> tuple[np.ndarray, np.ndarray]:
    """Per game (in the order of ``games``): whether the first leather patch of its ruleset
    (rank 1 in ``leather_games``) filled a hole, and the share of its leather patches that
    did (over the marks with a claim or a loss); NaN where the game has no such row."""
    ev = as_summary(events, games)
    first = np.full(len(games), np.nan)
    share = np.full(len(games), np.nan)
    pos = np.arange(len(games))
    for (_ruleset,), g in iter_groups(games.assign(_pos=pos), ["ruleset"]):
        mk = _marks(ev, g["game_id"].to_numpy())
        if not mk.marks:
            continue
        at = g["_pos"].to_numpy()
        first[at] = np.where(mk.row[:, 0], mk.useful[:, 0], np.nan)
        rows = mk.row.sum(axis=1)
        hits = (mk.row & mk.useful).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            share[at] = np.where(rows > 0, hits / rows, np.nan)
    return first, share


def bonus_events(games: pd.DataFrame, events: Events) -> pd.DataFrame:
    """One row per bonus claim: ruleset, pairing, game_id, deal, seat, track position (of the
    claimer when it was claimed) and the game's ply count (events give no ply: seq is the
    event's index in the game). Deterministic self-play counts each deal's game once."""
    games = distinct(games)
    ev = as_summary(events, games)
    # the position of each summary row in ``games``; claims keep their stored order
    where = np.full(len(ev.game_ids), -1, dtype=np.int64)
    at = ev.rows(games["game_id"].to_numpy())
    where[at[at >= 0]] = np.flatnonzero(at >= 0)
    k = where[ev.bonus_row]
    ok = k >= 0
    out = games.iloc[k[ok]][["ruleset", "pairing", "game_id", "deal"]].reset_index(drop=True)
    return out.assign(seat=ev.bonus_seat[ok], position=ev.bonus_pos[ok], seq=ev.bonus_seq[ok])


def bonus_table(games: pd.DataFrame, events: Events,
                rulesets: Mapping[str, Any] | None = None, alpha: float = ALPHA) -> pd.DataFrame:
    """Per ruleset and pairing: how often the 7x7 bonus was claimed (per-deal interval), by
    which seat, when (the claimer's track position), the claimer's win rate, and how often it
    changed the winner: the holder won by fewer points than the bonus is worth (margin <
    bonus points), so without it they would have lost (a margin equal to the bonus would have
    been a tie, left to the tie-break, and is not counted). Rates are :func:`estimators.rate`
    over deals; deterministic self-play counts each deal's game once."""
    games = distinct(games)
    copies = copied_pairings(games)
    be = bonus_events(games, events)
    rows = []
    for (ruleset, pairing), g in iter_groups(games, ["ruleset", "pairing"]):
        rs = ruleset_of(rulesets, ruleset)
        points = (rs.bonus_points if rs is not None and rs.bonus_square is not None
                  else (0 if rs is not None else 7))
        deal = g["deal"].to_numpy()
        has0, has1 = g["bonus0"].to_numpy(bool), g["bonus1"].to_numpy(bool)
        claimed = has0 | has1
        r = est.rate(claimed.astype(float), deal, 1 - alpha)
        holder = np.where(has0, 0, np.where(has1, 1, -1))
        winner = g["winner"].to_numpy()
        margin = np.abs(g["score0"].to_numpy() - g["score1"].to_numpy())
        hw = est.rate((winner[claimed] == holder[claimed]).astype(float), deal[claimed],
                      1 - alpha)
        changed = claimed & (winner == holder) & (margin < points)
        rc = est.rate(changed.astype(float), deal, 1 - alpha)
        pos = be.loc[(be["ruleset"] == ruleset) & (be["pairing"] == pairing), "position"]
        rows.append({
            "ruleset": ruleset, "pairing": pairing, "self_play": is_self_play(g),
            "distinct_games": str(pairing) not in copies, "points": points, "games": len(g),
            "claimed": int(claimed.sum()), "claim_rate": r.value, "claim_lo": r.lo,
            "claim_hi": r.hi, "by_seat0": int(has0.sum()), "by_seat1": int(has1.sum()),
            "pos_mean": float(pos.mean()) if len(pos) else NAN,
            "pos_median": float(pos.median()) if len(pos) else NAN,
            "holder_win": hw.value, "holder_lo": hw.lo, "holder_hi": hw.hi,
            "changed": int(changed.sum()), "changed_rate": rc.value,
            "changed_lo": rc.lo, "changed_hi": rc.hi,
        })
    return pd.DataFrame(rows)
