"""Token counting off the append path: the counts of events stored uncounted, written back.

An append stores its events with `tokens.UNCOUNTED`: counting one event costs more than storing
it. An event read before its count is written gets it on the fly (`Decoder.event`), so views and
listings of events are exact either way; what the database sums (`token_totals`,
`transcript_tokens`) and what an erasure is about to destroy need the counts in the rows, and
run `count_tokens` first — a batch of the pending events (found by migration 0010's partial
index), counted in one call to the counter and written back one statement a session.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from ..storage.appends import set_tokens_params
from ..tokens import count_events
from .base import Part
from .ops import Execute, Program

# Events counted per round: one call to the counter, one UPDATE per session among them.
COUNT_BATCH: Final = 1000


class CountingPart(Part):
    def count_tokens(self, session_id: str | None = None) -> Program[int]:
        """Count the events stored uncounted (every session's, or `session_id`'s) and write their
        counts; returns how many. Idempotent, and safe beside appends and other counters (a row
        is written only while still uncounted)."""
        done = 0
        last: tuple[object, ...] = ()
        while True:
            if session_id is None:
                rows = yield Execute(self.sql.uncounted, {"limit": COUNT_BATCH})
            else:
                rows = yield Execute(self.sql.uncounted_of, {"sid": session_id, "limit": COUNT_BATCH})
            # none left; or the same first rows again: written by no one (never loop on them)
            if not rows or tuple(rows[0][:2]) == last:
                return done
            last = tuple(rows[0][:2])
            decode = self.sql.decode.json
            counts = count_events(self._counter(), [(kind, decode(payload)) for _, _, kind, payload in rows])
            by_session: dict[str, list[tuple[int, int]]] = defaultdict(list)
            for (sid, position, _, _), tokens in zip(rows, counts):
                by_session[sid].append((int(position), tokens))
            for sid, pairs in by_session.items():
                yield Execute(self.sql.set_tokens, set_tokens_params(self.sql, sid, pairs))
            done += len(rows)
            if len(rows) < COUNT_BATCH:
                return done
