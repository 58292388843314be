"""What the local Anthropic server records and answers: requests as received, scripted replies,
the deterministic summary it answers by default, and its input-token estimate.

Plain values and pure functions, apart from the server's state (anthropic_state.py) and routes
(anthropic_server.py), which both use them: a test or a recording script builds replies with
`text_reply` and `tool_use_reply` without starting a server, and `estimate_input_tokens` is what
``count_tokens`` answers and what ``context_window`` is checked against.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Union

from ..tokens import IMAGE_TOKENS, HeuristicCounter, TokenCounter

__all__ = ["ErrorReply", "MessageReply", "RecordedRequest", "Reply", "ReplyLike", "canonical_json",
           "default_summary", "estimate_input_tokens", "prompt_too_long", "text_reply", "tool_use_reply"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received (any path, valid or not)."""

    method: str
    path: str                       # without the query string
    query: str
    headers: dict[str, str]         # lower-case names
    body: Any                       # parsed JSON, or None when the body was not JSON
    raw: bytes
    status: int = 0                 # what the server answered (set once answered)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or []) if isinstance(self.body, dict) else []


@dataclass(frozen=True, slots=True)
class MessageReply:
    """A successful `message` response: text and/or tool_use blocks (`content` as API blocks)."""

    content: tuple[dict[str, Any], ...]
    stop_reason: str = "end_turn"
    model: str | None = None                  # None: echo the request's model
    input_tokens: int | None = None           # None: the server's estimate
    output_tokens: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An error response in the API's shape: status, error type, message, extra headers."""

    status: int
    type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)


Reply = Union[MessageReply, ErrorReply]
ReplyLike = Union[Reply, str, Mapping[str, Any], Callable[[RecordedRequest], Any]]


_tool_ids = itertools.count(1)


def text_reply(text: str, **kwargs: Any) -> MessageReply:
    return MessageReply(content=({"type": "text", "text": text},), **kwargs)


def tool_use_reply(name: str, input: Mapping[str, Any], *, id: str | None = None, text: str | None = None,
                   **kwargs: Any) -> MessageReply:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": id or f"toolu_local{next(_tool_ids):06d}", "name": name,
                   "input": dict(input)})
    kwargs.setdefault("stop_reason", "tool_use")
    return MessageReply(content=tuple(blocks), **kwargs)


def prompt_too_long(tokens: int = 212_000, limit: int = 200_000) -> ErrorReply:
    """The API's answer to a request over the model's context window."""
    return ErrorReply(400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {limit} maximum")


def default_summary(request: RecordedRequest) -> str:
    """A deterministic, summary-shaped answer: the SECTIONS headings with a line from the request."""
    from ..summarizers.sections import SECTIONS

    last_user = ""
    for message in reversed(request.messages):
        if message.get("role") == "user":
            texts, _ = _content_pieces(message.get("content"))
            last_user = " ".join(" ".join(texts).split())
            break
    excerpt = last_user[:160] + ("…" if len(last_user) > 160 else "")
    bodies = {
        "Primary request and intent": f"Summary of a request of {len(last_user)} characters: {excerpt}",
        "Current work": "Summarising the conversation (default reply of the local test server).",
    }
    return "\n\n".join(f"## {title}\n{bodies.get(title, '(none)')}" for title in SECTIONS)


# --------------------------------------------------------------------------- token estimate


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: what the estimate counts of a tool's input or a block (one text
    whatever the order its keys came in)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


REQUEST_OVERHEAD: Final = 4   # what an (almost) empty request costs beyond its text
MESSAGE_OVERHEAD: Final = 3   # per message: role markers


def _content_pieces(content: Any) -> tuple[list[str], int]:
    """The texts of some content (string or blocks), and the number of images in it."""
    if isinstance(content, str):
        return [content], 0
    texts: list[str] = []
    images = 0
    for block in content or ():
        if not isinstance(block, Mapping):
            continue
        btype = block.get("type")
        if btype == "text":
            texts.append(str(block.get("text", "")))
        elif btype == "thinking":
            texts.append(str(block.get("thinking", "")))
        elif btype == "image":
            images += 1
        elif btype == "tool_use" or btype == "server_tool_use":
            texts.append(str(block.get("name", "")) + canonical_json(block.get("input", {})))
        elif btype == "tool_result":
            inner, n = _content_pieces(block.get("content") or "")
            texts.extend(inner)
            images += n
        elif btype == "redacted_thinking":
            continue
        else:
            texts.append(canonical_json(block))
    return texts, images


def estimate_input_tokens(body: Mapping[str, Any], counter: TokenCounter | None = None) -> int:
    """The server's deterministic input-token estimate of a request (what count_tokens answers and what
    `context_window` is checked against): the counter over every text, plus small fixed overheads."""
    counter = counter or HeuristicCounter()
    texts: list[str] = []
    images = 0
    system = body.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts.extend(str(b.get("text", "")) for b in system if isinstance(b, Mapping))
    for tool in body.get("tools") or ():
        texts.append(canonical_json(tool))
    messages = body.get("messages") or ()
    for message in messages:
        if isinstance(message, Mapping):
            inner, n = _content_pieces(message.get("content"))
            texts.extend(inner)
            images += n
    texts = [t for t in texts if t]
    return REQUEST_OVERHEAD + MESSAGE_OVERHEAD * len(messages) + sum(counter.count_many(texts)) + images * IMAGE_TOKENS
