"""Event kinds, their constructors and payload validation.

An event is the unit of history: once appended it never changes. Everything a session
holds — messages, tool calls and results, and the decisions compaction takes (`compaction`,
`prune`, `rewrite`) — is one of the kinds below, so that any past context can be rebuilt
by folding events. Validation lives here, next to the shapes it checks, and runs before
anything touches the database: a batch with one bad event writes nothing.
"""

from __future__ import annotations

import json
import os
import re
import threading
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias, overload

from .chain import SORTED_JSON
from .errors import InvalidEvent

Kind: TypeAlias = Literal[
    "system", "message", "tool_call", "tool_result", "compaction", "prune", "rewrite", "scratchpad", "custom"
]
KINDS: Final[tuple[str, ...]] = (
    "system", "message", "tool_call", "tool_result", "compaction", "prune", "rewrite", "scratchpad", "custom",
)
ROLES: Final = ("user", "assistant")
TRIGGERS: Final = ("auto", "manual", "overflow", "tool")
PRUNE_MODES: Final = ("clear_output", "drop")
# Providers whose own compaction artefacts a `compaction` event can carry (`payload.native`).
NATIVE_PROVIDERS: Final = ("anthropic", "openai")
# What a `rewrite` replaces in the view, and the kind of event each field belongs to.
REWRITE_FIELDS: Final = ("output", "input", "content")
REWRITE_TARGETS: Final = {"output": "tool_result", "input": "tool_call", "content": "message"}
# Identifiers are indexed columns: their lengths are bounded (storage/tables.py uses these).
MAX_ID: Final = 255  # session ids and call ids
MAX_EVENT_ID: Final = 128
# Tool use lives in its own events (`tool_call`, `tool_result`) so that pruning, rewriting and
# pairing can address it by version; a message that carries it inline would hide it from them.
_INLINE_TOOL_BLOCKS: Final = frozenset({"tool_use", "tool_result"})

Block: TypeAlias = dict[str, Any]
Content: TypeAlias = "str | Sequence[Mapping[str, Any]]"


class _RandomBytes(threading.local):
    """The OS's random bytes, read `RANDOM_READ` at a time by each thread. `os.urandom` lets go of
    the GIL: on an event loop's thread, with the store's threads busy, taking it back costs up to
    the interpreter's switch interval (5 ms), at every event id made there."""

    buffer = b""
    at = 0


RANDOM_READ: Final = 4096  # bytes: 256 event ids
_random = _RandomBytes()
# A forked child must not make the ids its parent makes from the same bytes.
os.register_at_fork(after_in_child=lambda: _random.__dict__.clear())


def new_event_id() -> str:
    """A random UUID (version 4) as 32 hex digits, as `uuid.uuid4().hex` gives, at a fraction of
    its cost (an agent turn makes dozens): from the OS's random bytes, so ids stay unguessable.
    A `MadeId`, whose last byte checks the others: the store knows that it made it, and its
    copies (`might_be_made`)."""
    random = _random
    if random.at + 16 > len(random.buffer):
        random.buffer, random.at = os.urandom(RANDOM_READ), 0
    raw = bytearray(random.buffer[random.at:random.at + 15])
    random.at += 16
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # RFC 4122 variant
    raw.append(zlib.crc32(raw) & 0xFF)  # the check byte: 114 random bits remain
    return MadeId(raw.hex())


class MadeId(str):
    """An id `new_event_id` made in this process: 114 random bits that no one chose, so no other
    event can hold it — unless this very id is sent to two sessions. On Citus, where no index
    sees every session's ids, the store registers store-wide only the ids it did not make
    (`docs/scaling.md`), and this is how it tells them apart: a plain string is an id the caller
    chose (or copied), and so is a copy of a `MadeId` made by pickling (another process may
    append it anywhere). See `claim`."""

    def __copy__(self) -> MadeId:
        return self  # the same id, with the same home

    def __deepcopy__(self, memo: dict[int, Any]) -> MadeId:
        return self

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return str, (str(self),)


# A `MadeId` sent to a second session is checked like a chosen id from then on, wherever it goes.
_NO_HOME: Final = ""
# How `new_event_id` (and `uuid.uuid4().hex`) write an id; its last two digits are its check.
_MADE_FORM: Final = re.compile(r"[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}")


