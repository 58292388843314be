"""The drivers of planning generators: the only place where summariser calls are made.

Compaction planning (`compaction.pipeline.compaction_steps`) yields `SummaryBatch`es and is
sent back, in order, each request's summary or the exception it raised. `drive` answers them
with blocking calls (a batch of several in a small thread pool: a model call waits on the
network, so threads overlap them), `adrive` on an event loop (`asyncio.gather`), both at most
`PARALLEL_WORKERS` requests at a time. Planning is written once; these two functions are the
whole difference between the sync and async paths.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar

from .base import AsyncSummarizer, Summarizer, SummaryBatch, SummaryRequest
from .window import ModelWindow

T = TypeVar("T")
Steps = Generator[SummaryBatch, list["str | Exception"], T]

PARALLEL_WORKERS: Final = 4


def _call(summarizer: Summarizer, request: SummaryRequest) -> str | Exception:
    try:
        return summarizer.summarize(request)
    except Exception as exc:  # handed to the planning, which decides (slice further, or raise)
        return exc


def _declared(summarizer: Any) -> ModelWindow | None:
    tokens = getattr(summarizer, "context_window", None)
    return ModelWindow(tokens, "declared") if isinstance(tokens, int) and tokens > 0 else None


def window_of(summarizer: Any) -> ModelWindow | None:
    """What `summarizer` knows of its model's context window, after asking its server where it
    can (`learn_window`: once, remembered); else the `context_window` it states; else None."""
    learn = getattr(summarizer, "learn_window", None)
    return learn() if learn is not None else _declared(summarizer)


async def awindow_of(summarizer: Any) -> ModelWindow | None:
    """`window_of` for asyncio: the summariser's `alearn_window`, else `learn_window` on a thread."""
    learn = getattr(summarizer, "alearn_window", None)
    if learn is not None:
        return await learn()  # type: ignore[no-any-return]
    if getattr(summarizer, "learn_window", None) is not None:
        return await asyncio.to_thread(window_of, summarizer)
    return _declared(summarizer)


def answer(batch: SummaryBatch, summarizer: Summarizer) -> list[Any]:
    """Each request's summary or exception, in order; several requests run concurrently (or,
    for a batch that asks the window, ``[ModelWindow | None]``)."""
    if batch.asks_window:
        return [window_of(summarizer)]
    if len(batch.requests) == 1:
        return [_call(summarizer, batch.requests[0])]
    with ThreadPoolExecutor(max_workers=min(PARALLEL_WORKERS, len(batch.requests))) as pool:
        return list(pool.map(lambda request: _call(summarizer, request), batch.requests))


def drive(steps: Steps[T], summarizer: Summarizer) -> T:
    """Run a planning generator to its end with blocking summariser calls; return its result."""
    try:
        batch = next(steps)
        while True:
            batch = steps.send(answer(batch, summarizer))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def _acall(summarizer: Summarizer | AsyncSummarizer, request: SummaryRequest) -> str | Exception:
    try:
        asummarize = getattr(summarizer, "asummarize", None)
        if asummarize is not None:
            return await asummarize(request)  # type: ignore[no-any-return]
        # No async twin (the offline summariser's CPU work, or a blocking client): on a worker
        # thread, never on the caller's loop (DESIGN.md §12).
        return await asyncio.to_thread(summarizer.summarize, request)  # type: ignore[union-attr]
    except Exception as exc:
        return exc


async def aanswer(batch: SummaryBatch, summarizer: Summarizer | AsyncSummarizer) -> list[Any]:
    """`answer` on an event loop: the batch's requests are awaited together, `PARALLEL_WORKERS`
    at a time as in `drive` (a sliced history can ask for dozens at once; providers rate-limit)."""
    if batch.asks_window:
        return [await awindow_of(summarizer)]
    slots = asyncio.Semaphore(PARALLEL_WORKERS)

    async def one(request: SummaryRequest) -> str | Exception:
        async with slots:
            return await _acall(summarizer, request)

    return list(await asyncio.gather(*(one(request) for request in batch.requests)))


async def adrive(steps: Steps[T], summarizer: Summarizer | AsyncSummarizer) -> T:
    """`drive` for asyncio: `await summarizer.asummarize(...)` when it has one, batches gathered."""
    try:
        batch = next(steps)
        while True:
            batch = steps.send(await aanswer(batch, summarizer))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
