"""What a repository program asks of its door: the only I/O the repository does.

A *program* is a generator: it yields operations — run this prepared statement, open or end
a transaction, ask the summariser — and receives their results (or has the error thrown
into it). The repository logic is written once as programs; `SessionStore` runs them on
blocking drivers in the caller's thread, `AsyncSessionStore` on the same drivers in threads of
its own while the caller's loop awaits, and neither knows what a session is (httpx's
Client/AsyncClient share their model the same way). This keeps the logic testable without a
database and makes "only where it waits differs" literal.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, TypeVar

from ..storage.statements import Prepared
from ..summarizers.base import SummaryBatch

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Execute:
    """Run `statement` with `params`; the result is its rows (a list of tuples, empty for none).

    Outside a transaction each statement commits on its own (the connections are in
    autocommit mode): an append is a single statement, and reads need no transaction because
    a session's history below its head never changes.
    """

    statement: Prepared
    params: Sequence[Any] | Mapping[str, Any] = ()
    # On Citus: the one session the statement touches, outside a transaction, so that a door may
    # send it straight to the node holding that session (`storage/placement.py`).
    session: str | None = None


@dataclass(frozen=True, slots=True)
class Transaction:
    """BEGIN (`begin=True`; SQLite takes the write lock at once), or COMMIT / ROLLBACK.

    If a statement fails inside a transaction the door rolls it back before the error reaches
    the program, and a program that ends with a transaction open has it rolled back.
    """

    action: str  # "begin" | "commit" | "rollback"
    # On Citus, a transaction of one session's: begun where a door may run all of it on the node
    # holding that session (`Execute.session`); its statements and its end follow it there.
    session: str | None = None


@dataclass(frozen=True, slots=True)
class Atomically:
    """Run `steps` — (statement, params) pairs — in order in a transaction of their own (begun,
    committed; rolled back when one fails, its error then thrown into the program as `Execute`'s
    is); the result is the last one's rows.

    One step of the program for a whole write whose statements are known before it starts:
    SQLite's append is three statements and a transaction, and a program's step costs about what
    a short statement does (docs/benchmarks.md, "A fourth pass at 39.4")."""

    steps: tuple[tuple[Prepared, Sequence[Any] | Mapping[str, Any]], ...]
    session: str | None = None  # (as `Execute.session`)


BEGIN: Final = Transaction("begin")
COMMIT: Final = Transaction("commit")
ROLLBACK: Final = Transaction("rollback")


@dataclass(frozen=True, slots=True)
class Summarize:
    """Ask the summariser for a batch of compaction planning: the doors answer it with
    `summarizers.drive.answer` (threads) or `aanswer` (asyncio); the result is, in order, each
    request's text or the exception it raised (`ContextOverflow` is how planning learns to slice)."""

    summarizer: Any
    batch: SummaryBatch


Op: TypeAlias = Execute | Atomically | Transaction | Summarize
Program: TypeAlias = Generator[Op, Any, T]


class Conflict(Exception):
    """A uniqueness constraint refused a write (another writer took the version, or the event id
    is stored): the program decides whether it is a retry, a replay or a `ConcurrencyError`."""


def translate(error: BaseException, dbapi: Any) -> BaseException:
    """A driver error as the program should see it: integrity errors become `Conflict`, a
    missing schema `SchemaNotReady`; everything else unchanged."""
    from ..errors import SchemaNotReady

    if isinstance(error, dbapi.IntegrityError):
        return Conflict(str(error))
    text = str(error).lower()
    if isinstance(error, (dbapi.OperationalError, dbapi.ProgrammingError)) and (
            "no such table" in text or "no such column" in text
            or (("relation" in text or "column" in text) and "does not exist" in text)):
        return SchemaNotReady("the database has no sessionstore schema (or an older one): run store.migrate() or "
                              "`sessionstore db upgrade`")
    return error


def connection_errors(dbapi: Any) -> tuple[type[BaseException], ...]:
    """The driver errors after which a connection is not reused (not every adapter has both)."""
    return tuple(getattr(dbapi, name) for name in ("OperationalError", "InterfaceError") if hasattr(dbapi, name))
