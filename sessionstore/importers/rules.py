"""The rules every format shares: times, content blocks, tool arguments, JSONB-safe values,
session descriptions, and the `EventBuilder` that gives each event its deterministic id and
version (and pairs each tool call with its result).

Parsing is pure: a format module reads its files (`reading`) and builds events here; only
`storing` touches a store. A file's modification time is the one other thing read
(`still_written`): what is not final in a file being written waits (`EventBuilder.wait`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Final

from .. import events as ev
from ..errors import InvalidEvent, TranscriptError
from ..events import NewEvent
from ..finding import parse_time  # noqa: F401 — the formats read their times with it
from .reports import InFlight, ParsedSession, ParsedTranscript

# Event ids are uuid5(NAMESPACE, "<format>:<session>:<source key>:<block index>"): stable across re-imports.
NAMESPACE: Final = uuid.UUID("0b7f4a52-35c1-5c8e-9a8e-5e551075707e")
_NAMESPACE_BYTES: Final = NAMESPACE.bytes


def uuid5_hex(name: str) -> str:
    """``uuid.uuid5(NAMESPACE, name).hex``, without building a `UUID` (one an imported event)."""
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name.encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    return digest.hex()


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


def text_of(content: Any, sep: str = "\n") -> str:
    """The text of a string, or of the text blocks of a block list (or of one block) joined by `sep`:
    blocks of type ``text``, or of no type (a Gemini part ``{"text": …}``)."""
    if isinstance(content, str):
        return content
    blocks = [content] if isinstance(content, dict) else content if isinstance(content, list) else []
    return sep.join(b["text"] for b in blocks
                    if isinstance(b, dict) and b.get("type", "text") == "text" and isinstance(b.get("text"), str))


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


def _modified(path: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(os.stat(path).st_mtime, timezone.utc)
    except OSError:
        return None


def describe(parsed: ParsedTranscript) -> ParsedTranscript:
    """Fill what a listing shows about each session, where the format did not already say it.

    ``started_at``: when the session happened (the first event's source timestamp, ISO 8601; for
    a format that records no time, as SWE-agent's, the file's modification time, and
    ``started_at_source`` says so — never the import's time);
    ``model``: the first model named in an event's meta; ``first_prompt``: the start of the
    first user message that is not a command echo or a caveat (when there is no ``title``).
    """
    for session in [ParsedSession(parsed.session_id, parsed.metadata, parsed.events), *parsed.branches]:
        meta = session.metadata
        events = session.events
        if "started_at" not in meta:
            first = next((e.created_at for e in events if e.created_at is not None), None)
            if first is None and (modified := _modified(parsed.path)) is not None:
                first = modified
                meta["started_at_source"] = "file modification time"
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

# A file changed less than this long ago is still being written: what is not final in it waits
# (`EventBuilder.wait`). An agent idle longer has finished its turn, or the session.
QUIET_SECONDS: Final = 600.0


def still_written(path: str) -> bool:
    """Whether `path` changed within `QUIET_SECONDS` (a file that is gone is not written)."""
    try:
        return time.time() - os.stat(path).st_mtime < QUIET_SECONDS
    except OSError:
        return False


class EventBuilder:
    """Builds one session's events in append order, knowing the version each one gets.

    Every event is validated (`events.checked`) when it is added; one that cannot be stored is
    reported against its source line and left out, so that versions computed while parsing
    stay exact. Its payload is final then (its JSON text, made by the check, is what the append
    stores); its meta may still change (`annotate`, `meta_of`).
    """

    def __init__(self, fmt: str, session_id: str, path: str, issues: list[TranscriptError], *,
                 base_version: int = 0, kept_from: int = 0) -> None:
        self.format = fmt
        self.session_id = session_id
        self.path = path
        self.issues = issues
        self.base_version = base_version
        self.kept_from = kept_from  # the first kept version of the session's latest compaction (`keep_from`)
        self.events: list[NewEvent] = []
        self._ids: set[str] = set()
        self.waiting: tuple[int, int, str] | None = None  # (version, line, why): see `wait`

    @property
    def next_version(self) -> int:
        return self.base_version + len(self.events) + 1

    @property
    def head(self) -> int:
        return self.base_version + len(self.events)

    def event_id(self, key: str, index: int | str = 0) -> str:
        name = f"{self.format}:{self.session_id}:{key}:{index}"
        # a lone surrogate (JSON text may hold one) has no UTF-8, which uuid5 hashes: named by its escape
        name = name.encode("utf-8", "backslashreplace").decode("utf-8")
        eid = uuid5_hex(name)
        if eid in self._ids:  # a source id used twice in one file: disambiguate, deterministically
            n = 1
            while eid in self._ids:
                eid = uuid5_hex(f"{name}:dup{n}")
                n += 1
        return eid

    def add(self, kind: str, payload: dict[str, Any], meta: dict[str, Any], *, key: str, index: int | str = 0,
            line: int, created_at: datetime | None = None) -> int | None:
        """Append an event; its version, or None when it could not be made valid (then reported).

        Checked as it is (`events.checked`: the append stores the texts made here, and validates
        the payload no more); only a meta the check refuses is made storable (`_storable_meta`) and
        checked again, so that a meta is not encoded once more to look for what JSONB cannot hold.
        (`checked` copies the meta: the caller's dict is not the event's.)"""
        event = NewEvent(kind=kind, payload=payload, meta=meta, event_id=self.event_id(key, index),
                         created_at=created_at)
        try:
            try:
                event = ev.checked(event)
            except InvalidEvent as exc:
                if not (exc.field or "").startswith("meta"):
                    raise
                event = ev.checked(replace(event, meta=_storable_meta(meta)))
        except InvalidEvent as exc:
            self.issues.append(TranscriptError(self.path, line, f"cannot store this line's {kind} event: {exc}"))
            return None
        self._ids.add(event.event_id)
        self.events.append(event)
        return self.head

    def wait(self, version: int, line: int, reason: str) -> None:
        """Say that the event at `version` is not final yet: a line the agent has not written yet
        would still change it (its meta, its time), so it and every event after it are left for a
        later import while the file is being written (`finish`)."""
        if self.waiting is None or version < self.waiting[0]:
            self.waiting = (version, line, reason)

    def finish(self) -> list[NewEvent]:
        """The events, each source line without a timestamp dated like the line before it (or the first dated one).

        Dating them from the source rather than the import keeps a re-import, or an import
        into another store, identical; such events carry ``meta["created_at_inferred"]``.

        Events are immutable once stored, so while the file is being written (changed within
        `QUIET_SECONDS`) the events from the first one that is not final (`wait`) on are left
        out, with an `InFlight` warning: importing a growing file, however it arrives, ends as
        importing the finished file once does. A file left alone that long is finished: all of
        it is imported, as it is.
        """
        if self.waiting is not None and self.waiting[0] <= self.head and still_written(self.path):
            version, line, reason = self.waiting
            held = self.head - version + 1
            del self.events[version - self.base_version - 1:]
            self.issues.append(InFlight(self.path, line, f"{held} event(s) not imported yet: {reason} (the agent "
                                                         "is still writing the file)"))
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
        """The (mutable) meta of an event added earlier, to link it to something read later (values
        read from the source go through `annotate`, which keeps the meta storable)."""
        meta = self.events[version - self.base_version - 1].meta
        assert isinstance(meta, dict)
        return meta

    def annotate(self, version: int, values: Mapping[str, Any]) -> None:
        """Add `values` to the meta of an event added earlier (the usage a later line reports), made
        storable as `add` makes a meta: the event was validated when it was added."""
        clean = _storable_meta(dict(values))
        notes = clean.pop("coerced", [])
        meta = self.meta_of(version)
        meta.update(clean)
        if notes:
            meta["coerced"] = [*meta.get("coerced", []), *notes]

    def keep_from(self, version: int, meta: dict[str, Any]) -> int:
        """`version` as the ``first_kept_version`` of an agent's compaction added next: a kept tail only
        moves forward, so never before the previous compaction's (then ``meta["first_kept_clamped_from"]``
        says what the source asked for)."""
        if version < self.kept_from:
            meta["first_kept_clamped_from"] = version
            version = self.kept_from
        self.kept_from = version
        return version

    def compaction(self, summary: str, first_kept: int, meta: dict[str, Any], *, tokens_before: int | None,
                   trigger: str, summarizer: str, key: str, line: int, created_at: datetime | None = None,
                   index: int | str = 0, details: Mapping[str, Any] | None = None, tokens_after: int | None = None,
                   clamp: bool = True) -> int | None:
        """An agent's own compaction (strategy "imported": `compaction_payload`), its kept tail from
        `first_kept` on — moved forward to the previous compaction's (`keep_from`) unless `clamp` is off."""
        if clamp:
            first_kept = self.keep_from(first_kept, meta)
        payload = compaction_payload(summary, first_kept, tokens_before=tokens_before, tokens_after=tokens_after,
                                     trigger=trigger, summarizer=summarizer, details=details)
        return self.add("compaction", payload, meta, key=key, index=index, line=line, created_at=created_at)

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


