"""`sessionstore watch`: the real CLI in a subprocess following a real transcript that a writer
appends to, on SQLite and PostgreSQL; restarted, it resumes from what is stored."""

from __future__ import annotations

import os
import shutil
import signal
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from sessionstore import SessionStore
from sessionstore.importers import parse_file

from .conftest import FIXTURE_TRANSCRIPTS

PI = next((FIXTURE_TRANSCRIPTS / "pi" / "recorded").glob("*.jsonl"))
GEMINI = FIXTURE_TRANSCRIPTS / "gemini-cli" / "chats" / "session-2026-03-02T10-15-3f9c2a71.json"
OPENCODE = FIXTURE_TRANSCRIPTS / "opencode" / "storage"
COPILOT = next((FIXTURE_TRANSCRIPTS / "copilot-cli" / "recorded").glob("*/events.jsonl"))
QWEN = next((FIXTURE_TRANSCRIPTS / "qwen-code" / "recorded" / "chats").glob("*.jsonl"))
CLI = [sys.executable, "-m", "sessionstore.cli"]
DEADLINE = 20.0  # seconds: a loaded machine; the figures are in the report, never asserted as speed


def start(url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, "--db", url, "watch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def wait_for(stream: IO[str], text: str) -> list[str]:
    """Lines read from `stream` up to the one holding `text`."""
    lines: list[str] = []
    while True:
        line = stream.readline()
        assert line, f"the watcher ended before saying {text!r}: {lines}"
        lines.append(line)
        if text in line:
            return lines


def stop(process: subprocess.Popen[str], how: signal.Signals = signal.SIGINT) -> tuple[str, str]:
    """Ctrl-C, or `kill` (SIGTERM: a service manager stopping it), ends `watch` the same way:
    exit status 0 and its summary, last."""
    process.send_signal(how)
    out, errors = process.communicate(timeout=30)
    assert process.returncode == 0, errors
    assert errors.splitlines()[-1].startswith("stopped: ") and "Traceback" not in errors
    return out, errors


def stored(url: str, session_id: str, want: int) -> int:
    """The session's head once it reaches `want` events (polled, up to the deadline)."""
    store = SessionStore(url)
    try:
        started = time.monotonic()
        head = 0
        while time.monotonic() - started < DEADLINE:
            try:
                head = store.version(session_id)
            except Exception:  # not created yet
                head = 0
            if head >= want:
                return head
            time.sleep(0.05)
        return head
    finally:
        store.close()


def test_watch_follows_a_growing_transcript_and_resumes(store_url: str, tmp_path: Path) -> None:
    lines = PI.read_bytes().splitlines(keepends=True)
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / PI.name
    path.write_bytes(b"".join(lines[:20]))
    sid = parse_file(PI).session_id
    watcher = start(store_url, str(folder))
    try:
        wait_for(watcher.stderr, "following changes")  # type: ignore[arg-type]
        first = len(parse_file(path).events)
        assert stored(store_url, sid, first) == first
        # the agent writes more, twice, the first time stopping in the middle of a line: each part is
        # stored, once, and the line being written waits quietly (no "not imported")
        written = b"".join(lines[:20])
        for upto in (b"".join(lines[:35]) + lines[35][:len(lines[35]) // 2], b"".join(lines)):
            with path.open("ab") as fh:
                fh.write(upto[len(written):])
            written = upto
            want = len(parse_file(path).events)
            said = wait_for(watcher.stdout, f"{want} stored")  # type: ignore[arg-type]
            assert stored(store_url, sid, want) == want
            assert not [line for line in said if "not imported" in line]
    finally:
        out, _ = stop(watcher)
    store = SessionStore(store_url)
    try:
        assert [e.event_id for e in store.transcript(sid)] == [e.event_id for e in parse_file(PI).events]
    finally:
        store.close()
    # restarted: what is stored is kept, nothing is added twice, and no session line is printed
    again = start(store_url, str(folder))
    try:
        said = wait_for(again.stderr, "following changes")  # type: ignore[arg-type]
    finally:
        out, _ = stop(again)
    assert out == "" and "imported 0 new event(s)" in said[-1]
    assert stored(store_url, sid, 0) == len(parse_file(PI).events)


def _opencode_writes(source: Path, target: Path, message_id: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The files OpenCode writes, in order, while one message of `source` (a storage folder) is
    made in `target`: an assistant message first without its completion, its text streamed in
    (the part rewritten as it grows), each tool part pending with an empty input, then running,
    then completed; the message's tokens at each step's end, its completion last."""
    info_file = next((source / "message").glob(f"*/{message_id}.json"))
    info = json.loads(info_file.read_text())
    at = target / info_file.relative_to(source)
    if info["role"] == "assistant":
        yield at, {k: v for k, v in info.items() if k not in ("finish", "tokens", "cost")} | {
            "time": {"created": info["time"]["created"]}}
    else:
        yield at, info
    for part_file in sorted((source / "part" / message_id).glob("*.json")):
        part = json.loads(part_file.read_text())
        part_at = target / part_file.relative_to(source)
        if part["type"] in ("text", "reasoning") and info["role"] == "assistant":
            text = part["text"]
            for cut in (len(text) // 3, 2 * len(text) // 3):
                yield part_at, part | {"text": text[:cut], "time": {"start": part["time"]["start"]}}
        elif part["type"] == "tool":
            state = part["state"]
            yield part_at, part | {"state": {"status": "pending", "input": {}, "raw": ""}}
            yield part_at, part | {"state": {"status": "running", "input": state["input"],
                                             "time": {"start": state["time"]["start"]}}}
        yield part_at, part
        if part["type"] == "step-finish":
            yield at, {k: v for k, v in info.items() if k != "time"} | {"time": {"created": info["time"]["created"]}}
    if info["role"] == "assistant":
        yield at, info


def _write(path: Path, value: dict[str, Any]) -> None:
    """One file written whole, as OpenCode's storage does (through a temporary file, so that a
    reader never sees half of it: a half-written file is another test's subject)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2))
    os.replace(temporary, path)


def test_watch_follows_a_live_opencode_session(store_url: str, tmp_path: Path) -> None:
    """OpenCode rewrites a message's files while it works: what `watch` stores is never taken
    back, and once the message is done the store holds what a fresh import of the folder does."""
    storage = tmp_path / "storage"
    shutil.copytree(OPENCODE, storage)
    session = next((storage / "session").glob("*/*.json"))
    messages = sorted(p.stem for p in (storage / "message" / session.stem).glob("*.json"))
    live = messages[2:4]  # a user message and the assistant's answer: tool calls (one failing), text
    for mid in live:
        (storage / "message" / session.stem / f"{mid}.json").unlink()
        shutil.rmtree(storage / "part" / mid)
    for mid in messages[4:]:  # what comes after them is not written yet
        (storage / "message" / session.stem / f"{mid}.json").unlink()
        shutil.rmtree(storage / "part" / mid)
    sid = parse_file(session).session_id
    watcher = start(store_url, str(storage))
    try:
        wait_for(watcher.stderr, "following changes")  # type: ignore[arg-type]
        for mid in live:
            for path, value in _opencode_writes(OPENCODE, storage, mid):
                _write(path, value)
                time.sleep(0.2)  # long enough for `watch` to import most of the in-between states
        want = len(parse_file(session).events)
        assert stored(store_url, sid, want) == want
    finally:
        out, _ = stop(watcher)
    assert "not a prefix" not in out
    store = SessionStore(store_url)
    try:
        got = [(e.event_id, e.kind, e.payload, e.meta) for e in store.transcript(sid)]
    finally:
        store.close()
    assert got == [(e.event_id, e.kind, e.payload, e.meta) for e in parse_file(session).events]


def test_watch_defaults_to_the_agents_folders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    chats = home / ".gemini" / "tmp" / "5c0e2b8f" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI, chats / GEMINI.name)
    others = {COPILOT: home / ".copilot" / "session-state" / COPILOT.parent.name / COPILOT.name,
              QWEN: home / ".qwen" / "projects" / "-work-project" / "chats" / QWEN.name}
    for source, target in others.items():
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    url = f"sqlite:///{tmp_path / 'watch.db'}"
    watcher = start(url, env={**os.environ, "HOME": str(home)})
    try:
        said = wait_for(watcher.stderr, "following changes")  # type: ignore[arg-type]
    finally:
        out, _ = stop(watcher, signal.SIGTERM)
    assert str(home / ".gemini" / "tmp") in said[0]
    assert str(home / ".copilot" / "session-state") in said[0] and str(home / ".qwen" / "projects") in said[0]
    for source in (GEMINI, *others):
        parsed = parse_file(source)
        assert f"{parsed.session_id}  {parsed.format}  +{len(parsed.events)} event(s)" in out


def test_watch_help_says_ctrl_c_is_its_normal_end() -> None:
    done = subprocess.run([*CLI, "watch", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "Ctrl-C is how watch ends, so it exits with status 0" in " ".join(done.stdout.split())


def test_watch_without_any_folder_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "home"
    empty.mkdir()
    done = subprocess.run([*CLI, "--db", f"sqlite:///{tmp_path / 'x.db'}", "watch"], capture_output=True, text=True,
                          env={**os.environ, "HOME": str(empty)}, timeout=60)
    assert done.returncode == 2 and "nothing to watch" in done.stderr
