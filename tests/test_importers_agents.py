"""The Gemini CLI, OpenCode, OpenHands and SWE-agent importers on their fixtures (written from each
project's public format description: tests/fixtures/transcripts/README.md), on SQLite and PostgreSQL:
their compactions, pairing, meta, errors, and idempotent, incremental re-imports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.importers import detect_format, import_file, import_path, parse_file, transcript_of

from .conftest import FIXTURE_TRANSCRIPTS, fresh_url

GEMINI = FIXTURE_TRANSCRIPTS / "gemini-cli" / "chats" / "session-2026-03-02T10-15-3f9c2a71.json"
GEMINI_JSONL = FIXTURE_TRANSCRIPTS / "gemini-cli" / "chats" / "session-2026-04-11T09-30-8d41b7e2.jsonl"
GEMINI_2026 = FIXTURE_TRANSCRIPTS / "gemini-cli" / "subagents" / "chats"
GEMINI_RECORDED = FIXTURE_TRANSCRIPTS / "gemini-cli" / "recorded-0.61.0" / "chats"  # scripts/record_gemini_cli.py
STORAGE = FIXTURE_TRANSCRIPTS / "opencode" / "storage"
OPENCODE = next((STORAGE / "session").glob("*/*.json"))
OPENHANDS = FIXTURE_TRANSCRIPTS / "openhands" / "trajectory-slugify-accents.json"
SWE = next((FIXTURE_TRANSCRIPTS / "swe-agent").rglob("*.traj"))


def _texts(view_messages: list[dict]) -> str:
    return json.dumps(view_messages)


def test_openhands_condensation_is_a_compaction(store: SessionStore) -> None:
    result = import_file(store, OPENHANDS)
    events = store.transcript(result.session_id)
    (compaction,) = [e for e in events if e.kind == "compaction"]
    p = compaction.payload
    assert (p["strategy"], p["summarizer"]) == ("imported", "openhands")
    assert p["summary"].startswith("USER_CONTEXT: slugify('Crème Brûlée!')")
    raw = json.loads(OPENHANDS.read_text())
    condensation = next(e for e in raw if e.get("action") == "condensation")["args"]
    first_kept = next(e for e in events if e.meta.get("event_id") == condensation["forgotten_events_end_id"] + 1)
    assert p["first_kept_version"] == first_kept.version
    task = next(e for e in events if e.kind == "message" and e.payload["role"] == "user")
    assert task.version in p["details"]["restored"]  # OpenHands keeps the task before the forgotten range
    view = store.context(result.session_id).to_anthropic()
    text = _texts(view["messages"])
    assert "USER_CONTEXT" in text and "creme-brulee" in text and "Reproducing the bug." not in text
    calls = {e.payload["call_id"] for e in events if e.kind == "tool_call"}
    results = {e.payload["call_id"] for e in events if e.kind == "tool_result"}
    assert results <= calls and calls - results == {next(e for e in raw if e.get("action") == "finish")[
        "tool_call_metadata"]["tool_call_id"]}  # every call has its result, but the agent's last word
    failed = next(e for e in events if e.kind == "tool_result" and "No module named pytest" in e.payload["output"])
    assert failed.payload["is_error"] and failed.meta["extras"]["metadata"]["exit_code"] == 1
    call = next(e for e in events if e.kind == "tool_call" and e.meta.get("usage"))
    assert call.meta["model"] == "claude-sonnet-4-5-20250929" and call.meta["usage"]["prompt_tokens"] > 0


def test_openhands_evaluation_output_is_one_session_per_instance(store: SessionStore) -> None:
    path = FIXTURE_TRANSCRIPTS / "openhands" / "output.jsonl"
    assert detect_format(path) == "openhands"
    result = import_file(store, path)
    assert [s.session_id.split(":")[0] for s in result.sessions] == ["psf__requests-2317", "pallets__flask-4045"]
    info = store.session(result.sessions[1].session_id)
    assert info.metadata["instance_id"] == "pallets__flask-4045" and info.metadata["test_result"]["report"]["resolved"]
    assert import_file(store, path).events_added == 0


def test_openhands_resolver_output_older_history(store: SessionStore) -> None:
    path = FIXTURE_TRANSCRIPTS / "openhands" / "resolver" / "output.jsonl"
    assert detect_format(path) == "openhands"
    result = import_file(store, path)
    assert not result.issues
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [s.session_id.split(":")[0] for s in result.sessions] == ["dev-tools/slugkit#12", "dev-tools/slugkit#15"]
    first = store.session(result.sessions[0].session_id)
    assert first.metadata["title"] == "slugify drops accented letters" and first.metadata["success"] is True
    assert first.metadata["git_patch"] == lines[0]["git_patch"]
    events = store.transcript(first.id)
    assert events[0].kind == "message" and events[0].payload["role"] == "user"
    calls = [e for e in events if e.kind == "tool_call"]
    results = [e for e in events if e.kind == "tool_result"]
    # each observation answers the action before it; the finish is the agent's last word
    assert [c.payload["input"].get("command") for c in calls[:2]] == [lines[0]["history"][1]["command"],
                                                                   lines[0]["history"][3]["command"]]
    assert [r.payload["call_id"] for r in results] == [c.payload["call_id"] for c in calls[:-1]]
    assert [r.payload["is_error"] for r in results] == [False, True, False, False]
    assert "creme-brulee" in _texts(store.context(first.id).to_anthropic()["messages"])
    second = store.transcript(result.sessions[1].session_id)
    asked = [e for e in second if e.kind == "message" and e.payload["role"] == "assistant"]
    assert any("exit with status 2?" in json.dumps(e.payload) for e in asked)  # the agent's message, not the user's
    assert store.session(result.sessions[1].session_id).metadata["result_explanation"].startswith("No patch")
    assert import_file(store, path).events_added == 0


def test_opencode_summary_is_a_compaction(store: SessionStore) -> None:
    assert detect_format(OPENCODE) == "opencode"
    result = import_file(store, OPENCODE)
    assert not result.issues
    events = store.transcript(result.session_id)
    (compaction,) = [e for e in events if e.kind == "compaction"]
    p = compaction.payload
    assert (p["strategy"], p["summarizer"], p["trigger"]) == ("imported", "opencode", "auto")
    assert p["summary"].startswith("## Goal\nFix float rounding") and p["first_kept_version"] == compaction.version
    request = events[compaction.version - 2]
    assert request.kind == "custom" and request.payload["type"] == "opencode:compaction-request"
    assert not request.payload["in_context"]
    assert p["tokens_before"] and p["tokens_before"] > 15_000  # the last step's prompt before it
    view = store.context(result.session_id)
    assert view.compaction is not None and view.compaction.version == compaction.version
    assert "--currency" in _texts(view.to_anthropic()["messages"])
    thinking = next(e for e in events if e.kind == "message" and e.payload["content"][0]["type"] == "thinking")
    assert thinking.payload["content"][0]["signature"] and thinking.meta["usage"]["cacheWrite"] == 11840
    pruned = [e for e in events if e.kind == "tool_result" and "compacted_at" in e.meta]
    assert len(pruned) == 3 and all(e.payload["output"] for e in pruned)  # pruned outputs keep their text
    assert store.session(result.session_id).metadata["title"] == "Fix rounding in invoice totals"


def test_opencode_companion_files_name_their_session() -> None:
    part = next((STORAGE / "part").glob("*/*.json"))
    message = next((STORAGE / "message").glob("*/*.json"))
    assert transcript_of(part) == transcript_of(message) == OPENCODE
    assert transcript_of(next((STORAGE / "project").glob("*.json"))) is None  # not a transcript's


def test_gemini_compression_rewind_thoughts_and_tokens(store: SessionStore) -> None:
    assert detect_format(GEMINI) == detect_format(GEMINI_JSONL) == "gemini-cli"
    result = import_file(store, GEMINI_JSONL)
    assert not result.issues
    events = store.transcript(result.session_id)
    (compaction,) = [e for e in events if e.kind == "compaction"]
    assert compaction.payload["summary"].startswith("<state_snapshot>")
    kept = next(e for e in events if e.kind == "message" and "indent=2" in json.dumps(e.payload))
    assert compaction.payload["first_kept_version"] == kept.version
    (rewind,) = [e for e in events if e.kind == "prune"]
    rewound = [e for e in events if e.version in rewind.payload["targets"]]
    assert "Also sort the keys." in json.dumps([e.payload for e in rewound])
    view = _texts(store.context(result.session_id).to_anthropic()["messages"])
    assert "Also sort the keys." not in view and "state_snapshot" in view
    # the JSON layout: thoughts and tokens in meta, each call paired with its result
    legacy = import_file(store, GEMINI)
    legacy_events = store.transcript(legacy.session_id)
    first = next(e for e in legacy_events if e.kind == "message" and e.payload["role"] == "assistant")
    assert first.meta["thoughts"][0]["subject"] == "Locating the failure" and first.meta["usage"]["input"] == 8412
    calls = [e.payload["call_id"] for e in legacy_events if e.kind == "tool_call"]
    assert calls == [e.payload["call_id"] for e in legacy_events if e.kind == "tool_result"]
    assert [e.payload["is_error"] for e in legacy_events if e.kind == "tool_result"].count(True) == 1


def test_gemini_2026_compression_notice_and_linked_subagent(store: SessionStore) -> None:
    main = next(GEMINI_2026.glob("session-*.jsonl"))
    (sub,) = GEMINI_2026.glob("*/*.json")
    assert transcript_of(sub) == main  # `watch` re-imports the main chat, which imports its sub-agents
    report = import_path(store, GEMINI_2026)
    assert report.issues == [] and [Path(f.path).name for f in report.files] == [main.name, sub.name]
    parent = json.loads(main.read_text().splitlines()[0])["sessionId"]
    events = store.transcript(parent)
    (compaction,) = [e for e in events if e.kind == "compaction"]
    p = compaction.payload
    assert (p["summarizer"], p["first_kept_version"], p["tokens_before"]) == ("gemini-cli", compaction.version, 9987)
    assert (p["details"]["context_percent_before"], p["details"]["context_percent_after"]) == (68, 3)
    assert "from 68% to 3%" in p["summary"] and compaction.meta["summary_recorded"] is False
    assert not [e for e in events if e.kind == "custom" and e.payload["type"] == "gemini-cli:info"]
    view = store.context(parent).to_anthropic()["messages"]
    text = _texts(view)
    assert "not recorded in the session file" in text and "regression test" in text and "Fix it and run" not in text
    # a tool-response turn is kept out of the view: each result is there once, as the call's
    responses = [e for e in events if e.kind == "custom" and e.payload["type"] == "gemini-cli:tool-response"]
    assert len(responses) == 3 and not any(e.payload["in_context"] for e in responses)
    full = _texts(store.context(parent, at=compaction.version - 1).to_anthropic()["messages"])
    assert full.count("8 passed in 0.41s") == 1
    # the sub-agent: its own session under its parent, linked both ways, read whole
    agent = store.session(f"{parent}:k3x9qa")
    call = next(e for e in events if e.kind == "tool_call" and e.payload["name"] == "codebase_investigator")
    assert agent.metadata["parent_session"] == parent and agent.metadata["role"] == "subagent"
    assert agent.metadata["parent_call_id"] == call.payload["call_id"] and agent.metadata["directories"]
    assert call.meta["subagent_session"] == agent.id
    assert store.session(parent).metadata["subagents"][0]["session_id"] == agent.id
    assert [e.kind for e in store.transcript(agent.id)].count("tool_result") == 3
    assert import_path(store, GEMINI_2026).events_added == 0


def test_gemini_recorded_subagent_chat_and_tool_response_turns(store: SessionStore) -> None:
    """What Gemini CLI 0.61.0 really wrote: a sub-agent's chat under its parent's id, named by the
    parent's `invoke_agent` call record; the tool results sent back as turns of their own."""
    (main,) = GEMINI_RECORDED.glob("session-*.jsonl")
    (sub,) = GEMINI_RECORDED.glob("*/*.jsonl")
    report = import_path(store, GEMINI_RECORDED)
    assert report.issues == [] and [Path(f.path) for f in report.files] == [main, sub]
    parent = json.loads(main.read_text().splitlines()[0])["sessionId"]
    agent = store.session(f"{parent}:{sub.stem}")
    call = next(e for e in store.transcript(parent) if e.kind == "tool_call" and e.payload["name"] == "invoke_agent")
    assert (agent.metadata["parent_call_id"], call.meta["subagent_session"]) == (call.payload["call_id"], agent.id)
    assert agent.metadata["kind"] == "subagent" and agent.metadata["directories"]
    for sid in (parent, agent.id):
        events = store.transcript(sid)
        turns = [e for e in events if e.kind == "custom" and e.payload["type"] == "gemini-cli:tool-response"]
        results = [e for e in events if e.kind == "tool_result"]
        assert turns and len(results) == len([e for e in events if e.kind == "tool_call"])
        view = _texts(store.context(sid).to_anthropic()["messages"])
        assert all(view.count(json.dumps(r.payload["output"])[1:40]) == 1 for r in results)  # each result once
    assert "class MissingExtra" in _texts(store.context(agent.id).to_anthropic()["messages"])  # the file it read


