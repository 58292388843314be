"""What a tool call *is*, across agents: a file read, a write, a search, a todo list, …

Claude Code says `Read`/`Write`/`Edit`/`TodoWrite`, Pi `read`/`write`/`edit`/`bash`, Codex runs
everything through `shell` (`cat`, `sed -n`, `rg`) and `apply_patch`, Gemini CLI
`read_file`/`write_file`/`replace`/`run_shell_command`, OpenCode `read`/`write`/`edit`/`patch`,
OpenHands and SWE-agent `str_replace_editor`, whose `command` (view, create, str_replace, insert,
undo_edit) decides whether a call reads or changes its file — SWE-agent records it as a command
line, ``str_replace_editor view /testbed/x.py --view_range 1 20``, read here into the same keys
(`ToolCatalog.arguments`). Pruning and rewriting rules speak of categories, and this catalog
maps names — and, for shells and editors, commands — to them. Extend it with
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

_PATH_KEYS: Final = ("file_path", "path", "filePath", "absolute_path", "notebook_path", "file")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """How to read one tool's input: its category and where the path, range and content are.

    `commands`: the category each value of the input's `command` gives a call (an editor's
    view reads, its create writes), `category` being that of any other; `positional`: the keys
    of the words after the tool's name when the input's `command` is a command line (SWE-agent's
    ``create notes.py``); `offset_key` may name a ``[first, last]`` line range (``view_range``)."""

    category: Category
    path_keys: tuple[str, ...] = _PATH_KEYS
    content_key: str | None = None
    offset_key: str | None = None
    limit_key: str | None = None
    commands: tuple[tuple[str, Category], ...] = ()
    positional: tuple[str, ...] = ()


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
_WRITE = ToolSpec("write", content_key="content")
_EDIT = ToolSpec("edit")
_PATCH = ToolSpec("edit", content_key="input")
_EXPLORE = ToolSpec("exploratory")
_CRITICAL = ToolSpec("critical")
_SHELL = ToolSpec("shell")
# OpenHands' and SWE-agent's file editor (`file_editor` in the OpenHands SDK).
_EDITOR = ToolSpec("other", path_keys=("path",), content_key="file_text", offset_key="view_range",
                   commands=(("view", "read"), ("create", "write"), ("str_replace", "edit"), ("insert", "edit"),
                             ("undo_edit", "edit")), positional=("command", "path"))

DEFAULT_TOOLS: Final[Mapping[str, ToolSpec]] = {
    # Claude Code
    "Read": _READ,
    "Write": _WRITE,
    "Edit": _EDIT,
    "MultiEdit": _EDIT,
    "NotebookEdit": _EDIT,
    "Glob": _EXPLORE,
    "Grep": _EXPLORE,
    "LS": _EXPLORE,
    "TodoWrite": _CRITICAL,
    "ExitPlanMode": _CRITICAL,
    "Bash": _SHELL,
    # Pi (and OpenCode: read, write, edit, bash, glob, grep)
    "read": _READ,
    "write": _WRITE,
    "edit": _EDIT,
    "bash": _SHELL,
    "ls": _EXPLORE,
    "find": _EXPLORE,
    "grep": _EXPLORE,
    "glob": _EXPLORE,
    # Codex
    "shell": _SHELL,
    "local_shell": _SHELL,
    "exec_command": _SHELL,
    "apply_patch": _PATCH,
    "update_plan": _CRITICAL,
    "list_dir": _EXPLORE,
    "grep_files": _EXPLORE,
    "read_file": _READ,
    # Gemini CLI (read_file above: `file_path`, formerly `absolute_path` or `path`)
    "write_file": _WRITE,
    "replace": _EDIT,
    "run_shell_command": _SHELL,
    "list_directory": _EXPLORE,
    "read_many_files": _EXPLORE,
    "search_file_content": _EXPLORE,
    "grep_search": _EXPLORE,
    "write_todos": _CRITICAL,
    # OpenCode (and others)
    "patch": ToolSpec("edit", content_key="patchText"),
    "multiedit": _EDIT,
    "list": _EXPLORE,
    "todowrite": _CRITICAL,
    "todoread": _CRITICAL,
    "todo": _CRITICAL,
    "plan": _CRITICAL,
    # OpenHands
    "str_replace_editor": _EDITOR,
    "file_editor": _EDITOR,
    "edit_file": ToolSpec("edit", path_keys=("path",)),
    "execute_bash": _SHELL,
    "terminal": _SHELL,
    # SWE-agent (str_replace_editor above; `edit` names no file: it changes the one `open`ed), and
    # GitHub Copilot CLI's `create` (`path`, `file_text`)
    "create": ToolSpec("write", path_keys=("filename", "path"), content_key="file_text", positional=("filename",)),
    # GitHub Copilot CLI (edit, bash, grep, glob above: `path`, `old_str`, `new_str`)
    "view": ToolSpec("read", path_keys=("path",), offset_key="view_range"),
    "open": ToolSpec("read", path_keys=("path",), positional=("path", "line_number")),
}

# Shell commands, by their program name.
_SHELL_READERS: Final = frozenset({"cat", "sed", "head", "tail", "nl", "bat", "less", "more"})
_SHELL_EXPLORERS: Final = frozenset({"ls", "find", "rg", "grep", "fd", "tree", "ag", "ack", "du", "wc", "pwd"})
# SWE-agent's tools that a trajectory without function calling runs as shell commands (not its
# `open`: a shell's `open` opens a file in an application, it shows the model nothing).
_SHELL_TOOLS: Final = frozenset({"str_replace_editor", "create"})
# Where a patch tool's input holds its text: Codex's `input`, OpenCode's `patchText`.
_PATCH_KEYS: Final = ("input", "patch", "patchText")
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
        spec, args = self._resolved(name, tool_input)
        if spec is None:
            return ToolUse(name, "other", path=_first_str(tool_input, _PATH_KEYS))
        if spec.category == "shell":
            return _classify_shell(name, tool_input)
        category = dict(spec.commands).get(str(args.get("command")), spec.category)
        path = _first_str(args, spec.path_keys)
        if spec.content_key in _PATCH_KEYS:
            path = _patched_path(args) or path
        start, count = _range(args, spec)
        return ToolUse(name, category, path=path, start=start, count=count, content_key=spec.content_key)

    def arguments(self, name: str, tool_input: Mapping[str, Any]) -> Mapping[str, Any]:
        """A call's input, a command line that names a tool of the catalog read into that tool's
        keys: SWE-agent's ``str_replace_editor str_replace /x.py --old_str 'a' --new_str 'b'``
        (as its own call, or run by a shell) gives ``command``, ``path``, ``old_str``, ``new_str``."""
        return self._resolved(name, tool_input)[1]

    def _resolved(self, name: str, tool_input: Mapping[str, Any]) -> tuple[ToolSpec | None, Mapping[str, Any]]:
        """The spec of the tool a call runs, and its arguments (`arguments`)."""
        spec = self.tools.get(name)
        command = tool_input.get("command")
        if spec is None or not isinstance(command, str):
            return spec, tool_input
        first = command.split(None, 1)[0] if command.strip() else ""
        if spec.category == "shell" and first in _SHELL_TOOLS and first in self.tools:
            name, spec = first, self.tools[first]
        if spec.positional and first == name:
            return spec, {**tool_input, **_command_line(command, spec.positional)}
        return spec, tool_input

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


def _range(args: Mapping[str, Any], spec: ToolSpec) -> tuple[int | None, int | None]:
    """(first line, line count) of a read: an offset and a limit, or a ``[first, last]`` range
    (``view_range``; a last line of -1 is the file's end)."""
    value = args.get(spec.offset_key) if spec.offset_key else None
    if isinstance(value, list) and len(value) == 2:
        first, last = (_as_int(v) for v in value)
        count = last - first + 1 if first is not None and last is not None and last >= first else None
        return first, count
    return _int(args, spec.offset_key), _int(args, spec.limit_key)


def _as_int(value: Any) -> int | None:
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@lru_cache(maxsize=1024)
def _command_line(command: str, positional: tuple[str, ...]) -> dict[str, Any]:
    """The arguments of a command line after its program: its first words in `positional`'s
    keys, each ``--option`` its value (its values, when it has several: ``--view_range 1 20``)."""
    try:
        words = shlex.split(command)[1:]
    except ValueError:
        words = command.split()[1:]
    free: list[str] = []
    options: dict[str, list[str]] = {}
    option = None
    for word in words:
        if word.startswith("--") and len(word) > 2:
            option = word[2:]
            options[option] = []
        elif option is not None:
            options[option].append(word)
        else:
            free.append(word)
    found: dict[str, Any] = {key: values[0] if len(values) == 1 else values for key, values in options.items()}
    found.update(zip(positional, free))
    return found


def _patched_path(tool_input: Mapping[str, Any]) -> str | None:
    text = patch_text(tool_input)
    match = _PATCH_FILE.search(text) if text else None
    return match.group(1).strip() if match else None


def patch_text(tool_input: Mapping[str, Any]) -> str | None:
    """The text of a patch tool's input (Codex's `input`, OpenCode's `patchText`, or the shell
    command that pipes it), where the files it changes are named — patches often change several."""
    text = next((tool_input[k] for k in _PATCH_KEYS if tool_input.get(k)), None) or shell_command(tool_input)
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
