"""The repository, written once: every operation of the store as a program (see `ops`).

Appends are optimistic and cost one statement. The repository remembers the head (version
and chain link) it last saw of each session; an append builds its rows on that head and
inserts them only if the head is still that one (`storage/statements.py`: a gated INSERT).
When the gate refuses — another writer got there first, or the remembered head was stale — it
reads the head and tries again; with `expected_version` it raises `ConcurrencyError` instead.
Checks that read history (a result's call must exist, a marker's target must be of the right
kind, a compaction may not move its cut backwards) read only versions up to that head, which
never change, and the gate proves the batch lands right after them: checked outside any
transaction, yet exact.

A fork shares its parent's history without copying it: a session's *lineage* is a chain of
(session, version range) segments, and every read of a session's events is a query over them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Final, NamedTuple

from .. import chain
from .. import events as ev
from ..compaction import native as provider_compaction
from ..compaction.files import modified_paths
from ..compaction.pipeline import Steps, compaction_steps, provisional, what_if
from ..compaction.policy import CompactionPolicy
from ..errors import (CompactionFailed, ConcurrencyError, DuplicateEvent, InvalidEvent, InvalidSearch, SessionErased,
                      SessionExists, SessionNotFound, VersionOutOfRange)
from ..events import NewEvent, StoredEvent
from ..projection import ContextView, ProjectionInput, advance, named_versions, project
from ..storage.statements import APPEND_CHUNK, NO_LIMIT, Statements, append_params
from ..summarizers.base import Summarizer, SummaryBatch
from ..summarizers.compacting import NotCompacted, ProviderCompactor
from ..summarizers.offline import OfflineSummarizer
from ..summarizers.typed import typed_messages
from ..logs import get_logger
from ..search import SEARCHED_KINDS, highlight, matches, needles, parse_query, search_text
from ..tokens import TokenCounter, count_events, counts_in_transcript
from .ops import BEGIN, COMMIT, ROLLBACK, Conflict, Execute, Program, Summarize
from .views import Fold, View, Views
from .results import AppendResult, CompactionResult, Conversation, SearchHit, SessionInfo, SessionStats, VerifyReport

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
RETRACT_RULE: Final = "retract"
RESET_STRATEGY: Final = "reset"


class Pages:
    """Paging over a program that reads one page (`events()`, `read_all()`): where the next page
    starts and how many rows are still wanted. Both doors stream with it, one page in memory."""

    def __init__(self, start: int, key: Callable[[Any], int], limit: int | None = None) -> None:
        self.after = start
        self._key = key
        self._left = limit
        self.done = limit is not None and limit <= 0

    def take(self, rows: list[Any]) -> list[Any]:
        """The rows of a page to hand out; moves past them, or ends the paging."""
        if self._left is not None:
            rows = rows[:self._left]
            self._left -= len(rows)
            self.done = self._left <= 0
        if len(rows) < PAGE:
            self.done = True
        else:
            self.after = self._key(rows[-1])
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


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True, slots=True)
class _Batch:
    """A batch validated, encoded, counted and hashed once, whatever the attempts."""

    events: tuple[NewEvent, ...]
    payloads: tuple[str, ...]
    metas: tuple[str, ...]
    tokens: tuple[int, ...]
    times: tuple[datetime, ...]
    contents: tuple[str, ...]

    def rows(self, sql: Statements, head: Head) -> tuple[list[tuple[Any, ...]], str]:
        """The rows to insert after `head`, chained from its link; and the last link."""
        rows = []
        previous = head.link
        for offset, event in enumerate(self.events):
            version = head.version + 1 + offset
            previous = chain.link(previous, event_id=event.event_id, version=version, kind=event.kind,
                                  created_at=self.times[offset], tokens=self.tokens[offset],
                                  content=self.contents[offset])
            rows.append((version, event.event_id, event.kind,
                         event.payload["call_id"] if event.kind in _CALL_KINDS else None,
                         self.payloads[offset], self.metas[offset], self.tokens[offset],
                         sql.bind_time(self.times[offset]), self.contents[offset], previous))
        return rows, previous


class Repository:
    """The store's logic for one database dialect, shared by `SessionStore` and `AsyncSessionStore`.

    It keeps three caches, all safe to share between threads and event loops: the lineage of
    each session (a parent's history never changes), the last head seen of each session (a
    hint: the gate of every append checks it), and the last views built (`views`: a read
    folds only the events since).
    """

    def __init__(self, sql: Statements, counter: Callable[[], TokenCounter], views: Views | None = None) -> None:
        self.sql = sql
        self._counter = counter
        self._lineages: dict[str, tuple[Segment, ...]] = {}
        self._heads: dict[str, Head] = {}
        self.views = views if views is not None else Views()

    # ------------------------------------------------------------------ sessions

    def create_session(self, session_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                       events: Iterable[NewEvent] | None = None, *, strict: bool = True,
                       fresh_id: str | None = None) -> Program[str]:
        """Create a session (version 0); with `events`, the session and its first batch in one
        transaction, so that an interrupted import never leaves an empty session behind.

        Without `session_id` the session gets `fresh_id` (the doors draw one per call, so that a
        retried call creates its session once): that id taken already can only be this call's
        own earlier try, whose outcome was unknown, and is returned as created."""
        sid = session_id or fresh_id or ev.new_event_id()
        mine = session_id is None and fresh_id is not None
        check_session_id(sid)
        params = self._session_row(sid, metadata, head_link=chain.genesis(sid))
        batch = self._prepare(self._first_batch(sid, ev.flatten(events)), strict=strict, history=False) \
            if events is not None else None
        if batch is None or not batch.events:
            try:
                yield Execute(self.sql.insert_session, params)
            except Conflict:
                if mine:
                    return sid
                raise SessionExists(sid) from None
            self._heads[sid] = Head(0, params["head_link"])
            return sid
        yield BEGIN
        try:
            yield Execute(self.sql.insert_session, params)
        except Conflict:
            if mine:
                return sid
            raise SessionExists(sid) from None
        rows, last_link = batch.rows(self.sql, Head(0, params["head_link"]))
        try:
            yield from self._insert(sid, 0, rows, last_link, in_transaction=True)
        except Conflict:  # an event id is stored already (the transaction is rolled back): say which
            yield from self._replayed(sid, batch)
            raise DuplicateEvent(batch.events[0].event_id, "or another event id of the batch is already stored "
                                                           "in another session") from None
        yield COMMIT
        self._heads[sid] = Head(len(rows), last_link)
        return sid

    def _first_batch(self, session_id: str, events: list[NewEvent]) -> list[NewEvent]:
        """A new session's first events, with the compaction a reply among them makes (as `append` adds it)."""
        found = provider_compaction.in_reply(events)
        if found is None:
            return events
        empty = project(ProjectionInput(session_id, 0))
        return [*events, provider_compaction.reply_compaction(empty, events, *found, self._counter())]

    def ensure_session(self, session_id: str, metadata: Mapping[str, Any] | None = None) -> Program[bool]:
        """Create `session_id` unless it exists; True when it was created (importers re-run safely)."""
        check_session_id(session_id)
        params = self._session_row(session_id, metadata, head_link=chain.genesis(session_id))
        created = yield Execute(self.sql.ensure_session, params)
        return bool(created)

    def _session_row(self, sid: str, metadata: Mapping[str, Any] | None, *, head_link: str,
                     parent_id: str | None = None, fork_version: int | None = None) -> dict[str, Any]:
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidEvent(f"metadata must be a JSON object, got {type(metadata).__name__}", field="metadata")
        meta = dict(metadata or {})
        ev.check_metadata(meta)
        return {"id": sid, "created_at": self.sql.bind_time(_now()), "metadata": ev.encode_json(meta),
                "parent_id": parent_id, "fork_version": fork_version, "head": fork_version or 0,
                "head_link": head_link}

    def session(self, session_id: str) -> Program[SessionInfo]:
        check_lookup_id(session_id)
        rows = yield Execute(self.sql.session, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        info = self._info(rows[0])
        if info.parent_id is not None:
            erased = yield from self._erased_owners(session_id)
            ancestor = next((seg.session_id for seg in (yield from self.lineage(session_id))
                             if seg.session_id in erased and seg.session_id != session_id), None)
            info = replace(info, erased_ancestor=ancestor)
        return info

    def _erased_owners(self, session_id: str) -> Program[set[str]]:
        """The sessions storing part of `session_id`'s lineage that are erased (erasure can happen
        at any time: never cached)."""
        owners = sorted({seg.session_id for seg in (yield from self.lineage(session_id))})
        rows = yield Execute(self.sql.erased_among, {"ids": self.sql.list_param(owners)})
        return {row[0] for row in rows}

    def sessions(self, limit: int | None = None) -> Program[list[SessionInfo]]:
        """Every session, oldest first."""
        rows = yield Execute(self.sql.sessions, {"limit": NO_LIMIT if limit is None else limit})
        return [self._info(row) for row in rows]

    def _info(self, row: Sequence[Any]) -> SessionInfo:
        decode = self.sql.decode
        return SessionInfo(row[0], decode.time(row[1]), decode.json(row[2]), row[3], row[4], row[5],  # type: ignore
                           decode.time(row[6]), row[7])

    def version(self, session_id: str) -> Program[int]:
        """The session's head: the version of its last event, 0 when it has none."""
        head = yield from self._read_head(session_id)
        return head.version

    def _read_head(self, session_id: str, *, lock: bool = False) -> Program[Head]:
        check_lookup_id(session_id)
        rows = yield Execute(self.sql.head_for_update if lock else self.sql.head, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        head = Head(int(rows[0][0]), rows[0][1], rows[0][2] is not None)
        self._heads[session_id] = head
        return head

    def fork(self, session_id: str, at: int | None = None, *, new_session_id: str | None = None,
             metadata: Mapping[str, Any] | None = None) -> Program[str]:
        """A new session whose history is `session_id`'s up to version `at` (default: its head).

        Nothing is copied: the child reads the parent's events up to `at` and appends its own
        from `at + 1` on. Its chain continues from the parent's link at `at`.
        """
        sid = new_session_id or ev.new_event_id()
        check_session_id(sid)
        check_version_argument("at", at, optional=True)
        check_lookup_id(session_id)
        rows = yield Execute(self.sql.head, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        head, head_link, erased_at = int(rows[0][0]), rows[0][1], rows[0][2]
        if erased_at is not None:
            raise SessionErased(session_id)
        at = head if at is None else at
        if not 0 <= at <= head:
            raise VersionOutOfRange(session_id, at, head)
        if at == 0:
            link = chain.genesis(sid)
        elif at == head:
            link = head_link
        else:
            link = yield from self._link_at(session_id, at)
        meta = {"forked_from": session_id, "fork_version": at, **dict(metadata or {})}
        try:
            yield Execute(self.sql.insert_session,
                          self._session_row(sid, meta, head_link=link, parent_id=session_id, fork_version=at))
        except Conflict:
            raise SessionExists(sid) from None
        self._heads[sid] = Head(at, link)
        log.info("session forked", parent=session_id, child=sid, at=at)
        return sid

    def _link_at(self, session_id: str, version: int) -> Program[str]:
        found = yield from self.events_page(session_id, after=version - 1, upto=version, columns="links")
        return str(found[0][1])

    # ------------------------------------------------------------------ lineage

    def lineage(self, session_id: str) -> Program[tuple[Segment, ...]]:
        """Where each stretch of the session's versions is stored (parents' are immutable: cached)."""
        cached = self._lineages.get(session_id) if isinstance(session_id, str) else None
        if cached is not None:
            return cached
        check_lookup_id(session_id)
        rows = yield Execute(self.sql.lineage_row, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        parent_id, fork_version = rows[0]
        own_from = 0
        inherited: list[Segment] = []
        if parent_id is not None:
            own_from = fork_version
            for seg in (yield from self.lineage(parent_id)):
                if seg.after >= own_from:
                    break
                inherited.append(seg._replace(upto=own_from if seg.upto is None else min(seg.upto, own_from)))
        lineage = (*inherited, Segment(session_id, own_from, None))
        self._lineages[session_id] = lineage
        return lineage

    # ------------------------------------------------------------------ reading

    def events_page(self, session_id: str, after: int = 0, upto: int | None = None,
                    kinds: Iterable[str] | None = None, limit: int = NO_LIMIT, *, columns: str = "events"
                    ) -> Program[list[Any]]:
        """Events with version in (after, upto], in version order, at most `limit` of them.

        Streams page by page from here (`events()` of both doors), so that memory stays
        constant however long the session, and no cursor or transaction stays open between
        pages.
        """
        check_version_argument("after", after)
        check_version_argument("upto", upto, optional=True)
        lineage = yield from self.lineage(session_id)
        params = self.sql.lineage_params(lineage, after, upto)
        if params is None:
            return []
        n = params.pop("_n")
        if columns == "links":
            rows = yield Execute(self.sql.links(n), params)
            return rows
        kinds = list(kinds) if kinds is not None else None
        if kinds is not None:
            # A kind no event can have (not a string, or holding a NUL) matches nothing.
            kinds = [k for k in kinds if isinstance(k, str) and "\x00" not in k]
            params["kinds"] = self.sql.list_param(kinds)
        params["limit"] = limit
        rows = yield Execute(self.sql.events_range(n, kinds=kinds is not None), params)
        return [self.sql.decode.event(row) for row in rows]

    def feed_page(self, after_position: int = 0, limit: int = PAGE) -> Program[list[StoredEvent]]:
        """The global feed after `after_position` (0: from the start), `limit` events at most.

        On PostgreSQL the feed is ordered by (transaction id, position) and ends below the
        oldest transaction still running: what it returns is final, and a reader that resumes
        after the last position it saw never misses a late commit (storage/statements.py).
        """
        check_version_argument("after_position", after_position)
        rows = yield Execute(self.sql.feed, {"after": after_position, "limit": limit})
        return [self.sql.decode.event(row) for row in rows]

    def _events_at(self, session_id: str, versions: Sequence[int]) -> Program[list[StoredEvent]]:
        if not versions:
            return []
        lineage = yield from self.lineage(session_id)
        params = self.sql.lineage_params(lineage)
        if params is None:
            return []
        n = params.pop("_n")
        params["versions"] = self.sql.list_param(sorted(set(versions)))
        rows = yield Execute(self.sql.events_at(n), params)
        return [self.sql.decode.event(row) for row in rows]

    def _latest(self, session_id: str, kind: str, upto: int | None = None) -> Program[StoredEvent | None]:
        """The last event of `kind` at or before `upto` (one index lookup per lineage segment)."""
        lineage = yield from self.lineage(session_id)
        params = self.sql.lineage_params(lineage, 0, upto)
        if params is None:
            return None
        n = params.pop("_n")
        params["kind"] = kind
        rows = yield Execute(self.sql.latest(n), params)
        return self.sql.decode.event(rows[0]) if rows else None

    # ------------------------------------------------------------------ the context view

    def context(self, session_id: str, at: int | None = None) -> Program[ContextView]:
        """The context to send to the model (DESIGN §5); `at` rebuilds it as it was then.

        Only the latest compaction, the events from its first kept version on and the few
        events it names are read: the cost follows the size of the view, not of the history.
        The current view is brought up to date from the last one this repository built when it
        can be (`_follow`): then only the events since are read.
        """
        check_version_argument("at", at, optional=True)
        if at is not None:
            head = yield from self._read_head(session_id)
            return project((yield from self._projection_input(session_id, head, at)))
        view = yield from self._current_view(session_id)
        return replace(view, messages=list(view.messages))  # the caller's list: appending to it leaves ours

    def _current_view(self, session_id: str) -> Program[ContextView]:
        """The kept view itself (compaction and statistics only read it; its learned calibration
        is computed once per version)."""
        def rebuild(head: Head) -> Program[ContextView]:
            return project((yield from self._projection_input(session_id, head, None)))

        return (yield from self._follow("context", session_id, rebuild, advance,
                                        lambda v: len(v.source.tail) + len(v.source.anchored)))

    def transcript(self, session_id: str) -> Program[list[StoredEvent]]:
        """Every event of the session (a fork's inherited ones included), brought up to date from
        the last transcript this repository read when it can be: what framework sessions read
        on every turn."""
        def rebuild(head: Head) -> Program[tuple[StoredEvent, ...]]:
            return tuple((yield from self.events_page(session_id, 0, head.version)))

        def extend(events: tuple[StoredEvent, ...], new: Sequence[StoredEvent]) -> tuple[StoredEvent, ...] | None:
            return None if any(e.erased_at is not None for e in new) else (*events, *new)

        return list((yield from self._follow("transcript", session_id, rebuild, extend, len)))

    def follow(self, session_id: str, fold: Fold[Any]) -> Program[Any]:
        """The caller's view `fold` of the session at its head, kept and folded forward like the
        store's own (`_follow`); rebuilt by folding the whole history into `fold.start()`."""
        def rebuild(head: Head) -> Program[Any]:
            view = fold.step(fold.start(), (yield from self.events_page(session_id, 0, head.version)))
            if view is None:
                raise ValueError(f"the fold {fold.name!r} refused a session's whole history")
            return view

        return (yield from self._follow(f"fold:{fold.name}", session_id, rebuild, fold.step, fold.weight))

    def _follow(self, what: str, session_id: str, rebuild: Callable[[Head], Program[Any]],
                advance: Callable[[Any, Sequence[StoredEvent]], Any], weight: Callable[[Any], int]) -> Program[Any]:
        """The view `what` of the session at its head, folded forward from the last one built.

        One statement reads the head. The view kept at that head (same version, same chain
        link) is returned as it is; a view kept at an older version takes the events after it
        (one statement) through the pure step `advance`, which returns None when only a
        rebuild can say (a compaction, a reset, an erasure). Anything else is rebuilt: an
        erased session, a fork (an ancestor's erasure changes its history without moving its
        head: forks are never kept), a head that went backwards (the database was replaced).
        """
        head = yield from self._read_head(session_id)
        kept = self.views.get(what, session_id)
        keep = not head.erased and len((yield from self.lineage(session_id))) == 1
        value = None
        if kept is not None and keep:
            if kept.version == head.version and kept.link == head.link:
                return kept.value
            if kept.version < head.version:
                value = advance(kept.value, (yield from self.events_page(session_id, kept.version, head.version)))
        if value is None:
            value = yield from rebuild(head)
        if keep:
            self.views.put(what, session_id, View(head.version, head.link, value, weight(value)))
        return value

    def projection_input(self, session_id: str, at: int | None = None) -> Program[ProjectionInput]:
        """What the projection folds at version `at` (default: the head)."""
        check_version_argument("at", at, optional=True)
        head = yield from self._read_head(session_id)
        return (yield from self._projection_input(session_id, head, at))

    def _projection_input(self, session_id: str, head: Head, at: int | None) -> Program[ProjectionInput]:
        """What the projection folds. An erased session has no view (`SessionErased`: its content
        is gone, and an empty view would let an agent carry on as if nothing had been said). A
        fork whose inherited history was erased with an ancestor keeps a view of what is left:
        tombstones are never in it, and when the latest compaction is one the view starts after it."""
        if head.erased:
            raise SessionErased(session_id)
        version = head.version if at is None else at
        if not 0 <= version <= head.version:
            raise VersionOutOfRange(session_id, version, head.version)
        compaction = yield from self._latest(session_id, "compaction", version)
        if compaction is not None and compaction.erased_at is not None:
            first_kept, compaction = compaction.version + 1, None
        else:
            first_kept = compaction.payload["first_kept_version"] if compaction is not None else 1
        tail = yield from self.events_page(session_id, first_kept - 1, version)
        system = yield from self._latest(session_id, "system", version)
        scratchpad = yield from self._latest(session_id, "scratchpad", version)
        anchored = yield from self._events_at(session_id, named_versions(compaction))
        return ProjectionInput(session_id=session_id, version=version, system=_kept(system), compaction=compaction,
                               scratchpad=_kept(scratchpad), anchored=tuple(e for e in anchored if _kept(e)),
                               tail=tuple(e for e in tail if _kept(e)))

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
            # never wait on PostgreSQL).
            locked = expected_version is None and attempt >= OPTIMISTIC_ATTEMPTS
            if locked:
                yield BEGIN
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

    def _prepare(self, events: Iterable[NewEvent], *, strict: bool, history: bool = True) -> _Batch:
        """Validate, encode, count and hash once (nothing touches the database before this passed)."""
        batch = tuple(events) if not isinstance(events, tuple) else events
        encoded = [ev.encode_event(event, i) for i, event in enumerate(batch)]
        check_batch(batch, strict)
        if strict and not history:
            check_self_contained(batch)
        tokens = count_events(self._counter(), [(e.kind, e.payload) for e in batch])
        now = _now()
        times = tuple(e.created_at or now for e in batch)
        contents = tuple(chain.content_hash(payload, event.meta) for event, (payload, _) in zip(batch, encoded))
        return _Batch(batch, tuple(p for p, _ in encoded), tuple(m for _, m in encoded), tuple(tokens), times,
                      contents)

    def _insert(self, session_id: str, known: int, rows: Sequence[tuple[Any, ...]], last_link: str, *,
                in_transaction: bool = False) -> Program[list[tuple[int, int]]]:
        """Insert rows after version `known`: one gated statement, or gated chunks in one transaction.
        Returns (position, version) pairs in version order; empty when the gate refused."""
        if len(rows) <= APPEND_CHUNK:
            returned = yield Execute(self.sql.append(len(rows)),
                                     append_params(self.sql, session_id, known, rows, last_link))
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

    def _replayed(self, session_id: str, batch: _Batch, derived: Sequence[str] = ()) -> Program[AppendResult | None]:
        """The original result when this batch was already stored; None when none of it was.
        `derived`: ids of events the store added to the batch (found with it, not compared)."""
        ids = [e.event_id for e in batch.events] + list(derived)
        found: dict[str, Sequence[Any]] = {}
        for start in range(0, len(ids), APPEND_CHUNK):
            rows = yield Execute(self.sql.stored_ids(), {"ids": self.sql.list_param(ids[start:start + APPEND_CHUNK])})
            found.update((row[0], row) for row in rows)
        if not found:
            return None
        for event, payload in zip(batch.events, batch.payloads):
            row = found.get(event.event_id)
            if row is None:
                raise DuplicateEvent(next(iter(found)), "is already stored, but its batch holds events that are not: "
                                                        "a batch is replayed whole or not at all")
            if row[1] != session_id or row[4] != event.kind or row[5] != payload:
                raise DuplicateEvent(event.event_id)
        rows = sorted(found.values(), key=lambda r: r[2])
        by_id = {r[0]: r[3] for r in rows}
        added = tuple(by_id[i] for i in derived if i in by_id)
        return AppendResult(rows[-1][2], tuple(by_id[e.event_id] for e in batch.events) + added, session_id)

    # ------------------------------------------------------------------ strict checks

    def _check_history(self, session_id: str, batch: _Batch, first: int) -> Program[None]:
        yield from self._check_calls_known(session_id, batch.events)
        yield from self._check_markers(session_id, batch.events, first)

    def _check_calls_known(self, session_id: str, batch: Sequence[NewEvent]) -> Program[None]:
        """A tool result must answer a call made before it, in this batch or in the session."""
        missing = unanswered_results(batch)
        if not missing:
            return
        lineage = yield from self.lineage(session_id)
        params = self.sql.lineage_params(lineage)
        known: set[str] = set()
        if params is not None:
            n = params.pop("_n")
            params["ids"] = self.sql.list_param(list(missing))
            known = {row[0] for row in (yield Execute(self.sql.known_calls(n), params))}
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
        marker = ev.prune(list(versions), mode="drop", rule=RETRACT_RULE, meta={"reason": reason})
        return (yield from self.append(session_id, [marker], expected_version))

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
                                                 meta={"reason": reason} if reason else None)
            return [provider_compaction.with_tokens_after(event, what_if(view, [event], self._counter()))]

        return (yield from self._append_on_head(session_id, compaction, expected_version))

    # ------------------------------------------------------------------ compaction

    def compact(self, session_id: str, policy: CompactionPolicy | None = None,
                summarizer: Summarizer | None = None, instructions: str | None = None, *, trigger: str = "manual",
                dry_run: bool = False) -> Program[CompactionResult | None]:
        """Prune, rewrite and summarise the session's current view; append the decisions as events.

        Returns None when there is nothing to do. A recorded compaction leaves the view within
        the policy's threshold (escalating to a bounded summary, a smaller kept tail and
        truncated items when the levels are not enough); when nothing can, `CompactionFailed`
        is raised and nothing is recorded. The transcript is never changed: the new events
        only change what `context()` shows. Appends do not wait for the summariser: the
        decisions hold for the history they were made on, and events appended meanwhile land
        in the kept tail.
        """
        view = yield from self._current_view(session_id)
        return (yield from self._compact(view, policy or CompactionPolicy(), summarizer, instructions, trigger,
                                         dry_run))

    def maybe_compact(self, session_id: str, policy: CompactionPolicy | None = None,
                      summarizer: Summarizer | None = None) -> Program[CompactionResult | None]:
        """Compact only when the view is past the policy's threshold (call it before each model call).

        It cannot loop: a compaction that returns leaves the view within the threshold, so the
        next call does nothing until the session grows; one that cannot fit raises
        `CompactionFailed` before any summariser call, so asking again costs no model call.
        """
        policy = policy or CompactionPolicy()
        view = yield from self._current_view(session_id)
        if not policy.over_threshold(view):
            return None
        return (yield from self._compact(view, policy, summarizer, None, "auto", False))

    def _compact(self, view: ContextView, policy: CompactionPolicy, summarizer: Summarizer | None,
                 instructions: str | None, trigger: str, dry_run: bool) -> Program[CompactionResult | None]:
        counter = self._counter()
        summarizer = summarizer or OfflineSummarizer()
        earlier: list[tuple[int, str]] = []
        modified: list[str] = []
        if view.compaction is not None and view.compaction.payload.get("strategy") == "imported":
            # Another agent's summary paraphrases the user's words and names files its own way, or
            # leaves them out: the transcript has them.
            before = yield from self.events_page(view.session_id, upto=view.compaction.payload["first_kept_version"]
                                                 - 1, kinds=("message", "tool_call"))
            earlier = typed_messages((e.version, e.payload) for e in before if e.kind == "message")
            modified = modified_paths((e.payload for e in before if e.kind == "tool_call"), policy)
        steps = compaction_steps(view, policy=policy, counter=counter, summarizer_name=summarizer.name,
                                 trigger=trigger, instructions=instructions, earlier_users=earlier,
                                 earlier_modified=modified)
        try:
            plan = yield from _answered(steps, summarizer)
        except CompactionFailed as exc:
            log.warning("cannot compact", session_id=view.session_id, tokens=view.tokens, reason=exc.reason)
            raise
        if isinstance(summarizer, ProviderCompactor) and plan.first_kept_version is not None and not dry_run:
            request = provider_compaction.native_request(view, plan.first_kept_version, instructions)
            (answer,) = yield Summarize(summarizer, SummaryBatch((request,)))
            if isinstance(answer, NotCompacted):
                log.warning("the provider did not compact: recorded with the portable summary",
                            session_id=view.session_id, reason=str(answer))
                plan = provider_compaction.declined(plan, str(answer))
            elif isinstance(answer, Exception):
                raise answer
            else:
                plan = provider_compaction.with_native(plan, view, answer, counter)
        if not plan.events:
            log.info("nothing to compact", session_id=view.session_id, tokens=view.tokens, reason=plan.reason)
            return None
        if dry_run:
            stored = tuple(provisional(plan.events, view, counter))
        else:
            result = yield from self.append(view.session_id, plan.events)
            stored = tuple((yield from self.events_page(view.session_id, after=result.version - len(plan.events),
                                                        upto=result.version)))
        log.info("compacted" if not dry_run else "compaction planned", session_id=view.session_id, trigger=trigger,
                 tokens_before=plan.tokens_before, tokens_after=plan.tokens_after, escalation=plan.escalation,
                 prunes=len(plan.prunes), rewrites=len(plan.rewrites), truncations=len(plan.truncations),
                 summarizer_calls=plan.summarizer_calls)
        return CompactionResult(view.session_id, trigger, stored, plan, dry_run)

    # ------------------------------------------------------------------ audit: the chain and erasure

    def verify(self, session_ids: Iterable[str] | None = None) -> Program[list[VerifyReport]]:
        """Check the chain of each session (default: every session, in id order; see `chain`).

        Each session is checked over its whole lineage, so a fork's inherited history is checked
        from the start and the fork's own events from the parent's link at the fork version.
        Reads page by page: memory stays constant however long the sessions.
        """
        if session_ids is None:
            ids = sorted(row[0] for row in (yield Execute(self.sql.session_ids)))
        else:  # one id alone too (DESIGN §9 writes `verify(session_id)`)
            ids = list(dict.fromkeys(_session_ids(session_ids)))
        reports = []
        for sid in ids:
            reports.append((yield from self._verify_one(sid)))
        broken = [r for r in reports if not r.ok]
        (log.warning if broken else log.info)("chain verified", sessions=len(reports), broken=len(broken))
        return reports

    def _verify_one(self, session_id: str) -> Program[VerifyReport]:
        check_lookup_id(session_id)
        rows = yield Execute(self.sql.head, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        head, head_link, erased_at = int(rows[0][0]), rows[0][1], rows[0][2]
        lineage = yield from self.lineage(session_id)
        erased = yield from self._erased_owners(session_id)
        check = chain.ChainCheck(session_id, chain.genesis(lineage[0].session_id))
        decode = self.sql.decode
        after = 0
        while check.broken is None:
            params = self.sql.lineage_params(lineage, after)
            if params is None:
                break
            params["limit"] = PAGE
            page = yield Execute(self.sql.chain_rows(params.pop("_n")), params)
            for owner, version, event_id, kind, created, tokens, content, link, payload, meta, erased_row in page:
                if not check.add(chain.Link(version, event_id, kind, decode.time(created), tokens,  # type: ignore[arg-type]
                                            content, link, payload, decode.json(meta), erased_row is not None,
                                            owner in erased)):
                    break
            if len(page) < PAGE:
                break
            after = page[-1][1]
        return VerifyReport(session_id, head, head_link, check.checked, erased_at is not None,
                            check.finish(head, head_link))

    def conversation(self, session_id: str) -> Program[Conversation]:
        """The session, the sessions that are part of it, and the forks of any of them (see
        `Conversation`): what `erase` reaches, and what it leaves."""
        check_lookup_id(session_id)
        rows = yield Execute(self.sql.session, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        parts = {session_id: self._info(rows[0])}
        frontier = [session_id]
        while frontier:  # parts of parts: a subagent's own subagents
            found = []
            for sid in frontier:
                for row in (yield Execute(self.sql.parts_of, {"sid": sid})):
                    if row[0] not in parts:
                        parts[row[0]] = self._info(row)
                        found.append(row[0])
            frontier = found
        forks: dict[str, SessionInfo] = {}
        frontier = list(parts)
        while frontier:  # forks of forks inherit the same history
            rows = yield Execute(self.sql.forks_of, {"ids": self.sql.list_param(frontier)})
            new = {row[0]: self._info(row) for row in rows if row[0] not in parts and row[0] not in forks}
            forks.update(new)
            frontier = list(new)
        return Conversation(session_id, tuple(parts.values()), tuple(forks.values()))

    def erase(self, session_id: str, reason: str, *, only_this: bool = False,
              vacuum: bool = False) -> Program[SessionInfo]:
        """Destroy the content of a conversation's events and metadata, in one transaction: the
        session and every session that is part of it (`conversation`), or with `only_this` the
        session alone. A user asking to be forgotten means the whole conversation: an imported
        Claude Code session's subagents and its summariser's transcript quote it.

        Each event keeps its kind, version, ids, token count, content hash and link, so that the
        chain still verifies (`chain`); its payload and meta become a tombstone naming `reason`.
        An erased session then takes no events, has no context and cannot be forked
        (`SessionErased`); forks keep their own events, and their inherited history is tombstones
        too. Erasing an erased session changes nothing.

        On SQLite nothing is left in the file either (secure delete, VACUUM, WAL checkpoint; the
        VACUUM rewrites the whole file). On PostgreSQL the old row versions stay in the tables
        until they are vacuumed — `vacuum=True` runs VACUUM FULL on both tables now, which locks
        them while it rewrites them — and in the server's WAL and backups, as with any UPDATE:
        the operator's retention of those decides when they are gone.
        """
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidEvent("an erasure needs a reason (a non-empty string): it is kept in every tombstone",
                               field="reason")
        if only_this:
            check_lookup_id(session_id)
            rows = yield Execute(self.sql.session, {"sid": session_id})
            if not rows:
                raise SessionNotFound(session_id)
            targets = [self._info(rows[0])]
        else:
            targets = list((yield from self.conversation(session_id)).parts)
        live = [info.id for info in targets if info.erased_at is None]
        if live:
            payload, meta = chain.tombstone(reason)
            now = self.sql.bind_time(_now())
            for statement in self.sql.erase_before:
                yield Execute(statement)
            yield BEGIN
            for sid in live:
                done = yield Execute(self.sql.erase_session, {"sid": sid, "metadata": "{}", "now": now,
                                                              "reason": reason})
                if done:  # else another erase got there first
                    yield Execute(self.sql.erase_events, {"sid": sid, "payload": payload,
                                                          "meta": ev.encode_json(meta), "now": now})
            yield COMMIT
            for statement in self.sql.erase_after:
                yield Execute(statement)
            for sid in live:
                self._heads.pop(sid, None)
                self.views.forget(sid)
            log.warning("session erased", session_id=session_id, parts=len(live), reason=reason)
        if vacuum:
            for statement in self.sql.vacuum:
                yield Execute(statement)
        return (yield from self.session(session_id))

    # ------------------------------------------------------------------ statistics

    def stats(self, session_id: str) -> Program[SessionStats]:
        """Tokens of the whole transcript against the view, per kind; compactions and markers."""
        by_kind: dict[str, list[int]] = {}
        events = compactions = pruned = rewritten = transcript_tokens = 0
        after = 0
        while True:
            page = yield from self.events_page(session_id, after=after, limit=PAGE)
            for event in page:
                events += 1
                counts = by_kind.setdefault(event.kind, [0, 0])
                counts[0] += 1
                counts[1] += event.tokens
                if event.erased_at is not None:  # a tombstone (a fork's history erased with its ancestor)
                    continue
                if counts_in_transcript(event.kind, event.payload):
                    transcript_tokens += event.tokens
                compactions += event.kind == "compaction"
                pruned += len(event.payload["targets"]) if event.kind == "prune" else 0
                rewritten += event.kind == "rewrite"
            if len(page) < PAGE:
                break
            after = page[-1].version
        view = yield from self._current_view(session_id)
        estimate = view.window_estimate()
        reported = estimate.basis != "ratio"  # "ratio": no usage report, only our count scaled
        return SessionStats(session_id, view.version, events, transcript_tokens, view.tokens,
                            {k: (v[0], v[1]) for k, v in by_kind.items()}, compactions, pruned, rewritten,
                            len(view.messages), len(view.diagnostics),
                            estimate.tokens if reported else None, estimate.basis if reported else None)

    def token_totals(self) -> Program[dict[str, int]]:
        """Tokens stored per session (its own events, not those inherited from a fork parent)."""
        rows = yield Execute(self.sql.token_totals)
        return {sid: int(total or 0) for sid, total in rows}

    def transcript_tokens(self, session_ids: Iterable[str] | None = None) -> Program[dict[str, int]]:
        """Each session's token figure (`tokens.transcript_tokens`), summed in the database; a fork
        counts the history it inherits up to its fork version."""
        totals = {sid: int(total or 0) for sid, total in (yield Execute(self.sql.transcript_totals))}
        if session_ids is None:
            wanted = {row[0] for row in (yield Execute(self.sql.session_ids))}
        else:
            wanted = set(_session_ids(session_ids))
        for (fork,) in (yield Execute(self.sql.forks)):
            if fork not in wanted:
                continue
            params = self.sql.lineage_params((yield from self.lineage(fork)))
            if params is None:
                totals[fork] = 0
                continue
            rows = yield Execute(self.sql.transcript_sum(params.pop("_n")), params)
            totals[fork] = int(rows[0][0] or 0)
        return {sid: totals.get(sid, 0) for sid in wanted}

    # ------------------------------------------------------------------ finding (the CLI's listings)

    def find_sessions(self, prefix: str, *, limit: int | None = None) -> Program[list[str]]:
        """The ids that start with `prefix` (taken literally: ``%`` and ``_`` are no wildcards), sorted."""
        pattern = prefix.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"
        rows = yield Execute(self.sql.find_sessions, {"pattern": pattern, "limit": NO_LIMIT if limit is None else limit})
        return [row[0] for row in rows]

    def first_event_times(self) -> Program[dict[str, datetime]]:
        """When each session's own first event happened (for imported events: the source's timestamp)."""
        rows = yield Execute(self.sql.first_times)
        return {sid: self.sql.decode.time(when) for sid, when in rows if when is not None}  # type: ignore[misc]

    def first_message(self, session_id: str, role: str = "user") -> Program[StoredEvent | None]:
        """The first message of `role` in the session's history (a fork's inherited history included)."""
        params = self.sql.lineage_params((yield from self.lineage(session_id)))
        if params is None:
            return None
        n = params.pop("_n")
        params["role"] = role
        rows = yield Execute(self.sql.first_message(n), params)
        return self.sql.decode.event(rows[0]) if rows else None

    # ------------------------------------------------------------------ search

    def search(self, query: str, session_id: str | None = None, kind: str | None = None, tool: str | None = None,
               limit: int = SEARCH_LIMIT) -> Program[list[SearchHit]]:
        """Events whose text matches `query` (see `sessionstore.search`), best first.

        `session_id` limits the search to that session's history (a fork's inherited events
        included; a hit reports the session that stores it); `kind` to one searched kind; `tool`
        to the calls of that tool and their results.
        """
        parsed = parse_query(query)
        if not parsed.scans:
            yield from self.index_feed()
        if kind is not None and kind not in SEARCHED_KINDS:
            raise InvalidSearch(f"events of kind {kind!r} are not searched; the searched kinds are "
                                f"{', '.join(SEARCHED_KINDS)}", query=query)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidSearch(f"limit must be a positive integer, got {limit!r}", query=query)
        scan = needles(parsed) if parsed.scans else None
        params: dict[str, Any] = {"limit": min(limit, NO_LIMIT)}
        if parsed.scans:
            params.update({f"needle{i}": needle for i, needle in enumerate(scan or ())}, limit=NO_LIMIT)
        else:
            params["q"] = self.sql.search_match(parsed)
        n = 0
        if session_id is not None:
            lineage_params = self.sql.lineage_params((yield from self.lineage(session_id)))
            if lineage_params is None:
                return []
            n = lineage_params.pop("_n")
            params.update(lineage_params)
        if kind is not None:
            params["kind"] = kind
        if tool is not None:
            params["tool"] = tool
        rows = yield Execute(self.sql.search(n, kind=kind is not None, tool=tool is not None,
                                             scan=len(scan or ()) if parsed.scans else None), params)
        hits = []
        for row in rows:
            event = self.sql.decode.event(row)
            text = search_text(event.kind, event.payload)
            score = matches(parsed, text) if parsed.scans else float(row[-2] or 0.0)
            if parsed.scans and not score:
                continue
            snippet, spans = highlight(text, parsed)
            hits.append(SearchHit(event, snippet, spans, score, row[-1]))
        if parsed.scans:  # a scan: best first, then in order, as many as asked
            hits = sorted(hits, key=lambda h: -h.score)[:limit]
        return hits


    def index_feed(self) -> Program[int]:
        """Bring the search index up to the global feed's head; how many events it took (searched
        or not). Appends no longer index (migration 0004): a search calls this first, so that
        results are exact, and an application may call it from a background task to keep
        searches short. On PostgreSQL the index follows the feed's final part (transactions
        below the oldest one running) and a search matches the events after it on the fly."""
        taken = 0
        if self.sql.postgres:
            while True:
                rows = yield Execute(self.sql.index_feed, {"limit": INDEX_BATCH})
                count = int(rows[0][0]) if rows else 0
                taken += count
                if count < INDEX_BATCH:
                    return taken
        behind, index, advance = self.sql.search_behind
        place, head = (yield Execute(behind))[0]
        if place >= head:
            return 0
        yield BEGIN  # the write lock: indexers and erasures queue
        yield Execute(index)
        yield Execute(advance)
        yield COMMIT
        return int(head - place)


def _kept(event: StoredEvent | None) -> StoredEvent | None:
    """`event` unless it is a tombstone (a view never holds one)."""
    return event if event is not None and event.erased_at is None else None


def _answered(steps: Steps, summarizer: Summarizer) -> Program[Any]:
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


def reset_marker(head: int, reason: str) -> NewEvent:
    """The marker `reset` appends after version `head`: a compaction with no summary whose cut is
    itself (integrations put it first in a batch of their own, appended after `head`)."""
    return ev.compaction("", head + 1, tokens_after=0, trigger="manual", strategy=RESET_STRATEGY,
                         summarizer="none", details={"reset": True}, meta={"reason": reason})


__all__ = ["APPEND_ATTEMPTS", "PAGE", "RESET_STRATEGY", "RETRACT_RULE", "Head", "reset_marker", "Repository", "Segment",
           "check_batch", "check_session_id"]


def _session_ids(session_ids: Iterable[str]) -> list[str]:
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
