"""A Google ADK `BaseSessionService` on sessionstore (``pip install 'sessionstore[adk]'``).

::

    service = SessionStoreSessionService("sessions.db")        # was DatabaseSessionService(url)
    runner = Runner(agent=agent, app_name="weather", session_service=service)

Each ADK session is a sessionstore session (``adk:<app>/<user>/<session>``) whose events are
ADK's events — the envelope as a ``custom`` event, the content as messages, tool calls and tool
results — so ``sessionstore show`` and compaction see the conversation. App and user state are
streams of their own (``adk-app:<app>``, ``adk-user:<app>/<user>``) holding the ``app:`` and
``user:`` deltas; session state is the session's creation state plus its events' deltas;
``temp:`` keys live only in the caller's session object, as ADK defines them.

A stale session object (another writer appended since it was read) is refused with ADK's
``StaleSessionError`` ("modified in storage"): the store's optimistic ``expected_version``
is exactly that check, so there is no timestamp guessing. ``delete_session`` records a reset
and a deletion; the transcript keeps everything.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self

from ..extras import require

require("google.adk.sessions", "adk", "sessionstore.integrations.adk")  # one line, not a traceback, without it
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from .. import events as ev
from ..errors import ConcurrencyError, SessionExists, SessionNotFound
from ..events import NewEvent, StoredEvent
from . import _adk_events
from ._door import Database, Door, ensure, store_key

SESSION_TYPE: Final = "adk:session"  # lifecycle: {"op": "create", "state", "time"} | {"op": "delete"}
STATE_TYPE: Final = "adk:state"      # a delta of app or user state
_STALE: Final = ("The session has been modified in storage since it was loaded. "
                 "Please reload the session before appending more events.")


def session_key(app_name: str, user_id: str, session_id: str) -> str:
    return store_key("adk:", app_name, user_id, session_id)


def _app_key(app_name: str) -> str:
    return store_key("adk-app:", app_name)


def _user_key(app_name: str, user_id: str) -> str:
    return store_key("adk-user:", app_name, user_id)


def _lifecycle(op: str, **fields: Any) -> NewEvent:
    return ev.custom(SESSION_TYPE, {"op": op, **fields})


class _Incarnation:
    """A session's life since its latest creation: state, ADK events, last update time."""

    def __init__(self, events: Sequence[StoredEvent]) -> None:
        self.alive = False
        start = 0
        for i, event in enumerate(events):
            if event.kind == "custom" and event.payload.get("type") == SESSION_TYPE:
                self.alive = event.payload["data"]["op"] == "create"
                if self.alive:
                    start, created = i, event.payload["data"]
        self.state: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []
        self.last_update_time = 0.0
        if not self.alive:
            return
        self.state = dict(created.get("state") or {})
        self.last_update_time = float(created["time"])
        self.events = _adk_events.decode(events[start + 1:])
        for data in self.events:
            delta = (data.get("actions") or {}).get("state_delta") or {}
            self.state.update(_session_util.extract_state_delta(delta)["session"])
            if isinstance(data.get("timestamp"), (int, float)):
                self.last_update_time = float(data["timestamp"])


