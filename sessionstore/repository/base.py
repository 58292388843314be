"""What every part of the repository shares: constants, heads and segments, the validated batch,
the pure checks, and `Part`, the state the parts read (set by `Repository.__init__`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final, NamedTuple

from .. import chain
from .. import events as ev
from ..compaction.pipeline import Steps
from ..errors import InvalidEvent, SessionNotFound
from ..events import NewEvent, StoredEvent
from ..logs import get_logger
from ..storage.statements import NO_LIMIT, Statements
from ..summarizers.base import Summarizer
from ..tokens import UNCOUNTED, TokenCounter
from .feed import FeedPage
from .ops import Execute, Program, Summarize
from .views import Views

log = get_logger("sessionstore.store")

# Without expected_version an append retries by itself when another writer wins a version.
APPEND_ATTEMPTS: Final = 20
OPTIMISTIC_ATTEMPTS: Final = 2
PAGE: Final = 256
SEARCH_LIMIT: Final = 20
INDEX_BATCH: Final = 5_000  # events the PostgreSQL indexer takes a statement
_CALL_KINDS: Final = frozenset({"tool_call", "tool_result"})
# What a marker may point at. A `drop` prune retracts whole items (a framework's pop_item);
# clearing and rewriting change a tool's output or input, or (truncation) a message's content.
_PRUNE_TARGETS: Final = {"clear_output": ("tool_call", "tool_result"),
                         "drop": ("tool_call", "tool_result", "message", "custom")}
_REWRITE_TARGETS: Final = {"output": ("tool_result",), "input": ("tool_call",), "content": ("message",)}
# Seconds a "not distributed" answer is believed on PostgreSQL (see `Part._shape`): one probe that often.
SHAPE_TTL: Final = 30.0
RETRACT_RULE: Final = "retract"
RESET_STRATEGY: Final = "reset"


class Pages:
    """Paging over a program that reads one page (`events()`, `read_all()`): where the next page
    starts and how many rows are still wanted. Both doors stream with it, one page in memory.
    `key` says where a page of rows ends; a `FeedPage` says it itself (no key)."""

    def __init__(self, start: Any, key: Callable[[Any], Any] | None, limit: int | None = None) -> None:
        self.after = start
        self._key = key
        self._left = limit
        self.done = limit is not None and limit <= 0

    def take(self, page: list[Any] | FeedPage) -> list[Any]:
        """The rows of a page to hand out; moves past them, or ends the paging. A `FeedPage` says
        itself where the next page starts (its cursor)."""
        rows = page.events if isinstance(page, FeedPage) else page
        if self._left is not None:
            rows = rows[:self._left]
            self._left -= len(rows)
            self.done = self._left <= 0
        if len(rows) < PAGE:
            self.done = True
        else:
            self.after = page.cursor if isinstance(page, FeedPage) else self._key(rows[-1])  # type: ignore[misc]
        return rows


class Segment(NamedTuple):
    """Versions (after, upto] of a session's history are stored under `session_id`."""

    session_id: str
    after: int
    upto: int | None


class Head(NamedTuple):
    version: int
    link: str
    erased: bool = False


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Batch(NamedTuple):
    """A batch validated, encoded and hashed once, whatever the attempts. Its events are stored
    uncounted (`tokens.UNCOUNTED`): their links cover that, not the count made later (`chain`).
    A named tuple: made once an append, where a frozen dataclass's fields cost a microsecond."""

    events: tuple[NewEvent, ...]
    payloads: tuple[str, ...]
    metas: tuple[str, ...]
    times: tuple[datetime, ...]
    contents: tuple[str, ...]

    def rows(self, sql: Statements, head: Head) -> tuple[list[tuple[Any, ...]], str]:
        """The rows to insert after `head`, chained from its link; and the last link."""
        rows = []
        previous = head.link
        times: dict[datetime, tuple[bytes, Any]] = {}  # a batch's events most often share one time
        for offset, event in enumerate(self.events):
            version = head.version + 1 + offset
            moment = self.times[offset]
            written = times.get(moment)
            if written is None:
                text = chain.utc_text(moment)
                written = times[moment] = (text.encode("ascii"), sql.bind_utc(moment, text))
            previous = chain.link_at(previous, event.event_id, version, event.kind, written[0], UNCOUNTED,
                                     self.contents[offset])
            rows.append((version, event.event_id, event.kind,
                         event.payload["call_id"] if event.kind in _CALL_KINDS else None,
                         self.payloads[offset], self.metas[offset], UNCOUNTED, written[1], self.contents[offset],
                         previous))
        return rows, previous


