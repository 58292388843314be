"""Benchmark: the replay lab (`sessionstore replay`) on every shared transcript — what compaction
saves, and that a compacted session never sends an invalid request or overflows its window.

    .venv/bin/python scripts/bench_replay.py [--postgres] [--transcripts DIR]

Every transcript is imported into a scratch store, and every main session is re-lived by
`sessionstore.lab.replay` — what `sessionstore replay SESSION` runs — with the default policy
(strategy single, the offline summariser): its own compactions left out, `maybe_compact`
before each model call, each request validated and billed, the provider's counts simulated
from the session's own usage reports. Two windows per session: 200,000 tokens, and half the
session's uncompacted peak when that is smaller, so that compaction happens on every session.

"uncompacted peak" is the largest request the session would have sent with no compaction at
all: the simulated provider's count of the view before its last model call, its own
compactions, prunes and rewrites left out (without them the view only grows). Skipped:
subagent sessions (their parent is replayed, and a subagent's context is the parent's tool
call) and sessions under `MIN_TURNS` user/assistant messages (nothing to compact).

A window that cannot hold the session's fixed overhead (the system prompt and tool definitions
the provider counts, learned from its usage reports) makes `maybe_compact` raise
CompactionFailed: reported under the table, not a failure. Exit status 1 when a replay sent an
invalid request or a call over its window, or failed otherwise.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Make, main_on_transcripts, print_table  # noqa: E402

from sessionstore import CompactionFailed, CompactionPolicy, SessionInfo, StoredEvent  # noqa: E402
from sessionstore.importers import import_path  # noqa: E402
from sessionstore.lab import DECISION_KINDS, ReplayRow, replay, simulated_provider  # noqa: E402
from sessionstore.projection import input_from_events, project  # noqa: E402
from sessionstore.projection.fold import in_context  # noqa: E402
from sessionstore.projection.usage import assistant_side, same_response  # noqa: E402
from sessionstore.summarizers.offline import OfflineSummarizer  # noqa: E402

WINDOW = 200_000
MIN_TURNS = 20
SHOWN_COMPACTIONS = 3


def turns(events: Sequence[StoredEvent]) -> int:
    return sum(1 for e in events if e.kind == "message" and e.payload.get("role") in ("user", "assistant"))


def uncompacted_peak(session_id: str, events: Sequence[StoredEvent]) -> int:
    """The request before the session's last model call with nothing compacted, as the replay's
    simulated provider would count it: the events `replay` appends, up to that call."""
    kept = [e for e in events if in_context(e) and e.kind not in DECISION_KINDS]
    last, previous = 0, None
    for i, event in enumerate(kept):
        if assistant_side(event) and not same_response(previous, event):
            last = i
        previous = event
    tokens = project(input_from_events(session_id, kept[:last])).tokens
    provider = simulated_provider(session_id, events)
    return provider.predict(tokens) if provider is not None else tokens


def skip_reason(info: SessionInfo, events: Sequence[StoredEvent]) -> str | None:
    if info.parent_id or info.metadata.get("parent_session"):
        return "subagent"
    if turns(events) < MIN_TURNS:
        return f"{turns(events)} user/assistant messages (< {MIN_TURNS})"
    return None


def steps(row: ReplayRow) -> str:
    """Each compaction's view before → after, in thousands of tokens; the first few only."""
    shown = ", ".join(f"{before / 1000:.0f}k→{after / 1000:.0f}k" for before, after in row.compactions[:SHOWN_COMPACTIONS])
    more = len(row.compactions) - SHOWN_COMPACTIONS
    return (shown + (f", … ({len(row.compactions)} in all)" if more > 0 else "")) or "—"


def label(info: SessionInfo) -> str:
    return f"{info.metadata.get('source', '?')} {info.id[:8]}"


def run(backend: str, make: Make, folder: Path) -> bool:
    started = time.perf_counter()
    store, scratch = make("transcripts"), make("replays")
    try:
        import_path(store, folder)
        rows, skipped, too_small, failed = [], [], [], []
        ok = True
        for info in sorted(store.sessions(), key=lambda s: (str(s.metadata.get("source")), s.id)):
            events = store.transcript(info.id)
            reason = skip_reason(info, events)
            if reason is not None:
                skipped.append(f"{label(info)}: {reason}")
                continue
            peak = uncompacted_peak(info.id, events)
            windows = [WINDOW] + ([peak // 2] if peak // 2 < WINDOW else [])
            for window in windows:
                try:
                    row = replay(scratch, info.id, events, CompactionPolicy.for_window(window), OfflineSummarizer(),
                                 label=f"{window:,}")
                except CompactionFailed as exc:  # the library refusing an impossible window: a finding
                    provider = simulated_provider(info.id, events)
                    overhead = f"{provider.overhead():,.0f}" if provider is not None else "?"
                    too_small.append(f"{label(info)} at {window:,}: CompactionFailed, the request's fixed overhead "
                                     f"(system prompt, tools: {overhead} provider tokens) does not fit: {exc}")
                    break
                except Exception as exc:  # a lab bug stops one transcript, not the table
                    failed.append(f"{label(info)} at {window:,}: {type(exc).__name__}: {exc}")
                    break
                ok = ok and row.invalid_requests == 0 and row.calls_over_window == 0
                rows.append([label(info), peak, window, steps(row), row.summarizer_calls, row.peak_view,
                             row.invalid_requests, row.calls_over_window, row.input_tokens, row.billed_cached])
        print(f"Replay of every shared transcript ({backend}), default policy (single, offline summariser); "
              "provider tokens, simulated")
        print_table(["transcript", "uncompacted peak", "window", "compactions (before→after, our count)",
                     "summariser calls", "peak view", "invalid", "over window", "input bill", "with caching"], rows)
        for line in skipped:
            print(f"skipped {line}")
        for line in too_small:
            print(f"window too small: {line}")
        for line in failed:
            print(f"FAILED {line}")
        print(f"{time.perf_counter() - started:.0f} s")
        return ok and not failed
    finally:
        store.close()
        scratch.close()


def main(argv: list[str] | None = None) -> int:
    return main_on_transcripts(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
