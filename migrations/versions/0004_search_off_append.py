"""search indexed off the append path: an indexer follows the global feed

Migration 0003 indexed each event inside its INSERT (a trigger on SQLite, a GIN expression
index on PostgreSQL), which cost appends a quarter to two thirds of their speed. Now an append
is one gated INSERT again, and the index follows the global feed (`read_all`'s order): a
search first brings it up to the feed's head (`Repository._index_feed`), so results stay exact.

- both: `search_feed`, one row, where the indexer stands in the feed (SQLite: a position;
  PostgreSQL: a (txid, position) pair, the feed's order). It starts at the head: existing
  events stay indexed as 0003 left them.
- SQLite: the insert trigger is dropped; the update trigger (erasure replaces payloads)
  re-indexes only an event the indexer has reached (deleting text a contentless FTS5 table
  never held would corrupt it). A view `events_search_source` gives 0003's indexed text of
  each event, for the indexer's INSERT … SELECT.
- PostgreSQL: the GIN expression index is replaced by a table `event_search` (position, words)
  with a GIN index on the words; a trigger re-indexes an indexed event whose payload is
  replaced (erasure); the text functions of 0003 stay.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SEARCHED_KINDS = "('message', 'tool_call', 'tool_result', 'system', 'scratchpad')"


def _revision_0003():  # type: ignore[no-untyped-def]
    """0003's frozen SQL for the indexed text (the revisions folder is not a package)."""
    spec = importlib.util.spec_from_file_location("sessionstore_revision_0003", Path(__file__).with_name("0003_search.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _sqlite_schema() -> list[str]:
    text = _revision_0003().sqlite_text
    return [
        "DROP TRIGGER IF EXISTS events_search_insert",
        "DROP TRIGGER IF EXISTS events_search_update",
        "CREATE TABLE search_feed (id INTEGER PRIMARY KEY CHECK (id = 1), position BIGINT NOT NULL)",
        "INSERT INTO search_feed (id, position) SELECT 1, coalesce(max(position), 0) FROM events",
        f"CREATE VIEW events_search_source (position, erased_at, body) AS SELECT position, erased_at, "
        f"{text('events')} FROM events "
        f"WHERE kind IN {SEARCHED_KINDS}",
        f"CREATE TRIGGER events_search_update AFTER UPDATE OF payload ON events WHEN NEW.kind IN {SEARCHED_KINDS} "
        f"AND OLD.position <= (SELECT position FROM search_feed WHERE id = 1) BEGIN "
        f"INSERT INTO events_search(events_search, rowid, body) VALUES ('delete', OLD.position, {text('OLD')}); "
        f"INSERT INTO events_search(rowid, body) VALUES (NEW.position, {text('NEW')}); END",
    ]


POSTGRES_SCHEMA = [
    "CREATE TABLE search_feed (id integer PRIMARY KEY CHECK (id = 1), txid bigint NOT NULL, position bigint NOT NULL)",
    "INSERT INTO search_feed (id, txid, position) SELECT 1, -1, 0",
    "CREATE TABLE event_search (position bigint PRIMARY KEY, words tsvector NOT NULL)",
    f"INSERT INTO event_search (position, words) SELECT position, "
    f"sessionstore_search_words(sessionstore_search_text(kind, payload)) FROM events WHERE kind IN {SEARCHED_KINDS} "
    f"AND erased_at IS NULL",
    "UPDATE search_feed SET (txid, position) = (SELECT txid, position FROM events ORDER BY txid DESC, position DESC "
    "LIMIT 1) WHERE EXISTS (SELECT 1 FROM events)",
    "CREATE INDEX ix_event_search_words ON event_search USING gin (words)",
    "DROP INDEX IF EXISTS ix_events_search",
    """
CREATE FUNCTION sessionstore_reindex() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE event_search SET words = sessionstore_search_words(sessionstore_search_text(NEW.kind, NEW.payload))
   WHERE position = NEW.position;
  RETURN NULL;
END
$$""",
    "CREATE TRIGGER events_search_reindex AFTER UPDATE OF payload ON events FOR EACH ROW "
    "EXECUTE FUNCTION sessionstore_reindex()",
]


def upgrade() -> None:
    for statement in _sqlite_schema() if op.get_bind().dialect.name == "sqlite" else POSTGRES_SCHEMA:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        old = _revision_0003()
        for statement in ("DROP TRIGGER IF EXISTS events_search_update", "DROP VIEW IF EXISTS events_search_source",
                          "DROP TABLE IF EXISTS search_feed",
                          "INSERT INTO events_search(events_search) VALUES ('delete-all')",
                          *old.SQLITE_SCHEMA[1:]):  # 0003's triggers, and every event indexed again
            op.execute(statement)
        return
    for statement in ("DROP TRIGGER IF EXISTS events_search_reindex ON events",
                      "DROP FUNCTION IF EXISTS sessionstore_reindex()", "DROP TABLE IF EXISTS event_search",
                      "DROP TABLE IF EXISTS search_feed", _revision_0003().POSTGRES_SCHEMA[-1]):
        op.execute(statement)
