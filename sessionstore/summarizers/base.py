"""The summariser contract: what compaction asks a summariser, and what it may raise.

Summarisers see the history to summarise as Anthropic-shaped messages (text, thinking,
tool_use and tool_result blocks, with pruned and rewritten outputs already applied): the
same currency whether the summariser is a model or the offline extractive one, and nothing
that ties them to the store or the projection's internals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import SessionStoreError

Purpose = Literal["history", "turn_prefix", "merge", "native"]


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One summarisation.

    purpose:
      - ``history``: summarise `messages`; with `previous_summary`, *update* that summary with
        what the messages add (anchored, iterative summarisation) instead of starting over;
      - ``turn_prefix``: `messages` are the first part of a turn whose rest stays verbatim in
        the view; summarise what that part did, briefly, so the kept rest makes sense;
      - ``merge``: `partials` are summaries of consecutive slices of one history, oldest
        first; merge them into one summary (no `messages`).
    - ``native``: asked only of a `ProviderCompactor` (``summarizers.compacting``): have the
        provider compact `messages` (the view before the cut, valid Anthropic-shaped messages);
        `extra` holds ``previous_native`` (the artefact they start from) and ``history`` (the
        messages without the summary that opens them). Answered with a `NativeCompaction`.

    `max_tokens` is the budget of the answer: every summariser keeps its summary within it.
    `estimated_tokens`: the planner's estimate of the whole request, with the store's counter
    (what a summariser compares with the tokens a context-length error states, to learn how its
    model counts: `window.learned_from_error`). `brief`: the summariser's window is small (a
    local 2k–16k model): the short prompts, which leave the room to the history.
    """

    messages: Sequence[Mapping[str, Any]] = ()
    previous_summary: str | None = None
    # Parallel to `messages`: for each message, the transcript version of each of its content
    # blocks (0 for a block the rendering added). Lets a summary say *where* what it leaves out
    # stays ("12 user messages left out, versions 40–310"); empty when the caller has none.
    versions: Sequence[Sequence[int]] = ()
    instructions: str | None = None
    read_files: Sequence[str] = ()
    modified_files: Sequence[str] = ()
    # What changed in each modified file, by path ("created", "edited: def parse(text)"), where known.
    changes: Mapping[str, str] = field(default_factory=dict)
    purpose: Purpose = "history"
    partials: Sequence[str] = ()
    max_tokens: int = 8192
    extra: Mapping[str, Any] = field(default_factory=dict)
    estimated_tokens: int | None = None
    brief: bool = False
    # The session's project directory (its working directory, from the session's metadata): the
    # root its paths are written relative to in the summary (`paths.path_lines`).
    project: str | None = None


@runtime_checkable
class Summarizer(Protocol):
    """Turns a `SummaryRequest` into summary text (markdown with the `sections.SECTIONS` headings)."""

    name: str

    def summarize(self, request: SummaryRequest) -> str: ...


@runtime_checkable
class AsyncSummarizer(Protocol):
    """A summariser an event loop can await (`drive.adrive` prefers it to `summarize`)."""

    name: str

    async def asummarize(self, request: SummaryRequest) -> str: ...


@dataclass(frozen=True, slots=True)
class SummaryBatch:
    """Summary requests that compaction planning needs answered before it can go on.

    Planning is a generator (`compaction.pipeline.compaction_steps`) that yields batches and is
    sent back, for each request in order, the summary text or the exception the summariser
    raised (a `ContextOverflow` makes planning slice further). The requests of one batch are
    independent: a driver may run them concurrently (`drive.drive` in threads, `drive.adrive`
    with asyncio). Keeping the calls out of the planning is what lets one planning serve a
    sync and an async store.

    `asks_window` (with no requests): planning asks what the summariser knows of its model's
    context window before it plans any request; the driver answers ``[ModelWindow | None]``,
    letting the summariser ask its server first (`drive.window_of`).
    """

    requests: tuple[SummaryRequest, ...]
    asks_window: bool = False


class SummarizerError(SessionStoreError):
    """The summariser failed for good (after its own retries)."""


class ContextOverflow(SummarizerError):
    """The summarisation request itself is too long for the model; compaction slices the history.

    tokens: the request's input tokens, as the model counted them; limit: the input that would
    have fitted; window: the model's whole context window — each when the provider said it
    (compaction re-plans every request to fit a stated window)."""

    def __init__(self, message: str, *, tokens: int | None = None, limit: int | None = None,
                 window: int | None = None) -> None:
        self.tokens = tokens
        self.limit = limit
        self.window = window
        super().__init__(message)


_OVERFLOW_MARKERS = (
    "prompt is too long",             # Anthropic: 400 invalid_request_error "prompt is too long: N tokens > M maximum"
    "context_length_exceeded",        # OpenAI error code
    "maximum context length",         # OpenAI message
    "input is too long",              # Bedrock / Vertex wording
    "too many tokens",
    "exceeds the context window",
    "context window exceeded",
    "exceed context limit",           # Anthropic: "input length and `max_tokens` exceed context limit"
)


def is_context_overflow(error: BaseException | str) -> bool:
    """True when a provider error says the request did not fit the model's context window.

    Agents call this on the errors of their own model calls: an overflow should trigger
    ``store.compact(sid, trigger="overflow")`` and one retry, not a crash.
    """
    if isinstance(error, ContextOverflow):
        return True
    text = error if isinstance(error, str) else f"{error} {getattr(error, 'body', '') or ''}"
    text = text.lower()
    return any(marker in text for marker in _OVERFLOW_MARKERS)
