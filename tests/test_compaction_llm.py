"""Compaction with a model: the real anthropic SDK over HTTP against a local Messages API server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anthropic
import pytest

import sessionstore as ss
from sessionstore import AnthropicSummarizer, CompactionPolicy, SessionStore
from sessionstore.summarizers import SECTIONS
from sessionstore.testing import AnthropicServer

from .checks import assert_valid_view
from .test_compaction import SMALL, work_session


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as running:
        yield running


def client_for(server: AnthropicServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=3)


def test_summary_request_shape(store: SessionStore, server: AnthropicServer) -> None:
    sid = work_session(store, 8)
    store.append(sid, ss.events.compaction("## Primary request and intent\nthe earlier summary", 2))
    # A cap under the policy's summary budget: the cap wins.
    summarizer = AnthropicSummarizer(client_for(server), model="claude-haiku-4-5", max_tokens=1000)
    result = store.compact(sid, SMALL, summarizer, instructions="keep every file path")
    assert result is not None and result.compaction is not None
    first = server.message_requests[0].body
    assert first["model"] == "claude-haiku-4-5" and first["max_tokens"] == 1000
    assert isinstance(first["system"], str) and first["system"]
    assert len(first["messages"]) == 1 and first["messages"][0]["role"] == "user"
    prompt = first["messages"][0]["content"]
    prompt = prompt if isinstance(prompt, str) else "".join(b["text"] for b in prompt)
    assert "the earlier summary" in prompt  # anchored update of the previous summary
    assert "keep every file path" in prompt
    assert "Question 0:" in prompt and "[Tool call v" in prompt  # labels name transcript versions
    assert "[User v2]: Question 0:" in prompt  # version 1 is the system prompt
    for title in SECTIONS:
        assert title in prompt
    assert result.compaction.payload["summarizer"] == "anthropic:claude-haiku-4-5"
    summary = result.compaction.payload["summary"]
    assert all(f"## {title}" in summary for title in SECTIONS)
    assert_valid_view(store.context(sid))


def test_overloaded_then_success(store: SessionStore, server: AnthropicServer) -> None:
    sid = work_session(store, 6)
    server.overloaded(retry_after=0.01)
    result = store.compact(sid, SMALL.with_(rules=()), AnthropicSummarizer(client_for(server)))
    assert result is not None and result.compaction is not None
    statuses = [r.status for r in server.message_requests]
    assert statuses[:2] == [529, 200]


@pytest.mark.parametrize("stated", [True, False], ids=["models-api", "error-only"])
def test_a_small_summariser_window_slices_the_history(store: SessionStore, server: AnthropicServer,
                                                      stated: bool) -> None:
    """The Models API states the window: every request fits from the first. A server that says
    it only in its "prompt is too long" gets one refused batch, then requests that fit."""
    sid = work_session(store, 12)
    server.context_window = 4_000  # the serialised history is ~8,000 tokens: it takes slices
    server.states_window = stated
    policy = SMALL.with_(rules=(), rewrite=False)  # keep the history big
    summarizer = AnthropicSummarizer(client_for(server), count_tokens=False)
    result = store.compact(sid, policy, summarizer)
    assert result is not None and result.compaction is not None
    statuses = [r.status for r in server.message_requests]
    if stated:
        assert set(statuses) == {200}
    else:
        assert statuses[0] == 400 and set(statuses[statuses.index(200):]) == {200}
    assert statuses.count(200) >= 3  # slices, then the merge
    details = result.compaction.payload["details"]
    assert details["slices"] > 1
    assert details["summarizer_window"]["tokens"] == 4_000
    assert details["summarizer_window"]["source"] == ("server" if stated else "error")
    assert summarizer.context_window == 4_000  # remembered: the next compaction plans for it at once
    merges = [r for r in server.message_requests if "partial summar" in str(r.body["messages"])]
    assert merges and all(r.status == 200 for r in merges)
    assert_valid_view(store.context(sid))


def test_overflow_in_the_agent_loop_compacts_once_and_retries(store: SessionStore, server: AnthropicServer) -> None:
    sid = work_session(store, 10)
    server.context_window = store.context(sid).tokens // 2
    client = client_for(server)
    calls = []

    def call(view: ss.ContextView) -> anthropic.types.Message:
        calls.append(view.tokens)
        return client.messages.create(model="claude-sonnet-4-6", max_tokens=256, **view.to_anthropic())

    reply = ss.with_overflow_retry(store, sid, call, policy=SMALL)
    assert reply.content[0].type == "text"
    assert len(calls) == 2 and calls[1] < calls[0]
    assert store.context(sid).compaction.payload["trigger"] == "overflow"
    server.context_window = 10  # now nothing fits: the second overflow goes to the caller, no loop
    with pytest.raises(anthropic.BadRequestError) as err:
        ss.with_overflow_retry(store, sid, call, policy=SMALL)
    assert ss.is_context_overflow(err.value)
    assert len(calls) == 4


def test_overflow_in_an_async_agent_loop_compacts_once_and_retries(store: SessionStore, server: AnthropicServer) -> None:
    sid = work_session(store, 10)
    server.context_window = store.context(sid).tokens // 2
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="test-key", max_retries=3)
    calls = []

    async def call(view: ss.ContextView) -> anthropic.types.Message:
        calls.append(view.tokens)
        return await client.messages.create(model="claude-sonnet-4-6", max_tokens=256, **view.to_anthropic())

    async def go() -> None:
        async with ss.AsyncSessionStore(store.url) as astore:
            reply = await ss.awith_overflow_retry(astore, sid, call, policy=SMALL)
            assert reply.content[0].type == "text"
            assert len(calls) == 2 and calls[1] < calls[0]
            assert (await astore.context(sid)).compaction.payload["trigger"] == "overflow"
            server.context_window = 10  # now nothing fits: the second overflow goes to the caller, no loop
            with pytest.raises(anthropic.BadRequestError) as err:
                await ss.awith_overflow_retry(astore, sid, call, policy=SMALL)
            assert ss.is_context_overflow(err.value)
            assert len(calls) == 4
            await client.close()

    asyncio.run(go())


def test_views_of_a_compacted_session_are_accepted_by_the_api(store: SessionStore, server: AnthropicServer) -> None:
    sid = work_session(store, 5)
    store.compact(sid, CompactionPolicy(context_window=20_000, reserve_tokens=2_000, keep_recent_tokens=2_000))
    client = client_for(server)
    for version in range(1, store.version(sid) + 1, 7):
        view = store.context(sid, at=version)
        if view.messages:
            client.messages.create(model="claude-sonnet-4-6", max_tokens=64, **view.to_anthropic())
    assert all(r.status == 200 for r in server.message_requests)
