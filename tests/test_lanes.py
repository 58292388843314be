"""The async door's threads (`sessionstore.lanes`): where a call runs, how a write outlives its
caller's cancellation, and how the threads end."""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest

from sessionstore.lanes import Lane, Lanes


def _name() -> str:
    return threading.current_thread().name


def test_one_callers_calls_land_on_one_thread_and_a_crowd_spreads() -> None:
    """Calls made one after the other go to the thread that went idle last (its caches and its
    connection warm); calls waiting at once start up to the lane's threads, no more."""
    async def main() -> tuple[set[str], set[str]]:
        lanes = Lanes("t", 3, writer=False)
        alone = {await lanes.run(Lane.ANY, _name) for _ in range(20)}
        gate = threading.Barrier(3, timeout=10)

        def meet() -> str:
            gate.wait()  # three calls at once: each on a thread of its own, or this never returns
            return _name()

        crowd = set(await asyncio.gather(*(lanes.run(Lane.WRITER, meet) for _ in range(3))))
        await lanes.close(lambda: None)
        return alone, crowd

    alone, crowd = asyncio.run(main())
    assert len(alone) == 1
    assert len(crowd) == 3 and alone <= crowd  # WRITER is ANY without a writer


def test_a_read_takes_the_idle_writer_and_a_reader_beside_a_write() -> None:
    """SQLite's lanes: a read made while no other call is under way runs on the writer (its
    connection's pages are warm after its own commits); a read made while a write is under way
    runs on a reader, and never waits for the write."""
    async def main() -> tuple[list[str], str, str]:
        lanes = Lanes("t", 2, writer=True)
        alone = [await lanes.run(Lane.WRITER if n % 2 else Lane.ANY, _name) for n in range(6)]
        writing, release = threading.Event(), threading.Event()

        def long_write() -> str:
            writing.set()
            assert release.wait(10)
            return _name()

        write = lanes.run(Lane.WRITER, long_write)
        while not writing.is_set():
            await asyncio.sleep(0.001)
        beside = await lanes.run(Lane.ANY, _name)  # done while the write still waits
        release.set()
        writer = await write
        dropped = lanes.run(Lane.ANY, _name)
        dropped.cancel()  # run or not, it counts as under way no more once the writer is past it
        await lanes.run(Lane.WRITER, _name)
        again = await lanes.run(Lane.ANY, _name)  # alone again: back on the writer
        await lanes.close(lambda: None)
        return [*alone, again], beside, writer

    alone, beside, writer = asyncio.run(main())
    assert set(alone) == {writer} and "-writer-" in writer
    assert "-any-" in beside


def test_a_write_run_to_the_end_outlives_its_callers_cancellation() -> None:
    """`run_to_end`: the task awaiting the call is cancelled only once the call has ended (its
    effect is there when the cancellation arrives; an error it raised is not reported as never
    retrieved); `run`'s call not yet started is dropped."""
    done: list[str] = []

    def slow(tag: str) -> str:
        time.sleep(0.05)
        done.append(tag)
        return tag

    def failing() -> None:
        time.sleep(0.05)
        raise ValueError("refused")

    async def main() -> tuple[list[str], list[str], bool, list[dict[str, object]]]:
        lanes = Lanes("t", 1, writer=False)
        unhandled: list[dict[str, object]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: unhandled.append(context))

        async def call(tag: str) -> str:
            return await lanes.run_to_end(Lane.ANY, slow, tag)

        task = asyncio.create_task(call("kept"))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        seen_at_cancel = list(done)
        busy = lanes.run(Lane.ANY, slow, "first")
        dropped = lanes.run(Lane.ANY, slow, "dropped")  # waits behind `busy` on the one thread
        dropped.cancel()
        await busy
        async def fail() -> None:
            await lanes.run_to_end(Lane.ANY, failing)

        failed = asyncio.create_task(fail())
        await asyncio.sleep(0.01)
        failed.cancel()
        try:
            await failed
        except asyncio.CancelledError:
            pass
        failed_cancelled = failed.cancelled()
        del failed
        await lanes.close(lambda: None)
        gc.collect()  # the failed call's future, gone: its error was not left "never retrieved"
        return seen_at_cancel, list(done), failed_cancelled, unhandled

    seen_at_cancel, done_after, failed_cancelled, unhandled = asyncio.run(main())
    assert seen_at_cancel == ["kept"]
    assert done_after == ["kept", "first"]
    assert failed_cancelled and unhandled == []


def test_close_finishes_the_waiting_calls_then_closes_once() -> None:
    """Calls handed over before `close` — running, or waiting for a busy thread — all finish
    before its `then`, which runs once, after them, on one of the threads; a call after `close`
    starts a thread anew."""
    done: list[int] = []
    closed: list[tuple[int, str]] = []

    def work(n: int) -> int:
        time.sleep(0.002)
        done.append(n)
        return n

    async def main() -> tuple[list[int], str]:
        lanes = Lanes("t", 2, writer=True)
        calls = [lanes.run(Lane.ANY if n % 2 else Lane.WRITER, work, n) for n in range(12)]
        closing = lanes.close(lambda: closed.append((len(done), _name())) or "closed")
        results = await asyncio.gather(*calls)
        assert await closing == "closed"
        after = await lanes.run(Lane.ANY, lambda: "again")
        await lanes.close(lambda: None)
        return results, after

    results, after = asyncio.run(main())
    assert results == list(range(12)) and sorted(done) == list(range(12))
    assert len(closed) == 1 and closed[0][0] == 12 and closed[0][1].startswith("t-")
    assert after == "again"
