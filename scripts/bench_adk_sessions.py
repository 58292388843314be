"""Benchmark: listing and loading ADK sessions, `SessionStoreSessionService` against ADK's own
`DatabaseSessionService` on SQLite (aiosqlite), in one run (issue 38, item 2).

    .venv/bin/python scripts/bench_adk_sessions.py              # 100 users x 30 sessions, then 10x the store
    .venv/bin/python scripts/bench_adk_sessions.py --users 20   # a quick look

Both services get the same sessions through their own public API, each on a SQLite file of its
own in one folder: `--users` users of one app with `--per-user` sessions each, two events each
(a user message, then the model's reply with a state delta touching session, ``user:`` and
``app:`` state, so that listing has state of every scope to merge). Then, each the best of
`--repeat` rounds (every figure in milliseconds, per call):

- one user's list: ``list_sessions(app, user_id)`` (30 sessions), the mean over 10 users;
- the whole app: ``list_sessions(app)`` (every session of every user);
- get_session: one two-event session, the mean over 10 sessions.

Then a second store of ours, `--grow` times as big (10x: the same users and nine times as many
more), and the same calls on both stores in alternate rounds (so that the machine's load changing
between two measures is not read as growth): one user's list should cost what it returns, not what
the store holds. (ADK's service is not grown: filling it takes longer than this benchmark is worth;
its listing reads its primary key on (app_name, user_id, id) just the same.) Garbage is collected
before each timed block, and the whole app's list is timed last.

Goals (issue 38): one user's list <= 20 ms and >= 1x `DatabaseSessionService`; the whole app >= 0.5x
it; one user's list at 10x the store within 1.5x of itself at 1x (growing with what is returned).
Printed with met or missed at the end. The two services' answers are checked equal first.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import print_table, quiet  # noqa: E402

from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.sessions.base_session_service import BaseSessionService  # noqa: E402
from google.adk.sessions.database_session_service import DatabaseSessionService  # noqa: E402
from google.genai import types  # noqa: E402

from sessionstore.integrations.adk import SessionStoreSessionService  # noqa: E402

APP = "bench"
USER_GOAL_MS = 20.0
USER_GOAL = 1.0   # one user's list: ours ÷ DatabaseSessionService, as a speed ratio
APP_GOAL = 0.5    # the whole app's list
GROWTH_GOAL = 1.5  # one user's list at 10x the store ÷ at 1x
SAMPLES = 10       # users (and sessions) a per-call figure is the mean over


def uid(u: int) -> str:
    return f"user{u:05d}"


def events(u: int, s: int, start: float) -> list[Event]:
    """A session's two events: the user's question, the model's answer and its state changes."""
    question = Event(invocation_id=f"inv{s}", author="user", timestamp=start,
                     content=types.Content(role="user", parts=[types.Part(text=f"Question {s} of {uid(u)}?")]))
    answer = Event(invocation_id=f"inv{s}", author="model", timestamp=start + 0.5,
                   content=types.Content(role="model", parts=[types.Part(text=f"Answer {s}: " + "words " * 30)]),
                   actions=EventActions(state_delta={"answered": s, "user:last": s, "app:seen": u * 1000 + s}))
    return [question, answer]


async def fill(service: BaseSessionService, users: range, per_user: int, parallel: int = 1) -> None:
    """Each user's sessions, `parallel` users at a time (ADK's service on SQLite: one, as its
    own concurrency benchmark found it failing with ``database is locked`` beyond)."""
    start = 1_700_000_000.0  # the same event times in both services

    async def one(u: int) -> None:
        for s in range(per_user):
            session = await service.create_session(app_name=APP, user_id=uid(u), session_id=f"s{s:03d}",
                                                   state={"topic": f"t{s}"})
            for event in events(u, s, start + u * per_user + s):
                await service.append_event(session, event)

    for first in range(users.start, users.stop, parallel):
        await asyncio.gather(*(one(u) for u in range(first, min(first + parallel, users.stop))))


