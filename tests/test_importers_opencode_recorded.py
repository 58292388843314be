"""The OpenCode importer on a session recorded with the real OpenCode 1.18.33 (scripts/record_opencode.py:
``opencode run`` against the local Messages API, then ``opencode export``), on SQLite and PostgreSQL:
one assistant message per model step, calls paired with their results (one failing), step usage,
OpenCode's own automatic compaction with its summary and kept tail, metadata, a view the Messages API
accepts, a re-import that adds nothing, an export taken while the session grew, a cut document; and
OpenCode's SQLite database of the same recording, read directly."""

from __future__ import annotations

import json
from datetime import UTC, datetime
import shutil
import sqlite3
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.errors import UnknownFormat
from sessionstore.importers import detect_format, find_transcripts, import_file, transcript_of
from sessionstore.testing.anthropic_server import validate_request

from .conftest import FIXTURE_TRANSCRIPTS

EXPORT = next((FIXTURE_TRANSCRIPTS / "opencode" / "recorded-1.18.33").glob("export-ses_*.json"))


def _parts(doc: dict, ptype: str) -> list[tuple[dict, dict]]:
    return [(m["info"], p) for m in doc["messages"] for p in m["parts"] if p["type"] == ptype]


def test_recorded_opencode_session(store: SessionStore) -> None:
    doc = json.loads(EXPORT.read_text(encoding="utf-8"))
    assert detect_format(EXPORT) == "opencode"
    result = import_file(store, EXPORT)
    assert result.ok and not result.issues
    sid = doc["info"]["id"]
    assert result.session_id == sid
    events = store.transcript(sid)

    calls = {e.payload["call_id"]: e for e in events if e.kind == "tool_call"}
    results = {e.payload["call_id"]: e for e in events if e.kind == "tool_result"}
    tools = _parts(doc, "tool")
    assert calls.keys() == results.keys() == {p["callID"] for _, p in tools} and len(calls) == 6
    assert all(calls[c].version < results[c].version for c in calls)
    assert [calls[p["callID"]].payload["name"] for _, p in tools] == ["read", "bash", "read", "read", "edit", "read"]
    (failed,) = [r for r in results.values() if r.payload["is_error"]]
    assert failed.payload["output"].startswith("File not found") and calls[failed.payload["call_id"]].payload[
        "input"]["filePath"].endswith("sessionstore/missing.py")
    assert results[tools[1][1]["callID"]].payload["output"].split()[0] == "293"  # wc -l really ran on chain.py

    texts = [p["text"] for info, p in _parts(doc, "text") if info["role"] == "assistant" and not info.get("summary")]
    said = [b["text"] for e in events if e.kind == "message" and e.payload["role"] == "assistant"
            for b in e.payload["content"]]
    assert said == texts and len(said) == 6
    prompts = [e for e in events if e.kind == "message" and e.payload["role"] == "user"]
    assert len(prompts) == 5 and prompts[-1].payload["content"][0]["text"].startswith("Continue if you have next")

    # each step's usage on its first event, as OpenCode counted it at the step's end
    finishes = [p["tokens"] for info, p in _parts(doc, "step-finish") if not info.get("summary")]
    usage = [e.meta["usage"] for e in events if "usage" in e.meta and e.kind != "compaction"]
    assert [u["input"] for u in usage] == [t["input"] for t in finishes] and len(usage) == 11
    assert all(u["output"] == t["output"] for u, t in zip(usage, finishes, strict=True))

    # OpenCode compacted by itself when the last turn overflowed the 16k context of the config
    (compaction,) = [e for e in events if e.kind == "compaction"]
    (request,) = _parts(doc, "compaction")
    assert request[1] == {**request[1], "auto": True, "overflow": False}
    summary = next(m for m in doc["messages"] if m["info"].get("summary") is True)
    assert compaction.payload["summary"] == next(p["text"] for p in summary["parts"] if p["type"] == "text")
    assert compaction.payload["summary"].startswith("## Goal")
    assert (compaction.payload["trigger"], compaction.payload["summarizer"]) == ("auto", "opencode")
    assert compaction.payload["tokens_before"] == finishes[-2]["input"]  # the step that overflowed
    kept = next(e for e in events if e.version == compaction.payload["first_kept_version"])
    assert kept.meta["message_id"] == request[1]["tail_start_id"]
    assert compaction.meta["usage"]["input"] == summary["info"]["tokens"]["input"]

    info = store.session(sid).metadata
    assert (info["opencode_version"], info["model"], info["title"]) == (
        "1.18.33", "claude-sonnet-4-5", "Learn the sessionstore code base")
    assert info["cwd"] == doc["info"]["directory"] and info["slug"] == doc["info"]["slug"]
    assert info["first_prompt"].startswith('"Which error classes')  # `opencode run` quotes a prompt with spaces
    started = datetime.fromtimestamp(doc["info"]["time"]["created"] / 1000, UTC)
    assert info["started_at"] == started.isoformat()  # the session's own start, not the import's

    view = store.context(sid).to_anthropic()
    validate_request({"model": "claude-sonnet-4-5", "max_tokens": 1024, **view})
    assert view["messages"][0]["content"][0]["text"].find("## Goal") >= 0  # the summary stands for what it replaced
    assert import_file(store, EXPORT).events_added == 0


