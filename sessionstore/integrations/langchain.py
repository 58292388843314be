"""A LangChain `BaseChatMessageHistory` on sessionstore (``pip install 'sessionstore[langchain]'``).

::

    history = SessionStoreChatMessageHistory("conversation-42", "conversations.db")
    history.add_messages([HumanMessage("hi"), AIMessage("Hello! How can I help?")])
    history.messages                      # or: await history.aget_messages()

Every message type comes back equal to what was added (tool calls, tool messages, ids,
``additional_kwargs``, ``response_metadata`` and usage included). ``clear()`` records a
reset: the history reads empty, the transcript keeps every message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..extras import require

require("langchain_core.chat_history", "langchain", "sessionstore.integrations.langchain")  # one line, not a traceback, without it
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from ..errors import SessionNotFound
from ..events import NewEvent
from . import _history
from ._door import Database, Door, ensure
from ._langchain_messages import events_to_messages, message_to_events

KINDS: Final = ("message", "tool_call", "tool_result", "system")
_METADATA: Final = {"integration": "langchain"}


class SessionStoreChatMessageHistory(BaseChatMessageHistory):
    """Chat history of one session, sync (`messages`, `add_messages`, `clear`) and async
    (`aget_messages`, `aadd_messages`, `aclear`).

    `db` is a path, a URL, a `SessionStore` or an `AsyncSessionStore`; histories with the same
    id and database share their messages. The async methods run on an `AsyncSessionStore`
    (unless a `SessionStore` is given), the sync ones on a `SessionStore`.
    """

    def __init__(self, session_id: str, db: Database = None) -> None:
        self.session_id = session_id
        self._door = Door(db)
        self._exists = False

    @property
    def store(self) -> Any:
        """The store this history writes to (for `context()`, `transcript()`, `compact()` …)."""
        return self._door.store

    def __repr__(self) -> str:
        return f"SessionStoreChatMessageHistory({self.session_id!r}, {self._door.store!r})"

    # ------------------------------------------------------------------ sync

    @property  # the base class declares a plain attribute; a property is how its implementations read
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        try:
            events = self._door.blocking.transcript(self.session_id)
        except SessionNotFound:
            return []
        return events_to_messages(_history.live_events(events, KINDS))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        events = _encode(messages)
        if not events:
            return
        store = self._door.blocking
        if not self._exists:
            store.ensure_session(self.session_id, _METADATA)
            self._exists = True
        store.append(self.session_id, events, strict=False)

    def clear(self) -> None:
        """Empty the history: a reset recorded as an event (the transcript keeps every message)."""
        try:
            self._door.blocking.reset(self.session_id, reason="clear")
        except SessionNotFound:
            pass

    # ------------------------------------------------------------------ async

    async def aget_messages(self) -> list[BaseMessage]:
        try:
            events, _ = await self._door.live_tail(self.session_id, KINDS)
        except SessionNotFound:
            return []
        return await self._door.in_thread(lambda _: events_to_messages(events))  # a message each: off the loop

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        events = _encode(messages)
        if not events:
            return
        if not self._exists:
            await ensure(self._door, self.session_id, _METADATA)
            self._exists = True
        await self._door.append(self.session_id, events)

    async def aclear(self) -> None:
        try:
            await self._door.reset(self.session_id, reason="clear")
        except SessionNotFound:
            pass

    def close(self) -> None:
        """Release the connections this history opened (a store given to it stays open)."""
        self._door.close()

    async def aclose(self) -> None:
        """`close` from a coroutine."""
        await self._door.aclose()


def _encode(messages: Sequence[BaseMessage]) -> list[NewEvent]:
    return [event for message in messages for event in message_to_events(message)]


__all__ = ["SessionStoreChatMessageHistory"]
