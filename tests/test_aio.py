"""What only the asyncio door can show: many coroutines at once, and several event loops.

The behaviour both doors share is tested once, through both (tests/test_store.py).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import sessionstore as ss
from sessionstore import AsyncSessionStore, ConcurrencyError, SessionStore

from .checks import loop_ticks

COROUTINES = 50
APPENDS = 20


@pytest.mark.citus
def test_calls_run_on_the_stores_threads_never_on_the_loop(store_url: str) -> None:
    """Every program runs on a blocking connection opened by one of the store's threads
    (`sessionstore.lanes`: on SQLite a writer and readers), never on the caller's loop; and a
    program stepped on a loop's thread is refused (the guard of DESIGN.md §12)."""
    from sqlalchemy import event

    from sessionstore.repository.drive import Run

    opened_by: list[str] = []

    async def main() -> tuple[str, list[str]]:
        async with AsyncSessionStore(store_url) as store:
            event.listen(store.engine, "connect", lambda *_: opened_by.append(threading.current_thread().name))
            sid = await store.create_session()
            await store.append(sid, ss.user("m"))
            assert await store.search("zebra") == [] and len(await store.transcript(sid)) == 1
            with pytest.raises(RuntimeError, match="event loop"):
                store._store.step(Run(store._repo.version(sid), store._store._dbapi))
            return store.engine.dialect.driver, [t.name for t in threading.enumerate()]

    loop_thread = threading.current_thread().name
    driver, threads = asyncio.run(main())
    assert driver == ("pysqlite" if store_url.startswith("sqlite") else "psycopg")
    assert opened_by and loop_thread not in opened_by
    assert all(name.startswith("sessionstore-") for name in opened_by), opened_by
    if store_url.startswith("sqlite"):  # the writes on the writer (a lone caller's reads too: tests/test_lanes.py)
        assert any("-writer-" in name for name in opened_by)