_ASCII_JSON: Final = json.JSONEncoder(ensure_ascii=True, check_circular=False, allow_nan=True)
_MAYBE_UNSTORABLE: Final = re.compile(r"\\u(?:0000|d[89a-f])")


def _storable_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """An event's meta as JSONB can hold it (`jsonb_safe`), what was replaced listed in
    ``coerced``: the raw text stays in the payload, exact."""
    try:  # the JSON text spells every NUL and surrogate as an escape: without one, nothing to replace
        clean_text = not _MAYBE_UNSTORABLE.search(_ASCII_JSON.encode(meta))
    except (TypeError, ValueError, RecursionError):  # the check at `add` names what JSON cannot hold
        clean_text = False
    if clean_text:
        return dict(meta)
    coerced: list[str] = []
    clean = jsonb_safe(meta, coerced, "meta")
    if coerced:
        clean["coerced"] = [f"{p}: NUL or lone surrogate replaced by U+FFFD (not storable in JSONB)" for p in coerced]
    return clean


def compaction_payload(summary: str, first_kept_version: int, *, tokens_before: int | None, trigger: str,
                       summarizer: str, details: Mapping[str, Any] | None = None,
                       tokens_after: int | None = None) -> dict[str, Any]:
    """A `compaction` payload built by `sessionstore.events.compaction` (strategy "imported")."""
    built = ev.compaction(summary, first_kept_version, tokens_before=tokens_before, tokens_after=tokens_after,
                          trigger=trigger, strategy="imported", summarizer=summarizer, details=details)
    return dict(built.payload)


