"""The offline extractive summariser: deterministic, no network, the default.

It cannot understand the conversation, so it keeps what matters most, extracted: the user's
typed messages verbatim (never an agent's wrapper or reminder), the primary request from the
first of them, the files read and modified, each error with what the assistant made of it and
the call that fixed it, the sentences that state a finding or a decision (not "Good." nor
"Let me read the file."), the latest todo list or plan, and the current work: the last reply
and the calls still open. An anchored update merges the previous summary — ours, or another
agent's read into our sections (`parse`) — section by section, so a second compaction
extends the first instead of replacing it.

Every summary fits its request's `max_tokens` (counted as the store counts): sections are
reduced by priority (`fit`), the lists keeping their first and most recent entries with a
note of how many were left out and at which versions (`bounded`), so that a session of 50,000
turns gets a summary as bounded as one of 50, and says where the rest stays.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final

from ..tokens import TokenCounter, default_counter
from . import bounded
from .base import SummaryRequest
from .fit import fitted_text, shrink_section
from .parse import parse_sections
from .paths import is_path_line, path_lines
from .sections import SECTIONS, format_sections
from .typed import USER_MESSAGE_CHARS, typed_text, user_entry

_LANGUAGES: Final = {
    ".py": "Python", ".ts": "TypeScript", ".tsx": "TypeScript (TSX)", ".js": "JavaScript", ".jsx": "JavaScript",
    ".mjs": "JavaScript", ".rs": "Rust", ".go": "Go", ".java": "Java", ".c": "C", ".h": "C", ".cpp": "C++",
    ".cc": "C++", ".hpp": "C++", ".rb": "Ruby", ".php": "PHP", ".cs": "C#", ".kt": "Kotlin", ".swift": "Swift",
    ".sql": "SQL", ".sh": "Shell", ".md": "Markdown", ".json": "JSON", ".yaml": "YAML", ".yml": "YAML",
    ".toml": "TOML", ".html": "HTML", ".css": "CSS",
}
_TOOLS_USED: Final = "Tools used: "
_DONE: Final = ("completed", "done", "complete")
# Sentences that carry no fact: acknowledgements and announcements of the next tool call.
_FILLER: Final = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|all right|great|good|perfect|excellent|nice|done|got it|sure|right|now|so|first|next|"
    r"then|finally)\b[,.!:]?\s*)*(?:let me|let's|i'll|i will|i'm going to|i am going to|i need to|now i|going to|"
    r"time to|now (?!that\b)\w+)\b", re.IGNORECASE)
_MIN_WORDS: Final = 6
# A summary measured by a counter is fitted by characters in up to this many rounds, each at the
# density the last one counted, and kept once within this share of its budget.
_MEASURED_ROUNDS: Final = 4
_CLOSE_ENOUGH: Final = 0.97
# Sentences in which the assistant states a decision or what it found.
_DECISION: Final = re.compile(
    r"\b(?:decided|decision|instead of|rather than|chose|choose|going with|we'll use|i'll use|will use|opted|"
    r"the (?:root )?cause|because|the (?:fix|problem|issue|bug) (?:is|was)|turns out|so that)\b", re.IGNORECASE)
_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])")


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _truncate(text: str, limit: int) -> str:
    text = _one_line(text)
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"


# A line that names what went wrong (in a build log, a test run, a traceback).
_ERROR_LINE: Final = re.compile(r"\b(error|exception|failed|failure|fatal|traceback|assert\w*|denied|not found|"
                                r"no such|cannot|can't|undefined|invalid|panic\w*)\b", re.IGNORECASE)
_ERROR_CHARS: Final = 240


def _error_gist(content: Any) -> str:
    """A failed result in a line: its first line (after a bare "Exit code 2"), then the lines that
    say what went wrong, rather than the first 300 characters of a build log."""
    lines = [line.strip() for text in _text_blocks(content) for line in text.splitlines() if line.strip()]
    status = lines.pop(0) if len(lines) > 1 and re.fullmatch(r"(?i)exit (code|status):? ?-?\d+", lines[0]) else ""
    picked = lines[:1] + [line for line in lines[1:] if _ERROR_LINE.search(line)]
    return _truncate(" | ".join(filter(None, [status, *dict.fromkeys(picked)])), _ERROR_CHARS)


def _sentences(text: str) -> list[str]:
    """The prose sentences of an assistant text (code blocks and tables left out)."""
    prose = re.sub(r"```.*?(```|$)", " ", text, flags=re.DOTALL)
    prose = "\n".join(line for line in prose.splitlines() if not line.lstrip().startswith("|"))
    return [s.strip() for s in _SENTENCE.split(_one_line(re.sub(r"^\s*(?:[-*+]|\d+[.)]|#+)\s+", "", prose,
                                                                  flags=re.MULTILINE))) if s.strip()]


def _informative(sentence: str) -> bool:
    """A sentence that says something: not an acknowledgement ("Good.", "Clean compile.") nor an
    announcement of the next call ("Let me read the file.")."""
    return len(sentence.split()) >= _MIN_WORDS and not _FILLER.match(sentence)


def _finding(text: str, limit: int = 280) -> str | None:
    """The first informative sentences of an assistant text, within `limit`."""
    kept: list[str] = []
    for sentence in _sentences(text):
        if not _informative(sentence):
            continue
        if kept and len(" ".join(kept)) + len(sentence) > limit:
            break
        kept.append(sentence)
    return _truncate(" ".join(kept), limit) if kept else None


def _distinct(items: Iterable[str]) -> list[str]:
    """Each item once (by its text, whatever version it names), at its last place: what was
    said last is what holds."""
    last = {bounded.untagged(item): item for item in items}
    return list(last.values())


@dataclass
class _Facts:
    """What the messages say, extracted once; list entries name their versions (`bounded.tagged`)."""

    user_messages: list[str] = field(default_factory=list)
    typed: list[str] = field(default_factory=list)  # the user's typed messages, one line each
    assistant_texts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tool_counts: Counter[str] = field(default_factory=Counter)
    last_calls: list[str] = field(default_factory=list)
    open_calls: dict[str, str] = field(default_factory=dict)  # call id -> label, for calls with no result yet
    errors: list[str] = field(default_factory=list)
    todos: list[tuple[str, str]] | None = None
    last_role: str | None = None

    @property
    def first_user(self) -> str:
        return self.typed[0] if self.typed else ""

    @property
    def latest_user(self) -> str:
        return self.typed[-1] if self.typed else ""


def _text_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"]


def _call_label(name: str, tool_input: Mapping[str, Any], width: int = 120) -> str:
    for key in ("file_path", "path", "filePath", "pattern", "command", "cmd", "query", "url", "subject"):
        value = tool_input.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value:
            return f"{name}({_truncate(value, width)})"
    return name


def _plan_lines(plan: str) -> list[tuple[str, str]]:
    """A markdown plan's items ("- [ ] step", "1. step") as (status, text)."""
    todos = []
    for line in plan.splitlines():  # checkboxes anywhere, numbered steps at the margin
        match = re.match(r"^\s*[-*+]\s+\[(?P<mark>[ xX])\]\s*(?P<text>.+)$", line) or re.match(
            r"^(?:#+\s*)?(?:Step\s+)?\d+[.):]\s+(?P<mark>)(?P<text>.+)$", line)
        if match:
            todos.append(("completed" if (match["mark"] or " ").lower() == "x" else "pending",
                          _truncate(match["text"], 200)))
    return todos


