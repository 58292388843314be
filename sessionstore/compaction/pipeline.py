"""The compaction pipeline: cheapest first, until the view fits (DESIGN §6).

**The invariant.** A plan's `view_after` is within the policy's threshold, measured as the
policy measures it (`window_tokens`), or planning raises `CompactionFailed` and nothing is
recorded. Escalation, cheapest first:

1. levels 1–2: the drop rules, outlines of big code reads and writes, clearing of old
   outputs (an old code read keeps its outline rather than becoming a placeholder); auto
   compaction stops here when they bring the view under the early-exit target;
2. a summary held to `summary_budget`, at the normal cut (`keep_recent_tokens`), with the
   restored files — then without them;
3. a smaller kept tail: the latest cut that fits, down to a single call or message; when
   the cut passes the user's latest message, that message stays in the view, right after
   the summary;
4. oversized items truncated in the view (head and tail, a marker naming the version where
   the full text stays; the transcript keeps everything) — under the early-exit target when
   possible, so that the next reply does not trigger another cut — then a smaller summary,
   down to floors; then the user's latest message leaves the view for the summary's list of
   the user's messages (which keeps the most recent first: it is never dropped); the latest
   todo list or plan leaves the view for the summary (whose history holds it); a summary under
   the usual floor (`TINY_SUMMARY_TOKENS`); last, the summary alone, nothing kept after it, as
   Cline's and Claude Code's own compactions leave the view;
5. `CompactionFailed`: the system prompt, the scratchpad and the smallest summary alone do not fit.

With too little before the recent window to be worth a summary, oversized items are first
truncated without one (no model call) when that suffices.

Every level is judged on what-if projections — the projection is a pure function, so "what
if" is free — with a stand-in summary of the budgeted size, *before* any model call: a
compaction that cannot fit fails for free, the one summary asked for is sized to fit, and
whatever the summariser answers is held to that size with the store's counter.

Planning is the generator `compaction_steps`: it yields the summary requests it needs as
`SummaryBatch`es and is sent their answers. `plan_compaction` drives it with blocking calls;
an async store drives the same generator with `summarizers.drive.adrive`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Final

from .. import events as ev
from ..errors import CompactionFailed, InvalidEvent
from ..events import NewEvent, StoredEvent
from ..projection import ContextView, ProjectionInput, ViewItem, named_versions, project
from ..projection.calibration import calibration_details
from ..projection.fold import REWRITTEN_INPUT_EXTRA_TOKENS
from ..summarizers import bounded
from ..summarizers.base import Summarizer, SummaryBatch, SummaryRequest
from ..summarizers.bounded import fit_list
from ..summarizers.drive import drive
from ..summarizers.typed import typed_messages
from ..summarizers.parse import parse_sections
from ..summarizers.window import ModelWindow
from ..tokens import IMAGE_TOKENS, TokenCounter, count_events, event_text
from .cut import Cut, cut_at, is_user_message, plan_cut, safe_cuts, tail_of
from .files import critical_versions, file_lists, restored_versions
from .pairs import tool_pairs
from .policy import CompactionPolicy
from .prune import CLEAR_RULES, DROP_RULES, PruneDecision, plan_prunes
from .rewrite import RewriteDecision, plan_rewrites
from .summarize import previous_summary, summary_steps, users_section
from .truncate import MIN_ITEM_TOKENS, plan_truncations

Steps = Generator[SummaryBatch, list["str | Exception"], "CompactionPlan"]

# Truncation alone, with no summary, is worth it only when items keep a useful head and tail.
_USEFUL_TRUNCATION_TOKENS: Final = 8 * MIN_ITEM_TOKENS
# A summary is never squeezed below this: the user's latest words and the paths changed, under
# their headings (a summary that small leaves out the headings of empty sections).
MIN_SUMMARY_TOKENS: Final = 64
# Only to reach a view an agent's own compaction reached (a summary of a few dozen tokens, and
# nothing or one call after it): a summary held this small keeps the user's latest words, cut.
TINY_SUMMARY_TOKENS: Final = 16
# A summary's list of the user's messages costs this beside its entries: its heading and a note
# naming the versions of the messages left out.
_USERS_HEADING_TOKENS: Final = 24
# Paths listed to the summariser are held to this share of its context.
_FILES_SHARE: Final = 1 / 16


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
    """What a compaction decided, and the view it leads to (within the threshold, unless it is
    a manual compaction of a view that was already within it and is left so)."""

    events: tuple[NewEvent, ...]
    prunes: tuple[PruneDecision, ...]
    rewrites: tuple[RewriteDecision, ...]
    tokens_before: int
    tokens_after_prune: int
    tokens_after: int
    summarized: bool
    early_exit: bool
    first_kept_version: int | None
    summarizer_calls: int
    reason: str
    view_after: ContextView
    truncations: tuple[RewriteDecision, ...] = ()
    # The last escalation step the plan needed: "early_exit", "markers", "truncate_only", "summary",
    # "no_restore", "smaller_tail", "truncate", "small_summary" or "summary_alone".
    escalation: str = "markers"

    @property
    def stalled(self) -> bool:
        """Always False: a compaction fits or raises `CompactionFailed` (kept for callers of the
        old stall report)."""
        return False


def _stored(events: Sequence[NewEvent], view: ContextView, counts: Sequence[int]) -> list[StoredEvent]:
    now = datetime.now(timezone.utc)
    return [StoredEvent(e.event_id, view.session_id, view.version + 1 + i, 0, e.kind, dict(e.payload),
                        dict(e.meta), n, e.created_at or now) for i, (e, n) in enumerate(zip(events, counts))]


def provisional(events: Sequence[NewEvent], view: ContextView, counter: TokenCounter) -> list[StoredEvent]:
    """`events` as they will be stored right after `view`'s version (for what-if projections)."""
    return _stored(events, view, count_events(counter, [(e.kind, e.payload) for e in events]))


