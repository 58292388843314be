"""The viewer without a browser: the time travel it embeds against the store's own views, on both
backends; the page's structure; what a hostile transcript turns into; the CLI commands.

(The page in real Chromium: tests/test_viewer_browser.py.)
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessionstore as ss
from sessionstore import SessionStore, StoredEvent
from sessionstore.cli import main
from sessionstore.viewer import build_timeline, content_security_policy, session_html
from sessionstore.viewer.chart import nice_ticks
from sessionstore.viewer.timeline import BOUNDARY_KINDS

from .conftest import BACKENDS, fresh_url
from .viewing import HOSTILE_TEXTS, LIVED, REAL, hostile_session, import_real, live_again


class _Page(HTMLParser):
    """The elements of a page, with their attributes, and the text of its scripts."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self._in: str | None = None
        self._buffer: list[str] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._in, self._buffer = tag, []

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            body = "".join(self._buffer)
            if tag == "script":
                self.scripts.append((self.elements[-1][1] if self.elements[-1][0] == "script" else {}, body))
            else:
                self.styles.append(body)
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self._buffer.append(data)
        else:
            self.text.append(data)

    def versions(self) -> list[int]:
        return [int(a["data-version"] or 0) for _, a in self.elements if "data-version" in a]


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


# --------------------------------------------------------------------------- time travel


@pytest.fixture(scope="module", params=BACKENDS)
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           transcripts: Path) -> Iterator[SessionStore]:
    """One store per backend with the real sessions of `REAL` and one lived again by us."""
    store = SessionStore(fresh_url(request.param, tmp_path_factory.mktemp("viewer"), request))
    store.migrate()  # a no-op on PostgreSQL, whose fresh databases are clones of a migrated template
    for relative in REAL.values():
        import_real(store, transcripts, relative)
    live_again(store, import_real(store, transcripts, LIVED))
    yield store
    store.close()


@pytest.fixture(scope="module")
def lived(corpus: SessionStore) -> str:
    """A real session lived again at a small window: prunes, rewrites and summaries by us."""
    (sid,) = [s.id for s in corpus.sessions() if "replay_of" in s.metadata]
    return sid


def _checked_versions(events: list[StoredEvent]) -> list[int]:
    """Both sides of every boundary, and every third version between."""
    near = {v for e in events if e.kind in BOUNDARY_KINDS for v in (e.version - 1, e.version, e.version + 1)}
    return sorted(v for v in near | set(range(1, len(events) + 1, 3)) | {len(events)} if 1 <= v <= len(events))


def test_the_view_at_every_version_is_the_stores_view(corpus: SessionStore, lived: str) -> None:
    store = corpus
    events = store.transcript(lived)
    kinds = {e.kind for e in events}
    assert {"compaction", "prune", "rewrite"} <= kinds
    timeline = build_timeline(lived, events)
    assert len(timeline.epochs) == 1 + len({e.version for e in events if e.kind in BOUNDARY_KINDS} - {1})
    for version in _checked_versions(events):
        view = store.context(lived, at=version)
        members = timeline.members_at(version)
        expected = {item.version for item in view.items}
        if view.source.system is not None:
            expected.add(view.source.system.version)
        assert set(members) == expected, f"view at v{version}"
        for item in view.items:
            state = members[item.version]
            if item.cleared:
                assert state in ("cleared", "left_out")
            elif item.rewritten:
                assert state in ("rewritten", "left_out")
            elif item.origin in ("critical", "restored"):
                assert state in ("kept", "left_out")
            elif item.origin == "summary":
                assert state == "summary"


def test_the_token_series_is_exact_at_every_boundary_and_close_between(corpus: SessionStore, lived: str) -> None:
    store = corpus
    events = store.transcript(lived)
    timeline = build_timeline(lived, events)
    for epoch in timeline.epochs:
        for version in {epoch.first, epoch.last}:
            assert timeline.series.view[version - 1] == store.context(lived, at=version).tokens
    worst = max(abs(timeline.series.view[v - 1] - store.context(lived, at=v).tokens)
                for v in _checked_versions(events))
    assert worst <= 100  # a few tokens a message: the renderer's fixed costs
    transcript = timeline.series.transcript
    assert all(a <= b for a, b in zip(transcript, transcript[1:]))
    assert transcript[-1] == store.stats(lived).transcript_tokens


def test_compaction_spans_say_what_was_summarised_and_kept(corpus: SessionStore, lived: str) -> None:
    store = corpus
    timeline = build_timeline(lived, store.transcript(lived))
    compactions = [e for e in store.transcript(lived) if e.kind == "compaction"]
    assert [c.version for c in timeline.compactions] == [e.version for e in compactions]
    previous = 1
    for span, event in zip(timeline.compactions, compactions):
        assert span.first_kept == event.payload["first_kept_version"]
        assert span.summarised == (previous, span.first_kept - 1)
        assert span.restored == tuple(sorted(event.payload["details"].get("restored", ())))
        previous = span.first_kept
    pruned = {t for e in store.transcript(lived) if e.kind == "prune" for t in e.payload["targets"]}
    assert pruned and pruned <= set(timeline.notes)


