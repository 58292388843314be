"""The LangGraph saver's programs: each checkpointer operation as a generator of store calls, over
the thread states it keeps (`ThreadState`, folded from the thread's events by `_langgraph_state`).

A program yields `Call`s (``session``, ``events``, ``append``, ``create_session``, ``fork``,
``reset``, ``find_sessions``, ``maybe_compact``, ``context``) and is sent their results: it
decides, it never waits. The saver (langgraph.py) drives the same programs with blocking calls on
its worker threads or awaited ones on the caller's loop, and batches the steps of parallel calls;
this module is the what, that one the how and when. `ThreadPrograms` is the saver's base: the
programs read `serde` (LangGraph's, which `with_allowlist` replaces on a copy) and the cache of
thread states from the saver itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
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
from ..summarizers.base import Summarizer
from ._codec import json_copy
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

STRATEGIES: Final = ("keep_latest", "delete")
_CONFLICT_TRIES: Final = 50


@dataclass(frozen=True, slots=True)
class Call:
    """One store call a program asks its driver for (``events`` comes back as a list)."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Program = Generator[Call, Any, Any]


@dataclass(frozen=True, slots=True)
class Step:
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


def where(config: RunnableConfig | None) -> tuple[str, str]:
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


class ThreadPrograms:
    """The programs of `SessionStoreSaver`, and the cache of thread states they keep (its base class).

    What they need of the saver: its serde, its lock (held while a state is folded or read, as the
    saver's worker threads share the states) and the cache (the latest `_cache_threads` states).
    """

    serde: SerializerProtocol
    _lock: threading.RLock
    _states: OrderedDict[str, ThreadState]
    _cache_threads: int

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
            info = yield Call("session", (key,))
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
            events = yield Call("events", (key, state.version))
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
                yield Call("create_session", (key, session_metadata(state.thread_id, state.checkpoint_ns), batch),
                            {"strict": False})
                last = len(batch)
            except SessionExists:  # another writer created it meanwhile
                if checked:
                    raise ConcurrencyError(key, 0, -1) from None
                state.exists = True
                result = yield Call("append", (key, batch), {"strict": False})
                last = result.version
        else:
            result = yield Call("append", (key, batch, state.version if checked else None), {"strict": False})
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
                  new_versions: ChannelVersions) -> Step:
        thread_id, ns = where(config)
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

        return Step(thread_id, ns, decide, stored_as, parent=parent or None, decided=True)

    def _writes_step(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                     task_path: str) -> Step | None:
        thread_id, ns = where(config)
        if not writes:
            return None
        checkpoint_id = config["configurable"]["checkpoint_id"]
        packed = [(write_index(channel, i), channel, pack(self.serde.dumps_typed(value)))
                  for i, (channel, value) in enumerate(writes)]
        return Step(thread_id, ns, lambda st: [], lambda st: None,
                     writes=task_writes(checkpoint_id, task_id, task_path, packed))

    def _steps(self, steps: Sequence[Step]) -> Program:
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
        thread_id, ns = where(config)
        key = session_key(thread_id, ns)
        yield from self._write(key, thread_id, ns, lambda st: message_events(messages, st.messages))
        return key

    def _compacted(self, config: RunnableConfig, messages: Sequence[BaseMessage], policy: CompactionPolicy | None,
                   summarizer: Summarizer | None) -> Program:
        key = yield from self._record(config, [m for m in messages if isinstance(m, BaseMessage)])
        yield Call("maybe_compact", (key, policy, summarizer))
        view = yield Call("context", (key,))
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
        thread_id, ns = where(config)
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
            keys = yield Call("find_sessions", (PREFIX,))
            thread_id, ns = "", None
        else:
            thread_id, _ = where(config)
            ns = config["configurable"].get("checkpoint_ns")
            keys = ([session_key(thread_id, str(ns))] if ns is not None
                    else (yield Call("find_sessions", (thread_prefix(thread_id),))))
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
        thread_id, ns = where(config)
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
        return (yield Call("find_sessions", (thread_prefix(str(thread_id)),)))

    def _delete_thread(self, thread_id: str) -> Program:
        for key in (yield from self._thread_keys(thread_id)):
            try:
                yield Call("reset", (key,), {"reason": "delete_thread"})
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
        for key in (yield Call("find_sessions", (PREFIX,))):
            yield from self._drop(key, lambda state: [cid for cid, saved in state.checkpoints.items()
                                                      if saved.metadata.get("run_id") in runs], "delete_for_runs")

    def _copy_thread(self, source: str, target: str) -> Program:
        for key in (yield from self._thread_keys(source)):
            state = yield from self._read(key)
            if state is None:
                continue
            ns = state.checkpoint_ns
            yield Call("fork", (key,), {"new_session_id": session_key(str(target), ns),
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
