"""What repository operations return: plain, immutable values shared by both doors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..chain import ChainBreak
from ..compaction.pipeline import CompactionPlan
from ..events import StoredEvent
from ..search import marked


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append wrote: the session's head after it, and the global position of each event."""

    version: int
    positions: tuple[int, ...]
    session_id: str = ""

    @property
    def versions(self) -> range:
        return range(self.version - len(self.positions) + 1, self.version + 1)

    def __repr__(self) -> str:  # a batch of thousands of events: the positions' span, not each one
        span = f"{self.positions[0]}..{self.positions[-1]}" if self.positions else "none"
        return (f"AppendResult(session_id={self.session_id!r}, version={self.version}, "
                f"events={len(self.positions)}, positions={span})")


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    created_at: datetime
    metadata: dict[str, Any]
    parent_id: str | None
    fork_version: int | None
    head: int
    erased_at: datetime | None = None
    erase_reason: str | None = None
    # A fork whose inherited history was erased with an ancestor: that ancestor's id (`session()` only).
    erased_ancestor: str | None = None
    # When the session started (its metadata's `started_at`, else its first event, else its
    # creation; fixed at creation) and its last activity (the latest of that and its events' times).
    started_at: datetime | None = None
    last_event_at: datetime | None = None


class SessionPage(list[SessionInfo]):
    """A page of `sessions()`, newest first: a list (callers that iterate it keep working), and
    `cursor`, which `sessions(after=cursor)` continues from (None: nothing more)."""

    def __init__(self, infos: Iterable[SessionInfo] = (), cursor: str | None = None) -> None:
        super().__init__(infos)
        self.cursor = cursor

    def __repr__(self) -> str:
        return f"SessionPage({list.__repr__(self)}, cursor={self.cursor!r})"


@dataclass(frozen=True, slots=True)
class Conversation:
    """What erasing a session reaches: the session, the sessions that are part of it, and its forks.

    A part is a session whose metadata names another as its `parent_session` (an imported
    subagent, the transcript of the agent's own compaction summariser), followed transitively:
    its content belongs to the conversation, so erasing the conversation erases it. A fork
    (`parent_id`) is a separate conversation that inherited history: it keeps its own events,
    and what it inherited from an erased session reads as tombstones.
    """

    session_id: str
    parts: tuple[SessionInfo, ...]  # the session first, then the sessions that belong to it
    forks: tuple[SessionInfo, ...]  # forks of any part, transitively, that are not parts themselves

    @property
    def events(self) -> int:
        return sum(info.head for info in self.parts)


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What `verify` found of one session's chain (its whole lineage, inherited history included).

    `head_link` stands for the whole history up to `head`: kept elsewhere, it also exposes a
    session cut short together with its head (which the chain alone cannot see).
    """

    session_id: str
    head: int
    head_link: str
    events: int  # events checked before the first break (all of them when intact)
    erased: bool
    broken: ChainBreak | None = None

    @property
    def ok(self) -> bool:
        return self.broken is None


@dataclass(frozen=True)
class CompactionResult:
    """A compaction that was carried out (or, with ``dry_run``, only planned).

    `events` are the stored prune, rewrite and compaction events (provisional ones for a dry
    run); `stalled` says the view is still above the threshold or barely smaller — reported,
    never retried in a loop.
    """

    session_id: str
    trigger: str
    events: tuple[StoredEvent, ...]
    plan: CompactionPlan
    dry_run: bool = False

    @property
    def compaction(self) -> StoredEvent | None:
        return next((e for e in self.events if e.kind == "compaction"), None)

    @property
    def tokens_before(self) -> int:
        return self.plan.tokens_before

    @property
    def tokens_after(self) -> int:
        return self.plan.tokens_after

    @property
    def stalled(self) -> bool:
        return self.plan.stalled

    @property
    def early_exit(self) -> bool:
        return self.plan.early_exit

    @property
    def reason(self) -> str:
        return self.plan.reason

    def __repr__(self) -> str:
        """Short: the figures, not the events (a summary and its history can be megabytes)."""
        kinds = ", ".join(f"{kind}×{n}" for kind, n in Counter(e.kind for e in self.events).items()) or "nothing"
        flags = "".join(f", {flag}" for flag in ("dry_run", "stalled", "early_exit") if getattr(self, flag))
        return (f"CompactionResult({self.session_id!r}, {self.trigger}, {self.tokens_before:,}→{self.tokens_after:,} "
                f"tokens, {kinds}{flags})")


@dataclass(frozen=True, slots=True)
class SessionStats:
    """Transcript against view: what compaction saved, and what it did."""

    session_id: str
    version: int
    events: int
    transcript_tokens: int
    view_tokens: int
    by_kind: dict[str, tuple[int, int]]  # kind → (events, tokens)
    compactions: int
    pruned: int
    rewritten: int
    messages_in_view: int
    diagnostics: int
    # The provider's count of the view (its last usage report, plus our estimate of what followed,
    # `ContextView.window_estimate`); None when the session never reported usage.
    provider_tokens: int | None = None
    provider_basis: str | None = None

    def __repr__(self) -> str:
        return (f"SessionStats(session_id={self.session_id!r}, version={self.version}, events={self.events}, "
                f"transcript_tokens={self.transcript_tokens:,}, view_tokens={self.view_tokens:,}, "
                f"compactions={self.compactions}, pruned={self.pruned}, rewritten={self.rewritten})")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """An event that matches a search: where it is, and the words that matched in context.

    `snippet` is a window of the event's searched text (one line) and `highlights` the
    (start, end) of each match in it, for the caller to show as it likes (`marked`);
    `score` orders hits (higher is better, comparable within one search only); `tool` is the
    tool's name for a tool call or result. `event` is the whole stored event.
    """

    event: StoredEvent
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    score: float
    tool: str | None = None

    @property
    def session_id(self) -> str:
        return self.event.session_id

    @property
    def version(self) -> int:
        return self.event.version

    @property
    def kind(self) -> str:
        return self.event.kind

    def marked(self, before: str = "[", after: str = "]") -> str:
        """The snippet with each match between `before` and `after`."""
        return marked(self.snippet, self.highlights, before, after)

    def __repr__(self) -> str:  # the snippet, not the whole event it was found in
        return (f"SearchHit(session_id={self.session_id!r}, version={self.version}, kind={self.kind!r}, "
                f"tool={self.tool!r}, snippet={self.marked()[:120]!r})")

    def as_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "version": self.version, "kind": self.kind,
                "event_id": self.event.event_id, "position": self.event.position, "tool": self.tool,
                "created_at": self.event.created_at.isoformat(), "score": self.score, "snippet": self.snippet,
                "highlights": [list(span) for span in self.highlights]}
