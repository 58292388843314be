"""Several real processes appending to one session, on SQLite and PostgreSQL (and, the tests
marked so, on Citus).

Whatever the interleaving, the session must end with exactly the appended events:
versions gap-free, none duplicated, retries harmless. On PostgreSQL a catch-up reader of
`read_all` must never skip an event that commits later with a lower position; on Citus, one
that resumes from the feed's cursor must never skip one either.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from typing import Any

import pytest

import sessionstore as ss
from sessionstore import ConcurrencyError, SessionStore
from sessionstore.repository import drive
from sessionstore.repository.ops import Atomically

from .conftest import fresh_url

WRITERS = 4
BATCHES = 25


def _blind_writer(url: str, sid: str, worker: int) -> None:
    """Appends without expected_version: the store must serialise versions itself."""
    store = SessionStore(url)
    try:
        for i in range(BATCHES):
            store.append(sid, [ss.user(f"w{worker}-{i}-a", event_id=f"w{worker}-{i}-a"),
                               ss.user(f"w{worker}-{i}-b", event_id=f"w{worker}-{i}-b")])
    finally:
        store.close()


def _careful_writer(url: str, sid: str, worker: int) -> None:
    """Read the head, append with expected_version, retry on ConcurrencyError (an agent's loop)."""
    store = SessionStore(url)
    try:
        for i in range(BATCHES):
            batch = [ss.user(f"w{worker}-{i}-a", event_id=f"w{worker}-{i}-a"),
                     ss.user(f"w{worker}-{i}-b", event_id=f"w{worker}-{i}-b")]
            while True:
                try:
                    store.append(sid, batch, expected_version=store.version(sid))
                    break
                except ConcurrencyError:
                    continue
    finally:
        store.close()


def _retrying_writer(url: str, sid: str, worker: int) -> None:
    """Sends every batch twice, as a client does when it never saw the first answer."""
    store = SessionStore(url)
    try:
        for i in range(BATCHES):
            batch = [ss.user(f"w{worker}-{i}-a", event_id=f"w{worker}-{i}-a"),
                     ss.user(f"w{worker}-{i}-b", event_id=f"w{worker}-{i}-b")]
            first = store.append(sid, batch)
            assert store.append(sid, batch) == first
    finally:
        store.close()


def run_processes(target: Callable[[str, str, int], None], url: str, sid: str) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=target, args=(url, sid, w)) for w in range(WRITERS)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=240)
    assert [p.exitcode for p in processes] == [0] * WRITERS


def assert_exactly_appended(store: SessionStore, sid: str) -> None:
    events = store.transcript(sid)
    expected_ids = {f"w{w}-{i}-{s}" for w in range(WRITERS) for i in range(BATCHES) for s in "ab"}
    assert len(events) == len(expected_ids)
    assert [e.version for e in events] == list(range(1, len(expected_ids) + 1))  # gap-free
    assert {e.event_id for e in events} == expected_ids  # none lost, none duplicated
    assert store.version(sid) == len(expected_ids)
    for e in events:  # each batch stayed contiguous: a batch is atomic
        if e.event_id.endswith("-a"):
            following = events[e.version]  # versions are 1-based
            assert following.event_id == e.event_id[:-1] + "b"


@pytest.mark.parametrize("writer", [_blind_writer, _careful_writer, _retrying_writer],
                         ids=["no-expected-version", "expected-version-retry", "resend-same-batch"])
@pytest.mark.citus
def test_processes_appending_to_one_session(store: SessionStore, store_url: str,
                                            writer: Callable[[str, str, int], None]) -> None:
    sid = store.create_session()
    run_processes(writer, store_url, sid)
    assert_exactly_appended(store, sid)


