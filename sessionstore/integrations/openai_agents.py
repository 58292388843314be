"""A drop-in `agents.memory.Session` for the OpenAI Agents SDK (``pip install 'sessionstore[openai-agents]'``).

Swap one line and keep everything::

    session = SessionStoreSession("conversation-42", "conversations.db")   # was SQLiteSession(...)
    result = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)

Every item the SDK stores becomes an immutable event (messages, function calls and outputs as
the store's own kinds, anything else kept whole), and comes back equal, field for field.
``pop_item`` and ``clear_session`` take items back with a retraction or a reset recorded as an
event: the transcript (``sessionstore log conversation-42``) keeps everything. With a
``policy`` the SDK reads the compacted context view instead of the whole history::

    session = SessionStoreSession("conversation-42", "conversations.db",
                                  policy=CompactionPolicy.for_window(128_000))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..extras import require

require("agents.memory", "openai-agents", "sessionstore.integrations.openai_agents")  # one line, not a traceback, without it
from agents.memory import SessionABC, SessionSettings
from agents.memory.session import _CompactionSnapshot
from agents.memory.session_settings import (
    coerce_session_settings,
    resolve_session_limit,
)

from ..compaction.policy import CompactionPolicy
from ..errors import ConcurrencyError, SessionNotFound
from ..summarizers.base import Summarizer
from . import _history, _responses
from ._codec import freeze, json_copy, thaw
from ._door import Database, Door, ensure, finish_despite_cancel, retry_on_conflict

ITEM_KINDS: Final = ("message", "tool_call", "tool_result")
# What `get_items` reads: the items, and a replacement window the SDK wrote (`_atomic_replace_items`).
HISTORY_KINDS: Final = (*ITEM_KINDS, "compaction")
# The session's items as the SDK reads them, kept by the store and folded forward turn by turn.
# Frozen (`_codec.freeze`): each read thaws copies of its own, which the caller may change.
ITEMS: Final = _history.LiveItems("openai-agents-items", frozenset(HISTORY_KINDS),
                                  lambda e: [freeze(item) for item in _items_of(e)])
# A limited read (get_items(limit=…)) of a session longer than this reads windows from the head
# instead of keeping the whole history's items.
FOLDED_UP_TO: Final = 20_000


# Up to this many items read from windows are copied for the caller on the event loop (tens of µs); more, on a thread.
_COPIED_ON_THE_LOOP: Final = 64


class SessionStoreSession(SessionABC):
    """Conversation history for the Agents SDK, stored as sessionstore events.

    `db` is a path, a URL, a `SessionStore` or an `AsyncSessionStore` (a path or URL opens an
    `AsyncSessionStore`); many sessions may share one database, and two
    objects with the same id and database share one history. `session_settings` works as
    for the SDK's own sessions (its ``limit`` caps what `get_items` returns). With a `policy`,
    `get_items` compacts the session when it is past the policy's threshold and returns the
    context view (summary, kept tail, pruned outputs) rendered as Responses items.
    """

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, db: Database = None, *,
                 session_settings: SessionSettings | dict[str, Any] | None = None,
                 policy: CompactionPolicy | None = None, summarizer: Summarizer | None = None) -> None:
        self.session_id = session_id
        self.session_settings = (coerce_session_settings(session_settings) if session_settings is not None
                                 else SessionSettings())
        self.policy = policy
        self.summarizer = summarizer
        self._door = Door(db)
        self._exists = False
        self._closed = False

    @property
    def store(self) -> Any:
        """The store this session writes to (for `context()`, `transcript()`, `compact()` …)."""
        return self._door.store

    def __repr__(self) -> str:
        return f"SessionStoreSession({self.session_id!r}, {self._door.store!r})"

    # ------------------------------------------------------------------ the Session protocol

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest `limit` items (default: ``session_settings.limit``, else all), oldest first.

        The items are the caller's: changing one, however deep, changes neither the store nor
        what a later call returns. The session's items are kept between turns frozen
        (`_codec.freeze`) and each call thaws its own copies, on the store's thread in the same
        hop as the read: a long history's copies take milliseconds, which the loop never waits."""
        self._check_open()
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and limit == 0:
            return []
        # As the SDK's SQLiteSession: a negative limit means no limit.
        limit = None if limit is not None and limit < 0 else limit
        session_id = self.session_id
        try:
            if self.policy is not None:
                return await self._view_items(limit)
            seen = self._door.head_seen(session_id)
            if limit is None or (seen is not None and seen <= FOLDED_UP_TO):
                return await self._door.in_thread(lambda store: _thawed(store.follow(session_id, ITEMS), limit))
            # a long session read in part, or not read yet: windows from the head, converted each time
            events, _ = await self._door.live_tail(session_id, HISTORY_KINDS, limit)
        except SessionNotFound:
            return []
        items = [item for e in events for item in _items_of(e)][-limit:]
        if len(items) <= _COPIED_ON_THE_LOOP:
            return [json_copy(item) for item in items]
        return await self._door.in_thread(lambda _: [json_copy(item) for item in items])

    async def _view_items(self, limit: int | None) -> list[Any]:
        await self._door.maybe_compact(self.session_id, self.policy, self.summarizer)
        session_id = self.session_id

        def items(store: Any) -> list[Any]:  # the whole view's rendering and copies: off the loop
            rendered = _responses.view_to_items(store.context(session_id))
            return [json_copy(item) for item in (rendered if limit is None else rendered[-limit:])]

        return await self._door.in_thread(items)

    async def add_items(self, items: list[Any]) -> None:
        self._check_open()
        if not items:
            return
        items = list(items)
        await self._add(lambda: [_responses.item_to_event(item) for item in items])  # to its end, even cancelled

    async def _add(self, events: Callable[[], list[Any]]) -> None:
        """Append the events `events()` makes (on the store's thread: the conversion and its check
        cost tens of µs an item), creating the session first unless this object knows it exists;
        one hop for the whole SDK call, which a cancelled caller waits out (`Door.append_made`)."""
        metadata = None if self._exists else {"integration": "openai-agents"}
        await self._door.append_made(self.session_id, events, create_with=metadata)
        self._exists = True

    async def _atomic_replace_items(self, items: list[Any]) -> bool:
        """The Agents SDK's hook for replacing the whole history (`OpenAIResponsesCompactionSession`
        calls it with ``responses.compact``'s window instead of clearing and re-adding): recorded
        as one compaction carrying that window verbatim, so `show`, time travel, the viewer and
        `stats` read one compaction, the transcript keeps everything, and `get_items` returns
        the window byte for byte."""
        self._check_open()
        window = [_responses.as_item(item) for item in items]
        if not any(item.get("type") == "compaction" for item in window):
            return False  # not a provider's compaction: the SDK clears and re-adds instead
        await finish_despite_cancel(self._replace(window))
        return True

    async def _replace(self, window: list[Any], expected_version: int | None = None) -> None:
        if not self._exists:
            await ensure(self._door, self.session_id, {"integration": "openai-agents"})
            self._exists = True
        await self._door.record_provider_compaction(self.session_id, "openai", window,
                                                    summarizer="openai-agents:responses.compact",
                                                    expected_version=expected_version,
                                                    reason="OpenAIResponsesCompactionSession")

    async def _get_compaction_snapshot(self, limit: int, *,
                                       prune_prefix: Callable[[Any], bool] | None = None) -> _CompactionSnapshot | None:
        """The Agents SDK's suffix replacement (automatic compaction of the latest exchange):
        the last `limit` items, and a `replace_suffix` that records the items before the suffix
        plus the provider's window as one compaction, if the session has not moved meanwhile."""
        self._check_open()
        if prune_prefix is not None:  # a wrapper that expires items: left to its whole-history path
            return None
        try:
            events, head = await self._door.live_tail(self.session_id, HISTORY_KINDS)
        except SessionNotFound:
            return None
        items = [item for e in events for item in _items_of(e)]
        shown = items[-limit:]
        offset = len(items) - len(shown)

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            window = [*items[:offset + start], *(_responses.as_item(item) for item in output)]
            if start >= len(shown) or not any(item.get("type") == "compaction" for item in window):
                return False
            try:
                await finish_despite_cancel(self._replace(window, expected_version=head))
            except ConcurrencyError:
                return False  # the session moved since the snapshot: the SDK keeps it as it is
            return True

        return _CompactionSnapshot([json_copy(item) for item in shown], offset == 0, replace_suffix)

    async def pop_item(self) -> Any | None:
        """Take back the most recent item and return it (None when the session is empty).

        The item is retracted, not deleted: the transcript keeps it, the history no longer
        shows it. Concurrent pops each take a different item.
        """
        self._check_open()
        return await finish_despite_cancel(retry_on_conflict(self._pop))

    async def _pop(self) -> Any | None:
        try:
            events, head = await self._door.live_tail(self.session_id, ITEM_KINDS, 1)
        except SessionNotFound:
            return None
        if not events:
            return None
        last = events[-1]
        await self._door.retract(self.session_id, [last.version], reason="pop_item", expected_version=head)
        return json_copy(_responses.event_to_item(last.kind, last.payload, last.meta))

    async def clear_session(self) -> None:
        """Empty the history: a reset recorded as an event (the transcript keeps what came before)."""
        self._check_open()
        await finish_despite_cancel(self._clear())

    async def _clear(self) -> None:
        try:
            await self._door.reset(self.session_id, reason="clear_session")
        except SessionNotFound:
            pass

    def close(self) -> None:
        """Release the database connections this session opened (a store given to it stays open).

        In a coroutine prefer ``await session.aclose()``: it closes the running loop's connections
        through that loop (``close()`` there can only leave them to the garbage collector).
        """
        self._closed = True
        self._door.close()

    async def aclose(self) -> None:
        """`close` from a coroutine."""
        self._closed = True
        await self._door.aclose()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} {self.session_id!r} is closed")


def _thawed(view: _history.Live, limit: int | None) -> list[Any]:
    """The caller's copies of the last `limit` items of the kept history (all with None)."""
    pairs = view.pairs if limit is None else view.pairs[-limit:]
    return [thaw(item) for _, item in pairs]


def _items_of(event: Any) -> list[Any]:
    """The items an event of the history stands for: one, or a replacement window's."""
    if event.kind == "compaction":
        return list(event.payload["native"]["items"])
    return [_responses.event_to_item(event.kind, event.payload, event.meta)]
