"""What every model-backed summariser shares: turning a `SummaryRequest` into the one user
message of `prompts.py` under the summariser's token budget.

The providers differ only in how that message is sent and how their errors read; the
prompt, the budget, the section parsing (`clean_summary`) and what the summariser knows of its
model's window (`summarizers.window`: declared, asked of the server, learned from an overflow)
live here once.
"""

from __future__ import annotations

from typing import Any

from ..logs import get_logger
from .base import ContextOverflow, SummarizerError, SummaryRequest
from .prompts import (BRIEF_SYSTEM_PROMPT, SYSTEM_PROMPT, brief_prompt, history_prompt, merge_prompt,
                      serialize_messages, turn_prefix_prompt)
from .window import ModelWindow, learned_from_error

log = get_logger(__name__)


class PromptedSummarizer:
    """Base of the provider summarisers: `prompt(request)` and the `max_tokens` budget.

    Subclasses pass their budgets and name to ``__init__``, send `prompt(request)` their way,
    and may say how their server states its window (`_server_window`).
    """

    def __init__(self, *, name: str, max_tokens: int, system_prompt: str | None, max_retries: int,
                 tool_result_chars: int, tool_input_chars: int, context_window: int | None = None) -> None:
        if context_window is not None and (not isinstance(context_window, int) or context_window < 256):
            raise SummarizerError(f"context_window must be a whole number of tokens ≥ 256, got {context_window!r}")
        self.name = name
        self.max_tokens = max_tokens
        self._system_prompt = system_prompt
        self.max_retries = max_retries
        self.tool_result_chars = tool_result_chars
        self.tool_input_chars = tool_input_chars
        # What is known of the model's window; a declared one is never replaced by the server's.
        self.window: ModelWindow | None = ModelWindow(context_window, "declared") if context_window else None
        self._server_asked = context_window is not None

    @property
    def system_prompt(self) -> str:
        return self._system_prompt if self._system_prompt is not None else SYSTEM_PROMPT

    def system_for(self, request: SummaryRequest) -> str:
        """The system prompt of `request`: the brief one for a small window, unless the user gave theirs."""
        if request.brief and self._system_prompt is None:
            return BRIEF_SYSTEM_PROMPT
        return self.system_prompt

    @property
    def context_window(self) -> int | None:
        """The model's context window in its own tokens, when known (declared or learned)."""
        return self.window.tokens if self.window else None

    def learn_window(self) -> ModelWindow | None:
        """The model's window: declared, else asked of the server once (`_server_window`; a
        server that cannot say is no error: the first overflow that states it teaches it)."""
        if not self._server_asked:
            self._server_asked = True
            try:
                found = self._server_window()
            except Exception as exc:  # noqa: BLE001 - a probe that fails says nothing
                log.info("summarizer_window_unknown", summarizer=self.name, error=str(exc))
                found = None
            if found is not None and self.window is None:
                log.info("summarizer_window", summarizer=self.name, tokens=found.tokens, source=found.source,
                         detail=found.detail)
                self.window = found
        return self.window

    def _server_window(self) -> ModelWindow | None:
        """What the provider's server says of the model's window (None: it does not say)."""
        return None

    def prompt(self, request: SummaryRequest) -> str:
        """The user message for `request`."""
        max_tokens = self._max_tokens(request)
        if request.brief:
            return self._brief(request, max_tokens)
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

    def _brief(self, request: SummaryRequest, max_tokens: int) -> str:
        if request.purpose == "merge" and not request.partials:
            raise SummarizerError("a merge request needs partial summaries (SummaryRequest.partials)")
        conversation = "" if request.purpose == "merge" else serialize_messages(
            request.messages, tool_result_chars=self.tool_result_chars, tool_input_chars=self.tool_input_chars,
            versions=request.versions)
        return brief_prompt(request.purpose, conversation or "(empty)", previous_summary=request.previous_summary,
                            partials=request.partials, modified_files=request.modified_files,
                            instructions=request.instructions, max_tokens=max_tokens)

    def _max_tokens(self, request: SummaryRequest) -> int:
        return max(1, min(self.max_tokens, request.max_tokens or self.max_tokens))

    # ------------------------------------------------------------------ the SDKs' errors as ours

    def _overflowed(self, overflow: ContextOverflow, request: SummaryRequest) -> ContextOverflow:
        """`overflow`, logged, and what it says of the window remembered (unless declared):
        compaction answers it by planning for that window, or by slicing the history."""
        log.info("summary_overflow", summarizer=self.name, tokens=overflow.tokens, limit=overflow.limit,
                 window=overflow.window)
        window = overflow.window or (overflow.limit + self._max_tokens(request) if overflow.limit else None)
        learned = learned_from_error(window, overflow.tokens, request.estimated_tokens, f"{self.name}: {overflow}")
        declared = self.window is not None and self.window.source == "declared"
        if learned is not None and not (declared and learned.tokens > self.window.tokens):  # type: ignore[union-attr]
            self.window = learned
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
