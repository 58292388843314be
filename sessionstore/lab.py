"""The lab: re-living recorded sessions to measure what the library decides.

- `recorded_calls` walks a recorded session's model calls and gives, for each, the context view
  an agent on this library would have sent and the provider's count of that request — the
  ground truth for token estimates (`scripts/bench_calibration.py`, tests);
- `replay` re-lives a recorded session in a scratch store under a compaction policy, as an
  agent on this library would (`maybe_compact` before each model call), and reports what the
  policy did and what the session would have cost (`sessionstore replay`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from .compaction.policy import CompactionPolicy
from .errors import CompactionFailed
from .events import NewEvent, StoredEvent
from .projection import ContextView, input_from_events, project
from .projection.calibration import Calibration, calibration_details, recorded
from .projection.fold import in_context
from .projection.usage import Report, assistant_side, output_tokens, prompt_tokens, reports, same_response
from .recall import recalled_whole
from .repository.base import is_retraction
from .summarizers.base import SummaryRequest, Summarizer
from .quality import Probe, kept, probes, recall, rendered_text
from .testing import InvalidRequest, validate_request

if TYPE_CHECKING:
    from .repository.results import CompactionResult
    from .store import SessionStore

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
    # Imported compactions carry the calibration already (the importer learns it); older stores'
    # and hand-made ones get it here, as this library's planner would have recorded it.
    compactions = [(i, e) for i, e in enumerate(events) if e.kind == "compaction" and not recorded(e)]
    for report in _reports(events):
        while compactions and compactions[0][1].version < report.start.version:
            i, event = compactions.pop(0)
            before = project(input_from_events(session_id, patched, at=event.version - 1))
            details = {**(event.payload.get("details") or {}), **calibration_details(before)}
            patched[i] = replace(event, payload={**event.payload, "details": details})
        view = project(input_from_events(session_id, patched, at=report.start.version - 1))
        yield RecordedCall(report.start.version, report.model, report.prompt, view)


def _reports(events: Sequence[StoredEvent]) -> Iterator[Report]:
    """The usage reports of a recorded session, compaction by compaction: a response never
    spans a compaction (Codex writes no message id, so that its first call after compacting
    would otherwise read as the continuation of the call before)."""
    segment: list[StoredEvent] = []
    for event in events:
        if event.kind == "compaction":
            yield from reports(segment)
            segment = []
        elif in_context(event):
            segment.append(event)
    yield from reports(segment)


# --------------------------------------------------------------------------- replay

CACHE_READ_PRICE = 0.1  # a cached input token costs a tenth of an uncached one (Anthropic, OpenAI)
# The library's own decisions: the replay makes them again under the policy it measures.
DECISION_KINDS = frozenset({"compaction", "prune", "rewrite"})


@dataclass(frozen=True, slots=True)
class ReplayRow:
    """What one policy did to one re-lived session, and what the session would have cost.

    Token figures are the provider's (simulated: see `replay`), except `compactions`. `billed_cached` is the input
    bill with prompt caching, in uncached-token equivalents: the previous request's prompt is
    read from the cache at `CACHE_READ_PRICE` unless a prune, rewrite or summary changed the
    view since (a changed prefix breaks the cache); cache writes are priced as plain input.
    """

    label: str
    model_calls: int
    compactions: tuple[tuple[int, int], ...]  # view tokens before → after each, our count (the plan's)
    summarizer_calls: int
    peak_view: int
    calls_over_window: int
    invalid_requests: int
    user_messages: tuple[int, int]  # retained in the final view, of all
    modified_files: tuple[int, int]  # named in the final view, of all
    input_tokens: int  # sent over the whole session
    billed_cached: int
    # What the final view still shows of the session (`quality`): per probe class, kept of all.
    survived: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def median_compaction(self) -> tuple[int, int] | None:
        """The median compaction's tokens before → after (by the size it left)."""
        if not self.compactions:
            return None
        return sorted(self.compactions, key=lambda c: c[1])[len(self.compactions) // 2]

    @property
    def worst_compaction(self) -> tuple[int, int] | None:
        """The compaction that left the largest view."""
        return max(self.compactions, key=lambda c: c[1]) if self.compactions else None

    def thrashing(self) -> bool:
        """Compacting more than once every eight model calls (and at least ten times): the window
        or the kept tail is too small for the session, and every compaction breaks the cache."""
        return len(self.compactions) >= 10 and len(self.compactions) * 8 > self.model_calls
    recalled: tuple[int, int] = (0, 0)  # taken items of the final view recalled byte-identical, of all
    native: int = 0  # compactions that carry the provider's own artefact (openai-compact, anthropic-compact)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class _CountingSummarizer:
    """The policy's summariser, counted (a summariser call is a paid model call)."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        if hasattr(inner, "provider"):  # a provider compactor stays one (`ProviderCompactor`)
            self.provider = inner.provider

    def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        return self.inner.summarize(request)


def simulated_provider(session_id: str, events: Sequence[StoredEvent]) -> Calibration | None:
    """The provider's counts as the recorded session's own usage reports describe them: the
    overhead and ratio learned over all its calls (None when it reported none)."""
    last: RecordedCall | None = None
    for last in recorded_calls(session_id, events):
        pass
    if last is None:
        return None
    return last.view.calibrations.get(last.model)


def replay(scratch: SessionStore, session_id: str, events: Sequence[StoredEvent], policy: CompactionPolicy,
           summarizer: Summarizer, *, label: str = "") -> ReplayRow:
    """Re-live the recorded session `events` in `scratch` (a store of throwaway sessions) under `policy`.

    Every in-context event is appended again, in order, without the recorded compactions,
    prunes and rewrites; before each model call the agent calls `maybe_compact`, and the
    request it would send is checked (`validate_request`) and billed. The recorded usage
    describes the recorded context, not the re-lived one: each response instead reports what
    the recorded session's provider would have counted for the re-lived request — the overhead
    and ratio learned from its real reports (`simulated_provider`), else our count.
    """
    provider = simulated_provider(session_id, events)
    counting = _CountingSummarizer(summarizer)
    sid = scratch.create_session(metadata={"replay_of": session_id, "policy": label})
    kept = [e for e in events if in_context(e) and e.kind not in DECISION_KINDS]
    compactions: list[tuple[int, int]] = []
    calls = over = invalid = input_tokens = peak = 0
    billed = 0.0
    previous_prompt = 0
    previous: StoredEvent | None = None
    prompt = 0
    for event in kept:
        if assistant_side(event) and not same_response(previous, event):
            try:
                result = scratch.maybe_compact(sid, policy, counting)
            except CompactionFailed:  # nothing fits the window (the agent's own overhead may not): the
                result = None         # request goes over it, as the agent's would, and is counted so
            if result is not None:
                compactions.append((result.tokens_before, result.tokens_after))
                previous_prompt = 0  # the prefix changed: the cache is broken
            view = scratch.context(sid)
            prompt = provider.predict(view.tokens) if provider is not None else view.tokens
            calls += 1
            input_tokens += prompt
            cached = min(previous_prompt, prompt)
            billed += cached * CACHE_READ_PRICE + prompt - cached
            previous_prompt, peak = prompt, max(peak, prompt)
            over += prompt > policy.context_window
            invalid += not _valid(view)
        previous = event
        scratch.append(sid, _relived(event, prompt), strict=False)
    survived = recall(probes(kept, policy.tools), scratch.context(sid).to_anthropic())
    return ReplayRow(label, calls, tuple(compactions), counting.calls, peak, over, invalid,
                     survived["user_requests"], survived["modified_files"], input_tokens, round(billed), survived,
                     recalled_whole(scratch, sid),
                     sum(1 for e in scratch.events(sid, kinds=("compaction",)) if e.payload.get("native")))


def _relived(event: StoredEvent, prompt: int) -> NewEvent:
    meta = dict(event.meta)
    usage = meta.pop("usage", None)
    if prompt_tokens(usage):  # the simulated provider's count of the re-lived request
        meta["usage"] = {"input_tokens": prompt, "output_tokens": output_tokens(usage), "simulated": True}
    return NewEvent(event.kind, dict(event.payload), meta, created_at=event.created_at)


def _valid(view: ContextView) -> bool:
    if not view.messages:
        return True
    try:
        validate_request({"model": "replay", "max_tokens": 1024, **view.to_anthropic()}, strict=True)
    except InvalidRequest:
        return False
    return True


# --------------------------------------------------------------------------- what survives a compaction

@dataclass(frozen=True, slots=True)
class Judged:
    """One view after a compaction, judged by the probes of the history before it (`quality`)."""

    who: str  # "agent", "ours", "ours #2", "ours #3"; "agent + ours #2", "agent + ours #3"
    version: int  # the compaction event's version (in its own session)
    tokens: int  # the view's tokens (our count)
    recall: dict[str, tuple[int, int]]  # per `quality.KINDS`: kept, of all
    # The user's requests the view just before this compaction showed: still shown after it, of all.
    held: tuple[int, int] = (0, 0)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def judge_compactions(store: SessionStore, session_id: str, version: int, summarizer: Summarizer,
                      *, rounds: int = 3) -> list[Judged]:
    """The agent's own compaction at `version` against ours at the same version, then ours again.

    Ours compacts a fork of the history just before the agent's compaction, under a policy whose
    threshold is the agent's view (the kept tail, the summary and the restored files get shares
    of it, scaled down until our view is no larger than the agent's); rounds 2 and 3 append the
    next part of the recorded session to that fork and compact again under the same limit, and
    are judged by the probes of everything the fork holds then.
    """
    events = store.transcript(session_id)
    before = [e for e in events if e.version < version]
    agent_view = store.context(session_id, at=version)
    shown = _users_shown(before, store.context(session_id, at=version - 1))
    judged = [Judged("agent", version, agent_view.tokens, recall(probes(before), agent_view.to_anthropic()),
                     _held(shown, agent_view))]
    rest = [e for e in events if e.version > version and in_context(e) and e.kind not in DECISION_KINDS]
    fork, view = _ours_within(store, session_id, version, agent_view, summarizer)
    judged.append(Judged("ours", version, view.tokens, recall(probes(before), view.to_anthropic()),
                         _held(shown, view)))
    chunks = _chunks(rest, rounds - 1)
    for round_, chunk in enumerate(chunks, start=2):
        judged.append(_next_round(store, fork, chunk, _within(agent_view, 1.0), summarizer, f"ours #{round_}"))
    return judged


def judge_after_agent(store: SessionStore, session_id: str, version: int, summarizer: Summarizer,
                      *, rounds: int = 3) -> list[Judged]:
    """Ours compacting again after the agent's own compaction at `version`: the next parts of
    the recorded session appended to a fork that holds the agent's view, then compacted (twice,
    with `rounds` 3) by a policy for the smallest common window whose threshold holds the view
    before it (`CompactionPolicy.for_window`): a second and a third compaction over a history
    holding another agent's summary, as a session imported and continued on this library
    would have them. Each is judged by the probes of everything the fork holds then, and by the
    user's requests the view before it showed (`Judged.held`)."""
    events = store.transcript(session_id)
    rest = [e for e in events if e.version > version and in_context(e) and e.kind not in DECISION_KINDS]
    fork = store.fork(session_id, at=version, metadata={"judging": session_id})
    judged = []
    for round_, chunk in enumerate(_chunks(rest, rounds - 1), start=2):
        if chunk:
            store.append(fork, [_copy(e) for e in chunk], strict=False)
        view = store.context(fork)
        needed = view.window_estimate().tokens
        window = next((w for w in _WINDOWS if CompactionPolicy.for_window(w).threshold >= needed), _WINDOWS[-1])
        judged.append(_next_round(store, fork, [], CompactionPolicy.for_window(window), summarizer,
                                  f"agent + ours #{round_}"))
    return judged


