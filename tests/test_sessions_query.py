"""`sessions(where=, since=, until=, agent=, project=, limit=, after=)`: sessions found by what
they are, newest first, paged by a cursor, on SQLite, PostgreSQL and Citus, through both doors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import Result
from sqlalchemy import text

import sessionstore as ss
from sessionstore import InvalidQuery, SessionStore
from sessionstore.events import encode_json
from sessionstore.finding import session_query
from sessionstore.storage import current_revision, head_revision, upgrade
from sessionstore.storage.listing import listing_params
from sessionstore.storage.statements import Statements

from .conftest import fresh_url, table_counts
from .doors import DOORS, open_door

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


@pytest.mark.citus
def test_metadata_equality_nested_keys_agent_project_and_value_types(store: SessionStore) -> None:
    store.create_session("ann-1", {"user": "ann", "source": "claude-code", "cwd": "/src/shop",
                                  "started_at": at(3).isoformat()}, events=[ss.user("one", created_at=at(3))])
    store.create_session("ann-2", {"user": "ann", "integration": "langgraph", "project": "shop",
                                  "started_at": at(2).isoformat()})
    store.create_session("bob-1", {"user": "bob", "source": "codex", "cwd": "/src/shop",
                                  "started_at": at(1).isoformat()})
    store.create_session("adk-1", {"adk": {"app_name": "support", "user_id": "u7", "session_id": "s1"}})
    store.create_session("typed", {"n": 3, "flag": True, "none": None, "s": "3"})

    assert ids(store.sessions(where={"user": "ann"})) == ["ann-2", "ann-1"]  # newest first, by start
    assert ids(store.sessions(where={"adk": {"user_id": "u7"}})) == ["adk-1"]
    assert ids(store.sessions(where={"adk.user_id": "u7", "adk.app_name": "support"})) == ["adk-1"]
    assert ids(store.sessions(where={"adk.user_id": "u8"})) == []
    assert ids(store.sessions(agent="claude-code")) == ["ann-1"]
    assert ids(store.sessions(agent="langgraph")) == ["ann-2"]  # an integration's name
    assert ids(store.sessions(project="/src/shop")) == ["bob-1", "ann-1"]  # cwd
    assert ids(store.sessions(project="shop")) == ["ann-2"]  # `project` before `cwd`
    assert ids(store.sessions(project="/src/shop", where={"user": "ann"})) == ["ann-1"]
    # JSON equality: a number is not its text, true is not 1, None is an explicit null
    assert ids(store.sessions(where={"n": 3})) == ids(store.sessions(where={"n": 3.0})) == ["typed"]
    assert ids(store.sessions(where={"n": "3"})) == [] and ids(store.sessions(where={"s": 3})) == []
    assert ids(store.sessions(where={"flag": True})) == ["typed"]
    assert ids(store.sessions(where={"flag": 1})) == [] and ids(store.sessions(where={"flag": False})) == []
    assert ids(store.sessions(where={"none": None})) == ["typed"] and ids(store.sessions(where={"n": None})) == []
    # the old call: every session, a list
    every = store.sessions()
    assert isinstance(every, list) and every.cursor is None and len(every) == 5


@pytest.mark.citus
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


@pytest.mark.citus
def test_a_cursor_walk_returns_each_session_once_while_sessions_arrive(store: SessionStore) -> None:
    # ties on the start (the same source time) are ordered by id
    for n in range(32):
        store.create_session(f"s{n:02d}", {"user": "ann" if n % 4 else "bob", "started_at": at(n // 3).isoformat()})
    expected = ids(store.sessions(where={"user": "ann"}))
    assert len(expected) == 24
    starts = [(i.started_at, i.id) for i in store.sessions(where={"user": "ann"})]
    assert starts == sorted(starts, reverse=True)

    seen: list[str] = []
    cursor: str | None = None
    arrived = 0
    while True:
        page = store.sessions(where={"user": "ann"}, limit=7, after=cursor)
        assert len(page) <= 7
        seen += ids(page)
        # sessions arrive between pages: new ones, and an import of an old one
        store.create_session(f"new{arrived}", {"user": "ann"})
        store.create_session(f"imported{arrived}", {"user": "ann", "started_at": at(100 + arrived).isoformat()})
        arrived += 1
        if page.cursor is None:
            break
        cursor = page.cursor
    assert len(seen) == len(set(seen)), "a session came twice"
    assert [s for s in seen if s in expected] == expected  # every one that was there, once, in order
    assert not any(s.startswith("new") for s in seen)  # newer than the walk's start: the next walk's
    assert store.sessions(where={"user": "ann"}, limit=0) == []


def test_both_doors_find_and_page_alike(door: SessionStore) -> None:
    for n in range(5):
        door.create_session(f"s{n}", {"user": "ann", "started_at": at(n).isoformat()})
    first = door.sessions(where={"user": "ann"}, limit=3)
    rest = door.sessions(where={"user": "ann"}, limit=3, after=first.cursor)
    assert (ids(first), ids(rest), rest.cursor) == (["s0", "s1", "s2"], ["s3", "s4"], None)
    with pytest.raises(InvalidQuery):
        door.sessions(since="2999-01-01")


BAD = [
    ({"where": {"user": ["ann"]}}, "where"),
    ({"where": {"user": {}}}, "where"),
    ({"where": {"a..b": 1}}, "where"),
    ({"where": {"it's": 1}}, "where"),
    ({"where": {"50%": 1}}, "where"),
    ({"where": {"x": float("nan")}}, "where"),
    ({"where": "user=ann"}, "where"),
    ({"since": "2999-01-01"}, "since"),
    ({"since": "yesterday"}, "since"),
    ({"since": "2026-11-02", "until": "2026-11-01"}, "until"),
    ({"agent": ""}, "agent"),
    ({"limit": -1}, "limit"),
    ({"after": "s1.bm90IGEgY3Vyc29y"}, "after"),
    ({"after": "12"}, "after"),
]


@pytest.mark.citus
def test_bad_input_is_refused_by_name_and_changes_nothing(store: SessionStore, store_url: str) -> None:
    store.create_session("a", {"user": "ann"})
    before = table_counts(store_url)
    for kwargs, field in BAD:
        with pytest.raises(InvalidQuery) as caught:
            store.sessions(**kwargs)  # type: ignore[arg-type]
        assert caught.value.field == field, kwargs
    assert table_counts(store_url) == before


@pytest.mark.citus
def test_the_listing_reads_an_index(store: SessionStore, backend: str) -> None:
    """The plan of a user's newest page and of a walk of everything use the listing's indexes
    (on PostgreSQL with sequential and bitmap scans priced out: a small table is otherwise read whole)."""
    store.create_session("a", {"user": "ann"})
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
                if backend == "citus":  # to the shards' nodes too
                    conn.exec_driver_sql("SET citus.propagate_set_commands TO 'local'")
                conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
                conn.exec_driver_sql("SET LOCAL enable_bitmapscan = off")
                plan = "\n".join(str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + prepared.sql, params))
            assert name in plan, plan
            # no sort of the rows found (Citus merges each shard's ordered, limited rows: `remote_scan`)
            assert "TEMP B-TREE" not in plan, plan
            assert all("remote_scan" in line for line in plan.splitlines() if "Sort Key" in line), plan


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
        assert current_revision(store.engine) == head_revision()
        times = {i.id: (i.started_at, i.last_event_at) for i in store.sessions()}
        assert times == {"imported": (at(50), at(45)), "events": (at(20), at(15)), "empty": (at(5), at(5))}
        assert ids(store.sessions(until=at(10))) == ["events", "imported"]
        store.append("empty", ss.user("now"))  # the append advances it
        assert store.session("empty").last_event_at >= NOW  # type: ignore[operator]
    finally:
        store.close()


def test_the_cli_filters_pages_and_refuses_bad_input_in_one_line(store: SessionStore, store_url: str) -> None:
    from click.testing import CliRunner

    from sessionstore.cli import main

    def cli(*args: str) -> Result:
        return CliRunner().invoke(main, ["--db", store_url, "sessions", *args], catch_exceptions=False)

    for n in range(5):
        store.create_session(f"ann{n}", {"user": "ann", "n": n, "started_at": at(n + 1).isoformat()})
    store.create_session("bob", {"user": "bob", "source": "codex", "cwd": "/src/shop"})
    first = cli("--json", "--where", "user=ann", "--limit", "3")
    assert [row["id"] for row in json.loads(first.stdout)] == ["ann0", "ann1", "ann2"]
    cursor = first.stderr.strip().removeprefix("(more: --after ").removesuffix(")")
    rest = cli("--json", "--where", "user=ann", "--limit", "3", "--after", cursor)
    assert [row["id"] for row in json.loads(rest.stdout)] == ["ann3", "ann4"] and rest.stderr == ""
    assert [r["id"] for r in json.loads(cli("--json", "--where", "n=2").stdout)] == ["ann2"]  # JSON: a number
    assert [r["id"] for r in json.loads(cli("--json", "--agent", "codex", "--project", "/src/shop").stdout)] == ["bob"]
    assert [r["id"] for r in json.loads(cli("--json", "--since", "4d", "--until", at(1.5).isoformat()).stdout)] \
        == ["ann1", "ann2"]
    for bad, said in ((["--where", "user"], "not KEY=VALUE"), (["--since", "2999-01-01"], "in the future"),
                      (["--since", "someday"], "is not a date"), (["--after", "nope"], "not a cursor")):
        failed = cli(*bad)
        assert failed.exit_code == 2 and failed.stdout == "", bad
        assert len(failed.stderr.strip().splitlines()) == 1 and said in failed.stderr, failed.stderr


def test_serve_lists_a_query_a_page_at_a_time(store: SessionStore) -> None:
    import threading
    import urllib.error
    import urllib.request

    from sessionstore.viewer.server import make_server

    for n in range(3):
        store.create_session(f"ann{n}", {"user": "ann", "title": f"ticket {n}", "started_at": at(n + 1).isoformat()})
    store.create_session("bob", {"user": "bob", "title": "bob's ticket"})
    server = make_server(store, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        def get(query: str) -> tuple[int, str]:
            try:
                with urllib.request.urlopen(server.url.rstrip("/") + "/?" + query, timeout=30) as answer:
                    return answer.status, answer.read().decode()
            except urllib.error.HTTPError as refused:
                return refused.code, refused.read().decode()

        status, page = get("where=user%3Dann&limit=2")
        assert status == 200 and "ticket 0" in page and "ticket 1" in page and "ticket 2" not in page
        assert "bob" not in page and "older sessions" in page
        more = page.split('<a href="')[-1].split('"')[0].replace("&amp;", "&")
        status, rest = get(more.removeprefix("/?"))
        assert status == 200 and "ticket 2" in rest and "ticket 0" not in rest and "older sessions" not in rest
        for bad, said in (("since=2999-01-01", "in the future"), ("color=red", "unknown parameter"),
                          ("where=user", "not KEY=VALUE"), ("limit=0", "limit must be")):
            status, page = get(bad)
            assert status == 400 and said in page, bad
    finally:
        server.shutdown()
        server.server_close()


def test_migration_0008_made_the_indexes_the_queries_name() -> None:
    """The listing's expressions (`storage/listing.py`) are the ones 0008 indexed, character for
    character: an expression index serves no other (a change of keys is a migration of its own)."""
    import importlib.util

    from sessionstore.storage.listing import indexes
    from sessionstore.storage.migrate import migrations_path

    path = next((migrations_path() / "versions").glob("0008_*.py"))
    spec = importlib.util.spec_from_file_location("revision_0008", path)
    assert spec is not None and spec.loader is not None
    revision = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(revision)
    for postgres in (False, True):
        assert revision.indexes(postgres) == indexes(postgres)
