"""`watch` records what `import` records: however a transcript arrives — line by line, in bursts
cut mid-line, across restarts (an import keeps nothing between two calls: each is a restarted
watch's) — the store ends holding what a one-shot import of the finished file holds (events,
their times and meta, session metadata, subagent links); two writers of one session both
succeed; a file's session is known by its content. Real transcripts, SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from sessionstore import SessionStore
from sessionstore.errors import UnknownFormat
from sessionstore.importers import InFlight, import_file, parse_file
from sessionstore.importers.rules import QUIET_SECONDS

from .conftest import FIXTURE_TRANSCRIPTS, SHARED, TRANSCRIPTS, shipped

# (a transcript, how an agent writes it): "lines" appends (cut anywhere, mid-line too), "items"
# rewrites a JSON document that holds more items each time (key of the growing array).
LINES = [shipped("claude-code/recorded-2.1.39/*.jsonl"),
         "claude-code/recorded-2.0.29/5e55104e-c1a0-4d3e-9a11-000200000029.jsonl", shipped("codex/recorded/*.jsonl"),
         shipped("pi/recorded/*.jsonl"), shipped("gemini-cli/chats/*.jsonl"), "openhands/output.jsonl",
         shipped("gemini-cli/recorded-0.61.0/chats/*.jsonl"), shipped("copilot-cli/recorded/*/events.jsonl"),
         shipped("qwen-code/recorded/chats/*.jsonl")]
ITEMS = {"openhands/trajectory-slugify-accents.json": "", shipped("gemini-cli/chats/*.json"): "messages"}
SHARED_LINES = ["codex/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"]
CUTS = 4  # imports while the file grows, besides the finished file's


def _source(relative: str) -> Path:
    found = FIXTURE_TRANSCRIPTS / relative
    return found if found.exists() else TRANSCRIPTS / relative


CASES = [*((r, "lines") for r in LINES), *((r, "items") for r in ITEMS),
         *((r, "lines") for r in (SHARED_LINES if SHARED else []))]


def _snapshots(data: bytes, relative: str, how: str, rng: random.Random) -> list[bytes]:
    """The file as the agent leaves it between two imports, growing to `data`."""
    if how == "lines":
        cuts = sorted(rng.sample(range(1, len(data)), CUTS))
        first_two = data.find(b"\n", data.find(b"\n") + 1) + 1  # Claude Code writes two lines, then the rest
        return [data[:c] for c in sorted({first_two, *cuts}) if c] + [data]
    key = ITEMS[relative]
    root = json.loads(data)
    items = root if key == "" else root[key]
    shots = []
    for n in sorted(rng.sample(range(1, len(items)), min(CUTS, len(items) - 1))):
        grown = items[:n] if key == "" else {**root, key: items[:n]}
        shots.append(json.dumps(grown, indent=2).encode())
    return [*shots, data]


def _lay_out(relative: str, folder: Path) -> Path:
    """The transcript's folder copied (its subagent files whole: they are written before their
    parent names them); the transcript itself empty, for the test to write."""
    source = _source(relative)
    shutil.copytree(source.parent, folder, symlinks=False)
    target = folder / source.name
    target.write_bytes(b"")
    return target


def _sessions(store: SessionStore, path: Path) -> list[str]:
    main = parse_file(path)
    found = [s.session_id for s in main.sessions]
    for info in store.sessions():
        if info.metadata.get("parent_session") in found:
            found.append(info.id)
    return found


def _normalised(value: Any, folder: str) -> Any:
    if isinstance(value, str):
        return value.replace(folder, "<folder>")
    if isinstance(value, dict):
        return {k: _normalised(v, folder) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v, folder) for v in value]
    return value


def _state(store: SessionStore, path: Path, folder: Path) -> dict[str, Any]:
    """What the store holds of the transcript at `path` (and its subagents), its folder's path
    written as ``<folder>``; times only where the file gives them (SWE-agent's give none)."""
    dated = {e.event_id for s in parse_file(path).sessions for e in s.events if e.created_at is not None}
    state = {}
    for sid in _sessions(store, path):
        events = [(e.event_id, e.kind, e.payload, e.meta, e.created_at if e.event_id in dated else None)
                  for e in store.events(sid)]
        state[sid] = _normalised({"metadata": store.session(sid).metadata, "events": events}, str(folder))
    return state


def _grow(store: SessionStore, target: Path, shots: list[bytes]) -> None:
    for shot in shots:
        target.write_bytes(shot)
        try:
            result = import_file(store, target)
        except UnknownFormat:  # not one whole line yet
            continue
        assert not [*result.failures, *(f for s in result.subagents for f in s.failures)], \
            f"{len(shot)} bytes of {target.name}"


def _finished(folder: Path) -> None:
    """Every file of `folder` as an agent leaves it: untouched for longer than a turn."""
    old = os.stat(folder).st_mtime - 2 * QUIET_SECONDS
    for f in folder.rglob("*"):
        os.utime(f, (old, old))


@pytest.fixture(scope="module")
def one_shot(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A one-shot import of each finished transcript (SQLite), once for the module: its state
    just written (what waits for the agent's next lines still waits) and once finished."""
    root = tmp_path_factory.mktemp("one-shot")
    store = SessionStore(f"sqlite:///{root / 'one-shot.db'}")
    store.migrate()
    done: dict[str, Any] = {}

    def of(relative: str) -> tuple[dict[str, Any], dict[str, Any]]:
        if relative not in done:
            folder = root / str(len(done))
            target = _lay_out(relative, folder)
            target.write_bytes(_source(relative).read_bytes())
            import_file(store, target)
            written = _state(store, target, folder)
            _finished(folder)
            import_file(store, target)
            done[relative] = (written, _state(store, target, folder))
        return done[relative]

    yield of
    store.close()


def test_a_growing_transcript_ends_as_a_one_shot_import(store: SessionStore, backend: str, tmp_path: Path,
                                                        one_shot: Any) -> None:
    """Each format's transcript cut at random places (mid-line too), an import after each as
    `watch` makes: never a failure, and the same store as one import of the finished file —
    while the agent may still write (what a later line would change waits) and once it is done.
    PostgreSQL (what it stores differently: JSONB meta and metadata) takes the formats whose
    files teach metadata and meta late, Claude Code's and Codex's."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    for n, (relative, how) in enumerate(CASES if backend == "sqlite" else CASES[:3]):
        data = _source(relative).read_bytes()
        folder = tmp_path / str(n)
        target = _lay_out(relative, folder)
        _grow(store, target, _snapshots(data, relative, how, rng))
        written, finished = one_shot(relative)
        assert _state(store, target, folder) == written, f"{relative}, seed {seed}"
        _finished(folder)
        result = import_file(store, target)
        assert not [i for i in result.issues if isinstance(i, InFlight)]
        assert _state(store, target, folder) == finished, f"{relative}, seed {seed}"


WRITERS = 3


def test_writers_of_one_session_both_succeed_and_store_each_event_once(store_url: str, tmp_path: Path) -> None:
    """A `watch` following a copy of a session while `import` reads the original, two copies
    imported at once: threads with their own store each import their copy of a Claude Code
    session as it grows, a step behind one another, started together at each step."""
    source = _source(LINES[0])
    lines = source.read_bytes().splitlines(keepends=True)
    copies = []
    for n in range(WRITERS):
        folder = tmp_path / f"copy{n}"
        copies.append(_lay_out(LINES[0], folder))
    steps = [len(lines) * k // 4 for k in range(1, 5)]
    start = threading.Barrier(WRITERS)
    failures: list[Any] = []
    added = [0] * WRITERS

    def writer(n: int) -> None:
        store = SessionStore(store_url)
        try:
            for step in range(len(steps) + WRITERS - 1):
                cut = steps[min(max(step - n, 0), len(steps) - 1)]  # writer n is n steps behind
                copies[n].write_bytes(b"".join(lines[:cut]))
                start.wait(timeout=60)
                result = import_file(store, copies[n])
                failures.extend(result.failures)
                added[n] += result.events_added + sum(s.events_added for s in result.subagents)
        except BaseException as exc:  # noqa: BLE001 - the test reports what a writer raised
            failures.append(exc)
            start.abort()
        finally:
            store.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures
    store = SessionStore(store_url)
    try:
        parsed = parse_file(copies[0])
        stored = store.transcript(parsed.session_id)
        assert [e.event_id for e in stored] == [e.event_id for e in parsed.events]
        subagents = [s for s in _sessions(store, copies[0]) if s != parsed.session_id]
        assert subagents and sum(added) == len(stored) + sum(len(store.transcript(s)) for s in subagents)
    finally:
        store.close()


MOVABLE = [shipped("openhands/trajectory-*.json"), shipped("swe-agent/*/*/*.traj"), LINES[0]]


def test_a_moved_file_is_its_session_and_an_older_copy_adds_nothing(store: SessionStore, tmp_path: Path) -> None:
    """A file renamed or moved is the same session (known by its content, not its name); an
    older, shorter copy of a stored session adds nothing and is no error."""
    for n, relative in enumerate(MOVABLE):
        source = _source(relative)
        first = _lay_out(relative, tmp_path / f"{n}")
        first.write_bytes(source.read_bytes())
        result = import_file(store, first)
        sid = result.session_id
        before = len(store.sessions())
        moved = tmp_path / f"{n}-moved" / f"renamed{source.suffix}"
        moved.parent.mkdir()
        first.rename(moved)
        again = import_file(store, moved, subagents=False)
        assert (again.session_id, again.events_added, again.failures) == (sid, 0, []), relative
        assert len(store.sessions()) == before
        assert store.session(sid).metadata["source_path"] == str(moved)  # where it was read from last
    lines = _source(LINES[0]).read_bytes().splitlines(keepends=True)
    older = tmp_path / "backup" / _source(LINES[0]).name
    older.parent.mkdir()
    older.write_bytes(b"".join(lines[:len(lines) // 2]))
    sid = parse_file(older).session_id
    head, metadata = store.version(sid), store.session(sid).metadata
    result = import_file(store, older, subagents=False)
    assert (result.events_added, result.issues) == (0, [])
    assert (store.version(sid), store.session(sid).metadata) == (head, metadata)
