"""Every SQL statement the repository runs, compiled once per dialect, and how rows come back.

The statements are written in SQLAlchemy Core against the same table objects as the schema,
compiled once for the engine's dialect, and run on the driver connection with already-encoded
parameters: building and compiling a Core statement costs more than SQLite takes to execute a
small one, and the async drivers charge per call (aiosqlite hands every call to a thread:
~120 µs here), so the repository runs few, prepared statements.

An append is ONE statement that inserts only if the session's head is still the version the
writer built the batch on:

- PostgreSQL: a data-modifying CTE advances the head with a compare-and-set (``UPDATE sessions
  … WHERE head = :known RETURNING``, which also row-locks the session so that its writers
  queue) and the INSERT takes its rows from it: no row, no insert.
- SQLite has no data-modifying CTEs: the INSERT selects from a materialised gate (``SELECT id
  FROM sessions WHERE id = :sid AND head = :known``), and a trigger (migration 0002) advances
  the head as rows land. SQLite serialises writers, and an autocommit INSERT takes the write
  lock before it reads the gate, so the gate cannot go stale between read and write. That is a
  single event's append. A batch runs in one transaction instead: the gate is an UPDATE that
  moves the head (``… WHERE id = :sid AND head = :known RETURNING id``), then its rows are
  inserted plain; the trigger fires only for a row past the head (migration 0010), so a batch
  pays one UPDATE of its session, not one a row.

Rows come back raw from the driver: `Decoder` turns SQLite's JSON and time text into values
(psycopg already returns parsed JSON and aware datetimes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from functools import lru_cache
from operator import itemgetter
from typing import Any, Final

from sqlalchemy import (Dialect, Integer, String, Text, and_, any_, bindparam, case, cast, column, func,
                        literal_column, or_, select, table, tuple_, union_all)
from sqlalchemy.dialects.postgresql import ARRAY

from ..events import StoredEvent
from ..search import SEARCHED_KINDS, Query, fts5_query, tsquery
from ..tokens import TRANSCRIPT_KINDS, TokenCounter, count_events
from .distribution import DISTRIBUTED_PROBE
from .listing import listing_sql
from .packing import SQL_FUNCTION, pack, unpack
from .tables import PARENT_SESSION, SEARCH_INDEX, UTCDateTime, events, sessions

# A summed token count: an event stored since the sums' `count_tokens` ran is not counted yet
# (`tokens.UNCOUNTED`) and is left out, as if the sum had run before it was appended.
_COUNTED: Final = case((events.c.tokens >= literal_column("0"), events.c.tokens), else_=literal_column("0"))
# Versions are Integer columns: "no upper bound" is the largest one.
NO_LIMIT: Final = 2**31 - 1
# Rows per append statement: within SQLite's 32,766 and PostgreSQL's 65,535 parameters.
APPEND_CHUNK: Final = 500
EVENT_COLUMNS: Final = (events.c.event_id, events.c.session_id, events.c.version, events.c.position, events.c.kind,
                        events.c.payload, events.c.meta, events.c.tokens, events.c.created_at, events.c.erased_at)
SESSION_COLUMNS: Final = (sessions.c.id, sessions.c.created_at, sessions.c.metadata, sessions.c.parent_id,
                          sessions.c.fork_version, sessions.c.head, sessions.c.erased_at, sessions.c.erase_reason,
                          sessions.c.started_at, sessions.c.last_event_at)
_SESSION_INSERT: Final = ("id", "created_at", "metadata", "parent_id", "fork_version", "head", "head_link",
                          "started_at", "last_event_at")
APPENDED_COLUMNS: Final = ("version", "event_id", "kind", "call_id", "payload", "meta", "tokens", "created_at",
                           "content_hash", "link")


class Prepared:
    """A statement compiled for one dialect; `params` orders values as the driver wants them."""

    __slots__ = ("sql", "_pick", "_defaults")

    def __init__(self, statement: Any, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect) if not isinstance(statement, str) else None
        self.sql: str = compiled.string if compiled is not None else statement
        order = tuple(compiled.positiontup or ()) if compiled is not None and dialect.positional else ()
        # Values the compiler bound itself (e.g. SQLite's OFFSET 0 after a LIMIT parameter).
        self._defaults = {name: bind.value for name, bind in compiled.binds.items()
                          if bind.value is not None} if compiled is not None else {}
        self._pick: Callable[[Mapping[str, Any]], Any] | None = None
        if order:
            pick = itemgetter(*order)
            self._pick = pick if len(order) > 1 else (lambda values: (pick(values),))

    def params(self, values: Mapping[str, Any] | Sequence[Any]) -> Sequence[Any] | Mapping[str, Any]:
        if self._defaults:
            values = {**self._defaults, **(values or {})}  # type: ignore[dict-item]
        return values if self._pick is None else self._pick(values)

    def __repr__(self) -> str:
        return f"Prepared({self.sql!r})"


def _payload_text(postgres: bool, key: str, source: str = "events") -> Any:
    """The payload's top-level `key` as SQL text, written out (no bound JSON path to prepare);
    `source` names the table or alias the payload is read from.

    PostgreSQL's text cannot hold a JSON string's \\u0000 or lone surrogate, and ``->>`` refuses
    the whole payload when any of its strings has one (a tool input holding a NUL made every
    search that hit its call fail): such a payload is read with those escapes as spaces, as the
    search index reads it (migration 0003's `sessionstore_search_text`)."""
    if not postgres:  # (a large payload is stored compressed: `storage/packing.py`)
        return literal_column(f"json_extract({SQL_FUNCTION}({source}.payload), '$.{key}')")
    payload = f"{source}.payload"
    return literal_column(
        rf"(CASE WHEN {payload}::text ~ '\\u(0000|[dD][89abcdefABCDEF])' "
        rf"THEN regexp_replace(replace({payload}::text, '\\', '\u005c'), "
        rf"'\\u(0000|[dD][89abcdefABCDEF][0-9a-fA-F]{{2}})', '\u0020', 'g')::json ELSE {payload} END) ->> '{key}'")


def _in_transcript(postgres: bool) -> Any:
    """The events `tokens.transcript_tokens` counts (what a model would read), as SQL."""
    kinds = [literal_column(f"'{kind}'") for kind in sorted(TRANSCRIPT_KINDS)]
    in_context = _payload_text(postgres, "in_context") == literal_column("'true'" if postgres else "1")
    return or_(events.c.kind.in_(kinds), and_(events.c.kind == literal_column("'custom'"), in_context))


def _lineage(n: int, after: str = "lo", upto: str = "hi", source: Any = events) -> Any:
    """Versions (lo_i, hi_i] of segment i stored under session s_i, for the n segments of a lineage
    (of the events table, or of `source`, a subquery with its columns)."""
    parts = [and_(source.c.session_id == bindparam(f"s{i}"), source.c.version > bindparam(f"{after}{i}"),
                  source.c.version <= bindparam(f"{upto}{i}")) for i in range(n)]
    return parts[0] if n == 1 else or_(*parts)


class Statements:
    """The repository's SQL for one dialect. Shapes that vary (the number of lineage segments,
    the rows of an append) are compiled on first use and cached."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.backend: str = dialect.name
        self.postgres = self.backend == "postgresql"
        self.bind_time: Callable[[Any], Any] = UTCDateTime().bind_processor(dialect) or (lambda value: value)
        self.decode = Decoder(self.backend)
        # Is the schema distributed (Citus, `storage/distribution.py`)? Asked of the database once,
        # by the first program that depends on it (`Repository._shape`): never at construction.
        self.distributed: bool | None = None
        self.forget_shape()
        p = self._prepare
        self.distributed_probe = p(DISTRIBUTED_PROBE)
        sid = bindparam("sid")
        # sessions
        head = select(sessions.c.head, sessions.c.head_link, sessions.c.erased_at).where(sessions.c.id == sid)
        self.head = p(head)
        self.fork_source = p(head.add_columns(sessions.c.metadata))
        # Inside BEGIN: PostgreSQL locks the session's row (its writers queue); SQLite's BEGIN
        # IMMEDIATE already holds the one write lock.
        self.head_for_update = p(head.with_for_update() if self.postgres else head)
        self.lineage_row = p(select(sessions.c.parent_id, sessions.c.fork_version).where(sessions.c.id == sid))
        self.session = p(select(*SESSION_COLUMNS).where(sessions.c.id == sid))
        self._session_columns = ", ".join(c.name for c in SESSION_COLUMNS)
        # Raw SQL with named parameters (sqlite3 takes :name with a dict, psycopg %(name)s).
        values = ", ".join(("%({})s" if self.postgres else ":{}").format(c) for c in _SESSION_INSERT)
        values = values.replace("%(metadata)s", "%(metadata)s::jsonb")
        insert = f"INSERT INTO sessions ({', '.join(_SESSION_INSERT)}) VALUES ({values})"
        self.insert_session = p(insert)
        # Creates the session unless it exists, in one statement (importers re-run safely).
        self.ensure_session = p(insert + " ON CONFLICT (id) DO NOTHING RETURNING id")
        # A session's metadata, read inside BEGIN to be merged and written back (`update_metadata`):
        # PostgreSQL locks the row; SQLite's BEGIN IMMEDIATE already holds the one write lock.
        metadata = select(sessions.c.metadata, sessions.c.erased_at).where(sessions.c.id == sid)
        self.metadata_for_update = p(metadata.with_for_update() if self.postgres else metadata)
        named = "%({})s" if self.postgres else ":{}"
        self.set_metadata = p(f"UPDATE sessions SET metadata = {named.format('metadata')}"
                              f"{'::jsonb' if self.postgres else ''} WHERE id = {named.format('sid')}")
        self.begin = "BEGIN" if self.postgres else "BEGIN IMMEDIATE"
        # the global feed
        after, limit = bindparam("after"), bindparam("limit")
        feed = select(*EVENT_COLUMNS)
        if self.postgres:
            # Transactions below the oldest one still running are final: their rows, ordered by
            # (txid, position), can never be joined by a late commit. A reader resumes after the
            # (txid, position) of the last event it saw (or of the closest one before it).
            horizon = literal_column("pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
            resume = func.coalesce(
                select(events.c.txid).where(events.c.position == after).scalar_subquery(),
                select(events.c.txid).where(events.c.position < after).order_by(events.c.position.desc())
                .limit(1).scalar_subquery(), -1)
            feed = (feed.where(events.c.txid < horizon, tuple_(events.c.txid, events.c.position) > tuple_(resume, after))
                    .order_by(events.c.txid, events.c.position))
        else:
            feed = feed.where(events.c.position > after).order_by(events.c.position)  # one writer at a time
        self.feed = p(feed.limit(limit))
        # Citus: where the search indexer stands in each node group's feed (`Repository.index_feed`)
        self.search_places = p("SELECT places FROM search_feed WHERE id = 1")
        self.search_places_for_update = p("SELECT places FROM search_feed WHERE id = 1 FOR UPDATE")
        self.set_search_places = p("UPDATE search_feed SET places = %(places)s WHERE id = 1")
        # Citus: each node group's horizon, asked of the node itself (`repository/feed.py`)
        # (the coordinator's own too when it is not in the node list: it stamps what runs on it)
        self.node_horizons = p("SELECT n.groupid, r.success, r.result FROM run_command_on_all_nodes("
                               "'SELECT pg_snapshot_xmin(pg_current_snapshot())') r "
                               "JOIN pg_dist_node n ON n.nodeid = r.nodeid UNION ALL "
                               "SELECT 0, true, pg_snapshot_xmin(pg_current_snapshot())::text "
                               "WHERE NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE groupid = 0)")
        # the search indexer, which follows the feed (migration 0004; `Repository._index_feed`)
        searched = ", ".join(f"'{k}'" for k in SEARCHED_KINDS)
        if self.postgres:
            # One statement: take the indexer's place (row-locked: indexers queue), index the next
            # `limit` final events of the feed, move the place; returns how many it took.
            self.index_feed = p(
                "WITH cur AS (SELECT txid, position FROM search_feed WHERE id = 1 FOR UPDATE), "
                "new AS (SELECT e.session_id, e.position, e.txid, e.kind, e.payload, e.erased_at FROM events e, cur "
                "WHERE e.txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint "
                "AND (e.txid, e.position) > (cur.txid, cur.position) ORDER BY e.txid, e.position LIMIT %(limit)s), "
                "ins AS (INSERT INTO event_search (session_id, position, words) SELECT session_id, position, "
                "sessionstore_search_words(sessionstore_search_text(kind, payload)) FROM new "
                f"WHERE kind IN ({searched}) AND erased_at IS NULL ON CONFLICT (session_id, position) DO NOTHING), "
                "last AS (SELECT txid, position FROM new ORDER BY txid DESC, position DESC LIMIT 1) "
                "UPDATE search_feed SET txid = last.txid, position = last.position FROM last "
                "WHERE search_feed.id = 1 RETURNING (SELECT count(*) FROM new)")
            # Are the last final event of the feed, and its last event, past the indexer's place?
            # A read, so that a search with nothing to index (most of them) neither locks the place
            # nor commits a write, and with nothing past it (most of them) matches nothing on the
            # fly. Each is one step of the feed's index, backwards (a filter over the events after
            # the place was planned as a scan of the whole table).
            last = ("EXISTS (SELECT 1 FROM (SELECT txid, position FROM events {} ORDER BY txid DESC, "
                    "position DESC LIMIT 1) AS last, search_feed f WHERE f.id = 1 AND "
                    "(last.txid, last.position) > (f.txid, f.position))")
            self.index_pending = p(
                f"SELECT {last.format('WHERE txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint')}, "
                f"{last.format('')}")
            self.search_behind = ()
        else:
            # Where the indexer stands and the feed's head; when behind, the indexing runs in a
            # write transaction (SQLite's one writer: indexers and erasures queue).
            self.search_behind = (p("SELECT (SELECT position FROM search_feed WHERE id = 1), "
                                    "(SELECT coalesce(max(position), 0) FROM events)"),
                                  p(f"INSERT INTO {SEARCH_INDEX}(rowid, body) SELECT position, body "
                                    "FROM events_search_source WHERE position > (SELECT position FROM search_feed "
                                    "WHERE id = 1) AND erased_at IS NULL"),
                                  p("UPDATE search_feed SET position = (SELECT coalesce(max(position), 0) FROM events) "
                                    "WHERE id = 1"))
        # SQLite, a batch: the gate as an UPDATE that moves the head in the batch's transaction, so
        # that the head trigger (migration 0010: only for a row past the head) skips its rows
        self.advance_head = None if self.postgres else p(
            "UPDATE sessions SET head = :last, head_link = :last_link, last_event_at = MAX(last_event_at, :last_at) "
            "WHERE id = :sid AND head = :known AND erased_at IS NULL RETURNING id")
        self.token_totals = p(select(events.c.session_id, func.sum(_COUNTED)).group_by(events.c.session_id))
        # token counting off the append path (`repository/counting.py`): the events stored
        # uncounted (migration 0010's partial index holds only them), and their counts written back
        uncounted = select(events.c.session_id, events.c.position, events.c.kind, events.c.payload) \
            .where(events.c.tokens < literal_column("0")).limit(bindparam("limit"))
        self.uncounted = p(uncounted)
        self.uncounted_of = p(uncounted.where(events.c.session_id == sid))
        self.set_tokens = p(
            "UPDATE events SET tokens = v.t FROM unnest(%(positions)s::bigint[], %(counts)s::int[]) AS v(p, t) "
            "WHERE events.session_id = %(sid)s AND events.position = v.p AND events.tokens < 0" if self.postgres else
            "UPDATE events SET tokens = json_extract(v.value, '$[1]') FROM json_each(:counts) AS v "
            "WHERE events.session_id = :sid AND events.position = json_extract(v.value, '$[0]') AND events.tokens < 0")
        # listings (the CLI's): prefixes, the one token figure, when sessions happened
        self.find_sessions = p(select(sessions.c.id).where(sessions.c.id.like(bindparam("pattern"), escape="/"))
                               .order_by(sessions.c.id).limit(bindparam("limit")))
        self.in_transcript = _in_transcript(self.postgres)
        self.transcript_totals = p(select(events.c.session_id, func.sum(_COUNTED)).where(self.in_transcript)
                                   .group_by(events.c.session_id))
        self.session_ids = p(select(sessions.c.id))
        self.forks = p(select(sessions.c.id).where(sessions.c.parent_id.is_not(None)))
        self.first_times = p(select(events.c.session_id, func.min(events.c.created_at)).group_by(events.c.session_id))
        # audit: which of some sessions are erased; erasure (one transaction: sessions first, so that
        # on PostgreSQL it queues behind an append in flight and every later append's gate refuses)
        self.erased_among = p(select(sessions.c.id).where(self.in_list(sessions.c.id, "ids"),
                                                          sessions.c.erased_at.is_not(None)))
        named = "%({})s" if self.postgres else ":{}"
        self.erase_session = p(
            f"UPDATE sessions SET metadata = {named.format('metadata')}{'::jsonb' if self.postgres else ''}, "
            f"erased_at = {named.format('now')}, erase_reason = {named.format('reason')} "
            f"WHERE id = {named.format('sid')} AND erased_at IS NULL RETURNING id")
        # retention's erasure: only while the session's head is the one the policy chose it at
        # (a session appended to since is not old any more; on PostgreSQL the UPDATE waits for an
        # append in flight and then sees its head)
        self.erase_session_at = p(self.erase_session.sql.replace(
            "AND erased_at IS NULL", f"AND head = {named.format('head')} AND erased_at IS NULL"))
        self.erase_events = p(
            f"UPDATE events SET payload = {named.format('payload')}{'::json' if self.postgres else ''}, "
            f"meta = {named.format('meta')}{'::jsonb' if self.postgres else ''}, call_id = NULL, "
            f"erased_at = {named.format('now')} WHERE session_id = {named.format('sid')}")
        # PostgreSQL: the session's search index rows go with its content (an erased event is never
        # a hit; the indexer skips erased events it has not reached yet)
        self.erase_search = ((p(f"DELETE FROM event_search WHERE session_id = {named.format('sid')}"),)
                             if self.postgres else ())
        # what erasing a conversation reaches: the sessions naming one as their `parent_session`
        # (imported subagents, the agent's own summariser), and the forks of some sessions
        self.parts_of = p(select(*SESSION_COLUMNS).where(
            literal_column(PARENT_SESSION[self.backend]) == bindparam("sid")).order_by(sessions.c.id))
        self.forks_of = p(select(*SESSION_COLUMNS).where(self.in_list(sessions.c.parent_id, "ids"))
                          .order_by(sessions.c.id))
        # SQLite keeps no copy of erased content: secure_delete zeroes what the UPDATE frees, VACUUM
        # rebuilds the file, and the checkpoint empties the WAL (all outside the transaction).
        # PostgreSQL keeps dead row versions until VACUUM, and in its WAL and backups: see `erase`.
        self.erase_before = (p("PRAGMA secure_delete = ON"),) if not self.postgres else ()
        self.erase_after = (() if self.postgres else
                            (p("VACUUM"), p("PRAGMA wal_checkpoint(TRUNCATE)"), p("PRAGMA secure_delete = OFF")))
        # Asked for (`erase(..., vacuum=True)`): PostgreSQL rewrites the tables and their indexes
        # without the dead row versions (an exclusive lock while it runs). SQLite always vacuums.
        self.vacuum = ((p("VACUUM FULL sessions, events"),) if self.postgres else ())
        # Retention on PostgreSQL: a plain VACUUM gives the space of the old row versions back to
        # the tables for new rows (it takes no lock that blocks reads or appends; the files keep
        # their size), and what the tables take with their indexes and TOAST, before and after.
        # SQLite's file is rebuilt by `erase_after` (its pages, before and after).
        self.reclaim = (p("VACUUM sessions, events, event_search"),) if self.postgres else ()
        self.database_bytes = p("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
                                if not self.postgres else
                                "SELECT sum(pg_total_relation_size(t)) FROM unnest(ARRAY['sessions', 'events', "
                                "'event_search']::regclass[]) AS t")
        self.database_bytes_citus = p("SELECT sum(citus_total_relation_size(t)) FROM unnest(ARRAY['sessions', "
                                      "'events', 'event_search']::regclass[]) AS t")

    def forget_shape(self) -> None:
        """Ask again whether the schema is distributed (after `migrate()`, which may distribute it)."""
        self.distributed = None if self.postgres else False

    def _prepare(self, statement: Any) -> Prepared:
        return Prepared(statement, self.dialect)

    # ------------------------------------------------------------------ shaped by the lineage

    def lineage_params(self, lineage: Sequence[tuple[str, int, int | None]], after: int = 0,
                       upto: int | None = None) -> dict[str, Any] | None:
        """Parameters selecting versions (after, upto] of a lineage; None when the range is empty."""
        params: dict[str, Any] = {}
        n = 0
        for session_id, seg_after, seg_upto in lineage:
            lo = max(seg_after, after)
            hi = min(NO_LIMIT if seg_upto is None else seg_upto, NO_LIMIT if upto is None else upto)
            if hi <= lo:
                continue
            params.update({f"s{n}": session_id, f"lo{n}": lo, f"hi{n}": hi})
            n += 1
        if not n:
            return None
        params["_n"] = n
        return params

    def listing(self, shape: tuple[Any, ...]) -> Prepared:
        """`sessions()` of one query shape (`finding.SessionQuery.shape`): SESSION_COLUMNS, newest first."""
        return _listing(self, shape)

    def events_range(self, n: int, kinds: bool = False) -> Prepared:
        return _events_range(self, n, kinds)

    def latest(self, n: int) -> Prepared:
        return _latest(self, n)

    @property
    def latest_of_each(self) -> Prepared:
        """Each of the sessions `:ids` that exists: its id, its parent's, then (EVENT_COLUMNS, NULL
        when it has none) the last event of `:kind` among its own events. One index lookup a
        session on (session_id, kind, version); a fork's inherited events are not looked at
        (`ReadingPart.latest_events` looks those up through the lineage)."""
        return _latest_of_each(self)

    def links(self, n: int) -> Prepared:
        return _links(self, n)

    def chain_rows(self, n: int) -> Prepared:
        return _chain_rows(self, n)

    def events_at(self, n: int) -> Prepared:
        return _events_at(self, n)

    def usage_reports(self, *, since: bool, until: bool, ids: bool) -> Prepared:
        """The usage reports stored (`accounting.UsageRecord`'s fields) in the order they happened,
        within the window and the sessions asked for."""
        return _usage_reports(self, since, until, ids)

    def known_calls(self, n: int) -> Prepared:
        return _known_calls(self, n)

    def transcript_sum(self, n: int) -> Prepared:
        return _transcript_sum(self, n)

    def first_message(self, n: int) -> Prepared:
        return _first_message(self, n)

    def stored_ids(self) -> Prepared:
        return _stored_ids(self, bool(self.distributed))

    def stored_elsewhere(self) -> Prepared:
        """Citus only: one of `:ids` stored in a session other than `:sid` (event_id, session_id),
        if any: every shard is asked (`distribution.ELSEWHERE_FUNCTION`)."""
        return Prepared("SELECT event_id, session_id FROM sessionstore_stored_elsewhere(%(ids)s, %(sid)s)",
                        self.dialect)

    def append(self, rows: int) -> Prepared:
        return _distributed_append(self, rows) if self.distributed else _append(self, rows)

    def insert_rows(self, rows: int) -> Prepared:
        """SQLite, a batch: its rows inserted plain, after `advance_head` moved the head past them
        in the same transaction (see `_append`)."""
        return _insert_rows(self, rows)

    def node_index(self, groups: int) -> tuple[Prepared, Prepared]:
        return _node_index(self, groups)

    def node_feed(self, groups: int) -> Prepared:
        """Citus: the feed's next events of `groups` node groups and of the retired rest (see
        `repository.feed.page_params`), EVENT_COLUMNS then txid, ordered by (txid, position)."""
        return _node_feed(self, groups)

    def search_match(self, query: Query) -> str:
        """The `:q` of `search`: the query in the backend's own syntax."""
        return tsquery(query) if self.postgres else fts5_query(query)

    def search(self, n: int, *, kind: bool = False, tool: bool = False, scan: int | None = None,
               groups: int | None = None, fresh: bool = True, meta: bool = True) -> Prepared:
        """Events matching `:q` (see `search_match`), best first: EVENT_COLUMNS, a score (higher is
        better) and the tool's name for calls and results; within the `n` lineage segments
        (none: every session), of `:kind`, of the tool `:tool`, at most `:limit`.

        With `scan` (a substring query, `search.needles`): no index; the searched events whose
        stored payload holds any of `:needle0`… (every searched event for 0), in order,
        for the caller to match (`search.matches`).

        With `groups` (Citus): the events after the indexer's places in those node groups' feeds
        are the ones matched on the fly (`repository.feed.page_params`). Without `fresh`
        (PostgreSQL, when no event is past the indexer's place), none is. Without `meta`, each
        row's meta is an empty object (`_without_meta`)."""
        return _search(self, n, kind, tool, scan, groups, fresh, meta)

    def list_param(self, values: Sequence[Any]) -> Any:
        """An IN-list as one parameter: a JSON array for SQLite's json_each, an array for PostgreSQL."""
        return list(values) if self.postgres else json.dumps(list(values))

    def in_list(self, column: Any, name: str, item_type: Any = String) -> Any:
        if self.postgres:
            return column == any_(bindparam(name, type_=ARRAY(item_type)))
        return column.in_(select(literal_column("value")).select_from(func.json_each(bindparam(name))))


