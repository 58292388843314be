"""One async way into a store, whatever the caller gave: a path, a URL, or a store.

Frameworks call their sessions from coroutines, sometimes from several threads each with its
own event loop (the Agents SDK's ``run_sync``). A path or URL opens an `AsyncSessionStore`
owned by the integration (any loop may call it), its schema created on first use, and shared
by every session object the process opens on that URL: an app makes one session object per
conversation, and one store's threads and connections serve them all (on SQLite, its one
writer thread writes for all of them, rather than a writer per object meeting the others at
the file's lock). It is closed with the last of them. An `AsyncSessionStore` given by the
caller is awaited; a `SessionStore` is called from a worker thread, so that a synchronous
application can share its store with an async framework without blocking the loop. The few synchronous entry points
a framework has (LangChain's ``messages``, ``add_messages``, ``clear``) use `blocking`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast
from urllib.parse import quote

from .. import events as ev
from ..aio import AsyncSessionStore
from ..compaction.policy import CompactionPolicy
from ..errors import ConcurrencyError, ConfigurationError, SessionNotFound
from ..events import NewEvent, StoredEvent
from ..projection import ContextView
from ..storage.engine import database_url
from ..store import AppendResult, CompactionResult, SessionInfo, SessionStore
from ..summarizers.base import Summarizer
from ._history import BackwardScan

T = TypeVar("T")

# a path, a URL, a SessionStore or an AsyncSessionStore; None: $SESSIONSTORE_URL or ./sessionstore.db
Database = str | os.PathLike[str] | SessionStore | AsyncSessionStore | None

_migrated: set[str] = set()
_migrate_lock = threading.Lock()  # guards `_migrated`, and the stores below
# The stores opened on a path or URL, shared by the doors of this process that name it, and
# how many open doors hold each (a store whose doors were all dropped unclosed goes with them).
_opened: weakref.WeakValueDictionary[str, AsyncSessionStore] = weakref.WeakValueDictionary()
_holders: weakref.WeakKeyDictionary[AsyncSessionStore, int] = weakref.WeakKeyDictionary()


class Door:
    """The store operations the integrations need, as coroutines, over a sync or an async store."""

    def __init__(self, db: Database) -> None:
        self.aio: AsyncSessionStore | None = None
        self._blocking: SessionStore | None = None
        self._heads: dict[str, int] = {}  # the highest version this door has seen, by session
        self._owns_blocking = False
        if db is None or isinstance(db, (str, os.PathLike)):
            self.aio, self.owned = _open(database_url(db)), True
        elif isinstance(db, AsyncSessionStore):
            self.aio, self.owned = db, False
        elif isinstance(db, SessionStore):
            self._blocking, self.owned = db, False
        else:
            raise ConfigurationError(f"db must be a path, a URL, a SessionStore or an AsyncSessionStore, "
                                     f"not {type(db).__name__}")

    @property
    def store(self) -> SessionStore | AsyncSessionStore:
        """The store the integration writes to: the one given, or the `AsyncSessionStore` it opened."""
        return self.aio if self.aio is not None else cast(SessionStore, self._blocking)

    @property
    def blocking(self) -> SessionStore:
        """A blocking store on the same database, for a framework's synchronous methods.

        Over an async store this is a `SessionStore` opened on its URL (with its token counter)
        the first time it is needed, and closed with the door.
        """
        if self._blocking is None:
            aio = cast(AsyncSessionStore, self.aio)
            self._blocking = SessionStore(aio.url, token_counter=aio.token_counter)
            self._owns_blocking = True
        return self._blocking

    async def in_thread(self, work: Callable[[SessionStore], T], *, writes: bool = False,
                        to_the_end: bool = False) -> T:
        """`work(store)` with a blocking store, off the loop: on the async store's threads
        (`AsyncSessionStore.in_thread`), or a worker thread for a sync store. `to_the_end`: see
        `finish_despite_cancel`, which the async store's threads do without a task of their own."""
        if self.aio is not None:
            return await self.aio.in_thread(work, writes=writes, to_the_end=to_the_end)
        running = asyncio.to_thread(work, cast(SessionStore, self._blocking))
        return await (finish_despite_cancel(running) if to_the_end else running)

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Any store method by name: awaited on an async store, on a worker thread for a sync one."""
        if self.aio is not None:
            return await getattr(self.aio, name)(*args, **kwargs)
        return await asyncio.to_thread(getattr(self._blocking, name), *args, **kwargs)

    # ------------------------------------------------------------------ sessions

    async def create_session(self, session_id: str, metadata: Mapping[str, Any] | None = None) -> str:
        return cast(str, await self.call("create_session", session_id, metadata))

    async def ensure_session(self, session_id: str, metadata: Mapping[str, Any] | None = None) -> bool:
        return cast(bool, await self.call("ensure_session", session_id, metadata))

    async def session(self, session_id: str) -> SessionInfo:
        return cast(SessionInfo, await self.call("session", session_id))

    async def sessions(self, where: Mapping[str, Any] | None = None) -> list[SessionInfo]:
        """The sessions whose metadata has `where`'s values (`SessionStore.sessions`), all of them."""
        return cast("list[SessionInfo]", await self.call("sessions", where=where))

    async def latest_events(self, session_ids: Iterable[str], kind: str) -> dict[str, StoredEvent]:
        return cast("dict[str, StoredEvent]", await self.call("latest_events", list(session_ids), kind))

    async def version(self, session_id: str) -> int:
        return cast(int, await self.call("version", session_id))

    # ------------------------------------------------------------------ events

    async def append(self, session_id: str, events: Sequence[NewEvent],
                     expected_version: int | None = None) -> AppendResult:
        # Frameworks store what they are given (a tool output whose call was trimmed away, …):
        # the projection repairs such histories instead of refusing them.
        result = cast(AppendResult, await self.call("append", session_id, list(events), expected_version,
                                                     strict=False))
        self._saw(session_id, result)
        return result

    async def append_made(self, session_id: str, make: Callable[[], Sequence[NewEvent]], *,
                          create_with: Mapping[str, Any] | None = None) -> AppendResult:
        """`append` of the events `make()` returns, made on the store's writer thread in the same
        hop as the write (a framework's conversion of its items costs tens of µs each, which the
        loop need not run); with `create_with`, the session is first created with that metadata
        unless it exists (`ensure_session`). Nothing is created when `make` raises. A caller
        cancelled meanwhile is cancelled once the write has ended (`finish_despite_cancel`)."""
        def write(store: SessionStore) -> AppendResult:
            events = list(make())
            if create_with is not None:
                store.ensure_session(session_id, create_with)
            return store.append(session_id, events, strict=False)

        return self._saw(session_id, await self.in_thread(write, writes=True, to_the_end=True))

    def _saw(self, session_id: str, result: AppendResult) -> AppendResult:
        """Remember the head a write reached (a later read starts its first window below it)."""
        if result.version > self._heads.get(session_id, 0):
            self._heads[session_id] = result.version
        return result

    async def events(self, session_id: str, after: int = 0, upto: int | None = None,
                     kinds: Iterable[str] | None = None) -> list[StoredEvent]:
        if after == 0 and upto is None:  # the whole history: the store folds only what is new since its last read
            history = cast("list[StoredEvent]", await self.call("transcript", session_id))
            if kinds is None:
                return history
            wanted = frozenset(kinds)
            return [e for e in history if e.kind in wanted]
        if self.aio is not None:
            return [e async for e in self.aio.events(session_id, after, upto, kinds)]
        store = cast(SessionStore, self._blocking)
        return await asyncio.to_thread(lambda: list(store.events(session_id, after, upto, kinds)))

    def head_seen(self, session_id: str) -> int | None:
        """The highest version this door has seen of the session (None: not read yet)."""
        return self._heads.get(session_id)

    async def context(self, session_id: str) -> ContextView:
        return cast(ContextView, await self.call("context", session_id))

    async def maybe_compact(self, session_id: str, policy: CompactionPolicy | None,
                            summarizer: Summarizer | None) -> CompactionResult | None:
        return cast("CompactionResult | None", await self.call("maybe_compact", session_id, policy, summarizer))

    async def retract(self, session_id: str, versions: Sequence[int], *, reason: str,
                      expected_version: int | None = None) -> AppendResult:
        return self._saw(session_id, cast(AppendResult, await self.call(
            "retract", session_id, list(versions), reason=reason, expected_version=expected_version)))

    async def reset(self, session_id: str, *, reason: str, expected_version: int | None = None) -> AppendResult:
        return self._saw(session_id, cast(AppendResult, await self.call(
            "reset", session_id, reason=reason, expected_version=expected_version)))

    async def record_provider_compaction(self, session_id: str, provider: str, items: Sequence[Any], *,
                                         summarizer: str, expected_version: int | None = None,
                                         reason: str | None = None) -> AppendResult:
        return self._saw(session_id, cast(AppendResult, await self.call(
            "record_provider_compaction", session_id, provider, list(items), summarizer=summarizer,
            expected_version=expected_version, reason=reason)))

    async def live_tail(self, session_id: str, kinds: Iterable[str], limit: int | None = None
                        ) -> tuple[list[StoredEvent], int]:
        """The live events of `kinds` (the last `limit` of them), oldest first, and the head they were read at.

        Reads backwards in growing windows, so the cost follows `limit`, not the session's length;
        on the store's threads, in one hop (a whole history's scan is no work for the loop)."""
        seen = self._heads.get(session_id)
        events, head = await self.in_thread(lambda store: _live_tail(store, session_id, frozenset(kinds), limit, seen))
        self._heads[session_id] = head
        return events, head

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close what the door opened, from synchronous code (a store given to it stays open)."""
        if self._owns_blocking and self._blocking is not None:
            self._blocking.close()
        if self.owned and self.aio is not None and _release(self.aio):
            run_blocking(self.aio.close)
        self.owned = False

    async def aclose(self) -> None:
        """Close what the door opened (a store given to it stays open)."""
        if self._owns_blocking and self._blocking is not None:
            self._blocking.close()
        if self.owned and self.aio is not None and _release(self.aio):
            await self.aio.close()
        self.owned = False


def store_key(prefix: str, *parts: str) -> str:
    """A store session id for a framework's composite keys: readable, unambiguous (each part
    quoted, so ``/`` only separates parts), within the id limit (hashed past it)."""
    key = prefix + "/".join(quote(p, safe="") for p in parts)
    return key if len(key) <= ev.MAX_ID else prefix + "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to its end from synchronous code, even code called inside a running loop
    (then on a thread of its own: a loop cannot be entered twice)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(1, thread_name_prefix="sessionstore-blocking") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _open(url: str) -> AsyncSessionStore:
    """The process's store on `url` (opened, and its schema created, the first time)."""
    _migrate_once(url)
    with _migrate_lock:
        store = _opened.get(url)
        if store is None:
            store = _opened[url] = AsyncSessionStore(url)
        _holders[store] = _holders.get(store, 0) + 1
        return store


