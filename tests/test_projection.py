"""The context view (DESIGN §5): a pure function of the events, valid for the provider."""

from __future__ import annotations

import pytest

import sessionstore as ss
from sessionstore import SessionStore, VersionOutOfRange
from sessionstore.projection import input_from_events, project
from sessionstore.projection.texts import (ACK_TEXT, ACK_TOKENS, MESSAGE_OVERHEAD_TOKENS, SCRATCHPAD_WRAPPER_TOKENS,
                                           SUMMARY_WRAPPER_TOKENS, SYNTHETIC_RESULT_TEXT, SYNTHETIC_RESULT_TOKENS,
                                           scratchpad_text, summary_text)
from sessionstore.tokens import TiktokenCounter

from .checks import assert_valid_view, user_texts


def test_fixed_texts_cost_what_the_constants_say() -> None:
    counter = TiktokenCounter()
    for text in ("x", "## Primary request and intent\nfix it", "word " * 300):
        # ±1: the tokenizer may merge a wrapper's first or last characters with the text's.
        assert abs(counter.count(summary_text(text)) - counter.count(text) - SUMMARY_WRAPPER_TOKENS) <= 1
        assert abs(counter.count(scratchpad_text(text)) - counter.count(text) - SCRATCHPAD_WRAPPER_TOKENS) <= 1
    assert counter.count(ACK_TEXT) == ACK_TOKENS
    assert counter.count(SYNTHETIC_RESULT_TEXT) == SYNTHETIC_RESULT_TOKENS


def session(store: SessionStore) -> str:
    sid = store.create_session()
    store.append(sid, [
        ss.system("old system prompt"),
        ss.user("first question"),  # 2
        ss.assistant("Let me look.", tool_calls=[ss.tool_call("c1", "Read", {"file_path": "a.py"}),  # 3, 4
                                                 ss.tool_call("c2", "Grep", {"pattern": "x"})]),  # 5
        ss.tool_result("c1", "print('a')\n" * 30),  # 6
        ss.tool_result("c2", "a.py:1: x"),  # 7
        ss.assistant("a.py prints a lot."),  # 8
        ss.system("new system prompt"),  # 9
        ss.custom("app.audit", {"who": "ann"}),  # 10, hidden
        ss.custom("app.note", "remember the deadline", in_context=True),  # 11
        ss.user("second question"),  # 12
        ss.assistant("Done.", meta={"usage": {"input_tokens": 500, "cache_read_input_tokens": 100,
                                              "output_tokens": 20}}),  # 13
    ])
    return sid


