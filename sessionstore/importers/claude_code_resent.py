"""What Claude Code sends again with a compaction's summary, as the versions of the events that
hold it: the files it re-attaches (its `readFileState`, followed through the transcript's tool
calls: `Files`) and what newer versions record as attachment lines (`resent`).

Apart from `claude_code` because it is a rule of its own (Claude Code's
`createPostCompactFileAttachments`), read by the token estimate of the call after a compaction
(`projection.calibration`, through ``meta["resent"]``), not a step of reading the lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from ..projection.usage import prompt_tokens
from .rules import EventBuilder, as_int

# The custom event type `claude_code` gives an ``attachment`` line.
ATTACHMENT: Final = "claude-code:attachment"

# What Claude Code re-attaches after compacting (`createPostCompactFileAttachments`): the files
# it read or changed last, each whole when it holds at most 5,000 tokens (else a one-line
# reference), within 50,000 tokens, by its rough count (characters / 4); and the plan file.
_RESTORED_FILES: Final = 5
_RESTORED_FILE_TOKENS: Final = 5_000
_RESTORED_BUDGET_TOKENS: Final = 50_000
_CHARS_PER_TOKEN: Final = 4
_FILE_TOOLS: Final = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"})
_MEMORY_FILES: Final = frozenset({"CLAUDE.md", "CLAUDE.local.md"})  # re-sent with every request, not restored
# Attachment lines (newer versions persist them) that carry restored content.
_RESTORED_ATTACHMENTS: Final = frozenset({"file", "plan_file_reference", "invoked_skills"})


def resent(builder: EventBuilder, compaction: int, restorable: list[int]) -> list[int | list[Any]]:
    """What Claude Code sent again with the summary of the compaction at version `compaction`,
    as the versions of the events holding that content:

    - the restored files and plan its attachment lines recorded before the next model call
      (newer versions persist them), each with the share of the line that was sent (`_sent_share`);
    - else the events `restorable` names (what its rule re-attaches, taken from the history),
      unless the session was resumed in between: older versions keep what they re-attach in
      memory only, and a restart, which answers the compaction's command with a synthetic
      "No response requested.", loses it.
    """
    recorded: list[int | list[Any]] = []
    for version, event in enumerate(builder.events[compaction - builder.base_version:], compaction + 1):
        if event.kind == "compaction" or prompt_tokens(event.meta.get("usage")):
            break
        line = event.payload["data"] if event.kind == "custom" else None
        if isinstance(line, dict) and event.payload["type"] == ATTACHMENT:
            attachment = line.get("attachment")
            if isinstance(attachment, dict) and attachment.get("type") in _RESTORED_ATTACHMENTS:
                recorded.append(_sent_share(version, line))
        elif event.kind == "message" and event.meta.get("model") == "<synthetic>" and not recorded:
            return []
    return recorded or restorable


def resent_known(builder: EventBuilder, compaction: int) -> bool:
    """Whether the lines that say what Claude Code sent with the compaction at `compaction` are all
    written (`resent` reads them up to the next model call, compaction or restart)."""
    for event in builder.events[compaction - builder.base_version:]:
        if event.kind == "compaction" or prompt_tokens(event.meta.get("usage")):
            return True
        if event.kind == "message" and event.meta.get("model") == "<synthetic>":
            return True
    return False

def _sent_share(version: int, line: dict[str, Any]) -> int | list[Any]:
    """A resent entry for an attachment line: its version, and the share of its characters that
    Claude Code sent (the line's ``rendered`` text; the rest is structured copies of it)."""
    rendered = line.get("rendered")  # a text, or a list of {"content": text}
    if not isinstance(rendered, (str, list)) or not rendered:
        return version
    return [version, round(min(1.0, len(json.dumps(rendered)) / len(json.dumps(line))), 4)]



class Files:
    """Claude Code's `readFileState` as the transcript shows it: each file its tools read or
    changed, when, and the event holding its latest known content (a whole read's result, a
    write's call; else a partial read's result, a lower bound), to name what it re-attaches
    after compacting (`restored`)."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[str, dict[str, Any], int]] = {}  # call id -> name, input, version
        self.touched: dict[str, int] = {}  # path -> order of its latest touch (the latest last)
        self.content: dict[str, tuple[int, int, bool]] = {}  # path -> (version, characters, whole)
        self.order = 0

    def called(self, call_id: str, name: str, input_: dict[str, Any], version: int) -> None:
        if name in _FILE_TOOLS:
            self.pending[call_id] = (name, input_, version)

    def answered(self, call_id: str, version: int, result: Any, output: Any) -> None:
        """A successful result of a file tool's call: the file is in Claude Code's state now."""
        found = self.pending.pop(call_id, None)
        if found is None:
            return
        name, input_, call_version = found
        path = input_.get("file_path") or input_.get("notebook_path")
        if not isinstance(path, str) or not path:
            return
        self.order += 1
        self.touched[path] = self.order
        known = self.content.get(path)
        if name == "Write" and isinstance(input_.get("content"), str):
            self.content[path] = (call_version, len(input_["content"]), True)
        elif name == "Read":
            whole = "offset" not in input_ and "limit" not in input_
            if whole or known is None or not known[2]:
                self.content[path] = (version, _read_size(result, output), whole)

    def restored(self) -> list[int]:
        """The versions of the content Claude Code re-attaches after a compaction now: the
        latest of the files it touched last (but plans and memory files), each when not over its
        per-file limit and within the budget; then the plan."""
        budget = _RESTORED_BUDGET_TOKENS
        versions: list[int] = []
        recent = sorted((p for p in self.touched if not _is_plan(p) and Path(p).name not in _MEMORY_FILES),
                        key=lambda p: -self.touched[p])[:_RESTORED_FILES]
        for path in recent:
            known = self.content.get(path)
            tokens = known[1] // _CHARS_PER_TOKEN if known is not None else 0
            if known is None or tokens > _RESTORED_FILE_TOKENS or tokens > budget:
                continue  # too large: a one-line reference to the file, not its content
            budget -= tokens
            versions.append(known[0])
        plans = [p for p in self.touched if _is_plan(p) and p in self.content]
        if plans:
            versions.append(self.content[max(plans, key=lambda p: self.touched[p])][0])
        return sorted(versions)


def _is_plan(path: str) -> bool:
    return "/.claude/plans/" in path.replace("\\", "/") and path.endswith(".md")


def _read_size(result: Any, output: Any) -> int:
    """Characters of the file a Read returned (its ``toolUseResult`` holds the text without line
    numbers), scaled to the whole file when the read was partial: Claude Code re-reads it all."""
    file = result.get("file") if isinstance(result, dict) else None
    if isinstance(file, dict) and isinstance(file.get("content"), str):
        size = len(file["content"])
        lines, total = as_int(file.get("numLines")), as_int(file.get("totalLines"))
        return size * total // lines if lines and total and total > lines else size
    return len(output) if isinstance(output, str) else len(json.dumps(output))
