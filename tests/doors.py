"""Both front doors behind one blocking interface, so that the behavioural tests run unchanged
against `SessionStore` and `AsyncSessionStore` (parametrised, not copied).

`AsyncDoor` drives a real `AsyncSessionStore` on an event loop in a thread of its own; a test
calls it as it calls the blocking store (the thread is test harness: the store's own calls
run on its threads, `sessionstore.lanes`).

It is also the guard of DESIGN.md §12 ("an event loop is not ours"): a call during which one
step of the loop (`_run_once`: the callbacks that were ready) spent more than `STEP_CPU` seconds of
the loop thread's CPU fails, naming what ran. A program run on the loop's thread fails anyway
(`aio._OffLoopStore`); this catches the rest: a projection, a rendering, a token count done on
the loop. CPU time, not the wall clock: on a loaded 2-core machine a step of a few microseconds
may wait tens of milliseconds for a core or for the GIL (the store's threads hold it), which no
bound on wall time tells apart from work. The loop runs in asyncio's debug mode too (a call into
it from another thread fails at once).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from sessionstore import AsyncSessionStore, SessionStore

DOORS = ("sync", "async")
STEP_CPU = 0.01  # seconds of CPU one step of the loop may take while a call runs
_END = object()


class _GuardedLoop(asyncio.SelectorEventLoop):
    """An event loop that keeps the steps that took more than `STEP_CPU` of its thread's CPU.

    A garbage collection that happens to start on the loop's thread is not the step's work (the
    interpreter's, over every object of the test process: hundreds of ms in a worker that ran
    the property tests): its CPU is left out (`gc.callbacks`)."""

    def __init__(self) -> None:
        super().__init__()
        self.slow: list[str] = []
        self._thread: int | None = None
        self._collecting = 0.0
        self._collected = 0.0
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if threading.get_ident() != self._thread:
            return
        if phase == "start":
            self._collecting = time.thread_time()
        else:
            self._collected += time.thread_time() - self._collecting

    def _run_once(self) -> None:
        self._thread = threading.get_ident()
        ready = list(self._ready)  # type: ignore[attr-defined]
        started, collected = time.thread_time(), self._collected
        super()._run_once()  # type: ignore[misc]
        spent = time.thread_time() - started - (self._collected - collected)
        if spent > STEP_CPU:
            self.slow.append(f"{spent * 1000:.1f} ms of CPU running {ready}")

    def close(self) -> None:
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)
        super().close()


class AsyncDoor:
    def __init__(self, url: str) -> None:
        self._loop = _GuardedLoop()
        self._loop.set_debug(True)
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.store = AsyncSessionStore(url)
        self.url, self.backend = self.store.url, self.store.backend

    def _call(self, awaitable: Any) -> Any:
        try:
            return asyncio.run_coroutine_threadsafe(awaitable, self._loop).result(120)
        finally:
            slow, self._loop.slow = self._loop.slow, []
            assert not slow, f"the async door worked on the event loop ({STEP_CPU * 1000:g} ms of CPU at most): {slow}"

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
        try:
            self._call(self.store.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()

    def __repr__(self) -> str:
        return f"AsyncDoor({self.store!r})"


def open_door(url: str, door: str) -> Any:
    """A store on `url` through the named door ("sync" or "async")."""
    return SessionStore(url) if door == "sync" else AsyncDoor(url)
