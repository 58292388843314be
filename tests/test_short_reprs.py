"""Results print short: a batch append, a session's stats and a search hit, however big what
they hold (issue 18, item 5; CompactionResult and ContextView: tests/test_api_errors.py)."""

from __future__ import annotations

import sessionstore as ss
from sessionstore import SessionStore


def _long_session(store: SessionStore) -> str:
    sid = store.create_session()
    for n in range(30):
        store.append(sid, [ss.user(f"step {n}: " + "explain the parser " * 40),
                           ss.tool_call(f"c{n}", "Read", {"path": f"src/m{n}.py"}),
                           ss.tool_result(f"c{n}", "def f():\n    return 1\n" * 200),
                           ss.assistant("done " * 100)])
    return sid


def test_append_stats_and_hits_print_short(store: SessionStore) -> None:
    sid = _long_session(store)
    appended = store.append(sid, [ss.user(f"more {n}") for n in range(500)])
    hits = store.search("parser")
    assert len(repr(hits[0].event)) > 500  # the objects are big; what they print is not
    for value in (appended, store.stats(sid), hits[0]):
        text = repr(value)
        assert len(text) < 300 and sid in text, text
    assert "events=500" in repr(appended) and "positions=" in repr(appended)