def _todos(name: str, tool_input: Mapping[str, Any], current: list[tuple[str, str]] | None
           ) -> list[tuple[str, str]] | None:
    """The task list after a todo/plan call: Claude Code's `TodoWrite` todos and its
    `TaskCreate`/`TaskUpdate`, Codex's `update_plan`, a plan in markdown, or a plain list."""
    if name == "TaskCreate":
        subject = tool_input.get("subject") or tool_input.get("description") or ""
        return [*(current or []), ("pending", _truncate(str(subject), 200))] if subject else current
    if name == "TaskUpdate":
        try:
            index = int(str(tool_input.get("taskId", ""))) - 1
        except ValueError:
            return current
        status = tool_input.get("status")
        if current and 0 <= index < len(current) and isinstance(status, str):
            current = list(current)
            current[index] = ("deleted" if status == "deleted" else status, current[index][1])
        return current
    entries = tool_input.get("todos", tool_input.get("plan", tool_input.get("items")))
    if isinstance(entries, str):
        return _plan_lines(entries) or current
    if not isinstance(entries, list):
        return current
    todos = []
    for entry in entries:
        if isinstance(entry, Mapping):
            text = entry.get("content") or entry.get("step") or entry.get("text") or entry.get("title") or ""
            todos.append((str(entry.get("status", "pending")), _truncate(str(text), 200)))
        elif isinstance(entry, str):
            todos.append(("pending", _truncate(entry, 200)))
    return todos or current


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
                typed = typed_text(block.get("text", ""))
                if typed:
                    facts.user_messages.append(user_entry(typed, version, message_chars))
                    facts.typed.append(_truncate(typed, 1000))
                    facts.last_role = "user"
            elif btype == "text" and role == "assistant" and block.get("text", "").strip():
                text = block["text"]
                facts.assistant_texts.append(text)
                finding = _finding(text)
                if finding:
                    facts.notes.append(bounded.tagged(version, finding))
                facts.notes += [bounded.tagged(version, f"Decision: {_truncate(s, 280)}") for s in _sentences(text)
                                if _DECISION.search(s) and len(s.split()) >= _MIN_WORDS and s not in (finding or "")]
                facts.last_role = "assistant"
                if finding:  # what the assistant made of the error; the fix is the call that follows
                    for index in pending_errors:
                        if " → then: " not in facts.errors[index]:
                            facts.errors[index] += f" → then: {finding}"
            elif btype == "tool_use":
                name = str(block.get("name", "tool"))
                tool_input = block.get("input") if isinstance(block.get("input"), Mapping) else {}
                names[str(block.get("id"))] = name
                label = _call_label(name, tool_input, 80)
                facts.tool_counts[name] += 1
                facts.last_calls = (facts.last_calls + [label])[-3:]
                facts.open_calls[str(block.get("id"))] = label
                lowered = name.lower()
                if "todo" in lowered or "plan" in lowered or name in ("TaskCreate", "TaskUpdate"):
                    facts.todos = _todos(name, tool_input, facts.todos)
                facts.last_role = "assistant"
                for index in pending_errors:  # the call that came right after an error: how it was handled
                    facts.errors[index] += f" → fix: {label}"
                pending_errors.clear()
            elif btype == "tool_result":
                facts.open_calls.pop(str(block.get("tool_use_id")), None)
                text = " ".join(_text_blocks(block.get("content")))
                if block.get("is_error") and text and typed_text(text) is not None:
                    name = names.get(str(block.get("tool_use_id")), "a tool")
                    facts.errors.append(bounded.tagged(version, f"`{name}` failed: {_error_gist(block.get('content'))}"))
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

    `counter` is how it measures its size against `max_tokens`: the store's default counter
    (cl100k_base) unless told, so that a summary uses the room it is given — a fixed estimate
    of 3 characters a token (right for paths and identifiers, ~25% short for the user's prose)
    left a summary standing alone without the current work it had room for. `chars_per_token`
    instead: that estimate, for a caller that wants no tokenizer.
    `message_chars` bounds one user message in the list (a longer one keeps its head and
    names the version of the whole).
    """

    name = "offline"

    def __init__(self, *, message_chars: int = USER_MESSAGE_CHARS, chars_per_token: float | None = None,
                 counter: TokenCounter | None = None) -> None:
        self.message_chars = message_chars
        self.chars_per_token = chars_per_token or 3.0
        self._counter = counter
        self._by_chars = chars_per_token is not None and counter is None

    def _measure(self) -> Callable[[str], int]:
        """How a summary's size is counted: the counter (loaded on first use), or characters."""
        if self._by_chars:
            return len
        if self._counter is None:
            self._counter = default_counter()
        return self._counter.count

    def summarize(self, request: SummaryRequest) -> str:
        if request.purpose == "merge":
            merged: dict[str, str] = parse_sections(request.previous_summary or "")
            for partial in request.partials:
                merged = self._merge(merged, parse_sections(partial)) if merged else parse_sections(partial)
            return self._fit(merged, request.max_tokens)
        facts = extract(request.messages, self.message_chars, request.versions)
        if request.purpose == "turn_prefix":
            prefix = self._turn_prefix(facts)
            return shrink_section("Current work", prefix, self._chars(request.max_tokens, prefix))
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
        if len(facts.typed) > 1:
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
        """The paths modified, each with what changed, and the paths read: relative to the root
        they share, named once (`paths`)."""
        return bounded.as_bullets(path_lines(request.modified_files, request.read_files, request.changes,
                                             request.project))

    @staticmethod
    def _pending(facts: _Facts) -> str:
        if facts.todos is None:
            return ""
        open_items = [f"[{status}] {text}" for status, text in facts.todos
                      if status.lower() not in (*_DONE, "deleted")]
        return bounded.as_bullets(open_items) if open_items else "All recorded tasks are completed."

    @staticmethod
    def _current(facts: _Facts) -> str:
        parts = []
        if facts.assistant_texts:
            last = facts.assistant_texts[-1]
            latest = next((n for n in reversed(facts.notes) if not n.startswith("Decision: ")), "")
            if _finding(last) is None and latest:  # "Let me check what's next.": the last fact found first
                parts.append(f"Latest finding: {bounded.untagged(latest)}")
            parts.append(_truncate(last, 800))
        if facts.last_calls:
            parts.append("Last tool calls: " + ", ".join(facts.last_calls))
        if facts.open_calls:
            parts.append("Calls still waiting for their result: " + ", ".join(facts.open_calls.values()))
        return "\n".join(parts)

    @staticmethod
    def _next(facts: _Facts) -> str:
        if facts.last_role == "user" and facts.latest_user:
            return f"Respond to the user's latest message: {_truncate(facts.latest_user, 300)}"
        if facts.open_calls:
            return "Read the results of the calls still open: " + ", ".join(facts.open_calls.values())
        announced = [s for s in _sentences(facts.assistant_texts[-1])
                     if _FILLER.match(s) and len(s.split()) >= 3] if facts.assistant_texts else []
        if announced:  # "Let me run the migration next.": what the assistant said it would do
            return f"The assistant was about to: {_truncate(announced[-1], 300)}"
        if facts.todos:
            pending = [t for s, t in facts.todos if s.lower() not in (*_DONE, "deleted")]
            if pending:
                return f"Continue with the next open task: {pending[0]}"
        return ""  # "Continue from the current work above." would say nothing, at the cost of a path

    def _turn_prefix(self, facts: _Facts) -> str:
        parts = []
        if facts.first_user:
            parts.append(f"The turn began with the user asking: {facts.first_user}")
        findings = [f for f in (_finding(t, 200) for t in facts.assistant_texts[-3:]) if f]
        if findings:  # the tools used and the errors are in the main summary, which covers this part too
            parts.append("The assistant then: " + " ".join(findings))
        return "\n".join(parts)

    # ------------------------------------------------------------------ anchored update

    @staticmethod
    def _merge(previous: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
        """Fold `new` into `previous` (ours, or another agent's read into our sections): lists
        accumulate, the current state replaces."""
        merged = dict(previous)
        old_primary = (previous.get("Primary request and intent") or "").split("\nLatest request:")[0].strip()
        new_primary = new.get("Primary request and intent") or ""
        if old_primary:
            latest = new_primary.split("\nLatest request:")[-1].strip() if new_primary else ""
            merged["Primary request and intent"] = old_primary + (f"\nLatest request: {latest}" if latest else "")
        else:
            merged["Primary request and intent"] = new_primary

        def both(title: str) -> list[str]:
            return [*bounded.bullets(previous.get(title, "")), *bounded.bullets(new.get(title, ""))]

        concepts = both("Key technical concepts")
        tools = _tool_counts(c for c in concepts if c.startswith(_TOOLS_USED))
        merged["Key technical concepts"] = bounded.as_bullets(dict.fromkeys(
            [*(c for c in concepts if not c.startswith(_TOOLS_USED)), *([_tools_line(tools)] if tools else [])]))
        merged["Errors and fixes"] = bounded.as_bullets(both("Errors and fixes"))
        merged["Problem solving"] = bounded.as_bullets(_distinct(both("Problem solving")))
        merged["All user messages"] = bounded.as_bullets(both("All user messages"))
        # The path lists are the whole session's (the request's, accumulated): they replace the
        # previous ones, with their root; notes on files from another agent's summary stay after them.
        paths = [e for e in bounded.bullets(new.get("Files and code", "")) if is_path_line(e)]
        notes = [e for e in both("Files and code") if not is_path_line(e)]
        old_paths = [e for e in bounded.bullets(previous.get("Files and code", "")) if is_path_line(e)]
        merged["Files and code"] = bounded.as_bullets([*(paths or old_paths), *notes])
        for title in ("Current work", "Next step", "Pending tasks"):
            merged[title] = new.get(title) or previous.get(title, "")
        if new.get(""):
            merged[""] = new[""]
        return merged

    # ------------------------------------------------------------------ the budget

    def _chars(self, max_tokens: int, text: str = "") -> int:
        """`max_tokens` in characters of `text`: at its own measured density, or the estimate."""
        if self._by_chars or not text:
            return max(1, int(max_tokens * self.chars_per_token))
        return max(1, len(text) * max_tokens // max(1, self._measure()(text)))

    @staticmethod
    def _one_note(title: str, body: str) -> str:
        """A list that merged several notes (partial summaries, earlier compactions) as its first
        entries, one note, and its most recent entries, in the same room."""
        if body.count("\n- [… ") + body.startswith("- [… ") < 2:
            return body
        entries = bounded.bullets(body)
        return bounded.as_bullets(bounded.fit_list(entries, bounded.size(entries), bounded.noun_for(title),
                                                   min_width=None, head_share=bounded.head_share_for(title)))

    def _fit(self, sections: dict[str, str], max_tokens: int) -> str:
        """The summary within `max_tokens` (by the counter, or estimated): sections reduced by
        priority (`fit`)."""
        sections = {title: self._one_note(title, body) for title, body in sections.items()}
        chars = self._chars(max_tokens)
        if self._by_chars:
            return fitted_text(sections, chars)
        # Fitted by characters, at the density the counter finds in what was fitted, a few
        # rounds: a count of the whole summary per reduction step would cost ~80 counts.
        count, whole, best = self._measure(), len(format_sections(sections)), ""
        for _ in range(_MEASURED_ROUNDS):
            text = fitted_text(sections, chars)
            tokens = count(text)
            if tokens <= max_tokens and len(text) > len(best):
                best = text
                if len(text) >= whole or tokens >= max_tokens * _CLOSE_ENOUGH:
                    break
            chars = int(chars * max_tokens / max(1, tokens) * _CLOSE_ENOUGH)
        return best or fitted_text(sections, max_tokens, count)


__all__ = ["SECTIONS", "OfflineSummarizer", "extract"]