class Part:
    """The state every part of `Repository` works on; `Repository.__init__` sets it."""

    sql: Statements
    _counter: Callable[[], TokenCounter]
    _lineages: dict[str, tuple[Segment, ...]]
    _heads: dict[str, Head]
    views: Views
    _shape_until: float

    def _shape(self) -> Program[bool]:
        """Is the schema distributed (Citus)? Asked of the database by the first program whose
        statements depend on it (the append, the feed, search), never when a store is made; and
        on PostgreSQL, while the answer is no, again once it is `SHAPE_TTL` seconds old: a `db
        upgrade` run elsewhere may distribute the schema under a running process, whose appends
        must then take the distributed path (stamped by their node for the feed), not the plain one."""
        sql = self.sql
        if sql.distributed is None or (not sql.distributed and sql.postgres and time.monotonic() >= self._shape_until):
            rows = yield Execute(sql.distributed_probe)
            sql.distributed = bool(rows[0][0])
            self._shape_until = time.monotonic() + SHAPE_TTL
        return sql.distributed


def live_or_none(event: StoredEvent | None) -> StoredEvent | None:
    """`event` unless it is a tombstone (a view never holds one)."""
    return event if event is not None and event.erased_at is None else None


def answered(steps: Steps, summarizer: Summarizer) -> Program[Any]:
    """Compaction planning as a program: each batch of summary requests it needs becomes a
    `Summarize` op, which the door answers (threads or asyncio); the plan is what it returns."""
    try:
        batch = next(steps)
        while True:
            batch = steps.send((yield Summarize(summarizer, batch)))
    except StopIteration as done:
        return done.value


# --------------------------------------------------------------------------- pure checks


def check_session_id(sid: Any) -> None:
    if not isinstance(sid, str) or not sid or len(sid) > ev.MAX_ID:
        raise InvalidEvent(f"a session id must be a non-empty string of at most {ev.MAX_ID} characters",
                           field="session_id")
    if ev.JSONB_UNSTORABLE.search(sid):
        raise InvalidEvent(f"a session id {ev.UNSTORABLE_ID}", field="session_id")


def check_lookup_id(sid: Any) -> None:
    """An id to look up: a wrong type is the caller's mistake (`InvalidEvent`); a string no
    session can have (empty, too long, unstorable characters) is simply not found, before the
    driver is asked to bind what it cannot."""
    if not isinstance(sid, str):
        raise InvalidEvent(f"a session id must be a string, got {type(sid).__name__}", field="session_id")
    if not sid or len(sid) > ev.MAX_ID or ev.JSONB_UNSTORABLE.search(sid):
        raise SessionNotFound(sid)


def check_version_argument(name: str, value: Any, *, optional: bool = False) -> None:
    """A version or position given to a read or a fork is an integer the columns can hold (not a
    bool, a string or a float): the typed error here, rather than the driver's or a comparison's."""
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool) or not -NO_LIMIT <= value <= 2**63 - 1:
        raise InvalidEvent(f"{name} must be an integer{' or None' if optional else ''}, got {value!r:.40}",
                           field=name)


def check_batch(batch: Sequence[NewEvent], strict: bool) -> None:
    """Checks that need nothing but the batch itself."""
    seen_ids: set[str] = set()
    calls: set[str] = set()
    for i, event in enumerate(batch):
        if event.event_id in seen_ids:
            raise InvalidEvent(f"event id {event.event_id!r} appears twice in the batch", index=i, field="event_id")
        seen_ids.add(event.event_id)
        if strict and event.kind == "tool_call":
            call_id = event.payload["call_id"]
            if call_id in calls:
                raise InvalidEvent(f"call id {call_id!r} is used by two tool calls in the batch", index=i,
                                   field="payload.call_id")
            calls.add(call_id)


