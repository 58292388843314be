"""Citus (distributed PostgreSQL), on a real cluster the test starts: a coordinator and two
workers, each a PostgreSQL server with the extension preloaded (`sessionstore.testing.CitusCluster`).

What distribution must keep (issue 20): `migrate()` distributes by session and says so, once;
an append and the reads of a session's context are each one task on one shard (Citus's own
EXPLAIN); the global feed returns every event exactly once, resumable from any cursor, and
never skips a late commit on a worker; an upgrade that cannot distribute stops, naming the
object, at the previous revision. And on every backend: a database at revision 0003 holding
data upgrades with every event and chain intact.

Skipped, with the reason, where the citus extension is not installed for this PostgreSQL
(`../shared/citus/install` builds it; `./scripts/test` runs it when it can).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.engine import make_url

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.cli import main
from sessionstore.repository import base as repository_base
from sessionstore.errors import ConfigurationError, SchemaNotReady
from sessionstore.storage.distribution import APPEND_ARGUMENTS, APPEND_FUNCTION
from sessionstore.storage.migrate import current_revision, head_revision, upgrade
from sessionstore.storage.placement import NODE_CONNECT_TIMEOUT, PLACEMENT_SQL, Node, Placement, citus_hash
from sessionstore.testing import CitusCluster

from .chains import assert_chains_intact
from .checks import user_texts
from .conftest import NEEDS_CITUS, citus_database, fresh_url, table_counts
from .doors import DOORS, open_door
from .older_schema import writable_by_this_version

needs_citus = NEEDS_CITUS


@pytest.fixture
def cluster(citus: CitusCluster) -> CitusCluster:
    """The suite's Citus cluster (`conftest.citus`: started once per process, four shards a table)."""
    return citus


@pytest.fixture
def citus_url(request: pytest.FixtureRequest) -> str:
    """A new database on it, the extension created and the nodes registered, not migrated (dropped after)."""
    return citus_database(request, migrated=False)


