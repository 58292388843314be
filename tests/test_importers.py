"""Importers of real agent transcripts (every format; the newer agents' own cases are in test_importers_agents.py),
on SQLite and PostgreSQL.

Expected numbers are computed here from the raw JSON with simple code of the test's own,
never by calling the importer's counting; the real transcripts are read from the shared
folder (the `transcripts` fixture) and never copied into the repository.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionNotFound, SessionStore, TranscriptError, UnknownFormat
from sessionstore.events import encode_event
from sessionstore.importers import (FileImport, detect_format, import_file, import_path, parse_file)
from sessionstore.importers.storing import store_parsed
from sessionstore.projection.calibration import calibration_details

from .conftest import SHARED, cases, shipped

# The shipped fixtures (tests/fixtures/transcripts/): recorded by the real tools (scripts/record_*.py)
PI = shipped("pi/recorded/*.jsonl")
CLAUDE = shipped("claude-code/recorded/*.jsonl")  # Claude Code 2.1.330: /compact, an Agent subagent
CODEX = shipped("codex/recorded/*.jsonl")

# --------------------------------------------------------------------------- raw-JSON helpers (the test's own)


def raw_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) of every non-blank line of a clean JSONL file."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if line.strip():
            out.append((number, json.loads(line)))
    return out


NEW_FORMATS = ("gemini-cli", "opencode", "openhands", "swe-agent")
LINE_FORMATS = ("copilot-cli", "qwen-code")  # JSONL, every line an event's source, counted by NEW_COUNTS
# The formats this module counts; the others (Cline, Aider, Cursor …) have test modules of their own.
COUNTED = ("claude-code", "pi", "codex", *NEW_FORMATS, *LINE_FORMATS)


def shared_files(root: Path) -> list[Path]:
    """Every transcript file with something in it (Claude Code 2.0 leaves empty ones behind): the
    JSONL files, and the files that are one JSON document or database (their folder names the format)."""
    documents = [p for p in root.rglob("*") if p.suffix in (".json", ".traj", ".db") and _document(p, root)]
    lines = [p for p in root.rglob("*.jsonl") if p.stat().st_size and p.relative_to(root).parts[0] in COUNTED]
    return sorted([*lines, *documents])


def _document(path: Path, root: Path) -> bool:
    """A transcript that is one JSON document, by the test's own reading of each layout."""
    fmt = path.relative_to(root).parts[0]
    if fmt == "opencode":
        return path.parent.parent.name == "session" or path.name.startswith("export-") or path.name == "opencode.db"
    return fmt in NEW_FORMATS


def expected_format(path: Path, root: Path) -> str:
    return path.relative_to(root).parts[0]


def _runs(kinds: list[str], tool_kinds: set[str]) -> int:
    """Number of maximal runs of non-tool blocks; an empty block list is one (empty) message."""
    if not kinds:
        return 1
    runs, previous_other = 0, False
    for kind in kinds:
        other = kind not in tool_kinds
        if other and not previous_other:
            runs += 1
        previous_other = other
    return runs


def expected_counts(path: Path, fmt: str) -> Counter[str]:
    if fmt in NEW_FORMATS or fmt in LINE_FORMATS:
        return NEW_COUNTS[fmt](path)
    counts: Counter[str] = Counter()
    for _, obj in raw_lines(path):
        t = obj.get("type")
        if fmt == "claude-code":
            if t == "system" and obj.get("subtype") == "compact_boundary":
                counts["compaction"] += 1
            elif t in ("user", "assistant") and not obj.get("isCompactSummary"):
                content = obj["message"].get("content")
                if isinstance(content, str):
                    counts["message"] += 1
                else:
                    kinds = [b["type"] for b in content]
                    counts["tool_call"] += kinds.count("tool_use")
                    counts["tool_result"] += kinds.count("tool_result")
                    counts["message"] += _runs(kinds, {"tool_use", "tool_result"})
        elif fmt == "pi":
            if t == "compaction":
                counts["compaction"] += 1
            elif t in ("custom_message", "branch_summary"):
                counts["message"] += 1
            elif t == "message":
                message = obj["message"]
                role = message["role"]
                if role == "toolResult":
                    counts["tool_result"] += 1
                elif role == "assistant":
                    kinds = [b["type"] for b in message["content"]]
                    counts["tool_call"] += kinds.count("toolCall")
                    counts["message"] += _runs(kinds, {"toolCall"})
                elif role == "bashExecution":
                    counts["message"] += 0 if message.get("excludeFromContext") else 1
                else:
                    counts["message"] += 1
        else:
            payload = obj.get("payload") or {}
            if t == "compacted":
                counts["compaction"] += 1
            elif t == "response_item":
                item = payload["type"]
                if item == "message" and payload["role"] != "system":
                    counts["message"] += 1
                elif item in ("reasoning", "web_search_call"):
                    counts["message"] += 1
                elif item in ("function_call", "custom_tool_call", "local_shell_call"):
                    counts["tool_call"] += 1
                elif item in ("function_call_output", "custom_tool_call_output"):
                    counts["tool_result"] += 1
    return counts


