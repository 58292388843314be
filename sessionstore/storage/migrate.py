"""Schema upgrades through Alembic, the only way the schema is created or changed."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from .distribution import distribute
from .engine import WRITE_OPTION


def migrations_path() -> Path:
    """The Alembic script folder: `migrations/` of the checkout, shipped as `sessionstore._migrations`."""
    try:
        found = Path(str(resources.files("sessionstore._migrations")))
        if (found / "env.py").is_file():
            return found
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(url: str | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_path()))
    if url:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(engine: Engine, revision: str = "head") -> list[str]:
    """Run `alembic upgrade` on `engine`'s database, in one transaction where the backend allows,
    then distribute the schema on a Citus coordinator (`distribution`); what that did."""
    with engine.connect() as connection:
        return upgrade_on(connection, revision)


def upgrade_on(connection: Connection, revision: str = "head") -> list[str]:
    """`upgrade` on an open connection (the asyncio store runs it through ``run_sync``, as
    Alembic documents for asyncio applications). A distribution that fails rolls the
    migrations back with it: the database stays at its previous revision."""
    config = alembic_config()
    connection.execution_options(**{WRITE_OPTION: True})
    with connection.begin():
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
        return distribute(connection) if revision == "head" else []


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
