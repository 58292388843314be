"""The recall tool: the model gets back what compaction took out of its view.

Compaction is safe to be aggressive only because nothing is lost — the store keeps every event,
and every marker names the version it stands for. This tool lets the model ask for it:
``{"action": "search", "query": "…"}`` finds events (the store's query language) and
``{"action": "read", "version": 123, "page": 1}`` gives an event back as stored, paged.

Every answer is a tool result held to a token budget (`sessionstore.budget`, DESIGN §12):
a longer one is a page whose last line names the call for the next.

The recall is written once, as a generator of store requests (`_recall`), which the sync door
(`handle_recall`) and the async door (`ahandle_recall`) drive over their store; parsing and
formatting are pure functions. Whatever goes wrong comes back as a text the model can read:
a tool handler must never raise out of the agent loop. A door that reports errors its own way
(the MCP server's error results) takes `recall_answer`, which raises them.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from .budget import TOOL_RESULT_TOKENS, NextCall, body, check_budget, page
from .display import LogFilter, hidden_note
from .errors import RecallError, SessionStoreError
from .events import KINDS

if TYPE_CHECKING:
    from .aio import AsyncSessionStore
    from .events import StoredEvent
    from .repository.results import SearchHit, SessionInfo
    from .store import SessionStore
    from .tokens import TokenCounter

RECALL_TOOL_NAME: Final = "recall"
MAX_RANGE: Final = 50  # versions one read may span
SEARCH_HITS: Final = 20

_DESCRIPTION: Final = (
    "Get back what was cleared, outlined, truncated or summarised out of your context: the stored transcript "
    "keeps every event. action=search finds events by words (\"a phrase\", prefix*, OR, -excluded) and lists "
    "their versions; action=read returns version N (or versions N..to) exactly as stored, in pages. Markers "
    "such as \"recall read v123\" name the version to read.")

_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["search", "read"], "description": "search or read."},
        "query": {"type": "string", "description": "search: the words to find."},
        "version": {"type": "integer", "description": "read: the version to read."},
        "to": {"type": "integer", "description": "read: the last version of a range (optional)."},
        "page": {"type": "integer", "description": "the page of a long answer (1 first; a page names the next)."},
        "session": {"type": "string", "description": "read: the session of a search hit (default: this one)."},
        "kinds": {"type": "array", "items": {"type": "string", "enum": list(KINDS)},
                  "description": "read: only events of these kinds (\"custom\" includes the records a model never "
                                 "sees, such as progress records, which a range read leaves out by default)."},
        "binary": {"type": "boolean", "description": "read: images and other base64 payloads in full (by default "
                                                     "each is a placeholder naming its type and size)."},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def recall_tool(shape: str = "anthropic") -> dict[str, Any]:
    """The recall tool's definition: ``"anthropic"``, ``"openai_chat"`` or ``"openai_responses"``."""
    schema = json.loads(json.dumps(_SCHEMA))
    if shape == "anthropic":
        return {"name": RECALL_TOOL_NAME, "description": _DESCRIPTION, "input_schema": schema}
    if shape == "openai_chat":
        return {"type": "function",
                "function": {"name": RECALL_TOOL_NAME, "description": _DESCRIPTION, "parameters": schema}}
    if shape == "openai_responses":
        return {"type": "function", "name": RECALL_TOOL_NAME, "description": _DESCRIPTION, "parameters": schema}
    raise ValueError(f"unknown tool shape {shape!r}: anthropic, openai_chat or openai_responses")


# --------------------------------------------------------------------------- pure parts


@dataclass(frozen=True, slots=True)
class Search:
    query: str
    page: int = 1


@dataclass(frozen=True, slots=True)
class Read:
    version: int
    to: int
    page: int
    session: str | None = None
    kinds: frozenset[str] | None = None
    binary: bool = False


