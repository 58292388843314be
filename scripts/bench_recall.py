"""Benchmark: the recall tool on the largest shared session — search and paged reads, as the model calls them.

    .venv/bin/python scripts/bench_recall.py               # SQLite (a file in a temporary folder)
    .venv/bin/python scripts/bench_recall.py --postgres    # and a throwaway, durable PostgreSQL

The largest transcript file of the corpus (``$SESSIONSTORE_TRANSCRIPTS`` or ``../shared/transcripts``;
``--transcripts`` for another folder) is imported; then, median of 7 runs each: a search for a
rare and a common word of its tool outputs (lineage scope), a read of its largest event (first
and last page), a read of 10 versions at once, and every page of the largest event read in turn
(pages of at most 10,000 tokens by the store's counter, `sessionstore.budget`). Goal (issue 29): a
search at most 10 ms, median, on PostgreSQL (printed for every backend; exit 1 when missed).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Make, main_on_transcripts, median_of, print_table  # noqa: E402

from sessionstore.budget import body  # noqa: E402
from sessionstore.importers import import_path  # noqa: E402
from sessionstore.recall import handle_recall, read_back  # noqa: E402
from sessionstore.search import search_text  # noqa: E402


SEARCH_GOAL_MS = 10


def run(backend: str, make: Make, transcripts: Path) -> bool:
    largest = max(transcripts.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    store = make("recall")
    import_path(store, largest)
    sid = max((info for info in store.sessions()), key=lambda info: info.head).id
    events = list(store.events(sid))
    biggest = max(events, key=lambda e: len(search_text(e.kind, e.payload)))
    words: Counter[str] = Counter()
    for event in events:
        if event.kind == "tool_result":
            words.update({w.lower() for w in search_text(event.kind, event.payload).split()
                          if w.isalpha() and 6 <= len(w) <= 20})
    rare, common = min(words, key=lambda w: (words[w], w)), words.most_common(1)[0][0]
    count, more = 0, True
    while more:  # the pages of the largest event, each asked for as the previous one says
        count += 1
        more = body(handle_recall(store, sid, {"action": "read", "version": biggest.version, "page": count}))[1]
    print(f"\n== {backend} == {largest.name}: {len(events):,} events; largest event v{biggest.version} "
          f"({len(search_text(biggest.kind, biggest.payload)):,} characters, {count} page(s))")
    calls = [("search, rare word", {"action": "search", "query": rare}),
             ("search, common word", {"action": "search", "query": common}),
             ("read largest, page 1", {"action": "read", "version": biggest.version}),
             (f"read largest, page {count}", {"action": "read", "version": biggest.version, "page": count}),
             ("read 10 versions", {"action": "read", "version": max(1, len(events) // 2), "to": len(events) // 2 + 9})]
    rows = [(label, median_of(lambda: handle_recall(store, sid, request)) * 1000) for label, request in calls]
    rows.append((f"all {count} page(s) of the largest",
                 median_of(lambda: read_back(store, sid, biggest.version), repeat=3) * 1000))
    print_table(("recall", "ms (median)"), rows)
    store.close()
    slowest = max(ms for label, ms in rows if label.startswith("search"))
    met = slowest <= SEARCH_GOAL_MS
    print(f"goal (issue 29): a search ≤ {SEARCH_GOAL_MS} ms median on {backend}: "
          f"{'met' if met else 'MISSED'} ({slowest:.1f} ms)")
    return met or not backend.startswith("postgresql")


def main(argv: list[str] | None = None) -> int:
    return main_on_transcripts(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
