"""Google ADK events ↔ store events, exactly reversible (pure: JSON data in, JSON data out).

An ADK event is an envelope (author, invocation id, actions and state delta, usage, grounding,
timestamps, …) around content parts. It becomes a group of events:

* a ``custom`` event ``adk:event`` (not in the model's context) holding the envelope as data,
  its ``meta["adk"]["span"]`` saying how many events follow it;
* then, in part order, the content: consecutive plain parts as one ``message`` event (text
  parts as text blocks, anything else — images, thoughts, code — as an ``adk_part`` block
  holding the part whole), each ``function_call`` as a ``tool_call`` and each
  ``function_response`` as a ``tool_result``, so that compaction sees ADK's tool use.

What a block or a tool event cannot say (thought signatures, a response's shape, a missing
call id) is kept in that event's ``meta["adk"]``. Every group is checked by mapping it back;
an event that would not come back equal is stored whole in its envelope.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from .. import events as ev
from ..events import NewEvent, StoredEvent
from ._codec import exact, from_blocks, to_blocks, usable_call_id

META_KEY: Final = "adk"
EVENT_TYPE: Final = "adk:event"
PART_BLOCK: Final = "adk_part"

Data = dict[str, Any]
AnyEvent = StoredEvent | NewEvent


def is_envelope(event: AnyEvent) -> bool:
    return event.kind == "custom" and event.payload.get("type") == EVENT_TYPE


def json_data(event: Any) -> Data:
    """An ADK `Event` as JSON data (bytes as base64, sets as lists), as ADK's own database stores it."""
    return dict(json.loads(event.model_dump_json(exclude_none=True)))


def encode(data: Data) -> list[NewEvent]:
    """The events that store the ADK event `data` (its JSON-mode dump, ``exclude_none``)."""
    return exact(data, _encode, _decode_one, _whole)


def _decode_one(events: list[NewEvent]) -> Data:
    [data] = decode(events)
    return data


def _created(data: Data) -> datetime | None:
    stamp = data.get("timestamp")
    return datetime.fromtimestamp(stamp, UTC) if isinstance(stamp, (int, float)) else None


def _whole(data: Data) -> list[NewEvent]:
    return [NewEvent("custom", {"type": EVENT_TYPE, "data": data, "in_context": False},
                     meta={META_KEY: {"whole": True}}, created_at=_created(data))]


def _encode(data: Data) -> list[NewEvent]:
    envelope = {k: v for k, v in data.items() if k != "content"}
    info: dict[str, Any] = {}
    events: list[NewEvent] = []
    created = _created(data)
    content = data.get("content")
    if content is not None:
        envelope["content"] = {k: v for k, v in content.items() if k != "parts"}
        if "parts" in content:
            info["parts"] = True
            role = "assistant" if content.get("role") == "model" else "user"
            events = _part_events(content["parts"], role, created)
    info["span"] = len(events)
    head = NewEvent("custom", {"type": EVENT_TYPE, "data": envelope, "in_context": False}, meta={META_KEY: info},
                    created_at=created)
    return [head, *events]


def _part_events(parts: Sequence[Data], role: str, created: datetime | None) -> list[NewEvent]:
    events: list[NewEvent] = []
    plain: list[Data] = []

    def flush() -> None:
        if plain:
            blocks, saved = to_blocks(plain, _to_block)
            events.append(NewEvent("message", {"role": role, "content": blocks},
                                   meta={META_KEY: {"parts": saved}} if saved else {}, created_at=created))
            plain.clear()

    for part in parts:
        if "function_call" in part and _callable(part["function_call"]):
            flush()
            events.append(_call_event(part, created))
        elif "function_response" in part and isinstance(part["function_response"], Mapping):
            flush()
            events.append(_response_event(part, created))
        else:
            plain.append(part)
    flush()
    return events


def _callable(call: Any) -> bool:
    return isinstance(call, Mapping) and isinstance(call.get("name"), str) and bool(call["name"]) and isinstance(
        call.get("args", {}), dict)


def _call_id(given: Any, saved: dict[str, Any]) -> str:
    if usable_call_id(given):
        return str(given)
    saved["id"] = given if given is not None else "absent"
    return f"adk-call-{ev.new_event_id()}"