def _meta_field(postgres: bool, key: str, *, json: bool = False, source: str = "events.meta") -> Any:
    """`key` of a JSON object column as SQL: a value (text on PostgreSQL), or with `json` the JSON itself."""
    if postgres:
        return literal_column(f"{source} {'->' if json else '->>'} '{key}'")
    if source == "events.meta":  # (large meta is stored compressed: `storage/packing.py`)
        source = f"{SQL_FUNCTION}({source})"
    return literal_column(f"json_extract({source}, '$.{key}')")


@lru_cache(maxsize=16)
def _usage_reports(st: Statements, since: bool, until: bool, ids: bool) -> Prepared:
    pg = st.postgres
    usage = _meta_field(pg, "usage", json=True)
    fields = [_meta_field(pg, key) for key in ("model", "message_id", "request_id", "response_id")]
    project = func.coalesce(_meta_field(pg, "project", source="sessions.metadata"),
                            _meta_field(pg, "cwd", source="sessions.metadata"))
    query = (select(events.c.session_id, events.c.created_at, usage, *fields, project, _meta_field(pg, "cost"))
             .select_from(events.join(sessions, sessions.c.id == events.c.session_id))
             .where(usage.is_not(None), events.c.erased_at.is_(None)))
    if since:
        query = query.where(events.c.created_at >= bindparam("since"))
    if until:
        query = query.where(events.c.created_at < bindparam("until"))
    if ids:
        query = query.where(st.in_list(events.c.session_id, "ids"))
    return st._prepare(query.order_by(events.c.created_at, events.c.position))


