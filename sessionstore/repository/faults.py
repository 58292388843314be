"""What a driver error means, and whether the store may try again by itself.

Both doors run every call through `Attempts` (see `drive.run`/`drive.arun`): a lost
connection (a server restart, `pg_terminate_backend`, a dropped socket) or a server that
cannot be reached yet is retried on a fresh connection with growing delays, up to a bound the
caller sets. That is exact for every program, writes included: reads are read again, and an
append whose outcome is unknown is re-sent with the *same* event ids, which the store's
idempotent append turns into "return the original result" when the first try was stored.
A compaction re-asks its summariser nothing: the answers of a call are kept across its tries.
A transaction the server rolled back to break a deadlock is tried again the same way (on
Citus, the distributed deadlock detector may stop one of the writers queued on a session).
Conflicts are never retried here (the programs decide those, and `ConcurrencyError` reaches
the caller). Anything else from the driver reaches the caller as a typed `DatabaseError`
with the driver's exception as its cause.

SQLite's write lock is waited for by SQLite itself (the busy timeout, 30 s), on the thread whose
connection asks for it — the caller's for `SessionStore`, one of the store's for
`AsyncSessionStore`, never an event loop's — and a wait past it is `StatementTimeout`. A
transaction whose snapshot went stale before it could write (SQLITE_BUSY_SNAPSHOT: another
connection wrote first; SQLite does not wait then) did nothing and is tried again at once, like
a deadlock victim.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from ..errors import ConfigurationError, DatabaseError, DatabaseReadOnly, DatabaseUnavailable, StatementTimeout, StorageFull

DEFAULT_RETRY_TIMEOUT: Final = 30.0


class Fault(Enum):
    LOST = "lost"                # the connection broke, or the server is restarting: try again
    UNREACHABLE = "unreachable"  # no connection could be made: try again (the server may be starting)
    FULL = "full"
    READ_ONLY = "read_only"
    TIMEOUT = "timeout"
    # The server ended the transaction to break a deadlock (Citus's detector among them) or a
    # serialization conflict: nothing of it was stored, and the same call can go ahead.
    ROLLED_BACK = "rolled_back"
    OTHER = "other"


RETRIED: Final = frozenset({Fault.LOST, Fault.UNREACHABLE, Fault.ROLLED_BACK})
# Faults after which the connection is still good (a lock waited for too long, a transaction
# the server rolled back): kept, not replaced.
CONNECTION_KEPT: Final = frozenset({Fault.TIMEOUT, Fault.ROLLED_BACK})
TYPED: Final[dict[Fault, type[DatabaseError]]] = {
    Fault.LOST: DatabaseUnavailable, Fault.UNREACHABLE: DatabaseUnavailable, Fault.FULL: StorageFull,
    Fault.READ_ONLY: DatabaseReadOnly, Fault.TIMEOUT: StatementTimeout, Fault.ROLLED_BACK: DatabaseError,
    Fault.OTHER: DatabaseError,
}

# SQLite's primary result codes (sqlite3 exceptions carry them, extended, as `sqlite_errorcode`):
# busy and locked (past the busy timeout), read-only, full. An embedded file has no connection to
# lose (a file that cannot be opened stays so): what SQLite retries is a stale snapshot (below).
_SQLITE: Final = {5: Fault.TIMEOUT, 6: Fault.TIMEOUT, 8: Fault.READ_ONLY, 13: Fault.FULL}
# Extended codes that mean more than their primary one: SQLITE_BUSY_SNAPSHOT.
_SQLITE_EXTENDED: Final = {517: Fault.ROLLED_BACK}
# PostgreSQL SQLSTATEs: admin/crash shutdown, cannot connect now, too many connections, disk full,
# out of memory, read-only transaction, query cancelled (statement_timeout), lock timeout,
# deadlock detected, serialization failure.
_SQLSTATE: Final = {"57P01": Fault.LOST, "57P02": Fault.LOST, "57P03": Fault.UNREACHABLE, "53300": Fault.UNREACHABLE,
                    "08000": Fault.LOST, "08003": Fault.LOST, "08006": Fault.LOST, "08001": Fault.UNREACHABLE,
                    "08004": Fault.UNREACHABLE, "53100": Fault.FULL, "25006": Fault.READ_ONLY,
                    "57014": Fault.TIMEOUT, "55P03": Fault.TIMEOUT, "40P01": Fault.ROLLED_BACK,
                    "40001": Fault.ROLLED_BACK}
_LOST_WORDS: Final = ("server closed the connection", "connection is lost", "consuming input failed",
                      "connection already closed", "the connection is closed", "terminating connection",
                      "connection reset", "broken pipe", "ssl syscall error", "no connection to the server",
                      "sending query failed", "connection has been closed")
_UNREACHABLE_WORDS: Final = ("connection refused", "could not connect", "connection failed", "could not translate host",
                             "timeout expired", "no such host", "name or service not known",
                             "the database system is starting up", "the database system is shutting down")


def driver_error(error: BaseException) -> BaseException:
    """The driver's own exception (SQLAlchemy wraps those raised while connecting)."""
    if isinstance(error, DBAPIError) and error.orig is not None:
        return error.orig
    return error


