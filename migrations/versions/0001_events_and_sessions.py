"""events and sessions

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Frozen copies of the types at this revision (migrations never import the live schema).
payload_json = sa.JSON().with_variant(postgresql.JSON(), "postgresql")
meta_json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("metadata", meta_json, nullable=False),
        sa.Column("parent_id", sa.String(255), nullable=True),
        sa.Column("fork_version", sa.Integer(), nullable=True),
        sa.Column("head", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sessions"),
        sa.ForeignKeyConstraint(["parent_id"], ["sessions.id"], name="fk_sessions_parent_id_sessions"),
    )
    op.create_table(
        "events",
        sa.Column("position", position, autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("call_id", sa.String(255), nullable=True),
        sa.Column("payload", payload_json, nullable=False),
        sa.Column("meta", meta_json, nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("position", name="pk_events"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], name="fk_events_session_id_sessions"),
        sa.UniqueConstraint("session_id", "version", name="uq_events_session_id_version"),
        sa.UniqueConstraint("event_id", name="uq_events_event_id"),
    )
    op.create_index("ix_events_session_id_kind_version", "events", ["session_id", "kind", "version"])
    op.create_index("ix_events_session_id_call_id", "events", ["session_id", "call_id"])


def downgrade() -> None:
    op.drop_index("ix_events_session_id_call_id", table_name="events")
    op.drop_index("ix_events_session_id_kind_version", table_name="events")
    op.drop_table("events")
    op.drop_table("sessions")
