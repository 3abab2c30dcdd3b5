"""Names a user controls (a ruleset's name and description, bot specs, the folders of a run)
are shown as text, never as markup: a run planted with ``<script>alert(1)</script>``,
``javascript:alert(1)`` and ``onerror=`` names, its HTML report read by an HTML parser and
opened in Chromium, and every page of ``patchsim serve`` about it opened in Chromium: no
planted script, no event handler, no javascript: link, no dialog."""

from __future__ import annotations

import html.parser
import json
import re
import sys
from pathlib import Path

import pytest

from patchsim.document.render import inline_html
from patchsim.play.config import load_run_config
from patchsim.play.execution import execute
from patchsim.reporting.report import write_report

SCRIPT = "<script>alert(1)</script>"
JS = "javascript:alert(1)"
IMG = "<img src=x onerror=alert(1)>"
BOT_MODULE = '''
class Named:
    """Plays the first legal move; its name is whatever it is given."""

    def __init__(self, label: str = "x") -> None:
        self.label = label
        self.spec = f"markup_bots:Named(label={label})"

    def choose(self, game, moves, rng):
        return moves[0]
'''
BOTS = [f"markup_bots:Named(label={SCRIPT})", f"markup_bots:Named(label={JS})"]
_SCHEME_JS = re.compile(r"^[\x00-\x20]*j\s*a\s*v\s*a\s*s\s*c\s*r\s*i\s*p\s*t\s*:", re.I)


class _Markup(html.parser.HTMLParser):
    """What a page would run: script elements (their text), event-handler attributes and
    javascript: URLs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.handlers: list[str] = []
        self.js_urls: list[str] = []
        self._in_script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(f"<{tag} {name}={value}>")
            if name in ("href", "src", "action", "formaction") and value and _SCHEME_JS.match(
                    value):
                self.js_urls.append(value)
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)


def assert_inert(page: str) -> None:
    """No planted markup runs in ``page``: its only scripts are patchsim's own (the JSON data
    of the replay parses, and names its players), no handler, no javascript: URL."""
    parsed = _Markup()
    parsed.feed(page)
    parsed.close()
    assert parsed.handlers == [] and parsed.js_urls == []
    assert SCRIPT not in page and IMG not in page
    for attrs, text in parsed.scripts:
        if attrs.get("type") == "application/json":
            json.loads(text)  # data, all of it inside its element
        else:
            assert "alert(1)" not in text, text[:300]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of two bots with markup in their specs, on a ruleset with markup in its
    name and description, in folders named with markup."""
    base = tmp_path_factory.mktemp("markup")
    (base / "markup_bots.py").write_text(BOT_MODULE, encoding="utf-8")
    rules = base / "evil.yaml"
    rules.write_text(f"extends: edition2\nname: {json.dumps(SCRIPT)}\n"
                     f"description: {json.dumps(f'[click]({JS}) {IMG} {SCRIPT}')}\n",
                     encoding="utf-8")
    root = base / "served"
    run_dir = root / IMG.replace("/", "_") / JS
    sys.path.insert(0, str(base))  # the report and the server may build the bots again
    try:
        cfg = load_run_config(str(rules), games=4, bots=BOTS, bot_path=[str(base)])
        execute(cfg, run_dir, jobs=1, backend="sequential")
        write_report(run_dir)
    finally:
        sys.path.remove(str(base))
    return run_dir


def test_the_html_report_shows_planted_names_as_text(planted: Path) -> None:
    page = (planted / "report.html").read_text(encoding="utf-8")
    assert_inert(page)
    # the names are there, as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "label=javascript:alert(1)" in page


@pytest.mark.parametrize("text", [f"[x]({JS})", "[x](JavaScript:alert(1))",
                                  "[x](\x01javascript:alert(1))", "[x](data:text/html,hi)",
                                  f"**{SCRIPT}**", f"`{SCRIPT}`", f"[{SCRIPT}](#a)"])
def test_markdown_light_text_makes_no_script_and_no_unsafe_link(text: str) -> None:
    out = inline_html(text)
    assert_inert(f"<p>{out}</p>")
    assert "<script" not in out and "href=\"javascript" not in out.lower()


CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium")
    with playwright.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run"])
        yield b
        b.close()


def _open(browser, url: str, ready: str | None = None) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran (as HTML) and the dialogs it opened."""
    context = browser.new_context()
    dialogs: list[str] = []
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)  # waits for the load event
    if ready:  # the page's scripts have drawn what it shows
        page.wait_for_selector(ready, state="attached")
    dom = page.content()
    live = page.evaluate("""() => ({
        js: Array.from(document.querySelectorAll('[href],[src]')).map(
            e => e.getAttribute('href') || e.getAttribute('src')).filter(
            u => /^[\\x00-\\x20]*javascript:/i.test(u)),
        handlers: Array.from(document.querySelectorAll('*')).flatMap(
            e => Array.from(e.attributes).filter(a => a.name.startsWith('on')).map(
                a => e.tagName + ' ' + a.name)),
        planted: Array.from(document.scripts).filter(s => s.textContent.includes('alert(1)')
            && s.type !== 'application/json').length,
    })""")
    context.close()
    assert live == {"js": [], "handlers": [], "planted": 0}, (url, live)
    return dom, dialogs


@pytest.mark.slow
def test_the_report_and_the_web_pages_run_no_planted_markup(planted: Path, browser,
                                                            tmp_path: Path) -> None:
    from webserver import Server

    from patchsim.web.app import create_app

    dom, dialogs = _open(browser, planted.joinpath("report.html").as_uri())
    assert dialogs == [] and "alert(1)" in dom  # shown as text
    root = planted.parent.parent
    sys.path.insert(0, str(root.parent))
    try:
        with Server(create_app([root], tmp_path / "saved")) as server:
            status, _, body = server.request("GET", "/api/runs")
            assert status == 200, body
            (run,) = json.loads(body)["runs"]
            assert JS in run["label"], run
            rid = run["id"]
            status, _, body = server.request("GET", f"/api/runs/{rid}/games?limit=1")
            game = json.loads(body)["games"][0]["game_id"]
            pages = [("/", "a[href^='/run']"), (f"/run?id={rid}", "#games-table tbody tr"),
                     (f"/game?run={rid}&game={game}", "svg.pb-board"), ("/play", "select")]
            shown = {}
            for url, ready in pages:
                dom, dialogs = _open(browser, server.url + url, ready)
                assert dialogs == [], (url, dialogs)
                assert SCRIPT not in dom and IMG not in dom, url
                shown[url] = dom
            # the planted names are on the pages, as text
            assert JS in shown["/"]
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown[f"/run?id={rid}"]
    finally:
        sys.path.remove(str(root.parent))


def test_the_planted_run_is_as_named(planted: Path) -> None:
    manifest = json.loads((planted / "manifest.json").read_text(encoding="utf-8"))
    text = json.dumps(manifest)
    assert all(json.dumps(b)[1:-1] in text for b in BOTS)
    assert json.dumps(SCRIPT)[1:-1] in text
    assert planted.name == JS and "onerror" in planted.parent.name
