"""Reading transcripts: JSONL files line by line, and whole JSON documents with each item's line.

* `read_objects` turns a JSONL file into JSON objects, each with its 1-based line number. A
  truncated or garbage line, a JSON value that is not an object, or invalid UTF-8 becomes a
  `TranscriptError` and the rest of the file still reads; two objects written on one line
  without a newline are both recovered.
* `read_document` reads a file that is one JSON document (Gemini CLI's session file, an
  OpenHands trajectory, a SWE-agent ``.traj``, an OpenCode export): the document, and the
  items of its arrays each with the line it starts on, so that an event made from an item
  names its line like a JSONL line does. A document that does not parse is one
  `TranscriptError` at the line and column where it breaks, and nothing of it is read.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TranscriptError
from .reports import InFlight, RecoveredLine


@dataclass(slots=True)
class SourceObject:
    """A JSON object read from a transcript: its line, and its rank on that line (almost always 0);
    an item of a JSON document (`read_document`) also has its index in its array, and
    `in_document` set: an agent rewrites such a document whole as it grows (SWE-agent's
    trajectory before its history, OpenCode's session info before its messages), so the line
    an item starts on moves and only its index names it for good."""

    line: int
    rank: int
    obj: dict[str, Any]
    index: int | None = None
    in_document: bool = False

    @property
    def key(self) -> str:
        if self.index is not None:
            return f"I{self.index}"
        return f"L{self.line}" if self.rank == 0 else f"L{self.line}.{self.rank}"


@dataclass(slots=True)
class SourceFile:
    path: str
    objects: list[SourceObject]
    issues: list[TranscriptError]
    lines: int


_WS = re.compile(r"[ \t\r\n]*")
_NEWLINE = re.compile("\n")


def read_objects(path: str | Path) -> SourceFile:
    """The JSON objects of a JSONL file, tolerant of everything a crashed writer leaves behind."""
    with open(path, "rb") as fh:
        return parse_bytes(str(path), fh.read())


def parse_bytes(name: str, data: bytes) -> SourceFile:
    """The JSON objects of JSONL bytes (`name` is the path the issues name). A UTF-8 byte-order
    mark before the first line (Windows editors write one) is not part of the JSON."""
    issues: list[TranscriptError] = []
    objects: list[SourceObject] = []
    raw_lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
        open_line = 0
    else:
        open_line = len(raw_lines)  # a last line without its newline: the agent may still be writing it
    nonfinite: list[str] = []

    def constant(value: str) -> None:
        nonfinite.append(value)
        return None

    decoder = json.JSONDecoder(parse_constant=constant)
    decode = decoder.decode
    raw_decode = decoder.raw_decode
    for number, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        recovered: RecoveredLine | None = None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", "replace")
            recovered = RecoveredLine(name, number, f"invalid UTF-8 at byte {exc.start}: undecodable bytes replaced "
                                                    "by U+FFFD, the rest of the line imported")
        try:
            value = decode(text)
        except ValueError:
            if number == open_line:  # cut anywhere (a character, a `true`, a number): the rest is coming
                issues.append(InFlight(name, number, "line not imported yet: it ends without its newline and is "
                                                     "not whole JSON (the agent is still writing it)"))
                continue
            if recovered is not None:
                issues.append(recovered)
            _recover(name, number, text, raw_decode, objects, issues)
        else:
            if recovered is not None:
                issues.append(recovered)
            if isinstance(value, dict):
                objects.append(SourceObject(number, 0, value))
            else:
                issues.append(TranscriptError(name, number, f"not a JSON object (a JSON {_json_type(value)})"))
        if nonfinite:
            constants = ", ".join(sorted(set(nonfinite)))
            issues.append(RecoveredLine(name, number, f"non-standard JSON constant(s) {constants} read as null"))
            nonfinite.clear()
    return SourceFile(name, objects, issues, len(raw_lines))


def _recover(name: str, number: int, text: str, raw_decode: Any, objects: list[SourceObject],
             issues: list[TranscriptError]) -> None:
    """Read every JSON value on a line that is not exactly one (two objects glued together, a cut line)."""
    pos, end, rank = 0, len(text), 0
    while True:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= end:
            break
        try:
            value, pos = raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
            what = "truncated JSON" if cut else "malformed JSON"
            after = f" after {rank} object(s)" if rank else ""
            issues.append(TranscriptError(name, number, f"{what}{after} at column {exc.colno}: {exc.msg}"))
            return
        if isinstance(value, dict):
            objects.append(SourceObject(number, rank, value))
        else:
            issues.append(TranscriptError(name, number, f"value {rank + 1} on the line is not a JSON object "
                                                        f"(a JSON {_json_type(value)})"))
        rank += 1
    if rank > 1:
        issues.append(RecoveredLine(name, number, f"{rank} JSON values on one line (a missing newline); "
                                                  "each was read"))


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


# --------------------------------------------------------------------------- JSON documents


@dataclass(slots=True)
class Document:
    """A file that is one JSON document: its value (None when it did not parse), and the items
    of its arrays as `SourceObject`s with the line each starts on: ``items[""]`` for a document
    that is an array, ``items[key]`` for an array under a top-level key.

    A value of such an array that is not an object is reported (in `issues`) only once the
    array is asked for: a document holds arrays of strings (Gemini CLI's ``directories``) that
    are no array of records, and a record left out of one that is read is a loss."""

    path: str
    root: Any
    items: dict[str, list[SourceObject]]
    issues: list[TranscriptError]
    lines: int
    pending: dict[str, list[TranscriptError]] = field(default_factory=dict)

    def objects(self, key: str = "") -> list[SourceObject]:
        self.issues.extend(self.pending.pop(key, ()))
        return self.items.get(key, [])


def read_document(path: str | Path) -> Document:
    with open(path, "rb") as fh:
        return parse_document(str(path), fh.read())


def parse_document(name: str, data: bytes) -> Document:
    """`data` as one JSON document (see `Document`); a value of an array that is not an object is
    reported against its line and left out, as a JSONL line would be."""
    issues: list[TranscriptError] = []
    try:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
        line = data[:exc.start].count(b"\n") + 1
        issues.append(RecoveredLine(name, line, f"invalid UTF-8 at byte {exc.start}: undecodable bytes replaced "
                                                "by U+FFFD, the rest of the file imported"))
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        what = "truncated JSON (the file ends inside the document)" if cut else "malformed JSON"
        issues.append(TranscriptError(name, exc.lineno, f"{what} at column {exc.colno}: {exc.msg}; nothing of "
                                                        "the file was imported"))
        return Document(name, None, {}, issues, lines)
    starts = [m.start() for m in _NEWLINE.finditer(text)]  # where each line ends

    def line_of(pos: int) -> int:
        return bisect.bisect_left(starts, pos) + 1

    items: dict[str, list[SourceObject]] = {}
    pending: dict[str, list[TranscriptError]] = {}
    start = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if isinstance(root, list):
        items[""] = _elements(name, text, start, line_of, pending.setdefault("", []))
    elif isinstance(root, dict):
        for key, pos in _members(text, start):
            if isinstance(root.get(key), list):
                items[key] = _elements(name, text, pos, line_of, pending.setdefault(key, []))
    return Document(name, root, items, issues, lines, pending)


_DECODER = json.JSONDecoder()


def _members(text: str, pos: int) -> list[tuple[str, int]]:
    """(key, where its value starts) of each member of the object at `pos` (a valid document)."""
    found: list[tuple[str, int]] = []
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    while text[pos] != "}":
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]  # past ':'
        found.append((key, pos))
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos] == ",":
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    return found


def _elements(name: str, text: str, pos: int, line_of: Any, issues: list[TranscriptError]) -> list[SourceObject]:
    """The objects of the array at `pos`, each with the line it starts on (rank: its index)."""
    found: list[SourceObject] = []
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    index = 0
    while text[pos] != "]":
        line = line_of(pos)
        value, pos = _DECODER.raw_decode(text, pos)
        if isinstance(value, dict):
            found.append(SourceObject(line, 0, value, index, in_document=True))
        else:
            issues.append(TranscriptError(name, line, f"item {index} is not a JSON object (a JSON "
                                                      f"{_json_type(value)}); left out"))
        index += 1
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos] == ",":
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    return found
