"""The fixed sections of every summary, and their formatting (`parse` reads them).

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

_KEYS: Final = {title.lower(): title for title in SECTIONS}


def canonical_title(title: str) -> str | None:
    """Our section for a heading that names one ("Files and Code Sections", "Pending Tasks (open)", …)."""
    key = re.sub(r"[*_`]", "", title).strip().rstrip(":").lower()
    if key in _KEYS:
        return _KEYS[key]
    for known, canonical in _KEYS.items():
        if key.startswith(known):
            return canonical
    return None


def every_heading(text: str) -> bool:
    """Whether a summary names every one of our sections (an empty one as "(none)"). One held to a
    small budget leaves out the headings of the sections it emptied, and formatting it again must
    not bring them back as "(none)": "Errors and fixes (none)" after an error is read as fact."""
    return all(re.search(rf"^## {re.escape(title)}$", text, re.MULTILINE) for title in SECTIONS)


def format_sections(sections: Mapping[str, str], *, omit_empty: bool = False) -> str:
    """Markdown with one `## heading` per section, in SECTIONS order; empty ones say "(none)",
    or are left out with `omit_empty` (a summary held to a small budget: a heading that says
    nothing costs as much as a path)."""
    parts = []
    preamble = sections.get("", "").strip()
    if preamble:
        parts.append(preamble)
    for title in SECTIONS:
        body = (sections.get(title) or "").strip() or "(none)"
        if not (omit_empty and body == "(none)"):
            parts.append(f"## {title}\n{body}")
    return "\n\n".join(parts)
