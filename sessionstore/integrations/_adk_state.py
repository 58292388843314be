"""An ADK session's state, and its app's and user's, kept where one indexed read finds it (pure).

ADK lists sessions with their state. Rebuilding a session's state by replaying its events costs
what the session holds, and a listing of thousands of sessions would read every event of each.
So each stream's latest ``custom`` event says how the stream stands after it:

* a session's lifecycle event: ``create`` holds the creation state and time, ``delete`` says
  it is gone;
* each ADK event's envelope holds the session state and last update time after that event
  (payload key ``session``), computed by the writer from the state it appends on;
* each app or user state event holds, beside its delta, the whole state after it (``state``).

`SessionStore.latest_events` reads the latest custom event of every listed stream in one
query. A stream whose latest custom event does not say (written before snapshots were kept, or
ending in someone else's custom event) is replayed: that is `fold`, the same rule the snapshot
is computed by, so both give the same state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from google.adk.sessions import _session_util

from .. import events as ev
from ..events import NewEvent, StoredEvent
from . import _adk_events

SESSION_TYPE: Final = "adk:session"  # lifecycle: {"op": "create", "state", "time"} | {"op": "delete"}
STATE_TYPE: Final = "adk:state"      # a delta of app or user state, and the whole state after it
SNAPSHOT: Final = "session"          # the envelope's payload key: {"state", "time"} after the event

Data = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Life:
    """A session as its latest state says: alive or not, its session-scoped state, last update time."""

    alive: bool
    state: Data = field(default_factory=dict)
    time: float = 0.0


GONE: Final = Life(False)


def lifecycle(op: str, **fields: Any) -> NewEvent:
    return ev.custom(SESSION_TYPE, {"op": op, **fields})


def created(state: Mapping[str, Any], time: float) -> NewEvent:
    return lifecycle("create", state=dict(state), time=time)


def _is(event: StoredEvent, type_: str) -> bool:
    return event.kind == "custom" and event.payload.get("type") == type_


def said(event: StoredEvent | None) -> Life | None:
    """What the session's latest custom event says of it; None when it says nothing (an event
    written before snapshots were kept, someone else's, or erased): the session is replayed."""
    if event is None or event.erased_at is not None or event.kind != "custom":
        return None
    if _is(event, SESSION_TYPE):
        data = event.payload["data"]
        return Life(True, dict(data.get("state") or {}), float(data["time"])) if data["op"] == "create" else GONE
    snapshot = event.payload.get(SNAPSHOT) if _adk_events.is_envelope(event) else None
    if isinstance(snapshot, Mapping):
        return Life(True, dict(snapshot["state"]), float(snapshot["time"]))
    return None


def after(life: Life, data: Mapping[str, Any]) -> Life:
    """The session after the ADK event `data` (its JSON data): its session-scoped delta applied,
    its timestamp the last update time."""
    delta = (data.get("actions") or {}).get("state_delta") or {}
    scoped = _session_util.extract_state_delta(delta)["session"]
    state = {**life.state, **scoped} if scoped else life.state
    stamp = data.get("timestamp")
    return replace(life, state=state, time=float(stamp) if isinstance(stamp, (int, float)) else life.time)


def with_snapshot(group: Sequence[NewEvent], life: Life) -> list[NewEvent]:
    """An ADK event's group of events, its envelope saying how the session stands after it."""
    head, *rest = group
    return [replace(head, payload={**head.payload, SNAPSHOT: {"state": life.state, "time": life.time}}), *rest]


def fold(events: Sequence[StoredEvent]) -> tuple[Life, list[Data]]:
    """The session since its latest creation, replayed: how it stands, and its ADK events' data."""
    start: int | None = None
    life = GONE
    for i, event in enumerate(events):
        if _is(event, SESSION_TYPE):
            life = said(event) or GONE
            start = i if life.alive else None
    if start is None or not life.alive:
        return GONE, []
    data = _adk_events.decode(events[start + 1:])
    for item in data:
        life = after(life, item)
    return life, data


# --------------------------------------------------------------------------- app and user state


def state_event(delta: Mapping[str, Any], state: Mapping[str, Any]) -> NewEvent:
    """An app or user state change: the delta, and the whole state it leaves."""
    event = ev.custom(STATE_TYPE, dict(delta))
    return replace(event, payload={**event.payload, "state": dict(state)})


def stream_said(event: StoredEvent | None) -> Data | None:
    """The app or user state the stream's latest event says; None when it does not say it."""
    if event is None or event.erased_at is not None or not _is(event, STATE_TYPE):
        return None
    state = event.payload.get("state")
    return dict(state) if isinstance(state, Mapping) else None


def stream_fold(events: Iterable[StoredEvent]) -> Data:
    """An app or user state replayed from its deltas."""
    state: Data = {}
    for event in events:
        if _is(event, STATE_TYPE):
            state.update(event.payload["data"])
    return state