def _gemini_counts(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        messages, sets = json.loads(text)["messages"], []
    else:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        latest = {r["id"]: r for r in records if "type" in r and "id" in r}
        messages = list({r["id"]: latest[r["id"]] for r in records if "type" in r and "id" in r}.values())
        seen = [m["id"] for m in messages]
        before: set[str] = set()  # the messages written before each line
        for r in records:
            history = r.get("$set", {}).get("messages")
            if history is None:
                before |= {r["id"]} if "type" in r and "id" in r else set()
            elif before - {m["id"] for m in history}:  # a compression: its summary head is the compaction
                counts["compaction"] += 1
            else:  # the history set in place (the CLI's <session_context> first): its new turns are messages
                messages += [m for m in history if m["id"] not in seen and m["id"] not in before]
                before |= {m["id"] for m in history}
    for m in messages:
        calls = m.get("toolCalls") or []
        content = m.get("content")
        if m["type"] == "info" and "Context compressed from" in str(content):
            counts["compaction"] += 1  # the CLI's notice of a compression it recorded nowhere else
        elif m["type"] == "user" and isinstance(content, list) and content and all(
                "functionResponse" in part for part in content):
            continue  # a tool-response turn: its results are the calls' own
        elif m["type"] == "user":
            counts["message"] += 1
        elif m["type"] == "gemini":
            counts["message"] += 1 if (m["content"] or not calls) else 0
            counts["tool_call"] += len(calls)
            counts["tool_result"] += sum(c.get("result") is not None for c in calls)
    return counts


def _opencode_counts(path: Path) -> Counter[str]:
    if path.name.startswith("export-"):
        messages = [(m["info"], m["parts"]) for m in json.loads(path.read_text())["messages"]]
    elif path.suffix == ".db":  # OpenCode 1.x: the message and part rows' JSON
        with contextlib.closing(sqlite3.connect(path)) as db:
            rows = db.execute("SELECT m.id, m.data, p.data FROM message m LEFT JOIN part p ON p.message_id = m.id "
                              "ORDER BY m.id, p.id").fetchall()
        grouped: dict[str, tuple[dict, list[dict]]] = {}
        for mid, mdata, pdata in rows:
            grouped.setdefault(mid, (json.loads(mdata), []))[1].extend([json.loads(pdata)] if pdata else [])
        messages = list(grouped.values())
    else:
        storage = path.parent.parent.parent
        messages = []
        for f in sorted((storage / "message" / path.stem).glob("*.json")):
            info = json.loads(f.read_text())
            parts = sorted((storage / "part" / info["id"]).glob("*"))
            messages.append((info, [json.loads(p.read_text()) for p in parts]))
    counts: Counter[str] = Counter()
    for info, parts in messages:
        kinds = [p["type"] for p in parts]
        if info["role"] == "user":
            counts["message"] += 0 if "compaction" in kinds else 1
        elif info.get("summary"):
            counts["compaction"] += 1
        else:
            counts["tool_call"] += kinds.count("tool")
            counts["tool_result"] += sum(p["type"] == "tool" and p["state"]["status"] in ("completed", "error")
                                         for p in parts)
            runs = [k if k in ("text", "reasoning", "tool") else "|" for k in kinds]  # steps break runs too
            counts["message"] += sum(1 for i, k in enumerate(runs) if k in ("text", "reasoning")
                                     and (i == 0 or runs[i - 1] not in ("text", "reasoning")))
    return counts


def _openhands_history(events: list[dict[str, Any]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    if events and "id" not in events[0]:  # the resolver's older items: an action, then what it observed
        for i, e in enumerate(events):
            action, after = e.get("action"), events[i + 1] if i + 1 < len(events) else {}
            if action == "message":
                counts["message"] += 1
            elif action is not None:
                counts["tool_call"] += 1
                counts["message"] += 1 if e.get("thought") else 0
                observed = after.get("observation") not in (None, "agent_state_changed")
                counts["tool_result"] += 1 if observed else 0
        return counts
    answered = {e.get("cause") for e in events if "observation" in e}
    calls, responses = set(), set()
    for e in events:
        action = e.get("action")
        if action == "system":
            counts["system"] += 1
        elif action == "message" and "tool_call_metadata" not in e:
            counts["message"] += 1
        elif action == "condensation":
            counts["compaction"] += 1
        elif action in ("recall", "change_agent_state") and "tool_call_metadata" not in e:
            pass
        elif action is not None and ("tool_call_metadata" in e or e["id"] in answered or action in ("finish", "think")):
            calls.add(e["id"])
            counts["tool_call"] += 1
            response = (e.get("tool_call_metadata") or {}).get("model_response", {}).get("id")
            counts["message"] += 1 if e["args"].get("thought") and response not in responses else 0
            responses.add(response)
        elif "observation" in e and e.get("cause") in calls:
            counts["tool_result"] += 1
    return counts


def _openhands_counts(path: Path) -> Counter[str]:
    if path.suffix == ".json":
        return _openhands_history(json.loads(path.read_text()))
    total: Counter[str] = Counter()
    for _, obj in raw_lines(path):
        total += _openhands_history(obj["history"])
    return total


def _swe_agent_counts(path: Path) -> Counter[str]:
    traj = json.loads(path.read_text())
    steps = traj["trajectory"]
    counts = Counter({"tool_call": len(steps), "tool_result": len(steps)})
    counts["message"] = sum(1 for s in steps if s["thought"].strip())
    counts["message"] += sum(1 for m in traj["history"] if m["role"] not in ("system", "assistant", "tool")
                             and m["message_type"] != "observation")
    counts["message"] += 1  # the task: the first user message, before the first action
    return counts


def _copilot_counts(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for _, obj in raw_lines(path):
        data = obj["data"]
        if "parentToolCallId" in data:
            continue  # a sub-agent's events: custom
        if obj["type"] == "user.message":
            counts["message"] += 1
        elif obj["type"] == "assistant.message":
            counts["tool_call"] += len(data["toolRequests"])
            counts["message"] += bool(data["content"] or data.get("reasoningText") or not data["toolRequests"])
        elif obj["type"] == "tool.execution_complete":
            counts["tool_result"] += 1
        elif obj["type"] == "session.compaction_complete" and data["success"]:
            counts["compaction"] += 1
    return counts


def _qwen_counts(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for _, obj in raw_lines(path):
        parts = obj.get("message", {}).get("parts", [])
        calls = sum("functionCall" in p for p in parts)
        if obj["type"] == "user":
            counts["message"] += 1
        elif obj["type"] == "assistant":
            counts["tool_call"] += calls
            counts["message"] += calls < len(parts) or not calls
        elif obj["type"] == "tool_result":
            counts["tool_result"] += sum("functionResponse" in p for p in parts)
        elif obj.get("subtype") == "chat_compression" and obj["systemPayload"].get("compressedHistory"):
            counts["compaction"] += 1  # and the files it attaches again after its summary: user messages
            counts["message"] += sum(c["role"] == "user" for c in obj["systemPayload"]["compressedHistory"][1:])
    return counts


NEW_COUNTS = {"gemini-cli": _gemini_counts, "opencode": _opencode_counts, "openhands": _openhands_counts,
              "swe-agent": _swe_agent_counts, "copilot-cli": _copilot_counts, "qwen-code": _qwen_counts}


def stored_counts(store: SessionStore, session_id: str) -> Counter[str]:
    counts = Counter(e.kind for e in store.transcript(session_id))
    return Counter({k: counts[k] for k in ("message", "tool_call", "tool_result", "compaction")})


def snapshot(store: SessionStore) -> Any:
    """Everything the store holds, read back."""
    sessions = [(s.id, s.metadata, s.parent_id, s.fork_version, s.head) for s in store.sessions()]
    events = [(e.event_id, e.session_id, e.version, e.position, e.kind, e.payload, e.meta, e.tokens, e.created_at)
              for e in store.read_all()]
    return sessions, events


def text_of_message(event: Any) -> str:
    return "".join(b.get("text", "") for b in event.payload["content"])


def text_of_view_uuids(store: SessionStore, session_id: str) -> set[str]:
    """The source uuids of the events the session's view holds (what the model is sent)."""
    return {item.event.meta.get("uuid") for item in store.context(session_id).items}


# --------------------------------------------------------------------------- detection


def test_detect_format_of_every_shared_transcript(transcripts: Path) -> None:
    files = shared_files(transcripts)
    assert {expected_format(f, transcripts) for f in files} == {"claude-code", "pi", "codex", *NEW_FORMATS,
                                                               *LINE_FORMATS}
    assert len(files) >= (30 if SHARED else 5)
    for path in files:
        assert detect_format(path) == expected_format(path, transcripts), path


def test_unknown_format_is_a_clear_error(tmp_path: Path, store: SessionStore) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"level": "info", "msg": "server started"}\n{"level": "warn", "msg": "disk"}\n')
    with pytest.raises(UnknownFormat) as caught:
        detect_format(other)
    assert caught.value.path == str(other)
    assert ("not a Codex, Qwen Code, Claude Code, Pi, Gemini CLI, OpenCode, OpenHands, SWE-agent, Copilot CLI, Cline, "
            "Aider, Cursor or mini-SWE-agent transcript") in str(caught.value)
    assert str(caught.value).endswith("transcript (no line of its first 2 looks like one)")
    with pytest.raises(UnknownFormat):
        import_file(store, other)
    report = import_path(store, other)
    assert [(i.path, i.line) for i in report.issues] == [(str(other), 0)]
    assert "unknown format" in report.issues[0].reason
    assert store.sessions() == []


def test_empty_file(tmp_path: Path, store: SessionStore) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(UnknownFormat, match="empty"):
        detect_format(empty)
    parsed = parse_file(empty, "pi")
    assert parsed.events == []
    assert [(i.path, i.line) for i in parsed.issues] == [(str(empty), 0)]
    result = import_file(store, empty, "pi")
    assert result.sessions == [] and result.issues[0].line == 0
    report = import_path(store, empty)  # nothing to import, nothing wrong: listed, not imported, no issue
    assert report.issues == [] and [(f.path, f.imported) for f in report.files] == [(str(empty), False)]
    assert store.sessions() == []


# --------------------------------------------------------------------------- every real transcript


def test_every_shared_transcript_imports_with_the_source_counts(store: SessionStore, transcripts: Path) -> None:
    progress: list[tuple[int, int, str]] = []
    report = import_path(store, transcripts, on_progress=lambda done, total, f: progress.append((done, total, f.path)))
    assert report.issues == []
    counted = [f for f in report.files if Path(f.path).relative_to(transcripts).parts[0] in COUNTED]
    by_path = {Path(f.path).resolve(): f for f in counted}
    files = shared_files(transcripts)
    empty = {f.resolve() for f in transcripts.rglob("*.jsonl") if not f.stat().st_size}
    assert len(counted) == len(files) + len(empty), \
        "each file is imported once (subagent files with their main file)"
    assert set(by_path) == {f.resolve() for f in files} | empty, "every file is reported, subagent files included"
    assert all(not by_path[f].imported for f in empty)
    assert progress and progress[-1][0] == progress[-1][1] == len(progress)
    for path in files:
        fmt = expected_format(path, transcripts)
        result = by_path[path.resolve()]
        assert result.format == fmt
        assert len(result.sessions) == (len(raw_lines(path)) if fmt == "openhands" and path.suffix == ".jsonl"
                                        else 1), path
        sid = result.sessions[0].session_id
        expected = expected_counts(path, fmt)
        got = sum((stored_counts(store, s.session_id) for s in result.sessions), Counter())
        for kind in ("message", "tool_call", "tool_result", "compaction"):
            assert got[kind] == expected[kind], (path, kind)
        assert (result.messages, result.tool_calls, result.tool_results, result.compactions) == (
            expected["message"], expected["tool_call"], expected["tool_result"], expected["compaction"])
        # OpenCode 1.x's database and its export hold one session: the second of them finds it all present
        written = sum(s.added + s.present for s in result.sessions)
        assert written == sum(store.version(s.session_id) for s in result.sessions) == result.events
        assert result.events_added == (written if path.suffix != ".db" else 0)
        if fmt in NEW_FORMATS:
            continue  # a JSON document's items are not lines; the counts above cover them
        # nothing dropped: every source line is the origin of at least one stored event
        lines = {number for number, _ in raw_lines(path)}
        covered = set()
        for event in store.transcript(sid):
            covered.add(event.meta["line"])
            if "summary_line" in event.meta:
                covered.add(event.meta["summary_line"])
        assert covered == lines, (path, sorted(lines - covered)[:5])
        assert result.events_added == store.version(sid) == result.events


@pytest.mark.parametrize(("relative", "calls", "results", "level_changes"), cases(
    [(PI, 19, 19, 2)],
    [("pi/before-compaction.jsonl", 454, 448, None), ("pi/large-session.jsonl", None, None, 103)]))
def test_known_facts_hold_after_import(store: SessionStore, transcripts: Path, relative: str, calls: int | None,
                                       results: int | None, level_changes: int | None) -> None:
    """Facts counted by hand: the shared corpus's README and the recorded fixture's script."""
    result = import_file(store, transcripts / relative)
    events = store.transcript(result.session_id)
    if calls is not None:
        assert sum(e.kind == "tool_call" for e in events) == calls
        assert sum(e.kind == "tool_result" for e in events) == results
    changes = [e for e in events if e.kind == "custom" and e.payload["type"] == "pi:thinking_level_change"]
    assert level_changes is None or len(changes) == level_changes


def test_every_parsed_event_is_storable(transcripts: Path) -> None:
    for path in shared_files(transcripts):
        parsed = parse_file(path)
        ids = [e.event_id for e in parsed.events]
        assert len(ids) == len(set(ids)), path
        for i, event in enumerate(parsed.events):
            encode_event(event, i)


# --------------------------------------------------------------------------- compactions


@pytest.mark.parametrize(("relative", "trigger"), cases(
    [(CLAUDE, "manual")],
    [("claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl", "auto"),
     ("claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", "auto")]))
def test_claude_code_compact_boundary_is_one_compaction(store: SessionStore, transcripts: Path, relative: str,
                                                       trigger: str) -> None:
    path = transcripts / relative
    raw = raw_lines(path)
    boundaries = [(n, o) for n, o in raw if o.get("type") == "system" and o.get("subtype") == "compact_boundary"]
    summaries = [(n, o) for n, o in raw if o.get("isCompactSummary")]
    assert len(boundaries) == len(summaries) == 1
    (b_line, boundary), (s_line, summary) = boundaries[0], summaries[0]
    result = import_file(store, path)
    events = store.transcript(result.session_id)
    compactions = [e for e in events if e.kind == "compaction"]
    assert len(compactions) == 1
    c = compactions[0]
    assert c.payload["tokens_before"] == boundary["compactMetadata"]["preTokens"]
    assert c.payload["summary"] == summary["message"]["content"]
    assert c.payload["trigger"] == boundary["compactMetadata"]["trigger"] == trigger
    assert c.payload["tokens_after"] == boundary["compactMetadata"].get("postTokens")
    assert c.payload["strategy"] == "imported" and c.payload["summarizer"] == "claude-code"
    segment = boundary["compactMetadata"].get("preservedSegment")
    if segment is None:  # nothing before the boundary is kept
        assert c.payload["first_kept_version"] == c.version
    else:  # newer versions keep the last messages before the boundary: from the first event of the head's line
        kept = events[c.payload["first_kept_version"] - 1]
        assert kept.meta["uuid"] == segment["headUuid"]
        assert events[kept.version - 2].meta.get("uuid") != kept.meta["uuid"]
        assert kept.version < c.version
        assert segment["headUuid"] in text_of_view_uuids(store, result.session_id)
    assert c.meta["line"] == b_line and c.meta["summary_line"] == s_line
    assert c.created_at == events[c.version - 1].created_at
    assert all(e.meta["line"] < b_line for e in events[:c.version - 1])
    assert all(e.meta["line"] > s_line for e in events[c.version:])
    # no message event repeats the summary
    assert not any(e.kind == "message" and text_of_message(e) == c.payload["summary"] for e in events)


@pytest.mark.parametrize(("relative", "pre_tokens", "line"), cases(
    [(CLAUDE, 8505, 72)],
    [("claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl", 167094, 1256),
     ("claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 167731, 714)]))
def test_known_pre_tokens(store: SessionStore, transcripts: Path, relative: str, pre_tokens: int, line: int) -> None:
    """The shared corpus's README facts, and the recorded fixture's."""
    result = import_file(store, transcripts / relative)
    (c,) = [e for e in store.transcript(result.session_id) if e.kind == "compaction"]
    assert (c.payload["tokens_before"], c.meta["line"]) == (pre_tokens, line)


@pytest.mark.parametrize(("relative", "tokens_before"), cases(
    [(PI, [25719])],  # Pi 0.73 (v3): firstKeptEntryId, a split turn (the kept entry is an assistant's)
    [("pi/before-compaction.jsonl", [175004, 185014])]))  # v1: firstKeptEntryIndex 293 and 551
def test_pi_compactions_keep_from_the_first_kept_entry(store: SessionStore, transcripts: Path, relative: str,
                                                       tokens_before: list[int]) -> None:
    path = transcripts / relative
    raw = raw_lines(path)
    entries = [o for _, o in raw]  # Pi's file entries, header included (what firstKeptEntryIndex indexes)
    raw_compactions = [o for o in entries if o["type"] == "compaction"]
    result = import_file(store, path)
    events = store.transcript(result.session_id)
    compactions = [e for e in events if e.kind == "compaction"]
    assert [c.payload["tokens_before"] for c in compactions] == tokens_before
    for c, source in zip(compactions, raw_compactions):
        assert c.payload["summary"] == source["summary"]
        kept = events[c.payload["first_kept_version"] - 1]
        assert kept.version == c.payload["first_kept_version"] < c.version
        if "firstKeptEntryIndex" in source:
            target_line, target = raw[source["firstKeptEntryIndex"]]
            assert target_line == source["firstKeptEntryIndex"] + 1
        else:
            (target_line, target), = [(n, o) for n, o in raw if o.get("id") == source["firstKeptEntryId"]]
        assert kept.meta["line"] == target_line
        if target["message"]["role"] == "user":
            assert kept.kind == "message" and kept.payload["role"] == "user"
            assert text_of_message(kept) == target["message"]["content"][0]["text"]
        # it is the FIRST event made from that entry
        assert events[kept.version - 2].meta["line"] < target_line
    firsts = [c.payload["first_kept_version"] for c in compactions]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)


@pytest.mark.parametrize("relative", [PI, CLAUDE])
def test_imported_compaction_calibration_is_the_stores_view_before_it(store: SessionStore, transcripts: Path,
                                                                     relative: str) -> None:
    """A new session's compactions are calibrated from the events the import wrote, not read
    back (`importers.calibrating`): the figures are those of the store's own view at that point."""
    result = import_file(store, transcripts / relative, subagents=False)
    compactions = [e for e in store.transcript(result.session_id) if e.kind == "compaction"]
    assert compactions and all("calibration" in c.meta for c in compactions)
    for c in compactions:
        assert {"calibration": c.meta["calibration"]} == calibration_details(store.context(result.session_id,
                                                                                         at=c.version - 1))


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("relative", cases([PI, CLAUDE], [
    "pi/before-compaction.jsonl",
    "claude-code/claude-code-log/-src-deep-manifest/a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl",
    "codex/rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl"]))
def test_round_trip_payloads_and_raw_strings(store: SessionStore, transcripts: Path, relative: str) -> None:
    path = transcripts / relative
    parsed = parse_file(path)
    import_file(store, path, subagents=False)
    stored = store.transcript(parsed.session_id)
    assert [(e.event_id, e.kind) for e in stored] == [(e.event_id, e.kind) for e in parsed.events]
    for have, want in zip(stored, parsed.events):
        assert have.payload == want.payload
        # an agent's compaction also carries the token calibration learned at import (meta only)
        learned = {"calibration"} if have.kind == "compaction" else set()
        assert {k: v for k, v in have.meta.items() if k not in learned} == want.meta
        assert have.created_at == want.created_at
    # raw tool outputs come back byte for byte
    outputs = {e.payload["call_id"]: e.payload["output"] for e in stored if e.kind == "tool_result"}
    checked = 0
    for _, obj in raw_lines(path):
        if obj.get("type") == "message" and obj["message"].get("role") == "toolResult":
            text = obj["message"]["content"][0]["text"]
            assert outputs[obj["message"]["toolCallId"]][0]["text"].encode("utf-8") == text.encode("utf-8")
            checked += 1
        elif obj.get("type") == "response_item" and obj["payload"]["type"] == "function_call_output":
            assert outputs[obj["payload"]["call_id"]].encode("utf-8") == obj["payload"]["output"].encode("utf-8")
            checked += 1
        elif obj.get("type") == "user" and isinstance(obj["message"].get("content"), list):
            for block in obj["message"]["content"]:
                if block.get("type") == "tool_result":
                    assert outputs[block["tool_use_id"]] == block["content"]
                    checked += 1
    assert checked == len(outputs) > 5


@pytest.mark.parametrize("relative", cases(
    [CLAUDE],
    ["claude-code/claude-code-log/-Users-dain-workspace-JSSoundRecorder/7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl"]))
def test_thinking_keeps_its_signature_and_usage_is_in_meta(transcripts: Path, relative: str) -> None:
    path = transcripts / relative
    parsed = parse_file(path)
    by_line: dict[int, list[Any]] = {}
    for event in parsed.events:
        by_line.setdefault(event.meta["line"], []).append(event)
    thinking = 0
    for number, obj in raw_lines(path):
        if obj.get("type") != "assistant":
            continue
        first = by_line[number][0]
        assert first.meta["usage"] == obj["message"]["usage"]
        assert first.meta["model"] == obj["message"]["model"]
        assert first.meta["message_id"] == obj["message"]["id"]
        for block in obj["message"]["content"]:
            if block["type"] == "thinking":
                (message,) = [e for e in by_line[number] if e.kind == "message"]
                assert block in message.payload["content"]
                assert block["signature"]
                thinking += 1
    assert thinking > 0


@pytest.mark.parametrize("relative", cases([PI], ["pi/before-compaction.jsonl"]))
def test_pi_assistant_usage_and_thinking_signature(transcripts: Path, relative: str) -> None:
    path = transcripts / relative
    parsed = parse_file(path)
    first_of_line: dict[int, Any] = {}
    for event in parsed.events:
        first_of_line.setdefault(event.meta["line"], event)
    signatures = 0
    for number, obj in raw_lines(path):
        if obj["type"] == "message" and obj["message"]["role"] == "assistant":
            assert first_of_line[number].meta["usage"] == obj["message"]["usage"]
            for block in obj["message"]["content"]:
                if block["type"] == "thinking":
                    (message,) = [e for e in parsed.events if e.meta["line"] == number and e.kind == "message"]
                    assert {"type": "thinking", "thinking": block["thinking"],
                            "signature": block["thinkingSignature"]} in message.payload["content"]
                    signatures += 1
    assert signatures > 0


@pytest.mark.parametrize(("relative", "runs"), cases([(PI, 1)], [("pi/before-compaction.jsonl", 3)]))
def test_pi_bash_execution_is_what_pi_shows_the_model(transcripts: Path, relative: str, runs: int) -> None:
    path = transcripts / relative
    parsed = parse_file(path)
    bash = [(n, o["message"]) for n, o in raw_lines(path)
            if o["type"] == "message" and o["message"]["role"] == "bashExecution"]
    assert len(bash) == runs
    for number, source in bash:
        (event,) = [e for e in parsed.events if e.meta["line"] == number]
        assert event.kind == "message" and event.payload["role"] == "user"
        text = text_of_message(event)
        assert text.startswith(f"Ran `{source['command']}`\n```\n")
        assert source["output"] in text
        if source["truncated"]:
            assert text.endswith(f"[Output truncated. Full output: {source['fullOutputPath']}]")


@pytest.mark.parametrize(("relative", "responses"), cases(
    [(CODEX, 10)], [("codex/rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl", 50)]))
def test_codex_token_count_usage_goes_to_the_model_response(transcripts: Path, relative: str, responses: int) -> None:
    path = transcripts / relative
    parsed = parse_file(path)
    first_of_line = {}
    for event in parsed.events:
        first_of_line.setdefault(event.meta["line"], event)
    raw = raw_lines(path)
    model_items = {"reasoning", "function_call", "local_shell_call", "custom_tool_call", "web_search_call"}

    def from_model(line: dict[str, Any]) -> bool:
        item = line["payload"]
        return line["type"] == "response_item" and (
            item["type"] in model_items or (item["type"] == "message" and item["role"] == "assistant"))

    checked = 0
    if any(obj["type"] == "token_usage_record" for _, obj in raw):
        # newer Codex: each response's items, then its own usage record (then tool outputs, token_count)
        for i, (_, obj) in enumerate(raw):
            if obj["type"] != "token_usage_record":
                continue
            j = i
            while j > 0 and from_model(raw[j - 1][1]):
                j -= 1
            if j < i:
                assert first_of_line[raw[j][0]].meta["usage"] == obj["payload"]["usage"]
                assert first_of_line[raw[j][0]].meta["response_id"] == obj["payload"]["response_id"]
                checked += 1
        usage_lines = {e.meta["line"] for e in parsed.events if "usage" in e.meta}
        assert len(usage_lines) == checked  # and no other event got a usage (token_count gives none)
        assert checked > responses
        return
    for i, (_, obj) in enumerate(raw):
        if obj["type"] != "event_msg" or obj["payload"]["type"] != "token_count" or not obj["payload"].get("info"):
            continue
        # Codex 0.40 writes the count just before the items of the response it reports
        for number, nxt in raw[i + 1:]:
            if nxt["type"] != "response_item":
                continue
            if from_model(nxt):
                assert first_of_line[number].meta["usage"] == obj["payload"]["info"]["last_token_usage"]
                checked += 1
            break
    assert checked > responses


@pytest.mark.parametrize(("relative", "expected"), cases(
    [(CODEX, 8)], [("codex/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl", 34)]))
def test_codex_function_call_arguments_are_parsed(transcripts: Path, relative: str, expected: int) -> None:
    path = transcripts / relative
    parsed = parse_file(path)
    calls = {e.payload["call_id"]: e for e in parsed.events if e.kind == "tool_call"}
    n = 0
    for _, obj in raw_lines(path):
        if obj["type"] == "response_item" and obj["payload"]["type"] == "function_call":
            event = calls[obj["payload"]["call_id"]]
            assert event.payload["input"] == json.loads(obj["payload"]["arguments"])
            assert event.payload["name"] == obj["payload"]["name"]
            n += 1
    assert n == expected


# --------------------------------------------------------------------------- subagents


@pytest.mark.parametrize(("relative", "agents"), cases(
    [(CLAUDE, 1)],
    [("claude-code/claude-code-log/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl", 6)]))
def test_claude_code_subagents_are_linked_sessions(store: SessionStore, transcripts: Path, relative: str,
                                                   agents: int) -> None:
    main = transcripts / relative
    folder = main.parent
    calls = {}  # agent id -> tool_use id, from the raw main file
    for _, obj in raw_lines(main):
        result = obj.get("toolUseResult")
        if isinstance(result, dict) and "agentId" in result:
            calls[result["agentId"]] = obj["message"]["content"][0]["tool_use_id"]
    files = sorted((folder / main.stem / "subagents").glob("agent-*.jsonl"))
    assert len(files) == len(calls) == agents
    result = import_file(store, main)
    assert len(result.subagents) == agents and not result.issues
    main_sid = result.session_id
    main_info = store.session(main_sid)
    listed = {entry["agent_id"]: entry for entry in main_info.metadata["subagents"]}
    for sub_path in files:
        agent_id = sub_path.stem[len("agent-"):]
        sub_sid = f"{main_sid}:agent-{agent_id}"
        info = store.session(sub_sid)
        assert info.metadata["parent_session"] == main_sid
        assert info.metadata["agent_id"] == agent_id
        assert info.metadata["parent_call_id"] == calls[agent_id]
        meta_json = json.loads(sub_path.with_name(f"agent-{agent_id}.meta.json").read_text())
        assert info.metadata["description"] == meta_json["description"]
        assert listed[agent_id]["session_id"] == sub_sid and listed[agent_id]["call_id"] == calls[agent_id]
        assert store.version(sub_sid) == len(raw_lines(sub_path))
        # the result of the parent's Agent call points at the subagent session (the call is stored
        # before the line that names the agent is written: it never changes)
        linked = [e for e in store.transcript(main_sid) if e.meta.get("subagent_session") == sub_sid]
        assert [e.kind for e in linked] == ["tool_result"]
        assert {e.payload["call_id"] for e in linked} == {calls[agent_id]}


@pytest.mark.parametrize("relative", cases([shipped("claude-code/recorded-2.1.39/*.jsonl")],
                                            ["claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"]))
def test_compaction_summariser_transcript_is_linked_to_the_compaction(store: SessionStore, transcripts: Path,
                                                                     relative: str) -> None:
    """Claude Code 2.1.39 writes the summariser's own transcript (agent-acompact-*) beside the subagents'."""
    main = transcripts / relative
    result = import_file(store, main)
    sid = result.session_id
    subs = {Path(f.path).name: f for f in result.subagents}
    assert set(subs) == {p.name for p in (main.parent / main.stem / "subagents").glob("agent-*.jsonl")}
    (acompact,) = [Path(n).stem for n in subs if n.startswith("agent-acompact-")]
    (task_agent,) = [Path(n).stem[len("agent-"):] for n in subs if not n.startswith("agent-acompact-")]
    (compaction,) = [e for e in store.transcript(sid) if e.kind == "compaction"]
    summariser = store.session(f"{sid}:{acompact}")
    assert summariser.metadata["role"] == "compaction"
    assert summariser.metadata["parent_session"] == sid
    assert summariser.metadata["parent_compaction_version"] == compaction.version
    assert compaction.meta["summarizer_session"] == summariser.id
    # the summariser's last message is the summary the parent kept (minus Claude Code's preamble)
    last = store.transcript(summariser.id)[-1]
    assert "<analysis>" in text_of_message(last)
    task = store.session(f"{sid}:agent-{task_agent}")
    progress_call = {o["data"]["agentId"]: o["parentToolUseID"] for _, o in raw_lines(main)
                     if o.get("type") == "progress" and o["data"].get("type") == "agent_progress"}
    assert task.metadata["parent_call_id"] == progress_call[task_agent]


@pytest.mark.parametrize(("relative", "main_sid", "agent"), cases(
    [("claude-code/recorded-2.0.29", "5e55104e-c1a0-4d3e-9a11-000200000029", None)],
    [("claude-code/claude-code-log/-Users-dain-workspace-coderabbit-review-helper",
      "cb2e607c-c758-415a-8b45-c49e4631906a", "agent-ea02459f")]))
def test_older_subagent_files_beside_the_main_file(store: SessionStore, transcripts: Path, relative: str,
                                                   main_sid: str, agent: str | None) -> None:
    """Claude Code 2.0 and older: agent-*.jsonl beside the main file (the recorded fixture: its Task
    subagent is its main session's longest agent file, the others are Claude Code's warm-up agents)."""
    folder = transcripts / relative
    if agent is None:
        agent = max((f for f in folder.glob("agent-*.jsonl") if _raw_session_id(f) == main_sid),
                    key=lambda f: len(raw_lines(f))).stem
    report = import_path(store, folder)
    # the empty session files Claude Code 2.0 leaves behind when a session is resumed: listed, not failures
    assert not report.issues
    empty = {str(f) for f in folder.glob("*.jsonl") if f.stat().st_size == 0}
    assert {f.path for f in report.files if not f.imported} == empty
    sub = store.session(f"{main_sid}:{agent}")
    assert sub.metadata["parent_session"] == main_sid and sub.metadata["parent_call_id"].startswith("toolu_")
    # agent files of a session whose main file is not there, or is empty: own sessions, parent named
    # as far as known, none left out
    orphans = {f.stem: _raw_session_id(f) for f in folder.glob("agent-*.jsonl")
               if not (folder / f"{_raw_session_id(f)}.jsonl").is_file()
               or (folder / f"{_raw_session_id(f)}.jsonl").stat().st_size == 0}
    assert orphans
    for name, parent in orphans.items():
        orphan = store.session(f"{parent}:{name}")
        assert orphan.metadata["parent_session"] == parent and "parent_call_id" not in orphan.metadata
        with pytest.raises(SessionNotFound):
            store.session(parent)
    assert len([s for s in store.sessions() if ":agent-" in s.id]) == len(list(folder.glob("agent-*.jsonl")))
    # a subagent file imported on its own finds its parent for the link
    alone = import_file(store, folder / f"{agent}.jsonl")
    assert alone.events_added == 0 and alone.events_present == len(raw_lines(folder / f"{agent}.jsonl"))


def _raw_session_id(path: Path) -> str:
    return str(raw_lines(path)[0][1]["sessionId"])


# --------------------------------------------------------------------------- malformed input


def _valid_lines(fmt: str) -> list[dict[str, Any]]:
    if fmt == "claude-code":
        def line(i: int, text: str) -> dict[str, Any]:
            return {"type": "user", "sessionId": "cc-bad", "uuid": f"u{i}", "parentUuid": None,
                    "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": text}}
        return [line(i, f"text {i}") for i in range(6)]
    if fmt == "pi":
        header = {"type": "session", "id": "pi-bad", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/x"}
        return [header] + [{"type": "message", "timestamp": "2026-01-01T00:00:00Z",
                            "message": {"role": "user", "content": [{"type": "text", "text": f"text {i}"}],
                                        "timestamp": 1}} for i in range(1, 6)]
    meta = {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
            "payload": {"id": "codex-bad", "cwd": "/x", "instructions": None}}
    return [meta] + [{"timestamp": "2026-01-01T00:00:00Z", "type": "response_item",
                      "payload": {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": f"text {i}"}]}} for i in range(1, 6)]


_MISSING_FIELDS = {"claude-code": {"type": "user", "sessionId": "cc-bad", "uuid": "nomsg"},
                   "pi": {"type": "message", "timestamp": "2026-01-01T00:00:00Z"},
                   "codex": {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item"}}


@pytest.mark.parametrize("fmt", ["claude-code", "pi", "codex"])
def test_malformed_lines_are_reported_and_the_rest_imports(store: SessionStore, tmp_path: Path, fmt: str) -> None:
    v = [json.dumps(o).encode() for o in _valid_lines(fmt)]
    bad_utf8 = v[4].replace(b"text 4", b"text \xff\xfe 4")
    lines = [
        v[0],                                   # 1 ok
        v[1],                                   # 2 ok
        v[2][:-12],                             # 3 truncated
        b"this is not json at all",             # 4 garbage
        b"[1, 2, 3]",                           # 5 a JSON value that is not an object
        v[3] + v[5],                            # 6 two objects on one line
        bad_utf8,                               # 7 invalid UTF-8
        b"",                                    # 8 blank: ignored
        json.dumps(_MISSING_FIELDS[fmt]).encode(),  # 9 missing required fields
        b'"just a string"',                     # 10 not an object
    ]
    path = tmp_path / f"broken-{fmt}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert detect_format(path) == fmt
    result = import_file(store, path)
    assert all(isinstance(i, TranscriptError) and i.path == str(path) for i in result.issues)
    assert sorted({i.line for i in result.issues}) == [3, 4, 5, 6, 7, 9, 10]
    reasons = {i.line: i.reason for i in result.issues}
    assert "truncated" in reasons[3]
    assert "malformed" in reasons[4]
    assert "not a JSON object" in reasons[5] and "array" in reasons[5]
    assert "UTF-8" in reasons[7]
    (sid,) = result.session_ids
    events = store.transcript(sid)
    per_line = Counter(e.meta["line"] for e in events)
    assert set(per_line) == {1, 2, 6, 7}
    assert per_line[6] == 2, "both objects written on one line are imported"
    texts = [text_of_message(e) for e in events if e.kind == "message"]
    assert "text 3" in texts and "text 5" in texts
    assert "text \ufffd\ufffd 4" in texts
    # re-importing the same broken file changes nothing
    again = import_file(store, path)
    assert again.events_added == 0 and again.events_present == len(events)


def test_nul_bytes_and_lone_surrogates_are_stored(store: SessionStore, tmp_path: Path) -> None:
    common = {"sessionId": "cc-nul", "timestamp": "2026-01-01T00:00:00Z"}
    lines = [
        {**common, "type": "assistant", "uuid": "a1", "message": {
            "id": "m1", "role": "assistant", "model": "x", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "printf 'a\\0b'"}}]}},
        {**common, "type": "user", "uuid": "u1", "toolUseResult": {"stdout": "a\u0000b\ud800"},
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                   "content": "a\u0000b\ud800"}]}},
    ]
    path = tmp_path / "nul.jsonl"
    path.write_text("\n".join(json.dumps(o) for o in lines) + "\n", encoding="utf-8")
    result = import_file(store, path)
    assert not result.issues
    (res,) = [e for e in store.transcript(result.session_id) if e.kind == "tool_result"]
    assert res.payload["output"] == "a\u0000b\ud800"  # the payload keeps the source exactly
    assert res.meta["extra"]["toolUseResult"]["stdout"] == "a\ufffdb\ufffd"  # JSONB meta cannot
    assert res.meta["coerced"]


def test_a_session_id_the_store_cannot_hold_is_reported_and_the_rest_imports(store: SessionStore,
                                                                            tmp_path: Path) -> None:
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "hi"}}
    _write(tmp_path / "a-nul.jsonl", [{**line, "sessionId": "cc\u0000id"}])
    _write(tmp_path / "b-surrogate.jsonl", [{**line, "sessionId": "cc\ud800id"}])
    (tmp_path / "c-long.json").write_text(json.dumps({"sessionId": "g" * 300, "projectHash": "p", "messages": [
        {"id": "m1", "type": "user", "timestamp": "2026-01-01T00:00:00Z", "content": "hi"}]}), encoding="utf-8")
    _write(tmp_path / "d-fine.jsonl", [{**line, "sessionId": "cc-fine"}])
    report = import_path(store, tmp_path)
    reasons = {Path(i.path).name: (i.line, i.reason) for i in report.failures}
    assert set(reasons) == {"a-nul.jsonl", "b-surrogate.jsonl", "c-long.json"}
    assert all(line == 0 and "not written" in reason for line, reason in reasons.values())
    assert "NUL" in reasons["a-nul.jsonl"][1] and "at most 255 characters" in reasons["c-long.json"][1]
    assert [s.id for s in store.sessions()] == ["cc-fine"]  # the files after them still import


_ODD_VALUES = [None, 1, -1, 1.5, "x", "", [], {}, [1], {"type": 1}, {"type": "text"}, True, ["a"],
               [{"type": "text", "text": 5}], {"type": "tool_use"}, [{"type": "toolCall"}],
               "NUL \u0000 and a lone surrogate \ud800"]  # text JSON carries and JSONB (PostgreSQL) cannot


def _confuse(obj: Any, rng: Any) -> None:
    """Replace (or delete) one value somewhere inside `obj` by a value of another type."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, prefix: tuple[Any, ...]) -> None:
        if prefix:
            paths.append(prefix)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, prefix + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value[:4]):
                walk(v, prefix + (i,))

    walk(obj, ())
    if not paths:
        return
    path = rng.choice(paths)
    holder = obj
    for step in path[:-1]:
        holder = holder[step]
    if isinstance(holder, dict) and rng.random() < 0.3:
        del holder[path[-1]]
    else:
        holder[path[-1]] = json.loads(json.dumps(rng.choice(_ODD_VALUES)))


def _confuse_deep(value: Any, rng: Any, times: int) -> None:
    """`_confuse` `times` times, each inside an object or array chosen anywhere in `value`: a JSON
    document nests its records (a message's parts, a step's tool calls) deeper than one walk reaches."""
    nodes: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, (dict, list)) and node:
            nodes.append(node)
            for child in node.values() if isinstance(node, dict) else node:
                walk(child)

    walk(value)
    for _ in range(times):
        _confuse(rng.choice(nodes), rng)


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _write_document(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")  # indented: each item on lines of its own
    return path


def _line_count(path: Path) -> int:
    data = path.read_bytes()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


# A fuzzer reads a format's real files once (`transcripts/<format>`, a scratch folder) and returns
# what writes trial n's file: real records, type-confused, drawn with the seeded `rng`.
Trial = Callable[[Any, int], Path]


def _fuzz_lines(fmt: str) -> Callable[[Path, Path], Trial]:
    """Claude Code, Pi, Codex, Copilot CLI, Qwen Code: 12 lines from any of the format's files, in any
    order, each confused 1-3 times."""
    def prepare(folder: Path, scratch: Path) -> Trial:
        pool = [line for f in sorted(folder.rglob("*.jsonl"))
                for line in f.read_text(encoding="utf-8").split("\n") if line.strip()]

        def trial(rng: Any, n: int) -> Path:
            sample = [json.loads(line) for line in rng.sample(pool, 12)]
            if fmt == "pi":
                sample.insert(0, {"type": "session", "id": f"fuzz-{n}", "version": rng.choice([1, 3])})
            for obj in sample:
                for _ in range(rng.randint(1, 3)):
                    _confuse(obj, rng)
            return _write(scratch / f"fuzz-{n}.jsonl", sample)
        return trial
    return prepare


def _fuzz_gemini_cli(folder: Path, scratch: Path) -> Trial:
    """Both layouts, in turn: a JSONL file (a metadata line, then 12 records of either layout:
    messages, ``$set`` and ``$rewindTo`` lines) and a JSON document of 10 messages."""
    documents = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.rglob("*.json"))]
    lines = [obj for p in sorted(folder.rglob("*.jsonl")) for _, obj in raw_lines(p)]
    heads = [obj for obj in lines if "sessionId" in obj]
    records = [obj for obj in lines if "sessionId" not in obj] + [m for d in documents for m in d["messages"]]

    def trial(rng: Any, n: int) -> Path:
        if n % 2:
            document = _copy({**rng.choice(documents), "messages": rng.sample(records, 10)})
            _confuse_deep(document, rng, rng.randint(2, 8))
            return _write_document(scratch / f"fuzz-{n}.json", document)
        sample = _copy([rng.choice(heads), *rng.sample(records, 12)])
        for obj in sample:
            _confuse_deep(obj, rng, rng.randint(1, 3))
        return _write(scratch / f"fuzz-{n}.jsonl", sample)
    return trial


def _fuzz_opencode(folder: Path, scratch: Path) -> Trial:
    """Both layouts, in turn: an export of 6 messages drawn from the export and the storage folder,
    and the storage folder (one copy, 5 of its files confused each time, then put back)."""
    storage = scratch / "storage"
    shutil.copytree(folder / "storage", storage)
    files = sorted(storage.rglob("*.json"))
    session = next((storage / "session").glob("*/*.json"))
    export = json.loads(next(folder.glob("export-*.json")).read_text(encoding="utf-8"))
    stored = [{"info": json.loads(m.read_text(encoding="utf-8")),
               "parts": [json.loads(p.read_text(encoding="utf-8")) for p in sorted((storage / "part" / m.stem).glob(
                   "*.json"))]} for m in sorted((storage / "message").glob("*/*.json"))]
    messages = [*export["messages"], *stored]
    confused: dict[Path, str] = {}  # the files the last trial changed: their text

    def trial(rng: Any, n: int) -> Path:
        for path, text in confused.items():
            path.write_text(text, encoding="utf-8")
        confused.clear()
        if n % 2:
            document = _copy({**export, "messages": rng.sample(messages, 6)})
            _confuse_deep(document, rng, rng.randint(2, 10))
            return _write_document(scratch / f"export-{n}.json", document)
        for path in rng.sample(files, 5):
            confused[path] = path.read_text(encoding="utf-8")
            value = json.loads(confused[path])
            _confuse_deep(value, rng, rng.randint(1, 3))
            _write_document(path, value)
        return session
    return trial


def _fuzz_openhands(folder: Path, scratch: Path) -> Trial:
    """Both layouts, in turn: a trajectory (a whole one, or 16 events drawn from every trajectory
    and evaluation history) and an evaluation's output lines, confused anywhere inside."""
    trajectories = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.rglob("*.json"))]
    outputs = [obj for p in sorted(folder.rglob("*.jsonl")) for _, obj in raw_lines(p)]
    events = [*(e for t in trajectories for e in t), *(e for o in outputs for e in o["history"] if isinstance(e, dict))]

    def trial(rng: Any, n: int) -> Path:
        if n % 2:
            trajectory = _copy(rng.sample(events, 16) if rng.random() < 0.5 else rng.choice(trajectories))
            _confuse_deep(trajectory, rng, rng.randint(2, 10))
            return _write_document(scratch / f"fuzz-{n}.json", trajectory)
        lines = _copy(outputs)
        for obj in lines:
            _confuse_deep(obj, rng, rng.randint(1, 6))
        return _write(scratch / f"fuzz-{n}.jsonl", lines)
    return trial


def _fuzz_swe_agent(folder: Path, scratch: Path) -> Trial:
    """A trajectory (its steps, its history: now and then shuffled), confused anywhere inside."""
    documents = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.rglob("*.traj"))]

    def trial(rng: Any, n: int) -> Path:
        document = _copy(rng.choice(documents))
        if rng.random() < 0.3:
            rng.shuffle(document["history"])
        _confuse_deep(document, rng, rng.randint(2, 10))
        return _write_document(scratch / f"fuzz-{n}.traj", document)
    return trial


