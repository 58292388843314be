"""AsyncSessionStore: the asyncio front door of the repository.

It runs the same repository programs as `SessionStore` (see `repository/`) on asyncio drivers
— aiosqlite for SQLite, psycopg's async connections for PostgreSQL — through SQLAlchemy's
asyncio engine, so semantics and errors are identical by construction: only the I/O differs.

Each program checks a connection out of the engine's pool, so many coroutines work at once.
A store may be used from several threads, each with its own event loop (the OpenAI Agents SDK
does this): asyncio connections belong to the loop that opened them, so the store keeps one
engine per loop, and stops the connections of a loop that has gone away.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from contextlib import suppress
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar, cast

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .compaction.policy import CompactionPolicy
from .events import NewEvent, StoredEvent, new_event_id, once
from .projection import ContextView
from .repository import (AppendResult, CompactionResult, Program, Repository, SessionInfo, SessionStats, Summarize,
                         VerifyReport, adrive)
from .repository.drive import Run, aretrying
from .repository.faults import Attempts, Fault, RetryPolicy, classify, connection_kept, describe, is_driver_error
from .repository.core import PAGE, SEARCH_LIMIT, Pages
from .repository.results import Conversation, SearchHit
from .repository.feed import FeedPage
from .repository.views import Fold
from .repository.ops import Execute, Transaction, connection_errors
from .storage import engine as engines
from .storage import migrate as migrations
from .storage.placement import PLACEMENT_SQL, Node, Routes
from .storage.statements import Statements
from .store import SessionStore
from .summarizers.base import Summarizer
from .summarizers.drive import aanswer
from .tokens import TokenCounter, default_counter

T = TypeVar("T")
S = TypeVar("S")

__all__ = ["AsyncSessionStore"]


class AsyncSessionStore:
    """`SessionStore` for asyncio: every method a coroutine, `events()`/`read_all()` async iterators.

    ``async with AsyncSessionStore(url) as store: await store.append(sid, [...])``. The URL is
    the same as for `SessionStore` (``sqlite:///…`` runs on aiosqlite, ``postgresql+psycopg://…``
    on psycopg's async connections); both stores can share one database.
    """

    def __init__(self, url: str | None = None, *, token_counter: TokenCounter | None = None,
                 sqlite_synchronous: str = "NORMAL", echo: bool = False,
                 retry_timeout: RetryPolicy | float | None = None, route_to_nodes: bool = True) -> None:
        self.url = engines.resolve_url(url)
        self._options: dict[str, Any] = {"sqlite_synchronous": sqlite_synchronous, "echo": echo}
        first = self._new_engine()
        self.backend: str = first.dialect.name
        self._dbapi = first.dialect.loaded_dbapi
        self._threads: _Threads | None = None
        if self.backend == "sqlite":  # programs run on sqlite3 in worker threads: its errors are the ones seen
            self._threads = _Threads(SessionStore(self.url, **self._options))
            self._dbapi = _Threads.dbapi()
        self._broken = connection_errors(self._dbapi)
        self.retry = RetryPolicy.of(retry_timeout)
        self._where = describe(first.url)
        self._token_counter = token_counter
        self._repo = Repository(Statements(first.dialect), lambda: self.token_counter)
        self._spare: AsyncEngine | None = first
        self._engines: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopEngine] = (
            weakref.WeakKeyDictionary())
        # Citus: appends go straight to the node holding their session (`storage/placement.py`).
        self._routes = Routes() if route_to_nodes and self.backend == "postgresql" else None

    def _new_engine(self) -> AsyncEngine:
        return engines.make_async_engine(self.url, **self._options)

    # ------------------------------------------------------------------ lifecycle

    @property
    def token_counter(self) -> TokenCounter:
        if self._token_counter is None:
            self._token_counter = default_counter()
        return self._token_counter

    @property
    def engine(self) -> AsyncEngine:
        """The engine of the running event loop."""
        return self._loop_engine().engine

    @property
    def sqlite_engine(self) -> Engine | None:
        """On SQLite, the blocking engine the store's programs run on (`_Threads`); None on PostgreSQL."""
        return self._threads_open().store.engine if self.backend == "sqlite" else None

    async def migrate(self) -> list[str]:
        """Create or upgrade the schema (``alembic upgrade head``); safe to run every start. See
        `SessionStore.migrate` (Citus)."""
        async with self.engine.connect() as connection:
            if self.backend == "postgresql":
                raw = await connection.get_raw_connection()
                await raw.driver_connection.set_autocommit(False)  # type: ignore[union-attr]
            done: list[str] = await connection.run_sync(migrations.upgrade_on)
        self._repo.sql.forget_shape()
        return done

    async def close(self) -> None:
        """Close every connection (those of other, finished event loops are stopped)."""
        if self._threads is not None:
            threads, self._threads = self._threads, None
            await asyncio.to_thread(threads.close)
        current = asyncio.get_running_loop()
        for loop, state in list(self._engines.items()):
            if loop is current:
                await state.dispose()
            else:
                state.abandon()
        self._engines = weakref.WeakKeyDictionary()
        if self._spare is not None:
            await self._spare.dispose()
            self._spare = None

    async def __aenter__(self) -> AsyncSessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncSessionStore({self.url!r})"

    # ------------------------------------------------------------------ running programs

    def _loop_engine(self) -> _LoopEngine:
        loop = asyncio.get_running_loop()
        state = self._engines.get(loop)
        if state is None:
            engine, self._spare = (self._spare or self._new_engine()), None
            state = _LoopEngine(engine, self.backend, self._repo.sql.begin)
            self._engines[loop] = state
            weakref.finalize(loop, state.abandon)
        return state

    async def _run(self, make: Callable[..., Program[T]], *args: Any, **kwargs: Any) -> T:
        """Run the repository program `make(*args, **kwargs)` on a connection of this loop (see
        `repository.ops`); a lost connection is replaced and the call tried again (`repository.faults`).

        On SQLite the calls of an agent's turn (`_Threads.INLINE`) run on the loop's own thread,
        never blocking it on a lock: when SQLite's write lock is held elsewhere the call sleeps on
        the loop and runs again as a fresh program (programs are written to be re-run); another
        driver error sends it to a worker thread and the usual retries."""
        attempts = Attempts(self.retry, self._dbapi, self._where)
        if self.backend == "sqlite" and getattr(make, "__name__", "") in _Threads.INLINE:
            waits = _Threads.lock_waits()
            while True:
                try:
                    return cast(T, await self._threads_open().run(make(*args, **kwargs), _summarizing(attempts),
                                                                  inline=True))
                except Exception as exc:
                    if not is_driver_error(exc, self._dbapi):
                        raise
                    wait = next(waits, None) if classify(exc, self._dbapi) is Fault.TIMEOUT else None
                    if wait is None:
                        break  # not a lock, or waited long enough: the worker threads' way, with its retries
                    await asyncio.sleep(wait)
        return await aretrying(lambda attempts: self._attempt(make(*args, **kwargs), attempts), attempts)

    def _threads_open(self) -> _Threads:
        if self._threads is None:  # reopened after a close
            self._threads = _Threads(SessionStore(self.url, **self._options))
        return self._threads

    async def _attempt(self, program: Program[T], attempts: Attempts) -> T:
        summarize = _summarizing(attempts)
        if self.backend == "sqlite":
            return cast(T, await self._threads_open().run(program, summarize))
        state = self._loop_engine()
        held = await state.acquire()
        from_node: list[BaseException] = []  # errors of statements run on a node (`_on_node` dropped that one)

        def kept(exc: BaseException) -> bool:
            return any(exc is e for e in from_node) or connection_kept(exc, self._dbapi)

        execute = self._routed(state, held, from_node)
        return await state.settle(held, adrive(program, execute, summarize, self._dbapi), self._broken, keep=kept)

    def _routed(self, state: _LoopEngine, held: _Held, from_node: list[BaseException]
                ) -> Callable[[Execute | Transaction], Awaitable[list[Any]]]:
        """How a call's statements run: on `held`, the coordinator's connection, except a session's
        append (or locked append's transaction) on Citus, which goes to the node holding the session
        (see `SessionStore._node_connection`); the errors of those land in `from_node`."""
        routes = self._routes
        if routes is None:
            return held.execute

        async def execute(op: Execute | Transaction) -> list[Any]:
            if op.session is not None and routes.stale(time.monotonic()):  # on the coordinator's connection
                try:
                    routes.load(await (await held.driver.execute(PLACEMENT_SQL)).fetchall(), time.monotonic())
                except self._dbapi.ProgrammingError:  # no placement to read: the coordinator
                    routes.load((), time.monotonic())
            try:
                rows = await on_a_node(op)
            except BaseException as exc:
                from_node.append(exc)
                raise
            return await held.execute(op) if rows is None else rows

        pinned: list[tuple[_LoopEngine, _Held, Node]] = []  # the node a transaction was begun on

        async def on_a_node(op: Execute | Transaction) -> list[Any] | None:
            """The statement's rows, run on a node; None when it is the coordinator's."""
            if pinned:
                if type(op) is Transaction:  # its end: the connection goes back
                    return await self._on_node(*pinned.pop(), op)
                try:
                    return await self._on_node(*pinned[0], op, keep=True)
                except self._broken as exc:
                    if not connection_kept(exc, self._dbapi):
                        pinned.clear()  # dropped: the rollback has nothing to go to
                    raise
            if op.session is not None:
                now = time.monotonic()
                node = routes.node_of(op.session, now)
                if node is not None:
                    target = state.node(node, self._node_engine)
                    try:
                        node_held = await target.acquire()
                    except Exception:  # not reachable from here: the coordinator forwards, as it would anyway
                        routes.failed(node, now)
                    else:
                        if type(op) is not Transaction:
                            return await self._on_node(target, node_held, node, op)
                        try:
                            begun = await self._on_node(target, node_held, node, op, keep=True)
                        except self._broken as exc:
                            if connection_kept(exc, self._dbapi):
                                await target.release(node_held)
                            raise
                        except BaseException:
                            await target.release(node_held)
                            raise
                        pinned.append((target, node_held, node))
                        return begun
            return None

        return execute

    def _node_engine(self, node: Node) -> AsyncEngine:
        return engines.make_async_engine(node.url(make_url(self.url)).render_as_string(hide_password=False),
                                         **self._options)

    async def _on_node(self, state: _LoopEngine, held: _Held, node: Node, op: Execute | Transaction, *,
                       keep: bool = False) -> list[Any]:
        """Run `op` on a node's connection, then give it back (unless `keep`: a transaction is open
        on it). One that breaks is dropped, and the node left to the coordinator for a while: the
        call's retry goes there (`repository.faults`)."""
        assert self._routes is not None
        try:
            if keep:
                return await held.execute(op)
            return await state.settle(held, held.execute(op), self._broken,
                                      keep=lambda exc: connection_kept(exc, self._dbapi))
        except self._broken as exc:
            if not connection_kept(exc, self._dbapi):
                self._routes.failed(node, time.monotonic())
                if keep:  # settle has not dropped it
                    await state.discard(held)
            raise

    async def _pages(self, page: Callable[[Any], Program[Any]], start: Any, key: Callable[[Any], Any] | None,
                     limit: int | None = None) -> AsyncIterator[Any]:
        pages = Pages(start, key, limit)
        while not pages.done:
            for row in pages.take(await self._run(page, pages.after)):
                yield row

    # ------------------------------------------------------------------ sessions

    async def create_session(self, session_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                             events: Iterable[NewEvent] | None = None, *, strict: bool = True) -> str:
        """See `SessionStore.create_session`."""
        return await self._run(self._repo.create_session, session_id, metadata, once(events), strict=strict,
                               fresh_id=new_event_id())  # one id for every try of this call

    async def ensure_session(self, session_id: str, metadata: Mapping[str, Any] | None = None) -> bool:
        """See `SessionStore.ensure_session`."""
        return await self._run(self._repo.ensure_session, session_id, metadata)

    async def session(self, session_id: str) -> SessionInfo:
        return await self._run(self._repo.session, session_id)

    async def sessions(self, *, limit: int | None = None) -> list[SessionInfo]:
        """Every session, oldest first."""
        return await self._run(self._repo.sessions, limit)

    async def version(self, session_id: str) -> int:
        """The session's head: the version of its last event, 0 when it has none."""
        return await self._run(self._repo.version, session_id)

    async def fork(self, session_id: str, at: int | None = None, *, new_session_id: str | None = None,
                   metadata: Mapping[str, Any] | None = None) -> str:
        """See `SessionStore.fork`."""
        return await self._run(self._repo.fork, session_id, at, new_session_id=new_session_id, metadata=metadata)

    # ------------------------------------------------------------------ reading

    def events(self, session_id: str, after: int = 0, upto: int | None = None,
               kinds: Iterable[str] | None = None) -> AsyncIterator[StoredEvent]:
        """``async for event in store.events(sid)``: see `SessionStore.events`."""
        wanted = list(kinds) if kinds is not None else None
        return self._pages(lambda a: self._repo.events_page(session_id, a, upto, wanted, PAGE), after,
                           lambda e: e.version)

    async def transcript(self, session_id: str) -> list[StoredEvent]:
        """Every event of the session, nothing pruned or summarised: the recoverable history."""
        return await self._run(self._repo.transcript, session_id)

    def read_all(self, after_position: int | str = 0, limit: int | None = None) -> AsyncIterator[StoredEvent]:
        """``async for event in store.read_all(after)``: see `SessionStore.read_all`."""
        return self._pages(lambda a: self._repo.feed_page(a, PAGE), after_position, None, limit)

    async def feed(self, after: int | str = 0, limit: int = PAGE) -> FeedPage:
        """One page of the global feed and the cursor after it: see `SessionStore.feed`."""
        return await self._run(self._repo.feed_page, after, limit)

    # ------------------------------------------------------------------ appending

    async def append(self, session_id: str, events: NewEvent | Iterable[NewEvent | Iterable[NewEvent]],
                     expected_version: int | None = None, *, strict: bool = True) -> AppendResult:
        """See `SessionStore.append`."""
        return await self._run(self._repo.append, session_id, once(events), expected_version, strict=strict)

    async def retract(self, session_id: str, versions: Sequence[int], *, reason: str,
                      expected_version: int | None = None) -> AppendResult:
        """See `SessionStore.retract`."""
        return await self._run(self._repo.retract, session_id, versions, reason=reason,
                               expected_version=expected_version)

    async def reset(self, session_id: str, *, reason: str, expected_version: int | None = None) -> AppendResult:
        """See `SessionStore.reset`."""
        return await self._run(self._repo.reset, session_id, reason=reason, expected_version=expected_version)

    async def record_provider_compaction(self, session_id: str, provider: str, items: Sequence[Mapping[str, Any]], *,
                                   first_kept_version: int | None = None, summarizer: str = "external",
                                   trigger: str = "auto", expected_version: int | None = None,
                                   reason: str | None = None) -> AppendResult:
        """See `SessionStore.record_provider_compaction`."""
        return await self._run(self._repo.record_provider_compaction, session_id,
                         {"provider": provider, "items": [dict(i) for i in items]},
                         first_kept_version=first_kept_version, summarizer=summarizer, trigger=trigger,
                         expected_version=expected_version, reason=reason)

    # ------------------------------------------------------------------ the context view

    async def follow(self, session_id: str, fold: Fold[S]) -> S:
        """See `SessionStore.follow`."""
        return cast(S, await self._run(self._repo.follow, session_id, fold))

    async def context(self, session_id: str, at: int | None = None) -> ContextView:
        """See `SessionStore.context`."""
        return await self._run(self._repo.context, session_id, at)

    # ------------------------------------------------------------------ compaction

    async def compact(self, session_id: str, policy: CompactionPolicy | None = None,
                      summarizer: Summarizer | None = None, instructions: str | None = None, *,
                      trigger: str = "manual", dry_run: bool = False) -> CompactionResult | None:
        """See `SessionStore.compact`; an async summariser (``asummarize``) is awaited."""
        return await self._run(self._repo.compact, session_id, policy, summarizer, instructions, trigger=trigger,
                               dry_run=dry_run)

    async def maybe_compact(self, session_id: str, policy: CompactionPolicy | None = None,
                            summarizer: Summarizer | None = None) -> CompactionResult | None:
        """See `SessionStore.maybe_compact`."""
        return await self._run(self._repo.maybe_compact, session_id, policy, summarizer)

    # ------------------------------------------------------------------ audit

    async def verify(self, session_ids: Iterable[str] | None = None) -> list[VerifyReport]:
        """See `SessionStore.verify`."""
        return await self._run(self._repo.verify, session_ids)

    async def conversation(self, session_id: str) -> Conversation:
        """See `SessionStore.conversation`."""
        return await self._run(self._repo.conversation, session_id)

    async def erase(self, session_id: str, reason: str, *, only_this: bool = False,
                    vacuum: bool = False) -> SessionInfo:
        """See `SessionStore.erase`."""
        return await self._run(self._repo.erase, session_id, reason, only_this=only_this, vacuum=vacuum)

    # ------------------------------------------------------------------ statistics

    async def stats(self, session_id: str) -> SessionStats:
        return await self._run(self._repo.stats, session_id)

    async def token_totals(self) -> dict[str, int]:
        return await self._run(self._repo.token_totals)

    async def transcript_tokens(self, session_ids: Iterable[str] | None = None) -> dict[str, int]:
        """See `SessionStore.transcript_tokens`."""
        return await self._run(self._repo.transcript_tokens, session_ids)

    async def find_sessions(self, prefix: str, *, limit: int | None = None) -> list[str]:
        """See `SessionStore.find_sessions`."""
        return await self._run(self._repo.find_sessions, prefix, limit=limit)

    async def first_event_times(self) -> dict[str, datetime]:
        """See `SessionStore.first_event_times`."""
        return await self._run(self._repo.first_event_times)

    async def first_message(self, session_id: str, role: str = "user") -> StoredEvent | None:
        """See `SessionStore.first_message`."""
        return await self._run(self._repo.first_message, session_id, role)

    async def index_search(self) -> int:
        """See `SessionStore.index_search`."""
        return await self._run(self._repo.index_feed)

    async def search(self, query: str, session_id: str | Sequence[str] | None = None, *, kind: str | None = None,
                     tool: str | None = None, limit: int = SEARCH_LIMIT, meta: bool = True) -> list[SearchHit]:
        """See `SessionStore.search`."""
        return await self._run(self._repo.search, query, session_id, kind, tool, limit, meta)


def _summarizing(attempts: Attempts) -> Callable[[Summarize], Awaitable[list[str | Exception]]]:
    """A call's summary requests answered by the async summariser, once for all its tries."""
    async def summarize(op: Summarize) -> list[str | Exception]:
        key = attempts.summary_key(op)
        if key not in attempts.summaries:
            attempts.summaries[key] = await aanswer(op.batch, op.summarizer)
        return attempts.summaries[key]

    return summarize


class _Held:
    """A connection checked out of the pool, and how to run a statement on its driver."""

    def __init__(self, connection: AsyncConnection, driver: Any, postgres: bool, begin: str) -> None:
        self.connection = connection
        self.driver = driver
        self._begin = begin
        self.execute = self._psycopg if postgres else self._aiosqlite

    async def _psycopg(self, op: Execute | Transaction) -> list[Any]:
        if type(op) is Execute:
            cursor = await self.driver.execute(op.statement.sql, op.statement.params(op.params))
            return await cursor.fetchall() if cursor.description is not None else []
        await self.driver.execute(self._begin if op.action == "begin" else op.action.upper())
        return []

    async def _aiosqlite(self, op: Execute | Transaction) -> list[Any]:
        # One hand-off to aiosqlite's thread per statement: execute and fetch together.
        if type(op) is Execute:
            return list(await self.driver.execute_fetchall(op.statement.sql, op.statement.params(op.params)))
        await self.driver.execute(self._begin if op.action == "begin" else op.action.upper())
        return []


def _stop_worker(driver: Any) -> None:
    """End an aiosqlite connection's worker thread when its loop is gone. aiosqlite's own
    `stop()` posts a future of the calling thread's loop, and its worker then calls into a closed
    loop ("Event loop is closed", raised in the thread): post the close with no future instead."""
    import aiosqlite.core

    def close() -> object:
        connection, driver._connection = driver._connection, None
        if connection is not None:
            connection.close()
        return aiosqlite.core._STOP_RUNNING_SENTINEL

    driver._running = False
    driver._tx.put_nowait((None, close))


class _Threads:
    """SQLite programs on the blocking driver (a `SessionStore`'s sqlite3 connections), one hop
    from the event loop per program — or none.

    aiosqlite hops to its thread and back for every statement, and SQLAlchemy's asyncio layer
    adds a greenlet switch to each: the async door ran appends at half the blocking door's
    speed. SQLite's work is in-process and short, so a whole program — an append's gate and
    its retry, the reads of a view — runs in one hop on a worker thread; the loop only waits
    for its result. A summary request (compaction planning) comes back to the loop, to be
    answered by the async summariser, and the program goes on in the next hop. A few threads
    are enough: SQLite takes one writer at a time.

    A hop still costs 50-150 µs on this machine, about an append's own time: the calls of an
    agent's turn (`INLINE`) run on the loop's thread itself, on a connection of that thread that
    never waits for SQLite's write lock (busy timeout 0: a lock held elsewhere fails at once, and
    the door sleeps on the loop — `lock_waits` — and runs the call again, as a fresh program;
    any other driver error sends it to a worker thread and the usual retries). In WAL mode a
    reader never waits, so such a call holds the loop only for its own work, as a coroutine's
    Python code does; anything longer (erase, verify, compact, search, imports) always hops.
    (Handing a call that met the lock to a worker thread instead, to wait there, failed one run
    in five of `test_one_store_from_several_threads_each_with_its_own_loop` with an immediate
    SQLITE_BUSY in the worker despite its busy timeout: not understood yet, and avoided.)
    """

    WORKERS: Final = 4
    INLINE: Final = frozenset({"append", "retract", "reset", "version", "session", "create_session", "ensure_session",
                               "context", "transcript", "follow", "maybe_compact", "events_page"})

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(self.WORKERS, thread_name_prefix="sessionstore-sqlite")
        self._unwaiting = threading.local()

    @staticmethod
    def dbapi() -> Any:
        import sqlite3

        return sqlite3

    @staticmethod
    def lock_waits(total: float = 30.0) -> Iterator[float]:
        """How long a turn's call sleeps, on the loop, before trying again when SQLite's write lock
        is held elsewhere: growing from 1 ms to 50 ms, `total` seconds in all (the busy timeout)."""
        wait, spent = 0.001, 0.0
        while spent < total:
            yield wait
            spent += wait
            wait = min(wait * 2, 0.05)

    def _step_here(self, run: Run) -> tuple[bool, Any]:
        """Step the program on this (the loop's) thread, on a connection that never waits for a lock."""
        connection = self.store._connection()
        if getattr(self._unwaiting, "connection", None) is not connection:  # new, or replaced after a fault
            connection.driver_connection.execute("PRAGMA busy_timeout = 0").close()
            self._unwaiting.connection = connection
        return self.store.step(run)

    async def run(self, program: Program[Any], summarize: Callable[[Summarize], Awaitable[list[Any]]], *,
                  inline: bool = False) -> Any:
        run = Run(program, self.store._dbapi)
        loop = asyncio.get_running_loop()
        while True:
            if inline:
                done, value = self._step_here(run)
            else:
                done, value = await loop.run_in_executor(self._pool, self.store.step, run)
            if done:
                return value
            try:
                run.answered(value, await summarize(value))
            except Exception as exc:
                run.failed(exc)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.store.close()


class _LoopEngine:
    """The engine of one event loop, and the connections the store keeps checked out of it.

    Checking a connection out of SQLAlchemy's pool for every call costs a greenlet switch and
    the pool's bookkeeping — as much as the statement itself. Idle connections stay checked out
    here and are handed to the next call at no cost. Since they never go back to the pool, the
    pool's own queue cannot make callers wait: a semaphore of the pool's size does (a caller
    past it waits for a connection another call releases, not for the pool's timeout).
    """

    def __init__(self, engine: AsyncEngine, backend: str, begin: str) -> None:
        self.engine = engine
        self._postgres = backend == "postgresql"
        self._begin = begin
        self._idle: list[_Held] = []
        self._slots = asyncio.Semaphore(engine.pool.size() + max(0, getattr(engine.pool, "_max_overflow", 0)))
        self._drivers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._nodes: dict[Node, _LoopEngine] = {}  # Citus: the nodes appends were sent to

    def node(self, node: Node, make: Callable[[Node], AsyncEngine]) -> _LoopEngine:
        """This loop's engine for a Citus node (made by `make` the first time)."""
        state = self._nodes.get(node)
        if state is None:
            state = self._nodes[node] = _LoopEngine(make(node), "postgresql", self._begin)
        return state

    async def acquire(self) -> _Held:
        await self._slots.acquire()
        if self._idle:
            return self._idle.pop()
        try:
            return await self._connect()
        except BaseException:
            self._slots.release()
            raise

    async def _connect(self) -> _Held:
        connection = await self.engine.connect()
        raw = await connection.get_raw_connection()
        driver: Any = raw.driver_connection
        if self._postgres:
            if not driver.autocommit:
                await driver.set_autocommit(True)  # each statement its own transaction, as in the blocking door
        else:
            self._drivers.add(driver)
        return _Held(connection, driver, self._postgres, self._begin)

    async def release(self, held: _Held) -> None:
        self._idle.append(held)
        self._slots.release()

    async def settle(self, held: _Held, work: Awaitable[T], broken: tuple[type[BaseException], ...],
                     keep: Callable[[BaseException], bool] = lambda exc: False) -> T:
        """`await work` on `held`, then give it back. A connection that broke (`broken`, unless
        `keep` says it did not) is not reused, nor are its idle siblings: they most likely died with it."""
        try:
            result = await work
        except broken as exc:
            if keep(exc):
                await self.release(held)
            else:
                await self.discard(held)
                await self.drop_idle()
            raise
        except BaseException:
            await self.release(held)
            raise
        await self.release(held)
        return result

    async def discard(self, held: _Held) -> None:
        try:
            await held.connection.invalidate()
        finally:
            self._slots.release()

    async def drop_idle(self) -> None:
        """After a lost connection the idle ones most likely died with it (a server restart):
        drop them rather than fail once on each."""
        idle, self._idle = self._idle, []
        for held in idle:
            with suppress(Exception):
                await held.connection.invalidate()

    async def dispose(self) -> None:
        idle, self._idle = self._idle, []
        for held in idle:
            await held.connection.close()
        await self.engine.dispose()
        for node in self._nodes.values():
            await node.dispose()

    def abandon(self) -> None:
        """The loop is gone (or not ours): its connections cannot be closed through it. Stop
        aiosqlite's worker threads (they would keep the process alive) and drop the pool."""
        for driver in list(self._drivers):
            if getattr(driver, "_running", False):
                _stop_worker(driver)
        for held in self._idle:  # out of the pool's books: nothing can check them in any more
            with suppress(Exception):
                held.connection.sync_connection.connection.detach()  # type: ignore[union-attr]
        self._idle = []
        self._drivers = weakref.WeakSet()
        self.engine.sync_engine.dispose(close=False)
        for node in self._nodes.values():
            node.abandon()