# The common windows a judged second compaction may run at (the smallest that holds the view).
_WINDOWS: Final = (8_000, 16_000, 32_000, 60_000, 128_000, 200_000, 400_000, 1_000_000)


def _next_round(store: SessionStore, fork: str, chunk: Sequence[StoredEvent], policy: CompactionPolicy,
                summarizer: Summarizer, who: str) -> Judged:
    """`chunk` appended to `fork`, which is then compacted under `policy` and judged."""
    if chunk:
        store.append(fork, [_copy(e) for e in chunk], strict=False)
    history = [e for e in store.transcript(fork) if e.kind not in DECISION_KINDS or is_retraction(e)]
    shown = _users_shown(history, store.context(fork))
    result = _compact(store, fork, policy, summarizer)
    view = store.context(fork)
    history = [e for e in store.transcript(fork) if e.kind not in DECISION_KINDS or is_retraction(e)]
    at = result.compaction.version if result is not None and result.compaction is not None else view.version
    return Judged(who, at, view.tokens, recall(probes(history), view.to_anthropic()), _held(shown, view))


def _users_shown(history: Sequence[StoredEvent], view: ContextView) -> list[Probe]:
    """The user's requests of `history` that `view` shows."""
    haystack = rendered_text(view.to_anthropic())
    return [p for p in probes(history) if p.kind == "user_requests" and kept(p, haystack)]


