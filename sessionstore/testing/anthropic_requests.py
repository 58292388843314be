"""What the Messages API accepts: the checks the local Anthropic server runs on every request.

Roles and their alternation, block shapes per role, tool_use/tool_result pairing, system, tools,
thinking and the top-level fields of ``/v1/messages`` and ``/v1/messages/count_tokens``, each
refused with the words the API uses. Apart from the server (anthropic_server.py) because it is
used without HTTP too: `validate_request(body)` tells a test whether a request our code built
would be accepted, and raises `InvalidRequest` with the message the server would send.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["ROLES", "InvalidRequest", "validate_messages", "validate_request"]


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
