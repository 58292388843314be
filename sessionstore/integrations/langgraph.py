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
calls, as the repository's), driven by a `SessionStore` or an `AsyncSessionStore`.
"""

from __future__ import annotations

import os
import random
import threading
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..compaction.policy import CompactionPolicy
from ..errors import (CheckpointNotFound, ConcurrencyError, ConfigurationError, SessionErased, SessionExists,
                      SessionNotFound)
from ..events import NewEvent
from ..store import SessionStore
from ..summarizers.base import Summarizer
from ._codec import json_copy
from ._door import Database, Door
from ._langchain_messages import view_to_messages
from ._langgraph_state import (
    MESSAGES_CHANNEL,
    PREFIX,
    Packed,
    Saved,
    ThreadState,
    Writes,
    checkpoint_events,
    drop_event,
    extends,
    message_events,
    pack,
    pack_value,
    session_key,
    session_metadata,
    task_writes,
    thread_prefix,
    unpack,
    with_writes,
    write_index,
)
from ._worker import Worker

STRATEGIES: Final = ("keep_latest", "delete")
_CONFLICT_TRIES: Final = 50
_WORKERS: Final = 4  # threads the sync methods run on, each session on one of them
_WORKER: Final = "sessionstore-langgraph-"
_BATCH: Final = 16  # steps appended together at most
# How long a task's writes wait for the checkpoint LangGraph puts right after them (seconds), to
# be appended with it: one append and one commit for the two instead of two.
_LINGER: Final = 0.002


@dataclass(frozen=True, slots=True)
class _Call:
    """One store call a program asks its driver for (``events`` comes back as a list)."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Program = Generator[_Call, Any, Any]


@dataclass(frozen=True, slots=True)
class _Step:
    """What one `put` or `put_writes` appends to its thread namespace: `make(state)` the events,
    `done(state)` what the call returns once they are stored. A put's events are `decided` on the
    thread's state (and continue `parent`, which must be in it); `writes` are the same whatever it is."""

    thread_id: str
    ns: str
    make: Callable[[ThreadState], list[NewEvent]]
    done: Callable[[ThreadState], Any]
    parent: str | None = None
    decided: bool = False
    writes: Writes | None = None  # a put_writes' (its make makes nothing: `with_writes` places them)


@dataclass(slots=True)
class _Waiting:
    """A sync call's step waiting for its session's worker, and then its outcome."""

    step: _Step
    settled: bool = False
    result: Any = None
    error: BaseException | None = None


def _where(config: RunnableConfig | None) -> tuple[str, str]:
    """The thread and namespace a config names; a config without a thread is refused."""
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if thread_id is None or thread_id == "":
        raise ConfigurationError("a LangGraph config needs configurable.thread_id (the conversation to store): "
                                 f"got configurable keys {sorted(configurable)}")
    return str(thread_id), str(configurable.get("checkpoint_ns") or "")


def _all_but_latest(state: ThreadState) -> list[str]:
    newest = state.latest()
    return [cid for cid in state.checkpoints if newest is not None and cid != newest.id]


async def _answer(program: Program, ask: Callable[[_Call], Awaitable[Any]]) -> Any:
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


