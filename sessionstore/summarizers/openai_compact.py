"""``openai-compact``: OpenAI's own compaction (``POST /v1/responses/compact``) as level 3.

The view before the store's cut goes to ``responses.compact`` as Responses input items (a
previous OpenAI compaction's items first, verbatim, so the new one covers it); the output
items — the user's messages, then one opaque ``compaction`` item — are recorded verbatim and
sent back, byte for byte, to the Responses API. Other providers get the portable summary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .base import Summarizer, SummarizerError, SummaryRequest
from .compacting import CompactingSummarizer, NativeCompaction
from .openai import OpenAISummarizer

DEFAULT_MODEL = "gpt-5.4"


class OpenAICompactSummarizer(CompactingSummarizer):
    """Level 3 by ``responses.compact``.

    model / base_url / api_key / max_retries: as `OpenAISummarizer` (whose client, retries and
        error mapping this uses).
    portable: the summariser of the portable summary other providers are sent (default: ours,
        offline).
    """

    provider = "openai"

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None, api_key: str | None = None, *,
                 max_retries: int = 4, portable: Summarizer | None = None) -> None:
        self.sdk = OpenAISummarizer(model, base_url, api_key, max_retries=max_retries)
        self.model = model
        super().__init__(f"openai-compact:{model}", portable)

    def build_request(self, request: SummaryRequest) -> dict[str, Any]:
        """The keyword arguments of `responses.compact` for a ``native`` request."""
        return {"model": self.model, "input": responses_input(request)}

    def compact(self, request: SummaryRequest) -> NativeCompaction:
        with self.sdk._errors():
            raw = self.sdk.client.responses.with_raw_response.compact(**self.build_request(request))
        return _answer(raw.http_response.json(), self.name)

    async def acompact(self, request: SummaryRequest) -> NativeCompaction:
        if self.sdk.async_client is None:
            self.sdk.async_client = self.sdk._sdk.AsyncOpenAI(**self.sdk._client_args)
        with self.sdk._errors():
            raw = await self.sdk.async_client.responses.with_raw_response.compact(**self.build_request(request))
        return _answer(raw.http_response.json(), self.name)


def _answer(body: Mapping[str, Any], name: str) -> NativeCompaction:
    output = list(body.get("output") or [])
    if not output or output[-1].get("type") != "compaction":
        raise SummarizerError(f"{name}: responses.compact returned no compaction item")
    return NativeCompaction("openai", output)


def responses_input(request: SummaryRequest) -> list[dict[str, Any]]:
    """The view before the cut as Responses input items: a previous OpenAI compaction's items
    verbatim (else the summary that opened the view, as a user message), then the messages."""
    previous = request.extra.get("previous_native")
    if previous and previous.get("provider") == "openai":
        items = [dict(item) for item in previous["items"]]
    elif request.extra.get("previous_text"):
        items = [{"role": "user", "content": request.extra["previous_text"]}]
    else:
        items = []
    return items + [item for message in request.extra.get("history", ()) for item in message_items(message)]


def message_items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One Anthropic-shaped message as Responses items: text as messages, tool use as function
    calls and outputs, in order; what has no Responses equivalent (thinking) is left out."""
    role = message["role"]
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            items.append({"role": role, "content": "\n\n".join(texts)})
            texts.clear()

    content = message["content"]
    for block in ([{"type": "text", "text": content}] if isinstance(content, str) else content):
        btype = block.get("type")
        if btype == "text" and block.get("text", "").strip():
            texts.append(block["text"])
        elif btype == "tool_use":
            flush()
            items.append({"type": "function_call", "call_id": block["id"], "name": block["name"],
                          "arguments": json.dumps(block.get("input", {}), ensure_ascii=False)})
        elif btype == "tool_result":
            flush()
            items.append({"type": "function_call_output", "call_id": block["tool_use_id"],
                          "output": _text(block.get("content", ""))})
    flush()
    return items


def _text(content: str | Sequence[Mapping[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
