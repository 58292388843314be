"""What the scripts that record real agents' sessions share (scripts/record_*.py).

The agents come from the npm registry at pinned versions, each installed once into its own folder
under .cache/recorders/, so re-recording is reproducible and never touches the machine's own node
setup.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sessionstore.testing.anthropic_server import AnthropicServer, MessageReply


def npm_install(package: str, version: str, cache: Path) -> Path:
    """`package@version` installed once into `cache`; the installed package's folder."""
    folder = cache / "node_modules" / package
    if not (folder / "package.json").exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(cache), "--no-audit", "--no-fund", f"{package}@{version}"],
                       check=True)
    installed = json.loads((folder / "package.json").read_text(encoding="utf-8"))["version"]
    if installed != version:
        raise RuntimeError(f"{cache} holds {package} {installed}, not {version}: delete it and run again")
    return folder


def pip_install(package: str, version: str, venv: Path, executable: str) -> Path:
    """`package==version` installed once into its own virtual environment `venv` (this Python; PyPI agents
    such as aider pin their own dependencies, which must not meet ours); its `executable`."""
    found = venv / "bin" / executable
    if not found.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{package}=={version}"], check=True)
    listed = subprocess.run([str(venv / "bin" / "pip"), "show", package], capture_output=True, text=True, check=True)
    installed = next(line.split()[-1] for line in listed.stdout.splitlines() if line.startswith("Version:"))
    if installed != version:
        raise RuntimeError(f"{venv} holds {package} {installed}, not {version}: delete it and run again")
    return found


def scratch_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment an agent records in: its home a scratch folder, no proxy and no API key of ours
    (the agent talks only to the local server), plus `extra`."""
    kept = {k: v for k, v in os.environ.items() if "PROXY" not in k.upper() and not k.endswith("_API_KEY")}
    return {**kept, "HOME": str(home), "NO_PROXY": "127.0.0.1", **extra}


def copy_files(work: Path, files: Sequence[tuple[Path, str]]) -> Path:
    """The recording's scratch workspace: each (source, name) copied to `work / name`."""
    for source, name in files:
        target = work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return work


def with_thinking(text: str, then: MessageReply, signature: str) -> MessageReply:
    """`then` preceded by a thinking block with a signature, as an extended-thinking model answers."""
    return MessageReply(content=({"type": "thinking", "thinking": text, "signature": signature}, *then.content),
                        stop_reason=then.stop_reason)


def run_agent(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
    """One run of an agent's command line (prompt mode), failing loudly with what it printed."""
    proc = subprocess.run(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} exited with {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")


def prompt_runs(server: AnthropicServer, runs: Sequence[tuple[str, Sequence[MessageReply]]],
                run: Callable[[str, bool], None]) -> None:
    """Each (prompt, the model's replies): the replies queued on `server`, then `run(prompt, first)`,
    one agent run a prompt; fails when a reply was never asked for or could not be given."""
    for i, (prompt, replies) in enumerate(runs):
        server.enqueue(*replies)
        run(prompt, i == 0)
    if server.pending:
        raise RuntimeError(f"{server.pending} scripted replies were never asked for")
    if server.errors:
        raise RuntimeError(f"reply errors: {server.errors}")


def print_kinds(target: Path, root: Path, kind_of: Callable[[dict[str, Any]], str]) -> None:
    """What a recorded JSONL file holds: its size, and its lines counted by kind."""
    kinds: dict[str, int] = {}
    for line in target.read_text(encoding="utf-8").splitlines():
        kind = kind_of(json.loads(line))
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"{target.relative_to(root)}: {sum(kinds.values())} lines, {target.stat().st_size:,} bytes")
    for kind, count in sorted(kinds.items()):
        print(f"  {kind}: {count}")


def print_parts(target: Path, root: Path, what: str, kinds: Iterable[str]) -> None:
    """What a recorded JSON document holds: its size, `what` it is, and its `kinds` counted."""
    print(f"{target.relative_to(root)}: {what}, {target.stat().st_size:,} bytes")
    for kind, count in sorted(Counter(kinds).items()):
        print(f"  {kind}: {count}")
