"""LangChain messages ↔ events, exactly reversible.

* ``HumanMessage``, ``ChatMessage``, ``FunctionMessage`` → a user ``message`` event (a chat
  message whose role is ``assistant`` or ``ai`` → an assistant one);
* ``AIMessage`` → an assistant ``message`` event, then one ``tool_call`` event per tool call;
* ``ToolMessage`` → a ``tool_result`` event (``status="error"`` → ``is_error``);
* ``SystemMessage`` with text content → a ``system`` event.

Text content blocks become text blocks; other blocks are kept whole. What the events cannot
say (the message type, ids, ``additional_kwargs``, ``response_metadata``, usage, artifacts, a
tool call without an id, …) is kept in ``meta["langchain"]`` of the message's first event,
which also says how many events the message spans. A message that would not come back equal
(checked on every message) is stored whole in one block of a message event. Chunks
(``AIMessageChunk`` …) come back as chunks.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from langchain_core.messages import (AIMessage, AIMessageChunk, BaseMessage, ChatMessage, ChatMessageChunk,
                                     FunctionMessage, FunctionMessageChunk, HumanMessage, HumanMessageChunk,
                                     RemoveMessage, SystemMessage, SystemMessageChunk, ToolMessage,
                                     ToolMessageChunk, messages_from_dict)

from .. import events as ev
from ..events import NewEvent, StoredEvent
from ..projection import ContextView
from ..projection.native import LANGCHAIN_BLOCK
from ..projection.blocks import note_text
from ._codec import exact, from_blocks, text_part, to_blocks, usable_call_id

META_KEY: Final = "langchain"
MESSAGE_BLOCK: Final = "langchain_message"  # a block holding a whole serialised message
CONTENT_BLOCK: Final = LANGCHAIN_BLOCK    # a block holding a whole content block
_EMPTY: Final[tuple[Any, ...]] = (None, {}, [])
_ASSISTANT_TYPES: Final = frozenset({"ai", "AIMessageChunk"})

Data = dict[str, Any]
# The class `messages_from_dict` builds for each type.
_CLASSES: Final[dict[str, type[BaseMessage]]] = {
    "human": HumanMessage, "ai": AIMessage, "system": SystemMessage, "chat": ChatMessage, "function": FunctionMessage,
    "tool": ToolMessage, "remove": RemoveMessage, "AIMessageChunk": AIMessageChunk,
    "HumanMessageChunk": HumanMessageChunk, "FunctionMessageChunk": FunctionMessageChunk,
    "ToolMessageChunk": ToolMessageChunk, "SystemMessageChunk": SystemMessageChunk,
    "ChatMessageChunk": ChatMessageChunk}


def _base_type(message_type: str) -> str:
    """``AIMessageChunk`` → ``ai``, ``HumanMessageChunk`` → ``human`` …, others unchanged."""
    if message_type.endswith("MessageChunk"):
        return {"AI": "ai"}.get(message_type[:-12], message_type[:-12].lower())
    return message_type


# --------------------------------------------------------------------------- message → events


def message_to_events(message: BaseMessage) -> list[NewEvent]:
    """The events that store `message` (one, or an AI message and its tool calls).

    Proven on the message's own dump: the events are mapped back to the dict LangChain builds
    a message from (`messages_from_dict`, as `_whole` relies on too), which must hold every
    field of the dump, or leave out only a field whose value is that field's default. Building
    the message again and comparing would prove the same at twice the cost (every message of
    a LangGraph thread goes through here)."""
    dump = message.model_dump()
    return exact(message, lambda m: _encode(dump), _message_dicts, _whole,
                 lambda dicts, m: len(dicts) == 1 and _gives_back(dicts[0], dump, type(m)))


def _gives_back(decoded: Mapping[str, Any], dump: Mapping[str, Any], cls: type[BaseMessage]) -> bool:
    """Whether `messages_from_dict` builds, from `decoded`, a `cls` whose dump is `dump`."""
    if decoded["type"] != dump["type"] or _CLASSES.get(decoded["type"]) is not cls:
        return False
    data = decoded["data"]
    defaults = _defaults(cls)
    for key, value in dump.items():
        if key == "type":
            continue
        if key in data:
            if data[key] != value:
                return False
        elif key not in defaults or defaults[key] != value:
            return False
    return all(key in dump for key in data)


@functools.cache
def _defaults(cls: type[BaseMessage]) -> dict[str, Any]:
    """The fields of a message class a dict may leave out, and the value each then takes."""
    return {name: info.get_default(call_default_factory=True) for name, info in cls.model_fields.items()
            if not info.is_required()}


def _whole(message: BaseMessage) -> list[NewEvent]:
    data = message.model_dump()
    role = "assistant" if data["type"] in _ASSISTANT_TYPES else "user"
    return [NewEvent("message", {"role": role, "content": [{"type": MESSAGE_BLOCK, "message": data}]})]


def _encode(data: Data) -> list[NewEvent]:
    mtype = data["type"]
    base = _base_type(mtype)
    saved: dict[str, Any] = {"type": mtype}
    content = data["content"]
    if base == "system" and isinstance(content, str):
        first = NewEvent("system", {"text": content})
        rest = _rest(data, ("content",))
        return [_with_meta(first, saved, rest, 1)]
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [ev.text_block(content)] if content else []
        saved["string_content"] = True
    else:
        blocks, parts = to_blocks(content, _convert)
        if parts:
            saved["parts"] = parts
    if base == "tool":
        if not usable_call_id(data.get("tool_call_id")):
            raise ValueError("a tool message without a usable tool_call_id is kept whole")
        payload = {"call_id": data["tool_call_id"], "output": blocks, "is_error": data.get("status") == "error"}
        rest = _rest(data, ("content", "tool_call_id"))
        if rest.get("status") == "success":
            del rest["status"]
        return [_with_meta(NewEvent("tool_result", payload), saved, rest, 1)]
    role = "assistant" if base == "ai" or (base == "chat" and data.get("role") in ("assistant", "ai")) else "user"
    message = NewEvent("message", {"role": role, "content": blocks})
    calls: list[NewEvent] = []
    if base == "ai":
        call_extras = []
        for i, call in enumerate(data.get("tool_calls") or ()):
            call_id = call.get("id")
            extra = {k: v for k, v in call.items() if k not in ("name", "args", "id", "type")}
            if call.get("type") != "tool_call":
                extra["type"] = call.get("type")
            if not usable_call_id(call_id):
                extra["id"] = call_id
                call_id = f"lc-call-{ev.new_event_id()}"
            call_extras.append(extra or None)
            calls.append(NewEvent("tool_call", {"call_id": call_id, "name": call["name"], "input": dict(call["args"])}))
        if any(call_extras):
            saved["calls"] = call_extras
    rest = _rest(data, ("content", "tool_calls"))
    return [_with_meta(message, saved, rest, 1 + len(calls)), *calls]


def _rest(data: Data, mapped: Iterable[str]) -> Data:
    skip = {"type", *mapped}
    return {k: v for k, v in data.items() if k not in skip and v not in _EMPTY}


def _with_meta(event: NewEvent, saved: dict[str, Any], rest: Data, span: int) -> NewEvent:
    info = {**saved, "data": rest} if rest else dict(saved)
    if span > 1:
        info["span"] = span
    return NewEvent(event.kind, event.payload, meta={META_KEY: info}, event_id=event.event_id)


def _convert(part: Any) -> tuple[dict[str, Any], Any]:
    if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return text_part(part, {"type": "text"})
    return {"type": CONTENT_BLOCK, "block": part}, None


def _restore(block: dict[str, Any], rest: Any) -> Any:
    if block.get("type") == "text":
        return {**(rest or {"type": "text"}), "text": block["text"]}
    if block.get("type") == CONTENT_BLOCK:
        return block["block"]
    return {"type": "text", "text": str(block)}


# --------------------------------------------------------------------------- events → messages


def events_to_messages(events: Sequence[StoredEvent | NewEvent]) -> list[BaseMessage]:
    return _decode(list(events))


def _decode(events: Sequence[StoredEvent | NewEvent]) -> list[BaseMessage]:
    return messages_from_dict(_message_dicts(events))


def _message_dicts(events: Sequence[StoredEvent | NewEvent]) -> list[dict[str, Any]]:
    """The events as the dicts `messages_from_dict` takes, a message each."""
    dicts: list[dict[str, Any]] = []
    i = 0
    while i < len(events):
        event = events[i]
        info = event.meta.get(META_KEY)
        span = int(info.get("span", 1)) if isinstance(info, Mapping) else 1
        dicts.append(_message_dict(event, info, events[i + 1:i + span]))
        i += span
    return dicts


def _message_dict(event: StoredEvent | NewEvent, info: Any, calls: Sequence[StoredEvent | NewEvent]) -> dict[str, Any]:
    payload = event.payload
    if event.kind == "message" and len(payload["content"]) == 1 and payload["content"][0].get("type") == MESSAGE_BLOCK:
        whole = payload["content"][0]["message"]
        return {"type": whole["type"], "data": whole}
    info = info if isinstance(info, Mapping) else {}
    data: Data = dict(info.get("data") or {})
    if event.kind == "system":
        data["content"] = payload["text"]
        return {"type": info.get("type", "system"), "data": data}
    blocks = payload["output"] if event.kind == "tool_result" else payload["content"]
    if info.get("string_content") or isinstance(blocks, str):
        data["content"] = blocks if isinstance(blocks, str) else "".join(
            b["text"] for b in blocks if b.get("type") == "text")
    else:
        data["content"] = from_blocks(blocks, info.get("parts") or {}, _restore)
    if event.kind == "tool_result":
        data["tool_call_id"] = payload["call_id"]
        data.setdefault("status", "error" if payload.get("is_error") else "success")
        return {"type": info.get("type", "tool"), "data": data}
    default_type = "ai" if payload["role"] == "assistant" else "human"
    mtype = info.get("type", default_type)
    if _base_type(mtype) == "ai":
        extras = info.get("calls") or [None] * len(calls)
        data["tool_calls"] = [
            {"name": c.payload["name"], "args": c.payload["input"], "id": c.payload["call_id"], "type": "tool_call",
             **(extra or {})}
            for c, extra in zip(calls, extras)]
    return {"type": mtype, "data": data}


# --------------------------------------------------------------------------- the context view → messages


def view_to_messages(view: ContextView) -> list[BaseMessage]:
    """The context view as LangChain messages: what a LangChain agent sends its model.

    Entries the view keeps as they were come back exactly as they were added; a summary, a
    scratchpad or an in-context note becomes a human message; a cleared or rewritten tool
    result keeps its message, the marker as its content. A tool call whose result is not in
    the view, and a result whose call is not, are left out (providers reject them).
    """
    answered = {e.payload["call_id"] for e in view.items if e.kind == "tool_result"}
    called = {e.payload["call_id"] for e in view.items if e.kind == "tool_call"}
    messages: list[BaseMessage] = []
    run: list[NewEvent] = []
    for entry in view.items:
        note = note_text(entry)
        if note is not None:
            messages += _decode(_respan(run))
            run = []
            messages.append(HumanMessage(note))
        elif entry.kind in ("tool_call", "tool_result") and entry.payload["call_id"] not in (
                answered if entry.kind == "tool_call" else called):
            continue
        else:
            run.append(NewEvent(entry.kind, entry.payload, entry.event.meta))
    return messages + _decode(_respan(run))


def _respan(events: Sequence[NewEvent]) -> list[NewEvent]:
    """Events whose spans say what follows them: an AI message spans the tool calls still after it
    in the view; calls whose message is not in the view get an empty AI message of their own."""
    out: list[NewEvent] = []
    i = 0
    while i < len(events):
        event = events[i]
        info = event.meta.get(META_KEY)
        span = int(info.get("span", 1)) if isinstance(info, Mapping) else 1
        if event.kind == "tool_call":
            orphan_head = NewEvent("message", {"role": "assistant", "content": []}, {META_KEY: {"type": "ai"}})
            head, limit, start = orphan_head, None, i
        elif event.kind == "message" and span > 1:
            head, limit, start = event, span - 1, i + 1
        else:
            out.append(event)
            i += 1
            continue
        end = start
        while end < len(events) and events[end].kind == "tool_call" and (limit is None or end - start < limit):
            end += 1
        calls = events[start:end]
        saved = dict(head.meta[META_KEY])
        if saved.get("span", 1) != 1 + len(calls):
            saved["span"] = 1 + len(calls)
            if "calls" in saved:
                saved["calls"] = saved["calls"][:len(calls)]
            head = NewEvent(head.kind, head.payload, {**head.meta, META_KEY: saved})
        out += [head, *calls]
        i = end
    return out
