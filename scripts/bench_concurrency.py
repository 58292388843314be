"""Benchmark: P writer processes, each appending to its own session, against raw driver inserts.

    .venv/bin/python scripts/bench_concurrency.py                    # PostgreSQL and SQLite, ~1 min
    .venv/bin/python scripts/bench_concurrency.py --seconds 10 --repeat 3
    .venv/bin/python scripts/bench_concurrency.py --backend postgresql --writers 1 8

For each P (1, 2, 4, 8 by default) P processes start together; each appends single events
(`SessionStore.append`, one statement and one commit each) to a session of its own for
`--seconds`, and the events/s of all of them together is compared with the same P processes
inserting the same rows with the bare driver into a plain clone of the events table
(`benchlib.PLAIN_TABLE`: no session gate, no chain, no foreign key), measured in the same run,
raw and store alternating so that both see the same machine.

Durable settings on both: PostgreSQL with its defaults (fsync on, synchronous_commit on), on a
throwaway cluster (`sessionstore.testing.PostgresCluster(durable=True)`); SQLite in WAL mode
with ``synchronous=FULL`` (a commit survives power loss; the store's default is NORMAL: a
commit survives a crash of the application), which `--synchronous` changes for both sides.

Goals (issues 9 and 30): ≥ 0.6× raw at P = 8 (fsync on and off) and ≥ 0.8× raw at P = 1 on PostgreSQL. SQLite has one
writer at a time whatever P is: its rows are there to show that it does not collapse.
Figures are the best of `--repeat` runs; the machine is shared, and final figures are taken on
a quiet one.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import RAW_INSERT, create_plain_table, message, print_table, quiet, raw_row  # noqa: E402

import sessionstore as ss  # noqa: E402
from sessionstore.tokens import TokenCounter, default_counter  # noqa: E402

GOALS = {1: 0.8, 8: 0.6}  # PostgreSQL: P → the least ratio to raw
# Loaded once in the parent: forked writers share it instead of each loading tiktoken's tables.
_COUNTER: TokenCounter | None = None


# --------------------------------------------------------------------------- one writer process


def store_writer(url: str, synchronous: str, ready: Any, go: Any, seconds: float, out: Any) -> None:
    """One writer process: a session of its own, then single-event appends until the deadline."""
    store = ss.SessionStore(url, sqlite_synchronous=synchronous, token_counter=_COUNTER)
    sid = store.create_session()
    store.append(sid, ss.user("warm up"))  # connects, compiles the one-row append
    _race(lambda i: store.append(sid, ss.user(message(i))), ready, go, seconds, out)
    store.close()


def _raw_writer(url: str, synchronous: str, ready: Any, go: Any, seconds: float, out: Any) -> None:
    """The same rows with the bare driver: one autocommit INSERT each, like one append."""
    store = ss.SessionStore(url)
    sid = store.create_session()  # the rows' session_id, as the store's rows have
    store.close()
    if url.startswith("sqlite"):
        db: Any = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        db.execute("PRAGMA busy_timeout = 30000")
        db.execute(f"PRAGMA synchronous = {synchronous}")
        insert = RAW_INSERT.format("?")
    else:
        import psycopg

        db = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)
        insert = RAW_INSERT.format("%s")
    db.execute(insert, raw_row(1, sid))
    _race(lambda i: db.execute(insert, raw_row(i + 2, sid)), ready, go, seconds, out)
    db.close()


def _race(append: Callable[[int], Any], ready: Any, go: Any, seconds: float, out: Any) -> None:
    """Wait for every writer, then append until the deadline; report (events, started, ended)."""
    ready.wait()
    go.wait()
    started = time.perf_counter()
    deadline = started + seconds
    done = 0
    while time.perf_counter() < deadline:
        append(done)
        done += 1
    out.put((done, started, time.perf_counter()))


def events_per_second(writer: Callable[..., None], url: str, synchronous: str, processes: int,
                      seconds: float) -> float:
    """`processes` forked writers started together; all their events over the longest one's time."""
    context = mp.get_context("fork")
    ready, go, out = context.Barrier(processes + 1), context.Event(), context.Queue()
    workers = [context.Process(target=writer, args=(url, synchronous, ready, go, seconds, out))
               for _ in range(processes)]
    for worker in workers:
        worker.start()
    ready.wait()
    go.set()
    results = [out.get(timeout=seconds + 120) for _ in workers]
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            raise RuntimeError(f"a writer failed (exit code {worker.exitcode})")
    started = min(r[1] for r in results)
    ended = max(r[2] for r in results)
    return sum(r[0] for r in results) / (ended - started)


