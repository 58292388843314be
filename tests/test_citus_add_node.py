"""Adding a node to a Citus cluster while agents write (DESIGN §10): a third worker joins, the
shards are rebalanced onto it with `citus_rebalance_start()`, writers keep appending to several
sessions all along; afterwards every session reads what it held before plus what was appended,
in order, verifies, and the feed gives every event exactly once.

The cluster is the test's own (it gains a node, which the suite's shared cluster must not): a
coordinator and two workers with ``wal_level = logical`` and ``citus.shard_count = 4``.

- ``wal_level = logical`` because the rebalance moves shards online: `citus_rebalance_start()`'s
  default transfer mode ("auto") copies a shard and follows its writes by logical replication,
  then blocks writes to it only for the switch-over. Writers see no error, only that short wait.
  On a server without it, ``shard_transfer_mode => 'block_writes'`` works too (tried: the same
  result; writes to a moving shard wait for the whole copy instead).
- Four shards keep the test cheap: one shard group (sessions, events and the search index of
  the same sessions move together, colocated) moves to the new node instead of a dozen.
- The nodes run with ``synchronous_commit = off`` (the suite's clusters are not durable), as a
  user's may: an append that committed just before the move's switch-over used to stay on the
  old shard, acknowledged and then missing, the next append stored at its versions (this test
  failed so now and then), until the append wrote its commit first
  (`distribution.APPEND_FUNCTION`; `docs/scaling.md`, "Adding a node").
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.testing import CitusCluster

from .conftest import NEEDS_CITUS

pytestmark = NEEDS_CITUS

SESSIONS = 12  # over 4 shards: some on the shard that moves, whichever it is (asserted below)
WRITERS = 4


@pytest.fixture(scope="module")
def cluster() -> Iterator[CitusCluster]:
    with CitusCluster(settings={"wal_level": "logical", "citus.shard_count": "4",
                                # the rebalance's background jobs start at once, not at the next 5 s tick
                                "citus.background_task_queue_interval": "100ms"}) as citus:
        yield citus


def _writer(url: str, sessions: list[str], stop: threading.Event, appended: dict[str, list[str]],
            errors: list[BaseException]) -> None:
    """Append a two-event batch to each of `sessions` in turn, over and over until `stop`; what
    was stored goes to `appended` (event ids, in order), what went wrong to `errors`."""
    store = SessionStore(url)
    try:
        turn = 0
        while not stop.is_set():
            for sid in sessions:
                ids = [f"{sid}-{turn}-question", f"{sid}-{turn}-answer"]
                store.append(sid, [ss.user(f"question {turn}", event_id=ids[0]),
                                   ss.assistant(f"answer {turn}", event_id=ids[1])])
                appended[sid].extend(ids)
            turn += 1
            stop.wait(0.02)  # steady writes through the move, a few hundred events to check after
    except BaseException as error:  # reported by the test, not lost in a thread
        errors.append(error)
    finally:
        store.close()


def _placements(cluster: CitusCluster, database: str, sessions: list[str]) -> dict[str, int]:
    """The port of the worker holding each session's shard of `sessions`."""
    rows = cluster.execute(
        "SELECT s.id, p.nodeport FROM sessions s JOIN pg_dist_shard_placement p "
        "ON p.shardid = get_shard_id_for_distribution_column('sessions', s.id) "
        f"WHERE s.id IN ({', '.join(repr(sid) for sid in sessions)})", database)
    return {str(sid): int(port) for sid, port in rows}  # type: ignore[call-overload]


def test_a_node_added_and_shards_moved_while_writers_append(cluster: CitusCluster) -> None:
    url = cluster.create_database("add_node")
    store = SessionStore(url)
    try:
        store.migrate()
        sessions = [store.create_session(f"agent-{n:02d}") for n in range(SESSIONS)]
        for sid in sessions:
            store.append(sid, [ss.system("You are a careful agent."), ss.user(f"hello from {sid}")])
        fork = store.fork(sessions[0], at=1)
        store.append(fork, ss.user("and in the fork?"))
        before = {sid: store.transcript(sid) for sid in [*sessions, fork]}
        placed = _placements(cluster, "add_node", sessions)

        stop = threading.Event()
        appended: dict[str, list[str]] = {sid: [] for sid in sessions}
        errors: list[BaseException] = []
        writers = [threading.Thread(target=_writer, args=(url, sessions[w::WRITERS], stop, appended, errors))
                   for w in range(WRITERS)]
        for thread in writers:
            thread.start()
        try:
            new = cluster.add_worker()
            cluster.execute("SELECT citus_rebalance_start()", "add_node")
            cluster.execute("SELECT citus_rebalance_wait()", "add_node")
        finally:
            stop.set()
            for thread in writers:
                thread.join(60)
        assert errors == [], f"a writer failed while the shards moved: {errors[0]!r}"

        moved = {sid for sid, port in _placements(cluster, "add_node", sessions).items() if port != placed[sid]}
        assert moved and all(_placements(cluster, "add_node", sorted(moved))[sid] == new.port for sid in moved), \
            "no session's shard moved to the new node: the test proved nothing"
        assert all(appended[sid] for sid in moved), "the writers never wrote to a session that moved"

        for sid in sessions:
            events = store.transcript(sid)
            assert events[:len(before[sid])] == before[sid]  # what was there reads the same
            assert [e.event_id for e in events[len(before[sid]):]] == appended[sid]  # then what was appended
            assert [e.version for e in events] == list(range(1, len(events) + 1))  # gap-free
        assert store.transcript(fork) == before[fork]
        assert [report.broken for report in store.verify([*sessions, fork])] == [None] * (SESSIONS + 1)

        expected = Counter(e.event_id for sid in [*sessions, fork] for e in store.transcript(sid)
                           if e.session_id == sid)  # a fork's inherited events are its parent's
        assert Counter(e.event_id for e in store.read_all()) == expected  # every event once: none lost, none twice
    finally:
        store.close()
