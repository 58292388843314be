"""Benchmark: appends per second on SQLite (file, WAL) and PostgreSQL, against the physical limit and peers.

    .venv/bin/python scripts/bench_append.py                       # SQLite + PostgreSQL
    .venv/bin/python scripts/bench_append.py --synchronous FULL    # SQLite durability setting
    .venv/bin/python scripts/bench_append.py --no-postgres

Measures, in one run:
- tiktoken counting rate (short messages/s): every append counts its event's tokens;
- single-event appends (one transaction each, token counting included) and batched appends
  (1,000 events a batch) through `SessionStore.append`, and the same through `AsyncSessionStore`;
- the physical limit: a raw `sqlite3` loop (or raw psycopg) inserting the same rows into a plain
  clone of the events table (`benchlib.PLAIN_TABLE`: no gate, no chain) with the same durability
  setting, one transaction each and in batches of 1,000;
- peers, when installed (``pip install -e '.[bench]'``): the OpenAI Agents SDK's SQLiteSession
  and the eventsourcing library's SQLite recorder, single appends of the same messages.
Targets (SQLite): single ≥ 0.5× the raw loop, batched ≥ 0.5× the raw batched loop; the async door
≥ 0.8× the blocking one on both backends. Every figure is the
best of three runs (the machine is shared and noisy; ratios compare best cases).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (RAW_INSERT, Make, create_plain_table, message, postgres_stores, print_table, quiet,  # noqa: E402
                      raw_row, sqlite_stores, timed)

import sessionstore as ss  # noqa: E402
from sessionstore.tokens import TiktokenCounter  # noqa: E402

SINGLE = 4000
BATCH = 1000
BATCHES = 20
REPEAT = 3


# --------------------------------------------------------------------------- sessionstore


def best(measure: Callable[[int], tuple[float, float]]) -> tuple[float, float]:
    runs = [measure(n) for n in range(REPEAT)]
    return max(r[0] for r in runs), max(r[1] for r in runs)


def store_rates(make: Make, name: str) -> tuple[float, float]:
    store = make(name)
    try:
        sid = store.create_session()
        store.append(sid, ss.user("warm up"))
        single = SINGLE / timed(lambda: [store.append(sid, ss.user(message(i))) for i in range(SINGLE)])
        batches = [[ss.user(message(b * BATCH + i)) for i in range(BATCH)] for b in range(BATCHES)]
        batched = BATCH * BATCHES / timed(lambda: [store.append(sid, batch) for batch in batches])
        return single, batched
    finally:
        store.close()


def async_rates(make: Make, name: str, synchronous: str = "NORMAL") -> tuple[float, float]:
    """The same appends through `AsyncSessionStore` (the same drivers, on the store's threads)."""
    setup = make(name)
    url = setup.url
    setup.close()

    async def run() -> tuple[float, float]:
        async with ss.AsyncSessionStore(url, sqlite_synchronous=synchronous) as store:
            sid = await store.create_session()
            await store.append(sid, ss.user("warm up"))
            started = time.perf_counter()
            for i in range(SINGLE):
                await store.append(sid, ss.user(message(i)))
            single = SINGLE / (time.perf_counter() - started)
            batches = [[ss.user(message(b * BATCH + i)) for i in range(BATCH)] for b in range(BATCHES)]
            started = time.perf_counter()
            for batch in batches:
                await store.append(sid, batch)
            return single, BATCH * BATCHES / (time.perf_counter() - started)

    return asyncio.run(run())


# --------------------------------------------------------------------------- the physical limit


def raw_sqlite_rates(folder: Path, synchronous: str, n: int) -> tuple[float, float]:
    path = folder / f"raw{n}.db"
    store = ss.SessionStore(f"sqlite:///{path}")
    store.migrate()
    sid = store.create_session()
    create_plain_table(store.engine)
    store.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    insert = RAW_INSERT.format("?")
    rows = [raw_row(i, sid) for i in range(1, SINGLE + 1)]

    def single() -> None:
        for row in rows:
            db.execute("BEGIN")
            db.execute(insert, row)
            db.execute("COMMIT")

    single_rate = SINGLE / timed(single)
    batches = [[raw_row(SINGLE + b * BATCH + i, sid) for i in range(1, BATCH + 1)] for b in range(BATCHES)]

    def batched() -> None:
        for batch in batches:
            db.execute("BEGIN")
            db.executemany(insert, batch)
            db.execute("COMMIT")

    batched_rate = BATCH * BATCHES / timed(batched)
    db.close()
    return single_rate, batched_rate


def raw_postgres_rates(make: Make, n: int) -> tuple[float, float]:
    import psycopg

    store = make(f"raw{n}")
    sid = store.create_session()
    create_plain_table(store.engine)
    url = store.engine.url
    store.close()
    insert = RAW_INSERT.format("%s")
    with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database) as conn:
        rows = [raw_row(i, sid) for i in range(1, SINGLE // 2 + 1)]

        def single() -> None:
            for row in rows:
                conn.execute(insert, row)
                conn.commit()

        single_rate = len(rows) / timed(single)
        batches = [[raw_row(SINGLE + b * BATCH + i, sid) for i in range(1, BATCH + 1)] for b in range(BATCHES)]

        def batched() -> None:
            with conn.cursor() as cursor:
                for batch in batches:
                    cursor.executemany(insert, batch)
                    conn.commit()

        batched_rate = BATCH * BATCHES / timed(batched)
    return single_rate, batched_rate


# --------------------------------------------------------------------------- peers


def peer_rates(folder: Path) -> dict[str, float | str]:
    rates: dict[str, float | str] = {}
    try:
        from agents import SQLiteSession

        session = SQLiteSession("bench", str(folder / "openai-agents.db"))

        async def add_all() -> None:
            for i in range(SINGLE):
                await session.add_items([{"role": "user", "content": message(i)}])

        rates["OpenAI Agents SQLiteSession"] = SINGLE / min(timed(lambda: asyncio.run(add_all()))
                                                             for _ in range(REPEAT))
    except ImportError:
        rates["OpenAI Agents SQLiteSession"] = "not installed (pip install -e '.[bench]')"
    try:
        from eventsourcing.persistence import StoredEvent
        from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteDatastore

        recorder = SQLiteAggregateRecorder(SQLiteDatastore(str(folder / "eventsourcing.db")))
        recorder.create_table()

        def insert_all() -> None:
            originator = uuid.uuid4()
            for i in range(1, SINGLE + 1):
                recorder.insert_events([StoredEvent(originator, i, "bench:Message", message(i).encode())])

        rates["eventsourcing SQLite recorder"] = SINGLE / min(timed(insert_all) for _ in range(REPEAT))
    except ImportError:
        rates["eventsourcing SQLite recorder"] = "not installed (pip install -e '.[bench]')"
    return rates


# --------------------------------------------------------------------------- report


def figures(driver: str, store: tuple[float, float], door: tuple[float, float], raw: tuple[float, float],
            target: str) -> list[list[Any]]:
    """One backend's rows: (single, batched) of the blocking door against the raw loop, of the
    async door against the blocking one."""
    (single, batched), (async_single, async_batched), (raw_single, raw_batched) = store, door, raw
    return [
        ["sessionstore single appends/s", single, f"{single / raw_single:.2f}× raw", target],
        ["sessionstore batched events/s", batched, f"{batched / raw_batched:.2f}× raw", target],
        ["AsyncSessionStore single appends/s", async_single, f"{async_single / single:.2f}× sync", "target ≥ 0.8×"],
        ["AsyncSessionStore batched events/s", async_batched, f"{async_batched / batched:.2f}× sync",
         "target ≥ 0.8×"],
        [f"raw {driver} single inserts/s", raw_single, "1.00×", "the physical limit"],
        [f"raw {driver} batched inserts/s", raw_batched, "1.00×", ""],
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--synchronous", default="NORMAL", choices=["OFF", "NORMAL", "FULL", "EXTRA"],
                        help="SQLite durability for sessionstore and the raw loop (default NORMAL)")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    quiet()
    counter = TiktokenCounter()
    texts = [message(i) for i in range(50_000)]
    counter.count_many(texts[:100])
    print(f"tiktoken cl100k_base: {len(texts) / timed(lambda: counter.count_many(texts)):,.0f} messages/s counted")

    with sqlite_stores(args.synchronous) as (make, folder):
        # Best of REPEAT for every figure: this is a shared VM, and the ratios compare best cases.
        single, batched = best(lambda n: store_rates(make, f"appends{n}"))
        door = best(lambda n: async_rates(make, f"async{n}", args.synchronous))
        raw = best(lambda n: raw_sqlite_rates(folder, args.synchronous, n))
        peers = peer_rates(folder)
    print(f"\nSQLite, file, WAL, synchronous={args.synchronous}")
    rows = figures("sqlite3", (single, batched), door, raw, "target ≥ 0.5×")
    for name, rate in peers.items():
        if isinstance(rate, float):
            rows.append([f"{name} appends/s", rate, f"sessionstore {single / rate:.2f}×", "same messages"])
        else:
            rows.append([name, rate, "", ""])
    print_table(["", "rate", "ratio", "note"], rows)

    if not args.no_postgres:
        with postgres_stores() as (make, _cluster):
            store = best(lambda n: store_rates(make, f"appends{n}"))
            door = best(lambda n: async_rates(make, f"async{n}"))
            raw = best(lambda n: raw_postgres_rates(make, n))
        print("\nPostgreSQL 15, loopback, default durability (fsync on, synchronous_commit on)")
        print_table(["", "rate", "ratio", "note"], figures("psycopg", store, door, raw, ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
