"""Benchmark: building the viewer's page, and what the time travel costs.

    .venv/bin/python scripts/bench_viewer.py

For the largest shared transcripts (and each lived again with compactions at a 30k window):
events, epochs, the page's size, the time to build it (best of three) and the share spent on
the timeline. Then a synthetic 10,000-event session without compaction, where the page's
design matters most: one projection per epoch against what a projection at every version
(`store.context(sid, at=v)` or the pure `project`) would cost, estimated from a sample.
SQLite only: the page reads one transcript, the backend is not what is measured.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import TRANSCRIPTS, best_of, print_table, quiet, sqlite_stores  # noqa: E402

import sessionstore as ss  # noqa: E402
from sessionstore.importers import import_file  # noqa: E402
from sessionstore.projection import input_from_events, project  # noqa: E402
from sessionstore.viewer import build_timeline, session_html  # noqa: E402

LARGEST = (
    "claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
    "claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "pi/before-compaction.jsonl",
    "pi/large-session.jsonl",
    "codex/rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl",
)
SYNTHETIC_EVENTS = 10_000
POLICY = ss.CompactionPolicy(context_window=30_000, reserve_tokens=4_000, keep_recent_tokens=6_000,
                             prune_protect_tokens=10_000, prune_minimum_tokens=4_000)


def live_again(store: ss.SessionStore, source_id: str) -> str:
    source = [e for e in store.events(source_id) if e.kind != "compaction"]
    sid = store.create_session(metadata={"replay_of": source_id})
    for start in range(0, len(source), 40):
        store.maybe_compact(sid, POLICY)
        store.append(sid, [ss.NewEvent(e.kind, e.payload, {}, f"{sid[:8]}-{e.event_id}", e.created_at)
                           for e in source[start:start + 40]], strict=False)
    return sid


def page_row(store: ss.SessionStore, name: str, sid: str) -> list[object]:
    events = store.transcript(sid)
    timeline_s = best_of(lambda: build_timeline(sid, events), repeat=3)
    page_s = best_of(lambda: session_html(store, sid), repeat=3)
    size = len(session_html(store, sid).encode("utf-8"))
    epochs = len(build_timeline(sid, events).epochs)
    return [name, f"{len(events):,}", f"{epochs:,}", f"{size / 1e6:.2f} MB", f"{page_s * 1000:.0f} ms",
            f"{timeline_s * 1000:.0f} ms"]


def synthetic(store: ss.SessionStore) -> str:
    sid = store.create_session()
    batch: list[ss.NewEvent] = []
    for i in range(SYNTHETIC_EVENTS // 4):
        batch += [ss.user(f"step {i}: check module {i % 50}"),
                  *ss.assistant(f"Reading module {i % 50}.",
                                tool_calls=[ss.tool_call(f"c{i}", "Read", {"file_path": f"src/m{i % 50}.py"})]),
                  ss.tool_result(f"c{i}", "\n".join(f"line {n}: value = f({n}, {i})" for n in range(20)))]
    for start in range(0, len(batch), 2_000):
        store.append(sid, batch[start:start + 2_000])
    return sid


def main() -> None:
    quiet()
    if not TRANSCRIPTS.is_dir():
        sys.exit(f"the shared transcripts are not at {TRANSCRIPTS} (set SESSIONSTORE_TRANSCRIPTS)")
    with sqlite_stores() as (make, _):
        store = make("viewer")
        rows = []
        for relative in LARGEST:
            result = import_file(store, TRANSCRIPTS / relative, subagents=False)
            assert result.session_id is not None
            name = Path(relative).stem[-36:][:13]
            rows.append(page_row(store, name, result.session_id))
            rows.append(page_row(store, f"{name} lived", live_again(store, result.session_id)))
        print("Pages of the largest shared transcripts (best of 3; 'lived': replayed with our compactions "
              "at a 30k window)\n")
        print_table(["session", "events", "epochs", "page", "build", "of which timeline"], rows)

        sid = synthetic(store)
        events = store.transcript(sid)
        sample = range(1, len(events) + 1, len(events) // 20)
        started = time.perf_counter()
        for v in sample:
            store.context(sid, at=v)
        per_context = (time.perf_counter() - started) / len(sample)
        started = time.perf_counter()
        for v in sample:
            project(input_from_events(sid, events, at=v))
        per_project = (time.perf_counter() - started) / len(sample)
        timeline_s = best_of(lambda: build_timeline(sid, events), repeat=3)
        page_s = best_of(lambda: session_html(store, sid), repeat=3)
        size = len(session_html(store, sid).encode("utf-8"))
        print(f"\nA {len(events):,}-event session without compaction (one epoch):")
        print_table(["way to get the view at every version", "time"], [
            ["store.context(sid, at=v) per version (estimated from 20)", f"{per_context * len(events):.1f} s"],
            ["project(input_from_events(...)) per version (estimated)", f"{per_project * len(events):.1f} s"],
            ["build_timeline: one projection per epoch end (measured)", f"{timeline_s * 1000:.0f} ms"],
            [f"the whole page ({size / 1e6:.1f} MB)", f"{page_s * 1000:.0f} ms"],
        ])


if __name__ == "__main__":
    main()
