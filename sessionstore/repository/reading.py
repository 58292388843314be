"""Reading: pages of events, the global feed, the context view and the transcript, kept
incrementally (`views`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import InvalidEvent, SessionErased, VersionOutOfRange
from ..events import StoredEvent
from ..projection import ContextView, ProjectionInput, advance, named_versions, project
from ..storage.statements import NO_LIMIT
from . import feed
from .base import PAGE, Head, Part, check_lookup_id, check_version_argument, live_or_none
from .feed import FeedPage
from .ops import Execute, Program
from .views import Fold, View


class ReadingPart(Part):
    # ------------------------------------------------------------------ reading

    def events_page(self, session_id: str, after: int = 0, upto: int | None = None,
                    kinds: Iterable[str] | None = None, limit: int = NO_LIMIT, *, columns: str = "events"
                    ) -> Program[list[Any]]:
        """Events with version in (after, upto], in version order, at most `limit` of them.

        Streams page by page from here (`events()` of both doors), so that memory stays
        constant however long the session, and no cursor or transaction stays open between
        pages.
        """
        check_version_argument("after", after)
        check_version_argument("upto", upto, optional=True)
        lineage = yield from self.lineage(session_id)
        params = self.sql.lineage_params(lineage, after, upto)
        if params is None:
            return []
        n = params.pop("_n")
        if columns == "links":
            rows = yield Execute(self.sql.links(n), params)
            return rows
        kinds = list(kinds) if kinds is not None else None
        if kinds is not None:
            # A kind no event can have (not a string, or holding a NUL) matches nothing.
            kinds = [k for k in kinds if isinstance(k, str) and "\x00" not in k]
            params["kinds"] = self.sql.list_param(kinds)
        params["limit"] = limit
        rows = yield Execute(self.sql.events_range(n, kinds=kinds is not None), params)
        return [self.sql.decode.event(row) for row in rows]

    def feed_page(self, after: int | str = 0, limit: int = PAGE) -> Program[FeedPage]:
        """The global feed after the cursor `after` (0: from the start), `limit` events at most.

        On PostgreSQL the feed is ordered by (transaction id, position) and ends below the
        oldest transaction still running: what it returns is final, and a reader that resumes
        after the last position it saw never misses a late commit (storage/statements.py).
        On Citus the same holds per node group, and the cursor is a place per group (`feed`).
        """
        if (yield from self._shape()):
            places = feed.parse(after)
            horizons = feed.horizons((yield Execute(self.sql.node_horizons)))
            groups, params = feed.page_params(places, horizons)
            rows = yield Execute(self.sql.node_feed(len(groups)), {**params, "limit": limit})
            places = feed.advance(places, groups, ((row[-1], row[3]) for row in rows))
            return FeedPage([self.sql.decode.event(row) for row in rows], feed.format_places(places))
        after = feed.position(after)
        check_version_argument("after_position", after)
        rows = yield Execute(self.sql.feed, {"after": after, "limit": limit})
        events = [self.sql.decode.event(row) for row in rows]
        return FeedPage(events, events[-1].position if events else after)

    def _over_lineage(self, session_id: str, statement: Callable[[int], Any], extra: Mapping[str, Any] | None = None,
                      *, after: int = 0, upto: int | None = None) -> Program[list[Any] | None]:
        """The rows of `statement(n)`, a query over the n segments of the session's lineage, for its
        versions (after, upto] with the `extra` parameters; None when that range holds no version."""
        params = self.sql.lineage_params((yield from self.lineage(session_id)), after, upto)
        if params is None:
            return None
        n = params.pop("_n")
        params.update(extra or {})
        return list((yield Execute(statement(n), params)))

    def _events_at(self, session_id: str, versions: Sequence[int]) -> Program[list[StoredEvent]]:
        if not versions:
            return []
        rows = yield from self._over_lineage(session_id, self.sql.events_at,
                                             {"versions": self.sql.list_param(sorted(set(versions)))})
        return [self.sql.decode.event(row) for row in rows or ()]

    def _latest(self, session_id: str, kind: str, upto: int | None = None) -> Program[StoredEvent | None]:
        """The last event of `kind` at or before `upto` (one index lookup per lineage segment)."""
        rows = yield from self._over_lineage(session_id, self.sql.latest, {"kind": kind}, upto=upto)
        return self.sql.decode.event(rows[0]) if rows else None

    def latest_events(self, session_ids: Iterable[str], kind: str) -> Program[dict[str, StoredEvent]]:
        """The last event of `kind` of each of `session_ids` that has one, by session (a session
        that has none, or does not exist, is absent).

        One query for them all, an index lookup a session: what a listing needs of each session
        it shows (an application's latest state, kept in its latest event of a kind) without a
        query per session (on Citus, each shard answers for its own sessions). A fork whose own
        events hold none is looked up through its lineage."""
        if isinstance(session_ids, str):
            raise InvalidEvent("session_ids must be a list of session ids, not one string", field="session_ids")
        ids = list(dict.fromkeys(session_ids))
        for session_id in ids:
            check_lookup_id(session_id)
        if not isinstance(kind, str):
            raise InvalidEvent(f"kind must be a string, got {type(kind).__name__}", field="kind")
        if not ids:
            return {}
        found: dict[str, StoredEvent] = {}
        rows = yield Execute(self.sql.latest_of_each, {"ids": self.sql.list_param(ids), "kind": kind})
        for row in rows:
            if row[2] is not None:
                found[row[0]] = self.sql.decode.event(row[2:])
            elif row[1] is not None:  # a fork: its latest may be inherited
                inherited = yield from self._latest(row[0], kind)
                if inherited is not None:
                    found[row[0]] = inherited
        return {session_id: found[session_id] for session_id in ids if session_id in found}

    # ------------------------------------------------------------------ the context view

    def context(self, session_id: str, at: int | None = None) -> Program[ContextView]:
        """The context to send to the model (DESIGN §5); `at` rebuilds it as it was then.

        Only the latest compaction, the events from its first kept version on and the few
        events it names are read: the cost follows the size of the view, not of the history.
        The current view is brought up to date from the last one this repository built when it
        can be (`_follow`): then only the events since are read.
        """
        check_version_argument("at", at, optional=True)
        if at is not None:
            head = yield from self._read_head(session_id)
            return project((yield from self._projection_input(session_id, head, at)))
        view = yield from self._current_view(session_id)
        return replace(view, messages=list(view.messages))  # the caller's list: appending to it leaves ours

    def _current_view(self, session_id: str) -> Program[ContextView]:
        """The kept view itself (compaction and statistics only read it; its learned calibration
        is computed once per version)."""
        def rebuild(head: Head) -> Program[ContextView]:
            return project((yield from self._projection_input(session_id, head, None)))

        return (yield from self._follow("context", session_id, rebuild, advance,
                                        lambda v: len(v.source.tail) + len(v.source.anchored)))

    def transcript(self, session_id: str) -> Program[list[StoredEvent]]:
        """Every event of the session (a fork's inherited ones included), brought up to date from
        the last transcript this repository read when it can be: what framework sessions read
        on every turn."""
        def rebuild(head: Head) -> Program[tuple[StoredEvent, ...]]:
            return tuple((yield from self.events_page(session_id, 0, head.version)))

        def extend(events: tuple[StoredEvent, ...], new: Sequence[StoredEvent]) -> tuple[StoredEvent, ...] | None:
            return None if any(e.erased_at is not None for e in new) else (*events, *new)

        return list((yield from self._follow("transcript", session_id, rebuild, extend, len)))

    def follow(self, session_id: str, fold: Fold[Any]) -> Program[Any]:
        """The caller's view `fold` of the session at its head, kept and folded forward like the
        store's own (`_follow`); rebuilt by folding the whole history into `fold.start()`."""
        def rebuild(head: Head) -> Program[Any]:
            view = fold.step(fold.start(), (yield from self.events_page(session_id, 0, head.version)))
            if view is None:
                raise ValueError(f"the fold {fold.name!r} refused a session's whole history")
            return view

        return (yield from self._follow(f"fold:{fold.name}", session_id, rebuild, fold.step, fold.weight))

    def _follow(self, what: str, session_id: str, rebuild: Callable[[Head], Program[Any]],
                advance: Callable[[Any, Sequence[StoredEvent]], Any], weight: Callable[[Any], int]) -> Program[Any]:
        """The view `what` of the session at its head, folded forward from the last one built.

        One statement reads the head. The view kept at that head (same version, same chain
        link) is returned as it is; a view kept at an older version takes the events after it
        (one statement) through the pure step `advance`, which returns None when only a
        rebuild can say (a compaction, a reset, an erasure). Anything else is rebuilt: an
        erased session, a fork (an ancestor's erasure changes its history without moving its
        head: forks are never kept), a head that went backwards (the database was replaced).
        """
        head = yield from self._read_head(session_id)
        kept = self.views.get(what, session_id)
        keep = not head.erased and len((yield from self.lineage(session_id))) == 1
        value = None
        if kept is not None and keep:
            if kept.version == head.version and kept.link == head.link:
                return kept.value
            if kept.version < head.version:
                value = advance(kept.value, (yield from self.events_page(session_id, kept.version, head.version)))
        if value is None:
            value = yield from rebuild(head)
        if keep:
            self.views.put(what, session_id, View(head.version, head.link, value, weight(value)))
        return value

    def projection_input(self, session_id: str, at: int | None = None) -> Program[ProjectionInput]:
        """What the projection folds at version `at` (default: the head)."""
        check_version_argument("at", at, optional=True)
        head = yield from self._read_head(session_id)
        return (yield from self._projection_input(session_id, head, at))

    def _projection_input(self, session_id: str, head: Head, at: int | None) -> Program[ProjectionInput]:
        """What the projection folds. An erased session has no view (`SessionErased`: its content
        is gone, and an empty view would let an agent carry on as if nothing had been said). A
        fork whose inherited history was erased with an ancestor keeps a view of what is left:
        tombstones are never in it, and when the latest compaction is one the view starts after it."""
        if head.erased:
            raise SessionErased(session_id)
        version = head.version if at is None else at
        if not 0 <= version <= head.version:
            raise VersionOutOfRange(session_id, version, head.version)
        compaction = yield from self._latest(session_id, "compaction", version)
        if compaction is not None and compaction.erased_at is not None:
            first_kept, compaction = compaction.version + 1, None
        else:
            first_kept = compaction.payload["first_kept_version"] if compaction is not None else 1
        tail = yield from self.events_page(session_id, first_kept - 1, version)
        system = yield from self._latest(session_id, "system", version)
        scratchpad = yield from self._latest(session_id, "scratchpad", version)
        anchored = yield from self._events_at(session_id, named_versions(compaction))
        return ProjectionInput(session_id=session_id, version=version, system=live_or_none(system), compaction=compaction,
                               scratchpad=live_or_none(scratchpad), anchored=tuple(e for e in anchored if live_or_none(e)),
                               tail=tuple(e for e in tail if live_or_none(e)))
