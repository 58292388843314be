"""The repository API (DESIGN §4), on a real SQLite file and a real PostgreSQL server, through
both front doors: `SessionStore` and `AsyncSessionStore` (see tests/doors.py)."""

from __future__ import annotations

import copy
import json
import pickle
import tracemalloc
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

import sessionstore as ss
from sessionstore import (ConcurrencyError, DuplicateEvent, InvalidEvent, SessionExists, SessionNotFound,
                          SessionStore, VersionOutOfRange)
from sessionstore.events import claim, might_be_made, new_event_id
from sessionstore.tokens import TiktokenCounter

from .conftest import table_counts
from .doors import DOORS, open_door


@pytest.fixture(params=DOORS)
def store(store_url: str, request: pytest.FixtureRequest) -> Iterator[SessionStore]:
    """A migrated, empty store on each backend, through each door."""
    door = open_door(store_url, request.param)
    yield door
    door.close()


def conversation() -> list[ss.NewEvent | list[ss.NewEvent]]:
    return [
        ss.system("You are a careful coding agent."),
        ss.user("fix the bug in app.py"),
        ss.assistant("Reading it.", tool_calls=[ss.tool_call("c1", "read", {"path": "app.py"})],
                     meta={"model": "claude-sonnet-4-6", "usage": {"input_tokens": 120, "output_tokens": 9}}),
        ss.tool_result("c1", "def main():\n    return 1 / 0\n"),
        ss.assistant("The division by zero is the bug."),
    ]


# ----------------------------------------------------------------------------- sessions


def test_create_session_defaults_and_metadata(store: SessionStore) -> None:
    sid = store.create_session()
    assert len(sid) == 32 and int(sid, 16) >= 0  # a uuid4 hex
    assert store.version(sid) == 0
    named = store.create_session("my-session", metadata={"user": "ann", "tags": ["a", "b"]})
    assert named == "my-session"
    info = store.session("my-session")
    assert info.metadata == {"user": "ann", "tags": ["a", "b"]}
    assert info.head == 0 and info.parent_id is None
    assert info.created_at.tzinfo is not None
    assert {s.id for s in store.sessions()} == {sid, "my-session"}


def test_session_metadata_is_checked(store: SessionStore, store_url: str) -> None:
    before = table_counts(store_url)
    with pytest.raises(InvalidEvent, match="metadata"):
        store.create_session(metadata={"bad": float("nan")})
    with pytest.raises(InvalidEvent, match="JSONB"):
        store.create_session(metadata={"title": "nul\u0000"})
    assert table_counts(store_url) == before


def test_create_session_twice_is_a_typed_error(store: SessionStore, store_url: str) -> None:
    store.create_session("dup")
    before = table_counts(store_url)
    with pytest.raises(SessionExists) as err:
        store.create_session("dup")
    assert err.value.session_id == "dup"
    assert table_counts(store_url) == before


@pytest.mark.citus
def test_unknown_session_everywhere(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound, match="nope"):
        store.append("nope", ss.user("hi"))
    with pytest.raises(SessionNotFound):
        store.version("nope")
    with pytest.raises(SessionNotFound):
        store.events("nope")
    with pytest.raises(SessionNotFound):
        store.transcript("nope")
    with pytest.raises(SessionNotFound):
        store.fork("nope")
    with pytest.raises(SessionNotFound):
        store.session("nope")


# ----------------------------------------------------------------------------- append and read


@pytest.mark.citus
def test_append_assigns_versions_and_positions(store: SessionStore) -> None:
    sid = store.create_session()
    result = store.append(sid, conversation())
    assert result.version == 6
    assert list(result.versions) == [1, 2, 3, 4, 5, 6]
    assert len(result.positions) == 6 and list(result.positions) == sorted(result.positions)
    assert store.version(sid) == 6
    events = store.transcript(sid)
    assert [e.version for e in events] == [1, 2, 3, 4, 5, 6]
    assert [e.kind for e in events] == ["system", "message", "message", "tool_call", "tool_result", "message"]
    assert [e.position for e in events] == list(result.positions)
    assert all(e.session_id == sid for e in events)
    second = store.append(sid, ss.user("thanks"))
    assert second.version == 7 and second.positions[0] > result.positions[-1]