@lru_cache(maxsize=256)
def _listing(st: Statements, shape: tuple[Any, ...]) -> Prepared:
    """(PostgreSQL sends the metadata as text: psycopg's JSONB loader took most of a page's time.)"""
    columns = st._session_columns.replace("metadata", "metadata::text") if st.postgres else st._session_columns
    return st._prepare(listing_sql(shape, st.postgres, columns))


@lru_cache(maxsize=256)
def _events_range(st: Statements, n: int, kinds: bool) -> Prepared:
    query = select(*EVENT_COLUMNS).where(_lineage(n))
    if kinds:
        query = query.where(st.in_list(events.c.kind, "kinds"))
    return st._prepare(query.order_by(events.c.version).limit(bindparam("limit")))


@lru_cache(maxsize=64)
def _latest(st: Statements, n: int) -> Prepared:
    query = select(*EVENT_COLUMNS).where(_lineage(n), events.c.kind == bindparam("kind"))
    return st._prepare(query.order_by(events.c.version.desc()).limit(1))


@lru_cache(maxsize=8)
def _latest_of_each(st: Statements) -> Prepared:
    inner = events.alias("newer")
    newest = (select(func.max(inner.c.version))
              .where(inner.c.session_id == sessions.c.id, inner.c.kind == bindparam("kind")).scalar_subquery())
    last = select(sessions.c.id.label("sid"), sessions.c.parent_id.label("parent_id"), newest.label("version")
                  ).where(st.in_list(sessions.c.id, "ids")).subquery("last")
    query = select(last.c.sid, last.c.parent_id, *EVENT_COLUMNS).select_from(last).outerjoin(
        events, and_(events.c.session_id == last.c.sid, events.c.version == last.c.version))
    return st._prepare(query)


