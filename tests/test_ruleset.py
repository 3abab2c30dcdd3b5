"""Tests for patchsim.engine.ruleset: loading, validation, extends, overrides, hashing,
round trips."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchsim.engine.ruleset import (
    PatchSpec,
    Ruleset,
    RulesetError,
    configs_dir,
    load_ruleset,
    parse_override,
    ruleset_from_dict,
    shipped_rulesets,
)

REPO = Path(__file__).resolve().parent.parent
# The module-scoped ruleset fixtures are read-only, so sharing them across examples is safe.
_FIXTURES_OK = [HealthCheck.function_scoped_fixture]


@pytest.fixture(scope="module")
def e1() -> Ruleset:
    return load_ruleset("edition1")


@pytest.fixture(scope="module")
def e2() -> Ruleset:
    return load_ruleset("edition2")


def write(path: Path, data: Any) -> Path:
    """Write YAML text (a str) or data (anything else) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def load_error(ref: str | Path) -> RulesetError:
    with pytest.raises(RulesetError) as info:
        load_ruleset(ref)
    return info.value


def has_problem(err: RulesetError, label: str, key: str, text: str) -> bool:
    """Whether one problem reads "<...label>: <key>: ...text..." (files may show in full)."""
    return any(f"{label}: {key}: " in p and text in p for p in err.problems)


# ------------------------------------------------------------------------------------------
# Component data (docs/rules.md C1, C3, C4)


def test_base_patches_match_the_rules_check_sums(e1: Ruleset) -> None:
    assert len(e1.patches) == 33
    assert sum(p.cost for p in e1.patches) == 133
    assert sum(p.time for p in e1.patches) == 107
    assert sum(p.income for p in e1.patches) == 38
    assert sum(p.size for p in e1.patches) == 166
    assert [p.id for p in e1.patches] == [f"P{i:02d}" for i in range(33)]


def test_p16_costs_no_buttons_and_three_time(e1: Ruleset) -> None:
    p16 = e1.patch("P16")
    assert (p16.cost, p16.time) == (0, 3)


def test_duplicated_shapes_have_different_prices(e1: Ruleset) -> None:
    by_shape: dict[str, list[PatchSpec]] = {}
    for p in e1.patches:
        by_shape.setdefault(p.shape, []).append(p)
    twins = {tuple(q.id for q in ps) for ps in by_shape.values() if len(ps) > 1}
    assert twins == {("P17", "P18"), ("P25", "P26"), ("P27", "P28")}
    for a, b in twins:
        pa, pb = e1.patch(a), e1.patch(b)
        assert (pa.cost, pa.time, pa.income) != (pb.cost, pb.time, pb.income)


def test_setup_and_scoring_values(e1: Ruleset) -> None:
    assert (e1.rows, e1.cols, e1.last_space) == (9, 9, 53)
    assert e1.income_marks == (5, 11, 17, 23, 29, 35, 41, 47, 53)
    assert (e1.starting_buttons, e1.offer_size, e1.empty_square_penalty) == (5, 3, 2)
    assert (e1.bonus_square, e1.bonus_points) == (7, 7)
    assert (e1.start_after, e1.leather_when_full) == ("P00", "discard")
    assert e1.patch("P00").shape == "XX"


def test_patch_spec_cells() -> None:
    p = PatchSpec(id="P10", shape="XXX/X.X", cost=1, time=2, income=0)
    assert p.cells == ((0, 0), (0, 1), (0, 2), (1, 0), (1, 2))
    assert p.size == 5
    same = PatchSpec("P10", "XXX/X.X", 1, 2, 0, cells=p.cells, size=5)
    assert same == p
    with pytest.raises(ValueError, match="cells"):
        PatchSpec("P10", "XXX/X.X", 1, 2, 0, cells=((0, 0),))


def test_patch_lookup(e1: Ruleset) -> None:
    assert e1.patch("P19").cost == 10
    with pytest.raises(KeyError, match="P99.*edition1"):
        e1.patch("P99")


# ------------------------------------------------------------------------------------------
# Editions and hashes


