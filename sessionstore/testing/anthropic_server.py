"""A local server that speaks Anthropic's Messages API, for tests that run the real SDK.

Nothing of the SDK is mocked: the `anthropic` client sends real HTTP requests to this
server on 127.0.0.1, parses real responses, retries and raises its own exception classes.
The server checks every request the way the API does (roles, alternation, tool pairing,
block shapes), so a test that gets a reply has proven that the request was valid::

    with AnthropicServer() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test")
        server.overloaded()                    # the next request gets a 529 ...
        server.reply("## Primary request …")   # ... and the one after, this text
        client.messages.create(model="claude-haiku-4-5", max_tokens=100,
                               messages=[{"role": "user", "content": "hi"}])
        assert len(server.message_requests) == 2

What the next requests get is a queue (`reply`, `reply_tool_use`, `error` and its shortcuts,
or any `Reply`/callable through `enqueue`); an empty queue answers with `default` (a
deterministic, summary-shaped text built from the request). `context_window=N` answers any
request whose estimated input exceeds N tokens with the API's real "prompt is too long" 400,
and `POST /v1/messages/count_tokens` returns the same estimate.

The validator is also usable without HTTP: `validate_request(body)` raises `InvalidRequest`
with the message the server would send.

Standard library only (plus the chars/4 estimate of `sessionstore.tokens`).
"""

from __future__ import annotations

import base64
import collections
import hashlib
import itertools
import json
import re
import threading
import traceback
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, Union
from urllib.parse import urlsplit

from ..tokens import IMAGE_TOKENS, HeuristicCounter, TokenCounter

__all__ = [
    "AnthropicServer",
    "ErrorReply",
    "InvalidRequest",
    "MessageReply",
    "RecordedRequest",
    "Reply",
    "estimate_input_tokens",
    "validate_messages",
    "validate_request",
]

# --------------------------------------------------------------------------- validation


