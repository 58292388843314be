"""The fixed sections of every summary, and their parsing.

Fixed sections make summaries comparable across compactions and let an anchored update
replace a section instead of appending prose; they are the sections Claude Code's compact
prompt asks for, which users know.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

SECTIONS: Final[tuple[str, ...]] = (
    "Primary request and intent",
    "Key technical concepts",
    "Files and code",
    "Errors and fixes",
    "Problem solving",
    "All user messages",
    "Pending tasks",
    "Current work",
    "Next step",
)

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*(?:\d+[.)]\s*)?(?P<title>.+?)\s*:?\s*#*\s*$")
_KEYS: Final = {title.lower(): title for title in SECTIONS}


def _canonical(title: str) -> str | None:
    key = re.sub(r"[*_`]", "", title).strip().rstrip(":").lower()
    if key in _KEYS:
        return _KEYS[key]
    for known, canonical in _KEYS.items():  # "Files and Code Sections", "Pending Tasks (open)", …
        if key.startswith(known):
            return canonical
    return None


def parse_sections(text: str) -> dict[str, str]:
    """The known sections of a markdown summary, by canonical title, in SECTIONS order.

    Unknown headings stay inside the section they follow; text before the first known
    heading is returned under "" (a model that ignores the format loses nothing).
    """
    found: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        match = _HEADING.match(line)
        title = _canonical(match.group("title")) if match else None
        if title is not None:
            current = title
            found.setdefault(current, [])
            continue
        found[current].append(line)
    parsed = {title: "\n".join(found[title]).strip() for title in ("", *SECTIONS) if title in found}
    if not parsed.get(""):
        parsed.pop("", None)
    return parsed


def format_sections(sections: Mapping[str, str]) -> str:
    """Markdown with one `## heading` per section, in SECTIONS order; empty ones say "(none)"."""
    parts = []
    preamble = sections.get("", "").strip()
    if preamble:
        parts.append(preamble)
    for title in SECTIONS:
        body = (sections.get(title) or "").strip() or "(none)"
        parts.append(f"## {title}\n{body}")
    return "\n\n".join(parts)