def test_editions_differ_only_in_leather(e1: Ruleset, e2: Ruleset) -> None:
    assert e1.leather_marks == (20, 26, 32, 44, 50)
    assert e2.leather_marks == (26, 32, 38, 44, 50)
    assert (e1.name, e2.name) == ("edition1", "edition2")
    same = dataclasses.replace(e1, leather_marks=e2.leather_marks, name=e2.name,
                               description=e2.description)
    assert same == e2
    assert same.content_hash() == e2.content_hash()


def test_hashes(e1: Ruleset, e2: Ruleset) -> None:
    h1, h2 = e1.content_hash(), e2.content_hash()
    assert h1 != h2
    assert len(h1) == 16 and int(h1, 16) >= 0
    assert load_ruleset("edition1").content_hash() == h1
    renamed = dataclasses.replace(e1, name="other", description="something else",
                                  source="/elsewhere.yaml")
    assert renamed.content_hash() == h1
    assert renamed == dataclasses.replace(e1, name="other", description="something else")
    for key, value in [("starting_buttons", 6), ("bonus.points", 8), ("offer_size", 4),
                       ("leather_when_full", "stay"), ("patches.P19.cost", 9), ("bonus", None),
                       ("start_after", "P01"), ("empty_square_penalty", 3)]:
        assert e1.with_overrides({key: value}).content_hash() != h1, key


@pytest.mark.slow
def test_hash_is_stable_across_processes(e2: Ruleset, tmp_path: Path) -> None:
    code = ("from patchsim.engine.ruleset import load_ruleset; "
            "print(load_ruleset('edition2').content_hash())")
    seen = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed,
               "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                             capture_output=True, text=True, check=True)
        seen.add(out.stdout.strip())
    assert seen == {e2.content_hash()}


@settings(max_examples=30, deadline=None, suppress_health_check=_FIXTURES_OK)
@given(rnd=st.randoms(use_true_random=False))
def test_hash_ignores_key_and_mark_order(e2: Ruleset, rnd: Any) -> None:
    items = list(e2.to_dict().items())
    rnd.shuffle(items)
    shuffled = dict(items)
    rnd.shuffle(shuffled["track"]["leather"])
    rnd.shuffle(shuffled["track"]["income"])
    again = ruleset_from_dict(shuffled)
    assert again == e2
    assert again.content_hash() == e2.content_hash()


# ------------------------------------------------------------------------------------------
# Finding shipped rulesets


def test_shipped_rulesets() -> None:
    names = shipped_rulesets()
    assert names == sorted(names)
    assert {"edition1", "edition2"} <= set(names)
    assert not any(n.startswith("patches/") for n in names)
    assert (configs_dir() / "edition1.yaml").is_file()
    for name in names:
        assert load_ruleset(name).content_hash()


def test_variant_in_sub_folder() -> None:
    no_bonus = load_ruleset("variants/no_bonus")
    assert (no_bonus.bonus_square, no_bonus.bonus_points) == (None, 0)
    assert no_bonus.to_dict()["bonus"] is None
    assert load_ruleset("variants/leather_stays").leather_when_full == "stay"


def test_load_by_name_from_another_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            e2: Ruleset) -> None:
    monkeypatch.chdir(tmp_path)
    loaded = load_ruleset("edition2")
    assert loaded == e2
    assert loaded.source is not None and Path(loaded.source).is_file()


def test_load_by_path(tmp_path: Path, e1: Ruleset) -> None:
    path = write(tmp_path / "mine.yaml", {**e1.to_dict(), "name": "mine"})
    assert load_ruleset(path) == dataclasses.replace(e1, name="mine")
    assert load_ruleset(str(path)).name == "mine"


def test_missing_file_lists_shipped_names(tmp_path: Path) -> None:
    err = load_error(tmp_path / "nothing.yaml")
    assert "nothing.yaml" in str(err) and "edition1" in str(err) and "edition2" in str(err)
    err = load_error("edition3")
    assert "edition3" in str(err) and "edition1, edition2" in str(err)


# ------------------------------------------------------------------------------------------
# extends


def test_extends_with_one_override(tmp_path: Path, e2: Ruleset) -> None:
    path = write(tmp_path / "rich.yaml", "extends: edition2\nstarting_buttons: 6\n")
    rich = load_ruleset(path)
    assert rich.name == "rich"  # never inherited: the file stem
    assert rich.description == ""  # not inherited either: it would describe other rules
    assert rich == dataclasses.replace(e2, starting_buttons=6, name="rich", description="")
    assert rich.content_hash() == e2.with_overrides({"starting_buttons": 6}).content_hash()
    assert rich.content_hash() != e2.content_hash()