@lru_cache(maxsize=64)
def _links(st: Statements, n: int) -> Prepared:
    return st._prepare(select(events.c.version, events.c.link).where(_lineage(n)).order_by(events.c.version))


def _stored_text(st: Statements) -> Any:
    """The payload as its stored JSON text (SQLite: uncompressed, `storage/packing.py`)."""
    return cast(events.c.payload, Text) if st.postgres else getattr(func, SQL_FUNCTION)(events.c.payload)


@lru_cache(maxsize=64)
def _chain_rows(st: Statements, n: int) -> Prepared:
    """What `verify` reads of each event, a page at a time: the payload as its stored text."""
    query = select(events.c.session_id, events.c.version, events.c.event_id, events.c.kind, events.c.created_at,
                   events.c.tokens, events.c.content_hash, events.c.link, _stored_text(st), events.c.meta,
                   events.c.erased_at).where(_lineage(n))
    return st._prepare(query.order_by(events.c.version).limit(bindparam("limit")))


@lru_cache(maxsize=64)
def _events_at(st: Statements, n: int) -> Prepared:
    query = select(*EVENT_COLUMNS).where(_lineage(n), st.in_list(events.c.version, "versions", Integer))
    return st._prepare(query.order_by(events.c.version))


@lru_cache(maxsize=64)
def _known_calls(st: Statements, n: int) -> Prepared:
    """Which of the call ids `:ids` a tool call of the lineage made. Looked up by
    (session_id, call_id): SQLite's planner, without statistics, otherwise takes the index on
    (session_id, kind, version) and reads every call of the session (1.9 ms of an append at
    10,000 events). Its version and kind terms are written so that no index serves them
    (``+ 0``, ``|| ''``, SQLite's documented way to steer it); PostgreSQL plans from statistics."""
    if st.postgres:
        lineage, kind = _lineage(n), events.c.kind
    else:
        lineage = _lineage(n, source=_Unindexed())
        kind = events.c.kind.concat(literal_column("''"))
    return st._prepare(select(events.c.call_id).where(lineage, kind == literal_column("'tool_call'"),
                                                      st.in_list(events.c.call_id, "ids")))


