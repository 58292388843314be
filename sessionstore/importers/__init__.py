"""Importers: real agent transcripts (Claude Code, Pi, Codex) into sessionstore events.

```python
from sessionstore.importers import detect_format, parse_file, import_file, import_path

detect_format("session.jsonl")            # "claude-code" | "pi" | "codex" | "sessionstore" (our export);
                                          # raises UnknownFormat
parsed = parse_file("session.jsonl")      # pure: ParsedTranscript(session_id, metadata, events, issues, …)
result = import_file(store, "session.jsonl")               # FileImport (+ .subagents for Claude Code)
report = import_path(store, "~/.claude/projects", on_progress=callback)   # ImportReport
```

Parsing never touches the store; importing is idempotent (deterministic event ids): a
re-import adds nothing, a grown file adds only its new events, and a file whose stored
events are not a prefix of its parsed ones is reported and left alone. Broken lines are
reported as `TranscriptError(path, line, reason)` (line 0: the whole file) and the rest
imports. Format-specific mapping decisions are documented in each module.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import TranscriptError, UnknownFormat
from . import claude_code, codex, pi, sessionstore_jsonl
from .base import (BATCH_SIZE, FORMATS, WHOLE_FILE, Counts, FileImport, ImportReport, ParsedSession,
                   ParsedTranscript, SessionImport, parse_bytes, read_objects, store_parsed)

__all__ = [
    "BATCH_SIZE", "FORMATS", "Counts", "FileImport", "ImportReport", "ParsedSession", "ParsedTranscript",
    "ProgressCallback", "SessionImport", "detect_format", "import_file", "import_path", "parse_file",
]

ProgressCallback = Callable[[int, int, FileImport], Any]
"""``on_progress(done, total, file_import)``: called after each file (subagent files count with their main)."""

_DETECT_LINES = 40
_DETECTORS = ((sessionstore_jsonl.FORMAT, sessionstore_jsonl.looks_like), ("codex", codex.looks_like),
              ("claude-code", claude_code.looks_like), ("pi", pi.looks_like))


def detect_format(path: str | Path) -> str:
    """The transcript format of `path`, from its first lines; raises `UnknownFormat`."""
    name = str(path)
    p = Path(path)
    if not p.is_file():
        raise UnknownFormat(name, "is not a file")
    votes = {fmt: 0 for fmt, _ in _DETECTORS}
    seen = 0
    with open(p, "rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            seen += 1
            for so in parse_bytes(name, raw).objects:
                for fmt, looks_like in _DETECTORS:
                    if looks_like(so.obj):
                        votes[fmt] += 1
                        break
            if seen >= _DETECT_LINES or max(votes.values()) >= 5:
                break
    if seen == 0:
        raise UnknownFormat(name, "is empty: no transcript lines")
    best = max(votes, key=lambda fmt: votes[fmt])
    if votes[best] == 0:
        raise UnknownFormat(name, "is not a Claude Code, Pi or Codex transcript (no line of its first "
                                  f"{seen} looks like one)")
    return best


def parse_file(path: str | Path, format: str | None = None) -> ParsedTranscript:
    """Parse a transcript without touching any store. `format` skips detection."""
    fmt = format or detect_format(path)
    if fmt == "claude-code":
        parsed = claude_code.parse_file(path)
    elif fmt == "pi":
        parsed = pi.parse(read_objects(path))
    elif fmt == "codex":
        parsed = codex.parse(read_objects(path))
    elif fmt == sessionstore_jsonl.FORMAT:
        parsed = sessionstore_jsonl.parse(read_objects(path))
    else:
        raise UnknownFormat(str(path), f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    if parsed.lines == 0:
        parsed.issues.append(TranscriptError(str(path), WHOLE_FILE, "the file is empty"))
    return parsed


def import_file(store: Any, path: str | Path, format: str | None = None, *,
                subagents: bool = True) -> FileImport:
    """Import one transcript; for a Claude Code main file, its subagent files too (`.subagents`)."""
    started = time.perf_counter()
    fmt = format or detect_format(path)
    parsed = parse_file(path, fmt)
    result = _store(store, parsed, started)  # its `seconds` are its own; subagent files have theirs
    if fmt == "claude-code" and subagents and parsed.metadata.get("role") is None:
        for sub_path in claude_code.subagent_files(path, parsed.session_id):
            sub_started = time.perf_counter()
            sub = claude_code.parse_file(sub_path, parent=parsed)
            sub_result = _store(store, sub, sub_started)
            sub_result.parent_path = str(path)
            result.subagents.append(sub_result)
    return result


def _store(store: Any, parsed: ParsedTranscript, started: float) -> FileImport:
    sessions, issues = store_parsed(store, parsed)
    return FileImport(parsed.path, parsed.format, sessions, [*parsed.issues, *issues], parsed.lines,
                      time.perf_counter() - started)


def import_path(store: Any, *paths: str | Path, on_progress: ProgressCallback | None = None) -> ImportReport:
    """Import files and folders (searched recursively for ``*.jsonl``).

    Claude Code subagent files whose main file is among them are imported with it. A file of
    unknown format, or that cannot be read, is reported (an issue on line 0) and skipped.
    """
    started = time.perf_counter()
    report = ImportReport()
    files: list[Path] = []
    seen: set[Path] = set()
    for given in paths:
        p = Path(given).expanduser()
        found = sorted(f for f in p.rglob("*.jsonl") if f.is_file()) if p.is_dir() else [p]
        for f in found:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                files.append(f)
    work = [f for f in files if not _imported_with_main(f, seen)]
    total = len(work)
    for done, f in enumerate(work, 1):
        try:
            result = import_file(store, f)
        except UnknownFormat as exc:
            result = FileImport(str(f), None, issues=[TranscriptError(str(f), WHOLE_FILE, _reason(exc))])
        except OSError as exc:
            result = FileImport(str(f), None, issues=[TranscriptError(str(f), WHOLE_FILE,
                                                                      f"cannot read: {exc.strerror or exc}")])
        report.files.append(result)
        report.files.extend(result.subagents)
        if on_progress is not None:
            on_progress(done, total, result)
    report.seconds = time.perf_counter() - started
    return report


def _reason(exc: UnknownFormat) -> str:
    text = str(exc)
    prefix = f"{exc.path}: "
    return f"unknown format: {text[len(prefix):] if text.startswith(prefix) else text}"


def _imported_with_main(path: Path, files: set[Path]) -> bool:
    """A Claude Code subagent file whose main transcript is also being imported."""
    if not claude_code.is_subagent_path(path):
        return False
    parent_sid = claude_code._first_value(path, "sessionId")
    main = claude_code.parent_path_of(path, parent_sid if isinstance(parent_sid, str) else None)
    if main is None or main.resolve() not in files:
        return False
    # the main file finds it only if it names the same session (old layout) or sits in <main>/subagents/
    return path.parent.name == "subagents" or parent_sid == main.stem
