"""Record real Claude Code sessions as test fixtures: `python scripts/record_claude_code.py`.

Why: the Claude Code importer, compaction and subagent linking must be tested on what Claude
Code really writes, and a clone without the large shared corpus (`../shared/transcripts`) has
only one small published Claude Code file (an old version, no compaction, old subagent
layout). So this records a session: the real Claude Code CLI from npm (pinned below; the
package ships the native binary as an npm optional dependency, nothing is downloaded at run
time) runs in print mode (`claude -p`) against the local Messages API server
(`sessionstore.testing.AnthropicServer`) with scripted, deterministic replies. Every line of
the files is written by Claude Code itself: user prompts over several turns (`--resume`),
tool calls it really executed in a scratch project (Read, with and without offset/limit, Bash,
Edit, an Agent call whose subagent reads a file and answers, a TodoWrite list updated as the work
goes, one item still open at the compaction), thinking with a signature, usage,
a `/compact` (its `compact_boundary` line with a preserved segment, the `isCompactSummary` user
line, the files Claude Code re-attaches) and a turn after the compaction. Only the model's words
are scripted. (This version summarises `/compact` in-process: it writes no `agent-acompact-*` file.)

Output: Claude Code's project folder, with its own folder and file names, in
tests/fixtures/transcripts/claude-code/recorded/ (the main `<session-id>.jsonl` and
`<session-id>/subagents/agent-*.jsonl`).

Older versions (`--version 2.1.39`, `--version 2.0.29`; see PROFILES) are installed side by side into
.cache/recorders/claude-code-<version> and recorded into recorded-<version>/, with the same conversation
(their subagent tool is `Task`). 2.1.39, the version of the shared corpus, runs the Task turn in its
terminal UI (so that it writes `agent_progress` lines) and summarises `/compact` in a forked agent that
writes `<session>/subagents/agent-acompact-<hex>.jsonl`. 2.0.29 writes subagents in the old layout,
`<project>/agent-<id>.jsonl` (including the `Warmup` agents it starts on each run, and empty
`<uuid>.jsonl` files of the sessions it replaces with --resume). The scratch project holds copies of
sessionstore/logs.py, sessionstore/errors.py and scripts/test (as run-tests.sh).

Needs node and the npm registry (to install Claude Code once into .cache/recorders/claude-code).
Re-recording changes timestamps, message ids and some uuids, so tests that pin facts of the
files must be updated with them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from recordlib import copy_files, npm_install, with_thinking  # noqa: E402

from sessionstore.testing.anthropic_server import (
    AnthropicServer,
    MessageReply,
    RecordedRequest,
    text_reply,
    tool_use_reply,
)

PACKAGE = "@anthropic-ai/claude-code"
VERSION = "2.1.330"  # the default: `recorded/`; older versions (see PROFILES) go to `recorded-<version>/`
RECORDERS = ROOT / ".cache" / "recorders"
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts" / "claude-code"
# A fixed scratch location, so that Claude Code's project folder name (the encoded cwd) is the same
# on every recording.
SCRATCH = Path("/tmp/sessionstore-record-claude-code")
SESSION_ID = "5e55104e-c1a0-4d3e-9a11-0000000c0de0"  # --session-id of the first turn
# Small files on purpose: Claude Code keeps each read file several times (tool result, `toolUseResult`,
# and re-attached in full after the compaction).
FILES = [(ROOT / "sessionstore" / "logs.py", "logs.py"),
         (ROOT / "sessionstore" / "errors.py", "errors.py"),
         (ROOT / "scripts" / "test", "run-tests.sh")]
# Flags of every run. Claude Code records the shape of its requests in the transcript
# (`api-request-shape`: system prompt and tool schemas; `prompt_snapshot`): --tools (only the tools the
# script uses), --system-prompt-snapshot off and no
# settings or MCP sources keep that, and the files, small. (--bare would too, but leaves no Agent tool.)
FLAGS = ["--output-format", "json", "--dangerously-skip-permissions", "--tools", "Read,Bash,Edit,Agent,TodoWrite",
         "--system-prompt-snapshot", "off", "--strict-mcp-config", "--setting-sources", ""]


@dataclasses.dataclass(frozen=True)
class Profile:
    """How to record with one Claude Code version: its flags, the name of its subagent tool, and how its
    compaction is brought about."""

    version: str
    flags: tuple[str, ...]
    agent_tool: str = "Agent"            # 2.1.x before the rename, and 2.0.x: "Task"
    # GrowthBook features written into Claude Code's cached config before the `/compact` run (GrowthBook is
    # only consulted with telemetry on, so that run goes without DISABLE_TELEMETRY /
    # CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC; the feature fetch from api.anthropic.com fails offline and
    # the cached values stand). `tengu_compact_cache_prefix` makes 2.1.3x/2.1.4x summarise in a forked agent
    # that writes its own transcript, `<session>/subagents/agent-acompact-<hex>.jsonl`.
    compact_features: tuple[tuple[str, Any], ...] = ()
    compact: bool = True                 # run `/compact` and a turn after it
    # Turns (indexes into `main_turns`) run in Claude Code's terminal UI (in a pseudo-terminal) instead of
    # `-p`: print mode writes no `progress` lines (`agent_progress`, `hook_progress`) nor
    # `file-history-snapshot` lines, the interactive UI does.
    interactive_turns: frozenset[int] = frozenset()
    # Whether the second turn keeps a TodoWrite list (the version records it; older recordings were made without).
    todos: bool = False
    # Environment variables of every run.
    env: tuple[tuple[str, str], ...] = ()

    @property
    def session_id(self) -> str:
        """Fixed, so the project folder keeps its name; one per version, so that the recordings, imported
        into one store (as the tests do), are different sessions."""
        if self.version == VERSION:
            return SESSION_ID
        major, minor, patch = (int(part) for part in self.version.split("."))
        return f"{SESSION_ID[:24]}{major:04d}{minor:04d}{patch:04d}"

    @property
    def cache(self) -> Path:
        return RECORDERS / ("claude-code" if self.version == VERSION else f"claude-code-{self.version}")

    @property
    def out(self) -> Path:
        return FIXTURES / ("recorded" if self.version == VERSION else f"recorded-{self.version}")


_OLD_FLAGS = ("--output-format", "json", "--dangerously-skip-permissions", "--strict-mcp-config",
              "--setting-sources", "")
PROFILES = {
    # 2.1.3xx offers its Task* tools in place of TodoWrite unless they are switched off.
    VERSION: Profile(VERSION, tuple(FLAGS), todos=True, env=(("CLAUDE_CODE_ENABLE_TASKS", "false"),)),
    # The version of the shared corpus: subagents in `<session>/subagents/`, `agent_progress` lines (the
    # Task turn runs in the terminal UI), and (with the GrowthBook feature below) the compaction
    # summariser's own `agent-acompact-*` transcript. No --system-prompt-snapshot flag yet.
    "2.1.39": Profile("2.1.39", (*_OLD_FLAGS, "--tools", "Read,Bash,Edit,Task"), agent_tool="Task",
                      compact_features=(("tengu_compact_cache_prefix", True),), interactive_turns=frozenset({1})),
    # The old layout: subagent transcripts beside the main file (`<project>/agent-<id>.jsonl`, sidechain
    # lines). No --tools flag yet: the other built-in tools are left out with --disallowed-tools.
    "2.0.29": Profile("2.0.29", (*_OLD_FLAGS, "--disallowed-tools",
                                 ("Glob,Grep,Write,NotebookEdit,WebFetch,WebSearch,TodoWrite,BashOutput,KillShell,"
                                  "SlashCommand,ExitPlanMode,Skill")), agent_tool="Task"),
}

SUBAGENT_MARK = "Find every place in this folder that uses SessionStoreError"


def install(profile: Profile) -> list[str]:
    """The pinned Claude Code, installed once from the npm registry; the command that runs it (the native
    binary of the package's optional dependency, or `node cli.js` for versions that ship no native build)."""
    package = npm_install(PACKAGE, profile.version, profile.cache).parent
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}[os.uname().machine]
    native = package / f"claude-code-linux-{arch}" / "claude"
    if native.exists():
        return [str(native)]
    script = package / "claude-code" / "cli.js"
    if not script.exists():
        raise RuntimeError(f"no native Claude Code binary at {native} (npm skipped the optional dependency?)"
                           f" and no {script}")
    return ["node", str(script)]


