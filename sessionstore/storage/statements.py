"""The append hot path's SQL, compiled once per dialect by SQLAlchemy and run on the DBAPI cursor.

Building and compiling a Core statement costs more than SQLite takes to execute it, and an
append is a handful of tiny statements. So the statements are written once in Core, against
the same table objects as everything else, compiled once for the engine's dialect, and run
with already-encoded parameters: a single append stays within a small factor of a raw
`sqlite3` loop (see scripts/bench_append.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final

from sqlalchemy import Dialect, bindparam, select

from .tables import UTCDateTime, events, sessions

INSERT_COLUMNS: Final = ("session_id", "version", "event_id", "kind", "call_id", "payload", "meta", "tokens",
                         "created_at")


class Prepared:
    """A Core statement compiled for one dialect; `params` orders values as the driver wants them."""

    def __init__(self, statement: Any, dialect: Dialect, column_keys: Sequence[str] | None = None) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=list(column_keys) if column_keys else None)
        self.sql: str = compiled.string
        order = tuple(compiled.positiontup or ()) if dialect.positional else ()
        self._pick: Callable[[Mapping[str, Any]], Any] | None = None
        if order:
            pick = itemgetter(*order)
            self._pick = pick if len(order) > 1 else (lambda values: (pick(values),))

    def params(self, values: Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
        return values if self._pick is None else self._pick(values)


class AppendStatements:
    """Advance a session's head, insert events, read back their positions."""

    def __init__(self, dialect: Dialect) -> None:
        session = sessions.c.id == bindparam("sid")
        advance = sessions.update().where(session).values(head=sessions.c.head + bindparam("n"))
        self.advance = Prepared(advance.returning(sessions.c.head), dialect)
        self.advance_from = Prepared(
            advance.where(sessions.c.head == bindparam("expected")).returning(sessions.c.head), dialect)
        self.insert = Prepared(events.insert(), dialect, INSERT_COLUMNS)
        # One event: its position comes back with the insert (a batch reads them back by version).
        self.insert_one = Prepared(events.insert().returning(events.c.position), dialect, INSERT_COLUMNS)
        self.positions = Prepared(
            select(events.c.position)
            .where(events.c.session_id == bindparam("sid"), events.c.version >= bindparam("first"),
                   events.c.version <= bindparam("last"))
            .order_by(events.c.version), dialect)
        # PostgreSQL hands out positions at insert but commits in any order; serialising the
        # inserts makes commit order equal position order, so catch-up readers never skip.
        self.lock: str | None = "LOCK TABLE events IN EXCLUSIVE MODE" if dialect.name == "postgresql" else None
        self.bind_time: Callable[[Any], Any] = UTCDateTime().bind_processor(dialect) or (lambda value: value)
