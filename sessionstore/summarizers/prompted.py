"""What every model-backed summariser shares: turning a `SummaryRequest` into the one user
message of `prompts.py` under the summariser's token budget.

The providers differ only in how that message is sent and how their errors read; the
prompt, the budget and the section parsing (`clean_summary`) live here once.
"""

from __future__ import annotations

from typing import Any

from ..logs import get_logger
from .base import ContextOverflow, SummarizerError, SummaryRequest
from .prompts import SYSTEM_PROMPT, history_prompt, merge_prompt, serialize_messages, turn_prefix_prompt

log = get_logger(__name__)


class PromptedSummarizer:
    """Base of the provider summarisers: `prompt(request)` and the `max_tokens` budget.

    Subclasses pass their budgets and name to ``__init__`` and send `prompt(request)` their way.
    """

    def __init__(self, *, name: str, max_tokens: int, system_prompt: str | None, max_retries: int,
                 tool_result_chars: int, tool_input_chars: int) -> None:
        self.name = name
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt if system_prompt is not None else SYSTEM_PROMPT
        self.max_retries = max_retries
        self.tool_result_chars = tool_result_chars
        self.tool_input_chars = tool_input_chars

    def prompt(self, request: SummaryRequest) -> str:
        """The user message for `request`."""
        max_tokens = self._max_tokens(request)
        common: dict[str, Any] = {"instructions": request.instructions, "read_files": list(request.read_files),
                                  "modified_files": list(request.modified_files), "max_tokens": max_tokens}
        if request.purpose == "merge":
            if not request.partials:
                raise SummarizerError("a merge request needs partial summaries (SummaryRequest.partials)")
            return merge_prompt(list(request.partials), previous_summary=request.previous_summary, **common)
        conversation = serialize_messages(request.messages, tool_result_chars=self.tool_result_chars,
                                          tool_input_chars=self.tool_input_chars, versions=request.versions)
        if request.purpose == "turn_prefix":
            return turn_prefix_prompt(conversation or "(empty)", **common)
        if request.purpose != "history":
            raise SummarizerError(f"unknown summary purpose {request.purpose!r}")
        if not conversation and not request.previous_summary:
            raise SummarizerError("nothing to summarise: no messages and no previous summary")
        return history_prompt(conversation or "(no new messages)", previous_summary=request.previous_summary,
                              **common)

    def _max_tokens(self, request: SummaryRequest) -> int:
        return max(1, min(self.max_tokens, request.max_tokens or self.max_tokens))

    # ------------------------------------------------------------------ the SDKs' errors as ours

    def _overflowed(self, overflow: ContextOverflow) -> ContextOverflow:
        """`overflow`, logged: compaction answers it by summarising the history in slices."""
        log.info("summary_overflow", summarizer=self.name, tokens=overflow.tokens, limit=overflow.limit)
        return overflow

    def where(self) -> str:
        """The model and the server its requests go to, as errors name them."""
        provider, _, model = self.name.partition(":")
        client = getattr(self, "client", None)
        url = getattr(client, "base_url", None)
        return f"{provider} model {model!r}" + (f" at {url}" if url else "")

    def _refused(self, exc: BaseException) -> SummarizerError:
        return SummarizerError(f"{self.where()}: the summary request was refused: {exc}")

    def _failed(self, exc: BaseException) -> SummarizerError:
        return SummarizerError(f"{self.where()}: the summary request failed (retryable failures are retried "
                               f"{self.max_retries} times first): {exc}")