def workspace(root: Path) -> Path:
    return copy_files(root / "project", FILES)


def thinking(text: str, then: MessageReply) -> MessageReply:
    return with_thinking(text, then, "c2Vzc2lvbnN0b3JlLXJlY29yZGVkLXNpZ25hdHVyZQ" + str(len(text)))


# --------------------------------------------------------------------------- the model's side


# The second turn's todo list (`Profile.todos`): planned, then updated with the last item still open
# when the session is compacted.
TODOS = (("Add a one-line comment under the shebang of run-tests.sh", "Adding the comment to run-tests.sh"),
         ("Have a subagent find where SessionStoreError is used", "Finding where SessionStoreError is used"),
         ("Report each SessionStoreError use to the user as file:line", "Reporting the uses as file:line"))


def todo_write(*statuses: str, text: str | None = None) -> MessageReply:
    todos = [{"content": content, "status": status, "activeForm": active}
             for (content, active), status in zip(TODOS, statuses)]
    return tool_use_reply("TodoWrite", {"todos": todos}, text=text)


def main_turns(work: Path, agent_tool: str = "Agent", todos: bool = False) -> list[tuple[str, list[MessageReply]]]:
    """(prompt, replies of the main conversation's requests for it, in order), one per `claude -p` run."""
    def path(name: str) -> str:
        return str(work / name)

    def planned(*replies: MessageReply) -> list[MessageReply]:
        return [todo_write("in_progress", "pending", "pending", text="Three steps; I'll track them."),
                replies[0], replies[1], todo_write("completed", "in_progress", "pending"), *replies[2:],
                todo_write("completed", "completed", "pending")] if todos else list(replies)
    return [
        ("How does this project log, and which errors does it define? Read the code.", [
            thinking("Two files matter: logs.py for logging, errors.py for the exceptions. Read logs.py first, "
                     "then the top of errors.py, where the base class is declared.",
                     tool_use_reply("Read", {"file_path": path("logs.py")}, text="Let me read the logging module.")),
            tool_use_reply("Read", {"file_path": path("errors.py"), "offset": 1, "limit": 60}),
            tool_use_reply("Bash", {"command": "wc -l *.py && grep -n '^class ' errors.py",
                                    "description": "Count lines and list the error classes"}),
            text_reply("Logging lives in logs.py: structlog key-value calls delivered through the stdlib "
                       "`sessionstore` logger, which carries a NullHandler, so the host decides where logs go. "
                       "errors.py defines the library's exceptions, all under SessionStoreError."),
        ]),
        (("Add a one-line comment under the shebang of run-tests.sh saying what it does, then have a "
          "subagent find where SessionStoreError is used."), [*planned(
            tool_use_reply("Read", {"file_path": path("run-tests.sh"), "limit": 10}),
            tool_use_reply("Edit", {"file_path": path("run-tests.sh"), "old_string": "#!/usr/bin/env bash\n",
                                    "new_string": "#!/usr/bin/env bash\n# Runs the project's test suite.\n"}),
            tool_use_reply(agent_tool, {"description": "Find SessionStoreError uses", "subagent_type": "general-purpose",
                                     "prompt": f"{SUBAGENT_MARK} (definition and callers) and report file:line "
                                               "for each. Do not edit anything."})),
            text_reply("Done: run-tests.sh now says what it does, and the subagent found SessionStoreError "
                       "defined in errors.py as the base of every other error there; logs.py does not use it."),
        ]),
    ]


