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

Then the three sessions issue 7 measured on the main of the time, compacted with
`maybe_compact` as an agent would before a model call: 50,000 short turns at a 200k window,
5,000 short turns at 32k, one ~60,000-token pasted user message at 32k. Printed: the view
before and after (it must be within the threshold), the time, the escalation, the summary
against its budget, and — for comparison, quoted from the issue — what that older version left.
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


# What issue 7 measured on the main of the time, after `maybe_compact` (quoted, not re-measured).
ISSUE_7_AFTER = {"50,000 short turns": "354,500 (stalled)", "5,000 short turns": "81,499",
                 "one 60k-token message": "60,010 (STALLED)"}


def short_turns(store: ss.SessionStore, turns: int) -> str:
    """Issue 7's short turns: a one-line request, a one-line answer."""
    sid = store.create_session()
    store.append(sid, ss.system("You are a helpful agent."))
    for start in range(0, turns, 1_000):
        store.append(sid, [e for i in range(start, min(turns, start + 1_000))
                           for e in (ss.user(f"Turn {i}: please rename v{i} to w{i} in module m{i % 97}."),
                                     ss.assistant(f"Renamed v{i} to w{i}."))])
    return sid


def pasted_log(store: ss.SessionStore) -> str:
    """Three short turns, then a pasted log of about 60,000 tokens as the user's latest message."""
    sid = short_turns(store, 3)
    store.append(sid, ss.user("Here is the log:\n" + "\n".join(
        f"{i:06d} INFO request served in {i % 997} ms" for i in range(6_000)) + "\nFATAL: out of memory in worker 7"))
    return sid


def issue_sessions(make: Make, label: str) -> None:
    cases = [("50,000 short turns", ss.CompactionPolicy(context_window=200_000, reserve_tokens=16_384,
                                                        keep_recent_tokens=5_000), lambda s: short_turns(s, 50_000)),
             ("5,000 short turns", ss.CompactionPolicy.for_window(32_000), lambda s: short_turns(s, 5_000)),
             ("one 60k-token message", ss.CompactionPolicy.for_window(32_000), pasted_log)]
    store = make("issue7")
    rows = []
    try:
        for name, policy, build_session in cases:
            sid = build_session(store)
            before = store.context(sid).tokens
            started = time.perf_counter()
            result = store.maybe_compact(sid, policy, ss.OfflineSummarizer())
            took = time.perf_counter() - started
            after = store.context(sid)
            summary = result.compaction.tokens if result and result.compaction else 0
            rows.append([name, f"{policy.context_window:,} / {policy.threshold:,}", before, after.tokens,
                         "yes" if policy.window_tokens(after) <= policy.threshold else "NO", took,
                         result.plan.escalation if result else "-", f"{summary:,} / {policy.summary_budget:,}",
                         result.plan.summarizer_calls if result else 0, ISSUE_7_AFTER[name]])
    finally:
        store.close()
    print(f"\n{label} — issue 7's sessions, maybe_compact with the offline summariser")
    print_table(["session", "window / threshold", "view before", "view after", "fits", "compact s", "escalation",
                 "summary / budget", "calls", "after, issue 7 (old main)"], rows)


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
    issue_sessions(make, label)


if __name__ == "__main__":
    sys.exit(main_on_backends(measure, __doc__.split("\n")[0]))