class _Unindexed:
    """`events`' session id and version as `_lineage` reads them, the version written so that
    SQLite's planner serves no term on it from an index (``version + 0``)."""

    class c:  # noqa: N801 — the shape of a table's `.c`
        session_id = events.c.session_id
        version = events.c.version + literal_column("0")


@lru_cache(maxsize=64)
def _transcript_sum(st: Statements, n: int) -> Prepared:
    return st._prepare(select(func.sum(_COUNTED)).where(_lineage(n), st.in_transcript))


@lru_cache(maxsize=64)
def _first_message(st: Statements, n: int) -> Prepared:
    query = select(*EVENT_COLUMNS).where(_lineage(n), events.c.kind == literal_column("'message'"),
                                         _payload_text(st.postgres, "role") == bindparam("role"))
    return st._prepare(query.order_by(events.c.version).limit(1))


@lru_cache(maxsize=8)
def _stored_ids(st: Statements, in_session: bool) -> Prepared:
    """Which of `:ids` are stored, and where. On Citus, within the session `:sid` only: one shard
    instead of all (another session's is `stored_elsewhere`, asked only where it may be)."""
    query = select(events.c.event_id, events.c.session_id, events.c.version, events.c.position,
                   events.c.kind, _stored_text(st)).where(st.in_list(events.c.event_id, "ids"))
    return st._prepare(query.where(events.c.session_id == bindparam("sid")) if in_session else query)


