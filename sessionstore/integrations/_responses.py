"""OpenAI Responses API input items ↔ events: one item, one event, exactly reversible.

The Agents SDK stores Responses input items and compares what it reads back with what it
wrote (it fingerprints items to rewind a retried turn), so an item must come back equal,
field for field. Each item becomes exactly one event, which keeps ``pop_item`` and
``get_items(limit=n)`` a matter of counting events:

* a message (``{"role", "content"}``, ``type: "message"`` or none) → a ``message`` event;
  ``assistant`` stays assistant, ``user``/``system``/``developer`` become user messages
  (they stay in place in the conversation; the original role is remembered). Text parts
  become text blocks, images image blocks, anything else a block holding the part whole;
* ``function_call`` → ``tool_call`` (``arguments`` parsed into ``input``);
* ``function_call_output`` → ``tool_result``;
* anything else (reasoning, hosted and local tool calls, MCP items, compaction items,
  references, …) → a message holding the item whole in one ``openai_item`` block
  (assistant for what the model produces, user for what the caller sends back).

What the event's own fields cannot say (item ids, statuses, part types, annotations, the raw
``arguments`` text) goes into ``meta["openai"]``. Every mapping is checked by mapping the
event back: an item that would not come back equal is kept whole instead, so round-trips are
exact for any input, not only for the shapes anticipated here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .. import events as ev
from ..errors import InvalidEvent
from ..events import NewEvent
from ..importers.rules import data_url_image, parse_arguments
from ..projection import ContextView
from ..projection.native import ITEM_BLOCK
from ..projection.responses import META_KEY, PART_BLOCK, event_to_item, text_type, view_items
from ._codec import exact, text_part, to_blocks, usable_call_id

# Items the model produces (rendered as assistant turns); everything else unknown is the caller's.
_MODEL_ITEMS: Final = frozenset({
    "reasoning", "compaction", "mcp_list_tools", "mcp_approval_request", "program", "tool_search_call",
    "additional_tools",
})
_TEXT_PARTS: Final = frozenset({"input_text", "output_text"})

Item = dict[str, Any]


def as_item(item: Any) -> Item:
    """An input item as a plain dict (the SDK passes TypedDicts; pydantic models are dumped)."""
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dict(dump(exclude_unset=True, mode="json"))
    raise InvalidEvent(f"a Responses input item must be a dict, got {type(item).__name__}")


# --------------------------------------------------------------------------- item → event


def item_to_event(item: Any) -> NewEvent:
    """The event that stores `item`; `event_to_item` of it gives `item` back, equal field for field."""
    item = as_item(item)
    [event] = exact(item, _mapped, _restored, lambda whole: [_whole(whole)])
    return event


def _restored(events: list[NewEvent]) -> Item:
    [event] = events
    return event_to_item(event.kind, event.payload, event.meta)


def _whole(item: Item) -> NewEvent:
    itype = item.get("type")
    model_side = item.get("role") == "assistant" or itype in _MODEL_ITEMS or (
        isinstance(itype, str) and itype.endswith("_call"))
    role = "assistant" if model_side else "user"
    return NewEvent("message", {"role": role, "content": [{"type": ITEM_BLOCK, "item": item}]})


def _mapped(item: Item) -> list[NewEvent]:
    itype = item.get("type")
    if itype in (None, "message") and isinstance(item.get("role"), str) and isinstance(item.get("content"),
                                                                                       (str, list)):
        return [_message(item)]
    if itype == "function_call":
        return [_function_call(item)]
    if itype == "function_call_output":
        return [_function_call_output(item)]
    raise ValueError(f"a {itype} item is kept whole")


def _message(item: Item) -> NewEvent:
    role = item["role"]
    ours = "assistant" if role == "assistant" else "user"
    rest = {k: v for k, v in item.items() if k != "content"}
    if role == ours:
        del rest["role"]
    saved: dict[str, Any] = {}
    content = item["content"]
    if isinstance(content, str):
        blocks = [ev.text_block(content)] if content else []
        saved["string_content"] = True
    else:
        blocks, parts = _parts_to_blocks(content, text_type(ours))
        if parts:
            saved["parts"] = parts
    if rest:
        saved["item"] = rest
    return NewEvent("message", {"role": ours, "content": blocks}, meta={META_KEY: saved} if saved else {})


def _function_call(item: Item) -> NewEvent:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
    if not (usable_call_id(call_id) and isinstance(name, str) and name and isinstance(arguments, str)):
        raise ValueError("not a well-formed function call")
    input_, _ = parse_arguments(arguments)
    saved: dict[str, Any] = {}
    rest = {k: v for k, v in item.items() if k not in ("call_id", "name", "arguments")}
    if rest:
        saved["item"] = rest
    if json.dumps(input_) != arguments:
        saved["arguments"] = arguments
    return NewEvent("tool_call", {"call_id": call_id, "name": name, "input": input_},
                    meta={META_KEY: saved} if saved else {})


def _function_call_output(item: Item) -> NewEvent:
    call_id, output = item.get("call_id"), item.get("output")
    if not usable_call_id(call_id) or not isinstance(output, (str, list)):
        raise ValueError("not a well-formed function call output")
    saved: dict[str, Any] = {}
    if isinstance(output, list):
        blocks, parts = _parts_to_blocks(output, "input_text")
        if parts:
            saved["parts"] = parts
        result: str | list[dict[str, Any]] = blocks
    else:
        result = output
    rest = {k: v for k, v in item.items() if k not in ("call_id", "output")}
    if rest:
        saved["item"] = rest
    return NewEvent("tool_result", {"call_id": call_id, "output": result, "is_error": False},
                    meta={META_KEY: saved} if saved else {})


def _parts_to_blocks(parts: list[Any], text_type: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    def convert(part: Any) -> tuple[dict[str, Any], Any]:
        if not isinstance(part, Mapping):
            raise TypeError("a content part is not an object")
        ptype = part.get("type")
        if ptype in _TEXT_PARTS and isinstance(part.get("text"), str):
            return text_part(part, {"type": text_type})
        if ptype == "input_image" and isinstance(part.get("image_url"), str):
            return data_url_image(part["image_url"]), {k: v for k, v in part.items() if k != "image_url"}
        return {"type": PART_BLOCK, "part": dict(part)}, None

    return to_blocks(parts, convert)


# --------------------------------------------------------------------------- the context view


def view_to_items(view: ContextView) -> list[Item]:
    """The context view as Responses input items, exactly as they were added: what an Agents SDK
    app reads back (`projection.responses.view_items`; `view.to_responses()` is the valid
    request an app that calls the API itself sends)."""
    return view_items(view.items, view.system)
