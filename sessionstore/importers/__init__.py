"""Importers: real agent transcripts (Claude Code, Pi, Codex, Gemini CLI, OpenCode, OpenHands,
SWE-agent, GitHub Copilot CLI, Qwen Code, Cline / Roo Code / Kilo Code, Aider, Cursor, mini-SWE-agent) into
sessionstore events.

One module per agent format, each a pure reader from the agent's files to events; the rules
they share are in `rules` (events, pairing, compaction payloads), `reading` (JSONL lines,
JSON documents), `storing` (idempotent writes) and `formats` (detection by content).

```python
from sessionstore.importers import detect_format, parse_file, import_file, import_path

detect_format("session.jsonl")            # "claude-code" | "pi" | "codex" | "gemini-cli" | "opencode" |
                                          # "openhands" | "swe-agent" | "copilot-cli" | "qwen-code" |
                                          # "sessionstore" (our export);
                                          # raises UnknownFormat
parsed = parse_file("session.jsonl")      # pure: ParsedTranscript(session_id, metadata, events, issues, …)
result = import_file(store, "session.jsonl")               # FileImport (+ .subagents: Claude Code, Gemini CLI)
report = import_path(store, "~/.claude/projects", on_progress=callback)   # ImportReport
find_transcripts("~/.claude/projects")    # the files import_path would look at, nothing read yet
register_format("my-agent", looks_like, parse_path)   # a format of your own, detected and imported alike
transcript_of("…/storage/part/msg_…/prt_….json")     # the transcript a changed file belongs to (`watch`)
```

Parsing never touches the store; importing is idempotent (deterministic event ids): a
re-import adds nothing, a grown file adds only its new events (and what it now says about its
session: metadata is learnt, `store.update_metadata`), an older, shorter copy adds nothing,
and a file whose stored events are not a prefix of its parsed ones is reported and left alone —
or, with ``on_divergence="fork"``, continued in a new session forked at the last common version.
Two writers of one session (`watch` beside `import`, two copies) both succeed: a write that
loses the race reads again (`storing`). A session is known by its content, never its file's name.
What cannot be read is reported as `TranscriptError(path, line, reason)` and the rest imports:
a JSONL line, or a record of a JSON document (named by the line it starts on), that is not
JSON, not an object, or not a record of its format. A value of the wrong type inside a record
(a list where a string belongs, a missing field) never stops the parse: the record is read as
far as it makes sense, or reported. A JSON document that does not parse is one error at the
line where it breaks, and nothing of it is imported; line 0 names the whole file (an empty
file, a session whose id the store cannot hold). A `TranscriptWarning` (a recovered line, a
divergence continued in a fork) lost nothing; an `InFlight` one names a record the agent is
still writing (an OpenCode message not yet complete, a Gemini CLI reply still waiting for its
tokens or tool results, a last line without its newline, an event a later line would still
change: `EventBuilder.wait`), imported once it is done, so that what is stored never changes and
importing a growing file ends as importing it once does.
Format-specific mapping decisions are documented in each module.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import TranscriptError, UnknownFormat
from . import (aider, claude_code, cline, codex, copilot_cli, cursor, formats, gemini_cli, mini_swe_agent, opencode,
               opencode_db, openhands, pi, qwen_code, sessionstore_jsonl, swe_agent)
from .formats import DATABASE_SUFFIXES, DOCUMENT_SUFFIXES, TEXT_SUFFIXES, Format, LooksLike, ParsePath, agent_folders
from .reading import read_objects
from .reports import (FORMATS, ON_DIVERGENCE, WHOLE_FILE, Counts, FileImport, ImportReport, InFlight, ParsedSession,
                      ParsedTranscript, RecoveredLine, SessionImport, TranscriptWarning)
from .rules import describe
from .storing import BATCH_SIZE, store_parsed

__all__ = [
    "BATCH_SIZE", "FORMATS", "ON_DIVERGENCE", "Counts", "FileImport", "ImportReport", "InFlight", "ParsedSession",
    "ParsedTranscript", "ProgressCallback", "RecoveredLine", "SessionImport", "TranscriptWarning", "detect_format",
    "agent_folders", "find_transcripts", "import_file", "import_path", "parse_file", "register_format", "transcript_of",
]

ProgressCallback = Callable[[int, int, FileImport], Any]
"""``on_progress(done, total, file_import)``: called after each file (subagent files count with their main)."""


def _lines(parse: Callable[[Any], ParsedTranscript]) -> ParsePath:
    return lambda path: parse(read_objects(path))


# Detection order matters where formats overlap: the first whose `looks_like` accepts a line gets its vote.
for _fmt in (Format(sessionstore_jsonl.FORMAT, "sessionstore", _lines(sessionstore_jsonl.parse),
                    sessionstore_jsonl.looks_like),
             Format(codex.FORMAT, "Codex", _lines(codex.parse), codex.looks_like, folders=("~/.codex/sessions",)),
             Format(claude_code.FORMAT, "Claude Code", claude_code.parse_file, claude_code.looks_like,
                    owner=claude_code.main_file_of, folders=("~/.claude/projects",)),
             Format(pi.FORMAT, "Pi", _lines(pi.parse), pi.looks_like, folders=("~/.pi/agent/sessions",)),
             Format(gemini_cli.FORMAT, "Gemini CLI", gemini_cli.parse_file, gemini_cli.looks_like,
                    gemini_cli.looks_like_document, owner=gemini_cli.main_file_of, folders=("~/.gemini/tmp",)),
             Format(opencode.FORMAT, "OpenCode", opencode.parse_file, None, opencode.looks_like_document,
                    owner=opencode.session_file_of, folders=("~/.local/share/opencode",),
                    looks_like_file=opencode_db.looks_like_database),
             Format(openhands.FORMAT, "OpenHands", openhands.parse_file, openhands.looks_like,
                    openhands.looks_like_document),
             Format(swe_agent.FORMAT, "SWE-agent", swe_agent.parse_file, None, swe_agent.looks_like_document),
             Format(copilot_cli.FORMAT, "Copilot CLI", _lines(copilot_cli.parse), copilot_cli.looks_like,
                    folders=(copilot_cli.FOLDER,)),
             Format(cline.FORMAT, "Cline", cline.parse_file, None, cline.looks_like_document,
                    owner=cline.history_file_of, folders=cline.FOLDERS),
             Format(aider.FORMAT, "Aider", aider.parse_file, looks_like_text=aider.looks_like_text),
             Format(cursor.FORMAT, "Cursor", _lines(cursor.parse), cursor.looks_like, folders=cursor.FOLDERS),
             Format(mini_swe_agent.FORMAT, "mini-SWE-agent", mini_swe_agent.parse_file, None,
                    mini_swe_agent.looks_like_document, folders=("~/.config/mini-swe-agent",))):
    formats.register(_fmt)
# Qwen Code's records have Claude Code's envelope (uuid, sessionId, type user/assistant/system): asked first.
formats.register(Format(qwen_code.FORMAT, "Qwen Code", _lines(qwen_code.parse), qwen_code.looks_like,
                        folders=(qwen_code.FOLDER,)), before=claude_code.FORMAT)


def register_format(name: str, looks_like: LooksLike | None, parse: ParsePath, *, before: str | None = None,
                    looks_like_document: LooksLike | None = None, label: str | None = None) -> None:
    """Teach `detect_format`, `parse_file` and `import_path` a transcript format.

    `looks_like(obj)` says whether one JSON line is of the format (JSONL files);
    `looks_like_document(value)` whether a file that is one JSON document is; `parse(path)`
    turns a file into a `ParsedTranscript` (pure: no store). `before` puts the detector ahead
    of an existing one (for formats whose lines another detector would also accept).
    """
    formats.register(Format(name, label or name, parse, looks_like, looks_like_document), before=before)


def detect_format(path: str | Path) -> str:
    """The transcript format of `path`, from its content (its first lines, or the JSON document
    it is); raises `UnknownFormat`."""
    return formats.detect(path)


def parse_file(path: str | Path, format: str | None = None) -> ParsedTranscript:
    """Parse a transcript without touching any store. `format` skips detection."""
    fmt = format or detect_format(path)
    parsed = formats.get(fmt, path).parse(Path(path))
    if parsed.lines == 0:
        parsed.issues.append(TranscriptError(str(path), WHOLE_FILE, "the file is empty"))
    if fmt != sessionstore_jsonl.FORMAT:  # our export carries the session's metadata verbatim: keep it so
        describe(parsed)
    return parsed


def import_file(store: Any, path: str | Path, format: str | None = None, *,
                subagents: bool = True, on_divergence: str = "fail") -> FileImport:
    """Import one transcript; for a Claude Code or Gemini CLI main file, its subagent files too (`.subagents`).

    `on_divergence`: see `store_parsed` (``"fail"`` or ``"fork"``).
    """
    started = time.perf_counter()
    fmt = format or detect_format(path)
    parsed = parse_file(path, fmt)
    result = _store(store, parsed, started, on_divergence)  # its `seconds` are its own; subagent files have theirs
    if fmt in ("claude-code", "gemini-cli") and subagents and parsed.metadata.get("role") is None:
        for sub_path in _subagent_files(fmt, path, parsed.session_id):
            sub_started = time.perf_counter()
            sub = (claude_code.parse_file(sub_path, parent=parsed) if fmt == "claude-code"
                   else gemini_cli.parse_file(sub_path))
            describe(sub)
            sub_result = _store(store, sub, sub_started, on_divergence)
            sub_result.parent_path = str(path)
            result.subagents.append(sub_result)
    return result


def _subagent_files(fmt: str, path: str | Path, session_id: str) -> list[Path]:
    if fmt == "claude-code":
        return claude_code.subagent_files(path, session_id)
    return gemini_cli.subagent_files(path, session_id)


def _store(store: Any, parsed: ParsedTranscript, started: float, on_divergence: str) -> FileImport:
    sessions, issues = store_parsed(store, parsed, on_divergence=on_divergence)
    return FileImport(parsed.path, parsed.format, sessions, [*parsed.issues, *issues], parsed.lines,
                      time.perf_counter() - started)


def find_transcripts(*paths: str | Path) -> list[Path]:
    """The files `import_path` would import, in order: each file given, and under each folder given
    (recursively) every ``*.jsonl`` file and every ``*.json`` / ``*.traj`` file that some format
    reads (a folder holds other JSON files: settings, an OpenCode message's parts), once each;
    companion files whose transcript is among them (Claude Code subagent files) are left to it."""
    files: list[Path] = []
    seen: set[Path] = set()
    for given in paths:
        p = Path(given).expanduser()
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.suffix in formats.TRANSCRIPT_SUFFIXES and f.is_file()
                           and (f.suffix == ".jsonl" or formats.recognised(f)))
        else:
            found = [p]
        for f in found:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                files.append(f)
    return [f for f in files if not _imported_with_main(f, seen)]


def transcript_of(path: str | Path) -> Path | None:
    """The transcript file to import when `path` changed: its own, the one it is a companion of
    (a Claude Code subagent file's main file, an OpenCode message or part file's session file),
    or None when it is no transcript's (a file of another suffix, a JSON file no format reads)."""
    p = Path(path)
    owner = formats.owner_of(p)
    if owner is not None:
        return owner
    readable = (*DOCUMENT_SUFFIXES, *TEXT_SUFFIXES, *DATABASE_SUFFIXES)
    if p.suffix == ".jsonl" or (p.suffix in readable and formats.recognised(p)):
        return p
    return None


def import_path(store: Any, *paths: str | Path, on_progress: ProgressCallback | None = None,
                on_divergence: str = "fail") -> ImportReport:
    """Import files and folders (see `find_transcripts`).

    A file of unknown format, or that cannot be read, is reported (an issue on line 0) and
    skipped; an empty file is listed as not imported, without an issue. `on_divergence`: see
    `store_parsed`. Interrupted (KeyboardInterrupt), it stops between two batches: what was
    written stays, and importing again resumes.
    """
    started = time.perf_counter()
    report = ImportReport()
    work = find_transcripts(*paths)
    total = len(work)
    for done, f in enumerate(work, 1):
        try:
            result = import_file(store, f, on_divergence=on_divergence)
        except UnknownFormat as exc:
            # An empty file has nothing to import and nothing wrong (Claude Code 2.0 leaves one behind
            # each time a session is resumed): listed, not imported, not a failure.
            issues = [] if _empty(f) else [TranscriptError(str(f), exc.line, _reason(exc))]
            result = FileImport(str(f), None, issues=issues)
        except OSError as exc:
            result = FileImport(str(f), None, issues=[TranscriptError(str(f), WHOLE_FILE,
                                                                      f"cannot read: {exc.strerror or exc}")])
        if result.format is None and not claude_code.is_subagent_path(f):
            result.subagents.extend(_orphans_of(store, f, on_divergence))
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


def _empty(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return not f.read(65536).strip() and path.stat().st_size <= 65536
    except OSError:
        return False


def _orphans_of(store: Any, main: Path, on_divergence: str) -> list[FileImport]:
    """The subagent files `find_transcripts` left to a main file that could not be imported (Claude
    Code leaves empty session files behind when a session is resumed): each on its own, as it would
    be without its main file, rather than silently not at all."""
    found = []
    for sub in claude_code.subagent_files(main, main.stem):
        try:
            found.append(import_file(store, sub, on_divergence=on_divergence))
        except UnknownFormat as exc:
            found.append(FileImport(str(sub), None, issues=[TranscriptError(str(sub), WHOLE_FILE, _reason(exc))]))
    return found


def _imported_with_main(path: Path, files: set[Path]) -> bool:
    """A Claude Code or Gemini CLI subagent file whose main transcript is also being imported."""
    if gemini_cli.is_subagent_path(path):
        main = gemini_cli.main_file_of(path)
        return main is not None and main.resolve() in files
    if not claude_code.is_subagent_path(path):
        return False
    parent_sid = claude_code._first_value(path, "sessionId")
    main = claude_code.parent_path_of(path, parent_sid if isinstance(parent_sid, str) else None)
    if main is None or main.resolve() not in files:
        return False
    # the main file finds it only if it names the same session (old layout) or sits in <main>/subagents/
    return path.parent.name == "subagents" or parent_sid == main.stem
