"""SQLite's search index holds live events only: erasure takes an event out of it

Migration 0004's update trigger re-indexed an erased event's tombstone, so every search had to
read each match's `erased_at` to leave it out — a column stored after the payload and meta,
which for a large event means reading its overflow pages — for every match of the word before
ranking them (a common word at a million events: most of the search). PostgreSQL's erasure
already deletes the session's index rows. Now on SQLite too an indexed event is a live one, and a
search ranks the index alone and reads the events of its hits only (`storage/search_statements.py`).

- SQLite: the update trigger (now on `payload` or `erased_at`) takes the old text out of the
  index if the event was live, and puts the new text in if it still is; the tombstones indexed
  so far are taken out (those the index holds: its `docsize` table has a row for each).
- PostgreSQL: unchanged.

Downgrading puts the erased events the indexer has passed back into the index (0004's trigger
expects every searched event up to the indexer's place to be there).

Revision ID: 0011
Revises: 0009
Create Date: 2026-12-07
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision = "0011"
down_revision = "0009"
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


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    text = _revision("0003_search.py").sqlite_text
    op.execute("DROP TRIGGER IF EXISTS events_search_update")
    op.execute(f"CREATE TRIGGER events_search_update AFTER UPDATE OF payload, erased_at ON events "
               f"WHEN NEW.kind IN {SEARCHED_KINDS} AND OLD.position <= {_PLACE} BEGIN "
               f"INSERT INTO events_search(events_search, rowid, body) SELECT 'delete', OLD.position, {text('OLD')} "
               f"WHERE OLD.erased_at IS NULL; "
               f"INSERT INTO events_search(rowid, body) SELECT NEW.position, {text('NEW')} "
               f"WHERE NEW.erased_at IS NULL; END")
    op.execute(f"INSERT INTO events_search(events_search, rowid, body) SELECT 'delete', position, body "
               f"FROM events_search_source WHERE erased_at IS NOT NULL AND {_INDEXED}")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(f"INSERT INTO events_search(rowid, body) SELECT position, body FROM events_search_source "
               f"WHERE erased_at IS NOT NULL AND position <= {_PLACE} AND NOT {_INDEXED}")
    op.execute("DROP TRIGGER IF EXISTS events_search_update")
    op.execute([s for s in _revision("0004_search_off_append.py")._sqlite_schema()
                if s.startswith("CREATE TRIGGER events_search_update")][0])
