"""SessionStoreChatMessageHistory: LangChain's BaseChatMessageHistory, sync and async, on a real
SQLite file and a real PostgreSQL server; every message type comes back equal."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (AIMessage, AIMessageChunk, BaseMessage, ChatMessage, FunctionMessage,
                                     HumanMessage, SystemMessage, ToolMessage)

import sessionstore as ss
from sessionstore.integrations._langchain_messages import MESSAGE_BLOCK, events_to_messages, message_to_events
from sessionstore.integrations.langchain import SessionStoreChatMessageHistory

run = asyncio.run

MESSAGES: list[BaseMessage] = [
    SystemMessage("You are terse."),
    SystemMessage(content=[{"type": "text", "text": "as blocks"}]),
    HumanMessage("What is the weather in Paris?", id="h1", name="ann"),
    HumanMessage(content=[{"type": "text", "text": "and this image?", "id": "t1"},
                          {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                          "a bare string block"]),
    AIMessage(content="", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"},
                                      {"name": "no_id", "args": {}, "id": None}],
              usage_metadata={"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
              response_metadata={"model_name": "gpt-4.1", "finish_reason": "tool_calls"},
              additional_kwargs={"refusal": None}, id="run-1"),
    AIMessage(content=[{"type": "text", "text": "Thinking…"}], invalid_tool_calls=[
        {"name": "broken", "args": "{not json", "id": "call_x", "error": "bad json", "type": "invalid_tool_call"}]),
    ToolMessage("It is sunny.", tool_call_id="call_1", name="get_weather", artifact={"raw": [1, 2]}),
    ToolMessage(content=[{"type": "text", "text": "failed"}], tool_call_id="call_2", status="error"),
    AIMessage("It is sunny in Paris."),
    AIMessageChunk(content="a chunk", id="chunk-1"),
    ChatMessage(content="Looks right.", role="critic"),
    ChatMessage(content="I agree.", role="assistant"),
    FunctionMessage(content="42", name="legacy_function"),
    HumanMessage("nul \u0000 in content, こんにちは 😊", additional_kwargs={"note": "nul \u0000 in meta"}),
]


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                  max_size=3), max_leaves=6)
_content = st.text(max_size=10) | st.lists(st.text(max_size=5) | st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image_url", "reasoning"]), "text": st.text(max_size=6)},
    optional={"id": st.text(max_size=3), "extras": _json}), max_size=3)
_kwargs = st.fixed_dictionaries({}, optional={"additional_kwargs": st.dictionaries(st.text(max_size=4), _json,
                                                                                  max_size=2),
                                              "id": st.text(max_size=4), "name": st.text(max_size=4)})
_call = st.fixed_dictionaries({"name": st.text(max_size=4), "args": st.dictionaries(st.text(max_size=3), _json,
                                                                                    max_size=2),
                               "id": st.none() | st.text(max_size=4)})
_message = st.one_of(
    st.builds(lambda c, k: HumanMessage(content=c, **k), _content, _kwargs),
    st.builds(lambda c, k, calls: AIMessage(content=c, tool_calls=calls, **k), _content, _kwargs,
              st.lists(_call, max_size=2)),
    st.builds(lambda c, k: SystemMessage(content=c, **k), _content, _kwargs),
    st.builds(lambda c, cid, status: ToolMessage(content=c, tool_call_id=cid, status=status), _content,
              st.text(max_size=5), st.sampled_from(["success", "error"])),
    st.builds(lambda c, role: ChatMessage(content=c, role=role), _content, st.text(max_size=5)),
)


@settings(max_examples=200, deadline=None)
@given(_message)
def test_any_message_round_trips_exactly(message: BaseMessage) -> None:
    assert events_to_messages(message_to_events(message)) == [message]


def test_what_the_events_cannot_say_is_kept_whole() -> None:
    """An undeclared field left out as empty, or a value JSON does not give back (NaN), fails the
    check on the message's dump: the message is stored whole."""
    extra = HumanMessage("x", extra_field=None)
    nan = HumanMessage("nan", additional_kwargs={"k": float("nan")})
    for message in (extra, nan):
        [event] = message_to_events(message)
        assert event.payload["content"][0]["type"] == MESSAGE_BLOCK
    assert events_to_messages(message_to_events(extra)) == [extra]
    assert [e.kind for e in message_to_events(HumanMessage("x", extra_field=3))] == ["message"]
    assert events_to_messages(message_to_events(HumanMessage("x", extra_field=3))) == [HumanMessage("x", extra_field=3)]


@pytest.fixture
def history(store_url: str) -> Iterator[SessionStoreChatMessageHistory]:
    h = SessionStoreChatMessageHistory("chat", store_url)
    yield h
    h.close()


