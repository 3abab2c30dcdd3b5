"""Bots from a user's module, named by an import path (``mypackage.mybots:Hoarder(x=1)``):
the module imported from the installed packages or from given folders (sys.path left
alone), the bot constructed, and every failure of a user's code turned into a BotSpecError
that names the module and what it raised."""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from patchsim.bots.spec import BotSpecError, canonical_spec
from patchsim.errors import quote


def _import_module(name: str, folders: Sequence[str]) -> ModuleType:
    """Import module ``name`` (dotted: ``pkg.mod``), looking for its top-level module or
    package in ``folders`` first, then where ``import`` looks. Nothing global but
    sys.modules changes: sys.path is left alone, so another thread's imports and the
    caller's interpreter are unaffected. A module in a folder is found by its own name;
    a plain module it imports from the same folder must be installed or on sys.path (a
    package's own submodules are found through the package)."""
    top = name.partition(".")[0]
    if folders and top not in sys.modules:
        spec = importlib.machinery.PathFinder.find_spec(top, [str(f) for f in folders])
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            sys.modules[top] = module  # as import does: a module may import itself
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(top, None)
                raise
    return importlib.import_module(name)


def import_bot(path: str, params: dict[str, Any], bot_path: Sequence[str] = ()) -> Any:
    module_name, _, attr = path.partition(":")
    try:
        module = _import_module(module_name, bot_path)
    except ModuleNotFoundError as e:
        where = f" (searched also {', '.join(bot_path)})" if bot_path else ""
        # e names the missing module whole: quoted by a prefix, as the module's name is
        missing = f"No module named {quote(e.name)}" if e.name else str(e)
        raise BotSpecError(f"cannot import bot module {quote(module_name)}: "
                           f"{missing}{where}") from None
    except SyntaxError as e:
        raise BotSpecError(f"bot module {quote(module_name)} has a syntax error: {e.filename}, "
                           f"line {e.lineno}: {e.msg}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - a user's module may raise anything
        # on import, sys.exit() too (a KeyboardInterrupt here may be the user's Ctrl-C)
        raise BotSpecError(f"bot module {quote(module_name)} raised {type(e).__name__} while "
                           f"being imported: {e}") from None
    factory = getattr(module, attr, None)
    if factory is None:
        raise BotSpecError(f"module {quote(module_name)} has no attribute {quote(attr)}")
    try:
        bot = factory(**params)
    except TypeError as e:
        raise BotSpecError(f"{path}: bad parameters {params!r}: {e}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - a user's constructor may raise
        # anything, sys.exit() too
        raise BotSpecError(f"{path}({_params_text(params)}) raised {type(e).__name__} when "
                           f"constructed: {e}") from None
    if not callable(getattr(bot, "choose", None)):
        raise BotSpecError(f"{path} is not a bot: it has no choose(game, moves, rng) method")
    if not isinstance(getattr(bot, "spec", None), str):
        with contextlib.suppress(AttributeError):
            bot.spec = canonical_spec(path, params)
    return bot


def _params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())
