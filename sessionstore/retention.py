"""Retention as a policy: which sessions a `RetentionPolicy` names, and what a run of it did.

A product that keeps every user's sessions must also let them go: by age (`older_than`), for
some users or projects only (`where`), always keeping the newest few (`keep_last`). The store
applies a policy with the erasure that exists (`store.erase`): each expired session is erased
whole, with the sessions that are part of it (its subagents, its summariser's transcript), and
forks keep their own events as `erase` leaves them. This module is pure: the policy, its checks,
the choice of what goes, and the report; `repository.retention` runs it.

The age of a session is the time of its last activity (`SessionInfo.last_event_at`: the latest
of its start and its events' times, kept by the append): a session still being written to is not
old, however long ago it started. The choice is made at the start
of a run (one `now`), and each erasure is gated on the session's head as it was chosen: a session
appended to during the run is no longer "older than" and is kept (`RetentionReport.kept_active`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .errors import InvalidPolicy, InvalidQuery
from .finding import where_terms


@dataclass(frozen=True)
class RetentionPolicy:
    """Which sessions go: those whose last event is older than `older_than`, among the sessions
    whose metadata holds every key and value of `where` (`store.sessions(where=…)`'s filter:
    nested keys as dotted paths or nested mappings), except the newest `keep_last` of that same
    selection (the most recently started, as `sessions()` lists them), which stay however old.
    `keep_last` alone (no age) keeps the newest N of the selection and lets the rest go.

    A policy must name an age or a count: an empty policy is refused rather than read as
    "everything" (nothing is deleted that a policy does not name). `dry_run` erases nothing and
    reports exactly what would go. `reason` is kept in every tombstone (default: the policy).
    """

    older_than: timedelta | None = None
    where: Mapping[str, Any] | None = None
    keep_last: int | None = None
    dry_run: bool = False
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.older_than is not None:
            if not isinstance(self.older_than, timedelta):
                raise InvalidPolicy(f"older_than must be a timedelta, got {type(self.older_than).__name__}",
                                    field="older_than")
            if self.older_than <= timedelta(0):
                raise InvalidPolicy(f"older_than must be a positive age, got {self.older_than}", field="older_than")
            if self.older_than >= datetime.now(timezone.utc) - datetime.min.replace(tzinfo=timezone.utc):
                raise InvalidPolicy(f"older_than {self.older_than.days} days is older than any date", field="older_than")
        if self.keep_last is not None and (not isinstance(self.keep_last, int) or isinstance(self.keep_last, bool)
                                           or self.keep_last < 0):
            raise InvalidPolicy(f"keep_last must be a whole number of sessions (0 or more), got {self.keep_last!r}",
                                field="keep_last")
        if self.where is not None:
            try:
                where_terms(self.where)  # `sessions()`'s own check, before anything is read
            except InvalidQuery as exc:
                raise InvalidPolicy(str(exc), field="where") from None
        if self.older_than is None and not self.keep_last:
            raise InvalidPolicy("a retention policy must name what goes: an age (older_than) or a number of newest "
                                "sessions to keep (keep_last ≥ 1); an empty policy would erase every session",
                                field="older_than")
        if self.reason is not None and (not isinstance(self.reason, str) or not self.reason.strip()):
            raise InvalidPolicy("reason must be a non-empty string (it is kept in every tombstone)", field="reason")

    def cutoff(self, now: datetime) -> datetime | None:
        """Sessions whose last event is before this go (None: age does not matter)."""
        return None if self.older_than is None else now - self.older_than

    def describe(self) -> str:
        """The policy in one line: the default reason of its erasures."""
        words = ["retention:"]
        if self.older_than is not None:
            words.append(f"older than {age_text(self.older_than)}")
        if self.where:
            words.append("where " + ", ".join(f"{k}={v}" for k, v in self.where.items()))
        if self.keep_last:
            words.append(f"keeping the newest {self.keep_last}")
        return " ".join(words)


def age_text(age: timedelta) -> str:
    """An age as the command line writes it (``90d``, ``36h``, ``90m``, ``45s``)."""
    seconds = age.total_seconds()
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds) // size}{unit}"
    return f"{seconds:g}s"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A session of the policy's selection, as listed: its head is what its erasure is gated on."""

    session_id: str
    head: int
    last_event_at: datetime
    metadata: Mapping[str, Any]


