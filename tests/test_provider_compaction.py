"""Provider-side compaction (issue 14) on the local servers, through the real SDKs: the Responses
server's ``/v1/responses/compact`` and its opaque ``compaction`` item (kept byte for byte by our
session, also under the Agents SDK's `OpenAIResponsesCompactionSession` and `Runner`), and the
Messages server's ``compact_20260112`` edit and ``compaction`` block; `view.to_responses()`, the
Responses request an app that calls the API itself sends (issue 29), and what the view counts
for OpenAI's opaque window."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator

import anthropic
import openai
import pytest
from openai.types.responses import ResponseCompactionItem

import sessionstore as ss
from sessionstore.integrations.openai_agents import SessionStoreSession
from sessionstore.projection.responses import view_items
from sessionstore.testing.anthropic_server import AnthropicServer
from sessionstore.testing.openai_server import OpenAIServer, replaced_by

HISTORY = [
    {"type": "message", "role": "user", "content": "What is the weather in Paris?"},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
    {"type": "message", "role": "user", "content": "And tomorrow?"},
]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def test_compact_returns_user_messages_then_one_opaque_compaction_item(server: OpenAIServer) -> None:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
    raw = client.responses.with_raw_response.compact(model="gpt-5.4", input=HISTORY)  # type: ignore[arg-type]
    compacted, window = raw.parse(), raw.http_response.json()["output"]
    assert compacted.object == "response.compaction"
    *kept, last = compacted.output
    assert [(i.type, i.role, i.content[0].text) for i in kept] == [  # type: ignore[union-attr]
        ("message", "user", "What is the weather in Paris?"), ("message", "user", "And tomorrow?")]
    assert isinstance(last, ResponseCompactionItem)
    # the opaque payload stands for exactly what it replaced
    assert replaced_by(last.model_dump()) == HISTORY
    assert compacted.usage.input_tokens > 0
    assert server.compact_requests[0].body["input"] == HISTORY and not server.response_requests

    # the compacted window is a valid input for the next turn, the item sent back verbatim
    server.reply("Rain tomorrow.")
    nxt = client.responses.create(model="gpt-5.4", input=[*window, {"role": "user", "content": "Thanks"}])  # type: ignore[arg-type]
    assert nxt.output_text == "Rain tomorrow."
    sent = server.response_requests[-1].body["input"]
    assert sent[2] == {"id": last.id, "type": "compaction", "encrypted_content": last.encrypted_content}


def test_a_compaction_item_without_its_encrypted_content_is_refused(server: OpenAIServer) -> None:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
    with pytest.raises(openai.BadRequestError, match=r"input\[0\]\.encrypted_content"):
        client.responses.create(model="gpt-5.4", input=[{"type": "compaction", "id": "cmp_1"}])  # type: ignore[list-item]
    with pytest.raises(openai.NotFoundError):
        client.post("/responses/compacted", cast_to=object, body={})


def test_our_session_returns_a_compacted_window_byte_for_byte(server: OpenAIServer, store_url: str) -> None:
    """What the Agents SDK's compaction session writes (the compact call's output) comes back exactly."""
    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)

    async def run() -> list[object]:
        raw = await client.responses.with_raw_response.compact(model="gpt-5.4", input=HISTORY)  # type: ignore[arg-type]
        written = raw.http_response.json()["output"]
        session = SessionStoreSession("compacted", store_url)
        try:
            await session.add_items(HISTORY)  # type: ignore[arg-type]
            await session.clear_session()
            await session.add_items(written)  # type: ignore[arg-type]
            got = await session.get_items()
        finally:
            session.close()
        assert got == written
        return got

    got = asyncio.run(run())
    assert got[-1]["type"] == "compaction"  # type: ignore[index]


# ----------------------------------------------------------------------------- Anthropic's compact_20260112 edit

def _compact_request(trigger: int, *, pause: bool) -> dict[str, object]:
    return {"edits": [{"type": "compact_20260112", "pause_after_compaction": pause,
                       "trigger": {"type": "input_tokens", "value": trigger}}]}


def test_anthropic_compact_edit_pauses_with_a_compaction_block_sent_back_verbatim() -> None:
    from anthropic.types.beta import BetaCompactionBlock

    with AnthropicServer() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        messages = [{"role": "user", "content": "Plan the migration of the billing service."},
                    {"role": "assistant", "content": "Step one: freeze writes."},
                    {"role": "user", "content": "Go on."}]
        paused = client.beta.messages.create(model="claude-x", max_tokens=512, messages=messages,  # type: ignore[arg-type]
                                             betas=["compact-2026-01-12"],
                                             context_management=_compact_request(10, pause=True))  # type: ignore[arg-type]
        assert paused.stop_reason == "compaction" and len(paused.content) == 1
        block = paused.content[0]
        assert isinstance(block, BetaCompactionBlock)
        assert block.content and "Go on." in block.content and block.signature and block.encrypted_content
        assert json.loads(base64.b64decode(block.encrypted_content)) == messages

        # the block goes back as the assistant's turn; the server sees it byte for byte
        sent_back = paused.model_dump(exclude_none=True)["content"][0]
        server.reply("Step two: migrate.")
        nxt = client.beta.messages.create(model="claude-x", max_tokens=512, betas=["compact-2026-01-12"],
                                          messages=[*messages, {"role": "assistant", "content": [sent_back]},  # type: ignore[list-item]
                                                    {"role": "user", "content": "Continue."}],
                                          context_management=_compact_request(100_000, pause=True))  # type: ignore[arg-type]
        assert nxt.stop_reason == "end_turn" and nxt.content[0].text == "Step two: migrate."  # type: ignore[union-attr]
        assert server.message_requests[-1].body["messages"][3]["content"][0] == sent_back


def test_anthropic_compact_edit_without_pause_opens_the_reply_and_needs_its_beta() -> None:
    with AnthropicServer() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        messages = [{"role": "user", "content": "Summarise this long thread please."}]
        server.reply("Done.")
        reply = client.beta.messages.create(model="claude-x", max_tokens=64, messages=messages,  # type: ignore[arg-type]
                                            betas=["compact-2026-01-12"],
                                            context_management=_compact_request(1, pause=False))  # type: ignore[arg-type]
        assert [b.type for b in reply.content] == ["compaction", "text"] and reply.stop_reason == "end_turn"
        with pytest.raises(anthropic.BadRequestError, match="compact-2026-01-12"):
            client.beta.messages.create(model="claude-x", max_tokens=64, messages=messages,  # type: ignore[arg-type]
                                        context_management=_compact_request(1, pause=True))  # type: ignore[arg-type]
        with pytest.raises(anthropic.BadRequestError, match="`compaction` blocks can only be in `assistant`"):
            client.beta.messages.create(model="claude-x", max_tokens=64, betas=["compact-2026-01-12"],
                                        messages=[{"role": "user", "content": [  # type: ignore[list-item]
                                            {"type": "compaction", "content": "x", "encrypted_content": "y"}]}])

# The Agents SDK's compaction session over ours: tests/test_provider_events.py (one compaction in the store).


# ----------------------------------------------------------------------------- view.to_responses()

def test_to_responses_is_a_request_the_responses_api_accepts(server: OpenAIServer, store: ss.SessionStore) -> None:
    """An app that calls the Responses API itself sends `view.to_responses()`: the system prompt,
    messages, calls and outputs as Responses items, every call with an output (a call recorded
    without one gets a placeholder), an output whose call the view lost left out, and OpenAI's own
    compaction as the items it returned, byte for byte."""
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
    sid = store.create_session()
    store.append(sid, [ss.system("You are terse."), ss.user("What is the weather in Paris?"),
                       ss.assistant("Checking.", tool_calls=[ss.tool_call("call_1", "get_weather", {"city": "Paris"})]),
                       ss.tool_result("call_1", "sunny"), ss.assistant("It is sunny."),
                       ss.user("And Rome?"), ss.assistant("", tool_calls=[ss.tool_call("call_2", "get_weather",
                                                                                    {"city": "Rome"})])])
    items = store.context(sid).to_responses()
    assert items[0] == {"role": "system", "content": "You are terse."}
    assert {"type": "function_call", "call_id": "call_1", "name": "get_weather",
            "arguments": '{"city": "Paris"}'} in items
    assert {"type": "function_call_output", "call_id": "call_1", "output": "sunny"} in items
    assert items[-1]["type"] == "function_call_output" and items[-1]["call_id"] == "call_2"  # answered for the API
    server.reply("Rome: rain.")
    reply = client.responses.create(model="gpt-5.4", input=items)  # type: ignore[arg-type]
    assert reply.output_text == "Rome: rain." and server.response_requests[-1].body["input"] == items

    # OpenAI's compaction of that window, recorded as the Agents SDK records it: its items come back verbatim
    window = client.responses.with_raw_response.compact(model="gpt-5.4", input=items  # type: ignore[arg-type]
                                                        ).http_response.json()["output"]
    store.record_provider_compaction(sid, "openai", window)
    store.append(sid, ss.user("Thanks."))
    view = store.context(sid)
    items = view.to_responses()
    assert items[:1 + len(window)] == [{"role": "system", "content": "You are terse."}, *window]
    assert items[-1]["role"] == "user"
    server.reply("You are welcome.")
    assert client.responses.create(model="gpt-5.4", input=items).output_text == "You are welcome."  # type: ignore[arg-type]
    assert view.to_responses() == view_items(view.items, view.system)  # nothing to repair here: as added


def test_the_view_counts_openais_opaque_window(server: OpenAIServer, store: ss.SessionStore) -> None:
    """After OpenAI's compaction the view counts its window — the messages it keeps and its opaque
    item — not the portable summary: the item at the provider's count where the compact call
    reported it (``output_tokens``), else at our count of the portable summary of the same range,
    and the view says that figure is an estimate."""
    from sessionstore.projection.texts import MESSAGE_OVERHEAD_TOKENS
    from sessionstore.summarizers.openai_compact import OpenAICompactSummarizer

    from .test_provider_events import POLICY, _long_session

    counter = store.token_counter
    sid = _long_session(store)
    store.compact(sid, POLICY, OpenAICompactSummarizer(base_url=server.url + "/v1", api_key="test", max_retries=0))
    view = store.context(sid)
    assert view.compaction is not None
    *kept, item = view.compaction.payload["native"]["items"]
    texts = [part["text"] for message in kept for part in message["content"]]
    window = server.counter.count(item["encrypted_content"]) + sum(counter.count_many(texts)) \
        + MESSAGE_OVERHEAD_TOKENS * len(texts)
    assert view.compaction.payload["details"]["native_window"] == {"tokens": window, "basis": "usage"}
    [summary] = [i for i in view.items if i.origin == "summary"]
    assert summary.tokens == window != view.compaction.tokens  # the window, not the portable summary
    assert "estimated_window" not in {d.code for d in view.diagnostics}

    # A framework's compaction that came without the provider's usage: our estimate, and the view says so
    other = store.create_session()
    store.append(other, [ss.user("What is the weather in Paris?"), ss.assistant("Sunny.")])
    store.record_provider_compaction(other, "openai", [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "What is the weather in Paris?"}]}, item])
    view = store.context(other)
    assert view.compaction is not None
    [summary] = [i for i in view.items if i.origin == "summary"]
    estimate = counter.count(view.compaction.payload["summary"]) + counter.count("What is the weather in Paris?") \
        + MESSAGE_OVERHEAD_TOKENS
    assert view.compaction.payload["details"]["native_window"] == {"tokens": estimate, "basis": "estimate"}
    assert summary.tokens == estimate and "estimated_window" in {d.code for d in view.diagnostics}
