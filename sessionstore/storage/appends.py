"""The append's statements and parameters: ONE gated statement on PostgreSQL; on SQLite, in one
write transaction, the head moved by a compare-and-set, the rows inserted plain, the last
position read back; on Citus a call of `sessionstore_append`, which runs on the node holding the
session (`statements`'s docstring says why each is shaped so). Large payloads and metas are
packed on SQLite (`storage/packing.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Final


from .packing import PACK_FROM, pack
from .prepared import APPEND_CHUNK, APPENDED_COLUMNS, Compiler, Prepared


@lru_cache(maxsize=1024)
def gated_append(st: Compiler, rows: int) -> Prepared:
    """PostgreSQL: the gated one-statement insert of `rows` events (see the module docstring).

    On PostgreSQL a batch of `PG_ARRAYS_FROM` rows or more travels as one array per column
    (`unnest`): the statement's text is then the same whatever the batch size, so psycopg
    converts it once and prepares it on the server, where a 500-row VALUES list is a
    5,000-placeholder query that psycopg re-parses and PostgreSQL re-plans on every call (a
    third of the speed, measured). A small batch keeps its VALUES list: dumping ten arrays
    costs more than a few scalars, and the short text is cached and prepared all the same.
    """
    columns = ", ".join(("session_id", *APPENDED_COLUMNS))
    names = ", ".join(APPENDED_COLUMNS)
    if rows >= PG_ARRAYS_FROM:
        arrays = _PG_ARRAYS
        picked = ", ".join(f"v.{n}::{_PG_CASTS[n]}" if n in _PG_CASTS else f"v.{n}" for n in APPENDED_COLUMNS)
        source = f"unnest({arrays})"
    else:
        source = "(VALUES " + ", ".join(
            "(" + ", ".join(f"%(r{r}_{c})s::{_PG_CASTS.get(n, t)}"
                            for c, (n, t) in enumerate(zip(APPENDED_COLUMNS, _PG_TYPES))) + ")"
            for r in range(rows)) + ")"
        picked = ", ".join(f"v.{n}" for n in APPENDED_COLUMNS)
    sql = (f"WITH gate AS (UPDATE sessions SET head = %(last)s, head_link = %(last_link)s, "
           f"last_event_at = GREATEST(last_event_at, %(last_at)s) "
           f"WHERE id = %(sid)s AND head = %(known)s AND erased_at IS NULL RETURNING id) "
           f"INSERT INTO events ({columns}, txid) "
           f"SELECT gate.id, {picked}, pg_current_xact_id()::text::bigint "
           f"FROM gate CROSS JOIN {source} AS v({names}) RETURNING position, version")
    return Prepared(sql, st.dialect)


@lru_cache(maxsize=64)
def batch_rows(st: Compiler, rows: int) -> Prepared:
    """SQLite: `rows` events inserted plain. No RETURNING: SQLite runs one as a trigger filling a
    temporary table (~10 µs of a single append's 63, measured); `last_insert_rowid()` tells
    where they went (`sqlite_steps`)."""
    width = len(APPENDED_COLUMNS) + 1
    values = ", ".join("(" + ", ".join("?" * width) + ")" for _ in range(rows))
    return Prepared(f"INSERT INTO events (session_id, {', '.join(APPENDED_COLUMNS)}) VALUES {values}", st.dialect)


def packed(row: Sequence[Any]) -> Sequence[Any]:
    """SQLite: an appended row with its payload and meta packed (`storage/packing.py`); the row
    as it came when both are short, as most are."""
    payload, meta = row[_PAYLOAD], row[_PAYLOAD + 1]
    if len(payload) < PACK_FROM and len(meta) < PACK_FROM:
        return row
    return (*row[:_PAYLOAD], pack(payload), pack(meta), *row[_PAYLOAD + 2:])


@lru_cache(maxsize=8)
def _sqlite_head(st: Compiler) -> tuple[Prepared, Prepared]:
    """SQLite: the head moved past a batch — or a NOT NULL error unless it is still the one the
    batch was built on and the session is not erased (`statements`'s docstring) — and, after
    the rows, where the last one went."""
    return (Prepared("UPDATE sessions SET head = CASE WHEN head = ? AND erased_at IS NULL THEN ? END, "
                     "head_link = ?, last_event_at = MAX(last_event_at, ?) WHERE id = ?", st.dialect),
            Prepared("SELECT last_insert_rowid()", st.dialect))


def sqlite_steps(st: Compiler, session_id: str, known: int, rows: Sequence[Sequence[Any]],
                 last_link: str) -> tuple[tuple[Prepared, Sequence[Any]], ...]:
    """SQLite: the statements of an append after version `known`, with their parameters, to run
    in one write transaction: the head moved past `rows` (refused unless it is still `known`),
    the rows inserted (at most `APPEND_CHUNK` a statement), the last position read."""
    advance_head, last_position = _sqlite_head(st)
    last_at = rows[0][_TIME] if len(rows) == 1 else max(row[_TIME] for row in rows)
    steps: list[tuple[Prepared, Sequence[Any]]] = [
        (advance_head, (known, known + len(rows), last_link, last_at, session_id))]
    for start in range(0, len(rows), APPEND_CHUNK):
        chunk = rows[start:start + APPEND_CHUNK]
        flat: list[Any] = []
        for row in chunk:
            flat.append(session_id)
            flat.extend(packed(row))
        steps.append((batch_rows(st, len(chunk)), flat))
    steps.append((last_position, ()))
    return tuple(steps)


@lru_cache(maxsize=64)
def distributed_append(st: Compiler, rows: int) -> Prepared:
    """Citus: the gated append as one call of `sessionstore_append` (`storage/distribution.py`),
    which Citus runs on the node holding the session. A column travels as one array (a long
    batch) or as an ARRAY[…] of scalars (a short one: cheaper to send than a list to adapt);
    `:registered`, the ids to register store-wide, as one array (most often empty)."""
    if rows >= PG_ARRAYS_FROM:
        arrays = _PG_ARRAYS
    else:
        arrays = ", ".join("ARRAY[" + ", ".join(f"%(r{r}_{c})s::{t}" for r in range(rows)) + "]"
                           for c, t in enumerate(_PG_TYPES))
    return Prepared(f"SELECT stored_position, stored_version FROM sessionstore_append(%(sid)s, %(known)s, "
                    f"%(last)s, %(last_link)s, {arrays}, %(registered)s::text[])", st.dialect)


# Where an appended row holds its payload, then its meta (SQLite packs both: `storage/packing.py`).
_PAYLOAD: Final = APPENDED_COLUMNS.index("payload")


# Where an appended row holds its time (APPENDED_COLUMNS).
_TIME: Final = APPENDED_COLUMNS.index("created_at")


# PostgreSQL: batches this long or longer are sent as arrays (see `_append`).
PG_ARRAYS_FROM: Final = 8


# The PostgreSQL type of each APPENDED_COLUMNS value (payload and meta travel as text, cast per row).
_PG_TYPES: Final = ("int", "text", "text", "text", "text", "text", "int", "timestamptz", "text", "text")


_PG_CASTS: Final = {"payload": "json", "meta": "jsonb"}


# A long batch's columns, one binary array each (`append_params`), for the statement and the Citus call alike.
_PG_ARRAYS: Final = ", ".join(f"%(c{c})b::{t}[]" for c, t in enumerate(_PG_TYPES))


def append_params(st: Compiler, session_id: str, known: int, rows: Sequence[Sequence[Any]], last_link: str,
                  registered: Sequence[str] = ()) -> Mapping[str, Any]:
    """PostgreSQL: parameters of `Statements.append(len(rows))`; each row holds the APPENDED_COLUMNS
    values. `registered`: on Citus, the event ids to register store-wide (`distribution.REGISTRY`)."""
    params: dict[str, Any] = {"sid": session_id, "known": known, "last": known + len(rows), "last_link": last_link}
    if st.distributed:
        params["registered"] = list(registered)
    else:  # the batch's latest time (Citus's function finds it in the times it gets)
        params["last_at"] = max(row[_TIME] for row in rows)
    if len(rows) >= PG_ARRAYS_FROM:
        for c, values in enumerate(zip(*rows)):
            params[f"c{c}"] = list(values)
    else:
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                params[f"r{r}_{c}"] = value
    return params


def set_tokens_params(st: Compiler, session_id: str, counts: Sequence[tuple[int, int]]) -> Mapping[str, Any]:
    """Parameters of `Statements.set_tokens`: the (position, tokens) pairs of one session's events."""
    if st.postgres:
        return {"sid": session_id, "positions": [p for p, _ in counts], "counts": [t for _, t in counts]}
    return {"sid": session_id, "counts": json.dumps(counts)}