# --------------------------------------------------------------------------- the page


@pytest.mark.parametrize("source", list(REAL))
def test_every_event_is_on_the_page_once(corpus: SessionStore, source: str) -> None:
    store = corpus
    (sid,) = [s.id for s in store.sessions() if s.metadata.get("source_path", "").endswith(REAL[source])]
    page = _Page(session_html(store, sid))
    events = store.transcript(sid)
    assert page.versions() == [e.version for e in events]
    kinds = [a.get("data-kind") for _, a in page.elements if "data-version" in a]
    assert kinds == [e.kind for e in events]


def test_the_page_holds_no_external_reference_and_its_csp_names_its_own_code(corpus: SessionStore,
                                                                            lived: str) -> None:
    text = session_html(corpus, lived)
    page = _Page(text)
    for tag, attrs in page.elements:
        for name in ("src", "href", "action", "srcset", "poster", "data"):
            value = attrs.get(name)
            if value is not None and tag != "object":
                assert value.startswith(("#", "data:image/")), (tag, name, value)
    (csp,) = [a["content"] for t, a in page.elements
              if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == content_security_policy()
    assert "default-src 'none'" in csp and "unsafe" not in csp
    executable = [body for attrs, body in page.scripts if attrs.get("type") != "application/json"]
    assert len(executable) == 1 and f"'{_hash(executable[0])}'" in csp
    assert len(page.styles) == 1 and f"'{_hash(page.styles[0])}'" in csp
    assert not re.search(r"\sstyle=", text)  # the CSP allows no inline style attributes


def test_a_hostile_transcript_stays_text(store: SessionStore) -> None:
    sid = hostile_session(store)
    text = session_html(store, sid)
    page = _Page(text)
    assert [t for t, _ in page.elements].count("script") == 2  # the data block and the page's own
    data_scripts = [body for attrs, body in page.scripts if attrs.get("type") == "application/json"]
    assert len(data_scripts) == 1 and "<" not in data_scripts[0]
    for tag, attrs in page.elements:
        assert tag not in ("iframe", "svg") or tag == "svg" and "chart" in (attrs.get("class") or "")
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert not any((value or "").lstrip().lower().startswith("javascript:") for value in attrs.values())
        if tag == "img":
            assert attrs["src"] == "data:image/png;base64,AAAA" or attrs["src"] is None
    shown = "".join(page.text)
    for hostile in HOSTILE_TEXTS:
        assert hostile.split("\n")[0][:30] in shown  # visible as text, not markup
    assert len([t for t, _ in page.elements if t == "img"]) == 0  # neither image is a safe raster data: URL


def test_nice_axis_ticks() -> None:
    assert nice_ticks(0) == [0.0, 1.0]
    assert nice_ticks(97) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(400_000)[-1] >= 400_000 and len(nice_ticks(400_000)) <= 7


# --------------------------------------------------------------------------- the commands


def test_html_command_writes_the_page_and_fails_clearly(corpus: SessionStore, tmp_path: Path, lived: str) -> None:
    store, store_url = corpus, corpus.url
    runner = CliRunner()
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    target = tmp_path / "page.html"
    result = runner.invoke(main, ["--db", store_url, "html", lived, "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert _Page(target.read_text(encoding="utf-8")).versions() == list(range(1, store.version(lived) + 1))
    missing = runner.invoke(main, ["--db", store_url, "html", "no-such-session", "-o", str(tmp_path / "x.html")])
    assert missing.exit_code == 2 and "no session 'no-such-session'" in missing.output
    assert not (tmp_path / "x.html").exists()
    unwritable = runner.invoke(main, ["--db", store_url, "html", lived, "-o", str(tmp_path / "no" / "x.html")])
    assert unwritable.exit_code == 2 and "cannot write" in unwritable.output and "Traceback" not in unwritable.output
    usage = runner.invoke(main, ["--db", store_url, "html", lived])
    assert usage.exit_code == 2 and "--output" in usage.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]  # no temporary file left behind


def test_shell_calls_and_json_wrapped_outputs_read_as_a_terminal_would(store: SessionStore) -> None:
    sid = store.create_session()
    script = "sed -n '1,5p' src/app.py"
    store.append(sid, [*ss.assistant("Reading.", tool_calls=[ss.tool_call("c1", "shell", {
        "command": ["bash", "-lc", script], "workdir": "/repo"})]),
        ss.tool_result("c1", json.dumps({"output": "def main():\n    return 1\n", "metadata": {"exit_code": 0}}))])
    text = "".join(_Page(session_html(store, sid)).text)
    assert f"bash -lc\n{script}" in text  # the script as written, not re-quoted
    assert "def main():\n    return 1\n" in text  # decoded, not "\\n"
    assert '{"metadata": {"exit_code": 0}}' in text
