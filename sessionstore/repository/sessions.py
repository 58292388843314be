"""Sessions and their lineage: creating, reading, forking; a fork shares its parent's history
through lineage segments, never a copy."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from .. import chain
from .. import events as ev
from ..compaction import native as provider_compaction
from ..errors import DuplicateEvent, InvalidEvent, SessionErased, SessionExists, SessionNotFound, VersionOutOfRange
from ..events import NewEvent
from ..finding import FORK_KEEPS, encode_cursor, parse_time, session_query
from ..projection import ProjectionInput, project
from ..storage.listing import listing_params
from ..storage.statements import NO_LIMIT
from .base import Head, Part, Segment, check_lookup_id, check_session_id, check_version_argument, log, utc_now
from .ops import BEGIN, COMMIT, Conflict, Execute, Program
from .results import SessionInfo, SessionPage


class SessionsPart(Part):
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
        batch = self._prepare(self._first_batch(sid, ev.flatten(events)), strict=strict, history=False) \
            if events is not None else None
        params = self._session_row(sid, metadata, head_link=chain.genesis(sid),
                                   first_event=batch.times[0] if batch is not None and batch.times else None)
        if batch is None or not batch.events:
            if (yield from self._insert_session(sid, params, mine)):
                self._heads[sid] = Head(0, params["head_link"])
            return sid
        yield BEGIN
        if not (yield from self._insert_session(sid, params, mine)):
            return sid
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

    def _insert_session(self, sid: str, params: dict[str, Any], mine: bool) -> Program[bool]:
        """Insert the session's row: False when this call's own fresh id is there already (a retried
        call whose first try committed); someone else's id is `SessionExists`."""
        try:
            yield Execute(self.sql.insert_session, params)
        except Conflict:
            if mine:
                return False
            raise SessionExists(sid) from None
        return True

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
                     parent_id: str | None = None, fork_version: int | None = None,
                     first_event: datetime | None = None) -> dict[str, Any]:
        """The session's row. Its start (`SessionInfo.started_at`, what `sessions()` orders by) is
        the metadata's `started_at` (an import's source time), else its first event's, else now:
        fixed here, so that a cursor's place never moves; its last activity starts there."""
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidEvent(f"metadata must be a JSON object, got {type(metadata).__name__}", field="metadata")
        meta = dict(metadata or {})
        ev.check_metadata(meta)
        now = utc_now()
        started = self.sql.bind_time(parse_time(meta.get("started_at")) or first_event or now)
        return {"id": sid, "created_at": self.sql.bind_time(now), "metadata": ev.encode_json(meta),
                "parent_id": parent_id, "fork_version": fork_version, "head": fork_version or 0,
                "head_link": head_link, "started_at": started, "last_event_at": started}

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

    def sessions(self, *, where: Mapping[str, Any] | None = None, since: datetime | str | None = None,
                 until: datetime | str | None = None, agent: str | None = None, project: str | None = None,
                 limit: int | None = None, after: str | None = None) -> Program[SessionPage]:
        """The sessions asked for (checked and planned by `finding.session_query`), newest first, a
        page at a time: one indexed statement (`storage/listing.py`)."""
        query = session_query(where=where, since=since, until=until, agent=agent, project=project, limit=limit,
                              after=after)
        limit = NO_LIMIT if query.limit is None else query.limit
        if limit == 0:
            return SessionPage()
            yield  # a program, even when it asks nothing
        params = listing_params(query, self.sql.postgres, self.sql.bind_time, ev.encode_json, limit)
        rows = yield Execute(self.sql.listing(query.shape), params)
        infos = [self._info(row) for row in rows]
        last = infos[-1] if query.limit is not None and len(infos) == query.limit else None
        return SessionPage(infos, encode_cursor(last.started_at, last.id) if last and last.started_at else None)

    def _info(self, row: Sequence[Any]) -> SessionInfo:
        decode = self.sql.decode
        # metadata is a JSON object: text is its JSON (how `sessions()` reads it on both backends)
        meta = json.loads(row[2]) if isinstance(row[2], str) else decode.json(row[2])
        return SessionInfo(row[0], decode.time(row[1]), meta, row[3], row[4], row[5],  # type: ignore
                           decode.time(row[6]), row[7], started_at=decode.time(row[8]),
                           last_event_at=decode.time(row[9]))

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
        rows = yield Execute(self.sql.fork_source, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        head, head_link, erased_at = int(rows[0][0]), rows[0][1], rows[0][2]
        parent_meta = self.sql.decode.json(rows[0][3])
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
        # The fork is its conversation's: found by the same user, agent and project (`finding.FORK_KEEPS`).
        kept = {key: parent_meta[key] for key in FORK_KEEPS if key in parent_meta}
        meta = {**kept, "forked_from": session_id, "fork_version": at, **dict(metadata or {})}
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