def what_if(view: ContextView, events: Sequence[NewEvent], counter: TokenCounter) -> ContextView:
    """The view as it would be with `events` appended."""
    return project(view.source.extended(provisional(events, view, counter)))


class _WhatIf:
    """`what_if` for a plan that tries several layouts: token counts memoised, and a compaction's
    view built from the kept part of the input alone (bisecting the tail, not filtering it)."""

    def __init__(self, view: ContextView, counter: TokenCounter) -> None:
        self.base = view
        self.counter = counter
        self._versions = [e.version for e in view.source.tail]
        self._known = {e.version: e for e in (*view.source.anchored, *view.source.tail)}
        self._counts: dict[str, int] = {}

    def _count(self, events: Sequence[NewEvent]) -> list[int]:
        texts = [event_text(e.kind, e.payload) for e in events]
        missing = list(dict.fromkeys(t for t, _ in texts if t not in self._counts))
        self._counts.update(zip(missing, self.counter.count_many(missing)))
        return [self._counts[t] + images * IMAGE_TOKENS for t, images in texts]

    def view(self, events: Sequence[NewEvent], summary_tokens: int | None = None) -> ContextView:
        """The view with `events` appended; the last one may be a compaction, whose summary then
        counts `summary_tokens` (a stand-in for a summary not written yet)."""
        stored = _stored(events, self.base, self._count(events))
        source = self.base.source
        if not stored or stored[-1].kind != "compaction":
            return project(source.extended(stored))
        compaction = stored[-1]
        if summary_tokens is not None:
            compaction = stored[-1] = replace(compaction, tokens=summary_tokens)
        start = bisect_left(self._versions, compaction.payload["first_kept_version"])
        anchored = tuple(self._known[v] for v in named_versions(compaction) if v in self._known)
        return project(replace(source, version=compaction.version, compaction=compaction, anchored=anchored,
                               tail=(*source.tail[start:], *stored)))


def _prune_event(decision: PruneDecision) -> NewEvent:
    return ev.prune(decision.targets, mode=decision.mode, rule=decision.rule, placeholder=decision.placeholder)