@lru_cache(maxsize=1024)
def _append(st: Statements, rows: int) -> Prepared:
    """The gated one-statement insert of `rows` events (see the module docstring).

    On PostgreSQL a batch of `PG_ARRAYS_FROM` rows or more travels as one array per column
    (`unnest`): the statement's text is then the same whatever the batch size, so psycopg
    converts it once and prepares it on the server, where a 500-row VALUES list is a
    5,000-placeholder query that psycopg re-parses and PostgreSQL re-plans on every call (a
    third of the speed, measured). A small batch keeps its VALUES list: dumping ten arrays
    costs more than a few scalars, and the short text is cached and prepared all the same.
    """
    columns = ", ".join(("session_id", *APPENDED_COLUMNS))
    if st.postgres:
        names = ", ".join(APPENDED_COLUMNS)
        if rows >= PG_ARRAYS_FROM:
            arrays = _PG_ARRAYS
            picked = ", ".join(f"v.{n}::{_PG_CASTS[n]}" if n in _PG_CASTS else f"v.{n}" for n in APPENDED_COLUMNS)
            source = f"unnest({arrays})"
        else:
            source = "(VALUES " + ", ".join(
                "(" + ", ".join(f"%(r{r}_{c})s::{_PG_CASTS.get(n, t)}"
                                for c, (n, t) in enumerate(zip(APPENDED_COLUMNS, _PG_TYPES))) + ")"
                for r in range(rows)) + ")"
            picked = ", ".join(f"v.{n}" for n in APPENDED_COLUMNS)
        sql = (f"WITH gate AS (UPDATE sessions SET head = %(last)s, head_link = %(last_link)s, "
               f"last_event_at = GREATEST(last_event_at, %(last_at)s) "
               f"WHERE id = %(sid)s AND head = %(known)s AND erased_at IS NULL RETURNING id) "
               f"INSERT INTO events ({columns}, txid) "
               f"SELECT gate.id, {picked}, pg_current_xact_id()::text::bigint "
               f"FROM gate CROSS JOIN {source} AS v({names}) RETURNING position, version")
        return Prepared(sql, st.dialect)
    width = len(APPENDED_COLUMNS)
    values = ", ".join("(" + ", ".join("?" * width) + ")" for _ in range(rows))
    picked = ", ".join(f"v.column{i + 1}" for i in range(width))
    sql = (f"WITH gate AS MATERIALIZED (SELECT id FROM sessions WHERE id = ? AND head = ? AND erased_at IS NULL) "
           f"INSERT INTO events ({columns}) SELECT gate.id, {picked} "
           f"FROM gate CROSS JOIN (VALUES {values}) AS v RETURNING position, version")
    return Prepared(sql, st.dialect)


@lru_cache(maxsize=64)
def _insert_rows(st: Statements, rows: int) -> Prepared:
    width = len(APPENDED_COLUMNS) + 1
    values = ", ".join("(" + ", ".join("?" * width) + ")" for _ in range(rows))
    return Prepared(f"INSERT INTO events (session_id, {', '.join(APPENDED_COLUMNS)}) VALUES {values} "
                    "RETURNING position, version", st.dialect)


def packed(row: Sequence[Any]) -> tuple[Any, ...]:
    """SQLite: an appended row with its payload and meta packed (`storage/packing.py`)."""
    return (*row[:_PAYLOAD], pack(row[_PAYLOAD]), pack(row[_PAYLOAD + 1]), *row[_PAYLOAD + 2:])


def batch_params(st: Statements, session_id: str, known: int, rows: Sequence[Sequence[Any]],
                 last_link: str) -> tuple[Mapping[str, Any], list[Any]]:
    """SQLite, a batch: the parameters of `Statements.advance_head` (all of `rows`), and of
    `Statements.insert_rows` for them (each row with its session)."""
    flat: list[Any] = []
    for row in rows:
        flat.append(session_id)
        flat.extend(packed(row))
    return ({"sid": session_id, "known": known, "last": known + len(rows), "last_link": last_link,
             "last_at": max(row[_TIME] for row in rows)}, flat)


@lru_cache(maxsize=64)
def _distributed_append(st: Statements, rows: int) -> Prepared:
    """Citus: the gated append as one call of `sessionstore_append` (`storage/distribution.py`),
    which Citus runs on the node holding the session. A column travels as one array (a long
    batch) or as an ARRAY[…] of scalars (a short one: cheaper to send than a list to adapt);
    `:registered`, the ids to register store-wide, as one array (most often empty)."""
    if rows >= PG_ARRAYS_FROM:
        arrays = _PG_ARRAYS
    else:
        arrays = ", ".join("ARRAY[" + ", ".join(f"%(r{r}_{c})s::{t}" for r in range(rows)) + "]"
                           for c, t in enumerate(_PG_TYPES))
    return Prepared(f"SELECT stored_position, stored_version FROM sessionstore_append(%(sid)s, %(known)s, "
                    f"%(last)s, %(last_link)s, {arrays}, %(registered)s::text[])", st.dialect)


def _node_places(groups: int, *, bounded: bool = True) -> Any:
    """Citus: the events after each node group's place (`:x{i}`, `:p{i}`) in its txid range
    [`:b{i}`, `:e{i}`), below its horizon `:u{i}` if `bounded`, and those of the retired rest
    after `:xr`, `:pr` (see `repository.feed.page_params`)."""
    place = tuple_(events.c.txid, events.c.position)
    own = [and_(events.c.txid >= bindparam(f"b{i}"), events.c.txid < bindparam(f"u{i}" if bounded else f"e{i}"),
                place > tuple_(bindparam(f"x{i}"), bindparam(f"p{i}"))) for i in range(groups)]
    retired = and_(*[or_(events.c.txid < bindparam(f"b{i}"), events.c.txid >= bindparam(f"e{i}"))
                     for i in range(groups)], place > tuple_(bindparam("xr"), bindparam("pr")))
    return or_(*own, retired)


