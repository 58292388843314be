"""A LangGraph checkpointer on sessionstore (``pip install 'sessionstore[langgraph]'``).

::

    saver = SessionStoreSaver("threads.db")                 # was SqliteSaver / PostgresSaver
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})

A thread namespace (``thread_id`` + ``checkpoint_ns``) is a session, ``langgraph:<thread>/<ns>``.
Each checkpoint is an event holding the values of the channels that changed (a value is stored
once per channel version), each `put_writes` an event, and the messages that enter the
``messages`` channel are recorded once each as ordinary message / tool_call / tool_result
events: ``sessionstore log``, ``search``, ``stats``, ``verify``, ``erase`` and the context view
work on a LangGraph thread as on any session (`_langgraph_state` has the layout).

Deleting is recorded, never done: `delete_thread` is a reset, `prune` and `delete_for_runs`
record which checkpoints leave the thread. LangGraph no longer sees them; the transcript
keeps every event (the store's promise: an audit trail that verifies, and any version can be
rebuilt — fork the session before the marker to get the checkpoints back). Destroying content
is `store.erase(session)` (``sessionstore erase``), after which the thread refuses reads and
writes with `SessionErased`.

Every method has its sync and async form; both run the same programs (generators of store
calls, as the repository's), driven by a `SessionStore` or an `AsyncSessionStore`. The programs
and the thread states they keep are in `_langgraph_programs`; this module drives them (worker
threads, batching a task's writes with the next checkpoint, the caller's loop) and holds
LangGraph's interface.
"""

from __future__ import annotations

import os
import random
import threading
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Self

from ..extras import require

require("langgraph.checkpoint.base", "langgraph", "sessionstore.integrations.langgraph")  # one line, not a traceback, without it
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..compaction.policy import CompactionPolicy
from ..store import SessionStore
from ..summarizers.base import Summarizer
from ._door import Database, Door
from ._langgraph_programs import STRATEGIES, Call, Program, Step, ThreadPrograms, where
from ._langgraph_state import ThreadState, session_key
from ._worker import Worker

_WORKERS: Final = 4  # threads the sync methods run on, each session on one of them
_WORKER: Final = "sessionstore-langgraph-"
_BATCH: Final = 16  # steps appended together at most
# How long a task's writes wait for the checkpoint LangGraph puts right after them (seconds), to
# be appended with it: one append and one commit for the two instead of two.
_LINGER: Final = 0.002


@dataclass(slots=True)
class _Waiting:
    """A sync call's step waiting for its session's worker, and then its outcome."""

    step: Step
    settled: bool = False
    result: Any = None
    error: BaseException | None = None


async def _answer(program: Program, ask: Callable[[Call], Awaitable[Any]]) -> Any:
    """Run `program`, answering each store call it yields with `ask` (a store error goes back into
    it): the one loop of both drivers, the blocking one run without an event loop."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            call = program.throw(error) if error is not None else program.send(result)
        except StopIteration as stop:
            return stop.value
        result, error = None, None
        try:
            result = await ask(call)
        except Exception as exc:  # handed to the program, which re-raises what it does not handle
            error = exc


def _without_loop(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """The result of a coroutine that never suspends (its awaits are blocking calls)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a blocking store call suspended")


