"""Shared machinery of the transcript importers: reading lines, building events, storing them.

Parsing is pure (a file in, events out); only `store_parsed` touches the store. The pieces:

* `read_objects` turns a JSONL file into JSON objects, each with its 1-based line number. A
  truncated or garbage line, a JSON value that is not an object, or invalid UTF-8 becomes a
  `TranscriptError` and the rest of the file still reads; two objects written on one line
  without a newline are both recovered.
* `EventBuilder` assigns each event a deterministic id (uuid5 of format, session, source id
  or line, block index) and the version it will get, and checks it with
  `sessionstore.events.encode_event` before it is kept, so that a bad source value is
  reported against its line instead of failing an append later.
* `store_parsed` writes a parsed transcript idempotently: a session whose stored events are a
  prefix of the parsed ones gets only the missing tail (a grown file); identical ones get
  nothing; anything else is reported and left untouched.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from .. import events as ev
from ..errors import InvalidEvent, SessionNotFound, TranscriptError
from ..events import NewEvent

FORMATS: Final = ("claude-code", "pi", "codex", "sessionstore")
# Event ids are uuid5(NAMESPACE, "<format>:<session>:<source key>:<block index>"): stable across re-imports.
NAMESPACE: Final = uuid.UUID("0b7f4a52-35c1-5c8e-9a8e-5e551075707e")
# Events per `append` call: large enough that a 1,000-line file is one or two transactions.
BATCH_SIZE: Final = 2000
# A line number of 0 in a TranscriptError means "the file as a whole" (empty file, unknown format).
WHOLE_FILE: Final = 0


# --------------------------------------------------------------------------- reports


class TranscriptWarning(TranscriptError):
    """Reported, but nothing was lost: every other `TranscriptError` in a report means
    something was not imported (what exit status 1 means for ``sessionstore import``)."""


class RecoveredLine(TranscriptWarning):
    """A line read in full despite a defect: two JSON objects glued on one line, undecodable
    bytes replaced, a non-standard constant read as null."""


ON_DIVERGENCE: Final = ("fail", "fork")


@dataclass(slots=True)
class Counts:
    """What a session (or a file) holds, by event kind."""

    messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    compactions: int = 0
    system: int = 0
    custom: int = 0

    @property
    def total(self) -> int:
        return self.messages + self.tool_calls + self.tool_results + self.compactions + self.system + self.custom

    def add_kind(self, kind: str) -> None:
        if kind == "message":
            self.messages += 1
        elif kind == "tool_call":
            self.tool_calls += 1
        elif kind == "tool_result":
            self.tool_results += 1
        elif kind == "compaction":
            self.compactions += 1
        elif kind == "system":
            self.system += 1
        else:
            self.custom += 1

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.messages + other.messages, self.tool_calls + other.tool_calls,
                      self.tool_results + other.tool_results, self.compactions + other.compactions,
                      self.system + other.system, self.custom + other.custom)

    @classmethod
    def of(cls, events: Sequence[NewEvent]) -> Counts:
        counts = cls()
        for event in events:
            counts.add_kind(event.kind)
        return counts


@dataclass(slots=True)
class ParsedSession:
    """One session parsed from a file: the file's own, or one of its abandoned branches.

    A branch is stored as a fork of `fork_of` at version `fork_at`; its `events` are only its
    own (versions ``fork_at + 1`` on).
    """

    session_id: str
    metadata: dict[str, Any]
    events: list[NewEvent]
    fork_of: str | None = None
    fork_at: int | None = None

    @property
    def counts(self) -> Counts:
        return Counts.of(self.events)


@dataclass(slots=True)
class ParsedTranscript:
    """What `parse_file` returns: no store involved.

    `events` are the main session's events in append order (event i gets version i + 1);
    `branches` are sessions forked from it (Pi trees with abandoned branches); `issues`
    are the lines that could not be read, with their 1-based line numbers.
    """

    path: str
    format: str
    session_id: str
    metadata: dict[str, Any]
    events: list[NewEvent]
    issues: list[TranscriptError]
    lines: int
    branches: list[ParsedSession] = field(default_factory=list)

    @property
    def sessions(self) -> list[ParsedSession]:
        return [ParsedSession(self.session_id, self.metadata, self.events), *self.branches]

    @property
    def counts(self) -> Counts:
        total = Counts.of(self.events)
        for branch in self.branches:
            total = total + branch.counts
        return total


@dataclass(slots=True)
class SessionImport:
    """What importing one session wrote."""

    session_id: str
    events: int
    added: int
    present: int
    counts: Counts
    created: bool
    forked_from: str | None = None
    fork_version: int | None = None
    diverged_from: str | None = None  # set when this session continues a diverging re-import of that one


@dataclass(slots=True)
class FileImport:
    """One file's import, as a row of the CLI's table (`as_row()`).

    `sessions` are the file's sessions (more than one for a Pi tree with branches);
    `subagents` are the Claude Code subagent files imported with this one (each has
    `parent_path` set). Issues carry the file and the 1-based line (0: the whole file).
    """

    path: str
    format: str | None
    sessions: list[SessionImport] = field(default_factory=list)
    issues: list[TranscriptError] = field(default_factory=list)
    lines: int = 0
    seconds: float = 0.0
    parent_path: str | None = None
    subagents: list[FileImport] = field(default_factory=list)

    @property
    def session_ids(self) -> list[str]:
        return [s.session_id for s in self.sessions]

    @property
    def session_id(self) -> str | None:
        return self.sessions[0].session_id if self.sessions else None

    @property
    def counts(self) -> Counts:
        total = Counts()
        for s in self.sessions:
            total = total + s.counts
        return total

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sessions)

    @property
    def events_added(self) -> int:
        return sum(s.added for s in self.sessions)

    @property
    def events_present(self) -> int:
        return sum(s.present for s in self.sessions)

    @property
    def messages(self) -> int:
        return self.counts.messages

    @property
    def tool_calls(self) -> int:
        return self.counts.tool_calls

    @property
    def tool_results(self) -> int:
        return self.counts.tool_results

    @property
    def compactions(self) -> int:
        return self.counts.compactions

    @property
    def warnings(self) -> list[TranscriptError]:
        """Reported, but nothing was lost (`TranscriptWarning`: recovered lines, a divergence continued in a fork)."""
        return [i for i in self.issues if isinstance(i, TranscriptWarning)]

    @property
    def failures(self) -> list[TranscriptError]:
        """What could not be imported: the file (unknown format, unreadable), lines, or sessions."""
        return [i for i in self.issues if not isinstance(i, TranscriptWarning)]

    @property
    def imported(self) -> bool:
        """The file was recognised and its sessions written (some lines may still have failed)."""
        return self.format is not None and bool(self.sessions)

    @property
    def ok(self) -> bool:
        """Everything in the file is stored (warnings allowed)."""
        return not self.failures

    def as_row(self) -> dict[str, Any]:
        counts = self.counts
        return {"path": self.path, "format": self.format or "unknown", "sessions": ", ".join(self.session_ids),
                "lines": self.lines, "added": self.events_added, "present": self.events_present,
                "messages": counts.messages, "tool_calls": counts.tool_calls, "tool_results": counts.tool_results,
                "compactions": counts.compactions, "issues": len(self.issues), "seconds": round(self.seconds, 3)}


@dataclass(slots=True)
class ImportReport:
    """Every file `import_path` looked at, subagent files included, in import order."""

    files: list[FileImport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def issues(self) -> list[TranscriptError]:
        return [issue for f in self.files for issue in f.issues]

    @property
    def events_added(self) -> int:
        return sum(f.events_added for f in self.files)

    @property
    def events_present(self) -> int:
        return sum(f.events_present for f in self.files)

    @property
    def session_ids(self) -> list[str]:
        return [sid for f in self.files for sid in f.session_ids]

    @property
    def counts(self) -> Counts:
        total = Counts()
        for f in self.files:
            total = total + f.counts
        return total

    @property
    def warnings(self) -> list[TranscriptError]:
        return [issue for f in self.files for issue in f.warnings]

    @property
    def failures(self) -> list[TranscriptError]:
        return [issue for f in self.files for issue in f.failures]

    @property
    def ok(self) -> bool:
        """Every file imported in full (warnings allowed): what exit status 0 means."""
        return all(f.ok for f in self.files)

    def rows(self) -> list[dict[str, Any]]:
        return [f.as_row() for f in self.files]


# --------------------------------------------------------------------------- reading


@dataclass(slots=True)
class SourceObject:
    """A JSON object read from a transcript: its line, and its rank on that line (almost always 0)."""

    line: int
    rank: int
    obj: dict[str, Any]

    @property
    def key(self) -> str:
        return f"L{self.line}" if self.rank == 0 else f"L{self.line}.{self.rank}"


@dataclass(slots=True)
class SourceFile:
    path: str
    objects: list[SourceObject]
    issues: list[TranscriptError]
    lines: int


_WS = re.compile(r"[ \t\r\n]*")


def read_objects(path: str | Path) -> SourceFile:
    """The JSON objects of a JSONL file, tolerant of everything a crashed writer leaves behind."""
    with open(path, "rb") as fh:
        return parse_bytes(str(path), fh.read())


def parse_bytes(name: str, data: bytes) -> SourceFile:
    """The JSON objects of JSONL bytes (`name` is the path the issues name)."""
    issues: list[TranscriptError] = []
    objects: list[SourceObject] = []
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
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
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", "replace")
            issues.append(RecoveredLine(name, number, f"invalid UTF-8 at byte {exc.start}: undecodable bytes "
                                                        "replaced by U+FFFD, the rest of the line imported"))
        try:
            value = decode(text)
        except ValueError:
            _recover(name, number, text, raw_decode, objects, issues)
        else:
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


# --------------------------------------------------------------------------- helpers


def parse_time(value: Any) -> datetime | None:
    """A source timestamp (ISO 8601 string, or epoch milliseconds) as an aware datetime."""
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    return None


ConvertItem = Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]


def blocks_of(content: Any, meta: dict[str, Any], convert: ConvertItem, meta_key: str) -> list[dict[str, Any]]:
    """A message's content (a string, or a list of typed items) as content blocks.

    `convert` turns one typed item into (block, what the block leaves out); the left-out
    fields are kept in ``meta[meta_key]`` by item index, so nothing of the source is lost.
    """
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        return []
    blocks: list[dict[str, Any]] = []
    extras: dict[str, Any] = {}
    for i, item in enumerate(content):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            blocks.append({"type": "text", "text": item if isinstance(item, str) else json.dumps(item)})
            continue
        block, rest = convert(item)
        if rest:
            extras[str(i)] = rest
        blocks.append(block)
    if extras:
        meta[meta_key] = extras
    return blocks


def text_of(content: Any) -> str:
    """The text of a string or of the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def parse_arguments(raw: Any) -> tuple[dict[str, Any], bool]:
    """Tool arguments as a JSON object; (``{"arguments": raw}``, False) when they are not one."""
    if isinstance(raw, dict):
        return raw, True
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"arguments": raw}, False
        if isinstance(value, dict):
            return value, True
    return {"arguments": raw}, False