@lru_cache(maxsize=32)
def _node_feed(st: Statements, groups: int) -> Prepared:
    return st._prepare(select(*EVENT_COLUMNS, events.c.txid).where(_node_places(groups))
                       .order_by(events.c.txid, events.c.position).limit(bindparam("limit")))


@lru_cache(maxsize=32)
def _node_index(st: Statements, groups: int) -> tuple[Prepared, Prepared]:
    """Citus: index the searched events of the feed's next part (every shard at once, colocated;
    one row back per event indexed), and the last (txid, position) of the retired groups' part."""
    searched = ", ".join(f"'{k}'" for k in SEARCHED_KINDS)
    where = _node_places(groups).compile(dialect=st.dialect)
    index = st._prepare(
        "INSERT INTO event_search (session_id, position, words) SELECT session_id, position, "
        "sessionstore_search_words(sessionstore_search_text(kind, payload)) FROM events "
        f"WHERE kind IN ({searched}) AND erased_at IS NULL AND ({where}) "
        "ON CONFLICT (session_id, position) DO NOTHING RETURNING 1")
    retired = _node_places(groups).clauses[-1].compile(dialect=st.dialect)
    top = st._prepare(f"SELECT txid, position FROM events WHERE {retired} ORDER BY txid DESC, position DESC LIMIT 1")
    return index, top


# Where an appended row holds its payload, then its meta (SQLite packs both: `storage/packing.py`).
_PAYLOAD: Final = APPENDED_COLUMNS.index("payload")
# Where an appended row holds its time (APPENDED_COLUMNS).
_TIME: Final = APPENDED_COLUMNS.index("created_at")
# PostgreSQL: batches this long or longer are sent as arrays (see `_append`).
PG_ARRAYS_FROM: Final = 8
# The PostgreSQL type of each APPENDED_COLUMNS value (payload and meta travel as text, cast per row).
_PG_TYPES: Final = ("int", "text", "text", "text", "text", "text", "int", "timestamptz", "text", "text")
_PG_CASTS: Final = {"payload": "json", "meta": "jsonb"}
# A long batch's columns, one binary array each (`append_params`), for the statement and the Citus call alike.
_PG_ARRAYS: Final = ", ".join(f"%(c{c})b::{t}[]" for c, t in enumerate(_PG_TYPES))


def _tool_name(postgres: bool, source: Any = events) -> Any:
    """The tool of a searched event read from `source` (the events table or a subquery of its
    columns, `call_id` included): a call's own name, a result's call's name, else NULL."""
    calls = events.alias("calls")
    call_name = (select(_payload_text(postgres, "name", "calls"))
                 .where(calls.c.session_id == source.c.session_id, calls.c.call_id == source.c.call_id,
                        calls.c.kind == literal_column("'tool_call'")).limit(1).scalar_subquery())
    return case((source.c.kind == literal_column("'tool_call'"), _payload_text(postgres, "name", source.name)),
                (source.c.kind == literal_column("'tool_result'"), call_name), else_=None)


@lru_cache(maxsize=64)
def _search(st: Statements, n: int, kind: bool, tool: bool, scan: int | None = None,
            groups: int | None = None, fresh: bool = True, meta: bool = True) -> Prepared:
    """The search query (the index: FTS5 on SQLite, `event_search`'s GIN index on PostgreSQL; migrations
    0003 and 0004)."""
    tool_name = _tool_name(st.postgres)

    def shown(columns: Sequence[Any]) -> list[Any]:
        return list(columns) if meta else _without_meta(columns, st.postgres)

    if scan is not None:
        payload = _stored_text(st)
        query = (select(*shown(EVENT_COLUMNS), literal_column("0.0"), tool_name)
                 .where(events.c.kind.in_([literal_column(f"'{k}'") for k in SEARCHED_KINDS])))
        if scan:
            holds = func.strpos if st.postgres else func.instr
            found = [holds(payload, bindparam(f"needle{i}")) > 0 for i in range(scan)]
            query = query.where(or_(*found))
        order = (events.c.position,)
    elif st.postgres:
        # The indexed events (`event_search`), and those after the indexer's place in the feed,
        # matched on the fly (few: a search brings the index up to the feed's final part first;
        # none, and not looked for, when no event is past the place: `fresh`).
        wanted = func.to_tsquery(literal_column("'simple'::regconfig"), bindparam("q"))
        words = table("event_search", column("session_id"), column("position"), column("words"))
        indexed = (_indexed_matches(words, wanted, n, kind, tool, st.postgres) if groups is None else
                   _filtered(select(*EVENT_COLUMNS, func.ts_rank(words.c.words, wanted).label("score"),
                                    tool_name.label("tool"))
                             .select_from(events.join(words, and_(words.c.session_id == events.c.session_id,
                                                                  words.c.position == events.c.position)))
                             .where(words.c.words.op("@@")(wanted)), n, kind, tool, tool_name))
        parts = [indexed]
        if fresh:
            vector = func.sessionstore_search_words(func.sessionstore_search_text(events.c.kind, events.c.payload))
            place = table("search_feed", column("id"), column("txid"), column("position"))
            after = select(place.c.txid, place.c.position).where(place.c.id == 1)
            unindexed = (_node_places(groups, bounded=False) if groups is not None else
                         tuple_(events.c.txid, events.c.position)
                         > tuple_(after.with_only_columns(place.c.txid).scalar_subquery(),
                                  after.with_only_columns(place.c.position).scalar_subquery()))
            parts.append(_filtered(select(*EVENT_COLUMNS, func.ts_rank(vector, wanted).label("score"),
                                          tool_name.label("tool"))
                                   .where(unindexed, events.c.kind.in_([literal_column(f"'{k}'")
                                                                        for k in SEARCHED_KINDS]),
                                          vector.op("@@")(wanted)), n, kind, tool, tool_name))
        both = (union_all(*parts) if len(parts) > 1 else indexed).subquery()
        return st._prepare(select(*shown(list(both.c))).order_by(both.c.score.desc(), both.c.position)
                           .limit(bindparam("limit")))
    else:
        best = _sqlite_best(n, kind, tool)
        return st._prepare(select(*shown(EVENT_COLUMNS), -best.c.rank, tool_name)
                           .select_from(best.join(events, events.c.position == best.c.position))
                           .order_by(best.c.rank, best.c.position))
    query = _filtered(query, n, kind, tool, tool_name)
    return st._prepare(query.order_by(*order).limit(bindparam("limit")))


