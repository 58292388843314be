"""SessionStoreSession: the Agents SDK's Session protocol on a real SQLite file and a real
PostgreSQL server, and the real `agents.Runner` talking to the local Responses API server."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.memory import Session, SessionSettings
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

import sessionstore as ss
from sessionstore.integrations import _responses
from sessionstore.integrations.openai_agents import SessionStoreSession
from sessionstore.testing.openai_server import OpenAIServer

set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI

run = asyncio.run


def texts(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


def messages(*contents: str) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]


# Every kind of Responses input item the SDK stores, with the fields the API adds.
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "Hello"},
    {"role": "user", "content": ""},
    {"role": "developer", "content": [{"type": "input_text", "text": "Answer in French."}]},
    {"role": "system", "content": "You are terse."},
    {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "What is in this image?"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
        {"type": "input_image", "file_id": "file_123", "detail": "auto"},
        {"type": "input_file", "file_id": "file_456"}]},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Une image.", "logprobs": [],
                  "annotations": [{"type": "url_citation", "url": "https://x", "title": "t", "start_index": 0,
                                   "end_index": 3}]},
                 {"type": "refusal", "refusal": "I can't help with that."}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}],
     "encrypted_content": "gAAAA=="},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
    {"type": "function_call", "call_id": "call_2", "name": "search", "arguments": "{\"q\":\"compact\"}"},
    {"type": "function_call", "call_id": "call_3", "name": "raw", "arguments": "not json"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {"type": "function_call_output", "call_id": "call_2",
     "output": [{"type": "input_text", "text": "found"}, {"type": "input_image", "image_url": "https://x/y.png"}]},
    {"type": "function_call_output", "call_id": "call_unknown", "output": "an output whose call is elsewhere"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
    {"type": "computer_call_output", "call_id": "cc_1", "output": {"type": "computer_screenshot", "image_url": "x"}},
    {"type": "mcp_approval_request", "id": "mcpr_1", "arguments": "{}", "name": "tool", "server_label": "s"},
    {"type": "item_reference", "id": "msg_0"},
    {"role": "user", "content": "nul \u0000 and unicode こんにちは 😊 and SQL'); DROP TABLE events;--"},
    {"type": "function_call", "call_id": "c" * 300, "name": "long_id", "arguments": "{}"},
]


@pytest.fixture
def session(store_url: str) -> Iterator[SessionStoreSession]:
    s = SessionStoreSession("conversation", store_url)
    yield s
    s.close()


# ----------------------------------------------------------------------------- the mapping (pure)


def test_every_item_kind_maps_to_one_event_and_back_exactly() -> None:
    for item in ITEMS:
        event = _responses.item_to_event(copy.deepcopy(item))
        assert _responses.event_to_item(event.kind, event.payload, event.meta) == item
    kinds = [_responses.item_to_event(i).kind for i in ITEMS]
    assert kinds[7:13] == ["tool_call", "tool_call", "tool_call", "tool_result", "tool_result", "tool_result"]
    call = _responses.item_to_event(ITEMS[7])
    assert call.payload == {"call_id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
    assert _responses.item_to_event(ITEMS[-1]).kind == "message"  # a call id over the store's limit: kept whole


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                  max_size=3), max_leaves=8)
_part = st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text", "input_image", "refusal"]),
                               "text": st.text(max_size=10)}, optional={"annotations": _json, "image_url": st.text()})
_item = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "developer", "system", "critic"]),
                           "content": st.text(max_size=10) | st.lists(_part, max_size=3)},
                          optional={"type": st.just("message"), "id": st.text(max_size=5), "status": _json}),
    st.fixed_dictionaries({"type": st.just("function_call"), "call_id": st.text(max_size=5),
                           "name": st.text(max_size=5), "arguments": st.text(max_size=12)}, optional={"id": _json}),
    st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": st.text(max_size=5),
                           "output": st.text(max_size=8) | st.lists(_part, max_size=2)}),
    st.dictionaries(st.text(max_size=6), _json, max_size=4),
)


@settings(max_examples=300, deadline=None)
@given(_item)
def test_any_item_round_trips_exactly(item: dict[str, Any]) -> None:
    event = _responses.item_to_event(copy.deepcopy(item))
    assert _responses.event_to_item(event.kind, event.payload, event.meta) == item


# ----------------------------------------------------------------------------- the Session protocol


def test_is_a_session(session: SessionStoreSession) -> None:
    assert isinstance(session, Session)
    assert isinstance(session.session_settings, SessionSettings) and session.session_settings.limit is None


@pytest.mark.citus
def test_items_come_back_exactly_and_each_is_one_event(session: SessionStoreSession) -> None:
    run(session.add_items(copy.deepcopy(ITEMS)))
    assert run(session.get_items()) == ITEMS
    transcript = run(session.store.transcript("conversation"))
    assert len(transcript) == len(ITEMS)
    assert [e.kind for e in transcript][7:10] == ["tool_call"] * 3


@pytest.mark.citus
def test_get_items_limit_is_the_latest_in_order(session: SessionStoreSession) -> None:
    items = messages(*(f"Message {i}" for i in range(6)))
    run(session.add_items(items))
    assert texts(run(session.get_items(limit=2))) == ["Message 4", "Message 5"]
    assert texts(run(session.get_items(limit=4))) == ["Message 2", "Message 3", "Message 4", "Message 5"]
    assert run(session.get_items(limit=10)) == items
    assert run(session.get_items(limit=0)) == []
    assert run(session.get_items(limit=-1)) == items  # as the SDK's SQLiteSession: no limit


@pytest.mark.parametrize("settings_given", [SessionSettings(limit=3), {"limit": 3}], ids=["class", "dict"])
def test_session_settings_limit_is_the_default(store_url: str, settings_given: Any) -> None:
    session = SessionStoreSession("limited", store_url, session_settings=settings_given)
    try:
        assert isinstance(session.session_settings, SessionSettings) and session.session_settings.limit == 3
        run(session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(5)]))
        assert texts(run(session.get_items())) == ["Message 2", "Message 3", "Message 4"]
        assert texts(run(session.get_items(limit=1))) == ["Message 4"]
    finally:
        session.close()


def test_get_items_reads_only_a_window_for_a_limit(session: SessionStoreSession) -> None:
    run(session.add_items(messages(*(f"m{i}" for i in range(300)))))
    run(session.pop_item())
    assert texts(run(session.get_items(limit=2))) == ["m297", "m298"]
    assert len(run(session.get_items())) == 299


def test_limited_reads_see_what_another_writer_added_since(store_url: str) -> None:
    a, b = SessionStoreSession("shared", store_url), SessionStoreSession("shared", store_url)
    try:
        run(a.add_items(messages(*(f"a{i}" for i in range(30)))))
        assert texts(run(a.get_items(limit=3))) == ["a27", "a28", "a29"]
        run(b.add_items(messages(*(f"b{i}" for i in range(100)))))  # far past the window a read last
        assert texts(run(a.get_items(limit=3))) == ["b97", "b98", "b99"]
        run(b.pop_item())
        run(b.add_items(messages("b100")))
        assert texts(run(a.get_items(limit=2))) == ["b98", "b100"]
        assert run(a.pop_item()) == {"role": "user", "content": "b100"}
        assert texts(run(b.get_items(limit=1))) == ["b98"]
        assert len(run(a.get_items())) == 30 + 99
    finally:
        a.close()
        b.close()


@pytest.mark.citus
def test_pop_item_takes_back_the_latest_and_the_transcript_keeps_it(session: SessionStoreSession) -> None:
    assert run(session.pop_item()) is None
    items = messages("Hello", "Hi there!", "How are you?")
    run(session.add_items(items))
    assert run(session.pop_item()) == items[2]
    assert run(session.get_items()) == items[:2]
    assert run(session.pop_item()) == items[1]
    assert run(session.pop_item()) == items[0]
    assert run(session.pop_item()) is None
    assert run(session.get_items()) == []
    transcript = run(session.store.transcript("conversation"))
    assert [e.kind for e in transcript] == ["message"] * 3 + ["prune"] * 3
    assert all(e.payload["mode"] == "drop" and e.payload["rule"] == "retract" for e in transcript[3:])


def test_pop_item_of_a_tool_output_leaves_its_call(session: SessionStoreSession) -> None:
    call, output = ITEMS[7], ITEMS[10]
    run(session.add_items([call, output]))
    assert run(session.pop_item()) == output
    assert run(session.get_items()) == [call]


@pytest.mark.citus
def test_concurrent_pops_take_each_item_once(store_url: str) -> None:
    a, b = SessionStoreSession("shared", store_url), SessionStoreSession("shared", store_url)

    async def go() -> list[Any]:
        await a.add_items(messages("first", "second"))
        return list(await asyncio.gather(a.pop_item(), b.pop_item()))

    try:
        popped = run(go())
        assert sorted(texts(popped)) == ["first", "second"]
        assert run(a.get_items()) == []
    finally:
        a.close()
        b.close()


@pytest.mark.citus
def test_clear_session_is_a_reset_the_transcript_keeps(session: SessionStoreSession) -> None:
    run(session.clear_session())  # nothing to clear: no error
    run(session.add_items(messages("one", "two")))
    run(session.clear_session())
    assert run(session.get_items()) == []
    assert run(session.pop_item()) is None
    run(session.add_items(messages("three")))
    assert texts(run(session.get_items())) == ["three"]
    assert [e.payload.get("content") for e in run(session.store.transcript("conversation"))
            if e.kind == "message"] == [[ss.events.text_block(t)] for t in ("one", "two", "three")]


@pytest.mark.citus
def test_sessions_share_by_id_and_are_isolated_otherwise(store_url: str) -> None:
    names = ["s1", "S1", "s1 ", "s2"]
    sessions = [SessionStoreSession(n, store_url) for n in names]
    try:
        for s in sessions:
            run(s.add_items([{"role": "user", "content": s.session_id}]))
        for s in sessions:
            assert texts(run(s.get_items())) == [s.session_id]
        twin = SessionStoreSession("s1", ss.SessionStore(store_url))  # a sync store, called from a thread
        assert texts(run(twin.get_items())) == ["s1"]
        run(twin.add_items([{"role": "user", "content": "from the twin"}]))
        assert texts(run(sessions[0].get_items())) == ["s1", "from the twin"]
        twin.close()  # a store given to the session stays open
        assert twin.store.version("s1") == 2
        twin.store.close()
        async_twin = SessionStoreSession("s1", ss.AsyncSessionStore(store_url))  # awaited
        assert async_twin.store is not None and isinstance(async_twin.store, ss.AsyncSessionStore)
        run(async_twin.add_items([{"role": "user", "content": "from the async twin"}]))
        assert texts(run(sessions[0].get_items())) == ["s1", "from the twin", "from the async twin"]
        async_twin.close()
        assert run(async_twin.store.version("s1")) == 3
        run(async_twin.store.close())
    finally:
        for s in sessions:
            s.close()


def test_many_writers_in_one_loop_lose_nothing(session: SessionStoreSession) -> None:
    submitted = [f"msg-{i}" for i in range(25)]

    async def go() -> None:
        await asyncio.gather(*(session.add_items([{"role": "user", "content": c}]) for c in submitted))

    run(go())
    assert sorted(texts(run(session.get_items()))) == sorted(submitted)


def test_one_session_used_from_threads_each_with_its_own_loop(session: SessionStoreSession) -> None:
    barrier = threading.Barrier(4)

    def worker(n: int) -> list[Any]:
        barrier.wait()
        asyncio.run(session.add_items([{"role": "user", "content": f"thread {n}"}]))
        return asyncio.run(session.get_items(limit=1))

    with ThreadPoolExecutor(4) as pool:
        assert all(len(tail) == 1 for tail in pool.map(worker, range(4)))  # a worker's error is raised here
    assert sorted(texts(run(session.get_items()))) == [f"thread {n}" for n in range(4)]


def test_a_cancelled_add_still_completes(session: SessionStoreSession) -> None:
    async def go() -> None:
        task = asyncio.create_task(session.add_items([{"role": "user", "content": "once"}]))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(go())
    assert texts(run(session.get_items())) == ["once"]


def test_a_closed_session_refuses_work(store_url: str) -> None:
    session = SessionStoreSession("closing", store_url)
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        run(session.add_items([{"role": "user", "content": "late"}]))

    async def in_a_coroutine() -> None:
        session = SessionStoreSession("closing", store_url)
        await session.add_items([{"role": "user", "content": "early"}])
        await session.aclose()
        with pytest.raises(RuntimeError, match="closed"):
            await session.get_items()

    run(in_a_coroutine())
    with ss.SessionStore(store_url) as check:
        assert check.version("closing") == 1


def test_a_path_opens_and_migrates_a_new_database(tmp_path: Any) -> None:
    session = SessionStoreSession("fresh", tmp_path / "new.db")
    try:
        assert isinstance(session.store, ss.AsyncSessionStore)  # the async door, not a thread pool
        run(session.add_items(messages("hi")))
        assert texts(run(session.get_items())) == ["hi"]
    finally:
        session.close()
    with pytest.raises(ss.ConfigurationError, match="db must be a path, a URL, a SessionStore or an "
                                                    "AsyncSessionStore, not int"):
        SessionStoreSession("fresh", 42)  # type: ignore[arg-type]


def test_sessions_opened_on_one_path_share_one_store_until_the_last_closes(tmp_path: Any) -> None:
    """An app opens a session object per conversation, on one path: they share one
    AsyncSessionStore (one writer thread for all), which stays open until the last one closes."""
    path = tmp_path / "shared.db"

    async def main() -> None:
        first, second = SessionStoreSession("a", path), SessionStoreSession("b", str(path))
        assert first.store is second.store
        await first.add_items(messages("one"))
        await first.aclose()
        await second.add_items(messages("two"))  # still open for the other
        assert texts(await second.get_items()) == ["two"]
        await second.aclose()
        third = SessionStoreSession("a", path)
        assert third.store is not first.store  # the last close closed it: a new one
        assert texts(await third.get_items()) == ["one"]
        await third.aclose()

    run(main())


# ----------------------------------------------------------------------------- the real Runner


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"It is sunny in {city}."


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def agent_for(server: OpenAIServer) -> Agent[Any]:
    """A fresh agent (and HTTP client) for each run: a client's connections belong to the event loop
    they were opened on, and each run here has a loop of its own."""
    model = OpenAIResponsesModel("gpt-4.1", AsyncOpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0))
    return Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])


def run_agent(method: str, server: OpenAIServer, text: Any, **kwargs: Any) -> Any:
    agent = agent_for(server)
    if method == "run":
        return run(Runner.run(agent_for(server), text, **kwargs))
    if method == "run_sync":  # from a thread of its own, with its own event loop, as the SDK's tests do
        box: list[Any] = []
        thread = threading.Thread(target=lambda: box.append(Runner.run_sync(agent, text, **kwargs)))
        thread.start()
        thread.join()
        return box[0]

    async def streamed() -> Any:
        result = Runner.run_streamed(agent, text, **kwargs)
        async for _ in result.stream_events():
            pass
        return result

    return run(streamed())


@pytest.mark.parametrize("method", ["run", "run_sync", "run_streamed"])
@pytest.mark.citus
def test_runner_remembers_through_the_session(method: str, store_url: str, server: OpenAIServer) -> None:
    session = SessionStoreSession("runner", store_url)
    try:
        server.reply_tool_use("get_weather", {"city": "Paris"})
        server.reply("Sunny in Paris.")
        assert run_agent(method, server, "Weather in Paris?", session=session).final_output == "Sunny in Paris."
        server.reply("You asked about Paris.")
        assert run_agent(method, server, "What did I ask?", session=session).final_output == "You asked about Paris."
        sent = server.response_requests[-1].body["input"]
        stored = run(session.get_items())
        assert sent == stored[:-1]  # the history exactly as stored, then the new question
        assert stored[-2] == {"role": "user", "content": "What did I ask?"}
        assert [i.get("type") for i in stored[1:3]] == ["function_call", "function_call_output"]
        assert len(stored) == 6
    finally:
        session.close()


def test_runner_sends_the_stored_history_exactly(store_url: str, server: OpenAIServer) -> None:
    session = SessionStoreSession("exact", store_url)
    try:
        history = messages("Earlier message", "Saved reply")
        run(session.add_items(copy.deepcopy(history)))
        new = [{"role": "user", "content": "Test message"}]
        server.reply("ok")
        run(Runner.run(agent_for(server), copy.deepcopy(new), session=session))
        assert server.response_requests[-1].body["input"] == history + new
        server.reply("ok")
        run(Runner.run(agent_for(server), "Next", session=session,
                       run_config=RunConfig(session_settings=SessionSettings(limit=2))))
        sent = server.response_requests[-1].body["input"]
        assert len(sent) == 3 and sent[-1]["content"] == "Next"
    finally:
        session.close()


def test_runner_reads_the_compacted_view_with_a_policy(store_url: str, server: OpenAIServer) -> None:
    policy = ss.CompactionPolicy(context_window=2_000, reserve_tokens=400, keep_recent_tokens=300,
                                 prune_protect_tokens=200, prune_minimum_tokens=50, min_summarized_tokens=200)
    session = SessionStoreSession("long", store_url, policy=policy)
    try:
        server.reply("Noted.")
        run(Runner.run(agent_for(server), "Remember the code word: tangerine.", session=session))
        assert run(session.store.stats("long")).compactions == 0
        for city in ("Paris", "Lima", "Oslo", "Quito", "Cairo", "Delhi"):  # a long run: tool outputs pile up
            server.reply_tool_use("get_weather", {"city": city})
            server.reply(f"{city}: " + "lots of detail about the weather there. " * 40)
            run(Runner.run(agent_for(server), f"Weather in {city}?", session=session))
        server.reply("The code word was tangerine.")
        result = run(Runner.run(agent_for(server), "What was the code word?", session=session))
        assert result.final_output == "The code word was tangerine."
        stats = run(session.store.stats("long"))
        assert stats.compactions >= 1 and stats.view_tokens < stats.transcript_tokens
        sent = server.response_requests[-1].body["input"]
        view = _responses.view_to_items(run(session.store.context("long")))
        assert sent == view[:-1]  # the compacted view, ending with the new question (the reply came after)
        assert "continues an earlier conversation" in sent[0]["content"]
        assert len(sent) < 3 + 7 * 4
        transcript = run(session.store.transcript("long"))
        assert sum(e.kind == "tool_call" for e in transcript) == 6  # nothing lost from the transcript
    finally:
        session.close()


# ----------------------------------------------------------------------------- the local Responses server


def test_the_server_answers_and_refuses_as_the_api_does(server: OpenAIServer) -> None:
    import openai

    async def go() -> None:
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
        server.reply_tool_use("get_weather", {"city": "Paris"}, id="call_9")
        response = await client.responses.create(model="gpt-4.1", input="Weather in Paris?")
        assert response.output[0].type == "function_call" and response.output[0].call_id == "call_9"
        assert response.usage is not None and response.usage.input_tokens > 0
        with pytest.raises(openai.BadRequestError, match="No tool call found for function call output"):
            await client.responses.create(model="gpt-4.1", input=[
                {"type": "function_call_output", "call_id": "nowhere", "output": "x"}])
        with pytest.raises(openai.BadRequestError, match="No tool output found for function call call_9"):
            await client.responses.create(model="gpt-4.1", input=[
                {"type": "function_call", "call_id": "call_9", "name": "f", "arguments": "{}"}])
        server.error(429, "rate_limit_exceeded", "Slow down.")
        with pytest.raises(openai.RateLimitError, match="Slow down"):
            await client.responses.create(model="gpt-4.1", input="hi")
        server.reply("Streamed.")
        async with client.responses.stream(model="gpt-4.1", input="hi") as stream:
            deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
            final = await stream.get_final_response()
        assert deltas == ["Streamed."] and final.output_text == "Streamed."
        await client.close()

    run(go())
    assert [r.status for r in server.response_requests] == [200, 400, 400, 429, 200]
    assert server.response_requests[0].body["input"] == "Weather in Paris?"


@pytest.mark.parametrize("policy", [None, ss.CompactionPolicy(context_window=200_000)], ids=["history", "view"])
def test_items_returned_are_the_callers_to_change(store_url: str, policy: ss.CompactionPolicy | None) -> None:
    """Changing a returned item, however deep, changes neither the store nor what the same session
    object (the store keeps its items between turns) returns next; nor does changing a popped
    one, or an item after `add_items` took it."""
    session = SessionStoreSession("edited", store_url, policy=policy)
    try:
        stored = [ITEMS[4], ITEMS[5], ITEMS[7], ITEMS[11], {"role": "user", "content": "last"}]
        handed = copy.deepcopy(stored)
        run(session.add_items(handed))
        handed[0]["content"][0]["text"] = "changed by the caller after add_items"  # what was added stays
        handed[4]["content"] = "changed by the caller after add_items"
        for limit in (None, 3):
            items = run(session.get_items(limit))
            for item in items:
                if isinstance(item.get("content"), list):
                    item["content"][0]["text"] = "changed by the caller"
                    item["content"].append({"type": "input_text", "text": "added by the caller"})
                if isinstance(item.get("output"), list):
                    item["output"][0]["text"] = "changed by the caller"
                item["extra"] = {"nested": ["changed"]}
            again = run(session.get_items(limit))
            assert "changed by the caller" not in str(again) and "added by the caller" not in str(again)
            if policy is None:
                assert again == (stored if limit is None else stored[-limit:])
        if policy is None:
            assert run(session.get_items()) == stored
            popped = run(session.pop_item())
            popped["content"] = "changed after the pop"
            assert run(session.get_items()) == stored[:-1]
        fresh = SessionStoreSession("edited", store_url, policy=policy)
        try:
            assert run(fresh.get_items()) == run(session.get_items())
        finally:
            fresh.close()
    finally:
        session.close()


def test_a_long_history_is_handed_over_without_holding_the_loop(tmp_path: Any) -> None:
    """`get_items` of a long history: the copies that make the items the caller's are made on the
    store's threads (issue 30: an app's loop serves every agent). Checked with the suite's loop
    guard, which fails a step of the loop that takes more than 10 ms of its thread's CPU."""
    from .doors import STEP_CPU, _GuardedLoop

    loop = _GuardedLoop()
    session = SessionStoreSession("long", str(tmp_path / "long.db"))
    try:
        items = [{"role": "user" if i % 2 else "assistant",
                  "content": [{"type": "input_text", "text": f"message {i}"}]} for i in range(30_000)]
        loop.run_until_complete(session.add_items(items))
        loop.slow.clear()
        got = loop.run_until_complete(session.get_items())
        assert len(got) == len(items) and got[-1] == items[-1]
        assert not loop.slow, f"get_items held the loop ({STEP_CPU * 1000:g} ms of CPU at most): {loop.slow}"
    finally:
        session.close()
        loop.close()


def test_a_kept_item_marshal_cannot_write_is_copied_whole() -> None:
    """The kept history's items are frozen (`_codec.freeze`); one that marshal refuses (an object
    of the caller's inside) is kept as it is and deep-copied at each thaw: either way each
    reader gets a copy of its own, equal to what was kept."""
    from sessionstore.integrations._codec import freeze, thaw

    class Text(str):
        pass

    for item in ({"role": "user", "content": [{"type": "input_text", "text": "hi", "n": 2**70, "x": 0.1}]},
                 {"role": "user", "content": [{"type": "input_text", "text": Text("hi")}]}):
        frozen = freeze(item)
        first, second = thaw(frozen), thaw(frozen)
        assert first == item == second
        first["content"][0]["text"] = "changed"
        assert thaw(frozen) == item and second == item
