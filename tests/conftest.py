"""Shared fixtures.

`store` runs every repository test twice: on a real SQLite file and on a real PostgreSQL
server that the suite starts itself (as the `postgres` user when run as root). If
PostgreSQL cannot start, every PostgreSQL test errors with the server's log: never a skip.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text

from sessionstore import SessionStore
from sessionstore.importers import import_path
from sessionstore.testing import PostgresCluster

TRANSCRIPTS = Path(os.environ.get("SESSIONSTORE_TRANSCRIPTS",
                                  Path(__file__).resolve().parents[2] / "shared" / "transcripts"))
BACKENDS = ("sqlite", "postgresql")
_database_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    with PostgresCluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def postgres_template(postgres: PostgresCluster) -> str:
    """A migrated database that per-test databases are cloned from (cheaper than migrating each)."""
    url = postgres.create_database("sessionstore_template")
    store = SessionStore(url)
    store.migrate()
    store.close()
    return "sessionstore_template"


def fresh_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest, *, migrated: bool = True) -> str:
    """A new, empty database of `backend` for one test."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'sessionstore.db'}"
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    name = f"t{next(_database_numbers)}"
    if not migrated:
        return cluster.create_database(name)
    template = request.getfixturevalue("postgres_template")
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return cluster.url(name)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The URL of a migrated, empty database on the test's backend."""
    url = fresh_url(backend, tmp_path, request)
    if backend == "sqlite":
        s = SessionStore(url)
        s.migrate()
        s.close()
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[SessionStore]:
    """A migrated, empty store on SQLite (a file) and on PostgreSQL."""
    s = SessionStore(store_url)
    yield s
    s.close()


@pytest.fixture(scope="session")
def transcripts() -> Path:
    if not TRANSCRIPTS.is_dir():
        pytest.skip(f"the shared transcripts are not at {TRANSCRIPTS} (set SESSIONSTORE_TRANSCRIPTS)")
    return TRANSCRIPTS


@contextmanager
def imported_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str,
                   *paths: Path) -> Iterator[SessionStore]:
    """A store on the fixture's backend (``request.param``) with shared transcripts imported
    (all of them when no `paths`): for module-scoped fixtures, which import once per backend."""
    if not TRANSCRIPTS.is_dir():
        pytest.skip(f"the shared transcripts are not at {TRANSCRIPTS}")
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp(name) / f'{name}.db'}"
    else:
        url = request.getfixturevalue("postgres").create_database(name)
    store = SessionStore(url)
    store.migrate()
    report = import_path(store, *(paths or (TRANSCRIPTS,)))
    assert report.issues == [] and report.files
    try:
        yield store
    finally:
        store.close()


def table_counts(url: str) -> dict[str, int]:
    """Rows per table, read behind the store's back, to prove that nothing was written."""
    s = SessionStore(url)
    try:
        with s.engine.connect() as conn:
            return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in ("sessions", "events")}
    finally:
        s.close()
