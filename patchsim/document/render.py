"""The one renderer: a :class:`~patchsim.document.model.Document` as a self-contained HTML
page (inline style, images as data: URIs, no scripts of its own) and as Markdown (images
linked by their relative paths). Paragraph text is Markdown-light; the HTML escapes it
first, so no text of a user (a ruleset name, a description) can inject markup.

No template engine: the page is a dozen lines, and one escaping rule (``html.escape``
everywhere, then the three inline forms) is easier to check than two."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path

from patchsim.atomic import atomic_write
from patchsim.document.model import Bullets, Document, Figure, Html, Note, Section, Table

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1200px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font-size:.82em}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}caption{caption-side:top;text-align:left;font-style:italic;padding:.3em 0}
td.right{text-align:right}td.center{text-align:center}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}img{max-width:100%}
.note{background:#fff4d6;border-left:4px solid #e0a800;padding:.5em .8em}
.subtitle{color:#444}.table-note{font-size:.85em;color:#555}
nav a{margin-right:1em}
"""

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):", re.IGNORECASE)
_SAFE_SCHEMES = ("http", "https", "mailto")


def inline_html(text: str) -> str:
    """Markdown-light text as HTML: escaped, then `code`, **bold** and [links](url)
    (a link only to http(s), mailto, an anchor or a relative path)."""
    out = html.escape(text)
    # code first: what is inside back-quotes is shown as it is
    parts = _CODE.split(out)
    for i in range(0, len(parts), 2):
        p = _BOLD.sub(r"<strong>\1</strong>", parts[i])
        parts[i] = _LINK.sub(_link, p)
    for i in range(1, len(parts), 2):
        parts[i] = f"<code>{parts[i]}</code>"
    return "".join(parts)


def _link(m: re.Match[str]) -> str:
    url = m.group(2)
    # a browser drops leading control characters and spaces before it reads the scheme
    # ("\x01javascript:" is javascript:): such a link, and any scheme but the safe ones,
    # stays text
    scheme = _SCHEME.match(url)
    if not url.isprintable() or (scheme and scheme.group(1).lower() not in _SAFE_SCHEMES):
        return m.group(0)  # javascript:, data: ... stay text
    return f'<a href="{url}">{m.group(1)}</a>'


def _cell_html(text: str) -> str:
    return "<br>".join(inline_html(line) for line in text.split("\n"))


def html_table(t: Table) -> str:
    """One table as HTML (cells Markdown-light; a line break in a cell becomes <br>)."""
    head = "".join(f"<th>{inline_html(c.title)}</th>" for c in t.columns)
    rows = []
    for line in t.cells():
        tds = []
        for c, v in zip(t.columns, line, strict=True):
            cls = "" if c.align == "left" else f' class="{c.align}"'
            tds.append(f"<td{cls}>{_cell_html(v)}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    cap = f"<caption>{inline_html(t.caption)}</caption>" if t.caption else ""
    out = f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    if t.note:
        out += f'\n<p class="table-note">{inline_html(t.note)}</p>'
    return out


def _figure_html(f: Figure) -> str:
    esc = html.escape
    if f.png is not None:
        src = "data:image/png;base64," + base64.b64encode(f.png).decode("ascii")
    else:
        src = esc(f.path)
    return (f'<figure><img alt="{esc(f.alt)}" src="{src}">'
            f"<figcaption>{inline_html(f.caption)}</figcaption></figure>")


def _blocks_html(blocks: Sequence[object], level: int) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, str):
            out.append(f"<p>{inline_html(b)}</p>")
        elif isinstance(b, Note):
            out.append(f'<p class="note">{inline_html(b.text)}</p>')
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{inline_html(x)}</li>" for x in b.items)
                       + "</ul>")
        elif isinstance(b, Table):
            out.append(html_table(b))
        elif isinstance(b, Figure):
            out.append(_figure_html(b))
        elif isinstance(b, Html):
            out.append(b.html)  # built by patchsim itself, self-contained
        elif isinstance(b, Section):
            out += _section_html(b, level + 1)
        else:
            raise TypeError(f"not a document block: {type(b).__name__}")
    return out


