"""What an event is: its kinds, the constants of their payloads, the two event types and their ids.

At the bottom of the package (it imports nothing of sessionstore): `validation` checks events
against these, `events` builds them (its constructors) and re-exports all of it, which is where
callers import it from; storage sizes its columns by the bounds here.
"""

from __future__ import annotations

import os
import re
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias

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
INLINE_TOOL_BLOCKS: Final = frozenset({"tool_use", "tool_result"})

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


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def content_blocks(content: Any) -> list[Block]:
    """A message's or tool result's content as blocks (a bare string is one text block)."""
    if isinstance(content, str):
        return [text_block(content)] if content else []
    return list(content)