def subagent_replies(work: Path) -> list[MessageReply]:
    return [
        tool_use_reply("Bash", {"command": "grep -n SessionStoreError *.py *.sh",
                                "description": "Find SessionStoreError in the folder"}),
        tool_use_reply("Read", {"file_path": str(work / "errors.py"), "offset": 10, "limit": 20}),
        text_reply("SessionStoreError is defined in errors.py (line 12) and is the base class of every "
                   "other error in that file; no other file in the folder uses it."),
    ]


def summary(todos: bool = False) -> str:
    """The /compact summariser's answer; with the todo list, its open item under Pending Tasks, as a
    model writes it."""
    pending = f"\n   - {TODOS[2][0]}\n\n" if todos else "\n   None.\n\n"
    return SUMMARY.replace("7. Pending Tasks:\n   None.\n\n", f"7. Pending Tasks:{pending}")


SUMMARY = ("<analysis>\nThe user asked about logging and errors, then for a comment in "
           "run-tests.sh and a search for SessionStoreError.\n</analysis>\n\n<summary>\n"
           "1. Primary Request and Intent:\n   Understand how the project logs and which errors it "
           "defines; document run-tests.sh; find the uses of SessionStoreError.\n\n"
           "2. Key Technical Concepts:\n   - structlog through stdlib logging, a NullHandler on the "
           "`sessionstore` logger\n   - the exception hierarchy of errors.py\n\n"
           "3. Files and Code Sections:\n   - logs.py: read in full.\n   - errors.py: lines 1-60 read.\n"
           "   - run-tests.sh: a comment added under the shebang.\n\n"
           "4. Errors and fixes:\n   None.\n\n5. Problem Solving:\n   A subagent located SessionStoreError "
           "(errors.py only).\n\n6. All user messages:\n   - How does this project log...\n"
           "   - Add a one-line comment...\n\n7. Pending Tasks:\n   None.\n\n8. Current Work:\n"
           "   The comment was added and the search reported.\n\n9. Optional Next Step:\n   None.\n</summary>")


