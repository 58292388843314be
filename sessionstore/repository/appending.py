"""Appending: the gated INSERT on the remembered head, the strict checks that read history, and
what is appended at the head (retraction, reset, a provider's compaction)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .. import chain
from .. import events as ev
from ..compaction import native as provider_compaction
from ..compaction.pipeline import what_if
from ..errors import ConcurrencyError, DuplicateEvent, InvalidEvent, SessionErased
from ..events import NewEvent
from ..storage.appends import append_params, sqlite_steps
from ..storage.prepared import APPEND_CHUNK
from .base import (APPEND_ATTEMPTS, OPTIMISTIC_ATTEMPTS, Batch, Head, Part, check_batch, check_self_contained,
                   check_target_kinds, marker_targets, reset_marker, retraction_marker, unanswered_results, utc_now)
from .ops import BEGIN, COMMIT, ROLLBACK, Atomically, Conflict, Execute, Program, Transaction
from .results import AppendResult

ELSEWHERE = "is already stored in another session"


class AppendingPart(Part):
    # ------------------------------------------------------------------ appending

    def append(self, session_id: str, events: NewEvent | Iterable[NewEvent | Iterable[NewEvent]],
               expected_version: int | None = None, *, strict: bool = True) -> Program[AppendResult]:
        """Append a batch atomically, after version `expected_version` if given (see the module
        docstring); re-appending a stored batch returns its original result."""
        flat = ev.flatten(events)
        found = provider_compaction.in_reply(flat)
        if found is not None:
            return (yield from self._append_reply_compaction(session_id, flat, *found, expected_version,
                                                             strict=strict))
        batch = self._prepare(flat, strict=strict)
        if not batch.events:
            head = yield from self._read_head(session_id)
            if expected_version is not None and expected_version != head.version:
                raise ConcurrencyError(session_id, expected_version, head.version)
            return AppendResult(head.version, (), session_id)
        for attempt in range(APPEND_ATTEMPTS):
            # Optimistic first (one statement); a blind append that keeps losing the race takes the
            # session's lock instead, so that it cannot starve (writers of other sessions still
            # never wait on PostgreSQL). On Citus that transaction runs on the session's node.
            locked = expected_version is None and attempt >= OPTIMISTIC_ATTEMPTS
            if locked:
                yield Transaction("begin", session_id) if (yield from self._shape()) else BEGIN
            head = self._heads.get(session_id) if not locked else None
            if head is None or (expected_version is not None and head.version != expected_version):
                head = yield from self._read_head(session_id, lock=locked)
            if head.erased:
                raise SessionErased(session_id)
            if expected_version is not None and head.version != expected_version:
                replay = yield from self._replayed(session_id, batch)
                if replay is not None:
                    return replay
                raise ConcurrencyError(session_id, expected_version, head.version)
            if strict:
                yield from self._check_history(session_id, batch, head.version + 1)
            rows, last_link = batch.rows(self.sql, head)
            try:
                stored = yield from self._insert(session_id, head.version, rows, last_link, in_transaction=locked)
            except Conflict:
                stored = []
                locked = False  # the door rolled its transaction back
            if locked and stored:
                yield COMMIT
            if stored:
                self._heads[session_id] = Head(head.version + len(rows), last_link)
                return AppendResult(head.version + len(rows), tuple(p for p, _ in stored), session_id)
            if locked:
                yield ROLLBACK
            # The gate refused, or a uniqueness constraint did: a replay, a race, a stale head, an erasure.
            self._heads.pop(session_id, None)
            replay = yield from self._replayed(session_id, batch)
            if replay is not None:
                return replay
            actual = yield from self._read_head(session_id)
            if actual.erased:
                raise SessionErased(session_id)
            if expected_version is not None:
                raise ConcurrencyError(session_id, expected_version, actual.version)
        head = yield from self._read_head(session_id)
        raise ConcurrencyError(session_id, -1, head.version)

    def _append_reply_compaction(self, session_id: str, events: list[NewEvent], index: int,
                                 native: dict[str, Any], expected_version: int | None, *,
                                 strict: bool) -> Program[AppendResult]:
        """A batch whose reply holds a provider's compaction, with the compaction event that
        makes the view start from that reply (`compaction.native`): both land together, after
        the head the compaction was computed on."""
        replay = yield from self._replayed(session_id, self._prepare(events, strict=strict),
                                           [provider_compaction.derived_id(events[index])])
        if replay is not None:
            return replay

        def with_compaction(head: int) -> Program[list[NewEvent]]:
            view = yield from self.context(session_id, head)
            return [*events, provider_compaction.reply_compaction(view, events, index, native, self._counter())]

        return (yield from self._append_on_head(session_id, with_compaction, expected_version, strict=strict))

    def _prepare(self, events: Iterable[NewEvent], *, strict: bool, history: bool = True) -> Batch:
        """Validate, encode and hash once (nothing touches the database before this passed). No
        token counting: the events are counted where they are read (`repository/counting.py`)."""
        batch = tuple(events) if not isinstance(events, tuple) else events
        payloads, metas, contents = [], [], []
        for i, event in enumerate(batch):  # one pass: hashing raises nothing once an event is encoded
            payload, meta = ev.encode_event(event, i)
            payloads.append(payload)
            metas.append(meta)
            contents.append(chain.content_hash(payload, event.meta, meta))
        check_batch(batch, strict)
        if strict and not history:
            check_self_contained(batch)
        now = utc_now()
        times = tuple(e.created_at or now for e in batch)
        return Batch(batch, tuple(payloads), tuple(metas), times, tuple(contents))

    def _insert(self, session_id: str, known: int, rows: Sequence[tuple[Any, ...]], last_link: str, *,
                in_transaction: bool = False) -> Program[list[tuple[int, int]]]:
        """Insert rows after version `known`: one gated statement, or gated chunks in one transaction
        (on SQLite: `_insert_sqlite`). Returns (position, version) pairs in version order; empty
        when the gate refused (on SQLite its refusal is a `Conflict`)."""
        if not self.sql.postgres:
            return (yield from self._insert_sqlite(session_id, known, rows, last_link, in_transaction=in_transaction))
        distributed = yield from self._shape()
        # On Citus a batch of any length is one call (its columns travel as arrays): one hop to
        # the session's node, stamped there, never a coordinator transaction.
        if len(rows) <= APPEND_CHUNK or distributed:
            registered: list[str] = []
            if distributed:  # elsewhere one unique index holds every id: two generator steps fewer
                registered = yield from self._registered(session_id, [row[1] for row in rows])
                # one the store may have made is stored unregistered wherever it went first: asked of every shard
                yield from self._stored_elsewhere(session_id, [i for i in registered if ev.might_be_made(i)])
            returned = yield Execute(self.sql.append(len(rows)),
                                     append_params(self.sql, session_id, known, rows, last_link, registered),
                                     session=session_id if distributed and not in_transaction else None)
            if len(returned) == 1:
                return [(int(returned[0][0]), int(returned[0][1]))]
            return sorted(((int(p), int(v)) for p, v in returned), key=lambda pv: pv[1])
        if not in_transaction:
            yield BEGIN
        stored: list[tuple[int, int]] = []
        for start in range(0, len(rows), APPEND_CHUNK):
            chunk = rows[start:start + APPEND_CHUNK]
            returned = yield Execute(self.sql.append(len(chunk)),
                                     append_params(self.sql, session_id, known, chunk, chunk[-1][-1]))
            if not returned:
                if not in_transaction:
                    yield ROLLBACK
                return []
            stored.extend(sorted(((int(p), int(v)) for p, v in returned), key=lambda pv: pv[1]))
            known += len(chunk)
        if not in_transaction:
            yield COMMIT
        return stored

    def _insert_sqlite(self, session_id: str, known: int, rows: Sequence[tuple[Any, ...]], last_link: str, *,
                       in_transaction: bool) -> Program[list[tuple[int, int]]]:
        """SQLite: the head moved past the rows, the rows inserted, in one write transaction and one
        step of the program (the statements module's docstring says why so). The gate's refusal,
        like a taken event id's, is a `Conflict`, the transaction rolled back by the door."""
        steps = sqlite_steps(self.sql, session_id, known, rows, last_link)
        if in_transaction:
            for statement, params in steps:
                returned = yield Execute(statement, params)
        else:
            returned = yield Atomically(steps)
        first = int(returned[0][0]) - len(rows)  # the rows took the positions after the last one before them
        return [(first + i, known + i) for i in range(1, len(rows) + 1)]

    def _replayed(self, session_id: str, batch: Batch, derived: Sequence[str] = ()) -> Program[AppendResult | None]:
        """The original result when this batch was already stored; None when none of it was.
        `derived`: ids of events the store added to the batch (found with it, not compared)."""
        ids = [e.event_id for e in batch.events] + list(derived)
        found: dict[str, Sequence[Any]] = {}
        for start in range(0, len(ids), APPEND_CHUNK):
            rows = yield Execute(self.sql.stored_ids(), {"ids": self.sql.list_param(ids[start:start + APPEND_CHUNK]),
                                                         "sid": session_id})
            found.update((row[0], row) for row in rows)
        if not found:  # on Citus only this session was asked: is one of them another's (see `_registered`)?
            registered = yield from self._registered(session_id, ids)
            yield from self._stored_elsewhere(session_id, registered)
            return None
        for event, payload in zip(batch.events, batch.payloads):
            row = found.get(event.event_id)
            if row is None:
                raise DuplicateEvent(next(iter(found)), "is already stored, but its batch holds events that are not: "
                                                        "a batch is replayed whole or not at all")
            if row[1] != session_id:
                raise DuplicateEvent(event.event_id, ELSEWHERE)
            if row[4] != event.kind or row[5] != payload:
                raise DuplicateEvent(event.event_id)
        rows = sorted(found.values(), key=lambda r: r[2])
        by_id = {r[0]: r[3] for r in rows}
        added = tuple(by_id[i] for i in derived if i in by_id)
        return AppendResult(rows[-1][2], tuple(by_id[e.event_id] for e in batch.events) + added, session_id)

    def _registered(self, session_id: str, ids: Sequence[str]) -> Program[list[str]]:
        """Citus: which of `ids` the append registers store-wide (`distribution.REGISTRY`), so
        that a second session's append of one fails: all but those unique by construction, made
        by this process for this session (`events.claim`). None elsewhere: one index holds every id."""
        if not (yield from self._shape()):
            return []
        return [i for i in ids if not ev.claim(i, session_id)]

    def _stored_elsewhere(self, session_id: str, ids: Sequence[str]) -> Program[None]:
        """Citus: `DuplicateEvent` when one of `ids` is stored in another session (every shard asked)."""
        for start in range(0, len(ids), APPEND_CHUNK):
            rows = yield Execute(self.sql.stored_elsewhere(),
                                 {"ids": self.sql.list_param(ids[start:start + APPEND_CHUNK]), "sid": session_id})
            if rows:
                raise DuplicateEvent(rows[0][0], ELSEWHERE)

    # ------------------------------------------------------------------ strict checks

    def _check_history(self, session_id: str, batch: Batch, first: int) -> Program[None]:
        yield from self._check_calls_known(session_id, batch.events)
        yield from self._check_markers(session_id, batch.events, first)

    def _check_calls_known(self, session_id: str, batch: Sequence[NewEvent]) -> Program[None]:
        """A tool result must answer a call made before it, in this batch or in the session."""
        missing = unanswered_results(batch)
        if not missing:
            return
        rows = yield from self._over_lineage(session_id, self.sql.known_calls,
                                             {"ids": self.sql.list_param(list(missing))})
        known = {row[0] for row in rows or ()}
        for cid, index in missing.items():
            if cid not in known:
                raise InvalidEvent(f"tool result for unknown call id {cid!r}: append its tool_call first",
                                   index=index, field="payload.call_id")

    def _check_markers(self, session_id: str, batch: Sequence[NewEvent], first: int) -> Program[None]:
        """Markers point at earlier events of the right kind; compactions never move backwards."""
        for i, event in enumerate(batch):
            if event.kind == "compaction":
                yield from self._check_compaction(session_id, event, first + i, i)
        wanted = marker_targets(batch, first)
        if wanted:
            history = yield from self._events_at(session_id, sorted(v for v in wanted if v < first))
            check_target_kinds(batch, first, wanted, {e.version: e.kind for e in history})

    def _check_compaction(self, session_id: str, event: NewEvent, own: int, index: int) -> Program[None]:
        first_kept = event.payload["first_kept_version"]
        if first_kept > own:
            raise InvalidEvent(f"first_kept_version {first_kept} is after the compaction's own version {own}",
                               index=index, field="payload.first_kept_version")
        previous = yield from self._latest(session_id, "compaction", own - 1)
        if previous is not None and first_kept < previous.payload["first_kept_version"]:
            raise InvalidEvent(f"first_kept_version {first_kept} moves back before the previous compaction's "
                               f"{previous.payload['first_kept_version']} (version {previous.version})",
                               index=index, field="payload.first_kept_version")

    # ------------------------------------------------------------------ retraction and reset

    def retract(self, session_id: str, versions: Sequence[int], *, reason: str,
                expected_version: int | None = None) -> Program[AppendResult]:
        """Take events out of the view (a framework's `pop_item`): recorded as a `drop` prune, so
        the transcript keeps them. A retracted tool call takes its result with it, and back."""
        return (yield from self.append(session_id, [retraction_marker(versions, reason)], expected_version))

    def reset(self, session_id: str, *, reason: str, expected_version: int | None = None) -> Program[AppendResult]:
        """Start the view afresh (a framework's `clear_session`): a compaction with no summary whose
        cut is itself, so nothing before it is in the view; the transcript keeps everything."""
        def marker(head: int) -> Program[list[NewEvent]]:
            return [reset_marker(head, reason)]
            yield  # a program that reads nothing

        return (yield from self._append_on_head(session_id, marker, expected_version))

    def _append_on_head(self, session_id: str, build: Callable[[int], Program[list[NewEvent]]],
                        expected_version: int | None, *, strict: bool = True) -> Program[AppendResult]:
        """Append what `build(head)` makes of the session at its head: decisions that name the head
        (a cut at it, a view read at it) are rebuilt on the new head when another writer got there
        first, unless `expected_version` pins the head (then `ConcurrencyError`)."""
        for _ in range(APPEND_ATTEMPTS):
            head = (yield from self._read_head(session_id)).version
            if expected_version is not None and head != expected_version:
                raise ConcurrencyError(session_id, expected_version, head)
            events = yield from build(head)
            try:
                return (yield from self.append(session_id, events, head, strict=strict))
            except ConcurrencyError:
                if expected_version is not None:
                    raise
        raise ConcurrencyError(session_id, -1, (yield from self.version(session_id)))

    def record_provider_compaction(self, session_id: str, native: Mapping[str, Any], *,
                                   first_kept_version: int | None = None, summarizer: str = "external",
                                   trigger: str = "auto", expected_version: int | None = None,
                                   reason: str | None = None) -> Program[AppendResult]:
        """Record a provider's compaction that a framework made of the session's view (the Agents
        SDK's ``responses.compact`` window): one compaction event carrying the provider's items,
        which stand for everything before `first_kept_version` (default: the whole view, as a
        framework that replaces its history means). The transcript keeps every event."""
        provider_compaction.check_native(native)

        def compaction(head: int) -> Program[list[NewEvent]]:
            view = yield from self.context(session_id, head)
            first_kept = head + 1 if first_kept_version is None else first_kept_version
            event = provider_compaction.recorded(view, native, first_kept, summarizer=summarizer, trigger=trigger,
                                                 counter=self._counter(), meta={"reason": reason} if reason else None)
            return [provider_compaction.with_tokens_after(event, what_if(view, [event], self._counter()))]

        return (yield from self._append_on_head(session_id, compaction, expected_version))
