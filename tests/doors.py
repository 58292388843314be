"""Both front doors behind one blocking interface, so that the behavioural tests run unchanged
against `SessionStore` and `AsyncSessionStore` (parametrised, not copied).

`AsyncDoor` drives a real `AsyncSessionStore` — aiosqlite or psycopg's async connections — on
an event loop in a thread of its own; a test calls it as it calls the blocking store. This is
test harness only: the async store itself never touches a thread.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from sessionstore import AsyncSessionStore, SessionStore

DOORS = ("sync", "async")
_END = object()


class AsyncDoor:
    def __init__(self, url: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.store = AsyncSessionStore(url)
        self.url, self.backend = self.store.url, self.store.backend

    def _call(self, awaitable: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(awaitable, self._loop).result(120)

    def _iterate(self, iterator: AsyncIterator[Any]) -> Iterator[Any]:
        async def step() -> Any:
            return await anext(iterator, _END)

        first = self._call(step())  # errors (an unknown session) surface at the call, as with the blocking store

        def rest() -> Iterator[Any]:
            item = first
            while item is not _END:
                yield item
                item = self._call(step())

        return rest()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if name in ("events", "read_all"):
            return lambda *args, **kwargs: self._iterate(attribute(*args, **kwargs))
        if inspect.iscoroutinefunction(attribute):
            return lambda *args, **kwargs: self._call(attribute(*args, **kwargs))
        return attribute

    def close(self) -> None:
        self._call(self.store.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __repr__(self) -> str:
        return f"AsyncDoor({self.store!r})"


def open_door(url: str, door: str) -> Any:
    """A store on `url` through the named door ("sync" or "async")."""
    return SessionStore(url) if door == "sync" else AsyncDoor(url)
