"""What a local API server remembers and is told: its state, apart from its routes.

The queue of scripted replies (faults included: `overloaded`, `rate_limited`, `server_error`,
`prompt_too_long`), the reply an empty queue gets (`default`), every request received with the
status it was answered with, the exceptions of reply callables, and the token counter its
estimates use. All of it behind one lock: the HTTP server answers on several threads while the
test scripts and inspects from its own. `AnthropicServer` (anthropic_server.py) adds the HTTP
server and the routes of the Messages API; `OpenAIServer` inherits both.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Mapping
from typing import Any, Self

from ..tokens import HeuristicCounter, TokenCounter
from .anthropic_replies import (ErrorReply, MessageReply, RecordedRequest, Reply, ReplyLike, default_summary,
                                estimate_input_tokens, prompt_too_long, text_reply, tool_use_reply)

__all__ = ["ServerState"]


class ServerState:
    """The scripted replies, the recorded requests and the errors of one local server (thread-safe).

    counter: how texts are counted for the estimate (default chars/4; pass `TiktokenCounter()` for tiktoken).
    default: what a request gets when the queue is empty (a reply-like; default a summary-shaped text).
    """

    def __init__(self, *, counter: TokenCounter | None = None, default: ReplyLike | None = None) -> None:
        self.counter = counter or HeuristicCounter()
        self.default: ReplyLike = default if default is not None else default_summary
        self._lock = threading.Lock()
        self._queue: collections.deque[ReplyLike] = collections.deque()
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._ids = itertools.count(1)

    # ------------------------------------------------------------------ scripting

    def enqueue(self, *replies: ReplyLike) -> Self:
        """What the next valid /v1/messages requests get, in order. Each is a `MessageReply` or
        `ErrorReply`, a str (a text reply), a dict (sent as the 200 JSON body as is), or a callable
        taking the `RecordedRequest` and returning any of these."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def reply(self, text: str, **kwargs: Any) -> Self:
        """Queue a text reply (kwargs: stop_reason, model, input_tokens, output_tokens, headers)."""
        return self.enqueue(text_reply(text, **kwargs))

    def reply_tool_use(self, name: str, input: Mapping[str, Any], *, id: str | None = None,
                       text: str | None = None, **kwargs: Any) -> Self:
        """Queue a reply that calls a tool (stop_reason "tool_use")."""
        return self.enqueue(tool_use_reply(name, input, id=id, text=text, **kwargs))

    def error(self, status: int, type: str, message: str, *,
              headers: Mapping[str, str] | None = None) -> Self:
        """Queue an error response in the API's shape."""
        return self.enqueue(ErrorReply(status, type, message, dict(headers or {})))

    def overloaded(self, *, retry_after: float | None = None) -> Self:
        """Queue a 529 overloaded_error (retried by the SDK). `retry_after` seconds go out as
        `retry-after-ms`, which the SDK prefers; without it the SDK backs off ~0.5 s."""
        headers = {"retry-after-ms": str(round(retry_after * 1000))} if retry_after is not None else {}
        return self.error(529, "overloaded_error", "Overloaded", headers=headers)

    def rate_limited(self, *, retry_after: float = 1.0) -> Self:
        """Queue a 429 rate_limit_error with a `retry-after` header (seconds; floats are honoured by the SDK)."""
        return self.error(429, "rate_limit_error",
                          "Number of request tokens has exceeded your per-minute rate limit",
                          headers={"retry-after": f"{retry_after:g}"})

    def server_error(self, *, retry_after: float | None = None) -> Self:
        """Queue a 500 api_error (retried by the SDK)."""
        headers = {"retry-after-ms": str(round(retry_after * 1000))} if retry_after is not None else {}
        return self.error(500, "api_error", "Internal server error", headers=headers)

    def prompt_too_long(self, tokens: int = 212_000, limit: int = 200_000) -> Self:
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

    # ------------------------------------------------------------------ used by the routes (server threads)

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
