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

from typing import Any, Final

from agents.memory import SessionABC, SessionSettings
from agents.memory.session_settings import (
    coerce_session_settings,
    resolve_session_limit,
)

from ..compaction.policy import CompactionPolicy
from ..errors import SessionNotFound
from ..summarizers.base import Summarizer
from . import _history, _responses
from ._door import Database, Door, ensure, finish_despite_cancel, retry_on_conflict

ITEM_KINDS: Final = ("message", "tool_call", "tool_result")
# The session's items as the SDK reads them, kept by the store and folded forward turn by turn.
ITEMS: Final = _history.LiveItems("openai-agents-items", frozenset(ITEM_KINDS),
                                  lambda e: _responses.event_to_item(e.kind, e.payload, e.meta))
# A limited read (get_items(limit=…)) of a session longer than this reads windows from the head
# instead of keeping the whole history's items.
FOLDED_UP_TO: Final = 20_000


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
        """The latest `limit` items (default: ``session_settings.limit``, else all), oldest first."""
        self._check_open()
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and limit == 0:
            return []
        # As the SDK's SQLiteSession: a negative limit means no limit.
        limit = None if limit is not None and limit < 0 else limit
        try:
            if self.policy is not None:
                items = await self._view_items()
                return items if limit is None else items[-limit:]
            seen = self._door.head_seen(self.session_id)
            if limit is None or (seen is not None and seen <= FOLDED_UP_TO):
                view = await self._door.follow(self.session_id, ITEMS)
                return [dict(item) for _, item in (view if limit is None else view[-limit:])]
            # a long session read in part, or not read yet: windows from the head, converted each time
            events, _ = await self._door.live_tail(self.session_id, ITEM_KINDS, limit)
        except SessionNotFound:
            return []
        return [_responses.event_to_item(e.kind, e.payload, e.meta) for e in events]

    async def _view_items(self) -> list[Any]:
        await self._door.maybe_compact(self.session_id, self.policy, self.summarizer)
        return _responses.view_to_items(await self._door.context(self.session_id))

    async def add_items(self, items: list[Any]) -> None:
        self._check_open()
        if not items:
            return
        events = [_responses.item_to_event(item) for item in items]
        await finish_despite_cancel(self._add(events))

    async def _add(self, events: list[Any]) -> None:
        if not self._exists:
            await ensure(self._door, self.session_id, {"integration": "openai-agents"})
            self._exists = True
        await self._door.append(self.session_id, events)

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
        return _responses.event_to_item(last.kind, last.payload, last.meta)

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