class InvalidRequest(ValueError):
    """A request the API would refuse with 400 invalid_request_error; `message` is what it says."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


ROLES: Final = ("user", "assistant")
_TOOL_ID: Final = re.compile(r"^[a-zA-Z0-9_-]+$")
_TOOL_NAME: Final = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_IMAGE_TYPES: Final = ("image/jpeg", "image/png", "image/gif", "image/webp")
# Results of Anthropic-run (server) tools: accepted in assistant messages, shapes not checked.
_SERVER_RESULT_BLOCKS: Final = frozenset({
    "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
    "tool_search_tool_result", "mcp_tool_result", "container_upload",
})
_USER_ONLY: Final = frozenset({"tool_result", "image", "document", "search_result"})
_ASSISTANT_ONLY: Final = frozenset({"thinking", "redacted_thinking", "tool_use", "server_tool_use", "mcp_tool_use",
                                    "compaction", *_SERVER_RESULT_BLOCKS - {"container_upload"}})
_BLOCK_TYPES: Final = ("text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use",
                       "tool_result", "server_tool_use", "mcp_tool_use", "compaction", *sorted(_SERVER_RESULT_BLOCKS))
COMPACT_BETA: Final = "compact-2026-01-12"
COMPACT_TRIGGER: Final = 150_000  # the edit's default trigger, in input tokens
_TOOL_RESULT_CONTENT: Final = ("text", "image", "document", "search_result", "tool_reference")
# Top-level fields of POST /v1/messages (the SDK's `messages.create` and the beta variant).
_MESSAGES_FIELDS: Final = frozenset({
    "model", "messages", "max_tokens", "system", "tools", "tool_choice", "temperature", "top_p", "top_k",
    "stop_sequences", "stream", "metadata", "thinking", "service_tier", "container", "mcp_servers",
    "context_management", "cache_control", "output_config", "output_format", "inference_geo", "speed",
    "diagnostics", "betas", "billing_policy", "compaction", "fallback_credit_token", "fallbacks", "thread",
})
_COUNT_FIELDS: Final = frozenset({
    "model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "context_management",
    "cache_control", "output_config", "output_format", "speed", "betas",
})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _require_str(block: Mapping[str, Any], key: str, where: str, *, non_empty: bool = False) -> str:
    if key not in block:
        raise InvalidRequest(f"{where}.{key}: Field required")
    value = block[key]
    if not isinstance(value, str):
        raise InvalidRequest(f"{where}.{key}: Input should be a valid string")
    if non_empty and not value:
        raise InvalidRequest(f"{where}.{key}: String should have at least 1 character")
    return value


def _check_text_block(block: Mapping[str, Any], where: str) -> None:
    text = _require_str(block, "text", f"{where}.text")
    if not text:
        raise InvalidRequest(f"{where}.text: text content blocks must be non-empty")
    if not text.strip():
        raise InvalidRequest("messages: text content blocks must contain non-whitespace text")


def _check_source(block: Mapping[str, Any], where: str, kind: str) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise InvalidRequest(f"{where}.{kind}.source: Field required")
    stype = source.get("type")
    if kind == "image":
        if stype == "base64":
            if source.get("media_type") not in _IMAGE_TYPES:
                raise InvalidRequest(f"{where}.image.source.base64.media_type: Input should be "
                                     + " or ".join(repr(t) for t in _IMAGE_TYPES))
            _require_str(source, "data", f"{where}.image.source.base64", non_empty=True)
        elif stype == "url":
            _require_str(source, "url", f"{where}.image.source.url", non_empty=True)
        elif stype == "file":
            _require_str(source, "file_id", f"{where}.image.source.file", non_empty=True)
        else:
            raise InvalidRequest(f"{where}.image.source: Input tag {stype!r} found using 'type' does not match "
                                 "any of the expected tags: 'base64', 'url', 'file'")
    else:
        if stype == "base64":
            if source.get("media_type") != "application/pdf":
                raise InvalidRequest(f"{where}.document.source.base64.media_type: Input should be 'application/pdf'")
            _require_str(source, "data", f"{where}.document.source.base64", non_empty=True)
        elif stype == "text":
            if source.get("media_type") != "text/plain":
                raise InvalidRequest(f"{where}.document.source.text.media_type: Input should be 'text/plain'")
            _require_str(source, "data", f"{where}.document.source.text")
        elif stype == "content":
            if not isinstance(source.get("content"), (str, list)):
                raise InvalidRequest(f"{where}.document.source.content.content: Field required")
        elif stype == "url":
            _require_str(source, "url", f"{where}.document.source.url", non_empty=True)
        elif stype == "file":
            _require_str(source, "file_id", f"{where}.document.source.file", non_empty=True)
        else:
            raise InvalidRequest(f"{where}.document.source: Input tag {stype!r} found using 'type' does not match "
                                 "any of the expected tags: 'base64', 'text', 'content', 'url', 'file'")


def _check_tool_result_content(content: Any, where: str) -> None:
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise InvalidRequest(f"{where}.tool_result.content: Input should be a valid string or list")
    for k, item in enumerate(content):
        at = f"{where}.tool_result.content.{k}"
        if not isinstance(item, Mapping):
            raise InvalidRequest(f"{at}: Input should be a valid dictionary")
        itype = item.get("type")
        if itype not in _TOOL_RESULT_CONTENT:
            raise InvalidRequest(f"{at}: Input tag {itype!r} found using 'type' does not match any of the "
                                 "expected tags: " + ", ".join(repr(t) for t in _TOOL_RESULT_CONTENT))
        if itype == "text":
            _check_text_block(item, at)
        elif itype in ("image", "document"):
            _check_source(item, at, itype)


def _check_block(block: Any, role: str, where: str) -> str:
    """Checks one content block's own shape; returns its type."""
    if not isinstance(block, Mapping):
        raise InvalidRequest(f"{where}: Input should be a valid dictionary or object to extract fields from")
    btype = block.get("type")
    if btype not in _BLOCK_TYPES:
        raise InvalidRequest(f"{where}: Input tag {btype!r} found using 'type' does not match any of the expected "
                             "tags: " + ", ".join(repr(t) for t in _BLOCK_TYPES))
    if role == "assistant" and btype in _USER_ONLY:
        raise InvalidRequest(f"{where}: `{btype}` blocks can only be in `user` messages")
    if role == "user" and btype in _ASSISTANT_ONLY:
        raise InvalidRequest(f"{where}: `{btype}` blocks can only be in `assistant` messages")
    if btype == "text":
        _check_text_block(block, where)
    elif btype in ("image", "document"):
        _check_source(block, where, btype)
    elif btype == "thinking":
        _require_str(block, "thinking", f"{where}.thinking")
        _require_str(block, "signature", f"{where}.thinking")
    elif btype == "compaction":
        if block.get("content") is not None and not isinstance(block["content"], str):
            raise InvalidRequest(f"{where}.compaction.content: Input should be a valid string")
    elif btype == "redacted_thinking":
        _require_str(block, "data", f"{where}.redacted_thinking", non_empty=True)
    elif btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
        tool_id = _require_str(block, "id", f"{where}.{btype}")
        if not _TOOL_ID.match(tool_id):
            raise InvalidRequest(f"{where}.{btype}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        _require_str(block, "name", f"{where}.{btype}", non_empty=True)
        if "input" not in block:
            raise InvalidRequest(f"{where}.{btype}.input: Field required")
        if not isinstance(block["input"], Mapping):
            raise InvalidRequest(f"{where}.{btype}.input: Input should be a valid dictionary")
    elif btype == "tool_result":
        tool_use_id = _require_str(block, "tool_use_id", f"{where}.tool_result")
        if not _TOOL_ID.match(tool_use_id):
            raise InvalidRequest(f"{where}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        _check_tool_result_content(block.get("content"), where)
        if "is_error" in block and not isinstance(block["is_error"], bool):
            raise InvalidRequest(f"{where}.tool_result.is_error: Input should be a valid boolean")
    elif btype in _SERVER_RESULT_BLOCKS and btype != "container_upload":
        _require_str(block, "tool_use_id", f"{where}.{btype}")
    return str(btype)


def _merge_same_roles(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What the API does with consecutive same-role messages: one message, contents concatenated."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": message["role"], "content": blocks})
    return merged


def validate_messages(messages: Any, *, strict: bool = True) -> None:
    """Raises `InvalidRequest` unless `messages` is a valid `messages` array.

    strict: roles must alternate. The API itself merges consecutive same-role messages;
    `strict=False` does the same (and then checks tool pairing on the merged messages).
    """
    if not isinstance(messages, list):
        raise InvalidRequest("messages: Input should be a valid list")
    if not messages:
        raise InvalidRequest("messages: at least one message is required")
    last = len(messages) - 1
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        if not isinstance(message, Mapping):
            raise InvalidRequest(f"{where}: Input should be a valid dictionary")
        if "role" not in message:
            raise InvalidRequest(f"{where}.role: Field required")
        role = message["role"]
        if role not in ROLES:
            raise InvalidRequest(f"{where}.role: Input should be 'user' or 'assistant'")
        if "content" not in message:
            raise InvalidRequest(f"{where}.content: Field required")
        content = message["content"]
        final_assistant = i == last and role == "assistant"
        if isinstance(content, str):
            if not content and not final_assistant:
                raise InvalidRequest(f"{where}: all messages must have non-empty content except for the optional "
                                     "final assistant message")
            if content and not content.strip():
                raise InvalidRequest("messages: text content blocks must contain non-whitespace text")
        elif isinstance(content, list):
            if not content and not final_assistant:
                raise InvalidRequest(f"{where}: all messages must have non-empty content except for the optional "
                                     "final assistant message")
            for j, block in enumerate(content):
                _check_block(block, role, f"{where}.content.{j}")
        else:
            raise InvalidRequest(f"{where}.content: Input should be a valid string or list")
        extra = set(message) - {"role", "content"}
        if extra:
            raise InvalidRequest(f"{where}.{sorted(extra)[0]}: Extra inputs are not permitted")
        if final_assistant:
            tail = content if isinstance(content, str) else (
                content[-1].get("text", "") if content and content[-1].get("type") == "text" else "")
            if tail and tail != tail.rstrip():
                raise InvalidRequest("messages: final assistant content cannot end with trailing whitespace")
    if messages[0]["role"] != "user":
        raise InvalidRequest('messages: first message must use the "user" role')
    if strict:
        for i in range(1, len(messages)):
            if messages[i]["role"] == messages[i - 1]["role"]:
                role = messages[i]["role"]
                raise InvalidRequest(f'messages: roles must alternate between "user" and "assistant", but found '
                                     f'multiple "{role}" roles in a row')
        turns = [{"role": m["role"], "content": ([{"type": "text", "text": m["content"]}]
                                                 if isinstance(m["content"], str) else list(m["content"]))}
                 for m in messages]
    else:
        turns = _merge_same_roles(messages)
    _check_tool_pairing(turns)


def _check_tool_pairing(turns: Sequence[Mapping[str, Any]]) -> None:
    """Every tool_use answered in the next message (results first), no result without its call."""
    seen_ids: set[str] = set()
    pending: list[str] = []  # tool_use ids of the previous assistant message
    for i, turn in enumerate(turns):
        where = f"messages.{i}"
        blocks = turn["content"]
        if turn["role"] == "assistant":
            for j, block in enumerate(blocks):
                if block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                    if block["id"] in seen_ids:
                        raise InvalidRequest(f"{where}.content.{j}: `tool_use` ids must be unique")
                    seen_ids.add(block["id"])
                    if block["type"] == "tool_use":
                        pending.append(block["id"])
            if pending and i == len(turns) - 1:
                raise _orphan_tool_use(i, pending)
            continue
        answered: list[str] = []
        seen_other = False
        for j, block in enumerate(blocks):
            if block.get("type") != "tool_result":
                seen_other = True
                continue
            tool_use_id = block["tool_use_id"]
            if tool_use_id not in pending:
                raise InvalidRequest(f"{where}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                                     f"{tool_use_id}. Each `tool_result` block must have a corresponding `tool_use` "
                                     "block in the previous message.")
            if tool_use_id in answered:
                raise InvalidRequest(f"{where}.content.{j}: each tool_use must have a single result. Found multiple "
                                     f"`tool_result` blocks with id: {tool_use_id}")
            if seen_other:
                raise InvalidRequest(f"{where}.content.{j}: `tool_result` blocks must come first in the user message, "
                                     "before any other content")
            answered.append(tool_use_id)
        missing = [tool_id for tool_id in pending if tool_id not in answered]
        if missing:
            raise _orphan_tool_use(i - 1, missing)
        pending = []


def _orphan_tool_use(index: int, ids: Sequence[str]) -> InvalidRequest:
    return InvalidRequest(f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
                          f"after: {', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` "
                          "block in the next message.")


def _check_system(system: Any) -> None:
    if isinstance(system, str):
        return
    if not isinstance(system, list):
        raise InvalidRequest("system: Input should be a valid string or list")
    for j, block in enumerate(system):
        where = f"system.{j}"
        if not isinstance(block, Mapping):
            raise InvalidRequest(f"{where}: Input should be a valid dictionary")
        if block.get("type") != "text":
            raise InvalidRequest(f"{where}.type: Input should be 'text'")
        text = _require_str(block, "text", where)
        if not text:
            raise InvalidRequest("system: text content blocks must be non-empty")


def _check_tools(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a valid list")
    names: list[str] = []
    for k, tool in enumerate(tools):
        where = f"tools.{k}"
        if not isinstance(tool, Mapping):
            raise InvalidRequest(f"{where}: Input should be a valid dictionary")
        ttype = tool.get("type")
        if ttype not in (None, "custom"):  # an Anthropic-defined tool: {"type": "web_search_20250305", "name": …}
            name = _require_str(tool, "name", f"{where}.{ttype}", non_empty=True)
        else:
            name = _require_str(tool, "name", f"{where}.custom")
            if not _TOOL_NAME.match(name):
                raise InvalidRequest(f"{where}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
            if "description" in tool and not isinstance(tool["description"], str):
                raise InvalidRequest(f"{where}.custom.description: Input should be a valid string")
            schema = tool.get("input_schema")
            if schema is None:
                raise InvalidRequest(f"{where}.custom.input_schema: Field required")
            if not isinstance(schema, Mapping) or schema.get("type") != "object":
                raise InvalidRequest(f"{where}.custom.input_schema.type: Input should be 'object'")
        if name in names:
            raise InvalidRequest("tools: Tool names must be unique.")
        names.append(name)
    return names


def validate_request(body: Any, *, strict: bool = True, endpoint: str = "messages") -> None:
    """Raises `InvalidRequest` unless `body` is a valid request to `/v1/messages` (or, with
    ``endpoint="count_tokens"``, to `/v1/messages/count_tokens`, which takes no `max_tokens`)."""
    if not isinstance(body, Mapping):
        raise InvalidRequest("Input should be a valid dictionary or object to extract fields from")
    allowed = _MESSAGES_FIELDS if endpoint == "messages" else _COUNT_FIELDS
    for key in body:
        if key not in allowed:
            raise InvalidRequest(f"{key}: Extra inputs are not permitted")
    if "model" not in body:
        raise InvalidRequest("model: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise InvalidRequest("model: String should have at least 1 character")
    if endpoint == "messages":
        if "max_tokens" not in body:
            raise InvalidRequest("max_tokens: Field required")
        if not _is_int(body["max_tokens"]):
            raise InvalidRequest("max_tokens: Input should be a valid integer")
        if body["max_tokens"] < 1:
            raise InvalidRequest("max_tokens: Input should be greater than or equal to 1")
    if "messages" not in body:
        raise InvalidRequest("messages: Field required")
    validate_messages(body["messages"], strict=strict)
    if body.get("system") is not None:
        _check_system(body["system"])
    names = _check_tools(body["tools"]) if body.get("tools") is not None else []
    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, Mapping) or choice.get("type") not in ("auto", "any", "tool", "none"):
            raise InvalidRequest("tool_choice: Input tag found using 'type' does not match any of the expected tags: "
                                 "'auto', 'any', 'tool', 'none'")
        if choice["type"] == "tool" and choice.get("name") not in names:
            raise InvalidRequest(f"tool_choice.tool.name: tool {choice.get('name')!r} is not among the request's tools")
    for key, low, high in (("temperature", 0.0, 1.0), ("top_p", 0.0, 1.0)):
        value = body.get(key)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                  or not low <= value <= high):
            raise InvalidRequest(f"{key}: Input should be a number between {low:g} and {high:g}")
    stops = body.get("stop_sequences")
    if stops is not None and (not isinstance(stops, list) or not all(isinstance(s, str) and s.strip() for s in stops)):
        raise InvalidRequest("stop_sequences: each stop sequence must contain non-whitespace")
    thinking = body.get("thinking")
    if thinking is not None:
        if not isinstance(thinking, Mapping) or thinking.get("type") not in ("enabled", "disabled", "adaptive"):
            raise InvalidRequest("thinking: Input tag found using 'type' does not match any of the expected tags: "
                                 "'enabled', 'disabled', 'adaptive'")
        if thinking["type"] == "enabled":
            budget = thinking.get("budget_tokens")
            if not _is_int(budget) or budget < 1024:
                raise InvalidRequest("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if endpoint == "messages" and budget >= body["max_tokens"]:
                raise InvalidRequest("`max_tokens` must be greater than `thinking.budget_tokens`")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise InvalidRequest("stream: Input should be a valid boolean")


# --------------------------------------------------------------------------- token estimate


def _json(value: Any) -> str:
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
            texts.append(str(block.get("name", "")) + _json(block.get("input", {})))
        elif btype == "tool_result":
            inner, n = _content_pieces(block.get("content") or "")
            texts.extend(inner)
            images += n
        elif btype == "redacted_thinking":
            continue
        else:
            texts.append(_json(block))
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
        texts.append(_json(tool))
    messages = body.get("messages") or ()
    for message in messages:
        if isinstance(message, Mapping):
            inner, n = _content_pieces(message.get("content"))
            texts.extend(inner)
            images += n
    texts = [t for t in texts if t]
    return REQUEST_OVERHEAD + MESSAGE_OVERHEAD * len(messages) + sum(counter.count_many(texts)) + images * IMAGE_TOKENS


# --------------------------------------------------------------------------- scripted replies


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


def _default_summary(request: RecordedRequest) -> str:
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


# --------------------------------------------------------------------------- the server


class AnthropicServer:
    """A Messages API server on 127.0.0.1 (a free port unless `port` is given), in a thread.

    strict: roles must alternate (the API merges consecutive same-role messages; we don't).
    context_window: answer requests estimated above this many input tokens with "prompt is too long";
        the Models API (``GET /v1/models/{id}``) states it as ``max_input_tokens`` unless
        `states_window` is False (a server that only says it in its errors).
    counter: how texts are counted for the estimate (default chars/4; pass `TiktokenCounter()` for tiktoken).
    default: what a request gets when the queue is empty (a reply-like; default a summary-shaped text).
    models: if given, any other model is answered with 404 not_found_error, as the API does.
    api_key: if given, requests must carry it (`x-api-key` or `Authorization: Bearer`), else 401.
    """

    def __init__(self, *, strict: bool = True, context_window: int | None = None,
                 counter: TokenCounter | None = None, default: ReplyLike | None = None,
                 models: Collection[str] | None = None, api_key: str | None = None,
                 host: str = "127.0.0.1", port: int = 0, states_window: bool = True) -> None:
        self.strict = strict
        self.context_window = context_window
        self.states_window = states_window
        self.counter = counter or HeuristicCounter()
        self.default: ReplyLike = default if default is not None else _default_summary
        self.models = set(models) if models is not None else None
        self.api_key = api_key
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._queue: collections.deque[ReplyLike] = collections.deque()
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> AnthropicServer:
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"api": self})
        httpd = ThreadingHTTPServer((self._host, self._port), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=f"anthropic-server-{httpd.server_address[1]}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    close = stop

    def __enter__(self) -> AnthropicServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running (use it as a context manager or call start())")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The `base_url` to give the SDK client."""
        return f"http://{self._host}:{self.port}"

    # ------------------------------------------------------------------ scripting

    def enqueue(self, *replies: ReplyLike) -> AnthropicServer:
        """What the next valid /v1/messages requests get, in order. Each is a `MessageReply` or
        `ErrorReply`, a str (a text reply), a dict (sent as the 200 JSON body as is), or a callable
        taking the `RecordedRequest` and returning any of these."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def reply(self, text: str, **kwargs: Any) -> AnthropicServer:
        """Queue a text reply (kwargs: stop_reason, model, input_tokens, output_tokens, headers)."""
        return self.enqueue(text_reply(text, **kwargs))

    def reply_tool_use(self, name: str, input: Mapping[str, Any], *, id: str | None = None,
                       text: str | None = None, **kwargs: Any) -> AnthropicServer:
        """Queue a reply that calls a tool (stop_reason "tool_use")."""
        return self.enqueue(tool_use_reply(name, input, id=id, text=text, **kwargs))

    def error(self, status: int, type: str, message: str, *,
              headers: Mapping[str, str] | None = None) -> AnthropicServer:
        """Queue an error response in the API's shape."""
        return self.enqueue(ErrorReply(status, type, message, dict(headers or {})))

    def overloaded(self, *, retry_after: float | None = None) -> AnthropicServer:
        """Queue a 529 overloaded_error (retried by the SDK). `retry_after` seconds go out as
        `retry-after-ms`, which the SDK prefers; without it the SDK backs off ~0.5 s."""
        headers = {"retry-after-ms": str(round(retry_after * 1000))} if retry_after is not None else {}
        return self.error(529, "overloaded_error", "Overloaded", headers=headers)

    def rate_limited(self, *, retry_after: float = 1.0) -> AnthropicServer:
        """Queue a 429 rate_limit_error with a `retry-after` header (seconds; floats are honoured by the SDK)."""
        return self.error(429, "rate_limit_error",
                          "Number of request tokens has exceeded your per-minute rate limit",
                          headers={"retry-after": f"{retry_after:g}"})

    def server_error(self, *, retry_after: float | None = None) -> AnthropicServer:
        """Queue a 500 api_error (retried by the SDK)."""
        headers = {"retry-after-ms": str(round(retry_after * 1000))} if retry_after is not None else {}
        return self.error(500, "api_error", "Internal server error", headers=headers)

    def prompt_too_long(self, tokens: int = 212_000, limit: int = 200_000) -> AnthropicServer:
        """Queue the 400 "prompt is too long: N tokens > M maximum"."""
        return self.enqueue(prompt_too_long(tokens, limit))

    @property
    def pending(self) -> int:
        """Queued replies not yet used."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget queued replies, recorded requests and handler errors."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._errors.clear()

    # ------------------------------------------------------------------ inspection

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The requests to POST /v1/messages."""
        return [r for r in self.requests if r.path == "/v1/messages"]

    @property
    def count_requests(self) -> list[RecordedRequest]:
        """The requests to POST /v1/messages/count_tokens."""
        return [r for r in self.requests if r.path == "/v1/messages/count_tokens"]

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised by reply callables (each was answered with a non-retried 500)."""
        with self._lock:
            return list(self._errors)

    def estimate(self, body: Mapping[str, Any]) -> int:
        """The input tokens this server reports for a request body."""
        return estimate_input_tokens(body, self.counter)

    # ------------------------------------------------------------------ handling (server threads)

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self._requests.append(request)
            return len(self._requests) - 1

    def _answered(self, index: int, status: int) -> None:
        with self._lock:
            old = self._requests[index]
            self._requests[index] = RecordedRequest(old.method, old.path, old.query, old.headers, old.body,
                                                    old.raw, status)

    def _next_reply(self) -> ReplyLike:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def _resolve(self, reply: ReplyLike, request: RecordedRequest) -> Reply | Mapping[str, Any]:
        for _ in range(10):  # a callable may return another reply-like
            if isinstance(reply, (MessageReply, ErrorReply)):
                return reply
            if isinstance(reply, str):
                return text_reply(reply)
            if isinstance(reply, Mapping):
                return reply
            if callable(reply):
                reply = reply(request)
                continue
            break
        raise TypeError(f"a reply must be a MessageReply, ErrorReply, str, dict or callable, not {reply!r}")

    def _request_id(self) -> str:
        return f"req_local{next(self._ids):06d}"

    def _message_body(self, reply: MessageReply, request: RecordedRequest) -> dict[str, Any]:
        body = request.body
        output_text = "".join(b["text"] if b.get("type") == "text" else b.get("content") or ""
                              if b.get("type") == "compaction" else _json(b.get("input", {})) for b in reply.content)
        return {
            "id": f"msg_local{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or body.get("model"),
            "content": [dict(b) for b in reply.content],
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.input_tokens if reply.input_tokens is not None else self.estimate(body),
                "output_tokens": (reply.output_tokens if reply.output_tokens is not None
                                  else self.counter.count(output_text)),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def _model_info(self, model: str) -> tuple[int, dict[str, str], bytes]:
        """``GET /v1/models/{id}``: the model's `ModelInfo`, its window when the server states it."""
        if self.models is not None and model not in self.models:
            return _error(404, "not_found_error", f"model: {model}")
        window = self.context_window if self.states_window else None
        return 200, {}, _json_bytes({"type": "model", "id": model, "display_name": model,
                                     "created_at": "2026-01-01T00:00:00Z", "lifecycle": "active",
                                     "max_input_tokens": window, "max_tokens": None})

    def handle(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        """Answer one request: (status, headers, body)."""
        model_info = request.method == "GET" and request.path.startswith("/v1/models/")
        if not model_info and (request.method != "POST" or
                               request.path not in ("/v1/messages", "/v1/messages/count_tokens")):
            return _error(404, "not_found_error", f"Not found: {request.method} {request.path}")
        if self.api_key is not None:
            given = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix(
                "Bearer ")
            if given != self.api_key:
                return _error(401, "authentication_error", "invalid x-api-key")
        elif not (request.headers.get("x-api-key") or request.headers.get("authorization")):
            return _error(401, "authentication_error", "x-api-key header is required")
        if not request.headers.get("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version: header is required")
        if model_info:
            return self._model_info(request.path.removeprefix("/v1/models/"))
        if request.body is None:
            return _error(400, "invalid_request_error", "The request body is not valid JSON.")
        count_only = request.path == "/v1/messages/count_tokens"
        try:
            validate_request(request.body, strict=self.strict, endpoint="count_tokens" if count_only else "messages")
        except InvalidRequest as exc:
            return _error(400, "invalid_request_error", exc.message)
        if self.models is not None and request.body["model"] not in self.models:
            return _error(404, "not_found_error", f"model: {request.body['model']}")
        tokens = self.estimate(request.body)
        if count_only:
            return 200, {}, _json_bytes({"input_tokens": tokens})
        if self.context_window is not None and tokens > self.context_window:
            return _error(400, "invalid_request_error",
                          f"prompt is too long: {tokens} tokens > {self.context_window} maximum")
        edit = _compact_edit(request.body)
        if edit is not None and COMPACT_BETA not in request.headers.get("anthropic-beta", ""):
            return _error(400, "invalid_request_error",
                          f"context_management: compact_20260112 requires the '{COMPACT_BETA}' beta header")
        trigger = ((edit or {}).get("trigger") or {}).get("value", COMPACT_TRIGGER)
        compaction = _compaction_block(request, edit) if edit is not None and tokens >= trigger else None
        if compaction is not None and edit is not None and edit.get("pause_after_compaction"):
            paused = self._message_body(MessageReply(content=(compaction,), stop_reason="compaction"), request)
            return 200, {}, _json_bytes(paused)
        try:
            reply = self._resolve(self._next_reply(), request)
        except Exception as exc:  # a test's callable failed: say so, and ask the SDK not to retry
            with self._lock:
                self._errors.append(exc)
            status, headers, body = _error(500, "api_error", "reply callable raised: "
                                           + "".join(traceback.format_exception_only(exc)).strip())
            return status, {**headers, "x-should-retry": "false"}, body
        if isinstance(reply, ErrorReply):
            status, headers, body = _error(reply.status, reply.type, reply.message)
            return status, {**headers, **reply.headers}, body
        if isinstance(reply, Mapping):
            return 200, {}, _json_bytes(reply)
        if compaction is not None:  # not paused: the compaction block opens the reply
            reply = MessageReply((compaction, *reply.content), reply.stop_reason, reply.model, reply.input_tokens,
                                 reply.output_tokens, reply.headers)
        message = self._message_body(reply, request)
        if request.body.get("stream"):
            return 200, {"content-type": "text/event-stream", **reply.headers}, _sse(message)
        return 200, dict(reply.headers), _json_bytes(message)


def _compact_edit(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The request's ``compact_20260112`` context-management edit, if it asks for one."""
    management = body.get("context_management")
    edits = management.get("edits") if isinstance(management, Mapping) else None
    for edit in edits or ():
        if isinstance(edit, Mapping) and edit.get("type") == "compact_20260112":
            return edit
    return None


def _compaction_block(request: RecordedRequest, edit: Mapping[str, Any]) -> dict[str, Any]:
    """A ``compaction`` block as the API returns it: a readable summary, and opaque parts the client
    must send back verbatim (here the base64 of the messages it replaces, and a digest of both)."""
    summary = _default_summary(request)
    if edit.get("instructions"):
        summary += f"\n\n(instructions: {edit['instructions']})"
    encrypted = base64.b64encode(_json_bytes(request.messages)).decode("ascii")
    signature = base64.b64encode(hashlib.sha256((summary + encrypted).encode("utf-8")).digest()).decode("ascii")
    return {"type": "compaction", "content": summary, "encrypted_content": encrypted, "signature": signature,
            "tool_changes": []}


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _error(status: int, error_type: str, message: str) -> tuple[int, dict[str, str], bytes]:
    return status, {}, _json_bytes({"type": "error", "error": {"type": error_type, "message": message}})


def _sse(message: Mapping[str, Any]) -> bytes:
    """The event stream of a finished message (text, tool_use and thinking blocks, deltas as the API sends them)."""
    events: list[tuple[str, dict[str, Any]]] = []
    usage = dict(message["usage"])
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events.append(("message_start", {"type": "message_start", "message": start}))
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
        elif block["type"] == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {**block, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(block["input"])}}))
        elif block["type"] == "thinking":  # as the API streams it: empty block, then the text and its signature
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "thinking", "thinking": "",
                                                                     "signature": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "thinking_delta", "thinking": block["thinking"]}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "signature_delta",
                                                             "signature": block.get("signature", "")}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": block}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    api: AnthropicServer
    protocol_version = "HTTP/1.1"   # keep-alive, as the SDK's connection pool expects
    timeout = 30                    # an idle keep-alive connection does not pin a thread forever
    disable_nagle_algorithm = True  # headers and body are two writes: without this, 40 ms of delayed ACK each
    server_version = "sessionstore-anthropic-server/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: tests assert on requests
        pass

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(self.path)
        recorded = RecordedRequest(self.command, parts.path, parts.query,
                                   {k.lower(): v for k, v in self.headers.items()}, body, raw)
        index = self.api._record(recorded)
        status, headers, payload = self.api.handle(recorded)
        self.api._answered(index, status)
        self.send_response(status)
        headers = {k.lower(): v for k, v in headers.items()}
        self.send_header("content-type", headers.pop("content-type", "application/json"))
        self.send_header("request-id", self.api._request_id())
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_POST = _serve
    do_GET = _serve
    do_PUT = _serve
    do_DELETE = _serve