def test_sqlite_lock_waits_never_hold_the_loop(tmp_path: Path) -> None:
    """While SQLite's write lock is held elsewhere an append waits for it on the store's writer
    thread (SQLite's busy timeout), and the loop goes on meanwhile."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 'locked.db'}"
    with SessionStore(url) as setup:
        setup.migrate()

    async def main() -> tuple[int, int, int]:
        async with AsyncSessionStore(url) as store:
            sid = await store.create_session()
            await store.append(sid, ss.user("inline"))
            holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # another process's writer, say
            async with loop_ticks(0.01) as ticks:
                waiting = asyncio.create_task(store.append(sid, ss.user("after the lock")))
                await asyncio.sleep(0.3)
                held_ticks, done_early = ticks[0], waiting.done()
                holder.execute("COMMIT")
                holder.close()
                result = await waiting
            assert not done_early
            return held_ticks, result.version, len(await store.transcript(sid))

    held_ticks, version, count = asyncio.run(main())
    assert held_ticks >= 10  # the loop ran while the append waited for the lock
    assert version == 2 and count == 2


def test_many_coroutines_append_to_one_session(store_url: str) -> None:
    """50 coroutines × 20 appends with expected_version, retrying on ConcurrencyError (an agent's
    loop): every event lands once, versions gap-free."""

    async def writer(store: AsyncSessionStore, sid: str, worker: int) -> int:
        retries = 0
        for i in range(APPENDS):
            event = ss.user(f"w{worker}-{i}", event_id=f"w{worker}-{i}")
            while True:
                try:
                    seen = await store.version(sid)
                    await asyncio.sleep(0)  # the others go on between the read and the write (a model call)
                    await store.append(sid, event, expected_version=seen)
                    break
                except ConcurrencyError:
                    retries += 1
        return retries

    async def main() -> tuple[list[ss.StoredEvent], int]:
        async with AsyncSessionStore(store_url) as store:
            sid = await store.create_session()
            retries = await asyncio.gather(*(writer(store, sid, w) for w in range(COROUTINES)))
            return await store.transcript(sid), sum(retries)

    events, retries = asyncio.run(main())
    assert [e.version for e in events] == list(range(1, COROUTINES * APPENDS + 1))
    assert sorted(e.event_id for e in events) == sorted(f"w{w}-{i}" for w in range(COROUTINES)
                                                        for i in range(APPENDS))
    assert retries > 0  # they did contend


@pytest.mark.citus
def test_blind_appends_from_many_coroutines(store_url: str) -> None:
    """Without expected_version the store serialises versions itself, and re-sent batches are no-ops."""

    async def writer(store: AsyncSessionStore, sid: str, worker: int) -> None:
        for i in range(APPENDS):
            batch = [ss.user(f"w{worker}-{i}-a", event_id=f"w{worker}-{i}-a"),
                     ss.user(f"w{worker}-{i}-b", event_id=f"w{worker}-{i}-b")]
            first = await store.append(sid, batch)
            assert await store.append(sid, batch) == first

    async def main() -> list[ss.StoredEvent]:
        async with AsyncSessionStore(store_url) as store:
            sid = await store.create_session()
            await asyncio.gather(*(writer(store, sid, w) for w in range(COROUTINES)))
            return await store.transcript(sid)

    events = asyncio.run(main())
    assert [e.version for e in events] == list(range(1, COROUTINES * APPENDS * 2 + 1))
    assert len({e.event_id for e in events}) == len(events)
    for batch_start in range(0, len(events), 2):  # a batch is never split by another writer
        a, b = events[batch_start], events[batch_start + 1]
        assert a.event_id.endswith("-a") and b.event_id == a.event_id[:-2] + "-b"


@pytest.mark.citus
def test_many_sessions_from_one_loop(store_url: str) -> None:
    async def agent(store: AsyncSessionStore, n: int) -> str:
        sid = await store.create_session(f"agent-{n}")
        for i in range(10):
            await store.append(sid, [ss.user(f"{n}:{i}"), ss.assistant(f"ok {i}")])
        view = await store.context(sid)
        assert len(view.messages) == 20
        return sid

    async def main() -> tuple[list[str], list[ss.StoredEvent]]:
        async with AsyncSessionStore(store_url) as store:
            sids = await asyncio.gather(*(agent(store, n) for n in range(40)))
            feed = [event async for event in store.read_all()]
            return list(sids), feed

    sids, feed = asyncio.run(main())
    assert len(feed) == 40 * 20
    assert {e.session_id for e in feed} == set(sids)
    for sid in sids:  # each session's events appear in version order in the feed
        assert [e.version for e in feed if e.session_id == sid] == list(range(1, 21))


def test_one_store_from_several_threads_each_with_its_own_loop(store_url: str) -> None:
    """The OpenAI Agents SDK calls one session object from several threads, each running its own
    event loop: asyncio connections belong to one loop, so the store keeps one engine per loop and
    stops the connections of loops that are gone (aiosqlite's threads would keep the process up)."""
    store = AsyncSessionStore(store_url)
    sid = SessionStore(store_url).create_session()
    before = {t.ident for t in threading.enumerate()}
    errors: list[BaseException] = []

    def thread_body(n: int) -> None:
        try:
            async def work() -> None:
                for i in range(5):
                    await store.append(sid, ss.user(f"t{n}-{i}"))
                    assert await store.version(sid) >= i + 1
            asyncio.run(work())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=thread_body, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []

    async def read() -> list[ss.StoredEvent]:
        events = await store.transcript(sid)
        await store.close()
        return events

    events = asyncio.run(read())
    assert [e.version for e in events] == list(range(1, 31))
    import gc

    gc.collect()
    for _ in range(50):  # finished loops' aiosqlite worker threads stop
        leftover = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
        if not leftover:
            break
        threading.Event().wait(0.1)
    assert leftover == []
