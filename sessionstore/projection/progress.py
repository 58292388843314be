"""What a view keeps so that the events after it cost only themselves (DESIGN §10, incremental
views; issue 30: a turn costs what changed).

A view is rendered as two parts (`render.closing`): the items before a boundary, closed for
good — their messages, their items as sent, their counts, what they carry on to the rendering
of the rest, and the forward pass over their usage reports (`calibration.Scan`) — and the
items after it, the *open* part, which is all that `advanced` renders again. Appending a turn
reads the closed part's sums and renders the open part with the new items; the boundary then
moves up to the latest place where no repair crosses it, so the open part stays about a turn.

The result is the view `project` builds from scratch, by construction: the closed and open
parts joined are what the whole renders at once (`render.join`), and `advanced` refuses —
for a full rebuild — whatever it cannot fold without reading the closed part again: a marker,
a compaction, a system prompt or a scratchpad, an event a marker already names, a call whose
pair was dropped, a tool id that needs renaming, a repair that reaches back. Pure: events in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from ..events import StoredEvent
from .calibration import Scan, dropped_calls
from .fold import Marker, in_context, latest_report, sent_items, tail_item
from .parts import Closed, Part, Rendered
from .render import closing, join, render_anthropic, render_part
from .view import ProjectionInput, ViewItem

# Kinds whose events only add items at the end of the view; any other kind changes what is
# already there (markers, compactions, the system prompt, the scratchpad): a full rebuild.
_APPENDED: Final = frozenset({"message", "tool_call", "tool_result", "custom"})
# How many boundaries, latest first, are tried when closing (each try renders the open part).
_TRIES: Final = 2


@dataclass(frozen=True, slots=True)
class Progress:
    """A view's two parts and what `advanced` needs to fold the next events into it."""

    markers: Mapping[int, Marker]
    gone: Mapping[str, int]  # call id → the drop that took it (`calibration.dropped_calls`)
    last_change: int  # the latest compaction, prune or rewrite (`fold.last_change`)
    lent: bool  # the view starts from a provider's compaction (`fold.tail_items`)
    tail_start: int  # items before the tail's: summary, scratchpad, critical tools, restored files
    closed: Closed
    closed_items: tuple[ViewItem, ...]  # as sent
    closed_tokens: int
    scan: Scan  # the pass over the kept tail's events before the open part
    open_events: tuple[StoredEvent, ...]  # the kept tail's events from the open part on
    open_items: tuple[ViewItem, ...]  # as the fold leaves them, before rendering
    part: Part | None  # their rendering; None: a tool id needs renaming, render the whole
    rendered: Rendered
    items: tuple[ViewItem, ...]  # the view's items, as sent
    report: int | None  # the index in `items` of the latest usage report (`fold.latest_report`)
    scans: dict[str, Scan] = field(default_factory=dict, compare=False)  # the whole pass, once read

    def whole_scan(self) -> Scan:
        """The pass over the whole kept tail (read once, on demand: only estimates need it)."""
        if "whole" not in self.scans:
            now = {item.version: item for item in self.items[len(self.closed_items):] if item.origin == "tail"}
            self.scans["whole"] = self.scan.read(self.open_events, now, self.markers, self.gone)
        return self.scans["whole"]


def start(source: ProjectionInput, items: list[ViewItem], markers: Mapping[int, Marker], last_change: int,
          lent: bool, kept: Sequence[StoredEvent]) -> Progress:
    """The progress of a view built from scratch: `items` as the fold leaves them, `kept` the
    kept tail's events."""
    tail_start = next((i for i, item in enumerate(items) if item.origin == "tail"), len(items))
    since = source.compaction.version if source.compaction is not None else 0
    progress = _settle(Progress(
        MappingProxyType(dict(markers)), MappingProxyType(dropped_calls(kept, markers)), last_change, lent, tail_start,
        Closed(), (), 0, Scan(since), tuple(kept), tuple(items), None, _EMPTY, (), None))
    report = latest_report(progress.items, tail_start, len(progress.items), last_change)
    return replace(progress, report=report)


def advanced(progress: Progress, events: Sequence[StoredEvent]) -> Progress | None:
    """`progress` with `events` (the versions right after it) folded in; None when only a full
    rebuild can say (see the module docstring)."""
    if progress.part is None or any(e.kind not in _APPENDED or e.version in progress.markers for e in events):
        return None
    new = [item for e in events if in_context(e) and (item := tail_item(e, progress.lent)) is not None]
    if any(item.call_id is not None and item.call_id in progress.gone for item in new):
        return None
    moved = replace(progress, open_events=progress.open_events + tuple(e for e in events if in_context(e)),
                    open_items=progress.open_items + tuple(new), scans={})
    settled = _settle(moved)
    if settled.part is None:
        return None
    found = latest_report(settled.items, len(progress.items), len(settled.items), settled.last_change)
    return replace(settled, report=found if found is not None else progress.report)


def _settle(progress: Progress) -> Progress:
    """Close the open part up to its latest boundary that no repair crosses, and render what
    stays open."""
    closed, scan, items, events = progress.closed, progress.scan, progress.open_items, progress.open_events
    closed_items, closed_tokens = progress.closed_items, progress.closed_tokens
    part: Part | None = None
    for at in _boundaries(progress, items):
        split = closing(closed, items, at)
        if split is None:
            continue
        before, part = split
        sent = sent_items(items[:at], before.dropped, before.shares)
        boundary = items[at].version
        cut = next((i for i, e in enumerate(events) if e.version >= boundary), len(events))
        scan = scan.read(events[:cut], {i.version: i for i in sent if i.origin == "tail"}, progress.markers,
                         progress.gone)
        closed, closed_items = closed.then(before, at), closed_items + tuple(sent)
        closed_tokens += sum(i.tokens for i in sent)
        items, events = items[at:], events[cut:]
        break
    if part is None:
        part = render_part(items, closed)
    if part.conflict or part.bad_ids:  # only the whole, rendered at once, can say
        if closed.count:  # folding forward: the caller rebuilds
            return replace(progress, part=None)
        rendered = render_anthropic(items)  # renames the tool ids across the whole request
        return replace(progress, part=None, rendered=rendered,
                       items=tuple(sent_items(items, rendered.dropped, rendered.shares)))
    rendered = join(closed, part)
    open_sent = sent_items(items, part.dropped, part.shares)
    return replace(progress, closed=closed, closed_items=closed_items, closed_tokens=closed_tokens, scan=scan,
                   open_events=tuple(events), open_items=tuple(items), part=part, rendered=rendered,
                   items=closed_items + tuple(open_sent))


def _boundaries(progress: Progress, items: Sequence[ViewItem]) -> list[int]:
    """Where the open part could be closed, latest first: before a tail item that changes the
    speaker and comes after every marker (so that no marker reaches into the open part)."""
    lowest = max(1, progress.tail_start - progress.closed.count)
    found = []
    for at in range(len(items) - 1, lowest - 1, -1):
        item = items[at]
        if item.version <= progress.last_change:
            break
        if item.role != items[at - 1].role:
            found.append(at)
            if len(found) == _TRIES:
                break
    return found


_EMPTY: Final = Rendered([], [], [], set(), 0, 0, {})
