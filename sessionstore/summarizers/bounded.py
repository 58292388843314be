"""Lists held to a size: the first and the most recent entries, and a note of what lies between.

A summary's lists (the user's messages, errors, decisions, files) grow with the session; a
summary that lists everything grows without bound (a 50,000-turn session once got a summary
bigger than its window). Held to a budget, a list keeps its first entries (how the work
began) and its most recent ones (where it stands), and one line says how many were left out
and at which transcript versions, where they stay verbatim. These notes merge: a list that
already holds notes (from an earlier compaction, or from partial summaries being merged)
folds them into the new one, so the count and the version range stay exact.

Entries are plain strings; an entry that starts with ``[v123] `` names its version.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from ..events import recall_hint

_TAG: Final = re.compile(r"^\[v(\d+)\] ")
_NOTE: Final = re.compile(r"^\[… (?P<count>[\d,]+) (?P<noun>.+?) left out(?:, versions? (?P<first>\d+)"
                          r"(?:–(?P<last>\d+))?(?:; recall read v\d+(?:\.\.\d+)?)?)? …\]$")
# A line's count of the items it left out ("… 12 more paths …"): a line fitted again adds it up.
_MORE: Final = re.compile(r"^… ([\d,]+) more .+ …$")
# What one entry costs besides its text: "- " and the newline.
_BULLET_CHARS: Final = 3
# Room kept for the note itself ("[… 12,345 user messages left out, versions 100–99999; recall read
# v100..99999 …]").
NOTE_CHARS: Final = 110
# Share of a list's room that goes to its first entries; the rest to the most recent ones.
_HEAD_SHARE: Final = 1 / 3
# Sections whose most recent entries matter most: the last errors are the ones the work is stuck
# on (an old error that was fixed long ago is history), so they keep no first entries.
_RECENT_ONLY: Final = frozenset({"Errors and fixes"})
# What the entries of a summary's list sections are called in a note.
_NOUNS: Final = {"All user messages": "user messages", "Errors and fixes": "errors", "Problem solving": "earlier notes",
                 "Files and code": "paths"}


def noun_for(section: str) -> str:
    return _NOUNS.get(section, "entries")


def head_share_for(section: str) -> float:
    """The share of a section's room for its first entries (`fit_list`)."""
    return 0.0 if section in _RECENT_ONLY else _HEAD_SHARE


def bullets(section: str) -> list[str]:
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


