"""Compaction for LangChain agents, without loss (``pip install 'sessionstore[langgraph]'``).

::

    saver = SessionStoreSaver("threads.db")
    agent = create_agent(model, tools, checkpointer=saver,
                         middleware=[SessionStoreCompaction(saver, CompactionPolicy.for_window(128_000))])

LangChain's own `SummarizationMiddleware` replaces the summarised messages in the graph's state
(``RemoveMessage``): the conversation the thread keeps is the summary. `SessionStoreCompaction`
changes only what the model is sent: before each model call the thread's messages are recorded
(once each), the session is compacted when its view is past the policy's threshold — old tool
outputs pruned to markers, big file reads rewritten to skeletons, a summary with its first kept
version, the same policy objects and summarisers as everywhere in sessionstore — and the model
receives the store's context view. The graph's state, its checkpoints (``get_state_history``,
time travel) and the store's transcript keep every message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..extras import require

require("langchain.agents.middleware", "langgraph", "sessionstore.integrations.langchain_middleware")  # one line, not a traceback, without it
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from ..compaction.policy import CompactionPolicy
from ..summarizers.base import Summarizer
from .langgraph import SessionStoreSaver


_NS_SEP = "|"  # between the parts of a namespace (LangGraph's, private since 1.0)


def _graph_config() -> RunnableConfig:
    """The config of the graph the model node runs in: a node's namespace is its graph's, then
    ``|node:task`` (an agent's own checkpoints, and its messages, are under its graph's)."""
    config = get_config()
    configurable = dict(config.get("configurable") or {})
    configurable["checkpoint_ns"] = str(configurable.get("checkpoint_ns") or "").rpartition(_NS_SEP)[0]
    return {"configurable": configurable}


class SessionStoreCompaction(AgentMiddleware):  # type: ignore[type-arg]
    """Sends the model the store's context view of the thread instead of every message.

    `saver` is the agent's checkpointer (the thread's session is where the view comes from);
    `policy` and `summarizer` are those of `SessionStore.maybe_compact` (default: the default
    policy, the offline summariser). The system prompt and tools of the request are kept.
    """

    def __init__(self, saver: SessionStoreSaver, policy: CompactionPolicy | None = None,
                 summarizer: Summarizer | None = None) -> None:
        super().__init__()
        self.saver = saver
        self.policy = policy
        self.summarizer = summarizer

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
                        ) -> ModelResponse:
        messages = self.saver.compacted(_graph_config(), request.messages, self.policy, self.summarizer)
        return handler(request.override(messages=messages))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        messages = await self.saver.acompacted(_graph_config(), request.messages, self.policy, self.summarizer)
        return await handler(request.override(messages=messages))


__all__ = ["SessionStoreCompaction"]
