"""Shared fixtures.

`store` runs every repository test twice: on a real SQLite file and on a real PostgreSQL
server that the suite starts itself (as the `postgres` user when run as root). If
PostgreSQL cannot start, every PostgreSQL test errors with the server's log: never a skip.

A test or a module marked ``citus`` (``pytestmark = pytest.mark.citus``) runs a third time, on
a Citus cluster (a coordinator and two workers, each a PostgreSQL server the suite starts once
per process) whose `store_url` is the coordinator's: the backend "citus". Where the Citus
extension is not installed for the PostgreSQL found, those cases are reported as skipped, with
the reason (`../shared/citus/install` builds it; `./scripts/test` runs it when it can).

`transcripts` is a folder that always exists: the real transcripts shipped in
`tests/fixtures/transcripts/` and, when present, the shared corpus (`$SESSIONSTORE_TRANSCRIPTS`,
else `../shared/transcripts`), laid side by side under `claude-code/`, `pi/` and `codex/`
(files are symlinks; folders keep their layout, so subagent files stay beside their main
file). A test that walks it runs on the fixtures always and on the shared corpus too when it
is there; it never skips.
"""

from __future__ import annotations

import gc
import itertools
import os
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import pytest
from sqlalchemy import text

from sessionstore import SessionStore
from sessionstore.cli.app import GC_THRESHOLDS
from sessionstore.importers import import_path
from sessionstore.testing import CitusCluster, PostgresCluster, citus_installed

from .citusdb import CitusDatabases

# pytest-xdist's workers run with COLUMNS=80, and the CLI sizes piped output by $COLUMNS: tests
# start without it, as a user's pipe does (a test that wants a width sets it).
os.environ.pop("COLUMNS", None)
# A suite started as a background job (`./scripts/test &` in a script) runs with SIGINT ignored,
# and children inherit an ignored signal: the CLI tests that press Ctrl-C (`watch`, an interrupted
# import) would wait for an exit that never comes. A handler is reset on exec, so with one here
# the children start as they do from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# The tests run with the collector's thresholds the CLI sets for itself (`GC_THRESHOLDS`): the
# largest tests spent about 40% of their time collecting (58 s against 33 for the two largest).
gc.set_threshold(*GC_THRESHOLDS)

# The shared corpus (large, outside the repository): an extra when present, never a reason to skip.
TRANSCRIPTS = Path(os.environ.get("SESSIONSTORE_TRANSCRIPTS",
                                  Path(__file__).resolve().parents[2] / "shared" / "transcripts"))
# Real transcripts shipped with the tests (see its README for provenance and licences).
FIXTURE_TRANSCRIPTS = Path(__file__).resolve().parent / "fixtures" / "transcripts"
SHARED = TRANSCRIPTS.is_dir()
BACKENDS = ("sqlite", "postgresql")
# A test that needs Citus is skipped, with this reason, where the extension is not installed.
NEEDS_CITUS = pytest.mark.skipif(
    not citus_installed(), reason="Citus is not installed for this PostgreSQL (../shared/citus/install builds it)")
CITUS = pytest.param("citus", marks=NEEDS_CITUS)


def backends(*, citus: bool = False) -> list[Any]:
    """The parameters of a test over backends: SQLite and PostgreSQL, and Citus when asked for
    (skipped, with the reason, where the extension is not installed)."""
    return [*BACKENDS, *([CITUS] if citus else [])]


def _parametrizes(metafunc: pytest.Metafunc, name: str) -> bool:
    """Does the test say itself which values `name` takes (``@pytest.mark.parametrize``)?"""
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if name in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names):
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`backend` (and so `store_url` and `store`) runs on every backend; on Citus too where the
    test or its module is marked ``citus``."""
    if "backend" in metafunc.fixturenames and not _parametrizes(metafunc, "backend"):
        citus = metafunc.definition.get_closest_marker("citus") is not None
        metafunc.parametrize("backend", backends(citus=citus), indirect=True)


# The files that take longest (junit times of a whole run), run first. pytest-xdist hands files out
# (`--dist loadfile`) in collection order, so `test_transcripts.py`, the longest and collected near
# the end, ran alone while the other worker had finished; longest first, the two end together.
_LONGEST_FIRST: Final = ("test_transcripts.py", "test_importers.py", "test_store.py", "test_properties_compaction.py",
                         "test_compaction_fits.py", "test_concurrency.py", "test_readme.py", "test_cli.py",
                         "test_citus.py", "test_integrations_openai.py", "test_crash.py", "test_aio.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the others keep their order


def shipped(pattern: str) -> str:
    """The path (relative to a transcripts folder) of the one shipped fixture matching `pattern`:
    recorded fixtures keep the names their tool gave them, which change when they are re-recorded."""
    matches = sorted(FIXTURE_TRANSCRIPTS.glob(pattern))
    if len(matches) != 1:
        raise LookupError(f"expected one fixture transcript matching {pattern!r}, found {len(matches)}")
    return matches[0].relative_to(FIXTURE_TRANSCRIPTS).as_posix()


def cases(always: list[Any], shared: list[Any]) -> list[Any]:
    """Parameters of a test over real transcripts: the shipped fixtures `always`, the shared
    corpus's files as extra cases when it is there (absent, they are not cases: nothing skips)."""
    return [*always, *(shared if SHARED else [])]
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