def _int(tool_input: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = tool_input.get(key, default)
    if isinstance(value, str) and value.strip().lstrip("v").isdigit():
        value = int(value.strip().lstrip("v"))
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecallError(f"'{key}' must be an integer, got {value!r}")
    return value


def parse_recall(tool_input: Any) -> Search | Read:
    """The request in a model's tool input; `RecallError` says what is wrong with it."""
    if not isinstance(tool_input, Mapping):
        raise RecallError("the input must be an object such as {\"action\": \"read\", \"version\": 12}")
    if unknown := sorted(set(tool_input) - set(_SCHEMA["properties"])):
        raise RecallError(f"unknown field(s) {', '.join(map(str, unknown))}: a recall stays within this session")
    action = tool_input.get("action")
    number = _int(tool_input, "page", 1)
    if number < 1:
        raise RecallError("'page' starts at 1")
    if action == "search":
        query = tool_input.get("query")
        if not isinstance(query, str) or not query.strip():
            raise RecallError("search needs a non-empty 'query' string")
        return Search(query, number)
    if action == "read":
        version = _int(tool_input, "version")
        to = _int(tool_input, "to", version)
        if version < 1 or to < version:
            raise RecallError(f"no such version range: {version}..{to}")
        if to - version >= MAX_RANGE:
            raise RecallError(f"a read spans at most {MAX_RANGE} versions; read {version}..{version + MAX_RANGE - 1}")
        session = tool_input.get("session")
        if session is not None and (not isinstance(session, str) or not session):
            raise RecallError(f"'session' must be a session id, got {session!r}")
        binary = tool_input.get("binary", False)
        if not isinstance(binary, bool):
            raise RecallError(f"'binary' must be true or false, got {binary!r}")
        return Read(version, to, number, session, parse_kinds(tool_input.get("kinds")), binary)
    raise RecallError(f"'action' must be \"search\" or \"read\", got {action!r}")


def parse_kinds(value: Any) -> frozenset[str] | None:
    """The event kinds a read or a log asks for (None: not asked); `RecallError` names a bad one."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise RecallError(f"'kinds' must be a list of event kinds, got {value!r}")
    if unknown := sorted(set(value) - set(KINDS)):
        raise RecallError(f"unknown kind(s) {', '.join(map(repr, unknown))}: the kinds are {', '.join(KINDS)}")
    return frozenset(value)


def hidden_records(wanted: LogFilter) -> str:
    """The line that says what a read or a log left out by the CLI's rule, and how to see it."""
    return f"({hidden_note(wanted.hidden_types)}: kinds [\"custom\"] shows them)"


def _text_of(kind: str, payload: Mapping[str, Any]) -> str:
    field = {"tool_result": "output", "message": "content"}.get(kind)
    value = payload.get(field) if field else None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(b, Mapping) and b.get("type") == "text"
                                                  and isinstance(b.get("text"), str) for b in value):
        return "\n".join(b["text"] for b in value)
    return json.dumps(payload, ensure_ascii=False, indent=1)


def original_text(event: StoredEvent) -> str:
    """The event's content as stored: a tool output or a message text verbatim, anything else as JSON."""
    return _text_of(event.kind, event.payload)


# Base64 a model cannot read: an image's bytes cost it tens of thousands of tokens as text (a
# Codex screenshot, 83k) and tell it nothing. A data URL anywhere, or a whole string of at least
# this many base64 characters (letters of both cases and digits: not a word or a hex digest).
BINARY_MIN_CHARS: Final = 256
_DATA_URL: Final = re.compile(r"data:([\w.+-]+/[\w.+-]+);base64,([A-Za-z0-9+/]{16,}={0,2})")
_BASE64: Final = re.compile(rf"[A-Za-z0-9+/\r\n]{{{BINARY_MIN_CHARS},}}={{0,2}}")
_MEDIA_KEYS: Final = ("media_type", "mediaType", "mime_type", "mimeType")


def _is_base64(text: str) -> bool:
    return (len(text) >= BINARY_MIN_CHARS and _BASE64.fullmatch(text) is not None
            and any(c.isdigit() for c in text) and any(c.isupper() for c in text) and any(c.islower() for c in text))


def binary_placeholder(media_type: str, data: str, fetch: NextCall) -> str:
    """What a model reads in place of a base64 payload: its type, its size, the call that returns it."""
    digits = len(data) - data.count("\n") - data.count("\r")
    size = digits * 3 // 4 - len(data) + len(data.rstrip("="))
    return f"[{media_type}, {size:,} bytes as base64, left out: {fetch} returns it]"


def _without_binary(value: Any, fetch: NextCall, media_type: str = "binary") -> Any:
    if isinstance(value, str):
        if _is_base64(value):
            return binary_placeholder(media_type, value, fetch)
        return _DATA_URL.sub(lambda m: binary_placeholder(m[1], m[2], fetch), value) if "base64," in value else value
    if isinstance(value, Mapping):
        media = next((str(value[k]) for k in _MEDIA_KEYS if isinstance(value.get(k), str) and value[k]), media_type)
        return {k: _without_binary(v, fetch, media) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_binary(v, fetch, media_type) for v in value]
    return value


def readable_text(event: StoredEvent, fetch: NextCall) -> str:
    """`original_text` as a model should read it: each image or other base64 payload a placeholder
    naming its type, its size and `fetch`, the call that returns the event with it in full."""
    return _text_of(event.kind, _without_binary(event.payload, fetch))


def _label(event: StoredEvent) -> str:
    payload = event.payload
    detail = payload.get("name") or payload.get("role") or ""
    return f"v{event.version} {event.kind}{f' ({detail})' if detail else ''}"


