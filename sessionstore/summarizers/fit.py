"""A summary held to its budget section by section, by priority — never cut in its middle.

When a summary (ours, a model's answer, another agent's) is over its budget, the headings of
empty sections go first, then the sections that can be re-acquired or matter least give way,
each down to a floor before the next one is touched: key concepts, problem-solving notes, the
preamble, the next step, files (notes on files, the paths read and what changed in each path
modified, the oldest first; the paths modified stay), the primary request, the current work,
errors, the pending tasks, the paths modified (`MODIFIED_PATHS`: short, written relative to the
project's root, and what no tool can tell the model it changed) — and last of all the user's
own messages, which have no floor: nothing else can say what the user asked, so they give way
only when everything else has and they alone are over the room, the oldest shortened first,
each naming the version that keeps it whole (`_users`). Errors outlast the current work: once
a failed result leaves the view the summary is the only place that says what failed (and the
model would try it again), while the current work is what the kept tail goes on from; and their
floor holds the most recent error whole, however small the summary (a tenth of 576 characters
once held less than one error, which became a note while the tools used kept their floor). A
list keeps its first and most recent entries whole and one note for the others, naming their
versions (`bounded.fit_list`), or nothing when that note would name none (it could not be
recalled); prose keeps its leading lines. Only when even the floors do not fit are sections
emptied, in the same order.

Pure functions; `measure` is how the budget is counted (characters, or a token counter).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from itertools import accumulate
from typing import Final

from . import bounded
from .parse import LIST_SECTIONS, parse_summary
from .paths import MODIFIED_LABEL, PATH_LABELS, READ_LABEL, ROOT_LABEL, flat_lines, grouped_lines, is_absolute
from .sections import every_heading, format_sections

__all__ = ["MODIFIED_PATHS", "REDUCE_ORDER", "fit_sections", "fit_summary_text", "fitted_text", "shrink_section"]

FILES: Final = "Files and code"
# Not a section: the "Modified: " line of "Files and code" (and the root its paths are relative to).
MODIFIED_PATHS: Final = "Files and code: modified paths"
USERS: Final = "All user messages"
# Reduced first → reduced last.
REDUCE_ORDER: Final[tuple[str, ...]] = (
    "Key technical concepts", "Problem solving", "", "Next step", FILES, "Primary request and intent", "Current work",
    "Errors and fixes", "Pending tasks", MODIFIED_PATHS, USERS,
)
# What a section keeps in the first round (characters), before later sections give way.
_FLOORS: Final = {"Primary request and intent": 400, "Current work": 600, "Pending tasks": 600, "Next step": 300,
                  FILES: 600, "Errors and fixes": 300, "": 200}
_DEFAULT_FLOOR: Final = 160
# A floor is never more than this share of the summary's room: a small summary's sections do not
# each keep what a large one's do, or the first ones to be reduced would take all its room.
_FLOOR_SHARE: Final = 0.1
# Lists whose floor holds their most recent entry whole, however small the summary: a note of a
# failed result ("[… 1 errors left out …]") tells the model only that something failed.
_WHOLE_LAST: Final = frozenset({"Errors and fixes"})
# What "Current work" keeps in the first round however small the summary (characters): the gist
# of the last reply, its first lines or its head. When the summary stands alone (nothing kept
# after it) that reply is what the model goes on from, and a tenth of a small summary's room
# held less than its first sentence.
_GIST_CHARS: Final = 200
# What a user message shortened for room keeps of its text (characters), tried in turn: the
# second still holds the 120 characters a reader (and `quality`'s probe) knows a request by, the
# last its gist.
_USER_HEAD_CHARS: Final = (280, 140, 60)
# What a path of the "Modified: " line says changed: " (created)", " (edited: def parse(text))".
_CHANGE_NOTE: Final = re.compile(r" \((?:created|written|deleted|edited|cell \w+)(?::[^\n]*)?\)$")
_MIN_PROSE_HEAD: Final = 40
_ATTEMPTS: Final = 3
# A path line whose paths were all counted out ("Modified: … 3 more paths …").
_COUNT_ONLY: Final = re.compile(r"^[^:]+: … [\d,]+ more \w+ …$")
# A path line shorter than this is not worth keeping: "Read: … 12 more paths …" and little more.
_MIN_PATH_LINE: Final = 40


def _lines_note(left: int) -> str:
    return f"\n[… {left:,} more lines left out …]" if left else ""


def _prose(body: str, chars: int) -> str:
    """The leading lines of `body` within `chars`, with the note that says how many more were
    left out (counted at its own length: a short first line is kept where it and the note fit);
    a first line too long keeps its head up to a word boundary."""
    if len(body) <= chars:
        return body
    lines = body.splitlines()
    kept: list[str] = []
    used = -1  # no newline before the first line
    for line in lines:
        if used + 1 + len(line) + len(_lines_note(len(lines) - len(kept) - 1)) > chars:
            break
        kept.append(line)
        used += 1 + len(line)
    room = chars - len(_lines_note(len(lines) - 1)) - 2
    if not kept and room >= _MIN_PROSE_HEAD:
        head = lines[0][:room]
        kept = [head[: head.rfind(" ")] + " …" if " " in head else head + "…"]
    if not kept:  # a note that names no version tells the model nothing it can act on
        return ""
    return "\n".join(kept) + _lines_note(len(lines) - len(kept))


@lru_cache(maxsize=64)
def _split_notes(line: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """A "Modified: " line as (label, its paths, the same paths without their change notes);
    remembered, as the fit measures the same lines again at each of its attempts."""
    label, _, rest = line.partition(": ")
    items = tuple(rest.split(", "))
    return label, items, tuple(_CHANGE_NOTE.sub("", item) for item in items)


def _joined(label: str, items: tuple[str, ...], bare: tuple[str, ...], keep: int) -> str:
    cut = max(0, len(items) - keep)
    return f"{label}: " + ", ".join(bare[:cut] + items[cut:])


def _without_notes(line: str, keep: int = 0) -> str:
    """A "Modified: " line without the change notes of its paths, but for the `keep` latest."""
    return _joined(*_split_notes(line), keep)


def _notes_within(modified: list[str], chars: int) -> list[str]:
    """`modified` keeping the change notes of as many of the latest paths of each line as fit
    `chars` (none, when even the bare paths do not). The size only grows with the notes kept,
    so the most that fit is found by bisection; each line is split once and each candidate
    measured by arithmetic (the bare size plus the latest notes' lengths), so a line of
    thousands of paths (a long session's every edit) costs one pass, not one a probe."""
    if bounded.size(modified) <= chars:
        return modified
    lines = [_split_notes(e) for e in modified]
    bare_size = bounded.size([_joined(*line, 0) for line in lines])
    # per line, what the notes of its k latest paths add: notes[k - 1]
    notes = [list(accumulate(len(i) - len(b) for i, b in zip(reversed(items), reversed(bare))))
             for _, items, bare in lines]

    def size(keep: int) -> int:
        return bare_size + sum(added[min(keep, len(added)) - 1] for added in notes if keep and added)

    low, high = 0, max((len(items) for _, items, _ in lines), default=0)  # low always fits or is 0
    while low < high:
        keep = (low + high + 1) // 2
        if size(keep) <= chars:
            low = keep
        else:
            high = keep - 1
    return [_joined(*line, low) for line in lines]


def _modified(entries: list[str]) -> tuple[list[str], list[str], list[str], list[str]]:
    """(root, modified, read, other) entries of a "Files and code" section, its paths on one
    line a label (a folder's line written whole again: the fit counts and reduces that form,
    `_files` groups what it keeps)."""
    entries = flat_lines(entries)
    root = [e for e in entries if e.startswith(ROOT_LABEL)]
    modified = [e for e in entries if e.startswith(MODIFIED_LABEL)]
    read = [e for e in entries if e.startswith(READ_LABEL)]
    other = [e for e in entries if not e.startswith(PATH_LABELS)]
    return root, modified, read, other


def _modified_size(body: str, *, notes: bool = True) -> int:
    """Characters the paths modified take in a "Files and code" body (with their root; with
    or without their change notes)."""
    root, modified, _, _ = _modified(bounded.bullets(body))
    return bounded.size(root) + bounded.size(modified if notes else [_without_notes(e) for e in modified])


def _files(body: str, chars: int) -> str:
    """What gives way, in order: notes on files, the paths read, the change notes of the paths
    modified (the oldest first), and last the paths modified themselves, a line keeping its
    first and latest paths and counting the others (`bounded.fit_items`). The root stays while
    a path relative to it does."""
    root, modified, read, other = _modified(bounded.bullets(body))

    def room(*kept: list[str]) -> int:
        return chars - sum(bounded.size(k) for k in kept)

    left = room(root, modified, read)
    if other and left < bounded.size(other):
        other = bounded.fit_list(other, left, "file notes", min_width=None) if left >= 2 * _MIN_PATH_LINE else []
    left = room(root, modified, other)
    if read and left < bounded.size(read):
        read = [bounded.fit_items(e, left, "paths") for e in read] if left >= _MIN_PATH_LINE + 3 else []
    modified = _notes_within(modified, room(root, read, other))
    left = room(root, read, other)
    if bounded.size(modified) > left:
        modified = [bounded.fit_items(e, max(_MIN_PATH_LINE, left), "paths") for e in modified]
        # A line left with its count alone ("Modified: … 3 more paths …") names nothing to act on.
        modified = [e for e in modified if not _COUNT_ONLY.match(e)]
    return bounded.as_bullets([*grouped_lines(_worth_a_root(root, [*modified, *read])), *other])


def _worth_a_root(root: list[str], lines: list[str]) -> list[str]:
    """The root and the path lines, or the path lines alone, made absolute again, when the paths
    left relative to the root (after the others were counted out) save less than it costs."""
    if not root:
        return lines
    folder = root[0].removeprefix(ROOT_LABEL)
    relative = sum(1 for line in lines for item in line.partition(": ")[2].split(", ")
                   if item and not is_absolute(item) and not item.startswith("… "))
    if relative * len(folder) >= bounded.size(root):
        return [*root, *lines]
    return [label + sep + ", ".join(item if is_absolute(item) or item.startswith("… ") else folder + item
                                    for item in rest.split(", "))
            for label, sep, rest in (line.partition(": ") for line in lines)]


def _keep(step: str, body: str, floors: bool, limit_chars: int) -> int:
    """What section `step` keeps at its turn (characters), `limit_chars` being the whole
    summary's room: its floor in the first round (at most `_FLOOR_SHARE` of the room, but
    never less than the most recent entry of a `_WHOLE_LAST` list, nor than the current work's
    gist, `_GIST_CHARS`; the user's messages: all of them), nothing in the second — but "Files
    and code" keeps its paths modified until `MODIFIED_PATHS`'s turn, the last before the
    user's messages.
    What changed in each of them goes at the files' turn, as the room needs: a change can be
    read again (the file, its diff), the user's words further on cannot."""
    if step == MODIFIED_PATHS:
        return _modified_size(body, notes=False) if floors else 0
    if step == USERS:  # no floor: the user's words give way only when they alone are over the room
        return len(body) if floors else 0
    floor = min(_FLOORS.get(step, _DEFAULT_FLOOR), int(limit_chars * _FLOOR_SHARE)) if floors else 0
    if floors and step in _WHOLE_LAST:
        floor = max(floor, _last_entry_size(body))
    if floors and step == "Current work":
        floor = max(floor, min(len(body), _GIST_CHARS))
    if step == FILES:  # the floor is for the paths read and the notes, beside the paths modified
        return floor + _modified_size(body, notes=False)
    return floor


def _last_entry_size(body: str) -> int:
    """The room a list needs to keep its most recent entry whole (`bounded.fit_list`): the entry,
    and the note for the others beside it when there are others."""
    entries = bounded.bullets(body)
    if not entries or bounded.is_note(entries[-1]):
        return 0
    return bounded.size(entries[-1:]) + (bounded.NOTE_CHARS if len(entries) > 1 else 0)


def shrink_section(title: str, body: str, chars: int) -> str:
    """`body` of section `title` in about `chars` characters, without cutting an entry's middle."""
    if len(body) <= chars:
        return body
    if title == "Files and code":
        return _files(body, chars)
    entries = bounded.bullets(body)
    if title == USERS and body.lstrip().startswith("- "):
        return bounded.as_bullets(_users(entries, max(0, chars)))
    if title in LIST_SECTIONS and body.lstrip().startswith("- "):
        fitted = bounded.as_bullets(bounded.fit_list(entries, max(0, chars), bounded.noun_for(title), min_width=None,
                                                     head_share=bounded.head_share_for(title)))
        # A list left with its note alone gives the note up when even that is over its room, or
        # when it names no version ("[… 3 entries left out …]" costs a line, says only that
        # something was there, and nothing can recall it); the user's messages are not such a
        # list (`_users`): their note is what says where every message left out stays.
        left = bounded.bullets(fitted)
        if all(map(bounded.is_note, left)) and (
                len(fitted) > chars or not any(map(bounded.noted, left))):
            return ""
        return fitted
    return _prose(body, chars)


def _users(entries: list[str], chars: int) -> list[str]:
    """The user's messages within `chars`: the oldest shortened first, each to its head and the
    version that keeps it whole (`bounded.shortened`), the latest whole; only when even all of
    them shortened are over the room does a note stand for the oldest ones (naming their
    versions, like any note), beside the latest whole — or shortened, when even that is over."""
    if bounded.size(entries) <= chars:
        return entries
    for width in _USER_HEAD_CHARS:  # each width from the oldest on, over the others at the width before
        short: list[str] = []  # shortened as far as needed (a long session's list: the first few)
        over = bounded.size(entries) - chars
        for whole in entries[:-1]:
            short.append(bounded.shortened(whole, width))
            over -= len(whole) - len(short[-1])
            if over <= 0:
                return [*short, *entries[len(short):]]
        entries = [*short, *entries[-1:]]
    fitted = bounded.fit_list(entries, chars, bounded.noun_for(USERS), min_width=None)
    if len(entries) > 1 and all(map(bounded.is_note, fitted)):  # not even the latest beside the note:
        noted = bounded.note(entries[:-1], bounded.noun_for(USERS))  # the latest shortened, rather than none
        fitted = next((kept for width in _USER_HEAD_CHARS[1:]
                       if bounded.size(kept := [noted, bounded.shortened(entries[-1], width)]) <= chars), fitted)
    return fitted


def fit_sections(sections: Mapping[str, str], limit: int, measure: Callable[[str], int] = len) -> dict[str, str]:
    """`sections` whose text (`fitted_text`) measures at most `limit` when that can be done by
    reducing sections in `REDUCE_ORDER` (first to their floors, then further); what room that
    leaves goes back to the sections it reduced (`_refilled`)."""
    fitted = {title: body for title, body in sections.items() if body}
    for floors in (True, False):
        for step in REDUCE_ORDER:
            title = FILES if step == MODIFIED_PATHS else step
            for _ in range(_ATTEMPTS):  # a measure that is not linear in characters may need another go
                text = format_sections(fitted, omit_empty=True)
                size = measure(text)
                if size <= limit:
                    return _refilled(sections, fitted, limit, measure)
                body = fitted.get(title, "")
                ratio = len(text) / max(1, size)  # characters per unit of `measure`
                room = int(limit * ratio * 0.97) - (len(text) - len(body))  # what the other sections leave it
                target = max(_keep(step, body, floors, int(limit * ratio)), room)
                if len(body) <= target or len(shrunk := shrink_section(title, body, target)) >= len(body):
                    break
                fitted[title] = shrunk
    return fitted


def _refilled(whole: Mapping[str, str], fitted: dict[str, str], limit: int, measure: Callable[[str], int]
              ) -> dict[str, str]:
    """`fitted` with the room its reduction left unused given back, the most important section
    first, each again reduced from its whole text (`shrink_section`) to what is left.

    The reduction goes a section at a time, each down to a floor that is a share of the whole
    summary: in a small summary, a floor holds less than one entry, and the section it empties
    (an error, the current work's first line) was worth more than the room it freed beyond
    what the summary needed."""
    for title in dict.fromkeys(FILES if step == MODIFIED_PATHS else step for step in reversed(REDUCE_ORDER)):
        body = fitted.get(title, "")
        if not whole.get(title) or body == whole[title]:
            continue
        text = format_sections(fitted, omit_empty=True)
        size = measure(text)
        ratio = len(text) / max(1, size)  # characters per unit of `measure`
        heading = 0 if body else len(title) + 5  # "\n\n## title\n"
        room = len(body) + int((limit - size) * ratio * 0.97) - heading
        for _ in range(_ATTEMPTS):  # a measure that is not linear in characters may need another go
            if room <= len(body) or len(grown := shrink_section(title, whole[title], room)) <= len(body):
                break
            over = measure(format_sections({**fitted, title: grown}, omit_empty=True)) - limit
            if over <= 0:
                fitted[title] = grown
                break
            room -= int(over * ratio) + 1
    return fitted


def fitted_text(sections: Mapping[str, str], limit: int, measure: Callable[[str], int] = len, *,
                headings: bool = True) -> str:
    """The summary of `sections` within `limit` (by `measure`) when reducing sections can get it
    there: every heading when the whole fits (and `headings`: the empty ones say "(none)");
    else the headings of empty sections are the first to go, then the sections' text
    (`fit_sections`)."""
    whole = format_sections(sections, omit_empty=not headings)
    if measure(whole) <= limit:
        return whole
    return format_sections(fit_sections(sections, limit, measure), omit_empty=True)


def fit_summary_text(text: str, limit: int, measure: Callable[[str], int] = len) -> str:
    """A summary of any writer in our sections, within `limit` (by `measure`) when reducing
    sections can get it there; a section it does not name stays unnamed (`every_heading`)."""
    return fitted_text(parse_summary(text), limit, measure, headings=every_heading(text))
