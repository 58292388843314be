"""Every SQL statement the repository runs, compiled once per dialect (`Statements`): the reads,
sessions, listings and erasure here; the append's statements in `appends`, the search index's in
`search_statements`, what they share in `prepared`, and how rows come back in `decoding`.

The statements are written in SQLAlchemy Core against the same table objects as the schema,
compiled once for the engine's dialect, and run on the driver connection with already-encoded
parameters: building and compiling a Core statement costs more than SQLite takes to execute a
small one, and the async drivers charge per call (aiosqlite hands every call to a thread:
~120 µs here), so the repository runs few, prepared statements.

An append inserts only if the session's head is still the version the writer built the batch
on, and moves the head with its rows:

- PostgreSQL: ONE statement. A data-modifying CTE advances the head with a compare-and-set
  (``UPDATE sessions … WHERE head = :known RETURNING``, which also row-locks the session so
  that its writers queue) and the INSERT takes its rows from it: no row, no insert.
- SQLite has no data-modifying CTEs, and what would stand in for one costs as much as the row's
  insert (a trigger, a materialised gate, RETURNING — which SQLite runs as a trigger filling a
  temporary table: together a third of a single append's SQLite time, measured;
  docs/benchmarks.md, "A fourth pass at 39.4"). An append is one write transaction of plain
  statements instead, run as one step of the program (`repository.ops.Atomically`): the head
  moved by a compare-and-set that refuses by failing (``UPDATE sessions SET head = CASE WHEN
  head = :known AND erased_at IS NULL THEN :last END …``: NULL breaks the column's NOT NULL, an
  integrity error the program reads as a refusal, as it reads a taken event id), the rows
  inserted plain (a missing session breaks their foreign key), and ``last_insert_rowid()``, the
  last row's position: SQLite gives an INTEGER PRIMARY KEY the largest plus one, and ``BEGIN
  IMMEDIATE`` holds the one write lock from the compare-and-set to the commit, so the rows'
  positions are the ones before it.

Rows come back raw from the driver: `Decoder` turns SQLite's JSON and time text into values
(psycopg already returns parsed JSON and aware datetimes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, Final

from sqlalchemy import (Dialect, Integer, String, and_, any_, bindparam, case, func, literal_column, or_, select,
                        tuple_)
from sqlalchemy.dialects.postgresql import ARRAY

from ..search import SEARCHED_KINDS, Query, fts5_query, tsquery
from ..tokens import TRANSCRIPT_KINDS
from .distribution import DISTRIBUTED_PROBE
from .appends import distributed_append, gated_append
from .decoding import Decoder
from .listing import listing_sql
from .packing import SQL_FUNCTION
from .prepared import (APPEND_CHUNK, APPENDED_COLUMNS, EVENT_COLUMNS, NO_LIMIT, SESSION_COLUMNS, Prepared, lineage,
                       node_places, payload_text, stored_text)
from .search_statements import search_statement
from .tables import PARENT_SESSION, SEARCH_INDEX, UTCDateTime, events, sessions

# A summed token count: an event stored since the sums' `count_tokens` ran is not counted yet
# (`tokens.UNCOUNTED`) and is left out, as if the sum had run before it was appended.
_COUNTED: Final = case((events.c.tokens >= literal_column("0"), events.c.tokens), else_=literal_column("0"))
_SESSION_INSERT: Final = ("id", "created_at", "metadata", "parent_id", "fork_version", "head", "head_link",
                          "started_at", "last_event_at")






def _in_transcript(postgres: bool) -> Any:
    """The events `tokens.transcript_tokens` counts (what a model would read), as SQL."""
    kinds = [literal_column(f"'{kind}'") for kind in sorted(TRANSCRIPT_KINDS)]
    in_context = payload_text(postgres, "in_context") == literal_column("'true'" if postgres else "1")
    return or_(events.c.kind.in_(kinds), and_(events.c.kind == literal_column("'custom'"), in_context))




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

    def bind_utc(self, moment: datetime, text: str) -> Any:
        """`bind_time(moment)`, given `moment` as `chain.utc_text` wrote it. On SQLite, the text
        sqlite3 makes of the naive UTC datetime `bind_time` gives (`isoformat(" ")`: no fraction
        when it is nought), from that text: every append binds a time and hashes its text, which
        is then formatted once, and the driver has nothing left to adapt."""
        if self.postgres:
            return self.bind_time(moment)
        return text.replace("T", " ", 1) if not text.endswith(".000000") else text[:-7].replace("T", " ", 1)

    def append(self, rows: int) -> Prepared:
        """PostgreSQL: the gated append of `rows` events, one statement (Citus: one call)."""
        return distributed_append(self, rows) if self.distributed else gated_append(self, rows)

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
               groups: int | None = None, fresh: bool = True, meta: bool = True, terms: int = 0) -> Prepared:
        """Events matching `:q` (see `search_match`), best first: EVENT_COLUMNS, a score (higher is
        better) and the tool's name for calls and results; within the `n` lineage segments
        (none: every session), of `:kind`, of the tool `:tool`, at most `:limit`.

        With `scan` (a substring query, `search.needles`): no index; the searched events whose
        stored payload holds any of `:needle0`… (every searched event for 0), in order,
        for the caller to match (`search.matches`).

        With `groups` (Citus): the events after the indexer's places in those node groups' feeds
        are the ones matched on the fly (`repository.feed.page_params`). Without `fresh`
        (PostgreSQL, when no event is past the indexer's place), none is. Without `meta`, each
        row's meta is an empty object (`_without_meta`). PostgreSQL ranks by the `terms` words
        `:term0`… (`search.ranked_words`)."""
        return search_statement(self, n, kind, tool, scan, groups, fresh, meta, terms)

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
    query = select(*EVENT_COLUMNS).where(lineage(n))
    if kinds:
        query = query.where(st.in_list(events.c.kind, "kinds"))
    return st._prepare(query.order_by(events.c.version).limit(bindparam("limit")))


@lru_cache(maxsize=64)
def _latest(st: Statements, n: int) -> Prepared:
    query = select(*EVENT_COLUMNS).where(lineage(n), events.c.kind == bindparam("kind"))
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
    return st._prepare(select(events.c.version, events.c.link).where(lineage(n)).order_by(events.c.version))




@lru_cache(maxsize=64)
def _chain_rows(st: Statements, n: int) -> Prepared:
    """What `verify` reads of each event, a page at a time: the payload as its stored text."""
    query = select(events.c.session_id, events.c.version, events.c.event_id, events.c.kind, events.c.created_at,
                   events.c.tokens, events.c.content_hash, events.c.link, stored_text(st), events.c.meta,
                   events.c.erased_at).where(lineage(n))
    return st._prepare(query.order_by(events.c.version).limit(bindparam("limit")))


@lru_cache(maxsize=64)
def _events_at(st: Statements, n: int) -> Prepared:
    query = select(*EVENT_COLUMNS).where(lineage(n), st.in_list(events.c.version, "versions", Integer))
    return st._prepare(query.order_by(events.c.version))


@lru_cache(maxsize=64)
def _known_calls(st: Statements, n: int) -> Prepared:
    """Which of the call ids `:ids` a tool call of the lineage made. Looked up by
    (session_id, call_id): SQLite's planner, without statistics, otherwise takes the index on
    (session_id, kind, version) and reads every call of the session (1.9 ms of an append at
    10,000 events). Its version and kind terms are written so that no index serves them
    (``+ 0``, ``|| ''``, SQLite's documented way to steer it); PostgreSQL plans from statistics."""
    if st.postgres:
        segments, kind = lineage(n), events.c.kind
    else:
        segments = lineage(n, source=_Unindexed())
        kind = events.c.kind.concat(literal_column("''"))
    return st._prepare(select(events.c.call_id).where(segments, kind == literal_column("'tool_call'"),
                                                      st.in_list(events.c.call_id, "ids")))


class _Unindexed:
    """`events`' session id and version as `lineage` reads them, the version written so that
    SQLite's planner serves no term on it from an index (``version + 0``)."""

    class c:  # noqa: N801 — the shape of a table's `.c`
        session_id = events.c.session_id
        version = events.c.version + literal_column("0")


@lru_cache(maxsize=64)
def _transcript_sum(st: Statements, n: int) -> Prepared:
    return st._prepare(select(func.sum(_COUNTED)).where(lineage(n), st.in_transcript))


@lru_cache(maxsize=64)
def _first_message(st: Statements, n: int) -> Prepared:
    query = select(*EVENT_COLUMNS).where(lineage(n), events.c.kind == literal_column("'message'"),
                                         payload_text(st.postgres, "role") == bindparam("role"))
    return st._prepare(query.order_by(events.c.version).limit(1))


@lru_cache(maxsize=8)
def _stored_ids(st: Statements, in_session: bool) -> Prepared:
    """Which of `:ids` are stored, and where. On Citus, within the session `:sid` only: one shard
    instead of all (another session's is `stored_elsewhere`, asked only where it may be)."""
    query = select(events.c.event_id, events.c.session_id, events.c.version, events.c.position,
                   events.c.kind, stored_text(st)).where(st.in_list(events.c.event_id, "ids"))
    return st._prepare(query.where(events.c.session_id == bindparam("sid")) if in_session else query)














@lru_cache(maxsize=32)
def _node_feed(st: Statements, groups: int) -> Prepared:
    return st._prepare(select(*EVENT_COLUMNS, events.c.txid).where(node_places(groups))
                       .order_by(events.c.txid, events.c.position).limit(bindparam("limit")))


@lru_cache(maxsize=32)
def _node_index(st: Statements, groups: int) -> tuple[Prepared, Prepared]:
    """Citus: index the searched events of the feed's next part (every shard at once, colocated;
    one row back per event indexed), and the last (txid, position) of the retired groups' part."""
    searched = ", ".join(f"'{k}'" for k in SEARCHED_KINDS)
    where = node_places(groups).compile(dialect=st.dialect)
    index = st._prepare(
        "INSERT INTO event_search (session_id, position, words) SELECT session_id, position, "
        "sessionstore_search_words(sessionstore_search_text(kind, payload)) FROM events "
        f"WHERE kind IN ({searched}) AND erased_at IS NULL AND ({where}) "
        "ON CONFLICT (session_id, position) DO NOTHING RETURNING 1")
    retired = node_places(groups).clauses[-1].compile(dialect=st.dialect)
    top = st._prepare(f"SELECT txid, position FROM events WHERE {retired} ORDER BY txid DESC, position DESC LIMIT 1")
    return index, top






















__all__ = ["APPEND_CHUNK", "APPENDED_COLUMNS", "Decoder", "EVENT_COLUMNS", "NO_LIMIT", "Prepared",
           "SESSION_COLUMNS", "Statements"]
