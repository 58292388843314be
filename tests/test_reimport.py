"""Re-importing a transcript that grew, whatever the store added to its session meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.importers import import_path
from sessionstore.importers import parse_file

from .conftest import FIXTURE_TRANSCRIPTS

CLAUDE = next((FIXTURE_TRANSCRIPTS / "claude-code" / "recorded").glob("*.jsonl"))
PI = next((FIXTURE_TRANSCRIPTS / "pi" / "recorded").glob("*.jsonl"))


@pytest.mark.parametrize("source", [CLAUDE, PI], ids=["claude-code", "pi"])
@pytest.mark.citus
def test_reimport_after_compaction_appends_only_the_new_lines(store: SessionStore, tmp_path: Path,
                                                               source: Path) -> None:
    lines = source.read_bytes().splitlines(keepends=True)
    grown = tmp_path / source.name
    grown.write_bytes(b"".join(lines[:len(lines) // 2]))
    first = import_path(store, grown)
    assert first.ok
    sid = first.session_ids[0]
    # What the store adds meanwhile: a compaction (these recordings are too short for the planner
    # to find one worth a summary, so the application records one, as a provider's would be) and
    # a retraction marker.
    last_user = max(e.version for e in store.transcript(sid) if e.kind == "message" and e.payload["role"] == "user")
    store.append(sid, ss.events.compaction("The user asked about logging; the assistant read the code.",
                                           last_user, tokens_before=store.context(sid).tokens, trigger="manual",
                                           strategy="single", summarizer="offline"))
    store.retract(sid, [last_user - 1], reason="noise")
    ours = [e.event_id for e in store.transcript(sid) if e.kind in ("compaction", "prune", "rewrite")]
    assert len(ours) == 2
    grown.write_bytes(b"".join(lines))  # the agent went on writing its file
    again = import_path(store, grown)
    assert again.ok, again.failures
    parsed = [e.event_id for e in parse_file(grown).events]
    stored = [e.event_id for e in store.transcript(sid)]
    assert len(stored) == len(set(stored)) == len(parsed) + len(ours)  # nothing duplicated, nothing lost
    assert [i for i in stored if i not in ours] == parsed  # the file's events, in its order
    assert again.events_added == len(parsed) - first.events_added
    view = store.context(sid)
    latest = max(e.version for e in store.transcript(sid) if e.kind == "compaction")
    assert view.compaction is not None and view.compaction.version == latest  # ours, or the file's own later one
    assert view.source.tail[-1].event_id == parsed[-1]
    assert import_path(store, grown).events_added == 0  # and once more: nothing to do


@pytest.mark.citus
def test_reimport_of_an_erased_session_says_so(store: SessionStore, tmp_path: Path) -> None:
    report = import_path(store, CLAUDE)
    sid = report.session_ids[0]
    store.erase(sid, reason="user asked")
    for divergence in ("fail", "fork"):
        again = import_path(store, CLAUDE, on_divergence=divergence)
        assert not again.ok
        assert any(f"session {sid} was erased (user asked)" in str(i) for i in again.failures)


def test_a_byte_order_mark_on_line_one_is_accepted(store: SessionStore, tmp_path: Path) -> None:
    bom = tmp_path / PI.name
    bom.write_bytes(b"\xef\xbb\xbf" + PI.read_bytes())
    report = import_path(store, bom)
    assert report.ok and report.events_added == len(parse_file(PI).events)
