"""Benchmark: retention by policy against erasing the same sessions one by one by hand.

    .venv/bin/python scripts/bench_retention.py [--sessions N] [--no-postgres]

Two identical stores of N sessions (half of them last written 200 days ago, half 10 days ago;
six ~200-byte events each, one in ten with a subagent) per backend. In the first,
`store.retain(RetentionPolicy(older_than=90 days))` erases the old half (its dry run is timed
first); in the second, what a user could do before it: `store.erase(sid)` for each of the same
sessions (each one a VACUUM of the whole file on SQLite). Printed: the seconds of each, per
expired session, and the ratio, with the database's size before and after the run.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import backends_parser, message, print_table, quiet, sqlite_stores, postgres_stores, timed  # noqa: E402

import sessionstore as ss  # noqa: E402

OLD, NEW = 200, 10  # days since the last event
POLICY = ss.RetentionPolicy(older_than=timedelta(days=90))


def fill(store: ss.SessionStore, sessions: int) -> list[str]:
    """`sessions` sessions, half old; returns the old ones' ids (the ones a policy of 90 days erases)."""
    now = datetime.now(timezone.utc)
    old = []
    for i in range(sessions):
        at = now - timedelta(days=OLD if i % 2 == 0 else NEW)
        events = [ss.user(message(6 * i + k), created_at=at) if k % 2 == 0 else
                  ss.assistant(message(6 * i + k), created_at=at) for k in range(6)]
        sid = store.create_session(metadata={"user": f"u{i % 50}"}, events=events)
        if i % 10 == 0:
            store.create_session(metadata={"parent_session": sid, "role": "subagent"},
                                 events=[ss.user(message(i), created_at=at), ss.assistant(message(i), created_at=at)])
        if i % 2 == 0:
            old.append(sid)
    return old


def measure(make: Any, label: str, sessions: int) -> None:
    policy_store, by_hand = make("policy"), make("by-hand")
    try:
        old = fill(policy_store, sessions)
        old_by_hand = fill(by_hand, sessions)
        dry = timed(lambda: policy_store.retain(ss.RetentionPolicy(older_than=POLICY.older_than, dry_run=True)))
        report: list[ss.RetentionReport] = []
        run = timed(lambda: report.append(policy_store.retain(POLICY)))
        hand = timed(lambda: [by_hand.erase(sid, "by hand") for sid in old_by_hand])
        done = report[0]
        assert done.erased and len(done.erased) == len(old), (len(done.erased), len(old))
        print(f"\n{label}: {sessions:,} sessions, {len(old):,} past the policy ({len(done.session_ids):,} with "
              f"their parts); size {done.bytes_before:,} → {done.bytes_after:,} bytes")
        print_table(["", "seconds", "ms / expired session", "× retain"],
                    [["retain, dry run", dry, dry / len(old) * 1000, dry / run],
                     ["retain", run, run / len(old) * 1000, 1.0],
                     ["erase() one by one", hand, hand / len(old) * 1000, hand / run]])
    finally:
        policy_store.close()
        by_hand.close()


def main() -> int:
    parser = backends_parser(__doc__ or "")
    parser.add_argument("--sessions", type=int, default=1_000)
    args = parser.parse_args()
    quiet()
    with sqlite_stores() as (make, _):
        measure(make, "SQLite (file, WAL)", args.sessions)
    if not args.no_postgres:
        with postgres_stores() as (make, _):
            measure(make, "PostgreSQL (loopback)", args.sessions)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
