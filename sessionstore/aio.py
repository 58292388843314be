"""AsyncSessionStore: the asyncio front door of the repository.

It runs the same repository programs as `SessionStore` (see `repository/`), on the same blocking
drivers, in threads of its own (`lanes`): the caller's event loop only hands a call over and
awaits its result. Statements, commits, lock waits, token counting and projection never run on
it (DESIGN.md §12: an event loop is not ours; a millisecond there is a millisecond every other
agent, request and streamed token of the app waits). Semantics and errors are identical by
construction, and so are routing (Citus) and the fault policy: a call's program is stepped by
`SessionStore.step`, and its retries are `repository.faults`', sleeping on the loop.

Threads rather than asyncio drivers: a program's CPU (an append's chain and token counts, a
view's projection) would run on the loop between two awaited statements, and aiosqlite hops to
its thread for every statement where a program needs one hop. A store is not tied to a loop:
frameworks that call it from several threads, each running its own loop, just work.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import date, datetime, tzinfo
from typing import Any, Final, TypeVar, cast

from sqlalchemy import Engine

from .accounting import UsageGroup, UsageRow
from .compaction.policy import CompactionPolicy
from .events import NewEvent, StoredEvent, new_event_id, once
from .lanes import Lane, Lanes
from .pricing import PriceTable, price_table
from .projection import ContextView
from .retention import RetentionPolicy, RetentionReport
from .repository import AppendResult, CompactionResult, Program, SessionInfo, SessionStats, Summarize, VerifyReport
from .repository.core import PAGE, SEARCH_LIMIT, Pages
from .repository.drive import Run, aretrying
from .repository.faults import Attempts, RetryPolicy
from .repository.feed import FeedPage
from .repository.results import Conversation, SearchHit, SessionPage
from .repository.views import Fold
from .store import SessionStore
from .summarizers.base import Summarizer
from .summarizers.drive import aanswer
from .tokens import TokenCounter

T = TypeVar("T")
S = TypeVar("S")

__all__ = ["AsyncSessionStore"]

# The store's threads besides SQLite's writer. SQLite: readers (WAL readers never wait; the GIL
# lets little more run at once). PostgreSQL: calls in flight at once, each on a connection of its own.
SQLITE_THREADS: Final = 2
POSTGRES_THREADS: Final = 4


class AsyncSessionStore:
    """`SessionStore` for asyncio: every method a coroutine, `events()`/`read_all()` async iterators.

    ``async with AsyncSessionStore(url) as store: await store.append(sid, [...])``. The URL and
    the options are `SessionStore`'s; both stores can share one database. Calls run on the
    store's threads (`sessionstore.lanes`), never on the caller's event loop, and any number of
    loops (threads each running one) may share one store.
    """

    def __init__(self, url: str | None = None, *, token_counter: TokenCounter | None = None,
                 sqlite_synchronous: str = "NORMAL", echo: bool = False,
                 retry_timeout: RetryPolicy | float | None = None, route_to_nodes: bool = True) -> None:
        self._store = _OffLoopStore(url, token_counter=token_counter, sqlite_synchronous=sqlite_synchronous,
                                    echo=echo, retry_timeout=retry_timeout, route_to_nodes=route_to_nodes)
        self.url: str = self._store.url
        self.backend: str = self._store.backend
        self.retry = self._store.retry
        self._repo = self._store._repo
        sqlite = self.backend == "sqlite"
        self._lanes = Lanes("sessionstore", SQLITE_THREADS if sqlite else POSTGRES_THREADS, writer=sqlite)
        # A store dropped without close(): its threads end (they would idle until the process exits).
        self._finalizer = weakref.finalize(self, self._lanes.stop)

    # ------------------------------------------------------------------ lifecycle

    @property
    def token_counter(self) -> TokenCounter:
        return self._store.token_counter

    @property
    def engine(self) -> Engine:
        """The (blocking) engine the store's threads run its programs on."""
        return self._store.engine

    @property
    def sqlite_engine(self) -> Engine | None:
        """`engine` on SQLite; None on PostgreSQL (kept for callers from when only SQLite ran on threads)."""
        return self._store.engine if self.backend == "sqlite" else None

    async def in_thread(self, work: Callable[[SessionStore], T], *, writes: bool = False,
                        to_the_end: bool = False) -> T:
        """`work(store)` on one of this store's threads, given the blocking store they run on: for
        code that makes several calls with work of its own between them (an integration's
        conversions, a framework's serialisation), in one hop, off the loop. `writes`: it mostly
        writes (on SQLite it then runs on the writer thread). `to_the_end`: once handed over it
        runs to its end even if the awaiting task is cancelled, and the task's cancellation is
        raised when it has (a write whose caller must not be left unsure whether it happened)."""
        lane = Lane.WRITER if writes else Lane.ANY
        if to_the_end:
            return await self._lanes.run_to_end(lane, work, self._store)
        return await self._lanes.run(lane, work, self._store)

    async def migrate(self) -> list[str]:
        """Create or upgrade the schema (``alembic upgrade head``); safe to run every start. See
        `SessionStore.migrate` (Citus)."""
        return await self._lanes.run(Lane.WRITER, self._store.migrate)

    async def close(self) -> None:
        """Close every connection, once the calls under way are done (the store can be used again after)."""
        await self._lanes.close(self._store.close)

    async def __aenter__(self) -> AsyncSessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncSessionStore({self.url!r})"

    # ------------------------------------------------------------------ running programs

    async def _run(self, lane: Lane, make: Callable[..., Program[T]], *args: Any, **kwargs: Any) -> T:
        """Run the repository program `make(*args, **kwargs)` on a thread of `lane`; a lost
        connection is replaced and the call tried again with a fresh program (`repository.faults`)."""
        store = self._store
        return await aretrying(lambda attempts: self._attempt(lane, make(*args, **kwargs), attempts),
                               Attempts(store.retry, store._dbapi, store._where))

    async def _attempt(self, lane: Lane, program: Program[T], attempts: Attempts) -> T:
        """One try: the program runs on a thread in one hop, back to the loop only to have a summary
        request answered (`SessionStore.step`; a compaction's model calls are awaited here)."""
        run = Run(program, self._store._dbapi)
        while True:
            done, value = await self._lanes.run(lane, self._store.step, run)
            if done:
                return cast(T, value)
            try:
                run.answered(value, await self._summary(value, attempts))
            except Exception as exc:
                run.failed(exc)

    async def _summary(self, op: Summarize, attempts: Attempts) -> list[str | Exception]:
        """A call's summary requests, answered once for all its tries (`Attempts.summaries`)."""
        key = attempts.summary_key(op)
        if key not in attempts.summaries:
            attempts.summaries[key] = await aanswer(op.batch, op.summarizer)
        return attempts.summaries[key]

    async def _pages(self, page: Callable[[Any], Program[Any]], start: Any, key: Callable[[Any], Any] | None,
                     limit: int | None = None) -> AsyncIterator[Any]:
        pages = Pages(start, key, limit)
        while not pages.done:
            for row in pages.take(await self._run(Lane.ANY, page, pages.after)):
                yield row

    # ------------------------------------------------------------------ sessions

    async def create_session(self, session_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                             events: Iterable[NewEvent] | None = None, *, strict: bool = True) -> str:
        """See `SessionStore.create_session`."""
        return await self._run(Lane.WRITER, self._repo.create_session, session_id, metadata, once(events),
                               strict=strict, fresh_id=new_event_id())  # one id for every try of this call

    async def ensure_session(self, session_id: str, metadata: Mapping[str, Any] | None = None) -> bool:
        """See `SessionStore.ensure_session`."""
        return await self._run(Lane.WRITER, self._repo.ensure_session, session_id, metadata)

    async def update_metadata(self, session_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        """See `SessionStore.update_metadata`."""
        return await self._run(Lane.WRITER, self._repo.update_metadata, session_id, changes)

    async def session(self, session_id: str) -> SessionInfo:
        return await self._run(Lane.ANY, self._repo.session, session_id)

    async def sessions(self, *, where: Mapping[str, Any] | None = None, since: datetime | str | None = None,
                       until: datetime | str | None = None, agent: str | None = None, project: str | None = None,
                       limit: int | None = None, after: str | None = None) -> SessionPage:
        """See `SessionStore.sessions`."""
        return await self._run(Lane.ANY, self._repo.sessions, where=where, since=since, until=until, agent=agent,
                               project=project, limit=limit, after=after)

    async def version(self, session_id: str) -> int:
        """The session's head: the version of its last event, 0 when it has none."""
        return await self._run(Lane.ANY, self._repo.version, session_id)

    async def fork(self, session_id: str, at: int | None = None, *, new_session_id: str | None = None,
                   metadata: Mapping[str, Any] | None = None) -> str:
        """See `SessionStore.fork`."""
        return await self._run(Lane.WRITER, self._repo.fork, session_id, at, new_session_id=new_session_id,
                               metadata=metadata)

    # ------------------------------------------------------------------ reading

    def events(self, session_id: str, after: int = 0, upto: int | None = None,
               kinds: Iterable[str] | None = None) -> AsyncIterator[StoredEvent]:
        """``async for event in store.events(sid)``: see `SessionStore.events`."""
        wanted = list(kinds) if kinds is not None else None
        return self._pages(lambda a: self._repo.events_page(session_id, a, upto, wanted, PAGE), after,
                           lambda e: e.version)

    async def transcript(self, session_id: str) -> list[StoredEvent]:
        """Every event of the session, nothing pruned or summarised: the recoverable history."""
        return await self._run(Lane.ANY, self._repo.transcript, session_id)

    async def latest_events(self, session_ids: Iterable[str], kind: str) -> dict[str, StoredEvent]:
        """See `SessionStore.latest_events`."""
        return await self._run(Lane.ANY, self._repo.latest_events, once(session_ids), kind)

    def read_all(self, after_position: int | str = 0, limit: int | None = None) -> AsyncIterator[StoredEvent]:
        """``async for event in store.read_all(after)``: see `SessionStore.read_all`."""
        return self._pages(lambda a: self._repo.feed_page(a, PAGE), after_position, None, limit)

    async def feed(self, after: int | str = 0, limit: int = PAGE) -> FeedPage:
        """One page of the global feed and the cursor after it: see `SessionStore.feed`."""
        return await self._run(Lane.ANY, self._repo.feed_page, after, limit)

    # ------------------------------------------------------------------ appending

    async def append(self, session_id: str, events: NewEvent | Iterable[NewEvent | Iterable[NewEvent]],
                     expected_version: int | None = None, *, strict: bool = True) -> AppendResult:
        """See `SessionStore.append`."""
        return await self._run(Lane.WRITER, self._repo.append, session_id, once(events), expected_version,
                               strict=strict)

    async def retract(self, session_id: str, versions: Sequence[int], *, reason: str,
                      expected_version: int | None = None) -> AppendResult:
        """See `SessionStore.retract`."""
        return await self._run(Lane.WRITER, self._repo.retract, session_id, versions, reason=reason,
                               expected_version=expected_version)

    async def reset(self, session_id: str, *, reason: str, expected_version: int | None = None) -> AppendResult:
        """See `SessionStore.reset`."""
        return await self._run(Lane.WRITER, self._repo.reset, session_id, reason=reason,
                               expected_version=expected_version)

    async def record_provider_compaction(self, session_id: str, provider: str, items: Sequence[Mapping[str, Any]], *,
                                   first_kept_version: int | None = None, summarizer: str = "external",
                                   trigger: str = "auto", expected_version: int | None = None,
                                   reason: str | None = None) -> AppendResult:
        """See `SessionStore.record_provider_compaction`."""
        return await self._run(Lane.WRITER, self._repo.record_provider_compaction, session_id,
                         {"provider": provider, "items": [dict(i) for i in items]},
                         first_kept_version=first_kept_version, summarizer=summarizer, trigger=trigger,
                         expected_version=expected_version, reason=reason)

    # ------------------------------------------------------------------ the context view

    async def follow(self, session_id: str, fold: Fold[S]) -> S:
        """See `SessionStore.follow`."""
        return cast(S, await self._run(Lane.ANY, self._repo.follow, session_id, fold))

    async def context(self, session_id: str, at: int | None = None) -> ContextView:
        """See `SessionStore.context`."""
        return await self._run(Lane.ANY, self._repo.context, session_id, at)

    # ------------------------------------------------------------------ compaction

    async def compact(self, session_id: str, policy: CompactionPolicy | None = None,
                      summarizer: Summarizer | None = None, instructions: str | None = None, *,
                      trigger: str = "manual", dry_run: bool = False) -> CompactionResult | None:
        """See `SessionStore.compact`; an async summariser (``asummarize``) is awaited."""
        return await self._run(Lane.ANY, self._repo.compact, session_id, policy, summarizer, instructions,
                               trigger=trigger, dry_run=dry_run)

    async def maybe_compact(self, session_id: str, policy: CompactionPolicy | None = None,
                            summarizer: Summarizer | None = None) -> CompactionResult | None:
        """See `SessionStore.maybe_compact`."""
        return await self._run(Lane.ANY, self._repo.maybe_compact, session_id, policy, summarizer)

    # ------------------------------------------------------------------ audit

    async def verify(self, session_ids: Iterable[str] | None = None) -> list[VerifyReport]:
        """See `SessionStore.verify`."""
        return await self._run(Lane.ANY, self._repo.verify, session_ids)

    async def conversation(self, session_id: str) -> Conversation:
        """See `SessionStore.conversation`."""
        return await self._run(Lane.ANY, self._repo.conversation, session_id)

    async def erase(self, session_id: str, reason: str, *, only_this: bool = False,
                    vacuum: bool = False) -> SessionInfo:
        """See `SessionStore.erase`."""
        return await self._run(Lane.WRITER, self._repo.erase, session_id, reason, only_this=only_this, vacuum=vacuum)

    async def retain(self, policy: RetentionPolicy, *, vacuum: bool = False) -> RetentionReport:
        """See `SessionStore.retain`."""
        return await self._run(Lane.WRITER, self._repo.retain, policy, vacuum=vacuum)

    # ------------------------------------------------------------------ statistics

    async def stats(self, session_id: str) -> SessionStats:
        return await self._run(Lane.ANY, self._repo.stats, session_id)

    async def token_totals(self) -> dict[str, int]:
        return await self._run(Lane.ANY, self._repo.token_totals)

    async def transcript_tokens(self, session_ids: Iterable[str] | None = None) -> dict[str, int]:
        """See `SessionStore.transcript_tokens`."""
        return await self._run(Lane.ANY, self._repo.transcript_tokens, session_ids)

    async def usage(self, *, by: UsageGroup = "day", since: date | datetime | None = None,
                    until: date | datetime | None = None, session_ids: Iterable[str] | None = None,
                    prices: PriceTable | str | os.PathLike[str] | Mapping[str, Any] | None = None,
                    timezone: tzinfo | str | None = None) -> list[UsageRow]:
        """See `SessionStore.usage`."""
        return await self._run(Lane.ANY, self._repo.usage, by, since, until, session_ids, prices=price_table(prices),
                               zone=timezone)

    async def find_sessions(self, prefix: str, *, limit: int | None = None) -> list[str]:
        """See `SessionStore.find_sessions`."""
        return await self._run(Lane.ANY, self._repo.find_sessions, prefix, limit=limit)

    async def first_event_times(self) -> dict[str, datetime]:
        """See `SessionStore.first_event_times`."""
        return await self._run(Lane.ANY, self._repo.first_event_times)

    async def first_message(self, session_id: str, role: str = "user") -> StoredEvent | None:
        """See `SessionStore.first_message`."""
        return await self._run(Lane.ANY, self._repo.first_message, session_id, role)

    async def count_tokens(self, session_id: str | None = None) -> int:
        """See `SessionStore.count_tokens`."""
        return await self._run(Lane.ANY, self._repo.count_tokens, session_id)

    async def index_search(self) -> int:
        """See `SessionStore.index_search`."""
        return await self._run(Lane.WRITER, self._repo.index_feed)

    async def search(self, query: str, session_id: str | Sequence[str] | None = None, *, kind: str | None = None,
                     tool: str | None = None, limit: int = SEARCH_LIMIT, meta: bool = True) -> list[SearchHit]:
        """See `SessionStore.search`."""
        return await self._run(Lane.ANY, self._repo.search, query, session_id, kind, tool, limit, meta)



class _OffLoopStore(SessionStore):
    """The blocking store the async door's threads step programs on. It refuses to run one on a
    thread that runs an event loop: a change that put the door's work back on the caller's loop
    fails at once, in every test of the async door (the guard of DESIGN.md §12)."""

    def step(self, run: Run, summarize: Callable[[Summarize], list[Any]] | None = None) -> tuple[bool, Any]:
        if _running_loop() is not None:
            raise RuntimeError("AsyncSessionStore ran a database call on an event loop's thread: its programs run "
                               "on the store's threads (sessionstore.lanes), never on the caller's loop")
        return super().step(run, summarize)


_running_loop: Final = asyncio._get_running_loop  # C: no cost worth naming at each program
