"""SessionStoreSaver, a LangGraph checkpointer, on a real SQLite file and a real PostgreSQL server:
LangGraph's own conformance suite (every base and extended capability), through the async and
the sync methods; real graphs; the thread as a sessionstore conversation; bad input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

import sessionstore as ss
from sessionstore.integrations.langgraph import SessionStoreSaver

run = asyncio.run


class SyncDriven(SessionStoreSaver):
    """The conformance suite calls the async methods; these run the sync ones (on a worker thread),
    so that the same suite checks both."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None
                    ) -> AsyncIterator[CheckpointTuple]:
        for item in await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before,
                                                                   limit=limit))):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


@pytest.mark.parametrize("methods", ["async", "sync"])
def test_langgraph_conformance_every_capability(store_url: str, methods: str) -> None:
    """langgraph-checkpoint-conformance: the 5 base and the 3 extended capabilities, all 81 tests."""
    @checkpointer_test(name=f"SessionStoreSaver-{methods}")
    async def factory() -> AsyncIterator[SessionStoreSaver]:
        # async: a URL (the saver opens an AsyncSessionStore); sync: a SessionStore given to it
        saver = SessionStoreSaver(store_url) if methods == "async" else SyncDriven(ss.SessionStore(store_url))
        yield saver
        if methods == "async":
            await saver.aclose()
        else:
            saver.store.close()

    report = run(validate(factory))
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}
    failures = {cap: r.failures for cap, r in report.results.items() if not r.passed}
    assert not failures, failures
    assert all(r.detected for r in report.results.values())
    assert sum(r.tests_passed for r in report.results.values()) == 81
