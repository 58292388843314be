"""Benchmark: rebuilding the context view costs the size of the view, not of the history.

    .venv/bin/python scripts/bench_context.py               # SQLite and PostgreSQL
    .venv/bin/python scripts/bench_context.py --no-postgres

Sessions of 1,000, 10,000 and 100,000 events (user and assistant messages, tool calls and
results of real-looking sizes), each compacted so that its view holds the same 200-event
tail. Prints the median time of `store.context(sid)` for each — rebuilt from the rows, after one
append (the store folds it into the view it kept), and with nothing new — and the ratios
100k / 1k (goal ≤ 1.2), plus an uncompacted 1,000-event session for scale.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Make, main_on_backends, median_of, print_table, timed  # noqa: E402

import sessionstore as ss  # noqa: E402
from sessionstore import events as ev  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
TAIL = 200
BATCH = 2_000
GOAL = 1.2  # issue 16: context at 100k events ≤ 1.2× at 1k


def turn(i: int) -> list[ss.NewEvent]:
    """Five events: a question, a call, its result, an answer, a note."""
    return [
        ss.user(f"step {i}: please check the module and report"),
        *ss.assistant(f"Checking module {i % 50}.", tool_calls=[ss.tool_call(f"c{i}", "Read",
                                                                             {"file_path": f"src/m{i % 50}.py"})]),
        ss.tool_result(f"c{i}", "\n".join(f"line {n}: value = compute({n}, {i})" for n in range(30))),
        ss.assistant(f"Module {i % 50} looks fine; the values are computed lazily."),
    ]


def build(store: ss.SessionStore, events: int) -> str:
    sid = store.create_session()
    pending: list[ss.NewEvent] = []
    i = 0
    while store.version(sid) + len(pending) < events - 1:
        pending.extend(turn(i))
        i += 1
        if len(pending) >= BATCH:
            store.append(sid, pending)
            pending = []
    if pending:
        store.append(sid, pending)
    head = store.version(sid)
    first_kept = next(e.version for e in store.events(sid, after=head - TAIL - 5)
                      if e.kind == "message" and e.payload["role"] == "user")
    store.append(sid, ev.compaction("## Primary request and intent\nchecking every module", first_kept))
    return sid


def timings(store: ss.SessionStore, sid: str) -> dict[str, float]:
    """Median seconds of `context()`: rebuilt from the rows (``at`` the head: never the kept
    view), after one event was appended (the kept view folds it: an agent's turn), and with
    nothing new (the kept view, after one statement reads the head)."""
    head = store.version(sid)
    rebuild = median_of(lambda: store.context(sid, at=head), repeat=15)
    folded = []
    for i in range(15):
        store.append(sid, ss.user(f"one more step {i}"))
        folded.append(timed(lambda: store.context(sid)))
    unchanged = median_of(lambda: store.context(sid), repeat=15)
    return {"rebuild": rebuild, "after an append": statistics.median(folded), "unchanged": unchanged}


def measure(make: Make, label: str) -> None:
    store = make("context")
    rows = []
    figures = {}
    try:
        for size in SIZES:
            sid = build(store, size)
            view = store.context(sid)
            figures[size] = timings(store, sid)
            rows.append([f"{size:,} events", len(view.items), view.tokens,
                         *(f"{t * 1000:.2f}" for t in figures[size].values())])
        plain = store.create_session()
        for start in range(0, 1000, BATCH):
            store.append(plain, [e for i in range(start // 5, min(1000, start + BATCH) // 5) for e in turn(i)])
        view = store.context(plain)
        rows.append(["1,000 events, no compaction", len(view.items), view.tokens,
                     *(f"{t * 1000:.2f}" for t in timings(store, plain).values())])
    finally:
        store.close()
    print(f"\n{label}")
    print_table(["session", "view items", "view tokens", "rebuild ms", "after an append ms", "unchanged ms"], rows)
    for kind in ("rebuild", "after an append"):
        ratio = figures[100_000][kind] / figures[1_000][kind]
        print(f"{kind}: context(100k) / context(1k) = {ratio:.2f}  (goal ≤ {GOAL}: {'met' if ratio <= GOAL else 'MISSED'})")


if __name__ == "__main__":
    sys.exit(main_on_backends(measure, __doc__.split("\n")[0]))
