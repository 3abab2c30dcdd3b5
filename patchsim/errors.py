"""The one base of the errors patchsim raises for a user's mistake, and the fields they carry.

A :class:`PatchsimError` lists one or more :class:`Problem` s. A problem is the library's
message (it is a ``str``, so code that reads messages keeps working) and also its parts: the
``key`` it is about (a dotted ruleset key or a parameter's name), the ``value`` given, the
``source`` (a file) and a ``hint``, and ``given``: how the user gave the key (a ruleset
override, an argument of a library function, or a file). A front end renders a problem with
its own names for those (the command line's ``--set`` for an override, ``--games`` for the
``games`` argument) through :meth:`PatchsimError.render`, without parsing the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

# how the user gave the key of a problem (Problem.given)
OVERRIDE = "override"  # a ruleset field changed by an override: the key is its dotted key
ARGUMENT = "argument"  # an argument of a library function: the key is the parameter's name

QUOTE_CHARS = 60  # how much of a value an error message quotes
# The longest bot spec a file or the command line may give (one with a model path and every
# parameter is a few hundred characters): checked where specs come in, before the bot
# registry's messages would quote a longer one whole.
MAX_SPEC_CHARS = 1000


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for error messages: a message quotes
    a short prefix of what it rejects (a name, a spec, a number), never a whole (possibly
    megabytes long) value. The one shortening of values in messages, library and front ends."""
    try:
        text = repr(value)
    except ValueError:  # an integer past Python's 4,300 digits has no text
        assert isinstance(value, int)
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(str(value)):,} characters)"


class Problem(str):
    """One problem: the library's message, with the fields it was made from.

    The text reads ``override <key>: <message>`` for an override, ``<key>: <message>`` for an
    argument and ``<source>: <key>: <message>`` for a key of a file (parts that are None are
    left out; a key of neither is not shown, the message names what it concerns); a hint
    follows the message in parentheses."""

    message: str
    key: str | None
    value: Any
    source: str | None
    hint: str | None
    given: str | None

    def __new__(cls, message: str, *, key: str | None = None, value: Any = None,
                source: str | None = None, hint: str | None = None,
                given: str | None = None) -> Problem:
        self = super().__new__(cls, _text(message, key, source, hint, given, None))
        self.message, self.key, self.value = message, key, value
        self.source, self.hint, self.given = source, hint, given
        return self

    def text(self, names: Mapping[str, str] | None = None,
             hints: Mapping[str, str] | None = None) -> str:
        """The problem with a front end's names: ``names["override"]`` for the word before an
        override's key, ``names[key]`` for an argument (unnamed ones keep the library's);
        ``hints[key]`` replaces the hint of a problem about ``key`` that has one (a front end
        says how to fix it in its own terms)."""
        hint = self.hint
        if hint and hints and self.key is not None and self.key in hints:
            hint = hints[self.key]
        return _text(self.message, self.key, self.source, hint, self.given, names)

    def __reduce__(self) -> tuple[Any, ...]:
        # problems cross process boundaries inside errors (joblib, dask)
        return (_problem, (self.message, self.key, self.value, self.source, self.hint,
                           self.given))


def _problem(message: str, key: str | None, value: Any, source: str | None, hint: str | None,
             given: str | None) -> Problem:
    return Problem(message, key=key, value=value, source=source, hint=hint, given=given)


def _text(message: str, key: str | None, source: str | None, hint: str | None,
          given: str | None, names: Mapping[str, str] | None) -> str:
    body = f"{message} ({hint})" if hint else message
    names = names or {}
    if given == OVERRIDE:
        where = f"{names.get(OVERRIDE, OVERRIDE)} {key}" if key else names.get(OVERRIDE,
                                                                             OVERRIDE)
    elif given == ARGUMENT and key:
        where = names.get(key, key)
    elif source:
        where = f"{source}: {key}" if key else source
    else:  # a key without a source is a field for front ends, named in the message itself
        where = ""
    return f"{where}: {body}" if where else body


class PatchsimError(Exception):
    """Base of every error patchsim raises for bad input or a run that cannot go on.

    ``problems`` lists what is wrong (each a :class:`Problem`); ``title``, when given, heads
    a list of them; ``context`` says where the whole error arose (``"run.yaml: rulesets[0]:
    "``), ahead of everything. ``key``, ``value``, ``source`` and ``hint`` are the first
    problem's."""

    title: str | None = None

    def __init__(self, *problems: str, title: str | None = None, context: str = "") -> None:
        self.problems: list[str] = [p if isinstance(p, Problem) else Problem(str(p))
                                    for p in problems]
        if title is not None:
            self.title = title
        self.context = context
        first = self.problems[0] if self.problems else Problem("")
        assert isinstance(first, Problem)
        # the first problem's fields, for a caller that handles one problem
        self.key: str | None = first.key
        self.value: Any = first.value
        self.source: str | None = first.source
        self.hint: str | None = first.hint
        super().__init__(*problems)

    @classmethod
    def about(cls, key: str, message: str, *, value: Any = None, hint: str | None = None,
              given: str | None = ARGUMENT, source: str | None = None) -> Self:
        """An error of one problem with a key (by default an argument's name)."""
        return cls(Problem(message, key=key, value=value, hint=hint, given=given,
                           source=source))

    @classmethod
    def wrapping(cls, error: PatchsimError, context: str = "") -> Self:
        """An error of this class with ``error`` 's problems and heading, ``context`` first
        (for a layer that adds where the problem arose, keeping the fields)."""
        new = cls(*error.problems, title=error.heading(), context=context + error.context)
        new.__cause__ = error
        return new

    def heading(self) -> str | None:
        """The line that heads the list of problems (None: a single problem stands alone)."""
        return self.title

    def render(self, names: Mapping[str, str] | None = None,
               hints: Mapping[str, str] | None = None) -> str:
        """The message with a front end's names for overrides and arguments and its hints
        (see :meth:`Problem.text`); ``str(error)`` is ``error.render()``."""
        texts = [p.text(names, hints) if isinstance(p, Problem) else str(p)
                 for p in self.problems]
        head = self.heading()
        if head is None:
            return self.context + "\n".join(texts)
        n = len(texts)
        lines = [f"{self.context}{head} ({n} problem{'' if n == 1 else 's'}):"]
        lines += [f"  {t}" for t in texts[:MAX_SHOWN_PROBLEMS]]
        if n > MAX_SHOWN_PROBLEMS:  # a message, not a listing of a broken file
            lines.append(f"  ... and {n - MAX_SHOWN_PROBLEMS:,} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()

    def __reduce__(self) -> tuple[Any, ...]:
        # errors cross process boundaries (joblib, dask); subclasses have __init__s of their
        # own, so the instance is rebuilt from its state, not by calling __init__ again
        return (_restore, (type(self), self.args, self.__dict__))


MAX_SHOWN_PROBLEMS = 30  # an error message lists this many problems, then counts the rest


def _restore(cls: type[PatchsimError], args: tuple[Any, ...],
             state: dict[str, Any]) -> PatchsimError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error
