"""Rows as the driver returns them turned into values: SQLite returns JSON and times as text (and
large values packed, `storage/packing.py`); psycopg already returns parsed JSON and aware
datetimes. An event stored uncounted is counted as it is decoded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, Final

from ..events import StoredEvent
from ..tokens import TokenCounter, count_events
from .packing import unpack


# Counts made as events are read, remembered by (position, event id) up to this many (then
# forgotten at once): an event stored uncounted is read again and again (an audit, a replay, a
# viewer, `context(at=…)`) until `count_tokens` writes its count, and counting costs more than
# decoding it.
_REMEMBERED: Final = 50_000


class Decoder:
    """Values as the driver returns them → Python values (SQLite returns JSON and times as text).
    An event stored uncounted gets its count here (`counter`, set by the repository), so that
    every event read carries its exact count whether or not it was written back yet."""

    counter: Callable[[], TokenCounter] | None = None

    def __init__(self, backend: str) -> None:
        self.text = backend == "sqlite"
        self.counted: dict[tuple[int, str], int] = {}

    def json(self, value: Any) -> Any:
        if self.text and isinstance(value, bytes):  # compressed (`storage/packing.py`)
            return json.loads(unpack(value))
        return json.loads(value) if self.text and isinstance(value, str) else value

    def time(self, value: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)

    def event(self, row: Sequence[Any]) -> StoredEvent:
        """A row of EVENT_COLUMNS."""
        payload, tokens = self.json(row[5]), row[7]
        if tokens < 0 and self.counter is not None:
            tokens = self._count(row, payload)
        return StoredEvent(row[0], row[1], row[2], row[3], row[4], payload, self.json(row[6]), tokens,
                           self.time(row[8]), self.time(row[9]))  # type: ignore[arg-type]

    def _count(self, row: Sequence[Any], payload: Any) -> int:
        """The count of an event stored uncounted; remembered unless erased (its payload is no
        longer the one counted)."""
        assert self.counter is not None
        remembered, key = row[9] is None, (row[3], row[0])
        tokens = self.counted.get(key, -1) if remembered else -1
        if tokens < 0:
            tokens = count_events(self.counter(), [(row[4], payload)])[0]
            if remembered:
                if len(self.counted) >= _REMEMBERED:
                    self.counted.clear()
                self.counted[key] = tokens
        return tokens
