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
from .compaction import CompactionPlan, CompactionPolicy, Skeleton, ToolCatalog, ToolSpec, compaction_steps
from .compaction.skeleton import skeleton
from .aio import AsyncSessionStore
from .chain import ChainBreak
from .errors import (CompactionFailed, ConcurrencyError, ConfigurationError, DatabaseError, DatabaseReadOnly,
                     DatabaseUnavailable, DuplicateEvent, InvalidEvent, InvalidSearch, StatementTimeout, StorageFull,
                     SchemaNotReady,
                     SessionErased, SessionExists, SessionNotFound, SessionStoreError, TranscriptError, UnknownFormat,
                     VersionOutOfRange)
from .events import KINDS, NewEvent, StoredEvent, assistant, custom, scratchpad, system, tool_call, tool_result, user
from .projection import ContextView, Diagnostic, UsageAnchor, ViewItem
from .repository.faults import RetryPolicy
from .repository.results import Conversation, SearchHit
from .store import AppendResult, CompactionResult, SessionInfo, SessionStats, SessionStore, VerifyReport
from .summarizers import (AsyncSummarizer, ContextOverflow, Summarizer, SummarizerError, SummaryBatch, SummaryRequest,
                          is_context_overflow)
from .summarizers.anthropic import AnthropicSummarizer
from .summarizers.openai import OpenAISummarizer
from .summarizers.offline import OfflineSummarizer
from .tokens import AnthropicCounter, HeuristicCounter, TiktokenCounter, TokenCounter

from .errors import RecallError
from .recall import ahandle_recall, handle_recall, recall_tool

__version__ = "0.1.0"

__all__ = [
    "COMPACT_TOOL", "KINDS", "AnthropicCounter", "AnthropicSummarizer", "AppendResult", "AsyncSessionStore",
    "AsyncSummarizer", "ChainBreak", "CompactionPlan",
    "CompactionFailed", "CompactionPolicy", "CompactionResult", "ConcurrencyError", "ConfigurationError", "ContextOverflow",
    "ContextView", "Conversation", "DatabaseError", "DatabaseReadOnly", "DatabaseUnavailable", "Diagnostic", "DuplicateEvent", "HeuristicCounter", "InvalidEvent", "InvalidSearch", "NewEvent",
    "OfflineSummarizer", "OpenAISummarizer", "RetryPolicy", "SchemaNotReady", "SearchHit", "SessionErased", "SessionExists", "SessionInfo", "SessionNotFound", "SessionStats",
    "SessionStore", "SessionStoreError", "Skeleton", "StatementTimeout", "StorageFull", "StoredEvent", "Summarizer", "SummarizerError",
    "SummaryBatch", "SummaryRequest", "TiktokenCounter", "TokenCounter", "ToolCatalog", "ToolSpec", "TranscriptError",
    "UnknownFormat", "UsageAnchor", "VerifyReport", "VersionOutOfRange", "ViewItem", "__version__", "assistant",
    "awith_overflow_retry", "compaction_steps", "compaction_tool", "custom", "handle_compaction_tool",
    "is_context_overflow", "scratchpad",
    "skeleton", "system", "tool_call", "tool_result", "user", "with_overflow_retry",
]
__all__ += ["RecallError", "ahandle_recall", "handle_recall", "recall_tool"]
