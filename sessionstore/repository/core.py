"""The repository, written once: every operation of the store as a program (see `ops`).

Appends are optimistic and cost one statement. The repository remembers the head (version
and chain link) it last saw of each session; an append builds its rows on that head and
inserts them only if the head is still that one (`storage/statements.py`: a gated INSERT).
When the gate refuses — another writer got there first, or the remembered head was stale — it
reads the head and tries again; with `expected_version` it raises `ConcurrencyError` instead.
Checks that read history (a result's call must exist, a marker's target must be of the right
kind, a compaction may not move its cut backwards) read only versions up to that head, which
never change, and the gate proves the batch lands right after them: checked outside any
transaction, yet exact.

A fork shares its parent's history without copying it: a session's *lineage* is a chain of
(session, version range) segments, and every read of a session's events is a query over them.

The operations live in one module per concern — `sessions` (and lineage), `reading` (pages, the
feed, the kept views), `appending` (the gate, strict checks, retraction and reset), `compacting`,
`audit` (chain, erasure, statistics), `retention`, `searching`, `accounting` (usage and cost) — each a
part of the one `Repository` class composed here; what they share (constants, heads, the batch, the
pure checks) is in `base`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..storage.statements import Statements
from ..tokens import TokenCounter
from .accounting import AccountingPart
from .appending import AppendingPart
from .audit import AuditPart
from .base import (APPEND_ATTEMPTS, PAGE, RESET_STRATEGY, RETRACT_RULE, SEARCH_LIMIT, Head, Pages, Segment, check_batch,
                   check_session_id, is_retraction, reset_marker, retraction_marker)
from .compacting import CompactingPart
from .counting import CountingPart
from .reading import ReadingPart
from .retention import RetentionPart
from .searching import SearchPart
from .sessions import SessionsPart
from .views import Views


class Repository(SessionsPart, ReadingPart, AppendingPart, CompactingPart, AuditPart, RetentionPart, SearchPart,
                 AccountingPart, CountingPart):
    """The store's logic for one database dialect, shared by `SessionStore` and `AsyncSessionStore`.

    It keeps three caches, all safe to share between threads and event loops: the lineage of
    each session (a parent's history never changes), the last head seen of each session (a
    hint: the gate of every append checks it), and the last views built (`views`: a read
    folds only the events since).
    """

    def __init__(self, sql: Statements, counter: Callable[[], TokenCounter], views: Views | None = None) -> None:
        self.sql = sql
        self._counter = counter
        sql.decode.counter = counter  # an event read before its count was written is counted then
        self._lineages: dict[str, tuple[Segment, ...]] = {}
        self._heads: dict[str, Head] = {}
        self.views = views if views is not None else Views()
        self._shape_until = 0.0  # when the schema's shape is asked again (`Part._shape`)


__all__ = ["APPEND_ATTEMPTS", "PAGE", "RESET_STRATEGY", "RETRACT_RULE", "SEARCH_LIMIT", "Head", "Pages", "Repository",
           "Segment", "check_batch", "check_session_id", "is_retraction", "reset_marker", "retraction_marker"]