def test_recorded_export_taken_while_growing(store: SessionStore, tmp_path: Path) -> None:
    """Exported after each message OpenCode finished, then whole: each import adds only what is new, and
    the session ends as one import of the finished export."""
    doc = json.loads(EXPORT.read_text(encoding="utf-8"))
    grown = tmp_path / EXPORT.name
    once = SessionStore(f"sqlite:///{tmp_path / 'once.db'}")
    once.migrate()
    added = []
    for n in range(1, len(doc["messages"]) + 1):
        grown.write_text(json.dumps({**doc, "messages": doc["messages"][:n]}), encoding="utf-8")
        added.append(import_file(store, grown).events_added)
    assert import_file(once, EXPORT).events_added == sum(added)
    users = sum(m["info"]["role"] == "user" for m in doc["messages"])
    assert added.count(0) == users == 6  # each user message (the compaction request too) waits for the answer
    sid = doc["info"]["id"]
    assert [(e.event_id, e.kind, e.payload) for e in store.transcript(sid)] == [
        (e.event_id, e.kind, e.payload) for e in once.transcript(sid)]


def test_recorded_export_cut_short_names_its_line(tmp_path: Path) -> None:
    text = EXPORT.read_text(encoding="utf-8")
    cut = tmp_path / EXPORT.name
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(UnknownFormat) as refused:
        detect_format(cut)
    assert refused.value.path == str(cut) and refused.value.line == 900
    assert "not valid JSON (line 900" in str(refused.value)


DATABASE = EXPORT.parent / "opencode.db"


def _events(store: SessionStore, sid: str) -> list[tuple]:
    return [(e.version, e.event_id, e.kind, e.payload, e.meta) for e in store.transcript(sid)]


def test_recorded_database_is_the_export(store: SessionStore, tmp_path: Path) -> None:
    """OpenCode 1.x's own database, read directly: the same session, event for event, as its export; so
    importing one after the other adds nothing, and a folder or a write-ahead log leads to it."""
    sid = json.loads(EXPORT.read_text(encoding="utf-8"))["info"]["id"]
    assert detect_format(DATABASE) == "opencode"
    result = import_file(store, DATABASE)
    assert result.ok and not result.issues and result.session_id == sid
    assert import_file(store, EXPORT).events_added == 0
    once = SessionStore(f"sqlite:///{tmp_path / 'once.db'}")
    once.migrate()
    import_file(once, EXPORT)
    assert _events(store, sid) == _events(once, sid) and len(_events(once, sid)) == 48
    info = store.session(sid).metadata
    assert (info["opencode_version"], info["title"], info["model"]) == (
        "1.18.33", "Learn the sessionstore code base", "claude-sonnet-4-5")
    assert info["started_at"] == once.session(sid).metadata["started_at"]
    assert find_transcripts(EXPORT.parent) == [EXPORT, DATABASE]
    assert transcript_of(tmp_path / "opencode.db-wal") is None  # no database beside it
    wal = DATABASE.with_name("opencode.db-wal")
    assert transcript_of(wal) == DATABASE


def test_recorded_database_with_a_broken_row(store: SessionStore, tmp_path: Path) -> None:
    """A part row whose JSON cannot be read fails its session, named, and stores nothing of it."""
    broken = tmp_path / "opencode.db"
    shutil.copyfile(DATABASE, broken)
    with sqlite3.connect(broken) as db:
        (part,) = db.execute("SELECT id FROM part ORDER BY id LIMIT 1").fetchone()
        db.execute("UPDATE part SET data = '{\"type\": \"text\", \"te' WHERE id = ?", (part,))
    db.close()
    result = import_file(store, broken)
    assert not result.ok and result.events_added == 0
    messages = [str(i) for i in result.issues]
    assert any(f"part {part}: its data is not a JSON object" in m and str(broken) in m for m in messages)
    assert any("not imported: 1 of its message or part rows cannot be read" in m for m in messages)


def test_another_database_is_not_opencodes(tmp_path: Path) -> None:
    """A SQLite file of another program (this store's own) is refused at once, not read line by line."""
    ours = tmp_path / "sessionstore.db"
    SessionStore(f"sqlite:///{ours}").migrate()
    with pytest.raises(UnknownFormat, match="sessionstore.db: is not a .* database"):
        detect_format(ours)
    assert find_transcripts(tmp_path) == []
