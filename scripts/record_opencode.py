"""Record a real OpenCode session as a test fixture: `python scripts/record_opencode.py`.

Why: the OpenCode importer was written from OpenCode's source with hand-made fixtures; it must be
tested on what OpenCode really writes. So this records one: the real OpenCode from npm (``opencode-ai``,
pinned below; its platform binary is an npm optional dependency) runs ``opencode run`` (then
``--session`` for each later prompt) against the local Messages API server
(`sessionstore.testing.AnthropicServer`), declared as a custom provider in its config file
(``@ai-sdk/anthropic`` with ``baseURL`` on 127.0.0.1) with a small context limit, so OpenCode compacts
the session by itself when a turn overflows it. Everything in the session is OpenCode's own writing —
its messages and parts, the tools it really ran (``read``, ``bash``, ``edit``, a ``read`` of a missing
file that fails), step usage, the compaction and its summary request — only the model's words are
scripted (what the compaction and the turn after it ask for gets the server's default answer).

OpenCode 1.x keeps sessions in a SQLite database (``$XDG_DATA_HOME/opencode/opencode.db``), no longer
in the JSON storage folder; ``opencode export <id>`` writes the session as one JSON document, which is
kept (``export-<session id>.json``), with the database itself (``opencode.db``, compacted by
``VACUUM INTO``: every table as OpenCode left it). HOME and the XDG folders are a temp folder, models.dev,
updates, sharing, plugins and LSP downloads are switched off; nothing but 127.0.0.1 is contacted beyond
the npm registry (to install OpenCode once into .cache/recorders/). Re-recording changes ids, paths and
timestamps, so the tests that pin facts of the file must be updated with it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from recordlib import copy_files, npm_install, print_parts, prompt_runs, run_agent, scratch_env  # noqa: E402

from sessionstore.testing.anthropic_server import (AnthropicServer, MessageReply, RecordedRequest,  # noqa: E402
                                                   text_reply, tool_use_reply)

PACKAGE = "opencode-ai"
VERSION = "1.18.33"
CACHE = ROOT / ".cache" / "recorders" / f"opencode-{VERSION}"
OUT = ROOT / "tests" / "fixtures" / "transcripts" / "opencode" / f"recorded-{VERSION}"
MODEL = "claude-sonnet-4-5"
CONTEXT = 16_000  # the model's context in the config: small, so the last turn overflows it and OpenCode compacts
FILES = [(ROOT / "sessionstore" / "errors.py", "sessionstore/errors.py"),
         (ROOT / "sessionstore" / "chain.py", "sessionstore/chain.py"),
         (ROOT / "scripts" / "test", "run-tests.sh")]
SUMMARY = ("## Goal\nLearn the sessionstore code base: errors, hash chain, test runner.\n\n## Done\n"
           "- errors.py: SessionStoreError and typed subclasses.\n- chain.py: a SHA-256 event chain.\n"
           "- run-tests.sh: a header comment added.\n\n## Next\nNothing pending.")


def turns(work: Path) -> list[tuple[str, list[MessageReply]]]:
    """(prompt, the model's replies to its requests in order), one `opencode run` each."""
    errors, chain, tests = (work / name for _, name in FILES)
    return [
        ("Which error classes does sessionstore/errors.py define? Read it.", [
            tool_use_reply("read", {"filePath": str(errors), "limit": 60}, text="Let me read the errors module."),
            text_reply("errors.py defines `SessionStoreError` and typed subclasses such as `SessionNotFound`, "
                       "`ConcurrencyError`, `InvalidEvent` and `TranscriptError`."),
        ]),
        ("How long is chain.py? Also look at sessionstore/missing.py.", [
            tool_use_reply("bash", {"command": f"wc -l {chain}", "description": "Count the lines of chain.py"}),
            tool_use_reply("read", {"filePath": str(work / "sessionstore" / "missing.py")}),
            text_reply("chain.py is short; sessionstore/missing.py does not exist."),
        ]),
        ("Add a one-line comment at the top of run-tests.sh saying what it does.", [
            tool_use_reply("read", {"filePath": str(tests), "limit": 5}),
            tool_use_reply("edit", {"filePath": str(tests), "oldString": "#!/usr/bin/env bash\n",
                                    "newString": "#!/usr/bin/env bash\n# Runs the whole test suite.\n"}),
            text_reply("Done: run-tests.sh now starts with a comment saying it runs the whole test suite."),
        ]),
        ("Now read all of sessionstore/chain.py and tell me what it hashes.", [
            tool_use_reply("read", {"filePath": str(chain)}),
            text_reply("chain.py hashes each event with the hash before it (a SHA-256 chain)."),
        ]),
    ]


def unscripted(request: RecordedRequest) -> MessageReply:
    """What the requests no turn scripts get: the compaction's request its summary, any other a short text."""
    system = json.dumps(request.body.get("system", "")) if isinstance(request.body, dict) else ""
    last = json.dumps(request.messages[-1] if request.messages else {})
    return text_reply(SUMMARY if "summar" in (system + last).lower() else "Nothing more to do.")


def config(url: str) -> dict[str, Any]:
    return {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
            "model": f"local/{MODEL}", "small_model": f"local/{MODEL}",
            "provider": {"local": {"npm": "@ai-sdk/anthropic", "name": "Local Messages API",
                                   "options": {"baseURL": f"{url}/v1", "apiKey": "sk-local-recorder"},
                                   "models": {MODEL: {"name": "Claude Sonnet 4.5",
                                                      "limit": {"context": CONTEXT, "output": 4096}}}}}}


def environment(home: Path, work: Path, config_file: Path) -> dict[str, str]:
    xdg = {"XDG_DATA_HOME": home / ".local" / "share", "XDG_CONFIG_HOME": home / ".config",
           "XDG_CACHE_HOME": home / ".cache", "XDG_STATE_HOME": home / ".local" / "state"}
    flags = {f"OPENCODE_DISABLE_{name}": "1" for name in ("AUTOUPDATE", "MODELS_FETCH", "SHARE", "LSP_DOWNLOAD",
                                                         "DEFAULT_PLUGINS", "CLAUDE_CODE")}
    return scratch_env(home, **{k: str(v) for k, v in xdg.items()}, **flags, OPENCODE_CONFIG=str(config_file),
                       PWD=str(work), NO_COLOR="1")


def record(binary: Path, root: Path, database: Path) -> tuple[str, str]:
    """The session's id and what `opencode export` printed for it; OpenCode's database copied to `database`."""
    home = root / "home"
    home.mkdir()
    work = copy_files(root / "work", FILES)
    subprocess.run(["git", "init", "-q", str(work)], check=True)  # OpenCode's project is a git work tree
    session: list[str] = []
    with AnthropicServer(strict=False, default=unscripted) as server:
        config_file = root / "opencode.json"
        config_file.write_text(json.dumps(config(server.url)), encoding="utf-8")
        env = environment(home, work, config_file)

        def run(prompt: str, first: bool) -> None:
            resume = [] if first else ["--session", session[0]]
            title = ["--title", "Learn the sessionstore code base"] if first else []
            run_agent([str(binary), "run", "--pure", "--auto", "-m", f"local/{MODEL}", "--dir", str(work), *title,
                       *resume, prompt], env, work)
            if first:
                listed = subprocess.run([str(binary), "session", "list", "--format", "json"], env=env, cwd=work,
                                        capture_output=True, text=True, check=True)
                session.append(json.loads(listed.stdout)[0]["id"])

        prompt_runs(server, turns(work), run)
    exported = subprocess.run([str(binary), "export", session[0]], env=env, cwd=work, capture_output=True,
                              text=True, check=True)
    database.unlink(missing_ok=True)
    with sqlite3.connect(home / ".local" / "share" / "opencode" / "opencode.db") as db:  # its WAL folded in
        db.execute("VACUUM INTO ?", (str(database),))
    return session[0], exported.stdout


def main() -> None:
    binary = npm_install(PACKAGE, VERSION, CACHE).parent / ".bin" / "opencode"  # the pinned OpenCode
    with tempfile.TemporaryDirectory(prefix="record-opencode-") as tmp:
        OUT.mkdir(parents=True, exist_ok=True)
        for old in OUT.glob("export-ses_*.json"):
            old.unlink()
        sid, exported = record(binary, Path(tmp), OUT / "opencode.db")
    document = json.loads(exported)
    target = OUT / f"export-{sid}.json"
    target.write_text(exported, encoding="utf-8")  # byte for byte what `opencode export` printed
    print_parts(target, ROOT, f"{len(document['messages'])} messages", (
        f"{message['info']['role']}:{part['type']}" for message in document["messages"] for part in message["parts"]))


if __name__ == "__main__":
    main()
