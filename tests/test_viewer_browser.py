"""The viewer in real headless Chromium (Debian's, installed by scripts/install-browser).

Pages of real Claude Code, Pi and Codex sessions and of one compacted by us render with no
network request at all, hold every event, draw their chart; tool calls fold and unfold; the
version control changes what is shown exactly as the store's projection says; a hostile
transcript runs nothing (and a script slipped past the escaping is stopped by the CSP);
`serve` answers on 127.0.0.1. Screenshots land in test-artifacts/ (look at them).

No browser is never a skip: without /usr/bin/chromium these tests fail, naming the script.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore.viewer import build_timeline, session_html
from sessionstore.viewer.server import make_server, session_href

from .viewing import LIVED, REAL, hostile_session, import_real, live_again

CHROMIUM = Path("/usr/bin/chromium")
# Flags that work on this machine and in CI (root, no display, no GPU, no network). Playwright gives every
# launch a fresh temporary profile (its own --user-data-dir).
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/install-browser (./scripts/test runs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@dataclass
class Sessions:
    store: SessionStore
    ids: dict[str, str]
    pages: dict[str, Path] = field(default_factory=dict)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory, transcripts: Path) -> Iterator[Sessions]:
    folder = tmp_path_factory.mktemp("browser")
    store = SessionStore(f"sqlite:///{folder / 'viewer.db'}")
    store.migrate()
    ids = {name: import_real(store, transcripts, relative) for name, relative in REAL.items()}
    ids["lived"] = live_again(store, import_real(store, transcripts, LIVED))
    ids["hostile"] = hostile_session(store)
    found = Sessions(store, ids)
    for name, sid in ids.items():
        path = folder / f"{name}.html"
        path.write_text(session_html(store, sid), encoding="utf-8")
        found.pages[name] = path
    ARTIFACTS.mkdir(exist_ok=True)
    yield found
    store.close()


@dataclass
class Visit:
    page: Any
    requests: list[str]
    problems: list[str]  # console errors and page errors
    dialogs: list[str]


def visit(browser: Any, url: str, *, scheme: str = "light", allow: str | None = None) -> Visit:
    """Open `url` in a fresh context that records every request and aborts any outside `allow` (default: the
    page's own file)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, color_scheme=scheme)
    page = context.new_page()
    found = Visit(page, [], [], [])
    page.on("request", lambda request: found.requests.append(request.url))
    page.on("console", lambda message: found.problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: found.problems.append(str(error)))

    def dialog(d: Any) -> None:
        found.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    allowed = allow or url.split("#")[0]  # a file page may load itself, and nothing else
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(allowed)
                  else route.abort())
    page.goto(url)
    return found


