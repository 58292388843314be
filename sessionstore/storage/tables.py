"""The schema, as SQLAlchemy Core metadata.

The tables are created only by the Alembic migrations in `migrations/`; this metadata is
what the code queries through, and a test checks that the two never drift apart.

`payload` is plain JSON on both backends, not JSONB: JSONB reorders keys, drops duplicate
keys and rejects ``\\u0000`` (real tool output holds NUL bytes), and the contract is that a
transcript returns every payload byte-identical. `meta` and session metadata are ours to
shape and are JSONB on PostgreSQL, so that they can be queried and indexed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, Final

from sqlalchemy import (JSON, BigInteger, Column, DateTime, Dialect, ForeignKey, ForeignKeyConstraint, Index, Integer,
                        MetaData, String, Table, Text, TypeDecorator, UniqueConstraint, text)
from sqlalchemy.dialects import postgresql

from ..events import MAX_EVENT_ID, MAX_ID
from . import listing

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)
# `info` key of a schema object that exists on one backend only (see `include_object`).
ONLY: Final = "only_on"

ID_LENGTH = MAX_ID
EVENT_ID_LENGTH = MAX_EVENT_ID
HASH_LENGTH = 64  # sha256, hex
EPOCH: Final = "1970-01-01 00:00:00"


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both backends (SQLite keeps no zone; we restore it)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


PayloadJSON = JSON().with_variant(postgresql.JSON(), "postgresql")
MetaJSON = JSON().with_variant(postgresql.JSONB(), "postgresql")
# SQLite makes an INTEGER PRIMARY KEY the rowid: monotonic, and never reused since we never delete.
Position = BigInteger().with_variant(Integer(), "sqlite")

sessions = Table(
    "sessions",
    metadata,
    Column("id", String(ID_LENGTH), primary_key=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("metadata", MetaJSON, nullable=False),
    Column("parent_id", String(ID_LENGTH), nullable=True),
    Column("fork_version", Integer, nullable=True),
    Column("head", Integer, nullable=False),
    # The chain link of the head event (or of the session's start): what the next append
    # chains from, so that an append never reads the previous event (see sessionstore/chain.py).
    Column("head_link", String(HASH_LENGTH), nullable=False),
    # Set by `erase`: the content of the session's events and its metadata are gone.
    Column("erased_at", UTCDateTime(), nullable=True),
    Column("erase_reason", Text, nullable=True),
    # Migration 0008: when the session started (its metadata's `started_at`, else its first
    # event's time, else `created_at`; fixed at creation) and its last activity (the latest of
    # that and its events' times, advanced by the append). `sessions()` lists by the first and
    # filters on both (`finding.py`); its indexes are `listing.indexes` (below).
    # (The default is the migration's, for the rows it fills in: SQLite adds no NOT NULL column
    # without one. The code always sets both.)
    Column("started_at", UTCDateTime(), nullable=False, server_default=text(f"'{EPOCH}'")),
    Column("last_event_at", UTCDateTime(), nullable=False, server_default=text(f"'{EPOCH}'")),
    # SQLite only: on PostgreSQL a parent may live on another shard (migration 0005); `fork`
    # checks that the parent exists, and no session row is ever deleted.
    ForeignKeyConstraint(["parent_id"], ["sessions.id"], info={ONLY: "sqlite"}),
)

for _postgres, _backend in ((False, "sqlite"), (True, "postgresql")):
    for _name, _columns in listing.indexes(_postgres):
        Index(_name, *(sessions.c[c] if c in sessions.c else text(c) for c in _columns), info={ONLY: _backend})

# Migration 0009: a conversation's parts (the sessions naming one as their `parent_session`) and
# the forks of some sessions, found by index (`erase`, `retain`); only sessions with a parent are
# in them. The expression is the one `statements.parts_of` queries.
PARENT_SESSION: Final = {"sqlite": "json_extract(metadata, '$.parent_session')",
                         "postgresql": "(metadata ->> 'parent_session')"}
for _backend, _parent in PARENT_SESSION.items():
    Index("ix_sessions_parent_session", text(_parent), info={ONLY: _backend}, _table=sessions,  # (no column names it)
          **{f"{_backend}_where": text(f"{_parent} IS NOT NULL")})
Index("ix_sessions_parent_id", sessions.c.parent_id, sqlite_where=text("parent_id IS NOT NULL"),
      postgresql_where=text("parent_id IS NOT NULL"))

events = Table(
    "events",
    metadata,
    Column("position", Position, primary_key=True, autoincrement=True),
    Column("session_id", String(ID_LENGTH), ForeignKey("sessions.id"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("event_id", String(EVENT_ID_LENGTH), nullable=False),
    Column("kind", String(32), nullable=False),
    # The tool call a tool_call/tool_result belongs to, lifted out of the payload so that
    # "does this result answer a known call?" is an index lookup, not a scan of the session.
    Column("call_id", String(ID_LENGTH), nullable=True),
    Column("payload", PayloadJSON, nullable=False),
    Column("meta", MetaJSON, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    # The tamper-evident chain: a hash of the content (payload and meta), and a link over the
    # previous link, the event's identity and its content hash. Erasure destroys the content
    # but keeps both hashes, so the links still verify.
    Column("content_hash", String(HASH_LENGTH), nullable=False),
    Column("link", String(HASH_LENGTH), nullable=False),
    Column("erased_at", UTCDateTime(), nullable=True),
    # PostgreSQL only: the inserting transaction's id. The global feed (`read_all`) is ordered
    # by (txid, position) and stops below the oldest running transaction, so that writers of
    # different sessions never wait for each other and readers never skip a late commit.
    Column("txid", BigInteger, nullable=True),
    # The optimistic-concurrency guard: two writers can never both own a version.
    UniqueConstraint("session_id", "version"),
    # Migration 0005: on PostgreSQL the primary key is (session_id, position), and every unique
    # constraint includes the session, so that the table can be distributed by it (Citus). The
    # global event-id constraint stays where one place holds every session (SQLite, plain
    # PostgreSQL) and is dropped when distributing (`storage/distribution.py`).
    UniqueConstraint("event_id"),
    UniqueConstraint("session_id", "event_id", info={ONLY: "postgresql"}),
    Index(None, "position", info={ONLY: "postgresql"}),
    # "The latest compaction of a session" and "the markers of a session from version N".
    Index(None, "session_id", "kind", "version"),
    # A call id's events (migration 0007: on SQLite only the events that have one).
    Index(None, "session_id", "call_id", sqlite_where=text("call_id IS NOT NULL")),
    Index(None, "txid", "position", info={ONLY: "postgresql"}),  # SQLite has no txid (migration 0007)
    # The events an append stored uncounted, until `count_tokens` writes their counts (migration 0010).
    Index("ix_events_uncounted", "session_id", "position", sqlite_where=text("tokens < 0"),
          postgresql_where=text("tokens < 0")),
)

# The search index (migration 0003) on SQLite: an FTS5 virtual table and the shadow tables FTS5
# keeps for it. They are the database's own machinery, not tables this metadata queries through
# SQLAlchemy, so schema comparisons leave them out (`include_name`, used by migrations/env.py).
SEARCH_INDEX: Final = "events_search"
SEARCH_INDEX_PG: Final = "ix_events_search"
# Migration 0004: where the indexer stands in the feed (both), and PostgreSQL's index table
# (its columns: migrations 0004, 0005 and 0012, which adds each event's bm25 summary, `stats`).
SEARCH_FEED: Final = "search_feed"
_SEARCH_SHADOWS: Final = frozenset({SEARCH_INDEX, SEARCH_FEED, "event_search",
                                    *(f"{SEARCH_INDEX}_{s}" for s in ("data", "idx", "docsize", "config", "content"))})
_SEARCH_INDEXES: Final = frozenset({SEARCH_INDEX_PG, "ix_event_search_words"})


def include_object(backend: str) -> Callable[..., bool]:
    """Alembic's `include_object` hook for `backend`: leaves out the objects of another backend."""
    def include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        if type_ == "index" and name in _LISTING_EXPRESSIONS:  # (see `include_name`)
            return False
        only = getattr(obj, "info", {}).get(ONLY) if not reflected else getattr(compare_to, "info", {}).get(ONLY)
        return only is None or only == backend
    return include


# The listing's expression indexes (migration 0008): Alembic compares no expression index on
# SQLite and reads PostgreSQL's back in its own spelling, so they are left out of its comparison;
# tests/test_sessions_query.py checks that the listing's plans use them.
_LISTING_EXPRESSIONS: Final = frozenset(name for name, columns in listing.indexes(True) if len(columns) > 2)


def include_name(name: str | None, type_: str, parent_names: Mapping[str, Any]) -> bool:
    """Alembic's `include_name` hook: every schema object but the search index's own (SQLite's
    FTS5 tables; PostgreSQL's index table and its GIN index; the indexer's place in the feed)
    and the listing's expression indexes."""
    return not ((type_ == "table" and name in _SEARCH_SHADOWS)
                or (type_ == "index" and (name in _SEARCH_INDEXES or name in _LISTING_EXPRESSIONS)))
