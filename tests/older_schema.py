"""Today's code writing a database at an older revision, for the tests of a migration over data:
the `sessions` columns migration 0008 added (what every session's row now holds), added by hand
while the test writes and dropped before it upgrades (0008 adds them again and fills them in)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from sqlalchemy import Engine

COLUMNS: Final = ("started_at", "last_event_at")


@contextmanager
def writable_by_this_version(engine: Engine) -> Iterator[None]:
    with engine.begin() as conn:
        for name in COLUMNS:
            conn.exec_driver_sql(f"ALTER TABLE sessions ADD COLUMN {name} TIMESTAMP WITH TIME ZONE")
    yield
    with engine.begin() as conn:
        for name in COLUMNS:
            conn.exec_driver_sql(f"ALTER TABLE sessions DROP COLUMN {name}")
