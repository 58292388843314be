"""The compaction pipeline: prune, rewrite, then summarise, cheapest first (DESIGN §6).

Level 1 runs in two parts around level 2: the drop rules first (duplicates, stale searches:
redundant), then the rewrite of big code reads and writes into outlines, then the clearing
of old outputs that could not be outlined — an old code read keeps its outline rather than
becoming a placeholder.

Planning is pure apart from the summariser call: the current view in, the events to append
out. Each level's effect is measured by projecting the view as it would be with the planned
events — the projection is a pure function, so "what if" is free — which gives the early
exit (no model call when pruning and rewriting suffice), `tokens_after`, and the stall check.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from .. import events as ev
from ..errors import InvalidEvent
from ..events import NewEvent, StoredEvent
from ..projection import ContextView, ViewItem, project
from ..summarizers.base import Summarizer
from ..summarizers.sections import parse_sections
from ..tokens import TokenCounter, count_events
from .cut import Cut, plan_cut
from .files import critical_versions, file_lists, restored_versions
from .policy import CompactionPolicy
from .prune import CLEAR_RULES, DROP_RULES, PruneDecision, plan_prunes
from .rewrite import RewriteDecision, plan_rewrites
from .summarize import summarize_history


@dataclass(frozen=True)
class Markers:
    """Levels 1 and 2: pairs dropped, outputs rewritten to outlines, old outputs cleared."""

    drops: tuple[PruneDecision, ...]
    rewrites: tuple[RewriteDecision, ...]
    clears: tuple[PruneDecision, ...]

    @property
    def dropped(self) -> set[int]:
        return {v for d in self.drops for v in d.targets}

    def events(self) -> list[NewEvent]:
        return [*map(_prune_event, self.drops), *map(_rewrite_event, self.rewrites), *map(_prune_event, self.clears)]

    def sparing(self, versions: Collection[int]) -> Markers:
        """Without the rewrites and clears of `versions` (files a summary restores verbatim)."""
        spared = set(versions)
        clears = tuple(replace(d, targets=t) for d in self.clears
                       if (t := tuple(v for v in d.targets if v not in spared)))
        return Markers(self.drops, tuple(r for r in self.rewrites if r.target_version not in spared), clears)


@dataclass(frozen=True)
class CompactionPlan:
    """What a compaction decided, and the view it leads to."""

    events: tuple[NewEvent, ...]
    prunes: tuple[PruneDecision, ...]
    rewrites: tuple[RewriteDecision, ...]
    tokens_before: int
    tokens_after_prune: int
    tokens_after: int
    summarized: bool
    early_exit: bool
    stalled: bool
    first_kept_version: int | None
    summarizer_calls: int
    reason: str
    view_after: ContextView


def provisional(events: Sequence[NewEvent], view: ContextView, counter: TokenCounter) -> list[StoredEvent]:
    """`events` as they will be stored right after `view`'s version (for what-if projections)."""
    counts = count_events(counter, [(e.kind, e.payload) for e in events])
    now = datetime.now(timezone.utc)
    return [StoredEvent(e.event_id, view.session_id, view.version + 1 + i, 0, e.kind, dict(e.payload),
                        dict(e.meta), n, e.created_at or now) for i, (e, n) in enumerate(zip(events, counts))]


def what_if(view: ContextView, events: Sequence[NewEvent], counter: TokenCounter) -> ContextView:
    """The view as it would be with `events` appended."""
    return project(view.source.extended(provisional(events, view, counter)))


def _prune_event(decision: PruneDecision) -> NewEvent:
    return ev.prune(decision.targets, mode=decision.mode, rule=decision.rule, placeholder=decision.placeholder)


def _rewrite_event(decision: RewriteDecision) -> NewEvent:
    event = ev.rewrite(decision.target_version, field=decision.field, content=decision.content,
                       original_lines=decision.original_lines, language=decision.language)
    if decision.input_key:
        return replace(event, payload={**event.payload, "input_key": decision.input_key})
    return event


def plan_markers(view: ContextView, policy: CompactionPolicy) -> Markers:
    """Levels 1 and 2 over the current view (see the module docstring for the order)."""
    drops = plan_prunes(view.items, policy, rules=DROP_RULES)
    dropped = {v for d in drops for v in d.targets}
    rewrites = plan_rewrites(view.items, policy, dropped)
    clears = plan_prunes(view.items, policy, rules=CLEAR_RULES,
                         claimed=dropped | {r.target_version for r in rewrites})
    return Markers(tuple(drops), tuple(rewrites), tuple(clears))


def _before_and_kept(view: ContextView, cut: Cut, dropped: set[int]) -> tuple[list[ViewItem], list[ViewItem]]:
    """The current view's items (before any clearing) that leave the view, and those kept."""
    first_kept = cut.first_kept_version
    before = [i for i in view.items if i.version not in dropped and (
        i.origin in ("critical", "restored") or (i.origin == "tail" and i.version < first_kept))]
    kept = [i for i in view.items if i.origin == "tail" and i.version >= first_kept]
    return before, kept


