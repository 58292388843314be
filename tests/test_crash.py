"""kill -9 in the middle of a write, on SQLite and PostgreSQL (issue 9, item 5).

Each test runs a real writer process (tests/crashing.py), waits for it to report that it is
where the test wants it — appending, holding a transaction open, summarising, importing —
and kills it with SIGKILL. Then it checks what a crash may leave: only whole batches, versions
without gaps, a chain that recomputes from the stored rows, a feed that shows every committed
event, a compaction with all of its prunes and rewrites or none of it, an import that a re-run
completes without duplicating anything; and that a new writer carries on.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore.importers import import_path

from .chains import assert_chains_intact
from .checks import assert_valid_view
from .conftest import FIXTURE_TRANSCRIPTS, fresh_url
from .crashing import (PROGRESS, ROOT, SIZES, STALL, SUMMARISING, TRIPPED, batch_events, start,
                       start_compaction)
from .test_compaction import SMALL, work_session

TRANSCRIPT = sorted((FIXTURE_TRANSCRIPTS / "claude-code").rglob("*.jsonl"))[0]


# --------------------------------------------------------------------------- what a crash may leave


def assert_whole_batches(store: SessionStore, sid: str, reported: dict[str, int]) -> dict[str, int]:
    """Every batch in the session is whole, versions are gap-free, each writer's batches are a
    prefix of what it wrote, holding at least the `reported` ones; returns batches per writer."""
    events = store.transcript(sid)
    assert [e.version for e in events] == list(range(1, len(events) + 1)), "a gap or a duplicated version"
    assert store.version(sid) == len(events)
    batches: dict[str, list] = defaultdict(list)
    for e in events:
        batches[e.meta["batch"]].append(e)
    for name, members in batches.items():
        size = members[0].meta["n"]
        assert [e.meta["k"] for e in members] == list(range(size)), f"batch {name} is partial"
        assert members[-1].version - members[0].version == size - 1, f"batch {name} is interleaved"
        writer, number = name.split("/")
        assert [e.event_id for e in members] == [e.event_id for e in batch_events(writer, int(number))]
    per_writer: dict[str, list[int]] = defaultdict(list)
    for name in batches:
        writer, number = name.split("/")
        per_writer[writer].append(int(number))
    for writer, numbers in per_writer.items():
        assert sorted(numbers) == list(range(len(numbers))), f"{writer}'s batches are not a prefix"
    for writer, count in reported.items():
        assert len(per_writer.get(writer, [])) >= count, f"batches {writer} reported stored are missing"
    return {w: len(n) for w, n in per_writer.items()}


def assert_feed_complete(store: SessionStore) -> None:
    """`read_all` gives every stored event once. On PostgreSQL it ends below the oldest running
    transaction, and the killed client's is aborted only when its server process notices the
    closed socket: that is waited for, a bounded time."""
    expected = sorted(e.event_id for info in store.sessions() for e in store.events(info.id)
                      if e.session_id == info.id)
    deadline = time.monotonic() + 30
    while True:
        feed = [e.event_id for e in store.read_all()]
        if len(feed) >= len(expected) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert sorted(feed) == expected


def reported_batches(workdir: Path) -> int:
    path = workdir / PROGRESS
    return len(path.read_text().splitlines()) if path.exists() else 0


# --------------------------------------------------------------------------- batched appends


def test_kill_during_batched_appends(store: SessionStore, store_url: str, tmp_path: Path) -> None:
    """Killed at an arbitrary point of a stream of batches (1 to 600 events: the 600 one is two
    statements in a transaction); then a second writer is killed the same way, and a third
    appends in this process."""
    sid = store.create_session()
    rng = random.Random()
    for writer in ("w", "v"):
        child = start("batches", store_url, tmp_path / writer, writer, sid, 0)
        child.wait_for(PROGRESS, lines=len(SIZES) + 3)  # past a big batch at least once
        time.sleep(rng.uniform(0, 0.08))  # anywhere in the next batches
        child.killed()
        assert_whole_batches(store, sid, {writer: reported_batches(tmp_path / writer)})
    head = store.version(sid)
    store.append(sid, batch_events("z", 0), expected_version=head)
    counts = assert_whole_batches(store, sid, {"w": reported_batches(tmp_path / "w"),
                                               "v": reported_batches(tmp_path / "v"), "z": 1})
    assert counts["z"] == 1
    assert_chains_intact(store)
    assert_feed_complete(store)


def test_kill_inside_an_open_append_transaction(store: SessionStore, store_url: str, tmp_path: Path) -> None:
    """Deterministic: the writer stops before the COMMIT of its first 600-event batch, its rows
    inserted. Meanwhile nobody sees them; after the kill nobody ever will, and the session goes on."""
    sid, other = store.create_session(), store.create_session()
    child = start("batches", store_url, tmp_path / "w", "w", sid, 1)
    child.wait_for(TRIPPED)
    big = SIZES.index(600)
    before = sum(SIZES[:big])
    # The open transaction hides its rows; another session's writer is not held up (on SQLite
    # it would wait for the write lock, so there only reads are tried).
    assert store.version(sid) == before
    assert len(list(store.read_all())) == before
    if store.backend == "postgresql":
        store.append(other, batch_events("o", 0))
    child.killed()
    assert reported_batches(tmp_path / "w") == big
    counts = assert_whole_batches(store, sid, {"w": big})
    assert counts == {"w": big}, "the batch killed before its COMMIT is visible"
    store.append(sid, batch_events("w", big), expected_version=before)  # the same batch, now whole
    assert store.version(sid) == before + 600
    assert_whole_batches(store, sid, {"w": big + 1})
    assert_chains_intact(store)
    assert_feed_complete(store)


# --------------------------------------------------------------------------- compaction


def compaction_shape(events: list) -> list[tuple[str, object]]:
    return [(e.kind, e.payload) for e in events]


def test_kill_during_a_slow_compaction(store: SessionStore, store_url: str, tmp_path: Path) -> None:
    """Killed while its summariser works: nothing of the compaction is stored, the view is intact.
    Then killed at a random moment shortly after the summary: all of it or none. Then allowed
    to finish: exactly the planned prunes, rewrites and compaction, in one run of versions."""
    sid = work_session(store, 10)
    planned = store.compact(sid, SMALL, dry_run=True)
    assert planned is not None and planned.compaction is not None
    kinds = [e.kind for e in planned.events]
    assert "prune" in kinds and "rewrite" in kinds, kinds  # the test needs a compaction with markers
    head = store.version(sid)
    transcript = store.transcript(sid)
    view = store.context(sid)

    child = start_compaction(store_url, tmp_path / "stalled", sid, SMALL, STALL)
    child.wait_for(SUMMARISING)
    child.killed()
    assert store.transcript(sid) == transcript
    assert store.context(sid) == view
    assert_valid_view(view)

    child = start_compaction(store_url, tmp_path / "racing", sid, SMALL, 0.05)
    child.wait_for(SUMMARISING)
    time.sleep(random.uniform(0.0, 0.2))  # before, during or after the append
    child.kill()
    written = list(store.events(sid, after=head))
    assert compaction_shape(written) in ([], compaction_shape(planned.events)), "a compaction was stored in part"
    assert_valid_view(store.context(sid))

    if not written:
        child = start_compaction(store_url, tmp_path / "finishing", sid, SMALL, 0.05)
        child.wait_for(SUMMARISING)
        child.finish()
        written = list(store.events(sid, after=head))
    assert compaction_shape(written) == compaction_shape(planned.events)
    assert [e.version for e in written] == list(range(head + 1, head + 1 + len(planned.events)))
    compacted = store.context(sid)
    assert compacted.compaction is not None and compacted.compaction.event_id == written[-1].event_id
    assert compacted.tokens == planned.tokens_after  # the view the dry run promised
    assert_valid_view(compacted)
    assert_chains_intact(store)
    assert_feed_complete(store)


# --------------------------------------------------------------------------- import


def run_import(url: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sessionstore.cli", "--db", url, "import", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def snapshot(store: SessionStore) -> list[tuple[object, ...]]:
    """Everything an import stores, comparable across stores."""
    rows: list[tuple[object, ...]] = []
    for info in store.sessions():
        rows.append((info.id, info.metadata, info.parent_id, info.fork_version, info.head))
        rows.extend((e.session_id, e.version, e.event_id, e.kind, e.payload, e.meta, e.tokens, e.created_at)
                    for e in store.events(info.id) if e.session_id == info.id)
    return rows


@pytest.mark.parametrize(("batch_size", "trip"), [(2000, 0), (4, 3)],
                         ids=["before-the-first-commit", "after-two-batches"])
def test_kill_during_an_import(backend: str, store_url: str, tmp_path: Path, request: pytest.FixtureRequest,
                               batch_size: int, trip: int) -> None:
    """`sessionstore import` of a real Claude Code transcript, killed before it commits the new
    session with its first events, or with two batches stored and the third being inserted:
    nothing half-made is visible, and running the same import again gives exactly what a
    clean import gives."""
    child = start("import", store_url, tmp_path / "killed", TRANSCRIPT, batch_size, trip)
    child.wait_for(TRIPPED)
    child.killed()
    store = SessionStore(store_url)
    try:
        if trip == 0:
            assert store.sessions() == [], "an interrupted import left a session behind"
        else:
            (info,) = store.sessions()
            assert info.head == 2 * batch_size  # created with the first batch, then one append
        rerun = run_import(store_url, TRANSCRIPT)  # the same command, after the crash
        assert rerun.returncode == 0, rerun.stderr
        clean_dir = tmp_path / "clean"
        clean_dir.mkdir()
        clean = SessionStore(fresh_url(backend, clean_dir, request))
        try:
            clean.migrate()
            assert import_path(clean, TRANSCRIPT).ok
            assert snapshot(store) == snapshot(clean)
            assert sum(info.head for info in store.sessions()) > (0 if trip == 0 else 2 * batch_size)
            assert_chains_intact(store)
            assert_feed_complete(store)
            again = import_path(store, TRANSCRIPT)  # and once more: nothing to add
            assert again.ok and again.events_added == 0
            assert snapshot(store) == snapshot(clean)
        finally:
            clean.close()
    finally:
        store.close()
