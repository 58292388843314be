"""Provider-side compaction (issue 14): the local Responses server's ``/v1/responses/compact``
through the real `openai` SDK, and its opaque ``compaction`` item kept byte for byte by our session."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator

import openai
import pytest
from openai.types.responses import ResponseCompactionItem

from sessionstore.integrations.openai_agents import SessionStoreSession
from sessionstore.testing.openai_server import OpenAIServer

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
    assert json.loads(base64.b64decode(last.encrypted_content.removeprefix("gAAAA"))) == HISTORY
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
