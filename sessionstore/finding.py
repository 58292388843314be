"""What `sessions()` is asked for, checked and planned before any SQL is written: the metadata
equalities as paths and values, the time range, the cursor.

Pure: the repository (`repository/sessions.py`) runs the plan, `storage/listing.py` writes it
in each backend's SQL. Bad input is an `InvalidQuery` naming what was wrong, raised before the
database is asked anything.

- ``where`` is metadata equality. A key is a path: ``{"adk.user_id": "u1"}`` and
  ``{"adk": {"user_id": "u1"}}`` are the same filter (every key, nested or not, splits on
  ``.``; a key that itself holds a dot cannot be matched). A value is a JSON scalar: a string,
  a number, true/false, or None (the key present and null). Lists are refused.
- ``agent`` is the agent or framework that wrote the session: the importers' ``source``
  (claude-code, codex, pi, …) or an integration's ``integration`` (langchain, langgraph).
- ``project`` is where it ran: ``project`` if the metadata names one, else ``cwd`` (the
  importers keep the agent's working directory there).
- A fork keeps its parent's ``user``, ``user_id``, agent and project keys (`FORK_KEEPS`): the
  filters find it with its conversation.
- The time range is on the session's own times: ``since`` keeps the sessions started at or after
  it, ``until`` those whose last activity is at or before it (a session lies within the range).
  A session's start is its metadata's ``started_at`` (the source's own time, for an import), else
  its first event's time, else its creation; fixed at creation. Its last activity is the latest
  of its start and its events' times, kept by the append.
- Sessions come newest first by (start, id); the cursor is the last one's (start, id), so a walk
  returns each session that existed when it began exactly once, whatever arrives meanwhile (a
  session's start never changes).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from .errors import InvalidQuery

# A path segment is written into the SQL text (an expression index matches only a literal path):
# it may hold none of the characters either backend's path syntax or quoting would read.
_SEGMENT: Final = re.compile(r"[^.\"'\\$%\[\]*\x00-\x1f]{1,128}")
MAX_WHERE: Final = 16  # equalities in one `where` (each is a term of the statement)
# The metadata keys `agent` and `project` read, first one present wins (`storage/listing.py`).
AGENT: Final = ("source", "integration")
PROJECT: Final = ("project", "cwd")
# What a fork keeps of its parent's metadata, so that the filters find it with its conversation:
# who and what made it, where (never content: a title or first prompt goes when the parent is erased).
FORK_KEEPS: Final = ("user", "user_id", *AGENT, *PROJECT)
_CURSOR: Final = "s1."
_AGES: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

Scalar = str | int | float | bool | None
# A filter term's key: a metadata path, or a name of `AGENT`/`PROJECT` ("agent", "project").
Path = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Term:
    """One equality: the metadata at `path` (or the `agent`/`project` reading when `derived`) equals `value`."""

    path: Path
    value: Scalar
    derived: str | None = None  # "agent" or "project"

    @property
    def kind(self) -> str:
        """What the SQL checks beside equality (a string, a number, true, false, null)."""
        return value_kind(self.value)


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """A checked `sessions()` request. `shape` is what its statement depends on (cached by it);
    the rest are parameters."""

    terms: tuple[Term, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    limit: int | None = None
    after: tuple[datetime, str] | None = None

    @property
    def shape(self) -> tuple[Any, ...]:
        return (tuple((t.path, t.kind, t.derived) for t in self.terms), self.since is not None,
                self.until is not None, self.after is not None)


def value_kind(value: Scalar) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def session_query(*, where: Mapping[str, Any] | None = None, since: datetime | str | None = None,
                  until: datetime | str | None = None, agent: str | None = None, project: str | None = None,
                  limit: int | None = None, after: str | None = None,
                  now: datetime | None = None) -> SessionQuery:
    """The request checked (`InvalidQuery` naming what is wrong) and planned."""
    now = now or datetime.now(timezone.utc)
    terms = list(where_terms(where)) if where is not None else []
    for name, value in (("agent", agent), ("project", project)):
        if value is not None:
            if not isinstance(value, str) or not value:
                raise InvalidQuery(f"{name} must be a non-empty string, got {value!r}", field=name)
            terms.append(Term((name,), value, derived=name))
    low = parse_when(since, "since", now) if since is not None else None
    high = parse_when(until, "until", now) if until is not None else None
    if low is not None and low > now:
        raise InvalidQuery(f"since {low.isoformat()} is in the future: no session has started yet", field="since")
    if low is not None and high is not None and low > high:
        raise InvalidQuery(f"since {low.isoformat()} is after until {high.isoformat()}", field="until")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidQuery(f"limit must be a whole number ≥ 0, got {limit!r}", field="limit")
    return SessionQuery(tuple(terms), low, high, limit, decode_cursor(after) if after is not None else None)


def where_terms(where: Mapping[str, Any], prefix: Path = ()) -> list[Term]:
    """`where` as equalities on metadata paths (nested mappings and dotted keys alike)."""
    if not isinstance(where, Mapping):
        raise InvalidQuery(f"where must be a mapping of metadata keys to values, got {type(where).__name__}",
                           field="where")
    terms: list[Term] = []
    for key, value in where.items():
        if not isinstance(key, str):
            raise InvalidQuery(f"where: a key must be a string, got {key!r}", field="where")
        path = (*prefix, *key.split("."))
        shown = ".".join(path)
        bad = next((part for part in path if not _SEGMENT.fullmatch(part)), None)
        if bad is not None:
            raise InvalidQuery(f"where: key {shown!r} has an empty part or a character a metadata path cannot hold "
                               f"(one of . \" ' \\ $ % [ ] * or a control character) in {bad!r}", field="where")
        if isinstance(value, Mapping):
            if not value:
                raise InvalidQuery(f"where: {shown!r} is an empty mapping (name a key inside it)", field="where")
            terms.extend(where_terms(value, path))
        elif value is None or isinstance(value, (str, bool, int, float)):
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidQuery(f"where: {shown!r} is {value!r}, which metadata cannot hold", field="where")
            terms.append(Term(path, value))
        else:
            raise InvalidQuery(f"where: {shown!r} must be a string, number, true/false or None, got "
                               f"{type(value).__name__} (lists and other values are not compared)", field="where")
    if len(terms) > MAX_WHERE:
        raise InvalidQuery(f"where: {len(terms)} keys, at most {MAX_WHERE}", field="where")
    return terms


def where_option(pairs: Sequence[str]) -> dict[str, Scalar]:
    """``KEY=VALUE`` texts (the CLI's ``--where``, MCP's) as a `where` mapping: a value that reads
    as a JSON number, true, false or null is that (a quoted JSON string is text), else the text."""
    where: dict[str, Scalar] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidQuery(f"where: {pair!r} is not KEY=VALUE (user=ann, adk.user_id=u1)", field="where")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(value, (dict, list)):
            value = raw
        where[key.strip()] = value
    return where


def parse_time(value: Any) -> datetime | None:
    """A source timestamp (ISO 8601 string, or epoch milliseconds) as an aware datetime; None
    when it is not one (importers keep what the source wrote: a listing must not fail on it)."""
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


def parse_age(text: str) -> timedelta | None:
    """An age written ``90d``, ``36h``, ``90m``, ``45s`` or ``2w``; None when `text` is not one (or
    is longer than a timedelta holds)."""
    value = text.strip()
    if len(value) > 1 and value[-1].lower() in _AGES and value[:-1].isdigit():
        try:
            return timedelta(seconds=int(value[:-1]) * _AGES[value[-1].lower()])
        except OverflowError:
            return None
    return None


def parse_when(value: datetime | str, name: str = "since", now: datetime | None = None) -> datetime:
    """A point in time: a datetime (naive: UTC), ISO 8601 text (``2026-11-01``,
    ``2026-11-01T12:00``, ``…Z``) or an age before now (``90m``, ``36h``, ``7d``, ``2w``)."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        raise InvalidQuery(f"{name} must be a datetime or a date text, got {type(value).__name__}", field=name)
    text = value.strip()
    if len(text) > 1 and text[-1].lower() in _AGES and text[:-1].isdigit():
        age = parse_age(text)
        try:
            if age is None:
                raise OverflowError
            return (now or datetime.now(timezone.utc)) - age
        except (OverflowError, OSError, ValueError):
            raise InvalidQuery(f"{name} {value!r} is an age longer than any date", field=name) from None
    parsed = parse_time(text) if text and not text.isdigit() else None
    if parsed is None:
        raise InvalidQuery(f"{name} {value!r} is not a date (2026-11-01, 2026-11-01T12:00) or an age (90m, 36h, "
                           "7d, 2w)", field=name)
    return parsed


def encode_cursor(started_at: datetime, session_id: str) -> str:
    """Where the next page starts: after the session (`started_at`, `session_id`). Opaque to callers."""
    raw = json.dumps([started_at.astimezone(timezone.utc).isoformat(), session_id], separators=(",", ":"))
    return _CURSOR + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    bad = InvalidQuery(f"after {cursor!r} is not a cursor that sessions() returned", field="after")
    if not isinstance(cursor, str) or not cursor.startswith(_CURSOR):
        raise bad
    body = cursor[len(_CURSOR):]
    try:
        at, sid = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        started = datetime.fromisoformat(at)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise bad from None
    if not isinstance(sid, str) or started.tzinfo is None:
        raise bad
    return started, sid


__all__ = ["AGENT", "FORK_KEEPS", "PROJECT", "parse_age", "SessionQuery", "Term", "decode_cursor", "encode_cursor", "parse_time", "parse_when",
           "session_query", "where_option", "where_terms"]
