"""Benchmark: how long the console script takes to start (`--version`, `--help`).

    .venv/bin/python scripts/bench_startup.py

Median of 5 runs of the real script each; prints the figures (the target is under 0.3 s).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("sessionstore")


def main() -> None:
    for args in (["--version"], ["--help"], ["search", "--help"]):
        times = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run([str(SCRIPT), *args], capture_output=True, check=True)
            times.append(time.perf_counter() - start)
        print(f"sessionstore {' '.join(args):<16} median {statistics.median(times):.3f} s  "
              f"(min {min(times):.3f} s)")


if __name__ == "__main__":
    main()
