"""sessionstore's own JSONL export (``sessionstore export SID --format jsonl``), and reading it back.

One JSON object a line, compact and ASCII, written with the store's own encoder:

* first, the session: ``{"type": "sessionstore.session", "format_version": 1, "session": {"id",
  "metadata", "parent_id", "fork_version", "head", "created_at"}}``;
* then each event in version order: ``{"type": "sessionstore.event", "event_id", "version",
  "kind", "payload", "meta", "tokens", "created_at"}``.

Decisions:

* **Byte-identical payloads.** A payload is written with `sessionstore.events.encode_json`,
  the encoder the store uses, so the text in the file is the text the store held, and
  importing it stores that same text again (the round-trip tests compare the stored text).
* **Same ids, versions and times.** Event ids are kept (a re-import adds nothing; an import
  into another store gives the same transcript, hence the same views at every version).
  `tokens` is informational: the importing store counts with its own counter.
* **Self-contained.** An export holds the session's whole history, a fork's inherited events
  included, so that it imports into any store on its own; ``parent_id`` and
  ``fork_version`` record where it came from (the metadata of a fork says so too).
* **No gaps.** Markers name their targets by version, so an event after a missing or broken
  line would shift every later target: events after the first gap are reported, not imported.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Final

from .. import events as ev
from ..errors import InvalidEvent, TranscriptError
from ..events import NewEvent, StoredEvent
from .reading import SourceFile, SourceObject
from .reports import WHOLE_FILE, ParsedTranscript

FORMAT: Final = "sessionstore"
FORMAT_VERSION: Final = 1
SESSION_TYPE: Final = "sessionstore.session"
EVENT_TYPE: Final = "sessionstore.event"


def looks_like(obj: dict[str, Any]) -> bool:
    return obj.get("type") in (SESSION_TYPE, EVENT_TYPE)


# --------------------------------------------------------------------------- writing


def session_line(session_id: str, metadata: dict[str, Any], parent_id: str | None, fork_version: int | None,
                 head: int, created_at: datetime) -> str:
    """The header line of an export."""
    return ev.encode_json({"type": SESSION_TYPE, "format_version": FORMAT_VERSION, "session": {
        "id": session_id, "metadata": metadata, "parent_id": parent_id, "fork_version": fork_version,
        "head": head, "created_at": created_at.isoformat()}})


def event_line(event: StoredEvent) -> str:
    """One event's line: its payload serialised exactly as the store serialises it."""
    return ev.encode_json({"type": EVENT_TYPE, "event_id": event.event_id, "version": event.version,
                           "kind": event.kind, "payload": event.payload, "meta": event.meta, "tokens": event.tokens,
                           "created_at": event.created_at.isoformat()})


# --------------------------------------------------------------------------- reading


def parse(source: SourceFile) -> ParsedTranscript:
    path = source.path
    issues = source.issues
    objects = source.objects
    header = objects[0].obj.get("session") if objects and objects[0].obj.get("type") == SESSION_TYPE else None
    if not isinstance(header, dict):
        issues.append(TranscriptError(path, objects[0].line if objects else WHOLE_FILE,
                                      f"no {SESSION_TYPE} header line first: the session id is taken from the file "
                                      "name and the session has no metadata"))
        header = {}
    sid = header.get("id") if isinstance(header.get("id"), str) and header.get("id") else Path(path).stem
    metadata = header.get("metadata") if isinstance(header.get("metadata"), dict) else {}
    events: list[NewEvent] = []
    for so in objects:
        if so.obj.get("type") == SESSION_TYPE:
            if so is objects[0]:
                continue
            issues.append(TranscriptError(path, so.line, "a second session header: an export holds one session; "
                                                         "this line and the rest of the file are not imported"))
            break
        event, reason = _event(so, len(events) + 1)
        if event is None:
            issues.append(TranscriptError(path, so.line, f"{reason}; the events after it are not imported (their "
                                                         "versions would shift, and markers name targets by version)"))
            break
        events.append(event)
    return ParsedTranscript(path, FORMAT, sid, dict(metadata), events, issues, source.lines)


def _event(so: SourceObject, version: int) -> tuple[NewEvent | None, str]:
    """The event on a line that must hold `version`; (None, why) when it cannot be taken as is."""
    obj = so.obj
    if obj.get("type") != EVENT_TYPE:
        return None, f"not a {EVENT_TYPE} line (type {obj.get('type')!r})"
    if obj.get("version") != version:
        return None, f"version {obj.get('version')!r} where version {version} was expected"
    created = obj.get("created_at")
    try:
        created_at = datetime.fromisoformat(created) if isinstance(created, str) else None
    except ValueError:
        created_at = None
    if created_at is None or created_at.tzinfo is None:
        return None, f"created_at {created!r} is not an ISO 8601 time with its offset"
    event = NewEvent(kind=obj.get("kind"), payload=obj.get("payload"), meta=obj.get("meta"),  # type: ignore[arg-type]
                     event_id=obj.get("event_id"), created_at=created_at)  # type: ignore[arg-type]
    try:
        ev.encode_event(event)
    except InvalidEvent as exc:
        return None, f"version {version} is not a valid event: {exc}"
    return event, ""
