"""The search index's queries: ranked matches of a query (both backends rank their index alone
and read the events of the best hits only; a very common word's matches are ranked up to a
bound, `RANKED` and `RANKED_PG`, across every session), the
substring scan of what an index cannot find, and the tool's name beside each hit.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import (Float, Text, and_, bindparam, case, column, func, literal_column, or_, select, table,
                        tuple_, union_all)

from ..search import SEARCHED_KINDS
from .prepared import EVENT_COLUMNS, Compiler, Prepared, lineage, node_places, payload_text, stored_text
from .tables import SEARCH_INDEX, events

# How many of a common word's matches an unfiltered SQLite search ranks: its newest (see `_sqlite_best`).
RANKED = 5_000
# The same on PostgreSQL, where ranking a match costs more (`_indexed_matches`).
RANKED_PG = 1_000
# PostgreSQL's bm25 (`_score`): the usual k1 and b, and the average event's length in words it
# measures against: the shared agent transcripts' (123 words; fixed, so that no search reads the
# whole index first).
BM25_K1, BM25_B, BM25_AVERAGE_WORDS = 1.2, 0.75, 120.0


def _tool_name(postgres: bool, source: Any = events) -> Any:
    """The tool of a searched event read from `source` (the events table or a subquery of its
    columns, `call_id` included): a call's own name, a result's call's name, else NULL."""
    calls = events.alias("calls")
    call_name = (select(payload_text(postgres, "name", "calls"))
                 .where(calls.c.session_id == source.c.session_id, calls.c.call_id == source.c.call_id,
                        calls.c.kind == literal_column("'tool_call'")).limit(1).scalar_subquery())
    return case((source.c.kind == literal_column("'tool_call'"), payload_text(postgres, "name", source.name)),
                (source.c.kind == literal_column("'tool_result'"), call_name), else_=None)


@lru_cache(maxsize=256)  # (a shape per lineage size, filter, and count of ranked words)
def search_statement(st: Compiler, n: int, kind: bool, tool: bool, scan: int | None = None,
            groups: int | None = None, fresh: bool = True, meta: bool = True, terms: int = 0) -> Prepared:
    """The search query (the index: FTS5 on SQLite, `event_search`'s GIN index on PostgreSQL; migrations
    0003 and 0004)."""
    tool_name = _tool_name(st.postgres)

    def shown(columns: Sequence[Any]) -> list[Any]:
        return list(columns) if meta else _without_meta(columns, st.postgres)

    if scan is not None:
        payload = stored_text(st)
        query = (select(*shown(EVENT_COLUMNS), literal_column("0.0"), tool_name)
                 .where(events.c.kind.in_([literal_column(f"'{k}'") for k in SEARCHED_KINDS])))
        if scan:
            holds = func.strpos if st.postgres else func.instr
            found = [holds(payload, bindparam(f"needle{i}")) > 0 for i in range(scan)]
            query = query.where(or_(*found))
        order = (events.c.position,)
    elif st.postgres:
        # The indexed events (`event_search`), and those after the indexer's place in the feed,
        # matched on the fly (few: a search brings the index up to the feed's final part first;
        # none, and not looked for, when no event is past the place: `fresh`).
        wanted = func.to_tsquery(literal_column("'simple'::regconfig"), bindparam("q"))
        words = table("event_search", column("session_id"), column("position"), column("words"), column("stats"))
        indexed = (_indexed_matches(words, wanted, n, kind, tool, terms) if groups is None else
                   _filtered(select(*EVENT_COLUMNS, _score(words.c.stats, terms).label("score"),
                                    tool_name.label("tool"))
                             .select_from(events.join(words, and_(words.c.session_id == events.c.session_id,
                                                                  words.c.position == events.c.position)))
                             .where(words.c.words.op("@@")(wanted)), n, kind, tool, tool_name))
        parts = [indexed]
        if fresh:
            vector = func.sessionstore_search_words(func.sessionstore_search_text(events.c.kind, events.c.payload))
            place = table("search_feed", column("id"), column("txid"), column("position"))
            after = select(place.c.txid, place.c.position).where(place.c.id == 1)
            unindexed = (node_places(groups, bounded=False) if groups is not None else
                         tuple_(events.c.txid, events.c.position)
                         > tuple_(after.with_only_columns(place.c.txid).scalar_subquery(),
                                  after.with_only_columns(place.c.position).scalar_subquery()))
            stats = func.sessionstore_search_stats(vector)
            parts.append(_filtered(select(*EVENT_COLUMNS, _score(stats, terms).label("score"), tool_name.label("tool"))
                                   .where(unindexed, events.c.kind.in_([literal_column(f"'{k}'")
                                                                        for k in SEARCHED_KINDS]),
                                          vector.op("@@")(wanted)), n, kind, tool, tool_name))
        both = (union_all(*parts) if len(parts) > 1 else indexed).subquery()
        return st._prepare(select(*shown(list(both.c))).order_by(both.c.score.desc(), both.c.position)
                           .limit(bindparam("limit")))
    else:
        best = _sqlite_best(n, kind, tool)
        return st._prepare(select(*shown(EVENT_COLUMNS), -best.c.rank, tool_name)
                           .select_from(best.join(events, events.c.position == best.c.position))
                           .order_by(best.c.rank, best.c.position))
    query = _filtered(query, n, kind, tool, tool_name)
    return st._prepare(query.order_by(*order).limit(bindparam("limit")))


