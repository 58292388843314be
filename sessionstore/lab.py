"""The lab: re-living recorded sessions to measure what the library decides.

`recorded_calls` walks a recorded session's model calls and gives, for each, the context view
an agent on this library would have sent and the provider's count of that request — the
ground truth for token estimates (`scripts/bench_calibration.py`, tests).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .events import StoredEvent
from .projection import ContextView, input_from_events, project
from .projection.calibration import calibration_details
from .projection.fold import in_context
from .projection.usage import prompt_tokens, reports

Situation = Literal["anchored", "after-compaction", "unanchored"]


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One model call of a recorded session: the request's view and the provider's count of it."""

    version: int  # the first event of the response
    model: str | None
    reported: int  # the provider's prompt tokens
    view: ContextView  # the view just before the response, as an agent on this library would send it

    @property
    def situation(self) -> Situation:
        """``anchored``: a valid usage anchor for the model; ``after-compaction``: the first call
        after a compaction (no report since); ``unanchored``: any other call without an anchor."""
        view = self.view
        if view.usage is not None and view.usage.model == self.model:
            return "anchored"
        if view.compaction is not None and not any(
                prompt_tokens(e.meta.get("usage")) for e in view.source.tail if e.version > view.compaction.version):
            return "after-compaction"
        return "unanchored"

    def estimate(self, fallback_ratio: float = 1.0) -> int:
        return self.view.window_estimate(self.model, fallback_ratio=fallback_ratio).tokens

    def error(self, estimate: int) -> float:
        """Relative error of `estimate` against the provider's count (negative: too low)."""
        return (estimate - self.reported) / self.reported


def recorded_calls(session_id: str, events: Sequence[StoredEvent]) -> Iterator[RecordedCall]:
    """Each model call that reported usage, with the view before it.

    The recorded agent's own compactions stay, and each gets what this library's planner
    records in every compaction (`calibration_details` of the view it replaces), so that the
    calls after it are estimated as they would be for a session compacted by this library.
    """
    patched = list(events)
    compactions = [(i, e) for i, e in enumerate(events) if e.kind == "compaction"]
    for report in reports(e for e in events if in_context(e)):
        while compactions and compactions[0][1].version < report.start.version:
            i, event = compactions.pop(0)
            before = project(input_from_events(session_id, patched, at=event.version - 1))
            details = {**(event.payload.get("details") or {}), **calibration_details(before)}
            patched[i] = replace(event, payload={**event.payload, "details": details})
        view = project(input_from_events(session_id, patched, at=report.start.version - 1))
        yield RecordedCall(report.start.version, report.model, report.prompt, view)
