"""Faults on real components: a PostgreSQL server restarted under writers, connections killed
between and during calls, a full SQLite database, a read-only one, an unreachable server.

Each test asserts what the caller saw (nothing, or a typed `DatabaseError` with the driver's
exception as its cause) and that nothing acknowledged was lost or duplicated. PostgreSQL runs
on a cluster of this module's own, since restarting it would disturb other tests' stores.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import event

import sessionstore as ss
from sessionstore.errors import DatabaseReadOnly, DatabaseUnavailable, StatementTimeout, StorageFull
from sessionstore.summarizers.offline import OfflineSummarizer
from sessionstore.testing import PostgresCluster
from sessionstore.testing.postgres import _free_port

from .checks import loop_ticks

WRITERS = 8


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    with PostgresCluster() as pg:
        yield pg


@pytest.fixture
def pg_url(cluster: PostgresCluster, request: pytest.FixtureRequest) -> str:
    url = cluster.create_database(f"faults_{request.node.name[:40].lower().replace('[', '_').replace(']', '')}")
    store = ss.SessionStore(url)
    store.migrate()
    store.close()
    return url


def _terminate_others(cluster: PostgresCluster, database: str) -> int:
    """pg_terminate_backend on every connection to `database` (the store's, mid-use or idle)."""
    with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:
        rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = %s AND pid <> pg_backend_pid()", (database,)).fetchall()
    return len(rows)


def _check_sessions(store: ss.SessionStore, sessions: dict[str, int]) -> None:
    """Every acknowledged event stored exactly once, in order, and every chain intact."""
    for sid, count in sessions.items():
        texts = [e.payload["content"][0]["text"] for e in store.transcript(sid)]
        assert texts == [f"{sid} {n}" for n in range(count)], sid
    assert all(report.ok for report in store.verify(list(sessions)))


# --------------------------------------------------------------------------- PostgreSQL restarts


def test_restart_under_concurrent_writers_is_invisible(cluster: PostgresCluster, pg_url: str) -> None:
    store = ss.SessionStore(pg_url)  # created before the restarts, as an agent server keeps one
    sessions = {store.create_session(): 0 for _ in range(WRITERS)}
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(sid: str) -> None:
        try:
            n = 0
            while not stop.is_set():
                # expected_version makes a lost acknowledgement visible: the retry must be
                # recognised as a replay of this very batch, not refused as a conflict.
                store.append(sid, [ss.user(f"{sid} {n}"), ss.user(f"{sid} {n + 1}")], expected_version=n)
                n += 2
                sessions[sid] = n
                time.sleep(0.005)
        except BaseException as exc:  # noqa: BLE001 - the test reports what reached a caller
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(sid,)) for sid in sessions]
    for thread in threads:
        thread.start()
    written = []
    for _ in range(2):
        time.sleep(0.3)
        written.append(sum(sessions.values()))
        cluster.restart()
    time.sleep(0.3)
    stop.set()
    for thread in threads:
        thread.join()
    assert errors == []
    assert written[0] > 0 and sum(sessions.values()) > written[1]  # writing went on across both restarts
    _check_sessions(store, sessions)
    store.close()


def test_async_door_survives_a_restart(cluster: PostgresCluster, pg_url: str) -> None:
    async def main() -> dict[str, int]:
        async with ss.AsyncSessionStore(pg_url) as store:
            sessions = [await store.create_session() for _ in range(WRITERS)]

            async def writer(sid: str) -> None:
                for n in range(30):
                    await store.append(sid, ss.user(f"{sid} {n}"), expected_version=n)
                    await asyncio.sleep(0.005)

            async def restart() -> None:
                await asyncio.sleep(0.2)
                await asyncio.to_thread(cluster.restart)

            await asyncio.gather(restart(), *(writer(sid) for sid in sessions))
            assert (await store.context(sessions[0])).messages  # a read after the restart works too
            return {sid: 30 for sid in sessions}

    sessions = asyncio.run(main())
    with ss.SessionStore(pg_url) as store:
        _check_sessions(store, sessions)


def test_connections_terminated_between_calls(cluster: PostgresCluster, pg_url: str) -> None:
    database = pg_url.rsplit("/", 1)[1]
    store = ss.SessionStore(pg_url)
    sid = store.create_session()
    store.append(sid, ss.user(f"{sid} 0"))
    assert _terminate_others(cluster, database) >= 1
    store.append(sid, ss.user(f"{sid} 1"), expected_version=1)  # a write first after the kill
    assert _terminate_others(cluster, database) >= 1
    assert len(store.context(sid).messages) == 1  # and a read (both messages merge into one user turn)
    _check_sessions(store, {sid: 2})

    async def main() -> None:
        async with ss.AsyncSessionStore(pg_url) as astore:
            await astore.append(sid, ss.user(f"{sid} 2"), expected_version=2)
            assert _terminate_others(cluster, database) >= 1
            await astore.append(sid, ss.user(f"{sid} 3"), expected_version=3)
            assert _terminate_others(cluster, database) >= 1
            assert await astore.version(sid) == 4

    asyncio.run(main())
    _check_sessions(store, {sid: 4})
    store.close()