def after_compaction(work: Path) -> tuple[str, list[MessageReply]]:
    return ("After all that: what does the first line under the shebang of run-tests.sh say now?", [
        tool_use_reply("Read", {"file_path": str(work / "run-tests.sh"), "limit": 3}),
        text_reply("It says \"# Runs the project's test suite.\" — the comment added before the compaction."),
    ])


# --------------------------------------------------------------------------- routing requests


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or () if isinstance(b, dict))


def _first_user_text(request: RecordedRequest) -> str:
    """The text of the request's first user message (where a subagent's task sits)."""
    return next((_text(m) for m in request.messages if m.get("role") == "user"), "")


def _last_user_text(request: RecordedRequest) -> str:
    """The text of the user messages after the last assistant message (a mid-conversation system
    reminder, "The user hasn't heard from you in a while…", may follow the prompt as one of its own)."""
    trailing: list[str] = []
    for message in reversed(request.messages):
        if message.get("role") == "assistant":
            break
        trailing.insert(0, _text(message))
    return "\n".join(trailing)


class Router:
    """Answers each /v1/messages request from the script it belongs to: the main conversation,
    the subagent, the /compact summariser, or a side query (title, topic...), which gets a short text."""

    def __init__(self, todos: bool = False) -> None:
        self.todos = todos
        self.main: deque[MessageReply] = deque()
        self.subagent: deque[MessageReply] = deque()
        self.summaries = 0
        self.side: list[str] = []
        self.log: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> MessageReply:
        with self._lock:
            return self._route(request)

    def _route(self, request: RecordedRequest) -> MessageReply:
        body = request.body
        tools = [t.get("name") for t in body.get("tools") or []]
        last = _last_user_text(request)
        if "<summary>" in last and ("Do NOT call any tools" in last  # the /compact summarisation prompt
                                    or last.startswith("Your task is to create a detailed summary")):  # 2.1.39
            self.summaries += 1
            self.log.append("summary")
            return text_reply(summary(self.todos))
        if SUBAGENT_MARK in _first_user_text(request) and self.subagent:
            self.log.append("subagent")
            return self.subagent.popleft()
        if tools and self.main:
            self.log.append("main")
            return self.main.popleft()
        self.side.append(last[:200])
        self.log.append("side")
        return text_reply("Token counting review")


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def fold_system_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`role: "system"` messages (Claude Code's mid-conversation system beta) as text at the end of the
    next user message (after its tool results), or as a last user message."""
    folded: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "system":
            pending.extend(_blocks(message.get("content")))
            continue
        if message.get("role") == "user" and pending:
            message = {"role": "user", "content": [*_blocks(message.get("content")), *pending]}
            pending = []
        folded.append(message)
    if pending:
        folded.append({"role": "user", "content": pending})
    return folded


class RecordingServer(AnthropicServer):
    """The local server, answering through `Router` (the scripted queue stays empty), and accepting
    the `role: "system"` messages this Claude Code sends mid-conversation: the base server refuses
    them with a 400, on which Claude Code retries without them, but records both request shapes
    (~20 KB each) in every transcript. Here they are folded into user text before validation."""

    def __init__(self, router: Callable[[RecordedRequest], MessageReply]) -> None:
        super().__init__(strict=False, default=router)

    def handle(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        body = request.body
        if isinstance(body, dict) and isinstance(body.get("messages"), list) and any(
                isinstance(m, dict) and m.get("role") == "system" for m in body["messages"]):
            request = dataclasses.replace(request, body={**body, "messages": fold_system_messages(body["messages"])})
        return super().handle(request)


# --------------------------------------------------------------------------- running Claude Code


def claude(command: list[str], flags: tuple[str, ...], work: Path, env: dict[str, str], prompt: str,
           *extra: str) -> dict[str, Any]:
    run = subprocess.run([*command, "-p", prompt, *flags, *extra], cwd=work, env=env, capture_output=True,
                         check=False, text=True, encoding="utf-8", timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"claude -p {prompt!r} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    result = json.loads(run.stdout)
    if result.get("is_error"):
        raise RuntimeError(f"claude -p {prompt!r} reported an error: {run.stdout}")
    return result


def claude_interactive(command: list[str], flags: tuple[str, ...], work: Path, env: dict[str, str], prompt: str,
                       *extra: str, done: Callable[[], bool], timeout: float = 120) -> None:
    """One turn in Claude Code's terminal UI, in a pseudo-terminal: `claude [flags] PROMPT`, left with two
    Ctrl-C once `done()` (every scripted reply of the turn was asked for) and the transcript had time to be
    written. The first-run dialogs (onboarding, folder trust, bypass-permissions mode, the custom API key)
    are answered beforehand in Claude Code's global config."""
    config_dir = Path(env["CLAUDE_CONFIG_DIR"])
    _update_config(config_dir, hasCompletedOnboarding=True, theme="dark", bypassPermissionsModeAccepted=True,
                   customApiKeyResponses={"approved": [env["ANTHROPIC_API_KEY"][-20:]], "rejected": []},
                   projects={str(work): {"hasTrustDialogAccepted": True, "allowedTools": []}})
    args = list(flags)
    if "--output-format" in args:  # print mode only
        del args[args.index("--output-format"):args.index("--output-format") + 2]
    argv = [*command, *args, *extra, prompt]
    pid, fd = pty.fork()
    if pid == 0:  # the child: Claude Code on the pseudo-terminal
        os.chdir(work)
        os.execvpe(argv[0], argv, {**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"})
    screen = bytearray()
    started = time.monotonic()
    finished: float | None = None
    try:
        while True:
            now = time.monotonic()
            if now - started > timeout:
                text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen[-3000:].decode("utf-8", "replace"))
                raise RuntimeError(f"interactive claude {prompt!r} did not finish in {timeout} s; screen:\n{text}")
            if finished is None and done():
                finished = now
            if finished is not None and now - finished > 3:
                break
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break
        for _ in range(2):
            os.write(fd, b"\x03")
            time.sleep(0.5)
        deadline = time.monotonic() + 10
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
                break
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    os.read(fd, 65536)
                except OSError:
                    pass
    finally:
        os.close(fd)


def _update_config(config_dir: Path, **values: Any) -> None:
    """Merge values into Claude Code's global config (`.claude.json`)."""
    path = config_dir / ".claude.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    config.update(values)
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")


def _set_features(config_dir: Path, features: tuple[tuple[str, Any], ...]) -> None:
    """Write GrowthBook feature values into Claude Code's cached global config (`.claude.json`)."""
    path = config_dir / ".claude.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    _update_config(config_dir, cachedGrowthBookFeatures={**config.get("cachedGrowthBookFeatures", {}),
                                                         **dict(features)})


