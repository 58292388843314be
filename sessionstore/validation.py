"""What makes an event storable: the checks of every kind's payload, and the JSON the store writes.

Validation runs before anything touches the database, so that a batch with one bad event
writes nothing, and it serialises as it checks (`encode_event`): the text it accepts is the
text that is stored. Meta and session metadata follow stricter rules than payloads (they are
JSONB on PostgreSQL and queryable): `check_queryable`, `check_metadata`. Every refusal is an
`InvalidEvent` naming the event and the field. Callers import these names from `events`.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Final

from .chain import SORTED_JSON
from .errors import InvalidEvent
from .kinds import (INLINE_TOOL_BLOCKS, KINDS, MAX_EVENT_ID, MAX_ID, NATIVE_PROVIDERS, PRUNE_MODES, REWRITE_FIELDS,
                    ROLES, TRIGGERS, NewEvent)


def validate_event(event: NewEvent, index: int | None = None) -> None:
    """Raise `InvalidEvent` naming the event and field when `event` is not a valid event."""
    _check_envelope(event, index)
    _check_payload(event, index)


def _check_envelope(event: NewEvent, index: int | None) -> None:
    """What an event holds besides its payload's content: cheap, and checked at every append, since
    `dataclasses.replace` may have changed any of it since the event was `checked`."""
    if type(event) is not NewEvent and not isinstance(event, NewEvent):
        raise InvalidEvent(f"expected a NewEvent, got {type(event).__name__}", index=index)
    if not isinstance(event.event_id, str) or not event.event_id or len(event.event_id) > MAX_EVENT_ID:
        raise InvalidEvent(f"event_id must be a non-empty string of at most {MAX_EVENT_ID} characters", index=index,
                           field="event_id")
    if JSONB_UNSTORABLE.search(event.event_id):
        raise InvalidEvent(UNSTORABLE_ID, index=index, field="event_id")
    if event.kind not in _VALIDATORS:
        raise InvalidEvent(f"unknown kind {event.kind!r}; expected one of {', '.join(KINDS)}", index=index,
                           field="kind")
    # `type(…) is dict` first: the Mapping ABC's isinstance is slower than the rest of the check
    if type(event.payload) is not dict and not isinstance(event.payload, Mapping):
        raise InvalidEvent(f"payload must be a JSON object, got {type(event.payload).__name__}", index=index,
                           field="payload")
    if type(event.meta) is not dict and not isinstance(event.meta, Mapping):
        raise InvalidEvent(f"meta must be a JSON object, got {type(event.meta).__name__}", index=index,
                           field="meta")
    if event.created_at is not None and (not isinstance(event.created_at, datetime)
                                         or event.created_at.tzinfo is None):
        raise InvalidEvent("created_at must be a timezone-aware datetime", index=index, field="created_at")


def _check_payload(event: NewEvent, index: int | None) -> None:
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
    payload, meta = event.payload, event.meta
    _check_envelope(event, index)
    if type(payload) is EncodedPayload and payload.json is not None and payload.kind == event.kind:
        text = payload.json  # checked as this kind and encoded already (`checked`), unchanged since
    else:
        _check_payload(event, index)
        text = _encode(payload, "payload", index)
        if _MAYBE_PAIR.search(text):
            _check_no_split_pairs(payload, "payload", index)
        _check_string_keys(payload, "payload", index)
    if type(meta) is EncodedMeta and meta.json is not None:
        return text, meta.json
    meta_text = _queryable_json(meta, "meta", index)
    if meta_text != "{}":  # most events' meta is empty: no key to check
        _check_string_keys(meta, "meta", index)
    return text, meta_text


class _Encoded(dict[str, Any]):
    """A dict with the JSON text `encode_event` made of it when it was checked (`checked`). A change
    to the dict itself drops the text; a change inside it is not seen, so a value is wrapped only
    once what is inside it is final. A copy is a plain dict."""

    __slots__ = ("json",)

    def __init__(self, value: Mapping[str, Any], text: str) -> None:
        super().__init__(value)
        self.json: str | None = text

    def __reduce__(self) -> Any:
        return dict, (dict(self),)

    def __setitem__(self, key: str, value: Any) -> None:
        self.json = None
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.json = None
        super().__delitem__(key)

    def __ior__(self, other: Any) -> _Encoded:
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


class EncodedPayload(_Encoded):
    """A payload with its stored text, made when it was checked: the append stores that text rather
    than encode the payload a second time (an importer checks each event as it parses a line, to
    report the line of one that cannot be stored, and appends it later). `kind`, set by `checked`
    alone, is the kind whose rules it passed: appended as an event of that kind, it is not
    validated again (the rest of the event, which `dataclasses.replace` may change, still is)."""

    __slots__ = ("kind",)

    def __init__(self, payload: Mapping[str, Any], text: str) -> None:
        super().__init__(payload, text)
        self.kind: str | None = None


class EncodedMeta(_Encoded):
    """A meta with its stored text (`SORTED_JSON`), made when it was checked (`checked`): appended
    unchanged, it is not encoded or checked again. An importer's meta may still change after the
    check (a later line's usage, `EventBuilder.annotate`): any change to it drops the text."""

    __slots__ = ()


def checked(event: NewEvent, index: int | None = None) -> NewEvent:
    """`event` validated (`InvalidEvent` as `encode_event` raises it), its payload and meta carrying
    their JSON text (`EncodedPayload`, `EncodedMeta`), so that appending it unchanged neither
    validates nor encodes it again."""
    payload_json, meta_json = encode_event(event, index)
    payload = EncodedPayload(event.payload, payload_json)
    payload.kind = event.kind
    return NewEvent(event.kind, payload, EncodedMeta(event.meta, meta_json), event.event_id, event.created_at)


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
# (The digit is looked behind for: a pattern that starts with the literal is searched 100× faster.)
_MAYBE_LARGE_FLOAT: Final = re.compile(r"e\+(?<=[0-9]e\+)")
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
    elif isinstance(value, float) and LARGE_FLOAT <= abs(value) < math.inf:  # inf and NaN: JSON refuses them, below
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
_THREAD: Final = threading.local()


def encode_json(value: Any) -> str:
    """The store's JSON text: compact, ASCII-escaped (lone surrogates survive), no NaN."""
    if value == {}:
        return "{}"
    encode = getattr(_THREAD, "encode", None)
    if encode is None:
        if c_make_encoder is None:  # a Python without the C accelerator
            return _ENCODER.encode(value)
        encode = _THREAD.encode = _one_shot()
    try:
        return "".join(encode(value, 0))
    except BaseException:
        _THREAD.encode = None  # a failure may leave its circular-reference marks behind
        raise


def _one_shot() -> Callable[[Any, int], Sequence[str]]:
    """`_ENCODER`'s C encoder, made once a thread: `JSONEncoder.encode` makes one for every call,
    a third of the time it takes to encode a message (every appended payload is encoded here).
    Its circular-reference marks are emptied by every encode that succeeds."""
    e = _ENCODER
    return c_make_encoder({}, e.default, encode_basestring_ascii, None,  # type: ignore[no-any-return]
                          e.key_separator, e.item_separator, e.sort_keys, e.skipkeys, e.allow_nan)


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
        if btype in INLINE_TOOL_BLOCKS and not allow_tool_blocks:
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