def test_extends_keeps_own_name_and_merges_mappings(tmp_path: Path) -> None:
    path = write(tmp_path / "x.yaml", "name: big\nextends: edition1\nbonus: {points: 9}\n"
                                      "track: {leather: [50, 20]}\n")
    big = load_ruleset(path)
    assert big.name == "big"
    assert (big.bonus_square, big.bonus_points) == (7, 9)
    assert big.leather_marks == (20, 50)
    assert big.income_marks == load_ruleset("edition1").income_marks


def test_extends_by_relative_path(tmp_path: Path, e1: Ruleset) -> None:
    # The parent's patch table path is relative to the parent, not to the child.
    parent = {**e1.to_dict(), "name": "parent", "patches": "tables/base.yaml"}
    write(tmp_path / "base" / "tables" / "base.yaml", {"patches": e1.to_dict()["patches"]})
    write(tmp_path / "base" / "parent.yaml", parent)
    child = write(tmp_path / "mine" / "child.yaml",
                  "extends: ../base/parent.yaml\nstart_after: P01\n")
    loaded = load_ruleset(child)
    assert loaded == dataclasses.replace(e1, name="child", start_after="P01", description="")


def test_extends_cycles(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "extends: b.yaml\n")
    write(tmp_path / "b.yaml", "extends: a.yaml\n")
    err = load_error(tmp_path / "a.yaml")
    assert "cycle" in str(err) and "a.yaml -> b.yaml -> a.yaml" in str(err)
    write(tmp_path / "self.yaml", "extends: self.yaml\nstarting_buttons: 1\n")
    assert "cycle" in str(load_error(tmp_path / "self.yaml"))


def test_extends_unknown_targets(tmp_path: Path) -> None:
    err = load_error(write(tmp_path / "x.yaml", "extends: edition9\n"))
    assert has_problem(err, "x.yaml", "extends", "unknown ruleset 'edition9'")
    assert "edition1" in str(err)
    err = load_error(write(tmp_path / "y.yaml", "extends: gone.yaml\n"))
    assert has_problem(err, "y.yaml", "extends", "no such file 'gone.yaml'")
    err = load_error(write(tmp_path / "z.yaml", "extends: [edition1]\n"))
    assert has_problem(err, "z.yaml", "extends", "expected a shipped ruleset name")


def test_patch_changes_of_parent_and_child_both_apply(tmp_path: Path) -> None:
    write(tmp_path / "p.yaml", "extends: edition1\npatch_changes: {P19: {cost: 9, time: 9}}\n")
    child = write(tmp_path / "c.yaml", "extends: p.yaml\n"
                                       "patch_changes: {P19: {time: 1}, P20: {income: 0}}\n")
    rs = load_ruleset(child)
    assert (rs.patch("P19").cost, rs.patch("P19").time) == (9, 1)
    assert rs.patch("P20").income == 0
    assert "patch_changes" not in rs.to_dict()


def test_problem_names_the_file_that_set_the_key(tmp_path: Path) -> None:
    write(tmp_path / "parent.yaml", "extends: edition1\nbonus: {points: -3}\n")
    child = write(tmp_path / "child.yaml", "extends: parent.yaml\noffer_size: 0\n")
    err = load_error(child)
    assert has_problem(err, "parent.yaml", "bonus.points", "at least 0")
    assert has_problem(err, "child.yaml", "offer_size", "at least 1")


def test_board_problem_blames_the_file_that_changed_the_board(tmp_path: Path) -> None:
    err = load_error(write(tmp_path / "huge.yaml",
                           "extends: edition1\nboard: {rows: 12, cols: 12}\n"))
    assert has_problem(err, "huge.yaml", "board", "128 bits")


# ------------------------------------------------------------------------------------------
# Validation: one rule per case, on a copy of edition1 written to bad.yaml