def format_hits(query: str, hits: Sequence[SearchHit]) -> str:
    """Search hits as the model reads them: where each is and how to read it."""
    if not hits:
        return f"No stored event matches {query!r}."
    lines = [f"{len(hits)} match(es) for {query!r} (read one with recall read vN):"]
    for hit in hits:
        tool = f" {hit.tool}" if hit.tool else ""
        lines.append(f"- session {hit.session_id} v{hit.version} {hit.kind}{tool}: {hit.snippet}")
    return "\n".join(lines)


def format_read(read: Read, events: Sequence[StoredEvent], call: NextCall | None = None) -> str:
    """The events of a read, each under its label (the budget pages it): whole, but for the records
    the CLI's `log` hides (in a range, unless `read.kinds` asks for them) and base64 payloads
    (placeholders naming `call`, the recall tool's own call, with ``binary``, unless `read.binary`)."""
    if not events:
        raise RecallError(f"no version {read.version}" + (f"..{read.to}" if read.to != read.version else "")
                          + " in this session")
    wanted = LogFilter(kinds=read.kinds or frozenset(), include_noise=read.kinds is None and read.to == read.version)
    shown = list(wanted.apply(events))
    base = call if call is not None else NextCall(RECALL_TOOL_NAME)
    session = {"session": read.session} if read.session else {}

    def text(event: StoredEvent) -> str:
        if read.binary:
            return original_text(event)
        return readable_text(event, base.with_(action="read", version=event.version, binary=True, **session))

    parts = [f"[{_label(e)}]\n{text(e)}" for e in shown]
    if wanted.hidden:
        parts.append(hidden_records(wanted))
    if not parts:
        kinds = ", ".join(sorted(read.kinds or ()))
        return f"No event of kind {kinds} in v{read.version}..v{read.to}."
    return "\n\n".join(parts)


def lineage(session_id: str, sessions: Sequence[SessionInfo]) -> frozenset[str]:
    """`session_id` and every session linked to it, transitively: the forks it came from and its
    forks (`parent_id`), the parent an imported subagent names and its subagents (``parent_session``)."""
    links: dict[str, set[str]] = {}
    for info in sessions:
        parent = info.parent_id or (str(info.metadata["parent_session"])
                                    if info.metadata.get("parent_session") else None)
        if parent:
            links.setdefault(info.id, set()).add(parent)
            links.setdefault(parent, set()).add(info.id)
    seen, todo = {session_id}, [session_id]
    while todo:
        for other in links.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return frozenset(seen)


def _erased(info: SessionInfo) -> str | None:
    if info.erased_at is None and info.erased_ancestor is None:
        return None
    whose = info.id if info.erased_at is not None else info.erased_ancestor
    reason = f": {info.erase_reason}" if info.erase_reason else ""
    return f"Session {whose} was erased{reason}. Its content is gone; only its tombstone remains."


# --------------------------------------------------------------------------- the recall, once

Request = tuple[str, tuple[Any, ...], dict[str, Any]]
Scope = Literal["session", "lineage"]


@dataclass(frozen=True, slots=True)
class Answer:
    """What a recall answers, before the budget pages it: `text`, and the page asked for."""

    text: str
    page: int = 1

    def result(self, counter: TokenCounter, max_tokens: int, call: NextCall) -> str:
        """The tool result: the page of `text` within `max_tokens` (see `sessionstore.budget`)."""
        return page(self.text, self.page, max_tokens, counter, call)


def _recall(session_id: str, tool_input: Any, scope: Scope, call: NextCall) -> Generator[Request, Any, Answer]:
    """The recall as store requests (method, args, kwargs); the doors run them (`call`: the tool's
    own, which a placeholder names). Raises what the model should read (`RecallError`, or the
    store's error)."""
    request = parse_recall(tool_input)
    in_scope = frozenset({session_id})
    if scope == "lineage":
        infos: Sequence[SessionInfo] = yield ("sessions", (), {})
        known = {info.id for info in infos}  # a subagent's parent may not be in the store
        in_scope = frozenset({session_id, *(lineage(session_id, infos) & known)})
    elif scope != "session":
        raise RecallError(f"unknown scope {scope!r}: session or lineage")
    if isinstance(request, Search):
        info: SessionInfo = yield ("session", (session_id,), {})
        if (tombstone := _erased(info)) is not None:
            return Answer(tombstone)
        # One search over every history in scope, best first (erased content is never found);
        # the hits' meta is not read (the answer shows none of it).
        hits = yield ("search", (request.query, sorted(in_scope)), {"limit": SEARCH_HITS, "meta": False})
        return Answer(format_hits(request.query, hits), request.page)
    target = request.session or session_id
    if target not in in_scope:
        raise RecallError(f"session {target} is outside this recall's scope")
    info = yield ("session", (target,), {})
    if (tombstone := _erased(info)) is not None:
        return Answer(tombstone)
    events = yield ("events", (target,), {"after": request.version - 1, "upto": request.to})
    return Answer(format_read(request, events, call), request.page)


