"""SQLite: large payloads and meta stored compressed; the search index holds live events only

Migration 0004's update trigger re-indexed an erased event's tombstone, so every search had to
read each match's `erased_at` to leave it out — a column stored after the payload and meta,
which for a large event means reading its overflow pages — for every match of the word before
ranking them (a common word at a million events: most of the search). PostgreSQL's erasure
already deletes the session's index rows. Now on SQLite too an indexed event is a live one, and a
search ranks the index alone and reads the events of its hits only (`storage/search_statements.py`).

- SQLite: the update trigger (now on `payload` or `erased_at`) takes the old text out of the
  index if the event was live, and puts the new text in if it still is; the tombstones indexed
  so far are taken out (those the index holds: its `docsize` table has a row for each).
- SQLite: an event's payload or meta of 2,048 characters or more is stored compressed (a BLOB,
  `sessionstore/storage/packing.py`; the store with its index was 1.54× the bytes of the
  transcripts it held, PostgreSQL compresses such values itself). The view of the indexed text
  and the trigger read payloads through `sessionstore_unpack`. Rows stored before stay as they
  are (rewriting every large row of a large store is not a migration's to do); new ones are packed.
- PostgreSQL: unchanged.

Downgrading stores every packed value as text again, and puts the erased events the indexer has
passed back into the index (0004's trigger expects every searched event up to the indexer's
place to be there).

Revision ID: 0011
Revises: 0009
Create Date: 2026-12-07
"""
from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

from alembic import op

from sessionstore.storage.packing import SQL_FUNCTION, register

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

SEARCHED_KINDS = "('message', 'tool_call', 'tool_result', 'system', 'scratchpad')"
_PLACE = "(SELECT position FROM search_feed WHERE id = 1)"
_INDEXED = "position IN (SELECT id FROM events_search_docsize)"


def _revision(name: str):  # type: ignore[no-untyped-def]
    """An earlier revision's frozen SQL (the revisions folder is not a package)."""
    path = Path(__file__).with_name(name)
    spec = importlib.util.spec_from_file_location(f"sessionstore_revision_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _unpacked(sql: str, row: str) -> str:
    """`sql` reading the payload of `row` through `sessionstore_unpack` (a large one is compressed)."""
    return sql.replace(f"{row}.payload", f"{SQL_FUNCTION}({row}.payload)")


def _function() -> None:
    """`sessionstore_unpack` on the connection this runs on (an engine of ours has it already;
    another, such as the alembic command's, may not)."""
    driver = op.get_bind().connection.driver_connection
    if isinstance(driver, sqlite3.Connection):
        register(driver)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _function()
    text = _revision("0003_search.py").sqlite_text
    op.execute("DROP TRIGGER IF EXISTS events_search_update")
    op.execute("DROP VIEW IF EXISTS events_search_source")
    op.execute(f"CREATE VIEW events_search_source (position, erased_at, body) AS SELECT position, erased_at, "
               f"{_unpacked(text('events'), 'events')} FROM events WHERE kind IN {SEARCHED_KINDS}")
    op.execute(f"CREATE TRIGGER events_search_update AFTER UPDATE OF payload, erased_at ON events "
               f"WHEN NEW.kind IN {SEARCHED_KINDS} AND OLD.position <= {_PLACE} BEGIN "
               f"INSERT INTO events_search(events_search, rowid, body) SELECT 'delete', OLD.position, "
               f"{_unpacked(text('OLD'), 'OLD')} WHERE OLD.erased_at IS NULL; "
               f"INSERT INTO events_search(rowid, body) SELECT NEW.position, {_unpacked(text('NEW'), 'NEW')} "
               f"WHERE NEW.erased_at IS NULL; END")
    op.execute(f"INSERT INTO events_search(events_search, rowid, body) SELECT 'delete', position, body "
               f"FROM events_search_source WHERE erased_at IS NOT NULL AND {_INDEXED}")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _function()
    for column in ("payload", "meta"):  # (this revision's trigger keeps the index right meanwhile)
        op.execute(f"UPDATE events SET {column} = {SQL_FUNCTION}({column}) WHERE typeof({column}) = 'blob'")
    op.execute(f"INSERT INTO events_search(rowid, body) SELECT position, body FROM events_search_source "
               f"WHERE erased_at IS NOT NULL AND position <= {_PLACE} AND NOT {_INDEXED}")
    op.execute("DROP TRIGGER IF EXISTS events_search_update")
    op.execute("DROP VIEW IF EXISTS events_search_source")
    for statement in _revision("0004_search_off_append.py")._sqlite_schema():
        if statement.startswith(("CREATE TRIGGER events_search_update", "CREATE VIEW events_search_source")):
            op.execute(statement)
