"""The command reference (docs/reference.md), rendered from the command line itself.

Every command's usage line, help text, arguments and options come from the click command
that typer builds for ``patchsim``, through the same calls ``--help`` uses, so the page
cannot say something the command line does not. ``python -m patchsim.cli.reference`` prints
the page; ``python -m patchsim.cli.reference docs/reference.md`` writes it, and
``tests/test_docs.py`` fails when the committed page differs from what this renders.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from typing import Any

import typer
import typer.core
import typer.main

from patchsim.atomic import atomic_write
from patchsim.cli.main import app

REGENERATE = "python -m patchsim.cli.reference docs/reference.md"

# Markdown characters that would change how the help text reads (a "<ruleset>" in a default
# folder would otherwise be swallowed as an HTML tag, "sample_plies" could start emphasis)
_ESCAPES = {"\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]",
            "<": "&lt;", ">": "&gt;", "&": "&amp;", "|": "\\|"}
_ESCAPE = re.compile("|".join(re.escape(k) for k in _ESCAPES))
# typer's type tag after an argument's name in its help record ("CONFIG <str>")
_TYPE_TAG = re.compile(r"\s+<[^>]*>$")


def escape(text: str) -> str:
    """Text with the Markdown characters that would change its meaning escaped."""
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], text)


# typer builds its commands on the click it carries (typer._click), so they are reached
# through their own methods and classes, never through an installed click
@functools.cache
def _group() -> typer.core.TyperGroup:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    return group


def root() -> tuple[typer.core.TyperGroup, Any]:
    """The ``patchsim`` command group and a fresh context for it (nothing parsed, nothing
    run)."""
    group = _group()
    return group, group.context_class(group, info_name="patchsim")


def command_names() -> list[str]:
    """The commands of ``patchsim``, in the order ``patchsim --help`` lists them."""
    group, ctx = root()
    return [name for name in group.list_commands(ctx)
            if (cmd := group.get_command(ctx, name)) is not None and not cmd.hidden]


def _param_lines(cmd: Any, ctx: Any, kind: str) -> list[str]:
    lines = []
    for param in cmd.get_params(ctx):
        if param.param_type_name != kind:  # "argument" or "option"
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        if kind == "argument":
            names = _TYPE_TAG.sub("", names)
        help_text = " ".join(help_text.split())  # click pads "[default: ...]" with two spaces
        lines.append(f"- `{names}`" + (f": {escape(help_text)}" if help_text else ""))
    return lines


def render_command(name: str) -> str:
    """One command's section: usage, help, arguments and options."""
    group, root_ctx = root()
    cmd = group.get_command(root_ctx, name)  # the group's own lookup sets the value names
    if cmd is None:
        raise KeyError(name)
    ctx = cmd.context_class(cmd, info_name=name, parent=root_ctx)
    usage = " ".join(["patchsim", name, *cmd.collect_usage_pieces(ctx)])
    parts = [f"## patchsim {name}", "", "```text", usage, "```", ""]
    for paragraph in (cmd.help or "").split("\n"):
        if paragraph.strip():
            parts += [escape(" ".join(paragraph.split())), ""]
    arguments = _param_lines(cmd, ctx, "argument")
    if arguments:
        parts += ["Arguments:", "", *arguments, ""]
    options = _param_lines(cmd, ctx, "option")
    if options:
        parts += ["Options:", "", *options, ""]
    return "\n".join(parts)


def render() -> str:
    """The whole reference page, in Markdown."""
    group, _ = root()
    names = command_names()
    head = [
        "# Command reference",
        "",
        f"Generated from the command line by `{REGENERATE}`.",
        "Do not edit it by hand: a test fails when this page and the command line differ.",
        "`patchsim COMMAND --help` prints the same.",
        "",
        escape(" ".join((group.help or "").split())),
        "",
        "Commands: " + ", ".join(f"[{n}](#patchsim-{n})" for n in names) + ".",
        "",
    ]
    return "\n".join(head + [render_command(n) for n in names]).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    """Print the page, or write it to the one file named."""
    text = render()
    if not argv:
        sys.stdout.write(text)
        return 0
    if len(argv) != 1:
        sys.stderr.write(f"usage: {REGENERATE}\n")
        return 2
    atomic_write(Path(argv[0]), text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
