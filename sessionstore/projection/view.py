"""What a projection is made of: its input and the parts of its result (the view itself,
`ContextView`, assembles them in `context`).

`ProjectionInput` is everything the fold needs, and nothing more: the latest compaction
and, from its first kept version on, the tail (markers included), plus the few events the
compaction names (critical tools, restored files) and the latest system prompt and
scratchpad. The store reads exactly that, so rebuilding a view costs the size of the view,
not of the history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from ..events import StoredEvent

Origin = Literal["summary", "scratchpad", "critical", "restored", "tail"]
# An imported compaction's meta: the events whose content the agent sent again besides the view.
RESENT_KEY: Final = "resent"


@dataclass(frozen=True, slots=True)
class ViewItem:
    """One event as the model sees it now.

    `payload` has prunes and rewrites applied (`marker` names the event that changed it);
    `tokens` is what it costs now: the stored count of the event, or of the marker's text.
    """

    version: int
    kind: str  # message | tool_call | tool_result | custom | summary | scratchpad
    origin: Origin
    payload: Mapping[str, Any]
    tokens: int
    event: StoredEvent
    marker: int | None = None
    cleared: bool = False
    rewritten: bool = False

    @property
    def role(self) -> str:
        if self.kind == "message":
            return str(self.payload["role"])
        return "assistant" if self.kind == "tool_call" else "user"

    @property
    def call_id(self) -> str | None:
        return self.payload.get("call_id") if self.kind in ("tool_call", "tool_result") else None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A repair the renderer made so that the request is valid, or a note about the view."""

    code: str
    message: str
    versions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class UsageAnchor:
    """The provider's count of the latest request whose context the view still holds, the
    response to it, and our count of what the view added since.

    Providers count exactly; we estimate. Anchoring on the last real count and estimating only
    the remainder is what Pi does, and it is far closer than estimating everything. The
    response joins the context at its own reported size (`output`: Codex and Pi report it
    whole, reasoning included) or at our count of it (`response`), whichever is larger —
    Claude Code repeats the usage of the stream's start, with a partial output, on every block.
    """

    version: int  # the event that carries the usage
    reported: int  # the provider's prompt tokens for the request that `start` answered
    after: int  # our count of what the view holds after the request besides the response
    model: str | None = None
    start: int | None = None  # the first event of the response
    output: int = 0  # the provider's output tokens for the response (0: not reported)
    response: int = 0  # our count of the response's events

    @property
    def total(self) -> int:
        """Unscaled: `ContextView.window_estimate()` scales our counts to the provider's."""
        return self.reported + max(self.output, self.response) + self.after

    def scaled(self, ratio: float) -> int:
        """The provider's count of the view, our counts scaled by `ratio` (provider tokens per ours)."""
        return self.reported + max(self.output, round(ratio * self.response)) + round(ratio * self.after)


@dataclass(frozen=True, slots=True)
class WindowEstimate:
    """How many tokens the provider will count for the view, and what the figure rests on.

    `basis`: ``usage`` — the provider's count of the last request plus our scaled estimate of
    what followed; ``calibration`` — no valid anchor (after a compaction, prune or rewrite, or
    for another model): the overhead and ratio learned from the session's own usage reports;
    ``ratio`` — the session never reported usage for the model: our estimate × the fallback ratio.
    """

    tokens: int
    basis: Literal["usage", "calibration", "ratio"]
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ProjectionInput:
    session_id: str
    version: int
    system: StoredEvent | None = None
    compaction: StoredEvent | None = None
    scratchpad: StoredEvent | None = None
    anchored: Sequence[StoredEvent] = ()
    tail: Sequence[StoredEvent] = ()

    def extended(self, events: Sequence[StoredEvent]) -> ProjectionInput:
        """The input as it would be after appending `events` (for planning: what-if views).

        A new compaction among `events` moves the tail start; the events it names are
        looked up in what this input already holds (a compaction only names events of the
        view it was planned from).
        """
        if not any(e.kind in ("compaction", "system", "scratchpad") for e in events):  # a turn's events
            return replace(self, tail=tuple(self.tail) + tuple(events),
                           version=max(self.version, *(e.version for e in events), 0))
        result = self
        tail = list(self.tail)  # one copy for the batch, not one per event
        for index, event in enumerate(events):
            if event.kind == "compaction":
                first_kept = event.payload["first_kept_version"]
                known = {e.version: e for e in (*self.anchored, *self.tail, *events[:index + 1])}
                result = replace(result, compaction=event,
                                 anchored=tuple(known[v] for v in named_versions(event) if v in known))
                tail = [e for e in tail if e.version >= first_kept]
            elif event.kind == "system":
                result = replace(result, system=event)
            elif event.kind == "scratchpad":
                result = replace(result, scratchpad=event)
            tail.append(event)
        return replace(result, tail=tuple(tail), version=max(result.version, *(e.version for e in events), 0))


