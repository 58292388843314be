"""Record a real GitHub Copilot CLI session as a test fixture: `python scripts/record_copilot.py`.

Why: the Copilot CLI importer must be tested on what Copilot really writes
(``~/.copilot/session-state/<id>/events.jsonl``), and no such file small enough to ship is
published. So this records one: the real Copilot CLI from npm (pinned below) runs in prompt mode
(``copilot -p``, then ``--resume`` for each later prompt) against the local Messages API server
(`sessionstore.testing.AnthropicServer`) with scripted replies. Copilot's BYOK settings
(``COPILOT_OFFLINE``, ``COPILOT_PROVIDER_BASE_URL``, ``COPILOT_PROVIDER_TYPE=anthropic``) send
every model call there and need no GitHub login. Everything in the file is written by Copilot
itself — its session start and resumes, the system prompt, tool calls it really executed
(``view``, ``bash``, ``grep``, an ``edit``, a ``view`` of a missing file that fails), thinking
with signatures, usage records, a ``/compact`` it summarised through the server and a turn
after it — only the model's words are scripted.

HOME is a temp folder (Copilot keeps its state in ``$HOME/.copilot``); nothing but 127.0.0.1 is
contacted beyond the npm registry (to install Copilot once into .cache/recorders/copilot).
Re-recording changes ids, paths and timestamps, so the tests that pin facts of the file must be
updated with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from recordlib import copy_files, npm_install, print_kinds, prompt_runs, run_agent, with_thinking  # noqa: E402

from sessionstore.testing.anthropic_server import (  # noqa: E402
    AnthropicServer,
    MessageReply,
    text_reply,
    tool_use_reply,
)

PACKAGE = "@github/copilot"
VERSION = "1.0.102"
CACHE = ROOT / ".cache" / "recorders" / "copilot"
OUT = ROOT / "tests" / "fixtures" / "transcripts" / "copilot-cli" / "recorded"
MODEL = "claude-sonnet-4.5"
SESSION_ID = "5e551075-c0b1-4c71-9a7e-2026c0de0001"  # given with --session-id, so each run resumes it
FILES = [(ROOT / "sessionstore" / "errors.py", "sessionstore/errors.py"),
         (ROOT / "sessionstore" / "chain.py", "sessionstore/chain.py"),
         (ROOT / "scripts" / "test", "run-tests.sh")]


def install() -> Path:
    """The pinned Copilot CLI, installed once from the npm registry."""
    npm_install(PACKAGE, VERSION, CACHE)
    return CACHE / "node_modules" / ".bin" / "copilot"


def thinking(text: str, then: MessageReply) -> MessageReply:
    return with_thinking(text, then, f"sig-{abs(hash(text)) % 10**12:012d}-recorded-by-sessionstore")


def turns(work: Path) -> list[tuple[str, list[MessageReply]]]:
    """(prompt, the model's replies to its requests in order), one `copilot -p` run each."""
    errors, chain = work / "sessionstore" / "errors.py", work / "sessionstore" / "chain.py"
    tests = work / "run-tests.sh"
    return [
        ("Which error classes does sessionstore/errors.py define? Read it.", [
            thinking("I'll view errors.py, then grep for the class lines to list them.",
                     tool_use_reply("view", {"path": str(errors), "view_range": [1, 60]},
                                    text="Let me read the errors module.")),
            tool_use_reply("grep", {"pattern": "^class ", "paths": str(errors), "output_mode": "content"}),
            text_reply("errors.py defines `SessionStoreError` and typed subclasses such as `SessionNotFound`, "
                       "`SessionExists`, `ConcurrencyError`, `InvalidEvent` and `TranscriptError`, each "
                       "carrying what a caller needs to react."),
        ]),
        ("How long is chain.py, and what does it hash? Also look at sessionstore/missing.py.", [
            tool_use_reply("bash", {"command": f"wc -l {chain} && grep -n 'def ' {chain} | head -20",
                                    "description": "Count lines and list functions"}),
            tool_use_reply("view", {"path": str(work / "sessionstore" / "missing.py")}),
            text_reply("chain.py hashes each event with the hash before it (a SHA-256 chain), so a changed or "
                       "missing event breaks verification. sessionstore/missing.py does not exist."),
        ]),
        ("Add a one-line comment at the top of run-tests.sh saying what it does.", [
            tool_use_reply("view", {"path": str(tests), "view_range": [1, 5]}),
            tool_use_reply("edit", {"path": str(tests), "old_str": "#!/usr/bin/env bash\n",
                                    "new_str": "#!/usr/bin/env bash\n# Runs the whole test suite.\n"}),
            text_reply("Done: run-tests.sh now starts with a comment saying it runs the whole test suite."),
        ]),
    ]


SUMMARY = text_reply(
    "<overview>\nThe user is learning the sessionstore code base: its errors, its hash chain, and its test "
    "runner.\n</overview>\n\n<history>\n1. Asked which error classes errors.py defines: listed them.\n2. Asked "
    "about chain.py (a SHA-256 event chain) and a missing file.\n3. Asked for a header comment in run-tests.sh: "
    "added.\n</history>\n\n<work_done>\n- run-tests.sh: a comment line after the shebang.\n</work_done>")


def after_compaction(work: Path) -> tuple[str, list[MessageReply]]:
    return ("After all that, which file should I read first to understand event ids?", [
        tool_use_reply("bash", {"command": f"grep -rn 'event_id' {work / 'sessionstore'} | head -5",
                                "description": "Find event ids"}),
        text_reply("Start with sessionstore/chain.py: it hashes each event's id into the chain."),
    ])


def workspace(root: Path) -> Path:
    work = copy_files(root / "work", FILES)
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    return work


def environment(home: Path, url: str) -> dict[str, str]:
    """Copilot's BYOK settings: the local server, offline (no GitHub login, telemetry or updates)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("COPILOT_", "GITHUB_", "GH_"))}
    return {**keep, "HOME": str(home), "COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": url, "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_API_KEY": "sk-local-recorder", "COPILOT_MODEL": MODEL, "NO_COLOR": "1"}


def record(binary: Path, root: Path) -> Path:
    home = root / "home"
    home.mkdir()
    work = workspace(root)
    with AnthropicServer(strict=False) as server:
        env = environment(home, server.url)

        def run(prompt: str, first: bool) -> None:
            session = f"--session-id={SESSION_ID}" if first else f"--resume={SESSION_ID}"
            run_agent([str(binary), "-p", prompt, "--allow-all-tools", session], env, work)

        prompt_runs(server, [*turns(work), ("/compact", [SUMMARY]), after_compaction(work)], run)
    return home / ".copilot" / "session-state" / SESSION_ID / "events.jsonl"


def main() -> None:
    binary = install()
    with tempfile.TemporaryDirectory(prefix="record-copilot-") as tmp:
        events = record(binary, Path(tmp))
        target = OUT / SESSION_ID / "events.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(events, target)
    print_kinds(target, ROOT, lambda event: event["type"])


if __name__ == "__main__":
    main()
