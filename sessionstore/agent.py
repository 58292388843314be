"""What an agent loop needs around compaction: a tool the model can call, and overflow recovery.

The model often knows better than a threshold when a phase of work is done; giving it a
`compact_context` tool (trigger ``tool``) lets it say so. And when a provider answers "prompt
is too long" anyway (our estimate was low, a tool returned a giant output), the right
reaction is one forced compaction and one retry — not a crash, and not a loop.

These sit above the store and the compaction planner (they call both); ``compaction/`` stays
pure planning. `awith_overflow_retry` is the same for an `AsyncSessionStore` and an async client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from .compaction.policy import CompactionPolicy
from .errors import CompactionFailed
from .summarizers.base import Summarizer, is_context_overflow

if TYPE_CHECKING:
    from .aio import AsyncSessionStore
    from .projection import ContextView
    from .store import SessionStore

T = TypeVar("T")

COMPACT_TOOL_NAME: Final = "compact_context"

COMPACT_TOOL: Final[dict[str, Any]] = {
    "name": COMPACT_TOOL_NAME,
    "description": (
        "Summarise the earlier part of this conversation to free context space. Call it when a phase of work "
        "is finished, or when the conversation has grown long with output you no longer need verbatim. The "
        "most recent messages, your todo list and the files you read last are kept; nothing is lost from the "
        "stored transcript."),
    "input_schema": {
        "type": "object",
        "properties": {
            "instructions": {
                "type": "string",
                "description": "What the summary must focus on or keep (optional).",
            },
        },
        "additionalProperties": False,
    },
}


def compaction_tool() -> dict[str, Any]:
    """The Anthropic tool definition to pass in ``tools=[…]``."""
    return dict(COMPACT_TOOL)


def handle_compaction_tool(store: SessionStore, session_id: str, tool_input: Mapping[str, Any] | None = None, *,
                           policy: CompactionPolicy | None = None, summarizer: Summarizer | None = None) -> str:
    """Run the compaction the model asked for; returns the text for its tool_result.

    Call it after appending the model's tool_call and before appending the result: the
    pending call stays in the kept tail, so the result you append next still pairs with it.
    A compaction that cannot fit is told to the model (its call must be answered anyway).
    """
    instructions = (tool_input or {}).get("instructions")
    try:
        result = store.compact(session_id, policy=policy, summarizer=summarizer, trigger="tool",
                               instructions=instructions if isinstance(instructions, str) and instructions else None)
    except CompactionFailed as failed:
        return f"Compaction failed, nothing was changed: {failed.reason}."
    if result is None or result.compaction is None:
        return "Nothing to compact yet: the conversation is already short."
    return (f"Context compacted: {result.tokens_before} → {result.tokens_after} tokens. The summary and the "
            f"recent messages are in your context; continue the task.")


def with_overflow_retry(store: SessionStore, session_id: str, call: Callable[[ContextView], T], *,
                        policy: CompactionPolicy | None = None, summarizer: Summarizer | None = None) -> T:
    """``call(view)``; on a provider's context-overflow error, compact (trigger ``overflow``) and retry once.

    ``reply = with_overflow_retry(store, sid, lambda v: client.messages.create(model=…, max_tokens=…,
    **v.to_anthropic()))``. A second overflow is raised to the caller: never a loop; so is
    `CompactionFailed` when no compaction can fit the window.
    """
    try:
        return call(store.context(session_id))
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        store.compact(session_id, policy=policy, summarizer=summarizer, trigger="overflow")
        return call(store.context(session_id))


async def awith_overflow_retry(store: AsyncSessionStore, session_id: str,
                               call: Callable[[ContextView], Awaitable[T]], *, policy: CompactionPolicy | None = None,
                               summarizer: Summarizer | None = None) -> T:
    """`with_overflow_retry` for asyncio: ``await call(view)``; on a context overflow, compact and retry once.

    ``reply = await awith_overflow_retry(store, sid, lambda v: client.messages.create(model=…,
    max_tokens=…, **v.to_anthropic()))`` with an `AsyncSessionStore` and ``AsyncAnthropic``.
    """
    try:
        return await call(await store.context(session_id))
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        await store.compact(session_id, policy=policy, summarizer=summarizer, trigger="overflow")
        return await call(await store.context(session_id))
