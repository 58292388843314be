"""A provider's own compaction as a compaction of the projection (DESIGN §10).

However a provider's compaction arrives — returned inside an assistant reply, asked for by
the planner (`openai-compact`, `anthropic-compact`), written by a framework that replaces its
history — it is recorded as one `compaction` event: the artefact verbatim in
``payload.native``, and in ``summary`` a portable text of the same range (the artefact's
readable text, else our offline summary), which every other provider's renderer sends.
History stays; the view starts from it. Pure: views and events in, events out.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .. import events as ev
from ..errors import InvalidEvent
from ..events import NewEvent
from ..projection import ContextView, ViewItem
from ..projection.native import native_artefact, readable_text
from ..summarizers.base import SummaryRequest
from ..summarizers.offline import OfflineSummarizer
from ..tokens import TokenCounter
from ..projection.fold import WINDOW_KEY
from ..projection.texts import MESSAGE_OVERHEAD_TOKENS, summary_text
from ..projection.render import render_anthropic
from ..summarizers.compacting import NativeCompaction
from .pipeline import CompactionPlan, what_if
from .summarize import messages_of

PROVIDER_STRATEGY: Final = "provider"
_IDS: Final = uuid.UUID("5e55105e-c0de-4a7e-9c0a-000000000014")


def portable_summary(items: Sequence[ViewItem], previous: str | None = None) -> str:
    """Our offline summary of `items` (updating `previous`): what another provider is sent in
    place of an artefact it cannot read. Deterministic, no model call."""
    history = [item for item in items if item.origin != "summary"]
    messages, versions = messages_of(history)
    if not messages and not previous:
        return "(nothing was recorded before this compaction)"
    return OfflineSummarizer().summarize(SummaryRequest(messages=messages, versions=versions,
                                                        previous_summary=previous))


def covered(view: ContextView, first_kept: int) -> tuple[list[ViewItem], str | None]:
    """What a compaction cutting `view` at `first_kept` replaces: the items before the cut, and
    the summary they already stood under."""
    previous = view.compaction.payload["summary"] if view.compaction is not None else None
    return [item for item in view.items if item.version < first_kept], previous or None


def check_native(native: Any) -> None:
    """`InvalidEvent` naming what is wrong when `native` is not ``{"provider", "items"}``."""
    if not isinstance(native, Mapping):
        raise InvalidEvent("a provider's compaction is {'provider': ..., 'items': [...]}, got "
                           f"{type(native).__name__}", field="native")
    ev.validate_event(ev.compaction("", 1, native=native))


def recorded(view: ContextView, native: Mapping[str, Any], first_kept: int, *, summarizer: str, counter: TokenCounter,
             trigger: str = "auto", summary: str | None = None, details: Mapping[str, Any] | None = None,
             event_id: str | None = None, meta: Mapping[str, Any] | None = None) -> NewEvent:
    """The compaction event for `native`, a provider's compaction of everything in `view` before
    `first_kept`. `summary`: the portable text when the caller has one already."""
    before, previous = covered(view, first_kept)
    text = summary or readable_text(native) or portable_summary(before, previous)
    versions = [item.version for item in before if item.origin != "summary"]
    return ev.compaction(text, first_kept, tokens_before=view.tokens, trigger=trigger, strategy=PROVIDER_STRATEGY,
                         summarizer=summarizer, native=native, event_id=event_id, meta=meta, details={
                             "summarized_versions": [versions[0], versions[-1]] if versions else [],
                             "portable": "readable" if summary is None and readable_text(native) else "offline",
                             **window_details(native, text, counter), **dict(details or {})})


def window_details(native: Mapping[str, Any], portable: str, counter: TokenCounter,
                   usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"native_window": {"tokens", "basis"}}`` for OpenAI's window, which the view counts in
    place of the portable summary (`fold.preamble_items`): our count of the messages it keeps,
    plus its opaque ``compaction`` item at the provider's count (``output_tokens`` of the compact
    call: basis ``usage``) or, not reported, at our count of the portable summary of the same
    range (basis ``estimate``). {} for Anthropic's block, whose readable text is the summary."""
    if native.get("provider") != "openai":
        return {}
    items = list(native.get("items") or ())
    texts = [text for item in items if item.get("type", "message") == "message" and (text := _item_text(item))]
    opaque = sum(1 for item in items if item.get("type") in ("compaction", "compaction_summary"))
    reported = usage.get("output_tokens") if isinstance(usage, Mapping) else None
    counted = isinstance(reported, int) and not isinstance(reported, bool) and reported > 0
    opaque_tokens = (reported if counted else counter.count(portable)) if opaque else 0
    tokens = sum(counter.count_many(texts)) + MESSAGE_OVERHEAD_TOKENS * len(texts) + opaque_tokens
    return {WINDOW_KEY: {"tokens": tokens, "basis": "usage" if counted or not opaque else "estimate"}}


