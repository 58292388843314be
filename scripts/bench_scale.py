"""Benchmark: scale — compaction of 1k, 10k and 100k-event sessions; writers on Citus against PostgreSQL.

    .venv/bin/python scripts/bench_scale.py                 # SQLite and PostgreSQL, then Citus
    .venv/bin/python scripts/bench_scale.py --no-postgres   # SQLite only (no PostgreSQL, no Citus)
    .venv/bin/python scripts/bench_scale.py --writers-only  # only the Citus column, ~1 min
    .venv/bin/python scripts/bench_scale.py --event-ids     # the Citus column by kind of event id, ~4 min

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

Last, beyond one machine (issue 20): 8 and 32 writer processes, each appending single events to
a session of its own (`bench_concurrency.store_writer`), on a Citus cluster — a coordinator and
two workers, all on this machine — against one plain PostgreSQL, in the same run, alternating,
both durable (fsync and synchronous_commit on). Printed: events/s on each, the ratio, and the
goal (Citus ≥ 0.5× one PostgreSQL: the coordinator's hop is all that may cost). Best of
`--repeat` runs of `--seconds` each. On one machine the cluster's three servers share its cores
with the writers: this measures the cost of the hop, not what more machines add. Skipped, with
the reason, where the citus extension is not installed (`../shared/citus/install` builds it).

With --event-ids, instead: what an event's id costs on Citus (`docs/scaling.md`, "Event ids
across sessions"): 1 and 8 writers appending single events, and 1 writer appending 50 at a time,
with ids made by the store, ids chosen by the caller (uuid5, uuid4 hex), and copies of ids the
store made (a plain `str`), each against one PostgreSQL.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_context import turn  # noqa: E402
from bench_concurrency import _race, events_per_second, store_writer  # noqa: E402
from benchlib import Make, backends_parser, message, print_table, quiet, run_on_backends  # noqa: E402

import sessionstore as ss  # noqa: E402
from sessionstore.compaction.pipeline import plan_compaction  # noqa: E402
from sessionstore.events import new_event_id  # noqa: E402

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


WRITERS = (8, 32)
CITUS_GOAL = 0.5  # Citus events/s against one PostgreSQL's
# --event-ids: what makes each event's id (None: the store, `new_event_id`), given the session and a number
ID_KINDS: dict[str, Callable[[str, int], str | None]] = {
    "made by the store": lambda sid, i: None,
    "chosen (uuid5)": lambda sid, i: uuid.uuid5(uuid.NAMESPACE_URL, f"{sid}:{i}").hex,
    "chosen (uuid4 hex)": lambda sid, i: uuid.uuid4().hex,
    "a copy of one the store made": lambda sid, i: str(new_event_id()),
}
ID_RUNS = ((1, 1), (8, 1), (1, 50))  # (writers, events an append)


def id_writer(ids: Callable[[str, int], str | None], batch: int) -> Callable[..., None]:
    """`store_writer`, with each event's id from `ids` and `batch` events an append."""
    def writer(url: str, synchronous: str, ready: Any, go: Any, seconds: float, out: Any) -> None:
        store = ss.SessionStore(url)
        sid = store.create_session()
        store.append(sid, ss.user("warm up"))
        _race(lambda n: store.append(sid, [ss.user(message(i), event_id=ids(sid, i))
                                           for i in range(n * batch, (n + 1) * batch)]), ready, go, seconds, out)
        store.close()
    return writer


def citus_writers(seconds: float, repeat: int, event_ids: bool = False) -> None:
    """The Citus column: writers on distinct sessions, Citus against one PostgreSQL (module
    docstring); with `event_ids`, by the kind of the events' ids instead (`ID_KINDS`)."""
    from sessionstore.testing import CitusCluster, PostgresCluster, citus_installed

    title = "Beyond one machine — writers on sessions of their own, " + (
        "by the kind of event id" if event_ids else "single-event appends") + ", durable"
    if not citus_installed():
        print(f"\n{title}: skipped, Citus is not installed for this PostgreSQL (../shared/citus/install builds it)")
        return
    # (the row's first cells, a writer, processes, events an append)
    runs = [([f"{p} × {batch}", kind], id_writer(ids, batch), p, batch) for p, batch in ID_RUNS
            for kind, ids in ID_KINDS.items()] if event_ids else [([p], store_writer, p, 1) for p in WRITERS]
    best: dict[tuple[str, int], float] = {}
    with PostgresCluster(durable=True) as postgres, CitusCluster(durable=True) as citus:
        urls = {"postgresql": postgres.create_database("writers"), "citus": citus.create_database("writers")}
        for url in urls.values():
            with ss.SessionStore(url) as store:
                store.migrate()
        for r, (_, writer, p, batch) in enumerate(runs):
            for _ in range(repeat):  # alternate, so that a noisy moment does not favour one side
                for name, url in urls.items():
                    best[name, r] = max(best.get((name, r), 0.0),
                                        events_per_second(writer, url, "FULL", p, seconds) * batch)
    rows = []
    for r, (cells, *_) in enumerate(runs):
        ratio = best["citus", r] / best["postgresql", r]
        goal = "" if event_ids else f"goal ≥ {CITUS_GOAL}× {'met' if ratio >= CITUS_GOAL else 'missed'}"
        rows.append([*cells, best["postgresql", r], best["citus", r], f"{ratio:.2f}×", goal])
    print(f"\n{title}; best of {repeat} × {seconds:g} s")
    first = ["writers × events an append", "event ids"] if event_ids else ["writers"]
    print_table([*first, "PostgreSQL events/s", "Citus events/s (coordinator + 2 workers)", "Citus / PostgreSQL", ""],
                rows)


def main() -> int:
    parser = backends_parser(__doc__.split("\n")[0])
    parser.add_argument("--writers-only", action="store_true", help="only the Citus column")
    parser.add_argument("--seconds", type=float, default=3.0, help="each writers measurement's length (default 3)")
    parser.add_argument("--repeat", type=int, default=2, help="writers: best of this many runs (default 2)")
    parser.add_argument("--event-ids", action="store_true",
                        help="only the Citus column, by the kind of event id: made by the store, chosen, copied")
    args = parser.parse_args()
    quiet()
    if not args.writers_only and not args.event_ids:
        run_on_backends(measure, postgres=not args.no_postgres)
    if not args.no_postgres:
        citus_writers(args.seconds, args.repeat, args.event_ids)
    return 0


if __name__ == "__main__":
    sys.exit(main())
