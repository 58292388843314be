"""Retention as a policy (`store.retain`, `sessionstore retain`): the sessions past an age, in a
metadata selection, beyond the newest N, are erased whole with their parts as `erase` erases
them; forks keep their own events; every chain still verifies; a dry run lists exactly what a
run erases; a session written to during the run is kept; nothing goes that no policy names."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import sessionstore as ss
from sessionstore import InvalidPolicy, RetentionPolicy, SessionErased, SessionStore
from sessionstore.cli import main
from sessionstore.repository import BEGIN, Program
from sessionstore.retention import Candidate, age_text, choose, newest

from .test_audit import door  # noqa: F401 (both doors)

NOW = datetime.now(timezone.utc)
DAY = timedelta(days=1)


def test_a_policy_must_name_what_goes_and_chooses_by_last_event() -> None:
    for bad in ({}, {"keep_last": 0}, {"where": {"user": "ann"}}, {"older_than": timedelta(0)},
                {"older_than": -DAY}, {"older_than": 90}, {"older_than": timedelta(days=999_999)},
                {"keep_last": -1}, {"keep_last": True},
                {"older_than": DAY, "where": ["user", "ann"]}, {"older_than": DAY, "where": {"user": ["ann"]}},
                {"older_than": DAY, "reason": " "}):
        with pytest.raises(InvalidPolicy):
            RetentionPolicy(**bad)
    old = [Candidate(f"s{i}", 1, NOW - (200 + i) * DAY, {}) for i in range(3)]  # s0 newest of the old
    fresh = Candidate("new", 1, NOW - DAY, {})
    by_age = RetentionPolicy(older_than=90 * DAY)
    assert [c.session_id for c in choose(old, set(), by_age, NOW)] == ["s2", "s1", "s0"]  # oldest first
    two = RetentionPolicy(older_than=90 * DAY, keep_last=2)
    assert newest([fresh, *old], two) == {"new", "s0"}  # the first two as sessions() lists them: newest first
    assert [c.session_id for c in choose(old, {"new", "s0"}, two, NOW)] == ["s2", "s1"]
    assert [c.session_id for c in choose([fresh, *old], {"new"}, RetentionPolicy(keep_last=1), NOW)] \
        == ["s2", "s1", "s0"]  # no age: everything but the kept
    assert choose([fresh], set(), by_age, NOW) == []
    assert by_age.describe() == "retention: older than 90d"
    assert [age_text(a) for a in (timedelta(hours=36), timedelta(seconds=90), timedelta(milliseconds=1500))] \
        == ["36h", "90s", "1.5s"]


def _session(store: Any, days_ago: float, text: str, metadata: dict[str, Any] | None = None) -> str:
    """A session whose events happened `days_ago` (as an import's source timestamps say): it
    started then and was last active then."""
    at = NOW - timedelta(days=days_ago)
    return store.create_session(metadata=metadata, events=[ss.user(f"{text}: the question", created_at=at),
                                                           ss.assistant(f"{text}: the answer", created_at=at)])


def _erased(store: Any, sid: str) -> bool:
    return store.session(sid).erased_at is not None


def test_retain_erases_the_sessions_past_the_policy_with_their_parts(door: Any) -> None:
    ann_old = _session(door, 200, "ann's oldest", {"user": "ann"})
    sub = _session(door, 200, "ann's subagent", {"user": "ann", "parent_session": ann_old, "role": "subagent"})
    ann_older = _session(door, 300, "ann's other", {"user": "ann"})
    fork = door.fork(ann_older)  # started now: the newest of ann's (a fork keeps its parent's user)
    door.append(fork, ss.user("the fork's own words"))
    ann_kept = _session(door, 150, "ann's newest old one", {"user": "ann"})  # kept: keep_last=3
    ann_new = _session(door, 10, "ann's recent", {"user": "ann"})
    bob_old = _session(door, 400, "bob's", {"user": "bob"})
    policy = RetentionPolicy(older_than=90 * DAY, where={"user": "ann"}, keep_last=3)

    dry = door.retain(RetentionPolicy(older_than=90 * DAY, where={"user": "ann"}, keep_last=3, dry_run=True))
    assert [e.session_id for e in dry.erased] == [ann_older, ann_old]  # oldest first
    assert dry.session_ids == (ann_older, ann_old, sub)
    assert dry.erased[0].forks == (fork,) and dry.erased[1].parts == (sub,) and dry.events == 6
    assert dry.bytes_before is None and not any(_erased(door, s) for s in (ann_old, sub, ann_older))

    report = door.retain(policy)
    assert report.session_ids == dry.session_ids and report.kept_active == ()  # exactly what the dry run said
    assert report.reason == "retention: older than 90d where user=ann keeping the newest 3"
    assert all(_erased(door, s) for s in report.session_ids)
    assert not any(_erased(door, s) for s in (fork, ann_kept, ann_new, bob_old))
    assert [e.payload for e in door.transcript(fork) if e.erased_at is None] == [ss.user("the fork's own words").payload]
    assert door.session(ann_old).erase_reason == report.reason
    assert all(r.ok for r in door.verify())
    assert report.bytes_before is not None and report.bytes_after is not None and report.space
    assert door.retain(policy).erased == ()  # erased sessions are not chosen again
    # a part whose main session was erased alone (only_this) has nothing to go with: judged on its own
    carl = _session(door, 200, "carl's", {"user": "carl"})
    carl_sub = _session(door, 200, "carl's subagent", {"user": "carl", "parent_session": carl})
    door.erase(carl, "the main session alone", only_this=True)
    carls = door.retain(RetentionPolicy(older_than=90 * DAY, where={"user": "carl"}), vacuum=True)
    assert carls.session_ids == (carl_sub,)
    assert ("VACUUM FULL" in carls.space) == (door.backend == "postgresql")  # the tables rewritten, on request
    # keep_last alone: the newest one of bob's stays, the rest of the selection goes
    bob_oldest = _session(door, 500, "bob's other", {"user": "bob"})
    assert door.retain(RetentionPolicy(where={"user": "bob"}, keep_last=1)).session_ids == (bob_oldest,)
    assert not _erased(door, bob_old)


def _before_each_transaction(program: Program[Any], action: Callable[[], None]) -> Program[Any]:
    """`program` as it is, with `action` run just before it begins each transaction: another
    writer that gets in between the choice and the erasure."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            op = program.send(value) if error is None else program.throw(error)
        except StopIteration as stop:
            return stop.value
        if op is BEGIN:
            action()
        try:
            value, error = (yield op), None
        except Exception as exc:
            value, error = None, exc


@pytest.mark.citus  # the gated erasures, the VACUUM and the sizes on a cluster too
def test_a_session_appended_to_during_the_run_is_kept(store: SessionStore, store_url: str) -> None:
    first = _session(store, 100, "written to while the run goes")
    second = _session(store, 99, "left alone")
    writer = SessionStore(store_url)  # a running agent (or `watch`) on its own connection
    appended: list[str] = []

    def append_once() -> None:
        if not appended:
            writer.append(first, ss.user("still talking"))
            appended.append(first)

    try:
        policy = RetentionPolicy(older_than=90 * DAY)
        report = store._run(lambda: _before_each_transaction(store._repo.retain(policy), append_once))
    finally:
        writer.close()
    assert report.kept_active == (first,) and report.session_ids == (second,)
    assert not _erased(store, first) and _erased(store, second)
    assert store.transcript(first)[-1].payload == ss.user("still talking").payload
    assert all(r.ok for r in store.verify())
    # "older than" is now false for it: the next run leaves it
    assert store.retain(RetentionPolicy(older_than=90 * DAY, dry_run=True)).erased == ()


class _RetainingSummarizer:
    """A summariser during whose call a retention run (another store, another connection) erases
    the session being compacted: the compaction's planning outlives its session."""

    name = "offline"

    def __init__(self, url: str) -> None:
        self.url = url
        self.inner = ss.OfflineSummarizer()
        self.report: ss.RetentionReport | None = None

    def summarize(self, request: ss.SummaryRequest) -> str:
        if self.report is None:
            with SessionStore(self.url) as other:
                self.report = other.retain(RetentionPolicy(older_than=90 * DAY))
        return self.inner.summarize(request)


def test_a_compaction_running_beside_retention_never_half_erases(store: SessionStore, store_url: str) -> None:
    at = NOW - 120 * DAY
    sid = store.create_session(events=[ss.system("You are careful.", created_at=at)]
                 + [ss.user(f"question {i}: " + "why does the parser drop the last line " * 40, created_at=at)
                    if i % 2 == 0 else ss.assistant(f"answer {i}: " + "because the loop ends early " * 40,
                                                    created_at=at) for i in range(24)])
    head = store.version(sid)
    summarizer = _RetainingSummarizer(store_url)
    policy = ss.CompactionPolicy(context_window=12_000, reserve_tokens=2_000, keep_recent_tokens=1_500,
                                 min_summarized_tokens=120, summary_max_tokens=2_500)
    with pytest.raises(SessionErased):
        store.compact(sid, policy, summarizer)
    assert summarizer.report is not None and summarizer.report.session_ids == (sid,)
    assert store.version(sid) == head  # the compaction's events were refused, whole
    assert all(e.erased_at is not None for e in store.transcript(sid))
    assert all(r.ok for r in store.verify())


def test_the_retain_command_refuses_what_names_nothing_and_erases_what_its_dry_run_listed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    with SessionStore(url) as store:
        store.migrate()
        old = _session(store, 100, "the old words", {"user": "ann", "team": "x"})
        # ~27 KB of words in events short enough to be stored as text (a longer one is compressed)
        store.append(old, [ss.user("lorem ipsum " * 150, created_at=NOW - timedelta(days=100)) for _ in range(15)])
        new = _session(store, 1, "the new words", {"user": "ann", "team": "x"})
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(main, ["--db", url, "retain", *args], catch_exceptions=False)

    refusals = [((), "needs a policy"), (("--older-than", "90x"), "not an age"),
                (("--older-than", "-3d"), "not an age"), (("--older-than", "99999999999w"), "not an age"),
                (("--older-than", "3000000d"), "older than any date"),
                (("--older-than", "90d", "--where", "user"), "KEY=VALUE"),
                (("--keep-last", "-1"), "not a number"), (("--keep-last", "0"), "must name what goes"),
                (("--where", "user=ann"), "needs a policy")]
    for bad, says in refusals:
        refused = run(*bad)
        assert refused.exit_code == 2 and says in refused.stderr, (bad, refused.stderr)
        assert len(refused.stderr.strip().splitlines()) == 1 and refused.stdout == ""
    dry = run("--older-than", "90d", "--where", "user=ann", "--where", "team=x", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    listed = json.loads(dry.stdout)
    assert listed["sessions"] == [old] and listed["dry_run"] and listed["bytes_before"] is None
    done = run("--older-than", "90d", "--where", "user=ann", "--where", "team=x")
    assert done.exit_code == 0, done.output
    assert f"erased {old}" in done.stdout and "erased 1 session(s)" in done.stdout and new not in done.stdout
    before, after = (int(n.replace(",", "")) for n in re.search(r"space: ([\d,]+) → ([\d,]+) bytes", done.stdout)
                     .groups())  # type: ignore[union-attr]
    assert after < before - 20_000  # the old words' pages are gone from the file
    assert b"lorem ipsum" not in (tmp_path / "r.db").read_bytes()
    with SessionStore(url) as store:
        assert _erased(store, old) and not _erased(store, new) and all(r.ok for r in store.verify())