def record(profile: Profile, command: list[str]) -> Path:
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    home = SCRATCH / "home"
    home.mkdir(parents=True)
    work = workspace(SCRATCH)
    router = Router(profile.todos)
    flags = profile.flags

    def run(env: dict[str, str], prompt: str, *extra: str) -> dict[str, Any]:
        return claude(command, flags, work, env, prompt, *extra)

    with RecordingServer(router) as server:
        env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
               "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-local-recording",
               "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1",
               # subagents in the foreground: the Agent tool's result is the subagent's answer
               "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1", **dict(profile.env)}
        for key in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"):
            env.pop(key, None)
        turns = main_turns(work, profile.agent_tool, profile.todos)
        for number, (prompt, replies) in enumerate(turns):
            router.main.extend(replies)
            if number == 1:
                router.subagent.extend(subagent_replies(work))
            where = ["--session-id", profile.session_id] if number == 0 else ["--resume", profile.session_id]
            if number in profile.interactive_turns:
                claude_interactive(command, flags, work, env, prompt, *where,
                                   done=lambda: not router.main and not router.subagent)
                continue
            result = run(env, prompt, *where)
            if result.get("session_id") != profile.session_id:
                raise RuntimeError(f"Claude Code answered in session {result.get('session_id')}, "
                                   f"not {profile.session_id}")
        if profile.compact:
            compact_env = env
            if profile.compact_features:
                _set_features(home / ".claude", profile.compact_features)
                compact_env = {k: v for k, v in env.items()
                               if k not in ("DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")}
            run(compact_env, "/compact", "--resume", profile.session_id)
            if router.summaries != 1:
                raise RuntimeError(f"/compact made {router.summaries} summary requests, not 1 (requests: {router.log}; "
                                   f"side queries: {router.side})")
            prompt, replies = after_compaction(work)
            router.main.extend(replies)
            run(env, prompt, "--resume", profile.session_id)
        left = len(router.main) + len(router.subagent)
        failed = [r for r in server.requests if r.status >= 400]
        print(f"requests: {len(server.requests)} ({', '.join(router.log)}); side queries: {router.side}")
        if failed:
            print(f"answered with errors: {[(r.method, r.path, r.status) for r in failed]}")
        if left:
            raise RuntimeError(f"{left} scripted replies were never asked for")
    (project,) = (home / ".claude" / "projects").iterdir()
    return project


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=VERSION, choices=sorted(PROFILES),
                        help=f"the Claude Code version to record with (default {VERSION}, into recorded/; "
                             "others into recorded-<version>/)")
    args = parser.parse_args(argv)
    profile = PROFILES[args.version]
    command = install(profile)
    out = profile.out
    try:
        project = record(profile, command)
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(project, out)
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
    total = 0
    for path in sorted(out.rglob("*")):
        if path.is_file():
            size = path.stat().st_size
            total += size
            lines = path.read_text(encoding="utf-8").count("\n")
            print(f"{path.relative_to(ROOT)}: {lines} lines, {size:,} bytes")
    print(f"total: {total:,} bytes")


if __name__ == "__main__":
    main()