@pytest.mark.citus
def test_catch_up_reader_never_skips_on_concurrent_writes(store: SessionStore, store_url: str, backend: str) -> None:
    """A reader polling the feed from where it stands while processes write sees every event once.
    It resumes from each page's cursor (`feed`): a position on one server, where the feed's order
    is also one order that a later read repeats; an opaque place per node on Citus, where the
    nodes' interleaving is not an order to repeat, but each session's is."""
    sessions = [store.create_session() for _ in range(WRITERS)]
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_blind_writer, args=(store_url, sid, w)) for w, sid in enumerate(sessions)]
    for p in processes:
        p.start()
    seen: list[ss.StoredEvent] = []
    cursor: int | str = 0
    while True:
        writing = any(p.is_alive() for p in processes)
        page = store.feed(cursor)
        while page.events:
            seen += page.events
            cursor = page.cursor
            page = store.feed(cursor)
        if not writing:  # one more pass after the last writer finished
            break
    for p in processes:
        p.join(timeout=240)
    assert [p.exitcode for p in processes] == [0] * WRITERS
    every = list(store.read_all())
    if backend == "citus":
        assert sorted(e.event_id for e in seen) == sorted(e.event_id for e in every), \
            "the catch-up reader skipped events that committed late, or saw one twice"
        for sid in sessions:
            versions = [e.version for e in seen if e.session_id == sid]
            assert versions == list(range(1, BATCHES * 2 + 1))
    else:
        assert [e.position for e in seen] == [e.position for e in every], \
            "the catch-up reader skipped events that committed late"


def _held_append(url: str, session_id: str, text: str, held: threading.Event, release: threading.Event,
                 early_txid: bool) -> ss.AppendResult:
    """The store's real append program, run inside a transaction that stays open until `release`."""
    store = SessionStore(url)
    connection = store.engine.raw_connection()  # psycopg: not autocommit, so the first statement begins
    cursor = connection.cursor()
    try:
        if early_txid:  # take a transaction id now, and the position only later
            cursor.execute("SELECT pg_current_xact_id()")
            held.set()
            release.wait(30)

        def execute(op: Any) -> list[Any]:
            if type(op) is Atomically:  # SQLite: the append's own transaction, held open before it commits
                cursor.execute(store._repo.sql.begin)
                for statement, params in op.steps:
                    cursor.execute(statement.sql, statement.params(params))
                rows = cursor.fetchall()
                held.set()
                release.wait(30)
                cursor.execute("COMMIT")
                return rows
            cursor.execute(op.statement.sql, op.statement.params(op.params))
            return cursor.fetchall() if cursor.description is not None else []

        result = drive(store._repo.append(session_id, [ss.user(text)]), execute, lambda op: [],
                       store.engine.dialect.loaded_dbapi)
        if store.backend == "postgresql":  # one statement, in the transaction psycopg began
            if not early_txid:
                held.set()
                release.wait(30)
            connection.commit()
        return result
    finally:
        cursor.close()
        connection.close()
        store.close()


def test_feed_never_shows_a_later_commit_first(store: SessionStore, store_url: str) -> None:
    """Deterministic: one append is held open. On PostgreSQL another session's writer does not
    wait for it (no table lock), yet `read_all` shows neither until the held one commits, then
    both in order. On SQLite the second writer waits: SQLite has one writer at a time."""
    check_held_feed(store, store_url, early_txid=False)


def test_feed_follows_transactions_not_positions(tmp_path: Any, request: pytest.FixtureRequest) -> None:
    """PostgreSQL: a transaction that began first but inserted last gets the higher position; the
    feed still gives its event first, and nothing until it commits (SQLite has one writer at a
    time, so there the two orders are the same)."""
    url = fresh_url("postgresql", tmp_path, request)
    store = SessionStore(url)
    try:
        check_held_feed(store, url, early_txid=True)
    finally:
        store.close()