def _driver_url(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@needs_citus
def test_migrate_distributes_by_session_once_and_says_so(citus_url: str) -> None:
    store = SessionStore(citus_url)
    done = store.migrate()
    assert "distributed sessions by id" in done
    assert "distributed events by session_id, colocated with sessions" in done
    assert "distributed event_search by session_id, colocated with sessions" in done
    assert any("sessionstore_append" in line for line in done)
    assert store.migrate() == []  # idempotent: nothing left to do, nothing said
    with store.engine.begin() as conn:  # the function an earlier version made
        conn.execute(text(APPEND_FUNCTION.replace("ShareLock: what Citus's writes take", "an earlier body")))
    assert store.migrate() == ["updated sessionstore_append() to this version's"]
    assert store.migrate() == []
    with store.engine.connect() as conn:
        colocation = dict(conn.execute(text(
            "SELECT logicalrelid::text, colocationid FROM pg_dist_partition "
            "WHERE logicalrelid::text IN ('sessions', 'events', 'event_search')")).all())
        nodes = conn.scalar(text("SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'events'::regclass"))
    assert set(colocation) == {"sessions", "events", "event_search"} and len(set(colocation.values())) == 1
    assert nodes == 2  # the shards are spread over both workers
    store.close()


@needs_citus
def test_db_upgrade_says_what_it_distributed(citus_url: str) -> None:
    result = CliRunner().invoke(main, ["--db", citus_url, "db", "upgrade"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "distributed events by session_id, colocated with sessions" in result.output
    again = CliRunner().invoke(main, ["--db", citus_url, "db", "upgrade"], catch_exceptions=False)
    assert "distributed" not in again.output and f"is at revision {head_revision()}" in again.output


def _holder(conn: psycopg.Connection[Any], session_id: str) -> int:
    """The port of the node holding the session, as the coordinator says."""
    row = conn.execute("SELECT nodeport FROM citus_shards WHERE table_name = 'sessions'::regclass AND shardid = "
                       "get_shard_id_for_distribution_column('sessions', %s::text)", (session_id,)).fetchone()
    assert row is not None
    return int(row[0])


@needs_citus
@pytest.mark.parametrize("route", [True, False], ids=["routed", "through-the-coordinator"])
def test_append_and_context_reads_are_one_task_on_one_shard(citus_url: str, monkeypatch: pytest.MonkeyPatch,
                                                            route: bool) -> None:
    """Citus's EXPLAIN of every statement an append and a context read of an unforked session
    run: one task each, on the node that holds the session. The append goes straight to that
    node (one hop), unless the store is told to send everything to the coordinator."""
    store = SessionStore(citus_url)
    store.migrate()
    sid = store.create_session(events=[ss.user("hello"), ss.assistant("hi")])
    seen: list[tuple[str, Any, int]] = []
    original = psycopg.Cursor.execute

    def recording(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        seen.append((str(query), params, self.connection.info.port))
        return original(self, query, params, **kwargs)

    fresh = SessionStore(citus_url, route_to_nodes=route)  # nothing cached: the context is read from the database
    monkeypatch.setattr(psycopg.Cursor, "execute", recording)
    fresh.append(sid, ss.user("more"))
    view = fresh.context(sid)
    monkeypatch.undo()
    assert user_texts(view) == ["hello", "more"]
    with psycopg.connect(_driver_url(citus_url), autocommit=True, cursor_factory=psycopg.ClientCursor) as conn:
        holder = _holder(conn, sid)
        (append_port,) = {port for sql, _, port in seen if "FROM sessionstore_append(" in sql}
        assert append_port == (holder if route else store.engine.url.port)
        for sql, params, _ in seen:
            if not re.search(r"\b(FROM|UPDATE|INTO) (sessions|events|sessionstore_append)\b", sql):
                continue  # the driver's own questions on connecting, the one-time catalog probe
            plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + sql, params))
            assert "Task Count: 1\n" in plan + "\n", f"{sql}\n{plan}"
            assert f"port={holder} " in plan, f"{sql}\n{plan}"
    store.close()
    fresh.close()


@needs_citus
@pytest.mark.parametrize("route", [True, False], ids=["routed", "through-the-coordinator"])
def test_the_async_door_sends_appends_where_the_blocking_one_does(citus_url: str, monkeypatch: pytest.MonkeyPatch,
                                                                   route: bool) -> None:
    """The async door steps its programs on the blocking door's connections, in its threads: the
    same routing (`Routes.route`), the same nodes."""
    SessionStore(citus_url).migrate()
    ports: list[int] = []
    original = psycopg.Cursor.execute

    def recording(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        if "FROM sessionstore_append(" in str(query):
            ports.append(self.connection.info.port)
        return original(self, query, params, **kwargs)

    async def scenario() -> tuple[str, list[str]]:
        async with ss.AsyncSessionStore(citus_url, route_to_nodes=route) as store:
            sid = await store.create_session()
            monkeypatch.setattr(psycopg.Cursor, "execute", recording)
            for text in ("one", "two", "three"):
                await store.append(sid, ss.user(text))
            monkeypatch.undo()
            return sid, [e.payload["content"][0]["text"] async for e in store.events(sid)]

    sid, texts = asyncio.run(scenario())
    assert texts == ["one", "two", "three"]
    coordinator = int(citus_url.rsplit(":", 1)[1].split("/")[0])
    assert set(ports) == {_holder_of(citus_url, sid) if route else coordinator} and len(ports) == 3


@needs_citus
@pytest.mark.parametrize("door", DOORS)
def test_a_running_store_notices_the_schema_distributed_by_a_later_upgrade(citus_url: str, door: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A process started before `db upgrade` distributed the schema appends on the plain path; it
    asks again (`SHAPE_TTL`, here shortened) and its next append is `sessionstore_append` on the
    node holding the session, stamped with that node's group for the feed."""
    monkeypatch.setattr(repository_base, "SHAPE_TTL", 0.2)
    setup = SessionStore(citus_url)
    upgrade(setup.engine, "0008")  # the schema at its head revision, but not distributed (Citus came later)
    setup.close()
    running = open_door(citus_url, door)
    sid = running.create_session()
    running.append(sid, ss.user("before"))
    assert running._repo.sql.distributed is False
    assert any("distributed sessions by id" in line for line in SessionStore(citus_url).migrate())  # `db upgrade`
    time.sleep(0.3)
    sent: list[str] = []
    original = psycopg.Cursor.execute

    def recording(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        sent.append(str(query))
        return original(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recording)
    running.append(sid, ss.user("after"))
    monkeypatch.undo()
    assert any("FROM sessionstore_append(" in sql for sql in sent)
    assert [e.payload["content"][0]["text"] for e in running.transcript(sid)] == ["before", "after"]
    running.close()
    with psycopg.connect(_driver_url(citus_url), autocommit=True) as conn:
        group = conn.execute("SELECT groupid FROM pg_dist_placement WHERE shardid = "
                             "get_shard_id_for_distribution_column('sessions', %s::text)", (sid,)).fetchone()
        stamp = conn.execute("SELECT txid >> 52 FROM events WHERE session_id = %s AND version = 2", (sid,)).fetchone()
    assert group is not None and stamp == (group[0],)


@needs_citus
def test_a_long_batch_is_one_call_on_the_sessions_node(citus_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """1,200 events in one append: one call, sent to the node holding the session and stamped
    there (its group in every event's feed key), not chunked in a coordinator transaction."""
    store = SessionStore(citus_url)
    store.migrate()
    sid = store.create_session()
    store.append(sid, ss.user("first"))
    calls: list[int] = []
    original = psycopg.Cursor.execute

    def recording(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        if "FROM sessionstore_append(" in str(query) or str(query).strip().upper() == "BEGIN":
            calls.append(self.connection.info.port)
        return original(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recording)
    result = store.append(sid, [ss.user(f"line {i}") for i in range(1200)])
    monkeypatch.undo()
    assert result.version == 1201 and calls == [_holder_of(citus_url, sid)]
    with psycopg.connect(_driver_url(citus_url), autocommit=True) as conn:
        groups = conn.execute("SELECT DISTINCT txid >> 52 FROM events WHERE session_id = %s AND version > 1",
                              (sid,)).fetchall()
        holder_group = conn.execute("SELECT groupid FROM pg_dist_node WHERE nodeport = %s",
                                    (_holder_of(citus_url, sid),)).fetchone()
    assert groups == [holder_group]
    assert [e.version for e in store.events(sid)] == list(range(1, 1202))
    store.close()


@needs_citus
def test_an_append_on_a_node_with_asynchronous_commit_writes_its_commit_first(citus_url: str) -> None:
    """The suite's nodes run with ``synchronous_commit = off``, as a user may: the append, run on
    the node holding the session, raises it to ``local`` for its own transaction, so that its
    commit is in the WAL before its shard lock is let go and a shard move's catch-up (up to
    the WAL written) includes it (`distribution.APPEND_FUNCTION`; the loss it prevents shows
    in `test_citus_add_node.py`). A stronger setting is left alone. Run on the coordinator, in
    a transaction block, the call sends the node holding the session the same setting. The gate
    refuses these calls (version 41 is not the head): nothing is written."""
    store = SessionStore(citus_url)
    store.migrate()
    sid = store.create_session()
    worker = make_url(_driver_url(citus_url)).set(port=_holder_of(citus_url, sid)).render_as_string(hide_password=False)
    call = ("SELECT * FROM sessionstore_append(%s, 41, 42, '', ARRAY[42], ARRAY['e'], ARRAY['user'], ARRAY[NULL], "
            "ARRAY['{}'], ARRAY['{}'], ARRAY[1], ARRAY[now()], ARRAY[''], ARRAY[''], ARRAY[]::text[])")
    with psycopg.connect(worker, autocommit=True) as conn:
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        for setting, during in (("off", "local"), ("on", "on"), ("remote_apply", "remote_apply")):
            with conn.transaction():
                conn.execute(f"SET LOCAL synchronous_commit = {setting}")
                assert conn.execute(call, (sid,)).fetchall() == []  # refused by the gate
                assert conn.execute("SHOW synchronous_commit").fetchone() == (during,)
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)  # the session's own, after
    sent: list[str] = []
    with psycopg.connect(_driver_url(citus_url), autocommit=True) as conn:  # the coordinator: no shard its own
        conn.add_notice_handler(lambda notice: sent.append(f"{notice.message_primary} {notice.message_detail}"))
        with conn.transaction():  # where the locked append runs its call when it cannot route
            conn.execute("SET LOCAL citus.log_remote_commands = on")
            assert conn.execute(call, (sid,)).fetchall() == []
    holder = f":{_holder_of(citus_url, sid)} "
    assert any("SET LOCAL synchronous_commit TO local" in line and holder in line for line in sent), sent
    assert store.version(sid) == 0
    store.close()


@needs_citus
@pytest.mark.parametrize("door", ["blocking", "async"])
def test_appends_that_lose_races_lock_the_session_on_its_node(citus_url: str, monkeypatch: pytest.MonkeyPatch,
                                                             door: str) -> None:
    """Writers racing on one session: those that keep losing take the session's lock, in a
    transaction run on the session's node like the optimistic appends, so every event is
    stamped with that node's group (none with the coordinator's), in order, once."""
    SessionStore(citus_url).migrate()
    begun: list[int] = []
    blocking, waiting = psycopg.Cursor.execute, psycopg.AsyncCursor.execute

    def recording(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        if str(query).strip().upper() == "BEGIN":
            begun.append(self.connection.info.port)
        return blocking(self, query, params, **kwargs)

    async def arecording(self: psycopg.AsyncCursor[Any], query: Any, params: Any = None, **kwargs: Any) -> Any:
        if str(query).strip().upper() == "BEGIN":
            begun.append(self.connection.info.port)
        return await waiting(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recording)
    monkeypatch.setattr(psycopg.AsyncCursor, "execute", arecording)
    if door == "blocking":
        store = SessionStore(citus_url)
        sid = store.create_session()
        threads = [threading.Thread(target=lambda w=w: [store.append(sid, ss.user(f"w{w} {i}")) for i in range(12)])
                   for w in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        store.close()
    else:
        async def race() -> str:
            async with ss.AsyncSessionStore(citus_url) as store:
                sid = await store.create_session()
                await asyncio.gather(*(store.append(sid, ss.user(f"w{w} {i}")) for w in range(12) for i in range(12)))
                return sid

        sid = asyncio.run(race())
    monkeypatch.undo()
    holder = _holder_of(citus_url, sid)
    assert begun and set(begun) == {holder}  # the lock was taken, always on the session's node
    with psycopg.connect(_driver_url(citus_url), autocommit=True) as conn:
        group = conn.execute("SELECT groupid FROM pg_dist_node WHERE nodeport = %s", (holder,)).fetchone()
        stamps = conn.execute("SELECT DISTINCT txid >> 52 FROM events WHERE session_id = %s", (sid,)).fetchall()
        versions = [v for (v,) in conn.execute("SELECT version FROM events WHERE session_id = %s ORDER BY version",
                                               (sid,))]
    assert stamps == [group] and versions == list(range(1, 145))


def test_a_node_is_reached_with_the_coordinators_credentials_and_a_bounded_wait() -> None:
    coordinator = make_url("postgresql+psycopg://app:secret@coordinator.internal:5432/sessions?sslmode=require")
    url = Node("worker-1.internal", 6432).url(coordinator)
    assert (url.username, url.password, url.host, url.port, url.database) == (
        "app", "secret", "worker-1.internal", 6432, "sessions")
    assert url.query == {"sslmode": "require", "connect_timeout": str(NODE_CONNECT_TIMEOUT)}
    patient = make_url("postgresql+psycopg://app@coordinator.internal/sessions?connect_timeout=30")
    assert Node("worker-1.internal", 5432).url(patient).query == {"connect_timeout": "30"}


@needs_citus
def test_the_store_finds_each_session_where_citus_put_it(citus_url: str) -> None:
    """The placement a store reads, and Citus's hash of a session id computed in Python
    (PostgreSQL's `hashtext`), name the node Citus itself names, for ids of every length."""
    store = SessionStore(citus_url)
    store.migrate()
    ids = [uuid.uuid4().hex for _ in range(100)] + ["", "a", "ß", "日本語のセッション", "x" * 200] + [
        "langgraph:" + "t" * n + "/" for n in range(40)]
    with psycopg.connect(_driver_url(citus_url), autocommit=True) as conn:
        placement = Placement.of(conn.execute(PLACEMENT_SQL).fetchall())
        hashes = conn.execute("SELECT worker_hash(v::varchar) FROM unnest(%s::text[]) AS v", (ids,)).fetchall()
        assert [citus_hash(i) for i in ids] == [h for (h,) in hashes]
        for session_id in ids:
            node = placement.node_of(session_id)
            assert node is not None and node.port == _holder(conn, session_id), session_id
    store.close()


@needs_citus
def test_a_node_connection_that_breaks_is_retried_through_the_coordinator(citus_url: str,
                                                                        cluster: CitusCluster) -> None:
    """The store's own connection to a node dies under it: the append is retried, through the
    coordinator (whose connection is still the same), and stored once; the next ones go on."""
    store = SessionStore(citus_url)
    store.migrate()
    sid = store.create_session()
    store.append(sid, ss.user("first"))
    coordinator_backend = store._connection().driver_connection.info.backend_pid
    node = next(w for w in cluster.workers if w.port == _holder_of(citus_url, sid))
    database = citus_url.rsplit("/", 1)[1]
    killed = node.execute(f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{database}' "
                          "AND backend_type = 'client backend' AND application_name = '' AND pid <> pg_backend_pid()")
    assert killed[0][0] >= 1
    store.append(sid, ss.user("second"))
    store.append(sid, ss.user("third"))
    assert [e.payload["content"][0]["text"] for e in store.events(sid)] == ["first", "second", "third"]
    assert store._connection().driver_connection.info.backend_pid == coordinator_backend
    store.close()


def _holder_of(url: str, session_id: str) -> int:
    with psycopg.connect(_driver_url(url), autocommit=True) as conn:
        return _holder(conn, session_id)


def _all_event_ids(url: str) -> list[str]:
    with psycopg.connect(_driver_url(url)) as conn:
        return [row[0] for row in conn.execute("SELECT event_id FROM events")]


@needs_citus
def test_the_feed_returns_every_event_once_and_waits_for_a_late_commit(citus_url: str, cluster: CitusCluster) -> None:
    store = SessionStore(citus_url)
    store.migrate()
    sessions = [store.create_session() for _ in range(6)]
    # A late commit on a worker: a transaction there appends (directly on the worker, which runs
    # the function itself) and stays open while other writers append and a reader reads on.
    late_sid = sessions[0]
    with psycopg.connect(_driver_url(citus_url), autocommit=True) as conn:
        port = conn.execute("SELECT nodeport FROM citus_shards WHERE table_name = 'sessions'::regclass AND shardid = "
                            "get_shard_id_for_distribution_column('sessions', %s::text)", (late_sid,)).fetchone()[0]
    worker = psycopg.connect(_driver_url(citus_url).replace(f":{cluster.port}/", f":{port}/"))
    worker.execute("SELECT * FROM sessionstore_append(%s, 0, 1, 'link', ARRAY[1], ARRAY['late-event'], "
                   "ARRAY['message'], ARRAY[NULL], ARRAY['{\"role\": \"user\", \"content\": \"late\"}'], "
                   "ARRAY['{}'], ARRAY[1], ARRAY[now()], ARRAY['hash'], ARRAY['link'])", (late_sid,))
    assert worker.execute("SELECT count(*) FROM events WHERE event_id = 'late-event'").fetchone()[0] == 1

    stop = threading.Event()

    def writer(sid: str) -> None:
        for i in range(40):
            store.append(sid, ss.user(f"{sid[:6]} {i}"))
            if stop.is_set():
                return

    threads = [threading.Thread(target=writer, args=(sid,)) for sid in sessions[1:]]
    for thread in threads:
        thread.start()
    read: list[str] = []
    cursors: list[tuple[int | str, int]] = [(0, 0)]
    after: int | str = 0
    for _ in range(30):  # read while the writers write
        page = store.feed(after, limit=17)
        read += [event.event_id for event in page.events]
        after = page.cursor
        cursors.append((after, len(read)))
    for thread in threads:
        thread.join()
    assert "late-event" not in read  # still running on its worker: the feed waits below it
    worker.commit()
    worker.close()
    while True:
        page = store.feed(after, limit=50)
        if not page.events:
            break
        read += [event.event_id for event in page.events]
        cursors.append((page.cursor, len(read)))
        after = page.cursor
    assert "late-event" in read
    assert sorted(read) == sorted(_all_event_ids(citus_url))  # every event, each once
    assert len(read) == len(set(read))
    # Resumable from any cursor: exactly what followed it, each once. The interleaving of the
    # nodes' feeds is not an order to keep (a node's late commit comes first in a read that
    # starts below it); a session appended on its own node keeps its order.
    for cursor_, taken in cursors[::5]:
        again = list(store.read_all(cursor_))
        assert sorted(e.event_id for e in again) == sorted(read[taken:])
        for sid in sessions:
            versions = [e.version for e in again if e.session_id == sid]
            assert versions == sorted(versions)
    assert sorted(e.event_id for e in store.read_all()) == sorted(read)
    with pytest.raises(ConfigurationError, match="cursor"):
        list(store.read_all(5))  # a bare position cannot say where every node stands
    store.close()


@needs_citus
def test_search_erase_verify_and_fork_on_the_cluster(citus_url: str) -> None:
    store = SessionStore(citus_url)
    store.migrate()
    sid = store.create_session(events=[ss.user("deploy the launchcode service"), ss.assistant("done")])
    fork = store.fork(sid, at=1)
    store.append(fork, ss.user("a forked launchcode question"))
    assert {(h.session_id, h.version) for h in store.search("launchcode")} == {(sid, 1), (fork, 2)}
    assert [h.version for h in store.search("launchcode", fork)] == [1, 2]
    assert store.index_search() == 0  # everything below every node's horizon is indexed already
    store.append(sid, ss.user("one more launchcode"))
    assert {h.version for h in store.search("launchcode", sid)} == {1, 3}
    assert all(report.broken is None for report in store.verify())
    store.erase(sid, "asked", only_this=True)
    assert {h.session_id for h in store.search("launchcode")} == {fork}
    assert store.transcript(fork)[0].erased_at is not None  # inherited from the erased parent
    store.close()


@needs_citus
def test_an_upgrade_that_cannot_distribute_names_the_object_and_changes_nothing(citus_url: str) -> None:
    store = SessionStore(citus_url)
    upgrade(store.engine, "0004")  # not yet distributable
    with store.engine.begin() as conn:  # another application's foreign key, from our table to its own
        conn.execute(text("CREATE TABLE kinds (name varchar(32) PRIMARY KEY)"))
        conn.execute(text("ALTER TABLE events ADD CONSTRAINT fk_events_kind FOREIGN KEY (kind) REFERENCES kinds (name)"))
    with pytest.raises(SchemaNotReady, match="'events'.*\"kinds\"") as err:
        store.migrate()
    assert "previous revision" in str(err.value)
    assert current_revision(store.engine) == "0004"
    with store.engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM pg_dist_partition")) == 0
    store.close()


@needs_citus
def test_a_coordinator_without_workers_keeps_the_shards_and_says_so() -> None:
    with CitusCluster(workers=0) as alone:
        store = SessionStore(alone.create_database("alone"))
        done = store.migrate()
        assert any("no Citus worker" in line for line in done)
        sid = store.create_session(events=[ss.user("hi")])
        store.append(sid, ss.assistant("hello"))
        assert [e.kind for e in store.read_all()] == ["message", "message"]
        store.close()


@needs_citus
def test_a_node_that_does_not_answer_stops_the_feed_and_loses_nothing() -> None:
    """Taking a silent node's group for gone would hand out events of transactions it may still
    be running: the read stops with `FeedUnavailable`, and goes on from the same cursor later."""
    with CitusCluster(workers=1) as small:
        store = SessionStore(small.create_database("small"), retry_timeout=0)
        store.migrate()
        store.create_session(events=[ss.user("on the coordinator's stamp")])  # a transaction: group 0
        page = store.feed()
        small.workers[0].stop()
        with pytest.raises(ss.FeedUnavailable, match="node group") as err:
            store.feed(page.cursor)
        assert err.value.retryable
        store.close()


@pytest.mark.citus
def test_a_populated_0003_database_upgrades_with_every_event_and_chain(backend: str, tmp_path: Path,
                                                                     request: pytest.FixtureRequest) -> None:
    """Migration 0005 (and 0004 before it) on a database that already holds sessions, forks and
    compactions: every event and every chain is intact, and the store works on."""
    url = fresh_url(backend, tmp_path, request, migrated=False)
    store = SessionStore(url)
    upgrade(store.engine, "0003")
    with writable_by_this_version(store.engine):
        sid = store.create_session(events=[ss.user("first question"), ss.assistant("an answer", event_id="answer-1"),
                                           ss.tool_call("c1", "read", {"path": "a.py"}),
                                           ss.tool_result("c1", "print(1)\n" * 20)])
        fork = store.fork(sid, at=2)
        store.append(fork, ss.user("the fork goes on"))
        store.compact(sid, ss.CompactionPolicy(keep_recent_tokens=10))
        before = {info.id: [(e.event_id, e.version, e.payload) for e in store.transcript(info.id)]
                  for info in store.sessions()}
    store.migrate()
    assert current_revision(store.engine) == head_revision()
    after = {info.id: [(e.event_id, e.version, e.payload) for e in store.transcript(info.id)]
             for info in store.sessions()}
    assert after == before
    assert_chains_intact(store)
    assert all(report.broken is None for report in store.verify())
    assert [h.session_id for h in store.search("fork goes")] == [fork]
    store.append(fork, ss.user("and on"))
    with pytest.raises(ss.DuplicateEvent):  # an id is still unique across sessions (Citus: the data moved into shards)
        store.append(sid, ss.user("and on", event_id=store.transcript(fork)[-1].event_id))
    with pytest.raises(ss.DuplicateEvent):  # a chosen one stored before the upgrade (Citus: registered by it)
        store.append(store.create_session(), ss.user("an answer", event_id="answer-1"))
    store.close()


@needs_citus
@pytest.mark.parametrize("door", DOORS)
def test_an_event_id_is_refused_in_a_second_session_with_nothing_written(citus_url: str, door: str) -> None:
    """As on one server: an id stored in one session is `DuplicateEvent` in another, and nothing
    is written (the registry included) — an id the caller chose (registered, on its own shard), a
    copy of one the store made (looked for in every shard), the very event the store made sent
    to a second session. A retry in the first session stays a no-op. The id the store made
    registered nothing."""
    SessionStore(citus_url).migrate()
    store = open_door(citus_url, door)
    first, second = store.create_session(), store.create_session()
    made = ss.user("made here")
    batch = [ss.user("chosen", event_id="chosen-1"), made]
    result = store.append(first, batch)
    assert store.append(first, batch) == result  # a retry: the original result, nothing written
    before = table_counts(citus_url)
    assert before["event_ids"] == 1  # the chosen id only
    for reused in (ss.user("chosen", event_id="chosen-1"), ss.user("made here", event_id=str(made.event_id)), made):
        with pytest.raises(ss.DuplicateEvent) as err:
            store.append(second, [ss.user("new"), reused])
        assert err.value.event_id == reused.event_id and "another session" in str(err.value)
    with pytest.raises(ss.DuplicateEvent):
        store.create_session(events=[ss.user("chosen", event_id="chosen-1")])
    assert table_counts(citus_url) == before and store.version(second) == 0
    assert store.append(first, batch) == result  # and still, once its event was sent elsewhere
    assert table_counts(citus_url) == before
    store.close()


@needs_citus
def test_db_upgrade_registers_the_ids_a_distributed_database_holds(citus_url: str) -> None:
    """A database distributed by an earlier version (no registry, UNIQUE (session_id, event_id),
    no function taking the ids to register) gets them from `db upgrade`, every stored id
    registered; a process of that version, calling the function as it did, registers its ids."""
    store = SessionStore(citus_url)
    store.migrate()
    sid = store.create_session(events=[ss.user("chosen before", event_id="before-1"), ss.user("made before")])
    twice = store.create_session()
    with store.engine.begin() as conn:  # as an earlier version left it, an id stored in two sessions
        conn.execute(text("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"))
        conn.execute(text("INSERT INTO events (session_id, version, event_id, kind, payload, meta, tokens, created_at, "
                          "content_hash, link) SELECT :s, 1, event_id, kind, payload, meta, tokens, created_at, "
                          "content_hash, link FROM events WHERE event_id = 'before-1'"), {"s": twice})
        conn.execute(text("DROP TABLE event_ids"))
        conn.execute(text("ALTER TABLE events DROP CONSTRAINT uq_events_event_id_session_id"))
        conn.execute(text("ALTER TABLE events ADD CONSTRAINT uq_events_session_id_event_id "
                          "UNIQUE (session_id, event_id)"))
        conn.execute(text(f"DROP FUNCTION sessionstore_append({APPEND_ARGUMENTS})"))
    done = store.migrate()
    assert "created event_ids, distributed by event_id: an id a caller chose is refused in a second session " \
           "(2 stored ids registered)" in done
    assert "1 stored events repeat an id of another session's (stored before this upgrade): each such id is " \
           "registered to one of its sessions" in done
    assert "updated sessionstore_append() to this version's" in done and len(done) == 4
    assert store.migrate() == []
    with pytest.raises(ss.DuplicateEvent):
        store.append(store.create_session(), ss.user("chosen before", event_id="before-1"))
    earlier = store.create_session()
    with psycopg.connect(_driver_url(citus_url), autocommit=True) as conn:  # the call as an earlier version sends it
        conn.execute("SELECT * FROM sessionstore_append(%s, 0, 1, 'link', ARRAY[1], ARRAY['earlier-1'], "
                     "ARRAY['message'], ARRAY[NULL]::text[], ARRAY[%s], ARRAY['{}'], ARRAY[1], ARRAY[now()], "
                     "ARRAY['hash'], ARRAY['link'])", (earlier, '{"role": "user", "content": "x"}'))
    with pytest.raises(ss.DuplicateEvent):
        store.append(sid, ss.user("x", event_id="earlier-1"))
    store.close()


@needs_citus
def test_the_async_door_retries_a_broken_node_connection_through_the_coordinator(citus_url: str,
                                                                                 cluster: CitusCluster) -> None:
    SessionStore(citus_url).migrate()
    database = citus_url.rsplit("/", 1)[1]

    port = make_url(citus_url).port

    def coordinator_backends(store: ss.AsyncSessionStore) -> set[int]:
        return {c.driver_connection.info.backend_pid for c in store._store._connections
                if c.driver_connection.info.port == port}

    async def scenario() -> tuple[list[str], int, int]:
        async with ss.AsyncSessionStore(citus_url) as store:
            sid = await store.create_session()
            await store.append(sid, ss.user("first"))
            before = await store.version(sid)
            coordinator = coordinator_backends(store)
            node = next(w for w in cluster.workers if w.port == _holder_of(citus_url, sid))
            killed = node.execute(f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
                                  f"'{database}' AND backend_type = 'client backend' AND application_name = '' "
                                  "AND pid <> pg_backend_pid()")
            await store.append(sid, ss.user("second"))
            await store.append(sid, ss.user("third"))
            # the coordinator's connections were not dropped with the node's
            assert coordinator and coordinator <= coordinator_backends(store)
            return [e.payload["content"][0]["text"] async for e in store.events(sid)], before, int(killed[0][0])

    texts, before, killed = asyncio.run(scenario())
    assert killed >= 1 and before == 1
    assert texts == ["first", "second", "third"]
