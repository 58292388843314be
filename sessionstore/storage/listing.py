"""`sessions()` in each backend's SQL: a metadata path as an expression, the indexes that serve
the keys that matter, and the statement of one query shape (`finding.SessionQuery.shape`).

A path is written into the statement's text, never bound: an expression index (SQLite and
PostgreSQL alike) serves only a query whose expression is the index's own, character for
character. `finding.where_terms` has checked that a segment holds nothing to escape. The value
is bound. Every index ends in (started_at, id), the listing's order: one index range, read
backwards from the cursor, gives a user's newest sessions without a sort.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final

from ..finding import AGENT, PROJECT, Path, SessionQuery, Term

# The metadata keys indexed (migration 0008): the common `user`/`user_id`, ADK's owner, and
# `agent`/`project` (the expressions `derived_expression` writes), most selective first. Any
# other key filters the newest-first walk of the (started_at, id) index (an ADK app's sessions
# are most of a store's: that walk finds them as fast as an index would).
INDEXED_PATHS: Final[tuple[Path, ...]] = (("user",), ("user_id",), ("adk", "user_id"))
INDEXED_DERIVED: Final = ("project", "agent")


def path_expression(path: Path, postgres: bool) -> str:
    """The metadata at `path`: JSONB on PostgreSQL, SQLite's json_extract value."""
    if postgres:
        return "(metadata" + "".join(f" -> '{part}'" for part in path) + ")"
    return "json_extract(metadata, '$" + "".join(f'."{part}"' for part in path) + "')"


def derived_expression(name: str, postgres: bool) -> str:
    """`agent` or `project`: the first of its keys present (`finding.AGENT`, `finding.PROJECT`)."""
    keys = AGENT if name == "agent" else PROJECT
    return "coalesce(" + ", ".join(path_expression((key,), postgres) for key in keys) + ")"


def index_name(key: Path | str) -> str:
    return "ix_sessions_meta_" + (key if isinstance(key, str) else "_".join(key))


def indexes(postgres: bool) -> list[tuple[str, tuple[str, ...]]]:
    """(name, columns and expressions) of every listing index on one backend."""
    made = [(index_name(p), (path_expression(p, postgres), "started_at", "id")) for p in INDEXED_PATHS]
    made += [(index_name(d), (derived_expression(d, postgres), "started_at", "id")) for d in INDEXED_DERIVED]
    return [("ix_sessions_started_at_id", ("started_at", "id")), *made]


def _lead(terms: tuple[tuple[Path, str, str | None], ...]) -> int | None:
    """The term whose index SQLite should read: the most selective indexed key asked for.

    SQLite keeps no statistics (the store runs no ANALYZE): given two indexed equalities it
    takes either, and an ADK query read every session of the app through `adk.app_name`'s
    index (430 ms at 100,000 sessions) instead of its user's few. The other terms are written
    so that no index serves them (``+expr``, SQLite's documented way)."""
    order: list[tuple[Path, str | None]] = [*((p, None) for p in INDEXED_PATHS),
                                            *(((name,), name) for name in INDEXED_DERIVED)]
    ranked = [(order.index((path, derived)), n) for n, (path, _, derived) in enumerate(terms)
              if (path, derived) in order]
    return min(ranked)[1] if ranked else None


def _term(term: Term, n: int, postgres: bool, lead: bool = True) -> str:
    expr = derived_expression(term.derived, postgres) if term.derived else path_expression(term.path, postgres)
    if not lead:
        expr = "+" + expr
    value = f"%(w{n})s" if postgres else f":w{n}"
    if postgres:
        return f"{expr} = CAST({value} AS jsonb)"  # JSONB equality: a string is never a number
    kind = {"string": "'text'", "number": "'integer', 'real'", "true": "'true'", "false": "'false'",
            "null": "'null'"}[term.kind]
    typed = (expr.replace("json_extract(", "json_type(", 1) if not term.derived else
             "coalesce(" + ", ".join(path_expression((k,), False).replace("json_extract(", "json_type(", 1)
                                     for k in (AGENT if term.derived == "agent" else PROJECT)) + ")")
    if term.kind in ("null", "true", "false"):  # json_extract reads them as NULL, 1, 0
        return f"{typed} = {kind}"
    return f"{expr} = {value} AND {typed} IN ({kind})"


@lru_cache(maxsize=256)
def listing_sql(shape: tuple[Any, ...], postgres: bool, columns: str) -> str:
    """The statement of one query shape: `columns` of the matching sessions, newest first.

    ``until`` bounds the last activity, and the start with it (a session's last activity is
    never before its start): the index range then begins at ``until`` instead of the newest."""
    terms, since, until, after = shape
    p = (lambda name: f"%({name})s") if postgres else (lambda name: f":{name}")
    lead = None if postgres else _lead(terms)
    where = [_term(Term(path, _SAMPLE[kind], derived), n, postgres, postgres or lead is None or n == lead)
             for n, (path, kind, derived) in enumerate(terms)]
    if since:
        where.append(f"started_at >= {p('since')}")
    if until:
        where += [f"last_event_at <= {p('until')}", f"started_at <= {p('until')}"]
    if after:
        where.append(f"(started_at, id) < ({p('after_at')}, {p('after_id')})")
    sql = f"SELECT {columns} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + f" ORDER BY started_at DESC, id DESC LIMIT {p('limit')}"


# A value of each kind, for `_term` to write a term from its shape (only the kind matters).
_SAMPLE: Final = {"string": "", "number": 0, "true": True, "false": False, "null": None}


def listing_params(query: SessionQuery, postgres: bool, bind_time: Any, encode_json: Any, limit: int) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": limit}
    for n, term in enumerate(query.terms):
        if postgres:
            params[f"w{n}"] = encode_json(term.value)
        elif term.kind in ("string", "number"):
            params[f"w{n}"] = term.value
    if query.since is not None:
        params["since"] = bind_time(query.since)
    if query.until is not None:
        params["until"] = bind_time(query.until)
    if query.after is not None:
        params["after_at"], params["after_id"] = bind_time(query.after[0]), query.after[1]
    return params


__all__ = ["INDEXED_DERIVED", "INDEXED_PATHS", "derived_expression", "index_name", "indexes", "listing_params",
           "listing_sql", "path_expression"]
