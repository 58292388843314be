"""SessionStore: the repository, and the only module that opens transactions.

Appends are optimistic: the session row's `head` is advanced with a compare-and-set
(``UPDATE … SET head = head + n WHERE head = :expected RETURNING head``), which on
PostgreSQL also row-locks the session so that concurrent writers of one session queue up
instead of failing late; UNIQUE(session_id, version) stays the last-line guard. On
PostgreSQL the insert also takes ``LOCK TABLE events IN EXCLUSIVE MODE`` so that global
positions are committed in order and a catch-up reader (`read_all`) can never skip an
event that commits later with a lower position (the `eventsourcing` library's technique).

A fork shares its parent's history without copying it: a session's *lineage* is a chain of
(session, version range) segments, and every read is a query over those segments.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final, NamedTuple

import structlog
from sqlalchemy import Connection, Engine, and_, func, or_, select
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from . import events as ev
from .errors import (CompactionFailed, ConcurrencyError, DuplicateEvent, InvalidEvent, SchemaNotReady, SessionExists,
                     SessionNotFound, VersionOutOfRange)
from .events import NewEvent, StoredEvent
from .compaction.pipeline import CompactionPlan, plan_compaction, provisional
from .compaction.policy import CompactionPolicy
from .projection import ContextView, ProjectionInput, named_versions, project
from .summarizers.base import Summarizer
from .summarizers.offline import OfflineSummarizer
from .storage import engine as engines
from .storage import migrate as migrations
from .storage.statements import AppendStatements
from .storage.tables import events as events_t
from .storage.tables import sessions as sessions_t
from .tokens import TokenCounter, count_events, default_counter

log = structlog.get_logger("sessionstore")

STREAM_BATCH: Final = 500
_MAX_SQL_PARAMS: Final = 900
# Without expected_version an append retries by itself when another writer wins a version.
_APPEND_ATTEMPTS: Final = 20
_CALL_KINDS: Final = frozenset({"tool_call", "tool_result"})


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append wrote: the session's head after it, and the global position of each event."""

    version: int
    positions: tuple[int, ...]
    session_id: str = ""

    @property
    def versions(self) -> range:
        return range(self.version - len(self.positions) + 1, self.version + 1)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    created_at: datetime
    metadata: dict[str, Any]
    parent_id: str | None
    fork_version: int | None
    head: int


@dataclass(frozen=True)
class CompactionResult:
    """A compaction that was carried out (or, with ``dry_run``, only planned).

    `events` are the stored prune, rewrite and compaction events (provisional ones for a dry
    run); `stalled` says the view is still above the threshold or barely smaller — reported,
    never retried in a loop.
    """

    session_id: str
    trigger: str
    events: tuple[StoredEvent, ...]
    plan: CompactionPlan
    dry_run: bool = False

    @property
    def compaction(self) -> StoredEvent | None:
        return next((e for e in self.events if e.kind == "compaction"), None)

    @property
    def tokens_before(self) -> int:
        return self.plan.tokens_before

    @property
    def tokens_after(self) -> int:
        return self.plan.tokens_after

    @property
    def stalled(self) -> bool:
        return self.plan.stalled

    @property
    def early_exit(self) -> bool:
        return self.plan.early_exit

    @property
    def reason(self) -> str:
        return self.plan.reason


@dataclass(frozen=True, slots=True)
class SessionStats:
    """Transcript against view: what compaction saved, and what it did."""

    session_id: str
    version: int
    events: int
    transcript_tokens: int
    view_tokens: int
    by_kind: dict[str, tuple[int, int]]  # kind → (events, tokens)
    compactions: int
    pruned: int
    rewritten: int
    messages_in_view: int
    diagnostics: int


class _Segment(NamedTuple):
    """Versions (after, upto] of the session's history are stored under `session_id`."""

    session_id: str
    after: int
    upto: int | None


