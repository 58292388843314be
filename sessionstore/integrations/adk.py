"""A Google ADK `BaseSessionService` on sessionstore (``pip install 'sessionstore[adk]'``).

::

    service = SessionStoreSessionService("sessions.db")        # was DatabaseSessionService(url)
    runner = Runner(agent=agent, app_name="weather", session_service=service)

Each ADK session is a sessionstore session (``adk:<app>/<user>/<session>``) whose events are
ADK's events — the envelope as a ``custom`` event, the content as messages, tool calls and tool
results — so ``sessionstore show`` and compaction see the conversation. App and user state are
streams of their own (``adk-app:<app>``, ``adk-user:<app>/<user>``) holding the ``app:`` and
``user:`` deltas; session state is the session's creation state plus its events' deltas;
``temp:`` keys live only in the caller's session object, as ADK defines them. Each stream's
latest custom event also says the state as it stands after it (`_adk_state`), so that
``list_sessions`` reads, for the sessions it returns, one event each in one query, never
their histories.

A stale session object (another writer appended since it was read) is refused with ADK's
``StaleSessionError`` ("modified in storage"): the store's optimistic ``expected_version``
is exactly that check, so there is no timestamp guessing. ``delete_session`` records a reset
and a deletion; the transcript keeps everything.
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
from collections.abc import Mapping, Sequence
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

from ..errors import ConcurrencyError, SessionExists, SessionNotFound
from ..events import StoredEvent
from ..store import SessionStore
from . import _adk_events
from ._adk_state import (GONE, Life, after, created, fold, lifecycle, said, state_event, stream_fold, stream_said,
                         with_snapshot)
from ._door import Database, Door, store_key

_STALE: Final = ("The session has been modified in storage since it was loaded. "
                 "Please reload the session before appending more events.")
_KNOWN: Final = 4096  # sessions whose state at a version a service remembers (see `_known`)
_STATE_TRIES: Final = 50  # reads and appends of an app or user state before a conflict is raised
Data = dict[str, Any]


def session_key(app_name: str, user_id: str, session_id: str) -> str:
    return store_key("adk:", app_name, user_id, session_id)


def _app_key(app_name: str) -> str:
    return store_key("adk-app:", app_name)


def _user_key(app_name: str, user_id: str) -> str:
    return store_key("adk-user:", app_name, user_id)


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
        # How sessions stood at a version this service read or wrote: an append on that version
        # computes the state it leaves from it, without reading (`_life_at`).
        self._known: dict[str, tuple[int, Life]] = {}

    @property
    def store(self) -> Any:
        return self._door.store

    # ------------------------------------------------------------------ state streams

    async def _stream_states(self, keys: Sequence[str]) -> dict[str, Data]:
        """The app or user state of each stream of `keys` (`_states_of`), in one hop."""
        return await self._door.in_thread(lambda store: _states_of(store, keys))

    async def _write_scoped(self, app_name: str, user_id: str, deltas: Mapping[str, Mapping[str, Any]]) -> None:
        """Append the app's and the user's deltas, each with the whole state it leaves
        (`_write_state_on`), in one hop."""
        writes = [(key, delta) for key, delta in ((_app_key(app_name), deltas["app"]),
                                                  (_user_key(app_name, user_id), deltas["user"])) if delta]
        if writes:
            await self._door.in_thread(lambda store: [_write_state_on(store, *write) for write in writes], writes=True)

    async def _scoped(self, app_name: str, user_id: str) -> tuple[Data, Data]:
        """The app's and the user's state, read at once."""
        app, user = _app_key(app_name), _user_key(app_name, user_id)
        states = await self._stream_states([app, user])
        return states[app], states[user]

    # ------------------------------------------------------------------ sessions' latest state

    async def _lives(self, keys: Sequence[str]) -> dict[str, Life]:
        """How each session of `keys` stands (`_lives_of`), in one hop."""
        return await self._door.in_thread(lambda store: _lives_of(store, keys))

    async def _life(self, key: str) -> Life:
        return (await self._lives([key]))[key]

    def _remember(self, key: str, version: int, life: Life) -> None:
        self._known.pop(key, None)
        if len(self._known) >= _KNOWN:
            del self._known[next(iter(self._known))]
        self._known[key] = (version, life)

    async def _life_at(self, key: str, version: int) -> Life:
        """How the session stands at `version`, the one an append is about to be written on:
        remembered, or its latest state (if that is past `version`, the append is refused anyway)."""
        known = self._known.get(key)
        return known[1] if known is not None and known[0] == version else await self._life(key)

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
            if (await self._life(key)).alive:
                raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
            expected = await self._door.version(key)
        try:
            result = await self._door.append(key, [created(deltas["session"], now)], expected)
        except ConcurrencyError:  # another caller created it meanwhile
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
        self._remember(key, result.version, Life(True, dict(deltas["session"]), now))
        await self._write_scoped(app_name, user_id, deltas)
        session = Session(id=session_id, app_name=app_name, user_id=user_id,
                          state=_merge(deltas["session"], *await self._scoped(app_name, user_id)),
                          last_update_time=now)
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
        if not events:
            return None
        stored = events

        def build(_: Any) -> tuple[Session | None, Life]:  # a validation per event: on the store's threads
            life, data = fold(stored)
            if not life.alive:
                return None, life
            adk_events = sorted((Event.model_validate(item) for item in data), key=lambda e: (e.timestamp, e.id))
            if config is not None:
                if config.num_recent_events is not None:
                    adk_events = adk_events[-config.num_recent_events:] if config.num_recent_events else []
                if config.after_timestamp is not None:
                    adk_events = [e for e in adk_events if e.timestamp >= config.after_timestamp]
            # a deep copy: the state's values are the store's kept transcript's, not the caller's to change
            session = Session(id=session_id, app_name=app_name, user_id=user_id, state=_merge(
                copy.deepcopy(life.state), *scoped), events=adk_events, last_update_time=life.time)
            session._storage_update_marker = str(stored[-1].version)
            return session, life

        session, life = await self._door.in_thread(build)
        if life.alive:
            self._remember(key, stored[-1].version, life)
        return session

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        """The app's sessions (one user's, or all users'), without their events, as ADK lists them:
        found by their metadata, their state from their latest events (`_listing`)."""
        sessions = await self._door.in_thread(lambda store: _listing(store, app_name, user_id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Record the deletion (a reset, then a deletion marker); the transcript keeps the session's events."""
        key = session_key(app_name, user_id, session_id.strip())
        if not (await self._life(key)).alive:
            return
        await self._door.reset(key, reason="delete_session")
        await self._door.append(key, [lifecycle("delete")])
        self._known.pop(key, None)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        key = _user_key(app_name, user_id)
        return (await self._stream_states([key]))[key]

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
        data = _adk_events.json_data(event)
        life = after(await self._life_at(key, expected), data)
        try:
            result = await self._door.append(key, with_snapshot(_adk_events.encode(data), life), expected)
        except ConcurrencyError:
            if not (await self._life(key)).alive:  # deleted since it was read: ADK's contract says not found
                raise SessionNotFoundError(f"Session {session.id} not found.") from None
            raise StaleSessionError(_STALE) from None
        except SessionNotFound:
            raise SessionNotFoundError(f"Session {session.id} not found.") from None
        self._remember(key, result.version, life)
        delta = event.actions.state_delta if event.actions and event.actions.state_delta else {}
        await self._write_scoped(session.app_name, session.user_id,
                                 _session_util.extract_json_safe_state_delta(delta))
        session.last_update_time = event.timestamp
        session._storage_update_marker = str(result.version)
        return self._commit_event_to_session(session, event)

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
        life, data = fold(events)
        if not life.alive:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        stored_last = data[-1].get("id") if data else None
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


