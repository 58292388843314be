"""Record a real Qwen Code session as a test fixture: `python scripts/record_qwen.py`.

Why: the Qwen Code importer must be tested on what Qwen Code really writes
(``~/.qwen/projects/<project>/chats/<session id>.jsonl``), and no such file small enough to ship
is published. So this records one: the real Qwen Code from npm (pinned below) runs in prompt mode
(``qwen -p``, then ``--resume`` for each later prompt) against the local Chat Completions server
(`sessionstore.testing.OpenAIServer`) with scripted replies, chosen with its OpenAI settings
(``--auth-type openai``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL``). Everything in
the file is written by Qwen Code itself — its records and their uuid chain, tool calls it really
executed (``read_file``, ``run_shell_command``, ``grep_search``, an ``edit``, a ``read_file`` of a
missing file that fails), usage, telemetry records, a ``/compress`` it summarised through the
server (its ``chat_compression`` record) and a turn after it — only the model's words are scripted.

HOME is a temp folder (Qwen Code keeps its state in ``$HOME/.qwen``); nothing but 127.0.0.1 is
contacted beyond the npm registry (to install Qwen Code once into .cache/recorders/qwen).
Re-recording changes ids, paths and timestamps, so the tests that pin facts of the file must be
updated with it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from recordlib import copy_files, npm_install, print_kinds, prompt_runs, run_agent  # noqa: E402

from sessionstore.testing.anthropic_server import MessageReply, text_reply, tool_use_reply  # noqa: E402
from sessionstore.testing.openai_server import OpenAIServer  # noqa: E402

PACKAGE = "@qwen-code/qwen-code"
VERSION = "0.24.4"
CACHE = ROOT / ".cache" / "recorders" / "qwen"
OUT = ROOT / "tests" / "fixtures" / "transcripts" / "qwen-code" / "recorded"
MODEL = "qwen3-coder-plus"
SESSION_ID = "5e551075-9e40-4c0d-8a7e-2026c0de0002"  # given with --session-id, so each run resumes it
FILES = [(ROOT / "sessionstore" / "errors.py", "sessionstore/errors.py"),
         (ROOT / "sessionstore" / "chain.py", "sessionstore/chain.py"),
         (ROOT / "scripts" / "test", "run-tests.sh")]


def install() -> Path:
    """The pinned Qwen Code, installed once from the npm registry."""
    npm_install(PACKAGE, VERSION, CACHE)
    return CACHE / "node_modules" / ".bin" / "qwen"


def turns(work: Path) -> list[tuple[str, list[MessageReply]]]:
    """(prompt, the model's replies to its requests in order), one `qwen -p` run each."""
    errors, chain = work / "sessionstore" / "errors.py", work / "sessionstore" / "chain.py"
    tests = work / "run-tests.sh"
    return [
        ("Which error classes does sessionstore/errors.py define? Read it.", [
            tool_use_reply("read_file", {"file_path": str(errors), "offset": 0, "limit": 60},
                           text="Let me read the errors module."),
            tool_use_reply("grep_search", {"pattern": "^class ", "path": str(errors)}),
            text_reply("errors.py defines `SessionStoreError` and typed subclasses such as `SessionNotFound`, "
                       "`SessionExists`, `ConcurrencyError`, `InvalidEvent` and `TranscriptError`."),
        ]),
        ("How long is chain.py, and what does it hash? Also look at sessionstore/missing.py.", [
            tool_use_reply("run_shell_command", {"command": f"wc -l {chain} && grep -n 'def ' {chain} | head -20",
                                                 "description": "Count lines and list functions"}),
            tool_use_reply("read_file", {"file_path": str(work / "sessionstore" / "missing.py")}),
            text_reply("chain.py hashes each event with the hash before it (a SHA-256 chain). "
                       "sessionstore/missing.py does not exist."),
        ]),
        ("Add a one-line comment at the top of run-tests.sh saying what it does.", [
            tool_use_reply("read_file", {"file_path": str(tests), "limit": 5}),
            tool_use_reply("edit", {"file_path": str(tests), "old_string": "#!/usr/bin/env bash\n",
                                    "new_string": "#!/usr/bin/env bash\n# Runs the whole test suite.\n"}),
            text_reply("Done: run-tests.sh now starts with a comment saying it runs the whole test suite."),
        ]),
    ]


SUMMARY = text_reply(
    "<state_snapshot>\n<overall_goal>Learn the sessionstore code base: errors, hash chain, test runner."
    "</overall_goal>\n<key_knowledge>errors.py: SessionStoreError and typed subclasses. chain.py: a SHA-256 "
    "event chain.</key_knowledge>\n<file_system_state>MODIFIED: run-tests.sh (a header comment)."
    "</file_system_state>\n</state_snapshot>")


def after_compression(work: Path) -> tuple[str, list[MessageReply]]:
    return ("After all that, which file should I read first to understand event ids?", [
        tool_use_reply("run_shell_command", {"command": f"grep -rn 'event_id' {work / 'sessionstore'} | head -5"}),
        text_reply("Start with sessionstore/chain.py: it hashes each event's id into the chain."),
    ])


def environment(home: Path, url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "QWEN_", "DASHSCOPE_"))}
    return {**keep, "HOME": str(home), "OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-local-recorder",
            "OPENAI_MODEL": MODEL, "NO_COLOR": "1", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}


def record(binary: Path, root: Path) -> Path:
    home = root / "home"
    home.mkdir()
    work = copy_files(root / "work", FILES)
    with OpenAIServer() as server:
        env = environment(home, server.url)

        def run(prompt: str, first: bool) -> None:
            session = ["--session-id", SESSION_ID] if first else ["--resume", SESSION_ID]
            run_agent([str(binary), "-p", prompt, "--yolo", "--auth-type", "openai", *session], env, work)

        prompt_runs(server, [*turns(work), ("/compress", [SUMMARY]), after_compression(work)], run)
    (chat,) = (home / ".qwen" / "projects").glob(f"*/chats/{SESSION_ID}.jsonl")
    return chat


def main() -> None:
    binary = install()
    with tempfile.TemporaryDirectory(prefix="record-qwen-") as tmp:
        chat = record(binary, Path(tmp))
        target = OUT / "chats" / chat.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(chat, target)
    print_kinds(target, ROOT, lambda r: r["type"] + (f":{r['subtype']}" if "subtype" in r else ""))


if __name__ == "__main__":
    main()
