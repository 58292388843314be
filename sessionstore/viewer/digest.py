"""The few facts a person wants first about a session: what it was about, where, with which model, when.

Pure: session metadata and (some of) its first events in, a `SessionDigest` out. Importers
store what their source knows under different keys and in different places (Codex and Pi put
the model in the session metadata, Claude Code on each assistant event), so the lookups live
here once, for the page header and for the server's session list.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ..events import StoredEvent, content_blocks
from ..importers.rules import parse_time

TITLE_LIMIT: Final = 160
# User messages that agents write on the user's behalf (IDE context, slash commands, reminders:
# <environment_context>, <command-name>, <local-command-caveat>, <system-reminder>, Codex's
# "# Context from my IDE setup"): never what the session was about.
_WRAPPED: Final = re.compile(r"^\s*(<[A-Za-z_-]+[ >]|Caveat: |# Context from my IDE setup)")
_CODEX_REQUEST: Final = "## My request for Codex:"
# What a fork (which stores no metadata of its own) shows of the session it was forked from.
INHERITED: Final = ("title", "name", "description", "first_prompt", "source", "format", "model", "cwd", "project")
# Enough leading events to find the first prompt and the model without reading a whole session.
PREFIX_EVENTS: Final = 60


@dataclass(frozen=True, slots=True)
class SessionDigest:
    session_id: str
    title: str | None  # a title the source recorded
    first_prompt: str | None
    source: str | None
    project: str | None
    model: str | None
    started_at: datetime | None
    events: int
    parent_id: str | None
    fork_version: int | None
    parent_session: str | None  # a subagent's main session (Claude Code)
    role: str | None  # "subagent", "compaction" (a summariser's own transcript), …

    @property
    def heading(self) -> str:
        return self.title or self.first_prompt or self.session_id


def session_digest(session_id: str, metadata: Mapping[str, Any], head: int, parent_id: str | None,
                   fork_version: int | None, events: Iterable[StoredEvent]) -> SessionDigest:
    """`events` may be the session's first events only (`PREFIX_EVENTS` are enough)."""
    first_prompt: str | None = None
    model = _text(metadata.get("model"))
    started = parse_time(metadata.get("started_at"))
    for event in events:
        if started is None:
            started = event.created_at
        if model is None:
            model = _text(event.meta.get("model"))
        if first_prompt is None and event.kind == "message" and event.payload["role"] == "user":
            first_prompt = _prompt(event)
        if model is not None and first_prompt is not None:
            break
    return SessionDigest(
        session_id=session_id, title=_text(metadata.get("title")), first_prompt=first_prompt,
        source=_text(metadata.get("source") or metadata.get("format")),
        project=_text(metadata.get("project") or metadata.get("cwd")), model=model, started_at=started,
        events=head, parent_id=parent_id, fork_version=fork_version,
        parent_session=_text(metadata.get("parent_session")), role=_text(metadata.get("role")))


def prompt_title(text: Any, limit: int = TITLE_LIMIT) -> str | None:
    """The title a user message's text gives a session, or None for text an agent wrapped
    around the user's (the one title rule: the page, `sessions` and the exports use it)."""
    if not isinstance(text, str) or not text.strip():
        return None
    if _CODEX_REQUEST in text:
        text = text.split(_CODEX_REQUEST, 1)[1]
    elif _WRAPPED.match(text):
        return None
    line = " ".join(text.split())
    if not line:
        return None
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"


def inherit_metadata(metadata: Mapping[str, Any], ancestors: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """A fork's metadata with what it does not say taken from its ancestors (nearest first):
    the same conversation, so the same title, source, model and project."""
    merged = dict(metadata)
    for parent in ancestors:
        for key in INHERITED:
            if not merged.get(key) and parent.get(key):
                merged[key] = parent[key]
    return merged


def ancestors_metadata(parent_id: str | None, lookup: Callable[[str], Any]) -> list[Mapping[str, Any]]:
    """The metadata of a fork's ancestors, nearest first (`lookup`: a session id → its
    `SessionInfo`, or None where the walk must stop), for `inherit_metadata`."""
    found: list[Mapping[str, Any]] = []
    while parent_id is not None and len(found) < 100:
        ancestor = lookup(parent_id)
        if ancestor is None:
            break
        found.append(ancestor.metadata)
        parent_id = ancestor.parent_id
    return found


def _prompt(event: StoredEvent) -> str | None:
    for block in content_blocks(event.payload["content"]):
        title = prompt_title(block.get("text") if block.get("type") == "text" else None)
        if title is not None:
            return title
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
