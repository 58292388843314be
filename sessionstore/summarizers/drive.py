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
from typing import Final, TypeVar

from .base import AsyncSummarizer, Summarizer, SummaryBatch, SummaryRequest

T = TypeVar("T")
Steps = Generator[SummaryBatch, list["str | Exception"], T]

PARALLEL_WORKERS: Final = 4


def _call(summarizer: Summarizer, request: SummaryRequest) -> str | Exception:
    try:
        return summarizer.summarize(request)
    except Exception as exc:  # handed to the planning, which decides (slice further, or raise)
        return exc


def answer(batch: SummaryBatch, summarizer: Summarizer) -> list[str | Exception]:
    """Each request's summary or exception, in order; several requests run concurrently."""
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


async def aanswer(batch: SummaryBatch, summarizer: Summarizer | AsyncSummarizer) -> list[str | Exception]:
    """`answer` on an event loop: the batch's requests are awaited together, `PARALLEL_WORKERS`
    at a time as in `drive` (a sliced history can ask for dozens at once; providers rate-limit)."""
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
