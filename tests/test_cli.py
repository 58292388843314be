"""The `sessionstore` command line, on both backends, and the demo as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessionstore import SessionStore
from sessionstore.cli import main
from sessionstore.storage import head_revision

from .conftest import fresh_url


def run(url: str, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(main, ["--db", url, "--log-format", "json", *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.stdout


@pytest.fixture
def empty_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return fresh_url(backend, tmp_path, request, migrated=False)


def test_db_upgrade_and_current(empty_url: str) -> None:
    assert "(no schema)" in run(empty_url, "db", "current")
    assert f"is at revision {head_revision()}" in run(empty_url, "db", "upgrade")
    assert f"database: {head_revision()}; latest: {head_revision()}" in run(empty_url, "db", "current")


def test_import_then_read_everything_back(empty_url: str, transcripts: Path) -> None:
    table = run(empty_url, "import", str(transcripts / "pi"))  # an empty database gets the schema first
    assert "before-compaction.jsonl" in table and "large-session.jsonl" in table
    again = run(empty_url, "import", str(transcripts / "pi"))
    assert "│     0 │" in again  # nothing added the second time
    store = SessionStore(empty_url)
    try:
        sid = next(s.id for s in store.sessions() if s.head > 1200)
        events = store.transcript(sid)
    finally:
        store.close()
    assert sid in run(empty_url, "sessions")
    lines = run(empty_url, "log", sid, "--json").splitlines()
    assert [json.loads(line)["version"] for line in lines] == [e.version for e in events]
    assert json.loads(lines[5])["payload"] == events[5].payload
    brief = run(empty_url, "log", sid, "--brief", "--after", "10", "--upto", "14").splitlines()
    assert len(brief) == 4 and brief[0].startswith("v11") and brief[-1].startswith("v14")
    anthropic = json.loads(run(empty_url, "show", sid, "--format", "anthropic"))
    assert anthropic["messages"][0]["role"] == "user"
    openai = json.loads(run(empty_url, "show", sid, "--format", "openai"))
    assert {m["role"] for m in openai} >= {"user", "assistant", "tool"}
    view = json.loads(run(empty_url, "show", sid, "--format", "json"))
    assert view["version"] == len(events) and view["items"][0]["origin"] == "summary"
    assert "# context of" in run(empty_url, "show", sid, "--at", "50")
    stats = run(empty_url, "stats", sid)
    assert "transcript tokens" in stats and "compactions" in stats


def test_compact_fork_and_time_travel(store_url: str, transcripts: Path) -> None:
    run(store_url, "import", str(transcripts / "codex"))
    store = SessionStore(store_url)
    try:
        sid = max(store.sessions(), key=lambda s: s.head).id
        head = store.version(sid)
        before = store.context(sid).messages
    finally:
        store.close()
    planned = run(store_url, "compact", sid, "--dry-run", "--context-window", "60000")
    assert "(dry run)" in planned and "tokens after" in planned
    done = run(store_url, "compact", sid, "--context-window", "60000", "--instructions", "keep the test results")
    assert "summarised versions" in done
    store = SessionStore(store_url)
    try:
        assert store.version(sid) > head
        assert store.context(sid, at=head).messages == before  # the past view, unchanged
        assert store.context(sid).compaction.payload["instructions"] == "keep the test results"
    finally:
        store.close()
    child = run(store_url, "fork", sid, "--at", str(head)).strip()
    assert child and f"{sid}@v{head}" in run(store_url, "sessions")


def test_errors_are_one_clear_line(store_url: str) -> None:
    result = CliRunner().invoke(main, ["--db", store_url, "log", "no-such-session"])
    assert result.exit_code == 2
    assert "SessionNotFound: session 'no-such-session' does not exist" in result.stderr
    assert "Traceback" not in result.output


def test_the_demo_as_a_user_runs_it(tmp_path: Path) -> None:
    """`sessionstore demo` on the embedded default: ./sessionstore.db in the current folder."""
    env = {k: v for k, v in os.environ.items() if k != "SESSIONSTORE_URL"}
    script = Path(sys.executable).with_name("sessionstore")
    done = subprocess.run([str(script), "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "compacted (auto)" in out and "compacted (manual)" in out
    assert "[COMPRESSED:" in out  # tree-sitter outlines of this repository's own files
    assert "The rebuilt context" in out and "The log" in out
    store = SessionStore(f"sqlite:///{tmp_path / 'sessionstore.db'}")
    try:
        sid = store.sessions()[0].id
        kinds = [e.kind for e in store.events(sid)]
        assert {"compaction", "prune", "rewrite", "tool_call", "tool_result"} <= set(kinds)
        reads = [e for e in store.events(sid) if e.kind == "tool_call" and e.payload["name"] == "Read"]
        assert any(e.payload["input"]["file_path"].endswith("sessionstore/repository/core.py") for e in reads)
    finally:
        store.close()
