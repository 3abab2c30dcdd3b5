"""The document model: a Document is titled Sections of blocks.

A block is a paragraph (``str``, Markdown-light: ``**bold**``, `` `code` ``,
``[text](url)``), a :class:`Note`, a :class:`Bullets` list, a :class:`Table`, a
:class:`Figure`, a :class:`Html` fragment (with the text Markdown shows instead) or a nested
:class:`Section`. Nothing here renders: see :mod:`patchsim.document.render`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args

import pandas as pd

Align = Literal["left", "right", "center"]
ALIGNS: tuple[Align, ...] = get_args(Align)


@dataclass
class Col:
    """A table column: the row's ``key``, its header ``title``, how a value becomes text
    (``fmt``; ``str`` when None) and its alignment."""

    key: str
    title: str
    fmt: Callable[[Any], str] | None = None
    align: Align = "right"

    def __post_init__(self) -> None:
        if self.align not in ALIGNS:
            raise ValueError(f"column {self.key!r}: align must be one of {ALIGNS}, "
                             f"not {self.align!r}")

    def text(self, value: Any) -> str:
        return self.fmt(value) if self.fmt is not None else str(value)


@dataclass
class Table:
    """Rows (dicts or a DataFrame) shown through ``columns``; ``caption`` above, ``note``
    below. A cell's line break is kept (``<br>`` in both renderings)."""

    columns: list[Col]
    rows: list[dict] | pd.DataFrame
    caption: str = ""
    note: str = ""

    def records(self) -> list[dict]:
        if isinstance(self.rows, pd.DataFrame):
            return self.rows.to_dict("records")
        return list(self.rows)

    def cells(self) -> list[list[str]]:
        """Every row's cells as text, in column order."""
        out = []
        for i, row in enumerate(self.records()):
            line = []
            for c in self.columns:
                if c.key not in row:
                    raise KeyError(f"table {self.caption!r}, row {i}: no value for column "
                                   f"{c.key!r} (the row has {sorted(map(str, row))})")
                line.append(c.text(row[c.key]))
            out.append(line)
        return out

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, caption: str = "", note: str = "",
                   align: Align = "left") -> Table:
        """A table of a frame's columns as they are (already text, or shown with ``str``)."""
        frame = frame.copy()
        titles = [str(c) for c in frame.columns]
        keys = [f"c{i}" for i in range(len(titles))]  # headers may repeat or be empty
        frame.columns = keys
        return cls([Col(k, t, align=align) for k, t in zip(keys, titles, strict=True)],
                   frame, caption, note)


@dataclass
class Figure:
    """A picture: ``path`` relative to the document (where the Markdown links it and where
    :func:`patchsim.document.render.write` puts ``png`` when given); the HTML embeds ``png``
    as a data: URI so that the page stays self-contained."""

    path: str
    caption: str
    alt: str = ""
    png: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.alt:
            self.alt = self.caption


@dataclass
class Note:
    """A highlighted remark (a caution, a missing piece)."""

    text: str


@dataclass
class Bullets:
    """A bulleted list of Markdown-light items."""

    items: list[str]


@dataclass
class Html:
    """A self-contained HTML fragment built by patchsim itself (never user text) and the
    Markdown shown in its place."""

    html: str
    markdown: str


Block = Union[str, Note, Bullets, Table, Figure, Html, "Section"]


def slug(text: str) -> str:
    """An anchor from a title: lower-case letters and digits joined by '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


@dataclass
class Section:
    """A titled part of a document; ``anchor`` defaults to the title's slug."""

    title: str
    blocks: list[Block] = field(default_factory=list)
    anchor: str | None = None

    def __post_init__(self) -> None:
        if self.anchor is None:
            self.anchor = slug(self.title)

    # builders, so that a study reads as what it says
    def p(self, text: str) -> Section:
        self.blocks.append(text)
        return self

    def note(self, text: str) -> Section:
        self.blocks.append(Note(text))
        return self

    def bullets(self, items: Iterable[str]) -> Section:
        items = list(items)
        if items:  # an empty list shows nothing rather than an empty <ul>
            self.blocks.append(Bullets(items))
        return self

    def table(self, table: Table | pd.DataFrame, caption: str = "") -> Section:
        self.blocks.append(table if isinstance(table, Table)
                           else Table.from_frame(table, caption))
        return self

    def figure(self, path: str, png: bytes | None, caption: str, alt: str = "") -> Section:
        self.blocks.append(Figure(path, caption, alt, png))
        return self

    def add(self, block: Block) -> Section:
        self.blocks.append(block)
        return self


@dataclass
class Document:
    """A titled document: ``subtitle`` is a paragraph under the title; ``meta`` is free
    data for whoever builds it (not rendered); ``nav`` adds links to the sections."""

    title: str
    sections: list[Section] = field(default_factory=list)
    subtitle: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    nav: bool = True

    def section(self, title: str) -> Section:
        """The top-level section with this title; KeyError naming the titles there are."""
        for s in self.sections:
            if s.title == title:
                return s
        raise KeyError(f"no section {title!r} in document {self.title!r}; its sections: "
                       f"{', '.join(repr(s.title) for s in self.sections) or 'none'}")

    def titles(self) -> list[str]:
        return [s.title for s in self.sections]

    def figures(self) -> list[Figure]:
        """Every figure, nested sections included, in document order."""
        return list(_figures(self.sections))


def _figures(blocks: Sequence[Any]) -> Iterable[Figure]:
    for b in blocks:
        if isinstance(b, Figure):
            yield b
        elif isinstance(b, Section):
            yield from _figures(b.blocks)
