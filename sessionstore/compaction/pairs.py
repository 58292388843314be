"""Tool calls paired with their results, as they stand in the current view.

Every compaction level reasons about pairs (a read and what it returned, a search and its
hits), never about lone events, so that no decision can separate a call from its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..projection.view import ViewItem
from .tools import ToolCatalog, ToolUse


@dataclass(frozen=True, slots=True)
class ToolPair:
    call: ViewItem
    result: ViewItem | None
    use: ToolUse
    call_index: int
    result_index: int | None

    @property
    def versions(self) -> tuple[int, ...]:
        return (self.call.version,) if self.result is None else (self.call.version, self.result.version)

    @property
    def name(self) -> str:
        return str(self.call.payload["name"])


def tool_pairs(items: Sequence[ViewItem], catalog: ToolCatalog, *, origins: tuple[str, ...] = ("tail",)
               ) -> list[ToolPair]:
    """The view's calls (of the given origins) with their results, in call order."""
    results: dict[str, tuple[int, ViewItem]] = {}
    for index, item in enumerate(items):
        if item.kind == "tool_result" and item.origin in origins:
            results.setdefault(str(item.call_id), (index, item))
    pairs = []
    for index, item in enumerate(items):
        if item.kind != "tool_call" or item.origin not in origins:
            continue
        found = results.get(str(item.call_id))
        use = catalog.classify(str(item.payload["name"]), item.payload.get("input") or {})
        pairs.append(ToolPair(item, found[1] if found else None, use, index, found[0] if found else None))
    return pairs


def output_text(payload: dict[str, Any] | Any) -> str | None:
    """A tool result's output as plain text; None when it holds more than text (images, …)."""
    output = payload.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in output):
        return "\n".join(b.get("text", "") for b in output)
    return None


def protected_from(items: Sequence[ViewItem], protect_tokens: int) -> int:
    """Index from which the most recent `protect_tokens` of tool output begin (OpenCode's window).

    Walking back over tool results, the results inside the budget are recent enough to be
    kept verbatim; everything before the returned index is old.
    """
    total = 0
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.kind == "tool_result" and item.origin == "tail":
            total += item.tokens
            if total > protect_tokens:
                return index + 1
    return 0


def fresh_versions(items: Sequence[ViewItem]) -> set[int]:
    """The tool results the model has not seen yet, with their calls: those after its last
    reply (assistant message or tool call). The next request shows them for the first time,
    so no level may outline, clear or drop them — an agent that gets an outline of the file
    it just asked for reads it again, in a loop; only truncation (head and tail) may cut them."""
    last = next((i for i in range(len(items) - 1, -1, -1)
                 if items[i].kind in ("message", "tool_call") and items[i].role == "assistant"), -1)
    fresh = {str(item.call_id) for item in items[last + 1:] if item.kind == "tool_result"}
    return {item.version for item in items if item.kind in ("tool_call", "tool_result") and str(item.call_id) in fresh}
