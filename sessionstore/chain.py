"""The tamper-evident chain: what each event's hashes cover, and how links are checked.

Each event stores two hashes:

- ``content_hash`` covers what erasure destroys (the payload, as the exact JSON text that is
  stored, and the meta, canonicalised because PostgreSQL's JSONB normalises it);
- ``link`` covers the previous link of the session's lineage, the event's identity and place
  (event id, version, kind, time, token count as stored by the append) and its content hash.

**Token counts.** An append stores its events uncounted (`tokens.UNCOUNTED`, -1): the count is
made later, when the events are first read or summed (`repository/counting.py`), and written
into the row. Such a link covers -1, not the count: `ChainCheck` accepts a link computed on the
stored count or, when that fails, on -1. A count is derived data (the counter recomputes it from
the payload, which the content hash covers); a link made on a real count (events stored before
counting moved off the append) keeps covering it, since -1 does not reproduce that link.

Because the link covers the content only through its hash, erasing a session's content keeps
every link checkable: an edited payload breaks its content hash, a deleted, inserted or
reordered row breaks the links after it. A fork chains from its parent's link at the fork
version, so a lineage is one chain however many sessions it crosses.

The formulas are version 1 and frozen: the migration that gave existing databases their chain
uses them, and `verify` recomputes them. A change needs a new version tag, not an edit.

**Erasure** (`store.erase`) replaces an event's payload and meta with a tombstone
(`tombstone`) and sets its ``erased_at``, keeping its kind, version, ids, token count, content
hash and link. `ChainCheck` treats such an event as *content destroyed, hash kept*: its
content hash can no longer be recomputed, so it is taken as stored, and its link is checked
as any other. Erasure is all or nothing per session, so the checker also insists that an
event is erased exactly when the session that stores it is, and that an erased event holds
nothing but the tombstone: marking a row erased to hide an edit, or an erasure that left
content behind, is a break like any other.

**What the chain cannot see**: a session cut short together with its head and head link
(a truncation that rewrites the head consistently). Record `VerifyReport.head_link`
somewhere else (a log, a ticket, another database) to detect that too: it stands for the
whole history before it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from math import isfinite
from typing import Any, Final

from .tokens import UNCOUNTED

_GENESIS: Final = b"sessionstore/genesis/v1\x00"
_CONTENT: Final = b"sessionstore/content/v1\x00"
_LINK: Final = b"sessionstore/link/v1\x00"
_SEP: Final = b"\x00"
# What an erased event's payload becomes (exact text: `ChainCheck` compares it byte for byte).
ERASED_PAYLOAD: Final = '{"erased":true}'


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
    if isinstance(value, Mapping) and not value:
        return "{}"  # most events' meta: no need to walk it
    if _plain(value):  # JSON's own encoder spells it the same, in C (a meta of a few hundred values)
        return SORTED_JSON.encode(value)
    parts: list[str] = []
    _canonical(value, parts)
    return "".join(parts)


# Sorted keys, no spaces, ASCII: what `_canonical` writes for a `_plain` value. The store writes
# meta with it too (`events.encode_event`), so that the stored text is the canonical one.
SORTED_JSON: Final = json.JSONEncoder(ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False)
_PLAIN_INT: Final = 10 ** 15  # beyond this `_number` normalises an int through Decimal
_PLAIN_LEVELS: Final = 64  # deeper (or circular) values, and larger ones, take `_canonical`
_PLAIN_VALUES: Final = 100_000
_SCALAR: Final = frozenset({str, int, float, bool, type(None), list, tuple})


def _plain(value: Any) -> bool:
    """Whether `value` holds only what `json` spells as `_canonical` does: dicts with string keys,
    lists, tuples, strings, booleans, None, ints below `_PLAIN_INT` and floats with a fraction
    written without an exponent (`_number` normalises the others: ``2.0`` as ``2``, ``1e-05`` as
    ``0.00001``; no other type: `_canonical` decides). A level at a time, bounded, so that
    a circular value is left to `_canonical` (which refuses it as before)."""
    level = [value]
    seen = 0
    for _ in range(_PLAIN_LEVELS):
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is dict or (kind not in _SCALAR and isinstance(item, dict)):  # `EncodedMeta` is a dict
                for key in item:
                    if type(key) is not str:
                        return False
                below.extend(item.values())
            elif kind is list or kind is tuple:
                below.extend(item)
            elif kind is int:
                if not -_PLAIN_INT < item < _PLAIN_INT:
                    return False
            elif kind is float:  # json's repr, when it has a fraction and no exponent, is `_number`'s text
                if item.is_integer() or not isfinite(item) or "e" in repr(item):
                    return False
            elif not (kind is str or kind is bool or item is None):
                return False
        seen += len(below)
        if not below:
            return True
        if seen > _PLAIN_VALUES:
            return False
        level = below
    return False


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
    return json.dumps(text, ensure_ascii=True)


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value) if -(10 ** 15) < value < 10 ** 15 else format(Decimal(value).normalize(), "f")
    if value == int(value) and abs(value) < 10 ** 15:
        return str(int(value))
    return format(Decimal(repr(value)).normalize(), "f")


def content_hash(payload_json: str, meta: Mapping[str, Any], meta_json: str | None = None) -> str:
    """The hash of what erasure destroys: the stored payload text and the (canonical) meta.

    `meta_json`, the meta's text as `events.encode_event` wrote it (`SORTED_JSON`), is the
    canonical text itself when the meta is `_plain`, and gives it otherwise (`canonical_text`):
    an append hashes it without encoding the meta a second time."""
    if meta_json is None:
        canonical = canonical_json(meta)
    else:
        canonical = meta_json if meta_json == "{}" or _plain(meta) else canonical_text(meta_json)
    data = _CONTENT + _utf8(payload_json) + _SEP + _utf8(canonical)
    return hashlib.sha256(data).hexdigest()


def canonical_text(sorted_json: str) -> str:
    """`canonical_json` of the value whose `SORTED_JSON` text is `sorted_json`.

    The two spell every string, key order, integer, boolean and null alike; they differ only where
    `_number` normalises a float that JSON writes with an exponent (``1e-05``) or as an integral
    ``2.0``, which only such a text can hold (a value is read back from it as `json.loads` gives
    it, so `verify` hashes what this does). Pi's costs (``5e-06``) are the common case: the floats
    are rewritten in the text (a C scan) instead of the meta walked in Python; a meta that has
    none is `_plain` (`content_hash` asks that first: it walks values, not characters)."""
    parts = _STRING.split(sorted_json)  # the strings at odd places, what lies between them at even ones
    for i in range(0, len(parts), 2):
        if "e" in parts[i] or "." in parts[i]:
            parts[i] = _ABNORMAL_FLOAT.sub(_normal_float, parts[i])
    return "".join(parts)


# A JSON string (ASCII-escaped: no raw quote inside; written unrolled, which scans a long one
# far faster than an alternation a character).
_STRING: Final = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")')
# A float as JSON writes it that `_number` spells otherwise: with an exponent, or integral.
_ABNORMAL_FLOAT: Final = re.compile(r"-?[0-9]+(?:\.[0-9]+)?e[-+]?[0-9]+|-?[0-9]+\.0(?![0-9])")


def _normal_float(match: re.Match[str]) -> str:
    return _number(float(match.group()))


def utc_text(moment: datetime) -> str:
    """A time as both backends give it back: UTC, microseconds."""
    if moment.tzinfo is not timezone.utc:  # the common case skips the conversion (every append hashes a time)
        moment = moment.astimezone(timezone.utc)
    # What `moment.replace(tzinfo=None).isoformat(timespec="microseconds")` writes, in half the time
    return "%04d-%02d-%02dT%02d:%02d:%02d.%06d" % (moment.year, moment.month, moment.day, moment.hour, moment.minute,
                                                  moment.second, moment.microsecond)


def link(previous: str, *, event_id: str, version: int, kind: str, created_at: datetime, tokens: int,
         content: str) -> str:
    """The link of an event: the previous link, the event's identity and place, its content hash."""
    return link_at(previous, event_id, version, kind, utc_text(created_at).encode("ascii"), tokens, content)


