"""What a summary must not lose about files and plans. Pure.

- the lists of files read and modified, accumulated across compactions (Pi's details), and
  taken from the transcript under another agent's imported compaction; every path an edit,
  write or patch changed (each file of a multi-file patch), with a note of what changed
  ("created", "deleted", "edited: " the symbol or the first changed line);
- file restoration: after a summary, the latest reads of the most recently read files that
  fell out of the kept tail come back into the view, within a token budget (Claude Code
  re-reads them from disk; we take them from history, so the view stays a pure function of
  events, and skip files modified after that read, whose recorded content is stale);
- the latest call of each critical tool (todo list, plan), kept even when old.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..projection.view import ViewItem
from .pairs import ToolPair, output_text, tool_pairs
from .policy import CompactionPolicy
from .tools import patch_text

_MODIFYING = ("write", "edit")
# A change note is short: it says what changed, the file is there to read.
_NOTE_CHARS: Final = 60
# A line that declares something (a function, a class, a module, a type, a constant).
_DEFINITION: Final = re.compile(
    r"^\s*(?:(?:export|pub(?:\([^)]*\))?|async|static|public|private|protected|abstract|final|override|default)\s+)*"
    r"(?:def|defp|defmodule|defmacro|defimpl|defprotocol|class|function|fn|func|interface|type|struct|enum|impl|"
    r"trait|module|const|let|var|val|object|record|namespace|macro_rules!)\b")
_PATCH_SECTION: Final = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")
# The (old, new) text keys of the edit tools: Claude Code's Edit/MultiEdit and Gemini CLI's replace, Pi's
# edit, OpenCode's edit, the str_replace editors (OpenHands', SWE-agent's).
_EDIT_KEYS: Final = (("old_string", "new_string"), ("oldText", "newText"), ("oldString", "newString"),
                     ("old_str", "new_str"))


@dataclass(frozen=True, slots=True)
class FileLists:
    """The paths a summary lists: read (and not modified since), modified (the most recently
    changed last), and for each modified path what changed (`change_note`)."""

    read: list[str]
    modified: list[str]
    changes: dict[str, str]


def file_lists(items: Sequence[ViewItem], policy: CompactionPolicy, previous: Mapping[str, Any] | None
               ) -> FileLists:
    """The previous compaction's lists plus what `items` did, in the order they were last
    touched (the most recent last: a summary too small to list them all keeps the first and
    the most recent).

    A file modified is listed as modified only, as Pi does: the model needs to know it changed it.
    """
    pairs = tool_pairs(items, policy.tools, origins=("tail", "critical", "restored"))
    earlier = previous or {}
    read = dict.fromkeys(earlier.get("read_files", ()))
    modified = dict.fromkeys(earlier.get("modified_files", ()))
    changes = {str(k): str(v) for k, v in (earlier.get("file_changes") or {}).items()}
    for pair in pairs:
        if pair.use.category == "read" and pair.use.path:
            read.pop(pair.use.path, None)
            read[pair.use.path] = None
        output = output_text(pair.result.payload) if pair.result is not None else None
        _changed(changes, modified, pair.name, pair.call.payload.get("input"), output, policy)
    return FileLists([path for path in read if path not in modified], list(modified),
                     {path: changes[path] for path in modified if path in changes})


def modified_changes(calls: Iterable[Mapping[str, Any]], policy: CompactionPolicy) -> dict[str, str]:
    """Each path the `tool_call` payloads changed (edits, writes, patches), once, the most
    recently changed last, with what changed (`change_note`; "" when the call does not say):
    the modified files of a history that another agent's imported compaction summarised (its
    own lists, when it kept any, name fewer)."""
    changes: dict[str, str] = {}
    order: dict[str, None] = {}
    for call in calls:
        _changed(changes, order, str(call.get("name", "")), call.get("input"), None, policy)
    return {path: changes.get(path, "") for path in order}


def modified_paths(calls: Iterable[Mapping[str, Any]], policy: CompactionPolicy) -> list[str]:
    """The paths of `modified_changes`."""
    return list(modified_changes(calls, policy))


def _changed(changes: dict[str, str], order: dict[str, None], name: str, tool_input: Any, output: str | None,
             policy: CompactionPolicy) -> None:
    """Record what one call changed: its paths moved to the end of `order`, their notes in
    `changes` (a file created and then edited stays "created": it is new)."""
    tool_input = tool_input if isinstance(tool_input, Mapping) else {}
    use = policy.tools.classify(name, tool_input)
    if use.category not in _MODIFYING:
        return
    for path, note in call_changes(name, policy.tools.arguments(name, tool_input), output, use.category, use.path):
        order.pop(path, None)
        order[path] = None
        if note and not changes.get(path, "").startswith("created"):
            changes[path] = note


def call_changes(name: str, tool_input: Mapping[str, Any], output: str | None, category: str, path: str | None
                 ) -> list[tuple[str, str]]:
    """(path, note) for each file one edit/write/patch call changed (`category` and `path` as
    the tool catalog classified it, `tool_input` its `arguments`): each file a patch names, or
    the call's own path."""
    found = _patch_changes(patch_text(tool_input) or "")
    if found:
        return found
    if not path:
        return []
    if category == "write":
        created = output is not None and "created" in output.lower()
        where = _where("", _first_str(tool_input, ("content", "contents", "text", "file_text")))
        return [(path, ("created" if created else "written") + (f": {where}" if where else ""))]
    if "new_source" in tool_input or "cell_id" in tool_input:  # a notebook cell
        mode = str(tool_input.get("edit_mode") or "replace")
        cell = tool_input.get("cell_id")
        return [(path, f"cell {mode}d" + (f": {cell}" if cell else "") if mode != "replace" else
                 "edited: " + (_where("", _first_str(tool_input, ("new_source",))) or f"cell {cell}"))]
    if tool_input.get("command") == "undo_edit":  # a str_replace editor's
        return [(path, "edited: undone")]
    pairs = [(str(edit.get(old) or ""), str(edit.get(new) or "")) for edit in _edits(tool_input)
             for old, new in _EDIT_KEYS if edit.get(old) or edit.get(new)]
    # OpenHands' edit_file: the draft of the new text
    pairs = pairs or [("", _first_str(tool_input, ("content",)))]
    where = next((w for old, new in pairs if (w := _where(old, new))), "")
    return [(path, "edited" + (f": {where}" if where else ""))]


