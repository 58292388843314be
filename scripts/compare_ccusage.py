"""Compare `sessionstore usage --by day` with ccusage's daily report on the same Claude Code files.

    .venv/bin/python scripts/compare_ccusage.py                       # the shipped fixtures and the shared corpus
    .venv/bin/python scripts/compare_ccusage.py --timezone Asia/Tokyo  # days in another zone (default: the local one)
    .venv/bin/python scripts/compare_ccusage.py ~/.claude/projects     # your own files

Imports the files into a fresh SQLite store, runs ccusage 18.0.11 (``--offline``: its embedded
prices; installed into ``.cache/ccusage`` when not there) on the same files, and prints both, day
by day: the four token figures, each cost, and the cost's difference. Exits 1 when a token figure
differs or a day's cost is off by more than 1%.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from sessionstore import SessionStore
from sessionstore.importers import import_path
from sessionstore.testing import ccusage

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ROOTS = (ROOT / "tests" / "fixtures" / "transcripts" / "claude-code",
                 ROOT.parent / "shared" / "transcripts" / "claude-code")
TOKENS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")


def local_zone() -> str:
    """The local zone's IANA name when it can be told ($TZ, /etc/timezone, /etc/localtime), else UTC."""
    import os

    if os.environ.get("TZ"):
        return os.environ["TZ"]
    localtime = Path("/etc/localtime")
    if localtime.is_symlink() and "zoneinfo/" in str(localtime.resolve()):
        return str(localtime.resolve()).split("zoneinfo/", 1)[1]
    return "UTC"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="*", type=Path, help="Claude Code project folders, or folders of them")
    parser.add_argument("--timezone", default=None, help="IANA zone the days are counted in (default: local)")
    args = parser.parse_args()
    zone = args.timezone or local_zone()
    roots = args.roots or [root for root in DEFAULT_ROOTS if root.is_dir()]
    folders = [folder for root in roots for folder in ccusage.project_folders(root)]
    entry = ccusage.install(ROOT / ".cache" / "ccusage")
    with tempfile.TemporaryDirectory() as scratch:
        config = ccusage.lay_out(folders, Path(scratch) / "claude")
        started = time.perf_counter()
        theirs = {row["day"]: row for row in ccusage.daily(entry, config, zone)}
        their_seconds = time.perf_counter() - started
        store = SessionStore(f"sqlite:///{scratch}/usage.db")
        store.migrate()
        started = time.perf_counter()
        report = import_path(store, *folders)
        import_seconds = time.perf_counter() - started
        started = time.perf_counter()
        ours = {row.key: row.to_dict() for row in store.usage(by="day", timezone=zone)}
        our_seconds = time.perf_counter() - started
        store.close()
    print(f"{len(folders)} project folders, {len(report.files)} files; days in {zone}; "
          f"ccusage {ccusage.CCUSAGE_VERSION} --offline\n")
    print(f"{'day':<10}  {'who':<12} {'input':>9} {'output':>9} {'cache write':>12} {'cache read':>13} "
          f"{'cost USD':>10} {'cost diff':>9}")
    bad = 0
    for day in sorted(set(ours) | set(theirs)):
        mine, other = ours.get(day), theirs.get(day)
        for who, row in (("sessionstore", mine), ("ccusage", other)):
            if row is None:
                print(f"{day:<10}  {who:<12} {'(no row)':>9}")
                continue
            diff = ""
            if who == "ccusage" and mine is not None and row["cost_usd"]:
                diff = f"{(mine['cost_usd'] - row['cost_usd']) / row['cost_usd']:+.3%}"
            print(f"{day:<10}  {who:<12} " + " ".join(f"{row[t]:>{w},}" for t, w in zip(TOKENS, (9, 9, 12, 13)))
                  + f" {row['cost_usd']:>10.4f} {diff:>9}")
        same = (mine is not None and other is not None and all(mine[t] == other[t] for t in TOKENS)
                and abs(mine["cost_usd"] - other["cost_usd"]) <= 0.01 * max(other["cost_usd"], 1e-9))
        bad += not same
    total_ours = sum(r["cost_usd"] for r in ours.values())
    total_theirs = sum(r["cost_usd"] for r in theirs.values())
    print(f"\ntotal cost: sessionstore {total_ours:.4f} USD, ccusage {total_theirs:.4f} USD; "
          f"{len(ours)} days, {bad} differing")
    print(f"time: ccusage {their_seconds:.2f} s (reads the files); sessionstore import {import_seconds:.2f} s "
          f"once, then usage {our_seconds * 1000:.1f} ms (reads the store) — {datetime.now():%Y-%m-%d %H:%M}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
