"""``anthropic-compact``: Anthropic's own compaction (the ``compact_20260112`` context edit) as level 3.

The view before the store's cut goes to the Messages API (beta ``compact-2026-01-12``) with the
edit and ``pause_after_compaction``, so that the answer is the ``compaction`` block alone; it is
recorded verbatim (readable ``content``, ``encrypted_content``, ``signature``) and sent back, as
the assistant turn it came in, to Anthropic. Its readable text is the portable summary when it
fits the planner's budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from .anthropic import DEFAULT_MODEL, AnthropicSummarizer
from .base import Summarizer, SummaryRequest
from .compacting import CompactingSummarizer, NativeCompaction, NotCompacted

if TYPE_CHECKING:
    import anthropic

BETA: Final = "compact-2026-01-12"
# The API compacts only past its trigger (150,000 input tokens unless set); 50,000 is the lowest
# trigger we understand it to accept. A view before the cut below the trigger is not compacted
# by the API, and the compaction is recorded with our summary alone (`NotCompacted`).
DEFAULT_TRIGGER: Final = 50_000
ASK: Final = "Compact the conversation so far."


class AnthropicCompactSummarizer(CompactingSummarizer):
    """Level 3 by the ``compact_20260112`` edit.

    client / async_client / model / max_retries: as `AnthropicSummarizer` (whose retries and
        error mapping this uses).
    trigger: the edit's input-token trigger: a view before the cut below it is not compacted by
        the API (`NotCompacted`), and the compaction is recorded with the portable summary alone.
    instructions: the edit's own instructions (else the compaction's, if any).
    portable: the summariser of the portable summary when the block's text does not fit.
    """

    provider = "anthropic"

    def __init__(self, client: anthropic.Anthropic | None = None, *, model: str = DEFAULT_MODEL,
                 max_tokens: int = 4096, trigger: int = DEFAULT_TRIGGER, instructions: str | None = None,
                 max_retries: int = 4, async_client: anthropic.AsyncAnthropic | None = None,
                 portable: Summarizer | None = None) -> None:
        self.sdk = AnthropicSummarizer(client, model=model, max_retries=max_retries, async_client=async_client)
        self.model = model
        self.max_tokens = max_tokens
        self.trigger = trigger
        self.instructions = instructions
        super().__init__(f"anthropic-compact:{model}", portable)

    def build_request(self, request: SummaryRequest) -> dict[str, Any]:
        """The keyword arguments of `client.beta.messages.create` for a ``native`` request."""
        edit: dict[str, Any] = {"type": "compact_20260112", "pause_after_compaction": True,
                                "trigger": {"type": "input_tokens", "value": self.trigger}}
        if self.instructions or request.instructions:
            edit["instructions"] = self.instructions or request.instructions
        messages = [dict(m) for m in request.messages]
        if messages and messages[-1]["role"] == "user":
            last = messages[-1]
            content = last["content"] if isinstance(last["content"], list) else [
                {"type": "text", "text": last["content"]}]
            messages[-1] = {**last, "content": [*content, {"type": "text", "text": ASK}]}
        else:
            messages.append({"role": "user", "content": ASK})
        return {"model": self.model, "max_tokens": self.max_tokens, "messages": messages, "betas": [BETA],
                "context_management": {"edits": [edit]}}

    def compact(self, request: SummaryRequest) -> NativeCompaction:
        with self.sdk._errors():
            raw = self.sdk.client.beta.messages.with_raw_response.create(**self.build_request(request))
        return self._answer(raw.http_response.json())

    async def acompact(self, request: SummaryRequest) -> NativeCompaction:
        with self.sdk._errors():
            raw = await self.sdk._async().beta.messages.with_raw_response.create(**self.build_request(request))
        return self._answer(raw.http_response.json())

    def _answer(self, body: Mapping[str, Any]) -> NativeCompaction:
        blocks = [b for b in body.get("content") or () if b.get("type") == "compaction"]
        if not blocks:
            raise NotCompacted(f"{self.name}: the API did not compact (stop_reason={body.get('stop_reason')}): "
                                  f"the view before the cut is under the trigger of {self.trigger:,} input tokens")
        block = blocks[-1]
        readable = block.get("content") if isinstance(block.get("content"), str) else None
        return NativeCompaction("anthropic", [block], readable)
