"""The compaction policy: every threshold and rule switch, with defaults from the best peers.

Defaults: Pi (reserve 16,384, keep 20,000 recent tokens), OpenCode (protect the last 40,000
tokens of tool output, prune only when 20,000 are prunable), Claude Code (restore the 5 most
recently read files after a summary, 50,000 tokens at most), Anthropic's clear_tool_uses (keep
the N most recent tool results). All configurable: users complain most about thresholds they
cannot change. The summary has a budget too (`summary_budget`): a summary that grows with the
session would one day outgrow the window it is meant to free.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from ..errors import ConfigurationError
from .tools import ToolCatalog

if TYPE_CHECKING:
    from ..projection import ContextView

Strategy = Literal["single", "parallel-stitch", "sequential-rolling"]
REFERENCE_WINDOW: Final = 200_000
_SCALED: Final = ("reserve_tokens", "keep_recent_tokens", "prune_protect_tokens", "prune_minimum_tokens",
                  "restore_budget_tokens", "restore_max_file_tokens", "min_summarized_tokens")
# The default summary budget: a share of the window (8,000 tokens of 200,000), within bounds.
SUMMARY_WINDOW_SHARE: Final = 1 / 25
# The default cap a summary's budget grows to when the view leaves room: 25,000 tokens of 200,000.
SUMMARY_CAP_SHARE: Final = 1 / 8
MIN_SUMMARY_TOKENS: Final = 512
STRATEGIES: Final = ("single", "parallel-stitch", "sequential-rolling")
PRUNE_RULES: Final = ("exploratory", "duplicate_reads", "duplicate_calls", "critical_latest", "old_outputs",
                      "keep_recent_results")


@dataclass(frozen=True)
class CompactionPolicy:
    """When to compact and how. `threshold` = context_window − reserve_tokens."""

    context_window: int = 200_000
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000
    # Level 1: prune.
    rules: tuple[str, ...] = PRUNE_RULES
    prune_protect_tokens: int = 40_000
    prune_minimum_tokens: int = 20_000
    exploratory_window: int = 10
    keep_tool_results: int | None = None
    placeholder: str = "[Old tool result content cleared; recall read v{version}]"
    tools: ToolCatalog = field(default_factory=ToolCatalog.default)
    # Level 2: rewrite.
    rewrite: bool = True
    rewrite_min_lines: int = 100
    # Level 3: summarise.
    early_exit_ratio: float = 0.75
    strategy: Strategy = "single"
    # The summary's budget; None: `SUMMARY_WINDOW_SHARE` of the window (see `summary_budget`).
    summary_max_tokens: int | None = None
    # What the budget may grow to when the view has room (`summary_cap`); None: `SUMMARY_CAP_SHARE`
    # of the window, or `summary_max_tokens` when that is set (a fixed budget stays fixed).
    summary_cap_tokens: int | None = None
    # Below this, what a summary would replace is not worth a model call (it can cost more than it saves).
    min_summarized_tokens: int = 2_000
    summarizer_context_tokens: int = 150_000
    slice_tokens: int | None = None
    restore_files: int = 5
    restore_budget_tokens: int = 50_000  # and never more than a quarter of the threshold
    restore_max_file_tokens: int = 20_000
    # Provider tokens per estimated token, for views with no provider-reported usage to anchor on.
    # Measured on the shared transcripts (scripts/bench_compaction.py): Claude ≈ 1.3–1.4 against
    # tiktoken's cl100k_base, OpenAI ≈ 1.1. Keep 1.0 when the counter is the provider's own.
    estimate_ratio: float = 1.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in ("int", "int | None") and not (value is None and "None" in f.type) and (
                    not isinstance(value, int) or isinstance(value, bool)):
                raise ConfigurationError(f"{f.name} must be a whole number of tokens, got {value!r}")
            if f.type == "float" and (not isinstance(value, (int, float)) or isinstance(value, bool)):
                raise ConfigurationError(f"{f.name} must be a number, got {value!r}")
        if self.strategy not in STRATEGIES:
            raise ConfigurationError(f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        unknown = set(self.rules) - set(PRUNE_RULES)
        if unknown:
            raise ConfigurationError(f"unknown prune rules {sorted(unknown)}; known: {', '.join(PRUNE_RULES)}")
        if self.reserve_tokens >= self.context_window:
            raise ConfigurationError("reserve_tokens must be smaller than context_window")
        if self.keep_recent_tokens >= self.threshold:
            raise ConfigurationError(
                f"keep_recent_tokens ({self.keep_recent_tokens:,}) must be smaller than the threshold "
                f"context_window − reserve_tokens ({self.threshold:,}), or every compaction stalls; "
                f"CompactionPolicy.for_window({self.context_window}) scales the defaults to a small window")
        if not 0 < self.early_exit_ratio <= 1:
            raise ConfigurationError("early_exit_ratio must be in (0, 1]")
        if not 0.5 <= self.estimate_ratio <= 3:
            raise ConfigurationError("estimate_ratio must be between 0.5 and 3 (provider tokens per estimated token)")
        for name in ("keep_recent_tokens", "prune_protect_tokens", "prune_minimum_tokens",
                     "summarizer_context_tokens", "restore_budget_tokens", "rewrite_min_lines"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name} must be ≥ 0")
        if self.summary_max_tokens is not None and self.summary_max_tokens < 1:
            raise ConfigurationError("summary_max_tokens must be ≥ 1 (or None for a share of the window)")
        if self.summary_cap_tokens is not None and self.summary_cap_tokens < 1:
            raise ConfigurationError("summary_cap_tokens must be ≥ 1 (or None for a share of the window)")

    @classmethod
    def for_window(cls, context_window: int, **overrides: Any) -> CompactionPolicy:
        """Defaults scaled to a model's window: the peers' figures are for 200,000 tokens, and a
        32,000-token model needs a proportionally smaller reserve, kept tail and protected budget."""
        scale = min(1.0, context_window / REFERENCE_WINDOW)
        scaled = {name: max(1, int(getattr(cls, name) * scale)) for name in _SCALED}
        return cls(context_window=context_window, **{**scaled, **overrides})

    @property
    def threshold(self) -> int:
        """Compact when the view holds more than this many tokens."""
        return self.context_window - self.reserve_tokens

    @property
    def summary_budget(self) -> int:
        """Tokens a summary may take: `summary_max_tokens`, else a 25th of the window (8,000 of
        200,000; at least 512, and never more than a quarter of the threshold). Compaction
        lowers it further when the rest of the view leaves less room, and raises it towards
        `summary_cap` when the view leaves more."""
        if self.summary_max_tokens is not None:
            return self.summary_max_tokens
        share = max(MIN_SUMMARY_TOKENS, int(self.context_window * SUMMARY_WINDOW_SHARE))
        return max(1, min(self.threshold // 4, share))

    @property
    def summary_cap(self) -> int:
        """The most a summary's budget grows to when the view leaves room under the threshold
        (`summary_cap_tokens`, else an 8th of the window, never more than half the threshold, or
        `summary_max_tokens` when only that is set); never below `summary_budget`. A summary
        held to a 25th of the window while the view it makes is half empty leaves the user's
        words out for nothing: compaction gives it half the room the view leaves, up to this."""
        if self.summary_cap_tokens is not None:
            cap = self.summary_cap_tokens
        elif self.summary_max_tokens is not None:
            cap = self.summary_max_tokens
        else:
            cap = min(self.threshold // 2, int(self.context_window * SUMMARY_CAP_SHARE))
        return max(self.summary_budget, cap)

    def window_tokens(self, view: ContextView) -> int:
        """How full the model's window is with `view` (`ContextView.window_estimate`): anchored on
        the provider's last count while valid, else the overhead and ratio learned from the
        session's own usage reports, else — a session that never reported usage — our estimate
        scaled by `estimate_ratio`."""
        return view.window_estimate(fallback_ratio=self.estimate_ratio).tokens

    def over_threshold(self, view: ContextView) -> bool:
        return self.window_tokens(view) > self.threshold

    @property
    def early_exit_target(self) -> int:
        """Pruning and rewriting alone are enough when they bring the view under this."""
        return int(self.threshold * self.early_exit_ratio)

    @property
    def effective_slice_tokens(self) -> int:
        return self.slice_tokens or max(1, self.summarizer_context_tokens // 2)

    def with_(self, **changes: Any) -> CompactionPolicy:
        return replace(self, **changes)