def _held(shown: Sequence[Probe], view: ContextView) -> tuple[int, int]:
    haystack = rendered_text(view.to_anthropic())
    return sum(kept(p, haystack) for p in shown), len(shown)


# The threshold's reserve (any will do: only the threshold, `context_window − reserve_tokens`, matters).
_RESERVE: Final = 1_000


def _within(limit: ContextView, factor: float) -> CompactionPolicy:
    """A policy that compacts to a view no larger than `limit` (scaled by `factor` when a try
    came out too large): its threshold is `limit`'s size as the policy measures a view just
    compacted (the provider's count the session's usage calibrates, from the session's first
    overhead: `Calibration.after_compaction`, what `window_tokens` applies to the planned view);
    of it, the summary gets
    ~55%, the kept tail ~30%, restored files ~10%. The summary gets the most: it is what
    carries the history a smaller tail leaves out; and it may grow into the room the view
    leaves, up to the whole limit (`summary_cap_tokens`), as the agent's own summary could.
    Any history is worth a summary here: the agent compacted at this point."""
    budget = max(1, int(limit.tokens * factor))
    calibration = limit.calibrations.get(limit.model)
    threshold = max(2, calibration.after_compaction(budget) if calibration is not None else budget)
    return CompactionPolicy(context_window=threshold + _RESERVE, reserve_tokens=_RESERVE,
                            keep_recent_tokens=min(threshold - 1, max(1, int(budget * 0.3))),
                            summary_max_tokens=max(1, int(budget * 0.55)), summary_cap_tokens=budget,
                            restore_budget_tokens=int(budget * 0.1),
                            restore_max_file_tokens=max(1, int(budget * 0.1)), min_summarized_tokens=0)


