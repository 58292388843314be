"""Compaction: the decisions that shrink the context view, recorded as events.

Levels, cheapest first: `prune` (rules), `rewrite` (tree-sitter skeletons), `summarize`
(a model, or the offline extractive summariser, held to a budget), then a smaller kept tail
and `truncate` (oversized items, in the view only), until the view fits. `pipeline` plans
them over the current view; everything here is pure: the summariser calls are requests the
planning yields (`compaction_steps`) and a driver answers.
"""

from .agent import COMPACT_TOOL, compaction_tool, handle_compaction_tool, with_overflow_retry
from .pipeline import CompactionPlan, compaction_steps, plan_compaction
from .policy import PRUNE_RULES, CompactionPolicy
from .skeleton import SUPPORTED_LANGUAGES, Skeleton, detect_language
from .tools import DEFAULT_TOOLS, ToolCatalog, ToolSpec, ToolUse

__all__ = ["COMPACT_TOOL", "DEFAULT_TOOLS", "PRUNE_RULES", "SUPPORTED_LANGUAGES", "CompactionPlan",
           "CompactionPolicy", "Skeleton", "ToolCatalog", "ToolSpec", "ToolUse", "compaction_tool", "detect_language",
           "compaction_steps", "handle_compaction_tool", "plan_compaction", "with_overflow_retry"]
