"""A summary held to its budget section by section, by priority — never cut in its middle.

When a summary (ours, a model's answer, another agent's) is over its budget, the sections
that can be re-acquired or matter least give way first, each down to a floor before the next
one is touched: key concepts, problem-solving notes, the preamble, errors, the next step,
files (the paths read before the paths modified), the primary request, and last the current
work, the pending tasks and the user's own messages — what no tool can get back. A list
keeps its first and most recent entries whole and one note for the others, naming their
versions (`bounded.fit_list`); prose keeps its leading lines. Only when even the floors do
not fit are sections emptied, in the same order.

Pure functions; `measure` is how the budget is counted (characters, or a token counter).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final

from . import bounded
from .parse import LIST_SECTIONS, parse_summary
from .sections import format_sections

__all__ = ["REDUCE_ORDER", "fit_sections", "fit_summary_text", "shrink_section"]

# Reduced first → reduced last.
REDUCE_ORDER: Final[tuple[str, ...]] = (
    "Key technical concepts", "Problem solving", "", "Errors and fixes", "Next step", "Files and code",
    "Primary request and intent", "Current work", "Pending tasks", "All user messages",
)
# What a section keeps in the first round (characters), before later sections give way.
_FLOORS: Final = {"Primary request and intent": 400, "Current work": 600, "Pending tasks": 600, "Next step": 300,
                  "Files and code": 600, "Errors and fixes": 300, "": 200, "All user messages": 200}
_DEFAULT_FLOOR: Final = 160
# The paths modified are short and what no summary should lose: they keep up to this share of
# the budget in the first round.
_MODIFIED_SHARE: Final = 0.25
_FILE_LINE: Final = re.compile(r"^(Modified|Read): ")
_MIN_PROSE_HEAD: Final = 40
_ATTEMPTS: Final = 3
_READ_LINE: Final = 160


def _prose(body: str, chars: int) -> str:
    """The leading lines of `body` within `chars`; a first line too long keeps its head up to
    a word boundary. A note says how much was left out."""
    if len(body) <= chars:
        return body
    lines = body.splitlines()
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > chars - 40:
            break
        kept.append(line)
        used += len(line) + 1
    if not kept and chars - 40 >= _MIN_PROSE_HEAD:
        head = lines[0][: chars - 41]
        kept = [head[: head.rfind(" ")] + " …" if " " in head else head + "…"]
    left = len(lines) - len(kept)
    if not kept:
        return f"[… {len(lines):,} lines left out …]" if chars >= 30 else ""
    return "\n".join(kept) + (f"\n[… {left:,} more lines left out …]" if left else "")


def _files(body: str, chars: int) -> str:
    """Descriptions of files give way first, then the paths read, then the paths modified
    (short, and what the model cannot tell from the code it sees); a path line keeps its first
    and latest paths and counts the others (`bounded.fit_items`)."""
    entries = bounded.bullets(body)
    modified = [e for e in entries if e.startswith("Modified: ")]
    read = [e for e in entries if e.startswith("Read: ")]
    other = [e for e in entries if not _FILE_LINE.match(e)]
    room = chars - bounded.size(modified) - bounded.size(read)
    other = bounded.fit_list(other, max(0, room), "file notes", min_width=None) if other else []
    room = max(0, chars - bounded.size(other))
    # The read paths' line keeps at least its ends (`_READ_LINE` characters); the modified take the rest.
    modified_room = max(room - bounded.size(read), room - _READ_LINE * len(read))
    modified = [bounded.fit_items(e, max(80, modified_room), "paths") for e in modified]
    read = [bounded.fit_items(e, max(_READ_LINE, room - bounded.size(modified)), "paths") for e in read]
    return bounded.as_bullets([*modified, *read, *other])


def _floor(title: str, body: str, limit_chars: int) -> int:
    """What `title` keeps in the first round, `limit_chars` being the whole summary's room."""
    floor = _FLOORS.get(title, _DEFAULT_FLOOR)
    if title == "Files and code":
        modified = sum(len(e) + 3 for e in bounded.bullets(body) if e.startswith("Modified: "))
        floor = max(floor, min(modified, int(limit_chars * _MODIFIED_SHARE)))
    return floor


def shrink_section(title: str, body: str, chars: int) -> str:
    """`body` of section `title` in about `chars` characters, without cutting an entry's middle."""
    if len(body) <= chars:
        return body
    if title == "Files and code":
        return _files(body, chars)
    entries = bounded.bullets(body)
    if title in LIST_SECTIONS and body.lstrip().startswith("- "):
        if chars <= 0 and title != "All user messages":  # no room at all: even its note goes
            return ""
        return bounded.as_bullets(bounded.fit_list(entries, max(0, chars), bounded.noun_for(title), min_width=None,
                                                   head_share=bounded.head_share_for(title)))
    return _prose(body, chars)


def fit_sections(sections: Mapping[str, str], limit: int, measure: Callable[[str], int] = len) -> dict[str, str]:
    """`sections` whose formatted text measures at most `limit` when that can be done by
    reducing sections in `REDUCE_ORDER` (first to their floors, then further)."""
    fitted = {title: body for title, body in sections.items() if body}
    for floors in (True, False):
        for title in REDUCE_ORDER:
            for _ in range(_ATTEMPTS):  # a measure that is not linear in characters may need another go
                text = format_sections(fitted)
                size = measure(text)
                if size <= limit:
                    return fitted
                body = fitted.get(title, "")
                ratio = len(text) / max(1, size)  # characters per unit of `measure`
                room = int(limit * ratio * 0.97) - (len(text) - len(body))  # what the other sections leave it
                target = max(_floor(title, body, int(limit * ratio)) if floors else 0, room)
                if len(body) <= target or len(shrunk := shrink_section(title, body, target)) >= len(body):
                    break
                fitted[title] = shrunk
    return fitted


def fit_summary_text(text: str, limit: int, measure: Callable[[str], int] = len) -> str:
    """A summary of any writer in our sections, within `limit` (by `measure`) when reducing
    sections can get it there."""
    return format_sections(fit_sections(parse_summary(text), limit, measure))
