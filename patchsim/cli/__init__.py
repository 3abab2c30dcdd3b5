"""The command-line interface: a thin typer layer over the library."""

from patchsim.cli.main import app, main

__all__ = ["app", "main"]