def image_block(media_type: Any, data: Any) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def data_url_image(url: str) -> dict[str, Any]:
    """An image given as a URL (``data:image/png;base64,…`` or http) as an Anthropic image block."""
    if url.startswith("data:") and ";base64," in url:
        head, _, data = url.partition(";base64,")
        return image_block(head[5:] or "application/octet-stream", data)
    return {"type": "image", "source": {"type": "url", "url": url}}


# JSONB (PostgreSQL's `meta` and session metadata) rejects NUL and lone surrogates that JSON text allows.


def jsonb_safe(value: Any, coerced: list[str], path: str = "") -> Any:
    """`value` with the characters JSONB cannot hold (NUL, lone surrogates) replaced by U+FFFD."""
    if isinstance(value, str):
        if ev.JSONB_UNSTORABLE.search(value):
            coerced.append(path or "$")
            return ev.JSONB_UNSTORABLE.sub("\ufffd", value)
        return value
    if isinstance(value, dict):
        return {(jsonb_safe(k, coerced, path) if isinstance(k, str) else k): jsonb_safe(v, coerced, f"{path}.{k}")
                for k, v in value.items()}
    if isinstance(value, list):
        return [jsonb_safe(v, coerced, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def safe_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Session metadata that both backends accept (it is JSONB on PostgreSQL)."""
    coerced: list[str] = []
    clean = jsonb_safe(dict(metadata), coerced)
    if coerced:
        clean["coerced"] = [f"{p}: NUL or lone surrogate replaced by U+FFFD" for p in coerced]
    return clean


# --------------------------------------------------------------------------- describing sessions

# Session metadata every importer fills the same way, so that listings need no format knowledge.
FIRST_PROMPT_CHARS: Final = 300


def describe(parsed: ParsedTranscript) -> ParsedTranscript:
    """Fill what a listing shows about each session, where the format did not already say it.

    ``started_at``: when the session happened (the first event's source timestamp, ISO 8601);
    ``model``: the first model named in an event's meta; ``first_prompt``: the start of the
    first user message that is not a command echo or a caveat (when there is no ``title``).
    """
    for session in [ParsedSession(parsed.session_id, parsed.metadata, parsed.events), *parsed.branches]:
        meta = session.metadata
        events = session.events
        if "started_at" not in meta:
            first = next((e.created_at for e in events if e.created_at is not None), None)
            if first is not None:
                meta["started_at"] = first.isoformat()
        if "model" not in meta:
            model = next((e.meta["model"] for e in events if isinstance(e.meta, dict)
                          and isinstance(e.meta.get("model"), str) and not e.meta["model"].startswith("<")), None)
            if model:
                meta["model"] = model
        if "first_prompt" not in meta:
            prompt = next((text for e in events if e.kind == "message" and e.payload.get("role") == "user"
                           for text in [" ".join(text_of(e.payload.get("content")).split())]
                           if text and not text.startswith(("<", "Caveat:"))), None)
            if prompt:
                meta["first_prompt"] = prompt[:FIRST_PROMPT_CHARS]
    return parsed


# --------------------------------------------------------------------------- building events


class EventBuilder:
    """Builds one session's events in append order, knowing the version each one gets.

    Every event is validated (`encode_event`) when it is added; one that cannot be stored is
    reported against its source line and left out, so that versions computed while parsing
    stay exact.
    """

    def __init__(self, fmt: str, session_id: str, path: str, issues: list[TranscriptError], *,
                 base_version: int = 0) -> None:
        self.format = fmt
        self.session_id = session_id
        self.path = path
        self.issues = issues
        self.base_version = base_version
        self.events: list[NewEvent] = []
        self._ids: set[str] = set()

    @property
    def next_version(self) -> int:
        return self.base_version + len(self.events) + 1

    @property
    def head(self) -> int:
        return self.base_version + len(self.events)

    def event_id(self, key: str, index: int | str = 0) -> str:
        eid = uuid.uuid5(NAMESPACE, f"{self.format}:{self.session_id}:{key}:{index}").hex
        if eid in self._ids:  # a source id used twice in one file: disambiguate, deterministically
            n = 1
            while eid in self._ids:
                eid = uuid.uuid5(NAMESPACE, f"{self.format}:{self.session_id}:{key}:{index}:dup{n}").hex
                n += 1
        return eid

    def add(self, kind: str, payload: dict[str, Any], meta: dict[str, Any], *, key: str, index: int | str = 0,
            line: int, created_at: datetime | None = None) -> int | None:
        """Append an event; its version, or None when it could not be made valid (then reported)."""
        coerced: list[str] = []
        meta = jsonb_safe(meta, coerced, "meta")
        if coerced:  # meta is JSONB on PostgreSQL: the raw text stays in the payload, exact
            meta["coerced"] = [f"{p}: NUL or lone surrogate replaced by U+FFFD (not storable in JSONB)"
                               for p in coerced]
        event = NewEvent(kind=kind, payload=payload, meta=meta, event_id=self.event_id(key, index),
                         created_at=created_at)
        try:
            ev.encode_event(event)
        except InvalidEvent as exc:
            self.issues.append(TranscriptError(self.path, line, f"cannot store this line's {kind} event: {exc}"))
            return None
        self._ids.add(event.event_id)
        self.events.append(event)
        return self.head

    def finish(self) -> list[NewEvent]:
        """The events, each source line without a timestamp dated like the line before it (or the first dated one).

        Dating them from the source rather than the import keeps a re-import, or an import
        into another store, identical; such events carry ``meta["created_at_inferred"]``.
        """
        known = next((e.created_at for e in self.events if e.created_at is not None), None)
        if known is None:
            return self.events
        for i, event in enumerate(self.events):
            if event.created_at is None:
                if isinstance(event.meta, dict):
                    event.meta["created_at_inferred"] = True
                self.events[i] = replace(event, created_at=known)
            else:
                known = event.created_at
        return self.events

    def meta_of(self, version: int) -> dict[str, Any]:
        """The (mutable) meta of an event added earlier, to link it to something read later."""
        meta = self.events[version - self.base_version - 1].meta
        assert isinstance(meta, dict)
        return meta

    def custom(self, type_: str, data: Any, meta: dict[str, Any], *, key: str, line: int,
               created_at: datetime | None = None, in_context: bool = False, index: int | str = 0) -> int | None:
        return self.add("custom", {"type": type_, "data": data, "in_context": in_context}, meta, key=key,
                        index=index, line=line, created_at=created_at)

    def message(self, role: str, content: list[dict[str, Any]], meta: dict[str, Any], *, key: str, line: int,
                created_at: datetime | None = None, index: int | str = 0) -> int | None:
        return self.add("message", {"role": role, "content": content}, meta, key=key, index=index, line=line,
                        created_at=created_at)

    def tool_call(self, call_id: str, name: str, input_: dict[str, Any], meta: dict[str, Any], *, key: str,
                  line: int, created_at: datetime | None = None, index: int | str = 0) -> int | None:
        return self.add("tool_call", {"call_id": call_id, "name": name, "input": input_}, meta, key=key,
                        index=index, line=line, created_at=created_at)

    def tool_result(self, call_id: str, output: str | list[dict[str, Any]], is_error: bool, meta: dict[str, Any], *,
                    key: str, line: int, created_at: datetime | None = None, index: int | str = 0) -> int | None:
        return self.add("tool_result", {"call_id": call_id, "output": output, "is_error": is_error}, meta, key=key,
                        index=index, line=line, created_at=created_at)

    def issue(self, line: int, reason: str) -> None:
        self.issues.append(TranscriptError(self.path, line, reason))


def compaction_payload(summary: str, first_kept_version: int, *, tokens_before: int | None, trigger: str,
                       summarizer: str, details: Mapping[str, Any] | None = None,
                       tokens_after: int | None = None) -> dict[str, Any]:
    """A `compaction` payload built by `sessionstore.events.compaction` (strategy "imported")."""
    built = ev.compaction(summary, first_kept_version, tokens_before=tokens_before, tokens_after=tokens_after,
                          trigger=trigger, strategy="imported", summarizer=summarizer, details=details)
    return dict(built.payload)


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --------------------------------------------------------------------------- storing


def _batches(items: Sequence[NewEvent], size: int = BATCH_SIZE) -> Iterator[Sequence[NewEvent]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def store_parsed(store: Any, parsed: ParsedTranscript, *,
                 on_divergence: str = "fail") -> tuple[list[SessionImport], list[TranscriptError]]:
    """Write a parsed transcript's sessions; (what each got, issues found while writing).

    `on_divergence` says what happens when a session already holds events that are not a
    prefix of the file's (a line skipped as broken then corrected, a rewritten file):
    ``"fail"`` reports it and writes nothing for that session; ``"fork"`` continues the file
    in a new session forked at the last common version, sharing the common prefix (nothing
    stored is changed or deleted), and names it in the report.
    """
    if on_divergence not in ON_DIVERGENCE:
        raise ValueError(f"on_divergence must be one of {', '.join(ON_DIVERGENCE)}, not {on_divergence!r}")
    results: list[SessionImport] = []
    issues: list[TranscriptError] = []
    written: set[str] = set()
    for session in parsed.sessions:
        if session.fork_of is not None and session.fork_of not in written:
            issues.append(TranscriptError(parsed.path, WHOLE_FILE, f"branch {session.session_id} not written: its "
                                                                   f"parent session {session.fork_of} was not"))
            continue
        result, ok = _store_session(store, parsed.path, session, issues, on_divergence)
        if result is not None:
            results.append(result)
        if ok:
            written.add(session.session_id)
    return results, issues


def _store_session(store: Any, path: str, session: ParsedSession, issues: list[TranscriptError],
                   on_divergence: str = "fail") -> tuple[SessionImport | None, bool]:
    """Write one session; (what it got, whether it now holds exactly the parsed events)."""
    sid = session.session_id
    events = session.events
    if not events:
        return None, False
    metadata = safe_metadata(session.metadata)
    base = (session.fork_at or 0) if session.fork_of is not None else 0
    try:
        info = store.session(sid)
    except SessionNotFound:
        info = None
    if info is None and session.fork_of is None:
        # Created with its first batch in one transaction: an interrupted import leaves no empty session.
        first = events[:BATCH_SIZE]
        store.create_session(sid, metadata, events=first, strict=False)
        added = len(first) + _append_from(store, sid, events, len(first), len(first))
        return SessionImport(sid, len(events), added, 0, session.counts, True, None, None), True
    if info is None:
        store.fork(session.fork_of, at=base, new_session_id=sid, metadata=metadata)
        created = True
    else:
        created = False
        if session.fork_of is not None and (info.parent_id != session.fork_of or info.fork_version != base):
            reason = f"session {sid} exists but is not a fork of {session.fork_of} at version {base}"
            issues.append(TranscriptError(path, WHOLE_FILE, f"{reason}; nothing written"))
            return SessionImport(sid, len(events), 0, 0, session.counts, False, session.fork_of, base), False
    present = store.version(sid) - base
    if present > 0:
        stored = list(store.events(sid, after=base))
        common = _common_prefix(stored, events)
        if common < len(stored):
            mismatch = _prefix_mismatch(stored, events) or "it holds more events than the file"
            if on_divergence == "fork" and common < len(events):
                return _fork_at_divergence(store, path, session, base + common, common, issues)
            hint = ("" if on_divergence == "fork" else
                    f"; `import --on-divergence fork` continues the file in a new session forked at version "
                    f"{base + common}")
            issues.append(TranscriptError(path, WHOLE_FILE, f"session {sid} already holds {present} event(s) that "
                                                            f"are not a prefix of this file's {len(events)} "
                                                            f"({mismatch}); nothing written for it{hint}"))
            return SessionImport(sid, len(events), 0, present, session.counts, created, session.fork_of,
                                 session.fork_at), False
    added = _append_from(store, sid, events, present, base + present)
    return SessionImport(sid, len(events), added, present, session.counts, created, session.fork_of,
                         session.fork_at), True


def _append_from(store: Any, sid: str, events: Sequence[NewEvent], start: int, head: int) -> int:
    """Append events[start:] to `sid`, whose head is `head`; how many were appended."""
    added = 0
    for chunk in _batches(events[start:]):
        head = store.append(sid, chunk, expected_version=head, strict=False).version
        added += len(chunk)
    return added


def diverged_session_id(session_id: str, at: int, first_new: NewEvent) -> str:
    """The id of the session that continues `session_id` from version `at` with `first_new`.

    Derived from what diverges, so that importing the same corrected file again finds the
    same fork (and adds only what it lacks) instead of forking once more.
    """
    suffix = uuid.uuid5(NAMESPACE, f"diverged:{session_id}:{at}:{first_new.event_id}").hex[:12]
    return f"{session_id[:ev.MAX_ID - 13]}~{suffix}"


def _fork_at_divergence(store: Any, path: str, session: ParsedSession, at: int, common: int,
                        issues: list[TranscriptError]) -> tuple[SessionImport | None, bool]:
    """Continue a diverging file in a fork of its session at the last common version `at`."""
    events = session.events
    fork_sid = diverged_session_id(session.session_id, at, events[common])
    # Event ids are unique store-wide and the original keeps its own: the fork's get ids of their own.
    tail = [replace(e, event_id=uuid.uuid5(NAMESPACE, f"{fork_sid}:{e.event_id}").hex) for e in events[common:]]
    metadata = {**session.metadata, "diverged_from": session.session_id, "diverged_at": at}
    branch = ParsedSession(fork_sid, metadata, tail, fork_of=session.session_id, fork_at=at)
    result, ok = _store_session(store, path, branch, issues, "fail")
    if result is not None:
        issues.append(TranscriptWarning(path, WHOLE_FILE, f"session {session.session_id} holds events that "
                                                          f"diverge from this file after version {at}: the file "
                                                          f"continues in session {fork_sid}, forked at version "
                                                          f"{at} (nothing stored was changed)"))
        result.diverged_from = session.session_id
    return result, ok


def _common_prefix(stored: Sequence[Any], parsed: Sequence[NewEvent]) -> int:
    """How many leading events the store and the file share (same id, kind and payload)."""
    n = 0
    for have, want in zip(stored, parsed):
        if have.event_id != want.event_id or have.kind != want.kind or have.payload != want.payload:
            break
        n += 1
    return n


def _prefix_mismatch(stored: Sequence[Any], parsed: Sequence[NewEvent]) -> str | None:
    if len(stored) > len(parsed):
        return f"the store has {len(stored)} events, the file {len(parsed)}"
    for i, (have, want) in enumerate(zip(stored, parsed)):
        if have.event_id != want.event_id:
            return f"event {i + 1} has id {have.event_id} in the store, {want.event_id} in the file"
        if have.kind != want.kind or have.payload != want.payload:
            return f"event {i + 1} ({want.kind}) differs"
    return None
