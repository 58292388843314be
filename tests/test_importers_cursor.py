"""The Cursor importer on a hand-written agent transcript (the structure of the files users publish:
tests/fixtures/transcripts/README.md): calls without results still project to a valid request,
times from the user's <timestamp>, the subagent file linked, incremental re-import, bad lines."""

from __future__ import annotations

import json
from datetime import timezone
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.importers import detect_format, find_transcripts, import_file, import_path
from sessionstore.testing.anthropic_server import validate_request

from .conftest import FIXTURE_TRANSCRIPTS

PROJECT = FIXTURE_TRANSCRIPTS / "cursor" / "projects" / "home-dev-slugify"
MAIN = next(p for p in (PROJECT / "agent-transcripts").glob("*/*.jsonl"))
SUB = next((MAIN.parent / "subagents").glob("*.jsonl"))


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_calls_without_results_project_to_a_valid_request(store: SessionStore) -> None:
    assert detect_format(MAIN) == detect_format(SUB) == "cursor"
    report = import_path(store, PROJECT)
    assert report.ok and sorted(report.session_ids) == sorted([MAIN.stem, SUB.stem])
    meta = store.session(MAIN.stem).metadata
    assert (meta["agent"], meta["project"]) == ("cursor", "home-dev-slugify")
    assert meta["first_prompt"].startswith("slugify('Crème brûlée') returns")
    assert meta["started_at"] == "2026-03-03T09:14:00+01:00"  # the first <timestamp>, its offset kept
    events = store.transcript(MAIN.stem)
    calls = [e for e in events if e.kind == "tool_call"]
    assert [c.payload["name"] for c in calls] == ["Read", "Glob", "Grep", "StrReplace", "Shell", "Task"]
    assert not [e for e in events if e.kind == "tool_result"] and all(c.meta["synthetic_call_id"] for c in calls)
    assert len({c.payload["call_id"] for c in calls}) == len(calls)
    later = next(e for e in events if e.kind == "message" and "Add a test" in json.dumps(e.payload))
    assert later.created_at.astimezone(timezone.utc).isoformat() == "2026-03-03T08:21:00+00:00"
    assert [e.payload["type"] for e in events if e.kind == "custom"] == ["cursor:turn_ended"] * 2
    request = store.context(MAIN.stem).to_anthropic()
    validate_request({"model": "claude-sonnet-4-5", "max_tokens": 64, **request})
    uses = [b for m in request["messages"] for b in m["content"] if isinstance(b, dict) and b["type"] == "tool_use"]
    results = [b for m in request["messages"] for b in m["content"] if isinstance(b, dict)
               and b["type"] == "tool_result"]
    assert len(uses) == len(results) == 6  # every call answered by the renderer's placeholder
    sub = store.session(SUB.stem).metadata
    assert (sub["role"], sub["parent_session"]) == ("subagent", MAIN.stem)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_growing_transcript_adds_only_new_lines_and_bad_lines_are_named(store: SessionStore,
                                                                          tmp_path: Path) -> None:
    folder = tmp_path / "agent-transcripts" / MAIN.stem
    folder.mkdir(parents=True)
    lines = MAIN.read_text().splitlines(keepends=True)
    growing = folder / MAIN.name
    growing.write_text("".join(lines[:4]))
    first = import_file(store, growing)
    assert first.ok and first.events_added == first.events
    growing.write_text("".join([*lines, '{"role": "assistant", "message": {"content": [{"type": "te\n']))
    again = import_file(store, growing)
    assert again.sessions[0].present == first.events_added and again.events_added == again.events - first.events
    (failure,) = again.failures
    assert (failure.path, failure.line) == (str(growing), len(lines) + 1) and "truncated JSON" in failure.reason
    assert find_transcripts(tmp_path) == [growing]