# --------------------------------------------------------------------------- databases


@contextmanager
def postgres_database(fsync: bool) -> Iterator[str]:
    """A throwaway cluster: durable (fsync and synchronous_commit on, PostgreSQL's defaults), or
    not (fsync, synchronous_commit and full_page_writes off: the CPU per append alone)."""
    from sessionstore.testing import PostgresCluster

    with PostgresCluster(durable=fsync) as cluster:
        yield _migrated(cluster.create_database("concurrency"))


@contextmanager
def sqlite_database(folder: Path) -> Iterator[str]:
    yield _migrated(f"sqlite:///{folder / 'concurrency.db'}")


def _migrated(url: str) -> str:
    store = ss.SessionStore(url)
    store.migrate()
    create_plain_table(store.engine)
    store.close()
    return url


def measure(url: str, synchronous: str, writers: list[int], seconds: float, repeat: int) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for p in writers:
        raw = store = 0.0
        for _ in range(repeat):  # alternate, so that a noisy moment does not favour one side
            raw = max(raw, events_per_second(_raw_writer, url, synchronous, p, seconds))
            store = max(store, events_per_second(store_writer, url, synchronous, p, seconds))
        rows.append([p, store, raw, store / raw])
    return rows


def report(title: str, rows: list[list[Any]], goals: dict[int, float]) -> None:
    print(f"\n{title}; load {os.getloadavg()[0]:.1f}")
    table = []
    for p, store, raw, ratio in rows:
        goal = goals.get(p)
        verdict = "" if goal is None else f"goal ≥ {goal:.1f}×: {'met' if ratio >= goal else 'MISSED'}"
        table.append([p, store, raw, f"{ratio:.2f}×", verdict])
    print_table(["writers", "sessionstore events/s", "raw events/s", "ratio", ""], table)


def main() -> int:
    global _COUNTER
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["postgresql", "sqlite", "both"], default="both")
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 2, 4, 8], help="values of P (default 1 2 4 8)")
    parser.add_argument("--seconds", type=float, default=2.0, help="each measurement's length (default 2)")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs (default 1)")
    parser.add_argument("--fsync", default="both", choices=["on", "off", "both"],
                        help="PostgreSQL: durable commits, or the CPU per append alone (default both: issue 30)")
    parser.add_argument("--synchronous", default="FULL", choices=["NORMAL", "FULL", "EXTRA"],
                        help="SQLite durability for both sides (default FULL)")
    args = parser.parse_args()
    quiet()
    _COUNTER = default_counter()
    _COUNTER.count("warm up")
    print(f"{args.seconds:g} s per measurement, best of {args.repeat}; each writer appends single ~200-byte "
          f"messages to its own session")
    if args.backend in ("postgresql", "both"):
        for fsync in {"on": (True,), "off": (False,), "both": (True, False)}[args.fsync]:
            with postgres_database(fsync) as url:
                rows = measure(url, args.synchronous, args.writers, args.seconds, args.repeat)
            report("PostgreSQL, loopback, " + ("fsync on, synchronous_commit on" if fsync else
                                               "fsync, synchronous_commit and full_page_writes off"), rows, GOALS)
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="sessionstore-bench-") as folder, \
                sqlite_database(Path(folder)) as url:
            rows = measure(url, args.synchronous, args.writers, args.seconds, args.repeat)
        report(f"SQLite, file, WAL, synchronous={args.synchronous} (one writer at a time)", rows, {})
    return 0


if __name__ == "__main__":
    sys.exit(main())
