"""What every model-backed summariser shares: turning a `SummaryRequest` into the one user
message of `prompts.py` under the summariser's token budget.

The providers differ only in how that message is sent and how their errors read; the
prompt, the budget and the section parsing (`clean_summary`) live here once.
"""

from __future__ import annotations

import errno
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..logs import get_logger
from .base import ContextOverflow, SummarizerError, SummaryRequest
from .prompts import SYSTEM_PROMPT, history_prompt, merge_prompt, serialize_messages, turn_prefix_prompt

log = get_logger(__name__)
T = TypeVar("T")


class PromptedSummarizer:
    """Base of the provider summarisers: `prompt(request)` and the `max_tokens` budget.

    Subclasses pass their budgets and name to ``__init__`` and send `prompt(request)` their way.
    """

    # Until the server has answered once, a request is sent without the SDK's retries first, so
    # that a refused connection (nothing listens at the URL) fails at once, not after the backoff.
    _reached: bool = False

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

    def _unreachable(self, exc: BaseException) -> SummarizerError:
        return SummarizerError(f"{self.where()}: the connection was refused (nothing listens there: is the server "
                               f"running, is the URL right?); nothing was sent: {exc}")

    # ------------------------------------------------------------------ sending

    def _send(self, client: Any, call: Callable[[Any], T]) -> T:
        """`call(client)`; before the server has answered once, first without the SDK's retries:
        a refused connection fails at once (`_unreachable`), any other retryable failure is then
        sent again under the SDK's retries."""
        if self._reached:
            return call(client)
        try:
            result = call(client.with_options(max_retries=0))
        except self._sdk.APIConnectionError as exc:  # type: ignore[attr-defined]
            if refused(exc):
                raise self._unreachable(exc) from exc
            result = call(client)
        except self._sdk.APIStatusError as exc:  # type: ignore[attr-defined]
            self._reached = True
            if not retried_status(exc.status_code):
                raise
            result = call(client)
        self._reached = True
        return result

    async def _asend(self, client: Any, call: Callable[[Any], Awaitable[T]]) -> T:
        """`_send` for an async client."""
        if self._reached:
            return await call(client)
        try:
            result = await call(client.with_options(max_retries=0))
        except self._sdk.APIConnectionError as exc:  # type: ignore[attr-defined]
            if refused(exc):
                raise self._unreachable(exc) from exc
            result = await call(client)
        except self._sdk.APIStatusError as exc:  # type: ignore[attr-defined]
            self._reached = True
            if not retried_status(exc.status_code):
                raise
            result = await call(client)
        self._reached = True
        return result


def refused(exc: BaseException) -> bool:
    """Whether the failure behind `exc` is a refused connection (the SDKs chain the socket's error)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectionRefusedError) or getattr(current, "errno", None) == errno.ECONNREFUSED:
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def retried_status(status: int) -> bool:
    """The statuses both SDKs retry: 408, 409, 429 and 5xx."""
    return status in (408, 409, 429) or status >= 500
