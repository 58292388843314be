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

Standard library only (plus the chars/4 estimate of `sessionstore.tokens`). This module holds the
HTTP server and the routes; what a request must be is in anthropic_requests.py, what the server
records and replies in anthropic_replies.py, its queue and records in anthropic_state.py (every
public name of those is importable from here too).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import traceback
import uuid
from collections.abc import Collection, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, Self
from urllib.parse import urlsplit

from ..tokens import TokenCounter
from .anthropic_replies import (MESSAGE_OVERHEAD, REQUEST_OVERHEAD, ErrorReply, MessageReply, RecordedRequest, Reply,
                                ReplyLike, canonical_json, default_summary, estimate_input_tokens, prompt_too_long,
                                text_reply, tool_use_reply)
from .anthropic_requests import ROLES, InvalidRequest, validate_messages, validate_request
from .anthropic_state import ServerState

__all__ = [
    "MESSAGE_OVERHEAD",
    "REQUEST_OVERHEAD",
    "ROLES",
    "AnthropicServer",
    "ErrorReply",
    "InvalidRequest",
    "MessageReply",
    "RecordedRequest",
    "Reply",
    "ReplyLike",
    "estimate_input_tokens",
    "prompt_too_long",
    "text_reply",
    "tool_use_reply",
    "validate_messages",
    "validate_request",
]

COMPACT_BETA: Final = "compact-2026-01-12"
COMPACT_TRIGGER: Final = 150_000  # the edit's default trigger, in input tokens


class AnthropicServer(ServerState):
    """A Messages API server on 127.0.0.1 (a free port unless `port` is given), in a thread.

    strict: roles must alternate (the API merges consecutive same-role messages; we don't).
    context_window: answer requests estimated above this many input tokens with "prompt is too long";
        the Models API (``GET /v1/models/{id}``) states it as ``max_input_tokens`` unless
        `states_window` is False (a server that only says it in its errors).
    counter, default: the state's (`ServerState`): how texts are counted, what an empty queue answers.
    models: if given, any other model is answered with 404 not_found_error, as the API does.
    api_key: if given, requests must carry it (`x-api-key` or `Authorization: Bearer`), else 401.
    """

    def __init__(self, *, strict: bool = True, context_window: int | None = None,
                 counter: TokenCounter | None = None, default: ReplyLike | None = None,
                 models: Collection[str] | None = None, api_key: str | None = None,
                 host: str = "127.0.0.1", port: int = 0, states_window: bool = True) -> None:
        super().__init__(counter=counter, default=default)
        self.strict = strict
        self.context_window = context_window
        self.states_window = states_window
        self.models = set(models) if models is not None else None
        self.api_key = api_key
        self._host = host
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
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

    def __enter__(self) -> Self:
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

    # ------------------------------------------------------------------ routes (server threads)

    def _message_body(self, reply: MessageReply, request: RecordedRequest) -> dict[str, Any]:
        body = request.body
        output_text = "".join(b["text"] if b.get("type") == "text" else b.get("content") or ""
                              if b.get("type") == "compaction" else canonical_json(b.get("input", {})) for b in reply.content)
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
    summary = default_summary(request)
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
