"""Finding sessions for the CLI, and search: the index follows the global feed, and every
search brings it up to the feed's head first."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..errors import InvalidSearch
from ..events import StoredEvent
from ..search import SEARCHED_KINDS, highlight, matches, needles, parse_query, ranked_words, search_text
from ..storage.statements import NO_LIMIT
from . import feed
from .base import INDEX_BATCH, SEARCH_LIMIT, Part, Segment
from .ops import BEGIN, COMMIT, Execute, Program
from .results import SearchHit


class SearchPart(Part):
    # ------------------------------------------------------------------ finding (the CLI's listings)

    def find_sessions(self, prefix: str, *, limit: int | None = None) -> Program[list[str]]:
        """The ids that start with `prefix` (taken literally: ``%`` and ``_`` are no wildcards), sorted."""
        pattern = prefix.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"
        rows = yield Execute(self.sql.find_sessions, {"pattern": pattern, "limit": NO_LIMIT if limit is None else limit})
        return [row[0] for row in rows]

    def first_event_times(self) -> Program[dict[str, datetime]]:
        """When each session's own first event happened (for imported events: the source's timestamp)."""
        rows = yield Execute(self.sql.first_times)
        return {sid: self.sql.decode.time(when) for sid, when in rows if when is not None}  # type: ignore[misc]

    def first_message(self, session_id: str, role: str = "user") -> Program[StoredEvent | None]:
        """The first message of `role` in the session's history (a fork's inherited history included)."""
        rows = yield from self._over_lineage(session_id, self.sql.first_message, {"role": role})
        return self.sql.decode.event(rows[0]) if rows else None

    # ------------------------------------------------------------------ search

    def search(self, query: str, session_id: str | Sequence[str] | None = None, kind: str | None = None,
               tool: str | None = None, limit: int = SEARCH_LIMIT, meta: bool = True) -> Program[list[SearchHit]]:
        """Events whose text matches `query` (see `sessionstore.search`), best first.

        `session_id` limits the search to that session's history (a fork's inherited events
        included; a hit reports the session that stores it), or, a sequence of ids, to their
        histories together (each event once); `kind` to one searched kind; `tool` to the calls
        of that tool and their results. Without `meta`, the hits' events come without their meta.
        """
        parsed = parse_query(query)
        fresh = True  # events past the indexer's place may be there, to match on the fly
        if not parsed.scans:
            _, fresh = yield from self._index_feed()
        if kind is not None and kind not in SEARCHED_KINDS:
            raise InvalidSearch(f"events of kind {kind!r} are not searched; the searched kinds are "
                                f"{', '.join(SEARCHED_KINDS)}", query=query)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidSearch(f"limit must be a positive integer, got {limit!r}", query=query)
        scan = needles(parsed) if parsed.scans else None
        params: dict[str, Any] = {"limit": min(limit, NO_LIMIT)}
        if parsed.scans:
            params.update({f"needle{i}": needle for i, needle in enumerate(scan or ())}, limit=NO_LIMIT)
        else:
            params["q"] = self.sql.search_match(parsed)
        terms = ranked_words(parsed) if self.sql.postgres and not parsed.scans else []
        params.update((f"term{i}", term) for i, term in enumerate(terms))
        n = 0
        if session_id is not None:
            segments: dict[Segment, None] = {}  # in order, each once (a fork and its parent share some)
            for sid in [session_id] if isinstance(session_id, str) else session_id:
                segments.update(dict.fromkeys((yield from self.lineage(sid))))
            lineage_params = self.sql.lineage_params(list(segments))
            if lineage_params is None:
                return []
            n = lineage_params.pop("_n")
            params.update(lineage_params)
        if kind is not None:
            params["kind"] = kind
        if tool is not None:
            params["tool"] = tool
        groups = None
        if not parsed.scans and (yield from self._shape()):
            places = feed.parse((yield Execute(self.sql.search_places))[0][0])
            names, places_params = feed.page_params(places, {})
            groups = len(names)
            params.update(places_params)
        rows = yield Execute(self.sql.search(n, kind=kind is not None, tool=tool is not None,
                                             scan=len(scan or ()) if parsed.scans else None, groups=groups,
                                             fresh=fresh, meta=meta, terms=len(terms)), params)
        hits = []
        for row in rows:
            event = self.sql.decode.event(row)
            text = search_text(event.kind, event.payload)
            score = matches(parsed, text) if parsed.scans else float(row[-2] or 0.0)
            if parsed.scans and not score:
                continue
            snippet, spans = highlight(text, parsed)
            hits.append(SearchHit(event, snippet, spans, score, row[-1]))
        if parsed.scans:  # a scan: best first, then in order, as many as asked
            hits = sorted(hits, key=lambda h: -h.score)[:limit]
        return hits


    def index_feed(self) -> Program[int]:
        """Bring the search index up to the global feed's head; how many events it took (searched
        or not). Appends no longer index (migration 0004): a search calls this first, so that
        results are exact, and an application may call it from a background task to keep
        searches short. On PostgreSQL the index follows the feed's final part (transactions
        below the oldest one running) and a search matches the events after it on the fly."""
        taken, _ = yield from self._index_feed()
        return taken

    def _index_feed(self) -> Program[tuple[int, bool]]:
        """`index_feed`, and whether events past the indexer's place may be left (PostgreSQL: those
        of transactions not final yet), which a search then matches on the fly."""
        if (yield from self._shape()):
            return (yield from self._index_node_feeds()), True
        if self.sql.postgres:
            final, any_left = (yield Execute(self.sql.index_pending))[0]
            if not final:  # the usual case: nothing to index, and no row lock taken (nothing to commit)
                return 0, bool(any_left)
            taken = 0
            while True:
                rows = yield Execute(self.sql.index_feed, {"limit": INDEX_BATCH})
                count = int(rows[0][0]) if rows else 0
                taken += count
                if count < INDEX_BATCH:
                    return taken, True
        behind, index, advance = self.sql.search_behind
        place, head = (yield Execute(behind))[0]
        if place >= head:
            return 0, False
        yield BEGIN  # the write lock: indexers and erasures queue
        yield Execute(index)
        yield Execute(advance)
        yield COMMIT
        return int(head - place), False

    def _index_node_feeds(self) -> Program[int]:
        """`index_feed` on Citus: index every node group's feed up to that node's horizon (one
        statement run on every shard at once), and move the indexer's places past it."""
        yield BEGIN  # the places' row lock: indexers queue
        places = feed.parse((yield Execute(self.sql.search_places_for_update))[0][0])
        horizons = feed.horizons((yield Execute(self.sql.node_horizons)))
        groups, params = feed.page_params(places, horizons)
        index, retired_top = self.sql.node_index(len(groups))
        indexed = yield Execute(index, params)
        top = yield Execute(retired_top, params)
        moved = feed.past_horizons(places, groups, params, top[0] if top else None)
        yield Execute(self.sql.set_search_places, {"places": feed.format_places(moved)})
        yield COMMIT
        return len(indexed)
