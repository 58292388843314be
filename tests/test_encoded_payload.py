"""An event checked once keeps its payload's and meta's JSON text for the append (`events.checked`),
which neither validates nor encodes them again: what is stored is still the event as it is when
appended, and a check proves nothing for what changed since (another kind, a changed meta) or
for a payload that was not checked."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from sessionstore import SessionStore
from sessionstore import events as ev
from sessionstore.errors import InvalidEvent


def _store(tmp_path: Path) -> SessionStore:
    store = SessionStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    return store


def test_checked_payload_is_stored_as_it_is_when_appended(tmp_path: Path) -> None:
    store = _store(tmp_path)
    kept = ev.checked(ev.user("kept as checked"))
    changed = ev.checked(ev.user("before"))
    changed.payload["content"] = [ev.text_block("after")]  # a change after the check drops the kept text
    dropped = ev.checked(ev.user("dropped key"))
    dropped.payload.pop("content")
    dropped.payload["content"] = "a string"
    store.create_session("s", events=[kept, changed, dropped])
    assert [e.payload for e in store.events("s")] == [
        {"role": "user", "content": [{"type": "text", "text": "kept as checked"}]},
        {"role": "user", "content": [{"type": "text", "text": "after"}]},
        {"role": "user", "content": "a string"},
    ]
    store.close()


def test_checked_refuses_what_the_append_would() -> None:
    with pytest.raises(InvalidEvent, match="payload"):
        ev.checked(ev.NewEvent("message", {"role": "user", "content": "x", "n": float("nan")}))


def test_a_checked_meta_is_stored_as_it_is_when_appended(store: SessionStore) -> None:
    kept = ev.checked(ev.user("a", meta={"line": 1, "cost": 5e-06}))
    annotated = ev.checked(ev.user("b", meta={"line": 2}))
    annotated.meta.update({"usage": {"input": 3}})  # what an importer adds from a later line
    set_later = ev.checked(ev.user("c", meta={"line": 3}))
    set_later.meta["created_at_inferred"] = True
    replaced = replace(ev.checked(ev.user("d", meta={"line": 4})), meta={"line": 44})
    store.create_session("s", events=[kept, annotated, set_later, replaced])
    assert [e.meta for e in store.events("s")] == [
        {"line": 1, "cost": 5e-06}, {"line": 2, "usage": {"input": 3}}, {"line": 3, "created_at_inferred": True},
        {"line": 44}]
    assert store.verify()[0].ok


def test_a_check_proves_nothing_for_another_kind_or_an_unchecked_payload(store: SessionStore) -> None:
    as_message = ev.checked(ev.user("hello"))
    with pytest.raises(InvalidEvent, match="payload.call_id"):  # a message's payload is no tool result
        store.create_session("s", events=[replace(as_message, kind="tool_result")])
    forged = ev.EncodedPayload({"role": "user"}, '{"role":"user","content":"x"}')  # not made by `checked`
    with pytest.raises(InvalidEvent, match="payload.content"):
        store.create_session("s", events=[ev.NewEvent("message", forged)])
    with pytest.raises(InvalidEvent, match="created_at"):  # the rest of a checked event is checked again
        store.create_session("s", events=[replace(as_message, created_at=datetime(2026, 1, 1))])
    assert store.sessions() == []