def wait_until(page: Any, expression: str, timeout: float = 5.0) -> None:
    """Poll `expression` (page.wait_for_function evaluates strings, which the page's CSP forbids)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        page.wait_for_timeout(20)


def shot(page: Any, name: str, **options: Any) -> None:
    page.screenshot(path=str(ARTIFACTS / f"viewer-{name}.png"), **options)


@pytest.mark.parametrize("name", [*REAL, "lived"])
def test_a_real_page_renders_offline_with_every_event_and_its_chart(browser: Any, sessions: Sessions,
                                                                    name: str) -> None:
    store, sid = sessions.store, sessions.ids[name]
    url = sessions.pages[name].as_uri()
    seen = visit(browser, url)
    page = seen.page
    assert seen.requests == [url]  # the page itself, nothing else was even attempted
    assert seen.problems == [] and seen.dialogs == []
    events = store.transcript(sid)
    assert page.locator("main [data-version]").count() == len(events)
    assert page.evaluate("[...document.querySelectorAll('main [data-version]')].map(e => +e.dataset.version)") \
        == [e.version for e in events]
    box = page.locator("svg.chart").bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 150
    points = page.get_attribute("svg.chart path.view-line", "d") or ""
    assert points.count("L") >= min(len(events), 1200) - 1
    assert page.locator("svg.chart .compaction-mark").count() == sum(e.kind == "compaction" for e in events)
    assert page.locator("#at").get_attribute("max") == str(len(events))
    shot(page, f"{name}-top")
    first_compaction = next((e.version for e in events if e.kind == "compaction"), None)
    if first_compaction is not None:
        page.evaluate("document.getElementById('cut-1').scrollIntoView()")
        shot(page, f"{name}-compaction")
    page.context.close()


def test_dark_mode_and_the_timeline(browser: Any, sessions: Sessions) -> None:
    seen = visit(browser, sessions.pages["pi"].as_uri() + "#v2", scheme="dark")
    page = seen.page
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 23, 27)"
    page.locator('[data-kind="tool_call"] summary').first.click()  # the first tool call unfolds
    shot(seen.page, "pi-dark-timeline")
    page.context.close()


def test_tool_calls_and_results_fold_and_unfold(browser: Any, sessions: Sessions) -> None:
    seen = visit(browser, sessions.pages["codex"].as_uri())
    page = seen.page
    call = page.locator("main article[data-kind=tool_call]").first
    result = page.locator("main article[data-kind=tool_result]").first
    for article in (call, result):
        body = article.locator("details.ev-fold > :not(summary)").first
        assert not article.locator("details.ev-fold").evaluate("d => d.open") and not body.is_visible()
        article.locator("summary").first.click()
        assert article.locator("details.ev-fold").evaluate("d => d.open") and body.is_visible()
    shot(page, "codex-unfolded", clip={"x": 0, "y": 0, "width": 1280, "height": 1000})
    call.locator("summary").first.click()
    assert not call.locator("details.ev-fold").evaluate("d => d.open")
    page.locator("#expand-all").click()
    assert page.evaluate("[...document.querySelectorAll('main details')].every(d => d.open)")
    page.locator("#collapse-all").click()
    assert page.evaluate("[...document.querySelectorAll('main details')].every(d => !d.open)")
    page.context.close()


def test_the_view_at_a_version_is_the_projection(browser: Any, sessions: Sessions) -> None:
    store, sid = sessions.store, sessions.ids["lived"]
    events = store.transcript(sid)
    timeline = build_timeline(sid, events)
    seen = visit(browser, sessions.pages["lived"].as_uri())
    page = seen.page
    compaction = timeline.compactions[0]
    shown: dict[int, int] = {}
    for version in (compaction.version - 1, compaction.version, len(events) // 2, len(events)):
        page.fill("#at-number", str(version))
        page.dispatch_event("#at-number", "change")
        wait_until(page, f"document.getElementById('at').value === '{version}'")
        wait_until(page, f"document.querySelector('#v{version}').dataset.view !== undefined")
        members = timeline.members_at(version)
        in_view = page.evaluate("[...document.querySelectorAll('main article[data-view=in]')]"
                                ".map(e => +e.dataset.version)")
        assert sorted(in_view) == sorted(members), f"v{version}"
        assert page.locator("main article[data-view=future]").count() == len(events) - version
        assert f"v{version:,}" in page.inner_text("#at-info")
        shown[version] = len(in_view)
    assert shown[compaction.version] < shown[compaction.version - 1]  # the compaction shrank the view
    # at the compaction: the summary is in the view, what it summarised is not
    page.fill("#at-number", str(compaction.version))
    page.dispatch_event("#at-number", "change")
    wait_until(page, f"document.getElementById('at').value === '{compaction.version}'")
    assert page.get_attribute(f"#v{compaction.version}", "data-state") == "summary"
    assert page.get_attribute(f"#v{compaction.first_kept - 1}", "data-view") in ("out", None) or \
        compaction.first_kept - 1 in timeline.members_at(compaction.version)
    assert "mode-mark" in (page.get_attribute("body", "class") or "")
    shot(page, "lived-mark-the-view")
    page.check("input[name=mode][value=only]", force=True)
    visible = page.evaluate("[...document.querySelectorAll('main [data-version]')]"
                            ".filter(e => e.offsetParent !== null).map(e => +e.dataset.version)")
    assert sorted(visible) == sorted(v for v in timeline.members_at(compaction.version))
    shot(page, "lived-only-the-view")
    # a click on the chart picks a version
    page.check("input[name=mode][value=all]", force=True)
    chart = page.locator("svg.chart")
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box is not None
    chart.click(position={"x": box["width"] * 0.3, "y": box["height"] * 0.5})
    wait_until(page, f"document.getElementById('at').value !== '{compaction.version}'")
    picked = int(page.input_value("#at"))
    assert 1 < picked < len(events)
    page.context.close()


def test_a_hostile_transcript_runs_nothing(browser: Any, sessions: Sessions) -> None:
    seen = visit(browser, sessions.pages["hostile"].as_uri())
    page = seen.page
    page.locator("#expand-all").click()
    page.check("#show-noise")
    for article in page.locator("main article").all():
        article.hover()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert seen.dialogs == [] and seen.problems == []
    assert seen.requests == [sessions.pages["hostile"].as_uri()]
    text = page.inner_text("main")
    assert "<script>window.__pwned = 'script'; alert(1)</script>" in text
    assert '<img src=x onerror="window.__pwned' in text
    assert page.locator("main script, main iframe, main img, main a[href^=javascript]").count() == 0
    shot(page, "hostile", full_page=True)
    page.context.close()


def test_the_csp_stops_a_script_that_got_past_the_escaping(browser: Any, sessions: Sessions, tmp_path: Path) -> None:
    text = sessions.pages["hostile"].read_text(encoding="utf-8")
    forged = tmp_path / "forged.html"  # as if an escape had been missed somewhere
    forged.write_text(text.replace("<main ", "<script>window.__pwned = 'inline'</script>"
                                            "<img src=x onerror=\"window.__pwned = 'onerror'\"><main ", 1),
                      encoding="utf-8")
    seen = visit(browser, forged.as_uri())
    assert seen.page.evaluate("typeof window.__pwned") == "undefined"
    assert any("Content Security Policy" in problem for problem in seen.problems)
    assert seen.page.evaluate("document.documentElement.classList.contains('js')")  # the page's own script ran
    seen.page.context.close()


def test_serve_answers_on_loopback_with_the_list_and_the_pages(browser: Any, sessions: Sessions) -> None:
    store = sessions.store
    server = make_server(store, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = server.url
        assert base.startswith("http://127.0.0.1:")
        seen = visit(browser, base, allow=base)
        page = seen.page
        assert page.locator("table.sessions tbody tr").count() == len(store.sessions())
        shot(page, "serve-index")
        lived = sessions.ids["lived"]
        page.locator(f"a[href='{session_href(lived)}']").click()
        page.wait_for_selector("main [data-version]", state="attached")
        assert page.locator("main [data-version]").count() == store.version(lived)
        assert all(url.startswith(base) for url in seen.requests)
        assert seen.problems == []
        hostile = session_href(sessions.ids["hostile"])
        page.goto(base.rstrip("/") + hostile)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        page.context.close()
        with urllib.request.urlopen(base.rstrip("/") + session_href(lived) + "/export.jsonl") as response:
            assert response.headers["Content-Type"].startswith("application/x-ndjson")
            assert len(response.read().splitlines()) == store.version(lived) + 1
        with urllib.request.urlopen(base) as response:
            assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        for path, method, status in (("/s/no-such-session", "GET", 404), ("/elsewhere", "GET", 404),
                                     ("/", "POST", 501), ("/", "DELETE", 501)):
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(urllib.request.Request(base.rstrip("/") + path, method=method))
            assert caught.value.code == status, (method, path)
    finally:
        server.shutdown()
        server.server_close()
