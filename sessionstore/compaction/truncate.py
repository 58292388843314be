"""The last resort: oversized single items truncated *in the view*, head and tail kept. Pure.

When the levels, a summary held to its budget and the smallest kept tail still leave the
view over the threshold, what is left is a few items too big for the window: a pasted log,
a giant tool output, a file read or written whole. Each becomes, in the view, its head and
its tail around a marker that names the version where the full text stays — a `rewrite`
event, so the transcript keeps every character and any past view can still be rebuilt.

`fit_text` cuts text that has no structure to keep; a summary is held to its budget section
by section instead (`summarizers.fit`), never cut in its middle.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from ..projection.fold import REWRITTEN_INPUT_EXTRA_TOKENS, rewritten
from ..projection.view import ViewItem
from ..summarizers.prompts import truncate
from ..events import recall_hint
from ..tokens import TokenCounter, event_text
from .rewrite import RewriteDecision

# No item is cut below this: its marker alone takes ~30 tokens, and a head and tail of a few
# lines still tell the model what the item was.
MIN_ITEM_TOKENS: Final = 64
TRUNCATABLE: Final = frozenset({"message", "tool_call", "tool_result"})
LANGUAGE: Final = "text"  # the `language` of a truncation's rewrite event (skeletons name theirs)
_ATTEMPTS: Final = 12


def fit_text(text: str, max_tokens: int, counter: TokenCounter, *, note: str = "",
             tokens: int | None = None) -> str:
    """`text` in at most `max_tokens` tokens by `counter`: its head and tail around a marker
    (with `note`). Only the marker is left when even a few characters would not fit."""
    count = counter.count(text) if tokens is None else tokens
    if count <= max_tokens:
        return text
    chars = int(len(text) * max_tokens / max(1, count) * 0.9)
    for _ in range(_ATTEMPTS):
        if chars < 2:
            break
        fitted = truncate(text, chars, note=note)
        got = counter.count(fitted)
        if got <= max_tokens:
            return fitted
        chars = min(chars - 1, int(chars * max_tokens / max(1, got) * 0.9))
    return f"[… {len(text):,} characters truncated{note} …]"


def note_for(version: int) -> str:
    return f" in the context view; the full text is version {version} of the transcript ({recall_hint(version)})"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def truncation(item: ViewItem, max_tokens: int, counter: TokenCounter) -> RewriteDecision | None:
    """The rewrite that leaves `item` (as the view shows it now) in about `max_tokens` tokens."""
    note = note_for(item.version)
    if item.kind in ("message", "tool_result"):
        text, _ = event_text(item.kind, item.payload)
        content = fit_text(text, max_tokens, counter, note=note, tokens=item.tokens)
        field = "content" if item.kind == "message" else "output"
        return RewriteDecision(item.version, field, content, text.count("\n") + 1, LANGUAGE,
                               saved_chars=len(text) - len(content))
    tool_input = item.payload.get("input")
    if item.kind != "tool_call" or not isinstance(tool_input, dict) or not tool_input:
        return None
    # The biggest argument (a file's content, a patch) is the one cut; the others stay as they are.
    key = max(tool_input, key=lambda k: len(_json(tool_input[k])))
    value = tool_input[key]
    text = value if isinstance(value, str) else _json(value)
    content = fit_text(text, max(1, max_tokens - REWRITTEN_INPUT_EXTRA_TOKENS), counter, note=note)
    return RewriteDecision(item.version, "input", content, text.count("\n") + 1, LANGUAGE, input_key=key,
                           saved_chars=len(text) - len(content))


def plan_truncations(items: Sequence[ViewItem], cap: int, counter: TokenCounter) -> list[RewriteDecision]:
    """Truncations of every item of the view bigger than `cap` tokens (summary and scratchpad
    excepted: they have budgets of their own)."""
    decisions = []
    for item in items:
        if item.kind in TRUNCATABLE and item.tokens > cap:
            decision = truncation(item, cap, counter)
            if decision is not None:
                decisions.append(decision)
    return decisions


def truncated_item(item: ViewItem, max_tokens: int, counter: TokenCounter) -> ViewItem:
    """`item` as its truncation would show it: for a summary request, where a single item
    bigger than the summariser's window must still fit (nothing is recorded)."""
    decision = truncation(item, max_tokens, counter)
    if decision is None:
        return item
    payload = rewritten(item.kind, item.payload, {"field": decision.field, "content": decision.content,
                                                  "input_key": decision.input_key})
    return item if payload is None else replace(item, payload=payload, tokens=min(item.tokens, max_tokens))
