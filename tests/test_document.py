"""patchsim.document: the one document model, renderer, formatters and patch palette."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from patchsim.document import format as fmt
from patchsim.document.model import (
    Bullets,
    Col,
    Document,
    Figure,
    Html,
    Note,
    Section,
    Table,
)
from patchsim.document.palette import patch_colour, patch_colours, patch_index
from patchsim.document.render import inline_html, section_text, to_html, to_markdown, write

PNG = b"\x89PNG\r\n\x1a\nfake"


def sample() -> Document:
    inner = Section("Inner <b>", ["nested paragraph"])
    t = Table([Col("name", "name", align="left"), Col("rate", "rate", fmt.pct)],
              [{"name": "a|b <i>", "rate": 0.5}, {"name": "two\nlines", "rate": float("nan")}],
              caption="Rates & more", note="Below the table.")
    s = Section("First & only", ["A **bold** `x<y` [link](https://example.org) <script>",
                                 Note("careful <here>"), Bullets(["one", "two"]), t,
                                 Figure("figures/f.png", "A <figure>", png=PNG),
                                 Html("<div id='x'></div>", "*(see the HTML)*"), inner])
    return Document("Title <T>", [s, Section("Second")], subtitle="Sub & title")


def test_html_escapes_user_text_and_renders_markdown_light() -> None:
    page = to_html(sample())
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<strong>bold</strong>" in page and "<code>x&lt;y</code>" in page
    assert '<a href="https://example.org">link</a>' in page
    assert "<title>Title &lt;T&gt;</title>" in page
    assert '<p class="note">careful &lt;here&gt;</p>' in page
    assert "<ul><li>one</li><li>two</li></ul>" in page
    assert "<caption>Rates &amp; more</caption>" in page and "Below the table." in page
    assert "<td>a|b &lt;i&gt;</td>" in page and "<td>two<br>lines</td>" in page
    assert '<td class="right">50.0%</td>' in page and '<td class="right">—</td>' in page
    assert 'src="data:image/png;base64,' in page  # self-contained
    assert "<div id='x'></div>" in page  # a fragment of patchsim's own is kept as is
    assert '<h3 id="inner-b">Inner &lt;b&gt;</h3>' in page  # nested: one level down
    assert '<a href="#first-only">' in page and '<a href="#second">' in page


def test_links_to_scripts_stay_text() -> None:
    assert "<a" not in inline_html("[x](javascript:alert(1))")
    assert "<a" not in inline_html("[x](data:text/html,hi)")
    assert inline_html("[x](other.html#a)") == '<a href="other.html#a">x</a>'


def test_markdown_tables_figures_notes_and_nesting() -> None:
    md = to_markdown(sample())
    assert md.startswith("# Title <T>\n\nSub & title\n\n## First & only\n")
    assert "> **Note:** careful <here>" in md
    assert "- one\n- two" in md
    assert "*Rates & more*\n\n| name | rate |\n|---|---:|\n| a\\|b <i> | 50.0% |\n" \
           "| two<br>lines | — |\n\nBelow the table." in md
    assert "![A <figure>](figures/f.png)\n\n*A <figure>*" in md
    assert "*(see the HTML)*" in md and "### Inner <b>\n\nnested paragraph" in md


def test_write_puts_pages_and_figures(tmp_path) -> None:
    paths = write(sample(), tmp_path, "study")
    assert [p.name for p in paths] == ["study.html", "study.md"]
    assert (tmp_path / "figures" / "f.png").read_bytes() == PNG
    assert paths[1].read_text(encoding="utf-8") == to_markdown(sample())


def test_section_by_title_and_errors() -> None:
    doc = sample()
    assert doc.section("Second").title == "Second"
    with pytest.raises(KeyError, match="'First & only', 'Second'"):
        doc.section("Variants")
    assert section_text(doc.section("First & only")).startswith("A **bold**")
    with pytest.raises(KeyError, match="no value for column 'rate'"):
        Table([Col("rate", "rate")], [{"other": 1}]).cells()
    with pytest.raises(ValueError, match="align"):
        Col("a", "a", align="middle")


def test_table_from_a_frame_keeps_repeated_and_empty_headers() -> None:
    t = Table.from_frame(pd.DataFrame([["x", "1"]], columns=["", "value"]), "cap")
    md = to_markdown(Document("d", [Section("s", [t])]))
    assert "|   | value |\n|---|---|\n| x | 1 |" in md


@pytest.mark.parametrize("x", [None, float("nan"), np.nan, "text", pd.NA])
def test_formatters_show_missing_as_a_dash(x) -> None:
    for f in (fmt.pct, fmt.num, fmt.pts, fmt.pval, fmt.integer, fmt.sig, fmt.pts_unit):
        assert f(x) in ("—", "text"), f
    assert fmt.ci(x, 0.5) == "—" and fmt.est_ci(x, None, None) in ("—", "text")
    assert not fmt.finite(x)


def test_formatters_on_edge_values() -> None:
    assert fmt.pct(0) == "0.0%" and fmt.pct(1) == "100.0%" and fmt.pct(0.12345, 2) == "12.35%"
    assert fmt.num(math.inf) == "+∞" and fmt.num(-math.inf) == "−∞" and fmt.num(0, 0) == "0"
    assert fmt.num(1, 1, True) == "+1.0" and fmt.pts(0.031) == "+3.1" and fmt.pts(0) == "+0.0"
    assert fmt.pts(math.inf) == "—" and fmt.pct(math.inf) == "—" and not fmt.finite(math.inf)
    assert fmt.ci(0, 1) == "[0.0%, 100.0%]"
    assert fmt.pval(0) == "< 0.001" and fmt.pval(1) == "1.000" and fmt.pval(0.0355) == "0.035"
    assert fmt.p_is(0.0001) == "p < 0.001" and fmt.p_is(0.5) == "p = 0.500"
    assert fmt.est_ci(12.34, 10.1, 14) == "12.3 [10.1, 14.0]" and fmt.est_ci(1, None, 2) == "1.0"
    assert fmt.plural(1, "deal") == "1 deal" and fmt.plural(0, "deal") == "0 deals"
    assert fmt.integer(3.0) == "3" and fmt.integer(np.int64(0)) == "0"
    assert fmt.sig(123456.0) == "1.235e+05" and fmt.sig(math.inf) == "+∞"
    assert fmt.sig(True) == "True"
    assert fmt.pts_unit(-0.02) == "-2.0 pts"


def test_the_palette_is_stable_and_distinct_for_every_patch() -> None:
    from patchsim.engine.ruleset import load_ruleset

    for name in ("edition1", "edition2"):
        ids = [p.id for p in load_ruleset(name).patches]
        colours = patch_colours(ids)
        assert len(set(colours.values())) == len(ids), name
        # an id names the same colour as its position in the shipped tables
        assert all(patch_colour(pid) == colours[pid] for pid in ids)
    many = [patch_colour(i) for i in range(200)]
    assert len(set(many)) == 200 and all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in many)
    assert patch_colour(0) == "#da6262" and patch_colour("P01") == "#2f5bc6"  # pinned
    assert patch_colour("leather") == patch_colour("leather")  # an id without digits
    assert patch_index("P19") == 19
    with pytest.raises(ValueError):
        patch_index(-1)


def test_the_report_draws_quilts_with_the_one_palette() -> None:
    from patchsim.reporting import plots

    assert plots.patch_colour is patch_colour


def test_format_pairings_words_the_pairing_table() -> None:
    from patchsim.analysis.selfplay import DISTINCT_NOTE

    rows = [{"ruleset": "e2", "pairing": p, "distinct_games": d, "bot": "greedy", "line": line,
             "opponent": "income", "wins": 12, "losses": 8, "win_rate": 0.6, "lo": 0.4,
             "hi": float("nan"), "games": 20, "pairs_2_0": 3.0, "pairs_1_1": 4.0,
             "pairs_0_2": 3.0, "elo": 70.4}
            for p, d in (("greedy vs income", True), ("greedy vs greedy", False))
            for line in ("first seat", "second seat", "pooled")]
    table = pd.DataFrame(rows)
    text = fmt.format_pairings(table, DISTINCT_NOTE)
    assert f"greedy vs greedy ({DISTINCT_NOTE})" in text and "e2: greedy vs income\n" in text
    assert "12 - 8" in text and "[60.0%]" in text and "95% 40.0%..—" in text
    assert "pairs 2-0/1-1/0-2: 3/4/3  Elo +70" in text
