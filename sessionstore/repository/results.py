"""What repository operations return: plain, immutable values shared by both doors."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..compaction.pipeline import CompactionPlan
from ..events import StoredEvent


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append wrote: the session's head after it, and the global position of each event."""

    version: int
    positions: tuple[int, ...]
    session_id: str = ""

    @property
    def versions(self) -> range:
        return range(self.version - len(self.positions) + 1, self.version + 1)


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
