"""Benchmark: what the hash chain costs an append, and how fast `verify` reads it back.

    .venv/bin/python scripts/bench_chain.py

Every append hashes each event twice (`chain.content_hash` over its stored payload text and
meta, `chain.link` over the previous link and its identity). This times exactly those two
calls per event, on the same ~200-byte messages as `bench_append.py`, and sets them against
sessionstore's own single and batched append rates on SQLite (file, WAL) measured in the same
run: the share is the chain's µs per event over the append's µs per event. It also times
`store.verify()` over the batched session. Best of three for every figure (a shared machine).

Kept apart from `bench_append.py` so that the two can change independently.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_append import message  # noqa: E402
from benchlib import Make, print_table, quiet, sqlite_stores, timed  # noqa: E402

import sessionstore as ss  # noqa: E402
from sessionstore import chain  # noqa: E402
from sessionstore.events import encode_event  # noqa: E402

EVENTS = 20_000
SINGLE = 2_000
BATCH = 1_000
BATCHES = 10
REPEAT = 3


def chain_seconds_per_event() -> float:
    """`content_hash` + `link` per event, as `Repository._prepare` and `_Batch.rows` call them."""
    events = [ss.user(message(i)) for i in range(EVENTS)]
    encoded = [encode_event(e, i)[0] for i, e in enumerate(events)]
    now = datetime.now(timezone.utc)

    def run() -> None:
        previous = chain.genesis("bench")
        for version, (event, payload) in enumerate(zip(events, encoded), start=1):
            content = chain.content_hash(payload, event.meta)
            previous = chain.link(previous, event_id=event.event_id, version=version, kind=event.kind,
                                  created_at=now, tokens=40, content=content)

    return min(timed(run) for _ in range(REPEAT)) / EVENTS


def append_and_verify_seconds(make: Make, name: str) -> tuple[float, float, float]:
    """Seconds per event: single appends, batched appends, and verify over the batched session."""
    store = make(name)
    try:
        single_sid = store.create_session()
        store.append(single_sid, ss.user("warm up"))
        single = timed(lambda: [store.append(single_sid, ss.user(message(i))) for i in range(SINGLE)]) / SINGLE
        sid = store.create_session()
        batches = [[ss.user(message(b * BATCH + i)) for i in range(BATCH)] for b in range(BATCHES)]
        batched = timed(lambda: [store.append(sid, batch) for batch in batches]) / (BATCH * BATCHES)
        verify = timed(lambda: store.verify([sid])) / (BATCH * BATCHES)
        return single, batched, verify
    finally:
        store.close()


def main() -> int:
    quiet()
    per_event = chain_seconds_per_event()
    with sqlite_stores() as (make, _folder):
        runs = [append_and_verify_seconds(make, f"chain{n}") for n in range(REPEAT)]
    single, batched, verify = (min(r[i] for r in runs) for i in range(3))
    print(f"\nthe chain: content_hash + link per event, ~200-byte messages ({EVENTS:,} events, best of {REPEAT})")
    print_table(["", "µs/event", "chain share"], [
        ["chain.content_hash + chain.link", f"{per_event * 1e6:.1f}", ""],
        ["sessionstore single append (SQLite, WAL)", f"{single * 1e6:.1f}", f"{per_event / single:.1%}"],
        ["sessionstore batched append, 1,000 a batch", f"{batched * 1e6:.1f}", f"{per_event / batched:.1%}"],
        ["store.verify(), per event read and checked", f"{verify * 1e6:.1f}", ""],
    ])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