def _sqlite_best(n: int, kind: bool, tool: bool) -> Any:
    """SQLite: the positions and ranks of the best `:limit` matches (bm25: lower is better),
    ranked in the index before any event is read. Every indexed event is live (erasure takes it
    out, migration 0011), so an unfiltered search reads no event; a lineage or kind reads only the
    columns stored before a row's payload, never its overflow pages; and the outer query reads
    the payloads of the hits only. (Joined to the events before ranking, every match's whole row
    was read, large ones from their overflow pages: a common word at a million events was
    seconds.)"""
    index = table(SEARCH_INDEX, column("rowid"), column("rank"))
    best = (select(index.c.rowid.label("position"), index.c.rank.label("rank"))
            .where(literal_column(SEARCH_INDEX).op("MATCH")(bindparam("q"))))
    if n or kind or tool:
        inner = events.alias("matched")
        best = best.select_from(index.join(inner, inner.c.position == index.c.rowid))
        if n:
            best = best.where(_lineage(n, source=inner))
        if kind:
            best = best.where(inner.c.kind == bindparam("kind"))
        if tool:
            best = best.where(_tool_name(False, inner) == bindparam("tool"))
    return best.order_by(index.c.rank, index.c.rowid).limit(bindparam("limit")).subquery("best")


def _without_meta(columns: Sequence[Any], postgres: bool) -> list[Any]:
    """`columns` with the events' meta as an empty object: hits for a model need not carry what
    an importer kept beside each event (Claude Code's records: 170 KB beside a 3 KB result),
    which is most of the bytes PostgreSQL would turn into JSON text and send."""
    empty = literal_column("'{}'::jsonb" if postgres else "'{}'").label("meta")
    return [empty if column.name == "meta" else column for column in columns]


def _indexed_matches(words: Any, wanted: Any, n: int, kind: bool, tool: bool, postgres: bool) -> Any:
    """PostgreSQL: the indexed events matching `wanted`. The matches are found in `event_search`
    (the lineage's sessions only), then each one's event is fetched by its key in a LATERAL
    subquery that the planner cannot flatten (its LIMIT 1): joined freely, a search within a
    session was planned, on the statistics of a freshly imported session, as a scan of the
    session's indexed rows for each of its events (400 ms for a 1,600-event session, where this
    takes 1 ms whatever the statistics say)."""
    found = select(words.c.session_id, words.c.position, func.ts_rank(words.c.words, wanted).label("score")) \
        .where(words.c.words.op("@@")(wanted))
    if n:
        found = found.where(words.c.session_id.in_([bindparam(f"s{i}") for i in range(n)]))
    matched = found.subquery("found")
    hit = (select(*EVENT_COLUMNS, events.c.call_id)
           .where(events.c.session_id == matched.c.session_id, events.c.position == matched.c.position)
           .limit(1).lateral("hit"))
    tool_name = _tool_name(postgres, hit)
    query = (select(*(hit.c[c.name] for c in EVENT_COLUMNS), matched.c.score, tool_name.label("tool"))
             .select_from(matched.join(hit, literal_column("true"))))
    return _filtered(query, n, kind, tool, tool_name, hit)


def _filtered(query: Any, n: int, kind: bool, tool: bool, tool_name: Any, source: Any = events) -> Any:
    """A search query limited to live events, and to a lineage, a kind, a tool when asked (on the
    events table, or on `source`, a subquery of its columns)."""
    query = query.where(source.c.erased_at.is_(None))
    if n:
        query = query.where(_lineage(n, source=source))
    if kind:
        query = query.where(source.c.kind == bindparam("kind"))
    if tool:
        query = query.where(tool_name == bindparam("tool"))
    return query


def append_params(st: Statements, session_id: str, known: int, rows: Sequence[Sequence[Any]], last_link: str,
                  registered: Sequence[str] = ()) -> Sequence[Any] | Mapping[str, Any]:
    """Parameters of `Statements.append(len(rows))`; each row holds the APPENDED_COLUMNS values.
    `registered`: on Citus, the event ids to register store-wide (`distribution.REGISTRY`)."""
    if st.postgres:
        params: dict[str, Any] = {"sid": session_id, "known": known, "last": known + len(rows),
                                  "last_link": last_link}
        if st.distributed:
            params["registered"] = list(registered)
        else:  # the batch's latest time (Citus's function finds it in the times it gets)
            params["last_at"] = max(row[_TIME] for row in rows)
        if len(rows) >= PG_ARRAYS_FROM:
            for c, values in enumerate(zip(*rows)):
                params[f"c{c}"] = list(values)
        else:
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    params[f"r{r}_{c}"] = value
        return params
    return [session_id, known, *(value for row in rows for value in packed(row))]


def set_tokens_params(st: Statements, session_id: str, counts: Sequence[tuple[int, int]]) -> Mapping[str, Any]:
    """Parameters of `Statements.set_tokens`: the (position, tokens) pairs of one session's events."""
    if st.postgres:
        return {"sid": session_id, "positions": [p for p, _ in counts], "counts": [t for _, t in counts]}
    return {"sid": session_id, "counts": json.dumps(counts)}


class Decoder:
    """Values as the driver returns them → Python values (SQLite returns JSON and times as text).
    An event stored uncounted gets its count here (`counter`, set by the repository), so that
    every event read carries its exact count whether or not it was written back yet."""

    counter: Callable[[], TokenCounter] | None = None

    def __init__(self, backend: str) -> None:
        self.text = backend == "sqlite"

    def json(self, value: Any) -> Any:
        if self.text and isinstance(value, bytes):  # compressed (`storage/packing.py`)
            return json.loads(unpack(value))
        return json.loads(value) if self.text and isinstance(value, str) else value

    def time(self, value: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)

    def event(self, row: Sequence[Any]) -> StoredEvent:
        """A row of EVENT_COLUMNS."""
        payload, tokens = self.json(row[5]), row[7]
        if tokens < 0 and self.counter is not None:
            tokens = count_events(self.counter(), [(row[4], payload)])[0]
        return StoredEvent(row[0], row[1], row[2], row[3], row[4], payload, self.json(row[6]), tokens,
                           self.time(row[8]), self.time(row[9]))  # type: ignore[arg-type]


__all__ = ["APPEND_CHUNK", "APPENDED_COLUMNS", "Decoder", "EVENT_COLUMNS", "NO_LIMIT", "Prepared",
           "SESSION_COLUMNS", "Statements", "append_params", "batch_params", "set_tokens_params"]