def _sqlite_best(n: int, kind: bool, tool: bool) -> Any:
    """SQLite: the positions and ranks of the best `:limit` matches (bm25: lower is better),
    ranked in the index before any event is read. Every indexed event is live (erasure takes it
    out, migration 0011), so an unfiltered search reads no event; a lineage or kind reads only the
    columns stored before a row's payload, never its overflow pages; and the outer query reads
    the payloads of the hits only. (Joined to the events before ranking, every match's whole row
    was read, large ones from their overflow pages: a common word at a million events was
    seconds.)"""
    index = table(SEARCH_INDEX, column("rowid"), column("rank"))
    best = (select(index.c.rowid.label("position"), index.c.rank.label("rank"))
            .where(literal_column(SEARCH_INDEX).op("MATCH")(bindparam("q"))))
    if n or kind or tool:
        inner = events.alias("matched")
        best = best.select_from(index.join(inner, inner.c.position == index.c.rowid))
        if n:
            best = best.where(lineage(n, source=inner))
        if kind:
            best = best.where(inner.c.kind == bindparam("kind"))
        if tool:
            best = best.where(_tool_name(False, inner) == bindparam("tool"))
    else:
        # A very common word: only its newest RANKED matches are ranked (bm25 costs every match
        # it scores: 77,064 for `check` at a million events took 200-290 ms). The cut is the
        # RANKED-th newest match, read from the index's doclist without ranking; a word with
        # fewer matches has none, and all of them are ranked (the exact hits, as before).
        cut = (select(index.c.rowid).where(literal_column(SEARCH_INDEX).op("MATCH")(bindparam("q")))
               .order_by(index.c.rowid.desc()).limit(1).offset(RANKED).scalar_subquery())
        best = best.where(index.c.rowid > func.coalesce(cut, 0))
    return best.order_by(index.c.rank, index.c.rowid).limit(bindparam("limit")).subquery("best")


def _without_meta(columns: Sequence[Any], postgres: bool) -> list[Any]:
    """`columns` with the events' meta as an empty object: hits for a model need not carry what
    an importer kept beside each event (Claude Code's records: 170 KB beside a 3 KB result),
    which is most of the bytes PostgreSQL would turn into JSON text and send."""
    empty = literal_column("'{}'::jsonb" if postgres else "'{}'").label("meta")
    return [empty if column.name == "meta" else column for column in columns]