def claim(event_id: str, session_id: str) -> bool:
    """Is `event_id` unique by construction in `session_id`: made by `new_event_id` in this
    process and appended to no other session (the first session it is sent to becomes its home,
    and retries there stay free)? Otherwise the id is registered store-wide on Citus."""
    if type(event_id) is not MadeId:
        return False
    if event_id.__dict__.setdefault("home", session_id) == session_id:
        return True
    event_id.__dict__["home"] = _NO_HOME
    return False


def might_be_made(event_id: str) -> bool:
    """Could `event_id`, passed by a caller, be a copy of an id `new_event_id` made (and so be
    stored without being registered: see `claim`)? Its form and its check byte say so; a uuid4
    hex made elsewhere passes by chance once in 256."""
    return _MADE_FORM.fullmatch(event_id) is not None and \
        zlib.crc32(bytes.fromhex(event_id[:30])) & 0xFF == int(event_id[30:], 16)


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event not yet stored: what `append` takes.

    `event_id` makes a retry safe: re-appending a batch whose ids are stored returns the
    original result instead of writing twice. `created_at` defaults to the append time;
    importers set it from the source's timestamp.
    """

    kind: str
    payload: Mapping[str, Any]
    meta: Mapping[str, Any] = field(default_factory=dict)
    event_id: str = field(default_factory=new_event_id)
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as the store returns it: immutable, with its place in the session and the store."""

    event_id: str
    session_id: str
    version: int
    position: int
    kind: str
    payload: dict[str, Any]
    meta: dict[str, Any]
    tokens: int
    created_at: datetime
    # Set when the session's content was erased: payload and meta are tombstones then.
    erased_at: datetime | None = None


# --------------------------------------------------------------------------- constructors


def _event(kind: str, payload: dict[str, Any], meta: Mapping[str, Any] | None,
           event_id: str | None, created_at: datetime | None) -> NewEvent:
    return NewEvent(kind=kind, payload=payload, meta=dict(meta or {}),
                    event_id=event_id or new_event_id(), created_at=created_at)


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def _blocks(content: Content, field: str = "payload.content") -> list[Block]:
    """A string or content blocks as blocks; anything else is an `InvalidEvent` naming it."""
    if isinstance(content, str):
        return [text_block(content)] if content else []
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        blocks = list(content)
        if all(isinstance(b, Mapping) for b in blocks):
            return [dict(b) for b in blocks]
    raise InvalidEvent(f"expected a string or a list of content blocks (dicts), got {_kind_of(content)}", field=field)