_EVENT_COLUMNS = (events_t.c.event_id, events_t.c.session_id, events_t.c.version, events_t.c.position,
                  events_t.c.kind, events_t.c.payload, events_t.c.meta, events_t.c.tokens, events_t.c.created_at)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _as_json(value: Any) -> Any:
    """`value` as it comes back from the database (tuples become lists, …), for comparison."""
    return json.loads(json.dumps(value))


def _chunks(items: Sequence[Any], size: int = _MAX_SQL_PARAMS) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class SessionStore:
    """The event store: append events to sessions, read them back, fork, and rebuild context.

    ``SessionStore()`` opens ``$SESSIONSTORE_URL``, else ``sqlite:///./sessionstore.db``.
    Run `migrate()` once per database (or ``sessionstore db upgrade``) to create the schema.
    """

    def __init__(self, url: str | None = None, *, token_counter: TokenCounter | None = None,
                 sqlite_synchronous: str = "NORMAL", engine: Engine | None = None, echo: bool = False) -> None:
        self.url = engines.resolve_url(url) if engine is None else str(engine.url)
        self.engine = engine or engines.make_engine(self.url, sqlite_synchronous=sqlite_synchronous, echo=echo)
        self.backend = self.engine.dialect.name
        self._token_counter = token_counter
        self._lineages: dict[str, tuple[_Segment, ...]] = {}
        self._sql = AppendStatements(self.engine.dialect)
        dbapi = self.engine.dialect.loaded_dbapi
        self._integrity_errors: tuple[type[BaseException], ...] = (IntegrityError, dbapi.IntegrityError)
        self._db_errors: tuple[type[BaseException], ...] = (OperationalError, ProgrammingError,
                                                            dbapi.OperationalError, dbapi.ProgrammingError)
        self._pid = os.getpid()
        self._local = threading.local()
        self._writers: list[Connection] = []
        self._writers_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    @property
    def token_counter(self) -> TokenCounter:
        if self._token_counter is None:
            self._token_counter = default_counter()
        return self._token_counter

    def migrate(self) -> None:
        """Create or upgrade the schema (``alembic upgrade head``); safe to run every start."""
        migrations.upgrade(self.engine)
        log.info("schema upgraded", url=self.engine.url.render_as_string(hide_password=True),
                 revision=migrations.head_revision())

    def close(self) -> None:
        with self._writers_lock:
            writers, self._writers = self._writers, []
        for conn in writers:
            conn.close()
        self._local = threading.local()
        self.engine.dispose()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionStore({self.engine.url.render_as_string(hide_password=True)!r})"

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        self._check_process()
        with self._schema_errors(), self.engine.connect() as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A transaction on this thread's writer connection.

        Each thread keeps one connection for writing: checking one out of the pool for every
        append would cost more than the append itself.
        """
        self._check_process()
        conn: Connection | None = getattr(self._local, "writer", None)
        if conn is None or conn.closed or conn.invalidated:
            conn = self.engine.connect()
            conn.execution_options(**{engines.WRITE_OPTION: True})
            self._local.writer = conn
            with self._writers_lock:
                self._writers.append(conn)
        with self._schema_errors(), conn.begin():
            yield conn

    def _check_process(self) -> None:
        """After os.fork() the child must not touch the parent's connections (SQLAlchemy's advice)."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._local = threading.local()
            self._writers = []
            self.engine.dispose(close=False)

    @contextmanager
    def _schema_errors(self) -> Iterator[None]:
        try:
            yield
        except self._db_errors as exc:
            text = str(getattr(exc, "orig", exc)).lower()
            if "no such table" in text or ("relation" in text and "does not exist" in text):
                raise SchemaNotReady(
                    f"{self!r} has no sessionstore schema: run store.migrate() or `sessionstore db upgrade`"
                ) from exc
            raise

    # ------------------------------------------------------------------ sessions

    def create_session(self, session_id: str | None = None, metadata: Mapping[str, Any] | None = None) -> str:
        """Create an empty session (version 0) and return its id (a uuid4 hex unless given)."""
        sid = session_id or ev.new_event_id()
        self._check_session_id(sid)
        try:
            with self._write() as conn:
                self._insert_session(conn, sid, metadata)
        except IntegrityError:
            raise SessionExists(sid) from None
        return sid

    def ensure_session(self, session_id: str, metadata: Mapping[str, Any] | None = None) -> bool:
        """Create `session_id` unless it exists; True when it was created (importers re-run safely)."""
        self._check_session_id(session_id)
        with self._write() as conn:
            if conn.execute(select(sessions_t.c.id).where(sessions_t.c.id == session_id)).first():
                return False
            self._insert_session(conn, session_id, metadata)
            return True

    @staticmethod
    def _check_session_id(sid: str) -> None:
        if not isinstance(sid, str) or not sid or len(sid) > ev.MAX_ID:
            raise InvalidEvent(f"a session id must be a non-empty string of at most {ev.MAX_ID} characters",
                               field="session_id")

    @staticmethod
    def _insert_session(conn: Connection, sid: str, metadata: Mapping[str, Any] | None, *,
                        parent_id: str | None = None, fork_version: int | None = None) -> None:
        meta = dict(metadata or {})
        ev.check_metadata(meta)
        conn.execute(sessions_t.insert().values(id=sid, created_at=_now(), metadata=meta, parent_id=parent_id,
                                                fork_version=fork_version, head=fork_version or 0))

    def session(self, session_id: str) -> SessionInfo:
        with self._read() as conn:
            row = conn.execute(select(sessions_t).where(sessions_t.c.id == session_id)).first()
        if row is None:
            raise SessionNotFound(session_id)
        return SessionInfo(row.id, row.created_at, row.metadata, row.parent_id, row.fork_version, row.head)

    def sessions(self, *, limit: int | None = None) -> list[SessionInfo]:
        """Every session, oldest first."""
        query = select(sessions_t).order_by(sessions_t.c.created_at, sessions_t.c.id).limit(limit)
        with self._read() as conn:
            return [SessionInfo(r.id, r.created_at, r.metadata, r.parent_id, r.fork_version, r.head)
                    for r in conn.execute(query)]

    def version(self, session_id: str) -> int:
        """The session's head: the version of its last event, 0 when it has none."""
        with self._read() as conn:
            return self._head(conn, session_id)

    @staticmethod
    def _head(conn: Connection, session_id: str) -> int:
        head = conn.execute(select(sessions_t.c.head).where(sessions_t.c.id == session_id)).scalar()
        if head is None:
            raise SessionNotFound(session_id)
        return int(head)

    def fork(self, session_id: str, at: int | None = None, *, new_session_id: str | None = None,
             metadata: Mapping[str, Any] | None = None) -> str:
        """A new session whose history is `session_id`'s up to version `at` (default: its head).

        Nothing is copied: the child reads the parent's events up to `at` and appends its own
        from `at + 1` on. Use it to rewind before a compaction, or to branch an experiment.
        """
        sid = new_session_id or ev.new_event_id()
        self._check_session_id(sid)
        try:
            with self._write() as conn:
                head = self._head(conn, session_id)
                at = head if at is None else at
                if not 0 <= at <= head:
                    raise VersionOutOfRange(session_id, at, head)
                meta = {"forked_from": session_id, "fork_version": at, **dict(metadata or {})}
                self._insert_session(conn, sid, meta, parent_id=session_id, fork_version=at)
        except IntegrityError:
            raise SessionExists(sid) from None
        log.info("session forked", parent=session_id, child=sid, at=at)
        return sid

    def _lineage(self, conn: Connection, session_id: str) -> tuple[_Segment, ...]:
        """Where each stretch of the session's versions is stored (parents' are immutable: cached)."""
        cached = self._lineages.get(session_id)
        if cached is not None:
            return cached
        row = conn.execute(select(sessions_t.c.parent_id, sessions_t.c.fork_version)
                           .where(sessions_t.c.id == session_id)).first()
        if row is None:
            raise SessionNotFound(session_id)
        own_from = 0
        inherited: list[_Segment] = []
        if row.parent_id is not None:
            own_from = row.fork_version
            for seg in self._lineage(conn, row.parent_id):
                if seg.after >= own_from:
                    break
                inherited.append(seg._replace(upto=own_from if seg.upto is None else min(seg.upto, own_from)))
        lineage = (*inherited, _Segment(session_id, own_from, None))
        self._lineages[session_id] = lineage
        return lineage

    @staticmethod
    def _where_versions(lineage: Sequence[_Segment], after: int = 0, upto: int | None = None) -> Any:
        """SQL condition selecting versions (after, upto] of a lineage; None when the range is empty."""
        parts = []
        for seg in lineage:
            lo = max(seg.after, after)
            hi = seg.upto if upto is None else (upto if seg.upto is None else min(seg.upto, upto))
            if hi is not None and hi <= lo:
                continue
            cond = [events_t.c.session_id == seg.session_id]
            if lo > 0:
                cond.append(events_t.c.version > lo)
            if hi is not None:
                cond.append(events_t.c.version <= hi)
            parts.append(and_(*cond))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else or_(*parts)

    # ------------------------------------------------------------------ reading

    def events(self, session_id: str, after: int = 0, upto: int | None = None,
               kinds: Iterable[str] | None = None) -> Iterator[StoredEvent]:
        """The session's events with version in (after, upto], in version order, streamed.

        Rows are fetched in batches from a server-side cursor, so memory stays constant
        however long the session is. `kinds` restricts to some event kinds.
        """
        with self._read() as conn:
            lineage = self._lineage(conn, session_id)
        where = self._where_versions(lineage, after, upto)
        if where is None:
            return iter(())
        query = select(*_EVENT_COLUMNS).where(where)
        if kinds is not None:
            query = query.where(events_t.c.kind.in_(list(kinds)))
        return self._stream(query.order_by(events_t.c.version))

    def _stream(self, query: Any) -> Iterator[StoredEvent]:
        with self._read() as conn:
            result = conn.execution_options(stream_results=True, yield_per=STREAM_BATCH).execute(query)
            for row in result:
                yield StoredEvent(*row)

    def transcript(self, session_id: str) -> list[StoredEvent]:
        """Every event of the session, nothing pruned or summarised: the recoverable history."""
        return list(self.events(session_id))

    def read_all(self, after_position: int = 0, limit: int | None = None) -> Iterator[StoredEvent]:
        """Every event of every session in global position order, for catch-up readers.

        Positions are committed in order (see the module docstring), so a reader that resumes
        from the last position it saw never misses an event.
        """
        query = (select(*_EVENT_COLUMNS).where(events_t.c.position > after_position)
                 .order_by(events_t.c.position).limit(limit))
        return self._stream(query)

    # ------------------------------------------------------------------ appending

    def append(self, session_id: str, events: NewEvent | Iterable[NewEvent | Iterable[NewEvent]],
               expected_version: int | None = None, *, strict: bool = True) -> AppendResult:
        """Append a batch of events atomically, after version `expected_version` if given.

        Raises `ConcurrencyError` when the head is not `expected_version` (nothing written),
        `InvalidEvent` for a bad event (nothing written), `SessionNotFound`. Re-appending a
        batch whose event ids are already stored returns the original result.

        `strict` (the default, for agents) also rejects a tool result whose call is unknown,
        markers that point at the future, and a compaction whose first kept version moves
        backwards. Importers pass ``strict=False``: recorded history may hold orphans, and the
        projection repairs the view instead.
        """
        batch = ev.flatten(events)
        encoded = [ev.encode_event(event, i) for i, event in enumerate(batch)]
        self._check_batch(batch, strict)
        if not batch:
            return self._empty_append(session_id, expected_version)
        sql = self._sql
        tokens = count_events(self.token_counter, [(e.kind, e.payload) for e in batch])
        now = sql.bind_time(_now())
        rows = [{"session_id": session_id, "version": 0, "event_id": e.event_id, "kind": e.kind,
                 "call_id": e.payload["call_id"] if e.kind in _CALL_KINDS else None, "payload": payload,
                 "meta": meta, "tokens": n, "created_at": now if e.created_at is None else sql.bind_time(e.created_at)}
                for e, (payload, meta), n in zip(batch, encoded, tokens)]
        for _ in range(_APPEND_ATTEMPTS):
            try:
                with self._write() as conn:
                    return self._append_rows(conn, session_id, batch, rows, expected_version, strict)
            except self._integrity_errors:
                with self._read() as conn:
                    replay = self._replayed(conn, session_id, batch)
                if replay is not None:
                    return replay
                if expected_version is not None:
                    raise ConcurrencyError(session_id, expected_version, self.version(session_id)) from None
                # Another writer took the version between our reservation and insert: go again.
        raise ConcurrencyError(session_id, -1, self.version(session_id))

    def _append_rows(self, conn: Connection, session_id: str, batch: Sequence[NewEvent],
                     rows: list[dict[str, Any]], expected_version: int | None, strict: bool) -> AppendResult:
        sql = self._sql
        n = len(rows)
        cursor = conn.connection.cursor()
        try:
            if expected_version is None:
                cursor.execute(sql.advance.sql, sql.advance.params({"n": n, "sid": session_id}))
            else:
                cursor.execute(sql.advance_from.sql,
                               sql.advance_from.params({"n": n, "sid": session_id, "expected": expected_version}))
            advanced = cursor.fetchone()
            if advanced is None:
                return self._not_advanced(conn, session_id, expected_version, batch)
            head = int(advanced[0])
            first = head - n + 1
            for offset, row in enumerate(rows):
                row["version"] = first + offset
            if strict:
                self._check_calls_known(conn, session_id, batch)
                self._check_history_refs(conn, session_id, batch, first)
            if sql.lock:
                cursor.execute(sql.lock)
            if n == 1:
                cursor.execute(sql.insert_one.sql, sql.insert_one.params(rows[0]))
            else:
                cursor.executemany(sql.insert.sql, [sql.insert.params(row) for row in rows])
                cursor.execute(sql.positions.sql, sql.positions.params({"sid": session_id, "first": first,
                                                                        "last": head}))
            positions = tuple(int(p) for (p,) in cursor.fetchall())
        finally:
            cursor.close()
        return AppendResult(head, positions, session_id)

    def _empty_append(self, session_id: str, expected_version: int | None) -> AppendResult:
        head = self.version(session_id)
        if expected_version is not None and expected_version != head:
            raise ConcurrencyError(session_id, expected_version, head)
        return AppendResult(head, (), session_id)

    def _not_advanced(self, conn: Connection, session_id: str, expected_version: int | None,
                      batch: Sequence[NewEvent]) -> AppendResult:
        """The head did not move: a missing session, a stale `expected_version`, or a replay."""
        actual = self._head(conn, session_id)  # raises SessionNotFound
        replay = self._replayed(conn, session_id, batch)
        if replay is not None:
            return replay
        raise ConcurrencyError(session_id, expected_version if expected_version is not None else -1, actual)

    def _replayed(self, conn: Connection, session_id: str, batch: Sequence[NewEvent]) -> AppendResult | None:
        """The original result when this batch was already stored; None when none of it was."""
        ids = [e.event_id for e in batch]
        found: dict[str, Any] = {}
        for chunk in _chunks(ids):
            query = select(events_t.c.event_id, events_t.c.session_id, events_t.c.version, events_t.c.position,
                           events_t.c.kind, events_t.c.payload).where(events_t.c.event_id.in_(chunk))
            found.update((row.event_id, row) for row in conn.execute(query))
        if not found:
            return None
        for event in batch:
            row = found.get(event.event_id)
            if row is None:
                stored = next(iter(found))
                raise DuplicateEvent(stored, "is already stored, but its batch holds events that are not: "
                                             "a batch is replayed whole or not at all")
            if row.session_id != session_id or row.kind != event.kind or row.payload != _as_json(event.payload):
                raise DuplicateEvent(event.event_id)
        rows = sorted(found.values(), key=lambda r: r.version)
        by_id = {r.event_id: r.position for r in rows}
        return AppendResult(rows[-1].version, tuple(by_id[e.event_id] for e in batch), session_id)

    # ------------------------------------------------------------------ strict checks

    @staticmethod
    def _check_batch(batch: Sequence[NewEvent], strict: bool) -> None:
        """Checks that need nothing but the batch itself."""
        seen_ids: set[str] = set()
        calls: set[str] = set()
        for i, event in enumerate(batch):
            if event.event_id in seen_ids:
                raise InvalidEvent(f"event id {event.event_id!r} appears twice in the batch", index=i,
                                   field="event_id")
            seen_ids.add(event.event_id)
            if not strict:
                continue
            if event.kind == "tool_call":
                call_id = event.payload["call_id"]
                if call_id in calls:
                    raise InvalidEvent(f"call id {call_id!r} is used by two tool calls in the batch", index=i,
                                       field="payload.call_id")
                calls.add(call_id)

    def _check_calls_known(self, conn: Connection, session_id: str, batch: Sequence[NewEvent]) -> None:
        """A tool result must answer a call made before it, in this batch or in the session."""
        called: set[str] = set()
        missing: dict[str, int] = {}
        for i, event in enumerate(batch):
            if event.kind == "tool_call":
                called.add(event.payload["call_id"])
            elif event.kind == "tool_result" and event.payload["call_id"] not in called:
                missing.setdefault(event.payload["call_id"], i)
        if not missing:
            return
        known: set[str] = set()
        where = self._where_versions(self._lineage(conn, session_id))
        if where is not None:
            for chunk in _chunks(list(missing)):
                known.update(conn.execute(select(events_t.c.call_id).where(
                    where, events_t.c.call_id.in_(chunk), events_t.c.kind == "tool_call")).scalars())
        for cid, index in missing.items():
            if cid not in known:
                raise InvalidEvent(f"tool result for unknown call id {cid!r}: append its tool_call first",
                                   index=index, field="payload.call_id")

    def _check_history_refs(self, conn: Connection, session_id: str, batch: Sequence[NewEvent], first: int) -> None:
        """Markers point at earlier events of the right kind; compactions never move backwards."""
        wanted: dict[int, tuple[int, str]] = {}
        for i, event in enumerate(batch):
            own = first + i
            if event.kind in ("prune", "rewrite"):
                for target in ev.targets_of(event):
                    if target >= own:
                        raise InvalidEvent(f"{event.kind} targets version {target}, which is not before its own "
                                           f"version {own}", index=i, field="payload")
                    wanted[target] = (i, event.kind)
            elif event.kind == "compaction":
                self._check_compaction(conn, session_id, event, own, i)
        if not wanted:
            return
        kinds = {e.version: e.kind for e in self._events_at(conn, session_id, sorted(wanted))}
        kinds.update({first + i: e.kind for i, e in enumerate(batch)})
        for target, (i, marker) in wanted.items():
            kind = kinds.get(target)
            allowed = ("tool_call", "tool_result") if marker == "prune" else (
                ev.REWRITE_TARGETS[batch[i].payload["field"]],)
            if kind not in allowed:
                raise InvalidEvent(f"{marker} targets version {target}, a {kind or 'missing'} event; it can target "
                                   f"only {' or '.join(allowed)} events", index=i, field="payload")

    def _check_compaction(self, conn: Connection, session_id: str, event: NewEvent, own: int, index: int) -> None:
        first_kept = event.payload["first_kept_version"]
        if first_kept > own:
            raise InvalidEvent(f"first_kept_version {first_kept} is after the compaction's own version {own}",
                               index=index, field="payload.first_kept_version")
        previous = self._latest_compaction(conn, session_id, upto=own - 1)
        if previous is not None and first_kept < previous.payload["first_kept_version"]:
            raise InvalidEvent(f"first_kept_version {first_kept} moves back before the previous compaction's "
                               f"{previous.payload['first_kept_version']} (version {previous.version})",
                               index=index, field="payload.first_kept_version")

    def _events_at(self, conn: Connection, session_id: str, versions: Sequence[int]) -> list[StoredEvent]:
        where = self._where_versions(self._lineage(conn, session_id))
        if where is None or not versions:
            return []
        found: list[StoredEvent] = []
        for chunk in _chunks(list(versions)):
            query = select(*_EVENT_COLUMNS).where(where, events_t.c.version.in_(chunk))
            found.extend(StoredEvent(*row) for row in conn.execute(query))
        return sorted(found, key=lambda e: e.version)

    def _latest_compaction(self, conn: Connection, session_id: str, upto: int | None = None) -> StoredEvent | None:
        return self._latest(conn, session_id, "compaction", upto)

    def _latest(self, conn: Connection, session_id: str, kind: str, upto: int | None = None) -> StoredEvent | None:
        """The last event of `kind` at or before `upto` (one index lookup per lineage segment)."""
        where = self._where_versions(self._lineage(conn, session_id), 0, upto)
        if where is None:
            return None
        query = (select(*_EVENT_COLUMNS).where(where, events_t.c.kind == kind)
                 .order_by(events_t.c.version.desc()).limit(1))
        row = conn.execute(query).first()
        return StoredEvent(*row) if row is not None else None

    # ------------------------------------------------------------------ the context view

    def context(self, session_id: str, at: int | None = None) -> ContextView:
        """The context to send to the model: system prompt, summary, kept tail, markers applied.

        `at` rebuilds the view as it was at that version (time travel). Only the latest
        compaction, the events from its first kept version on, and the few events it names
        are read, so the cost follows the size of the view, not of the history.
        """
        with self._read() as conn:
            source = self._projection_input(conn, session_id, at)
        return project(source)

    # ------------------------------------------------------------------ compaction

    def compact(self, session_id: str, policy: CompactionPolicy | None = None, summarizer: Summarizer | None = None,
                instructions: str | None = None, *, trigger: str = "manual", dry_run: bool = False
                ) -> CompactionResult | None:
        """Prune, rewrite and summarise the session's current view; append the decisions as events.

        Returns None when there is nothing to do. A recorded compaction leaves the view within
        the policy's threshold (escalating to a smaller kept tail and truncated items when a
        summary is not enough); when nothing can, `CompactionFailed` is raised and nothing is
        recorded. The transcript is never changed: the new events only change what
        `context()` shows. Appends do not wait for the summariser: the decisions hold for the
        history they were made on, and events appended meanwhile land in the kept tail.
        """
        view = self.context(session_id)
        return self._compact(view, policy or CompactionPolicy(), summarizer, instructions, trigger, dry_run)

    def maybe_compact(self, session_id: str, policy: CompactionPolicy | None = None,
                      summarizer: Summarizer | None = None) -> CompactionResult | None:
        """Compact only when the view is past the policy's threshold (call it before each model call).

        It cannot loop: a compaction that returns leaves the view within the threshold, so the
        next call does nothing until the session grows; one that cannot fit raises
        `CompactionFailed` before any summariser call, so asking again costs no model call.
        """
        policy = policy or CompactionPolicy()
        view = self.context(session_id)
        if not policy.over_threshold(view):
            return None
        return self._compact(view, policy, summarizer, None, "auto", False)

    def _compact(self, view: ContextView, policy: CompactionPolicy, summarizer: Summarizer | None,
                 instructions: str | None, trigger: str, dry_run: bool) -> CompactionResult | None:
        try:
            plan = plan_compaction(view, policy=policy, counter=self.token_counter,
                                   summarizer=summarizer or OfflineSummarizer(), trigger=trigger,
                                   instructions=instructions)
        except CompactionFailed as exc:
            log.warning("cannot compact", session_id=view.session_id, tokens=view.tokens, reason=exc.reason)
            raise
        if not plan.events:
            log.info("nothing to compact", session_id=view.session_id, tokens=view.tokens, reason=plan.reason)
            return None
        if dry_run:
            stored = tuple(provisional(plan.events, view, self.token_counter))
        else:
            result = self.append(view.session_id, plan.events)
            stored = tuple(self.events(view.session_id, after=result.version - len(plan.events),
                                       upto=result.version))
        log.info("compacted" if not dry_run else "compaction planned", session_id=view.session_id, trigger=trigger,
                 tokens_before=plan.tokens_before, tokens_after=plan.tokens_after, escalation=plan.escalation,
                 prunes=len(plan.prunes), rewrites=len(plan.rewrites), truncations=len(plan.truncations),
                 summarizer_calls=plan.summarizer_calls)
        return CompactionResult(view.session_id, trigger, stored, plan, dry_run)

    def stats(self, session_id: str) -> SessionStats:
        """Tokens of the whole transcript against the view, per kind; compactions and markers."""
        by_kind: dict[str, list[int]] = {}
        events = compactions = pruned = rewritten = transcript_tokens = 0
        for event in self.events(session_id):
            events += 1
            counts = by_kind.setdefault(event.kind, [0, 0])
            counts[0] += 1
            counts[1] += event.tokens
            if event.kind in ("message", "tool_call", "tool_result", "system") or (
                    event.kind == "custom" and event.payload.get("in_context")):
                transcript_tokens += event.tokens
            compactions += event.kind == "compaction"
            pruned += len(event.payload["targets"]) if event.kind == "prune" else 0
            rewritten += event.kind == "rewrite"
        view = self.context(session_id)
        return SessionStats(session_id, view.version, events, transcript_tokens, view.tokens,
                            {k: (v[0], v[1]) for k, v in by_kind.items()}, compactions, pruned, rewritten,
                            len(view.messages), len(view.diagnostics))

    def _projection_input(self, conn: Connection, session_id: str, at: int | None) -> ProjectionInput:
        head = self._head(conn, session_id)
        version = head if at is None else at
        if not 0 <= version <= head:
            raise VersionOutOfRange(session_id, version, head)
        compaction = self._latest(conn, session_id, "compaction", version)
        first_kept = compaction.payload["first_kept_version"] if compaction is not None else 1
        where = self._where_versions(self._lineage(conn, session_id), first_kept - 1, version)
        tail: list[StoredEvent] = []
        if where is not None:
            tail = [StoredEvent(*row) for row in
                    conn.execute(select(*_EVENT_COLUMNS).where(where).order_by(events_t.c.version))]
        return ProjectionInput(
            session_id=session_id,
            version=version,
            system=self._latest(conn, session_id, "system", version),
            compaction=compaction,
            scratchpad=self._latest(conn, session_id, "scratchpad", version),
            anchored=tuple(self._events_at(conn, session_id, named_versions(compaction))),
            tail=tuple(tail),
        )

    # ------------------------------------------------------------------ statistics

    def token_totals(self) -> dict[str, int]:
        """Tokens stored per session (its own events, not those inherited from a fork parent)."""
        query = select(events_t.c.session_id, func.sum(events_t.c.tokens)).group_by(events_t.c.session_id)
        with self._read() as conn:
            return {sid: int(total or 0) for sid, total in conn.execute(query)}
