"""`sessionstore db …`: schema management."""

from __future__ import annotations

import click

from ..storage.migrate import current_revision, head_revision
from .app import State, main, out, sqlite_file

@main.group()
def db() -> None:
    """Schema management (Alembic migrations)."""


@db.command("upgrade")
@click.pass_obj
def db_upgrade(state: State) -> None:
    """Create or upgrade the schema to the latest revision."""
    store = state.store(create=True)
    for line in store.migrate():
        out.print(line)
    out.print(f"{store!r} is at revision {current_revision(store.engine)}")


@db.command("current")
@click.pass_obj
def db_current(state: State) -> None:
    """Show the schema revision of the database and the latest one."""
    path = sqlite_file(state.url)
    if path is not None and not path.exists():
        out.print(f"database: (no schema) — {path} does not exist yet; latest: {head_revision()}")
        return
    revision = current_revision(state.store().engine)
    out.print(f"database: {revision or '(no schema)'}; latest: {head_revision()}")