def _kind_of(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def system(text: str, *, meta: Mapping[str, Any] | None = None, event_id: str | None = None,
           created_at: datetime | None = None) -> NewEvent:
    """The system prompt. The latest one is the one the view uses."""
    return _event("system", {"text": text}, meta, event_id, created_at)


def user(content: Content, *, meta: Mapping[str, Any] | None = None, event_id: str | None = None,
         created_at: datetime | None = None) -> NewEvent:
    """A user message: a string, or content blocks (text, image, provider-native JSON)."""
    return _event("message", {"role": "user", "content": _blocks(content)}, meta, event_id, created_at)


@overload
def assistant(content: Content = "", *, tool_calls: None = None, meta: Mapping[str, Any] | None = None,
              event_id: str | None = None, created_at: datetime | None = None) -> NewEvent: ...
@overload
def assistant(content: Content = "", *, tool_calls: Sequence[NewEvent | Mapping[str, Any]],
              meta: Mapping[str, Any] | None = None, event_id: str | None = None,
              created_at: datetime | None = None) -> list[NewEvent]: ...
def assistant(content: Content = "", *, tool_calls: Sequence[NewEvent | Mapping[str, Any]] | None = None,
              meta: Mapping[str, Any] | None = None, event_id: str | None = None,
              created_at: datetime | None = None) -> NewEvent | list[NewEvent]:
    """An assistant message; with `tool_calls`, the message followed by one `tool_call` event each.

    `tool_calls` takes `tool_call(...)` events or Anthropic-shaped ``{"id", "name", "input"}``
    dicts. With tool calls the result is a list, which `append` flattens, so
    ``store.append(sid, [user(...), assistant("On it.", tool_calls=[...])])`` reads naturally.
    Provider-reported usage belongs in ``meta={"usage": ...}``.
    """
    message = _event("message", {"role": "assistant", "content": _blocks(content)}, meta, event_id, created_at)
    if tool_calls is None:
        return message
    calls = [c if isinstance(c, NewEvent) else _tool_call_from_block(c) for c in tool_calls]
    return ([message] if message.payload["content"] else []) + calls


def _tool_call_from_block(block: Mapping[str, Any]) -> NewEvent:
    call_id = block.get("call_id", block.get("id"))
    return tool_call(call_id, block.get("name"), block.get("input", {}))  # type: ignore[arg-type]


def tool_call(call_id: str, name: str, input: Mapping[str, Any], *, meta: Mapping[str, Any] | None = None,
              event_id: str | None = None, created_at: datetime | None = None) -> NewEvent:
    """A tool the assistant calls; rendered as a tool_use block of the message it follows."""
    if not isinstance(input, Mapping):
        raise InvalidEvent(f"a tool call's input must be an object of arguments (a dict), got {_kind_of(input)}"
                           + (f" — e.g. {{'command': {input!r}}}" if isinstance(input, str) else ""),
                           field="payload.input")
    return _event("tool_call", {"call_id": call_id, "name": name, "input": dict(input)}, meta, event_id, created_at)


def tool_result(call_id: str, output: Content, is_error: bool = False, *, meta: Mapping[str, Any] | None = None,
                event_id: str | None = None, created_at: datetime | None = None) -> NewEvent:
    """The result of the call `call_id`: a string or content blocks."""
    out: str | list[Block] = output if isinstance(output, str) else _blocks(output, "payload.output")
    return _event("tool_result", {"call_id": call_id, "output": out, "is_error": is_error}, meta, event_id,
                  created_at)


def scratchpad(text: str, *, meta: Mapping[str, Any] | None = None, event_id: str | None = None,
               created_at: datetime | None = None) -> NewEvent:
    """Working memory that survives every compaction (the latest one is shown after the summary)."""
    return _event("scratchpad", {"text": text}, meta, event_id, created_at)


def custom(type: str, data: Any = None, *, in_context: bool = False, meta: Mapping[str, Any] | None = None,
           event_id: str | None = None, created_at: datetime | None = None) -> NewEvent:
    """An application event; the model sees it (as a user note) only when `in_context`."""
    return _event("custom", {"type": type, "data": data, "in_context": in_context}, meta, event_id, created_at)


def compaction(summary: str, first_kept_version: int, *, tokens_before: int | None = None,
               tokens_after: int | None = None, trigger: str = "manual", strategy: str = "single",
               summarizer: str = "offline", details: Mapping[str, Any] | None = None,
               instructions: str | None = None, native: Mapping[str, Any] | None = None,
               meta: Mapping[str, Any] | None = None, event_id: str | None = None,
               created_at: datetime | None = None) -> NewEvent:
    """A summary that replaces, in the view, everything before `first_kept_version`.

    `native` is a provider's own compaction, kept verbatim: ``{"provider": "anthropic", "items":
    [compaction block]}`` (the content of the assistant turn that stands for the range) or
    ``{"provider": "openai", "items": [Responses items ending with the compaction item]}``.
    That provider is sent the items, byte for byte; every other renderer gets `summary`, the
    portable text of the same range (the block's readable text, else our own summary)."""
    payload: dict[str, Any] = {
        "summary": summary, "first_kept_version": first_kept_version, "tokens_before": tokens_before,
        "tokens_after": tokens_after, "trigger": trigger, "strategy": strategy, "summarizer": summarizer,
        "details": {"read_files": [], "modified_files": [], "restored": [], **dict(details or {})},
    }
    if instructions is not None:
        payload["instructions"] = instructions
    if native is not None:
        payload["native"] = {"provider": native.get("provider"), "items": list(native.get("items") or [])}
    return _event("compaction", payload, meta, event_id, created_at)


def prune(targets: Sequence[int], *, mode: str = "clear_output", rule: str, placeholder: str = "",
          meta: Mapping[str, Any] | None = None, event_id: str | None = None,
          created_at: datetime | None = None) -> NewEvent:
    """Clears the outputs of (or drops) the tool results/calls at `targets` from the view."""
    return _event("prune", {"targets": list(targets), "mode": mode, "rule": rule, "placeholder": placeholder},
                  meta, event_id, created_at)


def rewrite(target_version: int, *, field: str, content: str, original_lines: int, language: str,
            meta: Mapping[str, Any] | None = None, event_id: str | None = None,
            created_at: datetime | None = None) -> NewEvent:
    """Replaces, in the view, a tool result's `output`, a call's `input` or a message's `content` by a
    shorter text (a skeleton, or the head and tail of an oversized item)."""
    return _event("rewrite", {"target_version": target_version, "field": field, "content": content,
                              "original_lines": original_lines, "language": language}, meta, event_id, created_at)


def once(events: Any) -> Any:
    """`events` in a form that can be read more than once (a retried call reads it again):
    a one-shot iterator becomes a list; events, lists, tuples and None are returned as they are."""
    if events is None or isinstance(events, (NewEvent, list, tuple)):
        return events
    if isinstance(events, Iterable) and not isinstance(events, (str, bytes, Mapping)):
        return list(events)
    return events


def flatten(events: NewEvent | Iterable[NewEvent | Iterable[NewEvent]]) -> list[NewEvent]:
    """One flat list from an event, a list of events, or a list mixing events and lists of them."""
    if isinstance(events, NewEvent):
        return [events]
    if isinstance(events, (Mapping, str, bytes)) or not isinstance(events, Iterable):
        hint = " (a message as a dict? build it with sessionstore.user(...) or assistant(...))" \
            if isinstance(events, Mapping) else ""
        raise InvalidEvent(f"expected a NewEvent or a list of them (built by sessionstore.user(), tool_call(), …), "
                           f"got {_kind_of(events)}{hint}")
    flat: list[NewEvent] = []
    for item in events:
        if isinstance(item, NewEvent):
            flat.append(item)
        elif isinstance(item, Iterable) and not isinstance(item, (str, bytes, Mapping)):
            flat.extend(flatten(item))
        else:
            raise InvalidEvent(f"expected a NewEvent (built by sessionstore.user(), tool_call(), …), got "
                               f"{type(item).__name__}", index=len(flat))
    return flat


# --------------------------------------------------------------------------- validation


def content_blocks(content: Any) -> list[Block]:
    """A message's or tool result's content as blocks (a bare string is one text block)."""
    if isinstance(content, str):
        return [text_block(content)] if content else []
    return list(content)


def validate_event(event: NewEvent, index: int | None = None) -> None:
    """Raise `InvalidEvent` naming the event and field when `event` is not a valid event."""
    if not isinstance(event, NewEvent):
        raise InvalidEvent(f"expected a NewEvent, got {type(event).__name__}", index=index)
    if not isinstance(event.event_id, str) or not event.event_id or len(event.event_id) > MAX_EVENT_ID:
        raise InvalidEvent(f"event_id must be a non-empty string of at most {MAX_EVENT_ID} characters", index=index,
                           field="event_id")
    if JSONB_UNSTORABLE.search(event.event_id):
        raise InvalidEvent(UNSTORABLE_ID, index=index, field="event_id")
    if event.kind not in _VALIDATORS:
        raise InvalidEvent(f"unknown kind {event.kind!r}; expected one of {', '.join(KINDS)}", index=index,
                           field="kind")
    if not isinstance(event.payload, Mapping):
        raise InvalidEvent(f"payload must be a JSON object, got {type(event.payload).__name__}", index=index,
                           field="payload")
    if not isinstance(event.meta, Mapping):
        raise InvalidEvent(f"meta must be a JSON object, got {type(event.meta).__name__}", index=index,
                           field="meta")
    if event.created_at is not None and (not isinstance(event.created_at, datetime)
                                         or event.created_at.tzinfo is None):
        raise InvalidEvent("created_at must be a timezone-aware datetime", index=index, field="created_at")
    try:
        _VALIDATORS[event.kind](event.payload)
    except _Invalid as bad:
        raise InvalidEvent(bad.reason, index=index, field=bad.field) from None


def encode_event(event: NewEvent, index: int | None = None) -> tuple[str, str]:
    """Validate `event` and serialise its payload and meta: the exact JSON text that is stored.

    Serialising once serves both the check (only what JSON carries exactly is accepted: no
    NaN, bytes, sets or non-string keys) and the insert, which then needs no second pass. Meta
    is written with sorted keys, the hash chain's canonical spelling, so that the chain need not
    encode it again (`chain.content_hash`); a payload is stored exactly as given.
    """
    validate_event(event, index)
    payload = event.payload
    if type(payload) is EncodedPayload and payload.json is not None:  # checked and encoded already (`checked`)
        meta = _queryable_json(event.meta, "meta", index)
        _check_string_keys(event.meta, "meta", index)
        return payload.json, meta
    encoded = _encode(payload, "payload", index), _queryable_json(event.meta, "meta", index)
    if _MAYBE_PAIR.search(encoded[0]):
        _check_no_split_pairs(event.payload, "payload", index)
    _check_string_keys(event.payload, "payload", index)
    _check_string_keys(event.meta, "meta", index)
    return encoded


class EncodedPayload(dict[str, Any]):
    """A payload with the JSON text `encode_event` made of it when it was checked (`checked`): the
    append stores that text rather than encode the payload a second time (an importer checks
    each event as it parses a line, to report the line of one that cannot be stored, and
    appends it later). A change to the dict itself drops the text; a change inside it is not
    seen, so a payload is wrapped only once it is final. A copy is a plain dict."""

    __slots__ = ("json",)

    def __init__(self, payload: Mapping[str, Any], text: str) -> None:
        super().__init__(payload)
        self.json: str | None = text

    def __reduce__(self) -> Any:
        return dict, (dict(self),)

    def __setitem__(self, key: str, value: Any) -> None:
        self.json = None
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.json = None
        super().__delitem__(key)

    def __ior__(self, other: Any) -> EncodedPayload:
        self.json = None
        return super().__ior__(other)  # type: ignore[no-any-return]

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.json = None
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.json = None
        return super().setdefault(key, default)

    def pop(self, *args: Any) -> Any:
        self.json = None
        return super().pop(*args)

    def popitem(self) -> tuple[str, Any]:
        self.json = None
        return super().popitem()

    def clear(self) -> None:
        self.json = None
        super().clear()


def checked(event: NewEvent, index: int | None = None) -> NewEvent:
    """`event` validated (`InvalidEvent` as `encode_event` raises it), its payload carrying its
    JSON text (`EncodedPayload`) so that appending it encodes only its meta, which may still change."""
    payload_json, _ = encode_event(event, index)
    return NewEvent(event.kind, EncodedPayload(event.payload, payload_json), event.meta, event.event_id,
                    event.created_at)


# How ASCII-escaped JSON spells a high surrogate followed by a low one: a character beyond U+FFFF,
# or the two halves of one given as two characters, which JSON cannot tell apart.
_MAYBE_PAIR: Final = re.compile(r"\\ud[89ab][0-9a-f]{2}\\ud[c-f]")
_SPLIT_PAIR: Final = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _check_no_split_pairs(value: Any, where: str, index: int | None) -> None:
    """A string holding a surrogate pair as two characters (text decoded with 'surrogatepass')
    would be read back as the one character the pair encodes: refused, so that a payload comes
    back exactly as given or not at all."""
    if isinstance(value, str):
        if _SPLIT_PAIR.search(value):
            raise InvalidEvent("holds a surrogate pair as two characters, which JSON stores as the one character it "
                               "encodes (it would be read back changed); join it first "
                               "(text.encode('utf-16', 'surrogatepass').decode('utf-16'))", index=index, field=where)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check_no_split_pairs(key, where, index)
            _check_no_split_pairs(item, f"{where}.{key}", index)
    elif isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            _check_no_split_pairs(item, f"{where}[{position}]", index)


def _non_string_key(value: Any) -> tuple[list[str], Any] | None:
    """The first object key in `value` that is not a string, with the path to it (innermost
    part first, built only once one is found); None when every key is a string. Checked after
    encoding, which has refused anything else JSON cannot carry: JSON stringifies an int, float,
    bool or None key without a word, so ``{1: "a"}`` would be stored and read back as
    ``{"1": "a"}``, a changed event. Under a microsecond for a message."""
    kind = type(value)
    if kind is dict or (kind not in _SCALARS and isinstance(value, Mapping)):
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, str):
                return [], key
            if type(item) not in _SCALARS and (found := _non_string_key(item)) is not None:
                found[0].append(f".{key}")
                return found
    elif kind is list or isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if type(item) not in _SCALARS and (found := _non_string_key(item)) is not None:
                found[0].append(f"[{i}]")
                return found
    return None


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _check_string_keys(value: Any, where: str, index: int | None) -> None:
    try:
        found = _non_string_key(value)
    except RecursionError:
        raise InvalidEvent("is nested too deeply", index=index, field=where) from None
    if found is not None:
        path, key = found
        raise InvalidEvent(f"has a key that is not a string ({key!r}): a JSON object's keys are strings, so it "
                           "would be read back changed", index=index, field=where + "".join(reversed(path)))