def test_connection_terminated_during_an_append(cluster: PostgresCluster, pg_url: str) -> None:
    """The append is stuck on a row lock when its backend is killed: it is retried, stored once."""
    database = pg_url.rsplit("/", 1)[1]
    store = ss.SessionStore(pg_url)
    sid = store.create_session()
    store.append(sid, ss.user(f"{sid} 0"))
    outcome: list[object] = []
    with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname=database) as locker:
        locker.execute("SELECT head FROM sessions WHERE id = %s FOR UPDATE", (sid,))
        thread = threading.Thread(target=lambda: outcome.append(
            store.append(sid, ss.user(f"{sid} 1"), expected_version=1)))
        thread.start()
        with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname="postgres",
                             autocommit=True) as admin:
            for _ in range(200):
                waiting = admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s "
                                        "AND wait_event_type = 'Lock'", (database,)).fetchall()
                if waiting:
                    break
                time.sleep(0.02)
            assert waiting, "the append never waited on the lock"
            admin.execute("SELECT pg_terminate_backend(%s)", (waiting[0][0],))
        locker.rollback()
    thread.join()
    assert [r.version for r in outcome] == [2]  # type: ignore[attr-defined]
    _check_sessions(store, {sid: 2})
    store.close()


def _lock_waiters(admin: psycopg.Connection[object], database: str) -> list[int]:
    """The backends of `database` waiting for a lock, polled until one is (or 4 s passed)."""
    for _ in range(200):
        waiting = admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
                                (database,)).fetchall()
        if waiting:
            return [row[0] for row in waiting]
        time.sleep(0.02)
    return []


def test_async_door_connection_killed_mid_call(cluster: PostgresCluster, pg_url: str) -> None:
    """An async append waits on a row lock (on one of the store's threads) when another connection
    kills its backend: the call is retried on a fresh connection and stored once, and the loop
    served other coroutines all along."""
    database = pg_url.rsplit("/", 1)[1]

    async def main() -> tuple[int, int, str]:
        async with ss.AsyncSessionStore(pg_url) as store:
            sid = await store.create_session()
            await store.append(sid, ss.user(f"{sid} 0"))
            async with loop_ticks(0.005) as ticks:
                with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname=database) as locker, \
                        psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname="postgres",
                                        autocommit=True) as admin:
                    locker.execute("SELECT head FROM sessions WHERE id = %s FOR UPDATE", (sid,))
                    append = asyncio.create_task(store.append(sid, ss.user(f"{sid} 1"), expected_version=1))
                    waiting = await asyncio.to_thread(_lock_waiters, admin, database)
                    assert waiting, "the append never waited on the lock"
                    assert not append.done() and ticks[0] > 0  # waiting off the loop
                    admin.execute("SELECT pg_terminate_backend(%s)", (waiting[0],))
                    await asyncio.sleep(0.1)
                    locker.rollback()
                result = await append
            return result.version, await store.version(sid), sid

    version, head, sid = asyncio.run(main())
    assert version == 2 and head == 2
    with ss.SessionStore(pg_url) as store:
        _check_sessions(store, {sid: 2})


def test_async_door_statement_timeout_is_typed_and_writes_nothing(cluster: PostgresCluster, pg_url: str) -> None:
    """PostgreSQL's statement_timeout cancels an async append stuck on a lock: `StatementTimeout`
    (retryable, the driver's error its cause), nothing written, the store's connection still
    good for the next call."""
    database = pg_url.rsplit("/", 1)[1]
    timed = pg_url + "?options=-c%20statement_timeout%3D300"

    async def main() -> tuple[StatementTimeout, int, int]:
        async with ss.AsyncSessionStore(timed) as store:
            sid = await store.create_session()
            await store.append(sid, ss.user("zero"))
            with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname=database) as locker:
                locker.execute("SELECT head FROM sessions WHERE id = %s FOR UPDATE", (sid,))
                with pytest.raises(StatementTimeout) as caught:
                    await store.append(sid, ss.user("one"), expected_version=1)
                locker.rollback()
            after = await store.append(sid, ss.user("two"), expected_version=1)
            return caught.value, after.version, len(await store.transcript(sid))

    error, version, count = asyncio.run(main())
    assert error.retryable and isinstance(error.__cause__, psycopg.errors.QueryCanceled)
    assert "statement timeout" in str(error) and "PostgreSQL" in str(error)
    assert version == 2 and count == 2  # the timed-out append left nothing


