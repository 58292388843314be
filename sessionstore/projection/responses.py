"""The view as OpenAI Responses API input items (`ContextView.to_responses()`), and the item an
event stores.

Each event becomes one item: a message its message (text parts, images; a part kept whole
comes back whole), a `tool_call` a ``function_call``, a `tool_result` a
``function_call_output``, a message holding one item whole (``openai_item``: reasoning, hosted
tools, a compaction) that item. What an event's fields cannot say (item ids, statuses, part
types, the raw ``arguments`` text) is in ``meta["openai"]``, where the Responses mapping of the
integrations (`integrations._responses`) saved it: an item added through them comes back equal,
field for field. Events from anywhere else come back as the plain items they mean.

OpenAI's own compaction comes back as the items it returned, byte for byte; a summary (another
provider's compaction included, as its portable text), a scratchpad or an in-context custom
event becomes a user message (`blocks.note_text`). Pure: the view's items in, items out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .native import ITEM_BLOCK
from .blocks import image_url, note_text
from .texts import SYNTHETIC_RESULT_TEXT
from .view import ViewItem

META_KEY: Final = "openai"  # where an event keeps what its item's other fields said
PART_BLOCK: Final = "openai_part"  # a block holding a whole content part

Item = dict[str, Any]


def render_responses(items: Sequence[ViewItem], system: str | None = None) -> list[Item]:
    """A valid Responses ``input``: the view's items (`view_items`), with an output for every
    call that has none (the API rejects a call without one; the Chat and Messages renderers
    do the same)."""
    exact = view_items(items, system)
    answered = {item["call_id"] for item in exact if item.get("type") == "function_call_output"}
    rendered: list[Item] = []
    for item in exact:
        rendered.append(item)
        if item.get("type") == "function_call" and item["call_id"] not in answered:
            rendered.append({"type": "function_call_output", "call_id": item["call_id"], "output": SYNTHETIC_RESULT_TEXT})
            answered.add(item["call_id"])
    return rendered


def view_items(items: Sequence[ViewItem], system: str | None = None) -> list[Item]:
    """The view's items as Responses input items, exactly as they were added: what the Agents
    SDK's session reads back. A tool output whose call is not in the view is left out (the API
    rejects it); a call without its output is left as it is (the SDK drops such calls itself)."""
    out: list[Item] = [{"role": "system", "content": system}] if system else []
    calls: set[str] = set()
    for entry in items:
        native = entry.payload.get("native") if entry.kind == "summary" else None
        note = note_text(entry)
        if native and native["provider"] == "openai":  # OpenAI's own compaction: its items, byte for byte
            out.extend(dict(item) for item in native["items"])
        elif note is not None:
            out.append({"role": "user", "content": note})
        elif entry.kind == "tool_result" and entry.payload["call_id"] not in calls:
            continue
        else:
            item = event_to_item(entry.kind, entry.payload, entry.event.meta,
                                 exact=not (entry.cleared or entry.rewritten))
            if entry.kind == "tool_call":
                calls.add(entry.payload["call_id"])
            out.append(item)
    return out


def event_to_item(kind: str, payload: Mapping[str, Any], meta: Mapping[str, Any], *, exact: bool = True) -> Item:
    """The Responses item an event stores.

    `exact=False` is for a payload that a compaction changed (an output cleared, an input
    rewritten): the item is rebuilt from what the payload says now, not from the raw text
    the original item carried.
    """
    saved: Mapping[str, Any] = meta.get(META_KEY) or {}
    if kind == "message":
        content = payload["content"]
        if len(content) == 1 and content[0].get("type") == ITEM_BLOCK:
            return dict(content[0]["item"])
        role = payload["role"]
        if saved.get("string_content"):
            text = "".join(b["text"] for b in content if b.get("type") == "text")
            return {"role": role, "content": text, **saved.get("item", {})}
        parts = _blocks_to_parts(content, saved.get("parts") or {}, text_type(role))
        return {"role": role, "content": parts, **saved.get("item", {})}
    if kind == "tool_call":
        raw = saved.get("arguments") if exact else None
        arguments = raw if isinstance(raw, str) else json.dumps(payload["input"])
        return {**_with_type(saved, "function_call"), "call_id": payload["call_id"], "name": payload["name"],
                "arguments": arguments}
    if kind == "tool_result":
        output = payload["output"]
        if not isinstance(output, str):
            output = _blocks_to_parts(output, saved.get("parts") or {}, "input_text")
        return {**_with_type(saved, "function_call_output"), "call_id": payload["call_id"], "output": output}
    raise ValueError(f"a {kind} event holds no Responses item")


def text_type(role: str) -> str:
    """The type of a text part: the model writes ``output_text``, everyone else ``input_text``."""
    return "output_text" if role == "assistant" else "input_text"


def _with_type(saved: Mapping[str, Any], default_type: str) -> dict[str, Any]:
    rest = dict(saved.get("item") or {})
    rest.setdefault("type", default_type)
    return rest


def _blocks_to_parts(blocks: list[Any], saved: Mapping[str, Any], default_text: str) -> list[dict[str, Any]]:
    """Content blocks as parts; `saved` holds, by block index, what each part said besides its block."""
    parts = []
    for index, block in enumerate(blocks):
        rest = saved.get(str(index))
        btype = block.get("type")
        if btype == "text":
            parts.append({**(rest or {"type": default_text}), "text": block["text"]})
        elif btype == "image":
            parts.append({**(rest or {"type": "input_image"}), "image_url": image_url(block["source"])})
        elif btype == PART_BLOCK:
            parts.append(dict(block["part"]))
        else:  # a block another door wrote (a foreign provider's block): as text the model can read
            parts.append({"type": default_text, "text": json.dumps(block, ensure_ascii=False)})
    return parts
