"""The `sessionstore` command line, on both backends, and the demo as a user runs it."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import click
from click.testing import CliRunner

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.cli import main
from sessionstore.cli.app import GC_THRESHOLDS
from sessionstore.storage import head_revision

from .conftest import FIXTURE_TRANSCRIPTS, fresh_url

CLAUDE_FIXTURE = FIXTURE_TRANSCRIPTS / "claude-code" / "agentcmd" / "06381696-0074-49f8-863e-6ad4fac507f9.jsonl"
SCRIPT = Path(sys.executable).with_name("sessionstore")


def run(url: str, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(main, ["--db", url, "--log-format", "json", *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.stdout


def script(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real console script, as a user runs it."""
    base = {k: v for k, v in os.environ.items() if k not in ("SESSIONSTORE_URL", "ANTHROPIC_API_KEY")}
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, env={**base, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout)


def only_session(url: str) -> tuple[str, list[ss.StoredEvent]]:
    """The id and transcript of the one session in the database at `url`."""
    store = SessionStore(url)
    try:
        [info] = store.sessions()
        return info.id, store.transcript(info.id)
    finally:
        store.close()


@pytest.fixture
def empty_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return fresh_url(backend, tmp_path, request, migrated=False)


def test_db_upgrade_and_current(empty_url: str) -> None:
    assert "(no schema)" in run(empty_url, "db", "current")
    assert f"is at revision {head_revision()}" in run(empty_url, "db", "upgrade")
    assert f"database: {head_revision()}; latest: {head_revision()}" in run(empty_url, "db", "current")


def test_a_run_collects_garbage_at_the_cli_s_thresholds(tmp_path: Path) -> None:
    """The CLI's process sets the collector's thresholds for large sessions (`GC_THRESHOLDS`)."""
    default = (700, 10, 10)  # Python's, which the suite's conftest also raises: put back for this run
    gc.set_threshold(*default)
    try:
        result = CliRunner().invoke(main, ["--db", f"sqlite:///{tmp_path / 'gc.db'}", "db", "upgrade"])
        assert result.exit_code == 0, result.output
        assert gc.get_threshold() == GC_THRESHOLDS != default
    finally:
        gc.set_threshold(*GC_THRESHOLDS)


def test_import_then_read_everything_back(empty_url: str, transcripts: Path) -> None:
    table = run(empty_url, "import", str(transcripts / "claude-code" / "agentcmd"))  # empty database: schema first
    assert "06381696-0074-49f8-863e-6ad4fac507f9" in table and "1 of 1 file(s) imported in full" in table
    again = run(empty_url, "import", str(transcripts / "claude-code" / "agentcmd"))
    assert "│     0 │" in again  # nothing added the second time
    sid, events = only_session(empty_url)
    assert sid in run(empty_url, "sessions")
    lines = run(empty_url, "log", sid[:6], "--json").splitlines()  # a unique prefix names the session
    assert [json.loads(line)["version"] for line in lines] == [e.version for e in events]
    assert json.loads(lines[5])["payload"] == events[5].payload
    brief = run(empty_url, "log", sid, "--brief", "--all", "--after", "2", "--upto", "6").splitlines()
    assert len(brief) == 4 and brief[0].startswith("v3") and brief[-1].startswith("v6")
    anthropic = json.loads(run(empty_url, "show", sid, "--format", "anthropic"))
    assert anthropic["messages"][0]["role"] == "user"
    openai = json.loads(run(empty_url, "show", sid, "--format", "openai"))
    assert {m["role"] for m in openai} >= {"user", "assistant", "tool"}
    view = json.loads(run(empty_url, "show", sid, "--format", "json"))
    assert view["version"] == len(events)
    assert "# context of" in run(empty_url, "show", sid, "--at", "5")
    stats = run(empty_url, "stats", sid)
    assert "transcript tokens" in stats and "compactions" in stats


