"""What a conversation reaches, found by index: the sessions that are part of one (metadata
``parent_session``) and the forks of some (``parent_id``).

`store.conversation` and `erase` read both for every session they erase, and retention
(`store.retain`) erases many: without these each read scanned every session (a store of a
thousand sessions spent ~6 ms a conversation in the scans, growing with the store). Both are
partial: only the sessions that have a parent are in them, so creating any other session costs
nothing more, and the appends touch neither.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07
"""
from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# The expressions `storage/statements.py` (`parts_of`) queries, character for character (an
# expression index serves only its own expression): `tables.PARENT_SESSION` at this revision.
_PARENT_SESSION = {"sqlite": "json_extract(metadata, '$.parent_session')",
                   "postgresql": "(metadata ->> 'parent_session')"}


def upgrade() -> None:
    parent = _PARENT_SESSION[op.get_bind().dialect.name]
    op.execute(f"CREATE INDEX ix_sessions_parent_session ON sessions ({parent}) WHERE {parent} IS NOT NULL")
    op.execute("CREATE INDEX ix_sessions_parent_id ON sessions (parent_id) WHERE parent_id IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX ix_sessions_parent_id")
    op.execute("DROP INDEX ix_sessions_parent_session")
