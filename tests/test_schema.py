"""The schema exists only through Alembic, identically on both backends, and never drifts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

import sessionstore as ss
from sessionstore import SchemaNotReady, SessionStore
from sessionstore.storage import current_revision, head_revision, metadata
from sessionstore.storage.tables import include_name, include_object

from .conftest import fresh_url

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def empty_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return fresh_url(backend, tmp_path, request, migrated=False)


def schema_diff(store: SessionStore) -> list[object]:
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True,
                                                         "include_name": include_name,
                                                         "include_object": include_object(store.backend)})
        return list(compare_metadata(context, metadata))


def test_unmigrated_database_says_what_to_do(empty_url: str) -> None:
    store = SessionStore(empty_url)
    try:
        with pytest.raises(SchemaNotReady, match="sessionstore db upgrade"):
            store.create_session()
        with pytest.raises(SchemaNotReady):
            store.version("x")
    finally:
        store.close()


def test_migrations_build_exactly_the_table_metadata(empty_url: str) -> None:
    store = SessionStore(empty_url)
    try:
        assert current_revision(store.engine) is None
        store.migrate()
        assert current_revision(store.engine) == head_revision()
        assert schema_diff(store) == []
        store.migrate()  # idempotent
        assert schema_diff(store) == []
        sid = store.create_session()
        assert store.append(sid, ss.user("works")).version == 1
    finally:
        store.close()


def test_alembic_command_line_uses_the_same_migrations(empty_url: str) -> None:
    alembic = Path(sys.executable).with_name("alembic")
    done = subprocess.run([str(alembic), "-c", str(ROOT / "alembic.ini"), "-x", f"url={empty_url}", "upgrade", "head"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    store = SessionStore(empty_url)
    try:
        assert current_revision(store.engine) == head_revision()
        assert schema_diff(store) == []
    finally:
        store.close()


def test_sqlite_is_wal_with_busy_timeout_and_configurable_durability(tmp_path: Path) -> None:
    store = SessionStore(f"sqlite:///{tmp_path / 'x.db'}", sqlite_synchronous="FULL")
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        store.close()
    with pytest.raises(ss.ConfigurationError, match="synchronous"):
        SessionStore(f"sqlite:///{tmp_path / 'y.db'}", sqlite_synchronous="SOMETIMES")


def test_url_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sessionstore.storage import resolve_url

    monkeypatch.delenv("SESSIONSTORE_URL", raising=False)
    assert resolve_url() == "sqlite:///./sessionstore.db"
    monkeypatch.setenv("SESSIONSTORE_URL", f"sqlite:///{tmp_path}/env.db")
    assert resolve_url() == f"sqlite:///{tmp_path}/env.db"
    assert resolve_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    with pytest.raises(ss.ConfigurationError, match="unsupported database"):
        SessionStore("mysql://u@h/db")
    with pytest.raises(ss.ConfigurationError, match="not a database URL"):
        SessionStore("::::")
