"""Incremental views: a door brings the last view it built up to date by folding only the events
after it (`repository.views`, `projection.advance`). The property: over generated sessions —
messages, tool calls with usage reports, system prompts, scratchpads, prunes, rewrites,
compactions, resets, retractions and replies holding a provider's compaction, written by the
door under test and by another store on the same database — the view a door keeps equals a full
rebuild at every version it is read at, on both doors and both backends; so do the transcript
and a framework's live items (`follow`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessionstore as ss
from sessionstore import events as ev
from sessionstore.integrations._history import LiveItems, live_events
from sessionstore.projection import advance, input_from_events, project

from .conftest import BACKENDS, fresh_url
from .doors import DOORS, open_door

# derandomised and bounded, like the fuzz tests: the same examples on every run, a few seconds in all
VIEWS = settings(max_examples=25, deadline=None, database=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

OPS = ("user", "turn", "turn", "turn", "system", "scratchpad", "custom", "prune", "drop", "rewrite", "compaction",
       "reset", "retract", "native")
# Frameworks' views (`SessionStore.follow`): the live items, here their event ids; with compactions
# a provider's replacement window leads the history.
LIVE = LiveItems("test-live", frozenset({"message", "tool_call", "tool_result"}), lambda e: [e.event_id])
LIVE_ALL = LiveItems("test-live-all", frozenset({"message", "tool_call", "tool_result", "compaction"}),
                     lambda e: [e.event_id])
steps = st.lists(st.tuples(st.sampled_from(OPS), st.booleans(), st.booleans(), st.integers(0, 10_000)),
                 min_size=4, max_size=24)


@pytest.fixture(scope="module", params=[(b, d) for b in BACKENDS for d in DOORS], ids=lambda p: f"{p[0]}-{p[1]}")
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """The door under test and another writer (a `SessionStore`) on one database."""
    backend, door = request.param
    url = fresh_url(backend, tmp_path_factory.mktemp("views"), request)
    if backend == "sqlite":
        with ss.SessionStore(url) as s:
            s.migrate()
    store, other = open_door(url, door), ss.SessionStore(url)
    yield store, other
    store.close()
    other.close()


@dataclass
class Session:
    """What the test knows of a generated session, to write valid markers."""

    results: list[int] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    first_kept: int = 1
    turns: int = 0


def write(writer: Any, sid: str, known: Session, op: str, n: int) -> None:
    head = writer.version(sid)
    if op == "user":
        writer.append(sid, ss.user(f"question {n}"))
    elif op == "turn":
        known.turns += 1
        cid = f"c{known.turns}"
        usage = {"usage": {"input_tokens": 100 + n, "output_tokens": 20}, "model": "m"} if n % 2 else None
        writer.append(sid, [ss.user(f"do {n}"),
                            *ss.assistant(f"calling {n}", tool_calls=[ss.tool_call(cid, "Read", {"path": f"f{n}"})],
                                          meta=usage),
                            ss.tool_result(cid, f"output {n} " * (n % 40 + 1))])
        known.calls.append(head + 3)
        known.results.append(head + 4)
    elif op == "system":
        writer.append(sid, ev.system(f"system {n}"))
    elif op == "scratchpad":
        writer.append(sid, ev.scratchpad(f"notes {n}"))
    elif op == "custom":
        writer.append(sid, ev.custom("note", {"n": n}, in_context=bool(n % 2)))
    elif op == "prune" and known.results:
        writer.append(sid, ev.prune([known.results[n % len(known.results)]], rule="test", placeholder="[{tool}]"))
    elif op == "drop" and known.calls:
        writer.append(sid, ev.prune([known.calls[n % len(known.calls)]], mode="drop", rule="test"))
    elif op == "rewrite" and known.results:
        writer.append(sid, ev.rewrite(known.results[n % len(known.results)], field="output", content=f"short {n}",
                                      original_lines=3, language="text"))
    elif op == "compaction" and head:
        first_kept = known.first_kept + n % max(1, head + 1 - known.first_kept)
        details = {"critical": [v for v in known.calls if v < first_kept][-1:]}
        writer.append(sid, ev.compaction(f"summary {n}", first_kept, details=details))
        known.first_kept = first_kept
    elif op == "retract" and known.results:
        writer.retract(sid, [known.results[n % len(known.results)]], reason="pop_item")
    elif op == "reset":
        writer.reset(sid, reason="test")
        known.first_kept = writer.version(sid) + 1
    elif op == "native":  # a reply holding a provider's compaction: the store records it as one
        block = ({"type": "compaction", "content": f"summary {n}", "encrypted_content": "e30=", "signature": "c2ln"}
                 if n % 2 else {"type": "openai_item", "item": {"type": "compaction", "id": f"cmp_{n}",
                                                                "encrypted_content": "gAAAAe30="}})
        writer.append(sid, [ss.assistant([block]), ss.user(f"after {n}")])
        known.first_kept = head + 1
    else:
        writer.append(sid, ss.user(f"fallback {n}"))


@VIEWS
@given(plan=steps)
def test_the_kept_view_equals_a_full_rebuild_at_every_version(pair: tuple[Any, Any], plan: list[Any]) -> None:
    store, other = pair
    sid = store.create_session()
    known = Session()
    for op, by_other, read, n in plan:
        write(other if by_other else store, sid, known, op, n)
        if read:  # else the next read folds several batches at once
            head = store.version(sid)
            view = store.context(sid)  # kept and folded forward
            rebuilt = store.context(sid, at=head)  # `at` always rebuilds
            assert view == rebuilt
            assert view.calibrations == rebuilt.calibrations and view.window_estimate() == rebuilt.window_estimate()
            assert view.version == head
            assert store.transcript(sid) == list(store.events(sid))
            for fold in (LIVE, LIVE_ALL):
                assert store.follow(sid, fold).items == [e.event_id for e in live_events(
                    list(store.events(sid)), fold.kinds)]
    head = store.version(sid)
    assert store.context(sid) == store.context(sid, at=head)
    assert store.transcript(sid) == list(store.events(sid))


def test_a_read_after_an_append_folds_only_the_new_events(pair: tuple[Any, Any]) -> None:
    """The events a view already held are the very objects it held (not read again), and a view
    across a compaction is rebuilt."""
    store, other = pair
    sid = store.create_session()
    store.append(sid, [ss.user("one"), ss.assistant("two")])
    first = store.context(sid)
    other.append(sid, ss.user("three"))
    second = store.context(sid)
    assert [m["content"][0]["text"] for m in second.messages] == ["one", "two", "three"]
    assert second.source.tail[0] is first.source.tail[0]  # folded, not read again
    assert store.transcript(sid)[0] is store.transcript(sid)[0]
    second.messages.append({"role": "user", "content": "mine"})  # the caller's list, not the kept view's
    assert len(store.context(sid).messages) == 3
    other.append(sid, ev.compaction("earlier", 3))
    third = store.context(sid)
    assert third.source.tail[0] is not second.source.tail[-1]  # rebuilt from the rows
    assert third == store.context(sid, at=third.version)


def test_an_erased_session_has_no_kept_view(pair: tuple[Any, Any]) -> None:
    store, other = pair
    sid = store.create_session()
    store.append(sid, ss.user("secret"))
    store.context(sid)
    other.erase(sid, "asked")  # by another store: the door under test learns it from the head
    with pytest.raises(ss.SessionErased):
        store.context(sid)
    assert all(e.erased_at is not None for e in store.transcript(sid))


def test_the_pure_step_is_the_rebuild() -> None:
    """`advance` on an in-memory session equals `project` of the input at each version; None at a compaction."""
    store_events: list[ss.StoredEvent] = []
    batches = [[ss.user("a")], [*ss.assistant("b", tool_calls=[ss.tool_call("c1", "Read", {"p": 1})])],
               [ss.tool_result("c1", "out")], [ev.prune([3], rule="r")], [ev.system("s")], [ss.user("d")]]
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    view = project(input_from_events("s", []))
    for batch in batches:
        new = [ss.StoredEvent(e.event_id, "s", len(store_events) + i + 1, len(store_events) + i + 1, e.kind, e.payload,
                              e.meta, 5, now) for i, e in enumerate(batch)]
        store_events.extend(new)
        folded = advance(view, new)
        assert folded == project(input_from_events("s", store_events))
        view = folded
    cut = ss.StoredEvent("x", "s", len(store_events) + 1, 99, "compaction",
                         ev.compaction("sum", 2).payload, {}, 5, now)
    assert advance(view, [cut]) is None
    assert advance(view, [store_events[0]]) is None  # not the events after it
