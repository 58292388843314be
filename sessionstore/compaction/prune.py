"""Level 1: pruning by rules, no model (DESIGN §6.1). Pure: view items in, decisions out.

Each rule is a small function over the current view's tool pairs and returns at most one
decision, recorded as one `prune` event named after the rule. Rules run in order and never
touch what an earlier rule already took, what is already cleared, an excluded tool, or the
items a compaction deliberately kept (critical tools, restored files). An output is never
cleared when its placeholder would cost as much as the output itself (an 8-token result once
became a 13-token marker): it stays as it is.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from ..projection.view import ViewItem
from ..tokens import HeuristicCounter
from .pairs import ToolPair, fresh_versions, protected_from, tool_pairs
from .policy import CompactionPolicy


@dataclass(frozen=True, slots=True)
class PruneDecision:
    rule: str
    mode: str  # "clear_output" | "drop"
    targets: tuple[int, ...]
    placeholder: str = ""
    tokens: int = 0  # what the targets cost in the view now


@dataclass
class _Context:
    items: Sequence[ViewItem]
    policy: CompactionPolicy
    pairs: list[ToolPair]
    claimed: set[int] = field(default_factory=set)
    marker_tokens: int = 0  # what the placeholder costs in the view, a cleared output each

    def open_pairs(self) -> Iterable[ToolPair]:
        """Pairs no earlier rule took, not cleared already, of tools not excluded."""
        for pair in self.pairs:
            if self.policy.tools.is_excluded(pair.name):
                continue
            if any(v in self.claimed for v in pair.versions):
                continue
            if pair.call.cleared or (pair.result is not None and pair.result.cleared):
                continue
            yield pair


def _drop(rule: str, pairs: Sequence[ToolPair]) -> PruneDecision | None:
    if not pairs:
        return None
    targets = tuple(sorted(v for pair in pairs for v in pair.versions))
    tokens = sum(pair.call.tokens + (pair.result.tokens if pair.result else 0) for pair in pairs)
    return PruneDecision(rule, "drop", targets, "", tokens)


def _clear(rule: str, results: Sequence[ViewItem], placeholder: str) -> PruneDecision | None:
    if not results:
        return None
    return PruneDecision(rule, "clear_output", tuple(sorted(r.version for r in results)), placeholder,
                         sum(r.tokens for r in results))


def _all_but_latest(groups: dict[object, list[ToolPair]]) -> list[ToolPair]:
    return [pair for group in groups.values() for pair in group[:-1]]


# --------------------------------------------------------------------------- the rules


def exploratory(ctx: _Context) -> PruneDecision | None:
    """Searches and listings older than the last `exploratory_window` messages: their hits were
    acted on (or not) long ago; the pair is dropped."""
    messages = [i for i, item in enumerate(ctx.items) if item.kind == "message" and item.origin == "tail"]
    window = ctx.policy.exploratory_window
    start = messages[-window] if len(messages) >= window else 0
    return _drop("exploratory", [p for p in ctx.open_pairs()
                                 if p.use.category == "exploratory" and p.call_index < start])


def duplicate_reads(ctx: _Context) -> PruneDecision | None:
    """Reads of the same `{path}:{start}:{count}`: only the latest shows the file as it is."""
    groups: dict[object, list[ToolPair]] = defaultdict(list)
    for pair in ctx.open_pairs():
        if pair.use.category == "read" and pair.use.path:
            groups[pair.use.read_key].append(pair)
    return _drop("duplicate_reads", _all_but_latest(groups))


def duplicate_calls(ctx: _Context) -> PruneDecision | None:
    """The exact same call (name and input) made again: the latest result supersedes the others."""
    groups: dict[object, list[ToolPair]] = defaultdict(list)
    for pair in ctx.open_pairs():
        if pair.use.category != "critical":
            key = (pair.name, json.dumps(pair.call.payload.get("input"), sort_keys=True, ensure_ascii=False))
            groups[key].append(pair)
    return _drop("duplicate_calls", _all_but_latest(groups))


def critical_latest(ctx: _Context) -> PruneDecision | None:
    """Todo lists and plans: each call restates the whole list, so only the latest per tool counts."""
    groups: dict[object, list[ToolPair]] = defaultdict(list)
    for pair in ctx.open_pairs():
        if pair.use.category == "critical":
            groups[pair.name].append(pair)
    return _drop("critical_latest", _all_but_latest(groups))


def old_outputs(ctx: _Context) -> PruneDecision | None:
    """Outputs older than the most recent `prune_protect_tokens` of tool output are cleared, but
    only when at least `prune_minimum_tokens` can go: clearing breaks the prompt cache, so it
    is done in chunks worth the cost."""
    start = protected_from(ctx.items, ctx.policy.prune_protect_tokens)
    candidates = [p.result for p in _clearable(ctx)
                  if p.result is not None and p.result_index is not None and p.result_index < start]
    if sum(r.tokens for r in candidates) < ctx.policy.prune_minimum_tokens:
        return None
    return _clear("old_outputs", candidates, ctx.policy.placeholder)


def keep_recent_results(ctx: _Context) -> PruneDecision | None:
    """Anthropic's clear_tool_uses: all but the `keep_tool_results` most recent outputs are cleared."""
    keep = ctx.policy.keep_tool_results
    if keep is None:
        return None
    results = [p.result for p in _clearable(ctx) if p.result is not None]
    return _clear("keep_recent_results", results[:max(0, len(results) - keep)], ctx.policy.placeholder)


