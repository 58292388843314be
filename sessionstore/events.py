"""Events: the kinds and their constructors (`user`, `assistant`, `tool_call`, …).

An event is the unit of history: once appended it never changes. Everything a session
holds — messages, tool calls and results, and the decisions compaction takes (`compaction`,
`prune`, `rewrite`) — is one of the kinds below, so that any past context can be rebuilt
by folding events. The kinds, their constants and the event types are in `kinds`; their
validation, which runs before anything touches the database (a batch with one bad event writes
nothing), is in `validation`. Both are re-exported here, where callers import them from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, overload

from .errors import InvalidEvent
# Re-exported: callers import the kinds, the event types and the checks from here.
from .kinds import (KINDS, MAX_EVENT_ID, MAX_ID, NATIVE_PROVIDERS, PRUNE_MODES, RANDOM_READ,  # noqa: F401
                    REWRITE_FIELDS, REWRITE_TARGETS, ROLES, TRIGGERS, Block, Content, Kind, MadeId, NewEvent,
                    StoredEvent, claim, content_blocks, might_be_made, new_event_id, text_block)
from .validation import (JSONB_UNSTORABLE, LARGE_FLOAT, UNSTORABLE_ID, check_metadata, check_queryable,  # noqa: F401
                         EncodedPayload, checked, encode_event, encode_json, validate_event)


def _event(kind: str, payload: dict[str, Any], meta: Mapping[str, Any] | None,
           event_id: str | None, created_at: datetime | None) -> NewEvent:
    return NewEvent(kind=kind, payload=payload, meta=dict(meta or {}),
                    event_id=event_id or new_event_id(), created_at=created_at)


def _blocks(content: Content, field: str = "payload.content") -> list[Block]:
    """A string or content blocks as blocks; anything else is an `InvalidEvent` naming it."""
    if isinstance(content, str):
        return [text_block(content)] if content else []
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        blocks = list(content)
        if all(isinstance(b, Mapping) for b in blocks):
            return [dict(b) for b in blocks]
    raise InvalidEvent(f"expected a string or a list of content blocks (dicts), got {_kind_of(content)}", field=field)


def _kind_of(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def system(text: str, *, meta: Mapping[str, Any] | None = None, event_id: str | None = None,
           created_at: datetime | None = None) -> NewEvent:
    """The system prompt. The latest one is the one the view uses."""
    return _event("system", {"text": text}, meta, event_id, created_at)


def user(content: Content, *, meta: Mapping[str, Any] | None = None, event_id: str | None = None,
         created_at: datetime | None = None) -> NewEvent:
    """A user message: a string, or content blocks (text, image, provider-native JSON)."""
    return _event("message", {"role": "user", "content": _blocks(content)}, meta, event_id, created_at)


@overload
def assistant(content: Content = "", *, tool_calls: None = None, meta: Mapping[str, Any] | None = None,
              event_id: str | None = None, created_at: datetime | None = None) -> NewEvent: ...
@overload
def assistant(content: Content = "", *, tool_calls: Sequence[NewEvent | Mapping[str, Any]],
              meta: Mapping[str, Any] | None = None, event_id: str | None = None,
              created_at: datetime | None = None) -> list[NewEvent]: ...
def assistant(content: Content = "", *, tool_calls: Sequence[NewEvent | Mapping[str, Any]] | None = None,
              meta: Mapping[str, Any] | None = None, event_id: str | None = None,
              created_at: datetime | None = None) -> NewEvent | list[NewEvent]:
    """An assistant message; with `tool_calls`, the message followed by one `tool_call` event each.

    `tool_calls` takes `tool_call(...)` events or Anthropic-shaped ``{"id", "name", "input"}``
    dicts. With tool calls the result is a list, which `append` flattens, so
    ``store.append(sid, [user(...), assistant("On it.", tool_calls=[...])])`` reads naturally.
    Provider-reported usage belongs in ``meta={"usage": ...}``.
    """
    message = _event("message", {"role": "assistant", "content": _blocks(content)}, meta, event_id, created_at)
    if tool_calls is None:
        return message
    calls = [c if isinstance(c, NewEvent) else _tool_call_from_block(c) for c in tool_calls]
    return ([message] if message.payload["content"] else []) + calls


def _tool_call_from_block(block: Mapping[str, Any]) -> NewEvent:
    call_id = block.get("call_id", block.get("id"))
    return tool_call(call_id, block.get("name"), block.get("input", {}))  # type: ignore[arg-type]


def tool_call(call_id: str, name: str, input: Mapping[str, Any], *, meta: Mapping[str, Any] | None = None,
              event_id: str | None = None, created_at: datetime | None = None) -> NewEvent:
    """A tool the assistant calls; rendered as a tool_use block of the message it follows."""
    if not isinstance(input, Mapping):
        raise InvalidEvent(f"a tool call's input must be an object of arguments (a dict), got {_kind_of(input)}"
                           + (f" — e.g. {{'command': {input!r}}}" if isinstance(input, str) else ""),
                           field="payload.input")
    return _event("tool_call", {"call_id": call_id, "name": name, "input": dict(input)}, meta, event_id, created_at)


def tool_result(call_id: str, output: Content, is_error: bool = False, *, meta: Mapping[str, Any] | None = None,
                event_id: str | None = None, created_at: datetime | None = None) -> NewEvent:
    """The result of the call `call_id`: a string or content blocks."""
    out: str | list[Block] = output if isinstance(output, str) else _blocks(output, "payload.output")
    return _event("tool_result", {"call_id": call_id, "output": out, "is_error": is_error}, meta, event_id,
                  created_at)


def scratchpad(text: str, *, meta: Mapping[str, Any] | None = None, event_id: str | None = None,
               created_at: datetime | None = None) -> NewEvent:
    """Working memory that survives every compaction (the latest one is shown after the summary)."""
    return _event("scratchpad", {"text": text}, meta, event_id, created_at)


def custom(type: str, data: Any = None, *, in_context: bool = False, meta: Mapping[str, Any] | None = None,
           event_id: str | None = None, created_at: datetime | None = None) -> NewEvent:
    """An application event; the model sees it (as a user note) only when `in_context`."""
    return _event("custom", {"type": type, "data": data, "in_context": in_context}, meta, event_id, created_at)


def compaction(summary: str, first_kept_version: int, *, tokens_before: int | None = None,
               tokens_after: int | None = None, trigger: str = "manual", strategy: str = "single",
               summarizer: str = "offline", details: Mapping[str, Any] | None = None,
               instructions: str | None = None, native: Mapping[str, Any] | None = None,
               meta: Mapping[str, Any] | None = None, event_id: str | None = None,
               created_at: datetime | None = None) -> NewEvent:
    """A summary that replaces, in the view, everything before `first_kept_version`.

    `native` is a provider's own compaction, kept verbatim: ``{"provider": "anthropic", "items":
    [compaction block]}`` (the content of the assistant turn that stands for the range) or
    ``{"provider": "openai", "items": [Responses items ending with the compaction item]}``.
    That provider is sent the items, byte for byte; every other renderer gets `summary`, the
    portable text of the same range (the block's readable text, else our own summary)."""
    payload: dict[str, Any] = {
        "summary": summary, "first_kept_version": first_kept_version, "tokens_before": tokens_before,
        "tokens_after": tokens_after, "trigger": trigger, "strategy": strategy, "summarizer": summarizer,
        "details": {"read_files": [], "modified_files": [], "restored": [], **dict(details or {})},
    }
    if instructions is not None:
        payload["instructions"] = instructions
    if native is not None:
        payload["native"] = {"provider": native.get("provider"), "items": list(native.get("items") or [])}
    return _event("compaction", payload, meta, event_id, created_at)


def prune(targets: Sequence[int], *, mode: str = "clear_output", rule: str, placeholder: str = "",
          meta: Mapping[str, Any] | None = None, event_id: str | None = None,
          created_at: datetime | None = None) -> NewEvent:
    """Clears the outputs of (or drops) the tool results/calls at `targets` from the view."""
    return _event("prune", {"targets": list(targets), "mode": mode, "rule": rule, "placeholder": placeholder},
                  meta, event_id, created_at)


def rewrite(target_version: int, *, field: str, content: str, original_lines: int, language: str,
            meta: Mapping[str, Any] | None = None, event_id: str | None = None,
            created_at: datetime | None = None) -> NewEvent:
    """Replaces, in the view, a tool result's `output`, a call's `input` or a message's `content` by a
    shorter text (a skeleton, or the head and tail of an oversized item)."""
    return _event("rewrite", {"target_version": target_version, "field": field, "content": content,
                              "original_lines": original_lines, "language": language}, meta, event_id, created_at)


def once(events: Any) -> Any:
    """`events` in a form that can be read more than once (a retried call reads it again):
    a one-shot iterator becomes a list; events, lists, tuples and None are returned as they are."""
    if events is None or isinstance(events, (NewEvent, list, tuple)):
        return events
    if isinstance(events, Iterable) and not isinstance(events, (str, bytes, Mapping)):
        return list(events)
    return events


def flatten(events: NewEvent | Iterable[NewEvent | Iterable[NewEvent]]) -> list[NewEvent]:
    """One flat list from an event, a list of events, or a list mixing events and lists of them."""
    if isinstance(events, NewEvent):
        return [events]
    if isinstance(events, (Mapping, str, bytes)) or not isinstance(events, Iterable):
        hint = " (a message as a dict? build it with sessionstore.user(...) or assistant(...))" \
            if isinstance(events, Mapping) else ""
        raise InvalidEvent(f"expected a NewEvent or a list of them (built by sessionstore.user(), tool_call(), …), "
                           f"got {_kind_of(events)}{hint}")
    flat: list[NewEvent] = []
    for item in events:
        if isinstance(item, NewEvent):
            flat.append(item)
        elif isinstance(item, Iterable) and not isinstance(item, (str, bytes, Mapping)):
            flat.extend(flatten(item))
        else:
            raise InvalidEvent(f"expected a NewEvent (built by sessionstore.user(), tool_call(), …), got "
                               f"{type(item).__name__}", index=len(flat))
    return flat


def targets_of(event: NewEvent | StoredEvent) -> list[int]:
    """The versions a marker event (`prune`, `rewrite`) or a compaction refers to."""
    payload = event.payload
    if event.kind == "prune":
        return list(payload["targets"])
    if event.kind == "rewrite":
        return [payload["target_version"]]
    return []


def recall_hint(version: int, last: int | None = None) -> str:
    """How a marker that names versions tells the model to get them back with the recall tool
    (`sessionstore.recall`): markers live in compaction and projection, below the tool."""
    return f"recall read v{version}" + (f"..{last}" if last is not None and last != version else "")