def _rewrite_event(decision: RewriteDecision) -> NewEvent:
    event = ev.rewrite(decision.target_version, field=decision.field, content=decision.content,
                       original_lines=decision.original_lines, language=decision.language)
    if decision.input_key:
        return replace(event, payload={**event.payload, "input_key": decision.input_key})
    return event


def plan_markers(view: ContextView, policy: CompactionPolicy, counter: TokenCounter | None = None) -> Markers:
    """Levels 1 and 2 over the current view (see the module docstring for the order).

    A marker never costs more than what it replaces: an outline that would not be shorter than
    its item, by `counter`, is not made, and an output no longer than the placeholder is not
    cleared (both stay as they are). Without `counter`, outlines are judged by their characters
    alone and the placeholder's cost is estimated."""
    drops = plan_prunes(view.items, policy, rules=DROP_RULES)
    dropped = {v for d in drops for v in d.targets}
    rewrites = plan_rewrites(view.items, policy, dropped)
    if counter is not None and rewrites:
        costs = {item.version: item.tokens for item in view.items}
        rewrites = [r for r, n in zip(rewrites, count_events(counter, [("rewrite", {"content": r.content})
                                                                       for r in rewrites]))
                    if n + (REWRITTEN_INPUT_EXTRA_TOKENS if r.field == "input" else 0) < costs[r.target_version]]
    clears = plan_prunes(view.items, policy, rules=CLEAR_RULES, claimed=dropped | {r.target_version for r in rewrites},
                         marker_tokens=counter.count(policy.placeholder) if counter is not None else None)
    return Markers(tuple(drops), tuple(rewrites), tuple(clears))


def _before_and_kept(view: ContextView, cut: Cut, dropped: set[int]) -> tuple[list[ViewItem], list[ViewItem]]:
    """The current view's items (before any clearing) that leave the view, and those kept."""
    first_kept = cut.first_kept_version
    before = [i for i in view.items if i.version not in dropped and (
        i.origin in ("critical", "restored") or (i.origin == "tail" and i.version < first_kept))]
    kept = [i for i in view.items if i.origin == "tail" and i.version >= first_kept]
    return before, kept


def _last_true(low: int, high: int, holds: Callable[[int], bool]) -> int | None:
    """The largest x in [low, high] for which `holds(x)`, when it holds up to some point and not after."""
    if low > high or not holds(low):
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if holds(middle):
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class _Layout:
    """What a compaction with a summary keeps, decided before the summariser is asked."""

    cut: Cut
    markers: Markers
    restored: list[int]
    critical: list[int]
    pinned: int | None
    truncations: tuple[RewriteDecision, ...]
    summary_tokens: int
    escalation: str
    view: ContextView  # with a stand-in summary of `summary_tokens`

    def events(self, compaction: NewEvent) -> list[NewEvent]:
        return [*self.markers.events(), *map(_rewrite_event, self.truncations), compaction]