def _set(*path: str | int, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        node: Any = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


def _drop(*path: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        node: Any = data
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return change


def _many_leather(data: dict[str, Any]) -> None:
    data["track"] = {"last_space": 100, "income": [], "leather": list(range(1, 62))}


def _many_patches(data: dict[str, Any]) -> None:
    data["patches"] = [{"id": f"Q{i}", "shape": "X", "cost": 0, "time": 1, "income": 0}
                       for i in range(201)]
    data["start_after"] = "Q0"


def _small_board(data: dict[str, Any]) -> None:
    data["board"] = {"rows": 5, "cols": 5}
    data["bonus"] = {"square": 5, "points": 7}
    data["patches"][3]["shape"] = "XXXXXX"


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("unknown top key", _set("staring_buttons", value=5), "staring_buttons",
     "did you mean 'starting_buttons'"),
    ("unknown nested key", _set("board", "colz", value=9), "board.colz", "did you mean 'cols'"),
    ("missing key", _drop("offer_size"), "offer_size", "missing required key"),
    ("missing nested key", _drop("track", "leather"), "track.leather", "missing required key"),
    ("string for int", _set("starting_buttons", value="5"), "starting_buttons",
     "expected an integer, got string '5'"),
    ("bool is not int", _set("offer_size", value=True), "offer_size", "got boolean true"),
    ("float is not int", _set("empty_square_penalty", value=2.0), "empty_square_penalty",
     "expected an integer"),
    ("board rows low", _set("board", "rows", value=0), "board.rows", "between 1 and 16"),
    ("board cols high", _set("board", "cols", value=17), "board.cols", "between 1 and 16"),
    ("board too many squares", _set("board", value={"rows": 12, "cols": 11}), "board",
     "128 bits"),
    ("board not a mapping", _set("board", value=[9, 9]), "board", "expected a mapping"),
    ("last space low", _set("track", "last_space", value=0), "track.last_space",
     "between 1 and 1000"),
    ("last space high", _set("track", "last_space", value=1001), "track.last_space",
     "between 1 and 1000"),
    ("income past the end", _set("track", "income", value=[5, 54]), "track.income[1]",
     "between 1 and 53"),
    ("income mark zero", _set("track", "income", value=[0]), "track.income[0]", "between 1"),
    ("duplicate leather", _set("track", "leather", value=[20, 26, 26]), "track.leather[2]",
     "duplicate mark 26 (also at track.leather[1])"),
    ("leather not ints", _set("track", "leather", value=[20, "x"]), "track.leather[1]",
     "expected an integer"),
    ("leather not a list", _set("track", "leather", value=20), "track.leather",
     "expected a list"),
    ("too many leather marks", _many_leather, "track.leather", "at most 60"),
    ("negative buttons", _set("starting_buttons", value=-1), "starting_buttons", "at least 0"),
    ("offer size zero", _set("offer_size", value=0), "offer_size", "at least 1"),
    ("negative penalty", _set("empty_square_penalty", value=-2), "empty_square_penalty",
     "at least 0"),
    ("bonus square too big", _set("bonus", "square", value=10), "bonus.square",
     "between 1 and 9"),
    ("bonus square zero", _set("bonus", "square", value=0), "bonus.square", "between 1 and 9"),
    ("negative bonus points", _set("bonus", "points", value=-1), "bonus.points", "at least 0"),
    ("bonus of a wrong type", _set("bonus", value=True), "bonus", "null / none"),
    ("bonus missing points", _drop("bonus", "points"), "bonus.points", "missing required key"),
    ("no patches", _set("patches", value=[]), "patches", "at least one patch"),
    ("too many patches", _many_patches, "patches", "at most 200"),
    ("patches not a list", _set("patches", value=5), "patches", "expected a list"),
    ("patch not a mapping", _set("patches", 2, value="XX"), "patches[2]", "expected a mapping"),
    ("patch missing key", _drop("patches", 2, "income"), "patches[2].income",
     "missing required key"),
    ("patch unknown key", _set("patches", 2, "colour", value="red"), "patches[2].colour",
     "unknown key"),
    ("duplicate id", _set("patches", 5, "id", value="P02"), "patches[5].id",
     "duplicate id 'P02' (also patches[2])"),
    ("bad id characters", _set("patches", 3, "id", value="P-3"), "patches[3].id",
     "letters, digits"),
    ("id not a string", _set("patches", 3, "id", value=3), "patches[3].id", "quote it"),
    ("ragged shape", _set("patches", 4, "shape", value="XX/XXX"), "patches[4].shape",
     "row 2 is longer than row 1"),
    ("short row", _set("patches", 4, "shape", value="XXX/XXX/XX"), "patches[4].shape",
     "row 3 is shorter than row 1"),
    ("bad character", _set("patches", 4, "shape", value="XO"), "patches[4].shape", "'O'"),
    ("lower-case x", _set("patches", 4, "shape", value="xx"), "patches[4].shape", "capital"),
    ("empty shape", _set("patches", 4, "shape", value=""), "patches[4].shape", "empty shape"),
    ("no covered square", _set("patches", 4, "shape", value="../.."), "patches[4].shape",
     "at least one 'X'"),
    ("empty first row", _set("patches", 4, "shape", value=".../XXX"), "patches[4].shape",
     "first row is empty"),
    ("empty last row", _set("patches", 4, "shape", value="XXX/..."), "patches[4].shape",
     "last row is empty"),
    ("empty first column", _set("patches", 4, "shape", value=".X/.X"), "patches[4].shape",
     "first column is empty"),
    ("empty last column", _set("patches", 4, "shape", value="X./X."), "patches[4].shape",
     "last column is empty"),
    ("disconnected", _set("patches", 4, "shape", value="X.X"), "patches[4].shape",
     "not one connected piece"),
    ("diagonal only", _set("patches", 4, "shape", value="X./.X"), "patches[4].shape",
     "not one connected piece"),
    ("shape not a string", _set("patches", 4, "shape", value=11), "patches[4].shape",
     "expected a string"),
    ("does not fit", _small_board, "patches[3].shape", "1x6 and does not fit on the 5x5 quilt"),
    ("negative cost", _set("patches", 1, "cost", value=-1), "patches[1].cost", "at least 0"),
    ("time not an int", _set("patches", 1, "time", value="2"), "patches[1].time",
     "expected an integer"),
    ("income float", _set("patches", 1, "income", value=1.5), "patches[1].income",
     "expected an integer"),
    ("change of an unknown id", _set("patch_changes", value={"P99": {"cost": 1}}),
     "patch_changes.P99", "unknown patch id 'P99'"),
    ("change of an unknown field", _set("patch_changes", value={"P19": {"colour": 1}}),
     "patch_changes.P19.colour", "allowed: cost, time, income, shape"),
    ("change of the id", _set("patch_changes", value={"P19": {"id": "P77"}}),
     "patch_changes.P19.id", "cannot change 'id'"),
    ("bad changed value", _set("patch_changes", value={"P19": {"cost": -9}}),
     "patch_changes.P19.cost", "at least 0"),
    ("bad changed shape", _set("patch_changes", value={"P19": {"shape": "X.X"}}),
     "patch_changes.P19.shape", "not one connected piece"),
    ("changes not a mapping", _set("patch_changes", value=["P19"]), "patch_changes",
     "expected a mapping"),
    ("unknown start patch", _set("start_after", value="P33"), "start_after",
     "unknown patch id 'P33'"),
    ("leather policy", _set("leather_when_full", value="keep"), "leather_when_full",
     "discard, stay"),
    ("empty name", _set("name", value=""), "name", "non-empty string"),
    ("description not text", _set("description", value=["a"]), "description",
     "expected a string"),
]


@pytest.mark.parametrize(("change", "key", "text"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_validation_rule(tmp_path: Path, e1: Ruleset, change: Callable[[dict[str, Any]], None],
                         key: str, text: str) -> None:
    data = e1.to_dict()
    change(data)
    path = write(tmp_path / "bad.yaml", data)
    err = load_error(path)
    assert has_problem(err, "bad.yaml", key, text), str(err)
    # The same data given as a dict fails the same way.
    with pytest.raises(RulesetError) as info:
        ruleset_from_dict(data, source="given")
    assert has_problem(info.value, "given", key, text), str(info.value)


def test_valid_shape_edge_cases(e1: Ruleset) -> None:
    data = e1.to_dict()
    data["patches"][4]["shape"] = "X"
    data["patches"][5]["shape"] = ".X./XXX/.X."
    data["patches"][6]["shape"] = "XXXXXXXXX"  # exactly the quilt's width
    rs = ruleset_from_dict(data)
    assert rs.patches[6].size == 9


def test_long_patch_fits_when_rotated(e1: Ruleset) -> None:
    rs = e1.with_overrides({"board": {"rows": 6, "cols": 11}, "bonus.square": 6,
                            "patches.P03.shape": "X/X/X/X/X/X/X/X/X/X/X"})
    assert rs.patch("P03").size == 11
    with pytest.raises(RulesetError, match="11x1 and does not fit on the 6x10 quilt"):
        rs.with_overrides({"board.cols": 10})


def test_all_problems_are_reported_at_once(tmp_path: Path, e1: Ruleset,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # files below the working directory show as relative paths
    data = e1.to_dict()
    data["starting_buttons"] = -1
    data["track"]["leather"] = [20, 20]
    data["patches"][7]["shape"] = "XX/X"
    data["leather_when_full"] = "never"
    err = load_error(write(tmp_path / "many.yaml", data))
    assert len(err.problems) == 4
    text = str(err)
    assert text.splitlines()[0] == "invalid ruleset many.yaml (4 problems):"
    assert len(text.splitlines()) == 5
    for key in ("starting_buttons", "track.leather[1]", "patches[7].shape", "leather_when_full"):
        assert f"many.yaml: {key}: " in text


def test_marks_are_sorted_and_may_be_empty(tmp_path: Path) -> None:
    rs = load_ruleset(write(tmp_path / "m.yaml", "extends: edition1\n"
                                                 "track: {leather: [50, 20, 32], income: []}\n"))
    assert rs.leather_marks == (20, 32, 50)
    assert rs.income_marks == ()


@pytest.mark.parametrize("text", ["bonus: null", "bonus: none", "bonus: ~"])
def test_no_bonus_tile(tmp_path: Path, text: str) -> None:
    rs = load_ruleset(write(tmp_path / "nb.yaml", f"extends: edition2\n{text}\n"))
    assert (rs.bonus_square, rs.bonus_points) == (None, 0)
    assert ruleset_from_dict(rs.to_dict()) == rs


def test_name_defaults(tmp_path: Path, e1: Ruleset) -> None:
    data = e1.to_dict()
    del data["name"]
    assert load_ruleset(write(tmp_path / "stem.yaml", data)).name == "stem"
    with pytest.raises(RulesetError, match="name: missing required key"):
        ruleset_from_dict(data)
    assert ruleset_from_dict(data, source="some/where.yaml").name == "where"


# ------------------------------------------------------------------------------------------
# Files that cannot be read


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    err = load_error(write(tmp_path / "broken.yaml", "name: x\nboard: [9, 9\nbonus: :\n"))
    assert len(err.problems) == 1
    assert "broken.yaml: line 3, column" in err.problems[0]
    assert "YAML syntax error" in err.problems[0]


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    err = load_error(write(tmp_path / "dup.yaml", "extends: edition1\noffer_size: 3\n"
                                                  "offer_size: 4\n"))
    assert "dup.yaml: line 3" in str(err) and "duplicate key 'offer_size'" in str(err)


@pytest.mark.parametrize(("text", "message"), [("", "empty"), ("- 1\n- 2\n", "got list"),
                                               ("just text\n", "got string")])
def test_file_that_is_not_a_mapping(tmp_path: Path, text: str, message: str) -> None:
    err = load_error(write(tmp_path / "odd.yaml", text))
    assert "odd.yaml" in str(err) and message in str(err)


def test_patch_table_problems_name_the_table_file(tmp_path: Path, e1: Ruleset) -> None:
    patches = e1.to_dict()["patches"]
    patches[4]["shape"] = "XX/XXX"
    write(tmp_path / "table.yaml", {"patches": patches})
    err = load_error(write(tmp_path / "r.yaml", "extends: edition1\npatches: table.yaml\n"))
    assert has_problem(err, "table.yaml", "patches[4].shape", "row 2 is longer than row 1")

    err = load_error(write(tmp_path / "r2.yaml", "extends: edition1\npatches: none.yaml\n"))
    assert has_problem(err, "r2.yaml", "patches", "no such patch table file 'none.yaml'")

    write(tmp_path / "t3.yaml", "patchez: []\n")
    err = load_error(write(tmp_path / "r3.yaml", "extends: edition1\npatches: t3.yaml\n"))
    assert "t3.yaml" in str(err) and "'patches'" in str(err)

    write(tmp_path / "t4.yaml", "patches: [\n")
    err = load_error(write(tmp_path / "r4.yaml", "extends: edition1\npatches: t4.yaml\n"))
    assert "t4.yaml: line" in str(err)


def test_error_pickles() -> None:
    err = RulesetError(["a.yaml: board.rows: bad", "a.yaml: offer_size: bad"], "a.yaml")
    again = pickle.loads(pickle.dumps(err))
    assert again.problems == err.problems
    assert str(again) == str(err)
    assert str(err).splitlines()[0] == "invalid ruleset a.yaml (2 problems):"
    assert isinstance(err, ValueError)


# ------------------------------------------------------------------------------------------
# Overrides


def test_with_overrides(e2: Ruleset) -> None:
    rs = e2.with_overrides({"starting_buttons": 7, "bonus.points": 9, "board.rows": 8,
                            "track.leather": [40, 30], "patches.P19.cost": 4})
    assert (rs.starting_buttons, rs.bonus_points, rs.rows, rs.cols) == (7, 9, 8, 9)
    assert rs.leather_marks == (30, 40)
    assert rs.patch("P19").cost == 4
    assert rs.name == e2.name
    assert e2.patch("P19").cost == 10  # the original is untouched
    assert e2.with_overrides({}) == e2
    no_bonus = e2.with_overrides({"bonus": None})
    assert (no_bonus.bonus_square, no_bonus.bonus_points) == (None, 0)
    back = no_bonus.with_overrides({"bonus.square": 6, "bonus.points": 3})
    assert (back.bonus_square, back.bonus_points) == (6, 3)


@pytest.mark.parametrize(("overrides", "expected"), [
    ({"bonus.points": -1}, "override bonus.points: must be at least 0, got -1"),
    ({"bonus.pionts": 3}, "override bonus.pionts: unknown key 'pionts' (did you mean 'points'?)"),
    ({"board.rows": 20}, "override board.rows: must be between 1 and 16, got 20"),
    ({"patches.P99.cost": 3}, "override patches.P99: unknown patch id 'P99'"),
    ({"patches.P19.cost": "x"}, "override patches.P19.cost: expected an integer"),
    ({"patches.P19.shape": "X.X"}, "override patches.P19.shape: not one connected piece"),
    ({"track.leather": [1, 1]}, "override track.leather[1]: duplicate mark 1"),
    ({"starting_buttons.x": 1}, "override starting_buttons.x: starting_buttons is integer 5"),
    ({"extends": "edition1"}, "override extends: extends cannot be overridden"),
    ({"bonus..points": 1}, "override bonus..points: empty part"),
    ({"bonus": None, "bonus.points": 2}, "override bonus.square: missing required key"),
    ({"leather_when_full": "never"}, "override leather_when_full: must be one of discard, stay"),
    ({"patches": "no/such/table.yaml"}, "override patches: no such patch table file"),
    ({"patches": [{"id": "A", "shape": "X", "cost": 1, "time": 1, "income": 0}]},
     "configs/edition2.yaml: start_after: unknown patch id 'P00'"),
])
def test_invalid_overrides(e2: Ruleset, overrides: dict[str, object], expected: str) -> None:
    with pytest.raises(RulesetError) as info:
        e2.with_overrides(overrides)
    assert any(expected in p for p in info.value.problems), str(info.value)
    assert str(info.value).startswith("invalid overrides for ruleset edition2")


def test_override_consequence_is_reported(e2: Ruleset) -> None:
    # A smaller board makes the shipped 7x7 bonus impossible; the message says so.
    with pytest.raises(RulesetError) as info:
        e2.with_overrides({"board.rows": 5})
    assert any("bonus.square: must be between 1 and 5" in p for p in info.value.problems)


def test_override_with_a_patch_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     e2: Ruleset) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "few.yaml", {"patches": e2.to_dict()["patches"][:5]})
    rs = e2.with_overrides({"patches": "few.yaml"})
    assert [p.id for p in rs.patches] == ["P00", "P01", "P02", "P03", "P04"]


def test_parse_override(e2: Ruleset) -> None:
    assert parse_override("bonus.points=9") == ("bonus.points", 9)
    assert parse_override(" starting_buttons = 6 ") == ("starting_buttons", 6)
    assert parse_override("track.leather=[20, 30]") == ("track.leather", [20, 30])
    assert parse_override("bonus=null") == ("bonus", None)
    assert parse_override("bonus=") == ("bonus", None)
    assert parse_override("name=a=b") == ("name", "a=b")
    assert parse_override("leather_when_full=stay") == ("leather_when_full", "stay")
    rs = e2.with_overrides(dict(parse_override(t) for t in ["bonus=none", "patches.P16.time=2"]))
    assert rs.bonus_square is None and rs.patch("P16").time == 2


@pytest.mark.parametrize(("text", "message"), [("bonus.points", "expected KEY=VALUE"),
                                               ("=5", "missing the key"),
                                               ("track.leather=[1,", "cannot read the value")])
def test_parse_override_errors(text: str, message: str) -> None:
    with pytest.raises(RulesetError, match="invalid override") as info:
        parse_override(text)
    assert message in str(info.value)


# ------------------------------------------------------------------------------------------
# Round trips


def test_to_dict_round_trip(e1: Ruleset, e2: Ruleset) -> None:
    for rs in (e1, e2, load_ruleset("variants/no_bonus")):
        data = rs.to_dict()
        assert isinstance(data["patches"], list) and isinstance(data["patches"][0], dict)
        assert "extends" not in data and "patch_changes" not in data
        assert ruleset_from_dict(data) == rs
        text = yaml.safe_dump(data, sort_keys=False)
        again = ruleset_from_dict(yaml.safe_load(text))
        assert again == rs and again.content_hash() == rs.content_hash()


def test_to_dict_is_a_fresh_copy(e1: Ruleset) -> None:
    data = e1.to_dict()
    data["track"]["leather"].append(51)
    data["patches"][0]["cost"] = 99
    assert e1.to_dict()["track"]["leather"] == [20, 26, 32, 44, 50]
    assert e1.patch("P00").cost == 2


_SIDES = st.integers(7, 11)
_OVERRIDES = st.fixed_dictionaries({}, optional={
    "starting_buttons": st.integers(0, 40),
    "offer_size": st.integers(1, 6),
    "empty_square_penalty": st.integers(0, 4),
    "board.rows": _SIDES,
    "board.cols": _SIDES,
    "bonus": st.one_of(st.none(), st.fixed_dictionaries({"square": st.integers(1, 7),
                                                         "points": st.integers(0, 12)})),
    "track.last_space": st.integers(53, 80),
    "track.leather": st.lists(st.integers(1, 53), unique=True, max_size=53),
    "track.income": st.lists(st.integers(1, 53), unique=True, max_size=12),
    "patches.P19.cost": st.integers(0, 20),
    "patches.P03.time": st.integers(0, 9),
    "patches.P07.income": st.integers(0, 5),
    "patches.P00.shape": st.sampled_from(["X", "XXX", "X/X", "XX/X.", ".X/XX"]),
    "start_after": st.sampled_from(["P00", "P05", "P32"]),
    "leather_when_full": st.sampled_from(["discard", "stay"]),
    # any text but NUL, which a ruleset refuses (it ends C strings: file names, tables)
    "description": st.text(st.characters(blacklist_characters="\x00"), max_size=20),
    "name": st.text(alphabet="abcdefgh_0123", min_size=1, max_size=12),
})


@settings(max_examples=60, deadline=None, suppress_health_check=_FIXTURES_OK)
@given(overrides=_OVERRIDES)
@pytest.mark.slow
def test_round_trip_over_random_overrides(e2: Ruleset, overrides: dict[str, Any]) -> None:
    rs = e2.with_overrides(overrides)
    again = ruleset_from_dict(rs.to_dict())
    assert again == rs
    assert again.content_hash() == rs.content_hash()
    via_yaml = ruleset_from_dict(yaml.safe_load(yaml.safe_dump(rs.to_dict())))
    assert via_yaml == rs
    if set(overrides) - {"name", "description"}:
        changed = any(getattr(rs, f.name) != getattr(e2, f.name)
                      for f in dataclasses.fields(rs) if f.name not in ("name", "description"))
        assert changed == (rs.content_hash() != e2.content_hash())
    else:
        assert rs.content_hash() == e2.content_hash()