async def _drive(ask: Callable[[str, tuple[Any, ...], dict[str, Any]], Awaitable[Any]], session_id: str,
                 tool_input: Any, scope: Scope, call: NextCall | None = None) -> Answer:
    """Run `_recall`, answering its requests with `ask` (a store error goes back into it)."""
    program = _recall(session_id, tool_input, scope, call if call is not None else NextCall(RECALL_TOOL_NAME))
    try:
        request = next(program)
        while True:
            try:
                result = await ask(*request)
            except SessionStoreError as error:
                request = program.throw(error)
            else:
                request = program.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _next_call(tool_input: Any, call: NextCall | None) -> NextCall:
    """The call a page's footer names: the tool's own (`call`: its name and the arguments it adds,
    such as an MCP server's ``session_id``) with the model's recall input."""
    base = call if call is not None else NextCall(RECALL_TOOL_NAME)
    return base.with_(**(dict(tool_input) if isinstance(tool_input, Mapping) else {}))


def recall_answer(store: SessionStore, session_id: str, tool_input: Any, *, scope: Scope = "lineage",
                  max_tokens: int = TOOL_RESULT_TOKENS, call: NextCall | None = None) -> str:
    """`handle_recall`'s answer, raising what goes wrong (`SessionStoreError`: a `RecallError`
    for bad input) instead of answering it: for a door that reports errors its own way."""
    check_budget(max_tokens)

    async def ask(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = getattr(store, name)(*args, **kwargs)
        return list(result) if name == "events" else result

    driven = _drive(ask, session_id, tool_input, scope, call)
    try:
        driven.send(None)  # nothing in it suspends over a sync store: it ends at the first step
    except StopIteration as done:
        answer: Answer = done.value
        return answer.result(store.token_counter, max_tokens, _next_call(tool_input, call))
    driven.close()
    raise RuntimeError("the sync recall suspended")


def handle_recall(store: SessionStore, session_id: str, tool_input: Any, *, scope: Scope = "lineage",
                  max_tokens: int = TOOL_RESULT_TOKENS) -> str:
    """Answer a recall tool call over `session_id`'s history (inherited fork history included)
    and, with scope ``"lineage"``, the sessions linked to it (`lineage`); returns the text for the
    tool_result, at most `max_tokens` by the store's counter (a longer answer is paged). Never
    raises for bad input or a session out of scope: the model reads the error."""
    check_budget(max_tokens)
    try:
        return recall_answer(store, session_id, tool_input, scope=scope, max_tokens=max_tokens)
    except SessionStoreError as error:
        return f"Recall failed: {error}"


async def ahandle_recall(store: AsyncSessionStore, session_id: str, tool_input: Any, *,
                         scope: Scope = "lineage", max_tokens: int = TOOL_RESULT_TOKENS) -> str:
    """`handle_recall` for an `AsyncSessionStore` (the paging's token counting runs on a worker
    thread, off the event loop)."""
    check_budget(max_tokens)

    async def ask(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if name == "events":
            return [event async for event in store.events(*args, **kwargs)]
        return await getattr(store, name)(*args, **kwargs)

    try:
        answer = await _drive(ask, session_id, tool_input, scope)
        return await asyncio.to_thread(answer.result, store.token_counter, max_tokens, _next_call(tool_input, None))
    except SessionStoreError as error:
        return f"Recall failed: {error}"


# --------------------------------------------------------------------------- the measure

def read_back(store: SessionStore, session_id: str, version: int) -> str:
    """Version `version` as the model gets it through the tool, every page joined, its label off
    (base64 payloads in full, as the placeholders' call asks)."""
    pages, number = [], 1
    while True:
        text, more = body(handle_recall(store, session_id, {"action": "read", "version": version, "binary": True,
                                                            "page": number}))
        pages.append(text)
        if not more:
            break
        number += 1
    return "".join(pages).split("\n", 1)[1]


def recalled_whole(store: SessionStore, session_id: str) -> tuple[int, int]:
    """(recalled byte-identical, of all) the items the session's view shows cleared, outlined or
    truncated: what compaction took is within the model's reach exactly as stored."""
    view = store.context(session_id)
    taken = [item for item in view.items if item.cleared or item.rewritten]
    same = sum(read_back(store, session_id, item.version) == original_text(item.event) for item in taken)
    return same, len(taken)
