"""The tamper-evident chain and erasure (DESIGN §9 "Audit"), on a real SQLite file and a real
PostgreSQL server: every tampering below is made by direct SQL behind the store's back, and
`verify` must name the session and its first bad version; erasure must leave nothing behind
(on SQLite, not even in the bytes of the file) and keep the chain checkable."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, event, text

import sessionstore as ss
from sessionstore import SessionErased, SessionStore
from sessionstore.cli import main
from sessionstore.storage import packing

from .conftest import indexed
from .doors import DOORS, open_door

SECRET = "XYZZY-erase-me-7f3a"


@pytest.fixture(params=DOORS)
def door(store_url: str, request: pytest.FixtureRequest) -> Iterator[SessionStore]:
    door = open_door(store_url, request.param)
    yield door
    door.close()


def sql(url: str, statement: str, **params: Any) -> list[Any]:
    """Run `statement` behind the store's back (the tamperer's connection)."""
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":  # the search trigger reads a payload through it (storage/packing.py)
        event.listen(engine, "connect", lambda connection, _: packing.register(connection))
    try:
        with engine.begin() as conn:
            result = conn.execute(text(statement), params)
            return list(result) if result.returns_rows else []
    finally:
        engine.dispose()


def history(store: Any) -> tuple[str, str]:
    """A root session of 6 events and a fork of it at version 3 with 2 events of its own."""
    root = store.create_session(metadata={"user": SECRET})
    store.append(root, [ss.system("You are careful."), ss.user(f"my secret is {SECRET}"),
                        ss.assistant("Reading.", tool_calls=[ss.tool_call("c1", "read", {"path": SECRET})]),
                        ss.tool_result("c1", SECRET * 2000, meta={"note": SECRET}), ss.assistant("done")])
    assert store.version(root) == 6
    fork = store.fork(root, at=3)
    store.append(fork, [ss.user("and in the fork?"), ss.assistant("still here")])
    return root, fork


def broken_at(store: Any, *sids: str) -> dict[str, int | None]:
    return {r.session_id: (r.broken.version if r.broken else None) for r in store.verify(list(sids))}


@pytest.mark.citus
def test_an_intact_store_verifies_on_every_door(door: Any) -> None:
    root, fork = history(door)
    empty = door.create_session()
    zero = door.fork(root, at=0)
    reports = {r.session_id: r for r in door.verify()}
    assert set(reports) == {root, fork, empty, zero}
    assert all(r.ok for r in reports.values()), reports
    assert (reports[root].events, reports[fork].events, reports[empty].events) == (6, 5, 0)
    assert reports[fork].head == 5 and not reports[fork].erased
    assert [r.session_id for r in door.verify(fork)] == [fork]  # one id alone
    with pytest.raises(ss.SessionNotFound):
        door.verify(["no-such-session"])


def _shift(url: str, sid: str, start: int) -> None:
    """Make room at `start` (two steps: the (session, version) uniqueness holds row by row)."""
    sql(url, "UPDATE events SET version = version + 1000 WHERE session_id = :s AND version >= :v", s=sid, v=start)
    sql(url, "UPDATE events SET version = version - 999 WHERE session_id = :s AND version >= 1000", s=sid)


def _copy(url: str, sid: str, source: int, version: int, event_id: str) -> None:
    sql(url, "INSERT INTO events (session_id, version, event_id, kind, call_id, payload, meta, tokens, created_at, "
             "content_hash, link, txid) SELECT session_id, :v, :e, kind, call_id, payload, meta, tokens, created_at, "
             "content_hash, link, txid FROM events WHERE session_id = :s AND version = :src",
        s=sid, v=version, e=event_id, src=source)


def _swap(url: str, sid: str, a: int, b: int) -> None:
    sql(url, "UPDATE events SET version = -1 WHERE session_id = :s AND version = :a", s=sid, a=a)
    sql(url, "UPDATE events SET version = :a WHERE session_id = :s AND version = :b", s=sid, a=a, b=b)
    sql(url, "UPDATE events SET version = :b WHERE session_id = :s AND version = -1", s=sid, b=b)


TAMPERINGS: dict[str, tuple[Callable[[str, str, str], None], int | None, int | None]] = {
    # name: (tamper(url, root, fork), first bad version of root, of the fork)
    "edited payload": (lambda u, r, f: sql(u, "UPDATE events SET payload = '{\"role\":\"user\",\"content\":\"x\"}' "
                                              "WHERE session_id = :s AND version = 5", s=r), 5, None),
    "edited meta": (lambda u, r, f: sql(u, "UPDATE events SET meta = '{\"model\":\"other\"}' "
                                           "WHERE session_id = :s AND version = 2", s=r), 2, 2),
    "edited kind": (lambda u, r, f: sql(u, "UPDATE events SET kind = 'custom' WHERE session_id = :s AND version = 4",
                                        s=r), 4, None),
    "deleted row": (lambda u, r, f: sql(u, "DELETE FROM events WHERE session_id = :s AND version = 3", s=r), 3, 3),
    "deleted last row": (lambda u, r, f: sql(u, "DELETE FROM events WHERE session_id = :s AND version = 6", s=r),
                         6, None),
    "row inserted at the end": (lambda u, r, f: _copy(u, r, 6, 7, "forged-1"), 7, None),
    "row inserted in the middle": (lambda u, r, f: (_shift(u, r, 4), _copy(u, r, 3, 4, "forged-2")), 4, None),
    "reordered rows": (lambda u, r, f: _swap(u, r, 2, 3), 2, 2),
    "forged head link": (lambda u, r, f: sql(u, "UPDATE sessions SET head_link = :l WHERE id = :s", l="0" * 64, s=r),
                         6, None),
    "fork's own event edited": (lambda u, r, f: sql(u, "UPDATE events SET payload = '{\"role\":\"user\",\"content\":"
                                                       "\"y\"}' WHERE session_id = :s AND version = 4", s=f), None, 4),
    "forged erasure": (lambda u, r, f: sql(u, "UPDATE events SET payload = '{\"erased\"\\:true}', "
                                              "meta = '{\"erase_reason\":\"x\"}', erased_at = created_at "
                                              "WHERE session_id = :s AND version = 5", s=r), 5, None),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
@pytest.mark.citus
def test_verify_finds_each_tampering_at_its_first_bad_version(store: SessionStore, store_url: str,
                                                              tampering: str) -> None:
    root, fork = history(store)
    untouched = store.create_session()
    store.append(untouched, [ss.user("nothing to see")])
    assert broken_at(store, root, fork, untouched) == {root: None, fork: None, untouched: None}
    tamper, root_at, fork_at = TAMPERINGS[tampering]
    tamper(store_url, root, fork)
    found = broken_at(store, root, fork, untouched)
    assert found == {root: root_at, fork: fork_at, untouched: None}, [r.broken for r in store.verify([root, fork])]


def test_verify_reads_long_sessions_page_by_page(store: SessionStore, store_url: str) -> None:
    sid = store.create_session()
    store.append(sid, [ss.user(f"message {i}") for i in range(700)])  # a few pages of 256
    assert broken_at(store, sid) == {sid: None}
    sql(store_url, "DELETE FROM events WHERE session_id = :s AND version = 600", s=sid)
    assert broken_at(store, sid) == {sid: 600}


@pytest.mark.citus
def test_erase_leaves_tombstones_that_still_verify(door: Any, store_url: str) -> None:
    root, fork = history(door)
    with pytest.raises(ss.InvalidEvent):
        door.erase(root, " ")
    # metadata is what is known about a session: keys given are replaced, the others kept
    known = door.session(root).metadata
    assert door.update_metadata(root, {"title": "a bug", "model": None}) == {**known, "title": "a bug", "model": None}
    assert door.update_metadata(root, {"title": "the bug"}) == door.session(root).metadata == \
           {**known, "title": "the bug", "model": None}
    with pytest.raises(ss.SessionNotFound):
        door.update_metadata("no-such-session", {"title": "x"})
    with pytest.raises(ss.InvalidEvent):
        door.update_metadata(root, {"n": float("nan")})
    before = door.transcript(root)
    info = door.erase(root, "user request #42")
    assert info.erased_at is not None and info.erase_reason == "user request #42" and info.metadata == {}
    after = door.transcript(root)
    assert [(e.event_id, e.version, e.kind, e.tokens) for e in after] == \
           [(e.event_id, e.version, e.kind, e.tokens) for e in before]
    assert all(e.erased_at is not None and e.payload == {"erased": True} and e.meta == {"erase_reason": "user request #42"}
               for e in after)
    assert all(r.ok for r in door.verify()), door.verify()
    assert door.erase(root, "again").erase_reason == "user request #42"  # erasing twice changes nothing
    # the erased session takes nothing and shows nothing
    with pytest.raises(SessionErased):
        door.append(root, ss.user("more"))
    with pytest.raises(SessionErased):
        door.context(root)
    with pytest.raises(SessionErased):
        door.fork(root)
    with pytest.raises(SessionErased):
        door.update_metadata(root, {"title": "back"})
    # the fork keeps its own events; its inherited history is tombstones, and it says so
    fork_info = door.session(fork)
    assert fork_info.erased_ancestor == root and fork_info.erased_at is None
    assert [e.erased_at is not None for e in door.transcript(fork)] == [True] * 3 + [False] * 2
    view = door.context(fork)
    assert [item.version for item in view.items] == [4, 5] and SECRET not in str(view.to_anthropic())
    door.append(fork, ss.user("the fork goes on"))
    door.stats(fork)
    assert all(r.ok for r in door.verify([root, fork]))
    raw = sql(store_url, "SELECT CAST(payload AS TEXT), CAST(meta AS TEXT), call_id FROM events WHERE session_id = :s",
              s=root)
    assert raw and all(SECRET not in "".join(map(str, row)) and row[2] is None for row in raw)
    assert SECRET not in str(sql(store_url, "SELECT CAST(metadata AS TEXT) FROM sessions WHERE id = :s", s=root))


def _file_bytes(database: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (database, Path(f"{database}-wal"), Path(f"{database}-shm")) if p.exists())


def test_erase_leaves_no_copy_in_the_sqlite_file(tmp_path: Path) -> None:
    """SQLite only: the raw bytes of the database, its WAL and shared-memory file hold the
    content before and nothing of it after. (PostgreSQL's pages cannot be scanned from here:
    there the test above checks that the rows hold tombstones; `erase` documents the rest.)"""
    database = tmp_path / "erase.db"
    store = SessionStore(f"sqlite:///{database}")
    store.migrate()
    try:
        root, fork = history(store)
        keep = store.create_session()
        store.append(keep, ss.user("keep-this-one-5d1c"))
        assert indexed(store, 1) > 0  # the secret is in the search index too (migration 0004: off the append)
        assert SECRET.encode() in _file_bytes(database)
        store.erase(root, "gdpr")
        assert store.search(f'"{SECRET}"') == [] and store.index_search() == 0
        assert all(r.ok for r in store.verify())
    finally:
        store.close()
    data = _file_bytes(database)
    assert SECRET.encode() not in data
    assert b"keep-this-one-5d1c" in data


@pytest.mark.citus
def test_cli_verify_and_erase(store: SessionStore, store_url: str) -> None:
    root, fork = history(store)
    runner = CliRunner()

    def cli(*args: str, stdin: str | None = None) -> Any:
        return runner.invoke(main, ["--db", store_url, "--log-format", "json", *args], input=stdin,
                             catch_exceptions=False)

    ok = cli("verify", "--all")
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.count("ok ") == 2
    assert cli("verify").exit_code == 2 and cli("verify", root, "--all").exit_code == 2
    assert cli("verify", root[:8]).exit_code == 0  # a unique prefix names the session
    sql(store_url, "DELETE FROM events WHERE session_id = :s AND version = 2", s=root)
    broken = cli("verify", root, fork)
    assert broken.exit_code == 1
    lines = broken.stdout.splitlines()
    assert f"BROKEN  {root}" in lines[0] and "v2" in lines[0] and f"BROKEN  {fork}" in lines[1]

    other = store.create_session(metadata={"title": SECRET})
    store.append(other, [ss.user(SECRET)])
    declined = cli("erase", other, "--reason", "asked to", stdin="n\n")  # no terminal to ask on
    assert declined.exit_code == 2 and "use --yes" in declined.output and store.session(other).erased_at is None
    assert cli("erase", other).exit_code == 2  # --reason is required
    done = cli("erase", other[:10], "--reason", "asked to", "--yes")
    assert done.exit_code == 0, done.output
    assert store.session(other).erased_at is not None
    log = cli("log", other)
    assert log.exit_code == 0 and "erased " in log.stdout and ": asked to" in log.stdout and SECRET not in log.stdout
    assert cli("verify", other).exit_code == 0
    assert cli("show", other).exit_code == 2  # an erased session has no context