def test_a_stale_sqlite_snapshot_is_retried_at_once(tmp_path: Path) -> None:
    """A transaction that read, then found another connection had written before it could
    (SQLITE_BUSY_SNAPSHOT: SQLite does not wait then), did nothing: it is tried again at once,
    on the same connection, like a deadlock victim."""
    from sessionstore.repository.faults import Attempts, Fault, RetryPolicy, classify, connection_kept

    path = tmp_path / "snapshot.db"
    a = sqlite3.connect(path, isolation_level=None)
    b = sqlite3.connect(path, isolation_level=None)
    a.execute("PRAGMA journal_mode = WAL")
    a.execute("CREATE TABLE t (n INTEGER)")
    a.execute("BEGIN")
    a.execute("SELECT count(*) FROM t").fetchone()  # a's snapshot
    b.execute("INSERT INTO t VALUES (1)")  # written after it
    with pytest.raises(sqlite3.OperationalError) as caught:
        a.execute("INSERT INTO t VALUES (2)")
    a.execute("ROLLBACK")
    assert caught.value.sqlite_errorname == "SQLITE_BUSY_SNAPSHOT"
    assert classify(caught.value, sqlite3) is Fault.ROLLED_BACK and connection_kept(caught.value, sqlite3)
    assert Attempts(RetryPolicy(timeout=5), sqlite3, "here").delay(caught.value) == 0.0
    a.execute("INSERT INTO t VALUES (2)")  # the same connection goes on
    assert b.execute("SELECT count(*) FROM t").fetchone() == (2,)
    a.close()
    b.close()


class _KillingSummarizer:
    """The offline summariser, killing the store's connections while it 'thinks' the first time:
    the compaction's append then fails on a dead connection and the call is retried."""

    name = "offline"

    def __init__(self, kill: object) -> None:
        self.calls = 0
        self._kill = kill
        self._inner = OfflineSummarizer()

    def summarize(self, request: ss.SummaryRequest) -> str:
        self.calls += 1
        if self.calls == 1:
            self._kill()  # type: ignore[operator]
        return self._inner.summarize(request)


def test_retried_compaction_asks_its_model_once(cluster: PostgresCluster, pg_url: str) -> None:
    database = pg_url.rsplit("/", 1)[1]
    store = ss.SessionStore(pg_url)
    sid = store.create_session()
    for n in range(40):
        store.append(sid, [ss.user(f"question {n}: " + "why does the build fail " * 40),
                           ss.assistant(f"answer {n}: " + "because of the linker flags " * 40)])
    summarizer = _KillingSummarizer(lambda: _terminate_others(cluster, database))
    result = store.compact(sid, ss.CompactionPolicy.for_window(16_000), summarizer)
    assert result is not None and summarizer.calls == 1
    assert sum(1 for e in store.transcript(sid) if e.kind == "compaction") == 1
    store.close()


# --------------------------------------------------------------------------- typed errors


def test_unreachable_server_is_a_typed_error_without_the_password() -> None:
    url = f"postgresql+psycopg://ann:hunter2@127.0.0.1:{_free_port()}/agents"
    store = ss.SessionStore(url, retry_timeout=0.3)
    with pytest.raises(DatabaseUnavailable) as caught:
        store.version("x")
    error = caught.value
    assert error.retryable and isinstance(error.__cause__, psycopg.OperationalError)
    assert "127.0.0.1" in str(error) and "/agents" in str(error) and "hunter2" not in str(error)

    async def main() -> None:
        async with ss.AsyncSessionStore(url, retry_timeout=0.3) as astore:
            with pytest.raises(DatabaseUnavailable) as caught:
                await astore.append("x", ss.user("hi"))
            assert isinstance(caught.value.__cause__, psycopg.OperationalError)

    asyncio.run(main())


