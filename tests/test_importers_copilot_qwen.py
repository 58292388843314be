"""The GitHub Copilot CLI and Qwen Code importers on sessions recorded with the real agents
(scripts/record_copilot.py, scripts/record_qwen.py), on SQLite and PostgreSQL: pairing, thinking,
usage, the agent's compaction, metadata, a view the Messages API accepts, bad lines, and
re-imports that add only what the file gained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.errors import TranscriptError
from sessionstore.importers import detect_format, find_transcripts, import_file, import_path, parse_file
from sessionstore.testing.anthropic_server import validate_request

from .conftest import FIXTURE_TRANSCRIPTS, fresh_url

COPILOT = next((FIXTURE_TRANSCRIPTS / "copilot-cli" / "recorded").glob("*/events.jsonl"))


def _valid_view(store: SessionStore, sid: str) -> dict:
    """The session's view as an Anthropic request, checked as the local Messages API checks one."""
    view = store.context(sid).to_anthropic()
    validate_request({"model": "claude-sonnet-4-5", "max_tokens": 1024, **view})
    return view


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_copilot_cli_session(store: SessionStore) -> None:
    assert detect_format(COPILOT) == "copilot-cli"
    result = import_file(store, COPILOT)
    assert result.ok and not result.issues
    raw = _lines(COPILOT)
    sid = raw[0]["data"]["sessionId"]
    assert result.session_id == sid == COPILOT.parent.name
    events = store.transcript(sid)
    assert len(events) == len(raw) + sum(  # a line an event, and a reply's text and each of its calls their own
        max(0, len(r["data"]["toolRequests"]) - (0 if r["data"]["content"] or r["data"].get("reasoningText") else 1))
        for r in raw if r["type"] == "assistant.message")
    calls = {e.payload["call_id"]: e for e in events if e.kind == "tool_call"}
    results = {e.payload["call_id"]: e for e in events if e.kind == "tool_result"}
    assert calls.keys() == results.keys() and len(calls) == 7
    assert all(calls[c].version < results[c].version for c in calls)
    assert {e.payload["name"] for e in calls.values()} == {"view", "grep", "bash", "edit"}
    missing = next(r for r in results.values() if r.payload["is_error"])
    assert missing.payload["output"] == "Path does not exist" and calls[missing.payload["call_id"]].payload[
        "input"]["path"].endswith("sessionstore/missing.py")
    assert sum(r.meta.get("exit_code") == 0 for r in results.values()) == 2  # the two bash calls
    thinking = next(e for e in events if e.kind == "message" and e.payload["content"][0]["type"] == "thinking")
    assert thinking.payload["content"][0]["signature"].endswith("recorded-by-sessionstore")
    usage = [e.meta["usage"] for e in events if "usage" in e.meta]
    records = [r["data"]["usage"] for r in raw if r["type"] == "session.usage_record"]
    assert usage == records and all(e.kind != "custom" for e in events if "usage" in e.meta)
    (compaction,) = [e for e in events if e.kind == "compaction"]
    done = next(r["data"] for r in raw if r["type"] == "session.compaction_complete")
    p = compaction.payload
    assert (p["summary"], p["tokens_before"], p["tokens_after"]) == (
        done["summaryContent"], done["preCompactionTokens"], done["postCompactionTokens"])
    assert (p["trigger"], p["summarizer"], p["first_kept_version"]) == ("manual", "copilot-cli", compaction.version)
    assert compaction.meta["compaction"]["trigger"] == "manual" and compaction.meta["compaction"]["messagesRemoved"]
    info = store.session(sid)
    start = raw[0]["data"]
    assert info.metadata["copilot_version"] == start["copilotVersion"] == "1.0.102"
    assert info.metadata["cwd"] == start["context"]["cwd"] and info.metadata["model"] == "claude-sonnet-4.5"
    assert info.metadata["started_at"] == start["startTime"] and info.metadata["git_branch"] == "main"
    assert info.metadata["first_prompt"].startswith("Which error classes")
    view = _valid_view(store, sid)
    text = json.dumps(view["messages"])
    assert "<overview>" in text and "Path does not exist" not in text  # the summary stands for what it replaced
    assert view["messages"][-1]["content"][0]["text"].startswith("Start with sessionstore/chain.py")
    assert "GitHub Copilot CLI" in json.dumps(view["system"])
    assert import_file(store, COPILOT).events_added == 0


def test_copilot_cli_grows_line_by_line_and_reports_bad_lines(store: SessionStore, backend: str, tmp_path: Path,
                                                            request: pytest.FixtureRequest) -> None:
    """Importing the file as Copilot writes it (a cut every few lines, one through a compaction)
    ends with what one import of the finished file stores; a broken line is an error naming the
    file and line, and the rest of the file imports."""
    session = tmp_path / "session-state" / COPILOT.parent.name
    session.mkdir(parents=True)
    grown = session / "events.jsonl"
    lines = COPILOT.read_bytes().splitlines(keepends=True)
    compaction = next(i for i, line in enumerate(lines) if b'"session.compaction_complete"' in line)
    for n in sorted({*range(5, len(lines), 16), compaction, compaction + 1, len(lines)}):
        grown.write_bytes(b"".join(lines[:n]))
        result = import_path(store, tmp_path)
        assert result.ok, result.failures
    assert find_transcripts(tmp_path) == [grown]
    (tmp_path / "fresh").mkdir()
    fresh = SessionStore(fresh_url(backend, tmp_path / "fresh", request))
    fresh.migrate()
    try:
        once = import_file(fresh, grown)
        rows = [[(e.version, e.event_id, e.kind, e.payload, e.meta, e.created_at)
                 for e in s.transcript(once.session_id)] for s in (store, fresh)]
        assert rows[0] == rows[1] and len(rows[0]) == len(parse_file(COPILOT).events)
    finally:
        fresh.close()
    broken = tmp_path / "broken" / "events.jsonl"
    broken.parent.mkdir()
    broken.write_bytes(b"".join([*lines[:3], b'{"type": "user.message", "data": {"content": "cut mid\n', *lines[3:8]]))
    parsed = parse_file(broken)
    (issue,) = parsed.issues
    assert isinstance(issue, TranscriptError) and (issue.path, issue.line) == (str(broken), 4)
    good = tmp_path / "good" / "events.jsonl"
    good.parent.mkdir()
    good.write_bytes(b"".join(lines[:8]))
    assert "truncated JSON" in str(issue) and len(parsed.events) == len(parse_file(good).events) > 8


