"""Cursor's agent transcripts (``~/.cursor/projects/<project>/agent-transcripts/<id>/<id>.jsonl``).

The format, as Cursor writes it (no published schema; read from the files users publish): one
JSON object a line, ``{"role": "user"|"assistant", "message": {"content": [blocks], "model"?},
"timestamp"?}``, blocks ``{"type": "text", "text"}`` and ``{"type": "tool_use", "name", "input"}``
(no id), and ``{"type": "turn_ended", "status"}`` between turns. A user's text is wrapped:
``<timestamp>Tuesday, Sep 29, 2026, 9:14 PM (UTC+1)</timestamp>`` then ``<user_query>…
</user_query>``. Cursor keeps no tool results, usage or compactions in these files.

What each becomes: a user line → a user message (its text as written, wrappers included: the
model read them); an assistant line → an assistant message of its text blocks, then a
`tool_call` per ``tool_use`` (id ``cursor:<line>:<block>``, as the file gives none). No result
is imported, as none is stored: the projected view still pairs each call (the renderer puts a
placeholder result in), so it stays a valid request. ``turn_ended`` → a custom event
``cursor:turn_ended``, not in context. Times: the line's ``timestamp``, else the user's
``<timestamp>`` (its minute), events after it dated like it; the session's ``started_at`` is the
first of them, else the file's modification time. Session id: the file's name; ``project`` the
project folder's name (Cursor encodes the workspace path in it, ambiguously: not decoded); a file
under ``subagents/`` is a subagent's, its parent session named in ``parent_session``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

from .reading import SourceFile
from .reports import ParsedTranscript
from .rules import EventBuilder, as_list, parse_time, source_meta, text_blocks
from .steps import object_input, session_metadata, tool_name

FORMAT: Final = "cursor"
FOLDERS: Final = ("~/.cursor/projects",)
_STAMP = re.compile(r"<timestamp>(.*?)</timestamp>", re.S)
_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_OFFSET = re.compile(r"\(UTC([+-]\d{1,2})(?::?(\d\d))?\)")


def looks_like(obj: Any) -> bool:
    if obj.get("type") == "turn_ended" and len(obj) <= 3:
        return True
    message = obj.get("message")
    return (obj.get("role") in ("user", "assistant") and isinstance(message, dict) and "content" in message
            and "type" not in obj and "uuid" not in obj and "role" not in message)


def parse(source: SourceFile) -> ParsedTranscript:
    path = Path(source.path)
    sid = path.stem
    metadata: dict[str, Any] = {**session_metadata(FORMAT, source.path), "agent": "cursor"}
    parts = path.parts
    if "agent-transcripts" in parts:
        at = parts.index("agent-transcripts")
        metadata["project"] = parts[at - 1] if at > 0 else None
        if "subagents" in parts[at:]:
            metadata.update(role="subagent", parent_session=parts[parts.index("subagents", at) - 1])
    b = EventBuilder(FORMAT, sid, source.path, source.issues)
    for so in source.objects:
        obj = so.obj
        if obj.get("type") == "turn_ended":
            b.custom("cursor:turn_ended", obj, source_meta(so), key=so.key, line=so.line,
                     created_at=parse_time(obj.get("timestamp")))
            continue
        if not looks_like(obj):
            b.issue(so.line, "not a Cursor transcript line: no role user/assistant with a message")
            continue
        message = obj["message"]
        blocks = [{"type": "text", "text": message["content"]}] if isinstance(message["content"], str) else [
            c for c in as_list(message["content"]) if isinstance(c, dict)]
        meta = source_meta(so, model=message.get("model"))
        text = [t for c in blocks if c.get("type") == "text" for t in text_blocks(c.get("text"))]
        created = parse_time(obj.get("timestamp"))
        if obj["role"] == "user":
            joined = "\n".join(t["text"] for t in text)
            created = created or _user_time(joined)
            query = _QUERY.search(joined)
            if query and "first_prompt" not in metadata:
                metadata["first_prompt"] = " ".join(query.group(1).split())[:300]
            b.message("user", text, meta, key=so.key, line=so.line, created_at=created)
            continue
        calls = [c for c in blocks if c.get("type") == "tool_use"]
        if text or not calls:
            b.message("assistant", text, dict(meta), key=so.key, line=so.line, created_at=created)
        for i, call in enumerate(calls):
            name = tool_name(call.get("name"))
            call_id = call["id"] if isinstance(call.get("id"), str) and call["id"] else f"{FORMAT}:{so.line}:{i}"
            args = object_input(call.get("input"), "input")
            b.tool_call(call_id, name, args, {**meta, "synthetic_call_id": call_id != call.get("id")}, key=so.key,
                        index=f"call{i}", line=so.line, created_at=created)
    events = b.finish()
    first = next((e.created_at for e in events if e.created_at is not None), None)
    if first is None and path.exists():
        first = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
        metadata["started_at_source"] = "file modification time"
    if first is not None:
        metadata["started_at"] = first.isoformat()
    return ParsedTranscript(source.path, FORMAT, sid, metadata, events, source.issues, source.lines)


def _user_time(text: str) -> datetime | None:
    """The minute a user's ``<timestamp>`` names (Cursor writes it for people: ``Tuesday, Sep 29,
    2026, 9:14 PM (UTC+1)``, a bare date, or ISO 8601)."""
    found = _STAMP.search(text)
    if not found:
        return None
    raw = found.group(1).strip()
    iso = parse_time(raw)
    if iso is not None:
        return iso
    offset = _OFFSET.search(raw)
    zone = timezone(timedelta(hours=int(offset.group(1)), minutes=int(offset.group(2) or 0) * (
        -1 if offset.group(1).startswith("-") else 1))) if offset else timezone.utc
    bare = _OFFSET.sub("", raw).strip().rstrip(",")
    for pattern in ("%A, %b %d, %Y, %I:%M %p", "%a, %b %d, %Y, %I:%M %p", "%A, %b %d, %Y", "%a, %b %d, %Y"):
        try:
            return datetime.strptime(bare, pattern).replace(tzinfo=zone)
        except ValueError:
            continue
    return None