class _Planning:
    """The decisions of one compaction, made on what-if views of the current one."""

    def __init__(self, view: ContextView, policy: CompactionPolicy, counter: TokenCounter,
                 previous: str | None = None) -> None:
        self.view = view
        self.policy = policy
        self.counter = counter
        self.previous = previous  # the previous summary as the next one updates it (`previous_summary`)
        self.check_fixed_parts()  # first: a compaction that cannot fit fails before any work
        self.what_if = _WhatIf(view, counter)
        self.markers = plan_markers(view, policy, counter)
        marker_events = self.markers.events()
        self.pruned = self.what_if.view(marker_events) if marker_events else view
        self.tail = tail_of(self.pruned.items)
        dropped = self.markers.dropped
        pairs = tool_pairs(view.items, policy.tools, origins=("tail", "critical"))
        # The todo/plan pairs, found once: which of them a compaction keeps depends on the cut only.
        self.critical_items = [item for pair in pairs if pair.use.category == "critical"
                               for item in (pair.call, pair.result) if item is not None and item.version not in dropped]

    def fits(self, view: ContextView, limit: int | None = None) -> bool:
        return self.policy.window_tokens(view) <= (self.policy.threshold if limit is None else limit)

    def largest_cap(self, low: int, high: int, view_at: Callable[[int], ContextView]) -> int | None:
        """The largest truncation cap in [low, high] whose view fits: under the early-exit target
        when some cap gets there — a view truncated to just under the threshold would be compacted
        again after the next reply, and cut a little more every turn — else under the threshold."""
        def under(limit: int) -> int | None:
            return _last_true(low, high, lambda cap: self.fits(view_at(cap), limit))

        return under(self.policy.early_exit_target) or under(self.policy.threshold)

    def failed(self, reason: str) -> CompactionFailed:
        return CompactionFailed(self.view.session_id, reason, tokens=self.policy.window_tokens(self.view),
                                threshold=self.policy.threshold)

    def check_fixed_parts(self) -> None:
        """The system prompt and the scratchpad are never compacted: they alone must fit."""
        source = self.view.source
        fixed = project(ProjectionInput(source.session_id, source.version, system=source.system,
                                        scratchpad=source.scratchpad))
        if not self.fits(fixed):
            what, never = (("the system prompt and the scratchpad alone take", "neither is ever compacted")
                           if source.scratchpad is not None else ("the system prompt alone takes", "it is never compacted"))
            raise self.failed(f"{what} {self.policy.window_tokens(fixed):,} tokens, over the threshold of "
                              f"{self.policy.threshold:,}; {never}")

    # ------------------------------------------------------------------ layouts

    def _pinned(self, cut: int) -> int | None:
        """The user's latest message, when the cut at tail index `cut` would take it out of the view
        (one the user typed: not an agent's synthetic "Continue if you have next steps…")."""
        latest = next((i for i in reversed(self.pruned.items) if is_user_message(i)
                       and i.origin in ("tail", "critical") and typed_messages([(i.version, i.payload)])), None)
        if latest is None or any(is_user_message(i) for i in self.tail[cut:]):
            return None
        return latest.version

    def layout(self, cut_index: int, *, restore: bool, summary_tokens: int, cap: int | None = None,
               escalation: str, pin: bool = True, plans: bool = True) -> _Layout:
        cut = cut_at(self.tail, cut_index, end=self.view.version + 1)
        first_kept = cut.first_kept_version
        restored: list[int] = []
        if restore:
            before, kept = _before_and_kept(self.view, cut, self.markers.dropped)
            restored = restored_versions(before, kept, self.policy)
        markers = self.markers.sparing(restored)
        pinned = self._pinned(cut_index) if pin else None
        critical = critical_versions(
            [i for i in self.critical_items if i.origin == "critical" or i.version < first_kept],
            [i for i in self.critical_items if i.origin == "tail" and i.version >= first_kept], self.policy) \
            if plans else []
        critical = sorted({*critical, *([pinned] if pinned is not None else [])})
        stand_in = ev.compaction("…", first_kept, details={"critical": critical, "restored": restored,
                                                           **calibration_details(self.view)})
        view = self.what_if.view([*markers.events(), stand_in], summary_tokens)
        truncations: tuple[RewriteDecision, ...] = ()
        if cap is not None:
            truncations = tuple(plan_truncations(view.items, cap, self.counter))
            view = self.what_if.view([*markers.events(), *map(_rewrite_event, truncations), stand_in], summary_tokens)
        return _Layout(cut, markers, restored, critical, pinned, truncations, summary_tokens, escalation, view)

    def truncated_without_summary(self) -> tuple[RewriteDecision, ...] | None:
        """Oversized items truncated in the pruned view, no summary: the largest cap that fits,
        if it leaves items a useful size."""
        biggest = max((i.tokens for i in self.pruned.items), default=0)

        def view_at(cap: int) -> ContextView:
            truncations = plan_truncations(self.pruned.items, cap, self.counter)
            return self.what_if.view([*self.markers.events(), *map(_rewrite_event, truncations)])

        cap = self.largest_cap(_USEFUL_TRUNCATION_TOKENS, biggest, view_at)
        if cap is None:
            return None
        return tuple(plan_truncations(self.pruned.items, cap, self.counter))

    def users_held(self, cut: Cut, size: int) -> int:
        """How many of the user's messages a summary of `size` tokens lists whole when `cut` is
        made: the latest first, beside the heading and a note for the others (an estimate: the
        fit keeps the latest whole before any other)."""
        entries = bounded.bullets(users_section(self.previous, cut.summarised))
        room = size - _USERS_HEADING_TOKENS
        held = 0
        for tokens in reversed(self.counter.count_many([f"- {e}" for e in entries]) if entries else []):
            room -= tokens
            if room < 0:
                break
            held += 1
        return held

    def users_first(self, layout: _Layout, alone: Callable[[int], _Layout]) -> _Layout:
        """`layout`, a summary under its budget beside a kept tail — or the summary alone, at the
        larger size that fits, when it lists more of the user's messages whole: the user's words
        are the last thing a budget cuts, after the kept tail (which the summary covers, the
        user's latest message listed first)."""
        size = _last_true(layout.summary_tokens + 1, self.policy.summary_cap, lambda n: self.fits(alone(n).view))
        if size is None:
            return layout
        roomier = alone(size)
        return roomier if self.users_held(roomier.cut, size) > self.users_held(layout.cut, layout.summary_tokens) \
            else layout

    def grown(self, layout: _Layout, cut_index: int) -> _Layout:
        """`layout` with its summary's budget grown by half the room its view leaves under the
        threshold, up to the policy's `summary_cap` (the other half is left for the work that
        follows): a view half empty holds every user message its summary would have noted."""
        cap = self.policy.summary_cap
        room = self.policy.threshold - self.policy.window_tokens(layout.view)
        size = min(cap, layout.summary_tokens + max(0, room) // 2)
        if size <= layout.summary_tokens:
            return layout
        grown = self.layout(cut_index, restore=bool(layout.restored), summary_tokens=size,
                            escalation=layout.escalation)
        return grown if self.fits(grown.view) else layout

    def choose(self, normal: int | None) -> _Layout:
        """The cheapest layout that fits (see the module docstring), or `CompactionFailed`."""
        budget = self.policy.summary_budget
        floor = min(MIN_SUMMARY_TOKENS, budget)
        tiny = min(TINY_SUMMARY_TOKENS, floor)

        def alone(size: int) -> _Layout:
            return self.layout(len(self.tail), restore=False, summary_tokens=size, escalation="summary_alone",
                               pin=False, plans=False)

        # Cutting at 0 summarises nothing new: it only shrinks the previous summary (one recorded
        # before summaries had a budget), which may be all that is too big.
        cuts = [c for c in safe_cuts(self.tail, at_calls=True) if c > 0 or self.view.compaction is not None]
        if normal is not None:
            layout = self.layout(normal, restore=True, summary_tokens=budget, escalation="summary")
            if self.fits(layout.view):
                return self.grown(layout, normal)
            if layout.restored:
                layout = self.layout(normal, restore=False, summary_tokens=budget, escalation="no_restore")
                if self.fits(layout.view):
                    return self.grown(layout, normal)
            cuts = [c for c in cuts if c > normal]
        if not cuts:
            if normal is None:
                raise self.failed("nothing in the view can be summarised or truncated enough")
            cuts = [normal]
        # A later cut keeps less: the first one that fits keeps the most.
        smallest = self.layout(cuts[-1], restore=False, summary_tokens=budget, escalation="smaller_tail")
        if self.fits(smallest.view):
            found = _last_true(0, len(cuts) - 1, lambda k: not self.fits(self.layout(
                cuts[k], restore=False, summary_tokens=budget, escalation="smaller_tail").view))
            index = 0 if found is None else found + 1
            layout = self.grown(self.layout(cuts[index], restore=False, summary_tokens=budget,
                                            escalation="smaller_tail"), cuts[index])
            # Down to the smallest tail (one call or message), the user's words may go before it.
            return self.users_first(layout, alone) if cuts[index] == cuts[-1] else layout
        last = cuts[-1]
        # Every kept item may already be under the smallest cap: the cap then cuts nothing, and
        # the search still starts there (a range below it would hold no cap at all).
        biggest = max(MIN_ITEM_TOKENS, *(i.tokens for i in smallest.view.items if i.origin != "summary"))

        def with_cap(cap: int, summary: int = budget, pin: bool = True, plans: bool = True) -> _Layout:
            return self.layout(last, restore=False, summary_tokens=summary, cap=cap, escalation="truncate", pin=pin,
                               plans=plans)

        cap = self.largest_cap(MIN_ITEM_TOKENS, biggest, lambda cap: with_cap(cap).view)
        if cap is not None:
            return with_cap(cap)
        summary = _last_true(floor, budget, lambda size: self.fits(with_cap(MIN_ITEM_TOKENS, size).view))
        if summary is not None:
            return self.users_first(replace(with_cap(MIN_ITEM_TOKENS, summary), escalation="small_summary"), alone)
        # Last, the user's latest message leaves the view for the summary's list of the user's
        # messages, which keeps the latest whole before any other; the kept items get what the
        # smallest summary leaves them, and the summary what they leave.
        # The latest todo list or plan the summary covers, kept verbatim after it, goes last: the
        # summary's history still holds it (an agent's own compaction, Codex's or OpenCode's, keeps
        # no such block).
        for plans in (True, False):
            cap = self.largest_cap(MIN_ITEM_TOKENS, biggest, lambda cap: with_cap(cap, floor, False, plans).view)
            if cap is not None:
                summary = _last_true(floor, budget, lambda size: self.fits(with_cap(cap, size, False, plans).view))
                return self.users_first(replace(with_cap(cap, summary or floor, False, plans),
                                                escalation="small_summary"), alone)
        # Then a summary under the usual floor, down to a few words; last, the summary alone with
        # nothing kept after it — as Cline's and Claude Code's own compactions leave the view —
        # at the largest size that fits. Below that no compaction reaches: the system prompt,
        # the wrapper and the smallest summary are all that is left.
        summary = _last_true(tiny, floor - 1,
                             lambda size: self.fits(with_cap(MIN_ITEM_TOKENS, size, False, False).view))
        if summary is not None:
            return self.users_first(replace(with_cap(MIN_ITEM_TOKENS, summary, False, False),
                                            escalation="small_summary"), alone)
        summary = _last_true(tiny, self.policy.summary_cap, lambda size: self.fits(alone(size).view))
        if summary is not None:  # nothing else in the view: the summary may grow to its cap
            return alone(summary)
        smallest = alone(tiny)
        raise self.failed(f"even a {tiny}-token summary alone, nothing kept after it, leaves "
                          f"{self.policy.window_tokens(smallest.view):,} tokens (the summary's wrapper and what the "
                          "view always holds — system prompt, tool schemas — included)")


def _files_for_request(paths: Sequence[str], context: int) -> list[str]:
    """Paths to show the summariser, within a share of its context (first and most recent)."""
    return fit_list(paths, int(context * _FILES_SHARE * 4), "paths")


def summarizer_window() -> Generator[SummaryBatch, list[Any], ModelWindow | None]:
    """What the summariser knows of its model's window (asked once, before any request is
    planned: the driver lets it ask its server; see `summarizers.window`)."""
    (known,) = yield SummaryBatch((), asks_window=True)
    return known if isinstance(known, ModelWindow) else None


def compaction_steps(view: ContextView, *, policy: CompactionPolicy, counter: TokenCounter, summarizer_name: str,
                     trigger: str = "manual", instructions: str | None = None,
                     earlier_users: Sequence[tuple[int, str]] = (),
                     earlier_modified: Sequence[str] | Mapping[str, str] = (),
                     noted_users: Sequence[tuple[int, str]] = (), project: str | None = None) -> Steps:
    """Plan a compaction of `view`: yields the summary requests it needs (`SummaryBatch`), is
    sent their answers (a `str` or the `Exception` raised, each in order), and returns the
    plan. Manual, tool and overflow triggers summarise; ``auto`` stops after pruning and
    rewriting when they bring the view under the early-exit target. Raises `CompactionFailed`
    (before any request) when nothing can bring the view within the threshold.
    `earlier_users` / `earlier_modified`: the user's typed messages (`typed_messages`) and the
    paths changed before an imported compaction (`files.modified_changes`: each with what
    changed; or the paths alone), which replace its summary's list of the user's messages and
    lead the modified files. `noted_users`: the user's typed messages that notes of the previous
    summary's list stand for (`summarize.noted_users`), listed again in their places. `project`:
    the session's working directory, the root the summary's paths are written relative to."""
    if trigger not in ev.TRIGGERS:
        raise InvalidEvent(f"trigger must be one of {', '.join(ev.TRIGGERS)}, got {trigger!r}", field="trigger")
    previous_text = view.compaction.payload["summary"] if view.compaction is not None else None
    planning = _Planning(view, policy, counter, previous_summary(previous_text, earlier_users, noted_users))
    markers, pruned = planning.markers, planning.pruned

    def plan(events: Sequence[NewEvent], after: ContextView, reason: str, *, escalation: str,
             final: Markers = markers, truncations: Sequence[RewriteDecision] = (), summarized: bool = False,
             first_kept: int | None = None, calls: int = 0) -> CompactionPlan:
        return CompactionPlan(tuple(events), (*final.drops, *final.clears), final.rewrites, view.tokens, pruned.tokens,
                              after.tokens, summarized, escalation == "early_exit", first_kept, calls, reason, after,
                              tuple(truncations), escalation)

    window = policy.window_tokens(pruned)
    if trigger == "auto" and window <= policy.early_exit_target:
        return plan(markers.events(), pruned, f"pruning and rewriting brought the view to {window:,} tokens, under "
                                              f"the early-exit target of {policy.early_exit_target:,}: no model call",
                    escalation="early_exit")
    cut = plan_cut(pruned.items, policy.keep_recent_tokens)
    summarisable = sum(item.tokens for item in cut.summarised) if cut is not None else 0
    if cut is None or summarisable < policy.min_summarized_tokens:
        if planning.fits(pruned):
            return plan(markers.events(), pruned, f"only {summarisable:,} tokens lie before the recent window: not "
                                                  "worth a summary", escalation="markers")
        truncations = planning.truncated_without_summary()
        if truncations is not None:
            events = [*markers.events(), *map(_rewrite_event, truncations)]
            after = planning.what_if.view(events)
            return plan(events, after, f"truncated {len(truncations)} oversized item(s) in the view "
                                       f"(versions {', '.join(str(t.target_version) for t in truncations)}): "
                                       f"{view.tokens:,} → {after.tokens:,} tokens, no model call",
                        escalation="truncate_only", truncations=truncations)
    normal = None if cut is None else len(cut.history) + len(cut.turn_prefix)
    layout = planning.choose(normal)
    before, _ = _before_and_kept(view, layout.cut, markers.dropped)
    previous = view.compaction.payload if view.compaction is not None else None
    earlier = (previous or {}).get("details") or {}
    if earlier_modified:
        earlier = {**earlier, "modified_files": [*earlier_modified, *earlier.get("modified_files", ())],
                   "file_changes": {**(earlier_modified if isinstance(earlier_modified, Mapping) else {}),
                                    **(earlier.get("file_changes") or {})}}
    files = file_lists(before, policy, earlier)
    read_files, modified_files = files.read, files.modified
    window = yield from summarizer_window()
    context = window.planning_tokens() if window else policy.summarizer_context_tokens
    base = SummaryRequest(instructions=instructions, read_files=tuple(_files_for_request(read_files, context)),
                          modified_files=tuple(_files_for_request(modified_files, context)), changes=files.changes,
                          project=project)
    # The main summary covers everything that leaves the view, the split turn's start included,
    # so that its user messages land in "All user messages"; the prefix gets a note of its own.
    outcome = yield from summary_steps(
        layout.cut.summarised, layout.cut.turn_prefix, previous=previous["summary"] if previous else None,
        base=base, policy=policy, counter=counter, budget=layout.summary_tokens,
        files_tokens=counter.count("\n".join((*base.read_files, *base.modified_files))), earlier_users=earlier_users,
        noted=noted_users, window=window)
    summarised = layout.cut.summarised
    details = {
        "read_files": read_files,
        "modified_files": modified_files,
        "file_changes": files.changes,
        "restored": layout.restored,
        "critical": layout.critical,
        "sections": [title for title in parse_sections(outcome.text) if title],
        "summarized_versions": [summarised[0].version, summarised[-1].version] if summarised else [],
        "turn_split": bool(layout.cut.turn_prefix),
        "slices": outcome.slices,
        "merge_levels": outcome.merge_levels,
        "summary_budget": layout.summary_tokens,
        "escalation": layout.escalation,
        **({"summarizer_window": outcome.window.as_details()} if outcome.window else {}),
        **({"pinned": layout.pinned} if layout.pinned is not None else {}),
        **({"truncated": [t.target_version for t in layout.truncations]} if layout.truncations else {}),
        **calibration_details(view),
    }
    compaction = ev.compaction(outcome.text, layout.cut.first_kept_version, tokens_before=view.tokens,
                               trigger=trigger, strategy=policy.strategy, summarizer=summarizer_name,
                               details=details, instructions=instructions)
    after = planning.what_if.view(layout.events(compaction))
    if not planning.fits(after):  # the stand-in was the summary's upper bound: only a policy
        raise planning.failed(     # whose measure is not monotone in the view's tokens gets here
            f"the planned view holds {policy.window_tokens(after):,} tokens once the summary is written")
    # A summary that costs more than what it replaces is not recorded, when the markers alone fit
    # (sparing restored files only makes the pruned view bigger: no need to look when it is over).
    if planning.fits(pruned):
        without = planning.what_if.view(layout.markers.events()) if layout.restored else pruned
        if planning.fits(without) and after.tokens >= without.tokens:
            return plan(layout.markers.events(), without, f"a summary would not make the view smaller "
                                                          f"({without.tokens:,} → {after.tokens:,} tokens): "
                                                          "not recorded",
                        escalation="markers", final=layout.markers, calls=outcome.calls)
    compaction = replace(compaction, payload={**compaction.payload, "tokens_after": after.tokens})
    reason = (f"summarised versions {summarised[0].version}–{summarised[-1].version}" if summarised else
              "shrank the previous summary to its budget") + f"; {view.tokens:,} → {after.tokens:,} tokens"
    if layout.escalation != "summary":
        reason += {"no_restore": " (without restoring files)",
                   "smaller_tail": " (with a smaller kept tail)",
                   "truncate": f" (truncated {len(layout.truncations)} oversized item(s) in the view)",
                   "small_summary": f" (truncated items, summary held to {layout.summary_tokens:,} tokens)",
                   "summary_alone": f" (the summary alone, held to {layout.summary_tokens:,} tokens, nothing kept)",
                   }[layout.escalation]
    return plan(layout.events(compaction), after, reason, escalation=layout.escalation, final=layout.markers,
                truncations=layout.truncations, summarized=True, first_kept=layout.cut.first_kept_version,
                calls=outcome.calls)


def plan_compaction(view: ContextView, *, policy: CompactionPolicy, counter: TokenCounter, summarizer: Summarizer,
                    trigger: str = "manual", instructions: str | None = None) -> CompactionPlan:
    """`compaction_steps` driven with blocking summariser calls (a batch in a small thread pool)."""
    return drive(compaction_steps(view, policy=policy, counter=counter, summarizer_name=summarizer.name,
                                  trigger=trigger, instructions=instructions), summarizer)
