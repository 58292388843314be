"""Invariant checks shared by the projection and compaction tests (DESIGN §5), and by the async
door's (the loop stays free)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sessionstore.projection import ContextView
from sessionstore.testing import validate_request


def assert_valid_view(view: ContextView) -> None:
    """The view is a request the Messages API accepts (strict: alternation, pairing, blocks), and
    its OpenAI rendering pairs every tool call with its tool messages."""
    request: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 1024, **view.to_anthropic()}
    if view.messages:
        validate_request(request, strict=True)
        assert view.messages[0]["role"] == "user"
    for a, b in zip(view.messages, view.messages[1:]):
        assert a["role"] != b["role"]
    assert_valid_openai(view.to_openai())


def assert_valid_openai(messages: list[dict[str, Any]]) -> None:
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in pending, f"tool message without its call: {message}"
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, f"tool calls without results before a {message['role']} message: {pending}"
        if message["role"] == "assistant":
            pending = {call["id"] for call in message.get("tool_calls", [])}
    assert not pending


def user_texts(view: ContextView) -> list[str]:
    return [b["text"] for m in view.messages if m["role"] == "user" for b in m["content"] if b["type"] == "text"]


@asynccontextmanager
async def loop_ticks(every: float) -> AsyncIterator[list[int]]:
    """`ticks[0]`: how often a coroutine asking to wake every `every` seconds woke while the block
    ran. It only counts while the loop is free: a call that held the loop would stop it."""
    ticks = [0]

    async def tick() -> None:
        while True:
            ticks[0] += 1
            await asyncio.sleep(every)

    ticker = asyncio.create_task(tick())
    try:
        yield ticks
    finally:
        ticker.cancel()
