"""Sessions found by what they are: each session's start and last activity, kept in its row, and
the indexes `sessions(where=…, since=…, until=…)` reads (`sessionstore/storage/listing.py`).

- ``sessions.started_at``: the metadata's ``started_at`` (an import's source time), else the
  first event's time, else ``created_at``. Fixed at creation: the listing's order and cursor.
- ``sessions.last_event_at``: the latest of ``started_at`` and the session's events' times.
  The append advances it in its one statement: PostgreSQL's gate UPDATE, Citus's
  ``sessionstore_append`` (replaced by `distribute` on migrate), and on SQLite the trigger that
  already advances the head (re-created here).
- Indexes on (started_at, id) and on (a metadata key, started_at, id) for the keys that matter
  (``user``, ``user_id``, ADK's ``adk.user_id``, the ``agent`` and ``project`` readings): one
  range of one index, read newest first, answers a user's newest page. The appends touch none of
  them (they change neither an indexed column nor the metadata).

Existing rows are filled in from their metadata and events.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from alembic import op

from sessionstore.finding import parse_time

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The listing's indexes as this revision made them (`storage/listing.indexes()` writes the same
# expressions, which the queries must repeat character for character): written out, so that a
# later change of the indexed keys is a migration of its own.
_PATHS = (("user", "user"), ("user_id", "user_id"), ("adk_user_id", "adk", "user_id"))
_DERIVED = (("project", "project", "cwd"), ("agent", "source", "integration"))


def _path(parts: tuple[str, ...], sqlite: bool) -> str:
    if sqlite:
        return "json_extract(metadata, '$" + "".join(f'."{p}"' for p in parts) + "')"
    return "(metadata" + "".join(f" -> '{p}'" for p in parts) + ")"


def indexes(postgres: bool) -> list[tuple[str, tuple[str, ...]]]:
    made = [(f"ix_sessions_meta_{name}", (_path(parts, not postgres), "started_at", "id"))
            for name, *parts in _PATHS]
    made += [(f"ix_sessions_meta_{name}", ("coalesce(" + ", ".join(_path((k,), not postgres) for k in keys) + ")",
                                           "started_at", "id")) for name, *keys in _DERIVED]
    return [("ix_sessions_started_at_id", ("started_at", "id")), *made]


_TRIGGER = """
CREATE TRIGGER events_advance_head AFTER INSERT ON events
BEGIN
    UPDATE sessions
       SET head_link = CASE WHEN NEW.version > head THEN NEW.link ELSE head_link END,
           head = MAX(head, NEW.version),
           last_event_at = MAX(last_event_at, NEW.created_at)
     WHERE id = NEW.session_id;
END
"""
# 0002's trigger, which a downgrade puts back
_ADVANCE = ",\n           last_event_at = MAX(last_event_at, NEW.created_at)"
_OLD_TRIGGER = _TRIGGER.replace(_ADVANCE, "")
_EPOCH = "1970-01-01 00:00:00"


def upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    if sqlite:  # re-created below, advancing the last activity too
        op.execute("DROP TRIGGER events_advance_head")
    # NOT NULL with a default (which the code never leaves to it): SQLite adds no NOT NULL column
    # without one, and dropping it would rebuild sessions under events' foreign key
    for name in ("started_at", "last_event_at"):
        op.add_column("sessions", sa.Column(name, sa.DateTime(timezone=True), nullable=False,
                                            server_default=sa.text(f"'{_EPOCH}'")))
    _backfill(bind, sqlite)
    for name, columns in indexes(not sqlite):
        op.execute(f"CREATE INDEX {name} ON sessions ({', '.join(columns)})")
    if sqlite:
        op.execute(_TRIGGER)


def _backfill(bind: sa.Connection, sqlite: bool) -> None:
    """The metadata's `started_at` where it reads as a time (Python: the importers' rule), then
    the first event or the creation for the rest, then the last activity."""
    started = "json_extract(metadata, '$.started_at')" if sqlite else "metadata -> 'started_at'"
    named = bind.execute(sa.text(f"SELECT id, {started} FROM sessions WHERE {started} IS NOT NULL")).all()
    rows = [{"sid": sid, "at": _bound(when, sqlite)} for sid, value in named if (when := parse_time(value))]
    if rows:
        bind.execute(sa.text("UPDATE sessions SET started_at = :at WHERE id = :sid"), rows)
    first = "(SELECT min(e.created_at) FROM events e WHERE e.session_id = sessions.id)"
    last = "(SELECT max(e.created_at) FROM events e WHERE e.session_id = sessions.id)"
    greatest = "MAX" if sqlite else "GREATEST"
    bind.execute(sa.text(f"UPDATE sessions SET started_at = coalesce({first}, created_at) "
                         f"WHERE started_at = '{_EPOCH}'"))
    bind.execute(sa.text(f"UPDATE sessions SET last_event_at = {greatest}(started_at, coalesce({last}, started_at))"))


def _bound(value: datetime, sqlite: bool) -> Any:
    """A time as the column keeps it (SQLite: SQLAlchemy's text form of UTC, which compares in order)."""
    value = value.astimezone(timezone.utc)
    return value.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f") if sqlite else value


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        op.execute("DROP TRIGGER events_advance_head")
    for name, _ in indexes(not sqlite):
        op.execute(f"DROP INDEX {name}")
    for name in ("last_event_at", "started_at"):  # (SQLite 3.35+ drops a column in place)
        op.execute(f"ALTER TABLE sessions DROP COLUMN {name}")
    if sqlite:
        op.execute(_OLD_TRIGGER)
