"""Record a real Gemini CLI session with a sub-agent as a test fixture: `python scripts/record_gemini_cli.py`.

Why: the importer must be tested on what Gemini CLI really writes — its JSONL chat, the
`<session_context>` history it sets first, tool-response turns recorded beside each call's own
result, and a sub-agent's chat in ``chats/<parent session id>/<agent id>.jsonl`` that the parent's
call record names (`agentId`). The real `gemini` CLI from npm (pinned below) runs headless
(``-p``) against a stand-in for the Gemini API on 127.0.0.1 (``GOOGLE_GEMINI_BASE_URL``, which
the CLI accepts for a local host) with scripted replies: the main agent invokes the
``codebase_investigator`` sub-agent, which really reads a file of this repository and completes
its task; the main agent answers. Everything in the files is the CLI's own writing; only the
model's words and token counts are the stand-in's. A compression notice is not recorded: the
CLI writes it only from its interactive terminal UI (`useHistoryManager`), not headless.

Needs node and the npm registry (the CLI installed once into .cache/recorders/gemini-cli).
Re-recording changes ids and timestamps; the tests read them from the files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from recordlib import npm_install  # noqa: E402

PACKAGE = "@google/gemini-cli"
VERSION = "0.61.0"
CACHE = ROOT / ".cache" / "recorders" / "gemini-cli"
OUT = ROOT / "tests" / "fixtures" / "transcripts" / "gemini-cli" / f"recorded-{VERSION}"
READ = "errors.py"  # the file of this repository the sub-agent reads (sessionstore/errors.py)
FINDING = "errors.py defines the typed errors; MissingExtra names the command that installs an extra."


def _sample(schema: dict[str, Any]) -> Any:
    """A value of `schema`'s shape: what the stand-in model fills a tool's arguments with."""
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {name: _sample(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [_sample(schema.get("items") or {"type": "string"})]
    return {"number": 1, "integer": 1, "boolean": True}.get(kind, FINDING)


def reply(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The scripted model: the main agent invokes the investigator, which reads a file and completes;
    side requests (routing, next-speaker checks) get a JSON answer."""
    tools = {d.get("name"): d for t in body.get("tools", []) for d in t.get("functionDeclarations", [])}
    answered = [p["functionResponse"]["name"] for c in body.get("contents", []) for p in c.get("parts", [])
                if "functionResponse" in p]
    if "complete_task" in tools:  # the sub-agent
        if "read_file" not in answered:
            return [{"functionCall": {"name": "read_file", "args": {"file_path": READ}}}]
        done = tools["complete_task"]
        return [{"functionCall": {"name": "complete_task",
                                  "args": _sample(done.get("parametersJsonSchema") or done.get("parameters") or {})}}]
    if "invoke_agent" in tools and "invoke_agent" not in answered:
        return [{"functionCall": {"name": "invoke_agent", "args": {
            "agent_name": "codebase_investigator", "prompt": f"Find what {READ} defines and summarise it."}}}]
    if answered:
        return [{"text": f"The investigator read it: {FINDING}"}]
    return [{"text": json.dumps({"reasoning": "scripted", "next_speaker": "user", "model_choice": "flash"})}]


class _Gemini(BaseHTTPRequestHandler):
    """The Gemini API's generateContent, streamGenerateContent (SSE) and countTokens, scripted."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if ":countTokens" in self.path:
            return self._send("application/json", json.dumps({"totalTokens": 1000}).encode())
        answer = {"candidates": [{"content": {"role": "model", "parts": reply(body)}, "finishReason": "STOP",
                                  "index": 0}],
                  "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 20, "totalTokenCount": 1220}}
        if ":streamGenerateContent" in self.path:
            return self._send("text/event-stream", b"data: " + json.dumps(answer).encode() + b"\r\n\r\n")
        return self._send("application/json", json.dumps(answer).encode())

    def _send(self, kind: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    cli = npm_install(PACKAGE, VERSION, CACHE) / "bundle" / "gemini.js"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gemini)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="gemini-record-") as scratch:
        home, work = Path(scratch) / "home", Path(scratch) / "work"
        (home / ".gemini").mkdir(parents=True)
        work.mkdir()
        shutil.copyfile(ROOT / "sessionstore" / "errors.py", work / READ)
        (home / ".gemini" / "settings.json").write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False}}), encoding="utf-8")
        env = {**os.environ, "HOME": str(home), "GEMINI_API_KEY": "local-never-checked",
               "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{server.server_port}"}
        done = subprocess.run(["node", str(cli), "-p", f"What does {READ} define? Ask the investigator.", "--yolo"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=300)
        server.shutdown()
        if done.returncode != 0:
            raise SystemExit(f"gemini exited {done.returncode}:\n{done.stderr[-2000:]}")
        (chats,) = (home / ".gemini" / "tmp").glob("*/chats")
        shutil.rmtree(OUT, ignore_errors=True)
        shutil.copytree(chats, OUT / "chats")
    for path in sorted(OUT.rglob("*.jsonl")):
        print(path.relative_to(ROOT), path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