class SessionStoreSaver(ThreadPrograms, BaseCheckpointSaver[str]):
    """LangGraph checkpoints as sessionstore events, on SQLite or PostgreSQL.

    `db` is a path, a URL, a `SessionStore` or an `AsyncSessionStore` (a path or URL opens an
    `AsyncSessionStore`, and a `SessionStore` for the sync methods, on first use). Several
    savers, in several processes, can share a database: each keeps the threads it read (the
    latest `cache_threads` of them) and reads only the events appended since; a write made
    against a stale view is refused by the store's `expected_version` and retried.
    """

    def __init__(self, db: Database = None, *, serde: SerializerProtocol | None = None,
                 cache_threads: int = 256) -> None:
        super().__init__(serde=serde)
        self._door = Door(db)
        self._states: OrderedDict[str, ThreadState] = OrderedDict()
        self._cache_threads = cache_threads
        self._lock = threading.RLock()
        self._arrived = threading.Condition(self._lock)  # a sync put or writes joined `_waiting`
        self._workers: list[Worker] | None = None  # started by the first sync call
        self._waiting: dict[str, deque[_Waiting]] = {}  # by session: sync puts and writes not yet appended
        self._pid = os.getpid()

    @property
    def store(self) -> Any:
        """The store this saver writes to (for `context()`, `transcript()`, `erase()` …)."""
        return self._door.store

    def __repr__(self) -> str:
        return f"SessionStoreSaver({self._door.store!r})"

    @staticmethod
    def session_id(config: RunnableConfig) -> str:
        """The store session of the thread namespace a config names."""
        return session_key(*where(config))

    # ------------------------------------------------------------------ drivers

    def _run(self, program: Program, serial: str | None = None) -> Any:
        """Drive a program with blocking store calls, on the saver's worker threads; a session's
        (`serial`) always on the same one, so its calls run in turn.

        LangGraph calls a checkpointer from short-lived threads, several at once (its executor).
        A session's writes run in turn, each finding the state the previous one left, so that
        none is refused as stale. A worker's connection stays warm: a short-lived thread would
        check one out of the pool and give it back (PostgreSQL pings it first), at each call.
        """
        if threading.current_thread().name.startswith(_WORKER):
            return self._drive(program)  # already on a worker (a program never waits for another)
        return self._worker(serial).call(self._drive, program)

    def _worker(self, serial: str | None) -> Worker:
        stripe = hash(serial) % _WORKERS if serial is not None else 0
        with self._lock:
            if self._pid != os.getpid():  # a forked child: its parent's threads and waiting calls are not its own
                self._workers, self._waiting, self._pid = None, {}, os.getpid()
            if self._workers is None:
                self._workers = [Worker(f"{_WORKER}{i}") for i in range(_WORKERS)]
            return self._workers[stripe]

    def _run_step(self, step: Step) -> Any:
        """Run a sync put's or put_writes' step on its session's worker, in one append with the steps
        that wait there with it (a put at most: each is decided on the state before the batch).
        LangGraph hands over a task's writes and the next checkpoint nearly at once, from two
        threads: appended together they cost one statement and one commit, and each call still
        returns only once what it wrote is stored. Writes that find no put waiting wait for one
        up to `_LINGER` (it comes a fraction of a millisecond later: a turn of `create_agent`
        went from seven appends to four; writes that no put follows are stored 2 ms later)."""
        if threading.current_thread().name.startswith(_WORKER):
            return self._drive(self._steps([step]))[0]
        key = session_key(step.thread_id, step.ns)
        worker = self._worker(key)
        mine = _Waiting(step)
        with self._lock:
            self._waiting.setdefault(key, deque()).append(mine)
            if step.decided:
                self._arrived.notify_all()
        worker.call(self._settle_waiting, key, mine)
        if mine.error is not None:
            raise mine.error
        return mine.result

    def _settle_waiting(self, key: str, mine: _Waiting) -> None:
        """On the session's worker: append the steps waiting for it, in order, until `mine` is stored
        (an earlier call may have taken it along with its own)."""
        while not mine.settled:
            with self._lock:
                # Writes alone: LangGraph puts the next checkpoint right after a task's writes.
                self._arrived.wait_for(lambda: any(w.step.decided for w in self._waiting[key]), timeout=_LINGER)
                waiting = self._waiting[key]
                batch = [waiting.popleft()]
                while waiting and len(batch) < _BATCH and not (waiting[0].step.decided
                                                               and any(w.step.decided for w in batch)):
                    batch.append(waiting.popleft())
                if not waiting:
                    del self._waiting[key]
            self._settle(batch)

    def _settle(self, batch: list[_Waiting]) -> None:
        """Append a batch of steps; when that fails, each on its own, so that one call's error is
        its own."""
        try:
            outcomes: list[tuple[Any, BaseException | None]] = [
                (result, None) for result in self._drive(self._steps([w.step for w in batch]))]
        except Exception as exc:
            if len(batch) > 1:
                for waiting in batch:
                    self._settle([waiting])
                return
            outcomes = [(None, exc)]
        except BaseException as exc:  # an interrupt: every caller hears of it
            outcomes = [(None, exc)] * len(batch)
        for waiting, (result, error) in zip(batch, outcomes):
            waiting.result, waiting.error, waiting.settled = result, error, True

    def _drive(self, program: Program, store: SessionStore | None = None) -> Any:
        """Drive a program with blocking store calls (on `store`, else the door's blocking one)."""
        store = store if store is not None else self._door.blocking

        async def ask(call: Call) -> Any:
            if call.name == "events":
                return list(store.events(*call.args, **call.kwargs))
            return getattr(store, call.name)(*call.args, **call.kwargs)

        return _without_loop(_answer(program, ask))

    async def _off_loop(self, program: Program, *, writes: bool = False) -> Any:
        """Drive a program for an async method on a thread of the store's (`Door.in_thread`): its
        store calls, and the serialising and state folding between them, never on the caller's
        loop (DESIGN.md §12), in one hop."""
        return await self._door.in_thread(lambda store: self._drive(program, store), writes=writes)

    async def _arun(self, program: Program) -> Any:
        """Drive a program with awaited store calls (a compaction, whose summariser may be async)."""
        door = self._door

        async def ask(call: Call) -> Any:
            if call.name == "events":
                return await door.events(*call.args, **call.kwargs)
            return await door.call(call.name, *call.args, **call.kwargs)

        return await _answer(program, ask)

    # ------------------------------------------------------------------ sync

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names (its ``checkpoint_id``, else the thread's latest); None when
        the thread has no such checkpoint. An erased thread raises `SessionErased`."""
        return self._run(self._get_tuple(config))

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of the config's thread (its namespace, or all when it names none),
        or of every thread with no config; `filter` matches metadata keys, `before` a checkpoint id."""
        return iter(self._run(self._list(config, filter, before, limit)))

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        """Record a checkpoint (and the messages that entered ``messages`` with it) in one append."""
        return self._run_step(self._put_step(config, checkpoint, metadata, new_versions))

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        """Record a task's pending writes for the checkpoint the config names."""
        step = self._writes_step(config, writes, task_id, task_path)
        if step is not None:
            self._run_step(step)

    def delete_thread(self, thread_id: str) -> None:
        """Empty the thread, every namespace: a reset recorded in each session (the transcript keeps
        every event; ``store.erase`` destroys them)."""
        self._run(self._delete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Take the checkpoints of these runs (metadata ``run_id``), and their writes, out of every thread.

        Recorded as a drop marker in each thread that had them: LangGraph no longer lists or
        loads them; the events stay in the transcript, so the audit trail still verifies and a
        fork of the session before the marker has them back. The messages those runs added stay
        in the conversation (they were said). It reads every LangGraph thread of the database.
        """
        self._run(self._delete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """The target thread as a fork of the source, each namespace: it sees every checkpoint, write
        and message of the source, nothing is copied, and both go on independently. A target that
        already exists is refused (`SessionExists`)."""
        self._run(self._copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: only each namespace's latest checkpoint (and its writes) stays visible to
        LangGraph, which is all that resuming needs; ``delete``: `delete_thread`.

        Recorded, not done, as `delete_for_runs`: the transcript keeps every checkpoint (forking
        the session before the marker recovers them), and the conversation keeps every message;
        ``store.erase`` is how content is destroyed. The latest checkpoint keeps every value it
        needs, wherever it was written, so nothing it depends on is lost.
        """
        self._run(self._prune(thread_ids, strategy))

    def compacted(self, config: RunnableConfig, messages: Sequence[BaseMessage], policy: CompactionPolicy | None = None,
                  summarizer: Summarizer | None = None) -> list[BaseMessage]:
        """What the model of the thread should be sent instead of `messages`: they are recorded (those
        not yet), the session compacted when past the policy's threshold, and its context view returned
        as LangChain messages (`SessionStoreCompaction` calls this before each model call)."""
        return self._run(self._compacted(config, messages, policy, summarizer))

    async def acompacted(self, config: RunnableConfig, messages: Sequence[BaseMessage],
                         policy: CompactionPolicy | None = None, summarizer: Summarizer | None = None
                         ) -> list[BaseMessage]:
        return await self._arun(self._compacted(config, messages, policy, summarizer))

    def get_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]
                                  ) -> Mapping[str, DeltaChannelHistory]:
        """LangGraph's walk of the parent chain for delta channels (writes, and the nearest stored value
        as the seed), from one read of the thread instead of a `get_tuple` per ancestor."""
        return self._run(self._delta_history(config, channels))

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]
                                         ) -> Mapping[str, DeltaChannelHistory]:
        return await self._off_loop(self._delta_history(config, channels))

    # ------------------------------------------------------------------ async

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._off_loop(self._get_tuple(config))

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None
                    ) -> AsyncIterator[CheckpointTuple]:
        for item in await self._off_loop(self._list(config, filter, before, limit)):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        step = self._put_step(config, checkpoint, metadata, new_versions)
        return (await self._off_loop(self._steps([step]), writes=True))[0]

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        step = self._writes_step(config, writes, task_id, task_path)
        if step is not None:
            await self._off_loop(self._steps([step]), writes=True)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._off_loop(self._delete_thread(thread_id), writes=True)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._off_loop(self._delete_for_runs(run_ids), writes=True)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._off_loop(self._copy_thread(source_thread_id, target_thread_id), writes=True)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._off_loop(self._prune(thread_ids, strategy), writes=True)

    # ------------------------------------------------------------------ versions and lifecycle

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Monotonic, with a random suffix so that two forks of a thread do not reuse a version."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    def close(self) -> None:
        """Release the connections and threads this saver opened (a store given to it stays open)."""
        self._stop_workers()
        self._door.close()

    async def aclose(self) -> None:
        self._stop_workers()
        await self._door.aclose()

    def _stop_workers(self) -> None:
        with self._lock:
            workers, self._workers = self._workers, None
        if workers is not None and self._pid == os.getpid():  # a forked child's copies have no threads
            for worker in workers:
                worker.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


__all__ = ["STRATEGIES", "SessionStoreSaver"]
