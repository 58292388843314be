"""Appends near the limit: token counts off the append path, and SQLite's head trigger once a batch.

An append stores its events with tokens = -1 (`tokens.UNCOUNTED`): counting an event costs more
than storing it. `count_tokens` (run before the figures summed in the database and before an
erasure) finds the pending ones in this partial index — only uncounted events are in it, so it
stays as small as the backlog — and writes their counts. Existing rows are all counted: the
index starts empty.

SQLite: the trigger that advances a session's head (migration 0008) fires only for a row past
the head. A single append (one autocommit INSERT) still moves the head through it; a batch moves
the head first, in its transaction, with the UPDATE that is its gate, and inserts its rows plain
(`storage/statements.py`): one UPDATE a batch instead of one a row.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07
"""
from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


_TRIGGER = """
CREATE TRIGGER events_advance_head AFTER INSERT ON events
WHEN NEW.version > (SELECT head FROM sessions WHERE id = NEW.session_id)
BEGIN
    UPDATE sessions
       SET head_link = NEW.link,
           head = NEW.version,
           last_event_at = MAX(last_event_at, NEW.created_at)
     WHERE id = NEW.session_id;
END
"""
# 0008's trigger, which a downgrade puts back
_OLD_TRIGGER = """
CREATE TRIGGER events_advance_head AFTER INSERT ON events
BEGIN
    UPDATE sessions
       SET head_link = CASE WHEN NEW.version > head THEN NEW.link ELSE head_link END,
           head = MAX(head, NEW.version),
           last_event_at = MAX(last_event_at, NEW.created_at)
     WHERE id = NEW.session_id;
END
"""


def upgrade() -> None:
    op.execute("CREATE INDEX ix_events_uncounted ON events (session_id, position) WHERE tokens < 0")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER events_advance_head")
        op.execute(_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER events_advance_head")
        op.execute(_OLD_TRIGGER)
    # Counts are made on read only where this revision's code runs: an older one reads -1 as is.
    # Counting them takes the store's token counter, which a migration does not have.
    op.execute("DROP INDEX ix_events_uncounted")
