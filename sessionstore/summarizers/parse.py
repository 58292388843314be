"""Any agent's summary read into our sections, so that the next compaction updates it section
by section instead of cutting it blind.

Summaries reach the store from several writers: ours (`## ` headings, `sections.SECTIONS`),
Claude Code's (a preamble, an ``Analysis:`` scratchpad, then ``Summary:`` with nine numbered
sections, "All user messages" among them, and a trailer telling the model to go on), Pi's
(``## Goal`` / ``## Constraints & Preferences`` / ``## Progress`` with ``### Done`` … /
``## Key Decisions`` / ``## Next Steps`` / ``## Critical Context``, then ``<read-files>`` and
``<modified-files>``, and older checkpoints with headings of their own), Codex's handoff
summary (a fixed prefix, then mostly free text), and free text from anywhere.

Each heading goes to the section whose meaning it has (a table of words, most specific
first); a heading we do not know keeps its title as a label inside the section it is closest
to, so nothing is dropped; text without headings is kept as entries of "Problem solving"
(a list, which later compactions bound by keeping its first and most recent entries).
The agents' boilerplate (Claude Code's "This session is being continued…" and "If you need
specific details…", Pi's and Codex's prefixes, `<system-reminder>` blocks, analysis
scratchpads) is dropped: it is an instruction to the agent that wrote it, not a fact.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
import textwrap
from typing import Final

from .sections import SECTIONS, canonical_title

__all__ = ["LIST_SECTIONS", "is_sectioned", "parse_sections", "parse_summary"]

# Sections whose body is a list of entries (bounded by first-and-most-recent with a note).
LIST_SECTIONS: Final = frozenset({"All user messages", "Errors and fixes", "Problem solving", "Pending tasks",
                                  "Files and code", "Key technical concepts"})

# Lines that the agents put around a summary for their own model, not facts of the session.
_BOILERPLATE: Final = (
    re.compile(r"^This session is being continued from a previous conversation\b.*$", re.IGNORECASE),
    re.compile(r"^The (?:conversation is summarized|summary below covers)\b.*$", re.IGNORECASE),
    re.compile(r"^If you need specific details from before compaction\b.*$", re.IGNORECASE),
    re.compile(r"^(?:Please )?continue the conversation from where (?:we|it) left off\b.*$", re.IGNORECASE),
    re.compile(r"^The messages after this summary are the most recent messages\b.*$", re.IGNORECASE),
    re.compile(r"^The conversation history before this point was compacted into the following summary:?\s*$",
               re.IGNORECASE),
    re.compile(r"^The following is a summary of a branch that this conversation came back from:?\s*$",
               re.IGNORECASE),
    re.compile(r"^Another language model started to solve this problem and produced a summary\b.*$", re.IGNORECASE),
    re.compile(r"^(?:here is|here's|below is|sure|certainly|okay|ok)\b[^\n]*:\s*$", re.IGNORECASE),  # a model's preamble
    re.compile(r"^Summary(?: of (?:the|this) (?:session|conversation|work)(?: so far)?)?:\s*$", re.IGNORECASE),
)
# The same lines, one pattern: a summary's every line is tried against it, at every probe of a fit.
_BOILERPLATE_LINE: Final = re.compile("|".join(f"(?:{p.pattern})" for p in _BOILERPLATE), re.IGNORECASE)
_BLOCKS: Final = re.compile(r"<(system-reminder|analysis)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_FILE_TAGS: Final = re.compile(r"<(read-files|modified-files)>\s*(.*?)\s*</\1>", re.DOTALL | re.IGNORECASE)
_WRAPPER: Final = re.compile(r"</?(?:summary|conversation_summary)>", re.IGNORECASE)
_FENCE: Final = re.compile(r"^\s*(```|~~~)")
_MARKDOWN_HEADING: Final = re.compile(r"^\s{0,3}(?P<hashes>#{1,6})\s+(?P<title>.+?)\s*#*\s*$")
# "1. Primary Request and Intent:", "**Goal**", "**Next steps:** rest", "Key Decisions:" at the margin.
_LABEL_HEADING: Final = re.compile(r"^\s{0,1}(?:\d{1,2}[.)]\s+)?(?P<bold>\*\*)?(?P<title>[A-Z][^:*\n]{1,60}?)"
                                   r"(?:(?P=bold):|:(?P=bold)|(?P=bold)\s*$|:\s*$)(?P<rest>.*)$")

# Heading words → our section, most specific first. A heading that matches none is kept,
# labelled, under "Key technical concepts" (the section for context of every kind).
_MEANINGS: Final[tuple[tuple[str, str], ...]] = (
    (r"user('?s)? messages?|messages? (from|of) the user", "All user messages"),
    (r"optional next step|^next step$|immediate next", "Next step"),
    (r"pending|next steps|remaining|to ?do|what remains|open (tasks|items)|blocked|outstanding", "Pending tasks"),
    (r"current (work|task|state|status|focus)|in progress|where (we|things) (are|stand)|state of (the )?work",
     "Current work"),
    (r"error|fix|bug|failure|issue|pitfall|gotcha", "Errors and fixes"),
    (r"problem solving|decision|progress|done|complete|accomplish|finding|learn|approach|tried|changes made",
     "Problem solving"),
    (r"file|code section|^code$|modified|created|artifacts?", "Files and code"),
    (r"primary request|goal|intent|objective|request|mission|purpose|task|constraint|preference|requirement",
     "Primary request and intent"),
    (r"concept|context|technical|architecture|design|stack|command|environment|branch|testing|reference",
     "Key technical concepts"),
)
# Headings whose meaning is exactly the section's: no label is kept.
_SYNONYMS: Final = {"goal": "Primary request and intent", "next steps": "Pending tasks",
                    "optional next step": "Next step", "key decisions": "Problem solving",
                    "progress": "Problem solving", "critical context": "Key technical concepts",
                    "done": "Problem solving", "in progress": "Current work"}


def _meaning(title: str) -> tuple[str | None, bool]:
    """(our section for a heading, whether its title is worth keeping as a label)."""
    plain = re.sub(r"^\d{1,2}[.)]\s*", "", re.sub(r"[*_`#]", "", title).strip()).rstrip(":").strip()
    if re.match(r"next steps\b", plain, re.IGNORECASE):  # Pi's list of what remains, not our one next step
        return "Pending tasks", False
    canonical = canonical_title(plain)
    if canonical is not None:
        return canonical, False
    key = plain.lower()
    if key in _SYNONYMS:
        return _SYNONYMS[key], False
    for pattern, section in _MEANINGS:
        if re.search(pattern, key):
            return section, True
    return None, True


def _without_boilerplate(text: str) -> tuple[str, dict[str, list[str]]]:
    """The summary without the agents' wrappers; and the paths of Pi's file tags."""
    files: dict[str, list[str]] = {}

    def take(match: re.Match[str]) -> str:
        paths = [line.strip() for line in match.group(2).splitlines() if line.strip()]
        files.setdefault(match.group(1).lower(), []).extend(paths)
        return ""

    text = _FILE_TAGS.sub(take, text)
    text = _BLOCKS.sub("", text)
    text = _WRAPPER.sub("", text)
    lines = text.splitlines()
    # Claude Code's plain "Analysis:" scratchpad runs up to its "Summary:" line.
    starts = [i for i, line in enumerate(lines) if line.strip() == "Analysis:"]
    ends = [i for i, line in enumerate(lines) if line.strip() == "Summary:"]
    if starts and ends and starts[0] < ends[-1]:
        lines = lines[:starts[0]] + lines[ends[-1]:]
    kept = [line for line in lines if not _BOILERPLATE_LINE.match(line.strip())]
    return "\n".join(kept), files


def _heading(line: str, strict: bool) -> tuple[str | None, bool, str, str] | None:
    """(section, label it?, its title, rest of the line) when `line` is a heading; else None."""
    match = _MARKDOWN_HEADING.match(line)
    if match is not None:
        section, label = _meaning(match.group("title"))
        if strict and label:
            return None
        return section, label, match.group("title").strip("*").strip(), ""
    match = _LABEL_HEADING.match(line)
    if match is None:
        return None
    section, label = _meaning(match.group("title"))
    if section is None or (label and (strict or len(match.group("title").split()) > 5)):
        return None
    return section, label, match.group("title").strip(), match.group("rest").strip()


def _strict(lines: list[str]) -> bool:
    """Whether the text is already ours (three or more of our headings): then only our own
    headings split it, and any other heading stays inside the section it follows."""
    ours = sum(1 for line in lines if (m := _MARKDOWN_HEADING.match(line)) and canonical_title(
        re.sub(r"[*_`]", "", m.group("title")).strip().rstrip(":")) is not None)
    return ours >= 3


def is_sectioned(text: str) -> bool:
    """Whether `text` is written in our sections (three or more of our headings)."""
    return _strict(text.splitlines())


def _as_list(body: str) -> str:
    """A section's text as "- " entries: bullets and numbered items become entries (their
    nested lines continue them), other paragraphs are one entry each."""
    entries: list[str] = []
    fenced = False
    paragraph_break = True
    for line in body.splitlines():
        stripped = line.strip()
        if _FENCE.match(line):
            fenced = not fenced
        item = None if fenced or line[:1].isspace() else re.match(r"^(?:[-*+]|\d{1,3}[.)])\s+(.*)$", stripped)
        if item is not None and not _FENCE.match(line):
            entries.append(item.group(1))
            paragraph_break = False
        elif not stripped and not fenced:
            paragraph_break = True
        elif entries and not paragraph_break:
            entries[-1] += "\n  " + line.rstrip()
        else:
            entries.append(stripped)
            paragraph_break = False
    return "\n".join(f"- {entry}" for entry in entries if entry.strip() and entry.strip() != "(none)")


def parse_summary(text: str) -> dict[str, str]:
    """The sections of a summary written by anyone, by our canonical titles, in SECTIONS order.

    Text before the first heading of a summary in our own format is returned under "" (a
    model that ignores the format loses nothing); in other formats it is an entry of
    "Problem solving". List sections come back as "- " entries.
    """
    body, files = _without_boilerplate(text)
    lines = body.splitlines()
    strict = _strict(lines)
    found: dict[str, list[str]] = {}
    current = ""
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _heading(line, strict)
        if heading is None:
            found.setdefault(current, []).append(line)
            continue
        section, label, title, rest = heading
        if section is None:  # an unknown markdown heading: a label in the section it follows
            found.setdefault(current, []).append(f"**{title}**")
            continue
        current = section
        found.setdefault(current, [])
        if label:
            found[current].append(f"**{title}**" + (f" {rest}" if rest else ""))
        elif rest:
            found[current].append(rest)
    parsed: dict[str, str] = {}
    for title in ("", *SECTIONS):
        if title not in found:
            continue
        section = textwrap.dedent("\n".join(found[title])).strip()
        if title in LIST_SECTIONS and not strict:
            section = _as_list(section)
        if strict or (section and section != "(none)"):  # ours: every heading stays, "(none)" too
            parsed[title] = section
    if not strict and parsed.get(""):
        free = _as_list(parsed.pop(""))
        parsed["Problem solving"] = "\n".join(p for p in (free, parsed.get("Problem solving", "")) if p)
    if files:
        lines_ = [f"- {label}: " + ", ".join(dict.fromkeys(files[tag])) for tag, label in
                  (("modified-files", "Modified"), ("read-files", "Read")) if files.get(tag)]
        parsed["Files and code"] = "\n".join([*lines_, parsed.get("Files and code", "")]).strip()
    return {title: parsed[title] for title in ("", *SECTIONS) if title in parsed}


def parse_sections(text: str) -> dict[str, str]:
    """The sections of a summary, by canonical title, in SECTIONS order: ours, or another
    agent's read into ours (`parse_summary`)."""
    return parse_summary(text)