def _score(stats: Any, terms: int) -> Any:
    """PostgreSQL: a match's score from its stored summary (`event_search.stats`, migration 0012:
    its length in words under ``#``, its most repeated words' counts), kept inline beside the
    vector (`ts_rank` read each match's whole vector, a long event's from TOAST): bm25 summed over
    the query's `terms` words `:term0`… (`search.ranked_words`), each word weighing the same (no
    rarity: the index holds no word's count of events), a word not among the event's most
    repeated counted once; no words: the length alone. An expression, not a function, so that
    PostgreSQL computes it in the scan (a SQL function over the list took 15 µs a match)."""
    # bm25's term part, tf·(k1+1) / (tf + k1·(1 - b + b·length/average)), as (k1+1) / (1 + norm/tf).
    def number(value: float) -> Any:
        return literal_column(repr(round(value, 9)))

    length = stats.op("->")(literal_column("'#'")).cast(Float)
    norm = number(BM25_K1 * (1 - BM25_B)) + number(BM25_K1 * BM25_B / BM25_AVERAGE_WORDS) * length
    counts = [func.coalesce(stats.op("->")(bindparam(f"term{i}", type_=Text)).cast(Float), number(1.0))
              for i in range(terms)] or [number(1.0)]
    return functools.reduce(operator.add, [number(BM25_K1 + 1) / (number(1.0) + norm / count) for count in counts])


def _indexed_matches(words: Any, wanted: Any, n: int, kind: bool, tool: bool, terms: int) -> Any:
    """PostgreSQL: the indexed events matching `wanted`. The matches are found in `event_search`
    (the lineage's sessions only), then each one's event is fetched by its key in a LATERAL
    subquery that the planner cannot flatten (its LIMIT 1): joined freely, a search within a
    session was planned, on the statistics of a freshly imported session, as a scan of the
    session's indexed rows for each of its events (400 ms for a 1,600-event session, where this
    takes 1 ms whatever the statistics say)."""
    found = select(words.c.session_id, words.c.position, _score(words.c.stats, terms).label("score")) \
        .where(words.c.words.op("@@")(wanted))
    if n:
        found = found.where(words.c.session_id.in_([bindparam(f"s{i}") for i in range(n)]))
    elif not (kind or tool):
        # Every indexed event is live (erasure deletes a session's rows with its content): the best
        # `:limit` are ranked in the index alone, and only their events are read (joined before
        # the ranking, every match's event was: 40-80 ms for a rare word at a million events).
        # The GIN index returns matches in no useful order: a very common word ranks the first
        # RANKED_PG matches the index's bitmap scan returns (table order; a parallel scan may
        # return another set of them); fewer are all ranked. (Measured: docs/benchmarks.md.)
        candidates = (select(words.c.session_id, words.c.position, words.c.stats)
                      .where(words.c.words.op("@@")(wanted)).limit(RANKED_PG).subquery("candidates"))
        found = (select(candidates.c.session_id, candidates.c.position,
                        _score(candidates.c.stats, terms).label("score"))
                 .order_by(literal_column("score").desc(), candidates.c.position).limit(bindparam("limit")))
    matched = found.subquery("found")
    hit = (select(*EVENT_COLUMNS, events.c.call_id)
           .where(events.c.session_id == matched.c.session_id, events.c.position == matched.c.position)
           .limit(1).lateral("hit"))
    tool_name = _tool_name(True, hit)
    query = (select(*(hit.c[c.name] for c in EVENT_COLUMNS), matched.c.score, tool_name.label("tool"))
             .select_from(matched.join(hit, literal_column("true"))))
    return _filtered(query, n, kind, tool, tool_name, hit)


def _filtered(query: Any, n: int, kind: bool, tool: bool, tool_name: Any, source: Any = events) -> Any:
    """A search query limited to live events, and to a lineage, a kind, a tool when asked (on the
    events table, or on `source`, a subquery of its columns)."""
    query = query.where(source.c.erased_at.is_(None))
    if n:
        query = query.where(lineage(n, source=source))
    if kind:
        query = query.where(source.c.kind == bindparam("kind"))
    if tool:
        query = query.where(tool_name == bindparam("tool"))
    return query
