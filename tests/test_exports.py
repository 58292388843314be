"""Exports: jsonl round trips byte for byte into a fresh store on both backends, markdown reads well,
the command line writes and reads them."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

import sessionstore as ss
from sessionstore import ConfigurationError, SessionNotFound, SessionStore
from sessionstore.cli import main
from sessionstore.exports import export_session
from sessionstore.importers import detect_format, import_file, parse_file
from sessionstore.storage.packing import stored_text

from .conftest import fresh_url
from .viewing import LIVED, REAL, SMALL_WINDOW, import_real, live_again


def _stored_rows(store: SessionStore, session_id: str) -> list[tuple[object, ...]]:
    """The session's own rows as the database holds them: the payload as its stored text."""
    query = text(f"SELECT version, event_id, kind, {stored_text(store.backend)}, tokens, created_at FROM events "
                 "WHERE session_id = :sid ORDER BY version")
    with store.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(query, {"sid": session_id})]


def _export(store: SessionStore, session_id: str, fmt: str) -> str:
    buffer = io.StringIO()
    export_session(store, session_id, fmt, buffer)
    return buffer.getvalue()


def _view(store: SessionStore, session_id: str, version: int) -> tuple[object, ...]:
    view = store.context(session_id, at=version)
    items = [(i.version, i.origin, i.cleared, i.rewritten) for i in view.items]
    return view.system, view.messages, view.tokens, items, view.diagnostics


def test_jsonl_round_trip_is_byte_identical_with_the_same_views(store: SessionStore, backend: str, tmp_path: Path,
                                                                request: pytest.FixtureRequest,
                                                                transcripts: Path) -> None:
    sessions = [import_real(store, transcripts, REAL["pi"]), live_again(store, import_real(store, transcripts, LIVED))]
    (tmp_path / "fresh").mkdir()
    fresh = SessionStore(fresh_url(backend, tmp_path / "fresh", request))
    fresh.migrate()
    try:
        for sid in sessions:
            path = tmp_path / f"{sid}.jsonl"
            path.write_text(_export(store, sid, "jsonl"), encoding="utf-8")
            assert detect_format(path) == "sessionstore"
            result = import_file(fresh, path)
            assert result.ok and result.session_id == sid and result.events_added == store.version(sid)
            assert _stored_rows(fresh, sid) == _stored_rows(store, sid)
            assert fresh.session(sid).metadata == store.session(sid).metadata
            boundaries = [e.version for e in store.events(sid) if e.kind in ("compaction", "prune", "rewrite")]
            assert any(e.kind == "compaction" for e in store.events(sid))
            for version in sorted({*boundaries, *(v - 1 for v in boundaries), store.version(sid)}):
                assert _view(fresh, sid, version) == _view(store, sid, version), f"{sid} at v{version}"
            again = import_file(fresh, path)  # re-importing adds nothing
            assert again.ok and again.events_added == 0 and again.events_present == store.version(sid)
    finally:
        fresh.close()


def test_a_fork_exports_its_whole_history_and_imports_on_its_own(store: SessionStore, tmp_path: Path) -> None:
    parent = store.create_session(metadata={"title": "parent"})
    store.append(parent, [ss.user("one"), ss.assistant("two"), ss.user("three")])
    child = store.fork(parent, at=2)
    store.append(child, [ss.user("a different third")])
    path = tmp_path / "child.jsonl"
    path.write_text(_export(store, child, "jsonl"), encoding="utf-8")
    header = json.loads(path.read_text().splitlines()[0])["session"]
    assert (header["parent_id"], header["fork_version"], header["head"]) == (parent, 2, 3)
    other = SessionStore(f"sqlite:///{tmp_path / 'other.db'}")
    other.migrate()
    try:
        assert import_file(other, path).ok
        assert [e.payload for e in other.events(child)] == [e.payload for e in store.events(child)]
        assert other.session(child).metadata["forked_from"] == parent
    finally:
        other.close()