def link_at(previous: str, event_id: str, version: int, kind: str, time: bytes, tokens: int, content: str) -> str:
    """`link` with the time already as its `utc_text` bytes: a batch's events most often share
    one time, which an append then writes out once, not once an event."""
    data = _SEP.join((_LINK + previous.encode("ascii"), _utf8(event_id), str(version).encode("ascii"),
                      kind.encode("ascii", "replace"), time, str(tokens).encode("ascii"), content.encode("ascii")))
    return hashlib.sha256(data).hexdigest()


def tombstone(reason: str) -> tuple[str, dict[str, Any]]:
    """The payload text and meta that replace an erased event's content."""
    return ERASED_PAYLOAD, {"erase_reason": reason}


def is_tombstone(payload_json: str, meta: Mapping[str, Any]) -> bool:
    return (json.loads(payload_json) == json.loads(ERASED_PAYLOAD) and set(meta) == {"erase_reason"}
            and isinstance(meta["erase_reason"], str))


@dataclass(frozen=True, slots=True)
class Link:
    """What the chain needs of a stored event (its content may be erased).

    `erased`: the row is marked erased; `owner_erased`: the session that stores the row is
    (for a fork's inherited history, an ancestor). `payload_json` None means the caller has
    no content to check (it is taken as destroyed).
    """

    version: int
    event_id: str
    kind: str
    created_at: datetime
    tokens: int
    content_hash: str
    link: str
    payload_json: str | None
    meta: Mapping[str, Any] | None
    erased: bool = False
    owner_erased: bool = False


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """The first place a session's chain does not hold, and why."""

    session_id: str
    version: int
    reason: str


