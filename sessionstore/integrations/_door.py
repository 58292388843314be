"""One async way into a store, whatever the caller gave: a path, a URL, or a store.

Frameworks call their sessions from coroutines, sometimes from several threads each with its
own event loop (the Agents SDK's ``run_sync``). A path or URL opens a store owned by the
integration, its schema created on first use; a `SessionStore` given by the caller is
called from a worker thread, so that a synchronous application can share its store with an
async framework without blocking the loop.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from ..compaction.policy import CompactionPolicy
from ..errors import ConcurrencyError, SessionExists, SessionNotFound
from ..events import NewEvent, StoredEvent
from ..projection import ContextView
from ..store import AppendResult, CompactionResult, SessionInfo, SessionStore
from ..storage.engine import resolve_url
from ..summarizers.base import Summarizer
from ._history import BackwardScan, retraction
from ._history import reset as reset_event

T = TypeVar("T")

# a path, a URL, a SessionStore or an AsyncSessionStore; None: $SESSIONSTORE_URL or ./sessionstore.db
Database = Any

_migrated: set[str] = set()
_migrate_lock = threading.Lock()


def database_url(db: str | os.PathLike[str] | None) -> str:
    """A path (``conversations.db``) or a URL (``postgresql+psycopg://…``); None → the default URL."""
    if db is None:
        return resolve_url(None)
    text = os.fspath(db)
    return text if "://" in text else f"sqlite:///{Path(text).expanduser()}"


class Door:
    """The store operations the integrations need, as coroutines, over a sync or an async store."""

    def __init__(self, db: Database) -> None:
        if isinstance(db, (str, os.PathLike)) or db is None:
            url = database_url(db)
            _migrate_once(url)
            self.store: Any = open_store(url)
            self.owned = True
        else:
            self.store, self.owned = db, False
        # A store whose methods are coroutines is awaited; a SessionStore runs in a worker thread.
        self.is_async = inspect.iscoroutinefunction(getattr(self.store, "append", None))

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.store, name)
        if self.is_async:
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    # ------------------------------------------------------------------ sessions

    async def create_session(self, session_id: str, metadata: Mapping[str, Any] | None = None) -> str:
        return cast(str, await self._call("create_session", session_id, metadata))

    async def session(self, session_id: str) -> SessionInfo:
        return cast(SessionInfo, await self._call("session", session_id))

    async def sessions(self) -> list[SessionInfo]:
        return cast("list[SessionInfo]", await self._call("sessions"))

    async def version(self, session_id: str) -> int:
        return cast(int, await self._call("version", session_id))

    # ------------------------------------------------------------------ events

    async def append(self, session_id: str, events: Sequence[NewEvent],
                     expected_version: int | None = None) -> AppendResult:
        # Frameworks store what they are given (a tool output whose call was trimmed away, …):
        # the projection repairs such histories instead of refusing them.
        return cast(AppendResult, await self._call("append", session_id, list(events), expected_version,
                                                   strict=False))

    async def events(self, session_id: str, after: int = 0, upto: int | None = None,
                     kinds: Iterable[str] | None = None) -> list[StoredEvent]:
        if self.is_async:
            return [e async for e in self.store.events(session_id, after, upto, kinds)]
        return await asyncio.to_thread(lambda: list(self.store.events(session_id, after, upto, kinds)))

    async def context(self, session_id: str) -> ContextView:
        return cast(ContextView, await self._call("context", session_id))

    async def maybe_compact(self, session_id: str, policy: CompactionPolicy | None,
                            summarizer: Summarizer | None) -> CompactionResult | None:
        return cast("CompactionResult | None", await self._call("maybe_compact", session_id, policy, summarizer))

    async def retract(self, session_id: str, versions: Sequence[int], *, reason: str,
                      expected_version: int | None = None) -> AppendResult:
        if hasattr(self.store, "retract"):
            return cast(AppendResult, await self._call("retract", session_id, list(versions), reason=reason,
                                                       expected_version=expected_version))
        return await self.append(session_id, [retraction(versions, reason)], expected_version)

    async def reset(self, session_id: str, *, reason: str, expected_version: int | None = None) -> AppendResult:
        if hasattr(self.store, "reset"):
            return cast(AppendResult, await self._call("reset", session_id, reason=reason,
                                                       expected_version=expected_version))
        head = await self.version(session_id) if expected_version is None else expected_version
        return await self.append(session_id, [reset_event(head + 1, reason)], head)

    async def live_tail(self, session_id: str, kinds: Iterable[str], limit: int | None = None
                        ) -> tuple[list[StoredEvent], int]:
        """The live events of `kinds` (the last `limit` of them), oldest first, and the head they were read at.

        Reads backwards in growing windows, so the cost follows `limit`, not the session's length.
        """
        head = await self.version(session_id)
        scan = BackwardScan(frozenset(kinds), limit)
        upto, window = head, (limit or 0) + 8  # a few more than asked: retractions are rare
        while not scan.done and upto > 0:
            after = 0 if limit is None else max(0, upto - window)
            chunk = await self.events(session_id, after, upto)
            scan.feed(reversed(chunk))
            upto, window = after, window * 2
        return scan.events, head

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close an owned sync store (an async one needs `aclose`)."""
        if self.owned and not self.is_async:
            self.store.close()

    async def aclose(self) -> None:
        if self.owned:
            await self._call("close")


def open_store(url: str) -> Any:
    """The store the integrations open for a path or URL."""
    return SessionStore(url)


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
    try:
        await door.create_session(session_id, metadata)
    except SessionExists:
        pass


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


__all__ = ["Database", "Door", "SessionNotFound", "database_url", "ensure", "finish_despite_cancel",
           "retry_on_conflict"]
