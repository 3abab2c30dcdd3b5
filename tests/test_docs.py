"""The documents say only what is true: every ``patchsim`` command in a fenced code block of
the README or of docs/ parses against the real command line (its command, options and
values, through the command's own parser, without running it), the cheap ones run for real,
YAML blocks that name a file load with patchsim's own loaders, Python blocks compile (and
run where marked), docs/reference.md is what the command line renders, and the pages build
to a static site with ``mkdocs build --strict``.

A block preceded by the line ``<!-- docs-test: run -->`` is run whole: its commands in
order, or its Python, in a scratch folder that holds the page's YAML files and links to the
repository's configs/, experiments/, examples/ and patchsim/models/.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from patchsim.cli import app
from patchsim.cli.reference import REGENERATE, render, root

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
GENERATED = DOCS / "reference.md"
PAGES = [REPO / "README.md",
         *sorted(p for p in DOCS.rglob("*.md") if p != GENERATED)]
RUN_MARK = "<!-- docs-test: run -->"
SHELLS = {"bash", "sh", "shell", "console"}
# commands cheap enough to run wherever they appear (each well under a second once imported)
CHEAP = {"bots", "rulesets", "show-ruleset", "replay"}
# what a scratch folder links to, so that documented relative paths resolve there
LINKED = ["configs", "experiments", "examples", "patchsim"]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    body: str
    run: bool  # marked to be run whole

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


_FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page (an unclosed fence is a mistake)."""
    out = []
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"{page.relative_to(REPO)}:{start + 1}: unclosed code fence"
        marked = start > 0 and lines[start - 1].strip() == RUN_MARK
        out.append(Block(page, start + 1, lang, "\n".join(body), marked))
        i += 1
    return out


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]


def shell_commands(block: Block) -> list[list[str]]:
    """Each simple command of a shell block as its words, continuations joined, comments
    dropped, split at ``&&``, ``||``, ``;`` and ``|``."""
    text = block.body.replace("\\\n", " ")
    out: list[list[str]] = []
    for line in text.split("\n"):
        lexer = shlex.shlex(line, posix=True, punctuation_chars="&|;")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in lexer:
            if token in ("&&", "||", ";", "|"):
                if words:
                    out.append(words)
                words = []
            else:
                words.append(token)
        if words:
            out.append(words)
    return out


def patchsim_args(words: list[str]) -> list[str] | None:
    """The arguments after ``patchsim`` when the words run patchsim, else None."""
    rest = list(words)
    while rest and ("=" in rest[0] and not rest[0].startswith("-") or rest[0] == "time"):
        rest.pop(0)  # VAR=value patchsim ..., time patchsim ...
    if rest and Path(rest[0]).name == "patchsim":
        return rest[1:]
    return None


def documented_commands() -> list[tuple[Block, list[str]]]:
    out = []
    for block in ALL_BLOCKS:
        if block.lang in SHELLS:
            for words in shell_commands(block):
                args = patchsim_args(words)
                if args is not None:
                    out.append((block, args))
    return out


COMMANDS = documented_commands()


def parse(args: list[str]) -> None:
    """Parse a command line against the real command line, without running it; raise
    AssertionError with click's message when it does not parse."""
    group, ctx = root()
    if not args or args[0].startswith("-"):
        assert args in (["--help"],), f"group options other than --help: {args}"
        return
    command = group.get_command(ctx, args[0])
    assert command is not None, f"no command {args[0]!r} (commands: {group.list_commands(ctx)})"
    try:
        command.make_context(args[0], list(args[1:]), parent=ctx)
    except typer.Exit:  # --help prints and exits: it parsed
        pass
    except Exception as e:  # click's usage errors (typer carries its own click)
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        raise AssertionError(f"patchsim {shlex.join(args)}: {message}") from None


def yaml_file_name(block: Block) -> tuple[str, bool] | None:
    """(file name, shipped?) of a YAML block whose first line names a file."""
    first = block.body.split("\n", 1)[0]
    m = re.match(r"#\s*(\S+\.ya?ml)\b(.*)$", first)
    if not m:
        return None
    return m.group(1), "(shipped)" in m.group(2)