# --------------------------------------------------------------------------- reads, on the store's threads
# (a listing decodes and validates thousands of sessions: work for the store's threads, not the loop)


def _lives_of(store: SessionStore, keys: Sequence[str], latest: Mapping[str, StoredEvent] | None = None
              ) -> dict[str, Life]:
    """How each session of `keys` stands (GONE: deleted, or never created), from the latest event
    of each (`latest`, or read in one query); a session whose latest event does not say is replayed."""
    if latest is None:
        latest = store.latest_events(keys, "custom")
    lives: dict[str, Life] = {}
    for key in keys:
        life = said(latest.get(key))
        lives[key] = life if life is not None else fold(store.transcript(key))[0] if key in latest else GONE
    return lives


def _states_of(store: SessionStore, keys: Sequence[str], latest: Mapping[str, StoredEvent] | None = None
               ) -> dict[str, Data]:
    """The app or user state of each stream of `keys`, from their latest events (`latest`, or read
    in one query); a stream written before snapshots were kept is replayed."""
    if latest is None:
        latest = store.latest_events(keys, "custom")
    states: dict[str, Data] = {}
    for key in keys:
        state = stream_said(latest[key]) if key in latest else {}
        states[key] = state if state is not None else stream_fold(store.transcript(key))
    return states


def _write_state_on(store: SessionStore, key: str, delta: Mapping[str, Any]) -> None:
    """Append `delta` to the app or user state `key` with the whole state it leaves, on the version
    that state was read at. Every session of an app writes its ``app:`` keys to one stream: read
    and append follow each other on one thread (on SQLite the one writer thread, which no other
    write of the process comes between); a writer that came between anyway (another process) is
    read again: the latest event if it is the head, else the stream replayed."""
    store.ensure_session(key, {"adk_state": key})
    for attempt in range(_STATE_TRIES):
        latest = store.latest_events([key], "custom").get(key)
        state, head = stream_said(latest), latest.version if latest is not None else 0
        if state is None or (attempt and head != store.version(key)):  # not a snapshot at the head
            events = store.transcript(key)
            state, head = stream_fold(events), events[-1].version if events else 0
        try:
            store.append(key, [state_event(delta, {**state, **delta})], expected_version=head, strict=False)
            return
        except ConcurrencyError:
            if attempt == _STATE_TRIES - 1:
                raise


