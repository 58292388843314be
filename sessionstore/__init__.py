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

# Importing the package costs nothing until a name is used (PEP 562): `sessionstore --version`
# and `--help` start in a fraction of the time that loading SQLAlchemy, Alembic and the
# summarisers takes. `_EXPORTS` is the public API; the TYPE_CHECKING imports repeat it for type
# checkers and editors, and tests/test_startup.py checks that the two agree.

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".agent": ("COMPACT_TOOL", "awith_overflow_retry", "compaction_tool", "handle_compaction_tool",
               "with_overflow_retry"),
    ".compaction": ("CompactionPlan", "CompactionPolicy", "Skeleton", "ToolCatalog", "ToolSpec", "compaction_steps"),
    ".compaction.skeleton": ("skeleton",),
    ".aio": ("AsyncSessionStore",),
    ".chain": ("ChainBreak",),
    ".errors": ("CheckpointNotFound", "CompactionFailed", "ConcurrencyError", "ConfigurationError", "DatabaseError", "DatabaseReadOnly",
                "DatabaseUnavailable", "DuplicateEvent", "FeedUnavailable", "InvalidEvent", "InvalidQuery", "InvalidSearch", "StatementTimeout",
                "StorageFull", "SchemaNotReady", "SessionErased", "SessionExists", "SessionNotFound",
                "SessionStoreError", "TranscriptError", "UnknownFormat", "VersionOutOfRange", "RecallError",
                "ToolInputError"),
    ".events": ("KINDS", "NewEvent", "StoredEvent", "assistant", "custom", "scratchpad", "system", "tool_call",
                "tool_result", "user"),
    ".projection": ("ContextView", "Diagnostic", "UsageAnchor", "ViewItem"),
    ".repository.faults": ("RetryPolicy",),
    ".repository.feed": ("FeedPage",),
    ".repository.results": ("Conversation", "SearchHit", "SessionPage"),
    ".store": ("AppendResult", "CompactionResult", "SessionInfo", "SessionStats", "SessionStore", "VerifyReport"),
    ".summarizers": ("AsyncSummarizer", "ContextOverflow", "Summarizer", "SummarizerError", "SummaryBatch",
                     "SummaryRequest", "is_context_overflow"),
    ".summarizers.anthropic": ("AnthropicSummarizer",),
    ".summarizers.anthropic_compact": ("AnthropicCompactSummarizer",),
    ".summarizers.compacting": ("NativeCompaction", "ProviderCompactor"),
    ".summarizers.openai": ("OpenAISummarizer",),
    ".summarizers.openai_compact": ("OpenAICompactSummarizer",),
    ".summarizers.offline": ("OfflineSummarizer",),
    ".tokens": ("AnthropicCounter", "HeuristicCounter", "TiktokenCounter", "TokenCounter"),
    ".recall": ("ahandle_recall", "handle_recall", "recall_tool"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted([*_WHERE, "__version__"])


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is not None:
        value = getattr(import_module(module, __name__), name)
    else:  # a submodule (`sessionstore.events`), as an eager package would have it loaded
        try:
            value = import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from .agent import (COMPACT_TOOL, awith_overflow_retry, compaction_tool, handle_compaction_tool,
                        with_overflow_retry)
    from .compaction import CompactionPlan, CompactionPolicy, Skeleton, ToolCatalog, ToolSpec, compaction_steps
    from .compaction.skeleton import skeleton
    from .aio import AsyncSessionStore
    from .chain import ChainBreak
    from .errors import (CheckpointNotFound, CompactionFailed, ConcurrencyError, ConfigurationError, DatabaseError,
                         DatabaseReadOnly, DatabaseUnavailable, DuplicateEvent, FeedUnavailable, InvalidEvent, InvalidQuery, InvalidSearch,
                         StatementTimeout,
                         StorageFull, SchemaNotReady, SessionErased, SessionExists, SessionNotFound,
                         SessionStoreError, TranscriptError, UnknownFormat, VersionOutOfRange, RecallError,
                         ToolInputError)
    from .events import (KINDS, NewEvent, StoredEvent, assistant, custom, scratchpad, system, tool_call,
                         tool_result, user)
    from .projection import ContextView, Diagnostic, UsageAnchor, ViewItem
    from .repository.faults import RetryPolicy
    from .repository.feed import FeedPage
    from .repository.results import Conversation, SearchHit, SessionPage
    from .store import AppendResult, CompactionResult, SessionInfo, SessionStats, SessionStore, VerifyReport
    from .summarizers import (AsyncSummarizer, ContextOverflow, Summarizer, SummarizerError, SummaryBatch,
                              SummaryRequest, is_context_overflow)
    from .summarizers.anthropic import AnthropicSummarizer
    from .summarizers.anthropic_compact import AnthropicCompactSummarizer
    from .summarizers.compacting import NativeCompaction, ProviderCompactor
    from .summarizers.openai import OpenAISummarizer
    from .summarizers.openai_compact import OpenAICompactSummarizer
    from .summarizers.offline import OfflineSummarizer
    from .tokens import AnthropicCounter, HeuristicCounter, TiktokenCounter, TokenCounter
    from .recall import ahandle_recall, handle_recall, recall_tool
