"""The rule for a run's name: it names a folder under ``reports/``, so it may not lead out of
it or read as a flag. A run file and an experiment accept the same names."""

from __future__ import annotations

import re

NAME_RULE = "letters, digits and ._+- (not starting with a dot or a dash)"


def folder_name(name: str) -> str:
    """``name`` made into one plain folder name: no separators, no leading dot (so ``..``
    or ``../x`` cannot lead out of ``reports/``) or dash (it would read as a flag), nothing
    but letters, digits and ``._+-``."""
    safe = re.sub(r"[^A-Za-z0-9._+-]+", "-", str(name)).lstrip(".-")
    return safe or "run"


def is_folder_name(name: str) -> bool:
    """Whether ``name`` can name a run's folder as it is (:data:`NAME_RULE`)."""
    return folder_name(name) == name


__all__ = ["NAME_RULE", "folder_name", "is_folder_name"]
