"""What a tool call *is*, across agents: a file read, a write, a search, a todo list, …

Claude Code says `Read`/`Glob`/`Grep`/`TodoWrite`, Pi `read`/`bash`, Codex runs everything
through `shell` (`cat`, `sed -n`, `rg`). Pruning and rewriting rules speak of categories,
and this catalog maps names — and, for shells, commands — to them. Extend it with
``ToolCatalog.default().extended({"MyRead": ToolSpec("read", path_keys=("file",))})``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Literal

Category = Literal["read", "write", "edit", "exploratory", "critical", "shell", "other"]

_PATH_KEYS: Final = ("file_path", "path", "filePath", "notebook_path", "file")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """How to read one tool's input: its category and where the path, range and content are."""

    category: Category
    path_keys: tuple[str, ...] = _PATH_KEYS
    content_key: str | None = None
    offset_key: str | None = None
    limit_key: str | None = None


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One call, classified."""

    name: str
    category: Category
    path: str | None = None
    start: int | None = None
    count: int | None = None
    content_key: str | None = None
    command: str | None = None

    @property
    def read_key(self) -> str:
        """``{path}:{start}:{count}``: two reads with the same key saw the same part of a file."""
        return f"{self.path}:{self.start or ''}:{self.count or ''}"


_READ = ToolSpec("read", offset_key="offset", limit_key="limit")
_EXPLORE = ToolSpec("exploratory")
_CRITICAL = ToolSpec("critical")

DEFAULT_TOOLS: Final[Mapping[str, ToolSpec]] = {
    # Claude Code
    "Read": _READ,
    "Write": ToolSpec("write", content_key="content"),
    "Edit": ToolSpec("edit"),
    "MultiEdit": ToolSpec("edit"),
    "NotebookEdit": ToolSpec("edit"),
    "Glob": _EXPLORE,
    "Grep": _EXPLORE,
    "LS": _EXPLORE,
    "TodoWrite": _CRITICAL,
    "ExitPlanMode": _CRITICAL,
    "Bash": ToolSpec("shell"),
    # Pi
    "read": _READ,
    "write": ToolSpec("write", content_key="content"),
    "edit": ToolSpec("edit"),
    "bash": ToolSpec("shell"),
    "ls": _EXPLORE,
    "find": _EXPLORE,
    "grep": _EXPLORE,
    "glob": _EXPLORE,
    # Codex
    "shell": ToolSpec("shell"),
    "local_shell": ToolSpec("shell"),
    "exec_command": ToolSpec("shell"),
    "apply_patch": ToolSpec("edit", content_key="input"),
    "update_plan": _CRITICAL,
    "list_dir": _EXPLORE,
    "grep_files": _EXPLORE,
    "read_file": _READ,
    # OpenCode and others
    "list": _EXPLORE,
    "todowrite": _CRITICAL,
    "todoread": _CRITICAL,
    "todo": _CRITICAL,
    "plan": _CRITICAL,
}

# Shell commands, by their program name.
_SHELL_READERS: Final = frozenset({"cat", "sed", "head", "tail", "nl", "bat", "less", "more"})
_SHELL_EXPLORERS: Final = frozenset({"ls", "find", "rg", "grep", "fd", "tree", "ag", "ack", "du", "wc", "pwd"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add) File: (.+)$", re.MULTILINE)
_SED_RANGE = re.compile(r"^(\d+)(?:,(\d+))?p$")


@dataclass(frozen=True)
class ToolCatalog:
    """Tool name → spec, plus the tools no rule may ever touch."""

    tools: Mapping[str, ToolSpec] = field(default_factory=lambda: dict(DEFAULT_TOOLS))
    excluded: frozenset[str] = frozenset()

    @classmethod
    def default(cls) -> ToolCatalog:
        return cls()

    def extended(self, tools: Mapping[str, ToolSpec], *, excluded: frozenset[str] | set[str] = frozenset()
                 ) -> ToolCatalog:
        return ToolCatalog({**self.tools, **tools}, self.excluded | frozenset(excluded))

    def classify(self, name: str, tool_input: Mapping[str, Any]) -> ToolUse:
        spec = self.tools.get(name)
        if spec is None:
            return ToolUse(name, "other", path=_first_str(tool_input, _PATH_KEYS))
        if spec.category == "shell":
            return _classify_shell(name, tool_input)
        path = _first_str(tool_input, spec.path_keys)
        if name == "apply_patch":
            path = _patched_path(tool_input) or path
        return ToolUse(name, spec.category, path=path, start=_int(tool_input, spec.offset_key),
                       count=_int(tool_input, spec.limit_key), content_key=spec.content_key)

    def is_excluded(self, name: str) -> bool:
        return name in self.excluded


def _first_str(data: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _int(data: Mapping[str, Any], key: str | None) -> int | None:
    value = data.get(key) if key else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _patched_path(tool_input: Mapping[str, Any]) -> str | None:
    text = tool_input.get("input") or tool_input.get("patch") or ""
    match = _PATCH_FILE.search(text) if isinstance(text, str) else None
    return match.group(1).strip() if match else None


def patch_text(tool_input: Mapping[str, Any]) -> str | None:
    """The text of an apply_patch input (its `input` or `patch`, or the shell command that
    pipes it), where the files it changes are named — Codex's patches often change several."""
    text = tool_input.get("input") or tool_input.get("patch") or shell_command(tool_input)
    return text if isinstance(text, str) else None


