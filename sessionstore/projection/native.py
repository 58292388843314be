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
LANGCHAIN_BLOCK: Final = "langchain_block"  # a block holding a whole LangChain content block
COMPACTION: Final = "compaction"  # Anthropic's block type and OpenAI's item type alike
# OpenAI's compaction item, under its current and its earlier name (older Codex rollouts).
_OPENAI_ITEM_TYPES: Final = frozenset({COMPACTION, "compaction_summary"})


def native_provider(block: Mapping[str, Any]) -> str | None:
    """``anthropic`` / ``openai`` when `block` is that provider's compaction artefact (as it
    came, or held whole by an integration's wrapper block), else None."""
    btype = block.get("type")
    if btype in _OPENAI_ITEM_TYPES:
        return _bare(block)
    inner = _wrapped(block)
    if inner is not None and inner.get("type") == COMPACTION:
        return "openai" if btype == ITEM_BLOCK else _bare(inner)
    return None


def _bare(block: Mapping[str, Any]) -> str:
    """Whose a bare ``compaction`` object is: Anthropic's block has a readable ``content`` (a
    string, or null when it failed) or a ``signature``; OpenAI's item (which Codex records as
    it came) has neither."""
    if block.get("type") == COMPACTION and ("content" in block or "signature" in block):
        return "anthropic"
    return "openai"


def _wrapped(block: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The whole object an integration's wrapper block holds (a Responses item, a LangChain block)."""
    inner = block.get("item") if block.get("type") == ITEM_BLOCK else (
        block.get("block") if block.get("type") == LANGCHAIN_BLOCK else None)
    return inner if isinstance(inner, Mapping) else None


def native_artefact(content: Any) -> dict[str, Any] | None:
    """The latest provider compaction in a message's content as ``{"provider", "items"}``
    (what `events.compaction(native=…)` takes), or None. The provider ignores everything
    before its latest artefact, so only that one counts."""
    if isinstance(content, str):
        return None
    for block in reversed(content):
        if type(block) is dict and block.get("type") == "text":  # the common block: never an artefact
            continue
        provider = native_provider(block) if isinstance(block, Mapping) else None
        if provider is not None:
            return {"provider": provider, "items": [dict(_wrapped(block) or block)]}
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
