"""The re-index trigger finds a payload's index row by its key.

Migration 0005 keyed `event_search` by (session_id, position), but the re-index trigger of
migration 0004 (plain PostgreSQL; a distributed schema has none) still looked rows up by
position alone: every payload rewritten (an erasure rewrites all of a session's) scanned the
whole index table. SQLite is unchanged.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_REINDEX = """
CREATE OR REPLACE FUNCTION sessionstore_reindex() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE event_search SET words = sessionstore_search_words(sessionstore_search_text(NEW.kind, NEW.payload))
   WHERE {where};
  RETURN NULL;
END
$$"""


def _reindex(where: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql" and bind.exec_driver_sql(
            "SELECT count(*) FROM pg_trigger WHERE tgname = 'events_search_reindex'").scalar():
        op.execute(_REINDEX.format(where=where))


def upgrade() -> None:
    _reindex("session_id = NEW.session_id AND position = NEW.position")


def downgrade() -> None:
    _reindex("position = NEW.position")
