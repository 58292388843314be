"""Benchmark: compaction at scale — time and view size for 1k, 10k and 100k-event sessions.

    .venv/bin/python scripts/bench_scale.py                 # SQLite and PostgreSQL
    .venv/bin/python scripts/bench_scale.py --no-postgres

Each session is real-looking agent work (bench_context's turns: a question, a file read, its
30-line result, an answer), appended in batches. For each size, one manual compaction through the store with the
offline summariser and the default 200,000-token policy (`CompactionPolicy()`), on a fork of the
session so that repeated runs compact the same history. Prints, per size: the view before and
after (tokens, and whether it is within the threshold — it must be), the time of the whole
`store.compact` and of its parts (reading the view, planning, appending), the summariser calls,
slices and merge levels, and the escalation the plan needed. Best of 3 runs below 100k events,
one run at 100k.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_context import turn  # noqa: E402
from benchlib import Make, main_on_backends, print_table  # noqa: E402

import sessionstore as ss  # noqa: E402
from sessionstore.compaction.pipeline import plan_compaction  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
TURNS_PER_BATCH = 400  # five events a turn (bench_context's turn: a question, a read, its result, an answer)


def build(store: ss.SessionStore, events: int) -> str:
    sid = store.create_session()
    store.append(sid, ss.system("You are a careful coding agent."))
    turns = max(1, (events - 1) // 5)
    for start in range(0, turns, TURNS_PER_BATCH):
        store.append(sid, [e for i in range(start, min(turns, start + TURNS_PER_BATCH)) for e in turn(i)])
    return sid


def run(store: ss.SessionStore, sid: str, policy: ss.CompactionPolicy) -> dict[str, float | int | str]:
    """One compaction of a fork of `sid`, timed as a whole and in parts."""
    fork = store.fork(sid)
    started = time.perf_counter()
    view = store.context(fork)
    read = time.perf_counter()
    plan = plan_compaction(view, policy=policy, counter=store.token_counter, summarizer=ss.OfflineSummarizer())
    planned = time.perf_counter()
    store.append(fork, list(plan.events))
    appended = time.perf_counter()
    after = store.context(fork)
    details = plan.events[-1].payload.get("details", {}) if plan.summarized else {}
    return {"total": appended - started, "read": read - started, "plan": planned - read, "append": appended - planned,
            "before": view.tokens, "after": after.tokens, "fits": policy.window_tokens(after) <= policy.threshold,
            "calls": plan.summarizer_calls, "slices": details.get("slices", 0),
            "levels": details.get("merge_levels", 0), "escalation": plan.escalation}


def measure(make: Make, label: str) -> None:
    policy = ss.CompactionPolicy()
    store = make("scale")
    rows = []
    try:
        for size in SIZES:
            sid = build(store, size)
            runs = [run(store, sid, policy) for _ in range(3 if size < 100_000 else 1)]
            best = min(runs, key=lambda r: r["total"])
            rows.append([f"{size:,} events", best["before"], best["after"], "yes" if best["fits"] else "NO",
                         best["total"], best["read"], best["plan"], best["append"], best["calls"], best["slices"],
                         best["levels"], best["escalation"]])
    finally:
        store.close()
    print(f"\n{label} — CompactionPolicy() (window 200,000, threshold {policy.threshold:,}), offline summariser")
    print_table(["session", "view before", "view after", "fits", "compact s", "read s", "plan s", "append s",
                 "calls", "slices", "merge levels", "escalation"], rows)


if __name__ == "__main__":
    sys.exit(main_on_backends(measure, __doc__.split("\n")[0]))