def unanswered_results(batch: Sequence[NewEvent]) -> dict[str, int]:
    """Call ids of results whose call is not earlier in the batch → index of the first such result."""
    called: set[str] = set()
    missing: dict[str, int] = {}
    for i, event in enumerate(batch):
        if event.kind == "tool_call":
            called.add(event.payload["call_id"])
        elif event.kind == "tool_result" and event.payload["call_id"] not in called:
            missing.setdefault(event.payload["call_id"], i)
    return missing


def marker_targets(batch: Sequence[NewEvent], first: int) -> dict[int, tuple[int, tuple[str, ...]]]:
    """Versions the batch's markers target → (index of the marker, kinds it may target)."""
    wanted: dict[int, tuple[int, tuple[str, ...]]] = {}
    for i, event in enumerate(batch):
        if event.kind not in ("prune", "rewrite"):
            continue
        allowed = (_PRUNE_TARGETS[event.payload["mode"]] if event.kind == "prune"
                   else _REWRITE_TARGETS[event.payload["field"]])
        for target in ev.targets_of(event):
            if target >= first + i:
                raise InvalidEvent(f"{event.kind} targets version {target}, which is not before its own version "
                                   f"{first + i}", index=i, field="payload")
            wanted[target] = (i, allowed)
    return wanted


def check_target_kinds(batch: Sequence[NewEvent], first: int, wanted: Mapping[int, tuple[int, tuple[str, ...]]],
                       history: Mapping[int, str]) -> None:
    kinds = {**history, **{first + i: e.kind for i, e in enumerate(batch)}}
    for target, (i, allowed) in wanted.items():
        kind = kinds.get(target)
        if kind not in allowed:
            raise InvalidEvent(f"{batch[i].kind} targets version {target}, a {kind or 'missing'} event; it can "
                               f"target only {' or '.join(allowed)} events", index=i, field="payload")


def check_self_contained(batch: Sequence[NewEvent]) -> None:
    """The first batch of a new session can refer to nothing before it."""
    for cid, index in unanswered_results(batch).items():
        raise InvalidEvent(f"tool result for unknown call id {cid!r}: append its tool_call first", index=index,
                           field="payload.call_id")
    check_target_kinds(batch, 1, marker_targets(batch, 1), {})
    for i, event in enumerate(batch):
        if event.kind == "compaction" and event.payload["first_kept_version"] > i + 1:
            raise InvalidEvent(f"first_kept_version {event.payload['first_kept_version']} is after the compaction's "
                               f"own version {i + 1}", index=i, field="payload.first_kept_version")


def retraction_marker(versions: Sequence[int], reason: str, meta: Mapping[str, Any] | None = None) -> NewEvent:
    """The marker `retract` appends: a `drop` prune of `versions` (a framework's deletion, recorded)."""
    return ev.prune(list(versions), mode="drop", rule=RETRACT_RULE, meta={"reason": reason, **(meta or {})})


def is_retraction(event: StoredEvent | NewEvent) -> bool:
    """A marker `retraction_marker` made (or an importer: Gemini CLI's rewind): what it names was taken back."""
    payload = event.payload
    return event.kind == "prune" and payload.get("mode") == "drop" and payload.get("rule") == RETRACT_RULE


def reset_marker(head: int, reason: str) -> NewEvent:
    """The marker `reset` appends after version `head`: a compaction with no summary whose cut is
    itself (integrations put it first in a batch of their own, appended after `head`)."""
    return ev.compaction("", head + 1, tokens_after=0, trigger="manual", strategy=RESET_STRATEGY,
                         summarizer="none", details={"reset": True}, meta={"reason": reason})




def session_id_list(session_ids: Iterable[str]) -> list[str]:
    """Session ids given as a collection; one id given alone (a string) is taken as itself, not
    as its characters."""
    if isinstance(session_ids, str):
        return [session_ids]
    if not isinstance(session_ids, Iterable):
        raise InvalidEvent(f"expected session ids (a list of strings), got {type(session_ids).__name__}")
    ids = list(session_ids)
    bad = next((i for i in ids if not isinstance(i, str)), None)
    if bad is not None:
        raise InvalidEvent(f"expected session ids (strings), got {type(bad).__name__} {bad!r}")
    return ids
