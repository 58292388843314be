"""A session seen over time: the context view at every version, compactions, markers, token series.

Pure: a session's events in, facts out (no database, no HTML). The page and its tests share it.

**Time travel without a server.** A page must show the context view at any version, offline.
The designs considered:

1. the view precomputed at every version: exact, but one projection per version (measured
   ~1-2 ms each: 2-3 s for a 2,000-event session, about a minute for 10,000) and a payload
   that grows with versions × view size;
2. the projection ported to JavaScript: a second implementation of the fold, bound to drift;
3. (chosen) one view per *epoch*. The view changes in two ways only: an appended in-context
   event joins it, or a `compaction`, `prune`, `rewrite`, `system` or `scratchpad` event
   reshapes it. Between two such boundaries nothing leaves the view (markers are the only
   way out), so the view at version v of an epoch is the view at the epoch's last version
   restricted to versions <= v (what a compaction keeps from before its cut is older than
   the epoch anyway). One projection per epoch gives exact membership at every version; it
   ships as run-length ranges per state (tens of bytes an epoch) and a few lines of inline
   script apply it. `members_at` is that rule in Python, for the tests and the server.

**Token figures at every version** come from the same fact: two projections per epoch, at its
first and last versions, built from the one in-memory read of the transcript
(`input_from_events`, never a database round trip per version), and in between the end
view's own item counts, which are exact; only the renderer's fixed per-message costs are
spread evenly (measured on the shared transcripts: within 70 tokens of a full projection,
about 10 on average). A projection at every version would cost O(versions × view): ~15 ms
each for a 1,200-event session without compaction, minutes at 10,000 events.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Literal

from ..events import StoredEvent, targets_of
from ..projection import ContextView, input_from_events, project
from ..projection.fold import IN_CONTEXT_KINDS

State = Literal["verbatim", "cleared", "rewritten", "summary", "scratchpad", "kept", "system", "left_out"]
"""How an event is in the view: as recorded, with its output cleared, as a tree-sitter outline, as the
compaction summary, as the scratchpad, kept from before the cut (restored file, critical tool), as the
system prompt in force, or left out by the renderer's repairs (an orphan result, a duplicate)."""
STATES: Final[tuple[State, ...]] = ("verbatim", "cleared", "rewritten", "summary", "scratchpad", "kept", "system",
                                    "left_out")
BOUNDARY_KINDS: Final = frozenset({"compaction", "prune", "rewrite", "system", "scratchpad"})
# Renderer repairs that leave a whole event out of the request (see projection.render).
_LEFT_OUT: Final = frozenset({"orphan_tool_result", "duplicate_tool_use", "duplicate_tool_result", "empty_message"})

Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Epoch:
    """Versions `first`..`last`, during which the view only grows; `members` is the view at `last`."""

    first: int
    last: int
    members: Mapping[State, Ranges]


@dataclass(frozen=True, slots=True)
class CompactionSpan:
    """What a compaction summarised (versions `summarised`, plus the previous summary) and kept."""

    number: int
    version: int
    created_at: datetime
    summarised: tuple[int, int] | None  # None: nothing new since the previous cut
    first_kept: int
    restored: tuple[int, ...]
    critical: tuple[int, ...]
    tokens_before: int | None
    tokens_after: int | None
    trigger: str
    strategy: str
    summarizer: str


@dataclass(frozen=True, slots=True)
class MarkerNote:
    """A prune or rewrite as seen from an event it targets."""

    marker: int
    action: Literal["cleared", "dropped", "rewritten"]
    created_at: datetime
    detail: str  # the prune rule, or the outline's language


@dataclass(frozen=True, slots=True)
class Series:
    """Tokens at every version (index v - 1): the whole transcript so far, and the view the model would get
    (exact at both ends of every epoch, estimated within a few tokens a message in between)."""

    transcript: tuple[int, ...]
    view: tuple[int, ...]


@dataclass(frozen=True)
class Timeline:
    session_id: str
    head: int
    epochs: tuple[Epoch, ...]
    compactions: tuple[CompactionSpan, ...]
    notes: Mapping[int, tuple[MarkerNote, ...]]
    series: Series
    final: ContextView | None = field(repr=False)

    @property
    def boundaries(self) -> tuple[int, ...]:
        return tuple(e.first for e in self.epochs[1:])

    def epoch_at(self, version: int) -> Epoch:
        index = bisect_right([e.first for e in self.epochs], version) - 1
        return self.epochs[max(index, 0)]

    def members_at(self, version: int) -> dict[int, State]:
        """Event version → how it is in the view at `version` (the rule the page's script applies)."""
        epoch = self.epoch_at(version)
        found: dict[int, State] = {}
        for state, ranges in epoch.members.items():
            for lo, hi in ranges:
                for v in range(lo, min(hi, version) + 1):
                    found[v] = state
        return found


def transcript_tokens(event: StoredEvent) -> int:
    """What an event adds to the transcript's token total (as `SessionStore.stats` counts it)."""
    if event.kind in IN_CONTEXT_KINDS or event.kind == "system" or (
            event.kind == "custom" and event.payload.get("in_context")):
        return event.tokens
    return 0