def test_a_broken_export_imports_up_to_the_first_gap_and_says_where(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session()
    store.append(sid, [ss.user(f"message {i}") for i in range(1, 6)])
    lines = _export(store, sid, "jsonl").splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:3], lines[3][:40], *lines[4:]]) + "\n", encoding="utf-8")
    parsed = parse_file(broken)
    assert [e.payload["content"][0]["text"] for e in parsed.events] == ["message 1", "message 2"]
    assert [issue.line for issue in parsed.issues] == [4, 5]
    assert "truncated JSON" in parsed.issues[0].reason and "version 4 where version 3" in parsed.issues[1].reason
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    parsed = parse_file(headless)
    assert parsed.session_id == "headless" and len(parsed.events) == 5 and parsed.issues[0].line == 1


def test_markdown_reads_as_a_transcript(store: SessionStore, transcripts: Path) -> None:
    sid = live_again(store, import_real(store, transcripts, LIVED))
    call = ss.tool_call("fence", "Bash", {"command": "cat x.md"})
    store.append(sid, [*ss.assistant("Here it is:", tool_calls=[call]),
                       ss.tool_result("fence", "````\nnot the end of the block\n```")])
    md = _export(store, sid, "markdown")
    assert md.startswith(f"# lived again at a {SMALL_WINDOW.context_window // 1000}k window\n")
    assert re.search(r"^### v\d+ · user · ", md, re.M) and re.search(r"^### v\d+ · assistant \(claude-", md, re.M)
    assert "tool call `Bash`" in md and '"command": "cat x.md"' in md
    assert "`````\n````\nnot the end of the block\n```\n`````" in md  # a fence no output can close
    compactions = [e for e in store.events(sid) if e.kind == "compaction"]
    assert md.count("> **Compaction ") == len(compactions) >= 1
    first_summary_line = compactions[0].payload["summary"].splitlines()[0]
    assert f"> {first_summary_line}" in md


def test_export_errors_are_typed(store: SessionStore) -> None:
    with pytest.raises(ConfigurationError, match="unknown export format 'pdf'"):
        export_session(store, "x", "pdf", io.StringIO())
    with pytest.raises(SessionNotFound):
        export_session(store, "no-such-session", "jsonl", io.StringIO())


def test_export_and_import_commands(store: SessionStore, store_url: str, tmp_path: Path) -> None:
    sid = store.create_session(metadata={"title": "café ☕"})
    store.append(sid, [ss.user("héllo \u0000 <b>"), ss.assistant("ok")])
    runner = CliRunner()
    streamed = runner.invoke(main, ["--db", store_url, "export", sid])
    assert streamed.exit_code == 0
    assert [json.loads(line)["type"] for line in streamed.stdout.splitlines()] == [
        "sessionstore.session", "sessionstore.event", "sessionstore.event"]
    target = tmp_path / "out" / "s.md"
    target.parent.mkdir()
    written = runner.invoke(main, ["--db", store_url, "export", sid, "--format", "markdown", "-o", str(target)])
    assert written.exit_code == 0 and target.read_text(encoding="utf-8").startswith("# café ☕")
    jsonl = tmp_path / "out" / "s.jsonl"
    assert runner.invoke(main, ["--db", store_url, "export", sid, "-o", str(jsonl)]).exit_code == 0
    other = f"sqlite:///{tmp_path / 'other.db'}"
    imported = runner.invoke(main, ["--db", other, "import", str(jsonl)])
    assert imported.exit_code == 0, imported.output
    copy = SessionStore(other)
    try:
        assert [e.payload for e in copy.events(sid)] == [e.payload for e in store.events(sid)]
    finally:
        copy.close()
    bad = runner.invoke(main, ["--db", store_url, "export", "nope"])
    assert bad.exit_code == 2 and "no session 'nope'" in bad.output  # the SID resolver of every command
    assert runner.invoke(main, ["--db", store_url, "export", sid, "--format", "pdf"]).exit_code == 2