def test_every_message_maps_to_events_and_back_exactly() -> None:
    for message in MESSAGES:
        assert events_to_messages(message_to_events(message)) == [message]
    kinds = [e.kind for e in message_to_events(MESSAGES[4])]
    assert kinds == ["message", "tool_call", "tool_call"]
    assert [e.kind for e in message_to_events(MESSAGES[6])] == ["tool_result"]
    assert [e.kind for e in message_to_events(MESSAGES[0])] == ["system"]
    assert message_to_events(MESSAGES[7])[0].payload["is_error"] is True


def test_is_a_chat_message_history(history: SessionStoreChatMessageHistory) -> None:
    assert isinstance(history, BaseChatMessageHistory)
    assert history.messages == []


def test_sync_round_trip_of_every_message_type(history: SessionStoreChatMessageHistory) -> None:
    history.add_messages(MESSAGES)
    assert history.messages == MESSAGES
    history.add_user_message("one more")
    history.add_ai_message(AIMessage("and an answer"))
    assert history.messages[-2:] == [HumanMessage("one more"), AIMessage("and an answer")]
    assert "Human: one more" in str(history)


def test_async_round_trip_of_every_message_type(history: SessionStoreChatMessageHistory) -> None:
    async def go() -> None:
        await history.aadd_messages(MESSAGES)
        assert await history.aget_messages() == MESSAGES
        await history.aadd_messages([HumanMessage("!")])
        assert (await history.aget_messages())[-1] == HumanMessage("!")
        await history.aclear()
        assert await history.aget_messages() == []

    run(go())
    assert history.messages == []


def test_clear_is_a_reset_the_transcript_keeps(history: SessionStoreChatMessageHistory) -> None:
    history.clear()  # nothing to clear: no error
    history.add_messages([HumanMessage("Hello"), AIMessage("World")])
    history.clear()
    assert history.messages == []
    history.add_message(HumanMessage("after"))
    assert history.messages == [HumanMessage("after")]
    transcript = ss.SessionStore(history.store.url).transcript("chat")
    assert [e.kind for e in transcript if e.kind == "message"] == ["message"] * 3


def test_histories_share_by_id(store_url: str) -> None:
    a, b, c = (SessionStoreChatMessageHistory(sid, store_url) for sid in ("same", "same", "other"))
    try:
        a.add_messages([HumanMessage("from a")])
        run(b.aadd_messages([AIMessage("from b")]))
        assert a.messages == b.messages == [HumanMessage("from a"), AIMessage("from b")]
        assert c.messages == []
    finally:
        for h in (a, b, c):
            h.close()


def test_tool_messages_are_the_stores_tool_events(history: SessionStoreChatMessageHistory) -> None:
    history.add_messages(MESSAGES[2:9])
    view = run(history.store.context("chat"))
    roles = [m["role"] for m in view.messages]
    assert roles[0] == "user" and all(x != y for x, y in zip(roles, roles[1:]))
    blocks = [b["type"] for m in view.messages for b in m["content"]]
    assert blocks.count("tool_use") == 2 and "tool_result" in blocks


def test_sync_methods_and_close_inside_a_running_loop(store_url: str) -> None:
    async def go() -> None:
        history = SessionStoreChatMessageHistory("in-loop", store_url)
        assert isinstance(history.store, ss.AsyncSessionStore)
        await history.aadd_messages([HumanMessage("async")])
        history.add_messages([AIMessage("sync")])  # a blocking store on the same database
        assert history.messages == await history.aget_messages() == [HumanMessage("async"), AIMessage("sync")]
        history.close()  # the async store is closed from its own thread: this loop is running

    run(go())


def test_a_long_history_is_read_without_holding_the_loop(tmp_path: Any) -> None:
    """`aget_messages` builds a message per event: on the store's threads (issue 30), checked
    with the suite's loop guard (a step of the loop over 10 ms of its thread's CPU fails)."""
    from .doors import STEP_CPU, _GuardedLoop

    loop = _GuardedLoop()
    history = SessionStoreChatMessageHistory("long", str(tmp_path / "lc.db"))
    try:
        loop.run_until_complete(history.aadd_messages(
            [HumanMessage(f"q{i}") if i % 2 else AIMessage(f"a{i}") for i in range(20_000)]))
        loop.slow.clear()
        assert len(loop.run_until_complete(history.aget_messages())) == 20_000
        assert not loop.slow, f"aget_messages held the loop ({STEP_CPU * 1000:g} ms of CPU at most): {loop.slow}"
    finally:
        history.close()
        loop.close()
