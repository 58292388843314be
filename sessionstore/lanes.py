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

Where a call lands decides what it finds warm. Each thread waits on a queue of its own, and a
call goes to the thread that went idle last, so that one caller's calls, one after the other,
run on one thread and its connection. On SQLite a read made while no other call is under way
(none handed over whose result its loop has not yet taken: one agent at a time) goes to the
writer: a connection's page cache survives its own commits but is dropped at the next read after
another connection's (SQLite's WAL rule), so one agent's turn — its view, its appends, its
compaction check — reads pages its own writes left warm instead of reading them again from the
file (8 page reads a turn against 1, measured with `strace`). While others are under way, reads
stay on the readers: a write never waits for a read it could have run beside.

The hop is a queue and a wake-up of the caller's loop (`call_soon_threadsafe`): no
`concurrent.futures` future between the two, which costs a lock and callbacks per call.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from collections.abc import Callable
from enum import Enum
from queue import SimpleQueue
from typing import Any, Final, TypeVar

T = TypeVar("T")

# What a thread is handed: the caller's loop and future, the call, whether the thread ends after
# it, and the count of calls under way it is one of (None: a thread's closing call).
_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...], bool,
             "_Calls | None"]


class Lane(Enum):
    ANY = "any"        # any of the store's threads
    WRITER = "writer"  # SQLite: the one writer thread; PostgreSQL: any thread