_FUZZERS = {"claude-code": _fuzz_lines("claude-code"), "pi": _fuzz_lines("pi"), "codex": _fuzz_lines("codex"),
            "gemini-cli": _fuzz_gemini_cli, "opencode": _fuzz_opencode, "openhands": _fuzz_openhands,
            "swe-agent": _fuzz_swe_agent, "copilot-cli": _fuzz_lines("copilot-cli"),
            "qwen-code": _fuzz_lines("qwen-code")}


@pytest.mark.parametrize("fmt", list(_FUZZERS))
def test_type_confused_transcripts_never_crash_the_importer(transcripts: Path, tmp_path: Path, fmt: str) -> None:
    """Real records with values of the wrong type, missing, or swapped for lists and objects
    (seeded: the same files every run). Detecting, parsing and storing never raise (a file
    confused beyond recognition is an `UnknownFormat`): what cannot be read is a `TranscriptError`
    naming the file and the record's line, what cannot be stored one naming the file (line 0);
    what is read encodes, each event with its own id, and is stored (on a real SQLite file)."""
    import random

    rng = random.Random(20260101)
    trial = _FUZZERS[fmt](transcripts / fmt, tmp_path)
    store = SessionStore(f"sqlite:///{tmp_path / 'fuzz.db'}")
    store.migrate()
    stored = 0
    for n in range(60):
        path = trial(rng, n)
        with contextlib.suppress(UnknownFormat):
            detect_format(path)
        parsed = parse_file(path, fmt)
        for issue in parsed.issues:
            assert isinstance(issue, TranscriptError)
            named = Path(issue.path)  # an OpenCode session's message and part files name themselves
            assert named == path or (fmt == "opencode" and named.is_relative_to(tmp_path / "storage")), issue
            assert 1 <= issue.line <= _line_count(named), issue
        for session in parsed.sessions:
            for i, event in enumerate(session.events):
                encode_event(event, i)
            assert len({e.event_id for e in session.events}) == len(session.events)
        # the trials share session ids (one fixture's): a fork takes what diverges, so that each is written
        results, issues = store_parsed(store, parsed, on_divergence="fork")
        assert all(isinstance(i, TranscriptError) and (i.path, i.line) == (str(path), 0) for i in issues), issues
        stored += sum(r.added for r in results)
    store.close()
    assert stored > 60, "the confused files still hold readable records, and they are stored"


