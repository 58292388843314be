"""Benchmark: sessions found by what they are (`SessionStore.sessions(where=…, since=…, limit=…,
after=…)`) at 100,000 and 1,000,000 sessions, on SQLite (file, WAL) and PostgreSQL.

    .venv/bin/python scripts/bench_sessions.py                     # 100k and 1M, both backends
    .venv/bin/python scripts/bench_sessions.py --sizes 100000 --no-postgres

The sessions are built with bulk SQL, not `create_session` (a million of those would take the
run's whole time): rows of the shape `create_session` writes, inserted with one `executemany` in
one transaction on SQLite and one COPY on PostgreSQL, the listing's indexes built after the load
(as a bulk load does). Their metadata has the shapes the store really holds:

- 60 % an application's sessions: ``{"user": "u123", "app": "support", "model": …, "title": …}``;
- 20 % ADK's: ``{"adk": {"app_name": "support", "user_id": "u123", "session_id": …}}``;
- 20 % imported transcripts: ``{"source": "claude-code"|"codex"|"pi", "source_path": …, "cwd": …,
  "started_at": …, "model": …, "first_prompt": …}``;

one user per 100 sessions, starts spread over a year. The listing reads no event, so none is
written. PostgreSQL is ANALYZEd after the load (what autovacuum does within minutes); SQLite is
not (the store never runs ANALYZE: its plans must hold without statistics).

Measured through the store's API, warm, median and 95th percentile of many different users:
one user's newest 50 (goal ≤ 10 ms on both backends), ADK's app+user, an agent's, a project's,
the last 30 days', and a page deep in a walk; then a walk of one user's every page (10 a page)
and of the whole store's newest 20,000 (1,000 a page). The baseline, in the same run: what a
caller did before (every session read, filtered in Python), once. The plan of a user's newest 50
is printed for each backend.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import postgres_stores, print_table, quiet, sqlite_stores  # noqa: E402

from sessionstore import SessionStore  # noqa: E402
from sessionstore.finding import session_query  # noqa: E402
from sessionstore.storage.listing import indexes, listing_params  # noqa: E402
from sessionstore.events import encode_json  # noqa: E402
from sessionstore.storage.statements import Statements  # noqa: E402

GOAL_MS = 10.0
PER_USER = 100
SAMPLES = 200
NOW = datetime.now(timezone.utc)
AGENTS = ("claude-code", "codex", "pi")
MODELS = ("claude-sonnet-4-5", "gpt-5-codex", "gemini-2.5-pro")
_COLUMNS = ("id", "created_at", "metadata", "head", "head_link", "started_at", "last_event_at")


def rows(n: int, seed: int = 7) -> list[tuple[Any, ...]]:
    """`n` session rows (`_COLUMNS`), each with one of the metadata shapes the store holds."""
    rnd = random.Random(seed)
    users = max(1, n // PER_USER)
    made = []
    for i in range(n):
        started = NOW - timedelta(seconds=rnd.uniform(60, 365 * 86400))
        last = min(NOW, started + timedelta(minutes=rnd.uniform(1, 240)))
        user = f"u{rnd.randrange(users)}"
        kind = rnd.random()
        if kind < 0.6:
            meta: dict[str, Any] = {"user": user, "app": "support", "model": rnd.choice(MODELS),
                                    "title": f"ticket {i}: the invoice export fails"}
        elif kind < 0.8:
            meta = {"adk": {"app_name": "support", "user_id": user, "session_id": f"s{i}"}}
        else:
            agent = rnd.choice(AGENTS)
            meta = {"source": agent, "source_path": f"/home/dev/.{agent}/sessions/{i}.jsonl",
                    "cwd": f"/home/dev/src/project-{rnd.randrange(200)}", "started_at": started.isoformat(),
                    "model": rnd.choice(MODELS), "first_prompt": "fix the failing test in the parser"}
        made.append((f"{i:08x}-bench", NOW, json.dumps(meta), rnd.randrange(1, 400), "0" * 64, started, last))
    return made


def load(store: SessionStore, made: list[tuple[Any, ...]]) -> float:
    """Bulk-insert `made` with the listing's indexes dropped, then build them: seconds."""
    started = time.perf_counter()
    postgres = store.backend == "postgresql"
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        for name, _ in indexes(postgres):
            cursor.execute(f"DROP INDEX {name}")
        if postgres:
            with cursor.copy(f"COPY sessions ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
                for row in made:
                    copy.write_row(row)
        else:
            text = "%Y-%m-%d %H:%M:%S.%f"
            cursor.executemany(f"INSERT INTO sessions ({', '.join(_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                               [(r[0], r[1].strftime(text), r[2], r[3], r[4], r[5].strftime(text), r[6].strftime(text))
                                for r in made])
        for name, columns in indexes(postgres):
            cursor.execute(f"CREATE INDEX {name} ON sessions ({', '.join(columns)})")
        raw.commit()
        # settled: statistics, the visibility map and a checkpoint (what a server has some minutes on)
        if postgres:
            raw.driver_connection.autocommit = True
            cursor.execute("VACUUM ANALYZE sessions")
            cursor.execute("CHECKPOINT")
        else:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        raw.close()
    return time.perf_counter() - started


def ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def spread(fn: Callable[[int], Any], samples: int = SAMPLES) -> tuple[float, float, float]:
    """Best, median and 95th percentile (ms) of `fn(k)` for `samples` different k, after a warm-up
    (the best is the call the shared machine did not disturb)."""
    for k in range(5):
        fn(k)
    times = sorted(ms(lambda k=k: fn(k)) for k in range(samples))
    return times[0], statistics.median(times), times[int(len(times) * 0.95) - 1]


def plan(store: SessionStore, query: dict[str, Any]) -> str:
    sql = Statements(store.engine.dialect)
    planned = session_query(**query)
    params = listing_params(planned, sql.postgres, sql.bind_time, encode_json, 50)
    with store.engine.connect() as conn:
        if sql.postgres:
            found = conn.exec_driver_sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) "
                                         + sql.listing(planned.shape).sql, params)
            return "\n".join("    " + r[0] for r in found)
        found = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql.listing(planned.shape).sql, params)
        return "\n".join("    " + str(r[-1]) for r in found)


def measure(store: SessionStore, n: int, label: str) -> None:
    made = rows(n)
    seconds = load(store, made)
    users = max(1, n // PER_USER)
    print(f"\n{label}: {n:,} sessions, {users:,} users (bulk SQL load, index build, settling: {seconds:.1f} s)")
    results: list[list[Any]] = []

    def row(name: str, fn: Callable[[int], Any], goal: bool = False) -> None:
        best, median, p95 = spread(fn)
        verdict = ("met" if median <= GOAL_MS else "MISSED") if goal else ""
        results.append([name, f"{best:.2f}", f"{median:.2f}", f"{p95:.2f}",
                        f"median ≤ {GOAL_MS:.0f} ms: {verdict}" if goal else ""])

    row("one user's newest 50", lambda k: store.sessions(where={"user": f"u{(k * 7919) % users}"}, limit=50), True)
    row("ADK app + user, newest 50", lambda k: store.sessions(
        where={"adk.app_name": "support", "adk.user_id": f"u{(k * 7919) % users}"}, limit=50))
    row("an agent's newest 50", lambda k: store.sessions(agent=AGENTS[k % 3], limit=50))
    row("a project's newest 50", lambda k: store.sessions(project=f"/home/dev/src/project-{k % 200}", limit=50))
    row("last 30 days, newest 50", lambda k: store.sessions(since=NOW - timedelta(days=30 + k % 7), limit=50))
    row("one user, ended 90+ days ago, 50", lambda k: store.sessions(
        where={"user": f"u{(k * 7919) % users}"}, until=NOW - timedelta(days=90), limit=50))
    deep = sorted(made, key=lambda r: (r[5], r[0]), reverse=True)
    from sessionstore.finding import encode_cursor
    row("a page of 50, deep in the walk", lambda k: store.sessions(
        limit=50, after=encode_cursor(deep[(k * 4099) % (n - 50)][5], deep[(k * 4099) % (n - 50)][0])))
    print_table(["query (through the API, warm)", "best ms", "median ms", "p95 ms", "goal"], results)

    def walk(limit: int, most: int | None = None, **query: Any) -> tuple[int, int]:
        seen, pages, cursor = 0, 0, None
        while True:
            page = store.sessions(limit=limit, after=cursor, **query)
            seen += len(page)
            pages += 1
            cursor = page.cursor
            if cursor is None or (most is not None and seen >= most):
                return seen, pages
    user = f"u{users // 2}"
    started = time.perf_counter()
    seen, pages = walk(10, where={"user": user})
    user_walk = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    every, big_pages = walk(1000, most=20_000)
    store_walk = (time.perf_counter() - started) * 1000
    expected = sum(1 for r in made if json.loads(r[2]).get("user") == user)
    started = time.perf_counter()
    before = [i for i in store.sessions() if i.metadata.get("user") == user]
    baseline = (time.perf_counter() - started) * 1000
    print_table(["walk", "sessions", "pages", "ms", "ms a page"], [
        [f"one user's every page (10 a page; {expected} in the store)", seen, pages, f"{user_walk:.1f}",
         f"{user_walk / pages:.2f}"],
        ["the store's newest 20,000 (1,000 a page)", every, big_pages, f"{store_walk:.0f}",
         f"{store_walk / big_pages:.1f}"],
        [f"baseline: every session read, one user's filtered in Python ({len(before)})", n, 1, f"{baseline:.0f}",
         f"{baseline / max(user_walk, 0.001):.0f}× the user's walk"]])
    print(f"  plan of one user's newest 50:\n{plan(store, {'where': {'user': user}, 'limit': 50})}")


def run(make: Callable[[str], SessionStore], n: int, label: str) -> None:
    store = make(f"s{n}")
    try:
        measure(store, n, label)
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="session counts, comma-separated")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    quiet()
    for n in sizes:
        if not args.no_sqlite:
            with sqlite_stores() as (make, _):
                run(make, n, "SQLite (file, WAL)")
        if not args.no_postgres:
            with postgres_stores() as (make, _):
                run(make, n, "PostgreSQL 15 (loopback)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
