"""Compaction: the decisions that shrink the context view, recorded as events.

Levels, cheapest first: `prune` (rules), `rewrite` (tree-sitter skeletons), `summarize`
(a model, or the offline extractive summariser, held to a budget), then a smaller kept tail
and `truncate` (oversized items, in the view only), until the view fits. `pipeline` plans
them over the current view; everything here is pure: the summariser calls are requests the
planning yields (`compaction_steps`) and a driver answers. The glue an agent loop needs
around it (the compaction tool, overflow recovery) is `sessionstore.agent`.
"""

from .pipeline import CompactionPlan, compaction_steps, plan_compaction
from .policy import PRUNE_RULES, CompactionPolicy
from .skeleton import SUPPORTED_LANGUAGES, Skeleton, detect_language
from .tools import DEFAULT_TOOLS, ToolCatalog, ToolSpec, ToolUse

__all__ = ["DEFAULT_TOOLS", "PRUNE_RULES", "SUPPORTED_LANGUAGES", "CompactionPlan", "CompactionPolicy", "Skeleton",
           "ToolCatalog", "ToolSpec", "ToolUse", "compaction_steps", "detect_language", "plan_compaction"]
