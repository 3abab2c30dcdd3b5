"""The ``patchsim`` command line: a thin typer layer; each command parses its arguments,
loads what it needs and calls one library function. User mistakes get a one-paragraph message
and a non-zero exit status, never a traceback."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

app = typer.Typer(
    help="Rules-variant simulation and balance testing for the board game Patchwork.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a user-facing error and return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@app.command()
def replay(
    file: Annotated[str, typer.Argument(help="Game record (JSON); '-' reads standard input.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the final position as JSON.")]
    = False,
    trace: Annotated[bool, typer.Option("--trace", help="Print the position at the start and "
                                        "after every move (JSON lines with --json).")] = False,
) -> None:
    """Replay a game record and show the final position (or every position with --trace)."""
    from patchsim.record import GameRecord, RecordError
    from patchsim.record import replay as replay_record
    from patchsim.render import render

    try:
        if file == "-":
            record = GameRecord.from_json(sys.stdin.read(), "-")
        else:
            record = GameRecord.load(file)
        game = None
        for game in replay_record(record):
            if trace:
                if as_json:
                    typer.echo(json.dumps(game.summary()))
                else:
                    typer.echo(render(game) + "\n")
        assert game is not None
        if not trace:
            typer.echo(json.dumps(game.summary()) if as_json else render(game))
    except RecordError as e:
        raise fail(str(e), 1) from None


@app.command("rulesets")
def list_rulesets() -> None:
    """List the shipped rulesets with their content hashes."""
    from patchsim.ruleset import load_ruleset, shipped_rulesets

    for name in shipped_rulesets():
        rs = load_ruleset(name)
        typer.echo(f"{name:<28} {rs.content_hash()}  {rs.description}")


@app.command("show-ruleset")
def show_ruleset(
    ref: Annotated[str, typer.Argument(help="A shipped ruleset name or a YAML file.")],
    override: Annotated[list[str] | None, typer.Option("--set", help="key=value override, "
                                                       "e.g. --set bonus.points=9")] = None,
) -> None:
    """Print a ruleset fully resolved (extends and overrides applied), with its hash."""
    import yaml

    from patchsim.ruleset import RulesetError, load_ruleset, parse_override

    try:
        rs = load_ruleset(ref)
        if override:
            rs = rs.with_overrides(dict(parse_override(o) for o in override))
    except RulesetError as e:
        raise fail(str(e)) from None
    typer.echo(f"# {rs.name}  hash {rs.content_hash()}")
    typer.echo(yaml.safe_dump(rs.to_dict(), sort_keys=False, default_flow_style=None))


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()

