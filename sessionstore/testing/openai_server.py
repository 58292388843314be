"""A local server that speaks OpenAI's Responses API, for tests that run the real `openai` SDK
and the Agents SDK's `Runner` against it.

It is the Anthropic server's machinery (scripted reply queue, recorded requests, lifecycle)
answering ``POST /v1/responses`` instead: a queued text reply becomes an assistant
``message`` output item, a tool-use reply a ``function_call`` item, an error the API's error
body, and ``stream: true`` gets the Responses event stream (``response.created`` …
``response.completed``). ``POST /v1/responses/compact`` answers as ``responses.compact`` does: the
conversation's user messages, then one opaque ``compaction`` item (a ``previous_response_id`` is
resolved to the conversation this server answered)::

    with OpenAIServer() as server:
        server.reply_tool_use("get_weather", {"city": "Paris"})
        server.reply("It is sunny in Paris.")
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="test")
        ...
        server.response_requests[-1].body["input"]   # exactly what the model was sent

Requests are checked the way the API checks the conversation (every ``function_call_output``
answers a ``function_call`` earlier in the input, every call has its output, item shapes),
so a test that gets a reply has proven that the request was valid.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..tokens import HeuristicCounter
from .anthropic_server import AnthropicServer, ErrorReply, InvalidRequest, MessageReply, RecordedRequest, ReplyLike

__all__ = ["CodedErrorReply", "OpenAIServer", "replaced_by", "validate_responses_request"]

RESPONSES_PATH: Final = "/v1/responses"
CHAT_PATH: Final = "/v1/chat/completions"
COMPACT_PATH: Final = "/v1/responses/compact"
MODELS_PATH: Final = "/v1/models"
_ROLES: Final = ("user", "assistant", "system", "developer")
_INPUT_PARTS: Final = frozenset({"input_text", "output_text", "input_image", "input_file", "input_audio", "refusal"})
_ids = itertools.count(1)


def _error_body(status: int, error_type: str, message: str,
                code: str | None = None) -> tuple[int, dict[str, str], bytes]:
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return status, {}, json.dumps(body).encode("utf-8")


# --------------------------------------------------------------------------- validation


def validate_responses_request(body: Any) -> None:
    """Raise `InvalidRequest` with the API's message when `body` is not a valid Responses request."""
    if not isinstance(body, Mapping):
        raise InvalidRequest("The request body must be a JSON object.")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequest("Missing required parameter: 'model'.")
    items = body.get("input", [])
    if isinstance(items, str):
        return
    if not isinstance(items, list):
        raise InvalidRequest("Invalid type for 'input': expected a string or an array of input items.")
    calls: dict[str, int] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidRequest(f"Invalid type for '{where}': expected an object.")
        itype = item.get("type", "message" if "role" in item else None)
        if itype == "message":
            _check_message(item, where)
        elif itype == "function_call":
            for key in ("call_id", "name", "arguments"):
                if not isinstance(item.get(key), str):
                    raise InvalidRequest(f"Missing required parameter: '{where}.{key}'.")
            calls[item["call_id"]] = i
        elif itype == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                raise InvalidRequest(f"No tool call found for function call output with call_id {call_id}.")
            if not isinstance(item.get("output"), (str, list)):
                raise InvalidRequest(f"Missing required parameter: '{where}.output'.")
            answered.add(call_id)
        elif itype == "compaction":
            if not isinstance(item.get("encrypted_content"), str) or not item["encrypted_content"]:
                raise InvalidRequest(f"Missing required parameter: '{where}.encrypted_content'.")
        elif not isinstance(itype, str):
            raise InvalidRequest(f"Missing required parameter: '{where}.type'.")
    missing = [cid for cid in calls if cid not in answered]
    if missing:
        raise InvalidRequest(f"No tool output found for function call {missing[0]}.")


def _check_message(item: Mapping[str, Any], where: str) -> None:
    if item.get("role") not in _ROLES:
        raise InvalidRequest(f"Invalid value: '{item.get('role')}'. Supported values are: 'assistant', 'system', "
                             f"'developer', and 'user'. ({where}.role)")
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise InvalidRequest(f"Invalid type for '{where}.content': expected one of a string or array of input items.")
    for j, part in enumerate(content):
        if not isinstance(part, Mapping) or part.get("type") not in _INPUT_PARTS:
            raise InvalidRequest(f"Invalid value for '{where}.content[{j}].type'.")
        if part["type"] in ("input_text", "output_text") and not isinstance(part.get("text"), str):
            raise InvalidRequest(f"Missing required parameter: '{where}.content[{j}].text'.")


