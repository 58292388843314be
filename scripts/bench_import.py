"""Import speed against the disk: a corpus of every format imported by `import_path` (what
`sessionstore import` and `watch`'s catch-up on a new folder both run), against a line loader
in the same run, on SQLite and on a throwaway durable PostgreSQL.

    python scripts/bench_import.py                 # SQLite and PostgreSQL, 3 rounds each
    python scripts/bench_import.py --quick         # SQLite only, 2 rounds, no grown file
    python scripts/bench_import.py --no-postgres --rounds 5

The corpus: the shared transcripts (``$SESSIONSTORE_TRANSCRIPTS`` or ``../shared/transcripts``)
and the recordings shipped with the tests (``tests/fixtures/transcripts``, every other format).
Its bytes are those of the files a format is read from (``.jsonl``, ``.json``, ``.traj``,
``.md``, ``.db``).

The loader is the physical limit an import is priced against: each file read, each line parsed
with ``json.loads`` (a JSON document whole), and every line inserted into one table in one
transaction — SQLite with the store's pragmas (WAL, synchronous NORMAL) and ``executemany``;
PostgreSQL with psycopg's COPY. Ours and the loader alternate (loader, ours, loader, ours …),
each into a fresh database; the figure is ours ÷ the loader's MB/s per round, with the load
average beside it (the machine is shared). The goal (issue 39): ≥ 0.2× the loader on both.

The process runs with the garbage collector's thresholds `sessionstore import` sets for itself
(`sessionstore.cli.app.GC_THRESHOLDS`), the loader's rounds as ours; ``--gc default`` keeps
Python's (700, 10, 10), as a library caller's process that leaves them alone would.

Without --quick it then times ``pi/before-compaction.jsonl`` (2.4 MB) alone into a fresh
store against its 2 s target, and what `watch` pays for a file that grows: a Claude Code
session written in `GROWN_STEPS` parts, each imported as it arrives, against one import of the
finished file, checking that both stores hold the same.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import FIXTURES, TRANSCRIPTS, Make, missing_transcripts, postgres_stores, quiet, sqlite_stores  # noqa: E402

from sessionstore.cli.app import GC_THRESHOLDS  # noqa: E402
from sessionstore.importers import import_file, import_path  # noqa: E402
from sessionstore.tokens import default_counter  # noqa: E402

GOAL = 0.2
SUFFIXES = (".jsonl", ".json", ".traj", ".md", ".db")
DOCUMENTS = (".json", ".traj")
TARGET_FILE = Path("pi") / "before-compaction.jsonl"
TARGET_SECONDS = 2.0
GROWN_FILE = Path("claude-code") / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
GROWN_STEPS = 50


def corpus_files(roots: Sequence[Path]) -> list[Path]:
    return sorted(f for root in roots for f in root.rglob("*") if f.is_file() and f.suffix in SUFFIXES)


def loader_rows(files: Sequence[Path]) -> list[tuple[str]]:
    """Each line of each file parsed with `json.loads` (a JSON document whole), as a row to insert."""
    rows: list[tuple[str]] = []
    for f in files:
        data = f.read_bytes()
        if f.suffix in DOCUMENTS:
            _parsed(data)
            rows.append((data.decode("utf-8", "replace"),))
            continue
        for line in data.splitlines():
            if line.strip():
                _parsed(line)
                rows.append((line.decode("utf-8", "replace"),))
    return rows


def _parsed(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:  # a Markdown line, a database page: read, not parsed
        return None


def sqlite_loader(folder: Path, files: Sequence[Path], name: str) -> tuple[float, float]:
    """Seconds (wall, this process's CPU) for the loader into a fresh SQLite file (WAL, synchronous
    NORMAL), one transaction."""
    conn = sqlite3.connect(folder / f"{name}.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE lines (id INTEGER PRIMARY KEY, line TEXT NOT NULL)")
    started, cpu = time.perf_counter(), time.process_time()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO lines (line) VALUES (?)", loader_rows(files))
    conn.execute("COMMIT")
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    conn.close()
    return seconds, cpu


def postgres_loader(cluster: Any, files: Sequence[Path], name: str) -> tuple[float, float]:
    """Seconds (wall, this process's CPU) for the loader into a fresh PostgreSQL database: COPY
    into one table, one transaction."""
    import psycopg

    cluster.create_database(name)
    with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname=name) as conn:
        conn.execute("CREATE TABLE lines (id bigserial PRIMARY KEY, line text NOT NULL)")
        conn.commit()
        started, cpu = time.perf_counter(), time.process_time()
        with conn.cursor() as cur, cur.copy("COPY lines (line) FROM STDIN") as copy:
            for row in loader_rows(files):
                copy.write_row((row[0].replace("\x00", "\ufffd"),))  # text columns hold no NUL
        conn.commit()
        return time.perf_counter() - started, time.process_time() - cpu


def ours(make: Make, roots: Sequence[Path], name: str) -> tuple[float, float, int, int]:
    """Seconds (wall, this process's CPU), events added and failures of `import_path` over the
    corpus into a fresh store."""
    store = make(name)
    started, cpu = time.perf_counter(), time.process_time()
    report = import_path(store, *roots)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    store.close()
    return seconds, cpu, report.events_added, len(report.failures)


def compare(label: str, make: Make, load: Callable[[str], tuple[float, float]], roots: Sequence[Path], megabytes: float,
            rounds: int) -> bool:
    """Alternate the loader and ours `rounds` times; print each round and the median ratio against
    `GOAL`. Beside the wall-clock ratio (the goal's), the ratio of this process's CPU seconds, which
    a loaded machine disturbs less (PostgreSQL's server work is not in it)."""
    print(f"\n== {label}: {megabytes:.1f} MB ==")
    print(f"{'round':>5} {'loader MB/s':>12} {'ours MB/s':>10} {'events/s':>9} {'ours s':>7} {'ratio':>7} "
          f"{'CPU s: loader':>14} {'ours':>6} {'ratio':>7} {'load':>5}")
    ratios, cpu_ratios = [], []
    for n in range(1, rounds + 1):
        base, base_cpu = load(f"loader_{n}")
        seconds, cpu, events, failures = ours(make, roots, f"ours_{n}")
        ratios.append(base / seconds)
        cpu_ratios.append(base_cpu / cpu)
        print(f"{n:>5} {megabytes / base:>12.1f} {megabytes / seconds:>10.2f} {events / seconds:>9.0f} "
              f"{seconds:>7.2f} {ratios[-1]:>6.3f}x {base_cpu:>14.2f} {cpu:>6.2f} {cpu_ratios[-1]:>6.3f}x "
              f"{os.getloadavg()[0]:>5.1f}")
    median = statistics.median(ratios)
    met = median >= GOAL
    print(f"{label}: ours {median:.3f}x the loader (median of {rounds}; CPU {statistics.median(cpu_ratios):.3f}x; "
          f"{events:,} events, {failures} failure(s) reported by the import), goal >= {GOAL}x: "
          f"{'met' if met else 'MISSED'}")
    return met


def target(make: Make, path: Path) -> bool:
    """The one file into a fresh store (parse, token counting, appends) against `TARGET_SECONDS`."""
    fresh = make("target")
    started = time.perf_counter()
    result = import_file(fresh, path)
    seconds = time.perf_counter() - started
    fresh.close()
    ok = seconds < TARGET_SECONDS
    print(f"{TARGET_FILE} ({path.stat().st_size / 1e6:.1f} MB, {result.events_added} events): {seconds:.3f} s, "
          f"target < {TARGET_SECONDS:.0f} s: {'met' if ok else 'MISSED'}")
    return ok


def grown(make: Make, source: Path) -> bool:
    """A file imported as it grows (`watch`) against one import of it finished: seconds, the
    ratio, and whether the two stores hold the same events (ids, meta, times) and metadata."""
    lines = source.read_bytes().splitlines(keepends=True)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / source.name
        live = make("grown")
        started = time.perf_counter()
        for step in range(1, GROWN_STEPS + 1):
            path.write_bytes(b"".join(lines[:len(lines) * step // GROWN_STEPS]))
            import_file(live, path)
        grown_seconds = time.perf_counter() - started
        once = make("once")
        started = time.perf_counter()
        result = import_file(once, path)
        once_seconds = time.perf_counter() - started
        sid = result.session_id
        same = (live.session(sid).metadata == once.session(sid).metadata and
                [(e.event_id, e.meta, e.created_at) for e in live.events(sid)] ==
                [(e.event_id, e.meta, e.created_at) for e in once.events(sid)])
        live.close()
        once.close()
    print(f"{GROWN_FILE} ({len(lines)} lines, {result.events_added} events) imported in {GROWN_STEPS} parts as it "
          f"grows: {grown_seconds:.3f} s, once finished: {once_seconds:.3f} s ({grown_seconds / once_seconds:.1f}x); "
          f"the same store: {'yes' if same else 'NO'}")
    return same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="SQLite only, 2 rounds, no grown file")
    parser.add_argument("--rounds", type=int, default=None, help="loader/ours pairs per backend (default 3)")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS)
    parser.add_argument("--gc", choices=["cli", "default"], default="cli",
                        help="the collector's thresholds: the CLI's (default) or Python's")
    args = parser.parse_args(argv)
    quiet()
    if args.gc == "cli":
        gc.set_threshold(*GC_THRESHOLDS)
    if missing_transcripts(args.transcripts):
        return 2
    rounds = args.rounds or (2 if args.quick else 3)
    roots = [args.transcripts, FIXTURES]
    files = corpus_files(roots)
    megabytes = sum(f.stat().st_size for f in files) / 1e6
    default_counter()  # tiktoken's vocabulary, loaded once per process, outside the timings
    print(f"corpus: {len(files)} files, {megabytes:.1f} MB ({', '.join(str(r) for r in roots)})")
    print(f"garbage collector thresholds {gc.get_threshold()} "
          f"({'as `sessionstore import` runs' if args.gc == 'cli' else 'Python’s default'}), both sides")
    met = True
    with sqlite_stores() as (make, folder):
        met = compare("sqlite", make, lambda name: sqlite_loader(folder, files, name), roots, megabytes,
                      rounds) and met
        same = args.quick or (target(make, args.transcripts / TARGET_FILE) &
                              grown(make, args.transcripts / GROWN_FILE))
    if not (args.quick or args.no_postgres):
        with postgres_stores() as (make, cluster):
            met = compare("postgresql (durable)", make, lambda name: postgres_loader(cluster, files, name), roots,
                          megabytes, rounds) and met
    return 0 if met and same else 1


if __name__ == "__main__":
    sys.exit(main())
