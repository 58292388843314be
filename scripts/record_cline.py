"""Record a real Cline CLI session as a test fixture: `python scripts/record_cline.py`.

Why: the Cline importer must be tested on what Cline really writes. The `cline` CLI from npm
(pinned below) runs headless (`cline --json PROMPT`, then `--id` to continue the same session)
against the local OpenAI-compatible server (`sessionstore.testing.OpenAIServer`, Chat
Completions) with scripted replies; its provider settings, written before the run, name that
server and a small context window, so that the third turn makes Cline compact the conversation
(its `agentic` compaction asks the server for the summary). Everything in the files —
`<id>.messages.json`, the session record `<id>.json`, the tool calls it really ran (file reads,
a shell command), usage and the compaction — is Cline's own writing; only the model's words are
scripted. Its home and data folder are a temporary folder; it talks only to 127.0.0.1.

Needs npm (to install Cline once into .cache/recorders/cline). Re-recording changes ids and
timestamps, so the tests that pin facts of the files must be updated with it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from recordlib import copy_files, npm_install, scratch_env  # noqa: E402

from sessionstore.testing.anthropic_server import text_reply, tool_use_reply  # noqa: E402
from sessionstore.testing.openai_server import OpenAIServer  # noqa: E402

PACKAGE = "cline"
VERSION = "3.0.65"
CACHE = ROOT / ".cache" / "recorders" / "cline"
OUT = ROOT / "tests" / "fixtures" / "transcripts" / "cline" / "recorded"
MODEL = "gpt-4.1"
FILES = [(ROOT / "sessionstore" / "tokens.py", "tokens.py"), (ROOT / "sessionstore" / "errors.py", "errors.py")]


def _run(binary: Path, env: dict[str, str], work: Path, prompt: str, *args: str) -> None:
    """One headless turn (`args`: ``--id`` to continue a session)."""
    done = subprocess.run([str(binary), "--json", "-c", str(work), *args, prompt], env=env, cwd=work,
                          capture_output=True, text=True, timeout=300)
    last = done.stdout.strip().splitlines()[-1:] or [""]
    print(f"cline {prompt[:40]!r}: exit {done.returncode}, {last[0][:200]}")
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])


def _stop_hub(work: Path) -> None:
    """End the hub daemon the runs started (it serves this workspace only), by its process id."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--cline-hub-daemon" in cmdline and str(work).encode() in cmdline:
            try:
                os.kill(int(proc.name), 15)
            except OSError:
                pass


def main() -> None:
    package = npm_install(PACKAGE, VERSION, CACHE)
    binary = package / "bin" / ".cline"
    home = Path(tempfile.mkdtemp(prefix="cline-record-"))
    work = copy_files(home / "work", FILES)
    data = home / ".cline" / "data"
    env = scratch_env(home, CLINE_DIR=str(home / ".cline"))
    try:
        with OpenAIServer() as server:
            settings = {"provider": "openai-compatible", "apiKey": "sk-local", "model": MODEL,
                        "baseUrl": f"{server.url}/v1", "contextWindow": 9000, "maxTokens": 1024}
            subprocess.run([str(binary), "auth", "-p", "openai-compatible", "-k", "sk-local", "-m", MODEL, "-b",
                            settings["baseUrl"]], env=env, cwd=work, check=True, capture_output=True, timeout=120)
            providers = data / "settings" / "providers.json"  # the window `auth` cannot set: compaction comes soon
            stored = json.loads(providers.read_text())
            stored["providers"]["openai-compatible"]["settings"].update(settings)
            providers.write_text(json.dumps(stored, indent=2))
            server.enqueue(
                tool_use_reply("run_commands", {"commands": ["grep -c '^class ' errors.py"]},
                               text="Let me count the error classes first."),
                tool_use_reply("read_files", {"files": [{"path": "tokens.py"}]}, text="Now tokens.py."),
                # tokens.py puts the context over Cline's threshold: it asks for a summary first
                text_reply("The user asked what errors.py and tokens.py define and how long they are. grep counted "
                           "the error classes of errors.py; tokens.py (the token counter) was read in full."),
                tool_use_reply("run_commands", {"commands": ["wc -l tokens.py errors.py"]}),
                # still over it (the kept tail holds tokens.py): a second summary, the one the file keeps
                text_reply("errors.py holds 23 error classes; tokens.py is the token counter. wc counted the lines of "
                           "both: 290 and 230."),
                text_reply("errors.py defines the typed errors; tokens.py counts tokens. Together they are a few "
                           "hundred lines."))
            _run(binary, env, work, "What do errors.py and tokens.py define, and how long are they together?")
            sid = next((data / "sessions").iterdir()).name
            print(f"{len(server.requests)} requests served")
            if os.environ.get("RECORD_DEBUG"):
                for r in server.requests:
                    body = r.body if isinstance(r.body, dict) else {}
                    last = (body.get("messages") or [{}])[-1]
                    print(r.path, len(body.get("messages") or []), json.dumps(last)[:300])
        session = data / "sessions" / sid
        if OUT.exists():
            shutil.rmtree(OUT)
        target = OUT / sid
        target.mkdir(parents=True)
        for name in (f"{sid}.messages.json", f"{sid}.json", f"{sid}.compaction.json"):
            if not (session / name).exists():
                continue
            text = (session / name).read_text(encoding="utf-8").replace(str(home), "/home/user")
            (target / name).write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    finally:
        _stop_hub(work)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