def _item_text(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or () if isinstance(p, Mapping))


def in_reply(batch: Sequence[NewEvent]) -> tuple[int, dict[str, Any]] | None:
    """The last message of `batch` that holds a provider's compaction (its index and artefact),
    unless the batch records that compaction itself (a compaction event after it)."""
    for index in range(len(batch) - 1, -1, -1):
        event = batch[index]
        if event.kind == "compaction":
            return None
        if event.kind == "message" and isinstance(event.payload, Mapping) and \
                (native := native_artefact(event.payload.get("content", ""))) is not None:
            return index, native
    return None


def reply_compaction(view: ContextView, batch: Sequence[NewEvent], index: int, native: Mapping[str, Any],
                     counter: TokenCounter) -> NewEvent:
    """The compaction that `batch[index]` (a reply holding `native`) makes, once `batch` lands
    after `view`: the view starts from that reply. Its id follows from the reply's, so that a
    retried append of the same batch is recognised."""
    then = what_if(view, batch[:index + 1], counter)
    event = recorded(then, native, view.version + index + 1, summarizer=f"{native['provider']}:in-reply",
                     counter=counter, event_id=derived_id(batch[index]))
    return with_tokens_after(event, what_if(view, [*batch, event], counter))


def with_tokens_after(event: NewEvent, after: ContextView) -> NewEvent:
    return replace(event, payload={**event.payload, "tokens_after": after.tokens})


def derived_id(reply: NewEvent) -> str:
    """The id of the compaction a reply makes: a function of the reply's, so that a retried
    append of the same batch finds it."""
    return uuid.uuid5(_IDS, reply.event_id).hex


# --------------------------------------------------------------------------- asked for by the planner


def native_request(view: ContextView, first_kept: int, instructions: str | None) -> SummaryRequest:
    """The ``native`` request for a provider compactor: the view before the planner's cut, as
    valid Anthropic-shaped messages (a previous Anthropic compaction in them verbatim), and
    without the summary that opens them (``history``), with that summary's artefact and text."""
    before = [item for item in view.items if item.version < first_kept or item.origin == "summary"]
    history = [item for item in before if item.origin != "summary"]
    compaction = view.compaction.payload if view.compaction is not None else {}
    return SummaryRequest(messages=render_anthropic(before).messages, purpose="native", instructions=instructions,
                          extra={"history": render_anthropic(history).messages,
                                 "previous_native": compaction.get("native"),
                                 "previous_text": summary_text(compaction["summary"])
                                 if compaction.get("summary") else None})


def declined(plan: CompactionPlan, reason: str) -> CompactionPlan:
    """`plan` as planned (its portable summary alone), saying why the provider's is missing."""
    events = list(plan.events)
    index = max(i for i, e in enumerate(events) if e.kind == "compaction")
    details = {**(events[index].payload.get("details") or {}), "provider_declined": reason}
    events[index] = replace(events[index], payload={**events[index].payload, "details": details})
    return replace(plan, events=tuple(events))


def with_native(plan: CompactionPlan, view: ContextView, answer: NativeCompaction, counter: TokenCounter
                ) -> CompactionPlan:
    """`plan` with its compaction carrying the provider's answer verbatim. The readable text
    becomes the summary when it fits the budget the planner sized the view with (so the window
    invariant holds as planned); else the planner's portable summary stays."""
    events = list(plan.events)
    index = max(i for i, e in enumerate(events) if e.kind == "compaction")
    payload = dict(events[index].payload)
    details = dict(payload.get("details") or {})
    budget = int(details.get("summary_budget") or 0)
    if answer.readable and counter.count(answer.readable) <= budget:
        payload["summary"], details["portable"] = answer.readable, "readable"
    else:
        details["portable"] = "summarizer"
    details.update(window_details(answer.native, payload["summary"], counter, answer.usage))
    payload.update(native=answer.native, details=details)
    events[index] = replace(events[index], payload=payload)
    after = what_if(view, events, counter)
    events[index] = with_tokens_after(events[index], after)
    return replace(plan, events=tuple(events), view_after=after, tokens_after=after.tokens)
