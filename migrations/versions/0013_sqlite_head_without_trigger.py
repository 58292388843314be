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

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-08
"""
from __future__ import annotations

import runpy
from pathlib import Path

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER events_advance_head")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":  # 0010's trigger (the revisions folder is not a package)
        op.execute(runpy.run_path(str(Path(__file__).with_name("0010_tokens_off_append.py")))["_TRIGGER"])
