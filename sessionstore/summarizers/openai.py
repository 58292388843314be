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

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

from ..extras import require
from ..logs import get_logger
from .anthropic import clean_summary
from .base import ContextOverflow, SummarizerError, SummaryRequest, is_context_overflow
from .prompted import PromptedSummarizer
from .prompts import TOOL_INPUT_CHARS, TOOL_RESULT_CHARS
from .window import (ModelWindow, served_models, stated_limits, window_from_llamacpp_props, window_from_models,
                     window_from_ollama)

if TYPE_CHECKING:
    import openai

log = get_logger(__name__)

# A server's own endpoints answer at once or not at all: a probe never waits on retries.
_PROBE_SECONDS: Final = 5.0

DEFAULT_MODEL = "gpt-4.1-mini"
_OFFICIAL_HOSTS = ("api.openai.com",)


class OpenAISummarizer(PromptedSummarizer):
    """`Summarizer` backed by any OpenAI-compatible model through the `openai` SDK.

    model: the model name the server knows (a local server's own name for vLLM / Ollama). None:
        OpenAI's `DEFAULT_MODEL` on OpenAI's API; on any other server, the one model it serves
        (``GET /v1/models``) — a server with several must be told which: no default model is
        sent to a server that may not have it.
    base_url / api_key: default to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (the SDK's own
        defaults); a local server that needs no key still gets a placeholder.
    api: ``"chat"`` (Chat Completions) or ``"responses"`` (the Responses API).
    context_window: the model's window in its tokens; None: asked of the server (vLLM's
        ``max_model_len``, llama.cpp's ``/props``, Ollama's ``/api/show`` and ``/api/ps``), else
        learned from the first context-length error that states it (`summarizers.window`).
    max_tokens: the cap on the summary's length; a request's own `max_tokens` can only lower it.
    max_retries: the SDK's retries of 408/409/429/5xx and connection errors.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 api: Literal["chat", "responses"] = "chat", *, max_tokens: int = 8192,
                 system_prompt: str | None = None, max_retries: int = 4, context_window: int | None = None,
                 tool_result_chars: int = TOOL_RESULT_CHARS, tool_input_chars: int = TOOL_INPUT_CHARS) -> None:
        sdk = require("openai", "openai", "the openai summariser")

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
        self.base_url = str(self.client.base_url).rstrip("/")
        self.model = model or (DEFAULT_MODEL if self.official else self._only_model())
        super().__init__(name=f"openai:{self.model}", max_tokens=max_tokens, system_prompt=system_prompt,
                         max_retries=max_retries, tool_result_chars=tool_result_chars,
                         tool_input_chars=tool_input_chars, context_window=context_window)
        self.api = api

    @property
    def official(self) -> bool:
        """Is this OpenAI's own API (whose models' windows are documented, not served)?"""
        return urlsplit(self.base_url).hostname in _OFFICIAL_HOSTS


    # ------------------------------------------------------------------ what the server says

    def _probe(self) -> openai.OpenAI:
        """The client for the server's own endpoints: one quick try each, no retries."""
        return self.client.with_options(max_retries=0, timeout=_PROBE_SECONDS)

    def _get(self, path: str) -> Any:
        """``GET`` `path` (under the API's base URL, or from the server's root with a leading
        ``/``), parsed; None when the server does not answer it."""
        try:
            return self._probe().get(self._url(path), cast_to=object)
        except self._sdk.APIError:
            return None

    def _url(self, path: str) -> str:
        if path.startswith("/"):  # the server's own endpoints sit at its root, beside /v1
            root = self.base_url.removesuffix("/v1")
            return root + path
        return f"{self.base_url}/{path}"

    def _only_model(self) -> str:
        try:
            listing = self._probe().get(self._url("models"), cast_to=object)
        except self._sdk.APIError as exc:
            reason = str(exc).rstrip(". ")  # the SDK's "Connection error.", mid-sentence here
            raise SummarizerError(f"no model named for the OpenAI-compatible server at {self.base_url}, and its "
                                  f"model list (GET {self._url('models')}) failed: {reason}; pass model= (--model)"
                                  ) from exc
        names = [entry["id"] for entry in served_models(listing)]
        if len(names) != 1:
            served = f"it serves {len(names)}: {', '.join(names[:10])}" if names else "it lists none"
            raise SummarizerError(f"no model named for the OpenAI-compatible server at {self.base_url}, and {served}; "
                                  "pass model= (--model)")
        return str(names[0])

    def _server_window(self) -> ModelWindow | None:
        """vLLM and routers in ``/v1/models``, llama.cpp's ``/props``, Ollama's ``/api/ps`` and
        ``/api/show``, in that order; OpenAI's own API states none."""
        if self.official:
            return None
        if tokens := window_from_models(self._get("models"), self.model):
            return ModelWindow(tokens, "server", f"GET {self._url('models')}")
        if tokens := window_from_llamacpp_props(self._get("/props")):
            return ModelWindow(tokens, "server", f"GET {self._url('/props')} n_ctx")
        try:
            show = self._probe().post(self._url("/api/show"), body={"model": self.model}, cast_to=object)
        except self._sdk.APIError:
            return None
        if tokens := window_from_ollama(show, self._get("/api/ps"), self.model):
            return ModelWindow(tokens, "server", f"Ollama {self._url('/api/show')}")
        return None

    def build_request(self, request: SummaryRequest) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` (or `responses.create`) for `request`."""
        prompt = self.prompt(request)
        system = self.system_for(request)
        if self.api == "responses":
            return {"model": self.model, "instructions": system, "max_output_tokens": self._max_tokens(request),
                    "input": [{"role": "user", "content": prompt}]}
        # OpenAI's reasoning models take only `max_completion_tokens`; llama-cpp-python ignores it
        # and writes until its window is full: every other server gets `max_tokens`, which all honour.
        cap = "max_completion_tokens" if self.official else "max_tokens"
        return {"model": self.model, cap: self._max_tokens(request),
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]}

    def summarize(self, request: SummaryRequest) -> str:
        params = self.build_request(request)
        started = time.monotonic()
        with self._errors(request):
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
        with self._errors(request):
            if self.api == "responses":
                response: Any = await self.async_client.responses.create(**params)
            else:
                response = await self.async_client.chat.completions.create(**params)
        return self._answer(response, request, started)

    @contextmanager
    def _errors(self, request: SummaryRequest) -> Iterator[None]:
        sdk = self._sdk
        try:
            yield
        except sdk.APIError as exc:
            message = str(getattr(exc, "message", None) or exc)
            limits = stated_limits(message, getattr(exc, "body", None))
            # llama.cpp says it with a type of its own (and HTTP 500 before late 2025)
            if limits.window is not None or getattr(exc, "code", None) == "context_length_exceeded" or (
                    isinstance(exc, sdk.BadRequestError) and is_context_overflow(exc)):
                raise self._overflowed(ContextOverflow(message, tokens=limits.tokens, limit=limits.input_limit,
                                                       window=limits.window), request) from exc
            if isinstance(exc, sdk.BadRequestError):
                raise self._refused(exc) from exc
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