def _merge(session_state: Mapping[str, Any], app: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """The state ADK shows: the session's keys, then ``app:`` and ``user:`` keys from their own streams."""
    merged = dict(session_state)
    merged.update((State.APP_PREFIX + key, value) for key, value in app.items())
    merged.update((State.USER_PREFIX + key, value) for key, value in user.items())
    return merged


class SessionStoreSessionService(BaseSessionService):
    """ADK sessions stored as sessionstore events. `db_url` is a path or a URL (an `AsyncSessionStore`
    is opened on it), an `AsyncSessionStore`, or a `SessionStore` (called from a worker thread)."""

    def __init__(self, db_url: Database = None) -> None:
        self._door = Door(db_url)

    @property
    def store(self) -> Any:
        return self._door.store

    # ------------------------------------------------------------------ state streams

    async def _stream_state(self, key: str) -> dict[str, Any]:
        try:
            events = await self._door.events(key, kinds=["custom"])
        except SessionNotFound:
            return {}
        state: dict[str, Any] = {}
        for event in events:
            if event.payload.get("type") == STATE_TYPE:
                state.update(event.payload["data"])
        return state

    async def _write_state(self, key: str, delta: Mapping[str, Any]) -> None:
        if delta:
            await ensure(self._door, key, {"adk_state": key})
            await self._door.append(key, [ev.custom(STATE_TYPE, dict(delta))])

    async def _write_scoped(self, app_name: str, user_id: str, deltas: Mapping[str, Mapping[str, Any]]) -> None:
        await self._write_state(_app_key(app_name), deltas["app"])
        await self._write_state(_user_key(app_name, user_id), deltas["user"])

    async def _merged(self, app_name: str, user_id: str, session_state: Mapping[str, Any]) -> dict[str, Any]:
        return _merge(session_state, *await self._scoped(app_name, user_id))

    def _scoped(self, app_name: str, user_id: str) -> Awaitable[tuple[dict[str, Any], dict[str, Any]]]:
        """The app's and the user's state, read at once."""
        return asyncio.gather(self._stream_state(_app_key(app_name)), self._stream_state(_user_key(app_name, user_id)))

    # ------------------------------------------------------------------ sessions

    async def create_session(self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        session_id = (session_id or "").strip() or str(uuid.uuid4())
        key = session_key(app_name, user_id, session_id)
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        now = time.time()
        try:
            await self._door.create_session(key, {"adk": {"app_name": app_name, "user_id": user_id,
                                                          "session_id": session_id}})
            expected = 0
        except SessionExists:
            events = await self._door.events(key)
            if _Incarnation(events).alive:
                raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
            expected = events[-1].version if events else 0
        try:
            result = await self._door.append(key, [_lifecycle("create", state=deltas["session"], time=now)], expected)
        except ConcurrencyError:  # another caller created it meanwhile
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
        await self._write_scoped(app_name, user_id, deltas)
        session = Session(id=session_id, app_name=app_name, user_id=user_id,
                          state=await self._merged(app_name, user_id, deltas["session"]), last_update_time=now)
        session._storage_update_marker = str(result.version)
        return session

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        session_id = session_id.strip()
        key = session_key(app_name, user_id, session_id)

        async def session_events() -> list[StoredEvent] | None:
            try:
                return await self._door.events(key)
            except SessionNotFound:
                return None

        # the session's events and the app's and user's state, read at once
        events, scoped = await asyncio.gather(session_events(), self._scoped(app_name, user_id))
        if events is None:
            return None
        stored = events

        def build(_: Any) -> Session | None:  # a validation per event: on the store's threads, not the loop
            life = _Incarnation(stored)
            if not life.alive:
                return None
            adk_events = sorted((Event.model_validate(data) for data in life.events),
                                key=lambda e: (e.timestamp, e.id))
            if config is not None:
                if config.num_recent_events is not None:
                    adk_events = adk_events[-config.num_recent_events:] if config.num_recent_events else []
                if config.after_timestamp is not None:
                    adk_events = [e for e in adk_events if e.timestamp >= config.after_timestamp]
            session = Session(id=session_id, app_name=app_name, user_id=user_id,
                              state=_merge(life.state, *scoped), events=adk_events,
                              last_update_time=life.last_update_time)
            session._storage_update_marker = str(stored[-1].version)
            return session

        return await self._door.in_thread(build)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        sessions: list[Session] = []
        for info in await self._door.sessions():
            owner = (info.metadata or {}).get("adk")
            if not isinstance(owner, Mapping) or owner.get("app_name") != app_name or (
                    user_id is not None and owner.get("user_id") != user_id):
                continue
            life = _Incarnation(await self._door.events(info.id))
            if life.alive:
                uid = str(owner["user_id"])
                sessions.append(Session(id=str(owner["session_id"]), app_name=app_name, user_id=uid,
                                        state=await self._merged(app_name, uid, life.state),
                                        last_update_time=life.last_update_time))
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Record the deletion (a reset, then a deletion marker); the transcript keeps the session's events."""
        key = session_key(app_name, user_id, session_id.strip())
        try:
            events = await self._door.events(key)
        except SessionNotFound:
            return
        if not _Incarnation(events).alive:
            return
        await self._door.reset(key, reason="delete_session")
        await self._door.append(key, [_lifecycle("delete")])

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._stream_state(_user_key(app_name, user_id))

    # ------------------------------------------------------------------ events

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        if any(e == event for e in session.events if e.id == event.id):
            return event  # an equal re-delivery: applied once, as ADK's in-memory service does
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        key = session_key(session.app_name, session.user_id, session.id)
        expected = await self._expected_version(session, key)
        try:
            result = await self._door.append(key, _adk_events.encode(_adk_events.json_data(event)), expected)
        except ConcurrencyError:
            if not await self._alive(key):  # deleted since it was read: ADK's contract says not found
                raise SessionNotFoundError(f"Session {session.id} not found.") from None
            raise StaleSessionError(_STALE) from None
        except SessionNotFound:
            raise SessionNotFoundError(f"Session {session.id} not found.") from None
        delta = event.actions.state_delta if event.actions and event.actions.state_delta else {}
        await self._write_scoped(session.app_name, session.user_id,
                                 _session_util.extract_json_safe_state_delta(delta))
        session.last_update_time = event.timestamp
        session._storage_update_marker = str(result.version)
        return self._commit_event_to_session(session, event)

    async def _alive(self, key: str) -> bool:
        try:
            return _Incarnation(await self._door.events(key)).alive
        except SessionNotFound:
            return False

    async def _expected_version(self, session: Session, key: str) -> int:
        """The version the caller's session object was read at (ADK's stale-session check)."""
        marker = session._storage_update_marker
        if marker is not None and marker.isdigit():
            return int(marker)
        # A session object without our marker (built by hand, or read elsewhere): current when
        # the stored session ends with the last event it holds.
        try:
            events = await self._door.events(key)
        except SessionNotFound:
            raise SessionNotFoundError(f"Session {session.id} not found.") from None
        life = _Incarnation(events)
        if not life.alive:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        stored_last = life.events[-1].get("id") if life.events else None
        held_last = session.events[-1].id if session.events else None
        if stored_last != held_last:
            raise StaleSessionError(_STALE)
        return events[-1].version

    # ------------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        """Release the connections this service opened (a store given to it stays open)."""
        await self._door.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()


__all__ = ["SessionStoreSessionService", "session_key"]