def _edits(tool_input: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The single edit of an input, or the list it holds (MultiEdit's and Pi's `edits`)."""
    edits = tool_input.get("edits")
    listed = [e for e in edits if isinstance(e, Mapping)] if isinstance(edits, list) else []
    return [tool_input, *listed]


def _first_str(data: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    return next((value for key in keys if isinstance(value := data.get(key), str)), "")


def _patch_changes(patch: str) -> list[tuple[str, str]]:
    """(path, note) per file of an apply_patch text: added, deleted, or updated where its first
    hunk says (the `@@` context line Codex writes, else the first changed line)."""
    found: list[tuple[str, str]] = []
    action = path = ""
    lines: list[str] = []

    def close() -> None:
        if not path:
            return
        if action == "Add":
            where = _where("", "\n".join(line[1:] for line in lines if line.startswith("+")))
            found.append((path, "created" + (f": {where}" if where else "")))
        elif action == "Delete":
            found.append((path, "deleted"))
        else:
            context = next((line[2:].strip() for line in lines if line.startswith("@@ ") and line[2:].strip()), "")
            old = "\n".join(line[1:] for line in lines if line.startswith(("-", " ")))
            new = "\n".join(line[1:] for line in lines if line.startswith(("+", " ")))
            where = _one_line(context) if context else _where(old, new)
            found.append((path, "edited" + (f": {where}" if where else "")))

    for line in patch.splitlines():
        section = _PATCH_SECTION.match(line)
        if section:
            close()
            action, path, lines = section.group(1), section.group(2).strip(), []
        elif line.startswith("*** End Patch"):
            close()
            path = ""
        elif path:
            lines.append(line)
    close()
    return list({p: n for p, n in found}.items())


def _where(old: str, new: str) -> str:
    """Where a change is, in a line: the first declaration among the new text's lines (the
    symbol it changed, or the edit's context), else its first changed line (or removed line)."""
    old_lines = {line.strip() for line in old.splitlines()}
    new_lines = [line for line in new.splitlines() if line.strip()]
    changed = [line for line in new_lines if line.strip() not in old_lines]
    definition = next((line for line in new_lines if _DEFINITION.match(line)), None)
    if definition is None:
        definition = next((line for line in old.splitlines() if _DEFINITION.match(line)), None)
    if definition is not None:
        return _one_line(definition)
    if changed:
        return _one_line(changed[0])
    new_set = {line.strip() for line in new_lines}
    removed = next((line for line in old.splitlines() if line.strip() and line.strip() not in new_set), None)
    return f"removed {_one_line(removed)}" if removed else ""


def _one_line(text: str) -> str:
    """`text` as a note's tail: one line, without ", " (the path lists' separator), within `_NOTE_CHARS`."""
    text = re.sub(r"\s+", " ", text).strip().replace(", ", ",")
    return text if len(text) <= _NOTE_CHARS else text[: _NOTE_CHARS - 1].rstrip() + "…"


def restored_versions(summarised: Sequence[ViewItem], kept: Sequence[ViewItem], policy: CompactionPolicy
                      ) -> list[int]:
    """Call and result versions of the reads to restore after the summary, most recent first."""
    if policy.restore_files <= 0:
        return []
    gone = tool_pairs(summarised, policy.tools, origins=("tail", "restored"))
    kept_pairs = tool_pairs(kept, policy.tools)
    still_visible = {p.use.path for p in kept_pairs if p.use.category == "read"}
    modified_later = {p.use.path for p in kept_pairs if p.use.category in _MODIFYING}
    latest: dict[str, ToolPair] = {}
    for pair in gone:
        path = pair.use.path
        if not path:
            continue
        if pair.use.category in _MODIFYING:
            latest.pop(path, None)  # the file changed after any earlier read: that read is stale
            modified_later.discard(path)
        elif pair.use.category == "read" and pair.result is not None and not pair.result.cleared \
                and not pair.result.payload.get("is_error"):
            latest[path] = pair
    chosen: list[ToolPair] = []
    # Claude Code restores up to 50,000 tokens into a 200,000 window: a quarter, at most.
    budget = min(policy.restore_budget_tokens, policy.threshold // 4)
    for pair in sorted(latest.values(), key=lambda p: p.call.version, reverse=True):
        if len(chosen) >= policy.restore_files:
            break
        if pair.use.path in still_visible or pair.use.path in modified_later:
            continue
        # A restored read is the event as stored, whatever outline or truncation the view shows
        # of it now (markers recorded before the new cut no longer apply): it costs that much.
        cost = pair.call.event.tokens + (pair.result.event.tokens if pair.result else 0)
        if cost > policy.restore_max_file_tokens or cost > budget:
            continue
        chosen.append(pair)
        budget -= cost
    return sorted(v for pair in chosen for v in pair.versions)


def critical_versions(summarised: Sequence[ViewItem], kept: Sequence[ViewItem], policy: CompactionPolicy
                      ) -> list[int]:
    """The latest todo/plan call (and result) per tool, when it falls before the cut."""
    in_kept = {p.name for p in tool_pairs(kept, policy.tools) if p.use.category == "critical"}
    latest: dict[str, ToolPair] = {}
    for pair in tool_pairs(summarised, policy.tools, origins=("tail", "critical")):
        if pair.use.category == "critical" and pair.name not in in_kept:
            latest[pair.name] = pair
    return sorted(v for pair in latest.values() for v in pair.versions)