def _input_texts(body: Mapping[str, Any]) -> list[str]:
    texts = [body["instructions"]] if isinstance(body.get("instructions"), str) else []
    items = body.get("input", [])
    if isinstance(items, str):
        return [*texts, items]
    for item in items:
        content = item.get("content") if isinstance(item, Mapping) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        elif isinstance(item, Mapping):
            texts.append(json.dumps(item, sort_keys=True))
    for tool in body.get("tools") or ():
        texts.append(json.dumps(tool, sort_keys=True))
    return texts


def replaced_by(item: Mapping[str, Any]) -> list[Any]:
    """The items a compaction item of this server stands for (tests check what it replaced)."""
    return list(json.loads(zlib.decompress(base64.b64decode(str(item["encrypted_content"]).removeprefix("gAAAA")))))


# --------------------------------------------------------------------------- the server


class OpenAIServer(AnthropicServer):
    """A Responses API server on 127.0.0.1, scripted like `AnthropicServer` (same queue and replies).

    An empty queue answers with ``default`` (a short text). Any non-empty API key is accepted
    unless `api_key` is given. ``GET /v1/models`` lists `served` (the models a local server serves).

    context_window: a Chat Completions request estimated (chars/4) over this many tokens is
    answered as `flavour`'s server answers it, which also decides where the server states its
    window:
      - ``openai``: 400 ``context_length_exceeded`` when input + max tokens exceed it; stated nowhere;
      - ``vllm``: the same words, no error code; ``max_model_len`` in ``/v1/models``;
      - ``llama-cpp-python``: 400 when the input alone exceeds it ("you requested N tokens (M in the
        messages, K in the completion)"); stated nowhere (what its server does);
      - ``llama.cpp``: 400 ``exceed_context_size_error`` with ``n_prompt_tokens`` and ``n_ctx``;
        ``n_ctx`` in ``GET /props``;
      - ``ollama``: no error: the prompt is cut silently (`truncated` counts them); ``num_ctx`` in
        ``POST /api/show``.
    """

    FLAVOURS: Final = ("openai", "vllm", "llama-cpp-python", "llama.cpp", "ollama")

    def __init__(self, *, default: ReplyLike = "OK.", api_key: str | None = None, host: str = "127.0.0.1",
                 port: int = 0, served: tuple[str, ...] = ("local-model",), context_window: int | None = None,
                 flavour: str = "openai") -> None:
        if flavour not in self.FLAVOURS:
            raise ValueError(f"flavour must be one of {', '.join(self.FLAVOURS)}, got {flavour!r}")
        super().__init__(default=default, api_key=api_key, host=host, port=port, counter=HeuristicCounter(),
                         context_window=context_window)
        self.served = served
        self.flavour = flavour
        self.truncated = 0  # requests an ``ollama`` server cut to its window without a word
        self._conversations: dict[str, list[dict[str, Any]]] = {}  # response id → its input and output items

    @property
    def response_requests(self) -> list[RecordedRequest]:
        """The requests to POST /v1/responses, in arrival order."""
        return [r for r in self.requests if r.path == RESPONSES_PATH]

    def estimate(self, body: Mapping[str, Any]) -> int:
        """The input tokens reported for a request: chars/4 of every text it carries."""
        return sum(self.counter.count_many([t for t in _input_texts(body) if t]))

    def prompt_too_long(self, tokens: int = 212_000, limit: int = 200_000) -> OpenAIServer:
        """Queue the API's 400 ``context_length_exceeded``."""
        self.enqueue(ErrorReply(400, "invalid_request_error",
                                f"This model's maximum context length is {limit} tokens. However, your messages "
                                f"resulted in {tokens} tokens. Please reduce the length of the messages."))
        return self

    @property
    def compact_requests(self) -> list[RecordedRequest]:
        """The requests to POST /v1/responses/compact, in arrival order."""
        return [r for r in self.requests if r.path == COMPACT_PATH]

    def _server_route(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes] | None:
        """The endpoints beside the API: the model list, and where `flavour` states its window."""
        window = self.context_window
        route = (request.method, request.path)
        if route == ("GET", MODELS_PATH):
            extra = {"max_model_len": window} if self.flavour == "vllm" and window else {}
            return 200, {}, json.dumps({"object": "list", "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "local", **extra}
                for name in self.served]}).encode("utf-8")
        if route == ("GET", "/props") and self.flavour == "llama.cpp":
            return 200, {}, json.dumps({"default_generation_settings": {"n_ctx": window or 4096},
                                        "total_slots": 1}).encode("utf-8")
        if route == ("POST", "/api/show") and self.flavour == "ollama":
            parameters = f"num_ctx {window}\nstop <|im_end|>" if window else "stop <|im_end|>"
            return 200, {}, json.dumps({"parameters": parameters, "model_info": {"llama.context_length": 8192},
                                        "details": {"format": "gguf"}}).encode("utf-8")
        if route == ("GET", "/api/ps") and self.flavour == "ollama":
            return 200, {}, json.dumps({"models": []}).encode("utf-8")
        return None

    def _over_window(self, body: Mapping[str, Any], input_tokens: int) -> tuple[int, dict[str, str], bytes] | None:
        """The answer of `flavour`'s server to a chat request over `context_window` (None: it fits)."""
        window = self.context_window
        output = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        if window is None or input_tokens + (0 if self.flavour in ("llama-cpp-python", "llama.cpp") else output) \
                <= window:
            return None
        if self.flavour == "ollama":
            with self._lock:
                self.truncated += 1
            return None
        if self.flavour == "llama.cpp":
            error = {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                     "type": "exceed_context_size_error", "n_prompt_tokens": input_tokens, "n_ctx": window}
            return 400, {}, json.dumps({"error": error}).encode("utf-8")
        words = (f"This model's maximum context length is {window} tokens. However, you requested "
                 f"{input_tokens + output} tokens ({input_tokens} in the messages, {output} in the completion). "
                 "Please reduce the length of the messages or completion.")
        code = None if self.flavour == "vllm" else "context_length_exceeded"
        return _error_body(400, "BadRequestError" if self.flavour == "vllm" else "invalid_request_error", words, code)

    def handle(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        routed = self._server_route(request)
        if routed is not None:
            return routed
        if request.method != "POST" or request.path not in (RESPONSES_PATH, CHAT_PATH, COMPACT_PATH):
            return _error_body(404, "invalid_request_error", f"Invalid URL ({request.method} {request.path})")
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not given or (self.api_key is not None and given != self.api_key):
            return _error_body(401, "invalid_request_error", "Incorrect API key provided.", "invalid_api_key")
        if request.path == CHAT_PATH:
            return self._chat(request)
        try:
            validate_responses_request(request.body)
        except InvalidRequest as exc:
            return _error_body(400, "invalid_request_error", exc.message)
        if request.path == COMPACT_PATH:
            return self._compact(request.body)
        reply = self._scripted(request)
        if isinstance(reply, tuple):
            return reply
        response = self._response(reply, request.body)
        conversation = [*self._history(request.body), *response["output"]]
        with self._lock:
            self._conversations[response["id"]] = conversation
        if request.body.get("stream"):
            return 200, {"content-type": "text/event-stream", **reply.headers}, _sse(response)
        return 200, dict(reply.headers), json.dumps(response).encode("utf-8")

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The requests to POST /v1/chat/completions, in arrival order."""
        return [r for r in self.requests if r.path == CHAT_PATH]

    def context_length_exceeded(self, tokens: int = 130_000, limit: int = 128_000) -> OpenAIServer:
        """Queue the 400 OpenAI sends for a request over the model's context window, code and all."""
        self.enqueue(CodedErrorReply(400, "invalid_request_error",
                                     f"This model's maximum context length is {limit} tokens. However, your "
                                     f"messages resulted in {tokens} tokens. Please reduce the length of the "
                                     f"messages.", code="context_length_exceeded", param="messages"))
        return self

    def _scripted(self, request: RecordedRequest) -> MessageReply | tuple[int, dict[str, str], bytes]:
        """The next scripted reply, or the finished HTTP answer of an error or a raw JSON reply."""
        try:
            reply = self._resolve(self._next_reply(), request)
        except Exception as exc:  # a test's callable failed: say so, and ask the SDK not to retry
            with self._lock:
                self._errors.append(exc)
            status, headers, body = _error_body(500, "server_error", f"reply callable raised: {exc!r}")
            return status, {**headers, "x-should-retry": "false"}, body
        if isinstance(reply, ErrorReply):
            error = {"message": reply.message, "type": reply.type, "param": getattr(reply, "param", None),
                     "code": getattr(reply, "code", None)}
            return reply.status, dict(reply.headers), json.dumps({"error": error}).encode("utf-8")
        if isinstance(reply, Mapping):
            return 200, {}, json.dumps(reply).encode("utf-8")
        return reply

    def _chat(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        body = request.body
        if not isinstance(body, Mapping) or not isinstance(body.get("model"), str) or not body["model"]:
            return _error_body(400, "invalid_request_error", "you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, Mapping) and m.get("role") in (*_ROLES, "tool") for m in messages):
            return _error_body(400, "invalid_request_error", "Invalid value for 'messages': a non-empty list "
                               "of messages with a valid role is required.")
        texts = [m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content")) for m in messages]
        counted = sum(self.counter.count_many([t for t in texts if t]))
        refused = self._over_window(body, counted)
        if refused is not None:
            return refused
        reply = self._scripted(request)
        if isinstance(reply, tuple):
            return reply
        input_tokens = reply.input_tokens if reply.input_tokens is not None else counted
        text = "".join(b.get("text", "") for b in reply.content)
        output_tokens = reply.output_tokens if reply.output_tokens is not None else self.counter.count(text or " ")
        completion = _chat_completion(reply, body, input_tokens, output_tokens)
        if body.get("stream"):
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            return 200, {"content-type": "text/event-stream", **reply.headers}, _chat_sse(completion, include)
        return 200, dict(reply.headers), json.dumps(completion).encode("utf-8")

    def _history(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The conversation a request continues: its ``previous_response_id``'s items, then its input."""
        with self._lock:
            items = list(self._conversations.get(body.get("previous_response_id") or "", ()))
        given = body.get("input") or []
        return [*items, *([{"type": "message", "role": "user", "content": given}] if isinstance(given, str) else given)]

    def _compact(self, request: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
        """``responses.compact``: the input's user messages, then one opaque ``compaction`` item.

        The item's ``encrypted_content`` is the base64 of what it replaces, compressed (so a test
        can check that the very items came back: `replaced_by`; and the item is smaller than what
        it replaces, as the provider's is; ``output_tokens`` counts it); real servers encrypt,
        clients must treat it as opaque."""
        items = self._history(request)
        kept = [_user_output_message(item) for item in items
                if item.get("type", "message") == "message" and item.get("role") == "user"]
        replaced = zlib.compress(json.dumps(items, sort_keys=True, separators=(",", ":")).encode("utf-8"), 9)
        compaction = {"id": f"cmp_{uuid.uuid4().hex[:24]}", "type": "compaction",
                      "encrypted_content": "gAAAA" + base64.b64encode(replaced).decode("ascii")}
        input_tokens = self.estimate(request)
        output_tokens = self.counter.count(compaction["encrypted_content"])
        body = {"id": f"resp_local{next(_ids):06d}", "object": "response.compaction",
                "created_at": int(time.time()), "output": [*kept, compaction],
                "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": input_tokens + output_tokens}}
        return 200, {}, json.dumps(body).encode("utf-8")

    def _response(self, reply: MessageReply, body: Mapping[str, Any]) -> dict[str, Any]:
        output = _output_items(reply)
        input_tokens = reply.input_tokens if reply.input_tokens is not None else self.estimate(body)
        output_tokens = reply.output_tokens if reply.output_tokens is not None else self.counter.count(
            json.dumps(output))
        return {
            "id": f"resp_local{next(_ids):06d}", "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": reply.model or body.get("model"), "output": output,
            "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
            "tool_choice": body.get("tool_choice", "auto"), "tools": list(body.get("tools") or []),
            "instructions": body.get("instructions"), "previous_response_id": body.get("previous_response_id"),
            "error": None, "incomplete_details": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
            "text": {"format": {"type": "text"}}, "truncation": "disabled",
            "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": input_tokens + output_tokens},
        }


# --------------------------------------------------------------------------- Chat Completions


@dataclass(frozen=True, slots=True)
class CodedErrorReply(ErrorReply):
    """An error whose body carries OpenAI's ``code`` and ``param`` (e.g. ``context_length_exceeded``)."""

    code: str | None = None
    param: str | None = None


_FINISH: Final = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


def _chat_completion(reply: MessageReply, body: Mapping[str, Any], input_tokens: int,
                     output_tokens: int) -> dict[str, Any]:
    """A ``chat.completion`` object: one choice holding the reply's text and tool calls."""
    text = "".join(b["text"] for b in reply.content if b.get("type") == "text")
    calls = [{"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
             for b in reply.content if b.get("type") == "tool_use"]
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = calls
    return {"id": f"chatcmpl-local{next(_ids):06d}", "object": "chat.completion", "created": int(time.time()),
            "model": reply.model or body.get("model"), "system_fingerprint": None, "service_tier": "default",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": _FINISH.get(reply.stop_reason, "stop")}],
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                      "total_tokens": input_tokens + output_tokens,
                      "prompt_tokens_details": {"cached_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": 0}}}


def _chat_sse(completion: Mapping[str, Any], include_usage: bool) -> bytes:
    """The ``chat.completion.chunk`` stream of a finished completion, ending with ``[DONE]``."""
    head = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    choice = completion["choices"][0]
    message = choice["message"]
    chunks: list[dict[str, Any]] = [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
    if message["content"]:
        chunks.append({"index": 0, "delta": {"content": message["content"]}, "finish_reason": None})
    for n, call in enumerate(message.get("tool_calls", [])):
        chunks.append({"index": 0, "delta": {"tool_calls": [{"index": n, **call}]}, "finish_reason": None})
    chunks.append({"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]})
    events = [{**head, "object": "chat.completion.chunk", "choices": [c], "usage": None} for c in chunks]
    if include_usage:
        events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]})
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode("utf-8")


def _output_items(reply: MessageReply) -> list[dict[str, Any]]:
    """The reply's blocks as Responses output items: text → a message, tool_use → a function_call."""
    items: list[dict[str, Any]] = []
    for block in reply.content:
        if block.get("type") == "text":
            items.append({"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": block["text"], "annotations": [],
                                       "logprobs": []}]})
        elif block.get("type") == "tool_use":
            items.append({"id": f"fc_{uuid.uuid4().hex[:24]}", "type": "function_call", "status": "completed",
                          "call_id": block["id"], "name": block["name"], "arguments": json.dumps(block["input"])})
        else:
            items.append(dict(block))
    return items


def _user_output_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """A user input message as ``responses.compact`` hands it back: an output item with input parts."""
    content = item["content"]
    parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else [dict(p) for p in content]
    return {"id": item.get("id") or f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "user",
            "status": "completed", "content": parts}


def _sse(response: Mapping[str, Any]) -> bytes:
    """The event stream of a finished response, one delta per text and per argument string."""
    events: list[dict[str, Any]] = []
    in_progress = {**response, "status": "in_progress", "output": [], "usage": None}
    events.append({"type": "response.created", "response": in_progress})
    events.append({"type": "response.in_progress", "response": in_progress})
    for index, item in enumerate(response["output"]):
        opened: dict[str, Any] = {**item, "status": "in_progress"}
        if item["type"] == "message":
            opened["content"] = []
        elif item["type"] == "function_call":
            opened["arguments"] = ""
        events.append({"type": "response.output_item.added", "output_index": index, "item": opened})
        if item["type"] == "message":
            for part_index, part in enumerate(item["content"]):
                common = {"item_id": item["id"], "output_index": index, "content_index": part_index}
                events.append({"type": "response.content_part.added", **common,
                               "part": {**part, "text": ""}})
                events.append({"type": "response.output_text.delta", **common, "delta": part["text"], "logprobs": []})
                events.append({"type": "response.output_text.done", **common, "text": part["text"], "logprobs": []})
                events.append({"type": "response.content_part.done", **common, "part": part})
        elif item["type"] == "function_call":
            common = {"item_id": item["id"], "output_index": index}
            events.append({"type": "response.function_call_arguments.delta", **common, "delta": item["arguments"]})
            events.append({"type": "response.function_call_arguments.done", **common,
                           "arguments": item["arguments"], "name": item["name"]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return "".join(f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n"
                   for n, e in enumerate(events)).encode("utf-8")

