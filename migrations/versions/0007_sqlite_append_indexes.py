"""SQLite keeps no index an append pays for and no query reads.

* ``ix_events_txid_position`` indexes the transaction id PostgreSQL's feed orders by; SQLite
  stores none (its feed is ordered by position), so every row added an entry no one reads.
* ``ix_events_session_id_call_id`` now holds only the events that have a call id (tool calls
  and results): the queries that use it look a call id up, which no other event has.

Together about a tenth less work per appended row on SQLite (measured). PostgreSQL is unchanged.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TXID = "ix_events_txid_position"
_CALLS = "ix_events_session_id_call_id"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(_TXID, table_name="events")
        op.drop_index(_CALLS, table_name="events")
        op.create_index(_CALLS, "events", ["session_id", "call_id"], sqlite_where=sa.text("call_id IS NOT NULL"))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(_CALLS, table_name="events")
        op.create_index(_CALLS, "events", ["session_id", "call_id"])
        op.create_index(_TXID, "events", ["txid", "position"])
