"""A summariser that asks an Anthropic model, through the official `anthropic` SDK.

One request per summary: the system prompt of `prompts.py`, and one user message holding
the task and the history *serialised as text* — never the history as a live conversation,
so tool pairing or role order in the history cannot make the request invalid.

Retries are the SDK's: 408/409/429 and 5xx (529 overloaded included) and connection errors
are retried `max_retries` times with exponential backoff (0.5 s doubling, capped at 8 s,
with jitter), or after exactly the delay the server gives in `retry-after-ms` /
`retry-after`. What is left after them becomes a `SummarizerError` (the SDK exception
chained), except a request too long for the model, which becomes `ContextOverflow` so that
compaction slices the history and tries again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from ..logs import get_logger

from .base import ContextOverflow, SummarizerError, SummaryRequest, is_context_overflow
from .prompted import PromptedSummarizer
from .prompts import TOOL_INPUT_CHARS, TOOL_RESULT_CHARS
from .parse import parse_sections
from .sections import format_sections
from .window import ModelWindow, stated_limits

if TYPE_CHECKING:
    import anthropic

log = get_logger(__name__)

DEFAULT_MODEL = "claude-haiku-4-5"

# Claude's window where neither the user nor the Models API says otherwise (for `count_tokens`).
CLAUDE_WINDOW: Final = 200_000


def overflow_from_message(message: str) -> ContextOverflow:
    """A `ContextOverflow` with the token figures of the API's message when it has them
    ("prompt is too long: 212000 tokens > 200000 maximum"; "input length and `max_tokens` exceed
    context limit: 188240 + 21333 > 200000")."""
    limits = stated_limits(message)
    return ContextOverflow(message, tokens=limits.tokens, limit=limits.input_limit, window=limits.window)


def _is_overflow(exc: BaseException) -> bool:
    text = f"{exc} {getattr(exc, 'body', '') or ''}".lower()
    return is_context_overflow(exc) or "exceed context limit" in text


def clean_summary(text: str) -> str:
    """The model's answer as a summary with exactly the SECTIONS headings, in order.

    A code fence around the whole answer is removed; the rest — an `<analysis>` scratchpad, a
    `<summary>` wrapper, a one-line preamble ("Here is the summary:"), headings in another
    agent's style — is what `parse_sections` reads for every summary, whoever wrote it.
    """
    text = text.strip()
    if match := re.fullmatch(r"```(?:markdown|md)?\s*\n(.*?)\n```", text, flags=re.DOTALL):
        text = match.group(1)
    return format_sections(parse_sections(text))


class AnthropicSummarizer(PromptedSummarizer):
    """`Summarizer` backed by Claude through the `anthropic` SDK.

    client: an `anthropic.Anthropic` (default: one from the environment, ANTHROPIC_API_KEY…);
        it is used through `with_options(max_retries=max_retries)`.
    async_client: the `anthropic.AsyncAnthropic` of `asummarize` (default: one from the
        environment, created on first use), used the same way.
    model: cheap by default (compaction runs often; users complain about its cost).
    max_tokens: the cap on the summary's length; a request's own `max_tokens` can only lower it.
    system_prompt: replaces `prompts.SYSTEM_PROMPT`.
    max_retries: the SDK's retries of 408/409/429/5xx/529 and connection errors.
    count_tokens: ask `messages.count_tokens` first and raise `ContextOverflow` without sending
        when input + max_tokens would not fit `context_window` (one extra, cheap request).
    context_window: the model's window; None: the Models API's ``max_input_tokens`` for the
        model (asked once), else learned from the first "prompt is too long" (`summarizers.window`).
    tool_result_chars / tool_input_chars: how much of each tool output / input the serialised
        history keeps (head and tail, with a truncation marker).
    """

    def __init__(self, client: anthropic.Anthropic | None = None, *, model: str = DEFAULT_MODEL,
                 max_tokens: int = 8192, system_prompt: str | None = None, max_retries: int = 4,
                 count_tokens: bool = False, context_window: int | None = None,
                 tool_result_chars: int = TOOL_RESULT_CHARS, tool_input_chars: int = TOOL_INPUT_CHARS,
                 async_client: anthropic.AsyncAnthropic | None = None) -> None:
        import anthropic as sdk

        if client is None:
            client = sdk.Anthropic(max_retries=max_retries)
        else:
            client = client.with_options(max_retries=max_retries)
        self._sdk = sdk
        self.client = client
        self.async_client = async_client.with_options(max_retries=max_retries) if async_client is not None else None
        super().__init__(name=f"anthropic:{model}", max_tokens=max_tokens, system_prompt=system_prompt,
                         max_retries=max_retries, tool_result_chars=tool_result_chars,
                         tool_input_chars=tool_input_chars, context_window=context_window)
        self.model = model
        self.count_tokens = count_tokens


    def _server_window(self) -> ModelWindow | None:
        """The Models API's ``max_input_tokens`` for the model."""
        info = self.client.with_options(max_retries=0, timeout=5.0).models.retrieve(self.model)
        tokens = getattr(info, "max_input_tokens", None)
        return ModelWindow(int(tokens), "server", f"GET /v1/models/{self.model}") if tokens else None

    # ------------------------------------------------------------------ the request

    def build_request(self, request: SummaryRequest) -> dict[str, Any]:
        """The keyword arguments of `client.messages.create` for `request`."""
        return {
            "model": self.model,
            "max_tokens": self._max_tokens(request),
            "system": self.system_for(request),
            "messages": [{"role": "user", "content": self.prompt(request)}],
        }

    # ------------------------------------------------------------------ the call

    def summarize(self, request: SummaryRequest) -> str:
        params = self.build_request(request)
        started = time.monotonic()
        with self._errors(request):
            if self.count_tokens:
                self._check_fits(params, self.client.messages.count_tokens(**self._count_params(params)).input_tokens)
            response = self.client.messages.create(**params)
        return self._answer(response, request, params, started)

    async def asummarize(self, request: SummaryRequest) -> str:
        """`summarize` through `AsyncAnthropic`: the same request, errors and cleaning, awaited."""
        client = self._async()
        params = self.build_request(request)
        started = time.monotonic()
        with self._errors(request):
            if self.count_tokens:
                counted = await client.messages.count_tokens(**self._count_params(params))
                self._check_fits(params, counted.input_tokens)
            response = await client.messages.create(**params)
        return self._answer(response, request, params, started)

    def _async(self) -> anthropic.AsyncAnthropic:
        if self.async_client is None:  # created on first use: a sync-only user never builds one
            self.async_client = self._sdk.AsyncAnthropic(max_retries=self.max_retries)
        return self.async_client

    @contextmanager
    def _errors(self, request: SummaryRequest) -> Iterator[None]:
        """SDK errors as ours: a prompt too long → `ContextOverflow`; anything else that is
        left after the SDK's retries → `SummarizerError`, the SDK exception chained."""
        sdk = self._sdk
        try:
            yield
        except ContextOverflow as overflow:  # counted before sending (`count_tokens`)
            raise self._overflowed(overflow, request) from None
        except (sdk.BadRequestError, sdk.ContentTooLargeError) as exc:
            if isinstance(exc, sdk.ContentTooLargeError) or _is_overflow(exc):
                raise self._overflowed(overflow_from_message(getattr(exc, "api_message", None) or str(exc)),
                                       request) from exc
            raise self._refused(exc) from exc
        except sdk.APIError as exc:
            raise self._failed(exc) from exc

    def _answer(self, response: Any, request: SummaryRequest, params: dict[str, Any], started: float) -> str:
        text = "".join(block.text for block in response.content if getattr(block, "type", None) == "text")
        if not text.strip():
            raise SummarizerError(f"{self.name}: the model answered no text (stop_reason={response.stop_reason})")
        usage = response.usage
        log.info("summary_done", model=self.model, purpose=request.purpose,
                 input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                 stop_reason=response.stop_reason, seconds=round(time.monotonic() - started, 3))
        if response.stop_reason == "max_tokens":
            log.warning("summary_truncated", model=self.model, max_tokens=params["max_tokens"])
        return clean_summary(text)

    @staticmethod
    def _count_params(params: dict[str, Any]) -> dict[str, Any]:
        return {"model": params["model"], "system": params["system"], "messages": params["messages"]}

    def _check_fits(self, params: dict[str, Any], input_tokens: int) -> None:
        tokens = int(input_tokens)
        window = self.context_window or CLAUDE_WINDOW
        limit = window - params["max_tokens"]
        if tokens > limit:
            raise ContextOverflow(f"the summary request has {tokens} input tokens, over the {limit} that fit "
                                  f"{window} with max_tokens={params['max_tokens']}",
                                  tokens=tokens, limit=limit, window=window)