def check_held_feed(store: SessionStore, store_url: str, *, early_txid: bool) -> None:
    a, b = store.create_session(), store.create_session()
    held, release = threading.Event(), threading.Event()
    results: dict[str, ss.AppendResult] = {}
    first = threading.Thread(target=lambda: results.__setitem__(
        "a", _held_append(store_url, a, "first", held, release, early_txid)))
    first.start()
    assert held.wait(30)
    second = threading.Thread(target=lambda: results.__setitem__("b", store.append(b, ss.user("second"))))
    second.start()
    second.join(5.0 if store.backend == "postgresql" else 1.0)
    try:
        if store.backend == "postgresql":
            assert "b" in results, "a writer of another session waited for an open append"
        else:
            assert "b" not in results, "SQLite let a second writer in while the first was open"
        assert list(store.read_all()) == [], "the feed showed an event while an earlier transaction was open"
        if early_txid:  # the held transaction inserts only now: after the second, with a higher position
            release.set()
            first.join(30)
    finally:
        release.set()
        first.join(30)
        second.join(30)
    feed = list(store.read_all())
    assert [e.payload["content"][0]["text"] for e in feed] == ["first", "second"]
    if early_txid:
        assert results["a"].positions[0] > results["b"].positions[0]  # positions alone would have misled
    resumed = list(store.read_all(after_position=feed[0].position))
    assert [e.event_id for e in resumed] == [feed[1].event_id]


@pytest.mark.citus
def test_many_threads_share_one_store(store: SessionStore) -> None:
    sid = store.create_session()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(30):
                store.append(sid, ss.user(f"t{n}-{i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [e.version for e in store.transcript(sid)] == list(range(1, 121))


STRESS_WRITERS = 5
STRESS_BATCHES = 15
BIG_BATCH = 600  # two INSERT statements in one transaction (storage.statements.APPEND_CHUNK is 500)


def _stress_writer(url: str, sid: str, worker: int) -> None:
    """Batches of varied sizes to its own session, as fast as it can."""
    store = SessionStore(url)
    try:
        for i in range(STRESS_BATCHES):
            size = BIG_BATCH if (worker, i) in ((0, 4), (1, 9)) else 1 + (i + worker) % 4
            store.append(sid, [ss.user(f"s{worker}-{i}-{k}", event_id=f"s{worker}-{i}-{k}") for k in range(size)])
    finally:
        store.close()


def _catch_up(store: SessionStore, writing: Callable[[], bool], page: int | None) -> list[ss.StoredEvent]:
    """A catch-up reader: resume after the last position seen until the writers are done, then once more."""
    seen: list[ss.StoredEvent] = []
    last = 0
    while True:
        done = not writing()
        while True:  # drain what the feed offers now, `page` events at a time
            got = list(store.read_all(after_position=last, limit=page))
            seen.extend(got)
            if got:
                last = got[-1].position
            if not got or page is None:
                break
        if done:
            return seen


def test_stress_catch_up_readers_see_every_event_once_in_an_order_never_revised(store: SessionStore,
                                                                                 store_url: str) -> None:
    """Five writer processes on their own sessions (two of them write one 600-event batch, a
    transaction of two statements) while two catch-up readers poll `read_all(after_position=last)`,
    one with whole pages, one five events at a time. Each must see every event exactly once, and
    what it saw, concatenated, must be the feed read afterwards from 0: it never received an
    event that belonged before one it had already been given."""
    sessions = [store.create_session() for _ in range(STRESS_WRITERS)]
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_stress_writer, args=(store_url, sid, w)) for w, sid in enumerate(sessions)]
    for p in processes:
        p.start()
    writing = lambda: any(p.is_alive() for p in processes)  # noqa: E731
    readers: dict[str, list[ss.StoredEvent]] = {}
    small = threading.Thread(target=lambda: readers.__setitem__("small", _catch_up(store, writing, 5)))
    small.start()
    readers["pages"] = _catch_up(store, writing, None)
    small.join(240)
    for p in processes:
        p.join(timeout=240)
    assert [p.exitcode for p in processes] == [0] * STRESS_WRITERS
    feed = list(store.read_all())
    expected = sum(store.version(sid) for sid in sessions)
    assert len(feed) == expected == len({e.event_id for e in feed})
    for name, seen in readers.items():
        assert [e.event_id for e in seen] == [e.event_id for e in feed], f"reader {name!r} had to revise its order"
        assert [e.position for e in seen] == [e.position for e in feed]
    for sid in sessions:  # within a session the feed follows versions
        versions = [e.version for e in feed if e.session_id == sid]
        assert versions == list(range(1, store.version(sid) + 1))
