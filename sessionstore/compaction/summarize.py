"""Level 3's model calls: one request, or slices when the history would not fit one.

Strategies (`CompactionPolicy.strategy`):
- ``single``: one request; if it would overflow the summariser's window (estimated, or the
  provider says so), the history is cut into slices that are summarised and merged;
- ``parallel-stitch``: slices summarised concurrently, then one merge request;
- ``sequential-rolling``: each slice updates the running summary (anchored, iterative).
A slice that still overflows is halved, down to single messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ..projection.render import render_anthropic
from ..projection.view import ViewItem
from ..summarizers.base import ContextOverflow, Summarizer, SummarizerError, SummaryRequest
from ..summarizers.sections import format_sections, parse_sections
from .cut import safe_cuts
from .policy import CompactionPolicy

_MAX_HALVINGS = 8
_PARALLEL_WORKERS = 4


@dataclass(frozen=True, slots=True)
class SummaryOutcome:
    text: str
    calls: int
    slices: int


@dataclass
class _Calls:
    summarizer: Summarizer
    count: int = 0

    def __call__(self, request: SummaryRequest) -> str:
        self.count += 1
        return self.summarizer.summarize(request)


def _tokens(items: Sequence[ViewItem]) -> int:
    return sum(item.tokens for item in items)


def _estimate(text: str | None) -> int:
    return len(text or "") // 4


def messages_of(items: Sequence[ViewItem]) -> list[dict]:
    """The items as valid Anthropic-shaped messages: what summarisers read."""
    return render_anthropic(items).messages


def split_slices(items: Sequence[ViewItem], limit: int) -> list[list[ViewItem]]:
    """Consecutive slices of about `limit` tokens, cut only where no tool pair is split."""
    cuts = [c for c in safe_cuts(items) if c > 0] + [len(items)]
    slices: list[list[ViewItem]] = []
    start = 0
    previous_cut = 0
    for cut in cuts:
        if _tokens(items[start:cut]) > limit and previous_cut > start:
            slices.append(list(items[start:previous_cut]))
            start = previous_cut
        previous_cut = cut
    if start < len(items):
        slices.append(list(items[start:]))
    return slices


def _halves(items: Sequence[ViewItem]) -> tuple[list[ViewItem], list[ViewItem]] | None:
    cuts = [c for c in safe_cuts(items) if 0 < c < len(items)]
    if not cuts:
        return None
    middle = min(cuts, key=lambda c: abs(_tokens(items[:c]) - _tokens(items[c:])))
    return list(items[:middle]), list(items[middle:])


def _rolling(call: _Calls, items: Sequence[ViewItem], base: SummaryRequest, depth: int = 0) -> str:
    """Summarise `items` as an update of `base.previous_summary`, halving on overflow."""
    try:
        return call(replace(base, messages=messages_of(items)))
    except ContextOverflow:
        halves = _halves(items) if depth < _MAX_HALVINGS else None
        if halves is None:
            raise
        first = _rolling(call, halves[0], base, depth + 1)
        return _rolling(call, halves[1], replace(base, previous_summary=first), depth + 1)


def _sequential(call: _Calls, slices: Sequence[Sequence[ViewItem]], base: SummaryRequest) -> str:
    running = base.previous_summary
    for piece in slices:
        running = _rolling(call, piece, replace(base, previous_summary=running))
    return running or ""


def _stitch(call: _Calls, slices: Sequence[Sequence[ViewItem]], base: SummaryRequest) -> str:
    requests = [replace(base, previous_summary=base.previous_summary if i == 0 else None)
                for i in range(len(slices))]
    with ThreadPoolExecutor(max_workers=min(_PARALLEL_WORKERS, len(slices))) as pool:
        partials = list(pool.map(lambda pair: _rolling(call, pair[0], pair[1]), zip(slices, requests)))
    if len(partials) == 1:
        return partials[0]
    return call(replace(base, purpose="merge", messages=(), previous_summary=None, partials=tuple(partials)))


def summarize_history(history: Sequence[ViewItem], turn_prefix: Sequence[ViewItem], *, previous: str | None,
                      summarizer: Summarizer, policy: CompactionPolicy, instructions: str | None,
                      read_files: Sequence[str], modified_files: Sequence[str]) -> SummaryOutcome:
    """The new summary: `previous` updated with `history`, plus a note on the split turn's prefix
    (whose events `history` also holds)."""
    call = _Calls(summarizer)
    base = SummaryRequest(previous_summary=previous, instructions=instructions, read_files=tuple(read_files),
                          modified_files=tuple(modified_files), max_tokens=policy.summary_max_tokens)
    slices = 1
    try:
        if not history:
            text = previous or ""
        else:
            fits = _tokens(history) + _estimate(previous) <= policy.summarizer_context_tokens
            pieces = [list(history)] if fits else split_slices(history, policy.effective_slice_tokens)
            slices = len(pieces)
            if policy.strategy == "sequential-rolling":
                text = _sequential(call, pieces, base)
            elif policy.strategy == "parallel-stitch" or len(pieces) > 1:
                text = _stitch(call, pieces, base)
            else:
                try:
                    text = call(replace(base, messages=messages_of(history)))
                except ContextOverflow:
                    pieces = split_slices(history, policy.effective_slice_tokens)
                    if len(pieces) == 1:
                        pieces = list(_halves(history) or [list(history)])
                    slices = len(pieces)
                    text = _stitch(call, pieces, base)
        sections = parse_sections(text)
        if turn_prefix:
            prefix = call(replace(base, purpose="turn_prefix", previous_summary=None,
                                  messages=messages_of(turn_prefix)))
            current = sections.get("Current work", "")
            sections["Current work"] = f"Earlier in the current turn: {prefix.strip()}" + (
                f"\n\n{current}" if current else "")
    except ContextOverflow as exc:
        raise SummarizerError(f"the history could not be summarised even in single messages: {exc}") from exc
    return SummaryOutcome(format_sections(sections), call.count, slices)
