"""Benchmark: full-text search over every shared transcript, and what the index costs appends.

    .venv/bin/python scripts/bench_search.py               # SQLite (a file in a temporary folder)
    .venv/bin/python scripts/bench_search.py --postgres    # and a throwaway, durable PostgreSQL

For each backend: the whole corpus imported into a store without the search index (schema
revision 0002) and one with it (head), then 2,000 single appends of ~200-byte messages into
each: what keeping the index on append costs. Then queries on the indexed store (median of 5
runs): a rare word, a common word, a phrase, a prefix, an OR, one session, one tool.
The transcripts are read from ``$SESSIONSTORE_TRANSCRIPTS`` or ``../shared/transcripts``
(``--transcripts`` for another folder, e.g. tests/fixtures/transcripts).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import Make, main_on_transcripts, median_of, print_table  # noqa: E402

from alembic import command  # noqa: E402

import sessionstore as ss  # noqa: E402
from sessionstore import SessionStore  # noqa: E402
from sessionstore.importers import import_path  # noqa: E402
from sessionstore.search import search_text  # noqa: E402
from sessionstore.storage.migrate import alembic_config  # noqa: E402

APPENDS = 2_000
MESSAGE = "please look at the failing test in tests/test_store.py and fix the off-by-one in the pager " * 2


def without_index(store: SessionStore) -> SessionStore:
    """`store` taken back to revision 0002: no search index, no trigger."""
    config = alembic_config()
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0002")
    return store


def appends_per_second(store: SessionStore) -> float:
    sid = store.create_session()
    started = time.perf_counter()
    for i in range(APPENDS):
        store.append(sid, ss.user(f"{MESSAGE} #{i}"))
    return APPENDS / (time.perf_counter() - started)


def pick_words(store: SessionStore) -> tuple[str, str, str, str]:
    """A rare and a common plain word of the tool results; the session and the tool of most hits
    of the common word (from the data)."""
    freq: Counter[str] = Counter()
    for event in store.read_all():
        if event.kind == "tool_result":
            freq.update({w.lower() for w in search_text(event.kind, event.payload).split()
                         if w.isalpha() and 6 <= len(w) <= 20})
    rare = min(freq, key=lambda w: (freq[w], w))
    common = freq.most_common(1)[0][0]
    hits = store.search(common, kind="tool_result", limit=1_000_000)
    session = Counter(h.session_id for h in hits).most_common(1)[0][0]
    tool = Counter(h.tool for h in hits if h.tool).most_common(1)[0][0]
    return rare, common, session, tool


def run(backend: str, make: Make, transcripts: Path) -> None:
    print(f"\n== {backend} ==")
    rows = []
    stores = {}
    for label, indexed in (("without index (0002)", False), ("with index (0003)", True)):
        store = make("indexed" if indexed else "plain")
        if not indexed:
            without_index(store)
        started = time.perf_counter()
        report = import_path(store, transcripts)
        seconds = time.perf_counter() - started
        rate = appends_per_second(store)
        rows.append((label, report.events_added, seconds, report.events_added / seconds, rate))
        stores[indexed] = store
    print_table(("schema", "events imported", "import s", "events/s", "single appends/s"), rows)
    stores[False].close()
    store = stores[True]
    if backend.startswith("postgres"):
        with store.engine.connect() as conn:
            size = conn.exec_driver_sql("SELECT pg_relation_size('ix_events_search')").scalar_one()
            table = conn.exec_driver_sql("SELECT pg_total_relation_size('events')").scalar_one()
        print(f"GIN index: {size / 1e6:.1f} MB (events with all its indexes: {table / 1e6:.1f} MB)")
    rare, common, session, tool = pick_words(store)
    queries = [("rare word", rare, {}), ("common word", common, {}), ("phrase", '"the test"', {}),
               ("prefix", common[:4] + "*", {}), ("OR", f"{rare} OR {common}", {}),
               ("common, one session", common, {"session_id": session}),
               ("common, one tool", common, {"tool": tool}), ("common, tool results", common, {"kind": "tool_result"})]
    rows = []
    for label, query, filters in queries:
        hits = store.search(query, limit=20, **filters)  # type: ignore[arg-type]
        every = len(store.search(query, limit=1_000_000, **filters))  # type: ignore[arg-type]
        ms = median_of(lambda: store.search(query, limit=20, **filters), repeat=5) * 1000  # type: ignore[arg-type]
        rows.append((label, query, every, len(hits), ms))
    print_table(("query", "text", "matches", "returned", "ms (limit 20)"), rows)
    store.close()


def main(argv: list[str] | None = None) -> int:
    return main_on_transcripts(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