def test_swe_agent_steps_are_calls_with_their_observations(store: SessionStore) -> None:
    assert detect_format(SWE) == "swe-agent"
    result = import_file(store, SWE)
    events = store.transcript(result.session_id)
    steps = json.loads(SWE.read_text())["trajectory"]
    calls = [e for e in events if e.kind == "tool_call"]
    assert [c.payload["input"]["command"] for c in calls] == [s["action"] for s in steps]
    assert [e.payload["output"] for e in events if e.kind == "tool_result"] == [s["observation"] for s in steps]
    assert calls[0].payload["call_id"].startswith("toolu_") and calls[0].meta["state"]["working_dir"] == "/testbed"
    assert events[0].kind == "system" and store.session(result.session_id).metadata["exit_status"] == "submitted"


def test_a_broken_json_document_is_an_error_with_its_line_and_stores_nothing(store: SessionStore,
                                                                           tmp_path: Path) -> None:
    for source in (GEMINI, OPENHANDS, SWE):
        text = source.read_text(encoding="utf-8")
        broken = tmp_path / source.name
        broken.write_text(text[: len(text) // 2], encoding="utf-8")  # the agent was writing it
        report = import_path(store, broken)
        (issue,) = report.failures
        assert issue.path == str(broken) and issue.line > 1 and "not valid JSON" in issue.reason
        fmt = detect_format(source)
        parsed = parse_file(broken, fmt)
        assert parsed.events == [] and parsed.issues[0].line > 1 and "truncated JSON" in parsed.issues[0].reason
        assert import_file(store, broken, fmt).sessions == []
    assert store.sessions() == []
    # OpenCode's storage folder: a broken message or part file fails its whole session for this run
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    session = next((storage / "session").glob("*/*.json"))
    files = sorted((storage / "message").glob("*/*.json"))[-1:] + sorted((storage / "part").glob("*/*.json"))[3:4]
    for broken in files:
        text = broken.read_text(encoding="utf-8")
        broken.write_text(text[: len(text) // 2], encoding="utf-8")  # OpenCode was writing it
        report = import_path(store, storage)
        issue = next(i for i in report.failures if i.path == str(broken))
        assert issue.line > 1 and "truncated JSON" in issue.reason
        assert any(i.path == str(session) and "not imported" in i.reason for i in report.failures)
        assert parse_file(session).events == [] and store.sessions() == []
        broken.write_text(text, encoding="utf-8")
    # once repaired, it imports whole; broken again later, what is stored stays as it was
    assert import_path(store, storage).ok
    sid = parse_file(session).session_id
    before = [e.event_id for e in store.transcript(sid)]
    assert before == [e.event_id for e in parse_file(session).events]
    new_part = storage / "part" / files[-1].parent.name / "prt_9e4c2a1b00ffKqR7TzW2mXp999.json"
    new_part.write_text('{"id": "prt_9e4c2a1b00ffKqR7TzW2mXp999", "type": "text", "text": "cut', encoding="utf-8")
    report = import_path(store, storage)
    assert [i.path for i in report.failures if i.line > 0] == [str(new_part)] and report.events_added == 0
    assert [e.event_id for e in store.transcript(sid)] == before


def test_json_documents_reimport_idempotently_and_incrementally(store: SessionStore, tmp_path: Path) -> None:
    events = json.loads(OPENHANDS.read_text())
    grown = tmp_path / OPENHANDS.name
    grown.write_text(json.dumps(events[:12], indent=2))
    first = import_file(store, grown)
    grown.write_text(json.dumps(events, indent=2))
    second = import_file(store, grown)
    full = parse_file(grown)
    assert second.events_present == first.events_added and second.events_added == len(full.events) - first.events_added
    assert [e.event_id for e in store.transcript(first.session_id)] == [e.event_id for e in full.events]
    # OpenCode's storage folder: new message and part files are new events, nothing else
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    session = next((storage / "session").glob("*/*.json"))
    messages = sorted((storage / "message" / session.stem).glob("*.json"))
    held = tmp_path / "held"
    held.mkdir()
    for m in messages[-2:]:
        shutil.move(m, held / m.name)
    before = import_file(store, session)
    for m in messages[-2:]:
        shutil.move(held / m.name, m)
    after = import_file(store, session)
    assert after.events_present == before.events_added and after.events_added > 0
    assert import_path(store, storage).events_added == 0 and import_file(store, grown).events_added == 0
    assert [e.event_id for e in store.transcript(after.session_id)] == [e.event_id for e in parse_file(session).events]


def _in_flight(message: dict, parts: int) -> dict:
    """An OpenCode message of an export as it stood while being written: its first `parts`
    parts, the last of them a tool still pending, no tokens, no completion."""
    info = {k: v for k, v in message["info"].items() if k not in ("tokens", "cost", "finish")}
    shown = [dict(p) for p in message["parts"][:parts]]
    if shown and shown[-1]["type"] == "tool":
        shown[-1]["state"] = {"status": "pending", "input": {}, "raw": ""}
    return {"info": {**info, "time": {"created": info["time"]["created"]}}, "parts": shown}


def _swe_stages(doc: dict) -> list[dict]:
    """A SWE-agent trajectory as it is saved after each step (the whole file again, `info` last)."""
    turns = [i for i, h in enumerate(doc["history"]) if h.get("role") == "assistant"]
    stages = []
    for n in range(len(doc["trajectory"])):
        history = doc["history"][:turns[n + 1]] if n + 1 < len(turns) else doc["history"]
        stages.append({**doc, "trajectory": doc["trajectory"][:n + 1], "history": history, "info": {}})
    return [*stages, doc]


def _opencode_stages(doc: dict) -> list[dict]:
    """An OpenCode export taken again and again while its session runs: each message in flight
    part by part, then done; the user's message gets its summary (diffs) after the answer's steps,
    the session its own summary."""
    stages = []
    for i, message in enumerate(doc["messages"]):
        done = doc["messages"][:i]
        if message["info"]["role"] == "assistant":
            stages += [{**doc, "messages": [*done, _in_flight(message, k)]} for k in range(1, len(message["parts"]))]
        stages.append({**doc, "messages": [*done, message]})
    user = doc["messages"][0]
    summarised = {**user, "info": {**user["info"], "summary": {"diffs": [{"file": "invoicer/totals.py"}]}}}
    info = {**doc["info"], "summary": {"additions": 3, "deletions": 1, "files": 1}}
    return [*stages, {"info": info, "messages": [summarised, *doc["messages"][1:]]}]


def _rows(store: SessionStore, sid: str) -> list[tuple]:
    """A session's events as stored (not their dates: a SWE-agent step has none, so the store's
    clock dates it)."""
    return [(e.version, e.event_id, e.kind, e.payload, e.meta, e.tokens) for e in store.transcript(sid)]


def test_incremental_import_ends_like_a_full_import(store: SessionStore, backend: str, tmp_path: Path,
                                                    request: pytest.FixtureRequest) -> None:
    """Events are immutable: an importer brings a record in once the agent is done with it, and
    names it by what does not move, so that importing a file at every stage of its growth ends
    with the events and meta of importing the finished file once (into a fresh store)."""
    grown: list[tuple[Path, list[bytes]]] = []
    lines = GEMINI_JSONL.read_bytes().splitlines(keepends=True)  # usage and results on later lines
    grown.append((tmp_path / GEMINI_JSONL.name, [b"".join(lines[:n]) for n in range(1, len(lines) + 1)]))
    legacy = json.loads(GEMINI.read_text())  # rewritten whole; its last reply first without tokens or results
    stages = []
    for n, message in enumerate(legacy["messages"], 1):
        if message["type"] == "gemini":
            early = {**message, "tokens": None,
                     "toolCalls": [{**c, "status": "executing", "result": None} for c in message.get("toolCalls", [])]}
            stages.append({**legacy, "messages": [*legacy["messages"][:n - 1], early]})
        stages.append({**legacy, "messages": legacy["messages"][:n]})
    grown.append((tmp_path / GEMINI.name, [json.dumps(s, indent=2).encode() for s in stages]))
    swe = json.loads(SWE.read_text())  # the trajectory before the history: the history's lines move
    grown.append((tmp_path / SWE.name, [json.dumps(s, indent=2).encode() for s in _swe_stages(swe)]))
    export = FIXTURE_TRANSCRIPTS / "opencode" / "export-ses_6a1f58d7affeHs2Lq0PzN4cYbV.json"
    stages = _opencode_stages(json.loads(export.read_text()))
    grown.append((tmp_path / export.name, [json.dumps(s, indent=2).encode() for s in stages]))
    (tmp_path / "fresh").mkdir()
    fresh = SessionStore(fresh_url(backend, tmp_path / "fresh", request))
    fresh.migrate()
    try:
        for path, versions in grown:
            for data in versions:
                path.write_bytes(data)
                result = import_file(store, path)
                assert not result.failures, (path.name, result.failures)
            once = import_file(fresh, path)
            assert once.ok and not once.issues and once.events_added > 0
            assert _rows(store, once.session_id) == _rows(fresh, once.session_id), path.name
    finally:
        fresh.close()
