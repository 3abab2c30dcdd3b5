"""The package's shape, checked from its source (README, Design): the folders are layers and
imports go one way, down; no module reaches for another module's private names; and the
library imports what it needs at the top, never inside a function to dodge a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "patchsim"

# A module may import from its own folder and from folders of a lower rank. engine and
# analysis are side by side: the rules know no statistics, and the statistics read tables
# and play nothing (they import neither the engine nor the bots). web and reporting are side
# by side too: what both draw (the position view) lives below them, in engine/view.py.
RANK = {
    "_version": 0, "_jitcache": 0, "atomic": 0, "errors": 0,
    "document": 0.5,  # documents for every floor: above atomic (it writes files), below all
    "engine": 1, "analysis": 1,
    "bots": 2,
    "play": 3,
    "web": 4, "reporting": 4,
    "experiments": 5,
    "cli": 6,
}
# the package's front door (lazy exports) and the command line (lazy commands, so that
# `patchsim --help` starts fast) may import inside functions
LAZY_ALLOWED = {"__init__", "cli"}


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        out.append((parts[0], path))
    return out


def ids(modules: list[tuple[str, Path]]) -> list[str]:
    return [str(p.relative_to(PACKAGE)) for _, p in modules]


OWN_MODULES = {p.stem for p in PACKAGE.rglob("*.py")}  # private module names are fine


def patchsim_imports(tree: ast.AST):
    """(node, imported module, imported names) of every import of a patchsim module."""
    for node in ast.walk(tree):
        # relative imports would slip past the layer check: the package uses none
        assert not (isinstance(node, ast.ImportFrom) and node.level > 0), \
            f"line {node.lineno}: a relative import; name the module in full"
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "patchsim":
            yield node, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "patchsim":
                    yield node, a.name, []


def target_folder(module: str, names: list[str]) -> str:
    parts = module.split(".")
    if len(parts) > 1:
        return parts[1]
    # `from patchsim import engine` names the folder in the imported names
    return names[0] if len(names) == 1 else "__init__"


def test_every_folder_has_a_rank() -> None:
    folders = {top for top, _ in modules()} - {"__init__"}
    assert folders <= set(RANK), f"give these a layer: {sorted(folders - set(RANK))}"


@pytest.mark.parametrize("top,path", modules(), ids=ids(modules()))
def test_imports_go_down_and_stay_public(top: str, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(PACKAGE.parent)
    for node, module, names in patchsim_imports(tree):
        folder = target_folder(module, names)
        if top != "__init__" and folder != top:
            assert folder in RANK and RANK[folder] < RANK[top], (
                f"{where}:{node.lineno} imports {module} ({folder}), "
                f"which is not below {top}")
        private = [n for n in names if n.startswith("_") and not n.endswith("__")
                   and n not in OWN_MODULES]
        assert not private, f"{where}:{node.lineno} imports private {private} from {module}"


LIBRARY = [m for m in modules() if m[0] not in LAZY_ALLOWED]


@pytest.mark.parametrize("top,path", LIBRARY, ids=ids(LIBRARY))
def test_the_library_imports_at_the_top(top: str, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(PACKAGE.parent)
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node, module, _ in patchsim_imports(fn):
                pytest.fail(f"{where}:{node.lineno} imports {module} inside {fn.name}()")
