"""SessionStoreSessionService reads state from each stream's latest event (issue 38): what another
service, with nothing remembered, lists and loads is what the writer saw; sessions written before
snapshots were kept are replayed, and carry on; concurrent writers of one app's state all land; a
listed session can be appended to; someone else's custom event at a session's head is replayed
around. On a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.errors import StaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.session import Session
from google.genai import types

import sessionstore as ss
from sessionstore.integrations import _adk_events
from sessionstore.integrations.adk import SessionStoreSessionService, session_key

run = asyncio.run
APP = "app"


@pytest.fixture
def service(store_url: str) -> Iterator[SessionStoreSessionService]:
    s = SessionStoreSessionService(store_url)
    yield s
    run(s.close())


def said(text: str, delta: dict[str, Any] | None = None, at: float | None = None) -> Event:
    return Event(invocation_id="inv", author="model", timestamp=time.time() if at is None else at,
                 content=types.Content(role="model", parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=delta or {}))


def listed(service: SessionStoreSessionService, user_id: str | None = None) -> list[tuple[str, str, dict[str, Any]]]:
    sessions = run(service.list_sessions(app_name=APP, user_id=user_id)).sessions
    assert all(not s.events for s in sessions)
    return [(s.user_id, s.id, s.state) for s in sessions]


def test_another_service_lists_and_loads_what_the_writer_saw(service: SessionStoreSessionService,
                                                              store_url: str) -> None:
    a = run(service.create_session(app_name=APP, user_id="ann", session_id="a", state={"topic": "x"}))
    run(service.append_event(a, said("one", {"n": 1, "user:lang": "fr", "app:v": 1, "temp:t": 9}, 100.0)))
    run(service.append_event(a, said("two", {"n": 2}, 101.0)))
    b = run(service.create_session(app_name=APP, user_id="bob", session_id="b"))
    run(service.append_event(b, said("hi", {"app:v": 2}, 50.0)))
    gone = run(service.create_session(app_name=APP, user_id="ann", session_id="gone"))
    run(service.delete_session(app_name=APP, user_id="ann", session_id="gone"))
    again = run(service.create_session(app_name=APP, user_id="ann", session_id="gone", state={"fresh": True}))
    run(service.create_session(app_name="other app", user_id="ann", session_id="a", state={"elsewhere": 1}))
    reader = SessionStoreSessionService(store_url)  # remembers nothing
    try:
        assert listed(reader) == [
            ("bob", "b", {"app:v": 2}),
            ("ann", "a", {"topic": "x", "n": 2, "app:v": 2, "user:lang": "fr"}),
            ("ann", "gone", {"fresh": True, "app:v": 2, "user:lang": "fr"})]
        assert listed(reader, "nobody") == []
        assert listed(reader, "ann") == [s for s in listed(reader) if s[0] == "ann"]  # of this app only
        other = run(reader.list_sessions(app_name="other app", user_id="ann")).sessions
        assert [(s.id, s.state) for s in other] == [("a", {"elsewhere": 1})]  # state is per app, too
        loaded = run(reader.get_session(app_name=APP, user_id="ann", session_id="a"))
        assert a.state["temp:t"] == 9  # the caller's object only: temp state is never stored
        assert loaded is not None and loaded.state == {k: v for k, v in a.state.items() if k != "temp:t"} | {"app:v": 2}
        assert loaded.last_update_time == 101.0
        assert [s.last_update_time for s in run(reader.list_sessions(app_name=APP, user_id="ann")).sessions] == [
            101.0, again.last_update_time]
        assert gone.id == again.id
        assert run(reader.get_user_state(app_name=APP, user_id="ann")) == {"lang": "fr"}
    finally:
        run(reader.close())


def test_a_listed_session_is_appended_to_and_a_stale_one_refused(service: SessionStoreSessionService) -> None:
    run(service.create_session(app_name=APP, user_id="ann", session_id="a"))
    [first] = run(service.list_sessions(app_name=APP, user_id="ann")).sessions
    [second] = run(service.list_sessions(app_name=APP, user_id="ann")).sessions
    run(service.append_event(first, said("first", {"k": 1})))
    with pytest.raises(StaleSessionError):
        run(service.append_event(second, said("second", {"k": 2})))
    [now] = listed(service, "ann")
    assert now[2] == {"k": 1}


def test_sessions_written_before_snapshots_are_replayed_and_carry_on(service: SessionStoreSessionService,
                                                                      store_url: str) -> None:
    """The events an earlier version wrote: a creation, ADK events without a state snapshot, user
    state as deltas only (written here with the store, as that version wrote them)."""
    key = session_key(APP, "ann", "old")
    with ss.SessionStore(store_url) as store:
        store.create_session(key, {"adk": {"app_name": APP, "user_id": "ann", "session_id": "old"}})
        store.append(key, ss.custom("adk:session", {"op": "create", "state": {"s": 0}, "time": 10.0}))
        for n in (1, 2):
            data = _adk_events.json_data(said(f"turn {n}", {"s": n, f"k{n}": n}, 10.0 + n))
            store.append(key, _adk_events.encode(data))
        user = "adk-user:" + APP + "/ann"
        store.create_session(user, {"adk_state": user})
        store.append(user, [ss.custom("adk:state", {"lang": "fr"}), ss.custom("adk:state", {"tz": "CET"})])
    expected = {"s": 2, "k1": 1, "k2": 2, "user:lang": "fr", "user:tz": "CET"}
    assert listed(service) == [("ann", "old", expected)]
    old = run(service.get_session(app_name=APP, user_id="ann", session_id="old"))
    assert old is not None and old.state == expected and old.last_update_time == 12.0 and len(old.events) == 2
    run(service.append_event(old, said("turn 3", {"s": 3, "user:lang": "de"}, 13.0)))
    reader = SessionStoreSessionService(store_url)
    try:
        assert listed(reader) == [("ann", "old", expected | {"s": 3, "user:lang": "de"})]
        assert run(reader.get_user_state(app_name=APP, user_id="ann")) == {"lang": "de", "tz": "CET"}
    finally:
        run(reader.close())


def test_someone_elses_event_at_the_head_is_replayed_around(service: SessionStoreSessionService,
                                                             store_url: str) -> None:
    a = run(service.create_session(app_name=APP, user_id="ann", session_id="a"))
    run(service.append_event(a, said("one", {"n": 1}, 20.0)))
    with ss.SessionStore(store_url) as store:
        store.append(session_key(APP, "ann", "a"), ss.custom("audit", {"by": "ops"}))
    assert listed(service) == [("ann", "a", {"n": 1})]
    again = run(service.get_session(app_name=APP, user_id="ann", session_id="a"))
    assert again is not None
    run(service.append_event(again, said("two", {"n": 2}, 21.0)))
    reader = SessionStoreSessionService(store_url)
    try:
        assert listed(reader) == [("ann", "a", {"n": 2})]
    finally:
        run(reader.close())


def test_concurrent_writers_of_one_app_and_user_state_all_land(store_url: str) -> None:
    """Every session of an app writes its ``app:`` keys to one stream: eight at once, on two services."""
    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        one, two = SessionStoreSessionService(store_url), SessionStoreSessionService(store_url)
        try:
            sessions: list[Session] = [await one.create_session(app_name=APP, user_id="ann", session_id=f"s{i}")
                                       for i in range(8)]

            async def write(service: SessionStoreSessionService, session: Session, i: int) -> None:
                for n in range(3):
                    await service.append_event(session, said(f"{i}.{n}", {f"user:w{i}n{n}": n, f"app:w{i}n{n}": n}))

            await asyncio.gather(*(write((one, two)[i % 2], session, i) for i, session in enumerate(sessions)))
            listed = (await two.list_sessions(app_name=APP, user_id="ann")).sessions
            assert all(s.state == listed[0].state for s in listed)
            return await one.get_user_state(app_name=APP, user_id="ann"), listed[0].state
        finally:
            await one.close()
            await two.close()

    user, merged = run(main())
    assert user == {f"w{i}n{n}": n for i in range(8) for n in range(3)}
    assert merged == {f"{scope}:w{i}n{n}": n for scope in ("app", "user") for i in range(8) for n in range(3)}


def test_a_loaded_state_is_the_callers_to_change(service: SessionStoreSessionService) -> None:
    a = run(service.create_session(app_name=APP, user_id="ann", session_id="a"))
    run(service.append_event(a, said("one", {"items": ["x"]})))
    loaded = run(service.get_session(app_name=APP, user_id="ann", session_id="a"))
    assert loaded is not None
    loaded.state["items"].append("changed by the caller")
    again = run(service.get_session(app_name=APP, user_id="ann", session_id="a"))
    assert again is not None and again.state["items"] == ["x"]