class ChainCheck:
    """Checks a lineage's events fed in version order, one at a time (constant memory).

    `base` is the version before the first row. Finds a gap or a duplicate version (a deleted
    or inserted row), a content that does not match its hash (an edited payload or meta), a
    link that does not follow from the previous one (an edited identity, a reordered row), an
    erasure that does not hold (see the module docstring), and, at `finish`, a head that does
    not end the chain.
    """

    def __init__(self, session_id: str, start: str, base: int = 0) -> None:
        self.session_id = session_id
        self.previous = start
        self.expected = base + 1
        self.checked = 0
        self.broken: ChainBreak | None = None

    def add(self, row: Link) -> bool:
        """Check the next row; False once the chain is broken (later rows are not looked at)."""
        if self.broken is None:
            self.broken = self._check(row)
            if self.broken is None:
                self.previous = row.link
                self.expected += 1
                self.checked += 1
        return self.broken is None

    def _check(self, row: Link) -> ChainBreak | None:
        def broken(reason: str, version: int = row.version) -> ChainBreak:
            return ChainBreak(self.session_id, version, reason)

        if row.version != self.expected:
            what = "missing" if row.version > self.expected else "duplicated or out of order"
            return broken(f"version {self.expected} is {what}", min(row.version, self.expected))
        if row.erased != row.owner_erased:
            return broken("the event is marked erased but its session is not (a forged erasure)" if row.erased
                          else "the session was erased but this event's content was not")
        if row.payload_json is not None:
            if row.erased and not is_tombstone(row.payload_json, row.meta or {}):
                return broken("the event is erased but holds content other than its tombstone")
            if not row.erased and content_hash(row.payload_json, row.meta or {}) != row.content_hash:
                return broken("the content does not match its hash (edited payload or meta)")
        computed = link(self.previous, event_id=row.event_id, version=row.version, kind=row.kind,
                        created_at=row.created_at, tokens=row.tokens, content=row.content_hash)
        if computed != row.link and row.tokens != UNCOUNTED:  # appended uncounted, counted since?
            computed = link(self.previous, event_id=row.event_id, version=row.version, kind=row.kind,
                            created_at=row.created_at, tokens=UNCOUNTED, content=row.content_hash)
        if computed != row.link:
            return broken("the link does not follow from the previous event (an edited, inserted or reordered event)")
        return None

    def finish(self, head: int, head_link: str) -> ChainBreak | None:
        """The first break, after checking that the session's head ends the chain."""
        if self.broken is not None:
            return self.broken
        last = self.expected - 1
        if last != head:
            return ChainBreak(self.session_id, head + 1 if last > head else self.expected,
                              f"the session's head is {head} but its events end at version {last}")
        if self.previous != head_link:
            return ChainBreak(self.session_id, max(head, 1), "the session's head link is not its last event's link")
        return None


def first_break(session_id: str, start: str, rows: Iterable[Link], head: int, head_link: str,
                base: int = 0) -> ChainBreak | None:
    """Check a lineage's events in version order against the chain that starts at `start`
    (`ChainCheck` over an iterable)."""
    check = ChainCheck(session_id, start, base)
    for row in rows:
        if not check.add(row):
            break
    return check.finish(head, head_link)
