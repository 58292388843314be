"""The fold: events in, context view out (DESIGN §5). Pure: no database, no network, no tokenizer.

Each step is a small named function: find the markers, build the preamble (summary,
scratchpad), the items a compaction keeps from before its cut (critical tools, restored
files), the kept tail with markers applied, then render and count (`context.project` runs them).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from ..events import StoredEvent
from .native import native_provider, without_native
from .texts import (ACK_TOKENS, MESSAGE_OVERHEAD_TOKENS, SCRATCHPAD_WRAPPER_TOKENS, SUMMARY_WRAPPER_TOKENS,
                    SYNTHETIC_RESULT_TOKENS, scratchpad_text, summary_text)
from .usage import assistant_side, output_tokens, prompt_tokens, response_blocks, response_start
from .view import ProjectionInput, UsageAnchor, ViewItem

# A compaction's details: the size of OpenAI's window (`compaction.native.window_details`).
WINDOW_KEY: Final = "native_window"
# A rewritten tool input keeps its other keys (path, flags): a small, roughly fixed cost.
REWRITTEN_INPUT_EXTRA_TOKENS: Final = 16
IN_CONTEXT_KINDS: Final = frozenset({"message", "tool_call", "tool_result"})


@dataclass(frozen=True, slots=True)
class Marker:
    """What the latest prune/rewrite says about one target version."""

    action: str  # "clear" | "drop" | "rewrite"
    event: StoredEvent


# --------------------------------------------------------------------------- markers


def collect_markers(tail: Iterable[StoredEvent]) -> dict[int, Marker]:
    """Target version → the marker in force. Later markers win; a drop is final."""
    markers: dict[int, Marker] = {}
    for event in tail:
        if event.kind == "prune":
            action = "drop" if event.payload["mode"] == "drop" else "clear"
            for target in event.payload["targets"]:
                if _not_dropped(markers, target):
                    markers[target] = Marker(action, event)
        elif event.kind == "rewrite":
            target = event.payload["target_version"]
            if _not_dropped(markers, target):
                markers[target] = Marker("rewrite", event)
    return markers


def _not_dropped(markers: Mapping[int, Marker], version: int) -> bool:
    current = markers.get(version)
    return current is None or current.action != "drop"


def tool_names(source: ProjectionInput) -> dict[str, str]:
    """call_id → tool name, for placeholders such as ``[Previous: used {tool}]``."""
    return {e.payload["call_id"]: e.payload["name"] for e in (*source.anchored, *source.tail) if e.kind == "tool_call"}


def apply_marker(item: ViewItem, markers: Mapping[int, Marker], names: Mapping[str, str]) -> ViewItem:
    """The item as its marker leaves it: output cleared, or rewritten (a skeleton, or the head and
    tail of an oversized output, input or message)."""
    marker = markers.get(item.version)
    if marker is None or marker.action == "drop":
        return item
    payload = marker.event.payload
    if marker.action == "clear":
        placeholder = _placeholder(payload.get("placeholder") or "", item, names)
        if item.kind == "tool_result":
            new = {**item.payload, "output": placeholder}
        elif item.kind == "tool_call":
            new = {**item.payload, "input": {"cleared": placeholder}}
        else:
            return item
        return ViewItem(item.version, item.kind, item.origin, new, marker.event.tokens, item.event,
                        marker.event.version, cleared=True)
    new = rewritten(item.kind, item.payload, payload)
    if new is None:
        return item
    tokens = marker.event.tokens + (REWRITTEN_INPUT_EXTRA_TOKENS if payload["field"] == "input" else 0)
    return ViewItem(item.version, item.kind, item.origin, new, tokens, item.event, marker.event.version,
                    rewritten=True)


def rewritten(kind: str, payload: Mapping[str, Any], rewrite: Mapping[str, Any]) -> dict[str, Any] | None:
    """The payload of an event of `kind` with a rewrite's content in place of the field it
    names (None when the rewrite does not apply to that kind)."""
    content = rewrite["content"]
    if rewrite["field"] == "output" and kind == "tool_result":
        return {**payload, "output": content}
    if rewrite["field"] == "input" and kind == "tool_call":
        return {**payload, "input": {**payload["input"], rewrite.get("input_key") or "content": content}}
    if rewrite["field"] == "content" and kind == "message":
        return {**payload, "content": [{"type": "text", "text": content}]}
    return None


def _placeholder(template: str, item: ViewItem, names: Mapping[str, str]) -> str:
    tool = names.get(item.call_id or "", "a tool")
    try:
        return template.format(tool=tool, version=item.version) or "[cleared]"
    except (KeyError, IndexError, ValueError):
        return template or "[cleared]"


def drop_marked_pairs(items: Sequence[ViewItem], markers: Mapping[int, Marker]) -> list[ViewItem]:
    """Remove dropped items, and with each dropped call or result its partner."""
    dropped_calls = {item.call_id for item in items
                     if item.call_id and (m := markers.get(item.version)) is not None and m.action == "drop"}
    return [item for item in items
            if not ((m := markers.get(item.version)) is not None and m.action == "drop")
            and not (item.call_id is not None and item.call_id in dropped_calls)]


# --------------------------------------------------------------------------- the parts of the view


def preamble_items(source: ProjectionInput) -> list[ViewItem]:
    """The compaction's summary, then the latest scratchpad (which survives every compaction).

    A compaction with an empty summary is a reset (`SessionStore.reset`): nothing before it.
    A provider's compaction (``payload.native``) travels with the summary item: the renderer
    for that provider sends the artefact, every other one the summary text."""
    items = []
    c = source.compaction
    if c is not None and (c.payload["summary"] or c.payload.get("native")):  # a reset has neither
        payload: dict[str, Any] = {"text": summary_text(c.payload["summary"])}
        if c.payload.get("native"):
            payload["native"] = c.payload["native"]
        window = opaque_window(c)
        tokens = window[0] if window is not None else c.tokens + SUMMARY_WRAPPER_TOKENS
        items.append(ViewItem(c.version, "summary", "summary", payload, tokens, c))
    if source.scratchpad is not None:
        s = source.scratchpad
        items.append(ViewItem(s.version, "scratchpad", "scratchpad", {"text": scratchpad_text(s.payload["text"])},
                              s.tokens + SCRATCHPAD_WRAPPER_TOKENS, s))
    return items


def opaque_window(compaction: StoredEvent | None) -> tuple[int, str] | None:
    """(tokens, basis) of OpenAI's window that `compaction` carries — what the view counts for it
    in place of the portable summary: ``usage`` when the provider counted its opaque item,
    ``estimate`` when it did not, or when the compaction was recorded without the figure (then
    the portable summary's count, which stands for the same range); None for any other compaction."""
    native = compaction.payload.get("native") if compaction is not None else None
    if not native or native.get("provider") != "openai":
        return None
    assert compaction is not None
    window = (compaction.payload.get("details") or {}).get(WINDOW_KEY)
    if isinstance(window, Mapping) and isinstance(window.get("tokens"), int):
        return window["tokens"], "usage" if window.get("basis") == "usage" else "estimate"
    return compaction.tokens + SUMMARY_WRAPPER_TOKENS, "estimate"


def anchored_items(source: ProjectionInput) -> list[ViewItem]:
    """Events from before the cut that the compaction keeps: critical tools, then restored files."""
    if source.compaction is None:
        return []
    details = source.compaction.payload.get("details") or {}
    critical = set(details.get("critical", ()))
    by_version = {e.version: e for e in source.anchored}
    ordered = [*sorted(critical), *sorted(set(details.get("restored", ())) - critical)]
    return [ViewItem(v, by_version[v].kind, "critical" if v in critical else "restored", by_version[v].payload,
                     by_version[v].tokens, by_version[v])
            for v in ordered if v in by_version and in_context(by_version[v])]


def lends(source: ProjectionInput) -> bool:
    """Does the view start from a provider's compaction (whose artefact a reply lends it)?"""
    return source.compaction is not None and bool(source.compaction.payload.get("native"))


def tail_items(source: ProjectionInput) -> list[ViewItem]:
    lent = lends(source)
    return [item for e in kept_tail(source) if (item := tail_item(e, lent)) is not None]


def tail_item(event: StoredEvent, lent: bool) -> ViewItem | None:
    """A kept event as a view item. Under a provider's compaction (`lent`), a reply that holds
    the artefact lends it to the compaction event recorded with it (which renders it): the
    reply keeps its other blocks, and is left out when it had none."""
    if lent and event.kind == "message" and not isinstance(event.payload["content"], str) and any(
            native_provider(b) for b in event.payload["content"]):
        rest = without_native(event.payload["content"])
        if not rest:
            return None
        whole = len(event.payload["content"])
        return ViewItem(event.version, event.kind, "tail", {**event.payload, "content": rest},
                        round(event.tokens * len(rest) / whole), event)
    return ViewItem(event.version, event.kind, "tail", event.payload, event.tokens, event)


def kept_tail(source: ProjectionInput) -> list[StoredEvent]:
    """The in-context events from the compaction's first kept version on (markers not applied)."""
    first_kept = source.compaction.payload["first_kept_version"] if source.compaction is not None else 1
    return [e for e in source.tail if e.version >= first_kept and in_context(e)]


def in_context(event: StoredEvent) -> bool:
    if event.kind in IN_CONTEXT_KINDS:
        return True
    return event.kind == "custom" and bool(event.payload.get("in_context"))


# --------------------------------------------------------------------------- tokens


def sent_items(items: Sequence[ViewItem], dropped: Collection[int], shares: Mapping[int, float]) -> list[ViewItem]:
    """The items with `tokens` as sent: 0 for what rendering leaves out (`dropped`: another
    provider's reasoning, orphan results, repeated calls), a share of the stored count for an
    item sent in part (`shares`: e.g. unsigned thinking beside text). The stored count is split,
    never re-tokenized."""
    if not dropped and not shares:
        return list(items)
    sent = []
    for item in items:
        if item.version in dropped and item.origin not in ("summary", "scratchpad"):
            item = replace(item, tokens=0)
        elif item.version in shares:
            item = replace(item, tokens=round(item.tokens * shares[item.version]))
        sent.append(item)
    return sent


def count_view_tokens(source: ProjectionInput, item_tokens: int, messages: int, acks: int, synthetic: int) -> int:
    """Stored counts of what the view sends (`item_tokens`: its items' as sent), plus fixed
    costs; never a tokenizer call."""
    system = source.system.tokens if source.system is not None else 0
    return (system + item_tokens + messages * MESSAGE_OVERHEAD_TOKENS + acks * ACK_TOKENS
            + synthetic * SYNTHETIC_RESULT_TOKENS)


def last_change(source: ProjectionInput) -> int:
    """The latest compaction, prune or rewrite in the tail: usage reported before it describes a
    context that no longer exists (Pi re-triggered compactions on such stale usage)."""
    return max((e.version for e in source.tail if e.kind in ("compaction", "prune", "rewrite")), default=0)


def latest_report(items: Sequence[ViewItem], start: int, stop: int, since: int) -> int | None:
    """The index of the last item of `items[start:stop]` (tail items) that carries the
    provider's count of a request, if it is after version `since` (`last_change`) and no item
    from `since` on comes after it."""
    for index in range(stop - 1, start - 1, -1):
        item = items[index]
        if item.version <= since:
            return None
        if assistant_side(item.event) and prompt_tokens(item.event.meta.get("usage")):
            return index
    return None


class _Events(Sequence[StoredEvent]):
    """The events of `items[start:]`, without copying them (the response helpers look around
    one index; a view's tail may hold thousands)."""

    def __init__(self, items: Sequence[ViewItem], start: int) -> None:
        self._items, self._start = items, start

    def __len__(self) -> int:
        return len(self._items) - self._start

    def __getitem__(self, index: Any) -> Any:
        return self._items[self._start + index].event


def usage_anchor(items: Sequence[ViewItem], tail_start: int, index: int | None, since: int) -> UsageAnchor | None:
    """The provider's count of the latest request whose context is still the view's (the report
    at `items[index]`, found by `latest_report`), with the response to it and our count of what
    the view added since. `items[tail_start:]` are the tail's."""
    if index is None:
        return None
    item = items[index]
    events = _Events(items, tail_start)
    first = response_start(events, index - tail_start) + tail_start
    if items[first].version <= since:
        return None
    response = [items[tail_start + i] for i in response_blocks(events, first - tail_start)]
    output = max(output_tokens(i.event.meta.get("usage")) for i in response)
    counted = sum(i.tokens for i in response)
    after = sum(items[i].tokens for i in range(first, len(items))) - counted
    return UsageAnchor(item.version, prompt_tokens(item.event.meta.get("usage")), after,
                       item.event.meta.get("model"), items[first].version, output, counted)
