"""The last views a door built, kept so that the next call folds only what came after them.

An agent reads its session on every turn, and between two reads it usually appended a handful
of events. Rebuilding from the database each time costs the size of the view (reading and
decoding every row); bringing the previous view up to date costs the events since. Each
repository (so each door) keeps, per session and per kind of view, the last one it built with
the head it was built at, in a bounded LRU: at most `sessions` entries and `events` events
held in all (a view's weight is the events it holds), so memory stays bounded whatever the
number of sessions a server hosts.

The cache is a hint and never the truth: every use reads the session's head first
(`Repository._follow`, in `reading`), and an entry whose head is not an ancestor of the stored one — a
different link at the same version, or a version past the head — is rebuilt.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, Generic, NamedTuple, Protocol, TypeVar

from ..events import StoredEvent

S = TypeVar("S")

# Enough for a server's active agents; each view holds its events once (shared with the caller).
VIEW_SESSIONS: Final = 512
VIEW_EVENTS: Final = 250_000


class View(NamedTuple):
    """A view of a session as it was at head `version` (whose chain link is `link`)."""

    version: int
    link: str
    value: Any
    weight: int


class Fold(Protocol, Generic[S]):
    """A view of a session that the caller defines (a framework's list of items, say) and the
    store keeps like its own: `start()` is the view of no events, `step(view, events)` the view
    after `events` (the versions after it, in order), or None when only a rebuild from the first
    event can say. Both pure; a view is never changed in place (another thread may hold it).
    `name` keys the kept views (one per fold and session)."""

    name: str

    def start(self) -> S: ...

    def step(self, view: S, events: Sequence[StoredEvent]) -> S | None: ...

    def weight(self, view: S) -> int: ...


class Views:
    """A thread-safe LRU of views keyed by (what, session id), bounded in entries and in events."""

    def __init__(self, sessions: int = VIEW_SESSIONS, events: int = VIEW_EVENTS) -> None:
        self._entries: OrderedDict[tuple[str, str], View] = OrderedDict()
        self._sessions = sessions
        self._events = events
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, what: str, session_id: str) -> View | None:
        with self._lock:
            view = self._entries.get((what, session_id))
            if view is not None:
                self._entries.move_to_end((what, session_id))
            return view

    def put(self, what: str, session_id: str, view: View) -> None:
        """Keep `view` unless a newer one of the session is kept already (two threads racing)."""
        if view.weight > self._events:
            return
        with self._lock:
            key = (what, session_id)
            old = self._entries.pop(key, None)
            if old is not None:
                if old.version > view.version:
                    self._entries[key] = old
                    return
                self._weight -= old.weight
            self._entries[key] = view
            self._weight += view.weight
            while len(self._entries) > self._sessions or self._weight > self._events:
                _, evicted = self._entries.popitem(last=False)
                self._weight -= evicted.weight

    def forget(self, session_id: str) -> None:
        """Drop every view of the session (it was erased)."""
        with self._lock:
            for key in [key for key in self._entries if key[1] == session_id]:
                self._weight -= self._entries.pop(key).weight

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["VIEW_EVENTS", "VIEW_SESSIONS", "Fold", "View", "Views"]
