"""A view item as provider content blocks, and which blocks each provider takes.

The renderer (`render`) builds its messages from these blocks and repairs them; the Responses
items (`responses`) and LangChain's messages (`integrations._langchain_messages`) say a note or
an image the same way, so the shapes live here, below all of them. Pure: an item in, blocks out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..events import content_blocks
from .view import ViewItem

# Block types the Messages API accepts in requests. Anything else (another provider's
# native blocks, e.g. OpenAI reasoning items) stays in the transcript but not in the request.
_ANTHROPIC_BLOCKS: Final = frozenset({
    "text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use", "tool_result",
    "compaction",
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "mcp_tool_use",
    "mcp_tool_result", "container_upload",
})
_ASSISTANT_ONLY: Final = frozenset({"thinking", "redacted_thinking", "server_tool_use", "mcp_tool_use",
                                    "compaction"})
_OPENAI_BLOCKS: Final = frozenset({"text", "image", "tool_use", "tool_result"})


@dataclass(frozen=True, slots=True)
class Target:
    """A provider the renderer writes for: which blocks it takes, and whose compactions it sends verbatim."""

    name: str
    accepts: Callable[[dict[str, Any], str], str | None]  # None = keep; else the reason it is dropped
    # The provider whose own compaction artefacts this target sends as they are (None: none).
    native: str | None = None


def _anthropic_accepts(block: dict[str, Any], role: str) -> str | None:
    btype = block.get("type")
    if btype not in _ANTHROPIC_BLOCKS:
        return f"{btype} blocks are not accepted by the Messages API"
    if btype in _ASSISTANT_ONLY and role != "assistant":
        return f"{btype} blocks are accepted only in assistant messages"
    if btype == "thinking" and not block.get("signature"):
        return "thinking blocks without a signature (recorded from another provider) are rejected"
    if btype == "text" and not str(block.get("text", "")).strip():
        return "empty text blocks are rejected"
    return None


def _openai_accepts(block: dict[str, Any], role: str) -> str | None:
    btype = block.get("type")
    if btype not in _OPENAI_BLOCKS:
        return f"{btype} blocks have no Chat Completions equivalent"
    if btype == "text" and not str(block.get("text", "")).strip():
        return "empty text blocks are left out"
    return None


ANTHROPIC: Final = Target("anthropic", _anthropic_accepts, native="anthropic")
OPENAI: Final = Target("openai", _openai_accepts)


def item_blocks(item: ViewItem) -> list[dict[str, Any]]:
    """The item as the blocks of one Anthropic-shaped message, before any repair."""
    payload = item.payload
    if item.kind == "message":
        return content_blocks(payload["content"])  # shared, never mutated: repairs build new dicts
    if item.kind == "tool_call":
        return [{"type": "tool_use", "id": payload["call_id"], "name": payload["name"], "input": payload["input"]}]
    if item.kind == "tool_result":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": payload["call_id"]}
        content = result_content(payload["output"])
        if content:
            block["content"] = content
        if payload.get("is_error"):
            block["is_error"] = True
        return [block]
    return [{"type": "text", "text": note_text(item) or ""}]  # summary, scratchpad, custom


def note_text(item: ViewItem) -> str | None:
    """What a provider is sent for a view item that is no conversation event — a summary, a
    scratchpad, an in-context custom event — as the text of a user message; None for the others."""
    if item.kind in ("summary", "scratchpad"):
        return str(item.payload["text"])
    if item.kind == "custom":
        data = item.payload.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return f"<{item.payload['type']}>\n{text}\n</{item.payload['type']}>"
    return None


def result_content(output: Any) -> str | list[dict[str, Any]]:
    """Tool result content as providers take it: a string, or text and image blocks."""
    if isinstance(output, str):
        return output
    blocks: list[dict[str, Any]] = []
    for block in output:
        btype = block.get("type")
        if btype == "text":
            if str(block.get("text", "")).strip():
                blocks.append({"type": "text", "text": block["text"]})
        elif btype == "image":
            blocks.append(dict(block))
        else:
            blocks.append({"type": "text", "text": json.dumps(block, ensure_ascii=False)})
    return blocks


def image_url(source: Mapping[str, Any]) -> str:
    """An image block's source as the URL OpenAI takes: its own, or a data URL of its bytes."""
    if source.get("type") == "url":
        return str(source.get("url", ""))
    return f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