def _ours_within(store: SessionStore, session_id: str, version: int, limit: ContextView, summarizer: Summarizer
                 ) -> tuple[str, ContextView]:
    """Our compaction of the history before `version` on a fork, scaled down until its view is no
    larger than `limit`; when no try fits (a kept turn or a plan alone is larger, or the
    compaction fails), the first one that compacted (its tokens say it is larger)."""
    factor = 1.0
    first: tuple[str, ContextView] | None = None
    for _ in range(5):
        fork = store.fork(session_id, at=version - 1, metadata={"judging": session_id})
        compacted = _compact(store, fork, _within(limit, factor), summarizer) is not None
        view = store.context(fork)
        if compacted and view.tokens <= limit.tokens:
            return fork, view
        if compacted:
            first = first or (fork, view)
        factor *= min(0.9, limit.tokens / max(1, view.tokens))
    return first or (fork, view)


def _compact(store: SessionStore, session_id: str, policy: CompactionPolicy, summarizer: Summarizer
             ) -> CompactionResult | None:
    """`store.compact`, None when nothing was compacted or nothing could fit the policy."""
    try:
        return store.compact(session_id, policy, summarizer)
    except CompactionFailed:
        return None


def _chunks(events: Sequence[StoredEvent], parts: int) -> list[list[StoredEvent]]:
    """`events` in `parts` consecutive chunks of about equal length, none ending between a call
    and its result (the last ones may be empty)."""
    if parts <= 0:
        return []
    chunks, start = [], 0
    for n in range(1, parts):
        end = max(start, -(-len(events) * n // parts))
        while 0 < end < len(events) and events[end - 1].kind == "tool_call":
            end += 1
        chunks.append(list(events[start:end]))
        start = end
    return [*chunks, list(events[start:])]


def _copy(event: StoredEvent) -> NewEvent:
    """`event` to append to a fork, without its usage report: the recorded provider counted the
    recorded context, not the fork's compacted one (the fork's policy would take it for the
    size of its view)."""
    meta = {key: value for key, value in event.meta.items() if key != "usage"}
    return NewEvent(event.kind, dict(event.payload), meta, created_at=event.created_at)