def test_payloads_round_trip_byte_identical(store: SessionStore) -> None:
    sid = store.create_session()
    tricky = {
        "zeta": 1, "alpha": [1.5, -0.0, 10**18, None, True],  # key order matters for byte identity
        "text": "naïve café — 東京 🚀 \u0000 nul and \t tab",
        "nested": {"b": {"y": 2, "x": 1}, "a": []},
    }
    events = [
        ss.user([{"type": "text", "text": "see image"},
                 {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]),
        ss.assistant([{"type": "thinking", "thinking": "hmm", "signature": "EqQBCkYIBxgCKkA"},
                      {"type": "text", "text": "ok"},
                      {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": tricky}]),
        ss.custom("app.note", tricky),
        ss.tool_call("c9", "write", {"path": "x.py", "content": tricky["text"], "z": tricky}),
        ss.tool_result("c9", [{"type": "text", "text": "written"}], is_error=False),
    ]
    store.append(sid, events)
    stored = store.transcript(sid)
    for original, back in zip(events, stored):
        assert json.dumps(back.payload) == json.dumps(original.payload)
        assert json.dumps(back.payload, ensure_ascii=False) == json.dumps(original.payload, ensure_ascii=False)
        assert back.event_id == original.event_id


def test_events_ranges_kinds_and_streaming(store: SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, conversation())
    assert [e.version for e in store.events(sid, after=2)] == [3, 4, 5, 6]
    assert [e.version for e in store.events(sid, after=2, upto=4)] == [3, 4]
    assert [e.version for e in store.events(sid, kinds=["tool_call", "tool_result"])] == [4, 5]
    assert list(store.events(sid, after=6)) == []
    iterator = store.events(sid)
    assert next(iterator).version == 1  # an iterator, not a list


def test_events_stream_in_constant_memory(store: SessionStore) -> None:
    sid = store.create_session()
    blob = "x" * 2000
    for _ in range(10):
        store.append(sid, [ss.user(f"{blob}{i}") for i in range(500)])
    # events are stored uncounted and counted as they are read: the tokenizer's vocabulary is
    # loaded by the first read, once per process, before what is measured here
    next(iter(store.events(sid, upto=1)))
    tracemalloc.start()
    count = 0
    for event in store.events(sid):
        count += len(event.payload["content"][0]["text"]) > 0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 5000
    # 5,000 events of 2 KB are >10 MB as a list; streaming holds a batch at a time.
    assert peak < 4_000_000, f"peak {peak} bytes: events() is not streaming"


def test_read_all_in_position_order_across_sessions(store: SessionStore) -> None:
    a = store.create_session()
    b = store.create_session()
    store.append(a, ss.user("a1"))
    store.append(b, ss.user("b1"))
    store.append(a, ss.user("a2"))
    everything = list(store.read_all())
    assert [e.payload["content"][0]["text"] for e in everything] == ["a1", "b1", "a2"]
    positions = [e.position for e in everything]
    assert positions == sorted(positions)
    assert [e.payload["content"][0]["text"] for e in store.read_all(after_position=positions[0])] == ["b1", "a2"]
    assert len(list(store.read_all(limit=2))) == 2


def test_tokens_counted_once_and_usage_kept(store: SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, conversation())
    counter = TiktokenCounter()
    events = store.transcript(sid)
    assert events[1].tokens == counter.count("fix the bug in app.py")
    assert events[3].tokens == counter.count('read{"path":"app.py"}')
    assert events[4].tokens == counter.count("def main():\n    return 1 / 0\n")
    assert events[2].meta["usage"] == {"input_tokens": 120, "output_tokens": 9}
    assert all(e.created_at.tzinfo is not None and e.created_at.utcoffset().total_seconds() == 0 for e in events)


def test_store_uses_the_counter_it_is_given(store_url: str) -> None:
    s = SessionStore(store_url, token_counter=ss.HeuristicCounter())
    try:
        sid = s.create_session()
        s.append(sid, ss.user("x" * 41))
        assert s.transcript(sid)[0].tokens == 11
    finally:
        s.close()


def test_created_at_from_the_event_is_kept(store: SessionStore) -> None:
    sid = store.create_session()
    when = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
    store.append(sid, ss.user("old", created_at=when))
    assert store.transcript(sid)[0].created_at == when


# ----------------------------------------------------------------------------- optimistic concurrency


@pytest.mark.citus
def test_expected_version(store: SessionStore, store_url: str) -> None:
    sid = store.create_session()
    assert store.append(sid, ss.user("one"), expected_version=0).version == 1
    assert store.append(sid, ss.user("two"), expected_version=1).version == 2
    before = table_counts(store_url)
    with pytest.raises(ConcurrencyError) as err:
        store.append(sid, [ss.user("stale"), ss.user("stale too")], expected_version=1)
    assert (err.value.expected, err.value.actual) == (1, 2)
    assert table_counts(store_url) == before
    assert store.version(sid) == 2


@pytest.mark.citus
def test_retrying_a_batch_is_a_no_op_returning_the_original(store: SessionStore, store_url: str) -> None:
    sid = store.create_session()
    batch = conversation()
    first = store.append(sid, batch)
    before = table_counts(store_url)
    assert store.append(sid, batch) == first
    assert store.append(sid, batch, expected_version=0) == first  # the retry of an append that did land
    assert table_counts(store_url) == before
    assert store.version(sid) == first.version


def test_the_store_knows_the_ids_it_made_and_their_copies() -> None:
    """What Citus leans on to register only the ids a caller chose (docs/scaling.md, "Event ids
    across sessions"): an id the store made is unique in the first session it is sent to and
    retries there, never in a second one; a copy in another process is a plain string; a copy
    of one it made is recognised by its check byte, a caller's own uuid4 hex by chance only."""
    made = ss.user("hi").event_id
    assert uuid.UUID(made).version == 4 and made == str(made)
    assert copy.deepcopy(made) is made and type(pickle.loads(pickle.dumps(made))) is str
    assert claim(made, "a") and claim(made, "a") and not claim(made, "b") and not claim(made, "a")
    assert not claim(str(new_event_id()), "a") and not claim("chosen", "a")
    assert might_be_made(str(made)) and not might_be_made("chosen") and not might_be_made(made.upper())
    assert sum(might_be_made(uuid.uuid4().hex) for _ in range(2560)) < 40  # about 10


@pytest.mark.citus
def test_reused_event_id_with_other_content_is_a_duplicate(store: SessionStore, store_url: str) -> None:
    sid = store.create_session()
    other = store.create_session()
    store.append(sid, ss.user("original", event_id="evt-1"))
    before = table_counts(store_url)
    with pytest.raises(DuplicateEvent) as err:
        store.append(sid, ss.user("different", event_id="evt-1"))
    assert err.value.event_id == "evt-1"
    with pytest.raises(DuplicateEvent):
        store.append(sid, [ss.user("original", event_id="evt-1"), ss.user("new", event_id="evt-2")])
    with pytest.raises(DuplicateEvent) as err:  # in another session too, Citus's included (docs/scaling.md)
        store.append(other, ss.user("original", event_id="evt-1"))
    assert err.value.event_id == "evt-1"
    assert table_counts(store_url) == before


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("event, field", [
    (ss.NewEvent(kind="telepathy", payload={}), "kind"),
    (ss.NewEvent(kind="message", payload={"role": "robot", "content": "x"}), "payload.role"),
    (ss.NewEvent(kind="message", payload={"role": "user"}), "payload.content"),
    (ss.NewEvent(kind="message", payload={"role": "user", "content": [{"text": "no type"}]}), "payload.content[0].type"),
    (ss.NewEvent(kind="message", payload={"role": "user", "content": [{"type": "text", "text": 3}]}),
     "payload.content[0].text"),
    (ss.NewEvent(kind="message", payload={"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "x", "input": {}}]}), "payload.content[0].type"),
    (ss.NewEvent(kind="tool_call", payload={"call_id": "c", "name": "read", "input": "path=x"}), "payload.input"),
    (ss.NewEvent(kind="tool_call", payload={"call_id": "", "name": "read", "input": {}}), "payload.call_id"),
    (ss.NewEvent(kind="tool_call", payload={"call_id": "c" * 256, "name": "read", "input": {}}), "payload.call_id"),
    (ss.NewEvent(kind="tool_result", payload={"call_id": "c"}), "payload.output"),
    (ss.NewEvent(kind="compaction", payload={"summary": "s", "first_kept_version": 0}), "payload.first_kept_version"),
    (ss.NewEvent(kind="compaction", payload={"summary": "s", "first_kept_version": True}),
     "payload.first_kept_version"),
    (ss.NewEvent(kind="prune", payload={"targets": [], "mode": "clear_output", "rule": "r"}), "payload.targets"),
    (ss.NewEvent(kind="prune", payload={"targets": [1], "mode": "shred", "rule": "r"}), "payload.mode"),
    (ss.NewEvent(kind="rewrite", payload={"target_version": 1, "field": "body", "content": "", "original_lines": 1,
                                          "language": "py"}), "payload.field"),
    (ss.NewEvent(kind="custom", payload={"type": "x", "data": float("nan")}), "payload"),
    (ss.NewEvent(kind="custom", payload={"type": "x", "data": b"bytes"}), "payload"),
    (ss.NewEvent(kind="custom", payload={"type": "x"}, meta={"when": datetime.now()}), "meta"),
    (ss.NewEvent(kind="system", payload={"text": "x"}, created_at=datetime(2025, 1, 1)), "created_at"),
    (ss.NewEvent(kind="custom", payload={"type": "x"}, meta={"source": "a\u0000b"}), "meta.source"),
    (ss.NewEvent(kind="custom", payload={"type": "x"}, meta={"s": ["\ud83d"]}), "meta.s"),
])
def test_invalid_events_are_typed_and_write_nothing(store: SessionStore, store_url: str, event: ss.NewEvent,
                                                    field: str) -> None:
    sid = store.create_session()
    store.append(sid, ss.user("kept"))
    before = table_counts(store_url)
    with pytest.raises(InvalidEvent) as err:
        store.append(sid, [ss.user("fine"), event])  # the good event of the batch is not written either
    assert err.value.index == 1
    assert err.value.field == field
    assert field in str(err.value)
    assert table_counts(store_url) == before
    assert [e.payload for e in store.transcript(sid)] == [ss.user("kept").payload]


def test_tool_result_for_unknown_call(store: SessionStore, store_url: str) -> None:
    sid = store.create_session()
    store.append(sid, [ss.user("go"), ss.tool_call("known", "read", {"path": "a"})])
    before = table_counts(store_url)
    with pytest.raises(InvalidEvent, match="unknown call id 'ghost'"):
        store.append(sid, ss.tool_result("ghost", "boo"))
    with pytest.raises(InvalidEvent, match="unknown call id 'later'"):
        store.append(sid, [ss.tool_result("later", "x"), ss.tool_call("later", "read", {})])  # result before call
    assert table_counts(store_url) == before
    store.append(sid, ss.tool_result("known", "fine"))  # a call from an earlier append is known
    # Imports keep recorded orphans as history.
    store.append(sid, ss.tool_result("ghost", "recorded orphan"), strict=False)
    assert store.version(sid) == 4


def test_not_an_event_is_rejected(store: SessionStore) -> None:
    sid = store.create_session()
    with pytest.raises(InvalidEvent, match="expected a NewEvent"):
        store.append(sid, [{"kind": "message"}])  # type: ignore[list-item]


def test_markers_and_compactions_are_checked_against_history(store: SessionStore, store_url: str) -> None:
    sid = store.create_session()
    store.append(sid, conversation())  # 1 system, 2 user, 3 assistant, 4 call, 5 result, 6 assistant
    before = table_counts(store_url)
    with pytest.raises(InvalidEvent, match="not before its own version"):
        store.append(sid, ss.events.prune([9], rule="test", placeholder="[cleared]"))
    with pytest.raises(InvalidEvent, match="a message event"):
        store.append(sid, ss.events.prune([2], rule="test", placeholder="[cleared]"))
    with pytest.raises(InvalidEvent, match="only tool_result"):
        store.append(sid, ss.events.rewrite(4, field="output", content="x", original_lines=1, language="python"))
    with pytest.raises(InvalidEvent, match="after the compaction's own version"):
        store.append(sid, ss.events.compaction("summary", 8))
    assert table_counts(store_url) == before
    store.append(sid, ss.events.prune([5], rule="test", placeholder="[cleared]"))
    store.append(sid, ss.events.compaction("summary", 5))
    with pytest.raises(InvalidEvent, match="moves back"):
        store.append(sid, ss.events.compaction("summary again", 3))


# ----------------------------------------------------------------------------- forks


@pytest.mark.citus
def test_fork_shares_history_without_copying(store: SessionStore, store_url: str) -> None:
    parent = store.create_session()
    store.append(parent, conversation())
    rows_before = table_counts(store_url)["events"]
    child = store.fork(parent, at=3)
    assert table_counts(store_url)["events"] == rows_before  # nothing copied
    assert store.version(child) == 3
    info = store.session(child)
    assert (info.parent_id, info.fork_version) == (parent, 3)
    inherited = store.transcript(child)
    assert [e.event_id for e in inherited] == [e.event_id for e in store.transcript(parent)[:3]]
    assert all(e.session_id == parent for e in inherited)
    # The child continues from the fork point; the parent is untouched.
    result = store.append(child, ss.user("a different path"), expected_version=3)
    assert result.version == 4
    assert [e.version for e in store.transcript(child)] == [1, 2, 3, 4]
    assert store.transcript(child)[-1].session_id == child
    assert store.version(parent) == 6
    assert store.transcript(parent)[3].kind == "tool_call"
    # The call at version 4 of the parent is not in the child's history.
    with pytest.raises(InvalidEvent, match="unknown call id 'c1'"):
        store.append(child, ss.tool_result("c1", "x"))


@pytest.mark.citus
def test_fork_of_a_fork_and_ranges(store: SessionStore) -> None:
    root = store.create_session()
    store.append(root, [ss.user(f"r{i}") for i in range(1, 6)])  # 1..5
    mid = store.fork(root, at=4)
    store.append(mid, [ss.user(f"m{i}") for i in range(5, 8)])  # 5..7
    leaf = store.fork(mid, at=6)
    store.append(leaf, ss.user("l7"))
    texts = [e.payload["content"][0]["text"] for e in store.events(leaf)]
    assert texts == ["r1", "r2", "r3", "r4", "m5", "m6", "l7"]
    assert [e.payload["content"][0]["text"] for e in store.events(leaf, after=3, upto=5)] == ["r4", "m5"]
    assert [e.version for e in store.events(leaf, after=5)] == [6, 7]
    empty = store.fork(root, at=0)
    assert store.transcript(empty) == []
    with pytest.raises(VersionOutOfRange):
        store.fork(root, at=6)
    with pytest.raises(VersionOutOfRange):
        store.fork(root, at=-1)


@pytest.mark.citus
def test_sessions_listing_and_token_totals(store: SessionStore) -> None:
    a = store.create_session("a")
    store.append(a, ss.user("hello there"))
    store.fork(a, new_session_id="b")
    ids = [s.id for s in store.sessions()]
    assert set(ids) == {"a", "b"}
    totals = store.token_totals()
    assert totals == {"a": TiktokenCounter().count("hello there")}


@pytest.mark.citus
def test_latest_events_of_many_sessions_in_one_read(store: SessionStore) -> None:
    for sid in ("a", "b", "quiet"):
        store.create_session(sid)
    store.append("a", [ss.custom("state", {"n": 1}), ss.user("hi"), ss.custom("state", {"n": 2}), ss.user("bye")])
    store.append("b", [ss.custom("state", {"n": 3})])
    store.append("quiet", ss.user("no custom event here"))
    store.fork("a", 2, new_session_id="fork")  # inherits {"n": 1} only
    latest = store.latest_events(["a", "b", "quiet", "fork", "missing", "a"], "custom")
    assert list(latest) == ["a", "b", "fork"]  # in the order asked, once; none and unknown are absent
    assert (latest["a"].version, latest["a"].payload["data"]) == (3, {"n": 2})
    assert latest["b"].payload["data"] == {"n": 3} and latest["fork"].payload["data"] == {"n": 1}
    store.append("fork", ss.custom("state", {"n": 4}))
    assert store.latest_events(iter(["fork"]), "custom")["fork"].payload["data"] == {"n": 4}
    assert store.latest_events(["quiet"], "message")["quiet"].version == 1
    assert store.latest_events([], "custom") == {}
    with pytest.raises(InvalidEvent, match="not one string"):
        store.latest_events("a", "custom")
    with pytest.raises(InvalidEvent, match="kind must be a string"):
        store.latest_events(["a"], 3)  # type: ignore[arg-type]


@pytest.mark.citus
def test_create_session_with_its_first_batch(store: SessionStore, store_url: str) -> None:
    """The session and its first batch land together or not at all (an interrupted import leaves
    no empty session)."""
    sid = store.create_session("with-events", {"source": "test"}, events=conversation())
    assert store.version(sid) == 6 and store.session(sid).metadata == {"source": "test"}
    assert store.append(sid, ss.user("more"), expected_version=6).version == 7
    taken = store.transcript(sid)[1].event_id
    before = table_counts(store_url)
    with pytest.raises(DuplicateEvent):  # an id the store made, taken in another session (Citus: asked of every shard)
        store.create_session("second", events=[ss.user("hi", event_id=taken)])
    with pytest.raises(InvalidEvent):
        store.create_session("third", events=[ss.tool_result("nope", "orphan")])
    with pytest.raises(SessionExists):
        store.create_session("with-events", events=[ss.user("again")])
    assert table_counts(store_url) == before
    with pytest.raises(SessionNotFound):
        store.session("second")


def test_threads_that_end_give_their_connection_back(store_url: str) -> None:
    """Frameworks (LangGraph's executor) call the store from a fresh worker thread each time: more
    threads than the pool holds, one after another, never wait for a connection."""
    import threading

    store = ss.SessionStore(store_url)
    sid = store.create_session()
    for i in range(25):  # the pool holds 5 (+10 overflow on PostgreSQL)
        worker = threading.Thread(target=store.append, args=(sid, ss.user(f"from thread {i}")))
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), f"thread {i} waited for a connection"
    assert store.version(sid) == 25
    assert store.engine.pool.checkedout() <= 2  # this thread's, and at most one still being collected
    store.close()