def plan_compaction(view: ContextView, *, policy: CompactionPolicy, counter: TokenCounter, summarizer: Summarizer,
                    trigger: str = "manual", instructions: str | None = None) -> CompactionPlan:
    """Decide a compaction of `view`. Manual, tool and overflow triggers always summarise;
    ``auto`` stops after pruning and rewriting when they bring the view under the early-exit target."""
    if trigger not in ev.TRIGGERS:
        raise InvalidEvent(f"trigger must be one of {', '.join(ev.TRIGGERS)}, got {trigger!r}", field="trigger")
    markers = plan_markers(view, policy)
    pruned_view = what_if(view, markers.events(), counter)

    def finish(final: Markers, extra: list[NewEvent], after: ContextView, **fields: Any) -> CompactionPlan:
        return CompactionPlan(tuple([*final.events(), *extra]), (*final.drops, *final.clears), final.rewrites,
                              view.tokens, pruned_view.tokens, after.tokens, view_after=after, **fields)

    if trigger == "auto" and policy.window_tokens(pruned_view) <= policy.early_exit_target:
        return finish(markers, [], pruned_view, summarized=False, early_exit=True, stalled=False,
                      first_kept_version=None, summarizer_calls=0,
                      reason=f"pruning and rewriting brought the view to {policy.window_tokens(pruned_view)} "
                             f"tokens, under the early-exit target of {policy.early_exit_target}: no model call")
    cut = plan_cut(pruned_view.items, policy.keep_recent_tokens)
    summarisable = sum(item.tokens for item in cut.summarised) if cut is not None else 0
    if cut is None or summarisable < policy.min_summarized_tokens:
        # Decided without a model call, so an agent may ask again every turn at no cost.
        stalled = policy.over_threshold(pruned_view)
        return finish(markers, [], pruned_view, summarized=False, early_exit=False, stalled=stalled,
                      first_kept_version=None, summarizer_calls=0,
                      reason=f"only {summarisable} tokens lie before the recent window: not worth a summary"
                             + (f" — STALLED: the recent turns alone hold {policy.window_tokens(pruned_view)} "
                                f"tokens, over the "
                                f"threshold of {policy.threshold}" if stalled else ""))
    before, kept = _before_and_kept(view, cut, markers.dropped)
    restored = restored_versions(before, kept, policy)
    markers = markers.sparing(restored)
    previous = view.compaction.payload if view.compaction is not None else None
    read_files, modified_files = file_lists(before, policy, (previous or {}).get("details"))
    # The main summary covers everything that leaves the view, the split turn's start included,
    # so that its user messages land in "All user messages"; the prefix gets a note of its own.
    outcome = summarize_history(cut.summarised, cut.turn_prefix,
                                previous=previous["summary"] if previous else None, summarizer=summarizer,
                                policy=policy, instructions=instructions, read_files=read_files,
                                modified_files=modified_files)
    details = {
        "read_files": read_files,
        "modified_files": modified_files,
        "restored": restored,
        "critical": critical_versions(before, kept, policy),
        "sections": [title for title in parse_sections(outcome.text) if title],
        "summarized_versions": [cut.summarised[0].version, cut.summarised[-1].version],
        "turn_split": bool(cut.turn_prefix),
        "slices": outcome.slices,
    }
    compaction = ev.compaction(outcome.text, cut.first_kept_version, tokens_before=view.tokens, trigger=trigger,
                               strategy=policy.strategy, summarizer=summarizer.name, details=details,
                               instructions=instructions)
    after = what_if(view, [*markers.events(), compaction], counter)
    without_summary = what_if(view, markers.events(), counter)  # the same markers, restored files spared
    if after.tokens >= without_summary.tokens:  # a summary that costs more than what it replaces
        return finish(markers, [], without_summary, summarized=False, early_exit=False,
                      stalled=policy.over_threshold(without_summary), first_kept_version=None,
                      summarizer_calls=outcome.calls,
                      reason=f"a summary would not make the view smaller ({without_summary.tokens} → {after.tokens} "
                             "tokens): not recorded")
    stalled = policy.over_threshold(after) or after.tokens >= policy.stall_ratio * view.tokens
    compaction = replace(compaction, payload={**compaction.payload, "tokens_after": after.tokens,
                                              "details": {**details, "stalled": stalled}})
    reason = (f"summarised versions {details['summarized_versions'][0]}–{details['summarized_versions'][1]}; "
              f"{view.tokens} → {after.tokens} tokens")
    if stalled:
        reason += (" — STALLED: still above the threshold" if policy.over_threshold(after)
                   else f" — STALLED: kept {after.tokens / max(1, view.tokens):.0%} of the tokens")
    return finish(markers, [compaction], after, summarized=True, early_exit=False, stalled=stalled,
                  first_kept_version=cut.first_kept_version, summarizer_calls=outcome.calls, reason=reason)
