"""The offline extractive summariser: deterministic, no network, the default.

It cannot understand the conversation, so it keeps what must never be lost, verbatim or
truncated but never dropped: every user message, the files read and modified, the errors
and what came right after them, the latest todo list, and the last assistant work. An
anchored update merges the previous summary section by section, so a second compaction
extends the first instead of replacing it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final

from .base import SummaryRequest
from .sections import SECTIONS, format_sections, parse_sections

_LANGUAGES: Final = {
    ".py": "Python", ".ts": "TypeScript", ".tsx": "TypeScript (TSX)", ".js": "JavaScript", ".jsx": "JavaScript",
    ".mjs": "JavaScript", ".rs": "Rust", ".go": "Go", ".java": "Java", ".c": "C", ".h": "C", ".cpp": "C++",
    ".cc": "C++", ".hpp": "C++", ".rb": "Ruby", ".php": "PHP", ".cs": "C#", ".kt": "Kotlin", ".swift": "Swift",
    ".sql": "SQL", ".sh": "Shell", ".md": "Markdown", ".json": "JSON", ".yaml": "YAML", ".yml": "YAML",
    ".toml": "TOML", ".html": "HTML", ".css": "CSS",
}
_LIST_LIMIT: Final = 20
_MIN_MESSAGE_CHARS: Final = 60
_OWN_TEXTS: Final = ("[The recorded conversation continues below.]",
                     "[No result was recorded for this tool call.]")


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _truncate(text: str, limit: int) -> str:
    text = _one_line(text)
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"


def _first_sentence(text: str, limit: int = 300) -> str:
    text = _one_line(text)
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return _truncate(match.group(1) if match else text, limit)


def _bullets(section: str) -> list[str]:
    """The items of a bulleted section (a continuation line stays with its bullet)."""
    items: list[str] = []
    for line in section.splitlines():
        if line.startswith("- "):
            items.append(line[2:])
        elif line.startswith("  ") and items:
            items[-1] += "\n" + line
        elif line.strip() and line.strip() != "(none)":
            items.append(line.strip())
    return items


def _distinct(items: Iterable[str]) -> list[str]:
    """Each item once, at its last place (what was said last is what holds)."""
    return list(reversed(dict.fromkeys(reversed(list(items)))))


def _as_bullets(items: Iterable[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


@dataclass
class _Facts:
    """What the messages say, extracted once."""

    user_messages: list[str] = field(default_factory=list)
    assistant_texts: list[str] = field(default_factory=list)
    tool_counts: Counter[str] = field(default_factory=Counter)
    last_calls: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    todos: list[tuple[str, str]] | None = None
    last_role: str | None = None


def _text_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"]


def _call_label(name: str, tool_input: Mapping[str, Any]) -> str:
    for key in ("file_path", "path", "filePath", "pattern", "command", "cmd", "query", "url"):
        value = tool_input.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value:
            return f"{name}({_truncate(value, 120)})"
    return name


def _todos(tool_input: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """Claude Code `todos`, Codex `plan`, or a plain list: (status, text) pairs."""
    entries = tool_input.get("todos", tool_input.get("plan", tool_input.get("items")))
    if not isinstance(entries, list):
        return None
    todos = []
    for entry in entries:
        if isinstance(entry, Mapping):
            text = entry.get("content") or entry.get("step") or entry.get("text") or entry.get("title") or ""
            todos.append((str(entry.get("status", "pending")), _truncate(str(text), 200)))
        elif isinstance(entry, str):
            todos.append(("pending", _truncate(entry, 200)))
    return todos


def extract(messages: Sequence[Mapping[str, Any]], message_chars: int) -> _Facts:
    facts = _Facts()
    names: dict[str, str] = {}
    pending_errors: list[int] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
        for block in blocks:
            btype = block.get("type")
            if btype == "text" and role == "user":
                text = block.get("text", "")
                if text.strip() and text not in _OWN_TEXTS:
                    facts.user_messages.append(_truncate(text, message_chars))
                    facts.last_role = "user"
            elif btype == "text" and role == "assistant" and block.get("text", "").strip():
                text = block["text"]
                facts.assistant_texts.append(text)
                facts.last_role = "assistant"
                for index in pending_errors:
                    facts.errors[index] += f"\n  → then: {_first_sentence(text, 240)}"
                pending_errors.clear()
            elif btype == "tool_use":
                name = str(block.get("name", "tool"))
                tool_input = block.get("input") if isinstance(block.get("input"), Mapping) else {}
                names[str(block.get("id"))] = name
                facts.tool_counts[name] += 1
                facts.last_calls = (facts.last_calls + [_call_label(name, tool_input)])[-5:]
                lowered = name.lower()
                if "todo" in lowered or "plan" in lowered:
                    facts.todos = _todos(tool_input) or facts.todos
                facts.last_role = "assistant"
            elif btype == "tool_result" and block.get("is_error"):
                text = " ".join(_text_blocks(block.get("content")))
                if text and text not in _OWN_TEXTS:
                    name = names.get(str(block.get("tool_use_id")), "a tool")
                    facts.errors.append(f"`{name}` failed: {_truncate(text, 300)}")
                    pending_errors.append(len(facts.errors) - 1)
    return facts


class OfflineSummarizer:
    """Extractive and deterministic: the same events always give the same summary."""

    name = "offline"

    def __init__(self, *, message_chars: int = 1000, chars_per_token: float = 4.0) -> None:
        self.message_chars = message_chars
        self.chars_per_token = chars_per_token

    def summarize(self, request: SummaryRequest) -> str:
        if request.purpose == "merge":
            merged: dict[str, str] = {}
            for partial in request.partials:
                merged = self._merge(merged, parse_sections(partial)) if merged else parse_sections(partial)
            return self._fit(merged, request.max_tokens)
        facts = extract(request.messages, self.message_chars)
        if request.purpose == "turn_prefix":
            return self._turn_prefix(facts)
        sections = self._sections(facts, request)
        if request.previous_summary:
            sections = self._merge(parse_sections(request.previous_summary), sections)
        if request.instructions:
            sections[""] = f"Compaction focus requested: {_one_line(request.instructions)}"
        return self._fit(sections, request.max_tokens)

    # ------------------------------------------------------------------ sections

    def _sections(self, facts: _Facts, request: SummaryRequest) -> dict[str, str]:
        first = facts.user_messages[0] if facts.user_messages else ""
        primary = first
        if len(facts.user_messages) > 1:
            primary += f"\nLatest request: {facts.user_messages[-1]}"
        return {
            "Primary request and intent": primary,
            "Key technical concepts": _as_bullets(self._concepts(facts, request)),
            "Files and code": self._files(request),
            "Errors and fixes": _as_bullets(facts.errors[-_LIST_LIMIT:]),
            "Problem solving": _as_bullets(_distinct(_first_sentence(t) for t in facts.assistant_texts)[-_LIST_LIMIT:]),
            "All user messages": _as_bullets(facts.user_messages),
            "Pending tasks": self._pending(facts),
            "Current work": self._current(facts),
            "Next step": self._next(facts),
        }

    @staticmethod
    def _concepts(facts: _Facts, request: SummaryRequest) -> list[str]:
        languages = sorted({_LANGUAGES[s] for s in (PurePosixPath(p).suffix.lower()
                                                    for p in (*request.read_files, *request.modified_files))
                            if s in _LANGUAGES})
        concepts = []
        if languages:
            concepts.append("Languages: " + ", ".join(languages))
        if facts.tool_counts:
            concepts.append("Tools used: " + ", ".join(f"{n} ×{c}" for n, c in facts.tool_counts.most_common()))
        return concepts

    @staticmethod
    def _files(request: SummaryRequest) -> str:
        lines = []
        if request.modified_files:
            lines.append("Modified: " + ", ".join(request.modified_files))
        if request.read_files:
            lines.append("Read: " + ", ".join(request.read_files))
        return _as_bullets(lines)

    @staticmethod
    def _pending(facts: _Facts) -> str:
        if facts.todos is None:
            return ""
        open_items = [f"[{status}] {text}" for status, text in facts.todos if status.lower() not in
                      ("completed", "done", "complete")]
        return _as_bullets(open_items) if open_items else "All recorded tasks are completed."

    @staticmethod
    def _current(facts: _Facts) -> str:
        parts = []
        if facts.assistant_texts:
            parts.append(_truncate(facts.assistant_texts[-1], 800))
        if facts.last_calls:
            parts.append("Last tool calls: " + ", ".join(facts.last_calls))
        return "\n".join(parts)

    @staticmethod
    def _next(facts: _Facts) -> str:
        if facts.last_role == "user" and facts.user_messages:
            return f"Respond to the user's latest message: {_truncate(facts.user_messages[-1], 300)}"
        if facts.todos:
            pending = [t for s, t in facts.todos if s.lower() not in ("completed", "done", "complete")]
            if pending:
                return f"Continue with the next open task: {pending[0]}"
        return "Continue from the current work above."

    def _turn_prefix(self, facts: _Facts) -> str:
        parts = []
        if facts.user_messages:
            parts.append(f"The turn began with the user asking: {facts.user_messages[0]}")
        if facts.assistant_texts:
            parts.append("The assistant then: " + " ".join(_first_sentence(t, 200) for t in facts.assistant_texts[-5:]))
        if facts.tool_counts:
            parts.append("Tools used so far in this turn: " + ", ".join(
                f"{n} ×{c}" for n, c in facts.tool_counts.most_common()))
        if facts.errors:
            parts.append("Errors in this turn: " + "; ".join(e.splitlines()[0] for e in facts.errors[-5:]))
        return "\n".join(parts)

    # ------------------------------------------------------------------ anchored update

    @staticmethod
    def _merge(previous: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
        """Fold `new` into `previous`: lists accumulate, the current state replaces."""
        merged = dict(previous)
        old_primary = (previous.get("Primary request and intent") or "").split("\nLatest request:")[0].strip()
        new_primary = new.get("Primary request and intent") or ""
        if old_primary:
            latest = new_primary.split("\nLatest request:")[-1].strip() if new_primary else ""
            merged["Primary request and intent"] = old_primary + (f"\nLatest request: {latest}" if latest else "")
        else:
            merged["Primary request and intent"] = new_primary
        merged["Key technical concepts"] = _as_bullets(dict.fromkeys(
            _bullets(previous.get("Key technical concepts", "")) + _bullets(new.get("Key technical concepts", ""))))
        for title in ("Errors and fixes", "Problem solving"):
            items = _distinct(_bullets(previous.get(title, "")) + _bullets(new.get(title, "")))
            merged[title] = _as_bullets(items[-_LIST_LIMIT:])
        merged["All user messages"] = _as_bullets(_bullets(previous.get("All user messages", ""))
                                                  + _bullets(new.get("All user messages", "")))
        for title in ("Files and code", "Current work", "Next step"):
            merged[title] = new.get(title) or previous.get(title, "")
        merged["Pending tasks"] = new.get("Pending tasks") or previous.get("Pending tasks", "")
        if new.get(""):
            merged[""] = new[""]
        return merged

    # ------------------------------------------------------------------ size cap

    def _fit(self, sections: dict[str, str], max_tokens: int) -> str:
        """Shrink to `max_tokens` (estimated): trim lists, then shorten user messages; never drop one."""
        limit_chars = int(max_tokens * self.chars_per_token)
        text = format_sections(sections)
        if len(text) <= limit_chars:
            return text
        for title in ("Problem solving", "Errors and fixes", "Key technical concepts"):
            items = _bullets(sections.get(title, ""))
            while items and len(format_sections(sections)) > limit_chars:
                items = items[1:]
                sections[title] = _as_bullets(items)
        messages = _bullets(sections.get("All user messages", ""))
        width = max((len(m) for m in messages), default=0)
        while messages and len(format_sections(sections)) > limit_chars and width > _MIN_MESSAGE_CHARS:
            width = max(_MIN_MESSAGE_CHARS, int(width * 0.8))
            sections["All user messages"] = _as_bullets(_truncate(m, width) for m in messages)
        files = sections.get("Files and code", "")
        if len(format_sections(sections)) > limit_chars and len(files) > 400:
            sections["Files and code"] = files[:400].rsplit(",", 1)[0] + ", …"
        return format_sections(sections)


__all__ = ["SECTIONS", "OfflineSummarizer", "extract"]
