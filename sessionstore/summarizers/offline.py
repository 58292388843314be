"""The offline extractive summariser: deterministic, no network, the default.

It cannot understand the conversation, so it keeps what matters most, extracted: the user's
messages, the files read and modified, the errors and what came right after them, the latest
todo list, and the last assistant work. An anchored update merges the previous summary
section by section, so a second compaction extends the first instead of replacing it.

Every summary fits its request's `max_tokens` (estimated at `chars_per_token`): prose
sections are capped, and the lists keep their first and most recent entries with a note of
how many were left out and at which versions (`bounded`), so that a session of 50,000 turns
gets a summary as bounded as one of 50, and says where the rest stays.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final

from . import bounded
from .base import SummaryRequest
from .prompts import truncate
from .sections import SECTIONS, format_sections, parse_sections

_LANGUAGES: Final = {
    ".py": "Python", ".ts": "TypeScript", ".tsx": "TypeScript (TSX)", ".js": "JavaScript", ".jsx": "JavaScript",
    ".mjs": "JavaScript", ".rs": "Rust", ".go": "Go", ".java": "Java", ".c": "C", ".h": "C", ".cpp": "C++",
    ".cc": "C++", ".hpp": "C++", ".rb": "Ruby", ".php": "PHP", ".cs": "C#", ".kt": "Kotlin", ".swift": "Swift",
    ".sql": "SQL", ".sh": "Shell", ".md": "Markdown", ".json": "JSON", ".yaml": "YAML", ".yml": "YAML",
    ".toml": "TOML", ".html": "HTML", ".css": "CSS",
}
_MIN_MESSAGE_CHARS: Final = 60
_OWN_TEXTS: Final = ("[The recorded conversation continues below.]",
                     "[No result was recorded for this tool call.]")
# When a summary is over budget: the share of it each prose section may keep at most …
_PROSE_SHARES: Final = {"Primary request and intent": 0.12, "Key technical concepts": 0.06, "Pending tasks": 0.08,
                        "Current work": 0.10, "Next step": 0.04, "": 0.04}
_MIN_PROSE_CHARS: Final = 80
# … and how the lists share what is left (a list that needs less gives the rest to the others).
_LIST_WEIGHTS: Final = {"All user messages": 0.45, "Errors and fixes": 0.2, "Problem solving": 0.15,
                        "Files and code": 0.2}
_TOOLS_USED: Final = "Tools used: "


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _truncate(text: str, limit: int) -> str:
    text = _one_line(text)
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"


def _first_sentence(text: str, limit: int = 300) -> str:
    text = _one_line(text)
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return _truncate(match.group(1) if match else text, limit)


def _distinct(items: Iterable[str]) -> list[str]:
    """Each item once (by its text, whatever version it names), at its last place: what was
    said last is what holds."""
    last = {bounded.untagged(item): item for item in items}
    return list(last.values())


@dataclass
class _Facts:
    """What the messages say, extracted once; list entries name their versions (`bounded.tagged`)."""

    user_messages: list[str] = field(default_factory=list)
    first_user: str = ""
    latest_user: str = ""
    assistant_texts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
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


def _version(versions: Sequence[Sequence[int]], message: int, block: int) -> int | None:
    if message < len(versions) and block < len(versions[message]):
        return versions[message][block] or None
    return None


def extract(messages: Sequence[Mapping[str, Any]], message_chars: int,
            versions: Sequence[Sequence[int]] = ()) -> _Facts:
    facts = _Facts()
    names: dict[str, str] = {}
    pending_errors: list[int] = []
    for m, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
        for b, block in enumerate(blocks):
            btype = block.get("type")
            version = _version(versions, m, b)
            if btype == "text" and role == "user":
                text = block.get("text", "")
                if text.strip() and text not in _OWN_TEXTS:
                    short = _truncate(text, message_chars)
                    facts.user_messages.append(bounded.tagged(version, short))
                    facts.first_user = facts.first_user or short
                    facts.latest_user = short
                    facts.last_role = "user"
            elif btype == "text" and role == "assistant" and block.get("text", "").strip():
                text = block["text"]
                facts.assistant_texts.append(text)
                facts.notes.append(bounded.tagged(version, _first_sentence(text)))
                facts.last_role = "assistant"
                for index in pending_errors:
                    facts.errors[index] += f" → then: {_first_sentence(text, 240)}"
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
                    facts.errors.append(bounded.tagged(version, f"`{name}` failed: {_truncate(text, 300)}"))
                    pending_errors.append(len(facts.errors) - 1)
    return facts


def _tool_counts(lines: Iterable[str]) -> Counter[str]:
    """The counts of "Tools used: Read ×3, Bash ×2" lines, added up."""
    counts: Counter[str] = Counter()
    for line in lines:
        for part in line.removeprefix(_TOOLS_USED).split(", "):
            name, sep, number = part.rpartition(" ×")
            if sep and number.isdigit():
                counts[name] += int(number)
    return counts


def _tools_line(counts: Counter[str]) -> str:
    return _TOOLS_USED + ", ".join(f"{n} ×{c}" for n, c in counts.most_common())


class OfflineSummarizer:
    """Extractive and deterministic: the same events always give the same summary.

    `chars_per_token` is how it estimates its size against `max_tokens`: 3 characters a token
    is what cl100k_base measures on its summaries (paths, versions, identifiers), so that a
    summary fits its budget by the store's counter too, not only by its own estimate.
    """

    name = "offline"

    def __init__(self, *, message_chars: int = 1000, chars_per_token: float = 3.0) -> None:
        self.message_chars = message_chars
        self.chars_per_token = chars_per_token

    def summarize(self, request: SummaryRequest) -> str:
        if request.purpose == "merge":
            merged: dict[str, str] = parse_sections(request.previous_summary or "")
            for partial in request.partials:
                merged = self._merge(merged, parse_sections(partial)) if merged else parse_sections(partial)
            return self._fit(merged, request.max_tokens)
        facts = extract(request.messages, self.message_chars, request.versions)
        if request.purpose == "turn_prefix":
            return self._clip(self._turn_prefix(facts), request.max_tokens)
        sections = self._sections(facts, request)
        if request.previous_summary:
            sections = self._merge(parse_sections(request.previous_summary), sections)
        if request.instructions:
            sections[""] = f"Compaction focus requested: {_one_line(request.instructions)}"
        return self._fit(sections, request.max_tokens)

    async def asummarize(self, request: SummaryRequest) -> str:
        """`summarize`: pure CPU work, no I/O to await."""
        return self.summarize(request)

    # ------------------------------------------------------------------ sections

    def _sections(self, facts: _Facts, request: SummaryRequest) -> dict[str, str]:
        primary = facts.first_user
        if len(facts.user_messages) > 1:
            primary += f"\nLatest request: {facts.latest_user}"
        return {
            "Primary request and intent": primary,
            "Key technical concepts": bounded.as_bullets(self._concepts(facts, request)),
            "Files and code": self._files(request),
            "Errors and fixes": bounded.as_bullets(facts.errors),
            "Problem solving": bounded.as_bullets(_distinct(facts.notes)),
            "All user messages": bounded.as_bullets(facts.user_messages),
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
            concepts.append(_tools_line(facts.tool_counts))
        return concepts

    @staticmethod
    def _files(request: SummaryRequest) -> str:
        lines = []
        if request.modified_files:
            lines.append("Modified: " + ", ".join(request.modified_files))
        if request.read_files:
            lines.append("Read: " + ", ".join(request.read_files))
        return bounded.as_bullets(lines)

    @staticmethod
    def _pending(facts: _Facts) -> str:
        if facts.todos is None:
            return ""
        open_items = [f"[{status}] {text}" for status, text in facts.todos if status.lower() not in
                      ("completed", "done", "complete")]
        return bounded.as_bullets(open_items) if open_items else "All recorded tasks are completed."

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
        if facts.last_role == "user" and facts.latest_user:
            return f"Respond to the user's latest message: {_truncate(facts.latest_user, 300)}"
        if facts.todos:
            pending = [t for s, t in facts.todos if s.lower() not in ("completed", "done", "complete")]
            if pending:
                return f"Continue with the next open task: {pending[0]}"
        return "Continue from the current work above."

    def _turn_prefix(self, facts: _Facts) -> str:
        parts = []
        if facts.first_user:
            parts.append(f"The turn began with the user asking: {facts.first_user}")
        if facts.assistant_texts:
            parts.append("The assistant then: " + " ".join(_first_sentence(t, 200) for t in facts.assistant_texts[-5:]))
        if facts.tool_counts:
            parts.append("Tools used so far in this turn: " + ", ".join(
                f"{n} ×{c}" for n, c in facts.tool_counts.most_common()))
        if facts.errors:
            parts.append("Errors in this turn: " + "; ".join(bounded.untagged(e) for e in facts.errors[-5:]))
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
        concepts = [*bounded.bullets(previous.get("Key technical concepts", "")),
                    *bounded.bullets(new.get("Key technical concepts", ""))]
        tools = _tool_counts(c for c in concepts if c.startswith(_TOOLS_USED))
        merged["Key technical concepts"] = bounded.as_bullets(dict.fromkeys(
            [*(c for c in concepts if not c.startswith(_TOOLS_USED)), *([_tools_line(tools)] if tools else [])]))
        merged["Errors and fixes"] = bounded.as_bullets(bounded.bullets(previous.get("Errors and fixes", ""))
                                                 + bounded.bullets(new.get("Errors and fixes", "")))
        merged["Problem solving"] = bounded.as_bullets(_distinct(bounded.bullets(previous.get("Problem solving", ""))
                                                          + bounded.bullets(new.get("Problem solving", ""))))
        merged["All user messages"] = bounded.as_bullets(bounded.bullets(previous.get("All user messages", ""))
                                                  + bounded.bullets(new.get("All user messages", "")))
        for title in ("Files and code", "Current work", "Next step"):
            merged[title] = new.get(title) or previous.get(title, "")
        merged["Pending tasks"] = new.get("Pending tasks") or previous.get("Pending tasks", "")
        if new.get(""):
            merged[""] = new[""]
        return merged

    # ------------------------------------------------------------------ the budget

    def _chars(self, max_tokens: int) -> int:
        return max(1, int(max_tokens * self.chars_per_token))

    def _clip(self, text: str, max_tokens: int) -> str:
        """`text` within the budget, head and tail kept (a guard once the sections are fitted)."""
        limit = self._chars(max_tokens)
        return text if len(text) <= limit else truncate(text, max(1, limit - 60))

    @staticmethod
    def _one_note(title: str, body: str) -> str:
        """A list that merged several notes (partial summaries, earlier compactions) as its first
        entries, one note, and its most recent entries, in the same room."""
        if title not in _LIST_WEIGHTS or body.count("\n- [… ") + body.startswith("- [… ") < 2:
            return body
        entries = bounded.bullets(body)
        return bounded.as_bullets(bounded.fit_list(entries, bounded.size(entries), bounded.noun_for(title)))

    def _fit(self, sections: dict[str, str], max_tokens: int) -> str:
        """The summary within `max_tokens` (estimated): prose sections capped, then the lists
        share what is left, each keeping its first and most recent entries."""
        limit = self._chars(max_tokens)
        sections = {title: self._one_note(title, body) for title, body in sections.items()}
        text = format_sections(sections)
        if len(text) <= limit:
            return text
        for title, share in _PROSE_SHARES.items():
            cap = max(_MIN_PROSE_CHARS, int(limit * share))
            if len(sections.get(title) or "") > cap:
                sections[title] = truncate(sections[title], cap)
        lists = {title: bounded.bullets(sections.get(title) or "") for title in _LIST_WEIGHTS}
        fixed = len(format_sections({**sections, **{title: "" for title in lists}}))
        rooms = bounded.allot({t: bounded.size(e) for t, e in lists.items()}, _LIST_WEIGHTS, limit - fixed)
        for title, entries in lists.items():
            if bounded.size(entries) <= rooms[title]:
                continue
            if title == "Files and code":
                share = rooms[title] // max(1, len(entries))
                sections[title] = bounded.as_bullets(bounded.fit_items(e, share, "paths") for e in entries)
            else:
                sections[title] = bounded.as_bullets(bounded.fit_list(entries, rooms[title], bounded.noun_for(title),
                                                               min_width=_MIN_MESSAGE_CHARS))
        return self._clip(format_sections(sections), max_tokens)


__all__ = ["SECTIONS", "OfflineSummarizer", "extract"]