def _listing(store: SessionStore, app_name: str, user_id: str | None) -> list[Session]:
    """`list_sessions` in two queries: the sessions, then the latest event of each, of the app's
    state and of each user's state."""
    # One user's: the range of the index on adk.user_id (migration 0008), the app checked here.
    # The whole app's: the newest-first walk of every session, kept by its adk.app_name.
    found = store.sessions(where={"adk.app_name": app_name} if user_id is None else {"adk.user_id": user_id})
    infos = [info for info in found if info.erased_at is None and info.metadata["adk"].get("app_name") == app_name]
    app, ids = _app_key(app_name), [info.id for info in infos]
    streams = {uid: _user_key(app_name, uid) for uid in sorted({str(i.metadata["adk"]["user_id"]) for i in infos})}
    latest = store.latest_events([*ids, app, *streams.values()], "custom")
    lives = _lives_of(store, ids, latest)
    scoped = _states_of(store, [app, *streams.values()], latest)
    sessions: list[Session] = []
    for info in infos:
        life, owner = lives[info.id], info.metadata["adk"]
        if not life.alive:
            continue
        uid = str(owner["user_id"])
        session = Session(id=str(owner["session_id"]), app_name=app_name, user_id=uid,
                          state=_merge(life.state, scoped[app], scoped[streams[uid]]), last_update_time=life.time)
        session._storage_update_marker = str(info.head)
        sessions.append(session)
    sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
    return sessions


__all__ = ["SessionStoreSessionService", "session_key"]