class Lanes:
    """A store's threads: `threads` that take any call, and on SQLite (`writer`) one more that
    takes the writes. Threads start on first use, as many as calls wait at once, and again in a
    forked child (threads do not survive a fork); `close` and `stop` let the calls handed over
    finish, then end them."""

    def __init__(self, name: str, threads: int, *, writer: bool) -> None:
        self._name = name
        self._sizes: Final = {Lane.ANY: threads, Lane.WRITER: 1 if writer else 0}
        self._lock = threading.Lock()
        self._pools: dict[Lane, _Pool] = {}
        self._calls = _Calls()
        self._forks = _forks[0]

    def run(self, lane: Lane, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """`fn(*args)` on a thread of `lane`; its result (or error) is the future's, on the running loop.
        A future cancelled before its thread took it is not run."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._hand(lane, loop, future, fn, args)
        return future

    def run_to_end(self, lane: Lane, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """`run` for a write whose caller must never be left unsure whether it happened: the call
        runs once handed over, and its future refuses cancellation, so that a task cancelled
        while awaiting it is cancelled when the call has ended (`Task.cancel`'s rule for a
        future that cannot be cancelled) — without a task of its own to shield it, which costs
        the loop a task, a wait and two more turns of the loop a call."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = _ToTheEnd(loop=loop)
        self._hand(lane, loop, future, fn, args)
        return future

    def _hand(self, lane: Lane, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any],
              fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        if self._forks != _forks[0]:
            with self._lock:
                if self._forks != _forks[0]:  # a forked child: the parent's threads and calls are not here
                    self._pools, self._calls, self._forks = {}, _Calls(), _forks[0]
        calls = self._calls
        job: _Job = (loop, future, fn, args, False, calls)
        alone = calls.start()
        # A read with no other call under way: on the writer, whose pages are warm (the module's docstring).
        if alone and lane is Lane.ANY and self._sizes[Lane.WRITER]:
            if self._pool(Lane.WRITER).hand(job, only_to_idle=True):
                return
        while not self._pool(lane).hand(job):  # that pool was closed meanwhile: the next one takes it
            pass

    def _pool(self, lane: Lane) -> _Pool:
        if not self._sizes[lane]:
            lane = Lane.ANY
        pool = self._pools.get(lane)
        if pool is None:
            with self._lock:
                pool = self._pools.get(lane)
                if pool is None:
                    pool = self._pools[lane] = _Pool(f"{self._name}-{lane.value}", self._sizes[lane])
        return pool

    def close(self, then: Callable[[], T]) -> asyncio.Future[T]:
        """End the threads once the calls already handed over are done, then run `then` (closing
        what they used) on the last of them; its result is the future's. The loop never waits
        for a thread to end. Calls made after this start new threads."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        threads = sum(pool.started for pool in pools)
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

        for pool in pools:
            pool.end((loop, future, last_out, (), True, None))
        return future

    def stop(self) -> None:
        """End the threads once the calls already handed over are done, without waiting for them
        (a store collected unclosed)."""
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.end(None)


class _ToTheEnd(asyncio.Future[Any]):
    """A future whose caller cannot cancel it: only its thread settles it (`Lanes.run_to_end`). The
    task awaiting it still takes its result when woken, an error included (so none is reported
    as never retrieved), before the cancellation is thrown in."""

    def cancel(self, msg: Any = None) -> bool:
        return False


class _Calls:
    """How many calls of a store are under way: handed over, their results not yet taken by their
    loop. None when an agent alone makes its next call; some while other agents' are."""

    __slots__ = ("lock", "count")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0

    def start(self) -> bool:
        """Count a call in; True when it is the only one under way."""
        with self.lock:
            self.count += 1
            return self.count == 1

    def end(self) -> None:
        with self.lock:
            self.count -= 1


class _Pool:
    """The threads of one lane. Each waits on a queue of its own (`inbox`); a call goes to the
    thread that went idle last, or to a new thread while fewer than `size` run, or else waits in
    `backlog`, which a thread empties before it goes idle."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.started = 0
        self.closed = False
        self.lock = threading.Lock()
        self.idle: list[SimpleQueue[_Job | None]] = []
        self.backlog: deque[_Job | None] = deque()

    def hand(self, job: _Job, *, only_to_idle: bool = False) -> bool:
        """Give `job` to a thread; False when the pool is closed (nothing done). `only_to_idle`: to
        an idle thread (the first, if none has started), else nothing done and False."""
        with self.lock:
            if self.closed:
                return False
            if self.idle:
                inbox = self.idle.pop()
            elif self.started < self.size and not (only_to_idle and self.started):
                inbox = SimpleQueue()
                threading.Thread(target=_serve, args=(self, inbox, job), daemon=True,
                                 name=f"{self.name}-{self.started}").start()
                self.started += 1
                return True
            elif only_to_idle:
                return False
            else:
                self.backlog.append(job)
                return True
        inbox.put(job)
        return True

    def after(self, inbox: SimpleQueue[_Job | None]) -> _Job | None | object:
        """What a thread that has just run a call does next: the backlog's first call, or else
        `_IDLE` — it is idle from now on, before it hands its result back, so that the caller's
        next call (made once that result is in) finds it idle and warm."""
        with self.lock:
            if self.backlog:
                return self.backlog.popleft()
            self.idle.append(inbox)
        return _IDLE

    def end(self, last: _Job | None) -> None:
        """Hand every thread `last` after the calls handed over (None: end without a call): an idle
        thread in its inbox, a busy one in the backlog, which it empties first."""
        with self.lock:
            self.closed = True
            idle, self.idle = self.idle, []
            self.backlog.extend(last for _ in range(self.started - len(idle)))
        for inbox in idle:
            inbox.put(last)


_NOT_LAST: Final = object()  # a thread's closing call, when another thread is still to end
_IDLE: Final = object()  # a thread with no call left to run: it waits on its inbox
# How many times this process was forked into: a child's lanes start threads of their own. A
# counter bumped in the child, not a `getpid` a call (a system call each time).
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))


def _serve(pool: _Pool, inbox: SimpleQueue[_Job | None], job: _Job | None) -> None:
    while job is not None:
        loop, future, fn, args, ends, calls = job
        outcome: tuple[Any, BaseException | None] | None = None
        # A cancelled call's caller has gone: never started, as a cancelled executor job.
        if ends or not future.cancelled():
            try:
                outcome = (fn(*args), None)
            except BaseException as exc:  # handed to the caller, who re-raises it
                outcome = (None, exc)
        following = None if ends else pool.after(inbox)
        if outcome is not None and outcome[0] is not _NOT_LAST:
            try:
                loop.call_soon_threadsafe(_settle, future, *outcome, calls)
            except RuntimeError:  # the caller's loop is closed: nobody waits for this any more
                if calls is not None:
                    calls.end()
        elif calls is not None:  # a call cancelled before it ran: nothing to hand back
            calls.end()
        if ends:
            return
        del job, loop, future, fn, args, outcome, calls  # not kept alive while the thread waits for the next call
        job = inbox.get() if following is _IDLE else following  # type: ignore[assignment]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None, calls: _Calls | None) -> None:
    if calls is not None:
        calls.end()
    if future.cancelled():
        return
    if isinstance(error, StopIteration):  # a future refuses it (it would end the awaiting coroutine's frame)
        error = RuntimeError(f"a call on a store thread raised StopIteration: {error!r}")
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
