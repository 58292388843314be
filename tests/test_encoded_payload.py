"""A payload checked once keeps its JSON text for the append (`events.checked`): what is stored is
still the payload as it is when appended."""

from __future__ import annotations

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