def _call_event(part: Data, created: datetime | None) -> NewEvent:
    call = part["function_call"]
    saved: dict[str, Any] = {}
    call_id = _call_id(call.get("id"), saved)
    if "args" not in call:
        saved["args"] = "absent"
    rest_call = {k: v for k, v in call.items() if k not in ("id", "name", "args")}
    rest_part = {k: v for k, v in part.items() if k != "function_call"}
    if rest_call:
        saved["call"] = rest_call
    if rest_part:
        saved["part"] = rest_part
    return NewEvent("tool_call", {"call_id": call_id, "name": call["name"], "input": dict(call.get("args") or {})},
                    meta={META_KEY: saved} if saved else {}, created_at=created)


def _response_event(part: Data, created: datetime | None) -> NewEvent:
    response = part["function_response"]
    saved: dict[str, Any] = {}
    call_id = _call_id(response.get("id"), saved)
    body = response.get("response")
    if isinstance(body, Mapping) and set(body) == {"result"} and isinstance(body["result"], str):
        output, saved["form"] = body["result"], "result"
    elif "response" in response:
        output, saved["form"] = json.dumps(body, ensure_ascii=False), "json"
    else:
        output, saved["form"] = "", "absent"
    is_error = isinstance(body, Mapping) and set(body) == {"error"}
    rest_response = {k: v for k, v in response.items() if k not in ("id", "response")}
    rest_part = {k: v for k, v in part.items() if k != "function_response"}
    if rest_response:
        saved["response"] = rest_response
    if rest_part:
        saved["part"] = rest_part
    return NewEvent("tool_result", {"call_id": call_id, "output": output, "is_error": is_error},
                    meta={META_KEY: saved}, created_at=created)


def _to_block(part: Data) -> tuple[dict[str, Any], Any]:
    if isinstance(part.get("text"), str) and not part.get("thought"):
        rest = {k: v for k, v in part.items() if k != "text"}
        return ev.text_block(part["text"]), rest or None
    return {"type": PART_BLOCK, "part": part}, None


def _from_block(block: dict[str, Any], rest: Any) -> Data:
    if block.get("type") == "text":
        return {"text": block["text"], **(rest or {})}
    if block.get("type") == PART_BLOCK:
        return dict(block["part"])
    return {"text": json.dumps(block, ensure_ascii=False)}  # a block another door wrote


# --------------------------------------------------------------------------- events → ADK event data


def decode(events: Sequence[AnyEvent]) -> list[Data]:
    """The ADK events (as JSON data) that `events` store, in order; events of no group are skipped."""
    out: list[Data] = []
    i = 0
    while i < len(events):
        event = events[i]
        i += 1
        if not is_envelope(event):
            continue
        info: Mapping[str, Any] = event.meta.get(META_KEY) or {}
        data = dict(event.payload["data"])
        if info.get("whole"):
            out.append(data)
            continue
        span = int(info.get("span", 0))
        group, i = events[i:i + span], i + span
        if info.get("parts"):
            parts = [part for member in group for part in _parts_of(member)]
            data["content"] = {**data.get("content", {}), "parts": parts}
        out.append(data)
    return out


def _parts_of(event: AnyEvent) -> list[Data]:
    saved: Mapping[str, Any] = event.meta.get(META_KEY) or {}
    payload = event.payload
    if event.kind == "message":
        return from_blocks(payload["content"], saved.get("parts") or {}, _from_block)
    if event.kind == "tool_call":
        call: Data = {"name": payload["name"], **saved.get("call", {})}
        if saved.get("args") != "absent":
            call["args"] = payload["input"]
        _restore_id(call, payload["call_id"], saved)
        return [{"function_call": call, **saved.get("part", {})}]
    if event.kind == "tool_result":
        response: Data = dict(saved.get("response", {}))
        form, output = saved.get("form"), payload["output"]
        if form == "result":
            response["response"] = {"result": output}
        elif form == "json":
            response["response"] = json.loads(output)
        _restore_id(response, payload["call_id"], saved)
        return [{"function_response": response, **saved.get("part", {})}]
    return []


def _restore_id(target: Data, call_id: str, saved: Mapping[str, Any]) -> None:
    original = saved.get("id")
    if original is None:
        target["id"] = call_id
    elif original != "absent":
        target["id"] = original
