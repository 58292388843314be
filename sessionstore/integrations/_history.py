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

from ..events import NewEvent, StoredEvent
from ..repository.core import RESET_STRATEGY, is_retraction


def is_reset(event: StoredEvent | NewEvent) -> bool:
    return event.kind == "compaction" and event.payload.get("strategy") == RESET_STRATEGY


def is_replacement(event: StoredEvent) -> bool:
    """A provider's compaction that stands for the whole history before it (a framework replaced
    its history with the provider's window: `record_provider_compaction`)."""
    return (event.kind == "compaction" and bool(event.payload.get("native"))
            and event.payload["first_kept_version"] == event.version)


@dataclass
class BackwardScan:
    """Reads a session newest first, window by window, until it has enough live events.

    Retractions come after what they retract, so walking backwards meets each one before
    its targets; a reset ends the walk, and so does a replacement (`is_replacement`), which
    is found itself when `kinds` holds ``compaction`` (its items lead the history).
    """

    kinds: Collection[str]
    limit: int | None
    found: list[StoredEvent] = field(default_factory=list)  # newest first
    retracted: set[int] = field(default_factory=set)
    done: bool = False

    def feed(self, newest_first: Iterable[StoredEvent]) -> None:
        for event in newest_first:
            if is_reset(event) or is_replacement(event):
                if event.kind in self.kinds and is_replacement(event):
                    self.found.append(event)
                self.done = True
                return
            if is_retraction(event):
                self.retracted.update(event.payload["targets"])
            elif event.kind in self.kinds and event.kind != "compaction" and event.version not in self.retracted:
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



@dataclass(frozen=True, slots=True)
class Live:
    """A framework's live history: (version, item) pairs, oldest first; `lead` is the version of
    the replacement (`is_replacement`) whose items lead it, which no retraction takes back."""

    pairs: tuple[tuple[int, Any], ...] = ()
    lead: int | None = None

    @property
    def items(self) -> list[Any]:
        return [item for _, item in self.pairs]


@dataclass(frozen=True)
class LiveItems:
    """The live events of `kinds`, each as the framework's items (`convert`), oldest first: a
    fold the store keeps per session (`SessionStore.follow`), so that reading the history on
    every turn converts each event once. Going forwards, a reset empties the view, a replacement
    starts it again with its own items (when `kinds` holds ``compaction``), a retraction takes
    out what it names — the history `BackwardScan` reads walking back. Never changed in place."""

    name: str
    kinds: frozenset[str]
    convert: Callable[[StoredEvent], list[Any]]

    def start(self) -> Live:
        return Live()

    def step(self, view: Live, events: Sequence[StoredEvent]) -> Live:
        pairs, lead = list(view.pairs), view.lead
        for event in events:
            if is_reset(event) or is_replacement(event):
                found = event.kind in self.kinds and is_replacement(event)
                pairs = [(event.version, item) for item in self.convert(event)] if found else []
                lead = event.version if found else None
            elif is_retraction(event):
                taken = set(event.payload["targets"]) - {lead}
                pairs = [pair for pair in pairs if pair[0] not in taken]
            elif event.kind in self.kinds and event.kind != "compaction":
                pairs.extend((event.version, item) for item in self.convert(event))
        return Live(tuple(pairs), lead)

    def weight(self, view: Live) -> int:
        return len(view.pairs)
