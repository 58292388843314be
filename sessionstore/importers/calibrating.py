"""The calibration an imported compaction records, learned from the events this import wrote.

An agent's compaction is stored with the token calibration learned from the usage reports
before it (`projection.calibration`), read off the session's context view at that point. For a
session this import creates, the store holds exactly the events the import appended, so that
view is rebuilt here from them (`input_from_events`, `project`: the pure functions the store's
own view runs) instead of read back: no rows read and decoded again, and each event counted
once however many compactions' views hold it. The figures are the store's: every event in the
view counted by the store's counter from the same payload (`count_events`, as a read counts an
event stored uncounted), the earlier compactions as they were stored (their calibration in
meta). A session that held events before the import is calibrated from the store (`storing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Final

from ..events import NewEvent, StoredEvent
from ..projection.calibration import calibration_details
from ..projection.context import project
from ..projection.view import input_from_events
from ..tokens import UNCOUNTED, TokenCounter, count_events

# Projections never read an event's time or position: what stands in for those the store assigns.
_NO_TIME: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)


class WrittenHistory:
    """A new session's events as this import appended them (version order), with the counts made
    so far, so that the calibration before each compaction needs no read of the store."""

    def __init__(self, session_id: str, counter: TokenCounter) -> None:
        self.session_id = session_id
        self.counter = counter
        self.events: list[StoredEvent] = []
        self.counts: dict[int, int] = {}

    def appended(self, events: Sequence[NewEvent]) -> None:
        """Note events just appended (as stored: a compaction with its calibrated meta)."""
        first = len(self.events) + 1
        self.events.extend(StoredEvent(e.event_id, self.session_id, first + i, 0, e.kind, e.payload, e.meta,
                                       UNCOUNTED, e.created_at or _NO_TIME) for i, e in enumerate(events))

    def calibration(self) -> dict[str, Any]:
        """`calibration_details` of the session's context view at its head, as `store.context` gives it."""
        source = input_from_events(self.session_id, self.events)
        read = [e for e in (source.system, source.compaction, source.scratchpad, *source.anchored, *source.tail)
                if e is not None]
        missing = {e.version: e for e in read if e.version not in self.counts}
        if missing:
            pending = list(missing.values())
            self.counts.update(zip(missing, count_events(self.counter, [(e.kind, e.payload) for e in pending])))

        def counted(event: StoredEvent | None) -> StoredEvent | None:
            return None if event is None else replace(event, tokens=self.counts[event.version])

        source = replace(source, system=counted(source.system), compaction=counted(source.compaction),
                         scratchpad=counted(source.scratchpad),
                         anchored=tuple(replace(e, tokens=self.counts[e.version]) for e in source.anchored),
                         tail=tuple(replace(e, tokens=self.counts[e.version]) for e in source.tail))
        return calibration_details(project(source))