def test_compact_fork_and_time_travel(store_url: str, transcripts: Path) -> None:
    run(store_url, "import", str(CLAUDE_FIXTURE))
    store = SessionStore(store_url)
    try:
        sid = store.sessions()[0].id
        head = store.version(sid)
        before = store.context(sid).messages
    finally:
        store.close()
    planned = run(store_url, "compact", sid, "--dry-run", "--context-window", "60000", "--keep-recent-tokens", "500")
    assert "(dry run)" in planned and "tokens after" in planned
    assert "the summary it would write:" in planned and "## Primary request" in planned
    done = run(store_url, "compact", sid, "--context-window", "60000", "--keep-recent-tokens", "500",
               "--instructions", "keep the scrolling decision")
    assert "summarised versions" in done or "first kept version" in done
    store = SessionStore(store_url)
    try:
        assert store.version(sid) > head
        assert store.context(sid, at=head).messages == before  # the past view, unchanged
        assert store.context(sid).compaction.payload["instructions"] == "keep the scrolling decision"
    finally:
        store.close()
    child = run(store_url, "fork", sid, "--at", str(head)).strip()
    assert child and f"{sid}@v{head}" in run(store_url, "sessions")


# --------------------------------------------------------------------------- exit status and errors


def test_every_help_states_the_exit_status_rule() -> None:
    """One rule for every command, stated in each --help (sub-commands of groups included)."""
    runner = CliRunner()
    seen = 0

    def walk(command: object, path: list[str]) -> None:
        nonlocal seen
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, path
        text = " ".join(result.output.split())
        assert "Exit status: 0 done (warnings allowed); 1 something was not done" in text, path
        assert "2 usage or operational error" in text and "130 interrupted" in text, path
        seen += 1
        if isinstance(command, click.Group):  # the root loads its commands on first use
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])

    walk(main, [])
    assert seen >= 10
    version = runner.invoke(main, ["--version"])
    assert version.exit_code == 0 and version.output.startswith("sessionstore, version ")