# What PostgreSQL's JSONB refuses in a string: NUL, and surrogates without their pair.
JSONB_UNSTORABLE: Final = re.compile("[\\x00\\ud800-\\udfff]")
# Ids are indexed text columns: neither backend stores NUL there, nor can a driver encode a lone surrogate.
UNSTORABLE_ID: Final = "must not hold a NUL character or an unpaired surrogate (ids are stored as text columns)"


# How ASCII-escaped JSON spells a NUL or a surrogate (each character beyond U+FFFF is a pair of
# them): a meta whose text has neither holds nothing `check_queryable` refuses.
_MAYBE_UNSTORABLE: Final = re.compile(r"\\u(?:0000|d[89a-f])")


def _queryable_json(value: Any, where: str, index: int | None) -> str:
    """The JSON text of a meta or session metadata, refused (`InvalidEvent`) when JSONB could not hold
    it (`check_queryable`, reported first) or JSON cannot say it. Encoded first: the walk is needed
    only when the text spells a NUL or a surrogate."""
    try:
        text: str | None = "{}" if value == {} else SORTED_JSON.encode(value)
    except (TypeError, ValueError, RecursionError):  # keys that do not sort are written as given, below
        text = None
    if text is None or _MAYBE_UNSTORABLE.search(text) or _MAYBE_LARGE_FLOAT.search(text):
        try:
            check_queryable(value, where)
        except _Invalid as bad:
            raise InvalidEvent(bad.reason, index=index, field=bad.field) from None
        except RecursionError:
            raise InvalidEvent("is nested too deeply", index=index, field=where) from None
    return text if text is not None else _encode(value, where, index)


