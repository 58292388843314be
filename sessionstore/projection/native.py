"""Providers' own compaction artefacts: how to recognise them in recorded content.

Anthropic's compaction is a ``compaction`` content block of an assistant turn (readable
``content``, opaque ``encrypted_content`` / ``signature``); OpenAI's is a ``compaction``
Responses item (opaque ``encrypted_content``), which the integrations store whole in an
``openai_item`` block. Either may arrive inside an ordinary reply. The store records each
as a `compaction` event carrying the artefact (``payload.native``), and the view renders it
from there: the copy inside the reply's message is left out of the view, never out of the
transcript. Pure functions over blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

ITEM_BLOCK: Final = "openai_item"  # a block holding a whole Responses item
COMPACTION: Final = "compaction"  # Anthropic's block type and OpenAI's item type alike


def native_provider(block: Mapping[str, Any]) -> str | None:
    """``anthropic`` / ``openai`` when `block` is that provider's compaction artefact, else None."""
    btype = block.get("type")
    if btype == COMPACTION:
        return "anthropic"
    if btype == ITEM_BLOCK:
        item = block.get("item")
        if isinstance(item, Mapping) and item.get("type") == COMPACTION:
            return "openai"
    return None


def native_artefact(content: Any) -> dict[str, Any] | None:
    """The latest provider compaction in a message's content as ``{"provider", "items"}``
    (what `events.compaction(native=…)` takes), or None. The provider ignores everything
    before its latest artefact, so only that one counts."""
    if isinstance(content, str):
        return None
    for block in reversed(content):
        provider = native_provider(block) if isinstance(block, Mapping) else None
        if provider == "anthropic":
            return {"provider": provider, "items": [dict(block)]}
        if provider == "openai":
            return {"provider": provider, "items": [dict(block["item"])]}
    return None


def readable_text(native: Mapping[str, Any]) -> str | None:
    """The artefact's own readable summary (Anthropic's ``content``), if it has one."""
    for item in native.get("items") or ():
        if item.get("type") == COMPACTION and isinstance(item.get("content"), str) and item["content"].strip():
            return str(item["content"])
    return None


def without_native(content: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The content with its compaction artefacts left out (the compaction event renders them)."""
    return [block for block in content if native_provider(block) is None]
