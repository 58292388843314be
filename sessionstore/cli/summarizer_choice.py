"""The one place a command's ``--summarizer NAME [--model M] [--base-url URL] [--summarizer-window N]``
becomes a summariser.

`SUMMARIZERS` maps each name to a factory; `compact` and `replay` both read it (their
``--summarizer`` choices are its keys), so a new summariser is one entry here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from ..summarizers.base import Summarizer, SummarizerError, SummaryRequest
from .app import CliError

Factory = Callable[[str | None, str | None, bool, int | None], Any]


class WouldSend:
    """A dry run's stand-in for a model summariser: records the request the model would get
    (`build_request`) and answers with the offline summary, so the plan completes and the
    run costs nothing — no request is ever sent."""

    def __init__(self, model: Any, offline: Summarizer) -> None:
        self.model = model
        self.offline = offline
        self.name: str = model.name
        self.requests: list[dict[str, Any]] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(self.model.build_request(request))
        return self.offline.summarize(request)


def _offline(model: str | None, base_url: str | None, dry_run: bool, window: int | None) -> Any:
    from ..summarizers.offline import OfflineSummarizer

    return OfflineSummarizer()


def _anthropic(model: str | None, base_url: str | None, dry_run: bool, window: int | None) -> Any:
    import anthropic

    from ..summarizers.anthropic import AnthropicSummarizer
    from ..summarizers.offline import OfflineSummarizer

    options: dict[str, Any] = {"model": model} if model else {}
    options["context_window"] = window
    if dry_run:  # a client that is never called: no credentials needed, nothing sent
        client = anthropic.Anthropic(api_key="dry-run-never-sent", base_url=base_url, max_retries=0)
        return WouldSend(AnthropicSummarizer(client, **options), OfflineSummarizer())
    return AnthropicSummarizer(_anthropic_client(base_url), **options)


def _anthropic_client(base_url: str | None) -> Any:
    """A client from the environment, or a clear error now (the SDK would only find out at the
    first request, mid-compaction)."""
    import anthropic

    try:
        client = anthropic.Anthropic(base_url=base_url)
    except anthropic.AnthropicError:
        client = None
    if client is None or (client.api_key is None and client.auth_token is None):
        raise CliError("the anthropic summariser has no credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), "
                       "or use --summarizer offline (or --dry-run to see the request without sending it)")
    return client


def _openai(model: str | None, base_url: str | None, dry_run: bool, window: int | None) -> Any:
    from ..summarizers.offline import OfflineSummarizer
    from ..summarizers.openai import OpenAISummarizer

    options: dict[str, Any] = {"model": model} if model else {}
    options["context_window"] = window
    if dry_run:  # nothing is sent, the model list included: a server's only model is named as such
        if not model and (base_url or os.environ.get("OPENAI_BASE_URL")):
            options["model"] = "(the server's only model)"
        return WouldSend(OpenAISummarizer(base_url=base_url, api_key="dry-run-never-sent", max_retries=0, **options),
                         OfflineSummarizer())
    return OpenAISummarizer(base_url=base_url, api_key=_openai_key(base_url, "openai"), **options)


def _openai_key(base_url: str | None, name: str) -> str:
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if not (base_url or os.environ.get("OPENAI_BASE_URL")):
            raise CliError(f"the {name} summariser has no credentials: set OPENAI_API_KEY, or give --base-url of "
                           "an OpenAI-compatible server (vLLM, Ollama…), or use --summarizer offline")
        api_key = "no-key"  # local OpenAI-compatible servers ignore it; the SDK requires one
    return api_key


def _openai_compact(model: str | None, base_url: str | None, dry_run: bool, window: int | None) -> Any:
    from ..summarizers.openai_compact import OpenAICompactSummarizer

    options: dict[str, Any] = {"model": model} if model else {}
    if dry_run:  # the planner's portable summary is offline: a dry run never reaches the provider
        return OpenAICompactSummarizer(base_url=base_url, api_key="dry-run-never-sent", max_retries=0, **options)
    return OpenAICompactSummarizer(base_url=base_url, api_key=_openai_key(base_url, "openai-compact"), **options)


def _anthropic_compact(model: str | None, base_url: str | None, dry_run: bool, window: int | None) -> Any:
    import anthropic

    from ..summarizers.anthropic_compact import AnthropicCompactSummarizer

    options: dict[str, Any] = {"model": model} if model else {}
    if dry_run:
        return AnthropicCompactSummarizer(anthropic.Anthropic(api_key="dry-run-never-sent", base_url=base_url,
                                                              max_retries=0), **options)
    chosen = AnthropicCompactSummarizer(_anthropic_client(base_url), **options)
    return chosen


SUMMARIZERS: dict[str, Factory] = {"offline": _offline, "anthropic": _anthropic, "openai": _openai,
                                   "openai-compact": _openai_compact, "anthropic-compact": _anthropic_compact}


def summarizer_named(name: str, model: str | None, *, base_url: str | None = None, dry_run: bool = False,
                     window: int | None = None) -> Any:
    """The summariser a command's --summarizer/--model/--base-url/--summarizer-window name (a dry
    run's never calls a model). `window` is the summariser's model's context window (the
    model summarisers'; the others plan no request of their own size)."""
    try:
        factory = SUMMARIZERS[name]
    except KeyError:
        raise CliError(f"unknown summariser {name!r}: one of {', '.join(SUMMARIZERS)}") from None
    try:
        return factory(model, base_url, dry_run, window)
    except SummarizerError as exc:  # no model named for a server with several, a window too small, …
        raise CliError(str(exc)) from exc


def summarizer_options(command: Callable[..., Any] | None = None, *, multiple: bool = False) -> Any:
    """``--summarizer``, ``--model``, ``--base-url`` and ``--summarizer-window``, the same on every command that summarises
    (`multiple`: ``--summarizer`` repeatable, to compare summarisers)."""
    if command is None:
        return lambda decorated: summarizer_options(decorated, multiple=multiple)
    command = click.option("--summarizer-window", type=click.IntRange(min=256), default=None, metavar="TOKENS",
                           help="The summariser model's own context window (e.g. 2048 for a small local model; "
                                "default: asked of the server, else learned from its first context-length error). "
                                "--context-window is the session's.")(command)
    command = click.option("--base-url", default=None,
                           help="API base URL of the model summariser (e.g. a local vLLM or Ollama server's /v1)."
                           )(command)
    command = click.option("--model", default=None, help="Model for the anthropic/openai(-compact) summariser."
                           )(command)
    if multiple:
        return click.option("--summarizer", "summarizers", type=click.Choice(list(SUMMARIZERS)), multiple=True,
                            help="Summariser (repeat to compare; default offline).")(command)
    return click.option("--summarizer", type=click.Choice(list(SUMMARIZERS)), default="offline",
                        show_default=True)(command)
