"""Line-number prefixes that agents put on file reads, and the notices they append.

Agents hand a file to the model with line numbers so that it can cite and edit by line:
Claude Code's Read tool writes `     1→import x` (right-aligned number, `→`), newer
versions and other tools `12\\tcode`, `12: code`, `L12: code` or `12| code`. To outline
such a read the prefixes must go, and the number on the first line must be kept, because
a read that starts mid-file (an offset) must keep its original line numbers.

Only text where (nearly) every line carries a prefix and the numbers go up by exactly one
is treated as numbered: code that happens to start with `1:` is left alone. What comes
after the numbered lines (Claude Code's `<system-reminder>` blocks, Pi's
`[Showing lines 1-1603 of 2377 …]` or `[88 more lines in file …]`) is not part of the
file: it is returned apart, as `trailer`, so that a caller can put it back.

Pure functions: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["NumberedSource", "split_trailer", "strip_line_numbers"]

# Prefix styles, most distinctive first; each captures the number, the rest of the line is code.
_PREFIXES: Final = (
    re.compile(r"^ *(\d+)→"),           # Claude Code Read: "     1→"
    re.compile(r"^ *(\d+)\t"),          # "1\t" (Claude Code 2.x, cat -n, many tools)
    re.compile(r"^ *L(\d+): ?"),        # "L12: "
    re.compile(r"^ *(\d+)│ ?"),         # our own outline format
    re.compile(r"^ *(\d+): ?"),         # "12: "
    re.compile(r"^ *(\d+) ?\| ?"),      # "12| " / "12 | "
)
# Numbers alone ("12:" with the trailing space stripped from an empty line) still count.
_BARE: Final = re.compile(r"^ *L?(\d+)[→:│|]?\s*$")

# A single numbered line is only trusted in a style nobody writes by accident.
_DISTINCTIVE: Final = frozenset({0, 1})
# Share of the non-blank lines that must be numbered when the rest is not a known notice.
_MIN_NUMBERED_SHARE: Final = 0.95

# Notices that agents append after the content of a read.
_NOTICE_LINE: Final = re.compile(
    r"^\s*\[(?:\.\.\.|…)?\s*(?:Showing lines|\d+ more lines?|File truncated|Output truncated|"
    r"Truncated|Content truncated|\d+ lines? (?:omitted|truncated))[^\n]*\]\s*$",
    re.IGNORECASE,
)
_REMINDER_OPEN: Final = re.compile(r"^\s*<system-reminder>")
_REMINDER_CLOSE: Final = re.compile(r"</system-reminder>\s*$")


@dataclass(frozen=True, slots=True)
class NumberedSource:
    """A read with its line-number prefixes removed."""

    source: str  # the text without prefixes (and without the trailer), ending with a newline
    first_line: int  # the number on the first line: 1 for a read from the top
    trailer: str = ""  # notices that followed the numbered lines, verbatim
    numbered: bool = False  # whether prefixes were found and removed


def strip_line_numbers(text: str) -> NumberedSource:
    """Removes consistent line-number prefixes; returns the text unchanged when there are none."""
    lines = text.split("\n")
    style = _detect_style(lines)
    if style is None:
        return NumberedSource(source=text, first_line=1)
    first_line, contents, rest = _numbered_run(lines, style)
    trailer = "\n".join(rest)
    if not _acceptable(contents, rest, style):
        return NumberedSource(source=text, first_line=1)
    return NumberedSource(
        source="\n".join(contents) + "\n",
        first_line=first_line,
        trailer=trailer.strip("\n"),
        numbered=True,
    )


def split_trailer(text: str) -> tuple[str, str]:
    """(content, trailer) for an unnumbered read that ends with agent notices (Pi's truncation notes).

    The trailer is the run of notice lines and `<system-reminder>` blocks at the end, with
    the blank lines around them; the content is returned without them.
    """
    lines = text.split("\n")
    end = len(lines)
    cut = _trailer_start(lines, 0, end)
    if cut == end:
        return text, ""
    while cut > 0 and not lines[cut - 1].strip():
        cut -= 1
    content = "\n".join(lines[:cut])
    trailer = "\n".join(lines[cut:]).strip("\n")
    return (content + "\n" if content else content), trailer


# --------------------------------------------------------------------------- steps


def _detect_style(lines: list[str]) -> int | None:
    """Which prefix style the first line uses (an index into _PREFIXES), if any."""
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        return None
    for index, pattern in enumerate(_PREFIXES):
        if pattern.match(first):
            return index
    return None


def _numbered_run(lines: list[str], style: int) -> tuple[int, list[str], list[str]]:
    """(first number, contents of the consecutive numbered lines, lines after them)."""
    pattern = _PREFIXES[style]
    contents: list[str] = []
    first_line = 0
    expected: int | None = None
    index = 0
    # Blank lines before the first numbered line are not part of the file.
    while index < len(lines) and not lines[index].strip():
        index += 1
    while index < len(lines):
        line = lines[index]
        match = pattern.match(line)
        if match is not None:
            number, content = int(match.group(1)), line[match.end():]
        else:
            bare = _BARE.match(line)
            if bare is None:
                break
            number, content = int(bare.group(1)), ""
        if expected is not None and number != expected:
            break
        if expected is None:
            first_line = number
        contents.append(content)
        expected = number + 1
        index += 1
    return first_line, contents, lines[index:]


def _acceptable(contents: list[str], rest: list[str], style: int) -> bool:
    """Numbered when the rest is only notices, or too small to doubt the numbering."""
    if not contents:
        return False
    if len(contents) == 1 and style not in _DISTINCTIVE:
        return False
    if _trailer_start(rest, 0, len(rest)) == 0:
        return True
    leftover = sum(1 for line in rest if line.strip())
    return len(contents) >= _MIN_NUMBERED_SHARE * (len(contents) + leftover)


def _trailer_start(lines: list[str], start: int, end: int) -> int:
    """Index where the trailing run of notices (and blank lines) begins; `end` if there is none."""
    cut = end
    index = end
    while index > start:
        line = lines[index - 1]
        if not line.strip():
            index -= 1
            continue
        if _NOTICE_LINE.match(line):
            index -= 1
            cut = index
            continue
        if _REMINDER_CLOSE.search(line):
            opening = _reminder_open(lines, start, index - 1)
            if opening is None:
                break
            index = opening
            cut = index
            continue
        break
    if cut < end and all(not line.strip() for line in lines[start:cut]):
        return start
    return cut


def _reminder_open(lines: list[str], start: int, close: int) -> int | None:
    for index in range(close, start - 1, -1):
        if _REMINDER_OPEN.match(lines[index]):
            return index
    return None