QWEN = next((FIXTURE_TRANSCRIPTS / "qwen-code" / "recorded" / "chats").glob("*.jsonl"))


def test_qwen_code_session(store: SessionStore) -> None:
    assert detect_format(QWEN) == "qwen-code"
    result = import_file(store, QWEN)
    assert result.ok and not result.issues
    raw = _lines(QWEN)
    sid = raw[0]["sessionId"]
    assert result.session_id == sid == QWEN.stem
    events = store.transcript(sid)
    calls = {e.payload["call_id"]: e for e in events if e.kind == "tool_call"}
    results = {e.payload["call_id"]: e for e in events if e.kind == "tool_result"}
    assert calls.keys() == results.keys() and len(calls) == 7
    assert {e.payload["name"] for e in calls.values()} == {"read_file", "grep_search", "run_shell_command", "edit"}
    failed = sorted(r.payload["output"] for r in results.values() if r.payload["is_error"])
    assert len(failed) == 2 and failed[0].startswith("File not found: ") and failed[0].endswith("missing.py")
    edit = next(results[c] for c, call in calls.items() if call.payload["name"] == "edit")
    assert "has been updated" in edit.payload["output"] and not edit.payload["is_error"]
    usage = [e.meta["usage"] for e in events if "usage" in e.meta]
    assert usage == [r["usageMetadata"] for r in raw if r["type"] == "assistant"]
    (compaction,) = [e for e in events if e.kind == "compaction"]
    record = next(r["systemPayload"] for r in raw if r.get("subtype") == "chat_compression")
    p = compaction.payload
    assert p["summary"] == record["compressedHistory"][0]["parts"][0]["text"] and "<state_snapshot>" in p["summary"]
    assert (p["tokens_before"], p["tokens_after"]) == (record["info"]["originalTokenCount"],
                                                        record["info"]["newTokenCount"])
    assert (p["trigger"], p["summarizer"], p["first_kept_version"]) == ("manual", "qwen-code", compaction.version)
    attached = events[compaction.version]  # the file Qwen attached again after its summary
    assert attached.meta["reattached"] and attached.payload["content"][0]["text"].startswith("Recently accessed file")
    info = store.session(sid)
    assert (info.metadata["qwen_code_version"], info.metadata["model"]) == ("0.24.4", "qwen3-coder-plus")
    assert info.metadata["cwd"] == raw[0]["cwd"] and info.metadata["started_at"].startswith(raw[0]["timestamp"][:19])
    assert info.metadata["first_prompt"].startswith("Which error classes")
    view = _valid_view(store, sid)
    text = json.dumps(view["messages"])
    assert "<state_snapshot>" in text and "Recently accessed file" in text and "File not found" not in text
    assert import_file(store, QWEN).events_added == 0


def test_qwen_code_grows_and_rewinds(store: SessionStore, tmp_path: Path) -> None:
    """A grown chat adds only its new records; a rewind (the chain re-rooted before a user turn)
    retracts that turn and what followed it from the view, and the transcript keeps them."""
    lines = QWEN.read_bytes().splitlines(keepends=True)
    raw = _lines(QWEN)
    second = next(i for i, r in enumerate(raw) if r["type"] == "user" and i > 0)  # the second user turn
    third = next(i for i, r in enumerate(raw) if r["type"] == "user" and i > second)
    rewind = {**raw[third - 1], "uuid": "9d0e0f10-rewind", "parentUuid": raw[second - 1]["uuid"], "type": "system",
              "subtype": "rewind", "systemPayload": {"truncatedCount": 9}}
    rewind.pop("message", None)
    chat = tmp_path / "chats" / QWEN.name
    chat.parent.mkdir()
    chat.write_bytes(b"".join(lines[:second]))
    first = import_file(store, chat)
    chat.write_bytes(b"".join([*lines[:third], json.dumps(rewind).encode() + b"\n"]))
    again = import_file(store, chat)
    assert again.ok and again.events_present == first.events_added and again.events_added > 0
    events = store.transcript(first.session_id)
    (prune,) = [e for e in events if e.kind == "prune"]
    gone = [e for e in events if e.version in prune.payload["targets"]]
    assert {e.meta["uuid"] for e in gone} >= {raw[second]["uuid"]} and all(e.meta["line"] > second for e in gone)
    view = json.dumps(_valid_view(store, first.session_id)["messages"])
    assert "How long is chain.py" not in view and "Which error classes" in view