@pytest.fixture(scope="session")
def citus() -> Iterator[CitusCluster]:
    """A Citus cluster (a coordinator and two workers), started once per process on first use.
    Four shards a table (Citus's default is 32): spread over both workers all the same, and
    cheaper to copy and to empty between tests."""
    with CitusCluster(settings={"citus.shard_count": "4"}) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def citus_databases(citus: CitusCluster) -> CitusDatabases:
    return CitusDatabases(citus)


def citus_database(request: pytest.FixtureRequest, *, migrated: bool = True) -> str:
    """The coordinator's URL of an empty Citus database for the requesting test (or module, for
    a module-scoped fixture), given back when it is over (`tests/citusdb.py`)."""
    databases: CitusDatabases = request.getfixturevalue("citus_databases")
    name = databases.take(migrated=migrated)
    request.addfinalizer(lambda: databases.give_back(name, migrated=migrated))
    return databases.cluster.url(name)


def fresh_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest, *, migrated: bool = True) -> str:
    """A new, empty database of `backend` for one test."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'sessionstore.db'}"
    if backend == "citus":
        return citus_database(request, migrated=migrated)
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


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The test's backend: "sqlite", "postgresql" or "citus" (see `pytest_generate_tests`)."""
    return str(request.param)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file that per-test files are copied from, as PostgreSQL's are cloned
    from `postgres_template`: a copy takes a millisecond, Alembic's upgrade ~70 ms a test.
    Closing the last connection checkpoints the WAL into the file, which is then whole."""
    path = tmp_path_factory.mktemp("sqlite-template") / "sessionstore.db"
    store = SessionStore(f"sqlite:///{path}")
    store.migrate()
    store.close()
    assert not path.with_name(path.name + "-wal").exists(), "the template's WAL was not checkpointed"
    return path


@pytest.fixture
def store_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The URL of a migrated, empty database on the test's backend."""
    url = fresh_url(backend, tmp_path, request)
    if backend == "sqlite":
        shutil.copyfile(request.getfixturevalue("sqlite_template"), url.removeprefix("sqlite:///"))
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[SessionStore]:
    """A migrated, empty store on SQLite (a file) and on PostgreSQL."""
    s = SessionStore(store_url)
    yield s
    s.close()


def indexed(store: SessionStore, want: int, deadline: float = 30.0) -> int:
    """`store.index_search()` until it has taken `want` events (their sum): on PostgreSQL the feed
    ends below the cluster's oldest running transaction, which anything else on the cluster (an
    autovacuum ANALYZE of another test's database) can hold back for a moment."""
    total = store.index_search()
    until = time.monotonic() + deadline
    while total < want and time.monotonic() < until:
        time.sleep(0.05)
        total += store.index_search()
    return total


def transcript_corpora() -> list[Path]:
    """The transcript folders this run reads: the shipped fixtures, then the shared corpus if present."""
    return [FIXTURE_TRANSCRIPTS, *([TRANSCRIPTS] if TRANSCRIPTS.is_dir() else [])]


def lay_out_transcripts(root: Path) -> Path:
    """Every corpus's files under one folder `root` (symlinks; a path present in two corpora: the first)."""
    for corpus in transcript_corpora():
        for source in sorted(corpus.rglob("*")):
            if not source.is_file() or source.relative_to(corpus).parts[0] in ("LICENSES",):
                continue
            target = root / source.relative_to(corpus)
            if target.exists() or target.is_symlink():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)
    return root


@pytest.fixture(scope="session")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of real transcripts that always exists (see the module docstring)."""
    return lay_out_transcripts(tmp_path_factory.mktemp("transcripts"))


@contextmanager
def imported_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str,
                   *paths: Path, backend: str | None = None) -> Iterator[SessionStore]:
    """A store on `backend` (default: the fixture's ``request.param``) with real transcripts imported
    (`paths`, or the whole `transcripts` folder): for module-scoped fixtures, which import once per backend."""
    missing = [path for path in paths if not path.exists()]
    if missing:
        raise FileNotFoundError(f"no transcript at {missing[0]}")
    backend = backend or request.param
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp(name) / f'{name}.db'}"
    elif backend == "citus":
        url = citus_database(request)
    else:
        url = request.getfixturevalue("postgres").create_database(name)
    store = SessionStore(url)
    store.migrate()
    report = import_path(store, *(paths or (request.getfixturevalue("transcripts"),)))
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
            tables = ["sessions", "events"]
            if s.backend != "sqlite" and conn.scalar(text("SELECT to_regclass('event_ids')")):
                tables.append("event_ids")  # Citus: the registry of the event ids callers chose
            return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}
    finally:
        s.close()
