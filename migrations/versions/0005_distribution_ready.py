"""PostgreSQL: a schema that can be distributed by session (Citus), on every PostgreSQL

Citus (and declarative partitioning) enforce a unique constraint only when it includes the
distribution column, and refuse a foreign key between rows of different sessions. So:

- `events`' primary key becomes (session_id, position); `position` keeps its own index (the
  feed resumes by it) and stays unique by its sequence.
- UNIQUE (session_id, event_id): the idempotent append's guard within a session. The global
  `uq_events_event_id` stays on plain PostgreSQL (it also catches an id reused in another
  session); distributing drops it (`storage/distribution.py`), where it cannot be enforced.
- `sessions.parent_id` loses its foreign key: a parent lives on another shard. `fork` checks
  the parent exists (it reads its head first), and no session row is ever deleted.
- `event_search` (migration 0004) is keyed by (session_id, position), so it can be colocated
  with `events`. Erasure now deletes the session's index rows in its own transaction (an erased
  event is never a hit), so that the re-index trigger, which Citus does not allow on a
  distributed table without `citus.enable_unsafe_triggers`, can go when distributing; on plain
  PostgreSQL it stays (a payload replaced by hand is still re-indexed).

SQLite is unchanged: one file is one place.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""
from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UPGRADE = [
    "ALTER TABLE sessions DROP CONSTRAINT IF EXISTS fk_sessions_parent_id_sessions",
    "ALTER TABLE events DROP CONSTRAINT pk_events",
    "ALTER TABLE events ADD CONSTRAINT pk_events PRIMARY KEY (session_id, position)",
    "CREATE INDEX ix_events_position ON events (position)",
    "ALTER TABLE events ADD CONSTRAINT uq_events_session_id_event_id UNIQUE (session_id, event_id)",
    "ALTER TABLE event_search ADD COLUMN session_id varchar(255)",
    "UPDATE event_search SET session_id = events.session_id FROM events WHERE events.position = event_search.position",
    "ALTER TABLE event_search ALTER COLUMN session_id SET NOT NULL",
    "ALTER TABLE event_search DROP CONSTRAINT event_search_pkey",
    "ALTER TABLE event_search ADD CONSTRAINT event_search_pkey PRIMARY KEY (session_id, position)",
]

DOWNGRADE = [
    "ALTER TABLE event_search DROP CONSTRAINT event_search_pkey",
    "ALTER TABLE event_search ADD CONSTRAINT event_search_pkey PRIMARY KEY (position)",
    "ALTER TABLE event_search DROP COLUMN session_id",
    "ALTER TABLE events DROP CONSTRAINT uq_events_session_id_event_id",
    "DROP INDEX ix_events_position",
    "ALTER TABLE events DROP CONSTRAINT pk_events",
    "ALTER TABLE events ADD CONSTRAINT pk_events PRIMARY KEY (position)",
    "ALTER TABLE sessions ADD CONSTRAINT fk_sessions_parent_id_sessions FOREIGN KEY (parent_id) REFERENCES sessions (id)",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in UPGRADE:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in DOWNGRADE:
            op.execute(statement)