def _release(store: AsyncSessionStore) -> bool:
    """A door lets go of a store it opened: True when it was the last (the store is to be closed)."""
    with _migrate_lock:
        holders = _holders.get(store, 1) - 1
        if holders > 0:
            _holders[store] = holders
            return False
        _holders.pop(store, None)
        if _opened.get(store.url) is store:
            del _opened[store.url]
        return True


def _migrate_once(url: str) -> None:
    """Create the schema of a database the integration opens, once per process and URL."""
    with _migrate_lock:
        if url not in _migrated:
            with SessionStore(url) as store:
                store.migrate()
            _migrated.add(url)


async def retry_on_conflict(attempt: Callable[[], Awaitable[T]], tries: int = 50) -> T:
    """Run a read-then-write `attempt` again when another writer got there first."""
    for _ in range(tries - 1):
        try:
            return await attempt()
        except ConcurrencyError:
            continue
    return await attempt()


async def ensure(door: Door, session_id: str, metadata: Mapping[str, Any] | None = None) -> None:
    """Create the session unless it exists (safe when several writers race to create it)."""
    await door.ensure_session(session_id, metadata)


async def finish_despite_cancel(awaitable: Awaitable[T]) -> T:
    """Await a write to the end even when the caller is cancelled, then report the cancellation.

    A cancelled write must not leave the caller unsure whether it happened: the write goes on
    to its commit (or failure), and only then does the cancellation propagate.
    """
    task = asyncio.ensure_future(awaitable)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved, so that asyncio does not log it as never retrieved
        raise cancelled
    return task.result()


