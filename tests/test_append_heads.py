"""A session's head — its version, its link, its last activity — moves with its events on every
path that writes them: single and batched appends, a session created with its events, an import,
a fork's own appends, the async door. Since migration 0013 SQLite moves it in the append's own
statements (no trigger); PostgreSQL in its gate. A refused append leaves it where it was."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.importers import import_file
from sessionstore.storage.migrate import alembic_config
from sessionstore.storage.prepared import APPEND_CHUNK

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
PI = FIXTURES / "pi" / "recorded" / "2026-11-23T14-23-12-097Z_01a208ca-18e0-7737-b727-7d0bce2e599b.jsonl"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def assert_head_follows_events(store: SessionStore, sid: str) -> None:
    """The session's row against its own events: head = the last version, head_link = its link,
    last_event_at = the latest of its start and its events' times; and the chain verifies."""
    with store.engine.connect() as conn:
        head, link = conn.execute(text("SELECT head, head_link FROM sessions WHERE id = :s"), {"s": sid}).one()
        last = conn.execute(text("SELECT version, link FROM events WHERE session_id = :s "
                                 "ORDER BY version DESC LIMIT 1"), {"s": sid}).one_or_none()
    info = store.session(sid)
    own = [e for e in store.events(sid) if e.session_id == sid]
    if last is not None:
        assert (head, link) == (last[0], last[1])
        assert info.last_event_at == max([info.started_at, *(e.created_at for e in own)])
    else:
        assert head == (info.fork_version or 0) and info.last_event_at == info.started_at
    assert store.version(sid) == head
    (report,) = store.verify(sid)
    assert report.ok and report.head == head and report.head_link == link, report


def test_every_write_path_moves_the_head_with_its_events(store: SessionStore, store_url: str) -> None:
    sid = store.create_session(metadata={"started_at": (T0 - timedelta(days=1)).isoformat()})
    assert_head_follows_events(store, sid)
    store.append(sid, ss.user("single", created_at=T0))
    assert_head_follows_events(store, sid)
    store.append(sid, [ss.user("batch one", created_at=T0 + timedelta(minutes=30)),
                       ss.assistant("batch two", created_at=T0 + timedelta(hours=1))])
    assert_head_follows_events(store, sid)
    store.append(sid, ss.user("an older time does not move the last activity back", created_at=T0))
    assert store.session(sid).last_event_at == T0 + timedelta(hours=1)
    assert_head_follows_events(store, sid)
    long = store.append(sid, [ss.user(f"chunked {i}") for i in range(APPEND_CHUNK + 2)])  # two statements
    assert long.positions == tuple(range(long.positions[0], long.positions[0] + APPEND_CHUNK + 2))
    assert_head_follows_events(store, sid)

    with pytest.raises(ss.ConcurrencyError):  # refused: nothing moves
        store.append(sid, ss.user("stale"), expected_version=1)
    assert_head_follows_events(store, sid)

    created = store.create_session(events=[ss.user("created with"), ss.user("its events")])
    assert store.version(created) == 2
    assert_head_follows_events(store, created)

    imported = import_file(store, PI)
    assert imported.events_added > 0 and imported.session_id is not None
    assert_head_follows_events(store, imported.session_id)

    fork = store.fork(sid, at=2)
    assert_head_follows_events(store, fork)
    store.append(fork, ss.user("the fork's own"))
    store.append(fork, [ss.user("and a batch"), ss.user("of them")])
    assert store.version(fork) == 5
    assert_head_follows_events(store, fork)
    assert_head_follows_events(store, sid)  # the parent untouched

    async def through_the_async_door() -> None:
        async with ss.AsyncSessionStore(store_url) as door:
            await door.append(fork, ss.user("async single"))
            await door.append(fork, [ss.user("async"), ss.user("batch")])

    asyncio.run(through_the_async_door())
    assert store.version(fork) == 8
    assert_head_follows_events(store, fork)


def test_migration_0013_drops_the_head_trigger_and_a_downgrade_puts_it_back(tmp_path: Path) -> None:
    """SQLite: the code of 0012 relies on the trigger to move a single append's head."""
    store = SessionStore(f"sqlite:///{tmp_path / 'heads.db'}")
    trigger = text("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'events_advance_head'")
    try:
        store.migrate()
        sid = store.create_session(events=[ss.user("before")])
        with store.engine.connect() as conn:
            assert conn.execute(trigger).scalar() == 0
        config = alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0012")
            assert conn.execute(trigger).scalar() == 1
            # 0012's single append: one gated INSERT, its head moved by the trigger
            conn.execute(text("INSERT INTO events (session_id, version, event_id, kind, payload, meta, tokens, "
                              "created_at, content_hash, link) VALUES (:s, 2, 'e-0012', 'custom', '{}', '{}', 0, "
                              "'2026-03-01 12:00:00', '', 'l2')"), {"s": sid})
            moved = conn.execute(text("SELECT head, head_link FROM sessions WHERE id = :s"), {"s": sid}).one()
            assert tuple(moved) == (2, "l2")
        store.migrate()
        with store.engine.connect() as conn:
            assert conn.execute(trigger).scalar() == 0
    finally:
        store.close()
