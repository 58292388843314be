"""What a summary must not lose about files and plans. Pure.

- the lists of files read and modified, accumulated across compactions (Pi's details), and
  taken from the transcript under another agent's imported compaction;
- file restoration: after a summary, the latest reads of the most recently read files that
  fell out of the kept tail come back into the view, within a token budget (Claude Code
  re-reads them from disk; we take them from history, so the view stays a pure function of
  events, and skip files modified after that read, whose recorded content is stale);
- the latest call of each critical tool (todo list, plan), kept even when old.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..projection.view import ViewItem
from .pairs import ToolPair, tool_pairs
from .policy import CompactionPolicy
from .tools import patched_paths

_MODIFYING = ("write", "edit")


def file_lists(items: Sequence[ViewItem], policy: CompactionPolicy, previous: Mapping[str, Any] | None
               ) -> tuple[list[str], list[str]]:
    """(read, modified) paths: the previous compaction's lists plus what `items` did, in the
    order they were last touched (the most recent last: a summary too small to list them all
    keeps the first and the most recent).

    A file modified is listed as modified only, as Pi does: the model needs to know it changed it.
    """
    pairs = tool_pairs(items, policy.tools, origins=("tail", "critical", "restored"))
    read = dict.fromkeys((previous or {}).get("read_files", ()))
    modified = dict.fromkeys((previous or {}).get("modified_files", ()))
    for pair in pairs:
        path, category = pair.use.path, pair.use.category
        touched = read if category == "read" else modified if category in _MODIFYING else None
        if path and touched is not None:
            touched.pop(path, None)
            touched[path] = None
    return [path for path in read if path not in modified], list(modified)


def modified_paths(calls: Iterable[Mapping[str, Any]], policy: CompactionPolicy) -> list[str]:
    """Paths the `tool_call` payloads changed (edits, writes, patches), each once, the most
    recently changed last: the modified files of a history that another agent's imported
    compaction summarised (its own lists, when it kept any, name fewer)."""
    paths: dict[str, None] = {}
    for call in calls:
        tool_input = call.get("input")
        tool_input = tool_input if isinstance(tool_input, Mapping) else {}
        use = policy.tools.classify(str(call.get("name", "")), tool_input)
        if use.category not in _MODIFYING:
            continue
        for path in [use.path, *patched_paths(tool_input)]:  # a patch may change several files
            if path:
                paths.pop(path, None)
                paths[path] = None
    return list(paths)


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
        cost = pair.call.tokens + (pair.result.tokens if pair.result else 0)
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
