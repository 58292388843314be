"""SQLite: the append moves its session's head itself; the head trigger is dropped.

The trigger (migrations 0002, 0008, 0010) let a single append be one gated INSERT: it moved
``sessions.head``, ``head_link`` and ``last_event_at`` as the row landed. A trigger is a
sub-program SQLite sets up for every row, and the gated INSERT's materialised gate and RETURNING
cost as much again (SQLite runs a RETURNING as a trigger filling a temporary table): together a
third of a single append's time in SQLite (docs/benchmarks.md, "A fourth pass at 39.4"). Every
append now runs, in one write transaction, a read of the gate (the head it was built on, the
session not erased, the last position), an UPDATE that moves the head, and a plain INSERT of
its rows at the positions after that one (`sessionstore/storage/statements.py`). The store's
code is the only writer of events; nothing else relied on the trigger.

PostgreSQL and Citus: unchanged (they never had the trigger: one statement moves the head).

Downgrading puts migration 0010's trigger back: the code of that revision relies on it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-08
"""
from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# 0010's trigger, which a downgrade puts back
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


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER events_advance_head")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(_TRIGGER)
