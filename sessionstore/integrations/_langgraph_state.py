"""A LangGraph thread as sessionstore events, and back: pure functions and one fold.

A thread namespace (``thread_id`` + ``checkpoint_ns``) is one session. Its events are:

* ``custom`` ``langgraph:checkpoint`` — one per `put`: the checkpoint's id, its parent's, its
  metadata and the channels it wrote; in its meta the checkpoint without its channel values
  (JSON, as PostgresSaver keeps it) and the values of the channels whose version changed
  (``new_versions``), each serialised by the saver's serde. A value is stored once per channel
  version; a checkpoint reads the others from the checkpoints that wrote them. A list that
  extends the channel's previous value (the messages) is stored as what it appends
  (`pack_value`), so a put costs what the step added, not the whole conversation again.
* ``custom`` ``langgraph:writes`` — a `put_writes` stored without a checkpoint: the pending
  writes of a task (their values in its meta). Writes appended in the same batch as a `put`
  (LangGraph hands over a task's writes and the next checkpoint nearly at once) ride in the
  checkpoint's event instead (``data.writes``, their values in meta ``langgraph_writes``): one
  event, and one row, fewer a step.
* ``custom`` ``langgraph:drop`` — checkpoints taken out of the thread (`prune`,
  `delete_for_runs`): the events stay in the transcript.
* a reset (the store's own, `_history.is_reset`) — `delete_thread`: nothing before it counts;
  or, with the reason ``langgraph branch``, a replay that left recorded messages behind, or
  ``langgraph rewrite``, messages taken out (``RemoveMessage``) with others put before those
  that stay (LangChain's SummarizationMiddleware): the view starts again with the channel's
  messages, recorded again after it.
* a retraction (the store's own, `_history.is_retraction`, reason ``RemoveMessage``) — messages
  taken out of the channel, the others left in their order: the view no longer shows their
  events; the transcript keeps them.
* ``message`` / ``tool_call`` / ``tool_result`` / ``system`` — the messages that entered the
  ``messages`` channel, once each, in order (`_langchain_messages`), recorded in the same
  batch as the checkpoint that first held them (or before the model call that first sees
  them, by `SessionStoreCompaction`), so that the store's tools see a conversation.

`ThreadState` folds these events, in version order, into what `get_tuple` and `list` read.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final
from urllib.parse import quote

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import WRITES_IDX_MAP, writes_sort_key

from .. import events as ev
from ..events import NewEvent, StoredEvent
from ..repository.core import reset_marker, retraction_marker
from ._history import is_reset, is_retraction
from ._langchain_messages import message_to_events

PREFIX: Final = "langgraph:"
CHECKPOINT: Final = "langgraph:checkpoint"
WRITES: Final = "langgraph:writes"
DROP: Final = "langgraph:drop"
INTEGRATION: Final = "langgraph"
BRANCH: Final = "langgraph branch"  # the reason of a reset that starts the view of a branch
REWRITE: Final = "langgraph rewrite"  # … of one that starts it again after messages were taken out
REMOVED: Final = "RemoveMessage"  # the reason of a retraction of messages taken out of the channel
MESSAGE_META: Final = "langgraph_message"  # on a recorded message's first event: the message's key
# Serialised values (the saver's serde, base64) go in meta: they are bytes for LangGraph, not text
# for a model, so the token counter does not read them (the chain and erasure cover meta too).
VALUES_META: Final = "langgraph_values"
WRITES_META: Final = "langgraph_writes"  # on a checkpoint's event: the values of the writes it carries
CHECKPOINT_META: Final = "langgraph_checkpoint"  # the checkpoint (ids, versions): bookkeeping, not text
MESSAGES_CHANNEL: Final = "messages"
_PART_LIMIT: Final = 120  # a part longer than this is hashed: two parts and the prefix stay within MAX_ID

Typed = tuple[str, bytes]
DELTA: Final = "delta"  # a packed list value: ["delta", base version, type, base64 of what was appended]
Packed = list[Any]  # [type, base64 text] of a serialised value; ["empty", None] for a version with no value


# --------------------------------------------------------------------------- keys


def _part(text: str) -> str:
    quoted = quote(text, safe="")
    return quoted if len(quoted) <= _PART_LIMIT else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def thread_prefix(thread_id: str) -> str:
    """The prefix every session of a thread starts with (quoting makes it unambiguous)."""
    return PREFIX + _part(thread_id) + "/"


@functools.lru_cache(maxsize=4096)  # asked about 17 times a turn, for the same few threads
def session_key(thread_id: str, checkpoint_ns: str) -> str:
    """The session of one namespace of a thread: ``langgraph:<thread>/<namespace>``."""
    return thread_prefix(thread_id) + _part(checkpoint_ns)


def session_metadata(thread_id: str, checkpoint_ns: str) -> dict[str, Any]:
    return {"integration": INTEGRATION, "langgraph": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}}


# --------------------------------------------------------------------------- values


def pack(typed: Typed) -> Packed:
    return [typed[0], base64.b64encode(typed[1]).decode("ascii")]


def unpack(packed: Sequence[Any]) -> Typed:
    return str(packed[0]), base64.b64decode(packed[1])


def extends(value: Any, base: Any) -> bool:
    """Whether list `value` begins with list `base`. Elements are compared by identity, then
    equality (as a list comparison does): LangGraph's reducers build new lists and messages
    rather than change those a checkpoint holds."""
    return isinstance(value, list) and isinstance(base, list) and value[:len(base)] == base


def pack_value(value: Any, base: tuple[str, list[Any]] | None, dumps: Callable[[Any], Typed]) -> Packed:
    """A channel's new value, packed: what it appends to `base` (the channel's value at its previous
    version, given when the value `extends` it) — a thread's messages grow by a few a step, and are
    not written whole again — else the whole value."""
    if base is not None:
        return [DELTA, base[0], *pack(dumps(value[len(base[1]):]))]
    return pack(dumps(value))


def message_key(message: BaseMessage) -> str:
    """What makes a message the same message: its id (``add_messages`` gives every message one),
    else a hash of its content."""
    if message.id:
        return str(message.id)
    dump = json.dumps(message.model_dump(), sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(dump.encode()).hexdigest()


# --------------------------------------------------------------------------- events


def message_events(messages: Sequence[BaseMessage], live: Iterable[str], *,
                   branch_after: int | None = None, reason: str = BRANCH) -> list[NewEvent]:
    """The events of the messages not yet recorded, in order; each message's first event names it
    (meta ``langgraph_message``), so that a thread's fold knows what is recorded.

    `branch_after` (the session's head) when the checkpoint continues an earlier one than the
    latest (a replay, time travel): if the branch no longer holds some recorded messages, the
    view starts afresh (a reset, which the fold reads as a branch, not a deletion) with the
    branch's messages recorded again, so that the view follows the branch; the transcript
    keeps the abandoned one. (A retraction would not do: the view drops a tool call and its
    results by call id, and a replayed tool answers the same call again.)
    """
    present = [message_key(message) for message in messages]
    batch: list[NewEvent] = []
    if branch_after is not None and not set(live) <= set(present):
        batch.append(reset_marker(branch_after, reason))
        live = ()
    seen = set(live)
    for key, message in zip(present, messages):
        if key in seen:
            continue
        seen.add(key)
        first, *rest = message_to_events(message)
        batch += [replace(first, meta={**first.meta, MESSAGE_META: key}), *rest]
    return batch


def removal_events(messages: Sequence[BaseMessage], held: Sequence[str], state: ThreadState) -> list[NewEvent]:
    """The events of a channel value that does not extend its parent's, which `held` those messages
    (keys): the recorded ones it no longer holds (``RemoveMessage``) are taken out of the view —
    retracted, when those that stay keep their order and come before the new ones, else the view
    starts again (a reset, reason ``langgraph rewrite``) — then the new messages are recorded.
    (A message recorded before any checkpoint held it, by `SessionStoreCompaction`, is not gone.)"""
    present = [message_key(message) for message in messages]
    kept = set(present)
    gone = [key for key in held if key not in kept and key in state.messages]
    if not gone:
        return message_events(messages, state.messages)
    staying = [key for key in state.messages if key in kept]
    old = [n for n, key in enumerate(present) if key in state.messages]
    new = [n for n, key in enumerate(present) if key not in state.messages]
    in_order = [present[n] for n in old] == staying and (not new or not old or new[0] > old[-1])
    if not (in_order and all(state.messages[key].droppable for key in gone)):
        return message_events(messages, state.messages, branch_after=state.version, reason=REWRITE)
    versions = sorted(v for key in gone for v in state.messages[key].versions)
    retraction = retraction_marker(versions, REMOVED, {"messages": gone})
    return [retraction, *message_events(messages, staying)]


def checkpoint_events(*, checkpoint: Mapping[str, Any], parent: str | None, metadata: Mapping[str, Any],
                      values: Mapping[str, Packed], messages: Sequence[Any] | None, changed: bool,
                      recorded: int, state: ThreadState, held: Sequence[str] = ()) -> list[NewEvent]:
    """The batch one `put` appends: the messages not yet recorded, then the checkpoint. `messages` is
    the channel's value, `changed` whether its version moved, `recorded` how many of its first
    values are the parent checkpoint's (recorded with it or before: only the rest are looked at,
    so a put costs what the step added); `held`, when the value does not extend the parent's, the
    keys of the parent's messages, some of which may have been removed; a checkpoint that
    continues an earlier one than the latest starts a branch, which the recorded messages follow."""
    data = {"id": checkpoint["id"], "parent": parent, "metadata": dict(metadata), "channels": sorted(values)}
    latest = state.latest()
    branch = parent is not None and latest is not None and parent != latest.id
    recorded_events: list[NewEvent] = []
    if messages is not None and (changed or branch):
        entering = [m for m in (messages if branch else messages[recorded:]) if isinstance(m, BaseMessage)]
        if branch:
            recorded_events = message_events(entering, state.messages, branch_after=state.version)
        elif held:  # not what the parent held and more: perhaps some were removed
            recorded_events = removal_events(entering, held, state)
        else:
            recorded_events = message_events(entering, state.messages)
    return [*recorded_events, ev.custom(CHECKPOINT, data, meta={CHECKPOINT_META: dict(checkpoint),
                                                                VALUES_META: dict(values)})]


@dataclass(frozen=True, slots=True)
class Writes:
    """One `put_writes`: what identifies it (``checkpoint``, ``task_id``, ``task_path``, and each
    write's index and channel) and the writes' packed values."""

    data: dict[str, Any]
    values: list[Packed]


def task_writes(checkpoint_id: str, task_id: str, task_path: str, writes: Sequence[tuple[int, str, Packed]]
                ) -> Writes:
    return Writes({"checkpoint": checkpoint_id, "task_id": task_id, "task_path": task_path,
                   "writes": [[idx, channel] for idx, channel, _ in writes]}, [packed for _, _, packed in writes])


def with_writes(batch: list[NewEvent], writes: Sequence[Writes]) -> list[NewEvent]:
    """A batch with the writes appended along with it: carried by the batch's checkpoint event (a
    put's events end with it), else one ``langgraph:writes`` event each."""
    if not writes:
        return batch
    last = batch[-1] if batch else None
    if last is None or last.kind != "custom" or last.payload.get("type") != CHECKPOINT:
        return [*batch, *(ev.custom(WRITES, w.data, meta={VALUES_META: w.values}) for w in writes)]
    carried = ev.custom(CHECKPOINT, {**last.payload["data"], "writes": [w.data for w in writes]},
                        meta={**last.meta, WRITES_META: [w.values for w in writes]}, event_id=last.event_id)
    return [*batch[:-1], carried]


def drop_event(checkpoint_ids: Iterable[str], reason: str) -> NewEvent:
    return ev.custom(DROP, {"checkpoints": sorted(checkpoint_ids), "reason": reason})


def write_index(channel: str, idx: int) -> int:
    """LangGraph's index of a write: special channels (errors, interrupts …) have fixed negative ones."""
    return WRITES_IDX_MAP.get(channel, idx)


# --------------------------------------------------------------------------- the fold


@dataclass(slots=True)
class Recorded:
    """The events of one recorded message: its versions (the message's, then its tool calls'),
    and whether a retraction may take them out (a system prompt's event may not)."""

    versions: list[int]
    droppable: bool = True


@dataclass
class Saved:
    """A checkpoint as stored (channel values apart)."""

    id: str
    parent: str | None
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    version: int  # the event's


@dataclass
class ThreadState:
    """One thread namespace, folded from its session's events up to `version`."""

    thread_id: str
    checkpoint_ns: str
    version: int = 0
    exists: bool = False
    checkpoints: dict[str, Saved] = field(default_factory=dict)
    blobs: dict[tuple[str, str], Packed] = field(default_factory=dict)  # (channel, version) → value
    # checkpoint id → (task_id, idx) → (task_id, channel, value, task_path)
    writes: dict[str, dict[tuple[str, int], tuple[str, str, Packed, str]]] = field(default_factory=dict)
    # the messages recorded (since the view's start), in order: key → the versions of its events
    messages: dict[str, Recorded] = field(default_factory=dict)
    _last: str | None = None  # the message whose events are being folded (an AI message, then its tool calls)
    # channel → (version, value): the latest list value written or read, that deltas extend
    decoded: dict[str, tuple[str, Any]] = field(default_factory=dict)

    def fold(self, events: Iterable[StoredEvent]) -> None:
        """Apply stored events in version order; those at or below `version` are already in.
        A tombstone (what a copied thread inherited from an erased one) only moves the version on."""
        for event in events:
            if event.erased_at is None:
                self.fold_at(((event.version, event),))
            elif event.version > self.version:
                self.version, self.exists = event.version, True

    def fold_at(self, events: Iterable[tuple[int, StoredEvent | NewEvent]]) -> None:
        """Apply (version, event) pairs: stored events, or a batch this process just appended."""
        for version, event in events:
            if version <= self.version:
                continue
            self.version = version
            self.exists = True
            last, self._last = self._last, None
            if is_reset(event):
                if event.meta.get("reason") in (BRANCH, REWRITE):
                    self.messages.clear()  # the view restarts with the channel's messages
                else:
                    self._clear()
            elif event.kind == "custom":
                self._apply(event.payload.get("type"), event.payload.get("data"), event.meta, version)
            elif MESSAGE_META in event.meta:
                self._last = event.meta[MESSAGE_META]
                self.messages[self._last] = Recorded([version], event.kind != "system")
            elif event.kind == "tool_call" and last in self.messages:
                self.messages[last].versions.append(version)  # a call of the AI message just folded
                self._last = last
            elif is_retraction(event):
                taken = set(event.payload["targets"])
                for key in [key for key, recorded in self.messages.items() if recorded.versions[0] in taken]:
                    del self.messages[key]

    def _clear(self) -> None:
        self.checkpoints.clear()
        self.blobs.clear()
        self.writes.clear()
        self.decoded.clear()
        self.messages.clear()  # a new conversation on the same thread: its messages are recorded again

    def _apply(self, type_: Any, data: Any, meta: Mapping[str, Any], version: int) -> None:
        if type_ == CHECKPOINT:
            cid = data["id"]
            checkpoint = meta[CHECKPOINT_META]
            self.checkpoints[cid] = Saved(cid, data.get("parent"), checkpoint, data["metadata"], version)
            for channel, packed in meta[VALUES_META].items():
                self.blobs[(channel, str(checkpoint["channel_versions"][channel]))] = packed
            for carried, values in zip(data.get("writes") or (), meta.get(WRITES_META) or ()):
                self._apply_writes(carried, values)
        elif type_ == WRITES:
            self._apply_writes(data, meta[VALUES_META])
        elif type_ == DROP:
            for cid in data["checkpoints"]:
                self.checkpoints.pop(cid, None)
                self.writes.pop(cid, None)

    def _apply_writes(self, data: Mapping[str, Any], values: Sequence[Packed]) -> None:
        stored = self.writes.setdefault(data["checkpoint"], {})
        for (idx, channel), packed in zip(data["writes"], values):
            key = (data["task_id"], idx)
            if idx >= 0 and key in stored:
                continue  # a regular write is kept once; special ones (errors, interrupts) are replaced
            stored[key] = (data["task_id"], channel, packed, data["task_path"])

    # ------------------------------------------------------------------ reading

    def latest(self) -> Saved | None:
        return self.checkpoints[max(self.checkpoints)] if self.checkpoints else None

    def values(self, saved: Saved, loads: Callable[[Typed], Any]) -> dict[str, Any]:
        """The channel values of a checkpoint: each channel's value at the version it names."""
        found: dict[str, Any] = {}
        for channel in saved.checkpoint["channel_versions"]:
            if self.holds(saved, channel):
                found[channel] = self.value(channel, str(saved.checkpoint["channel_versions"][channel]), loads)
        return found

    def holds(self, saved: Saved, channel: str) -> bool:
        """Whether the checkpoint has a value for `channel`."""
        version = saved.checkpoint["channel_versions"].get(channel)
        packed = self.blobs.get((channel, str(version))) if version is not None else None
        return packed is not None and packed[0] != "empty"

    def message_keys(self, saved: Saved, loads: Callable[[Typed], Any]) -> list[str]:
        """The keys of the messages the checkpoint's ``messages`` channel holds."""
        if not self.holds(saved, MESSAGES_CHANNEL):
            return []
        value = self.value(MESSAGES_CHANNEL, str(saved.checkpoint["channel_versions"][MESSAGES_CHANNEL]), loads)
        return [message_key(m) for m in value if isinstance(m, BaseMessage)] if isinstance(value, list) else []

    def value(self, channel: str, version: str, loads: Callable[[Typed], Any]) -> Any:
        """A channel's value at a version: a whole value, or (`DELTA`) the value of an earlier
        version and what was appended to it, followed back to a whole value or one decoded already.
        A list value is remembered (`decoded`): the next delta extends it."""
        tails: list[Packed] = []
        at = version
        while True:
            known = self.decoded.get(channel)
            if known is not None and known[0] == at:
                value = known[1]
                break
            packed = self.blobs[(channel, at)]
            if packed[0] != DELTA:
                value = loads(unpack(packed))
                break
            tails.append(packed)
            at = str(packed[1])
        for tail in reversed(tails):
            value = [*value, *loads(unpack(tail[2:]))]
        if isinstance(value, list):
            self.decoded[channel] = (version, value)
            return list(value)
        return value

    def pending_writes(self, checkpoint_id: str) -> list[tuple[str, str, Packed]]:
        """The checkpoint's writes in the order live execution applies them (`writes_sort_key`)."""
        stored = self.writes.get(checkpoint_id) or {}
        ordered = sorted(stored.items(), key=lambda kv: writes_sort_key(kv[1][3], kv[0][0], kv[0][1]))
        return [(task_id, channel, packed) for _, (task_id, channel, packed, _) in ordered]

    def config(self, checkpoint_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns,
                                 "checkpoint_id": checkpoint_id}}
