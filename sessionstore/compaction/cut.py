"""Where to cut: what a summary replaces and what stays verbatim. Pure.

Walk back from the end until `keep_recent_tokens` are kept, then snap to a point where no
tool call is separated from its result (Pi never cuts at a tool result; we also never cut
between a call and its result further on). When the cut lands inside a turn, the turn's
first part gets a summary of its own so that the kept rest still makes sense.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..projection.view import ViewItem


@dataclass(frozen=True, slots=True)
class Cut:
    """`history` is summarised, `turn_prefix` (the start of a split turn) gets its own short
    summary, `kept` stays verbatim from `first_kept_version` on. A cut that keeps nothing (the
    summary alone, as Cline's and Claude Code's own compactions leave it) starts the kept part
    at `end`, the version after the view's last event."""

    history: tuple[ViewItem, ...]
    turn_prefix: tuple[ViewItem, ...]
    kept: tuple[ViewItem, ...]
    end: int | None = None

    @property
    def first_kept_version(self) -> int:
        if self.kept:
            return self.kept[0].version
        if self.end is None:
            raise ValueError("a cut that keeps nothing needs the version after the view's last event")
        return self.end

    @property
    def summarised(self) -> tuple[ViewItem, ...]:
        return self.history + self.turn_prefix


def safe_cuts(tail: Sequence[ViewItem], *, at_calls: bool = False) -> list[int]:
    """Indices where the tail may be cut: a message (or in-context custom) event, with every
    tool call before it answered before it. A call never answered does not block cuts.

    `at_calls` also allows a tool call with every earlier call answered: the kept part then
    starts with the call (rendered as an assistant message of its own). Normal cuts keep whole
    assistant turns; these tighter ones are for a view that must shrink further (a single
    turn of thousands of calls)."""
    kinds = ("message", "custom", "tool_call") if at_calls else ("message", "custom")
    answered_at: dict[str, int] = {}
    for index, item in enumerate(tail):
        if item.kind == "tool_result":
            answered_at.setdefault(str(item.call_id), index)
    open_until = -1  # the last index some call before the cut is still waiting for
    cuts = []
    for index, item in enumerate(tail):
        if index > open_until and item.kind in kinds:
            cuts.append(index)
        if item.kind == "tool_call":
            open_until = max(open_until, answered_at.get(str(item.call_id), -1))
    return cuts


def ideal_cut(tail: Sequence[ViewItem], keep_recent_tokens: int) -> int:
    """The index from which the last `keep_recent_tokens` tokens of the tail begin."""
    kept = 0
    for index in range(len(tail) - 1, -1, -1):
        kept += tail[index].tokens
        if kept >= keep_recent_tokens:
            return index
    return 0


def snap(cuts: Sequence[int], ideal: int) -> int | None:
    """The safe cut at or before `ideal` (keep a little more), else the first after it (a giant
    last turn must not make compaction impossible — Pi's endless loop, PR #1585)."""
    before = [c for c in cuts if 0 < c <= ideal]
    if before:
        return before[-1]
    after = [c for c in cuts if c > ideal]
    return after[0] if after else None


def turn_start(tail: Sequence[ViewItem], cut: int) -> int | None:
    """Index of the user message that opened the turn the cut falls in (None: cut at a turn start)."""
    if is_user_message(tail[cut]):
        return None
    for index in range(cut - 1, -1, -1):
        if is_user_message(tail[index]):
            return index
    return None


def is_user_message(item: ViewItem) -> bool:
    return item.kind == "message" and item.role == "user"


def cut_at(tail: Sequence[ViewItem], cut: int, end: int | None = None) -> Cut:
    """The tail cut at index `cut` (a safe cut): a split turn's start becomes the turn prefix.
    `cut` = `len(tail)` keeps nothing; the kept part then starts at `end`."""
    if cut >= len(tail):
        return Cut(tuple(tail), (), (), end)
    start = turn_start(tail, cut)
    if start is None:
        return Cut(tuple(tail[:cut]), (), tuple(tail[cut:]))
    return Cut(tuple(tail[:start]), tuple(tail[start:cut]), tuple(tail[cut:]))


def tail_of(items: Sequence[ViewItem]) -> list[ViewItem]:
    return [item for item in items if item.origin == "tail"]


def plan_cut(items: Sequence[ViewItem], keep_recent_tokens: int) -> Cut | None:
    """The cut for the current view's tail; None when nothing before the kept part can go."""
    tail = tail_of(items)
    if not tail:
        return None
    cut = snap(safe_cuts(tail), ideal_cut(tail, keep_recent_tokens))
    return None if cut is None else cut_at(tail, cut)