def is_driver_error(error: BaseException, dbapi: Any) -> bool:
    return isinstance(driver_error(error), dbapi.Error)


def classify(error: BaseException, dbapi: Any) -> Fault:
    """What a driver error means for the caller (see `Fault`)."""
    error = driver_error(error)
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return _SQLITE_EXTENDED.get(code) or _SQLITE.get(code & 0xFF, Fault.OTHER)
    state = getattr(error, "sqlstate", None) or getattr(getattr(error, "diag", None), "sqlstate", None)
    if state in _SQLSTATE:
        return _SQLSTATE[state]
    text = str(error).lower()
    if isinstance(error, getattr(dbapi, "OperationalError", ())) or isinstance(error, getattr(dbapi, "InterfaceError", ())):
        if any(words in text for words in _UNREACHABLE_WORDS):
            return Fault.UNREACHABLE
        if any(words in text for words in _LOST_WORDS) or state is None:
            return Fault.LOST
    if "disk is full" in text or "no space left" in text:
        return Fault.FULL
    if "readonly" in text or "read-only" in text:
        return Fault.READ_ONLY
    return Fault.OTHER


def connection_kept(error: BaseException, dbapi: Any) -> bool:
    """Whether the connection that raised `error` is still good (see `CONNECTION_KEPT`)."""
    return classify(error, dbapi) in CONNECTION_KEPT


def describe(url: URL) -> str:
    """The database, as an error names it: never its password."""
    if url.get_backend_name() == "sqlite":
        return f"SQLite file {url.database}" if url.database not in (None, "", ":memory:") else "SQLite in memory"
    host = url.host or "localhost"
    port = f":{url.port}" if url.port else ""
    user = f"{url.username}@" if url.username else ""
    return f"PostgreSQL {user}{host}{port}/{url.database or ''}"


def typed(error: BaseException, fault: Fault, where: str) -> DatabaseError:
    detail = " ".join(str(driver_error(error)).split()) or type(error).__name__
    return TYPED[fault](where, detail)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long a call may keep retrying a lost connection before `DatabaseUnavailable`.

    The first retry is immediate (the common case is one dead pooled connection after a
    server restart), then the delay doubles from `initial_delay` up to `max_delay`.
    ``RetryPolicy(timeout=0)`` turns retrying off. The default bound is 30 s, or
    ``$SESSIONSTORE_RETRY_TIMEOUT`` seconds when set.
    """

    timeout: float = DEFAULT_RETRY_TIMEOUT
    initial_delay: float = 0.05
    max_delay: float = 2.0

    def delays(self) -> Iterator[float]:
        yield 0.0
        delay = self.initial_delay
        while True:
            yield delay
            delay = min(self.max_delay, delay * 2)

    @classmethod
    def of(cls, value: RetryPolicy | float | None) -> RetryPolicy:
        if isinstance(value, RetryPolicy):
            return value
        source = "retry_timeout"
        if value is None:
            source, raw = "$SESSIONSTORE_RETRY_TIMEOUT", os.environ.get("SESSIONSTORE_RETRY_TIMEOUT")
            if raw is None:
                return cls()
            try:
                value = float(raw)
            except ValueError:
                value = raw  # type: ignore[assignment]  # refused just below
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            raise ConfigurationError(f"{source} must be a number of seconds >= 0 or a RetryPolicy, got {value!r}")
        return cls(timeout=float(value))


class Attempts:
    """The tries of one call: whether the next may go ahead, after how long, and the summaries
    already answered (so that a retried compaction does not ask its model twice)."""

    __slots__ = ("policy", "dbapi", "where", "summaries", "_clock", "_deadline", "_delays")

    def __init__(self, policy: RetryPolicy, dbapi: Any, where: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # Made for every call of a store: the clock is read and the delays drawn only once a try
        # has failed, which is rare.
        self.policy = policy
        self.dbapi = dbapi
        self.where = where
        self.summaries: dict[Any, list[Any]] = {}
        self._clock = clock
        self._deadline: float | None = None
        self._delays: Iterator[float] | None = None

    def delay(self, error: BaseException) -> float:
        """Seconds to wait before the next try of the call that raised `error` (a driver error:
        `is_driver_error`), or the typed error to raise instead, the driver's exception its cause."""
        fault = classify(error, self.dbapi)
        if fault in RETRIED:
            if self._deadline is None or self._delays is None:  # the first failure of this call
                self._deadline = self._clock() + self.policy.timeout
                self._delays = self.policy.delays()
            delay = next(self._delays)
            if self._clock() + delay <= self._deadline:
                return delay
        raise typed(error, fault, self.where) from driver_error(error)

    def summary_key(self, op: Any) -> Any:
        """Summary requests are keyed by their content: a retry that plans the same decision
        gets the same answers, one that plans another (the history moved) asks afresh."""
        return (id(op.summarizer), repr(op.batch))
