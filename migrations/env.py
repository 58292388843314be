"""Alembic environment: one migration history for SQLite and PostgreSQL.

`SessionStore.migrate()` hands in its own connection (``config.attributes["connection"]``);
the `alembic` command line builds an engine the same way the library does.
"""

from __future__ import annotations

from alembic import context

from sessionstore.storage.engine import make_engine
from sessionstore.storage.tables import include_name, include_object, metadata

config = context.config


def run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        include_name=include_name,
        include_object=include_object(connection.dialect.name),
        # SQLite cannot ALTER most things in place; batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("sessionstore migrations run online only: they need a connection")
main()