def rest_of(source: Mapping[str, Any], known: Collection[str]) -> dict[str, Any]:
    """The fields of a source record that `known` does not name: what an event keeps in its meta so
    that nothing of the source is lost."""
    return {k: v for k, v in source.items() if k not in known}


def keep_rest(meta: dict[str, Any], name: str, source: Mapping[str, Any], known: Collection[str]) -> None:
    """``meta[name]``: the fields of `source` that `known` does not name (`rest_of`), when it has any."""
    rest = rest_of(source, known)
    if rest:
        meta[name] = rest


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_list(value: Any) -> list[Any]:
    """A field that should hold a list, or none: ``value or []`` would let a number or a string
    through to the loop that reads it."""
    return value if isinstance(value, list) else []


# --------------------------------------------------------------------------- shared by the newer formats


def source_meta(so: Any, **extra: Any) -> dict[str, Any]:
    """The meta every imported event starts from: its source line (and rank on the line), or its
    index in its JSON array (``item``; an item of a JSON document has no ``line``: the line moves
    as the agent rewrites the document, and an event's meta never changes), so that a re-import
    recognises the events an import made (`storing`)."""
    meta: dict[str, Any] = {} if so.in_document else {"line": so.line}
    if so.rank:
        meta["line_rank"] = so.rank
    if so.index is not None:
        meta["item"] = so.index
    meta.update({k: v for k, v in extra.items() if v is not None})
    return meta


def document_session_id(prefix: str, anchor: Any) -> str:
    """A session id for a file that names none (an OpenHands trajectory, a SWE-agent run):
    `prefix` (the format's name) and a digest of what the file holds first, which an agent
    never rewrites. From the content, never the file's name: the id stays the same as the file
    grows and when it is renamed or moved (one session, not a second copy), and differs
    between two runs."""
    digest = uuid.uuid5(NAMESPACE, json.dumps(anchor, sort_keys=True, default=str)).hex[:8]
    return f"{prefix}-{digest}"


def text_blocks(text: Any) -> list[dict[str, Any]]:
    """A text as content blocks: none for an empty or missing text."""
    return [{"type": "text", "text": text}] if isinstance(text, str) and text else []


def tool_output(value: Any, meta: dict[str, Any]) -> str:
    """A tool's output as the text a model read: a string as it is, anything else as JSON
    (``meta["output_json_encoded"]`` says so)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    meta["output_json_encoded"] = True
    return json.dumps(value, ensure_ascii=False)


def first_kept_after(events: list[NewEvent], version: int, base_version: int = 0) -> int:
    """`version` moved back onto the tool call of a result it would otherwise cut off: a kept
    tail never starts between a call and its result."""
    index = version - base_version - 1
    if 0 <= index < len(events) and events[index].kind == "tool_result":
        call_id = events[index].payload.get("call_id")
        for i in range(index - 1, -1, -1):
            if events[i].kind == "tool_call" and events[i].payload.get("call_id") == call_id:
                return base_version + i + 1
    return version
