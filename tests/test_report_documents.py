"""Every study's document builds from its tables alone (no games played): sweep, tune,
prices and training documents have their sections, render to HTML and Markdown through the
one renderer, and show what the CLI prints by section title."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from patchsim.document.model import Document
from patchsim.document.render import section_markdown, to_html, to_markdown, write
from patchsim.engine.ruleset import load_ruleset
from patchsim.experiments.prices import PriceStudy, patch_summary, price_table
from patchsim.experiments.prices_document import PATCHES_TITLE
from patchsim.experiments.sweep import _verdict
from patchsim.experiments.sweep_document import sweep_document
from patchsim.experiments.tune_document import FINALISTS_TITLE, tune_document
from patchsim.play.train_document import training_document

FPW = "first_player_win"
E2 = load_ruleset("edition2")


def _rendered(doc: Document) -> tuple[str, str]:
    page, md = to_html(doc), to_markdown(doc)
    assert page.startswith("<!DOCTYPE html>") and md.startswith(f"# {doc.title}\n")
    assert "nan" not in md.lower().replace("financ", "") and "None" not in md
    return page, md


def test_the_sweep_document_builds_from_its_table(tmp_path) -> None:
    table = pd.DataFrame([
        {"ruleset": r, "pairing": "greedy vs greedy", "deals": 100, FPW: v, f"{FPW}_lo": v - .05,
         f"{FPW}_hi": v + .05, "plies": 40.0, "plies_lo": 39.0, "plies_hi": 41.0,
         f"d_{FPW}": v - .55 if r != "base" else np.nan, f"p_{FPW}": 0.0123,
         "d_plies": 1.0 if r != "base" else np.nan, "p_plies": 0.5,
         "verdict": "differs by x" if r != "base" else "", "verdict_kind": "differs"}
        for r, v in (("base", .55), ("rich", .51))])
    variants = [SimpleNamespace(label=n, overrides=o, ruleset=E2)
                for n, o in (("base", {}), ("rich", {"starting_buttons": 7}))]
    exp = SimpleNamespace(name="s <1>", description="A **sweep**.", metric=FPW, margin=0.02,
                          skill=[], variants=variants, path="experiments/s.yaml", seed=1)
    flags = pd.DataFrame([{"ruleset": "rich", "edge_weakest": 0.01, "edge_strongest": 0.08,
                           "verdict": "differs by +7.0 points [+2.0, +12.0]",
                           "trend": "grows", "imbalance_grows_with_skill": True}])
    exp.skill = ["random", "greedy"]
    doc = sweep_document(exp, table, flags, {"metric": b"\x89PNG..."}, {"command": "patchsim"},
                         shown=[FPW, "plies"], verdict=_verdict(exp, table))
    assert doc.titles() == ["Verdict", "Variants", "Imbalance and skill", "Variants defined",
                            "Reproduce"]
    page, md = _rendered(doc)
    assert "closest to 50% by point estimate is **rich**" in md
    assert "| rich | greedy vs greedy | 100 | 51.0% [46.0%, 56.0%]<br>Δ -4.0 pts (p=0.0123) |" in md
    assert "**rich**: the first-seat imbalance grows with skill" in md
    assert "| rich | +1.0 pts | +8.0 pts | differs by +7.0 points [+2.0, +12.0] | grows | yes |" \
        in md
    assert "<h1>Sweep: s &lt;1&gt;</h1>" in page and "<strong>rich</strong>" in page
    assert 'src="data:image/png;base64,' in page
    html, md_path = write(doc, tmp_path, "sweep")
    assert (tmp_path / "figures" / "sweep-metric.png").read_bytes() == b"\x89PNG..."
    # what `patchsim sweep` prints: the verdict, found by its title
    assert section_markdown(doc.section("Verdict"))[0] == "## Verdict"


def test_the_tune_document_builds_from_its_tables() -> None:
    rounds = pd.DataFrame([{"round": 0, "candidate": "a=1", "games": 40, FPW: 0.51234,
                            f"{FPW}_lo": 0.4, f"{FPW}_hi": 0.6, "loss": 0.25, "loss_lo": 0.0,
                            "loss_hi": 9.0, "level": 0.975, "dropped": False}])
    final = pd.DataFrame([{"candidate": "a=1", "games": 400, "loss": 0.1, "all_within": True,
                           FPW: 0.5, f"{FPW}_lo": 0.49, f"{FPW}_hi": 0.51,
                           f"{FPW}_p_within": 0.001234, f"{FPW}_within": True}])
    final.attrs.update(planned_deals=150, cap=400)
    exp = SimpleNamespace(name="t", description="Tune it.")
    targets = {FPW: {"target": 0.5, "tolerance": 0.02}}
    doc = tune_document(exp, rounds, final, targets, {FPW: 0.02})
    assert doc.titles()[:2] == ["Verdict", FINALISTS_TITLE]
    _page, md = _rendered(doc)
    assert "Targets: first_player_win = 50% ± 2 points" in md
    assert "Shown to meet every target" in md and "power calculation asked for 300" in md
    assert "| a=1 | 400 | 50.0% [49.0%, 51.0%] (equivalence p 0.00123) ✓ | yes |" in md
    assert "| 0 | a=1 | 40 | 51.2% [40.0%, 60.0%] | 0.25 [0, 9] | False |" in md


def test_the_prices_document_builds_from_a_synthetic_study() -> None:
    rng = np.random.default_rng(0)
    study = PriceStudy(E2, "greedy", ["P19"], [-1, 0, 1], games=400, seed=2)
    for d, mean in ((-1, 0.1), (0, 0.05), (1, 0.0)):
        study.values[("P19", d)] = np.clip(mean + rng.choice([-0.5, 0.0, 0.5], 200), -0.5, 0.5)
    from patchsim.experiments.prices import prices_document_of

    table = price_table(study)
    doc = prices_document_of(study, table, patch_summary(study, table), png=b"\x89PNG")
    assert doc.titles() == [PATCHES_TITLE, "Every cost"]
    page, md = _rendered(doc)
    assert md.startswith("# Patch prices: edition2, bot greedy\n\n## Patches\n")
    assert "| P19 | 10 |" in md and "![" in md and "(prices.png)" in md
    assert "<code>greedy</code>" in page and 'src="data:image/png;base64,' in page


def test_the_training_document_builds_from_a_history() -> None:
    man = {"ruleset_name": "edition2", "ruleset_hash": "abc", "feature_version": 3, "seed": 1,
           "generations": 2, "training_games": 100, "train_minutes": 1.26, "jobs": 1,
           "patchsim_version": "1", "created": "today",
           "settings": {"train_spec": "mcts", "epsilon": 0.1, "window": 2},
           "validation": {"rmse": 9.871, "r2": 0.5, "winner_sign_accuracy": 0.8}}
    history = [{"generation": g, "minutes": 0.5 * g, "games": 50, "train_rmse": 10.0,
                "val_rmse": 11.0, "val_r2": 0.4, "scale": 8.0,
                "win_rates": {"greedy": 0.6} if g else {}} for g in (0, 1)]
    doc = training_document(man, history, ["greedy"], ["a", "b"], [0.5, -0.25])
    _page, md = _rendered(doc)
    assert "RMSE 9.87 points" in md and "10% random searched moves" in md
    assert "| 1 | 0.50 | 50 | 10.00 | 11.00 | 0.400 | 8.0 | 60% |" in md
    assert "| 0 | 0.00 | 50 | 10.00 | 11.00 | 0.400 | 8.0 |  |" in md
    assert "| a | +0.5000 |\n| b | -0.2500 |" in md
    assert "![strength](strength.png)" in md


@pytest.mark.parametrize("cls", ["sweep", "tune", "prices"])
def test_results_carry_their_document(cls: str) -> None:
    # the CLI prints sections of the document a study returns, never split Markdown
    import dataclasses

    from patchsim.experiments import prices_files, sweep, tune

    result = {"sweep": sweep.SweepResult, "tune": tune.TuneResult,
              "prices": prices_files.PricesResult}[cls]
    assert "document" in {f.name for f in dataclasses.fields(result)}


def test_the_tune_document_shows_a_count_in_its_unit_and_a_rate_in_percent() -> None:
    final = pd.DataFrame([{"candidate": "a=1", "games": 400, "loss": 0.1, "all_within": False,
                           "plies": 41.25, "plies_lo": 40.5, "plies_hi": 42.0,
                           "plies_p_within": 0.2, "plies_within": False}])
    final.attrs.update(planned_deals=150, cap=400)
    exp = SimpleNamespace(name="t", description="Tune it.")
    doc = tune_document(exp, pd.DataFrame(), final, {"plies": {"target": 40}}, {"plies": 1.5})
    _page, md = _rendered(doc)
    assert "Targets: plies = 40 moves ± 1.5 moves" in md
    assert "| a=1 | 400 | 41.25 [40.5, 42] moves (equivalence p 0.2) | no |" in md