def _section_html(s: Section, level: int) -> list[str]:
    h = min(level, 6)
    return [f'<h{h} id="{html.escape(str(s.anchor))}">{inline_html(s.title)}</h{h}>',
            *_blocks_html(s.blocks, level)]


def to_html(doc: Document) -> str:
    """The document as one self-contained HTML page."""
    esc = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{esc(doc.title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{inline_html(doc.title)}</h1>"]
    if doc.subtitle:
        out.append(f'<p class="subtitle">{inline_html(doc.subtitle)}</p>')
    if doc.nav and doc.sections:
        out.append("<nav>" + "".join(f'<a href="#{esc(str(s.anchor))}">{inline_html(s.title)}'
                                     "</a>" for s in doc.sections) + "</nav>")
    for s in doc.sections:
        out += _section_html(s, 2)
    out.append("</body></html>")
    return "\n".join(out)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def markdown_table(t: Table) -> str:
    """One table as a Markdown pipe table (no caption, no note)."""
    sep = {"left": "---", "right": "---:", "center": ":---:"}
    cols = [_md_cell(c.title) or " " for c in t.columns]
    lines = ["| " + " | ".join(cols) + " |",
             "|" + "|".join(sep[c.align] for c in t.columns) + "|"]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in t.cells()]
    return "\n".join(lines)


def _blocks_md(blocks: Sequence[object], level: int) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, str):
            out += [b, ""]
        elif isinstance(b, Note):
            out += [f"> **Note:** {b.text}", ""]
        elif isinstance(b, Bullets):
            out += [f"- {x}" for x in b.items] + [""]
        elif isinstance(b, Table):
            if b.caption:
                out += [f"*{b.caption}*", ""]
            out += [markdown_table(b), ""]
            if b.note:
                out += [b.note, ""]
        elif isinstance(b, Figure):
            out += [f"![{b.alt}]({b.path})", "", f"*{b.caption}*", ""]
        elif isinstance(b, Html):
            out += [b.markdown, ""]
        elif isinstance(b, Section):
            out += section_markdown(b, level + 1)
        else:
            raise TypeError(f"not a document block: {type(b).__name__}")
    return out


def section_markdown(s: Section, level: int = 2) -> list[str]:
    """One section (heading at ``level``) as Markdown lines."""
    return ["#" * min(level, 6) + f" {s.title}", "", *_blocks_md(s.blocks, level)]


def to_markdown(doc: Document) -> str:
    """The document as Markdown; figures are linked by path (:func:`write` puts them there)."""
    out = [f"# {doc.title}", ""]
    if doc.subtitle:
        out += [doc.subtitle, ""]
    for s in doc.sections:
        out += section_markdown(s, 2)
    return "\n".join(out)


def section_text(s: Section) -> str:
    """A section's body as Markdown without its heading (for a terminal)."""
    return "\n".join(_blocks_md(s.blocks, 2)).rstrip("\n")


def write(doc: Document, folder: str | Path, stem: str = "report") -> list[Path]:
    """Write ``folder/stem.html`` and ``folder/stem.md`` and every figure that carries its
    picture (at its path under ``folder``), each atomically: a failure part-way leaves the
    previous file or none, never a truncated one. Returns [html, md]. OSError propagates
    (the caller knows what the folder is and what to tell)."""
    folder = Path(folder)
    out_html, out_md = folder / f"{stem}.html", folder / f"{stem}.md"
    atomic_write(out_html, to_html(doc))
    for f in doc.figures():
        if f.png is not None:
            target = folder / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, f.png)
    atomic_write(out_md, to_markdown(doc))
    return [out_html, out_md]
