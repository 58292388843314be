"""The live history of a session as a framework sees it: pure functions over events.

Frameworks delete: the Agents SDK pops items and clears sessions, LangChain clears, ADK
deletes sessions. Here nothing is deleted — a deletion is the store's `retract` (a ``prune``
event, mode ``drop``, naming the versions it takes back) or `reset` (after which nothing from
before counts) — so what a framework reads back is the events that no later retraction or
reset took away. Unlike the context view, a retraction takes away exactly the
events it names (a popped tool output leaves its call in place), because a framework's
history is a list of items, not a model request.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import StoredEvent
from ..repository.core import RESET_STRATEGY, RETRACT_RULE


def is_retraction(event: StoredEvent) -> bool:
    payload = event.payload
    return event.kind == "prune" and payload.get("mode") == "drop" and payload.get("rule") == RETRACT_RULE


def is_reset(event: StoredEvent) -> bool:
    return event.kind == "compaction" and event.payload.get("strategy") == RESET_STRATEGY


@dataclass
class BackwardScan:
    """Reads a session newest first, window by window, until it has enough live events.

    Retractions come after what they retract, so walking backwards meets each one before
    its targets; a reset ends the walk.
    """

    kinds: Collection[str]
    limit: int | None
    found: list[StoredEvent] = field(default_factory=list)  # newest first
    retracted: set[int] = field(default_factory=set)
    done: bool = False

    def feed(self, newest_first: Iterable[StoredEvent]) -> None:
        for event in newest_first:
            if is_reset(event):
                self.done = True
                return
            if is_retraction(event):
                self.retracted.update(event.payload["targets"])
            elif event.kind in self.kinds and event.version not in self.retracted:
                self.found.append(event)
                if self.limit is not None and len(self.found) >= self.limit:
                    self.done = True
                    return

    @property
    def events(self) -> list[StoredEvent]:
        """The live events found, oldest first."""
        return self.found[::-1]


def live_events(events: Sequence[StoredEvent], kinds: Collection[str]) -> list[StoredEvent]:
    """The events of `kinds` that no retraction or reset took away, oldest first."""
    scan = BackwardScan(kinds, None)
    scan.feed(reversed(events))
    return scan.events



@dataclass(frozen=True)
class LiveItems:
    """The live events of `kinds`, each as a framework's item, oldest first: a fold the store
    keeps per session (`SessionStore.follow`), so that reading the history on every turn
    converts each event once. Going forwards, a reset empties the view and a retraction takes
    out what it names — the same history `BackwardScan` reads walking back. A view is a tuple
    of (version, item) pairs, never changed in place."""

    name: str
    kinds: frozenset[str]
    convert: Callable[[StoredEvent], Any]

    def start(self) -> tuple[tuple[int, Any], ...]:
        return ()

    def step(self, view: tuple[tuple[int, Any], ...], events: Sequence[StoredEvent]
             ) -> tuple[tuple[int, Any], ...]:
        live = list(view)
        for event in events:
            if is_reset(event):
                live = []
            elif is_retraction(event):
                taken = set(event.payload["targets"])
                live = [pair for pair in live if pair[0] not in taken]
            elif event.kind in self.kinds:
                live.append((event.version, self.convert(event)))
        return tuple(live)

    def weight(self, view: tuple[tuple[int, Any], ...]) -> int:
        return len(view)