def advanced(source: ProjectionInput, events: Sequence[StoredEvent]) -> ProjectionInput | None:
    """The incremental step: `source` brought up to the last of `events`, the versions right after
    it, in order — exactly the input a full read at that version returns; None when only a full
    read can say (a compaction or reset moves the tail start and names events this input may not
    hold; a tombstone means an erasure; a gap means the events are not the ones after it).

    Markers fold like any event: a full read collects them from the same tail."""
    if any(e.version != source.version + 1 + i or e.kind == "compaction" or e.erased_at is not None
           for i, e in enumerate(events)):
        return None
    return source.extended(events)


def input_from_events(session_id: str, events: Sequence[StoredEvent], at: int | None = None) -> ProjectionInput:
    """The projection input at version `at` from a session's events in memory (e.g. a transcript
    read from an export): the same input the store reads, for offline replay and audits."""
    version = max((e.version for e in events), default=0) if at is None else at
    upto = [e for e in events if e.version <= version]
    latest: dict[str, StoredEvent] = {}
    for event in upto:
        if event.kind in ("system", "compaction", "scratchpad"):
            latest[event.kind] = event
    compaction = latest.get("compaction")
    first_kept = compaction.payload["first_kept_version"] if compaction is not None else 1
    named = set(named_versions(compaction))
    return ProjectionInput(session_id, version, latest.get("system"), compaction, latest.get("scratchpad"),
                           tuple(e for e in upto if e.version in named),
                           tuple(e for e in upto if e.version >= first_kept))


def named_versions(compaction: StoredEvent | None) -> list[int]:
    """Versions outside the kept tail that a view of `compaction` reads: those it keeps in the
    view (critical tools, restored files: ``details``) and those an agent's imported compaction
    says the agent sent again besides the view (`resent_versions`, which only estimates count)."""
    details = (compaction.payload.get("details") or {}) if compaction is not None else {}
    return sorted({*details.get("critical", ()), *details.get("restored", ()), *resent_versions(compaction)})


def resent_versions(compaction: StoredEvent | None) -> list[int]:
    """The events whose content an agent sent again with its own compaction's summary, besides
    what the view holds (`resent`); [] for any other compaction."""
    return sorted(resent(compaction))


def resent(compaction: StoredEvent | None) -> dict[int, float]:
    """``meta["resent"]`` of an agent's imported compaction, as version → the share of the
    event's stored count that was sent: the importer names each event by its version, or by
    ``[version, share]`` when only part of it was sent (a recorded attachment line holds the
    text sent and structured copies of it). The files Claude Code re-attaches, the messages
    Codex's replacement history keeps: what the agent sends besides the view."""
    named = compaction.meta.get(RESENT_KEY) if compaction is not None else None
    found: dict[int, float] = {}
    for entry in named if isinstance(named, list) else ():
        version, share = entry if isinstance(entry, list) and len(entry) == 2 else (entry, 1.0)
        if _number(version, int) and _number(share, (int, float)) and 0 <= share <= 1:
            found[version] = float(share)
    return found


def _number(value: Any, types: type | tuple[type, ...]) -> bool:
    return isinstance(value, types) and not isinstance(value, bool)