def _clearable(ctx: _Context) -> list[ToolPair]:
    """Pairs whose output may be cleared: not todo lists, not errors — an error is short and says
    what went wrong, which the summary's "errors and fixes" needs most —, and not an output that
    costs no more than the placeholder that would replace it."""
    return [p for p in ctx.open_pairs() if p.result is not None and p.use.category != "critical"
            and not p.result.payload.get("is_error") and p.result.tokens > ctx.marker_tokens]


RULES: Final[dict[str, Callable[[_Context], PruneDecision | None]]] = {
    "exploratory": exploratory,
    "duplicate_reads": duplicate_reads,
    "duplicate_calls": duplicate_calls,
    "critical_latest": critical_latest,
    "old_outputs": old_outputs,
    "keep_recent_results": keep_recent_results,
}


# Rules that remove whole pairs (what they take is redundant), and rules that clear outputs
# (what they take is merely old). The pipeline runs the level-2 rewrite between the two, so
# that an old code read becomes an outline instead of a placeholder.
DROP_RULES: Final = ("exploratory", "duplicate_reads", "duplicate_calls", "critical_latest")
CLEAR_RULES: Final = ("old_outputs", "keep_recent_results")


def plan_prunes(items: Sequence[ViewItem], policy: CompactionPolicy, *, rules: Sequence[str] | None = None,
                claimed: Iterable[int] = (), marker_tokens: int | None = None) -> list[PruneDecision]:
    """The prune decisions for the current view, one per rule that found something.

    `rules` limits which of the policy's rules run (in the policy's order); `claimed`
    versions are already taken by another decision and are left alone, and so are the results
    the model has not seen yet (`fresh_versions`). `marker_tokens`: what the policy's
    placeholder costs by the store's counter (the cost its `prune` event will be stored with);
    without it, an estimate (characters / 4, a little above tiktoken's count of the default).
    """
    if marker_tokens is None:
        marker_tokens = HeuristicCounter().count(policy.placeholder)
    ctx = _Context(items, policy, tool_pairs(items, policy.tools), set(claimed), marker_tokens)
    # Fresh pairs still count as the latest of their kind (they supersede older ones): they are
    # taken out of the decisions, not out of the rules' sight.
    fresh = fresh_versions(items)
    tokens = {item.version: item.tokens for item in items}
    decisions = []
    for name in policy.rules:
        if rules is not None and name not in rules:
            continue
        decision = RULES[name](ctx)
        if decision is not None and fresh.intersection(decision.targets):
            targets = tuple(v for v in decision.targets if v not in fresh)
            decision = replace(decision, targets=targets, tokens=sum(tokens.get(v, 0) for v in targets)) \
                if targets else None
        if decision is not None:
            decisions.append(decision)
            ctx.claimed.update(decision.targets)
    return decisions
