"""What the benchmarks share: where the transcripts are, fresh stores on each backend, timing, tables.

Benchmarks print figures; they never assert on time (tests never time anything either).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy import Column, Engine, Index, MetaData, Table, UniqueConstraint

from sessionstore import SessionStore
from sessionstore.storage.tables import events

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(os.environ.get("SESSIONSTORE_TRANSCRIPTS", ROOT.parent / "shared" / "transcripts"))
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"  # shipped with the tests (their README)
Make = Callable[[str], SessionStore]


def quiet() -> None:
    """Library logs at WARNING only: benchmarks print their own figures."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@contextmanager
def sqlite_stores(synchronous: str = "NORMAL") -> Iterator[tuple[Make, Path]]:
    """Fresh, migrated SQLite files (WAL) in a temporary folder: ``make(name)``."""
    with tempfile.TemporaryDirectory(prefix="sessionstore-bench-") as folder:
        def make(name: str) -> SessionStore:
            store = SessionStore(f"sqlite:///{Path(folder) / (name + '.db')}", sqlite_synchronous=synchronous)
            store.migrate()
            return store
        yield make, Path(folder)


@contextmanager
def postgres_stores() -> Iterator[tuple[Make, Any]]:
    """Fresh, migrated databases on a throwaway PostgreSQL cluster with default durability."""
    from sessionstore.testing import PostgresCluster

    with PostgresCluster(durable=True) as cluster:
        def make(name: str) -> SessionStore:
            store = SessionStore(cluster.create_database(name.replace("-", "_")))
            store.migrate()
            return store
        yield make, cluster


# --------------------------------------------------------------------------- the raw baseline

# The physical limit the stores are measured against: the same rows inserted with the driver
# into a plain clone of `events` — same columns and indexes as before the chain, but no session
# gate, no foreign key, no hashes, no transaction id. What sessionstore adds on top (the gate,
# the chain, validation, token counting) is what the ratio prices.
PLAIN_TABLE = "plain_events"
_NOT_IN_PLAIN = frozenset({"content_hash", "link", "erased_at", "txid"})
RAW_COLUMNS = ("session_id", "version", "event_id", "kind", "call_id", "payload", "meta", "tokens", "created_at")
RAW_INSERT = (f"INSERT INTO {PLAIN_TABLE} ({', '.join(RAW_COLUMNS)}) "
              f"VALUES ({', '.join(['{0}'] * len(RAW_COLUMNS))})")  # .format("?") or .format("%s")


def create_plain_table(engine: Engine) -> None:
    """Create `PLAIN_TABLE` next to a migrated schema (idempotent)."""
    plain = Table(PLAIN_TABLE, MetaData(),
                  *(Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
                    for c in events.columns if c.name not in _NOT_IN_PLAIN),
                  UniqueConstraint("session_id", "version"), UniqueConstraint("event_id"),
                  Index(f"ix_{PLAIN_TABLE}_kind", "session_id", "kind", "version"),
                  Index(f"ix_{PLAIN_TABLE}_call", "session_id", "call_id"))
    plain.metadata.create_all(engine)


def message(i: int) -> str:
    """About 200 bytes, like the peers' measurements in PEERS.md."""
    return f"message {i}: " + "the quick brown fox jumps over the lazy dog " * 4


def raw_row(i: int, session: str) -> tuple[Any, ...]:
    """The values of `RAW_COLUMNS` that appending ``user(message(i))`` as version `i` stores."""
    payload = json.dumps({"role": "user", "content": [{"type": "text", "text": message(i)}]}, separators=(",", ":"))
    return (session, i, uuid.uuid4().hex, "message", None, payload, "{}", 40,
            datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f"))


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def best_of(fn: Callable[[], Any], repeat: int = 5) -> float:
    """The fastest of `repeat` runs: the least disturbed by the rest of the machine."""
    return min(timed(fn) for _ in range(repeat))


def median_of(fn: Callable[[], Any], repeat: int = 7) -> float:
    return statistics.median(timed(fn) for _ in range(repeat))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers], *[[_cell(v) for v in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def backends_parser(description: str) -> argparse.ArgumentParser:
    """The command line of a benchmark on both backends (a script adds its own options)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--no-postgres", action="store_true")
    return parser


def run_on_backends(measure: Callable[[Make, str], None], *, postgres: bool = True) -> None:
    """`measure` on SQLite, then on PostgreSQL if `postgres`."""
    quiet()
    with sqlite_stores() as (make, _):
        measure(make, "SQLite (file, WAL)")
    if postgres:
        with postgres_stores() as (make, _):
            measure(make, "PostgreSQL 15 (loopback)")


def main_on_backends(measure: Callable[[Make, str], None], description: str) -> int:
    """A benchmark's command line: `measure` on SQLite, then on PostgreSQL unless --no-postgres."""
    args = backends_parser(description).parse_args()
    run_on_backends(measure, postgres=not args.no_postgres)
    return 0


def missing_transcripts(folder: Path) -> bool:
    """True (and said on stderr) when the shared transcripts are not at `folder`."""
    if folder.is_dir():
        return False
    print(f"the shared transcripts are not at {folder} (set SESSIONSTORE_TRANSCRIPTS or --transcripts)",
          file=sys.stderr)
    return True


def main_on_transcripts(measure: Callable[[str, Make, Path], bool | None], description: str,
                        argv: list[str] | None = None) -> int:
    """A corpus benchmark's command line: `measure(label, make, folder)` on SQLite, then on a
    throwaway PostgreSQL with --postgres; exit 1 when a measure returns False."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", action="store_true", help="also run against a throwaway PostgreSQL")
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS)
    args = parser.parse_args(argv)
    quiet()
    if missing_transcripts(args.transcripts):
        return 2
    ok = True
    with sqlite_stores() as (make, _):
        ok = measure("sqlite", make, args.transcripts) is not False and ok
    if args.postgres:
        with postgres_stores() as (make, _):
            ok = measure("postgresql (durable)", make, args.transcripts) is not False and ok
    return 0 if ok else 1
