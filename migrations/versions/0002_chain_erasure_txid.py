"""the tamper-evident chain, erasure, one-statement appends, the PostgreSQL global feed

- events.content_hash / events.link and sessions.head_link: the chain (sessionstore/chain.py),
  computed here for every existing event, parents before forks;
- events.erased_at, sessions.erased_at / erase_reason: erasure leaves tombstones;
- events.txid (PostgreSQL): the inserting transaction, so that the global feed needs no table lock;
- on SQLite, a trigger that advances sessions.head/head_link as events are inserted, which lets an
  append be one gated INSERT statement (PostgreSQL does the same with a data-modifying CTE).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from alembic import op

from sessionstore import chain

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SQLITE_TRIGGER = """
CREATE TRIGGER events_advance_head AFTER INSERT ON events
BEGIN
    UPDATE sessions
       SET head_link = CASE WHEN NEW.version > head THEN NEW.link ELSE head_link END,
           head = MAX(head, NEW.version)
     WHERE id = NEW.session_id;
END
"""


def upgrade() -> None:
    bind = op.get_bind()
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("head_link", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("erase_reason", sa.Text(), nullable=True))
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("content_hash", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("link", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("txid", sa.BigInteger(), nullable=True))
    _backfill_chain(bind)
    with op.batch_alter_table("sessions") as batch:
        batch.alter_column("head_link", server_default=None)
    with op.batch_alter_table("events") as batch:
        batch.alter_column("content_hash", server_default=None)
        batch.alter_column("link", server_default=None)
    op.create_index("ix_events_txid_position", "events", ["txid", "position"])
    if bind.dialect.name == "sqlite":
        op.execute(SQLITE_TRIGGER)
    else:
        op.execute("UPDATE events SET txid = 0")  # everything before this revision is committed


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS events_advance_head")
    op.drop_index("ix_events_txid_position", table_name="events")
    with op.batch_alter_table("events") as batch:
        for column in ("txid", "erased_at", "link", "content_hash"):
            batch.drop_column(column)
    with op.batch_alter_table("sessions") as batch:
        for column in ("erase_reason", "erased_at", "head_link"):
            batch.drop_column(column)


def _time(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _backfill_chain(bind: sa.Connection) -> None:
    """Give every existing event its content hash and link, each lineage in version order."""
    sessions = {row.id: row for row in bind.execute(sa.text("SELECT id, parent_id, fork_version FROM sessions"))}
    links: dict[tuple[str, int], str] = {}  # (session, version) → link, for forks' starting points
    done: set[str] = set()
    pending = sorted(sessions)
    while pending:
        ready = [sid for sid in pending if sessions[sid].parent_id is None or sessions[sid].parent_id in done]
        if not ready:
            raise RuntimeError("sessions with a cycle of fork parents cannot be chained")
        for sid in ready:
            row = sessions[sid]
            start = chain.genesis(sid)
            if row.parent_id is not None and row.fork_version:
                start = _link_at(links, sessions, row.parent_id, row.fork_version)
            previous = start
            updates = []
            events = bind.execute(sa.text(
                "SELECT position, version, event_id, kind, CAST(payload AS TEXT) AS payload, meta, tokens, "
                "created_at FROM events WHERE session_id = :sid ORDER BY version"), {"sid": sid})
            for event in events:
                meta = json.loads(event.meta) if isinstance(event.meta, str) else event.meta
                content = chain.content_hash(event.payload, meta)
                previous = chain.link(previous, event_id=event.event_id, version=event.version, kind=event.kind,
                                      created_at=_time(event.created_at), tokens=event.tokens, content=content)
                links[(sid, event.version)] = previous
                updates.append({"p": event.position, "c": content, "l": previous})
            if updates:
                bind.execute(sa.text("UPDATE events SET content_hash = :c, link = :l WHERE position = :p"), updates)
            bind.execute(sa.text("UPDATE sessions SET head_link = :l WHERE id = :sid"), {"l": previous, "sid": sid})
            done.add(sid)
        pending = [sid for sid in pending if sid not in done]


def _link_at(links: dict[tuple[str, int], str], sessions: dict[str, Any], sid: str, version: int) -> str:
    """The link of version `version` of `sid`'s lineage (stored under `sid` or an ancestor)."""
    while (sid, version) not in links:
        row = sessions[sid]
        if row.parent_id is None or not row.fork_version or version > row.fork_version:
            raise RuntimeError(f"version {version} of session {sid!r} is not stored: the fork points at nothing")
        sid = row.parent_id
    return links[(sid, version)]