def test_view_without_compaction_holds_every_in_context_event(store: SessionStore) -> None:
    sid = session(store)
    view = store.context(sid)
    assert_valid_view(view)
    assert view.system == "new system prompt"  # the latest one wins
    assert [i.version for i in view.items] == [2, 3, 4, 5, 6, 7, 8, 11, 12, 13]
    assert [m["role"] for m in view.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    tool_results = [b for b in view.messages[2]["content"] if b["type"] == "tool_result"]
    assert [b["tool_use_id"] for b in tool_results] == ["c1", "c2"]
    assert "<app.note>\nremember the deadline\n</app.note>" in user_texts(view)[1]
    assert "app.audit" not in str(view.messages)
    events = store.transcript(sid)
    expected = (events[8].tokens + sum(e.tokens for e in events if e.version in {2, 3, 4, 5, 6, 7, 8, 11, 12, 13})
                + len(view.messages) * MESSAGE_OVERHEAD_TOKENS)
    assert view.tokens == expected  # stored counts only: no re-tokenizing
    assert view.usage is not None and (view.usage.version, view.usage.reported, view.usage.after) == (13, 600, 0)
    assert view.usage.total == 600 + 20  # the prompt the provider counted, then the response at its reported size


def test_view_with_compaction_markers_and_scratchpad(store: SessionStore) -> None:
    sid = session(store)
    store.append(sid, [ss.scratchpad("plan: A then B"), ss.scratchpad("plan: B then C")])  # 14, 15
    store.append(sid, ss.events.compaction("we read a.py", 8, details={"critical": [], "restored": [3, 4, 6]}))  # 16
    store.append(sid, [ss.user("third"), ss.assistant("ok", tool_calls=[ss.tool_call("c3", "Bash", {"command": "ls"})]),
                       ss.tool_result("c3", "a.py b.py" * 50)])  # 17, 18, 19, 20
    store.append(sid, ss.events.prune([20], rule="test", placeholder="[Previous: used {tool}]"))  # 21
    view = store.context(sid)
    assert_valid_view(view)
    origins = [(i.origin, i.version) for i in view.items]
    assert origins[:2] == [("summary", 16), ("scratchpad", 15)]
    assert ("restored", 4) in origins and ("restored", 6) in origins and ("restored", 3) in origins
    assert all(v >= 8 for o, v in origins if o == "tail")
    first = view.messages[0]["content"]
    assert "<summary>\nwe read a.py\n</summary>" in first[0]["text"]
    assert first[1]["text"] == "<scratchpad>\nplan: B then C\n</scratchpad>"
    assert "first question" not in str(view.messages)
    cleared = [i for i in view.items if i.version == 20][0]
    assert cleared.cleared and cleared.payload["output"] == "[Previous: used Bash]"
    assert cleared.tokens == store.transcript(sid)[20].tokens  # the prune event's own count
    # Only what the view needs was read: the compaction's tail and the events it names.
    assert min(e.version for e in view.source.tail) == 8
    assert sorted(e.version for e in view.source.anchored) == [3, 4, 6]


def test_markers_later_wins_and_drop_is_final(store: SessionStore) -> None:
    sid = session(store)
    store.append(sid, ss.events.rewrite(6, field="output", content="[COMPRESSED: 30 lines → summarized] outline",
                                 original_lines=30, language="python"))  # 14
    view = store.context(sid)
    assert [i for i in view.items if i.version == 6][0].payload["output"].startswith("[COMPRESSED: 30 lines")
    store.append(sid, ss.events.prune([6], rule="later", placeholder="[cleared]"))  # 15
    assert [i for i in store.context(sid).items if i.version == 6][0].payload["output"] == "[cleared]"
    store.append(sid, ss.events.prune([4], mode="drop", rule="drop-the-pair"))  # 16: the call; its result goes too
    store.append(sid, ss.events.rewrite(6, field="output", content="too late", original_lines=30, language="python"))
    view = store.context(sid)
    assert_valid_view(view)
    assert 4 not in [i.version for i in view.items] and 6 not in [i.version for i in view.items]
    assert "c1" not in str(view.messages)


def test_rewrite_of_a_tool_input(store: SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, [ss.user("write it"), ss.tool_call("w", "Write", {"file_path": "big.py", "content": "x\n" * 500}),
                       ss.tool_result("w", "ok")])
    store.append(sid, ss.events.rewrite(2, field="input", content="[COMPRESSED: 500 lines → summarized]", original_lines=500,
                                 language="python"))
    view = store.context(sid)
    call = [i for i in view.items if i.version == 2][0]
    assert call.payload["input"] == {"file_path": "big.py", "content": "[COMPRESSED: 500 lines → summarized]"}
    assert call.rewritten and view.tokens < 300


def test_time_travel(store: SessionStore) -> None:
    sid = session(store)
    before = store.context(sid)
    store.append(sid, ss.events.compaction("summary", 12))
    store.append(sid, ss.events.prune([6], rule="r", placeholder="[gone]"))
    assert store.context(sid).compaction is not None
    old = store.context(sid, at=13)
    assert old.messages == before.messages and old.tokens == before.tokens
    assert [m["content"] for m in store.context(sid, at=2).messages] == [[{"type": "text", "text": "first question"}]]
    assert store.context(sid, at=0).messages == []
    with pytest.raises(VersionOutOfRange):
        store.context(sid, at=99)


def test_the_store_reads_exactly_what_the_pure_fold_needs(store: SessionStore) -> None:
    sid = session(store)
    store.append(sid, ss.events.compaction("summary", 6, details={"critical": [4, 6]}))
    store.append(sid, [ss.user("more"), ss.assistant("sure")])
    events = store.transcript(sid)
    for version in range(0, store.version(sid) + 1):
        from_store = store.context(sid, at=version)
        in_memory = project(input_from_events(sid, events, at=version))
        assert from_store.messages == in_memory.messages
        assert from_store.tokens == in_memory.tokens
        assert from_store.system == in_memory.system
        assert_valid_view(from_store)


def test_forks_project_their_own_history(store: SessionStore) -> None:
    sid = session(store)
    store.append(sid, ss.events.compaction("parent summary", 8))
    child = store.fork(sid, at=9)
    store.append(child, ss.user("child question"))
    view = store.context(child)
    assert view.compaction is None  # the parent's compaction came after the fork point
    assert user_texts(view)[-1] == "child question"
    assert "parent summary" in str(store.context(sid).messages)


# ----------------------------------------------------------------------------- repairs (pure)


def stored(version: int, event: ss.NewEvent, tokens: int = 5) -> ss.StoredEvent:
    from datetime import datetime, timezone

    return ss.StoredEvent(event.event_id, "s", version, version, event.kind, dict(event.payload), dict(event.meta),
                          tokens, datetime.now(timezone.utc))


def view_of(*events: ss.NewEvent | list[ss.NewEvent]) -> ss.ContextView:
    flat = ss.events.flatten(list(events))
    return project(input_from_events("s", [stored(i, e) for i, e in enumerate(flat, 1)]))


def codes(view: ss.ContextView) -> set[str]:
    return {d.code for d in view.diagnostics}


def test_orphan_call_gets_a_placeholder_result() -> None:
    view = view_of(ss.user("go"), ss.tool_call("c", "Read", {"path": "a"}), ss.user("never mind"))
    assert_valid_view(view)
    assert "orphan_tool_call" in codes(view)
    assert view.messages[2]["content"][0] == {"type": "tool_result", "tool_use_id": "c", "content": SYNTHETIC_RESULT_TEXT,
                                              "is_error": True}
    assert view.messages[2]["content"][1] == {"type": "text", "text": "never mind"}


def test_orphan_result_is_left_out_and_reported() -> None:
    view = view_of(ss.user("go"), ss.tool_result("ghost", "boo"), ss.assistant("hm"))
    assert_valid_view(view)
    assert "orphan_tool_result" in codes(view)
    assert "ghost" not in str(view.messages)
    assert [d.versions for d in view.diagnostics if d.code == "orphan_tool_result"] == [(2,)]


def test_result_recorded_late_is_moved_next_to_its_call() -> None:
    view = view_of(ss.user("go"), ss.tool_call("c", "Bash", {"command": "make"}), ss.user("hurry up"),
                   ss.assistant("waiting"), ss.tool_result("c", "built"))
    assert_valid_view(view)
    assert "moved_tool_result" in codes(view)
    assert view.messages[2]["content"][0]["tool_use_id"] == "c"


def test_roles_alternate_and_the_user_speaks_first() -> None:
    view = view_of(ss.assistant("I start"), ss.user("a"), ss.user("b"), ss.assistant("x "))
    assert_valid_view(view)
    assert {"first_message_not_user", "merged_consecutive", "trimmed_final_whitespace"} <= codes(view)
    assert [m["role"] for m in view.messages] == ["user", "assistant", "user", "assistant"]


def test_blocks_the_provider_rejects_are_left_out() -> None:
    view = view_of(ss.user("q"),
                   ss.assistant([{"type": "thinking", "thinking": "from another provider"},
                                 {"type": "reasoning", "encrypted_content": "gAAA"},
                                 {"type": "thinking", "thinking": "signed", "signature": "sig"},
                                 {"type": "text", "text": "   "}, {"type": "text", "text": "answer"}]),
                   ss.tool_call("call_1|fc_2", "shell", {"command": ["ls"]}), ss.tool_result("call_1|fc_2", "a b"),
                   ss.tool_call("c", "x", {}), ss.tool_call("c", "x", {}), ss.tool_result("c", "1"),
                   ss.tool_result("c", "2"))
    assert_valid_view(view)
    assert {"dropped_block:thinking", "dropped_block:reasoning", "dropped_block:text", "renamed_tool_ids",
            "duplicate_tool_use", "duplicate_tool_result"} <= codes(view)
    blocks = view.messages[1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "signed", "signature": "sig"}
    ids = [b["id"] for m in view.messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    assert ids == ["call_1_fc_2", "c"]
    assert view.messages[2]["content"][0]["tool_use_id"] == "call_1_fc_2"
    openai = view.to_openai()  # OpenAI keeps the original id
    assert openai[1]["tool_calls"][0]["id"] == "call_1|fc_2"


def test_summary_then_user_message_gets_an_acknowledgement() -> None:
    view = view_of(ss.user("old"), ss.assistant("old answer"), ss.events.compaction("S", 3), ss.user("new question"))
    assert_valid_view(view)
    assert [m["role"] for m in view.messages] == ["user", "assistant", "user"]
    assert view.messages[1]["content"][0]["text"] == ACK_TEXT
    assert view.tokens == (5 + SUMMARY_WRAPPER_TOKENS) + ACK_TOKENS + 5 + 3 * MESSAGE_OVERHEAD_TOKENS


def test_openai_rendering() -> None:
    view = view_of(ss.system("be brief"), ss.user([{"type": "text", "text": "see"},
                                                    {"type": "image", "source": {"type": "base64",
                                                                                 "media_type": "image/png",
                                                                                 "data": "AAAA"}}]),
                   ss.assistant("reading", tool_calls=[ss.tool_call("c", "Read", {"file_path": "a"})]),
                   ss.tool_result("c", [{"type": "text", "text": "content"}], is_error=True),
                   ss.user("thanks"))
    messages = view.to_openai()
    assert messages[0] == {"role": "system", "content": "be brief"}
    assert messages[1]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert messages[2] == {"role": "assistant", "content": "reading", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a"}'}}]}
    assert messages[3] == {"role": "tool", "tool_call_id": "c", "content": "content"}
    assert messages[4] == {"role": "user", "content": "thanks"}


def test_usage_anchor_is_ignored_once_markers_change_the_view() -> None:
    events = [ss.user("q"), ss.assistant("a", meta={"usage": {"prompt_tokens": 900, "completion_tokens": 10}}),
              ss.user("more")]
    view = view_of(*events)
    assert view.usage is not None and view.usage.total == 910 + 5 and view.effective_tokens == 915
    pruned = view_of(*events, ss.tool_call("c", "x", {}), ss.tool_result("c", "y"), ss.events.prune([5], rule="r"))
    assert pruned.usage is None
    # No anchor: the overhead learned from the report carries over (here none: a ratio of 1 is the prior).
    estimate = pruned.window_estimate()
    learned = pruned.calibrations[None]
    assert estimate.basis == "calibration" and learned.reported == 900
    assert estimate.tokens == pruned.effective_tokens == 900 + pruned.tokens - learned.estimate
