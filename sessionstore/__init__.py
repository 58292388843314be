"""sessionstore: an event-sourced store for LLM agent sessions.

Every message, tool call and tool result is an immutable event; compaction is recorded as
events too, and the context sent to the model is a projection over them, so any version of
any session can be rebuilt, audited and replayed.

    store = sessionstore.SessionStore()          # $SESSIONSTORE_URL or ./sessionstore.db
    store.migrate()
    sid = store.create_session()
    store.append(sid, [sessionstore.user("fix the bug")])
    request = store.context(sid).to_anthropic()  # before every model call
"""

from .agent import COMPACT_TOOL, awith_overflow_retry, compaction_tool, handle_compaction_tool, with_overflow_retry
from .compaction import CompactionPlan, CompactionPolicy, Skeleton, ToolCatalog, ToolSpec
from .compaction.skeleton import skeleton
from .aio import AsyncSessionStore
from .errors import (CompactionFailed, ConcurrencyError, ConfigurationError, DuplicateEvent, InvalidEvent, SchemaNotReady,
                     SessionErased, SessionExists, SessionNotFound, SessionStoreError, TranscriptError, UnknownFormat,
                     VersionOutOfRange)
from .events import KINDS, NewEvent, StoredEvent, assistant, custom, scratchpad, system, tool_call, tool_result, user
from .projection import ContextView, Diagnostic, UsageAnchor, ViewItem
from .store import AppendResult, CompactionResult, SessionInfo, SessionStats, SessionStore
from .summarizers import (ContextOverflow, Summarizer, SummarizerError, SummaryRequest, is_context_overflow)
from .summarizers.anthropic import AnthropicSummarizer
from .summarizers.offline import OfflineSummarizer
from .tokens import AnthropicCounter, HeuristicCounter, TiktokenCounter, TokenCounter

__version__ = "0.1.0"

__all__ = [
    "COMPACT_TOOL", "KINDS", "AnthropicCounter", "AsyncSessionStore", "AnthropicSummarizer", "AppendResult", "CompactionPlan",
    "CompactionFailed", "CompactionPolicy", "CompactionResult", "ConcurrencyError", "ConfigurationError", "ContextOverflow",
    "ContextView", "Diagnostic", "DuplicateEvent", "HeuristicCounter", "InvalidEvent", "NewEvent",
    "OfflineSummarizer", "SchemaNotReady", "SessionErased", "SessionExists", "SessionInfo", "SessionNotFound", "SessionStats",
    "SessionStore", "SessionStoreError", "Skeleton", "StoredEvent", "Summarizer", "SummarizerError",
    "SummaryRequest", "TiktokenCounter", "TokenCounter", "ToolCatalog", "ToolSpec", "TranscriptError",
    "UnknownFormat", "UsageAnchor", "VersionOutOfRange", "ViewItem", "__version__", "assistant", "awith_overflow_retry",
    "compaction_tool", "custom", "handle_compaction_tool", "is_context_overflow", "scratchpad",
    "skeleton", "system", "tool_call", "tool_result", "user", "with_overflow_retry",
]
