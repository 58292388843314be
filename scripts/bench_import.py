"""Benchmark: import every shared transcript into a fresh store.

    .venv/bin/python scripts/bench_import.py               # SQLite (a file in a temporary folder)
    .venv/bin/python scripts/bench_import.py --postgres    # and a throwaway, durable PostgreSQL

Prints, per file: lines, events, seconds, events/s; then the time of
``pi/before-compaction.jsonl`` (2.4 MB) alone, into a fresh store, against its 2 s target,
token counting included (cold: with tiktoken's vocabulary load; warm: without); then what
`watch` pays for a file that grows: a Claude Code session written in `GROWN_STEPS` parts, each
imported as it arrives (the whole file parsed again each time), against one import of the
finished file, and that both stores hold the same.
The transcripts are read from ``$SESSIONSTORE_TRANSCRIPTS`` or ``../shared/transcripts``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Make, main_on_transcripts  # noqa: E402

from sessionstore.importers import import_file, import_path  # noqa: E402
from sessionstore.tokens import default_counter  # noqa: E402

TARGET_FILE = Path("pi") / "before-compaction.jsonl"
TARGET_SECONDS = 2.0
GROWN_FILE = Path("claude-code") / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
GROWN_STEPS = 50


def run(backend: str, make: Make, transcripts: Path) -> bool:
    print(f"\n== {backend} ==")
    target = transcripts / TARGET_FILE
    timings = [("cold", target_time(make, target, "cold"))]
    store = make("all")
    started = time.perf_counter()
    report = import_path(store, transcripts)
    total_seconds = time.perf_counter() - started
    width = max(len(str(Path(f.path).relative_to(transcripts))) for f in report.files)
    print(f"{'file':<{width}}  {'format':<11} {'lines':>6} {'events':>7} {'seconds':>8} {'events/s':>9}")
    for f in report.files:
        rate = f.events_added / f.seconds if f.seconds else 0.0
        name = str(Path(f.path).relative_to(transcripts))
        print(f"{name:<{width}}  {f.format or '?':<11} {f.lines:>6} {f.events_added:>7} {f.seconds:>8.3f} {rate:>9.0f}")
    lines = sum(f.lines for f in report.files)
    print(f"{'total':<{width}}  {'':<11} {lines:>6} {report.events_added:>7} {total_seconds:>8.3f} "
          f"{report.events_added / total_seconds:>9.0f}")
    for issue in report.issues:
        print(f"issue: {issue}")
    store.close()

    default_counter()  # tiktoken's vocabulary is loaded by now, once per process
    timings.append(("warm", target_time(make, target, "warm")))
    ok = True
    for label, (seconds, events) in timings:
        verdict = "OK" if seconds < TARGET_SECONDS else "TOO SLOW"
        ok = ok and seconds < TARGET_SECONDS
        print(f"{TARGET_FILE} ({target.stat().st_size / 1e6:.1f} MB, {events} events, {label}): "
              f"{seconds:.3f} s, target < {TARGET_SECONDS:.0f} s: {verdict}")
    return grown(make, transcripts / GROWN_FILE) and ok


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


def target_time(make: Make, target: Path, label: str) -> tuple[float, int]:
    """Seconds to import the target file into a fresh store (parse, token counting, appends)."""
    fresh = make(f"target-{label}")
    started = time.perf_counter()
    result = import_file(fresh, target)
    seconds = time.perf_counter() - started
    fresh.close()
    return seconds, result.events_added


def main(argv: list[str] | None = None) -> int:
    return main_on_transcripts(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
