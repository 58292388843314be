"""What every statement module of the store shares: `Prepared` (a statement compiled once for a
dialect, run on the driver connection), the `Compiler` the builders are handed (`Statements`),
the column lists rows come back in, and the SQL fragments several statements are built from.

The statements themselves are grouped by what they serve: `statements` (reads, sessions,
listings, erasure), `appends` (the gated append and its parameters), `search_statements` (the
search index's queries); `decoding` turns the rows they return into values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final, Protocol

from sqlalchemy import Dialect, Text, and_, bindparam, cast, func, literal_column, or_, tuple_

from .packing import SQL_FUNCTION
from .tables import events, sessions


class Compiler(Protocol):
    """What a statement builder needs of `Statements`: its backend and its compiler."""

    postgres: bool
    distributed: bool
    dialect: Dialect

    def _prepare(self, statement: Any) -> Prepared: ...


# Versions are Integer columns: "no upper bound" is the largest one.
NO_LIMIT: Final = 2**31 - 1


# Rows per append statement: within SQLite's 32,766 and PostgreSQL's 65,535 parameters.
APPEND_CHUNK: Final = 500


EVENT_COLUMNS: Final = (events.c.event_id, events.c.session_id, events.c.version, events.c.position, events.c.kind,
                        events.c.payload, events.c.meta, events.c.tokens, events.c.created_at, events.c.erased_at)


SESSION_COLUMNS: Final = (sessions.c.id, sessions.c.created_at, sessions.c.metadata, sessions.c.parent_id,
                          sessions.c.fork_version, sessions.c.head, sessions.c.erased_at, sessions.c.erase_reason,
                          sessions.c.started_at, sessions.c.last_event_at)


APPENDED_COLUMNS: Final = ("version", "event_id", "kind", "call_id", "payload", "meta", "tokens", "created_at",
                           "content_hash", "link")


class Prepared:
    """A statement compiled for one dialect; `params` orders values as the driver wants them."""

    __slots__ = ("sql", "_pick", "_defaults")

    def __init__(self, statement: Any, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect) if not isinstance(statement, str) else None
        self.sql: str = compiled.string if compiled is not None else statement
        order = tuple(compiled.positiontup or ()) if compiled is not None and dialect.positional else ()
        # Values the compiler bound itself (e.g. SQLite's OFFSET 0 after a LIMIT parameter).
        self._defaults = {name: bind.value for name, bind in compiled.binds.items()
                          if bind.value is not None} if compiled is not None else {}
        self._pick: Callable[[Mapping[str, Any]], Any] | None = None
        if order:
            pick = itemgetter(*order)
            self._pick = pick if len(order) > 1 else (lambda values: (pick(values),))

    def params(self, values: Mapping[str, Any] | Sequence[Any]) -> Sequence[Any] | Mapping[str, Any]:
        if self._defaults:
            values = {**self._defaults, **(values or {})}  # type: ignore[dict-item]
        return values if self._pick is None else self._pick(values)

    def __repr__(self) -> str:
        return f"Prepared({self.sql!r})"


def payload_text(postgres: bool, key: str, source: str = "events") -> Any:
    """The payload's top-level `key` as SQL text, written out (no bound JSON path to prepare);
    `source` names the table or alias the payload is read from.

    PostgreSQL's text cannot hold a JSON string's \\u0000 or lone surrogate, and ``->>`` refuses
    the whole payload when any of its strings has one (a tool input holding a NUL made every
    search that hit its call fail): such a payload is read with those escapes as spaces, as the
    search index reads it (migration 0003's `sessionstore_search_text`)."""
    if not postgres:  # (a large payload is stored compressed: `storage/packing.py`)
        return literal_column(f"json_extract({SQL_FUNCTION}({source}.payload), '$.{key}')")
    payload = f"{source}.payload"
    return literal_column(
        rf"(CASE WHEN {payload}::text ~ '\\u(0000|[dD][89abcdefABCDEF])' "
        rf"THEN regexp_replace(replace({payload}::text, '\\', '\u005c'), "
        rf"'\\u(0000|[dD][89abcdefABCDEF][0-9a-fA-F]{{2}})', '\u0020', 'g')::json ELSE {payload} END) ->> '{key}'")


def lineage(n: int, after: str = "lo", upto: str = "hi", source: Any = events) -> Any:
    """Versions (lo_i, hi_i] of segment i stored under session s_i, for the n segments of a lineage
    (of the events table, or of `source`, a subquery with its columns)."""
    parts = [and_(source.c.session_id == bindparam(f"s{i}"), source.c.version > bindparam(f"{after}{i}"),
                  source.c.version <= bindparam(f"{upto}{i}")) for i in range(n)]
    return parts[0] if n == 1 else or_(*parts)


def stored_text(st: Compiler) -> Any:
    """The payload as its stored JSON text (SQLite: uncompressed, `storage/packing.py`)."""
    return cast(events.c.payload, Text) if st.postgres else getattr(func, SQL_FUNCTION)(events.c.payload)


def node_places(groups: int, *, bounded: bool = True) -> Any:
    """Citus: the events after each node group's place (`:x{i}`, `:p{i}`) in its txid range
    [`:b{i}`, `:e{i}`), below its horizon `:u{i}` if `bounded`, and those of the retired rest
    after `:xr`, `:pr` (see `repository.feed.page_params`)."""
    place = tuple_(events.c.txid, events.c.position)
    own = [and_(events.c.txid >= bindparam(f"b{i}"), events.c.txid < bindparam(f"u{i}" if bounded else f"e{i}"),
                place > tuple_(bindparam(f"x{i}"), bindparam(f"p{i}"))) for i in range(groups)]
    retired = and_(*[or_(events.c.txid < bindparam(f"b{i}"), events.c.txid >= bindparam(f"e{i}"))
                     for i in range(groups)], place > tuple_(bindparam("xr"), bindparam("pr")))
    return or_(*own, retired)
