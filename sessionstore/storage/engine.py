"""Engines: which database, and how SQLite is set up to be a safe embedded default.

SQLite runs in WAL mode (readers never block the writer) with a busy timeout, and write
transactions start with ``BEGIN IMMEDIATE``: a deferred transaction that reads first and
writes later fails with SQLITE_BUSY at once when another process wrote in between, while an
immediate one waits its turn. `synchronous` is the durability knob (NORMAL by default: in WAL
mode a commit survives an application crash; FULL also survives power loss).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from ..errors import ConfigurationError
from ..events import encode_json
from . import packing

DEFAULT_URL: Final = "sqlite:///./sessionstore.db"
SYNCHRONOUS_LEVELS: Final = ("OFF", "NORMAL", "FULL", "EXTRA")
# Set on a connection (``conn.execution_options(sessionstore_write=True)``) before it begins,
# to take SQLite's write lock at BEGIN rather than at the first write.
WRITE_OPTION: Final = "sessionstore_write"



def resolve_url(url: str | None = None) -> str:
    """`url`, else ``$SESSIONSTORE_URL``, else ``sqlite:///./sessionstore.db``.

    A driver-less PostgreSQL URL gets psycopg 3, the driver sessionstore ships with.
    """
    url = url or os.environ.get("SESSIONSTORE_URL") or DEFAULT_URL
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def database_url(db: str | os.PathLike[str] | None) -> str:
    """A path (``conversations.db``, ``./h.db``) or a URL (``postgresql+psycopg://…``); None → the default URL.

    The CLI's ``--db`` and the integrations take either, so a user never has to spell ``sqlite:///``.
    """
    if db is None:
        return resolve_url(None)
    text = os.fspath(db)
    return resolve_url(text) if "://" in text else f"sqlite:///{Path(text).expanduser()}"


def _parse(url: str) -> URL:
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise ConfigurationError(f"not a database URL: {url!r} ({exc})") from None


def _check_backend(url: str, parsed: URL) -> str:
    backend = parsed.get_backend_name()
    if backend == "postgresql" and parsed.get_driver_name() != "psycopg":
        raise ConfigurationError(f"PostgreSQL URLs must use psycopg 3 (postgresql+psycopg://…), got {url!r}")
    if backend not in ("sqlite", "postgresql"):
        raise ConfigurationError(f"unsupported database {backend!r} in {url!r}; use sqlite:/// or postgresql+psycopg://")
    return backend


def _synchronous(level: str) -> str:
    level = level.upper()
    if level not in SYNCHRONOUS_LEVELS:
        raise ConfigurationError(f"sqlite synchronous must be one of {', '.join(SYNCHRONOUS_LEVELS)}, got {level!r}")
    return level


def make_engine(url: str | None = None, *, sqlite_synchronous: str = "NORMAL", busy_timeout_ms: int = 30_000,
                echo: bool = False, **kwargs: Any) -> Engine:
    """An engine for `url` (see `resolve_url`), with the settings sessionstore relies on."""
    url = resolve_url(url)
    parsed = _parse(url)
    if _check_backend(url, parsed) == "postgresql":
        return create_engine(url, echo=echo, json_serializer=encode_json, pool_pre_ping=True, **kwargs)
    in_memory = parsed.database in (None, "", ":memory:")
    if in_memory:
        # One shared connection, or every checkout would see its own empty database.
        kwargs.setdefault("poolclass", StaticPool)
    engine = create_engine(url, echo=echo, json_serializer=encode_json,
                           connect_args={"check_same_thread": False}, **kwargs)
    _configure_sqlite(engine, _synchronous(sqlite_synchronous), busy_timeout_ms, in_memory)
    return engine


def _configure_sqlite(engine: Engine, synchronous: str, busy_timeout_ms: int, in_memory: bool) -> None:
    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Autocommit at the driver level: we issue BEGIN ourselves (below), which is the only
        # way to get BEGIN IMMEDIATE and transactional DDL out of the sqlite3 module; and the
        # store's statements each commit on their own.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute(f"PRAGMA synchronous = {synchronous}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()
        packing.register(dbapi_connection)  # large payloads and meta are stored compressed

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(WRITE_OPTION)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
