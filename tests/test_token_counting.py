"""Token counts off the append path: an append stores its events uncounted, and every figure
that reads counts is still exact — events read, views, the sums made in the database, an erased
session's — with the counts written back by `count_tokens` and the chain still verifying."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text

import sessionstore as ss
from sessionstore import chain
from sessionstore.tokens import UNCOUNTED, count_events, transcript_tokens


def _events() -> list[ss.NewEvent]:
    call = ss.tool_call("c1", "read_file", {"path": "src/app.py"})
    return [ss.system("You are a careful coding agent."), ss.user("Why does the import fail? " * 5), call,
            ss.tool_result("c1", "Traceback (most recent call last):\n  ImportError: no module named x\n" * 3),
            ss.assistant("The module is missing from the lockfile; add it and reinstall."),
            ss.custom("progress", {"step": 3, "of": 7}, in_context=False)]


def _stored(store: ss.SessionStore, sid: str) -> list[tuple[int, int]]:
    with store.engine.connect() as connection:
        return [tuple(row) for row in connection.execute(  # type: ignore[misc]
            text("SELECT version, tokens FROM events WHERE session_id = :s ORDER BY version"), {"s": sid})]


def _expected(store: ss.SessionStore, sid: str) -> list[int]:
    return count_events(store.token_counter, [(e.kind, e.payload) for e in store.events(sid)])


def test_appended_uncounted_read_exact_and_written_back(store: ss.SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, _events())
    store.append(sid, ss.user("and one more, single"))
    assert {tokens for _, tokens in _stored(store, sid)} == {UNCOUNTED}
    read = list(store.events(sid))
    assert [e.tokens for e in read] == _expected(store, sid)
    assert all(e.tokens > 0 for e in read)
    assert store.context(sid).tokens > 0 and store.verify(sid)[0].ok  # the links cover -1

    other = store.create_session()
    store.append(other, ss.user("another session's event"))
    totals = store.token_totals()  # counts first, then sums
    assert totals[sid] == sum(e.tokens for e in read) and totals[other] == next(iter(store.events(other))).tokens
    assert [tokens for _, tokens in _stored(store, sid)] == [e.tokens for e in read]
    assert store.transcript_tokens([sid])[sid] == transcript_tokens(read)
    assert store.count_tokens() == 0  # nothing left
    assert store.verify(sid)[0].ok  # and the links made on -1 still verify with the counts in place


def test_a_sum_leaves_out_what_is_appended_after_its_count(store: ss.SessionStore) -> None:
    """A row appended between `count_tokens` and the sum is summed as not there yet, never as -1."""
    sid = store.create_session()
    store.append(sid, ss.user("counted first"))
    assert store.count_tokens(sid) == 1
    store.append(sid, ss.user("appended after the count"))
    repo: Any = store._repo
    (summed,) = store._run(repo._over_lineage, sid, repo.sql.transcript_sum)  # the sum alone, no count first
    assert int(summed[0]) == next(iter(store.events(sid))).tokens


def test_erase_keeps_the_counts_of_events_appended_uncounted(store: ss.SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, _events())
    before = store.stats(sid)
    store.erase(sid, "asked to be forgotten")
    assert UNCOUNTED not in {tokens for _, tokens in _stored(store, sid)}
    assert store.transcript_tokens([sid])[sid] == before.transcript_tokens
    assert store.verify(sid)[0].ok


@pytest.mark.citus
def test_count_tokens_on_every_backend(store: ss.SessionStore) -> None:
    sids = [store.create_session() for _ in range(3)]
    for n, sid in enumerate(sids):
        store.append(sid, [ss.user(f"message {n}.{i} about the failing build") for i in range(n + 2)])
    assert store.count_tokens(sids[0]) == 2
    assert store.count_tokens() == 3 + 4
    for sid in sids:
        assert [tokens for _, tokens in _stored(store, sid)] == _expected(store, sid)
        assert store.verify(sid)[0].ok


def test_a_batch_refused_whole_leaves_its_session_as_it_was(store: ss.SessionStore) -> None:
    """A batch moves its session's head before its rows land (SQLite: `_insert_batch`): a row
    refused by a uniqueness constraint takes the head's move back with it."""
    other, sid = store.create_session(), store.create_session()
    taken = ss.user("stored in another session")
    store.append(other, taken)
    store.append(sid, ss.user("first"))
    before = store.session(sid)
    with pytest.raises(ss.DuplicateEvent):
        store.append(sid, [ss.user("new"), ss.user("again", event_id=taken.event_id)])
    assert store.version(sid) == 1 and store.session(sid).last_event_at == before.last_event_at
    late = [ss.user(f"batch {i}", created_at=before.last_event_at + timedelta(minutes=i)) for i in (1, 2, 3)]
    assert store.append(sid, late).version == 4 and store.verify(sid)[0].ok
    assert store.session(sid).last_event_at == late[-1].created_at


def test_a_count_linked_at_append_stays_covered(store: ss.SessionStore) -> None:
    """An event stored counted (before counts moved off the append) has a link over its count:
    -1 does not reproduce it, so an edited count is still a break."""
    sid = store.create_session()
    store.append(sid, ss.user("stored the old way"))
    (event,) = list(store.events(sid))
    with store.engine.begin() as connection:
        content = connection.execute(text("SELECT content_hash FROM events WHERE session_id = :s"), {"s": sid}).scalar()
        old = chain.link(chain.genesis(sid), event_id=event.event_id, version=1, kind="message",
                         created_at=event.created_at, tokens=event.tokens, content=content)
        connection.execute(text("UPDATE events SET tokens = :t, link = :l WHERE session_id = :s"),
                           {"t": event.tokens, "l": old, "s": sid})
        connection.execute(text("UPDATE sessions SET head_link = :l WHERE id = :s"), {"l": old, "s": sid})
    assert store.verify(sid)[0].ok
    with store.engine.begin() as connection:
        connection.execute(text("UPDATE events SET tokens = tokens + 1 WHERE session_id = :s"), {"s": sid})
    assert not store.verify(sid)[0].ok