def build_timeline(session_id: str, events: Sequence[StoredEvent]) -> Timeline:
    """Everything the page shows about views over time, from the session's events in version order."""
    head = events[-1].version if events else 0
    views = _Views(session_id, events)
    starts = sorted({1, *(e.version for e in events if e.kind in BOUNDARY_KINDS)}) if events else []
    epochs = []
    for i, first in enumerate(starts):
        last = starts[i + 1] - 1 if i + 1 < len(starts) else head
        view = views.at(last)
        epochs.append(Epoch(first, last, _members(view)))
    return Timeline(session_id, head, tuple(epochs), tuple(_compactions(events)), _notes(events),
                    _series(events, views, epochs), views.at(head) if events else None)


class _Views:
    """Projections of one in-memory transcript, each version computed once."""

    def __init__(self, session_id: str, events: Sequence[StoredEvent]) -> None:
        self.session_id = session_id
        self.events = events
        self._cache: dict[int, ContextView] = {}

    def at(self, version: int) -> ContextView:
        view = self._cache.get(version)
        if view is None:
            # events are in version order, version i at index i - 1 (forks included: lineages are gap-free)
            view = project(input_from_events(self.session_id, self.events[:version], at=version))
            self._cache[version] = view
        return view


def _left_out(view: ContextView) -> set[int]:
    """Versions of the view's items that the renderer left out of the request (and of its tokens)."""
    return {v for d in view.diagnostics if d.code in _LEFT_OUT for v in d.versions}


def _members(view: ContextView) -> dict[State, Ranges]:
    left_out = _left_out(view)
    states: dict[int, State] = {}
    if view.source.system is not None:
        states[view.source.system.version] = "system"
    for item in view.items:
        state: State
        if item.origin == "summary":
            state = "summary"
        elif item.origin == "scratchpad":
            state = "scratchpad"
        elif item.version in left_out:
            state = "left_out"
        elif item.origin in ("critical", "restored"):
            state = "kept"
        elif item.cleared:
            state = "cleared"
        elif item.rewritten:
            state = "rewritten"
        else:
            state = "verbatim"
        states[item.version] = state
    by_state: dict[State, list[int]] = {}
    for version in sorted(states):
        by_state.setdefault(states[version], []).append(version)
    return {state: _ranges(versions) for state, versions in by_state.items()}


def _ranges(versions: Iterable[int]) -> Ranges:
    """Sorted versions as inclusive runs: 3,4,5,9 → (3,5),(9,9)."""
    runs: list[tuple[int, int]] = []
    for v in versions:
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return tuple(runs)


def _compactions(events: Sequence[StoredEvent]) -> list[CompactionSpan]:
    spans: list[CompactionSpan] = []
    previous_cut = 1
    for event in events:
        if event.kind != "compaction":
            continue
        p = event.payload
        first_kept = int(p["first_kept_version"])
        details = p.get("details") or {}
        summarised = (previous_cut, first_kept - 1) if first_kept > previous_cut else None
        spans.append(CompactionSpan(
            number=len(spans) + 1, version=event.version, created_at=event.created_at, summarised=summarised,
            first_kept=first_kept, restored=tuple(sorted(details.get("restored", ()))),
            critical=tuple(sorted(details.get("critical", ()))), tokens_before=p.get("tokens_before"),
            tokens_after=p.get("tokens_after"), trigger=str(p.get("trigger") or ""),
            strategy=str(p.get("strategy") or ""), summarizer=str(p.get("summarizer") or "")))
        previous_cut = max(previous_cut, first_kept)
    return spans


def _notes(events: Sequence[StoredEvent]) -> dict[int, tuple[MarkerNote, ...]]:
    notes: dict[int, list[MarkerNote]] = {}
    for event in events:
        if event.kind == "prune":
            action: Literal["cleared", "dropped", "rewritten"] = (
                "dropped" if event.payload["mode"] == "drop" else "cleared")
            detail = str(event.payload.get("rule") or "")
        elif event.kind == "rewrite":
            action, detail = "rewritten", str(event.payload.get("language") or "")
        else:
            continue
        for target in targets_of(event):
            notes.setdefault(target, []).append(MarkerNote(event.version, action, event.created_at, detail))
    return {target: tuple(found) for target, found in notes.items()}


def _series(events: Sequence[StoredEvent], views: _Views, epochs: Sequence[Epoch]) -> Series:
    """Tokens at every version: exact projections at both ends of each epoch, and in between the
    end view's own item counts (exact) plus the per-message overheads spread evenly over its items.

    Inside an epoch the view at v holds exactly the end view's items up to v (see the module
    docstring), so only the renderer's fixed costs (a few tokens a message) are interpolated.
    """
    cumulative: list[int] = []
    total = 0
    for event in events:
        total += transcript_tokens(event)
        cumulative.append(total)
    view_tokens: list[int] = []
    for epoch in epochs:
        start, end = views.at(epoch.first), views.at(epoch.last)
        left_out = _left_out(end)
        added = sorted((item.version, item.tokens) for item in end.items
                       if item.version > epoch.first and item.origin == "tail" and item.version not in left_out)
        residual = end.tokens - start.tokens - sum(t for _, t in added)
        index = running = 0
        for v in range(epoch.first, epoch.last + 1):
            while index < len(added) and added[index][0] <= v:
                running += added[index][1]
                index += 1
            share = residual * index // len(added) if added else 0
            view_tokens.append(start.tokens + running + share if v < epoch.last else end.tokens)
    return Series(tuple(cumulative), tuple(view_tokens))
