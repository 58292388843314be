"""Compaction: the decisions that shrink the context view, recorded as events.

Levels, cheapest first: `prune` (rules), `rewrite` (tree-sitter skeletons), `summarize`
(a model, or the offline extractive summariser). `pipeline` plans them over the current
view; everything here is pure except the summariser call. The glue an agent loop needs
around it (the compaction tool, overflow recovery) is `sessionstore.agent`.
"""

from .pipeline import CompactionPlan, plan_compaction
from .policy import PRUNE_RULES, CompactionPolicy
from .skeleton import SUPPORTED_LANGUAGES, Skeleton, detect_language
from .tools import DEFAULT_TOOLS, ToolCatalog, ToolSpec, ToolUse

__all__ = ["DEFAULT_TOOLS", "PRUNE_RULES", "SUPPORTED_LANGUAGES", "CompactionPlan", "CompactionPolicy", "Skeleton",
           "ToolCatalog", "ToolSpec", "ToolUse", "detect_language", "plan_compaction"]