def scratch(tmp: Path, page: Path) -> Path:
    """A folder with the page's YAML files and links to the repository's shared folders."""
    for name in LINKED:
        (tmp / name).symlink_to(REPO / name, target_is_directory=True)
    for block in blocks(page):
        named = yaml_file_name(block) if block.lang in ("yaml", "yml") else None
        if named and not named[1]:
            target = tmp / named[0]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body + "\n", encoding="utf-8")
    return tmp


def invoke(args: list[str], where: str) -> str:
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, (f"{where}: patchsim {shlex.join(args)} exited "
                                   f"{result.exit_code}:\n{result.output}")
    return result.output


# ---------------------------------------------------------------------------------------
# commands


def test_the_documents_hold_commands() -> None:
    assert len(COMMANDS) > 40
    readme = [args for block, args in COMMANDS if block.page.name == "README.md"]
    assert ["run", "configs/edition2.yaml"] in readme


@pytest.mark.parametrize("block,args", COMMANDS,
                         ids=[f"{b.where}:{' '.join(a)[:60]}" for b, a in COMMANDS])
def test_every_command_parses(block: Block, args: list[str]) -> None:
    try:
        parse(args)
    except AssertionError as e:
        raise AssertionError(f"{block.where}: {e}") from None


def test_a_wrong_command_does_not_parse() -> None:
    """The parser is the real one: a typo, an unknown option or a wrong value fails."""
    for bad in (["rnu", "edition2"], ["run", "edition2", "--gmaes", "4"],
                ["run", "edition2", "--games", "N"], ["sweep"], ["plan", "a", "b"]):
        with pytest.raises(AssertionError):
            parse(bad)
    parse(["run", "edition2", "--games", "4"])


def test_code_is_fenced() -> None:
    """A command in an indented code block would escape the checks above."""
    for page in PAGES:
        inside = False
        for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            if _FENCE.match(line):
                inside = not inside
            elif not inside and re.match(r"^( {4}|\t)\s*(\S*/)?patchsim ", line):
                raise AssertionError(f"{page.relative_to(REPO)}:{n}: an indented command; "
                                     "put it in a fenced ```bash block")


CHEAP_RUNS = [(b, a) for b, a in COMMANDS if not b.run and (
    (a and a[0] in CHEAP) or "--help" in a)]


@pytest.mark.parametrize("block,args", CHEAP_RUNS,
                         ids=[f"{b.where}:{' '.join(a)[:60]}" for b, a in CHEAP_RUNS])