def _limit_pages(engine: object, limit: list[int]) -> None:
    @event.listens_for(engine, "connect")
    def _max_pages(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count = {limit[0]}")


def _fill(append: object, sid: str) -> tuple[int, StorageFull]:
    acknowledged = 0
    for n in range(10_000):
        try:
            append(sid, ss.user(f"{sid} {n}" + " padding" * 200))  # type: ignore[operator]
        except StorageFull as exc:
            return acknowledged, exc
        acknowledged += 1
    raise AssertionError("the database never filled")


def test_sqlite_full_is_a_typed_error_and_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    url = f"sqlite:///{path}"
    ss.SessionStore(url).migrate()
    with ss.SessionStore(url) as setup:
        pages = setup.engine.connect().exec_driver_sql("PRAGMA page_count").scalar()
    store = ss.SessionStore(url)
    _limit_pages(store.engine, [int(pages) + 40])
    sid = store.create_session()
    acknowledged, error = _fill(store.append, sid)
    assert acknowledged > 0 and error.retryable and str(path) in str(error)
    assert isinstance(error.__cause__, sqlite3.OperationalError)
    store.close()
    with ss.SessionStore(url) as roomy:  # space freed: nothing lost, and appends work again
        texts = [e.payload["content"][0]["text"].split(" padding")[0] for e in roomy.transcript(sid)]
        assert texts == [f"{sid} {n}" for n in range(acknowledged)]
        roomy.append(sid, ss.user("after"), expected_version=acknowledged)
        assert all(r.ok for r in roomy.verify([sid]))

    async def main() -> None:
        async with ss.AsyncSessionStore(url) as astore:
            _limit_pages(astore.sqlite_engine, [int(pages) + 60])  # where its programs run
            asid = await astore.create_session()
            count, error = await _afill(astore, asid)
            assert count > 0 and isinstance(error.__cause__, sqlite3.OperationalError)

    asyncio.run(main())


async def _afill(store: ss.AsyncSessionStore, sid: str) -> tuple[int, StorageFull]:
    for n in range(10_000):
        try:
            await store.append(sid, ss.user(f"{sid} {n}" + " padding" * 200))
        except StorageFull as exc:
            return n, exc
    raise AssertionError("the database never filled")


def test_read_only_database_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    with ss.SessionStore(f"sqlite:///{path}") as store:
        store.migrate()
        sid = store.create_session()
        store.append(sid, ss.user("kept"))
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    with ss.SessionStore(url) as ro:
        assert ro.version(sid) == 1
        with pytest.raises(DatabaseReadOnly) as caught:
            ro.append(sid, ss.user("refused"))
        assert not caught.value.retryable and isinstance(caught.value.__cause__, sqlite3.OperationalError)

    async def main() -> None:
        async with ss.AsyncSessionStore(url) as aro:
            assert await aro.version(sid) == 1
            with pytest.raises(DatabaseReadOnly):
                await aro.append(sid, ss.user("refused"))

    asyncio.run(main())
    with ss.SessionStore(f"sqlite:///{path}") as store:
        assert [e.payload["content"][0]["text"] for e in store.transcript(sid)] == ["kept"]


def test_cli_unreachable_database_is_one_line_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    url = f"postgresql://ann:hunter2@127.0.0.1:{_free_port()}/agents"
    done = subprocess.run([sys.executable, "-m", "sessionstore.cli", "--db", url, "sessions"], capture_output=True,
                          text=True, env={"SESSIONSTORE_RETRY_TIMEOUT": "0.2", "PATH": "/usr/bin:/bin"},
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot connect to" in lines[0] and "hunter2" not in done.stderr


def test_a_deadlock_victim_is_retried_on_the_same_connection(cluster: PostgresCluster, pg_url: str) -> None:
    """The server rolled back a whole transaction to break a deadlock (on Citus, its distributed
    detector does so among writers that go straight to a node and the coordinator's): nothing of
    it is stored, so the call is tried again, and the connection is still good."""
    from sessionstore.repository.faults import Attempts, Fault, RetryPolicy, classify, connection_kept

    url = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as a, psycopg.connect(url) as b:
        a.execute("CREATE TABLE pair (id int PRIMARY KEY)")
        a.execute("INSERT INTO pair VALUES (1), (2)")
        a.commit()
        a.execute("SET deadlock_timeout = '10s'")  # b, waiting last, is the one the server stops
        a.execute("UPDATE pair SET id = id WHERE id = 1")
        b.execute("UPDATE pair SET id = id WHERE id = 2")
        caught: list[BaseException] = []
        waiting = threading.Thread(target=lambda: a.execute("UPDATE pair SET id = id WHERE id = 2"))
        waiting.start()
        time.sleep(0.3)
        with pytest.raises(psycopg.errors.DeadlockDetected) as err:
            b.execute("UPDATE pair SET id = id WHERE id = 1")
        caught.append(err.value)
        b.rollback()
        waiting.join()
        a.rollback()
        assert b.execute("SELECT count(*) FROM pair").fetchone() == (2,)  # the same connection goes on
    (error,) = caught
    assert classify(error, psycopg) is Fault.ROLLED_BACK and connection_kept(error, psycopg)
    assert Attempts(RetryPolicy(timeout=5), psycopg, "here").delay(error) == 0.0  # the first retry at once