# How JSON spells a float of 1e16 or more (Python writes it with an exponent): JSONB keeps it as a
# decimal without one, which reads back as an integer. Only a meta whose text has one is walked.
_MAYBE_LARGE_FLOAT: Final = re.compile(r"[0-9]e\+")
LARGE_FLOAT: Final = 1e16


def check_queryable(value: Any, where: str) -> None:
    """`meta` and session metadata are JSONB on PostgreSQL, which cannot hold NUL characters or
    unpaired surrogates, and gives a float of 1e16 or more back as an integer; payloads can hold
    both (they are stored as exact JSON text). Same rule on SQLite, so that a store never accepts
    on one backend what it refuses on the other."""
    if isinstance(value, str):
        if JSONB_UNSTORABLE.search(value):
            raise _Invalid(where, "holds a NUL character or an unpaired surrogate, which PostgreSQL's JSONB cannot "
                                  "store; keep raw text in the payload")
    elif isinstance(value, float) and abs(value) >= LARGE_FLOAT:
        raise _Invalid(where, f"holds the float {value!r}, which PostgreSQL's JSONB would read back as the integer "
                              f"{int(value)}; keep it in the payload, or as a string or an int")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_queryable(key, where)
            check_queryable(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_queryable(item, where)


def _encode(value: Any, where: str, index: int | None) -> str:
    try:
        return encode_json(value)
    except (TypeError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise InvalidEvent(f"is not JSON-serialisable ({exc})", index=index, field=where) from None


_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode_json(value: Any) -> str:
    """The store's JSON text: compact, ASCII-escaped (lone surrogates survive), no NaN."""
    return "{}" if value == {} else _ENCODER.encode(value)


class _Invalid(Exception):
    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason


def check_metadata(metadata: Mapping[str, Any]) -> None:
    """Session metadata follows the rules of `meta` (JSON, no NaN, storable in JSONB)."""
    _queryable_json(metadata, "metadata", None)
    _check_string_keys(metadata, "metadata", None)


def _require(payload: Mapping[str, Any], key: str, types: type | tuple[type, ...], what: str,
             *, path: str = "payload", optional: bool = False) -> Any:
    if key not in payload or payload[key] is None:
        if optional:
            return None
        raise _Invalid(f"{path}.{key}", f"is required ({what})")
    value = payload[key]
    # bool is an int in Python; a version or count given as True is a bug, not a number.
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        raise _Invalid(f"{path}.{key}", f"must be {what}, got {type(value).__name__}")
    return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _require_text(payload: Mapping[str, Any], key: str, *, path: str = "payload", nonempty: bool = False) -> str:
    value: str = _require(payload, key, str, "a string", path=path)
    if nonempty and not value:
        raise _Invalid(f"{path}.{key}", "must not be empty")
    return value


def _require_version(payload: Mapping[str, Any], key: str, *, optional: bool = False) -> int | None:
    value = _require(payload, key, int, "a version (an integer ≥ 1)", optional=optional)
    if value is not None and value < 1:
        raise _Invalid(f"payload.{key}", f"must be ≥ 1, got {value}")
    return value


def _require_choice(payload: Mapping[str, Any], key: str, choices: Sequence[str], *, default: bool = False,
                    path: str = "payload") -> None:
    if default and key not in payload:
        return
    value = _require(payload, key, str, f"one of {', '.join(choices)}", path=path)
    if value not in choices:
        raise _Invalid(f"{path}.{key}", f"must be one of {', '.join(choices)}, got {value!r}")


def _validate_blocks(content: Any, path: str, *, allow_tool_blocks: bool = False) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _Invalid(path, f"must be a string or a list of blocks, got {type(content).__name__}")
    for i, block in enumerate(content):
        if type(block) is dict and block.get("type") == "text" and type(block.get("text")) is str:
            continue  # the common case, checked without building error paths
        where = f"{path}[{i}]"
        if not isinstance(block, Mapping):
            raise _Invalid(where, f"must be a block object, got {type(block).__name__}")
        btype = _require(block, "type", str, "the block type (text, image, thinking, …)", path=where)
        if btype in _INLINE_TOOL_BLOCKS and not allow_tool_blocks:
            raise _Invalid(f"{where}.type", f"{btype} blocks are events of their own: append tool_call / "
                                            "tool_result events instead")
        check = _BLOCK_VALIDATORS.get(btype)
        if check is not None:
            check(block, where)
        # Any other typed block is provider-native JSON, kept verbatim.


def _text_block(block: Mapping[str, Any], where: str) -> None:
    _require_text(block, "text", path=where)


def _image_block(block: Mapping[str, Any], where: str) -> None:
    _require(block, "source", dict, "an image source object", path=where)


def _thinking_block(block: Mapping[str, Any], where: str) -> None:
    _require_text(block, "thinking", path=where)
    _require(block, "signature", str, "a string", path=where, optional=True)


def _redacted_thinking_block(block: Mapping[str, Any], where: str) -> None:
    _require_text(block, "data", path=where)


_BLOCK_VALIDATORS = {
    "text": _text_block, "image": _image_block, "thinking": _thinking_block,
    "redacted_thinking": _redacted_thinking_block,
}


def _validate_text_payload(payload: Mapping[str, Any]) -> None:
    _require_text(payload, "text")


def _validate_message(payload: Mapping[str, Any]) -> None:
    _require_choice(payload, "role", ROLES)
    if "content" not in payload:
        raise _Invalid("payload.content", "is required (a string or a list of blocks)")
    _validate_blocks(payload["content"], "payload.content")


def _require_call_id(payload: Mapping[str, Any]) -> None:
    """Call ids are indexed (to pair results with calls), so they have a bounded length."""
    call_id = _require_text(payload, "call_id", nonempty=True)
    if len(call_id) > MAX_ID:
        raise _Invalid("payload.call_id", f"must be at most {MAX_ID} characters, got {len(call_id)}")
    if JSONB_UNSTORABLE.search(call_id):
        raise _Invalid("payload.call_id", UNSTORABLE_ID)


def _validate_tool_call(payload: Mapping[str, Any]) -> None:
    _require_call_id(payload)
    _require_text(payload, "name", nonempty=True)
    _require(payload, "input", dict, "a JSON object (the tool's arguments)")


def _validate_tool_result(payload: Mapping[str, Any]) -> None:
    _require_call_id(payload)
    if "output" not in payload:
        raise _Invalid("payload.output", "is required (a string or a list of blocks)")
    _validate_blocks(payload["output"], "payload.output")
    _require(payload, "is_error", bool, "true or false", optional=True)


def _validate_compaction(payload: Mapping[str, Any]) -> None:
    _require_text(payload, "summary")
    _require_version(payload, "first_kept_version")
    for key in ("tokens_before", "tokens_after"):
        _require(payload, key, int, "a token count", optional=True)
    _require_choice(payload, "trigger", TRIGGERS, default=True)
    for key in ("strategy", "summarizer", "instructions"):
        _require(payload, key, str, "a string", optional=True)
    details = _require(payload, "details", dict, "an object", optional=True) or {}
    for key in ("read_files", "modified_files"):
        files = _require(details, key, list, "a list of paths", path="payload.details", optional=True) or []
        if not all(isinstance(f, str) for f in files):
            raise _Invalid(f"payload.details.{key}", "must hold only strings")
    for key in ("restored", "critical"):
        versions = _require(details, key, list, "a list of versions", path="payload.details", optional=True) or []
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in versions):
            raise _Invalid(f"payload.details.{key}", "must hold only versions (integers ≥ 1)")
    native = _require(payload, "native", dict, "an object {provider, items}", optional=True)
    if native is not None:
        _require_choice(native, "provider", NATIVE_PROVIDERS, path="payload.native")
        items = _require(native, "items", list, "a list of the provider's blocks or items", path="payload.native")
        if not items or not all(isinstance(i, Mapping) for i in items):
            raise _Invalid("payload.native.items", "must be a non-empty list of objects (blocks or items)")


def _validate_prune(payload: Mapping[str, Any]) -> None:
    targets = _require(payload, "targets", list, "a list of versions")
    if not targets or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in targets):
        raise _Invalid("payload.targets", "must be a non-empty list of versions (integers ≥ 1)")
    _require_choice(payload, "mode", PRUNE_MODES)
    _require_text(payload, "rule", nonempty=True)
    _require(payload, "placeholder", str, "a string", optional=True)