async def mean_ms(calls: list[Callable[[], Awaitable[Any]]], repeat: int) -> float:
    """The best over `repeat` rounds of the mean time of one call, in milliseconds."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()  # no collection of an earlier call's garbage inside this one's time
        started = time.perf_counter()
        for call in calls:
            await call()
        best = min(best, (time.perf_counter() - started) / len(calls))
    return best * 1000


async def measure(service: BaseSessionService, users: int, per_user: int, repeat: int,
                  whole_rounds: int | None = None) -> dict[str, float]:
    picked = [uid(u * users // SAMPLES) for u in range(SAMPLES)]

    def one_user(user: str) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            listed = await service.list_sessions(app_name=APP, user_id=user)
            assert len(listed.sessions) == per_user, len(listed.sessions)
        return call

    async def whole_app() -> None:
        listed = await service.list_sessions(app_name=APP)
        assert len(listed.sessions) >= users * per_user

    def get(user: str) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            got = await service.get_session(app_name=APP, user_id=user, session_id="s007")
            assert got is not None and len(got.events) == 2
        return call

    await one_user(picked[0])()  # warm up: connections, caches of compiled statements
    await get(picked[0])()
    # the whole app last: the garbage of thousands of sessions is collected before the next call timed
    return {"one user's list": await mean_ms([one_user(u) for u in picked], repeat),
            "get_session": await mean_ms([get(u) for u in picked], repeat),
            "whole app's list": await mean_ms([whole_app], whole_rounds or max(1, repeat // 2))}


def shown(session: Any) -> tuple[Any, ...]:
    return session.id, session.user_id, session.state, session.last_update_time


async def same_answers(ours: BaseSessionService, peer: BaseSessionService, user: str) -> None:
    """Both services list the same sessions, in the same order, with the same state."""
    for user_id in (user, None):
        a = await ours.list_sessions(app_name=APP, user_id=user_id)
        b = await peer.list_sessions(app_name=APP, user_id=user_id)
        assert [shown(s) for s in a.sessions] == [shown(s) for s in b.sessions], f"lists differ ({user_id})"
        assert all(not s.events for s in a.sessions)
    a_one = await ours.get_session(app_name=APP, user_id=user, session_id="s007")
    b_one = await peer.get_session(app_name=APP, user_id=user, session_id="s007")
    assert a_one is not None and b_one is not None
    assert shown(a_one) == shown(b_one)
    assert [(e.author, e.timestamp, e.content) for e in a_one.events] == [
        (e.author, e.timestamp, e.content) for e in b_one.events]


async def run(args: argparse.Namespace) -> list[str]:
    quiet()
    with tempfile.TemporaryDirectory(prefix="sessionstore-bench-adk-") as folder:
        ours = SessionStoreSessionService(str(Path(folder) / "ours.db"))
        peer = DatabaseSessionService(f"sqlite+aiosqlite:///{Path(folder) / 'peer.db'}")
        try:
            n = args.users * args.per_user
            for name, service in (("sessionstore", ours), ("DatabaseSessionService", peer)):
                started = time.perf_counter()
                await fill(service, range(args.users), args.per_user)
                print(f"{name}: {n:,} sessions written in {time.perf_counter() - started:.1f} s", flush=True)
            await same_answers(ours, peer, uid(args.users // 2))
            print("both services list and load the same sessions, state and order\n", flush=True)
            small = {"sessionstore": await measure(ours, args.users, args.per_user, args.repeat),
                     "DatabaseSessionService": await measure(peer, args.users, args.per_user, args.repeat)}
            print(f"ms per call (best of rounds), {n:,} sessions")
            print_table(["call", "DatabaseSessionService", "sessionstore", "speed ratio"],
                        [[key, small["DatabaseSessionService"][key], mine,
                          f"{small['DatabaseSessionService'][key] / mine:.2f}x"]
                         for key, mine in small["sessionstore"].items()])
            print(flush=True)
            big = None
            if args.grow > 1:
                big = await grown(ours, Path(folder), args)
        finally:
            await ours.close()
            await peer.close()
    return verdicts(small, big, args.grow)


async def grown(ours: SessionStoreSessionService, folder: Path, args: argparse.Namespace
                ) -> tuple[dict[str, float], dict[str, float]]:
    """Our calls on the first store and on one `args.grow` times as big (a second file: the same
    users, and more), measured round by round alternately, so that a change of the machine's load
    between two measures is not read as growth: (the first store's figures, the grown one's)."""
    users = args.users * args.grow
    big = SessionStoreSessionService(str(folder / "ours-grown.db"))
    try:
        started = time.perf_counter()
        await fill(big, range(users), args.per_user, parallel=8)
        print(f"sessionstore: {users * args.per_user:,} sessions written in {time.perf_counter() - started:.1f} s",
              flush=True)
        rounds: dict[str, list[dict[str, float]]] = {"small": [], "big": []}
        for _ in range(args.repeat):
            rounds["small"].append(await measure(ours, args.users, args.per_user, 1, whole_rounds=1))
            rounds["big"].append(await measure(big, users, args.per_user, 1, whole_rounds=1))
    finally:
        await big.close()
    small, grew = ({key: min(r[key] for r in runs) for key in runs[0]} for runs in (rounds["small"], rounds["big"]))
    print(f"ms per call, sessionstore, {args.users * args.per_user:,} and {users * args.per_user:,} sessions "
          "(alternate rounds)")
    print_table(["call", f"{args.users * args.per_user:,} sessions", f"{users * args.per_user:,} sessions", "growth"],
                [[key, mine, grew[key], f"{grew[key] / mine:.2f}x"] for key, mine in small.items()])
    return small, grew


def verdicts(small: dict[str, dict[str, float]], big: tuple[dict[str, float], dict[str, float]] | None,
             grow: int) -> list[str]:
    ours, peer = small["sessionstore"], small["DatabaseSessionService"]
    user, app = ours["one user's list"], ours["whole app's list"]
    user_ratio = peer["one user's list"] / user
    app_ratio = peer["whole app's list"] / app
    lines = [
        _verdict(f"one user's list {user:.2f} ms <= {USER_GOAL_MS:.0f} ms", user <= USER_GOAL_MS),
        _verdict(f"one user's list {user_ratio:.2f}x DatabaseSessionService >= {USER_GOAL}x", user_ratio >= USER_GOAL),
        _verdict(f"whole app's list {app_ratio:.2f}x DatabaseSessionService >= {APP_GOAL}x", app_ratio >= APP_GOAL),
    ]
    if big is not None:
        growth = big[1]["one user's list"] / big[0]["one user's list"]
        lines.append(_verdict(f"one user's list at {grow}x the store {growth:.2f}x itself at 1x <= {GROWTH_GOAL}x",
                              growth <= GROWTH_GOAL))
    return lines


def _verdict(text: str, met: bool) -> str:
    return f"{'met   ' if met else 'MISSED'}  {text}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--per-user", type=int, default=30)
    parser.add_argument("--grow", type=int, default=10, help="the store's size for the second measure, x (1: none)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    verdicts = asyncio.run(run(args))
    print()
    for line in verdicts:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
