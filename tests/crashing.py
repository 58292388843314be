"""Writer processes for the kill -9 tests (tests/test_crash.py), and how the tests drive them.

A child runs ``python -m tests.crashing SCENARIO URL WORKDIR ...`` with the worktree's
interpreter, writes marker files into WORKDIR to say how far it got, and is killed with SIGKILL
by the test: no `finally`, no atexit, no rollback from Python, exactly as a crash or an OOM kill.

Deterministic kill points come from a *tripwire*: the child's store runs its statements on a
cursor that, at a chosen statement (the COMMIT of a transaction holding an append's rows, the
n-th insert of an import), writes a marker and sleeps until the test kills it. The statements
are the store's own; the tripwire only stops before one of them runs.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.storage.prepared import APPEND_CHUNK

ROOT = Path(__file__).resolve().parents[1]
# Batch sizes the writer cycles through: 600 is above `storage.prepared.APPEND_CHUNK` (500),
# so that batch is two INSERT statements inside one transaction.
SIZES = (1, 5, 2, 40, 3, 600, 9, 1, 120)
TRIPPED = "tripped"
PROGRESS = "progress"
SUMMARISING = "summarising"
POLICY = "policy"
STALL = 600.0  # seconds a tripped child sleeps: far longer than any test waits for it


# --------------------------------------------------------------------------- what a batch is


def batch_events(writer: str, number: int) -> list[ss.NewEvent]:
    """Batch `number` of `writer`: messages and tool pairs, each carrying its batch id and size."""
    size = SIZES[number % len(SIZES)]
    events: list[ss.NewEvent] = []
    for k in range(size):
        meta = {"batch": f"{writer}/{number}", "n": size, "k": k}
        eid = f"{writer}-{number}-{k}"
        if k % 3 == 1 and k + 1 < size:  # a call here, its result next
            events.append(ss.tool_call(f"c-{eid}", "Read", {"file_path": f"f{k}.py"}, meta=meta, event_id=eid))
        elif k % 3 == 2 and events and events[-1].kind == "tool_call":
            events.append(ss.tool_result(events[-1].payload["call_id"], "x = 1\n" * (k + 1), meta=meta,
                                         event_id=eid))
        else:
            events.append(ss.user(f"{writer} batch {number} event {k} ünïcødé", meta=meta, event_id=eid))
    return events


# --------------------------------------------------------------------------- the tripwire


class _WiredCursor:
    def __init__(self, cursor: Any, trip: Callable[[str], bool], marker: Path) -> None:
        self._cursor, self._trip, self._marker = cursor, trip, marker

    def execute(self, sql: str, *args: Any) -> Any:
        if self._trip(sql):
            self._marker.write_text(sql[:200])
            time.sleep(STALL)
        return self._cursor.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class _WiredConnection:
    def __init__(self, connection: Any, trip: Callable[[str], bool], marker: Path) -> None:
        self._connection, self._trip, self._marker = connection, trip, marker

    def cursor(self) -> _WiredCursor:
        return _WiredCursor(self._connection.cursor(), self._trip, self._marker)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def install_tripwire(trip: Callable[[str], bool], marker: Path) -> None:
    """Every SessionStore of this process runs its statements through `trip` (see the module docstring)."""
    original = SessionStore._connection

    def connection(self: SessionStore) -> Any:
        return _WiredConnection(original(self), trip, marker)

    SessionStore._connection = connection  # type: ignore[method-assign]


def nth(predicate: Callable[[str], bool], n: int) -> Callable[[str], bool]:
    """A trip that fires at the n-th statement (1-based) matching `predicate`."""
    seen = 0

    def trip(sql: str) -> bool:
        nonlocal seen
        if predicate(sql):
            seen += 1
            return seen == n
        return False

    return trip


def is_commit(sql: str) -> bool:
    return sql.strip().upper() == "COMMIT"


def inserts_events(sql: str) -> bool:
    return "INSERT INTO events" in sql


# --------------------------------------------------------------------------- scenarios (in the child)


def write_batches(url: str, workdir: Path, writer: str, session_id: str, trip_commit: str) -> None:
    """Append batches to `session_id` forever, recording each batch number once it is stored.

    With `trip_commit` = n, stop dead before the COMMIT of the n-th batch above APPEND_CHUNK (such
    a batch runs in an explicit transaction on every backend, so its rows are inserted then; on
    SQLite smaller batches run in one too, so the COMMIT is told by the batch, not by its rank).
    """
    big = [number for number, size in enumerate(SIZES) if size > APPEND_CHUNK]
    number = 0
    if int(trip_commit):
        tripping = big[int(trip_commit) - 1]
        install_tripwire(lambda sql: number == tripping and is_commit(sql), workdir / TRIPPED)
    store = SessionStore(url)
    progress = (workdir / PROGRESS).open("a", buffering=1)
    while True:
        store.append(session_id, batch_events(writer, number))
        progress.write(f"{number}\n")
        number += 1


class SlowSummarizer:
    """The offline summariser, after saying so in a marker file and sleeping `delay` seconds."""

    name = "offline"

    def __init__(self, marker: Path, delay: float) -> None:
        self.marker, self.delay = marker, delay

    def summarize(self, request: ss.SummaryRequest) -> str:
        self.marker.write_text("summarising")
        time.sleep(self.delay)
        return ss.OfflineSummarizer().summarize(request)


def compact(url: str, workdir: Path, session_id: str, delay: str) -> None:
    """Compact `session_id` with the test's policy (pickled in WORKDIR/policy by `start_compaction`)
    and a slow summariser; say "done" afterwards."""
    policy = pickle.loads((workdir / POLICY).read_bytes())
    store = SessionStore(url)
    result = store.compact(session_id, policy, SlowSummarizer(workdir / SUMMARISING, float(delay)))
    (workdir / "done").write_text(str(len(result.events) if result else 0))


def import_file(url: str, workdir: Path, path: str, batch_size: str, trip_insert: str) -> None:
    """`sessionstore import PATH` (the real CLI), in batches of `batch_size` events, stopping dead
    before the `trip_insert`-th statement that inserts events, or before the first COMMIT with 0."""
    from sessionstore.cli import main
    from sessionstore.importers import storing as base

    base.BATCH_SIZE = int(batch_size)  # the first batch (create_session) …
    base._batches.__defaults__ = (int(batch_size),)  # … and the appends after it
    trip = nth(inserts_events, int(trip_insert)) if int(trip_insert) else nth(is_commit, 1)
    install_tripwire(trip, workdir / TRIPPED)
    main(["--db", url, "import", path], standalone_mode=True)


SCENARIOS: dict[str, Callable[..., None]] = {"batches": write_batches, "compact": compact, "import": import_file}


# --------------------------------------------------------------------------- the test's side


@dataclass
class Child:
    """A scenario running in its own process, and the files it reports through."""

    workdir: Path
    process: subprocess.Popen[bytes]
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.workdir / "stderr"

    def wait_for(self, marker: str, *, timeout: float = 90.0, lines: int = 1) -> str:
        """Block until the child wrote `marker` (with at least `lines` lines); fail if it died first."""
        path = self.workdir / marker
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.exists():
                content = path.read_text()
                if content.count("\n") >= lines or (lines == 1 and content):
                    return content
            if self.process.poll() is not None:
                raise AssertionError(f"the child ended ({self.process.returncode}) before {marker!r}:\n"
                                     f"{self.log.read_text()[-3000:]}")
            time.sleep(0.01)
        self.kill()
        raise AssertionError(f"no {marker!r} from the child within {timeout}s:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def killed(self) -> None:
        """Kill it and check it was the kill that ended it (not an error of its own)."""
        self.kill()
        assert self.process.returncode == -signal.SIGKILL, self.log.read_text()[-3000:]

    def finish(self, timeout: float = 120.0) -> None:
        """Wait for it to end by itself, successfully."""
        self.process.wait(timeout)
        assert self.process.returncode == 0, self.log.read_text()[-3000:]


def start(scenario: str, url: str, workdir: Path, *args: object) -> Child:
    """Run `scenario` in a new interpreter (the one running the tests), from the worktree."""
    workdir.mkdir(parents=True, exist_ok=True)
    stderr = (workdir / "stderr").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "tests.crashing", scenario, url, str(workdir),
                                *map(str, args)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    stderr.close()
    return Child(workdir, process)


def start_compaction(url: str, workdir: Path, session_id: str, policy: ss.CompactionPolicy, delay: float) -> Child:
    """`compact` in a child, with `policy` and a summariser that sleeps `delay` seconds."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / POLICY).write_bytes(pickle.dumps(policy))
    return start("compact", url, workdir, session_id, delay)


if __name__ == "__main__":
    name, url, workdir, *rest = sys.argv[1:]
    SCENARIOS[name](url, Path(workdir), *rest)
