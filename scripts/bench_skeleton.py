"""Benchmark code skeletons on every code-file read recorded in the shared transcripts.

    .venv/bin/python scripts/bench_skeleton.py [--repeat N]

Prints skeletons per second overall and per language, the time for the TypeScript reads of
pi/before-compaction.jsonl (target: under 300 ms, parsers created once and reused; the
first pass includes creating them), and the token reduction (tiktoken cl100k_base).
Transcripts are read from ../shared/transcripts, or from $SESSIONSTORE_TRANSCRIPTS.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import TRANSCRIPTS, timed  # noqa: E402

from sessionstore.compaction.skeleton import Skeleton, skeleton  # noqa: E402
from sessionstore.testing.reads import Read, recorded_reads  # noqa: E402
from sessionstore.tokens import TiktokenCounter  # noqa: E402

PI_SESSION = "pi/before-compaction.jsonl"
TARGET_MS = 300.0


def code_reads(root: Path) -> list[Read]:
    """The recorded reads of files in a language the skeleton level outlines."""
    return [r for r in recorded_reads(root) if r.language is not None]


def run(reads: list[Read]) -> tuple[float, list[Skeleton | None]]:
    started = time.perf_counter()
    results = [skeleton(r.source, path=r.path, first_line=r.first_line) for r in reads]
    return time.perf_counter() - started, results


def best_of(reads: list[Read], repeat: int) -> float:
    return min(timed(lambda: run(reads)) for _ in range(repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="warm passes; the best one is reported")
    args = parser.parse_args()
    if not TRANSCRIPTS.is_dir():
        print(f"the shared transcripts are not at {TRANSCRIPTS} (set SESSIONSTORE_TRANSCRIPTS)", file=sys.stderr)
        return 2
    reads = code_reads(TRANSCRIPTS)
    pi_ts = [r for r in reads if r.origin == PI_SESSION and r.language == "typescript"]

    # The first pass over the Pi reads creates the parsers; every later call reuses them.
    cold, _ = run(pi_ts)
    warm = best_of(pi_ts, args.repeat)
    total_time, results = run(reads)
    total_best = min(total_time, best_of(reads, args.repeat))

    counter = TiktokenCounter()
    per_language: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for read, result in zip(reads, results):
        stats = per_language[read.language]
        stats["reads"] += 1
        stats["lines"] += len(read.source.splitlines())
        if result is None:
            continue
        stats["outlined"] += 1
        stats["before"] += counter.count(read.source)
        stats["after"] += counter.count(result.text)
        stats["repaired"] += result.repaired
    for language in per_language:
        subset = [r for r in reads if r.language == language]
        per_language[language]["seconds"] = best_of(subset, args.repeat)

    print(f"code-file reads in {TRANSCRIPTS}: {len(reads)} "
          f"({sum(len(r.source.splitlines()) for r in reads):,} lines)")
    print(f"\n{PI_SESSION}: {len(pi_ts)} TypeScript reads, "
          f"{sum(len(r.source.splitlines()) for r in pi_ts):,} lines")
    print(f"  first pass (creates the parsers): {cold * 1000:7.1f} ms")
    print(f"  best of {args.repeat} warm passes:        {warm * 1000:7.1f} ms   "
          f"target < {TARGET_MS:.0f} ms: {'met' if warm * 1000 < TARGET_MS else 'MISSED'}")

    print(f"\n{'language':<12}{'reads':>6}{'outlined':>9}{'repaired':>9}{'lines':>9}{'skeletons/s':>13}"
          f"{'tokens before':>15}{'after':>9}{'kept':>7}")
    totals: dict[str, float] = defaultdict(float)
    for language in sorted(per_language):
        s = per_language[language]
        for key, value in s.items():
            totals[key] += value
        kept = s["after"] / s["before"] if s["before"] else 0.0
        print(f"{language:<12}{s['reads']:>6.0f}{s['outlined']:>9.0f}{s['repaired']:>9.0f}{s['lines']:>9,.0f}"
              f"{s['reads'] / s['seconds']:>13,.0f}{s['before']:>15,.0f}{s['after']:>9,.0f}{kept:>7.1%}")
    kept = totals["after"] / totals["before"] if totals["before"] else 0.0
    print(f"{'all':<12}{totals['reads']:>6.0f}{totals['outlined']:>9.0f}{totals['repaired']:>9.0f}"
          f"{totals['lines']:>9,.0f}{totals['reads'] / total_best:>13,.0f}{totals['before']:>15,.0f}"
          f"{totals['after']:>9,.0f}{kept:>7.1%}")
    print("\n(outlined: reads that got a skeleton; the others are text-free of declarations, a body\n"
          " cut out of a function, or too broken to outline. Tokens are counted on outlined reads.)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
