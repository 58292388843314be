"""The Cline importer (Cline, Roo Code and Kilo Code tasks; the Cline CLI's sessions) on its fixtures
(one recorded with the real Cline CLI, three written from the public format:
tests/fixtures/transcripts/README.md): pairing of calls given as user
text or XML tags, compactions, usage and times from the companion files, the agent told apart,
the projected view a valid request, incremental re-import and bad input. The recorded session runs
on SQLite and PostgreSQL; the format's rules on SQLite (the storing all formats share is tested on
both by test_importers and test_reimport)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.importers import (detect_format, find_transcripts, import_file, import_path, parse_file,
                                    transcript_of)
from sessionstore.testing.anthropic_server import validate_request

from .conftest import FIXTURE_TRANSCRIPTS

CLINE = FIXTURE_TRANSCRIPTS / "cline"
TASKS = CLINE / "saoudrizwan.claude-dev" / "tasks"
NATIVE = TASKS / "1772442845120" / "api_conversation_history.json"
XML = TASKS / "1740000000000" / "api_conversation_history.json"
ROO = next((CLINE / "rooveterinaryinc.roo-cline" / "tasks").glob("*/api_conversation_history.json"))
CLI = next((CLINE / "recorded").glob("*/*.messages.json"))


def _valid(store: SessionStore, sid: str) -> dict:
    request = store.context(sid).to_anthropic()
    validate_request({"model": "claude-sonnet-4-5", "max_tokens": 64, **request})
    return request


def test_a_tasks_folder_and_a_task_folder_are_found_by_content(tmp_path: Path) -> None:
    found = find_transcripts(CLINE)
    assert sorted(found) == sorted([NATIVE, XML, ROO, CLI])  # panel rows, metadata and session records are companions
    assert {detect_format(f) for f in found} == {"cline"}
    assert find_transcripts(NATIVE.parent) == [NATIVE]
    assert transcript_of(NATIVE.parent / "ui_messages.json") == NATIVE
    assert transcript_of(NATIVE.parent / "task_metadata.json") == NATIVE
    assert transcript_of(CLI.parent / CLI.name.replace(".messages.json", ".compaction.json")) == CLI
    assert transcript_of(CLI.parent / CLI.name.replace(".messages.json", ".json")) == CLI


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_cline_task_results_as_text_pair_with_their_calls(store: SessionStore) -> None:
    result = import_file(store, NATIVE)
    assert result.ok and result.format == "cline"
    info = store.session(result.session_id)
    meta = info.metadata
    assert (meta["agent"], meta["agent_version"], meta["model"], meta["cwd"]) == (
        "cline", "3.51.0", "claude-sonnet-4-5-20250929", "/home/dev/slugify")
    assert meta["first_prompt"] == "Make slugify() strip accents and add a test."
    assert meta["started_at"] == "2026-03-02T09:14:05.120000+00:00"  # the panel's first row
    events = store.transcript(result.session_id)
    calls = {e.payload["call_id"]: e for e in events if e.kind == "tool_call"}
    results = {e.payload["call_id"]: e for e in events if e.kind == "tool_result"}
    assert set(results) < set(calls) and [calls[c].payload["name"] for c in set(calls) - set(results)] == [
        "attempt_completion"]
    run = next(e for e in results.values() if "2 passed" in e.payload["output"])
    assert calls[run.payload["call_id"]].payload["name"] == "execute_command" and run.meta["result_as_text"]
    assert all(results[c].version > calls[c].version for c in results)
    first = next(e for e in events if e.kind == "message" and e.payload["role"] == "assistant")
    assert first.meta["usage"] == {"input_tokens": 10, "output_tokens": 88, "cache_read_input_tokens": 9411}
    assert first.meta["cost"] == 0.0366 and first.payload["content"][0]["signature"].startswith("EqQB")
    assert first.created_at.isoformat() == "2026-03-02T09:14:07.020000+00:00"  # the panel row after the task
    (compaction,) = [e for e in events if e.kind == "compaction"]
    summarize = next(e for e in calls.values() if e.payload["name"] == "summarize_task")
    assert compaction.payload["summary"] == summarize.payload["input"]["context"]
    # after its result and the rest of the user's message
    assert compaction.version == results[summarize.payload["call_id"]].version + 2
    request = _valid(store, result.session_id)
    text = json.dumps(request["messages"])
    assert "Pending: add a test for accented input" in text and "Command executed." not in text
    assert "creme-brulee" in text


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_older_cline_xml_tool_tags_become_calls(store: SessionStore) -> None:
    result = import_file(store, XML)
    events = store.transcript(result.session_id)
    kinds = [(e.kind, e.payload.get("name") or e.payload.get("role")) for e in events]
    assert kinds == [("message", "user"), ("message", "assistant"), ("tool_call", "read_file"),
                     ("tool_result", None), ("message", "user"), ("message", "assistant"),
                     ("tool_call", "attempt_completion")]
    call, output = events[2], events[3]
    assert call.payload["input"] == {"path": "slugify.py"} and call.meta["xml_tool"]
    assert output.payload["call_id"] == call.payload["call_id"]
    assert [b["text"][:24] for b in output.payload["output"]] == ["[read_file for 'slugify.",
                                                                  "import re\n\n\ndef slugify("]
    thinking = "<thinking>\nI need to read the file.\n</thinking>"
    assert events[1].payload["content"] == [{"type": "text", "text": thinking}]
    assert events[1].meta["usage"]["cache_creation_input_tokens"] == 8420
    assert store.session(result.session_id).metadata["agent"] == "cline"
    _valid(store, result.session_id)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_roo_code_condensed_summary_is_a_compaction(store: SessionStore) -> None:
    result = import_file(store, ROO)
    meta = store.session(result.session_id).metadata
    assert (meta["agent"], meta["cwd"], meta["started_at"]) == ("roo-code", "/home/dev/slugify",
                                                               "2025-10-09T08:53:20+00:00")
    events = store.transcript(result.session_id)
    (compaction,) = [e for e in events if e.kind == "compaction"]
    p = compaction.payload
    assert p["summary"].startswith("## Conversation Summary") and (p["tokens_before"], p["tokens_after"]) == (9650, 410)
    assert p["first_kept_version"] == compaction.version and compaction.meta["condenseId"].startswith("c1f0")
    assert all(e.kind != "message" or "Conversation Summary" not in json.dumps(e.payload) for e in events)
    text = json.dumps(_valid(store, result.session_id)["messages"])
    assert "make_slug" in text and "File: slugify.py" not in text


def test_cline_cli_recorded_session_and_its_compaction(store: SessionStore) -> None:
    """Recorded with the real Cline CLI 3.0.65 (scripts/record_cline.py): a run that compacted twice
    (the file keeps the latest compaction, with the messages it kept)."""
    result = import_file(store, CLI)
    meta = store.session(result.session_id).metadata
    assert (meta["agent"], meta["agent_version"], meta["model"], meta["cwd"]) == (
        "cline", "3.0.65", "gpt-4.1", "/home/user/work")
    assert meta["first_prompt"].startswith("What do errors.py and tokens.py define")
    events = store.transcript(result.session_id)
    assert [e.payload["name"] for e in events if e.kind == "tool_call"] == ["run_commands", "read_files",
                                                                             "run_commands"]
    outputs = [e for e in events if e.kind == "tool_result"]
    assert len(outputs) == 3 and '"result": "23\\n"' in outputs[0].payload["output"]
    (compaction,) = [e for e in events if e.kind == "compaction"]
    state = json.loads(CLI.with_name(CLI.name.replace(".messages.json", ".compaction.json")).read_text())
    kept_id = state["messages"][1]["id"]
    kept = next(e for e in events if e.meta.get("message_id") == kept_id)
    assert compaction.payload["first_kept_version"] == kept.version < compaction.version
    assert compaction.payload["tokens_before"] == state["messages"][0]["metadata"]["tokensBefore"]
    assert compaction.payload["summary"] == state["messages"][0]["metadata"]["summary"]
    usage = [e.meta["usage"] for e in events if "usage" in e.meta]
    assert len(usage) == 4 and all(u["input_tokens"] > 1000 for u in usage)
    text = json.dumps(_valid(store, result.session_id)["messages"])
    assert "23 error classes" in text and "Token counting." not in text and "520 total" in text


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_growing_task_adds_only_its_new_events(store: SessionStore, tmp_path: Path) -> None:
    task = tmp_path / "tasks" / NATIVE.parent.name
    shutil.copytree(NATIVE.parent, task)
    history = json.loads(NATIVE.read_text())
    (task / NATIVE.name).write_text(json.dumps(history[:5]))
    first = import_path(store, tmp_path / "tasks")
    assert first.ok and first.events_added > 0
    (task / NATIVE.name).write_text(json.dumps(history))
    again = import_file(store, task / NATIVE.name)
    assert again.ok and again.events_present == first.events_added
    assert again.events_added == again.events - first.events_added
    assert import_file(store, task / NATIVE.name).events_added == 0
    stored = [(e.event_id, e.kind, e.payload) for e in store.transcript(first.session_ids[0])]
    fresh = import_file(store, NATIVE)  # the same task id from its own file: nothing new
    assert fresh.events_added == 0 and fresh.ok
    assert len(stored) == fresh.events


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_bad_input_is_reported_with_file_and_line(store: SessionStore, tmp_path: Path) -> None:
    task = tmp_path / "1772442845999"
    task.mkdir()
    good = json.loads(NATIVE.read_text())[:6]
    text = json.dumps(good, indent=1)
    (task / "api_conversation_history.json").write_text(text[: len(text) // 2])  # cut while Cline was writing
    result = import_file(store, task / "api_conversation_history.json", "cline")
    assert not result.ok and result.failures[0].line > 1 and "truncated JSON" in result.failures[0].reason
    assert result.events_added == 0
    (task / "api_conversation_history.json").write_text(json.dumps([*good, {"role": "tool", "content": "x"}],
                                                                   indent=1))
    (task / "ui_messages.json").write_text("[{\"ts\": 1")
    result = import_file(store, task / "api_conversation_history.json")
    (failure,) = result.failures
    assert "message 6 has no role" in failure.reason and failure.line == len(json.dumps(good, indent=1).splitlines())
    assert [w.path for w in result.warnings] == [str(task / "ui_messages.json")]
    assert result.events_added > 0


def test_the_agent_is_told_by_its_storage_folder_else_by_its_files(tmp_path: Path) -> None:
    kilo = tmp_path / "kilocode.kilo-code" / "tasks" / ROO.parent.name
    shutil.copytree(ROO.parent, kilo)
    assert parse_file(kilo / ROO.name).metadata["agent"] == "kilo-code"
    loose = tmp_path / "exported" / ROO.parent.name  # a task copied out of VS Code: its files tell
    shutil.copytree(ROO.parent, loose)
    assert parse_file(loose / ROO.name).metadata["agent"] == "roo-code"
    native = tmp_path / "exported" / NATIVE.parent.name
    shutil.copytree(NATIVE.parent, native)
    assert parse_file(native / NATIVE.name).metadata["agent"] == "cline"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_watch_follows_a_task_cline_rewrites_and_an_aider_history_that_grows(store_url: str, tmp_path: Path) -> None:
    """`sessionstore watch` (the real CLI) on a folder: Cline rewrites its task's history whole at each
    message; aider appends to its chat history. Each ends as a one-shot import of the finished file does."""
    from .test_watch import start, stop, stored, wait_for

    aider = FIXTURE_TRANSCRIPTS / "aider" / "recorded" / ".aider.chat.history.md"
    task = tmp_path / "tasks" / NATIVE.parent.name
    shutil.copytree(NATIVE.parent, task)
    history = json.loads(NATIVE.read_text())
    (task / NATIVE.name).write_text(json.dumps(history[:5]))
    repo = tmp_path / "tasks" / "repo"
    repo.mkdir()
    lines = aider.read_text().splitlines(keepends=True)
    (repo / aider.name).write_text("".join(lines[:20]))
    watcher = start(store_url, str(tmp_path / "tasks"))
    try:
        wait_for(watcher.stderr, "following changes")  # type: ignore[arg-type]
        (task / NATIVE.name).write_text(json.dumps(history))
        (repo / aider.name).write_text("".join(lines))
        whole, chat = parse_file(NATIVE), parse_file(aider)
        assert stored(store_url, whole.session_id, len(whole.events)) == len(whole.events)
        assert stored(store_url, chat.session_id, len(chat.events)) == len(chat.events)
    finally:
        stop(watcher)
    store = SessionStore(store_url)
    try:
        for parsed in (whole, chat):
            assert [(e.event_id, e.payload) for e in store.transcript(parsed.session_id)] == [
                (e.event_id, e.payload) for e in parsed.events]
    finally:
        store.close()