# --------------------------------------------------------------------------- idempotence


def test_reimport_adds_nothing_and_changes_nothing(store: SessionStore, transcripts: Path) -> None:
    paths = [transcripts / relative for relative in cases(
        [CLAUDE, "claude-code/recorded-2.1.39", PI, CODEX],
        ["claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
         "claude-code/claude-code-log/-src-deep-manifest", "pi/large-session.jsonl",
         "codex/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"])]
    first = import_path(store, *paths)
    assert first.events_added > (3000 if SHARED else 300) and first.events_present == 0
    before = snapshot(store)
    second = import_path(store, *paths)
    assert second.events_added == 0 and second.events_present == first.events_added
    assert not second.issues
    assert snapshot(store) == before


_GROW = cases([(PI, 30), (CLAUDE, 60), (CODEX, 40)],
              [("pi/before-compaction.jsonl", 500),
               ("claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl", 900),
               ("codex/rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl", 400)])


@pytest.mark.parametrize(("relative", "cut"), _GROW)
def test_grown_file_reimports_only_the_new_lines(store: SessionStore, transcripts: Path, tmp_path: Path,
                                                 relative: str, cut: int) -> None:
    source = (transcripts / relative).read_bytes().split(b"\n")
    path = tmp_path / Path(relative).name
    # the agent was writing line cut + 1 when we first imported: half of it is there
    path.write_bytes(b"\n".join(source[:cut]) + b"\n" + source[cut][: len(source[cut]) // 2])
    first = import_file(store, path)
    assert [i.line for i in first.issues] == [cut + 1]
    (sid,) = first.session_ids
    partial = [e.event_id for e in store.transcript(sid)]
    assert max(e.meta["line"] for e in store.transcript(sid)) <= cut
    path.write_bytes(b"\n".join(source))
    second = import_file(store, path)
    assert not second.issues
    full = parse_file(path)
    assert second.events_present == len(partial)
    assert second.events_added == len(full.events) - len(partial) > 0
    stored = store.transcript(sid)
    assert [e.event_id for e in stored] == [e.event_id for e in full.events]
    assert [e.payload for e in stored] == [e.payload for e in full.events]
    assert [e.event_id for e in stored[:len(partial)]] == partial


@pytest.mark.parametrize("relative", cases(
    [CODEX], ["codex/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"]))
def test_rewritten_file_is_reported_and_left_alone(store: SessionStore, transcripts: Path, tmp_path: Path,
                                                   relative: str) -> None:
    source = transcripts / relative
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    first = import_file(store, path)
    before = snapshot(store)
    lines = path.read_text(encoding="utf-8").split("\n")
    edited = next(i for i, line in enumerate(lines) if '"type":"response_item"' in line and '"type":"message"' in line)
    obj = json.loads(lines[edited])
    obj["payload"]["content"][0]["text"] = "edited after the fact"
    lines[edited] = json.dumps(obj)
    lines.append(lines[-2])
    path.write_text("\n".join(lines), encoding="utf-8")
    second = import_file(store, path)
    assert second.events_added == 0
    assert [i.line for i in second.issues] == [0]
    assert "not a prefix" in second.issues[0].reason and first.session_id in second.issues[0].reason
    assert snapshot(store) == before


# --------------------------------------------------------------------------- Pi versions and trees


def _pi_entry(entry_id: str | None, parent: str | None, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"timestamp": "2026-01-01T00:00:00.000Z", **fields}
    if entry_id is not None:
        entry = {"id": entry_id, "parentId": parent, **entry}
    return entry


def _pi_message(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1767225600000, **extra}


def _write(path: Path, objects: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(o) for o in objects) + "\n", encoding="utf-8")
    return path


def test_pi_v3_tree_branches_become_forks(store: SessionStore, tmp_path: Path) -> None:
    e = _pi_entry
    path = _write(tmp_path / "tree.jsonl", [
        {"type": "session", "version": 3, "id": "pi-tree", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"},
        e("a1", None, type="message", message=_pi_message("user", "first question")),
        e("a2", "a1", type="message", message={
            "role": "assistant", "content": [{"type": "text", "text": "reading"},
                                             {"type": "toolCall", "id": "c1", "name": "read",
                                              "arguments": {"path": "x.py"}}],
            "provider": "anthropic", "model": "m", "api": "anthropic-messages", "usage": {"input": 5},
            "stopReason": "toolUse", "timestamp": 1}),
        e("a3", "a2", type="message", message={"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                                                "content": [{"type": "text", "text": "print(1)"}],
                                                "isError": False, "timestamp": 2}),
        e("b1", "a3", type="message", message=_pi_message("user", "abandoned question")),
        e("b2", "b1", type="message", message=_pi_message("assistant", "abandoned answer")),
        e("c1", "a3", type="message", message=_pi_message("user", "edited question")),
        e("c2", "c1", type="message", message=_pi_message("assistant", "answer")),
        e("c3", "c2", type="compaction", summary="the summary", firstKeptEntryId="c1", tokensBefore=1234,
          details={"readFiles": ["x.py"], "modifiedFiles": []}),
        e("b3", "b2", type="message", message=_pi_message("custom", "a hook message", customType="note",
                                                          display=True)),
        e("c4", "c3", type="message", message=_pi_message("user", "the leaf")),
    ])
    result = import_file(store, path)
    assert not result.issues
    main, branch = result.session_ids
    assert main == "pi-tree" and branch == "pi-tree:branch:b1"
    main_events = store.transcript(main)
    texts = [text_of_message(x) if x.kind == "message" else x.kind for x in main_events]
    assert texts == ["custom", "first question", "reading", "tool_call", "tool_result", "edited question", "answer",
                     "compaction", "the leaf"]
    compaction = main_events[7]
    assert compaction.payload["first_kept_version"] == 6 and main_events[5].meta["entry_id"] == "c1"
    assert compaction.payload["details"]["read_files"] == ["x.py"]
    info = store.session(branch)
    assert info.parent_id == main and info.fork_version == 5  # after the tool result (entry a3)
    branch_events = store.transcript(branch)
    assert [x.version for x in branch_events] == list(range(1, 9))
    assert [text_of_message(x) for x in branch_events[5:]] == ["abandoned question", "abandoned answer",
                                                               "a hook message"]
    assert branch_events[7].meta["source_role"] == "custom"
    assert [x.event_id for x in branch_events[:5]] == [x.event_id for x in main_events[:5]]
    again = import_file(store, path)
    assert again.events_added == 0 and not again.issues


def test_pi_v1_and_v2_compaction_references(tmp_path: Path) -> None:
    header = {"type": "session", "id": "pi-v1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    v1 = [header] + [_pi_entry(None, None, type="message", message=_pi_message("user", f"m{i}")) for i in range(4)]
    v1.append(_pi_entry(None, None, type="compaction", summary="s", firstKeptEntryIndex=3, tokensBefore=9))
    parsed = parse_file(_write(tmp_path / "v1.jsonl", v1))
    (c,) = [x for x in parsed.events if x.kind == "compaction"]
    kept = parsed.events[c.payload["first_kept_version"] - 1]
    assert text_of_message(kept) == "m2" and kept.meta["line"] == 4  # entries[3], the header being entries[0]

    v2 = [{**header, "id": "pi-v2", "version": 2}]
    parent = None
    for i in range(4):
        v2.append(_pi_entry(f"e{i}", parent, type="message", message=_pi_message("user", f"m{i}")))
        parent = f"e{i}"
    v2.append(_pi_entry("h", parent, type="message", message=_pi_message("hookMessage", "from a hook",
                                                                           customType="t", display=False)))
    v2.append(_pi_entry("k", "h", type="compaction", summary="s", firstKeptEntryId="e1", tokensBefore=9))
    v2.append(_pi_entry("t", "k", type="thinking_level_change", thinkingLevel="high"))
    parsed = parse_file(_write(tmp_path / "v2.jsonl", v2))
    assert not parsed.issues and parsed.branches == []
    (c,) = [x for x in parsed.events if x.kind == "compaction"]
    assert text_of_message(parsed.events[c.payload["first_kept_version"] - 1]) == "m1"
    hook = [x for x in parsed.events if x.meta.get("source_role") == "hookMessage"]
    assert len(hook) == 1 and hook[0].payload["role"] == "user"
    assert parsed.events[-1].kind == "custom" and parsed.events[-1].payload == {
        "type": "pi:thinking_level_change", "data": v2[-1], "in_context": False}

    dangling = v2[:-2] + [_pi_entry("k", "h", type="compaction", summary="s", firstKeptEntryId="nope",
                                    tokensBefore=9)]
    parsed = parse_file(_write(tmp_path / "dangling.jsonl", dangling))
    (c,) = [x for x in parsed.events if x.kind == "compaction"]
    assert c.payload["first_kept_version"] == len(parsed.events)  # keeps nothing before itself
    assert [i.line for i in parsed.issues] == [len(dangling)]


# --------------------------------------------------------------------------- Codex compactions


def test_codex_compacted_line_is_a_compaction(store: SessionStore, tmp_path: Path) -> None:
    ts = "2026-01-01T00:00:00.000Z"
    path = _write(tmp_path / "rollout-2026-01-01T00-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl", [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee",
                                                              "cwd": "/w", "instructions": "be brief"}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "hi"}]}},
        {"timestamp": ts, "type": "turn_context", "payload": {"model": "gpt-5-codex", "cwd": "/w"}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                               "arguments": "not json", "call_id": "k1"}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "function_call_output", "call_id": "k1",
                                                               "output": "done"}},
        {"timestamp": ts, "type": "compacted", "payload": {"message": "summary of it all",
                                                           "replacement_history": [{"type": "message"}]}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "dev note"}]}},
    ])
    result = import_file(store, path)
    assert not result.issues
    events = store.transcript(result.session_id)
    assert [x.kind for x in events] == ["system", "custom", "message", "custom", "tool_call", "custom",
                                        "tool_result", "compaction", "message"]
    assert events[0].payload == {"text": "be brief"}
    call = events[4]
    assert call.payload["input"] == {"arguments": "not json"} and call.meta["usage"]["total_tokens"] == 12
    assert call.meta["model"] == "gpt-5-codex"
    c = events[7]
    assert c.payload["summary"] == "summary of it all" and c.payload["first_kept_version"] == c.version
    assert c.payload["tokens_before"] == 12 and c.payload["summarizer"] == "codex"
    assert c.meta["compacted"]["replacement_history"] == [{"type": "message"}]
    assert events[8].payload["role"] == "user" and events[8].meta["source_role"] == "developer"


