"""The steps every importer shares (sessionstore/importers/steps.py), on their own: a call without
an id still pairs with its result, a message of mixed blocks is split in order with its usage
counted once, metadata is picked under our names, and a sub-agent is named after its parent.
Pure: no store, no file (the importers' own tests run them on real transcripts)."""

from __future__ import annotations

from sessionstore.errors import TranscriptError
from sessionstore.importers.rules import EventBuilder
from sessionstore.importers.steps import (Turn, as_subagent, call_id_or, object_input, pick, pick_text,
                                          session_metadata, subagent_entry, subagent_id, tool_name)


def builder() -> tuple[EventBuilder, list[TranscriptError]]:
    issues: list[TranscriptError] = []
    return EventBuilder("toy", "s1", "toy.jsonl", issues), issues


def test_a_call_without_an_id_gets_a_stable_one_that_its_result_shares() -> None:
    b, issues = builder()
    meta: dict[str, object] = {}
    made = call_id_or(b, "", "toy:L3:0", meta, 3, "tool call 0 has no id")
    assert made == "toy:L3:0" and meta == {"synthetic_call_id": True}
    assert [(i.line, i.reason) for i in issues] == [(3, "tool call 0 has no id; given 'toy:L3:0'")]
    b.tool_call(made, tool_name(None), object_input("ls -la", "args"), meta, key="L3", line=3)
    b.tool_result(call_id_or(b, None, "toy:L3:0", {}, 4, "result 0 has no id"), "ok", False, {}, key="L4", line=4)
    call, result = b.finish()
    assert call.payload == {"call_id": "toy:L3:0", "name": "unknown", "input": {"args": "ls -la"}}
    assert result.payload["call_id"] == call.payload["call_id"]
    kept: dict[str, object] = {}
    assert call_id_or(b, "c7", "unused", kept, 5, "never said") == "c7" and kept == {} and len(issues) == 2
    named: dict[str, object] = {}
    assert tool_name(3, named) == "unknown" and named == {"source_name": 3}
    wrapped: dict[str, object] = {}
    assert object_input([1], "input", wrapped) == {"input": [1]} and wrapped == {"input_wrapped": True}
    assert object_input({"path": "."}, "input") == {"path": "."}


def test_a_mixed_message_is_split_in_order_with_its_usage_on_the_first_event_only() -> None:
    b, _ = builder()
    usage = {"input_tokens": 10, "output_tokens": 5}
    turn = Turn(b, "assistant", {"line": 1}, {"usage": usage}, key="L1", line=1, created_at=None, several=True)
    turn.text(0, {"type": "thinking", "thinking": "look first", "signature": "s"})
    turn.text(1, {"type": "text", "text": "Listing."}, {"cache": "ephemeral"})
    turn.flush()
    turn.added(b.tool_call("c1", "ls", {}, turn.meta(2), key="L1", index=2, line=1))
    turn.text(3, {"type": "text", "text": "Then reading."})
    turn.flush()
    events = b.finish()
    assert [e.kind for e in events] == ["message", "tool_call", "message"]
    assert [len(e.payload.get("content", [])) for e in events] == [2, 0, 1]
    assert events[0].meta == {"line": 1, "block": 0, "usage": usage, "block_extra": {"1": {"cache": "ephemeral"}}}
    assert events[1].meta == {"line": 1, "block": 2} and events[2].meta == {"line": 1, "block": 3}
    empty, _ = builder()
    lone = Turn(empty, "assistant", {}, {"usage": usage}, key="L2", line=2, created_at=None, several=False)
    lone.flush()  # nothing pending: no event
    lone.empty()
    (only,) = empty.finish()
    assert only.payload == {"role": "assistant", "content": []} and only.meta == {"usage": usage}


def test_metadata_and_sub_agents_are_named_alike_in_every_format() -> None:
    head = {"cwd": "/src", "version": "", "model": None, "branch": "main", "count": 0}
    assert pick(head, {"cwd": "cwd", "model": "model", "count": "turns"}) == {"cwd": "/src", "turns": 0}
    assert pick_text(head, [("cwd", "cwd"), ("version", "agent_version"), ("branch", "git_branch")]) == {
        "cwd": "/src", "git_branch": "main"}
    meta = session_metadata("toy", "/tmp/t.jsonl")
    assert meta == {"source": "toy", "source_path": "/tmp/t.jsonl"}
    child = subagent_id("s1", "agent-a7")
    as_subagent(meta, "s1", "a7", "compaction")
    assert child == "s1:agent-a7" and (meta["role"], meta["agent_id"], meta["parent_session"]) == (
        "compaction", "a7", "s1")
    assert subagent_entry("a7", child, "/x/agent-a7.jsonl", "subagent", None) == {
        "agent_id": "a7", "session_id": "s1:agent-a7", "path": "/x/agent-a7.jsonl", "role": "subagent"}
    assert subagent_entry("a7", child, "/x", "subagent", "toolu_1")["call_id"] == "toolu_1"
