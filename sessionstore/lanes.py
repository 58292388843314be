"""The threads the async door runs its calls on, so that the caller's event loop only awaits.

An event loop is not ours (DESIGN.md §12): an agent server's one loop serves every agent, HTTP
request and streamed token, and a call that held it for a millisecond held all of them. So
`AsyncSessionStore` runs every repository program — statements, commits, lock waits, token
counting, projection — on a blocking connection in a thread of its own, one hop per program
(`SessionStore.step`), and the loop waits for the result like for any I/O.

A *lane* is where a call runs, declared by the call itself (`AsyncSessionStore` names one at
every call). `Lane.ANY` is any of the store's threads. `Lane.WRITER` is, on SQLite, the store's
one writer thread: SQLite takes one writer at a time whatever we do, and writers in several
threads of one process would meet its lock and sleep in its busy handler (1 ms, 2 ms, 5 ms …)
instead of running one after the other; a short write — an append, a session created — goes
there. A long call that writes a little at its end (a compaction, a search's catch-up of the
index) runs on any thread and waits for the lock there when it must. On PostgreSQL every
thread writes: the lanes are one.

The hop is a queue and a wake-up of the caller's loop (`call_soon_threadsafe`): no
`concurrent.futures` future between the two, which costs a lock and callbacks per call.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from enum import Enum
from queue import SimpleQueue
from typing import Any, Final, TypeVar

T = TypeVar("T")

# What a thread is handed: the caller's loop and future, the call, and whether the thread ends after it.
_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...], bool]


class Lane(Enum):
    ANY = "any"        # any of the store's threads
    WRITER = "writer"  # SQLite: the one writer thread; PostgreSQL: any thread


class Lanes:
    """A store's threads: `threads` that take any call, and on SQLite (`writer`) one more that
    takes the writes. Threads start on first use, and again in a forked child (threads do not
    survive a fork); `close` and `stop` let the calls handed over finish, then end them."""

    def __init__(self, name: str, threads: int, *, writer: bool) -> None:
        self._name = name
        self._sizes: Final = {Lane.ANY: threads, Lane.WRITER: 1 if writer else 0}
        self._lock = threading.Lock()
        self._queues: dict[Lane, SimpleQueue[_Job | None]] = {}
        self._pid = os.getpid()

    def run(self, lane: Lane, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """`fn(*args)` on a thread of `lane`; its result (or error) is the future's, on the running loop.
        A future cancelled before its thread took it is not run."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue(lane).put((loop, future, fn, args, False))
        return future

    def _queue(self, lane: Lane) -> SimpleQueue[_Job | None]:
        if not self._sizes[lane]:
            lane = Lane.ANY
        queue = self._queues.get(lane)
        if queue is None or self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():  # a forked child: the parent's threads are not here
                    self._queues, self._pid = {}, os.getpid()
                queue = self._queues.get(lane)
                if queue is None:
                    queue = SimpleQueue()
                    for n in range(self._sizes[lane]):
                        threading.Thread(target=_serve, args=(queue,), daemon=True,
                                         name=f"{self._name}-{lane.value}-{n}").start()
                    self._queues[lane] = queue
        return queue

    def close(self, then: Callable[[], T]) -> asyncio.Future[T]:
        """End the threads once the calls already handed over are done, then run `then` (closing
        what they used) on the last of them; its result is the future's. The loop never waits
        for a thread to end. Calls made after this start new threads."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            queues, self._queues = self._queues, {}
        threads = sum(self._sizes[lane] for lane in queues)
        if not threads:  # none was started: nothing of theirs to wait for or to close
            future.set_result(then())
            return future
        left, guard = [threads], threading.Lock()

        def last_out() -> Any:
            with guard:
                left[0] -= 1
                if left[0]:
                    return _NOT_LAST
            return then()

        for lane, queue in queues.items():
            for _ in range(self._sizes[lane]):
                queue.put((loop, future, last_out, (), True))
        return future

    def stop(self) -> None:
        """End the threads once the calls already handed over are done, without waiting for them
        (a store collected unclosed)."""
        with self._lock:
            queues, self._queues = self._queues, {}
        for lane, queue in queues.items():
            for _ in range(self._sizes[lane]):
                queue.put(None)


_NOT_LAST: Final = object()  # a thread's closing call, when another thread is still to end


def _serve(queue: SimpleQueue[_Job | None]) -> None:
    while (job := queue.get()) is not None:
        loop, future, fn, args, ends = job
        if future.cancelled() and not ends:  # its caller has gone: never started, as a cancelled executor job
            continue
        try:
            outcome: tuple[Any, BaseException | None] = (fn(*args), None)
        except BaseException as exc:  # handed to the caller, who re-raises it
            outcome = (None, exc)
        if outcome[0] is not _NOT_LAST:
            try:
                loop.call_soon_threadsafe(_settle, future, *outcome)
            except RuntimeError:  # the caller's loop is closed: nobody waits for this any more
                pass
        if ends:
            return
        del job, loop, future, fn, args, outcome  # not kept alive while the thread waits for the next call


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if isinstance(error, StopIteration):  # a future refuses it (it would end the awaiting coroutine's frame)
        error = RuntimeError(f"a call on a store thread raised StopIteration: {error!r}")
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