def _live_tail(store: SessionStore, session_id: str, kinds: frozenset[str], limit: int | None, seen: int | None
               ) -> tuple[list[StoredEvent], int]:
    """`Door.live_tail` on a blocking store. The first window reads to the head, wherever it is
    now; it starts below the head the door last saw (`seen`: heads only grow), so one read
    usually finds both the head and the items."""
    scan = BackwardScan(kinds, limit)
    window = None if limit is None else limit + 8  # a few more than asked: retractions are rare
    after = 0 if window is None else max(0, (store.version(session_id) if seen is None else seen) - window)
    first = store.transcript(session_id) if after == 0 else list(store.events(session_id, after))
    if first:
        head = first[-1].version
    else:  # nothing after `after`: the head is at or below it (a database replaced under us)
        head = store.version(session_id)
        after = max(0, head - (window or head))
        first = list(store.events(session_id, after))
        after = first[0].version - 1 if first else 0
    scan.feed(reversed(first))
    upto = after
    while not scan.done and upto > 0 and window is not None:
        window *= 2
        after = max(0, upto - window)
        scan.feed(reversed(list(store.events(session_id, after, upto))))
        upto = after
    return scan.events, head


__all__ = ["Database", "Door", "SessionNotFound", "database_url", "ensure", "finish_despite_cancel",
           "retry_on_conflict", "run_blocking", "store_key"]