def shell_command(tool_input: Mapping[str, Any]) -> str:
    """The command line of a shell call (`["bash", "-lc", "cmd"]`, a string, or `{"cmd": …}`)."""
    command = tool_input.get("command", tool_input.get("cmd", ""))
    if isinstance(command, list):
        parts = [str(p) for p in command]
        if len(parts) >= 3 and parts[0].endswith(("bash", "sh", "zsh")) and parts[1] in ("-lc", "-c"):
            return parts[2]
        return shlex.join(parts)
    return command if isinstance(command, str) else json.dumps(command)


def _classify_shell(name: str, tool_input: Mapping[str, Any]) -> ToolUse:
    return _classify_command(name, shell_command(tool_input))


@lru_cache(maxsize=8192)
def _classify_command(name: str, command: str) -> ToolUse:
    """cat/sed -n/head/nl of one file is a read; ls/rg/find is exploration; apply_patch edits.
    Memoised: every level of a compaction classifies the same calls, and shlex is slow."""
    if "apply_patch" in command or "*** Begin Patch" in command:
        match = _PATCH_FILE.search(command)
        return ToolUse(name, "edit", path=match.group(1).strip() if match else None, command=command)
    segment = re.split(r"\s*(?:&&|\|\||;|\|)\s*", command.strip())
    while len(segment) > 1 and segment[0].startswith("cd "):  # "cd repo && cat x"
        segment = segment[1:]
    try:
        words = shlex.split(segment[0]) if segment else []
    except ValueError:
        return ToolUse(name, "shell", command=command)
    if not words:
        return ToolUse(name, "shell", command=command)
    program = words[0].rsplit("/", 1)[-1]
    if program == "git" and len(words) > 1 and words[1] in ("ls-files", "grep", "status", "log"):
        return ToolUse(name, "exploratory", command=command)
    if program in _SHELL_EXPLORERS:
        return ToolUse(name, "exploratory", command=command)
    if program in _SHELL_READERS and len(segment) == 1:
        return _shell_read(name, program, words[1:], command)
    return ToolUse(name, "shell", command=command)


def _shell_read(name: str, program: str, args: list[str], command: str) -> ToolUse:
    files = [a for a in args if not a.startswith("-")]
    start = count = None
    if program == "sed":
        if "-n" not in args or len(files) != 2:
            return ToolUse(name, "shell", command=command)
        match = _SED_RANGE.match(files[0])
        if not match:
            return ToolUse(name, "shell", command=command)
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        start, count, files = first, last - first + 1, files[1:]
    elif program in ("head", "tail"):
        files = [a for i, a in enumerate(args) if not a.startswith("-") and not (i and args[i - 1] in ("-n", "-c"))]
    if len(files) != 1:
        return ToolUse(name, "shell", command=command)
    return ToolUse(name, "read", path=files[0], start=start, count=count, command=command)
