"""Which agent wrote a file: the formats the importers know, detected from the content.

Each format registers how to recognise it — `looks_like(obj)` for one line of a JSONL file,
`looks_like_document(value)` for a file that is one JSON document — and how to parse a file
(`parse(path)`, pure: no store). A format whose transcript spans several files (a Claude Code
subagent file, an OpenCode message or part file) also says which transcript file such a
companion file belongs to (`owner`), so that a watcher re-imports the right one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..errors import UnknownFormat
from .reading import parse_bytes
from .reports import ParsedTranscript

LooksLike = Callable[[Any], bool]
ParsePath = Callable[[Path], ParsedTranscript]
Owner = Callable[[Path], "Path | None"]

# JSONL files are read line by line; these are also looked into as whole JSON documents.
DOCUMENT_SUFFIXES: Final = (".json", ".traj")
# Transcripts that are text, not JSON (Aider's chat history): told by their first lines alone.
TEXT_SUFFIXES: Final = (".md",)
# Transcripts kept in a database file (OpenCode 1.x's SQLite database): told by `looks_like_file`.
DATABASE_SUFFIXES: Final = (".db",)
TRANSCRIPT_SUFFIXES: Final = (".jsonl", *DOCUMENT_SUFFIXES, *TEXT_SUFFIXES, *DATABASE_SUFFIXES)
_DETECT_LINES = 40
_TEXT_HEAD = 4096


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    label: str  # how a person names the agent ("Gemini CLI")
    parse: ParsePath
    looks_like: LooksLike | None = None  # one JSONL line
    looks_like_document: LooksLike | None = None  # a whole JSON document
    owner: Owner | None = None  # the transcript file a companion file belongs to
    folders: tuple[str, ...] = ()  # where the agent keeps its sessions (``~`` is the user's home)
    looks_like_text: LooksLike | None = None  # the start of a text transcript (TEXT_SUFFIXES)
    looks_like_file: Callable[[Path], bool] | None = None  # a binary file, opened by the format (a database)


# Detection order matters where formats overlap: the first whose detector accepts a line gets its vote.
_FORMATS: list[Format] = []


def register(fmt: Format, *, before: str | None = None) -> None:
    """Add (or replace) a format; `before` puts it ahead of an existing one."""
    entries = [f for f in _FORMATS if f.name != fmt.name]
    at = next((i for i, f in enumerate(entries) if f.name == before), len(entries))
    entries.insert(at, fmt)
    _FORMATS[:] = entries


def known() -> list[Format]:
    return list(_FORMATS)


def get(name: str, path: str | Path) -> Format:
    for fmt in _FORMATS:
        if fmt.name == name:
            return fmt
    raise UnknownFormat(str(path), f"format {name!r} is not one of {', '.join(f.name for f in _FORMATS)}")


def agents() -> str:
    """"Claude Code, Pi or Codex": the agents whose transcripts are known, for messages."""
    labels = list(dict.fromkeys(f.label for f in _FORMATS if f.name != "sessionstore"))
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} or {labels[-1]}"


def detect(path: str | Path) -> str:
    """The format of `path`, from its content; raises `UnknownFormat` (with the line where a JSON
    document stops parsing, when that is why)."""
    name = str(path)
    p = Path(path)
    if not p.is_file():
        raise UnknownFormat(name, "is not a file")
    if p.suffix in TEXT_SUFFIXES:
        return _detect_text(p, name)
    for fmt in _FORMATS:
        if fmt.looks_like_file is not None and fmt.looks_like_file(p):
            return fmt.name
    if p.suffix in DATABASE_SUFFIXES:  # not read line by line: a database is binary and can be large
        raise UnknownFormat(name, f"is not a {agents()} database")
    votes = {f.name: 0 for f in _FORMATS}
    seen = 0
    with open(p, "rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            seen += 1
            for so in parse_bytes(name, raw).objects:
                for fmt in _FORMATS:
                    if fmt.looks_like is not None and fmt.looks_like(so.obj):
                        votes[fmt.name] += 1
                        break
            if seen >= _DETECT_LINES or max(votes.values(), default=0) >= 5:
                break
    if seen == 0:
        raise UnknownFormat(name, "is empty: no transcript lines")
    best = max(votes, key=lambda f: votes[f]) if votes else None
    if best is not None and votes[best] > 0:
        return best
    return _detect_document(p, name, seen)


def _detect_document(p: Path, name: str, seen: int) -> str:
    data = p.read_bytes().removeprefix(b"\xef\xbb\xbf")
    if data.lstrip()[:1] not in (b"{", b"["):
        raise UnknownFormat(name, f"is not a {agents()} transcript (no line of its first {seen} looks like one)")
    try:
        value = json.loads(data.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # one JSON value after another: lines, none of them a transcript's
            raise UnknownFormat(name, f"is not a {agents()} transcript (no line of its first {seen} looks like "
                                      "one)") from None
        raise UnknownFormat(name, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}), so "
                                  "its format cannot be told", line=exc.lineno) from None
    for fmt in _FORMATS:
        if fmt.looks_like_document is not None and fmt.looks_like_document(value):
            return fmt.name
    raise UnknownFormat(name, f"is not a {agents()} transcript (a JSON document none of them writes)")


def _detect_text(p: Path, name: str) -> str:
    with open(p, "rb") as fh:
        head = fh.read(_TEXT_HEAD).decode("utf-8", "replace")
    for fmt in _FORMATS:
        if fmt.looks_like_text is not None and fmt.looks_like_text(head):
            return fmt.name
    raise UnknownFormat(name, f"is not a {agents()} transcript (its first lines are none of theirs)")


def recognised(path: Path) -> bool:
    """Whether some format reads `path` (a folder's JSON files are imported only then)."""
    try:
        detect(path)
    except (UnknownFormat, OSError):
        return False
    return True


def agent_folders() -> list[Path]:
    """Every known agent's session folder that exists on this machine, in registration order."""
    found: list[Path] = []
    for fmt in _FORMATS:
        for folder in fmt.folders:
            path = Path(folder).expanduser()
            if path.is_dir() and path not in found:
                found.append(path)
    return found


def owner_of(path: Path) -> Path | None:
    """The transcript file `path` is part of, when it is a companion file of one (else None)."""
    for fmt in _FORMATS:
        if fmt.owner is not None:
            found = fmt.owner(path)
            if found is not None:
                return found
    return None
