"""sessionstore: an event-sourced store for LLM agent sessions.

Every message, tool call and tool result is an immutable event; compaction is recorded as
events too, and the context sent to the model is a projection over them.
"""

from .errors import (ConcurrencyError, ConfigurationError, DuplicateEvent, InvalidEvent, SchemaNotReady,
                     SessionExists, SessionNotFound, SessionStoreError, TranscriptError, UnknownFormat,
                     VersionOutOfRange)
from .events import (KINDS, NewEvent, StoredEvent, assistant, compaction, custom, prune, rewrite, scratchpad,
                     system, tool_call, tool_result, user)
from .store import AppendResult, SessionInfo, SessionStore
from .tokens import AnthropicCounter, HeuristicCounter, TiktokenCounter, TokenCounter

__version__ = "0.1.0"

__all__ = [
    "KINDS", "AnthropicCounter", "AppendResult", "ConcurrencyError", "ConfigurationError", "DuplicateEvent",
    "HeuristicCounter", "InvalidEvent", "NewEvent", "SchemaNotReady", "SessionExists", "SessionInfo",
    "SessionNotFound", "SessionStore", "SessionStoreError", "StoredEvent", "TiktokenCounter", "TokenCounter",
    "TranscriptError", "UnknownFormat", "VersionOutOfRange", "__version__", "assistant", "compaction", "custom",
    "prune", "rewrite", "scratchpad", "system", "tool_call", "tool_result", "user",
]
