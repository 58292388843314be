"""What the providers' own compaction summarisers share (``openai-compact``, ``anthropic-compact``).

They are level 3 like every summariser: the store's planner decides the cut, the kept tail
and the summary budget, and asks them, as usual, for the portable summary of the range (from
`portable`, our offline summariser by default). Then it asks once more, with a ``native``
request, for the provider's own compaction of the view before the cut, which it records
verbatim (`compaction.native`). One door protocol, `Summarize`, carries both: nothing in the
doors knows about providers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .base import Summarizer, SummarizerError, SummaryRequest
from .offline import OfflineSummarizer


@dataclass(frozen=True, slots=True)
class NativeCompaction:
    """A provider's compaction as it answered: `items` verbatim (Anthropic: the ``compaction``
    block; OpenAI: the output items ending with the ``compaction`` item), its readable summary
    when it has one, and its usage (OpenAI's ``output_tokens``: its count of the opaque item)."""

    provider: str
    items: list[dict[str, Any]] = field(default_factory=list)
    readable: str | None = None
    usage: dict[str, Any] | None = None  # the provider's usage report of the compaction call, when it gave one

    @property
    def native(self) -> dict[str, Any]:
        """As `events.compaction(native=…)` takes it."""
        return {"provider": self.provider, "items": self.items}


class NotCompacted(SummarizerError):
    """The provider answered without compacting (the view before the cut is under its trigger):
    the compaction is recorded with the planner's portable summary alone, and says so."""


@runtime_checkable
class ProviderCompactor(Protocol):
    """A summariser whose ``native`` requests return the provider's own compaction."""

    name: str
    provider: str

    def summarize(self, request: SummaryRequest) -> Any: ...


class CompactingSummarizer:
    """Base of the provider compactors: portable summaries from `portable`, native requests to
    `compact` / `acompact` (which subclasses implement with their SDK)."""

    provider = ""

    def __init__(self, name: str, portable: Summarizer | None) -> None:
        self.name = name
        self.portable = portable if portable is not None else OfflineSummarizer()

    def summarize(self, request: SummaryRequest) -> Any:
        if request.purpose == "native":
            return self.compact(request)
        return self.portable.summarize(request)

    async def asummarize(self, request: SummaryRequest) -> Any:
        if request.purpose == "native":
            return await self.acompact(request)
        asummarize = getattr(self.portable, "asummarize", None)
        return await asummarize(request) if asummarize is not None else self.portable.summarize(request)

    def compact(self, request: SummaryRequest) -> NativeCompaction:
        raise NotImplementedError

    async def acompact(self, request: SummaryRequest) -> NativeCompaction:
        raise NotImplementedError
