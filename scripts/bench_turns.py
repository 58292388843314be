"""Benchmark: an agent's turn under load, against the frameworks' own SQL sessions, in one run.

    .venv/bin/python scripts/bench_turns.py                      # default: SQLite, a couple of minutes
    .venv/bin/python scripts/bench_turns.py --full               # N = 1, 8, 64; 100, 1,000, 10,000 events; both modes
    .venv/bin/python scripts/bench_turns.py --quick              # 1 s a system and case, no view sizes
    .venv/bin/python scripts/bench_turns.py --agents 1,8 --sizes 100,1000 --modes asyncio,threads --postgres

N agents, each with a session of S events, do turns at once — as coroutines on one event
loop (`asyncio`: ours on `AsyncSessionStore`) or each on a thread of its own (`threads`: ours
on `SessionStore`; the peers, whose API is async, run an event loop per thread). A turn is
what an agent's loop writes and reads around one model call:

- ours: ``context()``; ``append`` the user's message; ``append`` the assistant's reply with a
  tool call and, as its own write, the tool's result; ``maybe_compact()`` (default policy);
- OpenAI Agents SDK `SQLiteSession` / `SQLAlchemySession`: ``get_items()`` (the whole history:
  what a Runner reads), then the same three writes as ``add_items``;
- Google ADK `DatabaseSessionService`: ``get_session()``, then the same three writes as
  ``append_event`` (user content, model content with a function call, function response).

All on the same database (SQLite: one WAL file; PostgreSQL: one database for the SDK sessions
and ours, ADK its own database — both name a table ``sessions``). Prints turns/s (all agents
together) and each turn's p50/p99 latency, ours ÷ each peer, and the goals of issue 16 with
met/missed: ours ≥ 2× `SQLiteSession` on SQLite and ≥ 2× `SQLAlchemySession` on PostgreSQL, ≥ 2×
ADK on both, the async door ≥ 0.8× the blocking one (same N, S). Sessions are filled before the
clock starts; ours is compacted then as an agent's would be (``maybe_compact``), so its view
holds what the policy keeps. Each case runs for about `--seconds` per system.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import message, print_table, quiet  # noqa: E402

import sessionstore as ss  # noqa: E402

PEER_GOAL = 2.0
ASYNC_GOAL = 0.8
FILL_BATCH = 2_000
# Issue 30: a turn costs what changed — a turn at a 2,000-item view at most this × one at 100 items.
VIEW_GOAL = 1.2


# --------------------------------------------------------------------------- what a turn writes


def our_turn_events(i: int) -> tuple[list[ss.NewEvent], list[ss.NewEvent], list[ss.NewEvent]]:
    call = f"call_{i}_{time.monotonic_ns()}"
    return ([ss.user(message(i))],
            ss.assistant(message(i)[:80], tool_calls=[ss.tool_call(call, "Read", {"path": f"src/m{i % 50}.py"})]),
            [ss.tool_result(call, message(i) * 2)])


def sdk_turn_items(i: int) -> tuple[list[Any], list[Any], list[Any]]:
    call = f"call_{i}_{time.monotonic_ns()}"
    return ([{"role": "user", "content": message(i)}],
            [{"id": f"msg_{call}", "type": "message", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": message(i)[:80], "annotations": []}]},
             {"type": "function_call", "call_id": call, "name": "Read",
              "arguments": f'{{"path": "src/m{i % 50}.py"}}', "id": f"fc_{call}", "status": "completed"}],
            [{"type": "function_call_output", "call_id": call, "output": message(i) * 2}])


def adk_turn_events(i: int) -> list[Any]:
    from google.adk.events.event import Event
    from google.genai import types

    call = f"call_{i}_{time.monotonic_ns()}"
    now = time.time()
    return [
        Event(invocation_id=f"inv{i}", author="user", timestamp=now,
              content=types.Content(role="user", parts=[types.Part(text=message(i))])),
        Event(invocation_id=f"inv{i}", author="agent", timestamp=now,
              content=types.Content(role="model", parts=[
                  types.Part(text=message(i)[:80]),
                  types.Part(function_call=types.FunctionCall(id=call, name="Read", args={"path": f"src/m{i % 50}.py"}))])),
        Event(invocation_id=f"inv{i}", author="agent", timestamp=now,
              content=types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                  id=call, name="Read", response={"output": message(i) * 2}))])),
    ]


# --------------------------------------------------------------------------- the systems


@dataclass
class Case:
    agents: int
    size: int
    mode: str  # "asyncio" | "threads"


class System:
    """One system under test: `prepare` fills an agent's session (not timed), `turn` does one turn.
    Async throughout; `blocking_turn` is set for systems with a blocking API (ours in threads)."""

    name: str
    blocking: bool = False

    async def prepare(self, agent: str, size: int) -> Any: ...

    async def turn(self, handle: Any, i: int) -> None: ...

    def blocking_turn(self, handle: Any, i: int) -> None: ...

    def blocking_prepare(self, agent: str, size: int) -> Any: ...

    async def release(self, handle: Any) -> None:
        """Close what an agent opened on its own event loop (threads mode)."""

    async def close(self) -> None: ...


def fill_events(size: int) -> list[ss.NewEvent]:
    events: list[ss.NewEvent] = []
    i = 0
    while len(events) < size:
        user, reply, result = our_turn_events(i)
        events.extend([*user, *reply, *result])
        i += 1
    return events[:size - (size % 4)] if size % 4 else events


class Ours(System):
    def __init__(self, url: str, mode: str) -> None:
        self.name = "sessionstore " + ("AsyncSessionStore" if mode == "asyncio" else "SessionStore")
        self.url = url
        self.blocking = mode == "threads"
        self.sync = ss.SessionStore(url)
        self.aio = ss.AsyncSessionStore(url) if mode == "asyncio" else None

    def _fill(self, agent: str, size: int) -> str:
        sid = self.sync.create_session(agent)
        events = fill_events(size)
        for start in range(0, len(events), FILL_BATCH):
            self.sync.append(sid, events[start:start + FILL_BATCH])
        self.sync.maybe_compact(sid)  # as the agent's own loop would have
        return sid

    async def prepare(self, agent: str, size: int) -> Any:
        sid = await asyncio.to_thread(self._fill, agent, size)
        assert self.aio is not None
        await self.aio.context(sid)  # the door's first view: what an agent's previous turn left
        return sid

    def blocking_prepare(self, agent: str, size: int) -> Any:
        sid = self._fill(agent, size)
        return sid

    async def turn(self, sid: Any, i: int) -> None:
        store = self.aio
        assert store is not None
        user, reply, result = our_turn_events(i)
        await store.context(sid)
        await store.append(sid, user)
        await store.append(sid, reply)
        await store.append(sid, result)
        await store.maybe_compact(sid)

    def blocking_turn(self, sid: Any, i: int) -> None:
        store = self.sync
        user, reply, result = our_turn_events(i)
        store.context(sid)
        store.append(sid, user)
        store.append(sid, reply)
        store.append(sid, result)
        store.maybe_compact(sid)

    async def close(self) -> None:
        if self.aio is not None:
            await self.aio.close()
        self.sync.close()


class AgentsSDK(System):
    def __init__(self, name: str, make: Callable[[str], Any]) -> None:
        self.name = name
        self.make = make
        self.sessions: list[Any] = []

    async def prepare(self, agent: str, size: int) -> Any:
        session = self.make(agent)
        self.sessions.append(session)
        items: list[Any] = []
        i = 0
        while len(items) < size:
            user, reply, result = sdk_turn_items(i)
            items.extend([*user, *reply, *result])
            i += 1
        for start in range(0, size, FILL_BATCH):
            await session.add_items(items[start:min(size, start + FILL_BATCH)])
        return session

    async def turn(self, session: Any, i: int) -> None:
        user, reply, result = sdk_turn_items(i)
        await session.get_items()
        await session.add_items(user)
        await session.add_items(reply)
        await session.add_items(result)

    async def release(self, session: Any) -> None:
        self.sessions.remove(session)
        await self._close(session)

    async def close(self) -> None:
        for session in self.sessions:
            await self._close(session)
        self.sessions = []

    @staticmethod
    async def _close(session: Any) -> None:
        closer = getattr(session, "aclose", None) or getattr(session, "close", None)
        if closer is not None:
            closed = closer()
            if asyncio.iscoroutine(closed):
                await closed
        elif hasattr(session, "engine"):
            await session.engine.dispose()


class ADK(System):
    """ADK's own service. Filling a session costs an `append_event` an event (~200/s): the first
    session of a size is filled so, the others are copied from it row by row in SQL."""

    def __init__(self, url: str) -> None:
        from google.adk.sessions.database_session_service import DatabaseSessionService

        self.name = "ADK DatabaseSessionService"
        self.url = url
        self.make = lambda: DatabaseSessionService(url)
        self._loop_services: dict[int, Any] = {}
        self._templates: dict[int, str] = {}
        self._lock = threading.Lock()
        # Its tables, created once here: services of several threads' loops would race to create them.
        worker = threading.Thread(target=lambda: asyncio.run(self._create_tables()))
        worker.start()
        worker.join()

    async def _create_tables(self) -> None:
        service = self.make()
        await service.create_session(app_name="bench", user_id="u", session_id="tables")
        await service.close()

    def _service(self) -> Any:
        key = id(asyncio.get_running_loop())
        if key not in self._loop_services:
            self._loop_services[key] = self.make()
        return self._loop_services[key]

    async def prepare(self, agent: str, size: int) -> Any:
        service = self._service()
        with self._lock:
            template = self._templates.get(size)
        if template is not None:
            await asyncio.to_thread(self._copy, template, agent)
            return agent
        session = await service.create_session(app_name="bench", user_id="u", session_id=agent)
        i = 0
        appended = 0
        while appended < size:
            for event in adk_turn_events(i)[:size - appended]:
                await service.append_event(session, event)
                appended += 1
            i += 1
        with self._lock:
            self._templates.setdefault(size, agent)
        return agent

    def _copy(self, source: str, target: str) -> None:
        from sqlalchemy import MetaData, create_engine, insert, select

        engine = create_engine(self.url.replace("+aiosqlite", "").replace("+psycopg_async", "+psycopg"))
        try:
            meta = MetaData()
            meta.reflect(engine, only=["sessions", "events"])
            sessions, events = meta.tables["sessions"], meta.tables["events"]
            with engine.begin() as conn:
                row = conn.execute(select(sessions).where(sessions.c.id == source)).mappings().one()
                conn.execute(insert(sessions), [{**row, "id": target}])
                rows = conn.execute(select(events).where(events.c.session_id == source)).mappings().all()
                conn.execute(insert(events), [{**r, "session_id": target} for r in rows])
        finally:
            engine.dispose()

    async def turn(self, agent: Any, i: int) -> None:
        service = self._service()
        session = await service.get_session(app_name="bench", user_id="u", session_id=agent)
        for event in adk_turn_events(i):
            await service.append_event(session, event)

    async def release(self, agent: Any) -> None:
        service = self._loop_services.pop(id(asyncio.get_running_loop()), None)
        if service is not None:
            await service.close()

    async def close(self) -> None:
        for service in self._loop_services.values():
            await service.close()
        self._loop_services = {}


# --------------------------------------------------------------------------- running a case


@dataclass
class Figures:
    turns_per_second: float
    p50_ms: float
    p99_ms: float
    turns: int


def _figures(latencies: list[float], elapsed: float) -> Figures:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return Figures(len(latencies) / elapsed, statistics.median(ordered) * 1000, p99 * 1000, len(latencies))


async def run_asyncio(system: System, case: Case, seconds: float, tag: str) -> Figures:
    handles = [await system.prepare(f"{tag}-a{n}", case.size) for n in range(case.agents)]
    for n, handle in enumerate(handles):  # warm: connections, the first view
        await system.turn(handle, -1 - n)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def agent(handle: Any) -> None:
        i = 0
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            await system.turn(handle, i)
            latencies.append(time.perf_counter() - started)
            i += 1

    started = time.perf_counter()
    await asyncio.gather(*(agent(h) for h in handles))
    return _figures(latencies, time.perf_counter() - started)


def run_threads(system: System, case: Case, seconds: float, tag: str) -> Figures:
    latencies: list[float] = []
    lock = threading.Lock()
    ready = threading.Barrier(case.agents + 1)
    go = threading.Event()
    errors: list[BaseException] = []
    deadline = [0.0]

    def work(n: int) -> None:
        try:
            if system.blocking:
                handle = system.blocking_prepare(f"{tag}-a{n}", case.size)
                system.blocking_turn(handle, -1 - n)
                step: Callable[[int], Any] = lambda i: system.blocking_turn(handle, i)  # noqa: E731
                ready.wait()
                go.wait()
                loop_run(step, None)
            else:
                async def agent() -> None:
                    handle = await system.prepare(f"{tag}-a{n}", case.size)
                    await system.turn(handle, -1 - n)
                    ready.wait()
                    go.wait()
                    await loop_arun(lambda i: system.turn(handle, i))
                    await system.release(handle)
                asyncio.run(agent())
        except BaseException as exc:  # reported after the run
            errors.append(exc)
            ready.abort()

    def loop_run(step: Callable[[int], Any], _: Any) -> None:
        i = 0
        while time.perf_counter() < deadline[0]:
            started = time.perf_counter()
            step(i)
            with lock:
                latencies.append(time.perf_counter() - started)
            i += 1

    async def loop_arun(step: Callable[[int], Awaitable[Any]]) -> None:
        i = 0
        while time.perf_counter() < deadline[0]:
            started = time.perf_counter()
            await step(i)
            with lock:
                latencies.append(time.perf_counter() - started)
            i += 1

    threads = [threading.Thread(target=work, args=(n,)) for n in range(case.agents)]
    for thread in threads:
        thread.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass
    started = time.perf_counter()
    deadline[0] = started + seconds
    go.set()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return _figures(latencies, time.perf_counter() - started)


# --------------------------------------------------------------------------- the report


def sqlite_systems(folder: Path, mode: str) -> list[System]:
    from agents import SQLiteSession
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

    db = folder / "turns.db"
    url = f"sqlite:///{db}"
    with ss.SessionStore(url) as store:
        store.migrate()
    return [Ours(url, mode),
            AgentsSDK("SDK SQLiteSession (sqlite3)", lambda sid: SQLiteSession(sid, str(db))),
            AgentsSDK("SDK SQLAlchemySession (aiosqlite)", lambda sid: SQLAlchemySession.from_url(
                sid, url=f"sqlite+aiosqlite:///{db}", create_tables=True)),
            ADK(f"sqlite+aiosqlite:///{folder / 'adk.db'}")]


def postgres_systems(urls: dict[str, str], mode: str) -> list[System]:
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

    with ss.SessionStore(urls["ours"]) as store:
        store.migrate()
    return [Ours(urls["ours"], mode),
            AgentsSDK("SDK SQLAlchemySession (psycopg async)", lambda sid: SQLAlchemySession.from_url(
                sid, url=urls["ours"], create_tables=True)),
            ADK(urls["adk"])]


async def run_case(systems: list[System], case: Case, seconds: float, tag: str) -> dict[str, Figures]:
    results: dict[str, Figures] = {}
    for number, system in enumerate(systems):
        try:
            if case.mode == "asyncio":
                results[system.name] = await run_asyncio(system, case, seconds, f"{tag}-{number}")
            else:
                results[system.name] = await asyncio.to_thread(run_threads, system, case, seconds, f"{tag}-{number}")
        except Exception as exc:
            if isinstance(system, Ours):
                raise  # ours failing is never a figure
            # A peer that fails under the load (ADK's service on SQLite at 64 agents: "database is
            # locked" after its busy timeout) is reported as failed, and the run goes on.
            print(f"{system.name} FAILED in this case: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        finally:
            await system.close()
    return results


def report(title: str, case: Case, results: dict[str, Figures], goals: dict[str, float]) -> list[str]:
    ours = next(name for name in results if name.startswith("sessionstore"))
    print(f"\n{title} — {case.agents} agent(s), {case.size:,}-event sessions, {case.mode} "
          f"(load average {os.getloadavg()[0]:.1f})")
    rows = []
    for name, fig in results.items():
        ratio = results[ours].turns_per_second / fig.turns_per_second
        rows.append([name, fig.turns_per_second, f"{fig.p50_ms:.1f}", f"{fig.p99_ms:.1f}", fig.turns,
                     "1.00×" if name == ours else f"{ratio:.2f}×"])
    print_table(["", "turns/s", "p50 ms", "p99 ms", "turns", "ours ÷ it"], rows)
    verdicts = []
    for peer, goal in goals.items():
        if peer in results:
            ratio = results[ours].turns_per_second / results[peer].turns_per_second
            verdict = f"goal ≥ {goal}× {peer}: {'met' if ratio >= goal else 'MISSED'} ({ratio:.2f}×)"
            print(verdict)
            verdicts.append(f"{title}, N={case.agents}, {case.size:,} events, {case.mode}: {verdict}")
    return verdicts


async def measure(args: argparse.Namespace) -> None:
    cases = [Case(n, s, m) for m in args.modes for s in args.sizes for n in args.agents]
    verdicts: list[str] = []
    ours_by_case: dict[tuple[str, int, int, str], float] = {}
    sqlite_goals = {"SDK SQLiteSession (sqlite3)": PEER_GOAL, "ADK DatabaseSessionService": PEER_GOAL}
    for number, case in enumerate(cases):
        with tempfile.TemporaryDirectory(prefix="sessionstore-turns-") as folder:
            results = await run_case(sqlite_systems(Path(folder), case.mode), case, args.seconds, f"c{number}")
        verdicts += report("SQLite (one WAL file)", case, results, sqlite_goals)
        ours = next(f for name, f in results.items() if name.startswith("sessionstore"))
        ours_by_case[("sqlite", case.agents, case.size, case.mode)] = ours.turns_per_second
    if args.postgres:
        from sessionstore.testing import PostgresCluster

        pg_goals = {"SDK SQLAlchemySession (psycopg async)": PEER_GOAL, "ADK DatabaseSessionService": PEER_GOAL}
        with PostgresCluster(durable=True) as cluster:
            for number, case in enumerate(cases):
                urls = {"ours": cluster.create_database(f"turns{number}"), "adk": cluster.create_database(f"adk{number}")}
                results = await run_case(postgres_systems(urls, case.mode), case, args.seconds, f"p{number}")
                verdicts += report("PostgreSQL", case, results, pg_goals)
                ours = next(f for name, f in results.items() if name.startswith("sessionstore"))
                ours_by_case[("postgresql", case.agents, case.size, case.mode)] = ours.turns_per_second
    if args.view_sizes:
        verdicts += view_size_report(args.view_sizes)
    print("\nGoals (issues 16 and 30)")
    for line in verdicts:
        print("  " + line)
    for (backend, agents, size, mode), rate in ours_by_case.items():
        if mode == "asyncio" and (backend, agents, size, "threads") in ours_by_case:
            ratio = rate / ours_by_case[(backend, agents, size, "threads")]
            print(f"  {backend}, N={agents}, {size:,} events: goal AsyncSessionStore ≥ {ASYNC_GOAL}× SessionStore "
                  f"(threads): {'met' if ratio >= ASYNC_GOAL else 'MISSED'} ({ratio:.2f}×)")


def turn_at_view_size(items: int, sessions: int = 10, turns: int = 15) -> tuple[float, float]:
    """(median wall ms, median CPU ms) of one turn — ``context()``, the three appends,
    ``maybe_compact()`` — on the blocking door, on sessions whose view holds `items` items (a
    window that never compacts them: the cost of the view's size alone). The turns go round
    `sessions` sessions, so that each view grows by a few turns only."""
    policy = ss.CompactionPolicy(context_window=100_000_000)
    with tempfile.TemporaryDirectory(prefix="sessionstore-view-") as folder:
        with ss.SessionStore(f"sqlite:///{folder}/view.db") as store:
            store.migrate()
            sids = []
            for n in range(sessions):
                sid = store.create_session()
                store.append(sid, fill_events(items))
                store.maybe_compact(sid, policy)
                sids.append(sid)
            walls: list[float] = []
            cpus: list[float] = []
            for t in range(turns):
                for sid in sids:
                    user, reply, result = our_turn_events(t)
                    wall, cpu = time.perf_counter(), time.thread_time()
                    store.context(sid)
                    store.append(sid, user)
                    store.append(sid, reply)
                    store.append(sid, result)
                    store.maybe_compact(sid, policy)
                    cpus.append(time.thread_time() - cpu)
                    walls.append(time.perf_counter() - wall)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def view_size_report(sizes: list[int]) -> list[str]:
    """A turn at each view size, and the goal: the largest at most `VIEW_GOAL` × the smallest."""
    print("\nA turn at each view size (blocking door, SQLite; context, three appends, maybe_compact)")
    figures = {size: turn_at_view_size(size) for size in sizes}
    print_table(["view items", "turn ms (median)", "CPU ms (median)"],
                [[f"{size:,}", f"{wall:.2f}", f"{cpu:.2f}"] for size, (wall, cpu) in figures.items()])
    small, large = min(sizes), max(sizes)
    ratio = figures[large][0] / figures[small][0]
    verdict = (f"a turn at {large:,} items ≤ {VIEW_GOAL}× one at {small:,}: "
               f"{'met' if ratio <= VIEW_GOAL else 'MISSED'} ({ratio:.2f}×, CPU {figures[large][1] / figures[small][1]:.2f}×)")
    print(verdict)
    return [verdict]


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=_ints, default=[1, 8], help="N concurrent agents (default 1,8)")
    parser.add_argument("--sizes", type=_ints, default=[100, 1000], help="events a session holds (default 100,1000)")
    parser.add_argument("--modes", type=lambda t: t.split(","), default=["asyncio", "threads"])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per system and case")
    parser.add_argument("--postgres", action="store_true", help="also on a throwaway PostgreSQL")
    parser.add_argument("--view-sizes", type=_ints, default=[100, 2000],
                        help="view sizes a turn is timed at (default 100,2000; empty: skip)")
    parser.add_argument("--full", action="store_true", help="N = 1, 8, 64; 100, 1,000, 10,000 events; PostgreSQL too")
    parser.add_argument("--quick", action="store_true", help="1 s a system and case, no view sizes")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.view_sizes = 1.0, []
    if args.full:
        args.agents, args.sizes, args.postgres = [1, 8, 64], [100, 1000, 10000], True
    quiet()
    asyncio.run(measure(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