class SessionStoreSaver(BaseCheckpointSaver[str]):
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
        return session_key(*_where(config))

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

    def _run_step(self, step: _Step) -> Any:
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

        async def ask(call: _Call) -> Any:
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

        async def ask(call: _Call) -> Any:
            if call.name == "events":
                return await door.events(*call.args, **call.kwargs)
            return await door.call(call.name, *call.args, **call.kwargs)

        return await _answer(program, ask)

    # ------------------------------------------------------------------ thread states

    def _cached(self, key: str) -> ThreadState | None:
        with self._lock:
            state = self._states.get(key)
            if state is not None:
                self._states.move_to_end(key)
            return state

    def _remember(self, key: str, state: ThreadState) -> None:
        with self._lock:
            self._states[key] = state
            self._states.move_to_end(key)
            while len(self._states) > self._cache_threads:
                self._states.popitem(last=False)

    def _forget(self, key: str) -> None:
        with self._lock:
            self._states.pop(key, None)

    def _read(self, key: str, thread_id: str = "", ns: str = "") -> Program:
        """The thread namespace's state caught up with its session (None when there is no session).

        One query when nothing changed (the session's head); the events since otherwise.
        """
        try:
            info = yield _Call("session", (key,))
        except SessionNotFound:
            self._forget(key)
            return None
        if info.erased_at is not None:
            self._forget(key)
            raise SessionErased(key)
        state = self._cached(key)
        if state is None or info.head < state.version:  # new to us, or a database replaced under us
            names = (info.metadata or {}).get("langgraph") or {}
            state = ThreadState(str(names.get("thread_id", thread_id)), str(names.get("checkpoint_ns", ns)))
        state.exists = True
        if info.head > state.version:
            events = yield _Call("events", (key, state.version))
            with self._lock:
                state.fold(events)
        self._remember(key, state)
        return state

    def _known(self, key: str, thread_id: str, ns: str) -> Program:
        """The cached state (perhaps behind: a write against it is checked by the store), else a read one."""
        state = self._cached(key)
        if state is None:
            state = yield from self._read(key, thread_id, ns)
        return state if state is not None else ThreadState(thread_id, ns)

    def _append(self, key: str, state: ThreadState, batch: list[NewEvent], *, checked: bool) -> Program:
        """Append `batch` to the thread's session (creating it), after `state.version` when `checked`;
        the batch is folded into the state when it directly follows it."""
        if not state.exists:
            try:
                yield _Call("create_session", (key, session_metadata(state.thread_id, state.checkpoint_ns), batch),
                            {"strict": False})
                last = len(batch)
            except SessionExists:  # another writer created it meanwhile
                if checked:
                    raise ConcurrencyError(key, 0, -1) from None
                state.exists = True
                result = yield _Call("append", (key, batch), {"strict": False})
                last = result.version
        else:
            result = yield _Call("append", (key, batch, state.version if checked else None), {"strict": False})
            last = result.version
        with self._lock:
            if last - len(batch) == state.version:
                state.fold_at(zip(range(state.version + 1, last + 1), batch))
        self._remember(key, state)

    def _write(self, key: str, thread_id: str, ns: str, make: Callable[[ThreadState], list[NewEvent]], *,
               fresh: bool = False) -> Program:
        """Append what `make(state)` decides, after the state it decided on (nothing when it decides
        nothing); when another writer got there first, catch up and decide again."""
        state = (yield from self._read(key, thread_id, ns)) if fresh else (yield from self._known(key, thread_id, ns))
        for attempt in range(_CONFLICT_TRIES):
            state = state or ThreadState(thread_id, ns)
            with self._lock:
                batch = make(state)
            if not batch:
                return state
            try:
                yield from self._append(key, state, batch, checked=True)
                return state
            except ConcurrencyError:
                if attempt == _CONFLICT_TRIES - 1:
                    raise
                state = yield from self._read(key, thread_id, ns)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ programs

    def _put_step(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                  new_versions: ChannelVersions) -> _Step:
        thread_id, ns = _where(config)
        # A copy: LangGraph goes on changing the checkpoint's version maps in place after the put.
        stored = json_copy({k: v for k, v in checkpoint.items() if k != "channel_values"})
        values = checkpoint["channel_values"]
        entering = values.get(MESSAGES_CHANNEL)
        messages = entering if isinstance(entering, list) else None
        md = json_copy(get_serializable_checkpoint_metadata(config, metadata))
        parent = config["configurable"].get("checkpoint_id")
        versions = dict(new_versions)

        def decide(st: ThreadState) -> list[NewEvent]:
            before = st.checkpoints.get(parent) if parent else None
            bases = {channel: self._base(st, channel, values, before) for channel in versions}
            packed = {channel: pack_value(values[channel], bases[channel], self.serde.dumps_typed)
                      if channel in values else ["empty", None] for channel in versions}
            grown = bases.get(MESSAGES_CHANNEL)
            # a value that does not extend the parent's: which messages the parent held (some may be removed)
            rewritten = grown is None and MESSAGES_CHANNEL in versions and messages is not None
            held = st.message_keys(before, self.serde.loads_typed) if before is not None and rewritten else ()
            return checkpoint_events(checkpoint=stored, parent=parent, metadata=md, values=packed, messages=messages,
                                     changed=MESSAGES_CHANNEL in versions,
                                     recorded=len(grown[1]) if grown is not None else 0, state=st, held=held)

        def stored_as(state: ThreadState) -> RunnableConfig:
            for channel, version in versions.items():
                if isinstance(values.get(channel), list):  # a copy: the next delta is taken against this
                    state.decoded[channel] = (str(version), list(values[channel]))
            return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

        return _Step(thread_id, ns, decide, stored_as, parent=parent or None, decided=True)

    def _writes_step(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                     task_path: str) -> _Step | None:
        thread_id, ns = _where(config)
        if not writes:
            return None
        checkpoint_id = config["configurable"]["checkpoint_id"]
        packed = [(write_index(channel, i), channel, pack(self.serde.dumps_typed(value)))
                  for i, (channel, value) in enumerate(writes)]
        return _Step(thread_id, ns, lambda st: [], lambda st: None,
                     writes=task_writes(checkpoint_id, task_id, task_path, packed))

    def _steps(self, steps: Sequence[_Step]) -> Program:
        """Append what the steps (of one thread namespace; a put at most) decide, in one batch; what
        each returns. A put is decided on the thread's state, and decided again when another writer
        got there first; writes alone go after whatever is there (writes of parallel tasks do not
        conflict, and the fold keeps each once)."""
        thread_id, ns = steps[0].thread_id, steps[0].ns
        key = session_key(thread_id, ns)
        state = yield from self._known(key, thread_id, ns)
        for parent in (step.parent for step in steps if step.parent):
            if parent not in state.checkpoints:  # perhaps written since we read: read again
                state = (yield from self._read(key, thread_id, ns)) or ThreadState(thread_id, ns)
                if parent not in state.checkpoints:
                    raise CheckpointNotFound(key, parent)
        writes = [step.writes for step in steps if step.writes is not None]

        def batch(st: ThreadState) -> list[NewEvent]:
            return with_writes([e for step in steps for e in step.make(st)], writes)

        if any(step.decided for step in steps):
            state = yield from self._write(key, thread_id, ns, batch)
        else:
            yield from self._append(key, state, batch(state), checked=False)
        with self._lock:
            return [step.done(state) for step in steps]

    def _record(self, config: RunnableConfig, messages: Sequence[BaseMessage]) -> Program:
        """Record the messages not yet recorded (the checkpoint that holds them may not be stored yet)."""
        thread_id, ns = _where(config)
        key = session_key(thread_id, ns)
        yield from self._write(key, thread_id, ns, lambda st: message_events(messages, st.messages))
        return key

    def _compacted(self, config: RunnableConfig, messages: Sequence[BaseMessage], policy: CompactionPolicy | None,
                   summarizer: Summarizer | None) -> Program:
        key = yield from self._record(config, [m for m in messages if isinstance(m, BaseMessage)])
        yield _Call("maybe_compact", (key, policy, summarizer))
        view = yield _Call("context", (key,))
        return view_to_messages(view)

    @staticmethod
    def _base(state: ThreadState, channel: str, values: Mapping[str, Any], parent: Saved | None
              ) -> tuple[str, list[Any]] | None:
        """The parent's value of a channel (its version and value) when the new value extends it:
        a delta is stored, and only what it appended can be messages not yet recorded."""
        known = state.decoded.get(channel)
        if parent is None or known is None or channel not in values \
                or known[0] != str(parent.checkpoint["channel_versions"].get(channel)):
            return None
        return known if extends(values[channel], known[1]) else None

    def _get_tuple(self, config: RunnableConfig) -> Program:
        thread_id, ns = _where(config)
        state = yield from self._read(session_key(thread_id, ns), thread_id, ns)
        if state is None:
            return None
        wanted = get_checkpoint_id(config)
        with self._lock:
            saved = state.checkpoints.get(wanted) if wanted else state.latest()
            if saved is None:
                return None  # LangGraph's contract for a checkpoint the thread does not have
            found = (saved, state.values(saved, self.serde.loads_typed), state.pending_writes(saved.id))
        return self._tuple(state, *found)

    def _list(self, config: RunnableConfig | None, filter: Mapping[str, Any] | None,
              before: RunnableConfig | None, limit: int | None) -> Program:
        if config is None:
            keys = yield _Call("find_sessions", (PREFIX,))
            thread_id, ns = "", None
        else:
            thread_id, _ = _where(config)
            ns = config["configurable"].get("checkpoint_ns")
            keys = ([session_key(thread_id, str(ns))] if ns is not None
                    else (yield _Call("find_sessions", (thread_prefix(thread_id),))))
        wanted = get_checkpoint_id(config) if config is not None else None
        below = get_checkpoint_id(before) if before is not None else None
        found: list[CheckpointTuple] = []
        for key in keys:
            try:
                state = yield from self._read(key, thread_id, str(ns or ""))
            except SessionErased:
                continue
            if state is None:
                continue
            with self._lock:
                chosen = [(saved, state.values(saved, self.serde.loads_typed), state.pending_writes(saved.id))
                          for cid, saved in sorted(state.checkpoints.items(), reverse=True)
                          if (not wanted or cid == wanted) and (not below or cid < below)
                          and all(saved.metadata.get(k) == v for k, v in (filter or {}).items())]
            for item in chosen:
                if limit is not None and len(found) >= limit:
                    return found
                found.append(self._tuple(state, *item))
        return found

    def _delta_history(self, config: RunnableConfig, channels: Sequence[str]) -> Program:
        """`get_delta_channel_history` from the thread's state: one read, then the parent chain in memory."""
        found: dict[str, DeltaChannelHistory] = {channel: {"writes": []} for channel in channels}
        if not channels:
            return {}
        thread_id, ns = _where(config)
        state = yield from self._read(session_key(thread_id, ns), thread_id, ns)
        if state is None:
            return found
        loads = self.serde.loads_typed
        with self._lock:
            wanted = get_checkpoint_id(config)
            target = state.checkpoints.get(wanted) if wanted else state.latest()
            remaining = set(channels)
            current = target.parent if target is not None else None
            while current is not None and remaining:
                saved = state.checkpoints.get(current)
                if saved is None:
                    break
                seeded = {}
                for channel in remaining:
                    version = saved.checkpoint["channel_versions"].get(channel)
                    packed = state.blobs.get((channel, str(version))) if version is not None else None
                    if packed is not None and packed[0] != "empty":
                        seeded[channel] = state.value(channel, str(version), loads)
                for task_id, channel, packed in reversed(state.pending_writes(current)):
                    if channel in remaining:
                        found[channel]["writes"].append((task_id, channel, loads(unpack(packed))))
                for channel, value in seeded.items():
                    found[channel]["seed"] = value
                    remaining.discard(channel)
                current = saved.parent
        for entry in found.values():
            entry["writes"].reverse()
        return found

    def _thread_keys(self, thread_id: str) -> Program:
        return (yield _Call("find_sessions", (thread_prefix(str(thread_id)),)))

    def _delete_thread(self, thread_id: str) -> Program:
        for key in (yield from self._thread_keys(thread_id)):
            try:
                yield _Call("reset", (key,), {"reason": "delete_thread"})
            except SessionErased:
                pass  # nothing left to take back
            self._forget(key)

    def _drop(self, key: str, choose: Callable[[ThreadState], list[str]], reason: str) -> Program:
        """Record that the checkpoints `choose(state)` names leave the thread."""
        try:
            yield from self._write(key, "", "", lambda st: [drop_event(doomed, reason)] if (doomed := choose(st))
                                   else [], fresh=True)
        except SessionErased:
            pass  # nothing left to take out

    def _prune(self, thread_ids: Sequence[str], strategy: str) -> Program:
        if strategy not in STRATEGIES:
            raise ConfigurationError(f"prune strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        for thread_id in thread_ids:
            if strategy == "delete":
                yield from self._delete_thread(thread_id)
                continue
            for key in (yield from self._thread_keys(thread_id)):
                yield from self._drop(key, _all_but_latest, "prune keep_latest")

    def _delete_for_runs(self, run_ids: Sequence[str]) -> Program:
        runs = set(run_ids)
        if not runs:
            return
        for key in (yield _Call("find_sessions", (PREFIX,))):
            yield from self._drop(key, lambda state: [cid for cid, saved in state.checkpoints.items()
                                                      if saved.metadata.get("run_id") in runs], "delete_for_runs")

    def _copy_thread(self, source: str, target: str) -> Program:
        for key in (yield from self._thread_keys(source)):
            state = yield from self._read(key)
            if state is None:
                continue
            ns = state.checkpoint_ns
            yield _Call("fork", (key,), {"new_session_id": session_key(str(target), ns),
                                         "metadata": session_metadata(str(target), ns)})

    def _tuple(self, state: ThreadState, saved: Saved, values: Mapping[str, Any],
               writes: Sequence[tuple[str, str, Packed]]) -> CheckpointTuple:
        loads = self.serde.loads_typed
        # A copy: what LangGraph is given it changes in place (the version maps), never the saver's own.
        checkpoint: Any = {**json_copy(saved.checkpoint), "channel_values": dict(values)}
        return CheckpointTuple(
            config=state.config(saved.id), checkpoint=checkpoint,  # type: ignore[arg-type]
            metadata=json_copy(saved.metadata),
            parent_config=state.config(saved.parent) if saved.parent else None,  # type: ignore[arg-type]
            pending_writes=[(task_id, channel, loads(unpack(v))) for task_id, channel, v in writes])

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


__all__ = ["SessionStoreSaver"]
