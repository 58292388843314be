"""Property tests of compaction that always fits (issue 7, item 3), on pure planning over
in-memory views (`input_from_events` + `project`): no database, so that many sessions can be
tried — from one event to 50,000 (`test_compaction_fits` plans over 100,000 through the
store), items from a word to several windows, windows from 8k to 1M, every strategy.

An agent is simulated as the README tells agents to work: it appends its session in chunks
and calls `maybe_compact` (here: `plan_compaction` with trigger ``auto`` when the view is over
the threshold) before each model call. After every compaction:
- the view is within the threshold, and is exactly the view the plan predicted;
- the request renders valid (Anthropic and OpenAI shapes);
- no user message after the cut is lost, and the user's latest message is in the view;
- nothing would compact again (the stall guard has nothing to guard: no loop), and a
  compaction that cannot fit raised `CompactionFailed` before any summariser call;
- every summary request fits the summariser's context with room for its answer, including
  when an unbounded summary recorded by an earlier version has to be reduced first.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from hypothesis import HealthCheck, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st

import sessionstore as ss
from sessionstore import CompactionFailed, CompactionPolicy, SummaryRequest
from sessionstore.compaction.pipeline import plan_compaction
from sessionstore.compaction.policy import STRATEGIES
from sessionstore.projection import ContextView, input_from_events, project
from sessionstore.tokens import HeuristicCounter, count_events

from .checks import assert_valid_view

COUNTER = HeuristicCounter()  # chars/4: exact enough, and instant on items of several windows
WINDOWS = (8_000, 8_000, 12_000, 16_000, 32_000, 32_000, 128_000, 200_000, 1_000_000)  # small ones compact more
GIANTS = ("paste", "output", "write", "read")


@dataclass(frozen=True)
class Spec:
    """A generated session: its shape, drawn by hypothesis; its content, from `seed`."""

    window: int
    strategy: str
    turns: int
    seed: int
    giants: tuple[tuple[int, str, float], ...] = ()  # (turn, kind, size in windows)
    chunks: int = 1
    system_share: float = 0.01  # of the threshold; over 1, no compaction can fit
    summarizer_context: int = 150_000
    legacy_summary: float = 0  # in windows: a compaction recorded before summaries had a budget

    def policy(self) -> CompactionPolicy:
        return CompactionPolicy.for_window(self.window, strategy=self.strategy,
                                           summarizer_context_tokens=self.summarizer_context)


def text(tokens: int, tag: str) -> str:
    """About `tokens` tokens (chars/4) that begin and end recognisably."""
    head, tail = f"BEGIN-{tag} ", f" END-{tag}"
    body = max(0, tokens * 4 - len(head) - len(tail))
    return head + ("lorem ipsum dolor sit amet " * (body // 27 + 1))[:body] + tail


def build(spec: Spec) -> list[list[ss.NewEvent]]:
    """The session as the chunks an agent appends between its model calls."""
    rng = random.Random(spec.seed)
    giants = {turn % max(1, spec.turns): (kind, size) for turn, kind, size in spec.giants}
    events: list[ss.NewEvent] = [ss.system(text(max(1, int(spec.policy().threshold * spec.system_share)), "system"))]
    pending: list[str] = []
    for turn in range(spec.turns):
        giant = giants.get(turn)
        big = int(giant[1] * spec.window) if giant else 0
        words = rng.choice((1, 5, 20, 60, 300)) if rng.random() < 0.9 else rng.randint(500, 3_000)
        events.append(ss.user(text(big if giant and giant[0] == "paste" else words, f"u{turn}")))
        if rng.random() < 0.7:
            events.append(ss.assistant(text(rng.choice((3, 15, 80)), f"a{turn}")))
        for call in range(rng.choice((0, 0, 1, 2, 4))):
            cid = f"c{turn}_{call}"
            kind = giant[0] if giant and call == 0 else rng.choice(("Bash", "Read", "Grep", "Write", "TodoWrite"))
            size = rng.choice((1, 30, 400, 2_000))
            tool_input: dict[str, Any] = {"command": f"make step{turn}"}
            if kind in ("Read", "read", "output"):
                tool_input = {"file_path": f"notes/{turn % 7}.txt"}
            elif kind in ("Write", "write"):
                tool_input = {"file_path": f"out/{turn}.txt", "content": text(big or size, f"w{turn}")}
            elif kind == "TodoWrite":
                tool_input = {"todos": [{"content": f"step {turn}", "status": "in_progress"}]}
            name = {"read": "Read", "output": "Bash", "write": "Write", "paste": "Bash"}.get(kind, kind)
            events.append(ss.tool_call(cid, name, tool_input))
            if rng.random() < 0.05:
                continue  # a call never answered
            output = text(big if giant and giant[0] in ("output", "read") and call == 0 else size, f"r{cid}")
            if rng.random() < 0.05:
                pending.append(cid)  # answered late, after the next user message
                continue
            events.append(ss.tool_result(cid, output, is_error=rng.random() < 0.1))
        late = pending[:-1] if rng.random() < 0.5 else list(pending)
        events += [ss.tool_result(cid, "late result") for cid in late]
        pending = [cid for cid in pending if cid not in late]
    size = max(1, len(events) // spec.chunks)
    chunks = [events[i:i + size] for i in range(0, len(events), size)]
    users = [i for i, e in enumerate(chunks[0]) if e.kind == "message" and e.payload["role"] == "user"]
    if spec.legacy_summary and users:
        chunks[0].append(legacy_compaction(users[-1] + 1, min(200_000, int(spec.legacy_summary * spec.window))))
    return chunks


def legacy_compaction(first_kept: int, tokens: int) -> ss.NewEvent:
    """An unbounded summary of about `tokens` tokens, every user message listed, as summaries were
    before issue 7 (kept from a user message on: always a valid cut)."""
    listed = "\n".join(f"- [v{i}] {text(20, f'old{i}')}" for i in range(max(1, tokens // 23)))
    summary = "\n\n".join(f"## {title}\n{listed if title == 'All user messages' else '(none)'}"
                           for title in ss.summarizers.SECTIONS)
    return ss.events.compaction(summary, first_kept, details={"stalled": True})


def stored(events: list[ss.NewEvent], first: int) -> list[ss.StoredEvent]:
    counts = count_events(COUNTER, [(e.kind, e.payload) for e in events])
    now = datetime.now(timezone.utc)
    return [ss.StoredEvent(e.event_id, "s", first + i, first + i, e.kind, dict(e.payload), dict(e.meta), n, now)
            for i, (e, n) in enumerate(zip(events, counts))]


@dataclass
class Counting:
    """The offline summariser, counting the requests it answers."""

    inner: ss.OfflineSummarizer
    calls: int = 0
    name: str = "offline"

    context: int = 150_000  # the policy's summarizer_context_tokens

    def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        assert request_tokens(request) + request.max_tokens <= self.context, "a request overflows the summariser"
        return self.inner.summarize(request)


def request_tokens(request: SummaryRequest) -> int:
    """What a request makes a summariser read (by the test's counter): the history's texts,
    tool inputs and outputs, the previous summary and the partials to merge."""
    texts = [request.previous_summary or "", *request.partials, request.instructions or ""]
    for message in request.messages:
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            texts.append(block.get("text") or json.dumps(block.get("input") or block.get("content") or ""))
    return sum(COUNTER.count(t) for t in texts)


def agent_view(turns: int, seed: int, window: int = 16_000) -> ContextView:
    """The view of a generated session (for tests elsewhere that need a realistic one)."""
    events = [e for chunk in build(Spec(window, "single", turns, seed)) for e in chunk]
    return project(input_from_events("s", stored(events, 1)))


def assert_user_messages_kept(events: list[ss.StoredEvent], view: ContextView) -> None:
    """Every user message from the first kept version on is in the view (maybe truncated: then
    its head and tail are, and the version of the full text); so is the user's latest message."""
    first_kept = view.compaction.payload["first_kept_version"] if view.compaction is not None else 1
    users = [e for e in events if e.kind == "message" and e.payload["role"] == "user"]
    shown = {item.version: item for item in view.items if item.kind == "message"}
    for message in [e for e in users if e.version >= first_kept] + users[-1:]:
        assert message.version in shown, f"user message {message.version} lost"
        item = shown[message.version]
        original = message.payload["content"][0]["text"]
        now = item.payload["content"][0]["text"]
        if item.rewritten:
            assert now.startswith(original[:20]) and now.endswith(original[-8:])
            assert f"the full text is version {message.version} of the transcript" in now
        else:
            assert now == original


def note(label: str) -> None:
    """A label for hypothesis' statistics (`--hypothesis-show-statistics`): which levels ran."""
    if currently_in_test_context():
        event(label)


def live(spec: Spec) -> int:
    """Run the agent over `spec`; returns the number of compactions. Asserts the invariants."""
    policy = spec.policy()
    summarizer = Counting(ss.OfflineSummarizer(), context=policy.summarizer_context_tokens)
    events: list[ss.StoredEvent] = []
    compactions = 0
    for chunk in build(spec):
        events += stored(chunk, len(events) + 1)
        view = project(input_from_events("s", events))
        if not policy.over_threshold(view):
            continue
        calls = summarizer.calls
        try:
            plan = plan_compaction(view, policy=policy, counter=COUNTER, summarizer=summarizer, trigger="auto")
        except CompactionFailed as failed:
            assert summarizer.calls == calls  # decided before any model call: asking again costs nothing
            assert spec.system_share > 1 and "system prompt" in failed.reason
            note("CompactionFailed")
            return compactions
        assert spec.system_share <= 1
        note(f"escalation: {plan.escalation}")
        events += stored(list(plan.events), len(events) + 1)
        after = project(input_from_events("s", events))
        assert after.tokens == plan.view_after.tokens  # the plan's what-if is the real fold
        assert policy.window_tokens(after) <= policy.threshold
        assert not policy.over_threshold(after)  # the next maybe_compact does nothing: no loop
        assert_valid_view(after)
        assert_user_messages_kept(events, after)
        if plan.summarized:
            assert after.compaction is not None and after.compaction.tokens <= policy.summary_cap
        compactions += 1
    return compactions


def specs() -> st.SearchStrategy[Spec]:
    return st.builds(
        Spec,
        window=st.sampled_from(WINDOWS),
        strategy=st.sampled_from(STRATEGIES),
        turns=st.integers(1, 1_500),
        seed=st.integers(0, 2**32),
        giants=st.lists(st.tuples(st.integers(0, 1_500), st.sampled_from(GIANTS), st.floats(0.05, 3.0)),
                        max_size=4).map(tuple),
        chunks=st.integers(1, 5),
        system_share=st.sampled_from((0.01, 0.01, 0.01, 0.05, 0.2, 0.4, 1.5)),
        summarizer_context=st.sampled_from((8_000, 40_000, 150_000)),
        legacy_summary=st.sampled_from((0, 0, 0, 0.5, 4.0)),
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=specs())
@example(spec=Spec(8_000, "single", 1, 0))  # a single exchange
@example(spec=Spec(8_000, "sequential-rolling", 2, 1, giants=((1, "paste", 3.0),)))  # the latest message alone too big
@example(spec=Spec(8_000, "parallel-stitch", 12_500, 2, giants=((12_000, "output", 2.5),)))  # 50,000 events
@example(spec=Spec(32_000, "sequential-rolling", 200, 4, chunks=3, summarizer_context=8_000, legacy_summary=4.0))
@example(spec=Spec(8_000, "single", 107, 0, summarizer_context=8_000, legacy_summary=4.0))  # only the old summary to cut
@example(spec=Spec(128_000, "single", 289, 293, summarizer_context=8_000))  # one turn bigger than a request
@example(spec=Spec(32_000, "single", 276, 295, summarizer_context=8_000))  # no safe cut (late results) for a request
@example(spec=Spec(1_000_000, "single", 300, 3, giants=((100, "read", 0.9), (250, "write", 1.5)), chunks=2))
def test_compaction_always_fits(spec: Spec) -> None:
    live(spec)


def test_a_long_session_compacts_again_and_again_and_always_fits() -> None:
    """Repeated compactions over one growing session (each updates the previous summary)."""
    assert live(Spec(12_000, "single", 400, 11, giants=((150, "paste", 2.0), (390, "output", 1.2)), chunks=12)) >= 8