def as_bullets(items: Iterable[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def tagged(version: int | None, text: str) -> str:
    """`text` as an entry naming its version (untagged when the version is unknown)."""
    return f"[v{version}] {text}" if version else text


def untagged(entry: str) -> str:
    return _TAG.sub("", entry, count=1)


@dataclass(frozen=True, slots=True)
class _Left:
    count: int
    first: int | None
    last: int | None


def _left_out(entry: str) -> _Left:
    """What an entry stands for: itself (one, at its version), or a note's count and range."""
    note = _NOTE.match(entry)
    if note is not None:
        first = int(note["first"]) if note["first"] else None
        return _Left(int(note["count"].replace(",", "")), first, int(note["last"]) if note["last"] else first)
    tag = _TAG.match(entry)
    version = int(tag.group(1)) if tag else None
    return _Left(1, version, version)


def is_note(entry: str) -> bool:
    return _NOTE.match(entry) is not None


def noted(entry: str) -> tuple[int, int, int] | None:
    """A note's count and the versions it names, first and last; None for any other entry and
    for a note that names no version."""
    if not is_note(entry):
        return None
    left = _left_out(entry)
    return None if left.first is None or left.last is None else (left.count, left.first, left.last)


def note(entries: Iterable[str], noun: str) -> str:
    """One line for `entries` left out: their number (notes inside counted in) and versions."""
    parts = [_left_out(e) for e in entries]
    count = sum(p.count for p in parts)
    versions = [v for p in parts for v in (p.first, p.last) if v is not None]
    where = ""
    if versions:
        low, high = min(versions), max(versions)
        where = (f", version {low}" if low == high else f", versions {low}–{high}") + f"; {recall_hint(low, high)}"
    return f"[… {count:,} {noun} left out{where} …]"


def size(entries: Sequence[str]) -> int:
    """Characters the entries take as a bulleted list."""
    return sum(len(e) + _BULLET_CHARS for e in entries)


def shorten(entry: str, width: int) -> str:
    """The entry on one line, cut to about `width` characters (head and tail kept, the head
    longer); its tag, and notes, stay whole."""
    if len(entry) <= width or is_note(entry):
        return entry
    tag = _TAG.match(entry)
    prefix = tag.group(0) if tag else ""
    text = re.sub(r"\s+", " ", entry[len(prefix):]).strip()
    room = max(2, width - len(prefix) - 5)
    head = (room * 2) // 3
    return f"{prefix}{text[:head].rstrip()} […] {text[len(text) - (room - head):].lstrip()}"


# A user message shortened for room: its head, then where it stays whole.
_SHORTENED: Final = re.compile(r" \[… recall read v(\d+)\]$")


def shortened(entry: str, width: int) -> str:
    """A tagged entry cut to its first `width` characters of text (on one line) and the version
    that keeps it whole: what a list of the user's words does to its oldest entries before it
    leaves any out. An untagged entry, a note or one already short enough stays as it is."""
    tag = _TAG.match(entry)
    if tag is None or len(entry) - tag.end() <= width or is_note(entry) or _SHORTENED.search(entry):
        return entry  # (a text within `width` as it is is within it collapsed, and the cut would add)
    text = re.sub(r"\s+", " ", entry[tag.end():]).strip()
    cut = f"{text[:width].rstrip()} [… {recall_hint(int(tag.group(1)))}]"
    return entry if len(cut) >= len(text) else tag.group(0) + cut


def stands_for(entry: str) -> tuple[int, int, int] | None:
    """What an entry holds only part of: a note's count and versions (`noted`), or a `shortened`
    entry's (one, at its version); None for a whole entry."""
    found = _SHORTENED.search(entry)
    if found and _TAG.match(entry):
        return 1, int(found.group(1)), int(found.group(1))
    return noted(entry)


def fit_list(entries: Sequence[str], chars: int, noun: str, *, min_width: int | None = 60,
             head_share: float = _HEAD_SHARE) -> list[str]:
    """`entries` within `chars`: entries shortened first (never below `min_width`; never at all
    when it is None: the user's words stay whole), then the first (in `head_share` of the
    room; none when it is 0) and the most recent kept and one note for all those between
    (notes already in the list included: a list never holds more than one note)."""
    notes = sum(map(is_note, entries))
    if size(entries) <= chars and notes <= 1:
        return list(entries)
    if notes <= 1 and min_width is not None:
        width = max(min_width, chars // 8)
        entries = [shorten(e, width) for e in entries]
        if size(entries) <= chars:
            return entries
    room = max(0, chars - NOTE_CHARS)
    head_room = int(room * head_share)
    used = start = 0
    end = len(entries)
    # The very first entry (how the work began: the user's original request) may take half the room.
    while head_share and start < end and not is_note(entries[start]) and \
            used + len(entries[start]) + _BULLET_CHARS <= (head_room if start else max(head_room, room // 2)):
        used += len(entries[start]) + _BULLET_CHARS
        start += 1
    while end > start and not is_note(entries[end - 1]) and used + len(entries[end - 1]) + _BULLET_CHARS <= room:
        used += len(entries[end - 1]) + _BULLET_CHARS
        end -= 1
    if start == end:
        return list(entries)
    return [*entries[:start], note(entries[start:end], noun), *entries[end:]]


def _counts_more(item: str) -> int:
    """How many items an item of a path line stands for: a count ("… 12 more paths …"), or one."""
    more = _MORE.match(item)
    return int(more.group(1).replace(",", "")) if more else 1


def fit_items(line: str, chars: int, noun: str) -> str:
    """A "Label: a, b, c" line within `chars`: its first and latest items and one count of the
    others. A count already in the line (an earlier fitting's) is added into the new one, never
    kept beside it: a line holds one count at most."""
    label, sep, rest = line.partition(": ")
    if not sep:
        return line
    items = rest.split(", ")
    counts = sum(1 for item in items if _MORE.match(item))
    if len(line) <= chars and counts <= 1:
        return line
    room = max(0, chars - len(label) - 2 - 40)
    used = start = 0
    end = len(items)
    # The first items up to a share of the room, the latest in the rest; neither side takes a count.
    while start < end and not _MORE.match(items[start]) and used + len(items[start]) + 2 <= room * _HEAD_SHARE:
        used += len(items[start]) + 2
        start += 1
    while end > start and not _MORE.match(items[end - 1]) and used + len(items[end - 1]) + 2 <= room:
        used += len(items[end - 1]) + 2
        end -= 1
    if start == end:
        return line
    left = sum(_counts_more(item) for item in items[start:end])
    return f"{label}: " + ", ".join([*items[:start], f"… {left:,} more {noun} …", *items[end:]])