def _validate_rewrite(payload: Mapping[str, Any]) -> None:
    _require_version(payload, "target_version")
    _require_choice(payload, "field", REWRITE_FIELDS)
    _require_text(payload, "content")
    lines = _require(payload, "original_lines", int, "a line count")
    if lines < 0:
        raise _Invalid("payload.original_lines", f"must be ≥ 0, got {lines}")
    _require_text(payload, "language")


def _validate_custom(payload: Mapping[str, Any]) -> None:
    _require_text(payload, "type", nonempty=True)
    _require(payload, "in_context", bool, "true or false", optional=True)


_VALIDATORS = {
    "system": _validate_text_payload,
    "message": _validate_message,
    "tool_call": _validate_tool_call,
    "tool_result": _validate_tool_result,
    "compaction": _validate_compaction,
    "prune": _validate_prune,
    "rewrite": _validate_rewrite,
    "scratchpad": _validate_text_payload,
    "custom": _validate_custom,
}


def targets_of(event: NewEvent | StoredEvent) -> list[int]:
    """The versions a marker event (`prune`, `rewrite`) or a compaction refers to."""
    payload = event.payload
    if event.kind == "prune":
        return list(payload["targets"])
    if event.kind == "rewrite":
        return [payload["target_version"]]
    return []


def recall_hint(version: int, last: int | None = None) -> str:
    """How a marker that names versions tells the model to get them back with the recall tool
    (`sessionstore.recall`): markers live in compaction and projection, below the tool."""
    return f"recall read v{version}" + (f"..{last}" if last is not None and last != version else "")
