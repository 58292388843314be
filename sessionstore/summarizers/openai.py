"""A summariser that asks an OpenAI-compatible model, through the official `openai` SDK.

Chat Completions by default — the one API every OpenAI-compatible server speaks (vLLM,
Ollama, llama.cpp's server, LM Studio) — and the Responses API with ``api="responses"``.
The request is the same as Anthropic's (`PromptedSummarizer`): the system prompt and one
user message holding the task and the history serialised as text.

Retries are the SDK's (`max_retries`: 408/409/429/5xx and connection errors, honouring
``retry-after``). A request too long for the model (``context_length_exceeded``, "maximum
context length") becomes `ContextOverflow`, which compaction answers by halving the slice.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from ..logs import get_logger
from .anthropic import clean_summary
from .base import ContextOverflow, SummarizerError, SummaryRequest, is_context_overflow
from .prompted import PromptedSummarizer
from .prompts import TOOL_INPUT_CHARS, TOOL_RESULT_CHARS

if TYPE_CHECKING:
    import openai

log = get_logger(__name__)

DEFAULT_MODEL = "gpt-4.1-mini"
_OPENAI_LIMITS = re.compile(r"maximum context length is (\d[\d,]*) tokens.*?(?:resulted in|requested) (\d[\d,]*) tokens",
                            re.IGNORECASE | re.DOTALL)


def _overflow(message: str) -> ContextOverflow:
    if match := _OPENAI_LIMITS.search(message):
        return ContextOverflow(message, tokens=int(match.group(2).replace(",", "")),
                               limit=int(match.group(1).replace(",", "")))
    return ContextOverflow(message)


class OpenAISummarizer(PromptedSummarizer):
    """`Summarizer` backed by any OpenAI-compatible model through the `openai` SDK.

    model: the model name the server knows (a local server's own name for vLLM / Ollama).
    base_url / api_key: default to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (the SDK's own
        defaults); a local server that needs no key still gets a placeholder.
    api: ``"chat"`` (Chat Completions) or ``"responses"`` (the Responses API).
    max_tokens: the cap on the summary's length; a request's own `max_tokens` can only lower it.
    max_retries: the SDK's retries of 408/409/429/5xx and connection errors.
    """

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None, api_key: str | None = None,
                 api: Literal["chat", "responses"] = "chat", *, max_tokens: int = 8192,
                 system_prompt: str | None = None, max_retries: int = 4,
                 tool_result_chars: int = TOOL_RESULT_CHARS, tool_input_chars: int = TOOL_INPUT_CHARS) -> None:
        import openai as sdk

        if api not in ("chat", "responses"):
            raise SummarizerError(f"unknown OpenAI API {api!r}: use 'chat' or 'responses'")
        self._sdk = sdk
        self._client_args: dict[str, Any] = {"base_url": base_url, "api_key": api_key, "max_retries": max_retries}
        try:
            self.client: openai.OpenAI = sdk.OpenAI(**self._client_args)
        except sdk.OpenAIError as exc:  # no api_key given and no OPENAI_API_KEY: say so now, not mid-compaction
            raise SummarizerError(f"the openai summariser has no API key: pass api_key= or set OPENAI_API_KEY "
                                  f"(a local server ignores it: any value does): {exc}") from exc
        self.async_client: openai.AsyncOpenAI | None = None
        super().__init__(name=f"openai:{model}", max_tokens=max_tokens, system_prompt=system_prompt,
                         max_retries=max_retries, tool_result_chars=tool_result_chars,
                         tool_input_chars=tool_input_chars)
        self.model = model
        self.api = api

    def build_request(self, request: SummaryRequest) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` (or `responses.create`) for `request`."""
        prompt = self.prompt(request)
        if self.api == "responses":
            return {"model": self.model, "instructions": self.system_prompt, "max_output_tokens": self._max_tokens(request),
                    "input": [{"role": "user", "content": prompt}]}
        return {"model": self.model, "max_completion_tokens": self._max_tokens(request),
                "messages": [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": prompt}]}

    def summarize(self, request: SummaryRequest) -> str:
        params = self.build_request(request)
        started = time.monotonic()
        with self._errors():
            if self.api == "responses":
                response: Any = self.client.responses.create(**params)
            else:
                response = self.client.chat.completions.create(**params)
        return self._answer(response, request, started)

    async def asummarize(self, request: SummaryRequest) -> str:
        """`summarize` through `AsyncOpenAI`: the same request, errors and cleaning, awaited."""
        if self.async_client is None:  # created on first use: a sync-only user never builds one
            self.async_client = self._sdk.AsyncOpenAI(**self._client_args)
        params = self.build_request(request)
        started = time.monotonic()
        with self._errors():
            if self.api == "responses":
                response: Any = await self.async_client.responses.create(**params)
            else:
                response = await self.async_client.chat.completions.create(**params)
        return self._answer(response, request, started)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        sdk = self._sdk
        try:
            yield
        except sdk.BadRequestError as exc:
            if getattr(exc, "code", None) == "context_length_exceeded" or is_context_overflow(exc):
                raise self._overflowed(_overflow(str(getattr(exc, "message", None) or exc))) from exc
            raise self._refused(exc) from exc
        except sdk.APIError as exc:
            raise self._failed(exc) from exc

    def _answer(self, response: Any, request: SummaryRequest, started: float) -> str:
        if self.api == "responses":
            text, finish = response.output_text, response.status
            usage = (response.usage.input_tokens, response.usage.output_tokens) if response.usage else (None, None)
            truncated = finish == "incomplete"
        else:
            choice = response.choices[0] if response.choices else None
            text, finish = (choice.message.content or "") if choice else "", choice.finish_reason if choice else None
            usage = (response.usage.prompt_tokens, response.usage.completion_tokens) if response.usage else (None, None)
            truncated = finish == "length"
        if not text.strip():
            raise SummarizerError(f"{self.name}: the model answered no text (finish={finish})")
        log.info("summary_done", model=self.model, purpose=request.purpose, input_tokens=usage[0],
                 output_tokens=usage[1], finish=finish, seconds=round(time.monotonic() - started, 3))
        if truncated:
            log.warning("summary_truncated", model=self.model)
        return clean_summary(text)
