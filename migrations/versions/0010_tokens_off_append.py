"""Token counts off the append path: the events stored uncounted, found by index.

An append stores its events with tokens = -1 (`tokens.UNCOUNTED`): counting an event costs more
than storing it. `count_tokens` (run before the figures summed in the database and before an
erasure) finds the pending ones in this partial index — only uncounted events are in it, so it
stays as small as the backlog — and writes their counts. Existing rows are all counted: the
index starts empty, and nothing else changes.

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


def upgrade() -> None:
    op.execute("CREATE INDEX ix_events_uncounted ON events (session_id, position) WHERE tokens < 0")


def downgrade() -> None:
    # Counts are made on read only where this revision's code runs: an older one reads -1 as is.
    # Counting them takes the store's token counter, which a migration does not have.
    op.execute("DROP INDEX ix_events_uncounted")
