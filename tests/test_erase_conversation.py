"""Erasing a conversation: the session and every session that is part of it (an imported Claude
Code session's subagents and its compaction summariser's transcript, which quote it), with no byte
of the user's messages left in any row, index or file; forks are listed and keep their own events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.cli import main
from sessionstore.importers import import_path
from sessionstore.storage.packing import stored_text

from .conftest import FIXTURE_TRANSCRIPTS
from .test_audit import _file_bytes, door, sql  # noqa: F401 (door: both doors)

MAIN = next((FIXTURE_TRANSCRIPTS / "claude-code" / "recorded-2.1.39").glob("*.jsonl"))


def _user_texts(store: SessionStore, sid: str) -> list[str]:
    """The user's typed messages (long enough to be unmistakable when found elsewhere)."""
    texts = []
    for event in store.transcript(sid):
        if event.kind == "message" and event.payload["role"] == "user":
            for block in ss.events.content_blocks(event.payload["content"]):
                if block.get("type") == "text" and len(block["text"]) >= 24 and not block["text"].startswith("<"):
                    texts.append(block["text"][:24])  # the summariser quotes them cut short
    return texts


def _rows_text(url: str, ids: list[str]) -> str:
    rows = []
    for sid in ids:
        backend = "sqlite" if url.startswith("sqlite") else "postgresql"  # large values are packed on SQLite
        rows += sql(url, f"SELECT {stored_text(backend)}, {stored_text(backend, 'meta')}, call_id FROM events "
                         "WHERE session_id = :s", s=sid)
        rows += sql(url, "SELECT CAST(metadata AS TEXT), erase_reason FROM sessions WHERE id = :s", s=sid)
    return "\n".join(str(value) for row in rows for value in row)


@pytest.mark.citus
def test_erase_reaches_the_whole_conversation_and_lists_forks(store: SessionStore, store_url: str) -> None:
    report = import_path(store, MAIN)
    assert report.ok, report.failures
    sid = next(i for i in report.session_ids if ":" not in i)
    talk = store.conversation(sid)
    roles = sorted(str(p.metadata.get("role")) for p in talk.parts[1:])
    assert talk.parts[0].id == sid and roles == ["compaction", "subagent"], roles
    parts = [p.id for p in talk.parts]
    texts = _user_texts(store, sid)
    assert texts
    # the summariser's transcript quotes the user: erasing the main session alone would leave it
    assert any(t in _rows_text(store_url, parts[1:]) for t in texts)
    word = max(texts[0].split(), key=len)
    assert [h for h in store.search(word) if h.session_id in parts]
    fork = store.fork(sid)
    store.append(fork, ss.user("the fork's own words, 7c1e"))
    assert [f.id for f in store.conversation(sid).forks] == [fork]
    unrelated = store.create_session()
    store.append(unrelated, ss.user("unrelated words, 93ab"))

    runner = CliRunner()
    result = runner.invoke(main, ["--db", store_url, "erase", sid[:12], "--reason", "user asked", "--yes"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"and {len(parts) - 1} session(s) that are part of it" in result.stderr
    assert fork in result.stderr and "1 own event(s)" in result.stderr
    assert f"erased {len(parts)} session(s)" in result.stdout
    assert ("--vacuum" in result.stdout) == store_url.startswith("postgresql")

    assert all(store.session(p).erased_at is not None for p in parts)
    left = _rows_text(store_url, parts)
    assert not [t for t in texts if t in left]
    assert store.session(fork).erased_at is None and store.session(unrelated).erased_at is None
    assert [e.payload for e in store.transcript(fork) if e.erased_at is None] == [ss.user("the fork's own words, 7c1e").payload]
    assert not [h for h in store.search(word) if h.session_id in parts]
    assert all(r.ok for r in store.verify())
    if store_url.startswith("postgresql"):  # VACUUM FULL on request, and nothing changes by it
        assert store.erase(sid, "again", vacuum=True).erase_reason == "user asked"
        assert all(r.ok for r in store.verify())


def test_only_this_keeps_the_old_scope(door: Any) -> None:
    main_sid = door.create_session()
    door.append(main_sid, ss.user("the main session"))
    sub = door.create_session(metadata={"parent_session": main_sid, "role": "subagent"})
    door.append(sub, ss.user("the subagent"))
    subsub = door.create_session(metadata={"parent_session": sub, "role": "subagent"})
    assert [p.id for p in door.conversation(main_sid).parts] == [main_sid, sub, subsub]
    door.erase(main_sid, "just this", only_this=True)
    assert door.session(sub).erased_at is None
    door.erase(main_sid, "now the rest")  # the main session is erased already: its parts are not yet
    assert door.session(sub).erased_at is not None and door.session(subsub).erased_at is not None
    assert door.session(main_sid).erase_reason == "just this"


def test_no_byte_of_the_conversation_is_left_in_the_sqlite_file(tmp_path: Path) -> None:
    database = tmp_path / "erase.db"
    store = SessionStore(f"sqlite:///{database}")
    store.migrate()
    try:
        sid = next(i for i in import_path(store, MAIN).session_ids if ":" not in i)
        texts = _user_texts(store, sid)
        data = _file_bytes(database)
        assert all(t.encode() in data for t in texts)
        store.erase(sid, "gdpr")
        assert all(r.ok for r in store.verify())
    finally:
        store.close()
    data = _file_bytes(database)
    assert not [t for t in texts if t.encode() in data]