def test_cheap_commands_run(block: Block, args: list[str], tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(scratch(tmp_path, block.page))
    invoke(args, block.where)


RUN_BLOCKS = [b for b in ALL_BLOCKS if b.run]


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[b.where for b in RUN_BLOCKS])
def test_marked_blocks_run(block: Block, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(scratch(tmp_path, block.page))
    if block.lang == "python":
        monkeypatch.setattr(sys, "argv", ["docs-example"])
        exec(compile(block.body, block.where, "exec"), {"__name__": "__docs__"})
        return
    assert block.lang in SHELLS, f"{block.where}: only shell and Python blocks run"
    for words in shell_commands(block):
        args = patchsim_args(words)
        assert args is not None, f"{block.where}: a block that runs holds only patchsim"
        invoke(args + (["--no-progress"] if args[0] == "run" else []), block.where)


def test_the_readme_commands_are_the_ones_ci_runs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    setup = "python3 -m venv .venv && .venv/bin/pip install"
    main_job = f'{setup} -e . && .venv/bin/patchsim run configs/edition2.yaml'
    tests = f'{setup} -e ".[test]" && .venv/bin/python -m pytest -q'
    assert main_job in readme and tests in readme
    assert re.search(r"^\.venv/bin/python -m pytest -q\b", ci, re.M), \
        ".ci/run no longer runs the README's test command"


# ---------------------------------------------------------------------------------------
# YAML and Python


YAML_BLOCKS = [b for b in ALL_BLOCKS if b.lang in ("yaml", "yml")]


def load_file(path: Path) -> Any:
    """A documented file through the loader patchsim itself reads it with."""
    from patchsim.engine.ruleset import load_ruleset
    from patchsim.experiments.experiment import load_experiment
    from patchsim.play.config import load_run_config

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if "base" in data:
        return load_experiment(path)
    if "rulesets" in data or "ruleset" in data:
        return load_run_config(str(path))
    return load_ruleset(path)


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.where for b in YAML_BLOCKS])
def test_yaml_blocks_load(block: Block, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    data = yaml.safe_load(block.body)
    named = yaml_file_name(block)
    if named is None:
        return  # a fragment: it parsed
    name, shipped = named
    if shipped:
        # an excerpt of a shipped file: every key it shows has the file's value
        actual = yaml.safe_load((REPO / name).read_text(encoding="utf-8"))
        for key, value in data.items():
            assert actual.get(key) == value, f"{block.where}: {name}: {key} is {actual.get(key)!r}"
        monkeypatch.chdir(REPO)
        load_file(REPO / name)
    else:
        monkeypatch.chdir(scratch(tmp_path, block.page))
        load_file(tmp_path / name)


PYTHON_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "python"]


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.where for b in PYTHON_BLOCKS])
def test_python_blocks_compile(block: Block) -> None:
    compile(block.body, block.where, "exec")


def test_every_block_has_a_language() -> None:
    """An unlabelled block is neither checked nor highlighted: say what it is; and a command
    line belongs in a shell block, where it is checked."""
    for block in ALL_BLOCKS:
        assert block.lang, f"{block.where}: give the code block a language (bash, yaml, ...)"
        if block.lang not in SHELLS and block.lang != "python":
            for line in block.body.split("\n"):
                assert not re.match(r"\s*(\S*/)?patchsim ", line), \
                    f"{block.where}: a command in a {block.lang} block; use a bash block"


def test_the_reference_writes_its_page(tmp_path: Path) -> None:
    from patchsim.cli.reference import main

    assert main([str(tmp_path / "reference.md")]) == 0
    assert (tmp_path / "reference.md").read_text(encoding="utf-8") == render()
    assert main(["a", "b"]) == 2


# ---------------------------------------------------------------------------------------
# the generated reference, the links, the site


def test_the_reference_is_what_the_command_line_renders() -> None:
    assert GENERATED.read_text(encoding="utf-8") == render(), (
        f"docs/reference.md differs from the command line; regenerate it: {REGENERATE}")


def test_the_reference_covers_every_command_and_option() -> None:
    group, ctx = root()
    text = render()
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert f"## patchsim {name}\n" in text
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--"):
                    assert f"`{opt}" in text, f"{name} {opt} missing from the reference"


def test_the_reference_escapes_markdown() -> None:
    from patchsim.cli.reference import escape

    assert escape("reports/<config>/<time>") == "reports/&lt;config&gt;/&lt;time&gt;"
    assert escape("sample_plies *x* a|b") == "sample\\_plies \\*x\\* a\\|b"


def test_the_readme_stays_a_front_page() -> None:
    """The manual lives in docs/; the README answers what patchsim is for and links there."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.split("\n")) <= 250, "README.md over 250 lines: move detail into docs/"
    assert readme.index("| question | command |") < readme.index("## On a fresh machine")


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_links_resolve() -> None:
    readme = REPO / "README.md"
    for target in _LINK.findall(readme.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (REPO / target.split("#")[0]).resolve()
        assert path.exists(), f"README.md links to {target}, which does not exist"


def test_the_pages_build_to_a_site(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (it is in the test extra: pip install -e .[test])")
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site"), "--config-file", str(REPO / "mkdocs.yml")],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "walkthrough" / "index.html").exists()
