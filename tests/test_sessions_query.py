"""`sessions(where=, since=, until=, agent=, project=, limit=, after=)`: sessions found by what
they are, newest first, paged by a cursor, on SQLite, PostgreSQL and Citus, through both doors."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import text

import sessionstore as ss
from sessionstore import InvalidQuery, SessionStore
from sessionstore.events import encode_json
from sessionstore.finding import session_query
from sessionstore.storage import current_revision, upgrade
from sessionstore.storage.listing import listing_params
from sessionstore.storage.statements import Statements

from .conftest import fresh_url, table_counts
from .doors import DOORS, open_door

pytestmark = pytest.mark.citus

NOW = datetime.now(timezone.utc)


def at(days_ago: float) -> datetime:
    return NOW - timedelta(days=days_ago)


@pytest.fixture(params=DOORS)
def door(store_url: str, request: pytest.FixtureRequest) -> Iterator[SessionStore]:
    door = open_door(store_url, request.param)
    yield door
    door.close()


def ids(page: list[ss.SessionInfo]) -> list[str]:
    return [info.id for info in page]


def test_metadata_equality_nested_keys_agent_project_and_value_types(door: SessionStore) -> None:
    door.create_session("ann-1", {"user": "ann", "source": "claude-code", "cwd": "/src/shop",
                                  "started_at": at(3).isoformat()}, events=[ss.user("one", created_at=at(3))])
    door.create_session("ann-2", {"user": "ann", "integration": "langgraph", "project": "shop",
                                  "started_at": at(2).isoformat()})
    door.create_session("bob-1", {"user": "bob", "source": "codex", "cwd": "/src/shop",
                                  "started_at": at(1).isoformat()})
    door.create_session("adk-1", {"adk": {"app_name": "support", "user_id": "u7", "session_id": "s1"}})
    door.create_session("typed", {"n": 3, "flag": True, "none": None, "s": "3"})

    assert ids(door.sessions(where={"user": "ann"})) == ["ann-2", "ann-1"]  # newest first, by start
    assert ids(door.sessions(where={"adk": {"user_id": "u7"}})) == ["adk-1"]
    assert ids(door.sessions(where={"adk.user_id": "u7", "adk.app_name": "support"})) == ["adk-1"]
    assert ids(door.sessions(where={"adk.user_id": "u8"})) == []
    assert ids(door.sessions(agent="claude-code")) == ["ann-1"]
    assert ids(door.sessions(agent="langgraph")) == ["ann-2"]  # an integration's name
    assert ids(door.sessions(project="/src/shop")) == ["bob-1", "ann-1"]  # cwd
    assert ids(door.sessions(project="shop")) == ["ann-2"]  # `project` before `cwd`
    assert ids(door.sessions(project="/src/shop", where={"user": "ann"})) == ["ann-1"]
    # JSON equality: a number is not its text, true is not 1, None is an explicit null
    assert ids(door.sessions(where={"n": 3})) == ids(door.sessions(where={"n": 3.0})) == ["typed"]
    assert ids(door.sessions(where={"n": "3"})) == [] and ids(door.sessions(where={"s": 3})) == []
    assert ids(door.sessions(where={"flag": True})) == ["typed"]
    assert ids(door.sessions(where={"flag": 1})) == [] and ids(door.sessions(where={"flag": False})) == []
    assert ids(door.sessions(where={"none": None})) == ["typed"] and ids(door.sessions(where={"n": None})) == []
    # the old call: every session, a list
    every = door.sessions()
    assert isinstance(every, list) and every.cursor is None and len(every) == 5


def test_time_range_on_the_sessions_own_start_and_last_activity(store: SessionStore) -> None:
    # imported: started 40 days ago (the source's time), last event 30 days ago
    store.create_session("old", {"started_at": at(40).isoformat()},
                         events=[ss.user("a", created_at=at(40)), ss.user("b", created_at=at(30))])
    # no started_at in the metadata: its first event's time
    store.create_session("mid", events=[ss.user("a", created_at=at(10))])
    live = store.create_session("live")  # created now, appended to now
    store.append(live, ss.user("hello"))
    old, mid, new = (store.session(s) for s in ("old", "mid", live))
    assert old.started_at == at(40) and old.last_event_at == at(30)
    assert mid.started_at == mid.last_event_at == at(10)
    assert new.last_event_at >= new.started_at >= NOW  # type: ignore[operator]

    assert ids(store.sessions(since=at(35))) == [live, "mid"]
    assert ids(store.sessions(since=at(45))) == [live, "mid", "old"]
    assert ids(store.sessions(until=at(20))) == ["old"]  # ended by then
    assert ids(store.sessions(until=at(35))) == []  # started, but still active after
    assert ids(store.sessions(since=at(15), until=at(5))) == ["mid"]
    assert ids(store.sessions(since="2d")) == [live]  # an age
    assert ids(store.sessions(since=at(11).date().isoformat(), until=at(9))) == ["mid"]  # ISO text
    # an append moves the last activity, never the start (nor the order)
    store.append("old", ss.user("back", created_at=at(1)))
    again = store.session("old")
    assert again.started_at == at(40) and again.last_event_at == at(1)
    assert ids(store.sessions(until=at(20))) == []
    assert ids(store.sessions()) == [live, "mid", "old"]


def test_a_cursor_walk_returns_each_session_once_while_sessions_arrive(door: SessionStore) -> None:
    # ties on the start (the same source time) are ordered by id
    for n in range(40):
        door.create_session(f"s{n:02d}", {"user": "ann" if n % 4 else "bob", "started_at": at(n // 3).isoformat()})
    expected = ids(door.sessions(where={"user": "ann"}))
    assert len(expected) == 30
    starts = [(i.started_at, i.id) for i in door.sessions(where={"user": "ann"})]
    assert starts == sorted(starts, reverse=True)

    seen: list[str] = []
    cursor: str | None = None
    arrived = 0
    while True:
        page = door.sessions(where={"user": "ann"}, limit=7, after=cursor)
        assert len(page) <= 7
        seen += ids(page)
        # sessions arrive between pages: new ones, and an import of an old one
        door.create_session(f"new{arrived}", {"user": "ann"})
        door.create_session(f"imported{arrived}", {"user": "ann", "started_at": at(100 + arrived).isoformat()})
        arrived += 1
        if page.cursor is None:
            break
        cursor = page.cursor
    assert len(seen) == len(set(seen)), "a session came twice"
    assert [s for s in seen if s in expected] == expected  # every one that was there, once, in order
    assert not any(s.startswith("new") for s in seen)  # newer than the walk's start: the next walk's
    assert door.sessions(where={"user": "ann"}, limit=0) == []


@pytest.mark.parametrize("kwargs, field", [
    ({"where": {"user": ["ann"]}}, "where"),
    ({"where": {"user": {}}}, "where"),
    ({"where": {"a..b": 1}}, "where"),
    ({"where": {"it's": 1}}, "where"),
    ({"where": {"x": float("nan")}}, "where"),
    ({"where": "user=ann"}, "where"),
    ({"since": "2999-01-01"}, "since"),
    ({"since": "yesterday"}, "since"),
    ({"since": "2026-11-02", "until": "2026-11-01"}, "until"),
    ({"agent": ""}, "agent"),
    ({"limit": -1}, "limit"),
    ({"after": "s1.bm90IGEgY3Vyc29y"}, "after"),
    ({"after": "12"}, "after"),
])
def test_bad_input_is_refused_by_name_and_changes_nothing(store: SessionStore, store_url: str,
                                                          kwargs: dict[str, object], field: str) -> None:
    store.create_session("a", {"user": "ann"})
    before = table_counts(store_url)
    with pytest.raises(InvalidQuery) as caught:
        store.sessions(**kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert table_counts(store_url) == before


def test_the_listing_reads_an_index(store: SessionStore) -> None:
    """The plan of a user's newest page and of a walk of everything use the listing's indexes
    (on PostgreSQL with sequential and bitmap scans priced out: a small table is otherwise read whole)."""
    store.create_session("a", {"user": "ann"})
    plans = {}
    with store.engine.connect() as conn:
        for name, query in (("ix_sessions_meta_user", {"where": {"user": "ann"}}),
                            ("ix_sessions_meta_agent", {"agent": "codex", "since": "30d"}),
                            ("ix_sessions_started_at_id", {"until": "1d"})):
            sql = Statements(store.engine.dialect)
            planned = session_query(**query)  # type: ignore[arg-type]
            prepared = sql.listing(planned.shape)
            params = listing_params(planned, sql.postgres, sql.bind_time, encode_json, 50)
            if store.backend == "sqlite":
                plan = " ".join(str(r) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + prepared.sql, params))
            else:
                conn.exec_driver_sql("SET enable_seqscan = off")
                conn.exec_driver_sql("SET enable_bitmapscan = off")
                plan = " ".join(str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + prepared.sql, params))
            assert name in plan, plan
            assert "TEMP B-TREE" not in plan and "Sort Key" not in plan.replace("Merge", ""), plan


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
def test_migration_0008_fills_in_the_times_of_stored_sessions(backend: str, tmp_path: Path,
                                                              request: pytest.FixtureRequest) -> None:
    url = fresh_url(backend, tmp_path, request, migrated=False)
    store = SessionStore(url)
    try:
        upgrade(store.engine, "0007")
        stamp = (lambda d: d.replace(tzinfo=None).isoformat(" ")) if backend == "sqlite" else (lambda d: d)
        with store.engine.begin() as conn:
            insert = text("INSERT INTO sessions (id, created_at, metadata, head, head_link) "
                          "VALUES (:id, :at, :meta, :head, '')")
            conn.execute(insert, [{"id": "imported", "at": stamp(at(0)), "meta": '{"started_at": "%s"}' % at(50).isoformat(),
                                   "head": 1},
                                  {"id": "events", "at": stamp(at(0)), "meta": "{}", "head": 2},
                                  {"id": "empty", "at": stamp(at(5)), "meta": '{"started_at": "not a time"}', "head": 0}])
            conn.execute(text("INSERT INTO events (session_id, version, event_id, kind, payload, meta, tokens, "
                              "created_at, content_hash, link, txid) VALUES (:sid, :v, :eid, 'custom', '{}', '{}', 0, "
                              ":at, '', '', 0)"),
                         [{"sid": "imported", "v": 1, "eid": "e1", "at": stamp(at(45))},
                          {"sid": "events", "v": 1, "eid": "e2", "at": stamp(at(20))},
                          {"sid": "events", "v": 2, "eid": "e3", "at": stamp(at(15))}])
        store.migrate()
        assert current_revision(store.engine) == "0008"
        times = {i.id: (i.started_at, i.last_event_at) for i in store.sessions()}
        assert times == {"imported": (at(50), at(45)), "events": (at(20), at(15)), "empty": (at(5), at(5))}
        assert ids(store.sessions(until=at(10))) == ["events", "imported"]
        store.append("empty", ss.user("now"))  # the re-created trigger (SQLite) advances it
        assert store.session("empty").last_event_at >= NOW  # type: ignore[operator]
    finally:
        store.close()
