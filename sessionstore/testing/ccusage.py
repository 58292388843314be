"""ccusage (npm), the usage report most Claude Code users know, run offline on the same files as
`sessionstore usage`: what the parity test and `scripts/compare_ccusage.py` compare against.

ccusage reads ``$CLAUDE_CONFIG_DIR/projects/<project>/**/*.jsonl`` and, with ``--offline``, prices
with the table it embeds. Version 18.0.11 is the last that is plain JavaScript (later ones need a
native binary); it is installed once into a cache folder (`install`: ``scripts/bootstrap --test``
does it, into ``.cache/ccusage``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

CCUSAGE_VERSION: Final = "18.0.11"
_ENTRY: Final = Path("node_modules/ccusage/dist/index.js")


class CcusageUnavailable(RuntimeError):
    """ccusage cannot be installed or run here (no node or npm, or the install failed)."""


def installed(cache: Path) -> Path | None:
    """ccusage's entry point in `cache`, if the wanted version is there."""
    package = cache / "node_modules" / "ccusage" / "package.json"
    try:
        if json.loads(package.read_text())["version"] == CCUSAGE_VERSION:
            return cache / _ENTRY
    except (OSError, ValueError, KeyError):
        pass
    return None


def install(cache: Path) -> Path:
    """ccusage's entry point, installed into `cache` with npm first when it is not there."""
    found = installed(cache)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise CcusageUnavailable("ccusage needs node and npm on the PATH (apt-get install nodejs npm)")
    cache.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--silent",
                           f"ccusage@{CCUSAGE_VERSION}"], capture_output=True, text=True, timeout=300)
    found = installed(cache)
    if done.returncode or found is None:
        raise CcusageUnavailable(f"npm install ccusage@{CCUSAGE_VERSION} failed: {done.stderr.strip()[-500:]}")
    return found


def project_folders(root: Path) -> list[Path]:
    """The Claude Code project folders under `root`: `root` itself when it holds transcripts,
    else each folder in it (``~/.claude/projects`` is laid out so)."""
    if any(root.glob("*.jsonl")):
        return [root]
    return sorted(path for path in root.iterdir() if path.is_dir())


def lay_out(folders: Iterable[Path], config: Path) -> Path:
    """A Claude config folder whose ``projects/`` holds `folders` (symlinks): ccusage's input."""
    projects = config / "projects"
    projects.mkdir(parents=True, exist_ok=True)
    for folder in folders:
        link = projects / folder.name
        if not link.exists():
            link.symlink_to(folder.resolve(), target_is_directory=True)
    return config


def daily(entry: Path, config: Path, zone: str) -> list[dict[str, Any]]:
    """``ccusage daily --json --offline`` on the Claude config folder `config`, days counted in
    `zone` (ccusage counts in the local zone: $TZ), as rows of `sessionstore usage --by day --json`."""
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "TZ": zone, "NO_COLOR": "1"}
    done = subprocess.run(["node", str(entry), "daily", "--json", "--offline"], capture_output=True, text=True,
                          env=env, timeout=120)
    if done.returncode:
        raise CcusageUnavailable(f"ccusage failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return [{"day": row["date"], "input_tokens": row["inputTokens"], "output_tokens": row["outputTokens"],
             "cache_creation_tokens": row["cacheCreationTokens"], "cache_read_tokens": row["cacheReadTokens"],
             "cost_usd": row["totalCost"]} for row in json.loads(done.stdout)["daily"]]


__all__ = ["CCUSAGE_VERSION", "CcusageUnavailable", "daily", "install", "installed", "lay_out", "project_folders"]