def test_codex_older_rollout_layout(tmp_path: Path) -> None:
    path = _write(tmp_path / "rollout-2025-05-01-old.jsonl", [
        {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-05-01T10:00:00.000Z",
         "instructions": "old instructions"},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"ls\"]}", "call_id": "c9"},
        {"type": "function_call_output", "call_id": "c9", "output": "a.txt"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "one file"}]},
    ])
    assert detect_format(path) == "codex"
    parsed = parse_file(path)
    assert not parsed.issues
    assert parsed.session_id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    assert [e.kind for e in parsed.events] == ["system", "custom", "custom", "message", "tool_call", "tool_result",
                                               "message"]
    assert parsed.events[0].payload["text"] == "old instructions"
    assert parsed.events[4].payload["input"] == {"command": ["ls"]}
    assert parsed.events[5].payload["output"] == "a.txt"


# --------------------------------------------------------------------------- reports


@pytest.mark.parametrize("relative", cases([PI], ["pi/large-session.jsonl"]))
def test_report_rows_for_the_cli(store: SessionStore, transcripts: Path, relative: str) -> None:
    result = import_file(store, transcripts / relative)
    assert isinstance(result, FileImport)
    row = result.as_row()
    raw = expected_counts(transcripts / relative, "pi")
    lines = len((transcripts / relative).read_text(encoding="utf-8").splitlines())
    assert row["format"] == "pi" and row["lines"] == lines and row["issues"] == 0
    assert (row["messages"], row["tool_calls"], row["tool_results"], row["compactions"]) == (
        raw["message"], raw["tool_call"], raw["tool_result"], raw["compaction"])
    assert row["added"] == store.version(result.session_id) and row["present"] == 0
