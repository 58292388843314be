"""Rough edges a new user met in the CLI: one SID rule for every command, silent logs, plain
paths, one title rule, a session list that fits a terminal (issue 18, item 5)."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

import sessionstore as ss
from sessionstore import SessionStore
from sessionstore.cli import main
from sessionstore.cli.app import SessionId

from .conftest import FIXTURE_TRANSCRIPTS


def invoke(url: str, *args: str) -> click.testing.Result:
    return CliRunner().invoke(main, ["--db", url, *args], catch_exceptions=False)


def _session(url: str, sid: str = "4a7c1e55-prefix-test") -> str:
    store = SessionStore(url)
    try:
        store.create_session(sid)
        store.append(sid, [ss.user("list the files"), ss.tool_call("c1", "Bash", {"command": "ls"}),
                           ss.tool_result("c1", "a.py\nb.py"), ss.assistant("two files")])
    finally:
        store.close()
    return sid


def _sid_commands() -> dict[str, click.Command]:
    """Every command with an argument or option that names a session."""
    found = {}
    for name, command in main.commands.items():
        commands = command.commands.items() if isinstance(command, click.Group) else [(name, command)]
        for sub, cmd in commands:
            if any(p.name in ("session_id", "session_ids") for p in cmd.params):
                found[sub] = cmd
    return found


def test_every_command_that_takes_a_session_resolves_a_prefix(store_url: str, tmp_path: Path) -> None:
    commands = _sid_commands()
    for name, command in commands.items():  # one resolver: every session parameter has its type
        for param in command.params:
            if param.name in ("session_id", "session_ids"):
                assert isinstance(param.type, SessionId), f"{name} {param.name} does not resolve SID prefixes"
    sid = _session(store_url)
    prefix = sid[:6]
    runs = {
        "log": ["log", prefix, "--brief"], "show": ["show", prefix], "stats": ["stats", prefix],
        "verify": ["verify", prefix], "fork": ["fork", prefix], "compact": ["compact", prefix, "--dry-run"],
        "export": ["export", prefix, "--format", "markdown"], "html": ["html", prefix, "-o", str(tmp_path / "p.html")],
        "replay": ["replay", prefix, "--window", "50000", "--json"], "search": ["search", "files", "--session", prefix],
    }
    # erase destroys (its prompt is another test's); mcp serves until its client leaves (test_mcp_server)
    untested = set(commands) - set(runs) - {"erase", "mcp"}
    assert not untested, f"commands taking a SID without a prefix run here: {untested}"
    for name, args in runs.items():
        result = invoke(store_url, *args)
        assert result.exit_code == 0, (name, result.output)
    assert json.loads(invoke(store_url, "replay", prefix, "--json").stdout.splitlines()[0])
    assert "no session 'zz-none'" in invoke(store_url, "export", "zz-none").stderr


def test_logs_are_silent_unless_verbose(store_url: str) -> None:
    sid = _session(store_url)
    for args in (["compact", sid, "--context-window", "20000", "--keep-recent-tokens", "10"], ["fork", sid]):
        quiet = invoke(store_url, *args)
        assert quiet.exit_code == 0 and quiet.stderr == "", quiet.stderr
    loud = invoke(store_url, "-v", "--log-format", "json", "fork", sid)
    assert loud.exit_code == 0
    levels = {json.loads(line)["level"] for line in loud.stderr.splitlines() if line.startswith("{")}
    assert levels & {"info", "debug"}, loud.stderr


def test_db_takes_a_plain_path(tmp_path: Path, monkeypatch: "pytest.MonkeyPatch") -> None:  # noqa: F821
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'h.db'}"
    SessionStore(url).migrate()
    _session(url, "plain-path-session")
    listed = invoke("./h.db", "sessions", "--json")
    assert listed.exit_code == 0, listed.output
    assert [row["id"] for row in json.loads(listed.stdout)] == ["plain-path-session"]


def test_one_title_rule_for_the_list_and_the_page_and_forks_inherit(store_url: str, tmp_path: Path) -> None:
    store = SessionStore(store_url)
    try:
        sid = store.create_session(metadata={"source": "codex", "model": "gpt-5.5", "cwd": "/home/u/shop"})
        store.append(sid, [ss.user("<environment_context>\n  <cwd>/home/u/shop</cwd>\n</environment_context>"),
                           ss.user("# Context from my IDE setup:\n\n## Active file: cart.py\n"),
                           ss.user("<system-reminder>be brief</system-reminder>"),
                           ss.user("Fix the   flaky cart test"), ss.assistant("On it.")])
        fork = store.fork(sid, at=4)
        codex_fixture = next((FIXTURE_TRANSCRIPTS / "codex").rglob("*.jsonl"))
    finally:
        store.close()
    assert invoke(store_url, "import", str(codex_fixture)).exit_code == 0
    rows = {row["id"]: row for row in json.loads(invoke(store_url, "sessions", "--json").stdout)}
    assert rows[sid]["title"] == rows[fork]["title"] == "Fix the flaky cart test"
    assert (rows[fork]["source"], rows[fork]["model"], rows[fork]["project"]) == ("codex", "gpt-5.5", "/home/u/shop")
    for session_id, row in rows.items():  # the page's heading is the list's title
        page = tmp_path / "page.html"
        assert invoke(store_url, "html", session_id, "-o", str(page)).exit_code == 0
        heading = page.read_text().split("<h1>", 1)[1].split("</h1>", 1)[0]
        assert heading == html.escape(row["title"], quote=True) or heading == html.escape(row["title"], quote=False)
        assert not row["title"].startswith(("<", "# Context from my IDE"))


def test_sessions_fits_80_and_120_columns_without_squeezing_what_matters(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wide.db'}"
    store = SessionStore(url)
    try:
        store.migrate()
        sids = []
        for n in range(3):
            sid = store.create_session(f"rollout-2026-11-23T14-44-24-01a208dd-8274-7ea1-b78c-e45ca227fa0{n}", metadata={
                "source": "claude-code", "model": "claude-sonnet-4-5-20250929", "cwd": f"/home/user/projects/shop-{n}"})
            store.append(sid, [ss.user(f"Refactor the checkout flow number {n} so that the cart survives a reload")])
            sids.append(sid)
        store.fork(sids[0])
    finally:
        store.close()
    script = Path(sys.executable).with_name("sessionstore")
    for columns in (80, 120):
        done = subprocess.run([str(script), "--db", url, "sessions"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "COLUMNS": str(columns)})
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stdout.splitlines() if line[:1] in "┏┃┡│└("]  # the table and its caption
        assert max(len(line) for line in lines) <= columns, done.stdout
        rows = [line for line in lines if line.startswith("│")]
        assert all("…" not in row.split("│")[1] for row in rows), done.stdout  # each id whole: it names its session
        body = "\n".join(lines)
        if columns == 80:  # 64 characters of id to tell three ids apart leave no room for text: the caption says so
            assert "title, project" in body and "left out" in done.stdout
            continue
        header = next(line for line in lines if "title" in line)
        assert "project" in header and "started" in header
        for n in range(3):
            assert f"shop-{n}" in body.replace("\n", "") or f"shop-{n}" in body  # the project, readable
        assert "Refactor t" in body  # the title, not squeezed to nothing
        first_row = next(line for line in lines if line.startswith("│"))
        shown_id = first_row.split("│")[1].strip()  # the fork, newest: its id's unique prefix (or the start of it)
        assert len(shown_id) >= 8 and invoke(url, "stats", shown_id).exit_code == 0
