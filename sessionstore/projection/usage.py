"""Provider-reported usage, as the recording agents spell it, and the responses it belongs to.

Usage records say how many tokens the provider counted for one request: the *prompt* (what
was sent: the whole context, cached or not) and the *output* (what came back). The prompt is
what a context view must be compared with; the output joins the context of the next request.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..events import StoredEvent


def _number(usage: Mapping[str, Any], *keys: str) -> int:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return 0


def prompt_tokens(usage: Any) -> int:
    """Tokens the provider counted in the request (Anthropic, OpenAI, Pi, Codex, Copilot, Gemini); 0 if none."""
    if not isinstance(usage, Mapping):
        return 0
    if "prompt_tokens" in usage:  # OpenAI chat completions: prompt already includes cached tokens
        return _number(usage, "prompt_tokens")
    if "cached_input_tokens" in usage:  # Codex: input_tokens already includes cached tokens
        return _number(usage, "input_tokens")
    if "inputTokens" in usage:  # Copilot CLI: inputTokens already includes cache reads and writes
        return _number(usage, "inputTokens")
    if "promptTokenCount" in usage:  # Gemini's usageMetadata (Qwen Code): cached content included
        return _number(usage, "promptTokenCount")
    return (_number(usage, "input_tokens", "input") + _number(usage, "cache_read_input_tokens", "cacheRead")
            + _number(usage, "cache_creation_input_tokens", "cacheWrite"))


def output_tokens(usage: Any) -> int:
    if not isinstance(usage, Mapping):
        return 0
    return _number(usage, "completion_tokens", "output_tokens", "output", "outputTokens",
                   "candidatesTokenCount")


class Billed(NamedTuple):
    """One request's tokens as a provider bills them, apart: fresh input, output (thinking
    included), cache writes, cache reads. Every spelling comes to this one, so that Claude Code,
    Codex, Pi, Gemini CLI, OpenCode and OpenHands usage adds up the same way."""

    input: int
    output: int
    cache_creation: int
    cache_read: int


def billed(usage: Any) -> Billed:
    """`usage` as billed (`Billed`), whatever agent recorded it; all zeros if it is no usage.

    Anthropic's input excludes the cache (Claude Code, and Pi and OpenCode, which spell it
    ``input``/``cacheRead``/``cacheWrite``); OpenAI's includes its cached part (Codex's
    ``cached_input_tokens``, chat completions' ``prompt_tokens_details.cached_tokens``), as
    Gemini's does (``cached``; its ``tool`` prompt is input, its ``thoughts`` output; Qwen Code's
    ``usageMetadata`` likewise), as Copilot CLI's ``inputTokens`` does (its cache reads and writes); OpenCode
    counts ``reasoning`` apart from its output.
    """
    if not isinstance(usage, Mapping):
        return Billed(0, 0, 0, 0)
    if "prompt_tokens" in usage or "completion_tokens" in usage:  # chat completions (OpenHands, LiteLLM)
        details = usage.get("prompt_tokens_details")
        read = _number(usage, "cache_read_input_tokens") or (
            _number(details, "cached_tokens") if isinstance(details, Mapping) else 0)
        write = _number(usage, "cache_creation_input_tokens")
        return Billed(max(0, _number(usage, "prompt_tokens") - read - write), _number(usage, "completion_tokens"),
                      write, read)
    if "input_tokens" in usage or "output_tokens" in usage:
        details = usage.get("input_tokens_details")
        cached = _number(usage, "cached_input_tokens") or (
            _number(details, "cached_tokens") if isinstance(details, Mapping) else 0)
        if cached or "cached_input_tokens" in usage:  # OpenAI (Codex, Responses): input includes the cache
            return Billed(max(0, _number(usage, "input_tokens") - cached), _number(usage, "output_tokens"), 0, cached)
        return Billed(_number(usage, "input_tokens"), _number(usage, "output_tokens"),
                      _number(usage, "cache_creation_input_tokens"), _number(usage, "cache_read_input_tokens"))
    if "inputTokens" in usage:  # Copilot CLI: inputTokens includes cache reads and writes
        read, write = _number(usage, "cacheReadTokens"), _number(usage, "cacheWriteTokens")
        return Billed(max(0, _number(usage, "inputTokens") - read - write), _number(usage, "outputTokens"), write, read)
    if "promptTokenCount" in usage:  # Gemini's usageMetadata (Qwen Code): the prompt includes the cached part
        cached = _number(usage, "cachedContentTokenCount")
        return Billed(max(0, _number(usage, "promptTokenCount") - cached),
                      _number(usage, "candidatesTokenCount") + _number(usage, "thoughtsTokenCount"), 0, cached)
    if "cached" in usage or "thoughts" in usage:  # Gemini CLI
        cached = _number(usage, "cached")
        return Billed(max(0, _number(usage, "input") - cached) + _number(usage, "tool"),
                      _number(usage, "output") + _number(usage, "thoughts"), 0, cached)
    return Billed(_number(usage, "input"), _number(usage, "output") + _number(usage, "reasoning"),
                  _number(usage, "cacheWrite"), _number(usage, "cacheRead"))


def reported_tokens(usage: Any) -> int:
    """Context size after a response: its prompt plus its output (what Pi calls contextTokens)."""
    prompt = prompt_tokens(usage)
    return prompt + output_tokens(usage) if prompt else 0


def assistant_side(event: StoredEvent) -> bool:
    """Does the event belong to a model response (its text, thinking or tool calls)?"""
    return event.kind == "tool_call" or (event.kind == "message" and event.payload.get("role") == "assistant")


def message_id(event: StoredEvent) -> str | None:
    value = event.meta.get("message_id")
    return value if isinstance(value, str) and value else None


def same_response(previous: StoredEvent | None, event: StoredEvent) -> bool:
    """Is `event` part of the same model response as `previous`, the in-context event before it?

    Agents write one response as several events (Claude Code: one line per content block,
    each repeating the usage); a response is a run of assistant-side events, and where the
    agent records message ids, a new id starts a new response.
    """
    if previous is None or not assistant_side(previous) or not assistant_side(event):
        return False
    ids = message_id(previous), message_id(event)
    return None in ids or ids[0] == ids[1]


def response_start(events: Sequence[StoredEvent], index: int) -> int:
    """The index of the first event of the response `events[index]` belongs to (in-context
    events in version order). Claude Code writes a tool's result as soon as it ran, between
    blocks of the response that called it: with message ids, such results do not end it."""
    wanted = message_id(events[index])
    first = index
    for i in range(index - 1, -1, -1):
        event = events[i]
        if assistant_side(event):
            if wanted is not None and message_id(event) not in (None, wanted):
                break
            if wanted is None and i != first - 1:
                break
            first = i
        elif not (wanted is not None and event.kind == "tool_result"):
            break
    return first


def response_blocks(events: Sequence[StoredEvent], first: int) -> list[int]:
    """The indexes of the events of the response that begins at `events[first]`: with message
    ids, those carrying its id up to the next response (results may sit between them); without,
    the run of assistant-side events."""
    wanted = message_id(events[first])
    found = [first]
    for i in range(first + 1, len(events)):
        event = events[i]
        if wanted is None:
            if not same_response(events[i - 1], event):
                break
            found.append(i)
        elif assistant_side(event):
            if message_id(event) not in (None, wanted):
                break
            found.append(i)
    return found


@dataclass(frozen=True, slots=True)
class Report:
    """A model response that reported usage: its first event, and the event carrying the usage."""

    start: StoredEvent
    event: StoredEvent
    prompt: int  # the provider's prompt tokens for the request `start` answered

    @property
    def model(self) -> str | None:
        model = self.event.meta.get("model")
        return model if isinstance(model, str) else None


def reports(events: Iterable[StoredEvent]) -> Iterator[Report]:
    """One `Report` per response among in-context `events` (version order) that reported usage:
    the first usage of a response is its request's (Claude Code repeats it on every block)."""
    previous: StoredEvent | None = None
    start: StoredEvent | None = None
    reported: str | None = None  # the message id of the latest report
    for event in events:
        if reported is not None and message_id(event) == reported:
            previous = event  # a later block of a reported response, after one of its results
            continue
        if not same_response(previous, event):
            start = event if assistant_side(event) else None
        previous = event
        prompt = prompt_tokens(event.meta.get("usage")) if start is not None else 0
        if prompt and start is not None:
            yield Report(start, event, prompt)
            reported = message_id(event)
            start = None  # later blocks of the response repeat the same report
