"""What the benchmarks share: where the transcripts are, fresh stores on each backend, timing, tables.

Benchmarks print figures; they never assert on time (tests never time anything either).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import structlog

from sessionstore import SessionStore

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(os.environ.get("SESSIONSTORE_TRANSCRIPTS", ROOT.parent / "shared" / "transcripts"))
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


def main_on_backends(measure: Callable[[Make, str], None], description: str) -> int:
    """A benchmark's command line: `measure` on SQLite, then on PostgreSQL unless --no-postgres."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    quiet()
    with sqlite_stores() as (make, _):
        measure(make, "SQLite (file, WAL)")
    if not args.no_postgres:
        with postgres_stores() as (make, _):
            measure(make, "PostgreSQL 15 (loopback)")
    return 0