@pytest.mark.parametrize("case", ["refused", "bad-path", "schema", "not-a-url", "missing-file"])
def test_operational_errors_are_one_line_exit_2(case: str, tmp_path: Path) -> None:
    """The real console script: one line saying what to do, status 2, never a traceback."""
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    empty = tmp_path / "empty.db"
    if case == "schema":
        import sqlite3

        sqlite3.connect(empty).close()
    url, args, says = {
        "refused": ("postgresql://postgres@127.0.0.1:9/none", ["sessions"], "cannot connect to"),
        "bad-path": (f"sqlite:///{not_a_folder}/x.db", ["import", str(CLAUDE_FIXTURE)], "cannot write the SQLite"),
        "schema": (f"sqlite:///{empty}", ["sessions"], f"`sessionstore --db sqlite:///{empty} db upgrade`"),
        "not-a-url": ("nonsense://", ["sessions"], "unsupported database"),
        "missing-file": (f"sqlite:///{tmp_path / 'nothing.db'}", ["log", "abc"], "no database at"),
    }[case]
    done = script("--db", url, *args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    if case == "missing-file":
        assert not (tmp_path / "nothing.db").exists()  # reading never creates a database


def test_missing_anthropic_credentials_is_one_line_exit_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert script("--db", url, "import", str(CLAUDE_FIXTURE)).returncode == 0
    done = script("--db", url, "compact", "0638", "--summarizer", "anthropic", "--context-window", "60000",
                  "--keep-recent-tokens", "500")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "ANTHROPIC_API_KEY" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_unknown_and_ambiguous_session_ids(store_url: str) -> None:
    store = SessionStore(store_url)
    try:
        for sid in ("abc111", "abc222", "zed-1", "zed-1:agent-x"):
            store.create_session(sid)
    finally:
        store.close()
    unknown = CliRunner().invoke(main, ["--db", store_url, "log", "no-such-session"])
    assert unknown.exit_code == 2 and "no session 'no-such-session'" in unknown.stderr
    ambiguous = CliRunner().invoke(main, ["--db", store_url, "stats", "abc"])
    assert ambiguous.exit_code == 2
    assert "ambiguous" in ambiguous.stderr and "abc111" in ambiguous.stderr and "abc222" in ambiguous.stderr
    assert "session abc222" in run(store_url, "stats", "abc2")
    assert "session zed-1\n" in run(store_url, "stats", "zed")  # a session and its subagents: the session
    assert "Traceback" not in ambiguous.output


def test_import_exit_status_and_what_was_not_imported(tmp_path: Path) -> None:
    lines = CLAUDE_FIXTURE.read_bytes().split(b"\n")
    folder = tmp_path / "in"
    folder.mkdir()
    glued = folder / "glued.jsonl"  # two objects on one line: recovered, a warning
    glued.write_bytes(b"\n".join([lines[0] + lines[1], *lines[2:]]))
    url = f"sqlite:///{tmp_path / 's.db'}"
    done = script("--db", url, "import", str(glued))
    assert done.returncode == 0, done.stderr
    assert "warning:" in done.stderr and "2 JSON values on one line" in done.stderr
    broken = folder / "broken.jsonl"
    broken.write_bytes(b"\n".join([lines[0], lines[1][:40], *lines[2:]]))
    (folder / "notes.jsonl").write_text('{"hello": "world"}\n')
    done = script("--db", url, "import", str(folder))
    assert done.returncode == 1, done.stderr
    assert f"{broken}:2:" in done.stderr  # listed as file:line
    assert f"{folder / 'notes.jsonl'}:0: unknown format" in done.stderr
    assert "not imported" in done.stdout and "1 of 3 file(s) imported in full, 1 in part" in done.stdout


def test_a_folder_without_transcripts_is_exit_1_and_creates_nothing(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "readme.txt").write_text("nothing here")
    done = script("import", str(tmp_path / "in"), cwd=tmp_path)
    assert done.returncode == 1 and "nothing to import: no transcript file (*.jsonl, *.json, *.traj, *.md, *.db)" in done.stderr
    (tmp_path / "in" / "notes.jsonl").write_text('{"note": 1}\n')
    done = script("import", str(tmp_path / "in"), cwd=tmp_path)
    assert done.returncode == 1 and "nothing to import: 1 file(s), none of them a Codex, Qwen Code, Claude Code, " \
        "Pi, Gemini CLI, OpenCode, OpenHands, SWE-agent, Copilot CLI, Cline, Aider, Cursor or mini-SWE-agent " \
        "transcript" in " ".join(done.stderr.split())
    assert not (tmp_path / "sessionstore.db").exists()


def test_the_import_help_names_every_agent_the_importers_know() -> None:
    from sessionstore.cli import app
    from sessionstore.importers import formats

    agents = [f.label for f in formats.known() if f.name != "sessionstore"]
    assert len(agents) == 13
    command = main.get_command(click.Context(main), "import")
    assert command is not None and command.help is not None
    for text in (app.COMMANDS["import"][1], " ".join(command.help.split())):
        assert all(agent in text for agent in agents), text


def test_interrupted_import_reports_and_leaves_no_empty_session(tmp_path: Path, transcripts: Path) -> None:
    """Ctrl-C (SIGINT) in the middle of an import: status 130, a summary, no session row without events."""
    import signal
    import time

    url = f"sqlite:///{tmp_path / 's.db'}"
    folder = tmp_path / "many"
    folder.mkdir()
    source = CLAUDE_FIXTURE.read_text()
    files = 250  # 60 took a second to import, and a Ctrl-C came after the end (exit -2, not 130)
    for i in range(files):  # distinct sessions, so there is work to interrupt
        (folder / f"s{i:03}.jsonl").write_text(source.replace("06381696-0074-49f8-863e-6ad4fac507f9", f"s{i:03}"))
    env = {k: v for k, v in os.environ.items() if k != "SESSIONSTORE_URL"}
    proc = subprocess.Popen([str(SCRIPT), "--db", url, "import", str(folder)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    store = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until it has written something
        time.sleep(0.02)
        if (tmp_path / "s.db").exists():
            store = store or SessionStore(url)
            try:
                if store.sessions():
                    break
            except Exception:  # the schema is being created
                continue
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted after" in stderr and "Traceback" not in stderr
    store = store or SessionStore(url)
    try:
        infos = store.sessions()
        assert infos and all(info.head > 0 for info in infos)
    finally:
        store.close()
    resumed = script("--db", url, "import", str(folder))
    assert resumed.returncode == 0 and f"{files} of {files} file(s) imported in full" in resumed.stdout


# --------------------------------------------------------------------------- divergence


def test_reimport_of_a_corrected_file_forks_at_the_divergence(store_url: str, tmp_path: Path) -> None:
    lines = CLAUDE_FIXTURE.read_bytes().split(b"\n")
    damaged = tmp_path / "06381696-0074-49f8-863e-6ad4fac507f9.jsonl"
    damaged.write_bytes(b"\n".join([*lines[:8], lines[8][:30], *lines[9:]]))  # one line cut: skipped at import
    result = CliRunner().invoke(main, ["--db", store_url, "import", str(damaged)])
    assert result.exit_code == 1 and f"{damaged}:9:" in result.stderr
    sid, stored = only_session(store_url)
    damaged.write_bytes(CLAUDE_FIXTURE.read_bytes())  # the corrected file
    refused = CliRunner().invoke(main, ["--db", store_url, "import", str(damaged)])
    assert refused.exit_code == 1 and "--on-divergence fork" in refused.stderr
    forked = CliRunner().invoke(main, ["--db", store_url, "import", "--on-divergence", "fork", str(damaged)])
    assert forked.exit_code == 0, forked.output
    store = SessionStore(store_url)
    try:
        child = next(s for s in store.sessions() if s.parent_id == sid)
        assert child.id in forked.stdout and f"continues in session {child.id}" in forked.stderr
        assert store.transcript(sid) == stored  # nothing stored was changed
        common = child.fork_version
        assert [e.payload for e in store.transcript(child.id)][:common] == [e.payload for e in stored][:common]
        fresh = SessionStore(f"sqlite:///{tmp_path / 'fresh.db'}")
        fresh.migrate()
        try:
            from sessionstore.importers import import_file

            whole = fresh.transcript(import_file(fresh, CLAUDE_FIXTURE).session_id)
        finally:
            fresh.close()
        assert [e.payload for e in store.transcript(child.id)] == [e.payload for e in whole]
    finally:
        store.close()
    again = CliRunner().invoke(main, ["--db", store_url, "import", "--on-divergence", "fork", str(damaged)])
    assert again.exit_code == 0
    store = SessionStore(store_url)
    try:
        assert len([s for s in store.sessions() if s.parent_id == sid]) == 1  # found again, not forked twice
    finally:
        store.close()


# --------------------------------------------------------------------------- reading


def test_sessions_listing_newest_first_with_what_happened(store_url: str, tmp_path: Path) -> None:
    older = tmp_path / "older.jsonl"
    older.write_text(CLAUDE_FIXTURE.read_text().replace("06381696-0074-49f8-863e-6ad4fac507f9", "older-session")
                     .replace("2025-10-30T", "2025-09-01T"))
    run(store_url, "import", str(CLAUDE_FIXTURE), str(older))
    store = SessionStore(store_url)
    try:
        api = store.create_session("made-by-an-agent")
        store.append(api, [ss.user("please refactor the parser"), ss.assistant("On it.")])
        fork = store.fork("06381696-0074-49f8-863e-6ad4fac507f9", at=8)
        tokens = store.transcript_tokens()
    finally:
        store.close()
    listed = json.loads(run(store_url, "sessions", "--json"))
    ids = [s["id"] for s in listed]
    assert ids.index("06381696-0074-49f8-863e-6ad4fac507f9") < ids.index("older-session")  # newest first
    main_row = next(s for s in listed if s["id"] == "06381696-0074-49f8-863e-6ad4fac507f9")
    assert main_row["started_at"].startswith("2025-10-30T11:47:34")  # when it happened, not the import
    assert main_row["model"] == "claude-sonnet-4-5-20250929" and main_row["source"] == "claude-code"
    assert main_row["project"] == "/Users/jnarowski/Dev/sourceborn/src/agent-workflows-monorepo-v2"
    assert main_row["title"].startswith("Let's explore scrolling")
    assert main_row["tokens"] == tokens[main_row["id"]] > 0
    fork_row = next(s for s in listed if s["id"] == fork)
    assert fork_row["parent"] == main_row["id"] and fork_row["fork_version"] == 8
    assert 0 < fork_row["tokens"] < main_row["tokens"]  # a fork counts the history it inherits
    assert next(s for s in listed if s["id"] == api)["title"] == "please refactor the parser"
    only = json.loads(run(store_url, "sessions", "--json", "--source", "claude-code", "--since", "2025-10-01"))
    assert [s["id"] for s in only] == [fork, "06381696-0074-49f8-863e-6ad4fac507f9"]  # a fork is its conversation's
    assert (fork_row["source"], fork_row["model"], fork_row["title"]) == (
        main_row["source"], main_row["model"], main_row["title"])
    table = run(store_url, "sessions")
    assert fork in table and "06381696-0074-49f8-863e-6ad4fac507f9" in table  # full ids, also when piped


def test_one_token_figure_everywhere(store_url: str) -> None:
    """sessions, stats and show report the same figure for a session (import records not counted)."""
    run(store_url, "import", str(CLAUDE_FIXTURE))
    sid = "06381696-0074-49f8-863e-6ad4fac507f9"
    store = SessionStore(store_url)
    try:
        from sessionstore.tokens import transcript_tokens

        expected = transcript_tokens(store.events(sid))
        everything = sum(e.tokens for e in store.events(sid))
    finally:
        store.close()
    assert expected < everything  # the file-history snapshots are not in it
    listed = json.loads(run(store_url, "sessions", "--json"))[0]["tokens"]
    stats = run(store_url, "stats", sid)
    shown = run(store_url, "show", sid)
    assert listed == expected
    assert f"transcript tokens (our estimate) │ {expected:,}" in stats
    assert f"the transcript holds {expected:,}" in shown


def test_log_filters_and_hidden_import_records(store_url: str) -> None:
    run(store_url, "import", str(CLAUDE_FIXTURE))
    sid = "06381696"
    every = run(store_url, "log", sid, "--brief", "--all").splitlines()
    shown = CliRunner().invoke(main, ["--db", store_url, "log", sid, "--brief"])
    assert len(shown.stdout.splitlines()) < len(every)
    assert "records the model never sees hidden (2 claude-code:file-history-snapshot): --all shows them" in shown.stderr
    assert not any("file-history-snapshot" in line for line in shown.stdout.splitlines())
    calls = run(store_url, "log", sid, "--brief", "--tool", "AskUserQuestion").splitlines()
    assert [line.split()[3] for line in calls] == ["tool_call/assistant", "tool_result/tool"]
    users = run(store_url, "log", sid, "--brief", "--role", "user").splitlines()
    assert users and all("message/user" in line for line in users)
    kinds = run(store_url, "log", sid, "--brief", "--kind", "tool_call").splitlines()
    assert len(kinds) == 3 and all("tool_call/" in line for line in kinds)
    late = run(store_url, "log", sid, "--brief", "--since", "2025-10-30T12:10").splitlines()
    assert late and all(line.split()[1:3] >= ["2025-10-30", "12:10:00"] for line in late)
    assert len(run(store_url, "log", sid, "--json").splitlines()) == len(every)  # --json: every event


def test_show_full_does_not_truncate(store_url: str) -> None:
    run(store_url, "import", str(CLAUDE_FIXTURE))
    short = run(store_url, "show", "0638")
    full = run(store_url, "show", "0638", "--full")
    assert "more characters]" in short and "--full shows them whole" in short
    assert "more characters]" not in full and "Would you like me to create a plan to implement any" in full


def test_pager_on_a_terminal_and_no_color(tmp_path: Path) -> None:
    """On a terminal, `log` goes through $PAGER and honours NO_COLOR; piped, it prints directly."""
    import pty

    url = f"sqlite:///{tmp_path / 's.db'}"
    assert script("--db", url, "import", str(CLAUDE_FIXTURE)).returncode == 0
    paged = tmp_path / "paged.txt"

    def on_terminal(*args: str, env: dict[str, str]) -> str:
        leader, follower = pty.openpty()
        base = {k: v for k, v in os.environ.items() if k not in ("SESSIONSTORE_URL", "NO_COLOR")}
        proc = subprocess.Popen([str(SCRIPT), "--db", url, *args], stdin=follower, stdout=follower,
                                stderr=follower, env={**base, "TERM": "xterm-256color", "COLUMNS": "120", **env})
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=60)
        os.close(leader)
        return b"".join(chunks).decode("utf-8", "replace")

    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\ncat > {paged}\n")
    pager.chmod(0o755)
    on_terminal("log", "0638", "--brief", env={"PAGER": str(pager)})
    assert paged.exists() and "message/user" in paged.read_text()
    colour = re.compile(r"\x1b\[[\d;]*(?:3[0-8]|9[0-7])[\d;]*m")  # SGR foreground colours
    coloured = on_terminal("stats", "no-such-session", env={})
    plain = on_terminal("stats", "no-such-session", env={"NO_COLOR": "1"})
    assert "no session 'no-such-session'" in plain and "no session 'no-such-session'" in coloured
    assert colour.search(coloured) and not colour.search(plain)
    paged.unlink()
    piped = script("--db", url, "log", "0638", "--brief", env={"PAGER": str(pager)})
    assert piped.returncode == 0 and "message/user" in piped.stdout and not paged.exists()


# --------------------------------------------------------------------------- dry runs


def test_dry_run_with_anthropic_prints_the_request_and_sends_nothing(store_url: str) -> None:
    """`compact --dry-run --summarizer anthropic` against a real local Messages API server: zero requests."""
    from sessionstore.testing import anthropic_server

    run(store_url, "import", str(CLAUDE_FIXTURE))
    store = SessionStore(store_url)
    try:
        head = store.version("06381696-0074-49f8-863e-6ad4fac507f9")
    finally:
        store.close()
    with anthropic_server.AnthropicServer() as server:
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key"}
        result = CliRunner(env=env).invoke(main, ["--db", store_url, "compact", "0638", "--dry-run", "--summarizer",
                                                  "anthropic", "--context-window", "60000",
                                                  "--keep-recent-tokens", "500"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert server.requests == []
    assert "request(s) it would send to anthropic:claude-haiku-4-5 (none was sent)" in result.stdout
    sent, _ = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("{", result.stdout.index("(none was sent)")):])
    assert sent["model"] == "claude-haiku-4-5" and sent["messages"][0]["role"] == "user"
    assert "scroll" in sent["messages"][0]["content"]
    store = SessionStore(store_url)
    try:
        assert store.version("06381696-0074-49f8-863e-6ad4fac507f9") == head  # nothing written
    finally:
        store.close()


def test_the_library_never_writes_to_stdout(tmp_path: Path) -> None:
    """A host that never configures logging hears nothing; with logging.basicConfig it gets the lines."""
    program = tmp_path / "host.py"
    program.write_text(
        "import logging, sys\n"
        "if sys.argv[1:] == ['configured']:\n"
        "    logging.basicConfig(level=logging.INFO)\n"
        "import sessionstore as ss\n"
        "from sessionstore.logs import get_logger\n"
        "store = ss.SessionStore('sqlite://')\n"
        "store.migrate()\n"
        "sid = store.create_session()\n"
        "store.fork(sid)\n"
        "log = get_logger('sessionstore.host')\n"
        "log.info('an info line', n=1)\n"
        "log.warning('a warning line', n=2)\n")
    silent = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=120)
    assert silent.returncode == 0, silent.stderr
    assert silent.stdout == "" and silent.stderr == ""
    loud = subprocess.run([sys.executable, str(program), "configured"], capture_output=True, text=True, timeout=120)
    assert loud.stdout == ""
    assert "INFO:sessionstore.store:session forked parent=" in loud.stderr
    assert "WARNING:sessionstore.host:a warning line n=2" in loud.stderr


def test_the_demo_as_a_user_runs_it(tmp_path: Path) -> None:
    """The README's first command, `./scripts/sessionstore demo`, on the embedded default
    (./sessionstore.db in the current folder); then every command it suggests, run as printed,
    in the same folder, with nothing of the venv on the PATH."""
    wrapper = Path(__file__).resolve().parents[1] / "scripts" / "sessionstore"
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if Path(p).resolve() != SCRIPT.parent.resolve())
    env = {**{k: v for k, v in os.environ.items() if k not in ("SESSIONSTORE_URL", "SESSIONSTORE_PROG")},
           "PATH": path}
    done = subprocess.run([str(wrapper), "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    hints = out.split("Explore", 1)[1].splitlines()[1:]
    assert len(hints) == 4 and all(line.startswith(f"  {wrapper} ") for line in hints), hints
    for line in hints:
        ran = subprocess.run(["bash", "-c", line.strip()], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
        assert ran.returncode == 0, (line, ran.stderr)
        assert "command not found" not in ran.stderr
    assert (tmp_path / "demo.html").stat().st_size > 0
    assert "compacted (auto)" in out and "compacted (manual)" in out
    # (tree-sitter outlines of this repository's own files: the rewrite events below; the final
    # view may have summarised them away, since fresh reads are never outlined before the model saw them)
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


def test_erase_without_a_terminal_asks_for_yes_and_an_unknown_kind_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'e.db'}"
    assert script("--db", url, "import", str(CLAUDE_FIXTURE)).returncode == 0
    sid = "06381696-0074-49f8-863e-6ad4fac507f9"
    done = script("--db", url, "erase", sid, "--reason", "asked")  # stdin is not a terminal here
    assert done.returncode == 2 and "use --yes" in done.stderr and "Aborted" not in done.stderr
    assert "was erased" not in script("--db", url, "log", sid).stdout  # nothing happened
    refused = script("--db", url, "log", sid, "--kind", "nope")
    assert refused.returncode == 2 and "nope" in refused.stderr
