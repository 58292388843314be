"""The recall tool (`sessionstore.recall`) as each framework's own tool, bound to its session.

A framework session knows its store and its session id; the tool it gets answers recalls over
that session and its lineage. Each function imports its framework only when called, like the
integrations themselves. Over a `SessionStore` the recall runs in a worker thread (an agent loop
must not block on the database); over an `AsyncSessionStore` on the loop.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..aio import AsyncSessionStore
from ..recall import RECALL_TOOL_NAME, ahandle_recall, handle_recall, recall_tool


async def arecall(store: Any, session_id: str, tool_input: Any) -> str:
    """A recall over either kind of store, from async code."""
    if isinstance(store, AsyncSessionStore):
        return await ahandle_recall(store, session_id, tool_input)
    return await asyncio.to_thread(handle_recall, store, session_id, tool_input)


def _description() -> str:
    return str(recall_tool()["description"])


def _schema() -> dict[str, Any]:
    return dict(recall_tool()["input_schema"])


def openai_agents_recall_tool(session: Any) -> Any:
    """An Agents SDK `FunctionTool` recalling over a `SessionStoreSession`."""
    from agents import FunctionTool

    async def invoke(_context: Any, arguments: str) -> str:
        try:
            tool_input = json.loads(arguments or "{}")
        except json.JSONDecodeError as error:
            return f"Recall failed: the arguments are not JSON ({error})"
        return await arecall(session.store, session.session_id, tool_input)

    return FunctionTool(name=RECALL_TOOL_NAME, description=_description(), params_json_schema=_schema(),
                        on_invoke_tool=invoke, strict_json_schema=False)


def langchain_recall_tool(history: Any) -> Any:
    """A LangChain `StructuredTool` recalling over a `SessionStoreChatMessageHistory`."""
    from langchain_core.tools import StructuredTool

    def run(**tool_input: Any) -> str:
        store = history.store
        if isinstance(store, AsyncSessionStore):
            store = history._door.blocking
        return handle_recall(store, history.session_id, tool_input)

    async def arun(**tool_input: Any) -> str:
        return await arecall(history.store, history.session_id, tool_input)

    return StructuredTool.from_function(func=run, coroutine=arun, name=RECALL_TOOL_NAME,
                                        description=_description(), args_schema=_schema())


def adk_recall_tool(service: Any, app_name: str, user_id: str, session_id: str) -> Any:
    """An ADK `FunctionTool` recalling over a session of a `SessionStoreSessionService`."""
    from google.adk.tools import FunctionTool

    from .adk import session_key

    key = session_key(app_name, user_id, session_id)

    async def recall(action: str, query: str = "", version: int = 0, to: int = 0, page: int = 1,
                     session: str = "") -> str:
        """Get back what was cleared, outlined, truncated or summarised out of your context:
        action="search" with a query finds events and their versions; action="read" with a
        version (and optionally to, page) returns it exactly as stored."""
        tool_input: dict[str, Any] = {"action": action}
        if action == "search":
            tool_input["query"] = query
        else:
            tool_input.update({"version": version, "page": page, **({"to": to} if to else {}),
                               **({"session": session} if session else {})})
        return await arecall(service.store, key, tool_input)

    return FunctionTool(recall)