def newest(selection: Sequence[Candidate], policy: RetentionPolicy) -> set[str]:
    """The sessions `keep_last` keeps: the first N of `selection`, which `sessions()` lists newest
    first (by their start)."""
    return {c.session_id for c in selection[:policy.keep_last or 0]}


def choose(candidates: Sequence[Candidate], kept: set[str], policy: RetentionPolicy, now: datetime
           ) -> list[Candidate]:
    """The sessions that go, oldest first: the `candidates` (the live, top-level sessions `where`
    selects, last active at or before the cutoff) less the `kept` newest ones, less those whose
    last event is not strictly before the cutoff. Ties in time are broken by id, so that the same
    store gives the same answer every time."""
    cutoff = policy.cutoff(now)
    going = [c for c in candidates if c.session_id not in kept and (cutoff is None or c.last_event_at < cutoff)]
    return sorted(going, key=lambda c: (c.last_event_at, c.session_id))


@dataclass(frozen=True, slots=True)
class Expired:
    """One session past the policy, and what its erasure reaches (`store.conversation`)."""

    session_id: str
    last_event_at: datetime
    metadata: dict[str, Any]
    parts: tuple[str, ...]  # sessions that are part of it (subagents, summariser): erased with it
    forks: tuple[str, ...]  # forks that keep their own events; their inherited history becomes tombstones
    events: int  # events whose content goes (its own and its parts')

    @property
    def sessions(self) -> tuple[str, ...]:
        return (self.session_id, *self.parts)


@dataclass(frozen=True)
class RetentionReport:
    """What a policy erased (or, on a dry run, would erase), and what was left.

    `erased` lists each expired session with its parts, oldest first; `kept_active` the sessions
    that were past the policy when the run chose them but were appended to before their erasure
    (kept: they are no longer old). `space` says how the space was given back; `bytes_before` and
    `bytes_after` are the database's (SQLite: the file's pages; PostgreSQL: the two tables with
    their indexes and TOAST), None on a dry run.
    """

    policy: RetentionPolicy
    now: datetime
    erased: tuple[Expired, ...]
    kept_active: tuple[str, ...] = ()
    space: str = ""
    bytes_before: int | None = None
    bytes_after: int | None = None
    reason: str = field(default="")

    @property
    def dry_run(self) -> bool:
        return self.policy.dry_run

    @property
    def cutoff(self) -> datetime | None:
        return self.policy.cutoff(self.now)

    @property
    def session_ids(self) -> tuple[str, ...]:
        """Every session that goes: each expired session, then its parts."""
        return tuple(sid for expired in self.erased for sid in expired.sessions)

    @property
    def events(self) -> int:
        return sum(expired.events for expired in self.erased)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON values (`sessionstore retain --json`)."""
        return {
            "dry_run": self.dry_run, "now": self.now.isoformat(),
            "cutoff": None if self.cutoff is None else self.cutoff.isoformat(),
            "where": dict(self.policy.where or {}), "keep_last": self.policy.keep_last, "reason": self.reason,
            "erased": [{"session_id": e.session_id, "last_event_at": e.last_event_at.isoformat(),
                        "parts": list(e.parts), "forks": list(e.forks), "events": e.events} for e in self.erased],
            "sessions": list(self.session_ids), "events": self.events, "kept_active": list(self.kept_active),
            "space": self.space, "bytes_before": self.bytes_before, "bytes_after": self.bytes_after,
        }


def space_text(postgres: bool, full: bool) -> str:
    """How a run gave the space of what it erased back (`RetentionReport.space`)."""
    if not postgres:
        return ("SQLite: the file was rebuilt (VACUUM) and its WAL truncated: it holds no copy of the erased "
                "content, and its size is what is left")
    if full:
        return ("PostgreSQL: VACUUM FULL rewrote the tables without the old row versions (the files shrank); the "
                "erased content stays in the server's WAL and backups until their retention ends")
    return ("PostgreSQL: VACUUM gave the old row versions' space back to the tables for new rows (the files keep "
            "their size; vacuum=True / --vacuum runs VACUUM FULL, which shrinks them under an exclusive lock); the "
            "erased content stays in the server's WAL and backups until their retention ends")


__all__ = ["Candidate", "Expired", "RetentionPolicy", "RetentionReport", "age_text", "choose", "newest",
           "space_text"]
