"""The Aider importer on a chat history recorded with real aider 0.86.2 (scripts/record_aider.py):
one session per run, the banner as metadata, usage from the Tokens lines, /clear, commands,
a reply's code fence read as the reply, the view a valid request, incremental re-import."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.importers import (InFlight, RecoveredLine, detect_format, find_transcripts, import_file, import_path,
                                    parse_file, transcript_of)
from sessionstore.testing.anthropic_server import validate_request

from .conftest import FIXTURE_TRANSCRIPTS

HISTORY = FIXTURE_TRANSCRIPTS / "aider" / "recorded" / ".aider.chat.history.md"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_each_run_is_a_session_with_the_banner_as_metadata(store: SessionStore) -> None:
    assert detect_format(HISTORY) == "aider" and find_transcripts(HISTORY.parent) == [HISTORY]
    assert transcript_of(HISTORY) == HISTORY
    result = import_file(store, HISTORY)
    assert result.ok and len(result.sessions) == 2
    chat, message = (store.session(s) for s in result.session_ids)
    headers = [line[len("# aider chat started at "):] for line in HISTORY.read_text().splitlines()
               if line.startswith("# aider chat started at ")]
    assert [chat.metadata["started_at"][:19], message.metadata["started_at"][:19]] == [
        h.replace(" ", "T") for h in headers]
    meta = chat.metadata
    assert (meta["agent"], meta["agent_version"], meta["model"], meta["edit_format"], meta["weak_model"]) == (
        "aider", "0.86.2", "openai/gpt-4.1", "diff", "openai/gpt-4.1-mini")
    assert meta["first_prompt"] == "What does slugify do with leading spaces?"
    assert meta["cwd"] == str(HISTORY.parent.resolve())
    events = store.transcript(result.session_ids[0])
    replies = [e for e in events if e.kind == "message" and e.payload["role"] == "assistant"]
    assert [r.meta["usage"]["output_tokens"] for r in replies] == [31, 54, 17, 15]
    assert replies[0].meta["usage"]["input_tokens"] == 153 and not replies[0].meta["usage_rounded"]
    assert replies[1].meta["usage"]["input_tokens"] == 2600 and replies[1].meta["usage_rounded"]
    edit = replies[1]
    assert edit.meta["applied_edits"] == ["slug.py"] and ">>>>>>> REPLACE\n```" in edit.payload["content"][0]["text"]
    run = next(e for e in events if e.kind == "message" and e.meta.get("command") == "/run")
    assert run.meta["output_added"] == "Added 1 line of output to the chat."
    commands = [e.payload["data"]["command"] for e in events if e.kind == "custom"
                and e.payload["type"] == "aider:command"]
    assert commands == ["/ask What does slugify do with leading spaces?", "/tokens"]
    assert all(e.created_at == events[0].created_at for e in events)  # the header's time: the file has no other
    (clear,) = [e for e in events if e.kind == "prune"]
    assert clear.meta["reason"] == "aider /clear" and max(clear.payload["targets"]) < clear.version
    request = store.context(result.session_ids[0]).to_anthropic()
    validate_request({"model": "claude-sonnet-4-5", "max_tokens": 64, **request})
    assert [m["role"] for m in request["messages"]] == ["user", "assistant"]
    assert "holds one function, `slugify(text)`" in json.dumps(request["messages"])


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_growing_history_adds_only_its_new_lines(store: SessionStore, tmp_path: Path) -> None:
    text = HISTORY.read_text()
    lines = text.splitlines(keepends=True)
    second_run = next(i for i, line in enumerate(lines) if line.startswith("# aider chat started at") and i > 2)
    growing = tmp_path / "repo" / ".aider.chat.history.md"
    growing.parent.mkdir()
    shutil.copyfile(HISTORY, growing)
    growing.write_text("".join(lines[:second_run - 8]))  # the first run, its last reply not written yet
    first = import_path(store, growing.parent)
    assert first.ok and len(first.session_ids) == 1
    growing.write_text(text)
    again = import_file(store, growing)
    assert again.ok and again.sessions[0].present == first.events_added and again.sessions[0].added > 0
    assert again.sessions[1].created and import_file(store, growing).events_added == 0


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_markdown_file_that_is_not_aiders_is_not_imported(store: SessionStore, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# A project\n\n#### not aider\n> a quote\n")
    assert find_transcripts(tmp_path) == []
    report = import_path(store, readme)
    assert not report.ok and "unknown format" in report.failures[0].reason and store.sessions() == []


def test_undecodable_bytes_are_a_warning_naming_their_line(tmp_path: Path) -> None:
    broken = tmp_path / ".aider.chat.history.md"
    broken.write_bytes(HISTORY.read_bytes().replace(b"Make slugify strip", b"Make slugify \xff strip", 1))
    parsed = parse_file(broken)
    (warning,) = parsed.issues
    line = next(n for n, text in enumerate(HISTORY.read_text().splitlines(), 1) if "Make slugify strip" in text)
    assert isinstance(warning, RecoveredLine) and (warning.path, warning.line) == (str(broken), line)
    assert any("Make slugify \ufffd strip" in json.dumps(e.payload, ensure_ascii=False) for e in parsed.events)


def test_a_run_with_only_its_header_waits_and_a_moved_file_keeps_its_sessions(tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / ".aider.chat.history.md"
    moved.parent.mkdir()
    moved.write_text(HISTORY.read_text() + "\n# aider chat started at 2026-12-08 09:00:00\n\n")
    parsed = parse_file(moved)
    assert [s.session_id for s in parsed.sessions] == [s.session_id for s in parse_file(HISTORY).sessions]
    (waiting,) = parsed.issues
    assert isinstance(waiting, InFlight) and waiting.line == len(HISTORY.read_text().splitlines()) + 2
