"""The tamper-evident chain: what each event's hashes cover, and how links are checked.

Each event stores two hashes:

- ``content_hash`` covers what erasure destroys (the payload, as the exact JSON text that is
  stored, and the meta, canonicalised because PostgreSQL's JSONB normalises it);
- ``link`` covers the previous link of the session's lineage, the event's identity and place
  (event id, version, kind, time, token count) and its content hash.

Because the link covers the content only through its hash, erasing a session's content keeps
every link checkable: an edited payload breaks its content hash, a deleted, inserted or
reordered row breaks the links after it. A fork chains from its parent's link at the fork
version, so a lineage is one chain however many sessions it crosses.

The formulas are version 1 and frozen: the migration that gave existing databases their chain
uses them, and `verify` recomputes them. A change needs a new version tag, not an edit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Final

_GENESIS: Final = b"sessionstore/genesis/v1\x00"
_CONTENT: Final = b"sessionstore/content/v1\x00"
_LINK: Final = b"sessionstore/link/v1\x00"
_SEP: Final = b"\x00"


def _utf8(text: str) -> bytes:
    # Payloads may hold lone surrogates (they are stored escaped); hashing must not choke on them.
    return text.encode("utf-8", "surrogatepass")


def genesis(session_id: str) -> str:
    """The link a session's chain starts from when it inherits no history."""
    return hashlib.sha256(_GENESIS + _utf8(session_id)).hexdigest()


def canonical_json(value: Any) -> str:
    """JSON text that is the same whichever backend stored `value`.

    Keys sorted, no spaces, ASCII; numbers as normalised decimals, because JSONB gives back
    ``1e+16`` as ``10000000000000000`` (only ``meta`` goes through JSONB; payloads are hashed
    as the exact text stored).
    """
    parts: list[str] = []
    _canonical(value, parts)
    return "".join(parts)


def _canonical(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_quote(value))
    elif value is None or isinstance(value, bool):
        out.append("null" if value is None else ("true" if value else "false"))
    elif isinstance(value, (int, float)):
        out.append(_number(value))
    elif isinstance(value, Mapping):
        out.append("{")
        for i, key in enumerate(sorted(value)):
            if i:
                out.append(",")
            out.append(_quote(str(key)))
            out.append(":")
            _canonical(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _canonical(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot hash a {type(value).__name__} in meta")


def _quote(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=True)


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value) if -(10 ** 15) < value < 10 ** 15 else format(Decimal(value).normalize(), "f")
    if value == int(value) and abs(value) < 10 ** 15:
        return str(int(value))
    return format(Decimal(repr(value)).normalize(), "f")


def content_hash(payload_json: str, meta: Mapping[str, Any]) -> str:
    """The hash of what erasure destroys: the stored payload text and the (canonical) meta."""
    data = _CONTENT + _utf8(payload_json) + _SEP + _utf8(canonical_json(meta))
    return hashlib.sha256(data).hexdigest()


def utc_text(moment: datetime) -> str:
    """A time as both backends give it back: UTC, microseconds."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds")


def link(previous: str, *, event_id: str, version: int, kind: str, created_at: datetime, tokens: int,
         content: str) -> str:
    """The link of an event: the previous link, the event's identity and place, its content hash."""
    data = _SEP.join((_LINK + previous.encode("ascii"), _utf8(event_id), str(version).encode("ascii"),
                      kind.encode("ascii", "replace"), utc_text(created_at).encode("ascii"),
                      str(tokens).encode("ascii"), content.encode("ascii")))
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Link:
    """What the chain needs of a stored event (its content may be erased)."""

    version: int
    event_id: str
    kind: str
    created_at: datetime
    tokens: int
    content_hash: str
    link: str
    payload_json: str | None  # None when erased
    meta: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Break:
    """The first place a session's chain does not hold, and why."""

    session_id: str
    version: int
    reason: str


def first_break(session_id: str, start: str, rows: Sequence[Link], head: int, head_link: str,
                base: int = 0) -> Break | None:
    """Check a lineage's events in version order against the chain that starts at `start`.

    `base` is the version before the first row (a fork's parent history is checked with the
    parent). Finds a gap or a duplicate version (a deleted or inserted row), a content that
    does not match its hash (an edited payload or meta), a link that does not follow from the
    previous one (an edited identity, a reordered row), and a head that does not end the chain.
    """
    previous = start
    expected = base + 1
    for row in rows:
        if row.version != expected:
            what = "missing" if row.version > expected else "duplicated or out of order"
            return Break(session_id, min(row.version, expected), f"version {expected} is {what}")
        if row.payload_json is not None and content_hash(row.payload_json, row.meta or {}) != row.content_hash:
            return Break(session_id, row.version, "the content does not match its hash (edited payload or meta)")
        computed = link(previous, event_id=row.event_id, version=row.version, kind=row.kind,
                        created_at=row.created_at, tokens=row.tokens, content=row.content_hash)
        if computed != row.link:
            return Break(session_id, row.version, "the link does not follow from the previous event "
                                                  "(an edited, inserted or reordered event)")
        previous = row.link
        expected += 1
    if expected - 1 != head:
        return Break(session_id, min(expected, head + 1) if head >= expected else expected - 1,
                     f"the session's head is {head} but its events end at version {expected - 1}")
    if previous != head_link:
        return Break(session_id, max(head, 1), "the session's head link is not its last event's link")
    return None
